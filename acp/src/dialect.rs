//! The ACP dialects: which provider-specific evidence an adapter's negotiated agent id brings,
//! and the parsing of the one piece of protocol metadata that carries recovery evidence, Codex's
//! response-attempt retry boundary in a `session_info_update`'s `_meta` (AC .26).
//!
//! The recovery engine never compares provider ids: the adapter decides the dialect once, from
//! the negotiated id (exact match only, ids are never parsed), and hands the engine what follows
//! from it — a [`ProviderProfile`] (whether Cursor's `RetriableError` barrier applies) and typed
//! events (a recognised boundary becomes [`AdapterEvent::ResponseAttemptReset`]).
//!
//! [`AdapterEvent::ResponseAttemptReset`]: crate::event::AdapterEvent::ResponseAttemptReset

use faultline_recovery::ProviderProfile;
use serde_json::Value;

/// The agent id the reference system negotiates for the Codex ACP adapter.
pub const CODEX_AGENT_ID: &str = "codex-acp";
/// The agent id the reference system negotiates for the Cursor ACP adapter.
pub const CURSOR_AGENT_ID: &str = "cursor-acp";

/// The ACP dialect of an adapter, which decides the provider-specific evidence it yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// `codex-acp`: the only dialect with a production response-attempt boundary recogniser.
    Codex,
    /// `cursor-acp`: its `Error: RetriableError:` chunks form the barrier (AC .12–.15).
    Cursor,
    /// Every other adapter (Claude, OpenCode, the mock agent, unknown ids): no dialect-specific
    /// evidence. Its updates never form a boundary, whatever their metadata says.
    Generic,
}

impl Dialect {
    /// The dialect for a negotiated agent id. Exact match only: ids are never parsed.
    pub fn for_agent(agent_id: &str) -> Dialect {
        match agent_id {
            CODEX_AGENT_ID => Dialect::Codex,
            CURSOR_AGENT_ID => Dialect::Cursor,
            _ => Dialect::Generic,
        }
    }

    /// What the recovery engine needs to know of a session whose adapter negotiated
    /// `provider_id` in this dialect.
    pub fn profile(self, provider_id: &str) -> ProviderProfile {
        let profile = ProviderProfile::new(provider_id);
        match self {
            Dialect::Cursor => profile.with_retriable_error_barrier(),
            Dialect::Codex | Dialect::Generic => profile,
        }
    }
}

/// The recovery engine's profile of a session whose adapter negotiated `agent_id`:
/// `Dialect::for_agent(agent_id).profile(agent_id)`.
pub fn recovery_profile(agent_id: &str) -> ProviderProfile {
    Dialect::for_agent(agent_id).profile(agent_id)
}

/// Whether one `session_info_update`'s `_meta` is a response-attempt retry boundary (AC .26).
///
/// It is only when `dialect` is [`Dialect::Codex`] and `meta` has exactly this shape, extra
/// keys allowed anywhere:
///
/// ```json
/// { "codex": { "error": {
///     "willRetry": true,
///     "codexErrorInfo": { "responseStreamDisconnected": { } }
/// } } }
/// ```
///
/// That is, `codex`, `codex.error` and `codex.error.codexErrorInfo` are JSON objects,
/// `codex.error.willRetry` is the boolean `true`, and
/// `codex.error.codexErrorInfo.responseStreamDisconnected` is a JSON object (any contents,
/// such as `httpStatusCode`, which is not read).
///
/// Anything else stays ordinary session information: `willRetry: false` or `"true"`, a
/// missing, `null`, string, array or boolean disconnect value, `codexErrorInfo` given as the
/// bare string `"responseStreamDisconnected"`, the un-namespaced app-server shape (`error`
/// and `willRetry` at the top level), non-object maps and another dialect. `message`,
/// `additionalDetails` and every other string are never read, so no wording can create a
/// boundary.
///
/// The generation half of AC .26 (a zero or stale prompt generation is no boundary) is not
/// decided here: the adapter emits the boundary for the prompt it is running, and the recovery
/// engine checks the generation the orchestrator claims for it against the active prompt.
pub(crate) fn response_attempt_reset(dialect: Dialect, meta: &Value) -> bool {
    dialect == Dialect::Codex && codex_reset(meta).is_some()
}

fn codex_reset(meta: &Value) -> Option<()> {
    let error = meta
        .as_object()?
        .get("codex")?
        .as_object()?
        .get("error")?
        .as_object()?;
    // `Value::Bool(true)` only: the string "true" or a number is malformed, not a yes.
    if error.get("willRetry")? != &Value::Bool(true) {
        return None;
    }
    error
        .get("codexErrorInfo")?
        .as_object()?
        .get("responseStreamDisconnected")?
        .as_object()?;
    Some(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn codex_meta() -> Value {
        json!({"codex": {"error": {
            "willRetry": true,
            "codexErrorInfo": {"responseStreamDisconnected": {}},
        }}})
    }

    fn recognised(meta: &Value) -> bool {
        response_attempt_reset(Dialect::Codex, meta)
    }

    #[test]
    fn only_the_cursor_dialect_has_the_barrier() {
        assert!(recovery_profile("cursor-acp").retriable_error_barrier());
        assert_eq!(recovery_profile("cursor-acp").provider_id(), "cursor-acp");
        for agent in ["claude-acp", "codex-acp", "Cursor-ACP", "cursor", ""] {
            assert!(
                !recovery_profile(agent).retriable_error_barrier(),
                "{agent}"
            );
            assert_eq!(recovery_profile(agent).provider_id(), agent);
        }
    }

    #[test]
    fn ac_26_exact_codex_shape_is_a_boundary() {
        assert!(recognised(&codex_meta()));
        // The disconnect object's contents and sibling keys are irrelevant.
        assert!(recognised(&json!({
            "threadStatus": {"type": "active"},
            "codex": {
                "threadStatus": {"type": "active"},
                "error": {
                    "message": "Reconnecting... 2/5",
                    "willRetry": true,
                    "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 502}},
                    "additionalDetails": "socket closed",
                },
            },
        })));
    }

    #[test]
    fn ac_26_false_will_retry_is_not_a_boundary() {
        let mut meta = codex_meta();
        meta["codex"]["error"]["willRetry"] = json!(false);
        assert!(!recognised(&meta));
    }

    #[test]
    fn ac_26_will_retry_must_be_the_boolean_true() {
        for value in [
            json!("true"),
            json!(1),
            json!(null),
            json!([true]),
            json!({"value": true}),
        ] {
            let mut meta = codex_meta();
            meta["codex"]["error"]["willRetry"] = value.clone();
            assert!(!recognised(&meta), "willRetry = {value}");
        }
        let mut meta = codex_meta();
        meta["codex"]["error"]
            .as_object_mut()
            .unwrap()
            .remove("willRetry");
        assert!(!recognised(&meta), "missing willRetry");
    }

    #[test]
    fn ac_26_disconnect_value_must_be_an_object() {
        for value in [
            json!("connection reset"),
            json!(true),
            json!(null),
            json!([]),
            json!([{}]),
            json!(502),
        ] {
            let mut meta = codex_meta();
            meta["codex"]["error"]["codexErrorInfo"]["responseStreamDisconnected"] = value.clone();
            assert!(!recognised(&meta), "responseStreamDisconnected = {value}");
        }
    }

    #[test]
    fn ac_26_missing_disconnect_object_is_not_a_boundary() {
        let empty_info = json!({"codex": {"error": {"willRetry": true, "codexErrorInfo": {}}}});
        let no_info = json!({"codex": {"error": {"willRetry": true}}});
        // Another retryable error kind is not a response-stream disconnect.
        let other_kind = json!({"codex": {"error": {
            "willRetry": true,
            "codexErrorInfo": {"httpConnectionFailed": {}},
        }}});
        for meta in [empty_info, no_info, other_kind] {
            assert!(!recognised(&meta), "{meta}");
        }
    }

    #[test]
    fn ac_26_malformed_maps_are_not_boundaries() {
        let malformed = [
            json!(null),
            json!("codex"),
            json!([codex_meta()]),
            json!({}),
            json!({"codex": null}),
            json!({"codex": "error"}),
            json!({"codex": [{"error": {}}]}),
            json!({"codex": {"error": null}}),
            json!({"codex": {"error": "responseStreamDisconnected"}}),
            json!({"codex": {"error": [{"willRetry": true}]}}),
            // `codexErrorInfo` as the bare enum string, as terminal app-server errors carry it.
            json!({"codex": {"error": {"willRetry": true, "codexErrorInfo": "responseStreamDisconnected"}}}),
            json!({"codex": {"error": {"willRetry": true, "codexErrorInfo": null}}}),
            json!({"codex": {"error": {"willRetry": true, "codexErrorInfo": [{"responseStreamDisconnected": {}}]}}}),
        ];
        for meta in malformed {
            assert!(!recognised(&meta), "{meta}");
        }
    }

    #[test]
    fn ac_26_shape_must_be_under_the_codex_namespace() {
        // The native app-server notification shape, with `willRetry` beside `error`.
        let native = json!({
            "error": {"codexErrorInfo": {"responseStreamDisconnected": {}}},
            "willRetry": true,
        });
        // The right error, but not under `codex`.
        let bare = json!({"error": {
            "willRetry": true,
            "codexErrorInfo": {"responseStreamDisconnected": {}},
        }});
        // `willRetry` one level too high.
        let sibling = json!({"codex": {
            "willRetry": true,
            "error": {"codexErrorInfo": {"responseStreamDisconnected": {}}},
        }});
        for meta in [native, bare, sibling] {
            assert!(!recognised(&meta), "{meta}");
        }
    }

    #[test]
    fn ac_26_error_strings_are_never_inspected() {
        // Retry wording in every string field cannot stand in for the structured shape.
        let wording = json!({"codex": {"error": {
            "message": "stream disconnected; will retry (responseStreamDisconnected)",
            "additionalDetails": "willRetry: true, responseStreamDisconnected",
            "willRetry": false,
            "codexErrorInfo": {"other": {}},
        }}});
        assert!(!recognised(&wording));
        // And no wording can veto the exact shape either.
        let mut meta = codex_meta();
        meta["codex"]["error"]["message"] = json!("fatal: will not retry");
        meta["codex"]["error"]["additionalDetails"] = json!("terminal");
        assert!(recognised(&meta));
    }

    #[test]
    fn ac_26_terminal_error_is_not_a_boundary() {
        let terminal = json!({"codex": {"error": {
            "message": "stream disconnected before completion",
            "willRetry": false,
            "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 502}},
        }}});
        assert!(!recognised(&terminal));
    }

    #[test]
    fn ac_26_unsupported_dialect_is_not_a_boundary() {
        assert_eq!(Dialect::for_agent("codex-acp"), Dialect::Codex);
        for agent in [
            "claude-acp",
            "cursor-acp",
            "mock-agent",
            "codex",
            "Codex-ACP",
            "",
        ] {
            let dialect = Dialect::for_agent(agent);
            assert_ne!(dialect, Dialect::Codex, "{agent}");
            assert!(!response_attempt_reset(dialect, &codex_meta()), "{agent}");
        }
        // The mock agent's test-only marker is never a production boundary.
        let mock = json!({"kandevMock": {"responseAttemptReset": true}});
        assert!(!recognised(&mock));
    }
}
