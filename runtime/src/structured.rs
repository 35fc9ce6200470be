//! Structured evidence: the provider's HTTP response headers and its parsed error body, as an
//! orchestrator that talks to a provider through an SDK holds them.
//!
//! Both are untrusted input, so ingestion bounds them and removes credentials before anything
//! else sees them: a [`Headers`] or [`Body`] value never holds a header that carries a
//! credential nor a body string of a credential shape, whichever way it was built (JSON or the
//! setters). Nothing here is ever an error for a whole evidence line: what is out of bounds is
//! dropped (headers) or kept as text (bodies), as `docs/evidence.md` describes.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::sanitize;

/// At most this many headers are kept (the first ones, in input order).
pub const MAX_HEADERS: usize = 64;
/// A header whose name is longer than this is dropped.
pub const MAX_HEADER_NAME_BYTES: usize = 128;
/// A header whose value is longer than this is dropped (a cut value could change its meaning).
pub const MAX_HEADER_VALUE_BYTES: usize = 1024;
/// A body longer than this (as JSON text) is kept as text, cut to this many bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// A JSON body nested deeper than this (arrays and objects) is kept as text.
pub const MAX_BODY_DEPTH: usize = 32;

/// Header names that carry credentials by definition; they are dropped whatever their value.
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
];

/// Whether a header name or a body key names a secret: its value is never kept. `token` counts
/// only as the last word (`x-amz-security-token`, `access_token`), so that the rate-limit
/// headers about token counts (`x-ratelimit-reset-tokens`) survive.
pub(crate) fn names_a_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    CREDENTIAL_HEADERS.contains(&name.as_str())
        || [
            "password",
            "passwd",
            "secret",
            "api_key",
            "api-key",
            "apikey",
            "authorization",
            "cookie",
            "credential",
        ]
        .iter()
        .any(|word| name.contains(word))
        || name.ends_with("token")
        || name == "pwd"
        || name.ends_with("_pwd")
        || name.ends_with("-pwd")
}

/// The provider's HTTP response headers: names are case-insensitive (kept in ASCII lowercase),
/// values are strings.
///
/// At most [`MAX_HEADERS`] headers are kept; a header is dropped when its name is empty, not a
/// token of visible ASCII or longer than [`MAX_HEADER_NAME_BYTES`], when its value is longer
/// than [`MAX_HEADER_VALUE_BYTES`], when its name names a credential (`authorization`,
/// `proxy-authorization`, `cookie`, `set-cookie`, `x-api-key`, any name with `secret`,
/// `password`, `api-key`, … or ending in `token`), or when its value holds a credential shape
/// ([`crate::holds_credential`]). A repeated name (`Retry-After` and `retry-after`) joins its
/// values with `, `, as HTTP does.
///
/// ```
/// use faultline_runtime::Headers;
///
/// let mut headers = Headers::new();
/// headers.insert("Retry-After", "30");
/// headers.insert("Authorization", "Bearer abc");
/// assert_eq!(headers.get("retry-after"), Some("30"));
/// assert_eq!(headers.get("authorization"), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    /// Lowercase name and value, in input order; names are unique.
    entries: Vec<(String, String)>,
}

impl Headers {
    /// No headers.
    pub fn new() -> Headers {
        Headers::default()
    }

    /// Adds a header as ingestion does: returns whether it was kept (see [`Headers`]).
    pub fn insert(&mut self, name: &str, value: &str) -> bool {
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim();
        let valid_name = !name.is_empty()
            && name.len() <= MAX_HEADER_NAME_BYTES
            && name.bytes().all(|b| b.is_ascii_graphic() && b != b':');
        if !valid_name
            || value.len() > MAX_HEADER_VALUE_BYTES
            || names_a_secret(&name)
            || sanitize::holds_credential(value)
            || sanitize::holds_credential(&name)
        {
            return false;
        }
        if let Some((_, existing)) = self.entries.iter_mut().find(|(n, _)| *n == name) {
            let joined = format!("{existing}, {value}");
            if joined.len() > MAX_HEADER_VALUE_BYTES || sanitize::holds_credential(&joined) {
                return false;
            }
            *existing = joined;
            return true;
        }
        if self.entries.len() >= MAX_HEADERS {
            return false;
        }
        self.entries.push((name, value.to_owned()));
        true
    }

    /// Headers from an HTTP header block, one `name: value` per line (as a catalogue example
    /// writes them); each goes through [`Headers::insert`], and a line without `:` is ignored.
    pub fn from_block(block: &str) -> Headers {
        let mut headers = Headers::new();
        for line in block.lines() {
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name, value);
            }
        }
        headers
    }

    /// Whether ingestion would keep a header of this name and value ([`Headers::insert`]): the
    /// catalogue checker refuses a guard on one it never keeps.
    pub fn keeps(name: &str, value: &str) -> bool {
        Headers::new().insert(name, value)
    }

    /// The value of a header, by name in any case.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Every header kept: lowercase name and value, in input order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// How many headers are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no header is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl Serialize for Headers {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Headers {
    /// An object of names to values. A value may be a string, a number or a boolean (written
    /// as its JSON text), or an array of those (joined with `, `, as a repeated header); any
    /// other value drops its header. A string is read as a header block
    /// ([`Headers::from_block`]). Any other JSON value is the one error.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = match Value::deserialize(deserializer)? {
            Value::Object(map) => map,
            Value::String(block) => return Ok(Headers::from_block(&block)),
            _ => {
                return Err(D::Error::custom(
                    "expected an object of header names to string values",
                ));
            }
        };
        let mut headers = Headers::new();
        for (name, value) in &map {
            let text = match value {
                Value::Array(items) => {
                    let parts: Option<Vec<String>> = items.iter().map(scalar_text).collect();
                    parts.map(|parts| parts.join(", "))
                }
                other => scalar_text(other),
            };
            if let Some(text) = text {
                headers.insert(name, &text);
            }
        }
        Ok(headers)
    }
}

/// The text of a JSON string, number or boolean.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// The provider's error body: a JSON value, or text when it is not JSON (or out of bounds).
///
/// Built from text ([`Body::from_text`]) it is parsed as JSON when the text is a JSON object or
/// array of at most [`MAX_BODY_BYTES`] bytes and [`MAX_BODY_DEPTH`] levels; otherwise it is
/// kept as text, cut to [`MAX_BODY_BYTES`]. Every string in it (object keys included) has
/// passed the credential tier ([`crate::redact_credentials`]), and the string value of a key
/// that names a secret (`api_key`, `password`, `access_token`, …) is `***`.
///
/// ```
/// use faultline_runtime::Body;
///
/// let body = Body::from_text(r#"{"error":{"type":"overloaded_error","message":"Overloaded"}}"#);
/// assert!(body.is_json());
/// assert_eq!(body.select("/error/type"), ["overloaded_error"]);
/// assert!(!Body::from_text("upstream connect error").is_json());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    repr: Repr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Repr {
    Json(Value),
    Text(String),
}

impl Body {
    /// A body from the text the provider sent (see [`Body`]).
    pub fn from_text(text: &str) -> Body {
        if text.len() <= MAX_BODY_BYTES {
            let trimmed = text.trim_start();
            if trimmed.starts_with(['{', '['])
                && let Ok(value) = serde_json::from_str::<Value>(trimmed)
                && depth(&value) <= MAX_BODY_DEPTH
            {
                return Body::json(value);
            }
        }
        Body::text(text)
    }

    /// A body from a JSON value: a string is read as [`Body::from_text`]; another value out of
    /// bounds is kept as its JSON text, cut.
    pub(crate) fn from_value(value: Value) -> Body {
        match value {
            Value::String(text) => Body::from_text(&text),
            value => {
                let fits = depth(&value) <= MAX_BODY_DEPTH
                    && serde_json::to_string(&value).is_ok_and(|text| text.len() <= MAX_BODY_BYTES);
                if fits {
                    Body::json(value)
                } else {
                    Body::text(&serde_json::to_string(&value).unwrap_or_default())
                }
            }
        }
    }

    fn json(mut value: Value) -> Body {
        scrub(&mut value);
        Body {
            repr: Repr::Json(value),
        }
    }

    fn text(text: &str) -> Body {
        let cut = sanitize::cut(text.to_owned(), MAX_BODY_BYTES);
        Body {
            repr: Repr::Text(sanitize::credentials_unbounded(&cut)),
        }
    }

    /// A provider error body embedded at the end of a line of agent text, lifted exactly: the last
    /// line of `text` that ends with a JSON object which starts at one of its first `{` and runs,
    /// whole, to the end of the line, and whose top level has an `error` member (the shape of the
    /// OpenAI, Anthropic, Google and OpenRouter bodies): `API Error: 429 {"type":"error",…}`.
    /// Nothing is guessed: a body spread over several lines, a Python repr, a truncated object or
    /// a JSON log line without `error` is not lifted, and only the last [`MAX_BODY_BYTES`] of the
    /// text are read.
    pub fn lift(text: &str) -> Option<Body> {
        let start = crate::text::ceil_boundary(text, text.len().saturating_sub(MAX_BODY_BYTES));
        let tail = text.get(start..)?;
        for line in tail.lines().rev() {
            let line = line.trim_end();
            if !line.ends_with('}') {
                continue;
            }
            for (at, _) in line.match_indices('{').take(LIFT_ATTEMPTS_PER_LINE) {
                let Some(candidate) = line.get(at..) else {
                    continue;
                };
                if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(candidate) {
                    let value = Value::Object(map);
                    if value.get("error").is_some() && depth(&value) <= MAX_BODY_DEPTH {
                        return Some(Body::json(value));
                    }
                    break;
                }
            }
        }
        None
    }

    /// Whether the body is empty text.
    pub fn is_empty(&self) -> bool {
        matches!(&self.repr, Repr::Text(text) if text.is_empty())
    }

    /// Whether the body was read as JSON.
    pub fn is_json(&self) -> bool {
        matches!(self.repr, Repr::Json(_))
    }

    /// The body as text: its JSON text, or the text it was kept as.
    pub fn to_text(&self) -> String {
        match &self.repr {
            Repr::Json(value) => serde_json::to_string(value).unwrap_or_default(),
            Repr::Text(text) => text.clone(),
        }
    }

    /// The values at a JSON Pointer (RFC 6901; `~1` is `/`, `~0` is `~`), where a `*` segment
    /// stands for every element of an array: strings as they are, numbers and booleans as
    /// their JSON text, in document order. Objects, arrays and nulls are not values; a text
    /// body has none. An empty pointer (`""`) is the whole body.
    pub fn select(&self, pointer: &str) -> Vec<String> {
        let mut found = Vec::new();
        self.visit(pointer, &mut |value| {
            if let Some(text) = scalar_text(value) {
                found.push(text);
            }
        });
        found
    }

    /// Whether anything (a null too) is at the pointer.
    pub fn has(&self, pointer: &str) -> bool {
        let mut any = false;
        self.visit(pointer, &mut |_| any = true);
        any
    }

    /// Calls `each` on every value at the pointer; a malformed pointer reaches nothing.
    pub(crate) fn visit<'a>(&'a self, pointer: &str, each: &mut dyn FnMut(&'a Value)) {
        let Repr::Json(root) = &self.repr else {
            return;
        };
        let Some(segments) = parse_pointer(pointer) else {
            return;
        };
        walk(root, &segments, each);
    }
}

/// A JSON Pointer's segments (unescaped), or `None` when it is malformed: not empty and not
/// starting with `/`, or holding a `~` not followed by `0` or `1`.
pub fn parse_pointer(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/')
        .map(|segment| {
            let mut out = String::with_capacity(segment.len());
            let mut chars = segment.chars();
            while let Some(c) = chars.next() {
                match c {
                    '~' => match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => return None,
                    },
                    c => out.push(c),
                }
            }
            Some(out)
        })
        .collect()
}

fn walk<'a>(value: &'a Value, segments: &[String], each: &mut dyn FnMut(&'a Value)) {
    let Some((first, rest)) = segments.split_first() else {
        each(value);
        return;
    };
    match value {
        Value::Object(map) => {
            if let Some(member) = map.get(first.as_str()) {
                walk(member, rest, each);
            }
        }
        Value::Array(items) if first == "*" => {
            for item in items {
                walk(item, rest, each);
            }
        }
        Value::Array(items) => {
            // RFC 6901 array indices: digits, without a leading zero.
            let index = (first == "0" || !first.starts_with('0'))
                .then(|| first.parse::<usize>().ok())
                .flatten();
            if let Some(item) = index.and_then(|index| items.get(index)) {
                walk(item, rest, each);
            }
        }
        _ => {}
    }
}

/// The nesting depth of a JSON value: 0 for a scalar.
fn depth(value: &Value) -> usize {
    // Iterative, so that no input can exhaust the stack.
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        match value {
            Value::Array(items) => {
                deepest = deepest.max(level + 1);
                stack.extend(items.iter().map(|item| (item, level + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(level + 1);
                stack.extend(map.values().map(|item| (item, level + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// Removes credentials from every string of a JSON value (see [`Body`]).
fn scrub(value: &mut Value) {
    match value {
        Value::String(text) if sanitize::holds_credential(text) => {
            *text = sanitize::credentials_unbounded(text);
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        Value::Object(map) => {
            let members = std::mem::take(map);
            for (key, mut member) in members {
                let key = if sanitize::holds_credential(&key) {
                    sanitize::credentials_unbounded(&key)
                } else {
                    key
                };
                match &mut member {
                    Value::String(text) if names_a_secret(&key) => "***".clone_into(text),
                    other => scrub(other),
                }
                map.insert(key, member);
            }
        }
        _ => {}
    }
}

impl Serialize for Body {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.repr {
            Repr::Json(value) => value.serialize(serializer),
            Repr::Text(text) => serializer.serialize_str(text),
        }
    }
}

impl<'de> Deserialize<'de> for Body {
    /// Any JSON value: never an error (see [`Body`]).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Body::from_value)
    }
}

/// How many `{` of one line [`lift`] tries as the start of a body.
const LIFT_ATTEMPTS_PER_LINE: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_are_dropped_and_names_fold_case() {
        let mut headers = Headers::new();
        assert!(headers.insert("Retry-After", "30"));
        assert!(!headers.insert("Authorization", "Bearer x"));
        assert!(!headers.insert("Cookie", "a=b"));
        assert!(!headers.insert("set-cookie", "a=b"));
        assert!(!headers.insert("Proxy-Authorization", "Basic x"));
        assert!(!headers.insert("x-amz-security-token", "abc"));
        assert!(!headers.insert("x-debug", "sk-abcdefghijklmnopqrstuv"));
        assert!(headers.insert("x-ratelimit-reset-tokens", "6m0s"));
        assert!(headers.insert("anthropic-ratelimit-tokens-reset", "2026-01-01T00:00:00Z"));
        assert!(headers.insert("retry-after", "31"));
        assert_eq!(headers.get("RETRY-AFTER"), Some("30, 31"));
        assert_eq!(headers.len(), 3);
    }

    #[test]
    fn headers_are_bounded() {
        let mut headers = Headers::new();
        for index in 0..100 {
            headers.insert(&format!("x-h{index}"), "v");
        }
        assert_eq!(headers.len(), MAX_HEADERS);
        assert!(!headers.insert("x-long", &"v".repeat(MAX_HEADER_VALUE_BYTES + 1)));
        assert!(!Headers::new().insert(&"n".repeat(MAX_HEADER_NAME_BYTES + 1), "v"));
        assert!(!Headers::new().insert("bad name", "v"));
    }

    #[test]
    fn headers_deserialize_leniently() {
        let headers: Headers = serde_json::from_str(
            r#"{"Retry-After": 30, "x-should-retry": false, "via": ["a", "b"], "x-obj": {}}"#,
        )
        .unwrap();
        assert_eq!(headers.get("retry-after"), Some("30"));
        assert_eq!(headers.get("x-should-retry"), Some("false"));
        assert_eq!(headers.get("via"), Some("a, b"));
        assert_eq!(headers.get("x-obj"), None);
        assert!(serde_json::from_str::<Headers>("[1]").is_err());
    }

    #[test]
    fn bodies_parse_when_json_and_stay_text_otherwise() {
        let body: Body = serde_json::from_str(r#""{\"error\":{\"code\":429}}""#).unwrap();
        assert_eq!(body.select("/error/code"), ["429"]);
        let body: Body = serde_json::from_str(r#"{"error":{"code":429}}"#).unwrap();
        assert_eq!(body.select("/error/code"), ["429"]);
        let body: Body = serde_json::from_str(r#""{\"error\": trunc""#).unwrap();
        assert!(!body.is_json());
        assert_eq!(body.to_text(), r#"{"error": trunc"#);
        let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
        assert!(!Body::from_text(&deep).is_json());
        let big = format!(r#"{{"m":"{}"}}"#, "x".repeat(MAX_BODY_BYTES));
        let body = Body::from_text(&big);
        assert!(!body.is_json());
        assert_eq!(body.to_text().len(), MAX_BODY_BYTES);
        assert!(!Body::from_text("42").is_json());
    }

    #[test]
    fn pointers_follow_rfc_6901_with_a_star_over_arrays() {
        let body = Body::from_text(
            r#"{"error":{"details":[{"reason":"A"},{"reason":"B"},{"x":1}],"a/b":{"m~n":true}}}"#,
        );
        assert_eq!(body.select("/error/details/*/reason"), ["A", "B"]);
        assert_eq!(body.select("/error/details/1/reason"), ["B"]);
        assert_eq!(
            body.select("/error/details/01/reason"),
            Vec::<String>::new()
        );
        assert_eq!(body.select("/error/a~1b/m~0n"), ["true"]);
        assert!(body.has("/error/details"));
        assert!(!body.has("/error/nope"));
        assert_eq!(parse_pointer("error"), None);
        assert_eq!(parse_pointer("/a~2"), None);
        assert_eq!(
            parse_pointer("/a/"),
            Some(vec!["a".to_owned(), String::new()])
        );
    }

    #[test]
    fn body_strings_lose_their_credentials() {
        let body = Body::from_text(
            r#"{"error":{"message":"Incorrect API key provided: sk-proj-abcdefghijklmnop1234","api_key":"abc","n":{"access_token":"zzz"}}}"#,
        );
        let text = body.to_text();
        assert!(!text.contains("abcdefghijklmnop1234"), "{text}");
        assert_eq!(body.select("/error/api_key"), ["***"]);
        assert_eq!(body.select("/error/n/access_token"), ["***"]);
        let body = Body::from_text("not json: Bearer abcdefghijklmnopqrstuvwxyz0123");
        assert!(!body.to_text().contains("abcdefghijklmnopqrstuvwxyz"));
    }

    #[test]
    fn a_json_body_at_the_end_of_a_line_is_lifted() {
        let text = "retrying\nAPI Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}\n";
        let body = Body::lift(text).unwrap();
        assert_eq!(body.select("/error/type"), ["rate_limit_error"]);
        assert!(Body::lift("API Error: 429 {\"type\":\"error\"").is_none());
        assert!(Body::lift("{'error': {'type': 'x'}}").is_none());
        assert!(Body::lift("no body here").is_none());
        assert!(Body::lift("{\"level\":\"info\",\"msg\":\"ok\"}").is_none());
    }
}
