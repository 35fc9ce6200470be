//! The provider projection of a terminal `session/prompt` error: the one value that crosses the
//! ACP boundary when a prompt fails (AC .22, .24).
//!
//! Only the error's *message* is projected, sanitized with the provider-message tier, so a
//! signature that lives only in the JSON-RPC `data` never classifies (AC .24): such a failure
//! is terminal with manual recovery on every occurrence. Beside the message travels allowlisted
//! metadata only — the JSON-RPC code, a validated `errorKind`, the negotiated provider id and
//! the session's settled model id — and none of it is a classification input.

use serde::{Deserialize, Serialize};

use faultline_runtime::redact_provider_message;

/// The message a projection carries when sanitizing leaves nothing of the original.
pub const EMPTY_MESSAGE: &str = "provider prompt error";

/// The longest `errorKind` kept.
const MAX_ERROR_KIND_BYTES: usize = 64;

/// The longest settled model id kept.
const MAX_MODEL_ID_BYTES: usize = 128;

/// A terminal error as the agent returned it from `session/prompt` (a JSON-RPC error object),
/// reduced to what may ever be read of it: the code, the message and `data.errorKind`.
///
/// Its serde form is the JSON-RPC error object (`{"code":…,"message":…,"data":…}`, every field
/// optional). `data` may hold anything: only a string `errorKind` of an object is kept, and
/// everything else of `data` is dropped when the error is read, so raw data never crosses the
/// boundary (AC .22, .24). The kept kind is still untrusted: [`project_prompt_error`] carries it
/// only when it is a short plain token.
///
/// Reading never fails on the error's contents (AC .22: a malformed, oversized or unrecognised
/// field is dropped and does not invalidate the projection): a `code` that is not an integer
/// is dropped (no code), a `message` that is not a string is dropped (the projection then
/// carries [`EMPTY_MESSAGE`]), unknown fields are ignored, and a value that is not an object
/// at all keeps nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(into = "WirePromptError")]
pub struct PromptError {
    /// The JSON-RPC error code (`-32603` carries no meaning of its own).
    pub code: i64,
    /// The error message.
    pub message: String,
    /// `data.errorKind` as the agent declared it, when `data` was an object and the value a
    /// string; not yet validated.
    pub error_kind: Option<String>,
}

/// The JSON-RPC error object as it is written.
#[derive(Debug, Clone, Default, Serialize)]
struct WirePromptError {
    code: i64,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<serde_json::Value>,
}

impl PromptError {
    /// Reads a JSON-RPC error object, keeping what may be read of it and dropping every
    /// field that is absent, malformed or unknown (see the type's documentation).
    fn from_json(value: &serde_json::Value) -> PromptError {
        let Some(object) = value.as_object() else {
            return PromptError::default();
        };
        let error_kind = object
            .get("data")
            .and_then(serde_json::Value::as_object)
            .and_then(|data| data.get("errorKind"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        PromptError {
            code: object
                .get("code")
                .and_then(serde_json::Value::as_i64)
                .unwrap_or(0),
            message: object
                .get("message")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            error_kind,
        }
    }
}

impl<'de> Deserialize<'de> for PromptError {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(PromptError::from_json(&value))
    }
}

impl From<PromptError> for WirePromptError {
    fn from(error: PromptError) -> Self {
        WirePromptError {
            code: error.code,
            message: error.message,
            data: error.error_kind.map(|kind| {
                let mut data = serde_json::Map::new();
                data.insert("errorKind".to_owned(), serde_json::Value::String(kind));
                serde_json::Value::Object(data)
            }),
        }
    }
}

/// Where a projection came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectionSource {
    /// A `session/prompt` error.
    AcpPrompt,
    /// Cursor's `RetriableError` control chunk, settled after the prompt returned.
    CursorAcp,
}

/// The sanitized provider failure that crosses the boundary.
///
/// Its promise holds by construction: the fields are private and every constructor
/// ([`project_prompt_error`], [`ProviderProjection::cursor_retriable`], and reading one back
/// from its serde form) sanitizes the message with the provider-message tier and never leaves it
/// empty ([`projected_message`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "WireProjection")]
pub struct ProviderProjection {
    source: ProjectionSource,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rpc_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error_kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provider_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_id: Option<String>,
}

/// A projection as it is written, before its message is sanitized again: what a reader trusts
/// no more than any other text.
#[derive(Deserialize)]
struct WireProjection {
    source: ProjectionSource,
    message: String,
    #[serde(default)]
    rpc_code: Option<i64>,
    #[serde(default)]
    error_kind: Option<String>,
    #[serde(default)]
    provider_id: Option<String>,
    #[serde(default)]
    model_id: Option<String>,
}

impl From<WireProjection> for ProviderProjection {
    fn from(wire: WireProjection) -> Self {
        ProviderProjection {
            source: wire.source,
            message: projected_message(&wire.message),
            rpc_code: wire.rpc_code,
            error_kind: error_kind(wire.error_kind.as_deref()),
            provider_id: wire.provider_id.filter(|id| !id.is_empty()),
            model_id: wire.model_id.filter(|id| !id.is_empty()),
        }
    }
}

impl ProviderProjection {
    /// The projection of Cursor's `RetriableError` control chunk (`observed`, its text), settled
    /// after the prompt returned: it carries no metadata beyond its source and the adapter's
    /// provider id (omitted when empty).
    pub fn cursor_retriable(observed: &str, provider_id: &str) -> ProviderProjection {
        ProviderProjection {
            source: ProjectionSource::CursorAcp,
            message: projected_message(observed),
            rpc_code: None,
            error_kind: None,
            provider_id: (!provider_id.is_empty()).then(|| provider_id.to_owned()),
            model_id: None,
        }
    }

    /// Where it came from.
    pub fn source(&self) -> ProjectionSource {
        self.source
    }

    /// The sanitized message (provider-message tier, at most 2048 bytes, never empty).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON-RPC error code; `None` when zero.
    pub fn rpc_code(&self) -> Option<i64> {
        self.rpc_code
    }

    /// The adapter-declared error kind, when `data.errorKind` is a short plain token.
    pub fn error_kind(&self) -> Option<&str> {
        self.error_kind.as_deref()
    }

    /// The adapter's negotiated provider id, never parsed from text.
    pub fn provider_id(&self) -> Option<&str> {
        self.provider_id.as_deref()
    }

    /// The session's settled model id, as settled when the projection was built.
    pub fn model_id(&self) -> Option<&str> {
        self.model_id.as_deref()
    }
}

/// The sanitized message of a projection: the provider-message tier of `text`, or
/// [`EMPTY_MESSAGE`] when nothing survives.
pub fn projected_message(text: &str) -> String {
    let message = redact_provider_message(text);
    if message.trim().is_empty() {
        EMPTY_MESSAGE.to_owned()
    } else {
        message
    }
}

/// The declared error kind, kept only when it is a string of 1–64 characters from
/// `[A-Za-z0-9_.-]`; anything else is dropped without invalidating the projection.
fn error_kind(kind: Option<&str>) -> Option<String> {
    let kind = kind?;
    let plain = !kind.is_empty()
        && kind.len() <= MAX_ERROR_KIND_BYTES
        && kind
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    plain.then(|| kind.to_owned())
}

/// The settled model id, kept only when it is an identifier (AC .22): 1–128 bytes from
/// `[A-Za-z0-9._:/@+-]`, starting with a letter or digit, and nothing in it the diagnostic
/// redaction tier would touch (no URL, key, 32-character run, `ses_`-style id or path).
/// Anything else — whitespace, a newline, a home path, a URL, a key, an oversized id — is
/// dropped without invalidating the projection.
fn model_id(model: Option<&str>) -> Option<String> {
    let model = model?;
    let shaped = model.len() <= MAX_MODEL_ID_BYTES
        && model
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && model.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'/' | b'@' | b'+' | b'-')
        });
    (shaped && faultline_runtime::redact_provider_message(model) == model).then(|| model.to_owned())
}

/// Projects a terminal prompt error with the session's allowlisted metadata. Empty provider
/// ids are omitted; the model id only when it is an identifier (1–128 bytes of
/// `[A-Za-z0-9._:/@+-]`, starting with a letter or digit, nothing the diagnostic tier redacts).
pub fn project_prompt_error(
    error: &PromptError,
    provider_id: &str,
    settled_model: Option<&str>,
) -> ProviderProjection {
    ProviderProjection {
        source: ProjectionSource::AcpPrompt,
        message: projected_message(&error.message),
        rpc_code: (error.code != 0).then_some(error.code),
        error_kind: error_kind(error.error_kind.as_deref()),
        provider_id: (!provider_id.is_empty()).then(|| provider_id.to_owned()),
        model_id: model_id(settled_model),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The error as the agent's JSON-RPC error object carries it, read the way every reader
    /// (the event log, the adapter's conversion) reads it.
    fn read(code: i64, message: &str, data: Option<serde_json::Value>) -> PromptError {
        let mut object = json!({"code": code, "message": message});
        if let Some(data) = data {
            object["data"] = data;
        }
        serde_json::from_value(object).unwrap()
    }

    #[test]
    fn ac_24_a_signature_only_in_data_never_crosses() {
        let error = read(
            -32603,
            "Internal error",
            Some(
                json!({"error": "peer disconnected before response", "errorKind": "server_error"}),
            ),
        );
        assert!(!format!("{error:?}").contains("peer disconnected"));
        let projection = project_prompt_error(&error, "claude-acp", None);
        assert_eq!(projection.message, "Internal error");
        assert!(
            !serde_json::to_string(&projection)
                .unwrap()
                .contains("peer disconnected")
        );
    }

    #[test]
    fn ac_22_only_allowlisted_metadata_is_kept_and_bad_fields_are_dropped() {
        const MESSAGE: &str = "Internal error: API Error: 529 Overloaded";
        let error = read(
            -32603,
            MESSAGE,
            Some(json!({"errorKind": "server_error", "secret": "sk-live"})),
        );
        let projection = project_prompt_error(&error, "claude-acp", Some("claude-sonnet-4"));
        assert_eq!(projection.rpc_code, Some(-32603));
        assert_eq!(projection.error_kind.as_deref(), Some("server_error"));
        assert_eq!(projection.provider_id.as_deref(), Some("claude-acp"));
        assert_eq!(projection.model_id.as_deref(), Some("claude-sonnet-4"));
        for bad in [
            json!({"errorKind": "has space"}),
            json!({"errorKind": 7}),
            json!(["errorKind"]),
            json!({"errorKind": "x".repeat(65)}),
            json!("server_error"),
        ] {
            let error = read(-32603, MESSAGE, Some(bad));
            let projection = project_prompt_error(&error, "claude-acp", None);
            assert_eq!(projection.error_kind, None);
            assert_eq!(
                projection.message, "Internal error: API Error: 529 Overloaded",
                "the projection stays valid"
            );
            assert_eq!(projection.model_id, None, "an unsettled model is omitted");
        }
        // What is kept is written back as `data.errorKind` alone.
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"code": -32603, "message": MESSAGE, "data": {"errorKind": "server_error"}})
        );
        let zero = project_prompt_error(&PromptError::default(), "", Some(""));
        assert_eq!(
            (zero.rpc_code, zero.provider_id, zero.model_id),
            (None, None, None)
        );
        assert_eq!(zero.message, EMPTY_MESSAGE);
    }

    #[test]
    fn a_projection_read_back_is_sanitized_and_never_empty() {
        // Regression (issue 11): the fields were public, so any code (or a deserialized verdict)
        // could carry an unsanitized or empty message across the boundary.
        let read = |value: serde_json::Value| -> ProviderProjection {
            serde_json::from_value(value).unwrap()
        };
        let empty = read(json!({"source": "acp_prompt", "message": "  "}));
        assert_eq!(empty.message(), EMPTY_MESSAGE);
        let secret = read(json!({
            "source": "cursor_acp",
            "message": "failed with api_key=sk-live-0123456789abcdef0123",
            "provider_id": "",
            "error_kind": "has space",
        }));
        assert!(
            !secret.message().contains("sk-live"),
            "{}",
            secret.message()
        );
        assert_eq!((secret.provider_id(), secret.error_kind()), (None, None));
        // A projection the constructors built reads back as itself.
        let built = project_prompt_error(
            &PromptError {
                code: -32603,
                message: "Internal error: API Error: 529 Overloaded".to_owned(),
                error_kind: Some("server_error".to_owned()),
            },
            "claude-acp",
            Some("claude-sonnet-4"),
        );
        assert_eq!(read(serde_json::to_value(&built).unwrap()), built);
        let cursor = ProviderProjection::cursor_retriable("", "cursor-acp");
        assert_eq!(cursor.message(), EMPTY_MESSAGE);
        assert_eq!(read(serde_json::to_value(&cursor).unwrap()), cursor);
    }

    /// Issue 17, item 8: a malformed or unrecognised field is dropped, never the error.
    #[test]
    fn ac_22_malformed_error_fields_are_dropped_and_the_error_is_read() {
        for (object, code, message) in [
            (
                json!({"code": -32603, "message": "m", "stack": "at x"}),
                -32603,
                "m",
            ),
            (json!({"code": "-32603", "message": "m"}), 0, "m"),
            (json!({"code": -32603.5, "message": "m"}), 0, "m"),
            (json!({"code": 1e30, "message": "m"}), 0, "m"),
            (
                json!({"code": -32603, "message": {"text": "m"}}),
                -32603,
                "",
            ),
            (json!("Internal error"), 0, ""),
            (json!(null), 0, ""),
        ] {
            let error: PromptError = serde_json::from_value(object.clone()).unwrap();
            assert_eq!(
                (error.code, error.message.as_str()),
                (code, message),
                "{object}"
            );
            let projection = project_prompt_error(&error, "claude-acp", None);
            assert_eq!(projection.rpc_code, (code != 0).then_some(code));
            assert!(!projection.message.is_empty());
        }
    }

    /// Issue 17, item 7: the settled model id is carried only when it is an identifier.
    #[test]
    fn ac_22_the_model_id_must_be_an_identifier() {
        let project = |model: &str| {
            project_prompt_error(&read(-32603, "m", None), "claude-acp", Some(model)).model_id
        };
        for kept in [
            "claude-sonnet-4",
            "gpt-5",
            "anthropic/claude-3.5-sonnet",
            "claude-opus-4@20250514",
            "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        ] {
            assert_eq!(project(kept).as_deref(), Some(kept));
        }
        for dropped in [
            "m".repeat(5_000),
            "m".repeat(129),
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789".to_owned(),
            "https://attacker.example/model".to_owned(),
            "claude\nsonnet".to_owned(),
            "claude sonnet".to_owned(),
            "/home/alice/models/local.gguf".to_owned(),
            "home/alice/models/x".to_owned(),
            "ses_0123abcd".to_owned(),
            "   ".to_owned(),
            String::new(),
        ] {
            assert_eq!(project(&dropped), None, "{dropped:?}");
        }
    }
}
