//! The recording harness (`faultline replay record`) and the mock provider
//! (`faultline replay mock-provider`): the namespace refusal, and the harness driven end to end
//! against the binary's own fake agent (`replay serve`) with the namespace check pointed at a
//! loopback-only interface table (creating the namespace needs root; CI's live run does that).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use common::{faultline, root, stdout};

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// An interface table (`/proc/self/net/dev` format) with `names`.
fn interfaces(name: &str, names: &[&str]) -> std::path::PathBuf {
    let path = common::scratch(name).join("dev");
    let mut table = String::from(
        "Inter-|   Receive                            |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n",
    );
    for name in names {
        table.push_str(&format!(
            "{name:>6}:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n"
        ));
    }
    std::fs::write(&path, table).unwrap();
    path
}

#[test]
fn the_harness_refuses_to_run_outside_a_loopback_only_namespace() {
    let table = interfaces("namespace-refusal", &["lo", "eth0"]);
    let out = common::scratch("namespace-refusal-out");
    let output = faultline(&[
        "replay",
        "record",
        "fixtures/recording/matrix.json",
        "--inside-namespace",
        "--proc-net-dev",
        table.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--classify-out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let errors = stderr(&output);
    assert!(
        errors.contains("refusing to record")
            && errors.contains("eth0, lo")
            && errors.contains("only `lo` may exist"),
        "{errors}"
    );
    // Nothing was started, so nothing was written.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

#[test]
fn the_harness_records_a_fixture_and_the_agents_error_texts() {
    let directory = common::scratch("harness");
    let table = interfaces("harness-net", &["lo"]);
    let agent = assert_cmd::cargo::cargo_bin("faultline");
    let fixture = root().join("fixtures/replay/claude-direct-matched.json");
    // The fake agent plays the claude-direct matched turn (a 529 diagnostic, then the same
    // text as the prompt error); the mock serves Anthropic's documented 529.
    let matrix = serde_json::json!({
        "scenarios": root().join("fixtures/mock-provider"),
        "agents": [{
            "name": "fake-agent",
            "package": "faultline",
            "version": "0.1.0",
            "install": directory,
            "agentId": "claude-acp",
            "command": [agent, "replay", "serve", fixture],
            "env": {"ANTHROPIC_BASE_URL": "{base}"},
            "errorLines": "(?i)overloaded",
            "scenarios": ["anthropic/anthropic-529-overloaded"],
        }],
    });
    let matrix_path = directory.join("matrix.json");
    std::fs::write(&matrix_path, matrix.to_string()).unwrap();
    let out = directory.join("recorded");
    let output = faultline(&[
        "replay",
        "record",
        matrix_path.to_str().unwrap(),
        "--inside-namespace",
        "--proc-net-dev",
        table.to_str().unwrap(),
        "--timeout",
        "60",
        "--out",
        out.to_str().unwrap(),
        "--classify-out",
        directory.to_str().unwrap(),
    ]);
    let report = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{report}{}", stderr(&output));
    assert!(
        report.contains("RECORDED fake-agent-anthropic-529-overloaded: [message_chunk:diagnostic, error] provider_overloaded (scenario expects provider_overloaded)"),
        "{report}"
    );
    // The fixture loads in the recorded corpus, with the recording as provenance, and
    // replays through both layers.
    let name = out.join("fake-agent-anthropic-529-overloaded.json");
    let text = std::fs::read_to_string(&name).unwrap();
    let corpus =
        faultline_replay::fixture::load_recorded_corpus([(name.display().to_string(), text)])
            .unwrap();
    let recorded = &corpus.fixtures()[0];
    let recording = recorded.recording.as_ref().unwrap();
    assert_eq!(
        (recording.agent.as_str(), recording.scenario.as_str()),
        ("fake-agent", "anthropic-529-overloaded")
    );
    assert_eq!(recorded.gateway.as_str(), "anthropic-api");
    assert_eq!(recorded.case.as_str(), "provider-error");
    assert!(
        recorded
            .source
            .starts_with("faultline replay record matrix.json")
    );
    let replayed = faultline(&["replay", directory.to_str().unwrap()]);
    // The directory holds no matrix, so the matrix load fails; the recorded file itself is
    // replayed by `faultline replay` in the main corpus (tests/replay.rs).
    assert_eq!(replayed.status.code(), Some(2));
    // The error texts: the diagnostic chunk and the prompt error, each expecting the
    // scenario's code.
    let lines = std::fs::read_to_string(directory.join("recorded-fake-agent.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = lines
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert_eq!(line["expect"]["code"], "provider_overloaded");
        assert_eq!(line["evidence"]["provider_id"], "claude-acp");
        assert_eq!(line["source"], "https://docs.anthropic.com/en/api/errors");
    }
}
