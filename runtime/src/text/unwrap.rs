//! The wrapping a logger, a quoting user or an HTTP client puts around an error line, taken off
//! so that the line can be read again as the error it wraps.
//!
//! Rules are written against the error as its source prints it, often anchored to a line's start
//! or end so that prose quoting the error mid-sentence does not classify. The same line reaches
//! users wrapped: under a logger's timestamp and level (`2026-03-04T10:11:12Z ERROR …`,
//! `[ERROR] …`, Python's `ERROR:root:…`, loguru's `… | ERROR | module:func:12 - …`, Rust's
//! `tracing` `… ERROR codex_core::client: …`), inside the quotes of a log message or an issue
//! report, or followed by the request id a client appends. Measured on the classification
//! fixtures, each such wrapping sent 3–7% of the real errors the catalogue reads to the
//! fallback. So does what an agent's terminal interface draws around a message that a user
//! copies into a report (Claude Code's `⎿`, Gemini CLI's `✕`, a box's borders), and a program's
//! name labelling the line. A reading removes it, line by line:
//!
//! 1. a box's borders and one status mark (`drawing::TERMINAL_MARKS`); the first reading
//!    ([`Unwrapping::TerminalDrawing`]) takes off only these, so that a rule written against a
//!    log line or label behind the mark still reads it;
//! 2. then, in every later reading, a report's blockquote markers (`> `) and an error chain's
//!    `Caused by: ` at the line's start, then a log prefix: a timestamp, a level, or a timestamp
//!    then a level (with the logger's own fields around the level, as the formats above print
//!    them), then a component's tag in brackets (`[server] `; not an issue title's `[Bug]`, not a
//!    status code such as `[resource_exhausted]`), then, on the text's first line with text, a
//!    program's name labelling it (`mytool: `; not a word prose opens with, `bug: `, `FYI: `);
//! 3. a request or trace id in parentheses or brackets at the line's end;
//! 4. double or single quotes enclosing what is left, unless they may open or close a quoted
//!    value inside it (an object member's key, or the same quote within: taking them off would
//!    leave a secret's value unclosed for the redaction);
//! 5. in [`Unwrapping::LogWrappingAndErrorLabel`] only, an `Error:` opening what is left (a
//!    wrapper's own label before a message that has its own);
//! 6. in [`Unwrapping::LogWrappingAndFullStop`] only, and on the text's last line with text only,
//!    a full stop closing what is left, before and inside the quotes (a message ends with one or
//!    not as the hand that wrote or wrapped it chose), unless the line ends a sentence before (a
//!    line of prose, whose full stop ends a sentence that may quote an error: issue titles and
//!    reports read so).
//!
//! The fifth reading ([`Unwrapping::JsonLogMessage`]) first replaces each structured log record
//! (a JSON object per line) by its message and error values, unescaped (`super::json_log`), then
//! takes the log wrapping, but not the terminal's drawing, off those lines. The last
//! ([`Unwrapping::CompactJson`]) writes each pretty-printed JSON value compactly on one line
//! (`super::json_layout`), then takes the log wrapping and the terminal's drawing off.
//!
//! In every other reading, each line is a contiguous part of the line it was read from, never
//! moved or rewritten, and a line keeps its wrapping when nothing but white space would be left
//! of it. So such a reading holds no text the original does not hold, except across a line
//! break: the prefilter's soundness argument (`Bundle::may_classify`) rests on this. The last two
//! rewrite text, and the gate looks at them itself ([`Unwrapping::rewrites_text`]).

use std::sync::OnceLock;

use regex::Regex;

mod drawing;
mod labels;

use drawing::{may_open_terminal_mark, without_terminal_marks};
pub(crate) use labels::may_hold_error_label;
use labels::{ERROR_LABELS, after_program_label, opens_with_key, without_component_tag};

/// Which wrapping a reading of evidence text takes off ([`crate::Evidence::unwrapped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unwrapping {
    /// What an agent's terminal interface draws around a message: a box's borders and a status
    /// mark opening the line (`⎿`, `✕`, `■`…). Tried before the others, so that a rule written
    /// against a log line or a label the mark sits before still reads it.
    TerminalDrawing,
    /// Those, blockquote markers, `Caused by: `, log prefixes, component tags, a program's name
    /// labelling the text's first line (`mytool: `), trailing request ids and enclosing quotes.
    LogWrapping,
    /// Those, and an `Error:` label opening the line.
    LogWrappingAndErrorLabel,
    /// Those of [`Unwrapping::LogWrapping`], and a full stop closing the text's last line.
    LogWrappingAndFullStop,
    /// Each structured log record (a line that is one JSON object with a level or a time)
    /// replaced by its message and error values, unescaped, one per line; then those of
    /// [`Unwrapping::LogWrapping`] but the terminal's drawing (a mark in a record is part of
    /// what the program logged).
    JsonLogMessage,
    /// Each pretty-printed JSON value (a `{` or `[` ending its line, then valid JSON) written
    /// compactly on one line, its strings kept; then those of [`Unwrapping::LogWrapping`].
    CompactJson,
}

impl Unwrapping {
    /// The readings in the order classification tries them.
    pub const ALL: [Unwrapping; 6] = [
        Unwrapping::TerminalDrawing,
        Unwrapping::LogWrapping,
        Unwrapping::LogWrappingAndErrorLabel,
        Unwrapping::LogWrappingAndFullStop,
        Unwrapping::JsonLogMessage,
        Unwrapping::CompactJson,
    ];

    /// Whether the reading may hold text the original does not (it unescapes, or joins lines
    /// and closes up blanks); every other reading only cuts lines down, which the prefilter's
    /// gate relies on.
    pub(crate) fn rewrites_text(self) -> bool {
        matches!(self, Unwrapping::JsonLogMessage | Unwrapping::CompactJson)
    }

    /// What this reading takes off each line (of the records' messages, for
    /// [`Unwrapping::JsonLogMessage`]).
    fn cuts(self) -> Cuts {
        let log_wrapping = Cuts {
            terminal_drawing: true,
            log_wrapping: true,
            error_label: false,
            full_stop: false,
        };
        match self {
            Unwrapping::TerminalDrawing => Cuts {
                log_wrapping: false,
                ..log_wrapping
            },
            Unwrapping::LogWrapping | Unwrapping::CompactJson => log_wrapping,
            Unwrapping::LogWrappingAndErrorLabel => Cuts {
                error_label: true,
                ..log_wrapping
            },
            Unwrapping::LogWrappingAndFullStop => Cuts {
                full_stop: true,
                ..log_wrapping
            },
            // A record's message is what its program logged, not what a terminal drew: a
            // mark there is part of the message (an agent's own output, logged whole).
            Unwrapping::JsonLogMessage => Cuts {
                terminal_drawing: false,
                ..log_wrapping
            },
        }
    }
}

/// The kinds of wrapping a reading takes off each line.
#[derive(Clone, Copy)]
struct Cuts {
    /// A box's borders and a status mark ([`without_terminal_marks`]).
    terminal_drawing: bool,
    /// Report markers, log prefixes, component tags, a program's name on the first line,
    /// request ids and enclosing quotes.
    log_wrapping: bool,
    /// An `Error:` label opening what is left.
    error_label: bool,
    /// A full stop closing the text's last line with text.
    full_stop: bool,
}

impl std::fmt::Display for Unwrapping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unwrapping::TerminalDrawing => {
                "a terminal's box borders and status marks taken off each line"
            }
            Unwrapping::LogWrapping => {
                "terminal marks, log prefixes and tags, a program's name, blockquote markers, enclosing quotes and trailing request ids taken off each line"
            }
            Unwrapping::LogWrappingAndErrorLabel => {
                "terminal marks, log prefixes and tags, a program's name, blockquote markers, enclosing quotes, trailing request ids and an opening `Error:` taken off each line"
            }
            Unwrapping::LogWrappingAndFullStop => {
                "terminal marks, log prefixes and tags, a program's name, blockquote markers, enclosing quotes, trailing request ids and the closing full stop taken off"
            }
            Unwrapping::JsonLogMessage => {
                "each JSON log record read as its message and error, then log prefixes and tags, a program's name, blockquote markers, enclosing quotes and trailing request ids taken off each line"
            }
            Unwrapping::CompactJson => {
                "each pretty-printed JSON value written compactly on one line, then terminal marks, log prefixes and tags, a program's name, blockquote markers, enclosing quotes and trailing request ids taken off each line"
            }
        })
    }
}

/// A timestamp as loggers print one: an ISO 8601 date and time (`T` or a space between, `/`
/// between the date's parts as Go's `log` prints it), a time of day alone, or a syslog date;
/// in brackets or parentheses or bare.
const TIMESTAMP: &str = r"[\[(]?(?:\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?|\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?: ?[AP]M)?|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}:\d{2})[\])]?";

/// A log level of a warning or worse as loggers print one: in brackets or angle brackets in any
/// case, as a logfmt `level=` field, as Python's `LEVEL:logger:`, or as a bare upper-case word
/// (a lower-case word at a line's start is too often prose). A line logged at an informational
/// or debugging level keeps its prefix: what it says is not a failure (uvicorn's `INFO:
/// connection closed` is a client leaving).
const LEVEL: &str = r"(?:\[[ \t]*(?i:error|err|warn|warning|fatal|critical|crit|panic|e|w|f)[ \t]*\]|<(?i:error|warn|warning)>|level=(?i:error|err|warn|warning|fatal|critical)|(?:ERROR|WARNING|CRITICAL):[\w.\-]+:|(?:ERROR|ERR|WARN|WARNING|FATAL|CRITICAL|CRIT|PANIC)\b)";

/// What a logger prints after the level: pino's process id `(123)`, loguru's
/// `| module:function:line -`, `tracing`'s target `crate::module:`.
const AFTER_LEVEL: &str = r"(?:[ \t]*\(\d{1,10}\))?(?:[ \t]*\|[ \t]*[\w.]{1,120}:[\w<>.]{1,120}:\d{1,7}[ \t]+-)?(?:[ \t]+[a-z_]\w{0,60}(?:::\w{1,60}){1,8}:)?";

/// A separator between a logger's fields and between them and the message.
const SEPARATOR: &str = r"[ \t]*(?:[|:\-][ \t]*)?";

/// The regex `pattern` builds, compiled on first use and kept in `cell`. Every pattern here is
/// ASCII (`(?-u)`): the fields loggers print are ASCII, and Unicode `\w` repeated would take
/// megabytes of program.
fn compiled(
    cell: &'static OnceLock<Option<Regex>>,
    pattern: impl FnOnce() -> String,
) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(&pattern()).ok()).as_ref()
}

fn log_prefix() -> Option<&'static Regex> {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    compiled(&PATTERN, || {
        let level = format!("{LEVEL}{AFTER_LEVEL}");
        format!(r"(?-u)^[ \t]*(?:{TIMESTAMP}{SEPARATOR}(?:{level}{SEPARATOR})?|{level}{SEPARATOR})")
    })
}

/// An informational or debugging level, as [`LEVEL`] reads the others.
fn quiet_level() -> Option<&'static Regex> {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    compiled(&PATTERN, || {
        r"(?-u)^(?:\[[ \t]*(?i:info|debug|trace|notice|verbose|i|d)[ \t]*\]|<(?i:info|debug)>|level=(?i:info|debug|trace)|(?:INFO|DEBUG|TRACE|NOTICE|VERBOSE)\b)".to_owned()
    })
}

/// A request or trace id in brackets ending the line.
fn request_id_suffix() -> Option<&'static Regex> {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    compiled(&PATTERN, || {
        r"(?-u)[ \t]*[\[(](?i:request[ _-]?id|req[ _-]?id|requestid|trace[ _-]?id|x-request-id)[ \t]*[:=][ \t]*[\w.:/+=-]{1,128}[\])][ \t]*$".to_owned()
    })
}

/// The white space a line's fields are separated by.
const BLANKS: [char; 2] = [' ', '\t'];

/// Whether `line` could open with a log prefix: a cheap look at its first bytes (a digit, a
/// bracket, or the start of a level word [`LEVEL`] reads bare, of a logfmt level or of a syslog
/// month), so that most lines of prose and code never reach the prefix's regex.
fn may_open_with_log_prefix(line: &str) -> bool {
    let rest = line.trim_start_matches(BLANKS);
    let openings: &[&str] = match rest.as_bytes().first() {
        Some(b'0'..=b'9' | b'[' | b'(' | b'<') => return true,
        Some(b'E') => &["ERR"],
        Some(b'W') => &["WARN"],
        Some(b'F') => &["FATAL", "Feb "],
        Some(b'C') => &["CRIT"],
        Some(b'P') => &["PANIC"],
        Some(b'l') => &["level="],
        Some(b'J') => &["Jan ", "Jun ", "Jul "],
        Some(b'M') => &["Mar ", "May "],
        Some(b'A') => &["Apr ", "Aug "],
        Some(b'S') => &["Sep "],
        Some(b'O') => &["Oct "],
        Some(b'N') => &["Nov "],
        Some(b'D') => &["Dec "],
        _ => return false,
    };
    openings.iter().any(|opening| rest.starts_with(opening))
}

/// `line` without what a report or an error chain opens a quoted line with: markdown's
/// blockquote markers (`> `, nested or not) and `Caused by: `. A list's bullet stays: lists in
/// documentation and reports name errors as often as they quote them (`* 503 Service
/// Unavailable`; thirteen ordinary fixtures are such lists, two more are diffs).
fn without_report_markers(line: &str) -> &str {
    let mut rest = line;
    loop {
        let opening = rest.trim_start_matches(BLANKS);
        let Some(after) = opening
            .strip_prefix('>')
            .or_else(|| opening.strip_prefix("Caused by:"))
            .or_else(|| opening.strip_prefix("caused by:"))
        else {
            return rest;
        };
        if !has_text(after) {
            return rest;
        }
        rest = after.trim_start_matches(BLANKS);
    }
}

/// Whether `text` could end with a full stop under its wrapping (a closing quote or request id
/// may follow it), so that the full-stop reading could differ from the log-wrapping one: a look
/// at its last character.
pub(crate) fn may_hold_closing_full_stop(text: &str) -> bool {
    text.trim_end().ends_with(['.', '。', '"', '\'', ')', ']'])
}

/// Whether `part` holds more than white space.
fn has_text(part: &str) -> bool {
    !part.trim().is_empty()
}

/// Whether `line` could carry wrapping at all: its first byte other than a blank could open a
/// log prefix, a quote, a label or a terminal's mark (a program's name only when
/// `program_label`: the text's first line), or its last could close a request id. Most lines of
/// prose and code fail this on two bytes.
fn worth_a_look(line: &str, full_stop: bool, program_label: bool) -> bool {
    let bytes = line.as_bytes();
    let blank = |byte: &&u8| **byte == b' ' || **byte == b'\t';
    let first = bytes.iter().find(|byte| !blank(byte));
    let last = bytes.iter().rev().find(|byte| !blank(byte));
    matches!(
        first,
        Some(
            b'0'..=b'9'
                | b'['
                | b'('
                | b'<'
                | b'"'
                | b'\''
                | b'A'
                | b'C'
                | b'D'
                | b'E'
                | b'F'
                | b'J'
                | b'M'
                | b'N'
                | b'O'
                | b'P'
                | b'S'
                | b'W'
                | b'e'
                | b'l'
                | b'c'
                | b'>'
        )
    ) || first.is_some_and(|byte| {
        may_open_terminal_mark(*byte)
            || (program_label && (byte.is_ascii_lowercase() || *byte == b'@'))
    }) || matches!(last, Some(b')' | b']'))
        || (full_stop && matches!(last, Some(&(b'.' | FULL_STOP_LAST_BYTE))))
}

/// Whether `line` ends a sentence before its end (`. `, `! `, `? ` or an ellipsis then more
/// text): a line of prose, whose closing full stop ends a sentence that may quote an error.
fn holds_a_sentence_break(line: &str) -> bool {
    let bytes = line.as_bytes();
    memchr::memchr3_iter(b'.', b'!', b'?', bytes).any(|at| {
        matches!(bytes.get(at + 1), Some(b' ' | b'\t'))
            && bytes
                .get(at + 2..)
                .is_some_and(|after| after.iter().any(|b| !matches!(b, b' ' | b'\t')))
    }) || line.contains('。')
}

/// The last byte of the ideographic full stop `。` (and of some other characters: a look only).
const FULL_STOP_LAST_BYTE: u8 = 0x82;

/// `line` without the full stop closing it (`.` or `。`, and the blanks after it) when `applies`
/// (the full-stop reading, on the text's last line): rules anchored to a line's end name the
/// message, not its punctuation. An ellipsis, a full stop after white space, and a line of
/// prose's full stop are kept.
fn without_closing_full_stop(line: &str, applies: bool) -> &str {
    if !applies {
        return line;
    }
    let end = line.trim_end_matches(BLANKS);
    match end.strip_suffix(['.', '。']) {
        Some(before)
            if !before.ends_with(['.', '。', ' ', '\t'])
                && has_text(before)
                && !holds_a_sentence_break(before) =>
        {
            before
        }
        _ => line,
    }
}

/// Whether `line` could end with a request id: it ends with a closing bracket, and the last
/// opening one is followed by the start of an id's name (`request`, `req`, `trace`,
/// `x-request-id`), before the regex looks.
fn may_close_with_request_id(line: &str) -> bool {
    let bytes = line.trim_end_matches(BLANKS).as_bytes();
    matches!(bytes.last(), Some(b')' | b']'))
        && memchr::memrchr2(b'(', b'[', bytes)
            .and_then(|open| bytes.get(open + 1..))
            .and_then(|after| after.iter().find(|byte| !matches!(byte, b' ' | b'\t')))
            .is_some_and(|byte| matches!(byte.to_ascii_lowercase(), b'r' | b't' | b'x'))
}

/// What is left of one line (without its line break) under `cuts`: a contiguous part of it.
/// `opens_text` says whether it is the text's first line with text, the one a program's name
/// labels; `closes_text` whether it is the last, the one whose full stop the full-stop reading
/// takes off.
fn unwrap_line(line: &str, cuts: Cuts, opens_text: bool, closes_text: bool) -> &str {
    let full_stop = closes_text && cuts.full_stop;
    if !cuts.log_wrapping {
        let first = line.bytes().find(|byte| !matches!(byte, b' ' | b'\t'));
        return match first {
            Some(byte) if cuts.terminal_drawing && may_open_terminal_mark(byte) => {
                without_terminal_marks(line)
            }
            _ => line,
        };
    }
    if !worth_a_look(line, full_stop, opens_text) {
        return line;
    }
    let drawn = if cuts.terminal_drawing {
        without_terminal_marks(line)
    } else {
        line
    };
    let mut rest = without_report_markers(drawn);
    if may_open_with_log_prefix(rest)
        && let Some(found) = log_prefix().and_then(|prefix| prefix.find(rest))
        && let Some(after) = rest.get(found.end()..)
        && found.end() > 0
        && has_text(after)
    {
        if quiet_level().is_some_and(|quiet| quiet.is_match(after)) {
            // A timestamp, then a level that says the line is no failure.
            return line;
        }
        rest = after;
    }
    rest = without_component_tag(rest);
    if opens_text
        && let Some(after) = after_program_label(rest.trim_start_matches(BLANKS))
        && has_text(after)
    {
        rest = after.trim_start_matches(BLANKS);
    }
    if may_close_with_request_id(rest)
        && let Some(found) = request_id_suffix().and_then(|suffix| suffix.find(rest))
        && let Some(before) = rest.get(..found.start())
        && has_text(before)
    {
        rest = before;
    }
    rest = without_closing_full_stop(rest, full_stop);
    // An indented line, or quotes with white space just inside them, is a string literal of
    // code (a fragment of a longer message), not a message quoted whole.
    let indented = rest.starts_with('\t') || rest.starts_with("    ");
    let opening = rest.trim_start_matches(BLANKS);
    if !indented && opening.starts_with(['"', '\'']) {
        let trimmed = rest.trim();
        for quote in ['"', '\''] {
            if let Some(inner) = trimmed
                .strip_prefix(quote)
                .and_then(|inner| inner.strip_suffix(quote))
                && has_text(inner)
                && inner.trim().len() == inner.len()
                && !holds_quoted_value(inner, quote)
            {
                rest = without_closing_full_stop(inner, full_stop);
                break;
            }
        }
    }
    if cuts.error_label
        && let Some(after) = ERROR_LABELS
            .into_iter()
            .find_map(|label| rest.trim_start_matches(BLANKS).strip_prefix(label))
        && has_text(after)
    {
        rest = after.trim_start_matches(BLANKS);
    }
    rest
}

/// Whether `inner`, the text between a line's quotes, holds that quote itself where a quoted
/// value could open or close: an unescaped double quote anywhere, or a single quote beside a
/// `:` or `=`. The quotes then need not enclose one message: the line may be a member of an
/// object (`"authorization": "Basic …"`), or the last quote may close a value (`"Failed to
/// fetch" … "passwd": "two words"`), and taking them off would leave the value unclosed, whose
/// second word the redaction no longer recognises as part of it.
fn holds_quoted_value(inner: &str, quote: char) -> bool {
    let mut escaped = false;
    let mut last_non_blank = None;
    for (at, c) in inner.char_indices() {
        if c == quote && !escaped {
            if quote == '"' {
                return true;
            }
            let next = inner
                .get(at + c.len_utf8()..)
                .and_then(|after| after.trim_start().chars().next());
            if matches!(last_non_blank, Some(':' | '=')) || matches!(next, Some(':' | '=')) {
                return true;
            }
        }
        escaped = c == '\\' && !escaped;
        if !c.is_whitespace() {
            last_non_blank = Some(c);
        }
    }
    false
}

/// What lies between the double or single quotes that open the text's first line and close its
/// last, when there are several lines and the quote occurs nowhere between: a contiguous part of
/// the text, with its line breaks where they were (so the blanks before the opening quote and
/// after the closing one go too, and a text with blank lines around the quotes is left alone).
fn between_enclosing_quotes(text: &str) -> Option<&str> {
    let open = text.find(|c: char| !c.is_whitespace())?;
    let close = text.rfind(|c: char| !c.is_whitespace())?;
    let quote = text.get(open..)?.chars().next()?;
    if !matches!(quote, '"' | '\'') || close <= open {
        return None;
    }
    let inner = text.get(open + 1..close)?;
    let around = |part: &str| part.contains('\n');
    if text.get(close..)?.chars().next()? != quote
        || around(text.get(..open)?)
        || around(text.get(close + 1..)?)
        || !inner.contains('\n')
        || inner.contains(quote)
        || !has_text(inner)
    {
        return None;
    }
    Some(inner)
}

/// `text` with every line's wrapping taken off (see the module documentation); `None` when no
/// line has any.
pub(crate) fn unwrapped(text: &str, unwrapping: Unwrapping) -> Option<String> {
    let cuts = unwrapping.cuts();
    let rewritten = match unwrapping {
        Unwrapping::JsonLogMessage => super::json_log::messages(text),
        Unwrapping::CompactJson => super::json_layout::compacted(text),
        _ => return cut_lines(text, cuts),
    };
    let read = rewritten?;
    Some(cut_lines(&read, cuts).unwrap_or(read))
}

/// `text` with `cuts` made on every line; `None` when none cuts anything.
fn cut_lines(text: &str, cuts: Cuts) -> Option<String> {
    // Quotes enclosing several lines (a message pasted into a report whole) come off first:
    // the opening one at the first line's start, the closing one at the last line's end.
    let unquoted = between_enclosing_quotes(text).filter(|_| cuts.log_wrapping);
    let text = unquoted.unwrap_or(text);
    let mut out: Option<String> = unquoted.map(|_| String::with_capacity(text.len()));
    // Where the line holding the text's last character other than white space starts.
    // Where the line holding the text's first character other than white space starts, unless
    // the next line with text opens with a key too (see `opens_with_key`).
    let first_text = text.find(|c: char| !c.is_whitespace());
    let first_line = first_text
        .and_then(|first| text.get(..first))
        .and_then(|before| before.rfind('\n'))
        .map_or(0, |line_break| line_break + 1);
    let next_line = first_text
        .and_then(|first| text.get(first..))
        .and_then(|from| from.split_once('\n'))
        .and_then(|(_, after)| after.lines().find(|line| has_text(line)));
    let first_line = match next_line {
        Some(line) if opens_with_key(line) => None,
        _ => Some(first_line),
    };
    let last_line = text
        .trim_end()
        .rfind('\n')
        .map_or(0, |line_break| line_break + 1);
    let mut offset = 0;
    let ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len()));
    for end in ends {
        let line = text.get(offset..end).unwrap_or("");
        let kept = unwrap_line(line, cuts, Some(offset) == first_line, offset == last_line);
        if out.is_none() && kept.len() != line.len() {
            // Every line before this one is kept whole, with its line break.
            let mut started = String::with_capacity(text.len());
            started.push_str(text.get(..offset).unwrap_or(""));
            out = Some(started);
        }
        if let Some(out) = &mut out {
            out.push_str(kept);
            out.push('\n');
        }
        offset += line.len() + 1;
    }
    // The last line had no line break of its own.
    out.map(|mut out| {
        out.pop();
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(text: &str) -> Option<String> {
        unwrapped(text, Unwrapping::LogWrapping)
    }

    fn second(text: &str) -> Option<String> {
        unwrapped(text, Unwrapping::LogWrappingAndErrorLabel)
    }

    fn third(text: &str) -> Option<String> {
        unwrapped(text, Unwrapping::LogWrappingAndFullStop)
    }

    #[test]
    fn the_patterns_compile() {
        assert!(log_prefix().is_some());
        assert!(request_id_suffix().is_some());
        assert!(quiet_level().is_some());
    }

    #[test]
    fn log_prefixes_come_off() {
        for (wrapped, message) in [
            (
                "2026-03-04T10:11:12.345Z ERROR Request timed out.",
                "Request timed out.",
            ),
            (
                "2026-03-04 10:11:12,345 - WARNING - Rate limit hit",
                "Rate limit hit",
            ),
            ("[2026-03-04 10:11:12] [error] upstream 502", "upstream 502"),
            (
                "2009/11/10 23:00:00 dial tcp: i/o timeout",
                "dial tcp: i/o timeout",
            ),
            ("[ERROR] Connection error.", "Connection error."),
            ("ERROR:root:Error code: 429", "Error code: 429"),
            (
                "ERROR:openai._base_client:Retrying request",
                "Retrying request",
            ),
            (
                "2024-05-01 12:00:00.123 | ERROR    | app.llm:ask:88 - API error: Request timed out.",
                "API error: Request timed out.",
            ),
            (
                "2025-09-03T10:00:00.000000Z ERROR codex_core::client: stream disconnected",
                "stream disconnected",
            ),
            ("[12:00:00.000] ERROR (4242): fetch failed", "fetch failed"),
            ("Mar  4 10:11:12 ERROR model not found", "model not found"),
            ("14:18:24 Failed to provision", "Failed to provision"),
            ("level=error Overloaded", "Overloaded"),
            (
                "[W] market timeout of 5000ms exceeded",
                "market timeout of 5000ms exceeded",
            ),
        ] {
            assert_eq!(first(wrapped).as_deref(), Some(message), "{wrapped}");
        }
    }

    #[test]
    fn blockquote_markers_and_causes_come_off() {
        for (wrapped, message) in [
            ("> Connection error.", "Connection error."),
            ("> > [ERROR] upstream 502", "upstream 502"),
            (">Request timed out.", "Request timed out."),
            (
                "Caused by: java.net.SocketTimeoutException: timeout",
                "java.net.SocketTimeoutException: timeout",
            ),
            ("  caused by: Overloaded", "Overloaded"),
        ] {
            assert_eq!(first(wrapped).as_deref(), Some(message), "{wrapped}");
        }
        // A list's bullet stays (lists name errors as often as they quote them), and so does a
        // marker with nothing after it.
        for text in [
            "- 503 Service Unavailable",
            "* 500 Internal Server Error",
            ">",
            "> ",
            "Caused by:",
        ] {
            assert_eq!(first(text), None, "{text:?}");
        }
    }

    #[test]
    fn terminal_marks_and_box_borders_come_off() {
        for (drawn, message) in [
            (
                "  ⎿  API Error: Request timed out.",
                "API Error: Request timed out.",
            ),
            (
                "⏺ API Error: Connection error.",
                "API Error: Connection error.",
            ),
            (
                "│ ✕ [API Error: You have exhausted your daily quota on this model.]   │",
                "[API Error: You have exhausted your daily quota on this model.]",
            ),
            ("│ Request timed out.", "Request timed out."),
            (
                "■ stream disconnected before completion",
                "stream disconnected before completion",
            ),
            ("⚠️ Rate limit reached", "Rate limit reached"),
            (
                "❌ Error: Claude Code process exited with code 1",
                "Error: Claude Code process exited with code 1",
            ),
            ("× Model call failed", "Model call failed"),
            (
                "  └ Unexpected status 401 Unauthorized",
                "Unexpected status 401 Unauthorized",
            ),
            ("✻ > [ERROR] upstream 502", "upstream 502"),
        ] {
            assert_eq!(first(drawn).as_deref(), Some(message), "{drawn}");
        }
        // A mark needs a blank after it, and leaves text; a list's bullets stay.
        for text in [
            "×2 faster",
            "⎿",
            "│   │",
            "│",
            "• 503 Service Unavailable",
            "npm ERR! code ETIMEDOUT",
            "3 × 4 = 12",
        ] {
            assert_eq!(first(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_terminal_drawing_reading_takes_off_only_the_drawing() {
        let drawing = |text: &str| unwrapped(text, Unwrapping::TerminalDrawing);
        assert_eq!(
            drawing("  ⎿  ERROR Too Many Requests").as_deref(),
            Some("ERROR Too Many Requests")
        );
        assert_eq!(
            first("  ⎿  ERROR Too Many Requests").as_deref(),
            Some("Too Many Requests")
        );
        // One mark comes off: a second is the message's own.
        assert_eq!(
            drawing("  ⎿  ✗ Quota exceeded.").as_deref(),
            Some("✗ Quota exceeded.")
        );
        assert_eq!(
            drawing("│ ✕ [API Error: quota] │\n│ more │").as_deref(),
            Some("[API Error: quota]\nmore")
        );
        for text in [
            "[ERROR] upstream 502",
            "\"Overloaded\"",
            "> Connection error.",
        ] {
            assert_eq!(drawing(text), None, "{text:?}");
        }
        // A record's message keeps its marks: they are what the program logged.
        assert_eq!(
            unwrapped(
                r#"{"level":"error","time":"2026-03-04T10:11:12Z","msg":"✗ Quota exceeded"}"#,
                Unwrapping::JsonLogMessage
            )
            .as_deref(),
            Some("✗ Quota exceeded")
        );
    }

    #[test]
    fn component_tags_come_off_but_titles_codes_and_quiet_levels_stay() {
        for (tagged, message) in [
            ("[server] Connection error.", "Connection error."),
            (
                "[2026-03-04 10:11:12] [sdk-driver] error: overloaded",
                "error: overloaded",
            ),
            ("[openai]: Request timed out.", "Request timed out."),
        ] {
            assert_eq!(first(tagged).as_deref(), Some(message), "{tagged}");
        }
        for text in [
            "[Bug] Connection error",
            "[FEATURE] Retry on 429",
            "[info] connection closed",
            "[resource_exhausted] Error",
            "[permission_denied] permission denied",
            "[x]",
            "[ ] handle timeouts",
            "[the docs](https://example.com) say: Connection error",
        ] {
            assert_eq!(first(text), None, "{text:?}");
        }
    }

    #[test]
    fn quotes_and_request_ids_come_off() {
        assert_eq!(
            first(r#""Request timed out.""#).as_deref(),
            Some("Request timed out.")
        );
        assert_eq!(
            first("'Connection error.'").as_deref(),
            Some("Connection error.")
        );
        assert_eq!(
            first("Overloaded (request id: req_011CAbc)").as_deref(),
            Some("Overloaded")
        );
        assert_eq!(
            first(r#"[ERROR] "Overloaded" [x-request-id=8f1e2d]"#).as_deref(),
            Some("Overloaded")
        );
    }

    /// Quotes that open a message and close a quoted value inside it are not one pair: taking
    /// them off would leave the value unclosed, and the redaction would take only its first word
    /// (found by the planted-secret test, tests/redaction.rs, after the fixtures grew).
    #[test]
    fn quotes_that_close_a_value_inside_stay() {
        let planted = r#""Failed to fetch" ollama models https://api.example.com/v1/"passwd": "PH?zqEHKE yu^--XpTv8Q""#;
        assert_eq!(first(planted), None);
        assert_eq!(first(r#"'no healthy upstream secret='two words''"#), None);
        // Escaped quotes inside a quoted message, and an apostrophe, still let its quotes go.
        assert_eq!(
            first(r#""Error: {\"error\":\"overloaded\"}""#).as_deref(),
            Some(r#"Error: {\"error\":\"overloaded\"}"#)
        );
        assert_eq!(
            first("'You don't have access to this model'").as_deref(),
            Some("You don't have access to this model")
        );
    }

    /// A line that is an object's member keeps its quotes: without the key's opening quote, the
    /// redaction would no longer read `authorization": "Basic …` as a credential (found by the
    /// planted-secret test, tests/redaction.rs).
    #[test]
    fn an_object_members_quotes_stay() {
        assert_eq!(first(r#""authorization": "Basic T7WpdKYlc6mqvzLZ+""#), None);
        let reading =
            first("⏺ Error code: 504 (request_id=req_a0364)\n\"authorization\": \"Basic T7Wp+\"\n");
        assert_eq!(
            reading.as_deref(),
            Some("Error code: 504\n\"authorization\": \"Basic T7Wp+\"\n")
        );
        assert_eq!(first(r#"'token': 'abc'"#), None);
        // A quoted message whose text has a colon later on still loses its quotes.
        assert_eq!(
            first(r#""Upstream error: Overloaded""#).as_deref(),
            Some("Upstream error: Overloaded")
        );
    }

    #[test]
    fn the_error_label_comes_off_in_the_second_reading_only() {
        let text = "2026-03-04T10:11:12Z Error: Request timed out.";
        assert_eq!(first(text).as_deref(), Some("Error: Request timed out."));
        assert_eq!(second(text).as_deref(), Some("Request timed out."));
        assert_eq!(
            second("Error: Request timed out.").as_deref(),
            Some("Request timed out.")
        );
        assert_eq!(first("Error: Request timed out."), None);
    }

    #[test]
    fn a_program_name_labelling_the_first_line_comes_off_but_prose_labels_stay() {
        for (labelled, message) in [
            ("mytool: Request timed out.", "Request timed out."),
            (
                "codex: Error: stream disconnected",
                "Error: stream disconnected",
            ),
            ("[ERROR] @scope/pkg: Overloaded", "Overloaded"),
            ("  httpx.client: Connection error.", "Connection error."),
            // The first line with text only.
            (
                "\nmytool: Request timed out.\n  at call (client.js:1)\nnode: v22",
                "\nRequest timed out.\n  at call (client.js:1)\nnode: v22",
            ),
        ] {
            assert_eq!(first(labelled).as_deref(), Some(message), "{labelled}");
        }
        assert_eq!(
            second("codex: Error: stream disconnected").as_deref(),
            Some("stream disconnected")
        );
        for text in [
            "bug: Request timed out",
            "Bug: Request timed out",
            "Fix: retry on Connection error",
            "FYI: Overloaded",
            "INFO: connection closed",
            "error: could not compile",
            "The request failed: Overloaded",
            "mytool:",
            "mytool: ",
            "mytool:Overloaded",
            "https://example.com: Overloaded",
            "a-very-long-name-that-is-no-program-at-all-really: Overloaded",
            "GPT-5: Your organization must be verified to stream this model",
            "Deepseek-671B: Error: timed out waiting for llama runner to start",
            "session_failure: Cannot connect to Ollama",
            "TypeError: fetch failed",
            "Overloaded\nvary: origin",
            "mytool: Request failed\nvary: origin",
            "status: 429,\nstatusText: 'Too Many Requests',",
            "zsh: command not found: aider",
            "kimi: command not found",
            "messages.5: all messages must have non-empty content",
            "error.code: authenticationRequired",
            "authorization: Digest ZEki37P3g/ 401 Access denied",
            "api-token: 8f1e2d Overloaded",
            "db-pwd: hunter2 Overloaded",
        ] {
            assert_eq!(first(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_closing_full_stop_comes_off_in_the_third_reading_only() {
        for (stopped, message) in [
            ("Connection error.", "Connection error"),
            ("[ERROR] Request timed out. ", "Request timed out"),
            (
                "\"API Error: Connection error.\".",
                "API Error: Connection error",
            ),
            ("Overloaded. (request id: req_1)", "Overloaded"),
            ("请求超时。", "请求超时"),
            ("Error: Connection error.", "Error: Connection error"),
        ] {
            assert_eq!(third(stopped).as_deref(), Some(message), "{stopped}");
        }
        assert_eq!(first("Connection error."), None);
        assert_eq!(
            second("Error: Connection error.").as_deref(),
            Some("Connection error.")
        );
        // Only the text's last line with text loses its full stop.
        assert_eq!(
            third("Rate limit hit.\n[ERROR] Retrying.\n\n").as_deref(),
            Some("Rate limit hit.\nRetrying\n\n")
        );
    }

    #[test]
    fn a_full_stop_that_ends_prose_or_an_ellipsis_stays() {
        for text in [
            "Reconnecting... waiting for network...",
            "It failed. The API returned: 429 Too Many Requests.",
            "Is this a bug? The request timed out.",
            "Connection error .",
            ".",
            "Connection error..",
            "服务不可用。请稍后重试。",
        ] {
            assert_eq!(third(text), None, "{text:?}");
        }
    }

    #[test]
    fn unwrapped_text_keeps_its_other_lines_and_line_breaks() {
        let text = "Retrying…\n[ERROR] Overloaded\n\n  at call (client.js:1)\n";
        assert_eq!(
            first(text).as_deref(),
            Some("Retrying…\nOverloaded\n\n  at call (client.js:1)\n")
        );
    }

    #[test]
    fn quotes_enclosing_several_lines_come_off() {
        assert_eq!(
            first("\"You've hit your usage limit\nGet Cursor Pro for more Agent usage.\"")
                .as_deref(),
            Some("You've hit your usage limit\nGet Cursor Pro for more Agent usage.")
        );
        // A quote between them means the lines are not one quoted message.
        assert_eq!(first("\"a\" said\nthen \"b\""), None);
    }

    #[test]
    fn text_without_wrapping_is_not_read_again() {
        for text in [
            "",
            "\n\n",
            "API Error: 529 overloaded",
            "The error handling is broken: it retries forever.",
            "error: could not compile `faultline`",
            "`\"quoted code\"` in prose",
            "\"\"",
            "[ERROR]",
            "2026-03-04T10:11:12Z   ",
            "ERROR: ",
            "(request id: req_1)",
            "Information about rate limits",
            "Errors are returned as JSON.",
            "2024-12-24 15:53:34 INFO:     connection closed",
            "[debug] retrying after 429",
            "                \"Streaming is strongly recommended for long operations. \"",
            "\" a fragment \"",
        ] {
            assert_eq!(first(text), None, "{text:?}");
        }
    }

    /// Lines as wrappers and prose write them: the shapes the reading takes off, near misses
    /// of them, and arbitrary text.
    fn line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let openings = prop::sample::select(vec![
            "",
            "",
            "2026-03-04T10:11:12Z ",
            "[ERROR] ",
            "ERROR:root:",
            "Error: ",
            "INFO: ",
            "\"",
            "'",
            "    \"",
            "[12:00:00] WARN (42): ",
            "level=error ",
            "Jan  4 10:11:12 ",
            "> ",
            ">> Caused by: ",
            "> ",
            "[my-agent] ",
            "[Bug] ",
            "[2026-03-04 10:11:12] [openai]: ",
            "  ⎿  ",
            "│ ✕ ",
            "⚠\u{fe0f} ",
            "⎿  ✗ ",
        ]);
        let closings = prop::sample::select(vec![
            "",
            "",
            "\"",
            "'",
            " (request id: req_1)",
            " [trace_id=ab]",
            ")",
            " \"",
            ".",
            ".\".",
            "。",
            ". (request id: req_1)",
            "...",
            " │",
            "│",
        ]);
        (openings, "\\PC{0,12}", closings)
            .prop_map(|(open, middle, close)| format!("{open}{middle}{close}"))
    }

    proptest::proptest! {
        /// The soundness of the cheap gate rests on this: a reading never holds text its
        /// source does not, except across a line break.
        #[test]
        fn every_line_of_a_reading_is_part_of_its_line(
            lines in proptest::collection::vec(line(), 1..6),
            unwrapping in proptest::sample::select(Unwrapping::ALL.to_vec()),
        ) {
            let text = lines.join("\n");
            if let Some(read) = unwrapped(&text, unwrapping) {
                proptest::prop_assert_ne!(&read, &text);
                let read_lines: Vec<&str> = read.split('\n').collect();
                proptest::prop_assert_eq!(read_lines.len(), lines.len());
                for (line, read_line) in lines.iter().zip(&read_lines) {
                    proptest::prop_assert!(
                        line.contains(read_line),
                        "{:?} is not part of {:?}",
                        read_line,
                        line
                    );
                }
            }
        }
    }

    #[test]
    fn a_reading_is_each_line_cut_down() {
        let text = "[2026-03-04 10:11:12] WARN \"a\" (trace id: 1)\nplain\n'b'";
        let read = first(text).unwrap_or_default();
        let lines: Vec<&str> = text.split('\n').collect();
        let read_lines: Vec<&str> = read.split('\n').collect();
        assert_eq!(lines.len(), read_lines.len());
        for (line, read_line) in lines.iter().zip(&read_lines) {
            assert!(
                line.contains(read_line),
                "{read_line:?} is not part of {line:?}"
            );
        }
    }
}
