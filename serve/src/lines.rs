//! The JSON-lines protocol's parsing, shared by the CLI (`faultline classify`, `explain`,
//! `recover`) and the server (`/v1/classify`, `/v1/explain`, `/v1/sessions/{id}/events`): how
//! one line becomes its caller's `id` and its fields, how fields become typed evidence (naming
//! the offending field), and the error object that stands in for a line that cannot be
//! answered. One parser, so a line the CLI accepts the server accepts, and the other way round.

use std::time::SystemTime;

use faultline_runtime::{DecisionContext, Evidence, parse_instant};
use serde_json::{Map, Value};

/// Why one input line could not be answered: the field at fault (a JSON path such as
/// `phase`), when there is one, and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct LineError {
    /// The offending field, or `None` when the line as a whole is at fault.
    pub field: Option<String>,
    /// What is wrong, for a person.
    pub message: String,
}

impl LineError {
    /// An error about the whole line.
    pub fn line(message: impl Into<String>) -> Self {
        LineError {
            field: None,
            message: message.into(),
        }
    }

    /// An error about one field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        LineError {
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// The message for a person, naming the field.
    pub fn describe(&self) -> String {
        match &self.field {
            Some(field) => format!("field `{field}`: {}", self.message),
            None => self.message.clone(),
        }
    }

    /// `{"field":…,"message":…}`, the `error` member of an error object.
    pub fn to_json(&self) -> Value {
        let mut detail = Map::new();
        detail.insert(
            "field".to_owned(),
            self.field.clone().map_or(Value::Null, Value::from),
        );
        detail.insert("message".to_owned(), Value::from(self.message.clone()));
        Value::Object(detail)
    }
}

/// The JSON type of a value, for messages.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses one line into its caller-chosen `id` (a string or a number) and its other fields.
pub fn parse_object(bytes: &[u8]) -> (Option<Value>, Result<Map<String, Value>, LineError>) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return (
            None,
            Err(LineError::line(
                "the line is not UTF-8 text: expected one JSON object",
            )),
        );
    };
    if text.trim().is_empty() {
        return (
            None,
            Err(LineError::line(
                "the line is blank: expected one JSON object",
            )),
        );
    }
    let mut fields = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(fields)) => fields,
        Ok(other) => {
            return (
                None,
                Err(LineError::line(format!(
                    "expected a JSON object, found {}",
                    json_kind(&other)
                ))),
            );
        }
        Err(error) => return (None, Err(LineError::line(format!("invalid JSON: {error}")))),
    };
    match fields.remove("id") {
        None => (None, Ok(fields)),
        Some(id @ (Value::String(_) | Value::Number(_))) => (Some(id), Ok(fields)),
        Some(other) => (
            None,
            Err(LineError::field(
                "id",
                format!("expected a string or a number, found {}", json_kind(&other)),
            )),
        ),
    }
}

/// Takes the string field `key` out of a line's fields: `None` when the line has none.
pub fn string_field(
    fields: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<String>, LineError> {
    match fields.remove(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(LineError::field(
            key,
            format!("expected a string, found {}", json_kind(&other)),
        )),
    }
}

/// Takes an event line's `context` (a decision context's name) out of its fields: `None` when
/// the line has none.
pub fn context_field(
    fields: &mut Map<String, Value>,
) -> Result<Option<DecisionContext>, LineError> {
    let Some(name) = string_field(fields, "context")? else {
        return Ok(None);
    };
    DecisionContext::from_name(&name).map(Some).ok_or_else(|| {
        LineError::field(
            "context",
            format!("unknown decision context `{name}`; expected `kanban` or `office`"),
        )
    })
}

/// Reads a line's fields as evidence and its clock: evidence fields, plus an optional `now`
/// (RFC 3339) that overrides `default_now` (the system clock when that is `None`).
pub fn evidence_of(
    mut fields: Map<String, Value>,
    default_now: Option<SystemTime>,
) -> Result<(Evidence, SystemTime), LineError> {
    let now = match fields.remove("now") {
        Some(Value::String(text)) => parse_instant(&text).map_err(|error| {
            LineError::field("now", format!("invalid instant `{text}`: {error}"))
        })?,
        Some(other) => {
            return Err(LineError::field(
                "now",
                format!("expected an RFC 3339 string, found {}", json_kind(&other)),
            ));
        }
        None => default_now.unwrap_or_else(SystemTime::now),
    };
    let evidence = typed(fields)?;
    Ok((evidence, now))
}

/// Deserializes fields into `T`, naming the offending field (serde's own message may not).
pub fn typed<T: serde::de::DeserializeOwned>(fields: Map<String, Value>) -> Result<T, LineError> {
    serde_path_to_error::deserialize(Value::Object(fields)).map_err(|error| {
        let message = error.inner().to_string();
        match error.path().to_string().as_str() {
            "." => match unknown_field(&message) {
                Some(field) => LineError::field(field, message),
                None => LineError::line(message),
            },
            path => LineError::field(path, message),
        }
    })
}

/// The field serde's "unknown field `x`, expected …" message names.
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest.get(..rest.find('`')?)?.to_owned())
}

/// Puts the caller's `id` first in an answer that is a JSON object, so a caller can match
/// answers to requests without counting lines.
pub fn with_id(answer: String, id: Option<&Value>) -> String {
    match (id, answer.strip_prefix('{')) {
        (Some(id), Some(rest)) => {
            let separator = if rest.starts_with('}') { "" } else { "," };
            format!("{{\"id\":{id}{separator}{rest}")
        }
        _ => answer,
    }
}

/// An answer must stay one line whatever the input carried (a session name with a newline
/// in it, say): line breaks and other control characters are written as escapes (`\n`, `\r`,
/// `\t`, else `\u00XX`), which are also JSON's: in a JSON answer, where serde has escaped the
/// C0 controls already, DEL and the C1 controls (which JSON strings may hold raw) come out
/// escaped and the answer stays valid JSON with the same values.
pub fn one_line(answer: String) -> String {
    // Every answer passes here, so the common case is a byte scan that the compiler can
    // vectorize: C0 controls and DEL are single bytes, and the C1 controls (U+0080–U+009F) are
    // encoded with the lead byte 0xC2. A 0xC2 that leads a printable character (`°`, a
    // no-break space) only costs the exact check by characters.
    let suspect = answer.bytes().fold(false, |suspect, byte| {
        suspect | (byte < 0x20) | (byte == 0x7F) | (byte == 0xC2)
    });
    if !suspect || !answer.chars().any(char::is_control) {
        return answer;
    }
    let mut escaped = String::with_capacity(answer.len() + 16);
    for c in answer.chars() {
        if c.is_control() {
            escaped.push_str(&escape(c));
        } else {
            escaped.push(c);
        }
    }
    escaped
}

/// A control character as a JSON string escape (every control character is below U+00A0).
fn escape(control: char) -> String {
    match control {
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        other => format!("\\u{:04x}", u32::from(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_go_first() {
        let id = Value::from("req-7");
        assert_eq!(
            with_id("{\"a\":1}".to_owned(), Some(&id)),
            "{\"id\":\"req-7\",\"a\":1}"
        );
        assert_eq!(with_id("{}".to_owned(), Some(&id)), "{\"id\":\"req-7\"}");
        assert_eq!(with_id("text".to_owned(), Some(&id)), "text");
    }

    /// The plain definition: every control character escaped, everything else kept.
    fn one_line_by_characters(answer: &str) -> String {
        answer
            .chars()
            .map(|c| {
                if c.is_control() {
                    escape(c)
                } else {
                    c.to_string()
                }
            })
            .collect()
    }

    #[test]
    fn a_json_answer_with_raw_controls_stays_json_with_the_same_value() {
        let value = Value::from("del \u{7F}, next line \u{85}, bell \u{7}, line\nbreak");
        let answer = one_line(value.to_string());
        assert!(!answer.chars().any(char::is_control), "{answer}");
        assert_eq!(serde_json::from_str::<Value>(&answer).ok(), Some(value));
    }

    #[test]
    fn answers_are_one_line_as_escaping_each_control_character_makes_them() {
        for answer in [
            "{\"a\":1}",
            "a\nb\r\u{7}",
            "del \u{7F}",
            "c1 \u{85} and \u{9F}",
            "printable after 0xC2: 45° \u{A0}nbsp ©",
            "é ü 日本",
            "",
        ] {
            assert_eq!(
                one_line(answer.to_owned()),
                one_line_by_characters(answer),
                "{answer:?}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn one_line_agrees_with_its_plain_definition(answer in "(?s).{0,40}") {
            proptest::prop_assert_eq!(one_line(answer.clone()), one_line_by_characters(&answer));
        }
    }

    #[test]
    fn ids_must_be_strings_or_numbers() {
        assert_eq!(parse_object(br#"{"id":7,"a":1}"#).0, Some(Value::from(7)));
        let (id, fields) = parse_object(br#"{"id":{"x":1}}"#);
        assert_eq!(id, None);
        assert_eq!(
            fields.err().and_then(|error| error.field),
            Some("id".to_owned())
        );
        assert!(parse_object(b"[1]").1.is_err());
        assert!(parse_object(b"  ").1.is_err());
        assert!(parse_object(b"\xff{}").1.is_err());
    }

    #[test]
    fn string_and_context_fields_are_taken_out_or_name_the_field() {
        let (_, fields) = parse_object(br#"{"provider_id":"p","context":"office","other":1}"#);
        let mut fields = fields.unwrap_or_default();
        assert_eq!(
            string_field(&mut fields, "provider_id"),
            Ok(Some("p".to_owned()))
        );
        assert_eq!(
            context_field(&mut fields),
            Ok(Some(DecisionContext::Office))
        );
        assert_eq!(context_field(&mut fields), Ok(None));
        assert!(fields.contains_key("other") && fields.len() == 1);
        let field_at_fault = |line: &[u8]| {
            let (_, fields) = parse_object(line);
            context_field(&mut fields.unwrap_or_default())
                .err()
                .and_then(|error| error.field)
        };
        assert_eq!(
            field_at_fault(br#"{"context":7}"#),
            Some("context".to_owned())
        );
        assert_eq!(
            field_at_fault(br#"{"context":"nowhere"}"#),
            Some("context".to_owned())
        );
    }

    #[test]
    fn evidence_errors_name_the_field() {
        let (_, fields) = parse_object(br#"{"phase":"nonsense"}"#);
        let error = fields.and_then(|fields| evidence_of(fields, None).map(|_| ()));
        assert_eq!(error.err().and_then(|e| e.field), Some("phase".to_owned()));
        let (_, fields) = parse_object(br#"{"stderr":"x","bogus":1}"#);
        let error = fields.and_then(|fields| evidence_of(fields, None).map(|_| ()));
        assert_eq!(error.err().and_then(|e| e.field), Some("bogus".to_owned()));
        let (_, fields) = parse_object(br#"{"now":"yesterday"}"#);
        let error = fields.and_then(|fields| evidence_of(fields, None).map(|_| ()));
        assert_eq!(error.err().and_then(|e| e.field), Some("now".to_owned()));
    }
}
