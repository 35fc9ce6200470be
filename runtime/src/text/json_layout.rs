//! Pretty-printed JSON values read compactly, as one line without the blanks between tokens.
//!
//! An error body reaches a rule in whatever layout the program that printed it chose: on one
//! line as the provider sent it (`{"error":{"code":"1113","message":…}}`), or pretty-printed
//! over several lines with two-space indents, as `JSON.stringify(body, null, 2)`, Python's
//! `json.dumps(body, indent=2)` and most CLIs and issue reports show it. Rules are written
//! against the layout their sources printed, and a rule that reads a key and its value together
//! (`"code":"1113","message"`) does not match the other layout. Measured on the classification
//! fixtures: pretty-printing the JSON body of the 2,283 real errors that hold one changed the
//! answer of 101; read compactly again, 60 of those answer as before (the others were written
//! against Python's spaced layout or lose non-ASCII text to the measure's own escaping).
//!
//! A value is read here when it opens with `{` or `[` at the end of a line (what pretty-printing
//! does first) and parses as JSON from there (`serde_json`, which also finds where it ends); its
//! blanks outside strings are dropped and its strings kept byte for byte, so the compact text
//! holds exactly the value's tokens. Everything around it stays as it is.
//!
//! The reading joins lines and closes up blanks, so a literal can occur in it and not in the
//! text as given: like the JSON-log reading, the prefilter's gate looks at this reading itself
//! (`Bundle::may_classify`).

use serde::de::IgnoredAny;

/// Whether `text` may hold a pretty-printed JSON value: a `{` or `[` followed, after blanks,
/// by a line break. Cheap, and never `false` for a text that [`compacted`] changes.
pub(crate) fn may_hold_pretty_json(text: &str) -> bool {
    opening_positions(text).next().is_some()
}

/// `text` with each pretty-printed JSON value in it written compactly (see the module
/// documentation); `None` when it holds none.
pub(crate) fn compacted(text: &str) -> Option<String> {
    compacted_counting(text).0
}

/// [`compacted`], and how many bytes the failed parses read.
fn compacted_counting(text: &str) -> (Option<String>, usize) {
    let mut out: Option<String> = None;
    // Where the text not yet copied to `out` starts.
    let mut copied_to = 0;
    let mut failed_bytes: usize = 0;
    for start in opening_positions(text) {
        if start < copied_to {
            // Inside a value already compacted.
            continue;
        }
        let Some(rest) = text.get(start..) else {
            continue;
        };
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<IgnoredAny>();
        match values.next() {
            Some(Ok(_)) => {}
            Some(Err(error)) => {
                // Code and prose open many lines with `{` or `[`; each failed parse read up to
                // where it failed. Reading past the text's own length in failures stops the
                // search, so that a hostile text (a thousand `[` lines over one long unclosed
                // array) costs a bounded multiple of its length, not its square.
                failed_bytes = failed_bytes.saturating_add(read_before(rest, &error));
                if failed_bytes > text.len() {
                    break;
                }
                continue;
            }
            None => continue,
        }
        let end = start + values.byte_offset();
        let (Some(before), Some(value)) = (text.get(copied_to..start), text.get(start..end)) else {
            continue;
        };
        let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
        out.push_str(before);
        push_compact(out, value);
        copied_to = end;
    }
    let Some(mut out) = out else {
        return (None, failed_bytes);
    };
    out.push_str(text.get(copied_to..).unwrap_or_default());
    (Some(out), failed_bytes)
}

/// How much of `rest` a parse read before it failed with `error`: up to the start of the line
/// it failed on (its line count is 1-based), and that line's columns.
fn read_before(rest: &str, error: &serde_json::Error) -> usize {
    let line_start = match error.line().checked_sub(2) {
        Some(breaks) => memchr::memchr_iter(b'\n', rest.as_bytes())
            .nth(breaks)
            .map_or(rest.len(), |line_break| line_break + 1),
        None => 0,
    };
    line_start.saturating_add(error.column()).min(rest.len())
}

/// Where each `{` or `[` that ends its line (blanks after it aside) is.
fn opening_positions(text: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    memchr::memchr2_iter(b'{', b'[', bytes).filter(move |&at| {
        bytes
            .get(at + 1..)
            .unwrap_or_default()
            .iter()
            .find(|byte| !matches!(byte, b' ' | b'\t' | b'\r'))
            == Some(&b'\n')
    })
}

/// Appends `value` (valid JSON) without the white space between its tokens.
fn push_compact(out: &mut String, value: &str) {
    let mut in_string = false;
    let mut escaped = false;
    for c in value.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{compacted, may_hold_pretty_json};

    #[test]
    fn a_pretty_printed_body_is_read_on_one_line() {
        let text = "API Error: 429 {\n  \"error\": {\n    \"code\": \"1113\",\n    \"message\": \"Insufficient balance, top up\"\n  }\n} (retrying)";
        assert!(may_hold_pretty_json(text));
        assert_eq!(
            compacted(text).as_deref(),
            Some(
                "API Error: 429 {\"error\":{\"code\":\"1113\",\"message\":\"Insufficient balance, top up\"}} (retrying)"
            )
        );
    }

    #[test]
    fn strings_keep_their_blanks_and_escapes() {
        let text = "[\r\n  \"a  b\",\n  \"say \\\" { \\n\",\n  {\"k\": [1, 2]}\n]";
        assert_eq!(
            compacted(text).as_deref(),
            Some("[\"a  b\",\"say \\\" { \\n\",{\"k\":[1,2]}]")
        );
    }

    #[test]
    fn every_value_is_read_and_what_is_not_json_stays() {
        let text = "first {\n \"a\": 1\n}\nfn main() {\n    let x = 1;\n}\nsecond [\n  true\n]";
        assert_eq!(
            compacted(text).as_deref(),
            Some("first {\"a\":1}\nfn main() {\n    let x = 1;\n}\nsecond [true]")
        );
    }

    /// Arrays opened on a thousand lines over one long unclosed one: every `[` starts a parse
    /// that fails, the deepest ones after reading the whole tail. The failed parses stop once
    /// they have read as much as the text holds, so the work stays linear in its length.
    #[test]
    fn failed_parses_read_a_bounded_share_of_the_text() {
        for text in [
            format!("{}{}", "[\n".repeat(1000), "1,".repeat(100_000)),
            format!("{}\"{}", "{\n \"k\": [\n".repeat(100), "x".repeat(200_000)),
        ] {
            let (read, failed_bytes) = super::compacted_counting(&text);
            assert_eq!(read, None);
            assert!(
                failed_bytes <= 2 * text.len(),
                "{failed_bytes} bytes read for {}",
                text.len()
            );
        }
    }

    #[test]
    fn one_line_json_and_code_are_left_alone() {
        for text in [
            r#"{"error": {"message": "Overloaded"}}"#,
            "if (x) {\n  return;\n}",
            "{\n  \"unterminated\": \"",
            "[\n",
            "no brackets at all",
        ] {
            assert_eq!(compacted(text), None, "{text:?}");
        }
        assert!(!may_hold_pretty_json(r#"{"a": 1}"#));
    }
}
