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

    // A conflicting bind poisons; a new attempt replaces the record.
    let mut session = self::session("claude-acp");
    let rebind = Event::PromptBound {
        claim: Claim {
            execution_id: Some("exec-2".into()),
            generation: 7,
        },
    };
    assert_eq!(apply(&mut session, rebind), Outcome::Poisoned);
    apply(&mut session, Event::PromptBegan { claim: claim(7) });
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::Safe
    );
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
    assert_eq!(terminal(&mut session, OVERLOADED_TERMINAL), first);
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
    // User echoes and empty chunks are not output.
    let mut session = session("claude-acp");
    apply(
        &mut session,
        chunk("claude-acp", Role::User, "please fix the bug"),
    );
    apply(&mut session, chunk("claude-acp", Role::Assistant, "  \n"));
    assert_eq!(
        terminal(&mut session, OVERLOADED_TERMINAL).safety,
        Safety::Safe
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
    // Exactly one: the prompt has settled.
    assert_eq!(
        apply(&mut session, returned()),
        Outcome::Failed(Box::new(verdict))
    );
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
