//! Evidence text as a terminal would show it: agents and their SDKs colour their errors, and
//! Windows tools end lines with `\r\n`, so the bytes a process wrote are not the text a user
//! reads. Rules are written against what users read (`Error:` at a line start, a banner ending
//! its line), so the views they match are built from the shown text:
//!
//! - ECMA-48 escape sequences (colours, cursor moves, OSC hyperlinks and titles) are removed,
//!   with the C0 controls a terminal does not print (a bell, a backspace) when the text holds an
//!   escape; tabs, form feeds and line breaks stay. The parser is `anstream`'s, the one clap's ecosystem strips
//!   colours with.
//! - `\r\n` becomes `\n`, and a lone `\r` (a progress line overwritten in place) a line break
//!   too, so that `^` and `$` find the lines a user sees.
//!
//! Text holding neither an escape nor a carriage return, nearly all of it, is returned as it
//! is, after one `memchr2` scan.

use std::borrow::Cow;

const ESCAPE: u8 = 0x1b;

/// Whether `text` holds an escape or a carriage return, the bytes [`shown`] changes.
pub(crate) fn changes(text: &str) -> bool {
    memchr::memchr2(ESCAPE, b'\r', text.as_bytes()).is_some()
}

/// `text` as a terminal shows it (see the module documentation); borrowed when unchanged.
pub(crate) fn shown(text: &str) -> Cow<'_, str> {
    let stripped = if memchr::memchr(ESCAPE, text.as_bytes()).is_some() {
        Cow::Owned(anstream::adapter::strip_str(text).to_string())
    } else {
        Cow::Borrowed(text)
    };
    match line_breaks_unified(&stripped) {
        Some(unified) => Cow::Owned(unified),
        None => stripped,
    }
}

/// `text` with each `\r\n` and each lone `\r` written as `\n`; `None` when it holds no `\r`.
fn line_breaks_unified(text: &str) -> Option<String> {
    let first = memchr::memchr(b'\r', text.as_bytes())?;
    let mut unified = String::with_capacity(text.len());
    let mut rest = text;
    let mut at = first;
    loop {
        unified.push_str(rest.get(..at).unwrap_or(""));
        unified.push('\n');
        let after = rest.get(at + 1..).unwrap_or("");
        rest = after.strip_prefix('\n').unwrap_or(after);
        match memchr::memchr(b'\r', rest.as_bytes()) {
            Some(next) => at = next,
            None => break,
        }
    }
    unified.push_str(rest);
    Some(unified)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn colours_and_hyperlinks_are_removed() {
        assert_eq!(
            shown("\x1b[1;31mError:\x1b[0m 429 Too Many Requests"),
            "Error: 429 Too Many Requests"
        );
        assert_eq!(
            shown("see \x1b]8;;https://example.com\x1b\\the docs\x1b]8;;\x1b\\ now"),
            "see the docs now"
        );
        assert_eq!(shown("\x1b[0mbell\x07 and tab\tkept"), "bell and tab\tkept");
    }

    #[test]
    fn carriage_returns_become_line_breaks() {
        assert_eq!(shown("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(
            shown("Thinking...\rError: overloaded"),
            "Thinking...\nError: overloaded"
        );
        assert_eq!(shown("a\r\r\nb"), "a\n\nb");
        assert_eq!(shown("\x1b[31mfailed\r\x1b[0m\nnext"), "failed\nnext");
    }

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(
            shown("Error: overloaded\nnext line"),
            Cow::Borrowed(_)
        ));
    }

    proptest! {
        /// What is shown holds no escape and no carriage return, and text without either is
        /// shown unchanged.
        #[test]
        fn shown_text_holds_no_escape_or_carriage_return(text in "[a-z\x1b\r\n\\[;0-9m\\] é]{0,40}") {
            let shown = shown(&text);
            prop_assert!(!shown.contains(['\x1b', '\r']));
            if !text.contains(['\x1b', '\r']) {
                prop_assert_eq!(shown.as_ref(), text.as_str());
            }
        }

        /// Unifying line breaks keeps every other character and turns each `\r\n` and lone
        /// `\r` into one `\n` (the naive twin: two replacements).
        #[test]
        fn line_breaks_match_two_replacements(text in "[ab\r\n]{0,40}") {
            let expected = text.replace("\r\n", "\n").replace('\r', "\n");
            let shown = shown(&text);
            prop_assert_eq!(shown.as_ref(), expected.as_str());
        }
    }
}
