//! Structured log records (one JSON object per line, as zap, slog, logrus, pino, bunyan,
//! structlog, Docker's `json-file` driver and most log shippers print them) read as the messages
//! they carry.
//!
//! An error logged this way reaches a rule as an escaped JSON string inside the record:
//! `{"level":"error","ts":…,"msg":"request failed","error":"API Error: 529 {\"type\":…}"}`. Its
//! line breaks are `\n`, its quotes `\"`, and what a rule anchors to the start of a line sits
//! behind the record's own keys. Measured on the classification fixtures, one real error in six
//! that the catalogue reads fell to the fallback once logged as such a record. The last
//! reading ([`super::Unwrapping::JsonLogMessage`]) replaces each record by its message and
//! error values, unescaped, one per line, then takes the log wrapping off them.
//!
//! A line is a record when it is one JSON object (nothing else on the line) with a message (a
//! string under `msg`, `message`, `event`, `log` or `textPayload`) and a level or a time under
//! the names loggers use. A record whose level says it is no failure (`info`, `debug`, `trace`,
//! or a bunyan/pino level under 40) stays as it is, as a log prefix with such a level does. An
//! error body (`{"error":{"message":…}}`) has no level and no time: it is not a record, and
//! the body's own rules read it.
//!
//! Unlike the other readings, this one rewrites text (unescaping it), so a literal can occur in
//! it and not in the text as given: the prefilter's gate looks at this reading itself
//! (`Bundle::may_classify`).

use serde_json::{Map, Value};

/// Keys whose string value is the record's message, in the order they are read.
const MESSAGE_KEYS: [&str; 5] = ["msg", "message", "event", "log", "textPayload"];

/// Keys whose value is the error the record reports: a string, or an object with a `message`
/// (pino and bunyan serialize an `Error` so).
const ERROR_KEYS: [&str; 4] = ["error", "err", "exception", "exc_info"];

/// Keys under which loggers print a record's level.
const LEVEL_KEYS: [&str; 5] = ["level", "lvl", "severity", "levelname", "log.level"];

/// Keys under which loggers print a record's time.
const TIME_KEYS: [&str; 6] = ["time", "ts", "timestamp", "@timestamp", "t", "asctime"];

/// Levels that say a record is no failure.
const QUIET_LEVELS: [&str; 7] = [
    "info", "debug", "trace", "notice", "verbose", "default", "dbug",
];

/// The lowest numeric level (bunyan's and pino's scale) of a record that reports a failure:
/// 40 is `warn`.
const LOWEST_LOUD_NUMERIC_LEVEL: f64 = 40.0;

/// The longest line read as a record: longer ones are not parsed.
const MAX_RECORD_BYTES: usize = 64 * 1024;

/// Whether some line of `text` may be a record: cheap, and never `false` for a text that
/// [`messages`] reads, as given or as a terminal shows it (which takes escapes out and turns
/// carriage returns into line breaks, so then any `{` may open a line).
pub(crate) fn may_hold_json_log(text: &str) -> bool {
    let bytes = text.as_bytes();
    if super::terminal::changes(text) {
        return memchr::memchr(b'{', bytes).is_some();
    }
    memchr::memchr_iter(b'{', bytes).any(|at| {
        if bytes.get(at + 1) != Some(&b'"') {
            return false;
        }
        let before = bytes.get(..at).unwrap_or_default();
        let line_start = memchr::memrchr(b'\n', before).map_or(0, |line_break| line_break + 1);
        before
            .get(line_start..)
            .is_some_and(|lead| lead.iter().all(|byte| matches!(byte, b' ' | b'\t')))
    })
}

/// `text` with each record replaced by its message and error values, one per line (see the
/// module documentation); `None` when no line is a record.
pub(crate) fn messages(text: &str) -> Option<String> {
    if !may_hold_json_log(text) {
        return None;
    }
    let mut out: Option<String> = None;
    let mut offset = 0;
    for line in text.split('\n') {
        let read = record_messages(line);
        if out.is_none() && read.is_some() {
            let mut started = String::with_capacity(text.len());
            started.push_str(text.get(..offset).unwrap_or(""));
            out = Some(started);
        }
        if let Some(out) = &mut out {
            match read {
                Some(values) => out.push_str(&values),
                None => out.push_str(line),
            }
            out.push('\n');
        }
        offset += line.len() + 1;
    }
    out.map(|mut out| {
        out.pop();
        out
    })
}

/// A record's message and error values, one per line; `None` when `line` is no record or one
/// at a quiet level.
fn record_messages(line: &str) -> Option<String> {
    let trimmed = line.trim();
    if trimmed.len() > MAX_RECORD_BYTES || !trimmed.starts_with("{\"") || !trimmed.ends_with('}') {
        return None;
    }
    let record: Map<String, Value> = serde_json::from_str(trimmed).ok()?;
    let level = LEVEL_KEYS.iter().find_map(|key| record.get(*key));
    if level.is_some_and(is_quiet) {
        return None;
    }
    if level.is_none() && !TIME_KEYS.iter().any(|key| record.contains_key(*key)) {
        return None;
    }
    let message = MESSAGE_KEYS
        .iter()
        .find_map(|key| record.get(*key).and_then(Value::as_str))?;
    let mut values = vec![message];
    for key in ERROR_KEYS {
        let error = match record.get(key) {
            Some(Value::String(error)) => Some(error.as_str()),
            Some(Value::Object(error)) => error.get("message").and_then(Value::as_str),
            _ => None,
        };
        if let Some(error) = error
            && !values.contains(&error)
        {
            values.push(error);
        }
    }
    let values: Vec<&str> = values
        .into_iter()
        .map(|value| value.trim_end_matches(['\n', '\r']))
        .filter(|value| !value.trim().is_empty())
        .collect();
    (!values.is_empty()).then(|| values.join("\n"))
}

fn is_quiet(level: &Value) -> bool {
    match level {
        Value::String(level) => QUIET_LEVELS
            .iter()
            .any(|quiet| level.eq_ignore_ascii_case(quiet)),
        Value::Number(level) => level
            .as_f64()
            .is_some_and(|level| level < LOWEST_LOUD_NUMERIC_LEVEL),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_read_as_its_message_and_error() {
        let line = r#"{"level":"error","ts":1767225600.5,"msg":"request failed","error":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"}"#;
        assert_eq!(
            messages(line).as_deref(),
            Some(
                "request failed\nAPI Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"
            )
        );
    }

    #[test]
    fn escaped_line_breaks_become_lines_and_other_lines_stay() {
        let text = "starting\n{\"time\":\"2026-03-04T10:11:12Z\",\"log\":\"Error: 401\\nPlease run /login\\n\",\"stream\":\"stderr\"}\ndone";
        assert_eq!(
            messages(text).as_deref(),
            Some("starting\nError: 401\nPlease run /login\ndone")
        );
    }

    #[test]
    fn an_error_object_gives_its_message() {
        let line = r#"{"level":50,"time":1767225600000,"msg":"llm call failed","err":{"type":"Error","message":"429 Too Many Requests","stack":"Error: 429 …"}}"#;
        assert_eq!(
            messages(line).as_deref(),
            Some("llm call failed\n429 Too Many Requests")
        );
    }

    #[test]
    fn quiet_records_bodies_and_other_json_stay() {
        for text in [
            r#"{"level":"info","msg":"retrying after rate limit"}"#,
            r#"{"level":30,"msg":"rate limited, retrying"}"#,
            r#"{"error":{"message":"Rate limit reached","type":"tokens"}}"#,
            r#"{"msg":"no level and no time"}"#,
            r#"{"level":"error","msg":"unterminated"#,
            r#"{"level":"error","msg":"x"} trailing"#,
            r#"{"level":"error","code":500}"#,
            "plain text without a record",
        ] {
            assert_eq!(messages(text), None, "{text}");
        }
    }

    #[test]
    fn may_hold_json_log_never_misses_a_record() {
        let line = r#"  {"severity":"ERROR","message":"deadline exceeded"}"#;
        assert!(may_hold_json_log(line));
        assert_eq!(messages(line).as_deref(), Some("deadline exceeded"));
        // Behind a carriage return, a record opens the line a terminal shows.
        let overwritten = "progress 10%\r{\"level\":\"error\",\"msg\":\"deadline exceeded\"}";
        assert!(may_hold_json_log(overwritten));
        assert!(!may_hold_json_log(r#"call it with {"key": "value"}"#));
    }
}
