//! `faultline recover` over the example event logs in `examples/recovery/`, one per acceptance
//! area: each log runs through the engine's one entry point, and the test asserts the verdicts
//! and effects that area is about, read from the JSON answers (one per input line).

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::disallowed_methods,
    reason = "integration tests report failure by panicking, and read the repository's files"
)]

mod common;

use common::{faultline, root, run_with_input, stdout};
use serde_json::{Value, json};

/// The JSON answers to `examples/recovery/<name>`, indexed by line number (from 1; index 0 is
/// null). Every line must be answered, none with an error.
fn answers(name: &str) -> Vec<Value> {
    let path = format!("examples/recovery/{name}");
    let output = faultline(&["recover", "--json", &path]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = std::fs::read_to_string(root().join(&path))
        .unwrap()
        .lines()
        .count();
    let mut answers = vec![Value::Null];
    for (index, line) in stdout(&output).lines().enumerate() {
        let answer: Value = serde_json::from_str(line).unwrap();
        assert_eq!(answer["line"], index + 1, "{name}: {line}");
        assert!(answer.get("error").is_none(), "{name}: {line}");
        assert!(answer["effects"].is_array(), "{name}: {line}");
        answers.push(answer);
    }
    assert_eq!(answers.len(), lines + 1, "{name}: one answer per line");
    answers
}

/// The verdict's safety reason and disposition on answer `line`.
fn verdict(answers: &[Value], line: usize) -> (String, String) {
    let outcome = &answers[line]["outcome"];
    assert_eq!(outcome["outcome"], "failed", "line {line}: {outcome}");
    (
        outcome["safety"]["reason"].as_str().unwrap().to_owned(),
        outcome["disposition"].as_str().unwrap().to_owned(),
    )
}

fn outcome(answers: &[Value], line: usize) -> &str {
    answers[line]["outcome"]["outcome"].as_str().unwrap_or("")
}

fn effects(answers: &[Value], line: usize) -> &Vec<Value> {
    answers[line]["effects"].as_array().unwrap()
}

fn expect(reason: &str, disposition: &str) -> (String, String) {
    (reason.to_owned(), disposition.to_owned())
}

#[test]
fn correlation_and_fences() {
    let a = answers("correlation-and-fences.jsonl");
    assert_eq!(verdict(&a, 2), expect("safe", "automatic"));
    // Stale evidence is ignored and changes nothing.
    assert_eq!(outcome(&a, 4), "stale");
    assert_eq!(outcome(&a, 5), "stale");
    assert_eq!(verdict(&a, 6), expect("safe", "automatic"));
    // An event without the identity the record bound poisons it.
    assert_eq!(outcome(&a, 8), "poisoned");
    assert_eq!(verdict(&a, 9), expect("evidence_unknown", "manual"));
    // A launch adopts its execution id when bound; without one it never recovers.
    assert_eq!(outcome(&a, 11), "bound");
    assert_eq!(verdict(&a, 12), expect("safe", "automatic"));
    assert_eq!(verdict(&a, 14), expect("missing_execution", "manual"));
    // Thoughts and partial results close the output fence, a tool update the effect fence.
    assert_eq!(verdict(&a, 17), expect("output_observed", "manual"));
    assert_eq!(verdict(&a, 20), expect("output_observed", "manual"));
    assert_eq!(outcome(&a, 22), "effect");
    assert_eq!(verdict(&a, 23), expect("effect_observed", "manual"));
}

#[test]
fn cursor_barrier() {
    let a = answers("cursor-barrier.jsonl");
    // A pending marker at the barrier is the one failure; with no output it is automatic.
    assert_eq!(outcome(&a, 2), "cursor_marker_pending");
    assert_eq!(verdict(&a, 3), expect("safe", "automatic"));
    let projection = &a[3]["outcome"]["projection"];
    assert_eq!(projection["source"], "cursor_acp");
    assert_eq!(projection["provider_id"], "cursor-acp");
    assert_eq!(
        a[3]["outcome"]["classification"]["rule"],
        "cursor.retriable_unavailable.v1"
    );
    // Cursor resumed: the marker is superseded and the prompt completes.
    assert_eq!(outcome(&a, 6), "cursor_marker_superseded");
    assert_eq!(outcome(&a, 7), "completed");
    // Earlier thoughts, or a tool update in flight, make the barrier failure manual.
    assert_eq!(verdict(&a, 11), expect("output_observed", "manual"));
    assert_eq!(verdict(&a, 15), expect("effect_observed", "manual"));
    // A cancellation is ordinary output; so is the marker under any other provider.
    assert_eq!(outcome(&a, 17), "output");
    assert_eq!(outcome(&a, 18), "completed");
    assert_eq!(outcome(&a, 20), "output");
    assert_eq!(outcome(&a, 21), "completed");
}

#[test]
fn diagnostic_correlation() {
    let a = answers("diagnostic-correlation.jsonl");
    assert_eq!(
        a[2]["outcome"],
        json!({"outcome": "diagnostic_recorded", "code": "provider_unavailable"})
    );
    assert_eq!(
        verdict(&a, 3),
        expect("safe_diagnostic_confirmed", "automatic")
    );
    assert_eq!(
        a[3]["outcome"]["recorded_diagnostic"],
        "provider_unavailable"
    );
    // Containment is case-sensitive; the codes must agree.
    assert_eq!(verdict(&a, 6), expect("diagnostic_not_contained", "manual"));
    assert_eq!(verdict(&a, 9), expect("diagnostic_code_differs", "manual"));
    // Ordinary output clears the diagnostic; a tool call keeps it but fails the attempt.
    assert_eq!(
        a[12]["outcome"],
        json!({"outcome": "output", "cleared_diagnostic": true})
    );
    assert_eq!(verdict(&a, 13), expect("output_observed", "manual"));
    assert_eq!(verdict(&a, 17), expect("effect_observed", "manual"));
    assert_eq!(
        a[17]["outcome"]["recorded_diagnostic"],
        "provider_unavailable"
    );
    // The lifecycle's snapshot carries the diagnostic when stream events come late.
    assert_eq!(
        verdict(&a, 19),
        expect("safe_diagnostic_confirmed", "automatic")
    );
    // A signature only in `data` never classifies; only the errorKind crosses.
    assert_eq!(verdict(&a, 21), expect("safe", "manual"));
    let failed = &a[21]["outcome"];
    assert_eq!(failed["classification"]["class"], "unclassified");
    assert_eq!(failed["projection"]["error_kind"], "server_error");
    assert!(!failed.to_string().contains("peer disconnected"));
}

#[test]
fn retraction() {
    let a = answers("retraction.jsonl");
    let retraction = |generation: u64, ids: &[&str]| {
        vec![
            json!({"effect": "drop_uncommitted_history", "generation": generation}),
            json!({"effect": "retract", "generation": generation, "message_ids": ids}),
        ]
    };
    // The boundary retracts the abandoned attempt's records in allocation order, once.
    assert_eq!(effects(&a, 6), &retraction(7, &["t1", "a1"]));
    assert!(effects(&a, 7).is_empty(), "a repeated boundary is a no-op");
    // A top-level tool call commits; a continued record never becomes retractable; a
    // nested tool call commits nothing.
    assert_eq!(effects(&a, 17), &retraction(7, &["a3"]));
    // A stale generation or another execution reaches nothing.
    assert!(effects(&a, 15).is_empty());
    assert!(effects(&a, 16).is_empty());
    // The fences survive the retraction, and a completed generation is never reached into.
    assert_eq!(verdict(&a, 18), expect("effect_observed", "manual"));
    assert!(effects(&a, 19).is_empty());
    assert_eq!(effects(&a, 23), &retraction(2, &["b1"]));
    assert_eq!(verdict(&a, 24), expect("output_observed", "manual"));
}

#[test]
fn notices() {
    let a = answers("notices.jsonl");
    let list = json!({"effect": "list_notices"});
    // Every write lists first; the first attempt creates one notice.
    assert_eq!(effects(&a, 3), &vec![list.clone()]);
    let created = &effects(&a, 4)[0];
    assert_eq!(created["effect"], "write_notice");
    assert_eq!(created["target"], "create");
    assert_eq!(created["notice"]["attempt"], 1);
    assert_eq!(created["notice"]["deadline"], "2026-10-01T08:00:05Z");
    // The next attempt updates the loop's notice in place and consolidates a duplicate.
    let updated = &effects(&a, 9)[0];
    assert_eq!(updated["target"], json!({"update": "n1"}));
    assert_eq!(updated["notice"]["attempt"], 2);
    assert_eq!(
        effects(&a, 10),
        &vec![json!({"effect": "delete_notices", "ids": ["n0"]})]
    );
    // Exhaustion retires the notices (deleted, never flipped) and the lifecycle: a new
    // attempt reads as unknown until its full identity is bound.
    assert_eq!(outcome(&a, 12), "retired");
    assert_eq!(effects(&a, 12), &vec![list.clone()]);
    assert_eq!(
        effects(&a, 13),
        &vec![json!({"effect": "delete_notices", "ids": ["n1"]})]
    );
    assert_eq!(verdict(&a, 16), expect("lifecycle_retired", "manual"));
    // An unreadable candidate or a failed write never creates another notice.
    assert_eq!(
        effects(&a, 18),
        &vec![json!({"effect": "report", "report": "notice_unreadable", "ids": ["u1"]})]
    );
    assert_eq!(
        effects(&a, 21),
        &vec![json!({"effect": "report", "report": "write_failed"})]
    );
    // A refused cancel reveals nothing; a granted one disarms first and offers Resume and
    // Start fresh; after the loop ended it only cleans up.
    assert_eq!(
        effects(&a, 22),
        &vec![json!({"effect": "reply", "reply": "refused"})]
    );
    assert!(a[22].get("outcome").is_none());
    assert_eq!(
        effects(&a, 23),
        &vec![
            json!({"effect": "disarm_retry"}),
            list.clone(),
            json!({"effect": "show_manual_recovery"}),
            json!({"effect": "reply", "reply": "cancelled"}),
        ]
    );
    assert_eq!(outcome(&a, 23), "retired");
    assert_eq!(
        effects(&a, 25),
        &vec![json!({"effect": "report", "report": "cleanup_incomplete", "remaining": ["n5"]})]
    );
    assert_eq!(
        effects(&a, 26),
        &vec![list, json!({"effect": "reply", "reply": "no_active_retry"})]
    );
    assert_eq!(
        effects(&a, 27),
        &vec![json!({"effect": "report", "report": "list_failed"})]
    );
}

/// Issue 17: every path fails closed (one session per item of the issue, and per decision
/// docs/recovery.md records for what the spec leaves open).
#[test]
fn fail_closed() {
    let a = answers("fail-closed.jsonl");
    // 1. A settled failure re-delivered after the lifecycle retired is a manual duplicate.
    assert_eq!(verdict(&a, 2), expect("safe", "automatic"));
    assert_eq!(verdict(&a, 4), expect("safe", "manual"));
    assert_eq!(a[4]["outcome"]["duplicate"], true);
    assert!(a[2]["outcome"].get("duplicate").is_none());
    // 2. Beginning the same attempt again keeps its fences and the retirement.
    assert_eq!(outcome(&a, 8), "attempt_repeated");
    assert_eq!(verdict(&a, 9), expect("lifecycle_retired", "manual"));
    // 3. Containment reads the whole diagnostic, past 2,048 bytes.
    assert_eq!(
        verdict(&a, 12),
        expect("diagnostic_not_contained", "manual")
    );
    // 4. Different URLs are different texts.
    assert_eq!(
        verdict(&a, 15),
        expect("diagnostic_not_contained", "manual")
    );
    // 6. A Cursor barrier failure is recoverable on the same provider only.
    assert_eq!(verdict(&a, 18), expect("safe", "automatic"));
    assert_eq!(a[18]["outcome"]["same_provider_only"], true);
    assert_eq!(a[18]["outcome"]["classification"]["fallback_allowed"], true);
    assert_eq!(a[2]["outcome"]["same_provider_only"], false);
    // 7. A model id that is not an identifier is dropped; the projection stays.
    assert!(a[21]["outcome"]["projection"].get("model_id").is_none());
    assert_eq!(verdict(&a, 21), expect("safe", "automatic"));
    // 8. A malformed error field is dropped, not the event.
    assert_eq!(verdict(&a, 23), expect("safe", "automatic"));
    assert!(a[23]["outcome"]["projection"].get("rpc_code").is_none());
    // 9. A marked chunk never clears the recorded diagnostic.
    assert_eq!(outcome(&a, 26), "diagnostic_ignored");
    assert_eq!(
        verdict(&a, 27),
        expect("safe_diagnostic_confirmed", "automatic")
    );
    // Silent: whitespace is output, and no sign that Cursor resumed.
    assert_eq!(verdict(&a, 31), expect("output_observed", "manual"));
    // Silent: a deadline in any spelling vetoes the Cursor marker.
    assert_eq!(outcome(&a, 33), "output");
    assert_eq!(outcome(&a, 34), "completed");
    // Silent: a diagnostic never explains a barrier failure.
    assert_eq!(verdict(&a, 39), expect("output_observed", "manual"));
    // Silent: a stale generation's diagnostic stops automatic recovery.
    assert_eq!(outcome(&a, 41), "stale_diagnostic");
    assert_eq!(verdict(&a, 42), expect("stale_diagnostic", "manual"));
    // Silent: a model belongs to the execution it was settled under.
    assert!(a[46]["outcome"]["projection"].get("model_id").is_none());
}

/// Issue 17, item 5: a line that cannot be read is answered with an error that names the
/// sessions it poisoned, and the replay goes on with those sessions manual; a line whose
/// session cannot be told poisons every session, later ones included.
#[test]
fn an_unreadable_line_poisons_its_session() {
    let log = [
        r#"{"session":"s","provider_id":"claude-acp","event":"prompt_began","execution_id":"exec-1","generation":7}"#,
        r#"{"session":"s","event":"tool_call","execution_id":"exec-1","generation":7,"tool_call_id":"t1"}"#,
        r#"{"session":"s","event":"prompt_failed","execution_id":"exec-1","generation":7,"error":{"code":-32603,"message":"Internal error: API Error: 529 Overloaded"},"occurred_at":"2026-10-01T08:00:00Z"}"#,
        r#"{"session":"t","provider_id":"claude-acp","event":"prompt_began","execution_id":"exec-1","generation":7}"#,
        r#"{"session":"t","event":"prompt_failed","execution_id":"exec-1","generation":7,"error":{"code":-32603,"message":"Internal error: API Error: 529 Overloaded"},"occurred_at":"2026-10-01T08:00:00Z"}"#,
        r#"{"session":"u","provider_id":"claude-acp","event":"prompt_began","execution_id":"exec-1","generation":7}"#,
        "not json",
        r#"{"session":"u","event":"prompt_failed","execution_id":"exec-1","generation":8,"error":{"code":-32603,"message":"Internal error: API Error: 529 Overloaded"},"occurred_at":"2026-10-01T08:00:00Z"}"#,
        r#"{"session":"v","provider_id":"claude-acp","event":"prompt_began","execution_id":"exec-1","generation":7}"#,
        r#"{"session":"v","event":"prompt_failed","execution_id":"exec-1","generation":7,"error":{"code":-32603,"message":"Internal error: API Error: 529 Overloaded"},"occurred_at":"2026-10-01T08:00:00Z"}"#,
    ]
    .join("\n");
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"));
    command.current_dir(root()).args(["recover", "--json"]);
    let output = run_with_input(command, log.into_bytes());
    assert_eq!(output.status.code(), Some(1), "a line could not be read");
    let answers: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(answers.len(), 10, "one answer per line");
    let a: Vec<Value> = std::iter::once(Value::Null).chain(answers).collect();
    // The rejected tool call poisons its session: the failure that follows is manual.
    assert_eq!(a[2]["error"]["field"], "tool_call_id");
    assert_eq!(
        a[2]["poisoned"],
        json!({"sessions": ["s"], "later_sessions": false})
    );
    assert_eq!(verdict(&a, 3), expect("session_poisoned", "manual"));
    // Another session is untouched.
    assert_eq!(verdict(&a, 5), expect("safe", "automatic"));
    // A line that names no session poisons them all, and every later one.
    assert_eq!(
        a[7]["poisoned"],
        json!({"sessions": ["s", "t", "u"], "later_sessions": true})
    );
    assert_eq!(verdict(&a, 8), expect("session_poisoned", "manual"));
    assert_eq!(verdict(&a, 10), expect("session_poisoned", "manual"));
}

#[test]
fn every_example_log_is_run_here_and_listed_in_the_docs() {
    let docs = std::fs::read_to_string(root().join("docs/recovery.md")).unwrap();
    let this = std::fs::read_to_string(root().join("tests/recover_cli.rs")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(root().join("examples/recovery"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for name in names {
        assert!(
            docs.contains(&name),
            "docs/recovery.md does not list {name}"
        );
        let stem = name.trim_end_matches(".jsonl").replace('-', "_");
        assert!(
            this.contains(&format!("fn {stem}()")) || name == "claude-overloaded.jsonl",
            "no test runs {name}"
        );
    }
}

#[test]
fn text_answers_report_every_effect_on_one_line() {
    let output = faultline(&["recover", "examples/recovery/notices.jsonl"]);
    let text = stdout(&output);
    let line = text
        .lines()
        .find(|line| line.starts_with("examples/recovery/notices.jsonl:23 "))
        .unwrap();
    assert!(
        line.contains("disarm the retry timer; list the session's notices; offer manual recovery")
            && line.contains("reply: cancelled; retry lifecycle retired"),
        "{line}"
    );
    let output = faultline(&["recover", "examples/recovery/retraction.jsonl"]);
    let text = stdout(&output);
    assert!(text.contains(
        "retraction.jsonl:6 [codex] drop the uncommitted assistant history of generation 7; retract records [t1, a1] of generation 7"
    ), "{text}");
    assert!(text.contains("retraction.jsonl:5 [codex] retractable now: [t1, a1]"));
}

/// The decision path of the terminal failure on answer `line` (a session with a `context`).
fn path(answers: &[Value], line: usize) -> &str {
    answers[line]["decision"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("line {line} has no decision: {}", answers[line]))
}

fn route(effect: &str) -> Value {
    json!({ "effect": effect })
}

/// Issue 14: a retried overload that succeeds on attempt 2. The interactive ladder decides,
/// and the retry notice follows the decisions: created, updated in place, retired on success.
#[test]
fn policy_overload_retried() {
    let a = answers("policy-overload-retried.jsonl");
    assert_eq!(
        path(&a, 2),
        "provider_overloaded, effect-safe → retry 1/5 in 5 s"
    );
    assert_eq!(
        a[2]["decision"]["step"]["notice"],
        "Provider overloaded — retrying in 5s (attempt 1/5)"
    );
    assert_eq!(effects(&a, 2), &vec![json!({"effect": "list_notices"})]);
    let created = &effects(&a, 3)[0];
    assert_eq!(created["target"], "create");
    assert_eq!(created["notice"]["reason"], "Provider overloaded");
    assert_eq!(created["notice"]["deadline"], "2026-10-01T08:00:05Z");
    assert_eq!(
        path(&a, 6),
        "provider_overloaded, effect-safe → retry 2/5 in 10 s"
    );
    let updated = &effects(&a, 7)[0];
    assert_eq!(updated["target"], json!({"update": "n1"}));
    assert_eq!(updated["notice"]["attempt"], 2);
    // Attempt 2 succeeds: the loop's notice is retired (deleted, never flipped).
    assert_eq!(outcome(&a, 10), "completed");
    assert_eq!(
        effects(&a, 11),
        &vec![json!({"effect": "delete_notices", "ids": ["n1"]})]
    );
}

/// Issue 14: a quota whose validated reset lies within the maximum wait waits for it, and
/// retries once when the timer fires; the retry's success makes the route active again.
#[test]
fn policy_quota_wait() {
    let a = answers("policy-quota-wait.jsonl");
    assert_eq!(
        path(&a, 2),
        "quota_limited, reset 14:00 within max wait → wait until 14:00"
    );
    // Nothing is scheduled before the durable write succeeds.
    assert_eq!(effects(&a, 2), &vec![route("persist")]);
    assert_eq!(
        effects(&a, 3),
        &vec![json!({"effect": "schedule_timer", "generation": 1, "at": "2026-10-01T14:00:00Z"})]
    );
    assert_eq!(
        effects(&a, 5),
        &vec![json!({"effect": "dispatch_retry", "generation": 2})]
    );
    assert_eq!(outcome(&a, 7), "completed");
    assert_eq!(effects(&a, 7), &vec![route("persist")]);
}

/// Issue 14: a reset beyond the maximum wait is not shortened; a hard failure has no retry
/// budget, so it falls through to exhaustion: `stop`.
#[test]
fn policy_reset_beyond_max() {
    let a = answers("policy-reset-beyond-max.jsonl");
    assert_eq!(
        path(&a, 2),
        "quota_limited, reset 2026-10-12T14:00:00Z beyond max wait (not shortened) → stop: manual (retries exhausted)"
    );
    assert_eq!(
        effects(&a, 3),
        &vec![
            json!({"effect": "ask_user", "cause": {"cause": "evaluated", "reason": "exhausted"}})
        ]
    );
}

/// Issue 14: exhaustion with `skip` (a route's exponential retries: 5, 10, 20 s, then the next
/// candidate) and with `stop` (the interactive ladder's five attempts, then manual recovery).
#[test]
fn policy_exhausted() {
    let a = answers("policy-exhausted.jsonl");
    assert_eq!(path(&a, 2), "rate_limited, effect-safe → retry 1/3 in 5 s");
    assert_eq!(path(&a, 7), "rate_limited, effect-safe → retry 2/3 in 10 s");
    assert_eq!(
        path(&a, 12),
        "rate_limited, effect-safe → retry 3/3 in 20 s"
    );
    assert_eq!(
        path(&a, 17),
        "rate_limited, effect-safe → skip: switch to the next candidate (retries exhausted)"
    );
    assert_eq!(effects(&a, 18), &vec![route("switch_route")]);
    assert_eq!(
        path(&a, 36),
        "provider_overloaded, effect-safe → retry 5/5 in 1 min"
    );
    assert_eq!(
        path(&a, 40),
        "provider_overloaded, effect-safe, 5/5 attempts used → stop: manual (Resume or Start fresh)"
    );
    // Exhaustion retires the loop's notice.
    assert_eq!(
        effects(&a, 41),
        &vec![json!({"effect": "delete_notices", "ids": ["n1"]})]
    );
}

/// Issue 14: a failure after output is not effect-safe, and a hard failure the table leaves
/// to the user stops; neither retries nor shows a notice.
#[test]
fn policy_unsafe() {
    let a = answers("policy-unsafe.jsonl");
    assert_eq!(
        path(&a, 3),
        "provider_overloaded, not effect-safe → stop: manual"
    );
    assert_eq!(effects(&a, 3), &Vec::<Value>::new());
    assert_eq!(path(&a, 5), "auth_required → stop: manual");
    assert_eq!(effects(&a, 5), &Vec::<Value>::new());
}

/// Issue 14: a cancel during a wait is fenced by generation, schedules nothing when its write
/// fails, disarms the timer and asks the user once written, and is idempotent after.
#[test]
fn policy_cancel_wait() {
    let a = answers("policy-cancel-wait.jsonl");
    assert_eq!(
        effects(&a, 4),
        &vec![json!({"refused": "stale generation: the route is at generation 1"})]
    );
    assert_eq!(effects(&a, 5), &vec![route("persist")]);
    assert_eq!(
        effects(&a, 6),
        &Vec::<Value>::new(),
        "a failed write releases nothing"
    );
    assert_eq!(
        effects(&a, 8),
        &vec![
            json!({"effect": "disarm_timer", "generation": 1}),
            json!({"effect": "ask_user", "cause": {"cause": "cancelled"}}),
        ]
    );
    assert_eq!(effects(&a, 9), &Vec::<Value>::new(), "cancel is idempotent");
    assert_eq!(
        effects(&a, 10),
        &Vec::<Value>::new(),
        "the old timer is stale"
    );
}

/// Issue 14: a restart re-arms a persisted wait at its deadline (an early firing re-arms it
/// again); a persisted `retrying` is left for manual recovery.
#[test]
fn policy_restart() {
    let a = answers("policy-restart.jsonl");
    let armed = json!({"effect": "schedule_timer", "generation": 1, "at": "2026-10-01T14:00:00Z"});
    assert_eq!(effects(&a, 4), &vec![armed.clone()]);
    assert_eq!(effects(&a, 5), &vec![armed]);
    assert_eq!(
        effects(&a, 7),
        &vec![json!({"effect": "dispatch_retry", "generation": 2})]
    );
    assert_eq!(effects(&a, 8), &Vec::<Value>::new());
    let text = stdout(&faultline(&[
        "recover",
        "examples/recovery/policy-restart.jsonl",
    ]));
    assert!(
        text.contains(
            "policy-restart.jsonl:8 [quota] route: nothing to re-arm (the route is retrying"
        ),
        "{text}"
    );
}

/// Issue 14: a catalogue author changes the ladder and a class's policy in `.rules`, rebuilds,
/// and the same event log decides differently — no Rust changes.
#[test]
fn an_edited_policy_block_changes_the_decisions_without_touching_rust() {
    let directory = common::scratch("edited-policy");
    let source = root().join("catalogue");
    copy_tree(&source, &directory);
    let policy = std::fs::read_to_string(directory.join("policy.rules")).unwrap();
    let edited = policy
        .replace(
            "ladder { steps [5s, 10s, 20s, 40s, 60s], attempts 5, reset_within 1m }",
            "ladder { steps [3s, 7s], attempts 2, reset_within 1m }",
        )
        .replace(
            "retry { max 3, initial 5s }\n        wait_for_reset { max 1h }\n        on_exhausted skip",
            "retry { max 1, initial 30s }\n        wait_for_reset { max 1h }\n        on_exhausted stop",
        );
    assert_ne!(edited, policy, "the edit applies to catalogue/policy.rules");
    std::fs::write(directory.join("policy.rules"), edited).unwrap();
    let root_file = directory.join("catalogue.rules");
    let output = faultline(&[
        "recover",
        "--json",
        "--catalogue",
        root_file.to_str().unwrap(),
        "examples/recovery/policy-exhausted.jsonl",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let paths: Vec<String> = stdout(&output)
        .lines()
        .filter_map(|line| {
            let answer: Value = serde_json::from_str(line).unwrap();
            answer["decision"]["path"].as_str().map(str::to_owned)
        })
        .collect();
    // The transient class now retries once after 30 s (the log's timers, written for 5 s, fire
    // early, so the route never retries again); the ladder has two steps of 3 and 7 s.
    assert_eq!(paths[0], "rate_limited, effect-safe → retry 1/1 in 30 s");
    assert!(
        paths
            .iter()
            .filter(|path| path.starts_with("rate_limited"))
            .skip(1)
            .all(|path| !path.contains("→ retry")),
        "{paths:#?}"
    );
    let ladder: Vec<&str> = paths
        .iter()
        .filter(|path| path.starts_with("provider_overloaded"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        ladder[..3],
        [
            "provider_overloaded, effect-safe → retry 1/2 in 3 s",
            "provider_overloaded, effect-safe → retry 2/2 in 7 s",
            "provider_overloaded, effect-safe, 2/2 attempts used → stop: manual (Resume or Start fresh)",
        ]
    );
    std::fs::remove_dir_all(&directory).unwrap();
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
