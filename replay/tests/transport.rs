//! The transport layer of the replay matrix (AC .19, reference §E.3): every fixture of
//! `fixtures/replay/` replayed through a fake agent on the agent side of a real ACP connection
//! and the live adapter on the client side, over in-memory pipes; plus the adapter's own
//! boundary guarantees (the marker, the allowlisted projection, the settled model).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::disallowed_methods,
    reason = "integration tests report failure by panicking, and read the repository's files"
)]

mod common;

use std::path::Path;
use std::sync::{Arc, LazyLock};

use common::corpus;
use faultline_acp::adapter::{Adapter, PromptOutcome};
use faultline_acp::event::{AdapterEvent, ChunkRole};
use faultline_acp::pipe::pipe;
use faultline_recovery::projection::ProjectionSource;
use faultline_replay::fixture::{Case, Fixture, Frame, Token};
use faultline_replay::transport::{FakeAgent, Schedule, check, replay};
use faultline_runtime::Bundle;
use serde_json::json;

/// How many times each queued fixture is replayed with its worker held, each time releasing
/// after a different number of scheduler yields.
const QUEUED_CASE_ITERATIONS: usize = 6;

static BUNDLE: LazyLock<Arc<Bundle>> =
    LazyLock::new(|| Arc::new(faultline_testkit::catalogue_bundle()));

#[test]
fn every_fixture_replays_at_the_transport_layer() {
    let fixtures = corpus();
    assert_eq!(fixtures.len(), 22, "the matrix has 22 required cells");
    let mut failures = Vec::new();
    for fixture in &fixtures {
        let result = check(Arc::clone(&BUNDLE), fixture, Schedule::Free).unwrap();
        if !result.mismatches.is_empty() {
            failures.push(format!(
                "{}: {}",
                fixture.cell(),
                result.mismatches.join("; ")
            ));
        }
        let projection = result.projection.expect("every fixture fails its prompt");
        assert_eq!(projection.source(), ProjectionSource::AcpPrompt);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_queued_diagnostic_is_on_the_stream_before_the_prompt_returns_under_a_held_worker() {
    let fixtures = corpus();
    let queued: Vec<&Fixture> = fixtures
        .iter()
        .filter(|fixture| fixture.case == Case::Queued)
        .collect();
    assert_eq!(queued.len(), 4, "one queued cell per gateway");
    for fixture in queued {
        let diagnostic_expected = fixture
            .expect
            .streamed()
            .iter()
            .any(|token| matches!(token, Token::DiagnosticChunk | Token::MessageChunk));
        assert!(
            diagnostic_expected,
            "{}: a queued cell streams its diagnostic",
            fixture.cell()
        );
        for yields in 0..QUEUED_CASE_ITERATIONS {
            let result = check(
                Arc::clone(&BUNDLE),
                fixture,
                Schedule::HeldUntilAgentReturns { yields },
            )
            .unwrap();
            assert!(
                result.mismatches.is_empty(),
                "{} (iteration {yields}): {}",
                fixture.cell(),
                result.mismatches.join("; ")
            );
            assert!(
                result.observation.before_release.is_empty(),
                "the hold held the diagnostic in the queue when the agent returned"
            );
            assert_eq!(result.tokens, fixture.expect.streamed());
        }
    }
}

#[test]
fn every_fixture_also_replays_with_its_worker_held() {
    // Not only the queued cells: holding the worker never changes what is observed.
    for fixture in corpus() {
        let result = check(
            Arc::clone(&BUNDLE),
            &fixture,
            Schedule::HeldUntilAgentReturns { yields: 1 },
        )
        .unwrap();
        assert!(
            result.mismatches.is_empty(),
            "{}: {}",
            fixture.cell(),
            result.mismatches.join("; ")
        );
    }
}

#[test]
fn replaying_twice_gives_the_same_observation() {
    for fixture in corpus() {
        let first = check(Arc::clone(&BUNDLE), &fixture, Schedule::Free).unwrap();
        let second = check(Arc::clone(&BUNDLE), &fixture, Schedule::Free).unwrap();
        assert_eq!(first, second, "{}", fixture.cell());
    }
}

const OVERLOADED: &str = "API Error: Repeated 529 Overloaded errors. The API is at capacity.";

fn chunk(role: ChunkRole, text: &str) -> Frame {
    Frame::MessageChunk {
        role,
        text: text.to_owned(),
    }
}

fn prompt_error(message: &str, data: Option<serde_json::Value>) -> Frame {
    Frame::PromptError {
        code: -32603,
        message: message.to_owned(),
        data: data.map(|data| data.as_object().unwrap().clone()),
    }
}

fn failed(outcome: &PromptOutcome) -> &faultline_acp::adapter::PromptFailure {
    match outcome {
        PromptOutcome::Failed(failure) => failure,
        PromptOutcome::Completed { stop_reason } => panic!("the prompt completed: {stop_reason}"),
    }
}

#[test]
fn ac_20_the_marker_is_decided_once_for_assistant_chunks_only() {
    let frames = [
        chunk(ChunkRole::User, OVERLOADED),
        Frame::ThoughtChunk {
            text: OVERLOADED.to_owned(),
        },
        chunk(ChunkRole::Assistant, OVERLOADED),
        prompt_error(OVERLOADED, None),
    ];
    let observed = replay(
        Arc::clone(&BUNDLE),
        "claude-acp",
        "s-1",
        &frames,
        Schedule::Free,
    )
    .unwrap();
    let markers: Vec<Option<&str>> = observed.events.iter().map(AdapterEvent::token).collect();
    assert_eq!(
        markers,
        [
            Some("message_chunk"),
            Some("thought_chunk"),
            Some("message_chunk:diagnostic")
        ]
    );
    // An adapter without a provider id never marks.
    let observed = replay(Arc::clone(&BUNDLE), "", "s-2", &frames, Schedule::Free).unwrap();
    assert!(
        observed
            .events
            .iter()
            .all(|event| event.token() != Some("message_chunk:diagnostic"))
    );
}

#[test]
fn ac_24_a_signature_only_in_data_never_crosses() {
    let frames = [prompt_error(
        "Internal error",
        Some(
            json!({"error": "peer disconnected before response", "errorKind": "server_error", "token": "sk-live-abcdefghijklmnop"}),
        ),
    )];
    let observed = replay(
        Arc::clone(&BUNDLE),
        "claude-acp",
        "s-3",
        &frames,
        Schedule::Free,
    )
    .unwrap();
    let failure = failed(&observed.outcome);
    assert_eq!(failure.projection.message(), "Internal error");
    assert_eq!(failure.projection.error_kind(), Some("server_error"));
    // The error for the engine keeps, of `data`, the validated `errorKind` alone.
    assert_eq!(
        serde_json::to_value(&failure.error).unwrap().get("data"),
        Some(&json!({"errorKind": "server_error"}))
    );
    let crossed = format!("{:?}", observed.outcome);
    assert!(!crossed.contains("peer disconnected"), "{crossed}");
    assert!(!crossed.contains("sk-live"), "{crossed}");
}

#[test]
fn ac_22_the_projection_carries_the_model_settled_before_the_failure_only() {
    let frames = [
        Frame::ModelSettled {
            model_id: "claude-sonnet-5".to_owned(),
        },
        Frame::ModelSettled {
            model_id: "claude-opus-5".to_owned(),
        },
        prompt_error(OVERLOADED, Some(json!({"errorKind": "has space"}))),
    ];
    let observed = replay(
        Arc::clone(&BUNDLE),
        "claude-acp",
        "s-4",
        &frames,
        Schedule::Free,
    )
    .unwrap();
    let failure = failed(&observed.outcome);
    assert_eq!(failure.projection.model_id(), Some("claude-opus-5"));
    assert_eq!(
        failure.projection.error_kind(),
        None,
        "a malformed errorKind is dropped"
    );
    assert_eq!(failure.error.error_kind, None);
    assert_eq!(
        serde_json::to_value(&failure.error).unwrap().get("data"),
        None
    );
    assert_eq!(failure.projection.provider_id(), Some("claude-acp"));
    assert_eq!(failure.projection.rpc_code(), Some(-32603));

    let unsettled = replay(
        Arc::clone(&BUNDLE),
        "claude-acp",
        "s-5",
        &[prompt_error(OVERLOADED, None)],
        Schedule::Free,
    )
    .unwrap();
    assert_eq!(failed(&unsettled.outcome).projection.model_id(), None);
}

#[test]
fn a_prompt_without_an_error_completes_after_its_updates() {
    let frames = [
        chunk(ChunkRole::Assistant, "All done."),
        Frame::ToolCall {
            tool_call_id: "tool-1".to_owned(),
            title: Some("Run the tests".to_owned()),
            status: Default::default(),
        },
    ];
    let observed = replay(
        Arc::clone(&BUNDLE),
        "claude-acp",
        "s-6",
        &frames,
        Schedule::HeldUntilAgentReturns { yields: 3 },
    )
    .unwrap();
    assert_eq!(
        observed.outcome,
        PromptOutcome::Completed {
            stop_reason: "end_turn".to_owned()
        }
    );
    assert_eq!(observed.events.len(), 2);
}

#[test]
fn an_adapter_runs_prompts_one_after_another_and_keeps_its_settled_model() {
    let (adapter, mut events) = Adapter::new(Arc::clone(&BUNDLE), "claude-acp");
    for (index, model) in ["m-1", "m-2"].into_iter().enumerate() {
        let agent = FakeAgent::new(
            format!("s-{index}"),
            &[
                Frame::ModelSettled {
                    model_id: model.to_owned(),
                },
                chunk(ChunkRole::Assistant, "hello"),
            ],
        )
        .unwrap();
        let (agent_in, client_out) = pipe();
        let (client_in, agent_out) = pipe();
        let (outcome, served) = futures::executor::block_on(async {
            futures::join!(
                adapter.prompt(client_out, client_in, "hi", Path::new("/")),
                agent.serve(agent_in, agent_out)
            )
        });
        served.unwrap();
        assert!(matches!(outcome.unwrap(), PromptOutcome::Completed { .. }));
        assert_eq!(adapter.settled_model().as_deref(), Some(model));
        assert_eq!(events.drain().len(), 2);
    }
}

#[test]
fn a_dead_agent_is_a_connection_error_not_a_projection() {
    let (adapter, _events) = Adapter::new(Arc::clone(&BUNDLE), "claude-acp");
    let (_agent_in, client_out) = pipe();
    let (client_in, agent_out) = pipe();
    drop(agent_out);
    let outcome =
        futures::executor::block_on(adapter.prompt(client_out, client_in, "hi", Path::new("/")));
    assert!(outcome.is_err(), "{outcome:?}");
}

/// No replay frame holds a response-attempt retry boundary, so a captured turn that crossed one
/// is refused rather than drafted as a fixture of another turn.
#[test]
fn a_captured_response_attempt_boundary_is_refused() {
    use faultline_replay::capture::{CaptureError, CaptureRequest, draft};
    use faultline_replay::fixture::{AgentId, Gateway, Identity};

    let (adapter, _events) = Adapter::new(Arc::clone(&BUNDLE), "codex-acp");
    let request = CaptureRequest {
        gateway: Gateway::parse("claude-direct").unwrap(),
        case: Case::parse("matched").unwrap(),
        agent_id: AgentId::parse("codex-acp").expect("a provider id"),
        identity: Identity {
            session_id: "claude-direct-matched".to_owned(),
            execution_id: "exec-claude-direct-matched".to_owned(),
            prompt_generation: 7,
        },
        prompt: "Say hello.".to_owned(),
        source: "faultline replay capture".to_owned(),
        captured_at: "2026-10-01T08:00:00Z".to_owned(),
        recording: None,
        timeout: faultline_replay::capture::DEFAULT_TIMEOUT,
    };
    let events = [
        AdapterEvent::ThoughtChunk {
            text: "thinking".to_owned(),
        },
        AdapterEvent::ResponseAttemptReset,
    ];
    let outcome = PromptOutcome::Completed {
        stop_reason: "end_turn".to_owned(),
    };
    assert!(matches!(
        draft(&BUNDLE, &adapter, &events, &outcome, &request),
        Err(CaptureError::ResponseAttemptBoundary)
    ));
}
