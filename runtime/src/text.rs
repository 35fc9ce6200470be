//! The text rules read, and the excerpt a classification reports from it.
//!
//! Agents print their fatal error last, so rules match the **tail** of the evidence text: at
//! most its last [`MAX_MATCHED_BYTES`], starting at a line start when one lies within the first
//! [`LINE_SEARCH_BYTES`] of that window (so no line is cut), else at a character boundary.
//!
//! - The `raw` view is that tail, unredacted.
//! - The `sanitized` view is its diagnostic-tier redaction. The redaction also reads up to
//!   [`CONTEXT_BYTES`] before the tail, and the view then starts where the tail's first byte
//!   landed, so a secret whose marker lies just before the cut (`Bearer` then a line break, or
//!   `password: ` when a very long line is cut inside its value) is still removed, and the view
//!   never begins inside a redacted value. Redaction can lengthen text a little (`/home/a/b` becomes
//!   `/home/<redacted>/[path-redacted]`) or shorten it.
//! - The excerpt is [`MAX_EXCERPT_BYTES`] of the sanitized view (see [`excerpt`]).
//!
//! Building the views never copies more of the evidence than the tail and its context, however
//! long the evidence is.

use std::borrow::Cow;
use std::cell::OnceCell;

use crate::evidence::Evidence;
use crate::sanitize::{self, MAX_EXCERPT_BYTES};
use crate::vocab::TextView;

mod json_layout;
mod json_log;
mod terminal;
mod unwrap;
pub(crate) use json_layout::may_hold_pretty_json;
pub(crate) use json_log::may_hold_json_log;
pub(crate) use terminal::shown;
pub use unwrap::Unwrapping;
pub(crate) use unwrap::{may_hold_closing_full_stop, may_hold_error_label, unwrapped};

/// The most text rules match: the last mebibyte of the evidence text.
pub const MAX_MATCHED_BYTES: usize = 1 << 20;
/// How far before the matched tail the redaction reads, for the markers of secrets cut by it.
pub const CONTEXT_BYTES: usize = 4096;
/// How far into the matched window a line start is looked for.
pub const LINE_SEARCH_BYTES: usize = 64 * 1024;
/// How much text before the winning match an excerpt shows at most, when the match's line
/// starts earlier.
pub const EXCERPT_LEAD_BYTES: usize = 1024;

/// The text rules read from one piece of evidence: its bounded tail in both views. The
/// sanitized view is redacted once, on first use.
#[derive(Debug)]
pub struct TextViews<'a> {
    /// The tail and the context before it.
    window: Cow<'a, str>,
    /// Where the tail (the raw view) starts in `window`.
    start: usize,
    /// The length of the whole evidence text.
    len: usize,
    /// The redacted tail; `None` when the redaction changes nothing, so the sanitized view is
    /// the raw view and is not copied.
    sanitized: OnceCell<Option<String>>,
}

impl<'a> TextViews<'a> {
    /// The views of an evidence's text (`stderr` and `stdout`, joined by a line break when both
    /// are non-empty).
    pub fn new(evidence: &'a Evidence) -> TextViews<'a> {
        let len = evidence.text_len();
        let (window, start) = if len <= MAX_MATCHED_BYTES {
            (evidence.raw_text_view(), 0)
        } else {
            let window = evidence.text_tail(MAX_MATCHED_BYTES + CONTEXT_BYTES);
            let start = tail_start(&window, window.len().saturating_sub(MAX_MATCHED_BYTES));
            (window, start)
        };
        let (window, start) = shown_window(window, start);
        TextViews {
            window,
            start,
            len,
            sanitized: OnceCell::new(),
        }
    }

    /// The views of a text given whole.
    pub fn of_text(text: &'a str) -> TextViews<'a> {
        let (window, start) = if text.len() <= MAX_MATCHED_BYTES {
            (text, 0)
        } else {
            let window = text
                .get(
                    floor_boundary(
                        text,
                        text.len().saturating_sub(MAX_MATCHED_BYTES + CONTEXT_BYTES),
                    )..,
                )
                .unwrap_or("");
            (
                window,
                tail_start(window, window.len().saturating_sub(MAX_MATCHED_BYTES)),
            )
        };
        let (window, start) = shown_window(Cow::Borrowed(window), start);
        TextViews {
            window,
            start,
            len: text.len(),
            sanitized: OnceCell::new(),
        }
    }

    /// The raw view: the matched tail, unredacted.
    pub fn raw(&self) -> &str {
        self.window.get(self.start..).unwrap_or("")
    }

    /// The sanitized view: the diagnostic-tier redaction of the raw view.
    pub fn sanitized(&self) -> &str {
        self.sanitized
            .get_or_init(|| {
                if self.start == 0 {
                    return match sanitize::diagnostic_view(&self.window, &mut []) {
                        Cow::Borrowed(_) => None,
                        Cow::Owned(redacted) => Some(redacted),
                    };
                }
                let mut marks = [self.start];
                match sanitize::diagnostic_view(&self.window, &mut marks) {
                    Cow::Borrowed(_) => None,
                    Cow::Owned(mut redacted) => {
                        redacted.replace_range(..floor_boundary(&redacted, marks[0]), "");
                        Some(redacted)
                    }
                }
            })
            .as_deref()
            .unwrap_or_else(|| self.raw())
    }

    /// One of the views of the text; empty for [`TextView::Body`], which is not text of the
    /// evidence: a matcher on it reads the values at its JSON Pointer ([`crate::Body::select`]).
    pub fn get(&self, view: TextView) -> &str {
        match view {
            TextView::Raw => self.raw(),
            TextView::Sanitized => self.sanitized(),
            TextView::Body => "",
        }
    }

    /// The sanitized view, moved out.
    pub fn into_sanitized(self) -> String {
        self.sanitized();
        match self.sanitized.into_inner().flatten() {
            Some(redacted) => redacted,
            None if self.start == 0 => self.window.into_owned(),
            None => self.window.get(self.start..).unwrap_or("").to_owned(),
        }
    }

    /// The length of the whole evidence text, of which the raw view is the tail.
    pub fn text_len(&self) -> usize {
        self.len
    }

    /// Whether the text is longer than the views: rules do not see its beginning.
    pub fn is_cut(&self) -> bool {
        self.raw().len() < self.len
    }

    /// Where byte offset `raw` of the raw view lands in the sanitized view (after the
    /// replacement, when it lies inside a redacted span).
    pub fn sanitized_offset(&self, raw: usize) -> usize {
        if self.sanitized.get().is_some_and(Option::is_none) {
            // Nothing was redacted: every offset stays where it is.
            return floor_boundary(&self.window, self.start + raw.min(self.raw().len()))
                .saturating_sub(self.start);
        }
        let mut marks = [self.start, self.start + raw.min(self.raw().len())];
        let redacted = sanitize::diagnostic_marked(&self.window, &mut marks);
        let start = floor_boundary(&redacted, marks[0]);
        floor_boundary(&redacted, marks[1]).saturating_sub(start)
    }
}

/// The excerpt of a sanitized view: the whole view when it fits in [`MAX_EXCERPT_BYTES`];
/// otherwise a window of that size, cut on character boundaries.
///
/// - With `at`, the offset of the winning rule's match, the window starts at the start of the
///   match's line (or [`EXCERPT_LEAD_BYTES`] before the match, when its line starts earlier),
///   so the error that matched is shown with what follows it. Near the end of the view it
///   starts earlier, so that it still ends at the view's end, at the first line start of its
///   first [`EXCERPT_LEAD_BYTES`] (never after the match).
/// - Without (a structured rule or the fallback won), it is the view's end, where agents print
///   their fatal error, from such a line start.
pub fn excerpt(sanitized: &str, at: Option<usize>) -> &str {
    let len = sanitized.len();
    if len <= MAX_EXCERPT_BYTES {
        return sanitized;
    }
    let latest = ceil_boundary(sanitized, len - MAX_EXCERPT_BYTES);
    let at = at.map_or(len, |at| at.min(len));
    let lead = at.saturating_sub(EXCERPT_LEAD_BYTES);
    let line = sanitized
        .get(..floor_boundary(sanitized, at))
        .and_then(|before| before.rfind('\n'))
        .map_or(0, |newline| newline + 1);
    let mut start = ceil_boundary(sanitized, line.max(lead)).min(latest);
    let at_line_start = start
        .checked_sub(1)
        .is_none_or(|before| sanitized.as_bytes().get(before) == Some(&b'\n'));
    if start == latest && !at_line_start {
        // Moved back to fill the window: begin at the next line start, if one comes soon
        // enough and before the match.
        let probe = sanitized
            .get(start..floor_boundary(sanitized, (start + EXCERPT_LEAD_BYTES).min(at)))
            .unwrap_or("");
        start += probe.find('\n').map_or(0, |newline| newline + 1);
    }
    let end = floor_boundary(sanitized, start + MAX_EXCERPT_BYTES);
    sanitized.get(start..end).unwrap_or("")
}

/// Where the matched tail of `window` starts, given the first byte it may start at: there if a
/// line starts there, else at the first line start within [`LINE_SEARCH_BYTES`], else at the
/// next character boundary.
fn tail_start(window: &str, earliest: usize) -> usize {
    let earliest = ceil_boundary(window, earliest);
    if earliest == 0 || window.as_bytes().get(earliest - 1) == Some(&b'\n') {
        return earliest;
    }
    let search = window
        .get(earliest..floor_boundary(window, earliest + LINE_SEARCH_BYTES))
        .unwrap_or("");
    match search.find('\n') {
        Some(newline) => earliest + newline + 1,
        None => earliest,
    }
}

/// The largest character boundary of `text` at or before `at`.
pub(crate) fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary of `text` at or after `at`.
pub(crate) fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The window (the context, then the tail from `start`) as a terminal shows it
/// ([`terminal`]), with `start` moved to where the tail landed. Context and tail are shown
/// apart so that the tail's start stays a line start.
fn shown_window(window: Cow<'_, str>, start: usize) -> (Cow<'_, str>, usize) {
    if !terminal::changes(&window) {
        return (window, start);
    }
    let context = terminal::shown(window.get(..start).unwrap_or(""));
    let tail = terminal::shown(window.get(start..).unwrap_or(""));
    let mut shown = String::with_capacity(context.len() + tail.len());
    shown.push_str(&context);
    shown.push_str(&tail);
    (Cow::Owned(shown), context.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_are_read_whole() {
        let views = TextViews::of_text("API Error: 529 overloaded");
        assert_eq!(views.raw(), "API Error: 529 overloaded");
        assert!(!views.is_cut());
        assert_eq!(excerpt(views.sanitized(), Some(3)), views.sanitized());
    }

    #[test]
    fn long_texts_keep_their_tail_from_a_line_start() {
        let line = "an ordinary line of agent output\n";
        let text = line.repeat(40_000) + "API Error: 529 overloaded";
        let views = TextViews::of_text(&text);
        assert!(views.is_cut());
        assert!(views.raw().len() <= MAX_MATCHED_BYTES);
        assert!(views.raw().len() > MAX_MATCHED_BYTES - 100);
        assert!(views.raw().starts_with("an ordinary"));
        assert!(views.raw().ends_with("overloaded"));
        assert_eq!(views.sanitized(), views.raw());
    }

    #[test]
    fn a_secret_whose_marker_precedes_the_cut_is_still_redacted() {
        // `Bearer` ends the last line before the tail; its token opens the tail.
        let token = "Zq9xW2vB7nK4mP3rT6yU8";
        let filler = "y".repeat(MAX_MATCHED_BYTES - token.len() - 1);
        let text = format!(
            "{}\nAuthorization Bearer\n{token}\n{filler}",
            "z".repeat(10)
        );
        let views = TextViews::of_text(&text);
        assert!(
            views.raw().starts_with(token),
            "{:?}",
            views.raw().get(..30)
        );
        assert!(!views.sanitized().contains(token));
        assert!(views.sanitized().starts_with('\n'));
        // One long line: the cut falls inside a password value after its key.
        let value = "Zq9xW2vB7nK4mP3rT6yU8";
        let text = format!(
            "password: {value} {}",
            "w ".repeat((MAX_MATCHED_BYTES - value.len() + 10) / 2)
        );
        let views = TextViews::of_text(&text);
        assert!(views.raw().len() <= MAX_MATCHED_BYTES);
        assert!(!views.raw().contains("password"));
        assert!(views.raw().contains(&value[15..]));
        assert!(!views.sanitized().contains(&value[15..]));
    }

    #[test]
    fn offsets_in_an_unredacted_view_stay_where_they_are() {
        let line = "an ordinary line of agent output, é\n";
        for text in [line.repeat(3), line.repeat(40_000)] {
            let views = TextViews::of_text(&text);
            let len = views.raw().len();
            let offsets = [0, 1, 34, 35, len / 2, len - 1, len, len + 5];
            // Before the sanitized view exists, each offset is found by redacting again; after,
            // from knowing that nothing was redacted.
            let redacting: Vec<usize> = offsets
                .iter()
                .map(|&at| views.sanitized_offset(at))
                .collect();
            assert_eq!(views.sanitized(), views.raw());
            let known: Vec<usize> = offsets
                .iter()
                .map(|&at| views.sanitized_offset(at))
                .collect();
            assert_eq!(known, redacting);
        }
    }

    #[test]
    fn excerpts_show_the_match() {
        let log = "ordinary log line\n".repeat(400);
        let text = format!("{log}API Error: 529 overloaded\n{}", "after\n".repeat(10));
        let at = text.find("API Error").unwrap();
        let shown = excerpt(&text, Some(at));
        assert!(shown.len() <= MAX_EXCERPT_BYTES);
        assert!(shown.contains("API Error: 529 overloaded"));
        assert!(shown.ends_with("after\n"));
        // Early in the text: the window starts at the match's line.
        let text = format!("first\nAPI Error: 529 overloaded\n{log}");
        let shown = excerpt(&text, text.find("API"));
        assert!(shown.starts_with("API Error: 529"));
        assert_eq!(shown.len(), MAX_EXCERPT_BYTES);
        // No match: the end, from a line start.
        let shown = excerpt(&text, None);
        assert!(shown.starts_with("ordinary"));
        assert!(shown.ends_with("line\n"));
    }

    #[test]
    fn excerpts_are_cut_on_character_boundaries() {
        let text = "é".repeat(5000);
        for at in [None, Some(0), Some(1), Some(4097), Some(9999)] {
            let shown = excerpt(&text, at);
            assert!(shown.len() <= MAX_EXCERPT_BYTES && shown.len() >= MAX_EXCERPT_BYTES - 1);
        }
    }
}
