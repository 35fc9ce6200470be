//! The recovery-evidence layer against the real catalogue: one named scenario per acceptance
//! criterion (the AC number is in the test name), covering the cases of reference §D and §G.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::sync::LazyLock;

use faultline_acp::dialect::recovery_profile;
use faultline_recovery::projection::PromptError;
use faultline_recovery::prompt::{
    Claim, Disposition, LifecycleSnapshot, Outcome, Role, Safety, Verdict,
    provider_diagnostic_candidate, redact_launch_prompt,
};
use faultline_recovery::response_attempt::ToolScope;
use faultline_recovery::{Effect, Recovery, RecoveryEvent as Event};
use faultline_runtime::Bundle;
use serde_json::json;

static BUNDLE: LazyLock<Bundle> = LazyLock::new(common::catalogue_bundle);

const OVERLOADED_CHUNK: &str = "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}";
const OVERLOADED_TERMINAL: &str = "Internal error: API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}";

fn claim(generation: u64) -> Claim {
    Claim {
        execution_id: Some("exec-1".to_owned()),
        generation,
    }
}

/// The engine of a new session of `provider`, with the profile its adapter gives it.
fn engine(provider: &str) -> Recovery {
    Recovery::new(recovery_profile(provider))
}

/// A session whose attempt (exec-1, generation 7) has begun and is bound.
fn session(provider: &str) -> Recovery {
    let mut session = engine(provider);
    apply(&mut session, Event::PromptBegan { claim: claim(7) });
    session
}

/// What `event` did to the session's prompt-attempt evidence.
fn apply(session: &mut Recovery, event: Event) -> Outcome {
    let effects = session.apply(&BUNDLE, event);
    match effects.as_slice() {
        [Effect::Evidence(outcome)] => outcome.clone(),
        other => panic!("expected one evidence outcome, got {other:?}"),
    }
}

/// A `session/prompt` error as the agent's JSON-RPC error object carries it.
fn prompt_error(message: &str, data: Option<serde_json::Value>) -> PromptError {
    let mut object = json!({"code": -32603, "message": message});
    if let Some(data) = data {
        object["data"] = data;
    }
    serde_json::from_value(object).unwrap()
}

/// A chunk whose marker is decided as the conversion boundary decides it.
fn chunk(provider: &str, role: Role, text: &str) -> Event {
    Event::Chunk {
        claim: claim(7),
        role,
        text: text.to_owned(),
        provider_diagnostic_candidate: provider_diagnostic_candidate(&BUNDLE, provider, role, text),
    }
}

fn prompt_failed(
    claim: Claim,
    message: &str,
    data: Option<serde_json::Value>,
    lifecycle: Option<LifecycleSnapshot>,
) -> Event {
    Event::PromptFailed {
        claim,
        error: prompt_error(message, data),
        occurred_at: "2026-10-01T08:00:00Z".to_owned(),
        lifecycle,
    }
}

fn failed(message: &str) -> Event {
    prompt_failed(claim(7), message, None, None)
}

fn verdict_of(outcome: Outcome) -> Verdict {
    match outcome {
        Outcome::Failed(verdict) => *verdict,
        other => panic!("expected a verdict, got {other:?}"),
    }
}

fn terminal(session: &mut Recovery, message: &str) -> Verdict {
    verdict_of(apply(session, failed(message)))
}

#[test]
fn ac_8_a_clean_attempt_is_pre_result_and_recovers_automatically() {
    let mut session = session("claude-acp");
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(verdict.classification.code, "provider_overloaded");
    assert_eq!(verdict.safety, Safety::Safe);
    assert_eq!(verdict.disposition, Disposition::Automatic);
}

#[test]
fn ac_8_missing_record_execution_or_generation_fail_closed() {
    let mut none = engine("claude-acp");
    assert_eq!(
        terminal(&mut none, OVERLOADED_TERMINAL).safety,
        Safety::NoRecord
    );

    let mut launch = engine("claude-acp");
    apply(
        &mut launch,
        Event::PromptBegan {
            claim: Claim {
                execution_id: None,
                generation: 1,
            },
        },
    );
    let verdict = verdict_of(apply(
        &mut launch,
        prompt_failed(
            Claim {
                execution_id: None,
                generation: 1,
            },
            OVERLOADED_TERMINAL,
            None,
            None,
        ),
    ));
    assert_eq!(verdict.safety, Safety::MissingExecution);
    assert_eq!(verdict.disposition, Disposition::Manual);

    let mut zero = engine("claude-acp");
    apply(
        &mut zero,
        Event::PromptBegan {
            claim: Claim {
                execution_id: Some("exec-1".into()),
                generation: 0,
            },
        },
    );
    let verdict = verdict_of(apply(
        &mut zero,
        prompt_failed(
            Claim {
                execution_id: Some("exec-1".into()),
                generation: 0,
            },
            OVERLOADED_TERMINAL,
            None,
            None,
        ),
    ));
    assert_eq!(verdict.safety, Safety::ZeroGeneration);
}

#[test]
fn ac_2_a_stale_identity_is_ignored_and_a_missing_one_poisons() {
    let mut session = session("claude-acp");
    let stale = Event::Chunk {
        claim: Claim {
            execution_id: Some("exec-0".into()),
            generation: 7,
        },
        role: Role::Assistant,
        text: "old output".into(),
        provider_diagnostic_candidate: false,
    };
    assert_eq!(apply(&mut session, stale), Outcome::Stale);
    let older = Event::ToolCall {
        claim: claim(6),
        scope: ToolScope::TopLevel,
    };
    assert_eq!(apply(&mut session, older), Outcome::Stale);
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::Safe,
        "stale events do not count"
    );

    let mut session = self::session("claude-acp");
    let anonymous = Event::Chunk {
        claim: Claim::default(),
        role: Role::Assistant,
        text: "who am I".into(),
        provider_diagnostic_candidate: false,
    };
    assert_eq!(apply(&mut session, anonymous), Outcome::Poisoned);
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::EvidenceUnknown
    );

    // A conflicting bind poisons; beginning the same attempt again keeps the poisoned record
    // (issue 17, item 2); a new attempt replaces it.
    let mut session = self::session("claude-acp");
    let rebind = Event::PromptBound {
        claim: Claim {
            execution_id: Some("exec-2".into()),
            generation: 7,
        },
    };
    assert_eq!(apply(&mut session, rebind), Outcome::Poisoned);
    assert_eq!(
        apply(&mut session, Event::PromptBegan { claim: claim(7) }),
        Outcome::AttemptRepeated
    );
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::EvidenceUnknown
    );
    apply(&mut session, Event::PromptBegan { claim: claim(8) });
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(claim(8), OVERLOADED_TERMINAL, None, None),
    ));
    assert_eq!(verdict.safety, Safety::Safe);
}

#[test]
fn ac_2_an_initial_launch_adopts_its_execution_id_when_bound() {
    let mut session = engine("claude-acp");
    apply(
        &mut session,
        Event::PromptBegan {
            claim: Claim {
                execution_id: None,
                generation: 1,
            },
        },
    );
    let bind = Event::PromptBound {
        claim: Claim {
            execution_id: Some("exec-1".into()),
            generation: 1,
        },
    };
    assert_eq!(apply(&mut session, bind), Outcome::Bound);
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(
            Claim {
                execution_id: Some("exec-1".into()),
                generation: 1,
            },
            OVERLOADED_TERMINAL,
            None,
            None,
        ),
    ));
    assert_eq!(verdict.safety, Safety::Safe);
}

#[test]
fn ac_2_the_terminal_verdict_is_immutable_whatever_arrives_after_it() {
    let mut session = session("claude-acp");
    let first = terminal(&mut session, OVERLOADED_TERMINAL);
    apply(
        &mut session,
        chunk("claude-acp", Role::Assistant, "late output"),
    );
    apply(
        &mut session,
        Event::ToolCall {
            claim: claim(7),
            scope: ToolScope::TopLevel,
        },
    );
    // A re-delivery is the settled verdict again, marked a duplicate that authorises nothing
    // (issue 17, item 1).
    assert_eq!(first.disposition, Disposition::Automatic);
    let again = terminal(&mut session, OVERLOADED_TERMINAL);
    assert!(again.duplicate);
    assert_eq!(again.disposition, Disposition::Manual);
    assert_eq!(
        Verdict {
            duplicate: false,
            disposition: first.disposition,
            ..again
        },
        first
    );
}

#[test]
fn ac_2_the_lifecycle_snapshot_makes_the_verdict_independent_of_delivery_order() {
    // The stream's tool call reaches the engine only after the failure; the lifecycle saw it.
    let mut session = session("claude-acp");
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(
            claim(7),
            OVERLOADED_TERMINAL,
            None,
            Some(LifecycleSnapshot {
                evidence_known: true,
                effect_observed: true,
                ..LifecycleSnapshot::default()
            }),
        ),
    ));
    assert_eq!(verdict.safety, Safety::EffectObserved);
    // A diagnostic the lifecycle carried is re-classified and correlated like the engine's own.
    let mut session = self::session("claude-acp");
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(
            claim(7),
            OVERLOADED_TERMINAL,
            None,
            Some(LifecycleSnapshot {
                evidence_known: true,
                provider_diagnostic_text: Some(OVERLOADED_CHUNK.into()),
                ..LifecycleSnapshot::default()
            }),
        ),
    ));
    assert_eq!(
        verdict.safety,
        Safety::SafeProviderDiagnosticConfirmed {
            code: "provider_overloaded".into()
        }
    );
    let mut session = self::session("claude-acp");
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(
            claim(7),
            OVERLOADED_TERMINAL,
            None,
            Some(LifecycleSnapshot {
                evidence_known: false,
                ..LifecycleSnapshot::default()
            }),
        ),
    ));
    assert_eq!(verdict.safety, Safety::EvidenceUnknown);
}

#[test]
fn ac_21_output_and_effect_fences_are_sticky() {
    for event in [
        chunk("claude-acp", Role::Assistant, "Let me look at the file."),
        chunk("claude-acp", Role::Thought, "thinking"),
        Event::PartialResult { claim: claim(7) },
    ] {
        let mut session = session("claude-acp");
        apply(&mut session, event);
        let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
        assert_eq!(verdict.safety, Safety::OutputObserved);
        assert_eq!(
            verdict.disposition,
            Disposition::Manual,
            "class policy cannot override the gate"
        );
    }
    for event in [
        Event::ToolCall {
            claim: claim(7),
            scope: ToolScope::TopLevel,
        },
        Event::ToolUpdate { claim: claim(7) },
    ] {
        let mut session = session("claude-acp");
        apply(&mut session, event);
        assert_eq!(
            terminal(&mut session, OVERLOADED_TERMINAL).safety,
            Safety::EffectObserved
        );
    }
    // User echoes and empty chunks are not output; a whitespace-only chunk is (issue 17, a
    // decision of docs/recovery.md).
    let mut session = session("claude-acp");
    apply(
        &mut session,
        chunk("claude-acp", Role::User, "please fix the bug"),
    );
    apply(&mut session, chunk("claude-acp", Role::Assistant, ""));
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::Safe
    );
    let mut session = self::session("claude-acp");
    apply(&mut session, chunk("claude-acp", Role::Assistant, "  \n"));
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::OutputObserved
    );
}

#[test]
fn ac_20_the_marker_is_decided_for_assistant_chunks_of_the_adapters_provider() {
    assert!(provider_diagnostic_candidate(
        &BUNDLE,
        "claude-acp",
        Role::Assistant,
        OVERLOADED_CHUNK
    ));
    assert!(!provider_diagnostic_candidate(
        &BUNDLE,
        "claude-acp",
        Role::User,
        OVERLOADED_CHUNK
    ));
    assert!(!provider_diagnostic_candidate(
        &BUNDLE,
        "claude-acp",
        Role::Thought,
        OVERLOADED_CHUNK
    ));
    assert!(
        !provider_diagnostic_candidate(&BUNDLE, "", Role::Assistant, OVERLOADED_CHUNK),
        "an adapter without an id never marks"
    );
    let proxy = "API Error: 403 {\"error\":{\"type\":\"proxy_error\",\"message\":\"credentials were refused\"}}";
    assert!(provider_diagnostic_candidate(
        &BUNDLE,
        "claude-acp",
        Role::Assistant,
        proxy
    ));
    assert!(
        !provider_diagnostic_candidate(&BUNDLE, "codex-acp", Role::Assistant, proxy),
        "provider scoping"
    );
    // Transport loss is not fallback-eligible, so it is never a candidate.
    assert!(!provider_diagnostic_candidate(
        &BUNDLE,
        "claude-acp",
        Role::Assistant,
        "peer disconnected before response"
    ));
}

#[test]
fn ac_20_an_unmarked_diagnostic_is_ordinary_output() {
    let mut session = session("claude-acp");
    let unmarked = Event::Chunk {
        claim: claim(7),
        role: Role::Assistant,
        text: OVERLOADED_CHUNK.into(),
        provider_diagnostic_candidate: false,
    };
    assert_eq!(
        apply(&mut session, unmarked),
        Outcome::Output {
            cleared_diagnostic: false
        }
    );
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::OutputObserved
    );
}

#[test]
fn ac_16_ac_23_a_text_identical_diagnostic_is_pre_result() {
    let mut session = session("claude-acp");
    let outcome = apply(
        &mut session,
        chunk("claude-acp", Role::Assistant, OVERLOADED_CHUNK),
    );
    assert_eq!(
        outcome,
        Outcome::ProviderDiagnosticRecorded {
            code: "provider_overloaded".into()
        }
    );
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(
        verdict.safety,
        Safety::SafeProviderDiagnosticConfirmed {
            code: "provider_overloaded".into()
        }
    );
    assert_eq!(
        verdict.recorded_provider_diagnostic.as_deref(),
        Some("provider_overloaded")
    );
    assert_eq!(verdict.disposition, Disposition::Automatic);
}

#[test]
fn ac_23_a_gateway_500_diagnostic_strictly_inside_the_terminal_is_pre_result() {
    let diagnostic = "API Error: 500 Internal Server Error";
    let mut session = session("claude-acp");
    assert!(matches!(
        apply(
            &mut session,
            chunk("claude-acp", Role::Assistant, diagnostic)
        ),
        Outcome::ProviderDiagnosticRecorded { .. }
    ));
    let verdict = terminal(
        &mut session,
        "Internal error: API Error: 500 Internal Server Error. Try again later.",
    );
    assert!(verdict.safety.is_safe(), "{:?}", verdict.safety);
}

#[test]
fn ac_23_prose_narrating_the_error_is_not_contained_and_stays_output() {
    let prose =
        "The provider answered API Error: 529 overloaded, so I will wait and try the request again";
    let mut session = session("claude-acp");
    let outcome = apply(&mut session, chunk("claude-acp", Role::Assistant, prose));
    assert!(
        matches!(outcome, Outcome::ProviderDiagnosticRecorded { .. }),
        "the pinned false positive marks: {outcome:?}"
    );
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(
        verdict.safety,
        Safety::ProviderDiagnosticNotContained {
            code: "provider_overloaded".into()
        }
    );
    assert_eq!(verdict.disposition, Disposition::Manual);
}

#[test]
fn ac_23_containment_is_case_sensitive_and_one_directional() {
    let mut session = session("claude-acp");
    apply(
        &mut session,
        chunk(
            "claude-acp",
            Role::Assistant,
            "API Error: 500 Internal Server Error.",
        ),
    );
    let verdict = terminal(&mut session, "API Error: 500 Internal server error");
    assert!(!verdict.safety.is_safe(), "{:?}", verdict.safety);
    // The terminal inside the diagnostic is not the diagnostic inside the terminal.
    let mut session = self::session("claude-acp");
    apply(
        &mut session,
        chunk(
            "claude-acp",
            Role::Assistant,
            &format!("{OVERLOADED_CHUNK} (attempt 3 of 10)"),
        ),
    );
    assert!(!terminal(&mut session, OVERLOADED_CHUNK).safety.is_safe());
}

#[test]
fn ac_16_a_code_divergence_with_containment_is_unsafe() {
    let mut session = session("claude-acp");
    apply(
        &mut session,
        chunk(
            "claude-acp",
            Role::Assistant,
            "API Error: 500 Internal Server Error",
        ),
    );
    let verdict = terminal(
        &mut session,
        "API Error: 500 Internal Server Error, then API Error: 529 overloaded_error",
    );
    assert!(
        matches!(verdict.safety, Safety::ProviderDiagnosticCodeDiffers { .. }),
        "{:?}",
        verdict.safety
    );
    assert_eq!(verdict.disposition, Disposition::Manual);
}

#[test]
fn ac_16_a_terminal_that_classifies_to_nothing_matches_no_diagnostic() {
    let mut session = session("claude-acp");
    apply(
        &mut session,
        chunk("claude-acp", Role::Assistant, OVERLOADED_CHUNK),
    );
    let verdict = terminal(&mut session, "Internal error");
    assert!(
        matches!(verdict.safety, Safety::ProviderDiagnosticCodeDiffers { .. }),
        "{:?}",
        verdict.safety
    );
}

#[test]
fn ac_21_ordinary_output_after_a_diagnostic_clears_it_and_closes_the_fence() {
    let mut session = session("claude-acp");
    apply(
        &mut session,
        chunk("claude-acp", Role::Assistant, OVERLOADED_CHUNK),
    );
    let outcome = apply(
        &mut session,
        chunk("claude-acp", Role::Thought, "Let me retry."),
    );
    assert_eq!(
        outcome,
        Outcome::Output {
            cleared_diagnostic: true
        }
    );
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(verdict.safety, Safety::OutputObserved);
    assert_eq!(verdict.recorded_provider_diagnostic, None);
}

#[test]
fn ac_21_a_tool_after_a_diagnostic_keeps_it_but_fails_the_attempt() {
    let mut session = session("claude-acp");
    apply(
        &mut session,
        chunk("claude-acp", Role::Assistant, OVERLOADED_CHUNK),
    );
    apply(
        &mut session,
        Event::ToolCall {
            claim: claim(7),
            scope: ToolScope::TopLevel,
        },
    );
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(verdict.safety, Safety::EffectObserved);
    assert_eq!(
        verdict.recorded_provider_diagnostic.as_deref(),
        Some("provider_overloaded"),
        "tools do not clear it"
    );
}

#[test]
fn ac_23_the_first_diagnostic_wins_and_a_marked_chunk_does_not_clear_it() {
    let mut session = session("claude-acp");
    apply(
        &mut session,
        chunk("claude-acp", Role::Assistant, OVERLOADED_CHUNK),
    );
    let second = apply(
        &mut session,
        chunk(
            "claude-acp",
            Role::Assistant,
            "API Error: 500 Internal Server Error",
        ),
    );
    assert_eq!(second, Outcome::ProviderDiagnosticIgnored);
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(
        verdict.safety,
        Safety::SafeProviderDiagnosticConfirmed {
            code: "provider_overloaded".into()
        }
    );
}

#[test]
fn ac_23_a_diagnostic_after_output_is_not_recorded() {
    let mut session = session("claude-acp");
    apply(
        &mut session,
        chunk("claude-acp", Role::Assistant, "Working on it."),
    );
    assert_eq!(
        apply(
            &mut session,
            chunk("claude-acp", Role::Assistant, OVERLOADED_CHUNK)
        ),
        Outcome::ProviderDiagnosticIgnored
    );
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::OutputObserved
    );
}

#[test]
fn ac_24_a_signature_only_in_data_is_manual_on_every_occurrence() {
    let mut session = session("claude-acp");
    for generation in [7, 8] {
        if generation == 8 {
            apply(&mut session, Event::PromptBegan { claim: claim(8) });
        }
        let verdict = verdict_of(apply(
            &mut session,
            prompt_failed(
                claim(generation),
                "Internal error",
                Some(json!({"error": "peer disconnected before response"})),
                None,
            ),
        ));
        assert_eq!(verdict.projection.message(), "Internal error");
        assert_ne!(verdict.classification.code, "agent_transport_lost");
        assert_eq!(
            verdict.disposition,
            Disposition::Manual,
            "attempt {generation}"
        );
    }
}

#[test]
fn ac_22_the_projection_carries_the_model_settled_before_it_only() {
    let mut session = session("claude-acp");
    let first = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(first.projection.model_id(), None);
    apply(
        &mut session,
        Event::ModelSettled {
            model_id: "claude-sonnet-4".into(),
            execution_id: None,
        },
    );
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL)
            .projection
            .model_id(),
        None,
        "never retroactively"
    );
    apply(&mut session, Event::PromptBegan { claim: claim(8) });
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(
            claim(8),
            OVERLOADED_TERMINAL,
            Some(json!({"errorKind": "server_error"})),
            None,
        ),
    ));
    assert_eq!(verdict.projection.model_id(), Some("claude-sonnet-4"));
    assert_eq!(verdict.projection.error_kind(), Some("server_error"));
    assert_eq!(verdict.projection.provider_id(), Some("claude-acp"));
}

fn cursor_marker(text: &str) -> Event {
    Event::Chunk {
        claim: claim(7),
        role: Role::Assistant,
        text: text.into(),
        provider_diagnostic_candidate: false,
    }
}

fn returned() -> Event {
    Event::PromptReturned {
        claim: claim(7),
        occurred_at: "2026-10-01T08:00:00Z".into(),
    }
}

#[test]
fn ac_12_ac_14_ac_15_a_settled_cursor_marker_yields_exactly_one_failure() {
    let mut session = session("cursor-acp");
    let outcome = apply(
        &mut session,
        cursor_marker("Error: RetriableError: [unavailable] PING timed out"),
    );
    assert_eq!(outcome, Outcome::CursorMarkerPending, "suppressed");
    let verdict = verdict_of(apply(&mut session, returned()));
    assert_eq!(verdict.projection.provider_id(), Some("cursor-acp"));
    assert!(verdict.projection.message().contains("PING timed out"));
    assert_eq!(verdict.classification.class.as_str(), "transient");
    assert_eq!(
        verdict.safety,
        Safety::Safe,
        "the suppressed chunk is not output"
    );
    assert_eq!(verdict.disposition, Disposition::Automatic);
    // Exactly one: the prompt has settled; a re-delivered return is a manual duplicate.
    let again = verdict_of(apply(&mut session, returned()));
    assert!(again.duplicate);
    assert_eq!(again.disposition, Disposition::Manual);
    assert_eq!(again.projection, verdict.projection);
}

#[test]
fn ac_12_ordinary_chunks_stay_output_for_cursor() {
    for text in [
        "I saw Error: RetriableError: Connection stalled",
        "Error: RetriableError:",
        "Error: RetriableError: context canceled_by_client",
        "Error: RetriableError: context deadline exceeded",
    ] {
        let mut session = session("cursor-acp");
        assert!(
            matches!(
                apply(&mut session, cursor_marker(text)),
                Outcome::Output { .. }
            ),
            "{text}"
        );
        assert_eq!(
            apply(&mut session, returned()),
            Outcome::Completed,
            "{text}"
        );
    }
    // Another adapter's chunk is never a Cursor marker.
    let mut session = session("claude-acp");
    assert!(matches!(
        apply(
            &mut session,
            cursor_marker("Error: RetriableError: Connection stalled")
        ),
        Outcome::Output { .. }
    ));
}

#[test]
fn ac_13_progress_supersedes_a_pending_marker_but_a_tool_update_does_not() {
    let mut session = session("cursor-acp");
    apply(
        &mut session,
        cursor_marker("Error: RetriableError: Connection stalled"),
    );
    assert_eq!(
        apply(&mut session, chunk("cursor-acp", Role::Thought, "resuming")),
        Outcome::CursorMarkerSuperseded
    );
    assert_eq!(apply(&mut session, returned()), Outcome::Completed);

    let mut session = self::session("cursor-acp");
    apply(
        &mut session,
        cursor_marker("Error: RetriableError: Connection stalled"),
    );
    apply(
        &mut session,
        Event::ToolCall {
            claim: claim(7),
            scope: ToolScope::TopLevel,
        },
    );
    assert_eq!(
        apply(&mut session, returned()),
        Outcome::Completed,
        "a new tool call supersedes"
    );

    let mut session = self::session("cursor-acp");
    apply(
        &mut session,
        cursor_marker("Error: RetriableError: Connection stalled"),
    );
    apply(&mut session, Event::ToolUpdate { claim: claim(7) });
    let verdict = verdict_of(apply(&mut session, returned()));
    assert_eq!(
        verdict.safety,
        Safety::EffectObserved,
        "still pending, but the tool makes it manual"
    );
    assert_eq!(verdict.disposition, Disposition::Manual);
}

#[test]
fn ac_13_a_later_marker_re_arms_and_carries_its_own_cause() {
    let mut session = session("cursor-acp");
    apply(
        &mut session,
        cursor_marker("Error: RetriableError: Connection stalled"),
    );
    apply(
        &mut session,
        chunk("cursor-acp", Role::Assistant, "partial answer"),
    );
    apply(
        &mut session,
        cursor_marker("Error: RetriableError: [unavailable] PING timed out"),
    );
    let verdict = verdict_of(apply(&mut session, returned()));
    assert!(verdict.projection.message().contains("PING timed out"));
    assert_eq!(
        verdict.safety,
        Safety::OutputObserved,
        "the resumed attempt produced output"
    );
}

#[test]
fn ac_15_thoughts_before_the_marker_make_cursor_recovery_manual() {
    let mut session = session("cursor-acp");
    apply(
        &mut session,
        chunk("cursor-acp", Role::Thought, "Reading the file"),
    );
    apply(
        &mut session,
        cursor_marker("Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8)"),
    );
    let verdict = verdict_of(apply(&mut session, returned()));
    assert_eq!(verdict.classification.code, "agent_transport_lost");
    assert_eq!(verdict.disposition, Disposition::Manual);
}

#[test]
fn ac_12_a_stale_generation_marker_is_not_a_marker() {
    let mut session = session("cursor-acp");
    let stale = Event::Chunk {
        claim: claim(6),
        role: Role::Assistant,
        text: "Error: RetriableError: Connection stalled".into(),
        provider_diagnostic_candidate: false,
    };
    assert_eq!(apply(&mut session, stale), Outcome::Stale);
    assert_eq!(apply(&mut session, returned()), Outcome::Completed);
}

#[test]
fn ac_29_the_launch_prompt_keeps_ids_and_loses_secrets() {
    let prompt = "Task wrk_0123456789 session ses_abcdef in /home/user/repo; key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
    let redacted = redact_launch_prompt(prompt);
    assert!(
        redacted.contains("wrk_0123456789")
            && redacted.contains("ses_abcdef")
            && redacted.contains("/home/user/repo"),
        "{redacted}"
    );
    assert!(
        !redacted.contains("abcdefghijklmnopqrstuvwxyz"),
        "{redacted}"
    );
    let long = format!("{} {}", "x".repeat(10_000), prompt);
    assert!(redact_launch_prompt(&long).len() > 10_000, "unbounded");
}

#[test]
fn a_retired_lifecycle_reads_as_unknown_until_a_new_attempt_binds() {
    let mut session = session("claude-acp");
    apply(&mut session, Event::LifecycleRetired);
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::LifecycleRetired
    );
    apply(&mut session, Event::LifecycleRetired);
    apply(
        &mut session,
        Event::PromptBegan {
            claim: Claim {
                execution_id: None,
                generation: 8,
            },
        },
    );
    apply(&mut session, Event::PromptBound { claim: claim(8) });
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(claim(8), OVERLOADED_TERMINAL, None, None),
    ));
    assert_eq!(verdict.safety, Safety::Safe);
}

// ---- Issue 17: recovery fails closed on every path --------------------------------------------
// Each test is a regression test of one item of the issue (the number after `issue_17_`) or of
// one decision docs/recovery.md records for what the spec leaves open ("silent").

fn marked(text: &str, generation: u64) -> Event {
    Event::Chunk {
        claim: claim(generation),
        role: Role::Assistant,
        text: text.into(),
        provider_diagnostic_candidate: true,
    }
}

fn tool() -> Event {
    Event::ToolCall {
        claim: claim(7),
        scope: ToolScope::TopLevel,
    }
}

/// Item 1 (A.5, F.6, AC .11): a settled failure re-delivered after the user cancelled (the
/// lifecycle retired) is never automatic again; a re-delivery is a duplicate.
#[test]
fn issue_17_1_a_settled_failure_re_delivered_after_retirement_is_a_manual_duplicate() {
    let mut session = session("claude-acp");
    let first = terminal(&mut session, "Internal error: API Error: 529 Overloaded");
    assert_eq!(first.disposition, Disposition::Automatic);
    assert!(!first.duplicate);
    apply(&mut session, Event::LifecycleRetired);
    let again = terminal(&mut session, "Internal error: API Error: 529 Overloaded");
    assert_eq!(again.disposition, Disposition::Manual);
    assert!(again.duplicate);
    // Every later re-delivery too, whatever arrives in between.
    apply(&mut session, Event::PromptBound { claim: claim(7) });
    let third = terminal(&mut session, "Internal error: API Error: 529 Overloaded");
    assert_eq!(
        (third.disposition, third.duplicate),
        (Disposition::Manual, true)
    );
}

/// Item 2: beginning the same execution and generation again neither re-opens a retired
/// lifecycle nor wipes the fences; only a new attempt does.
#[test]
fn issue_17_2_a_repeated_begin_keeps_the_fences_and_the_retirement() {
    // The issue's log: begin, tool call, retired, the same begin, terminal.
    let mut session = session("claude-acp");
    apply(&mut session, tool());
    apply(&mut session, Event::LifecycleRetired);
    assert_eq!(
        apply(&mut session, Event::PromptBegan { claim: claim(7) }),
        Outcome::AttemptRepeated
    );
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(verdict.safety, Safety::LifecycleRetired);
    assert_eq!(verdict.disposition, Disposition::Manual);

    // Without a retirement the fences survive the repeated begin as well.
    let mut session = self::session("claude-acp");
    apply(&mut session, tool());
    apply(&mut session, Event::PromptBegan { claim: claim(7) });
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::EffectObserved
    );

    // A launch that binds the retired attempt's identity is not a new attempt either.
    let mut session = self::session("claude-acp");
    apply(&mut session, tool());
    apply(&mut session, Event::LifecycleRetired);
    let launch = Claim {
        execution_id: None,
        generation: 7,
    };
    apply(&mut session, Event::PromptBegan { claim: launch });
    assert_eq!(
        apply(&mut session, Event::PromptBound { claim: claim(7) }),
        Outcome::Poisoned
    );
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::LifecycleRetired
    );

    // Beginning an earlier attempt again: its evidence is gone, so the record is poisoned.
    let mut session = self::session("claude-acp");
    apply(&mut session, Event::PromptBegan { claim: claim(8) });
    assert_eq!(
        apply(&mut session, Event::PromptBegan { claim: claim(7) }),
        Outcome::Poisoned
    );
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::EvidenceUnknown
    );

    // A new generation re-opens the retired lifecycle once bound.
    let mut session = self::session("claude-acp");
    apply(&mut session, Event::LifecycleRetired);
    apply(&mut session, Event::PromptBegan { claim: claim(8) });
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(claim(8), OVERLOADED_TERMINAL, None, None),
    ));
    assert_eq!(
        (verdict.safety, verdict.disposition),
        (Safety::Safe, Disposition::Automatic)
    );
}

/// The diagnostic-then-terminal verdict for a pair of texts.
fn correlated(diagnostic: &str, terminal_message: &str) -> Verdict {
    let mut session = session("claude-acp");
    let recorded = apply(
        &mut session,
        chunk("claude-acp", Role::Assistant, diagnostic),
    );
    assert!(
        matches!(recorded, Outcome::ProviderDiagnosticRecorded { .. }),
        "{diagnostic}: {recorded:?}"
    );
    terminal(&mut session, terminal_message)
}

/// Item 3 (AC .23): containment is decided on the whole diagnostic, not on the first 2,048
/// bytes of each side.
#[test]
fn issue_17_3_containment_reads_the_whole_diagnostic() {
    let body = ["word"; 600].join(" ");
    let diagnostic = format!("API Error: 500 Internal Server Error {body} alpha");
    let terminal_message = format!("API Error: 500 Internal Server Error {body} beta");
    let verdict = correlated(&diagnostic, &terminal_message);
    assert_eq!(
        verdict.safety,
        Safety::ProviderDiagnosticNotContained {
            code: "provider_unavailable".into()
        }
    );
    assert_eq!(verdict.disposition, Disposition::Manual);
    // The whole text, contained, still confirms.
    let verdict = correlated(
        &diagnostic,
        &format!("Internal error: {diagnostic} (retry)"),
    );
    assert!(verdict.safety.is_safe(), "{:?}", verdict.safety);
}

/// Item 4 (AC .23): normalization trims and collapses whitespace only; texts that differ only
/// in what the redaction tier would hide are different texts.
#[test]
fn issue_17_4_containment_compares_texts_not_their_redactions() {
    const GATEWAY: &str = "API Error: 500 Internal Server Error";
    for (diagnostic, terminal_message) in [
        (
            format!("{GATEWAY} see https://attacker.example/phish"),
            format!("Internal error: {GATEWAY} see https://status.example/x1"),
        ),
        (
            format!("{GATEWAY} in ses_attacker0001"),
            format!("Internal error: {GATEWAY} in ses_abc123"),
        ),
        (
            format!("{GATEWAY} key sk-attackerattackerattacker"),
            format!("Internal error: {GATEWAY} key sk-realrealrealrealreal"),
        ),
        (
            format!("{GATEWAY} at /home/mallory/project/file"),
            format!("Internal error: {GATEWAY} at /home/alice/project/file"),
        ),
        (
            format!("{GATEWAY} id {}", "A".repeat(40)),
            format!("Internal error: {GATEWAY} id {}", "B".repeat(40)),
        ),
        (
            format!("{GATEWAY} token=abc"),
            format!("Internal error: {GATEWAY} token: abc"),
        ),
        (format!("{GATEWAY}."), format!("Internal error: {GATEWAY}")),
        (
            format!("{GATEWAY} bearer abcdefghijklmnopqrstuvwxyz"),
            format!("Internal error: {GATEWAY} BEARER abcdefghijklmnopqrstuvwxyz"),
        ),
    ] {
        let verdict = correlated(&diagnostic, &terminal_message);
        assert_eq!(
            verdict.safety,
            Safety::ProviderDiagnosticNotContained {
                code: "provider_unavailable".into()
            },
            "{diagnostic} in {terminal_message}"
        );
    }
    // Whitespace is all normalization forgives; identical texts with a URL still match.
    let verdict = correlated(
        &format!("  {GATEWAY}\n see   https://status.example/x1 "),
        &format!("Internal error: {GATEWAY} see https://status.example/x1 (request 7)"),
    );
    assert_eq!(
        verdict.safety,
        Safety::SafeProviderDiagnosticConfirmed {
            code: "provider_unavailable".into()
        }
    );
}

/// Item 5: a session with an event that could not be read is poisoned: every later verdict
/// is manual, in this attempt and the next.
#[test]
fn issue_17_5_an_unreadable_event_poisons_the_session() {
    let mut session = session("claude-acp");
    assert_eq!(
        apply(&mut session, Event::EventUnreadable),
        Outcome::SessionPoisoned
    );
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(
        (verdict.safety, verdict.disposition),
        (Safety::SessionPoisoned, Disposition::Manual)
    );
    apply(&mut session, Event::PromptBegan { claim: claim(8) });
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(claim(8), OVERLOADED_TERMINAL, None, None),
    ));
    assert_eq!(verdict.safety, Safety::SessionPoisoned);
    // Before any attempt too.
    let mut empty = engine("claude-acp");
    apply(&mut empty, Event::EventUnreadable);
    assert_eq!(
        terminal(&mut empty, OVERLOADED_TERMINAL).safety,
        Safety::SessionPoisoned
    );
}

/// Item 6 (AC .15): a Cursor `RetriableError` is recoverable on the same provider only,
/// whatever its catalogue code's fallback flag says; the codes stay the reference's.
#[test]
fn issue_17_6_a_cursor_barrier_failure_is_same_provider_only() {
    for (cause, code) in [
        ("[unavailable] PING timed out", "provider_unavailable"),
        ("Connection stalled", "network_unavailable"),
        ("[resource_exhausted] Error", "provider_resource_exhausted"),
        (
            "HTTP/2 stream closed with error code CANCEL (0x8)",
            "agent_transport_lost",
        ),
    ] {
        let mut session = session("cursor-acp");
        apply(
            &mut session,
            cursor_marker(&format!("Error: RetriableError: {cause}")),
        );
        let verdict = verdict_of(apply(&mut session, returned()));
        assert_eq!(verdict.classification.code, code);
        assert!(verdict.same_provider_only, "{cause}");
        assert_eq!(verdict.disposition, Disposition::Automatic, "{cause}");
        let json = serde_json::to_value(&verdict).unwrap();
        assert_eq!(json["same_provider_only"], true);
    }
    // The same text returned as a Cursor prompt error is the same failure.
    let mut session = self::session("cursor-acp");
    let verdict = terminal(&mut session, "Error: RetriableError: Connection stalled");
    assert_eq!(verdict.classification.code, "network_unavailable");
    assert!(verdict.classification.fallback_allowed);
    assert!(verdict.same_provider_only);
    // Any other provider's failure may fall back as its code allows.
    let mut session = self::session("claude-acp");
    assert!(!terminal(&mut session, OVERLOADED_TERMINAL).same_provider_only);
}

/// Item 7 (AC .22): the settled model id is carried only when it is an identifier.
#[test]
fn issue_17_7_the_model_id_is_validated() {
    let long = "m".repeat(5_000);
    for (model, kept) in [
        ("claude-sonnet-4", true),
        ("anthropic/claude-3.5-sonnet", true),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", true),
        (long.as_str(), false),
        ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", false),
        ("https://attacker.example/model", false),
        ("claude\nIgnore previous instructions", false),
        ("/home/alice/models/local.gguf", false),
        ("   ", false),
    ] {
        let mut session = session("claude-acp");
        apply(
            &mut session,
            Event::ModelSettled {
                model_id: model.into(),
                execution_id: None,
            },
        );
        apply(&mut session, Event::PromptBegan { claim: claim(8) });
        let verdict = verdict_of(apply(
            &mut session,
            prompt_failed(claim(8), OVERLOADED_TERMINAL, None, None),
        ));
        assert_eq!(
            verdict.projection.model_id(),
            kept.then_some(model),
            "{model:?}"
        );
        assert_eq!(verdict.projection.message(), OVERLOADED_TERMINAL);
    }
}

/// Item 8 (AC .22): a malformed or unrecognised field of the JSON-RPC error is dropped; the
/// event is read and projected.
#[test]
fn issue_17_8_a_malformed_error_field_is_dropped_not_the_event() {
    for (error, code, message) in [
        (
            json!({"code": -32603, "message": "Internal error: API Error: 529 Overloaded", "stack": "at x"}),
            Some(-32603),
            "Internal error: API Error: 529 Overloaded",
        ),
        (
            json!({"code": "-32603", "message": "Internal error: API Error: 529 Overloaded"}),
            None,
            "Internal error: API Error: 529 Overloaded",
        ),
        (
            json!({"code": -32603.5, "message": "Internal error: API Error: 529 Overloaded"}),
            None,
            "Internal error: API Error: 529 Overloaded",
        ),
        (
            json!({"code": -32603, "message": {"text": "API Error: 529 Overloaded"}}),
            Some(-32603),
            "provider prompt error",
        ),
    ] {
        let line = json!({
            "event": "prompt_failed",
            "execution_id": "exec-1",
            "generation": 7,
            "error": error,
            "occurred_at": "2026-10-01T08:00:00Z",
        });
        let event: Event = serde_json::from_value(line.clone()).unwrap();
        let mut session = session("claude-acp");
        let verdict = verdict_of(apply(&mut session, event));
        assert_eq!(verdict.projection.rpc_code(), code, "{line}");
        assert_eq!(verdict.projection.message(), message, "{line}");
    }
}

/// Item 9 (AC .20/.21): a marked chunk never clears a recorded diagnostic, whatever its text
/// classifies to now.
#[test]
fn issue_17_9_a_marked_chunk_never_clears_the_recorded_diagnostic() {
    let mut session = session("claude-acp");
    apply(&mut session, marked(OVERLOADED_CHUNK, 7));
    assert_eq!(
        apply(&mut session, marked("peer disconnected before response", 7)),
        Outcome::ProviderDiagnosticIgnored
    );
    assert_eq!(
        session.recorded_provider_diagnostic(),
        Some("provider_overloaded")
    );
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(
        verdict.safety,
        Safety::SafeProviderDiagnosticConfirmed {
            code: "provider_overloaded".into()
        }
    );
    // First, with nothing recorded, an ineligible marked chunk is output no terminal explains.
    let mut session = self::session("claude-acp");
    assert_eq!(
        apply(&mut session, marked("peer disconnected before response", 7)),
        Outcome::ProviderDiagnosticDemoted
    );
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::OutputObserved
    );
}

/// Silent: a whitespace-only chunk (`"\n"`, U+00A0, U+3000) is output (it closes the fence and
/// clears a diagnostic), but no sign that Cursor resumed: a pending marker still yields its
/// failure, now manual.
#[test]
fn issue_17_silent_whitespace_only_chunks_are_output() {
    for blank in ["\n", "\u{a0}", "\u{3000}"] {
        let mut session = session("cursor-acp");
        apply(
            &mut session,
            cursor_marker("Error: RetriableError: [unavailable] PING timed out"),
        );
        assert_eq!(
            apply(&mut session, cursor_marker(blank)),
            Outcome::Output {
                cleared_diagnostic: false
            }
        );
        let verdict = verdict_of(apply(&mut session, returned()));
        assert_eq!(verdict.safety, Safety::OutputObserved, "{blank:?}");
        assert_eq!(verdict.disposition, Disposition::Manual);

        let mut session = self::session("claude-acp");
        apply(&mut session, marked(OVERLOADED_CHUNK, 7));
        assert_eq!(
            apply(&mut session, chunk("claude-acp", Role::Assistant, blank)),
            Outcome::Output {
                cleared_diagnostic: true
            }
        );
        assert_eq!(
            terminal(&mut session, OVERLOADED_TERMINAL).safety,
            Safety::OutputObserved
        );
    }
}

/// Silent: every deadline, any context cancellation and any escalation veto the Cursor marker
/// (AC .12), so such a chunk is ordinary output and the prompt completes.
#[test]
fn issue_17_silent_cursor_vetoes_are_read_broadly() {
    for cause in [
        "deadline exceeded",
        "[deadline_exceeded] upstream",
        "context cancelled",
        "retry escalated",
    ] {
        let mut session = session("cursor-acp");
        let outcome = apply(
            &mut session,
            cursor_marker(&format!("Error: RetriableError: {cause}")),
        );
        assert_eq!(
            outcome,
            Outcome::Output {
                cleared_diagnostic: false
            },
            "{cause}"
        );
        assert_eq!(apply(&mut session, returned()), Outcome::Completed);
    }
}

/// Silent: AC .16's exemption is for a structured `session/prompt` error; a recorded
/// diagnostic before Cursor's barrier failure (the prompt returned successfully) is output.
#[test]
fn issue_17_silent_a_diagnostic_does_not_explain_a_barrier_failure() {
    const STALLED: &str = "Error: RetriableError: Connection stalled";
    // Before the generation is known, Cursor's observer does not run, so the marked chunk is
    // recorded as a diagnostic, with the very code and text of the later barrier failure.
    let mut session = engine("cursor-acp");
    let unnumbered = Claim {
        execution_id: Some("exec-1".into()),
        generation: 0,
    };
    apply(
        &mut session,
        Event::PromptBegan {
            claim: unnumbered.clone(),
        },
    );
    assert_eq!(
        apply(
            &mut session,
            Event::Chunk {
                claim: unnumbered,
                role: Role::Assistant,
                text: STALLED.into(),
                provider_diagnostic_candidate: true,
            }
        ),
        Outcome::ProviderDiagnosticRecorded {
            code: "network_unavailable".into()
        }
    );
    apply(&mut session, Event::PromptBound { claim: claim(7) });
    assert_eq!(
        apply(&mut session, cursor_marker(STALLED)),
        Outcome::CursorMarkerPending
    );
    let verdict = verdict_of(apply(&mut session, returned()));
    assert_eq!(
        verdict.recorded_provider_diagnostic.as_deref(),
        Some("network_unavailable")
    );
    assert_eq!(verdict.safety, Safety::OutputObserved);
    assert_eq!(verdict.disposition, Disposition::Manual);
}

/// Silent: a provider diagnostic of a stale generation stops automatic recovery of the current
/// attempt (AC .16 lists "stale generation").
#[test]
fn issue_17_silent_a_stale_generation_diagnostic_stops_automatic_recovery() {
    let mut session = session("claude-acp");
    assert_eq!(
        apply(&mut session, marked(OVERLOADED_CHUNK, 6)),
        Outcome::StaleProviderDiagnostic
    );
    let verdict = terminal(&mut session, OVERLOADED_TERMINAL);
    assert_eq!(
        (verdict.safety, verdict.disposition),
        (Safety::StaleProviderDiagnostic, Disposition::Manual)
    );
    // An unmarked stale chunk is still ignored.
    let mut session = self::session("claude-acp");
    apply(
        &mut session,
        Event::Chunk {
            claim: claim(6),
            role: Role::Assistant,
            text: "old output".into(),
            provider_diagnostic_candidate: false,
        },
    );
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::Safe
    );
}

/// Silent: a settled model belongs to the execution it was settled under; a projection for an
/// attempt of another execution never carries it.
#[test]
fn issue_17_silent_a_model_belongs_to_its_execution() {
    let other = Claim {
        execution_id: Some("exec-2".into()),
        generation: 1,
    };
    let mut session = self::session("claude-acp");
    apply(
        &mut session,
        Event::ModelSettled {
            model_id: "claude-sonnet-4".into(),
            execution_id: None,
        },
    );
    apply(
        &mut session,
        Event::PromptBegan {
            claim: other.clone(),
        },
    );
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(other.clone(), OVERLOADED_TERMINAL, None, None),
    ));
    assert_eq!(verdict.projection.model_id(), None);
    // A model settled under the execution an attempt runs is carried.
    apply(
        &mut session,
        Event::ModelSettled {
            model_id: "gpt-5".into(),
            execution_id: Some("exec-2".into()),
        },
    );
    let next = Claim {
        execution_id: Some("exec-2".into()),
        generation: 2,
    };
    apply(
        &mut session,
        Event::PromptBegan {
            claim: next.clone(),
        },
    );
    let verdict = verdict_of(apply(
        &mut session,
        prompt_failed(next, OVERLOADED_TERMINAL, None, None),
    ));
    assert_eq!(verdict.projection.model_id(), Some("gpt-5"));
}
