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

/// A copy of the matrix files of `fixtures/replay/` in a fresh directory.
fn corpus_copy(name: &str) -> PathBuf {
    let directory = common::scratch(name);
    for entry in std::fs::read_dir(root().join("fixtures/replay")).unwrap() {
        let path = entry.unwrap().path();
        // The matrix's files only: the recorded cells' directory is not part of the matrix.
        if path.is_file() {
            std::fs::copy(&path, directory.join(path.file_name().unwrap())).unwrap();
        }
    }
    directory
}

#[test]
fn every_cell_passes_both_layers_and_the_output_ends_with_the_count_line() {
    let output = faultline(&["replay", "fixtures/replay"]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    let lines: Vec<&str> = text.lines().collect();
    // The 22 matrix cells and the recorded cells (`fixtures/replay/recorded/`): at least 30,
    // from at least four real agents.
    let recorded: Vec<&str> = lines
        .iter()
        .filter_map(|line| line.strip_prefix("PASS recorded/"))
        .collect();
    let count = 22 + recorded.len();
    assert_eq!(
        lines.last(),
        Some(&format!("{count} passed, 0 failed").as_str())
    );
    assert_eq!(lines.len(), count + 1);
    assert!(recorded.len() >= 30, "{text}");
    let agents: std::collections::BTreeSet<&str> = recorded
        .iter()
        .filter_map(|cell| {
            ["claude-code-acp", "codex-acp", "gemini-cli", "opencode"]
                .into_iter()
                .find(|agent| cell.starts_with(agent))
        })
        .collect();
    assert_eq!(agents.len(), 4, "{agents:?}");
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
        "classification (phase prompt_send, the agent's provider id):",
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

/// A stand-in ACP agent: a shell script answering `initialize`, then `session/new` and
/// `session/prompt` with the JSON-RPC responses given (`@ID@` stands for the request's id, a
/// string or a number, as JSON; a
/// `None` response is never sent, so the agent stays silent). Returns the command line.
fn script_agent(name: &str, new_session: Option<&str>, prompt: Option<&str>) -> Vec<String> {
    let directory = common::scratch(name);
    let initialize = r#"{"jsonrpc":"2.0","id":@ID@,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}}"#;
    let new_session = new_session
        .unwrap_or(r#"{"jsonrpc":"2.0","id":@ID@,"result":{"sessionId":"scripted-session"}}"#);
    for (file, text) in [
        ("initialize.json", Some(initialize)),
        ("new.json", Some(new_session)),
        ("prompt.json", prompt),
    ] {
        if let Some(text) = text {
            std::fs::write(directory.join(file), format!("{text}\n")).unwrap();
        }
    }
    let script = r#"dir=$1
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*) file=initialize.json ;;
    *'"method":"session/new"'*) file=new.json ;;
    *'"method":"session/prompt"'*) file=prompt.json ;;
    *) continue ;;
  esac
  [ -f "$dir/$file" ] && sed "s/@ID@/$id/" "$dir/$file"
done
"#;
    let path = directory.join("agent.sh");
    std::fs::write(&path, script).unwrap();
    vec![
        "sh".to_owned(),
        path.to_str().unwrap().to_owned(),
        directory.to_str().unwrap().to_owned(),
    ]
}

/// `replay capture` with `flags`, against `agent`.
fn capture_with(flags: &[&str], agent: &[String]) -> std::process::Output {
    let mut args = vec!["replay", "capture", "--prompt", "Fix the failing build"];
    args.extend_from_slice(flags);
    args.push("--");
    args.extend(agent.iter().map(String::as_str));
    faultline(&args)
}

#[test]
fn capture_replaces_a_documentation_url_with_its_placeholder_and_says_so() {
    // Anthropic's 429 names its documentation page: the URL lint used to refuse the draft.
    let agent = script_agent(
        "sanitize",
        None,
        Some(
            r#"{"jsonrpc":"2.0","id":@ID@,"error":{"code":-32603,"message":"API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"This request would exceed the rate limit for your organization of 50 input tokens per minute. For details, refer to: https://docs.anthropic.com/en/api/rate-limits.\"}}"}}"#,
        ),
    );
    let out = common::scratch("sanitize-out").join("draft.json");
    let output = capture_with(
        &[
            "--gateway",
            "anthropic-api",
            "--case",
            "provider-error",
            "--session-id",
            "sanitized-url",
            "--out",
            out.to_str().unwrap(),
        ],
        &agent,
    );
    let errors = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{errors}");
    assert!(
        errors.contains(
            "`frames[0].message`: replaced the url `https://docs.anthropic.com/en/api/rate-limits.` with `<url>`"
        ),
        "{errors}"
    );
    let draft =
        faultline_replay::fixture::load_str("draft.json", &std::fs::read_to_string(&out).unwrap())
            .unwrap();
    let faultline_replay::fixture::Frame::PromptError { message, .. } = &draft.frames[0] else {
        panic!("the only frame is the prompt error: {:?}", draft.frames);
    };
    assert!(
        message.ends_with(r#"For details, refer to: <url>"}}"#),
        "{message}"
    );
    assert_eq!(draft.expect.diagnostic_code, "rate_limited");
}

#[test]
fn capture_accepts_every_provider_the_catalogue_declares_and_classifies_with_it() {
    // Gemini CLI's quota text: `quota_limited` for `gemini-acp`, `rate_limited` without a
    // provider id (the draft used to say the latter, disagreeing with `classify`).
    let agent = script_agent(
        "gemini-id",
        None,
        Some(
            r#"{"jsonrpc":"2.0","id":@ID@,"error":{"code":-32603,"message":"Quota exceeded for quota metric 'Generate Content API requests per minute'"}}"#,
        ),
    );
    let output = capture_with(
        &[
            "--gateway",
            "gemini-api",
            "--case",
            "provider-error",
            "--session-id",
            "gemini-quota",
            "--agent-id",
            "gemini-acp",
        ],
        &agent,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let draft = faultline_replay::fixture::load_str("draft.json", &stdout(&output)).unwrap();
    assert_eq!(draft.agent_id.as_str(), "gemini-acp");
    assert_eq!(draft.expect.provider_error.provider_id, "gemini-acp");
    assert_eq!(draft.expect.diagnostic_code, "quota_limited");

    // An id the catalogue does not declare is refused, naming the declared ones.
    let output = capture_with(
        &[
            "--gateway",
            "gemini-api",
            "--case",
            "provider-error",
            "--session-id",
            "unknown-id",
            "--agent-id",
            "nobody-acp",
        ],
        &agent,
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let errors = stderr(&output);
    assert!(
        errors.contains("`gemini-acp`") && errors.contains("`grok-acp`"),
        "{errors}"
    );
}

#[test]
fn capture_gives_up_on_an_agent_that_never_answers_the_prompt() {
    // Like opencode retrying a retryable error silently: `session/prompt` is never answered.
    let agent = script_agent("silent", None, None);
    let out = common::scratch("silent-out").join("draft.json");
    let output = capture_with(
        &[
            "--gateway",
            "openai-api",
            "--case",
            "provider-error",
            "--session-id",
            "silent-agent",
            "--timeout",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        &agent,
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let errors = stderr(&output);
    assert!(
        errors.contains("did not settle the turn within 1 s") && errors.contains("--timeout"),
        "{errors}"
    );
    assert!(!out.exists());
}

#[test]
fn a_failing_session_new_is_reported_with_the_agents_sanitized_details() {
    let agent = script_agent(
        "session-new",
        Some(
            r#"{"jsonrpc":"2.0","id":@ID@,"error":{"code":-32603,"message":"Internal error","data":{"details":"Invalid API key for sk-ant-api03-abcdefghijklmnop, see https://docs.example.com/keys"}}}"#,
        ),
        None,
    );
    let output = capture_with(
        &[
            "--gateway",
            "anthropic-api",
            "--case",
            "provider-error",
            "--session-id",
            "failed-setup",
            "--timeout",
            "30",
        ],
        &agent,
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let errors = stderr(&output);
    assert!(
        errors.contains("`session/new` failed: Internal error (-32603): ")
            && errors.contains("Invalid API key"),
        "{errors}"
    );
    assert!(
        // The runtime's diagnostic tier: the key is masked and the URL cut to its host.
        !errors.contains("abcdefghijklmnop") && !errors.contains("/keys"),
        "{errors}"
    );
}
