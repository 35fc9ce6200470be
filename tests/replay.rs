//! `faultline replay`: the replay matrix through both layers, load errors, `--explain`, and the
//! capture path driven against the binary's own fake agent (`replay serve`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::path::PathBuf;

use common::{faultline, root, stdout};

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// A copy of `fixtures/replay/` in a fresh directory.
fn corpus_copy(name: &str) -> PathBuf {
    let directory = common::scratch(name);
    for entry in std::fs::read_dir(root().join("fixtures/replay")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, directory.join(path.file_name().unwrap())).unwrap();
    }
    directory
}

#[test]
fn every_cell_passes_both_layers_and_the_output_ends_with_the_count_line() {
    let output = faultline(&["replay", "fixtures/replay"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"22 passed, 0 failed"));
    assert_eq!(lines.len(), 23);
    assert!(lines.contains(&"PASS claude-direct-matched: [message_chunk:diagnostic, error] provider_overloaded; pre-result: the only output was a `provider_overloaded` diagnostic the terminal failure contains; recovery automatic"));
    // The default directory is fixtures/replay.
    assert_eq!(stdout(&faultline(&["replay"])), text);
}

#[test]
fn an_unreadable_corpus_directory_is_a_load_error_naming_it() {
    let output = faultline(&["replay", "fixtures/replay/does-not-exist"]);
    assert_eq!(output.status.code(), Some(2));
    let errors = stderr(&output);
    assert!(
        errors.contains("fixtures/replay/does-not-exist")
            && errors.contains("cannot list the fixture directory"),
        "{errors}"
    );
}

#[test]
fn a_missing_required_cell_is_a_load_error_naming_it() {
    let directory = corpus_copy("missing");
    std::fs::remove_file(directory.join("teamclaude-queued.json")).unwrap();
    let output = faultline(&["replay", directory.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let errors = stderr(&output);
    assert!(
        errors.contains("missing required cell `teamclaude-queued`"),
        "{errors}"
    );
    assert!(errors.contains("teamclaude-queued.json"), "{errors}");
}

#[test]
fn a_cell_whose_expectation_differs_fails_with_what_differed() {
    let directory = corpus_copy("differs");
    let path = directory.join("openrouter-matched.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut document: serde_json::Value = serde_json::from_str(&text).unwrap();
    document["expect"]["diagnosticCode"] = serde_json::json!("provider_unavailable");
    document["expect"]["preResultSafe"] = serde_json::json!(true);
    std::fs::write(&path, serde_json::to_string_pretty(&document).unwrap()).unwrap();
    let output = faultline(&["replay", directory.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    let failure = text
        .lines()
        .find(|line| line.starts_with("FAIL openrouter-matched: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        failure.contains(
            "transport: diagnosticCode: expected `provider_unavailable`, got `agent_runtime_error`"
        ),
        "{failure}"
    );
    assert!(
        failure.contains("recovery: preResultSafe: expected true, got false"),
        "{failure}"
    );
    assert_eq!(text.lines().last(), Some("21 passed, 1 failed"));
}

#[test]
fn explain_shows_the_stream_the_projection_the_classification_and_the_decision_path() {
    let output = faultline(&["replay", "--explain", "teamclaude-matched"]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    for expected in [
        "event stream (adapter, when the prompt returned):",
        "message_chunk:diagnostic",
        "\"model_id\":\"claude-sonnet-5\"",
        "projection (the error the prompt call returned):",
        "\"error_kind\":\"server_error\"",
        "classification (phase prompt_send, no provider id):",
        "provider_unavailable",
        "recovery decision path",
        "diagnostic_recorded",
        "recovery automatic",
        "PASS (both layers)",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    assert_eq!(
        faultline(&["replay", "--explain", "nowhere-matched"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn capture_records_a_live_turn_as_a_draft_that_loads() {
    let out = common::scratch("capture").join("draft.json");
    let agent = assert_cmd::cargo::cargo_bin("faultline");
    let output = faultline(&[
        "replay",
        "capture",
        "--gateway",
        "teamclaude",
        "--case",
        "matched",
        "--session-id",
        "captured-teamclaude-matched",
        "--generation",
        "3",
        "--prompt",
        "Fix the failing build",
        "--out",
        out.to_str().unwrap(),
        "--",
        agent.to_str().unwrap(),
        "replay",
        "serve",
        "fixtures/replay/teamclaude-matched.json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = std::fs::read_to_string(&out).unwrap();
    let draft = faultline_replay::fixture::load_str("teamclaude-matched.json", &text).unwrap();
    let original = faultline_replay::fixture::load_str(
        "teamclaude-matched.json",
        &std::fs::read_to_string(root().join("fixtures/replay/teamclaude-matched.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(draft.capture, faultline_replay::fixture::Capture::Recorded);
    assert!(draft.captured_at.is_some());
    assert_eq!(
        draft.source,
        "faultline replay capture --gateway teamclaude --case matched -- faultline replay serve fixtures/replay/teamclaude-matched.json"
    );
    assert_eq!(draft.identity.session_id, "captured-teamclaude-matched");
    assert_eq!(
        draft.identity.execution_id,
        "exec-captured-teamclaude-matched"
    );
    assert_eq!(draft.identity.prompt_generation, 3);
    // The replayed frames come back as recorded, and so does what replaying them decides.
    assert_eq!(draft.frames, original.frames);
    assert_eq!(draft.expect, original.expect);
}

#[test]
fn capture_refuses_a_draft_that_fails_the_lints() {
    // A session id that is a host path: the payload lints forbid it, so nothing is written.
    let agent = assert_cmd::cargo::cargo_bin("faultline");
    let out = common::scratch("refused").join("draft.json");
    let output = faultline(&[
        "replay",
        "capture",
        "--gateway",
        "claude-direct",
        "--case",
        "matched",
        "--session-id",
        "/home/alice/session",
        "--prompt",
        "hi",
        "--out",
        out.to_str().unwrap(),
        "--",
        agent.to_str().unwrap(),
        "replay",
        "serve",
        "fixtures/replay/claude-direct-matched.json",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let errors = stderr(&output);
    assert!(errors.contains("refused to write the draft"), "{errors}");
    assert!(errors.contains("identity.sessionId"), "{errors}");
    assert!(!out.exists());
}
