//! The replay fixture matrix (AC .17–.19): the corpus loads, every fixture passes the
//! recovery-evidence layer with the real catalogue, replay is deterministic, and every loader
//! lint and forbidden shape (reference §D.11, §E.5) is a load error naming the file and field.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::disallowed_methods,
    reason = "integration tests report failure by panicking, and read the repository's files"
)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use common::{corpus, corpus_files, render};
use faultline_acp::dialect::recovery_profile;
use faultline_acp::event::ChunkRole;
use faultline_recovery::projection::project_prompt_error;
use faultline_recovery::prompt::{Claim, Disposition, Role, provider_diagnostic_candidate};
use faultline_recovery::response_attempt::ToolScope;
use faultline_recovery::{Recovery, RecoveryEvent as Event};
use faultline_replay::fixture::{
    Capture, Case, Cell, Fixture, FixtureError, Frame, Gateway, Lint, Token, classify_projection,
    forbidden, lints_markdown_table, load_corpus, load_str, missing_required_cells,
    replay_recovery, replay_recovery_in,
};
use faultline_runtime::Bundle;
use serde_json::{Value, json};

fn root() -> &'static Path {
    faultline_testkit::root()
}

fn replay_dir() -> PathBuf {
    root().join("fixtures/replay")
}

static BUNDLE: LazyLock<Bundle> = LazyLock::new(faultline_testkit::catalogue_bundle);

// ---------------------------------------------------------------------------------------------
// The corpus and the recovery-evidence layer
// ---------------------------------------------------------------------------------------------

#[test]
fn ac_17_the_corpus_loads_with_exactly_the_22_required_cells() {
    let fixtures = corpus();
    assert_eq!(fixtures.len(), 22);
    assert_eq!(Cell::required().len(), 22);
    assert_eq!(missing_required_cells(&[]).len(), 22);
    assert!(missing_required_cells(&fixtures).is_empty());
    let cells: BTreeSet<Cell> = fixtures.iter().map(Fixture::cell).collect();
    assert_eq!(cells, Cell::required().into_iter().collect());
    // Sorted by file name.
    let names: Vec<&str> = fixtures.iter().map(|f| f.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
}

#[test]
fn every_cell_follows_the_reference_conventions() {
    for fixture in corpus() {
        let cell = fixture.cell();
        assert!(
            fixture.name.ends_with(&cell.file_name()),
            "{}",
            fixture.name
        );
        assert_eq!(fixture.capture, Capture::Reconstructed, "{cell}");
        assert_eq!(fixture.captured_at, None, "{cell}");
        assert_eq!(fixture.agent_id.as_str(), "claude-acp", "{cell}");
        assert_eq!(fixture.classifying, cell.gateway.classifying(), "{cell}");
        assert_eq!(fixture.identity.session_id, cell.to_string());
        assert_eq!(fixture.identity.execution_id, format!("exec-{cell}"));
        assert_eq!(fixture.identity.prompt_generation, 7, "{cell}");
        let error = fixture.prompt_error().unwrap();
        assert_eq!(error.code, -32603, "{cell}");
        assert_eq!(fixture.expect.provider_error.rpc_code, -32603, "{cell}");
        assert_eq!(fixture.expect.provider_error.provider_id, "claude-acp");
        // A non-classifying gateway never marks, classifies or is safe.
        if !cell.gateway.classifying() {
            assert!(!fixture.expect.events.contains(&Token::DiagnosticChunk));
            assert_eq!(fixture.expect.diagnostic_code, "agent_runtime_error");
            assert!(!fixture.expect.pre_result_safe);
            assert_eq!(fixture.expect.recorded_diagnostic(), None);
        }
        // Declared dispositions per case (§E.4): only matched/queued of a classifying gateway
        // may recover automatically.
        let automatic =
            cell.gateway.classifying() && matches!(cell.case, Case::Matched | Case::Queued);
        assert_eq!(fixture.expect.pre_result_safe, automatic, "{cell}");
    }
}

#[test]
fn ac_19_every_fixture_passes_the_recovery_layer() {
    let mut failures = Vec::new();
    for fixture in corpus() {
        let outcome = replay_recovery(&BUNDLE, &fixture).unwrap();
        for mismatch in outcome.mismatches(&fixture.expect) {
            failures.push(format!("{}: {mismatch}", fixture.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The expectations the transport layer asserts, checked here against the real catalogue and
/// projection without a transport: the marker each chunk gets, the projection, and the code.
#[test]
fn every_expectation_agrees_with_the_catalogue() {
    let mut failures = Vec::new();
    for fixture in corpus() {
        let agent = fixture.agent_id.as_str();
        let mut model = None;
        for step in fixture.steps().unwrap() {
            match step.frame {
                Frame::MessageChunk { role, text } => {
                    let role = match role {
                        ChunkRole::Assistant => Role::Assistant,
                        ChunkRole::User => Role::User,
                    };
                    let marked = provider_diagnostic_candidate(&BUNDLE, agent, role, text);
                    if marked != (step.token == Some(Token::DiagnosticChunk)) {
                        failures.push(format!(
                            "{}: frames[{}]: the adapter marks it {marked}, the fixture expects {:?}",
                            fixture.name, step.index, step.token
                        ));
                    }
                }
                Frame::ModelSettled { model_id } => model = Some(model_id.clone()),
                _ => {}
            }
        }
        let projection =
            project_prompt_error(&fixture.prompt_error().unwrap(), agent, model.as_deref());
        for mismatch in fixture.expect.provider_error.mismatches(&projection) {
            failures.push(format!("{}: {mismatch}", fixture.name));
        }
        let code = classify_projection(&BUNDLE, &projection).code;
        if code != fixture.expect.diagnostic_code {
            failures.push(format!(
                "{}: diagnosticCode: expected {}, the catalogue gives {code}",
                fixture.name, fixture.expect.diagnostic_code
            ));
        }
        // The engine's own projection is the same one.
        let outcome = replay_recovery(&BUNDLE, &fixture).unwrap();
        assert_eq!(outcome.verdict.projection, projection, "{}", fixture.name);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ac_18_replay_is_deterministic_twice_and_over_a_stale_record() {
    for fixture in corpus() {
        let first = replay_recovery(&BUNDLE, &fixture).unwrap();
        let second = replay_recovery(&BUNDLE, &fixture).unwrap();
        assert_eq!(first, second, "{}", fixture.name);

        // A stale record under the same session: another execution and generation, with a
        // recorded diagnostic, output and tool activity. Beginning the attempt replaces it.
        let mut session = Recovery::new(recovery_profile(fixture.agent_id.as_str()));
        let stale = Claim {
            execution_id: Some("exec-stale".to_owned()),
            generation: 3,
        };
        let text = "API Error: 500 Internal server error.";
        for event in [
            Event::PromptBegan {
                claim: stale.clone(),
            },
            Event::Chunk {
                claim: stale.clone(),
                role: Role::Assistant,
                text: text.to_owned(),
                provider_diagnostic_candidate: true,
            },
            Event::Chunk {
                claim: stale.clone(),
                role: Role::Thought,
                text: "thinking".to_owned(),
                provider_diagnostic_candidate: false,
            },
            Event::ToolCall {
                claim: stale.clone(),
                scope: ToolScope::TopLevel,
            },
        ] {
            let _planted = session.apply(&BUNDLE, event);
        }
        let planted = replay_recovery_in(&BUNDLE, &fixture, &mut session).unwrap();
        assert_eq!(first, planted, "{}", fixture.name);
        // Replaying again in the same session begins the same attempt again, which keeps it
        // (issue 17): its failure is the settled verdict, re-delivered, so a duplicate that
        // authorises nothing.
        let again = replay_recovery_in(&BUNDLE, &fixture, &mut session).unwrap();
        assert!(again.verdict.duplicate, "{}", fixture.name);
        assert_eq!(
            again.verdict.disposition,
            Disposition::Manual,
            "{}",
            fixture.name
        );
        let mut undone = again.clone();
        undone.verdict.duplicate = false;
        undone.verdict.disposition = first.verdict.disposition;
        undone.pre_result_safe = first.pre_result_safe;
        assert_eq!(first, undone, "{}", fixture.name);
    }
}

#[test]
fn an_omitted_expectation_means_absent() {
    let fixture = corpus()
        .into_iter()
        .find(|f| f.cell().to_string() == "teamclaude-queued")
        .unwrap();
    let projection = project_prompt_error(&fixture.prompt_error().unwrap(), "claude-acp", None);
    assert!(
        fixture
            .expect
            .provider_error
            .mismatches(&projection)
            .is_empty()
    );
    // Omitting errorKind asserts the projection has none: this projection has one.
    let mut expected = fixture.expect.provider_error.clone();
    expected.error_kind = None;
    let mismatches = expected.mismatches(&projection);
    assert_eq!(mismatches.len(), 1, "{mismatches:?}");
    assert!(mismatches[0].contains("errorKind: expected absent"));
    // Omitting modelId asserts no model was settled.
    let settled = project_prompt_error(
        &fixture.prompt_error().unwrap(),
        "claude-acp",
        Some("claude-sonnet-5"),
    );
    let mismatches = fixture.expect.provider_error.mismatches(&settled);
    assert!(
        mismatches[0].contains("modelId: expected absent"),
        "{mismatches:?}"
    );
}

#[test]
fn a_fixture_reencodes_to_an_equal_fixture() {
    for fixture in corpus() {
        let text = serde_json::to_string_pretty(&fixture).unwrap();
        let reloaded = load_str(&fixture.name, &text).unwrap();
        assert_eq!(reloaded, fixture);
        // The typed types decode the file format too.
        let mut decoded: Fixture = serde_json::from_str(&text).unwrap();
        decoded.name.clone_from(&fixture.name);
        assert_eq!(decoded, fixture);
    }
}

#[test]
fn the_stream_and_the_lockstep_walk() {
    let fixture = corpus()
        .into_iter()
        .find(|f| f.cell().to_string() == "teamclaude-matched")
        .unwrap();
    assert_eq!(fixture.expect.streamed(), &[Token::DiagnosticChunk]);
    let steps = fixture.steps().unwrap();
    let tokens: Vec<Option<Token>> = steps.iter().map(|step| step.token).collect();
    assert_eq!(
        tokens,
        [Some(Token::DiagnosticChunk), None, Some(Token::Error)]
    );
}

// ---------------------------------------------------------------------------------------------
// The documentation
// ---------------------------------------------------------------------------------------------

const DOCS: &str = "docs/fixtures.md";

/// The generated region `name` of `docs/fixtures.md` equals `expected`. With
/// `FAULTLINE_BLESS_DOCS=1` the region is rewritten from the code instead.
fn generated_region(name: &str, expected: &str) {
    let path = root().join(DOCS);
    let text = std::fs::read_to_string(&path).unwrap();
    let start = format!("<!-- generated:{name}:start -->\n");
    let end = format!("<!-- generated:{name}:end -->");
    let from = text.find(&start).expect("the start marker") + start.len();
    let to = from + text[from..].find(&end).expect("the end marker");
    if std::env::var_os("FAULTLINE_BLESS_DOCS").is_some() {
        let updated = format!("{}{expected}{}", &text[..from], &text[to..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        &text[from..to],
        expected,
        "{DOCS}'s `{name}` table differs from the code; regenerate it with \
         FAULTLINE_BLESS_DOCS=1 cargo test -p faultline-replay --test fixtures"
    );
}

#[test]
fn the_forbidden_shape_table_compiles_and_is_documented_exactly() {
    forbidden::check_table().unwrap();
    generated_region("forbidden-shapes", &forbidden::markdown_table());
    let payload = forbidden::FORBIDDEN_SHAPES
        .iter()
        .filter(|s| s.scope.payload())
        .count();
    let provenance = forbidden::FORBIDDEN_SHAPES
        .iter()
        .filter(|s| s.scope.provenance())
        .count();
    assert_eq!((payload, provenance), (7, 8));
}

#[test]
fn every_lint_is_documented_exactly() {
    generated_region("lints", &lints_markdown_table());
}

// ---------------------------------------------------------------------------------------------
// Document lints (§E.5): each mutation of a valid fixture is a load error naming file and field
// ---------------------------------------------------------------------------------------------

const NAME: &str = "fixtures/replay/claude-direct-prose-tool.json";

/// claude-direct-prose-tool: D, tool_call, tool_update, prompt_error.
fn base() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(replay_dir().join("claude-direct-prose-tool.json")).unwrap(),
    )
    .unwrap()
}

fn errors(document: &Value) -> Vec<FixtureError> {
    match load_str(NAME, &document.to_string()) {
        Ok(_) => panic!("the document loads:\n{document:#}"),
        Err(errors) => errors,
    }
}

/// Asserts the mutated document fails with `lint` at `field`, naming the file and field in
/// its message; returns the lint for the coverage check.
fn fails(case: &str, document: &Value, lint: Lint, field: &str) -> Lint {
    let errors = errors(document);
    let found = errors
        .iter()
        .find(|e| e.lint == lint && e.field == field)
        .unwrap_or_else(|| {
            panic!(
                "{case}: expected `{lint}` at `{field}`, got:\n{}",
                render(&errors)
            )
        });
    assert_eq!(found.file, NAME, "{case}");
    let message = found.to_string();
    assert!(
        message.contains(NAME) && message.contains(field),
        "{case}: {message}"
    );
    assert!(message.contains(lint.fix()), "{case}: {message}");
    lint
}

fn with(mutate: impl FnOnce(&mut Value)) -> Value {
    let mut document = base();
    mutate(&mut document);
    document
}

fn remove(document: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    document
        .pointer_mut(parent)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .remove(key)
        .unwrap();
}

fn set(document: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let parent = document.pointer_mut(parent).unwrap();
    match parent {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
        }
        Value::Array(items) => items[key.parse::<usize>().unwrap()] = value,
        _ => panic!("{pointer}"),
    }
}

fn frames(document: &mut Value) -> &mut Vec<Value> {
    document["frames"].as_array_mut().unwrap()
}

fn events(document: &mut Value) -> &mut Vec<Value> {
    document["expect"]["events"].as_array_mut().unwrap()
}

#[test]
fn the_base_fixture_is_valid() {
    load_str(NAME, &base().to_string()).unwrap();
}

/// Every document lint, one or more §E.5 cases each; the coverage check below makes sure no
/// lint is untested.
fn document_cases() -> Vec<Lint> {
    use Lint::*;
    vec![
        fails("not an object", &json!(["frames"]), Syntax, "(document)"),
        {
            let errors = load_str(NAME, "{\"gateway\": ").unwrap_err();
            assert_eq!(errors.len(), 1);
            assert_eq!(
                (errors[0].lint, errors[0].field.as_str()),
                (Syntax, "(document)")
            );
            assert!(errors[0].to_string().contains(NAME));
            Syntax
        },
        fails(
            "wrong type",
            &with(|d| set(d, "/identity/promptGeneration", json!("7"))),
            Syntax,
            "identity.promptGeneration",
        ),
        fails(
            "unknown field",
            &with(|d| set(d, "/frames/0/direction", json!("inbound"))),
            UnknownField,
            "frames[0].direction",
        ),
        fails(
            "unknown gateway",
            &with(|d| set(d, "/gateway", json!("anthropic"))),
            UnknownGateway,
            "gateway",
        ),
        fails(
            "unknown case",
            &with(|d| set(d, "/case", json!("later"))),
            UnknownCase,
            "case",
        ),
        fails(
            "unknown capture",
            &with(|d| set(d, "/capture", json!("synthesized"))),
            UnknownCapture,
            "capture",
        ),
        fails(
            "classifying disagrees with the table",
            &with(|d| set(d, "/classifying", json!(false))),
            ClassifyingMismatch,
            "classifying",
        ),
        fails(
            "empty agentId",
            &with(|d| set(d, "/agentId", json!(""))),
            UnknownAgent,
            "agentId",
        ),
        fails(
            "an agentId that is not a provider id",
            &with(|d| set(d, "/agentId", json!("Cursor ACP"))),
            UnknownAgent,
            "agentId",
        ),
        fails(
            "missing agentId",
            &with(|d| remove(d, "/agentId")),
            MissingField,
            "agentId",
        ),
        fails(
            "recorded without source",
            &with(|d| {
                set(d, "/capture", json!("recorded"));
                set(d, "/capturedAt", json!("2026-09-30T10:00:00Z"));
                set(d, "/source", json!(""));
            }),
            RecordedProvenance,
            "source",
        ),
        fails(
            "recorded without capturedAt",
            &with(|d| {
                set(d, "/capture", json!("recorded"));
                set(d, "/source", json!("faultline-capture --agent claude-acp"));
            }),
            RecordedProvenance,
            "capturedAt",
        ),
        fails(
            "a recording on a reconstructed fixture",
            &with(|d| {
                set(
                    d,
                    "/recording",
                    json!({"agent": "claude-code-acp", "package": "@zed-industries/claude-code-acp", "version": "0.16.2", "scenario": "anthropic-429-rate-limit"}),
                )
            }),
            Recording,
            "recording",
        ),
        fails(
            "a recording whose scenario is not a label",
            &with(|d| {
                set(d, "/capture", json!("recorded"));
                set(d, "/capturedAt", json!("2026-09-30T10:00:00Z"));
                set(d, "/source", json!("faultline replay record"));
                set(
                    d,
                    "/recording",
                    json!({"agent": "claude-code-acp", "package": "@zed-industries/claude-code-acp", "version": "0.16.2", "scenario": "Anthropic 429"}),
                )
            }),
            Recording,
            "recording.scenario",
        ),
        fails(
            "reconstructed with an empty source",
            &with(|d| set(d, "/source", json!(" "))),
            ReconstructedProvenance,
            "source",
        ),
        fails(
            "reconstructed with a scripts/ source",
            &with(|d| set(d, "/source", json!("scripts/make-fixtures.py"))),
            ReconstructedProvenance,
            "source",
        ),
        fails(
            "reconstructed with a capturedAt",
            &with(|d| set(d, "/capturedAt", json!("2026-09-30T10:00:00Z"))),
            ReconstructedProvenance,
            "capturedAt",
        ),
        fails(
            "empty sessionId",
            &with(|d| set(d, "/identity/sessionId", json!(""))),
            EmptyIdentity,
            "identity.sessionId",
        ),
        fails(
            "empty executionId",
            &with(|d| set(d, "/identity/executionId", json!(""))),
            EmptyIdentity,
            "identity.executionId",
        ),
        fails(
            "zero generation",
            &with(|d| set(d, "/identity/promptGeneration", json!(0))),
            ZeroGeneration,
            "identity.promptGeneration",
        ),
        fails(
            "empty frames",
            &with(|d| set(d, "/frames", json!([]))),
            NoFrames,
            "frames",
        ),
        fails(
            "unknown frame kind",
            &with(|d| set(d, "/frames/1/kind", json!("agent_thought"))),
            UnknownFrameKind,
            "frames[1].kind",
        ),
        fails(
            "blank message text",
            &with(|d| set(d, "/frames/0/text", json!(" \n"))),
            BlankText,
            "frames[0].text",
        ),
        fails(
            "blank thought text",
            &with(|d| {
                frames(d).insert(0, json!({"kind": "thought_chunk", "text": ""}));
                events(d).insert(0, json!("thought_chunk"));
            }),
            BlankText,
            "frames[0].text",
        ),
        fails(
            "unknown role",
            &with(|d| set(d, "/frames/0/role", json!("system"))),
            UnknownRole,
            "frames[0].role",
        ),
        fails(
            "role on a non-message frame",
            &with(|d| set(d, "/frames/1/role", json!("assistant"))),
            MisplacedField,
            "frames[1].role",
        ),
        fails(
            "tool_call without an id",
            &with(|d| remove(d, "/frames/1/toolCallId")),
            MissingToolCallId,
            "frames[1].toolCallId",
        ),
        fails(
            "tool_update without an id",
            &with(|d| remove(d, "/frames/2/toolCallId")),
            MissingToolCallId,
            "frames[2].toolCallId",
        ),
        fails(
            "tool_update naming an unintroduced id",
            &with(|d| set(d, "/frames/2/toolCallId", json!("tool-9"))),
            UnintroducedToolCall,
            "frames[2].toolCallId",
        ),
        fails(
            "unknown tool status",
            &with(|d| set(d, "/frames/2/status", json!("done"))),
            UnknownStatus,
            "frames[2].status",
        ),
        fails(
            "model_settled without modelId",
            &with(|d| frames(d).insert(1, json!({"kind": "model_settled"}))),
            MissingModelId,
            "frames[1].modelId",
        ),
        fails(
            "prompt_error not last",
            &with(|d| {
                let error = frames(d).pop().unwrap();
                frames(d).insert(2, error);
            }),
            PromptErrorNotLast,
            "frames[2]",
        ),
        fails(
            "prompt_error without a message",
            &with(|d| remove(d, "/frames/3/message")),
            PromptErrorMessage,
            "frames[3].message",
        ),
        fails(
            "prompt_error with a zero code",
            &with(|d| set(d, "/frames/3/code", json!(0))),
            PromptErrorCode,
            "frames[3].code",
        ),
        fails(
            "no prompt_error",
            &with(|d| {
                frames(d).pop();
            }),
            PromptErrorCount,
            "frames",
        ),
        fails(
            "two prompt_errors",
            &with(|d| {
                let error = frames(d)[3].clone();
                frames(d).push(error);
                events(d).push(json!("error"));
            }),
            PromptErrorCount,
            "frames",
        ),
        fails(
            "events missing",
            &with(|d| remove(d, "/expect/events")),
            EventsMissing,
            "expect.events",
        ),
        fails(
            "events empty",
            &with(|d| set(d, "/expect/events", json!([]))),
            EventsMissing,
            "expect.events",
        ),
        fails(
            "unknown token",
            &with(|d| set(d, "/expect/events/1", json!("tool_call_update"))),
            UnknownToken,
            "expect.events[1]",
        ),
        fails(
            "events not ending in error",
            &with(|d| {
                events(d).pop();
            }),
            EventsEnd,
            "expect.events[2]",
        ),
        fails(
            "error before the end",
            &with(|d| set(d, "/expect/events/0", json!("error"))),
            EventsEnd,
            "expect.events[0]",
        ),
        fails(
            "events out of lockstep with frames",
            &with(|d| {
                events(d).swap(1, 2);
            }),
            Lockstep,
            "frames[1]",
        ),
        fails(
            "a token with no frame",
            &with(|d| events(d).insert(0, json!("thought_chunk"))),
            Lockstep,
            "frames[0]",
        ),
        fails(
            "a diagnostic token on a user chunk",
            &with(|d| set(d, "/frames/0/role", json!("user"))),
            Lockstep,
            "frames[0]",
        ),
        fails(
            "missing providerError.source",
            &with(|d| remove(d, "/expect/providerError/source")),
            MissingField,
            "expect.providerError.source",
        ),
        fails(
            "unknown providerError.source",
            &with(|d| set(d, "/expect/providerError/source", json!("stderr"))),
            UnknownProjectionSource,
            "expect.providerError.source",
        ),
        fails(
            "zero rpcCode",
            &with(|d| set(d, "/expect/providerError/rpcCode", json!(0))),
            ZeroRpcCode,
            "expect.providerError.rpcCode",
        ),
        fails(
            "missing providerId",
            &with(|d| remove(d, "/expect/providerError/providerId")),
            MissingField,
            "expect.providerError.providerId",
        ),
        fails(
            "missing diagnosticCode",
            &with(|d| remove(d, "/expect/diagnosticCode")),
            MissingField,
            "expect.diagnosticCode",
        ),
        fails(
            "missing recordedDiagnosticCode",
            &with(|d| remove(d, "/expect/recordedDiagnosticCode")),
            MissingField,
            "expect.recordedDiagnosticCode",
        ),
        fails(
            "missing preResultSafe",
            &with(|d| remove(d, "/expect/preResultSafe")),
            MissingField,
            "expect.preResultSafe",
        ),
        fails(
            "blank errorKind (omit it to expect none)",
            &with(|d| set(d, "/expect/providerError/errorKind", json!(""))),
            BlankOptional,
            "expect.providerError.errorKind",
        ),
        fails(
            "a forbidden payload shape",
            &with(|d| set(d, "/frames/0/text", json!("see https://example.com/x"))),
            ForbiddenPayload,
            "frames[0].text",
        ),
        fails(
            "a forbidden provenance shape",
            &with(|d| set(d, "/source", json!("http://localhost:8080/contract"))),
            ForbiddenProvenance,
            "source",
        ),
    ]
}

#[test]
fn every_document_lint_rejects_its_case() {
    let covered: BTreeSet<Lint> = document_cases().into_iter().collect();
    let corpus: BTreeSet<Lint> = corpus_cases().into_iter().collect();
    let all: BTreeSet<Lint> = covered.union(&corpus).copied().collect();
    // An unreadable file or directory is reported by whoever reads the files: the command line
    // (`tests/replay.rs`), not this library.
    let untested: Vec<&Lint> = Lint::ALL
        .iter()
        .filter(|l| !all.contains(l) && **l != Lint::Unreadable)
        .collect();
    assert!(
        untested.is_empty(),
        "lints without a negative test: {untested:?}"
    );
}

#[test]
fn a_document_reports_every_error_not_the_first() {
    let document = with(|d| {
        set(d, "/gateway", json!("anthropic"));
        set(d, "/identity/promptGeneration", json!(0));
        set(d, "/frames/0/text", json!(""));
        set(d, "/frames/3/code", json!(0));
        remove(d, "/expect/diagnosticCode");
        set(d, "/frames/1/title", json!("see /Users/someone/notes"));
    });
    let lints: BTreeSet<Lint> = errors(&document).iter().map(|e| e.lint).collect();
    for lint in [
        Lint::UnknownGateway,
        Lint::ZeroGeneration,
        Lint::BlankText,
        Lint::PromptErrorCode,
        Lint::MissingField,
        Lint::ForbiddenPayload,
    ] {
        assert!(lints.contains(&lint), "{lint} missing from {lints:?}");
    }
}

#[test]
fn the_payload_is_scanned_even_when_the_document_does_not_decode() {
    let document = with(|d| {
        set(d, "/frames/0/direction", json!("inbound"));
        set(d, "/identity/sessionId", json!("sess-abc123"));
    });
    let errors = errors(&document);
    assert!(errors.iter().any(|e| e.lint == Lint::UnknownField));
    assert!(
        errors
            .iter()
            .any(|e| e.lint == Lint::ForbiddenPayload && e.field == "identity.sessionId")
    );
}

// ---------------------------------------------------------------------------------------------
// Forbidden shapes (§D.11): one negative test per shape and scan
// ---------------------------------------------------------------------------------------------

fn forbidden_at(document: &Value, lint: Lint, shape: &str, field: &str) {
    let errors = errors(document);
    let found = errors
        .iter()
        .find(|e| e.lint == lint && e.shape == Some(shape) && e.field == field)
        .unwrap_or_else(|| panic!("expected `{shape}` at `{field}`, got:\n{}", render(&errors)));
    assert_eq!(found.file, NAME);
    let message = found.to_string();
    assert!(message.contains(NAME) && message.contains(field) && message.contains(shape));
}

#[test]
fn every_payload_shape_is_rejected_where_it_is() {
    let cases = [
        (
            "bearer-token",
            "/frames/0/text",
            "Authorization failed: Bearer abc.def",
        ),
        (
            "vendor-key",
            "/frames/0/text",
            "key sk-ant-api03-abcdef rejected",
        ),
        ("vendor-key", "/identity/sessionId", "sess-7f3a"),
        ("vendor-key", "/expect/providerError/providerId", "org-acme"),
        ("opencode-id", "/identity/executionId", "ses_01HXYZ"),
        ("opencode-id", "/frames/1/title", "open wrk_abc"),
        (
            "url",
            "/frames/0/text",
            "see https://gateway.example.com/v1/messages",
        ),
        ("url", "/frames/3/message", "failed: http://10.0.0.1/x"),
        (
            "host-path",
            "/frames/0/text",
            "read /Users/alice/project/main.rs",
        ),
        ("host-path", "/frames/1/title", "open file:///home/bob/.env"),
        (
            "host-path",
            "/frames/0/text",
            "[path:/private/var/folders/x]",
        ),
        ("email", "/frames/0/text", "contact alice@example.com now"),
        (
            "uuid",
            "/identity/sessionId",
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        ),
    ];
    for (shape, pointer, value) in cases {
        let document = with(|d| set(d, pointer, json!(value)));
        let field = pointer
            .trim_start_matches('/')
            .split('/')
            .fold(String::new(), |path, part| match part.parse::<usize>() {
                Ok(index) => format!("{path}[{index}]"),
                Err(_) if path.is_empty() => part.to_owned(),
                Err(_) => format!("{path}.{part}"),
            });
        forbidden_at(&document, Lint::ForbiddenPayload, shape, &field);
    }
    // Keys of `data` are scanned too.
    let document = with(|d| {
        set(
            d,
            "/frames/3/data",
            json!({"errorKind": "server_error", "alice@example.com": 1}),
        );
    });
    forbidden_at(
        &document,
        Lint::ForbiddenPayload,
        "email",
        "frames[3].data.alice@example.com",
    );
    // Every payload shape has a case.
    let tested: BTreeSet<&str> = cases.iter().map(|(shape, _, _)| *shape).collect();
    let defined: BTreeSet<&str> = forbidden::FORBIDDEN_SHAPES
        .iter()
        .filter(|s| s.scope.payload())
        .map(|s| s.name)
        .collect();
    assert_eq!(tested, defined);
}

#[test]
fn every_provenance_shape_is_rejected_where_it_is() {
    let recorded = |source: &str, at: &str| {
        with(|d| {
            set(d, "/capture", json!("recorded"));
            set(d, "/source", json!(source));
            set(d, "/capturedAt", json!(at));
        })
    };
    let at = "2026-09-30T10:00:00Z";
    let cases = [
        (
            "bearer-token",
            recorded("curl -H 'Bearer abcdef' x", at),
            "source",
        ),
        (
            "vendor-key",
            recorded("capture --key sk-live-123", at),
            "source",
        ),
        (
            "opencode-id",
            recorded("capture --session ses_abc", at),
            "source",
        ),
        (
            "email",
            recorded("captured by alice@example.com", at),
            "source",
        ),
        (
            "uuid",
            recorded("capture", "3f2504e0-4f89-11d3-9a0c-0305e82c3301"),
            "capturedAt",
        ),
        (
            "url-userinfo",
            with(|d| {
                set(
                    d,
                    "/source",
                    json!("https://user:pw@docs.example.com/errors"),
                )
            }),
            "source",
        ),
        (
            "private-host",
            with(|d| set(d, "/source", json!("http://192.168.1.20/contract"))),
            "source",
        ),
        (
            "private-host",
            with(|d| set(d, "/source", json!("http://localhost/contract"))),
            "source",
        ),
        (
            "internal-host",
            with(|d| set(d, "/source", json!("https://wiki.corp.internal/errors"))),
            "source",
        ),
        (
            "internal-host",
            recorded("capture on build-box.local", at),
            "source",
        ),
    ];
    for (shape, document, field) in &cases {
        forbidden_at(document, Lint::ForbiddenProvenance, shape, field);
    }
    let tested: BTreeSet<&str> = cases.iter().map(|(shape, _, _)| *shape).collect();
    let defined: BTreeSet<&str> = forbidden::FORBIDDEN_SHAPES
        .iter()
        .filter(|s| s.scope.provenance())
        .map(|s| s.name)
        .collect();
    assert_eq!(tested, defined);
}

#[test]
fn public_documentation_urls_are_allowed_in_provenance_only() {
    for source in [
        "https://openrouter.ai/docs/api-reference/errors",
        "https://docs.litellm.ai/docs/exception_mapping",
        "internal/orchestrator/dynamic_evidence_test.go",
    ] {
        let document = with(|d| set(d, "/source", json!(source)));
        load_str(NAME, &document.to_string()).unwrap();
    }
    let document = with(|d| {
        set(
            d,
            "/frames/0/text",
            json!("see https://openrouter.ai/docs/api-reference/errors"),
        );
    });
    forbidden_at(&document, Lint::ForbiddenPayload, "url", "frames[0].text");
}

// ---------------------------------------------------------------------------------------------
// Corpus lints (§E.5 corpus level)
// ---------------------------------------------------------------------------------------------

fn mutated_corpus(mutate: impl FnOnce(&mut Vec<(String, String)>)) -> Vec<FixtureError> {
    let mut files = corpus_files();
    mutate(&mut files);
    match load_corpus(files) {
        Ok(_) => panic!("the corpus loads"),
        Err(errors) => errors,
    }
}

fn edit(files: &mut [(String, String)], name: &str, change: impl FnOnce(&mut Value)) {
    let file = files
        .iter_mut()
        .find(|(n, _)| n.ends_with(&format!("/{name}")))
        .unwrap();
    let mut document: Value = serde_json::from_str(&file.1).unwrap();
    change(&mut document);
    file.1 = serde_json::to_string_pretty(&document).unwrap();
}

fn corpus_fails(errors: &[FixtureError], lint: Lint, field: &str, files: &[&str]) -> Lint {
    let found = errors
        .iter()
        .find(|e| e.lint == lint && e.field == field)
        .unwrap_or_else(|| panic!("expected `{lint}` at `{field}`, got:\n{}", render(errors)));
    for file in files {
        assert!(
            found.file.contains(file),
            "{} does not name {file}",
            found.file
        );
        assert!(found.to_string().contains(file));
    }
    lint
}

fn corpus_cases() -> Vec<Lint> {
    let mut covered = Vec::new();

    // A duplicate (gateway, case): a second file declaring claude-direct-matched.
    let errors = mutated_corpus(|files| {
        let original = files
            .iter()
            .find(|(n, _)| n.ends_with("/claude-direct-matched.json"))
            .unwrap();
        let mut copy: Value = serde_json::from_str(&original.1).unwrap();
        copy["identity"]["sessionId"] = json!("claude-direct-copy");
        copy["frames"][0]["text"] = json!("API Error: 529 Overloaded, again.");
        files.push((
            "fixtures/replay/claude-direct-copy.json".to_owned(),
            serde_json::to_string(&copy).unwrap(),
        ));
    });
    covered.push(corpus_fails(
        &errors,
        Lint::DuplicateCell,
        "gateway, case",
        &["claude-direct-copy.json", "claude-direct-matched.json"],
    ));
    // The copy's name does not match its cell either.
    covered.push(corpus_fails(
        &errors,
        Lint::FileName,
        "(file name)",
        &["claude-direct-copy.json"],
    ));

    // A duplicate sessionId across different cells.
    let errors = mutated_corpus(|files| {
        edit(files, "litellm-queued.json", |d| {
            d["identity"]["sessionId"] = json!("litellm-matched");
        });
    });
    covered.push(corpus_fails(
        &errors,
        Lint::DuplicateSession,
        "identity.sessionId",
        &["litellm-matched.json", "litellm-queued.json"],
    ));

    // Equivalent frames within a case, written differently: key order, whitespace, an
    // explicit default role.
    let errors = mutated_corpus(|files| {
        let litellm: Value = serde_json::from_str(
            &files
                .iter()
                .find(|(n, _)| n.ends_with("/litellm-matched.json"))
                .unwrap()
                .1,
        )
        .unwrap();
        edit(files, "openrouter-matched.json", |d| {
            let mut frames = litellm["frames"].clone();
            frames[0]["role"] = json!("assistant");
            let error = frames[1].as_object().unwrap();
            let reordered: serde_json::Map<String, Value> = error
                .iter()
                .rev()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            frames[1] = Value::Object(reordered);
            d["frames"] = frames;
        });
    });
    covered.push(corpus_fails(
        &errors,
        Lint::EquivalentFrames,
        "frames",
        &["litellm-matched.json", "openrouter-matched.json"],
    ));

    // A missing required cell is named.
    let errors =
        mutated_corpus(|files| files.retain(|(n, _)| !n.ends_with("/litellm-queued.json")));
    covered.push(corpus_fails(
        &errors,
        Lint::MissingCell,
        "(corpus)",
        &["fixtures/replay/litellm-queued.json"],
    ));
    assert!(
        errors
            .iter()
            .any(|e| e.detail == "missing required cell `litellm-queued`")
    );
    assert_eq!(errors.len(), 1, "{}", render(&errors));

    // An empty corpus fails, and names every missing cell.
    let errors = load_corpus(Vec::new()).unwrap_err();
    covered.push(corpus_fails(&errors, Lint::EmptyCorpus, "(corpus)", &[]));
    assert_eq!(
        errors
            .iter()
            .filter(|e| e.lint == Lint::MissingCell)
            .count(),
        22
    );

    covered
}

#[test]
fn every_corpus_lint_rejects_its_case() {
    // The seventh, an unreadable directory, is the command line's to report (the library reads
    // no files): `tests/replay.rs`.
    assert_eq!(corpus_cases().len(), 6);
}

#[test]
fn a_corpus_reports_every_file_s_errors() {
    let errors = mutated_corpus(|files| {
        edit(files, "openrouter-queued.json", |d| {
            d["classifying"] = json!(true)
        });
        edit(files, "teamclaude-mismatched.json", |d| {
            d["frames"][0]["text"] = json!("");
        });
    });
    assert!(
        errors
            .iter()
            .any(|e| e.lint == Lint::ClassifyingMismatch
                && e.file.ends_with("openrouter-queued.json"))
    );
    assert!(errors.iter().any(|e| e.lint == Lint::BlankText
        && e.file.ends_with("teamclaude-mismatched.json")
        && e.field == "frames[0].text"));
    // A cell whose file fails to load is not also reported missing.
    assert!(!errors.iter().any(|e| e.lint == Lint::MissingCell));
}

#[test]
fn the_closed_vocabularies_round_trip() {
    for gateway in Gateway::ALL {
        assert_eq!(Gateway::parse(gateway.as_str()), Some(*gateway));
    }
    for case in Case::ALL {
        assert_eq!(Case::parse(case.as_str()), Some(*case));
    }
    for token in Token::ALL {
        assert_eq!(Token::parse(token.as_str()), Some(*token));
        assert_eq!(serde_json::to_value(token).unwrap(), json!(token.as_str()));
    }
    // Of the matrix's gateways, two are classifying; the provider APIs of recorded fixtures
    // are classifying and outside the matrix.
    assert_eq!(
        Gateway::ALL
            .iter()
            .filter(|g| g.in_matrix() && g.classifying())
            .count(),
        2
    );
    assert!(
        Gateway::ALL
            .iter()
            .filter(|g| !g.in_matrix())
            .all(|g| g.classifying())
    );
}

/// Reorders every object's keys (reversed when `flip` is set at that depth).
fn reorder(value: &Value, flips: &[bool], depth: usize) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map
                .iter()
                .map(|(k, v)| (k.clone(), reorder(v, flips, depth + 1)))
                .collect();
            if flips
                .get(depth % flips.len().max(1))
                .copied()
                .unwrap_or(false)
            {
                entries.reverse();
            }
            Value::Object(entries.into_iter().collect())
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| reorder(v, flips, depth + 1)).collect())
        }
        other => other.clone(),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Key order and whitespace never change a fixture or its canonical frames.
    #[test]
    fn canonical_frames_ignore_key_order_and_whitespace(
        index in 0usize..22,
        flips in proptest::collection::vec(proptest::bool::ANY, 1..6),
        pretty in proptest::bool::ANY,
    ) {
        let (name, text) = corpus_files()[index].clone();
        let original = load_str(&name, &text).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        let reordered = reorder(&value, &flips, 0);
        let rewritten = if pretty {
            serde_json::to_string_pretty(&reordered).unwrap()
        } else {
            serde_json::to_string(&reordered).unwrap()
        };
        let reloaded = load_str(&name, &rewritten).unwrap();
        proptest::prop_assert_eq!(
            reloaded.canonical_frames().unwrap(),
            original.canonical_frames().unwrap()
        );
        proptest::prop_assert_eq!(reloaded, original);
    }
}

#[test]
fn sanitize_replaces_every_payload_shape_and_the_result_passes_the_scan() {
    use faultline_replay::fixture::forbidden::{sanitize, scan_payload};

    let text = r#"429 {"message":"see https://docs.anthropic.com/en/api/errors"} at /home/alice/project for alice@example.com, session 123e4567-e89b-12d3-a456-426614174000, key sk-ant-api03-secret, Bearer abc.def"#;
    let (clean, replaced) = sanitize(text);
    assert_eq!(
        clean,
        r#"429 {"message":"see <url>"} at <path> for <email>, session <uuid>, key <key>, <bearer-token>"#
    );
    let shapes: BTreeSet<&str> = replaced.iter().map(|r| r.shape).collect();
    assert_eq!(
        shapes,
        BTreeSet::from([
            "bearer-token",
            "email",
            "host-path",
            "url",
            "uuid",
            "vendor-key"
        ])
    );
    // A credential is never echoed in the report.
    assert!(replaced.iter().all(|r| !r.matched.contains("secret")));
    assert!(scan_payload(&json!({"frames": [{"text": clean}]})).is_empty());
    // Text without a shape comes back unchanged, with nothing reported.
    assert_eq!(
        sanitize("API Error: 529 overloaded"),
        ("API Error: 529 overloaded".to_owned(), Vec::new())
    );
}

#[test]
fn the_recorded_corpus_needs_a_recording_and_names_files_after_it() {
    use faultline_replay::fixture::load_recorded_corpus;

    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/replay/claude-direct-matched.json"),
    )
    .unwrap();
    let mut document: Value = serde_json::from_str(&text).unwrap();
    // A matrix fixture has no recording.
    let errors = load_recorded_corpus([("recorded/x.json".to_owned(), text.clone())]).unwrap_err();
    assert!(
        errors
            .iter()
            .any(|e| e.lint == Lint::Recording && e.field == "recording"),
        "{}",
        render(&errors)
    );
    document["capture"] = json!("recorded");
    document["capturedAt"] = json!("2026-09-30T10:00:00Z");
    document["source"] = json!("faultline replay record fixtures/recording/matrix.json");
    document["recording"] = json!({"agent": "claude-code-acp", "package": "@zed-industries/claude-code-acp", "version": "0.16.2", "scenario": "anthropic-529-overloaded"});
    let recorded = document.to_string();
    let errors =
        load_recorded_corpus([("recorded/x.json".to_owned(), recorded.clone())]).unwrap_err();
    assert!(
        errors.iter().any(|e| e.lint == Lint::FileName),
        "{}",
        render(&errors)
    );
    let corpus = load_recorded_corpus([(
        "recorded/claude-code-acp-anthropic-529-overloaded.json".to_owned(),
        recorded,
    )])
    .unwrap();
    assert_eq!(corpus.len(), 1);
}
