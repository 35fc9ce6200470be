//! `classify` and `recover` as an orchestrator drives them: a co-process that answers each
//! JSON line as soon as it is written, one answer per line, in order, with error objects in
//! the place of bad lines and the caller's `id` echoed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The cache directory this binary's tests share, so the built-in bundle is compiled once.
fn cache() -> PathBuf {
    static CACHE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    CACHE
        .get_or_init(|| common::scratch("json-lines-cache"))
        .clone()
}

fn faultline() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_faultline"));
    command
        .current_dir(common::root())
        .env("FAULTLINE_CACHE_DIR", cache());
    command
}

fn run(args: &[&str], input: &[u8]) -> std::process::Output {
    let mut command = faultline();
    command.args(args);
    common::run_with_input(command, input.to_vec())
}

fn answers(output: &std::process::Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

const OVERLOADED: &str = r#"{"provider_id":"claude-acp","stderr":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"}"#;

#[test]
fn each_answer_is_written_before_the_next_line_arrives() {
    // Warm the cache, so the co-process below starts in well under the bound.
    assert_eq!(run(&["classify"], b"{}\n").status.code(), Some(0));
    let mut child = faultline()
        .args(["classify", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (sender, answers) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut line = String::new();
        while stdout.read_line(&mut line).unwrap_or(0) > 0 {
            if sender.send(std::mem::take(&mut line)).is_err() {
                break;
            }
        }
    });
    for (id, line) in [("first", OVERLOADED), ("second", r#"{"http_status":401}"#)] {
        let tagged = line.replacen('{', &format!("{{\"id\":\"{id}\","), 1);
        writeln!(stdin, "{tagged}").unwrap();
        stdin.flush().unwrap();
        // The input stays open: the answer must come without it being closed. The bound only
        // catches a hang (an answer held back until end of input); it is no performance claim.
        let answer = answers
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no answer to the `{id}` line while the input is open"));
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["id"], id);
    }
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    reader.join().unwrap();
}

#[test]
fn every_line_gets_one_answer_in_order_with_its_id() {
    let mut input = b"{\"id\":1,\"http_status\":429}\n\n{\"id\":\"b\",\"phase\":\"later\"}\n[]\n{\"id\":[1]}\n\xff\n".to_vec();
    input.extend_from_slice(OVERLOADED.replacen('{', "{\"id\":\"last\",", 1).as_bytes());
    input.push(b'\n');
    let output = run(&["classify"], &input);
    assert_eq!(output.status.code(), Some(1), "some lines were bad");
    let answers = answers(&output);
    assert_eq!(answers.len(), 7, "{answers:#?}");
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[0]["rule"], "http.429");
    let errors: Vec<(u64, &Value, &Value)> = answers[1..6]
        .iter()
        .map(|answer| {
            (
                answer["line"].as_u64().unwrap(),
                &answer["error"]["field"],
                answer.get("id").unwrap_or(&Value::Null),
            )
        })
        .collect();
    assert_eq!(
        errors,
        [
            (2, &Value::Null, &Value::Null),
            (3, &Value::from("phase"), &Value::from("b")),
            (4, &Value::Null, &Value::Null),
            (5, &Value::from("id"), &Value::Null),
            (6, &Value::Null, &Value::Null),
        ]
    );
    assert_eq!(answers[6]["id"], "last");
    assert_eq!(answers[6]["code"], "provider_overloaded");
    let messages = String::from_utf8(output.stderr).unwrap();
    assert!(
        messages.contains("<stdin>:3: invalid evidence: field `phase`: unknown variant `later`"),
        "{messages}"
    );
    assert!(
        messages.contains("<stdin>:6: invalid evidence: the line is not UTF-8"),
        "{messages}"
    );
}

#[test]
fn recover_answers_every_line_too_and_keeps_text_answers_on_one_line() {
    let input = concat!(
        "{\"id\":\"x\",\"session\":\"a\\nb\",\"event\":\"prompt_began\",\"execution_id\":\"e\",\"generation\":1}\n",
        "{\"event\":\"explode\"}\n",
        "not json\n",
    );
    let json = run(&["recover", "--json"], input.as_bytes());
    assert_eq!(json.status.code(), Some(1));
    let answers = answers(&json);
    assert_eq!(answers.len(), 3);
    assert_eq!(answers[0]["id"], "x");
    assert_eq!(answers[0]["session"], "a\nb");
    assert_eq!(answers[1]["error"]["field"], "event");
    assert_eq!(answers[2]["line"], 3);
    let text = run(&["recover"], input.as_bytes());
    let text = String::from_utf8(text.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with("<stdin>:1 [a\\nb] attempt began"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("<stdin>:2 error: field `event`"),
        "{text}"
    );
}

#[test]
fn a_directory_ends_the_command_with_one_error() {
    for command in ["classify", "recover"] {
        let output = run(&[command, "fixtures"], b"");
        assert_eq!(output.status.code(), Some(2), "{command}");
        assert!(output.stdout.is_empty(), "{command}");
        let messages = String::from_utf8(output.stderr).unwrap();
        assert_eq!(messages.lines().count(), 1, "{command}: {messages}");
        assert!(
            messages.contains("`fixtures`: it is a directory"),
            "{messages}"
        );
    }
}

#[test]
fn a_dash_reads_standard_input_beside_files() {
    let file = cache().join("one-line.jsonl");
    std::fs::write(&file, "{\"http_status\":401}\n").unwrap();
    let output = run(
        &["classify", file.to_str().unwrap(), "-"],
        b"{\"http_status\":529}\n",
    );
    assert_eq!(output.status.code(), Some(0));
    let rules: Vec<Value> = answers(&output)
        .iter()
        .map(|answer| answer["rule"].clone())
        .collect();
    assert_eq!(rules, ["http.401", "http.529"]);
}

#[test]
fn a_line_over_the_bound_is_answered_with_an_error_and_the_next_line_still_runs() {
    // 65 MiB of text inside one JSON string: over the 64 MiB line bound.
    let mut input = b"{\"stderr\":\"".to_vec();
    input.resize(input.len() + (65 << 20), b'a');
    input.extend_from_slice(b"\"}\n{\"http_status\":529}\n");
    let output = run(&["classify"], &input);
    assert_eq!(output.status.code(), Some(1));
    let answers = answers(&output);
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0]["line"], 1);
    assert!(
        answers[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than 67108864 bytes"),
        "{}",
        answers[0]
    );
    assert_eq!(answers[1]["rule"], "http.529");
}

#[test]
fn on_a_terminal_with_no_input_a_hint_says_what_is_read() {
    // `script` (util-linux) runs the command on a pseudo-terminal; its end of input is ours.
    let command = format!("{} classify", env!("CARGO_BIN_EXE_faultline"));
    let output = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("FAULTLINE_CACHE_DIR", cache())
        .stdin(Stdio::null())
        .output()
        .expect("`script` from util-linux runs the command on a terminal");
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(
        shown.contains("reading evidence as JSON lines from standard input; Ctrl-D to end"),
        "{shown}"
    );
    // Not on a pipe: there the hint would be noise in a caller's logs.
    let piped = run(&["classify"], b"");
    assert!(
        piped.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&piped.stderr)
    );
}

/// Classification on several threads against the same command on one: every answer, every
/// message on standard error and the exit code must agree, over lines that span many batches,
/// bad lines among them, two files and standard input.
#[test]
fn answers_on_several_threads_are_the_answers_on_one_in_the_same_order() {
    let fixtures = common::root().join("fixtures/classify");
    let mut evidence: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(&fixtures).unwrap() {
        let path = entry.unwrap().path();
        if path
            .extension()
            .is_some_and(|extension| extension == "jsonl")
        {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let Ok(Value::Object(fixture)) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                if let Some(evidence_fields) = fixture.get("evidence") {
                    evidence.push(evidence_fields.to_string());
                }
            }
        }
    }
    evidence.sort();
    assert!(evidence.len() > 3_000, "{} fixtures", evidence.len());
    let bad = [
        "",
        "[]",
        "{\"phase\":\"later\"}",
        "not json",
        "{\"id\":[1]}",
    ];
    let mut first = String::new();
    for (index, line) in evidence.iter().enumerate() {
        if index % 97 == 0 {
            first.push_str(bad[index / 97 % bad.len()]);
            first.push('\n');
        }
        let tagged = line.replacen('{', &format!("{{\"id\":{index},"), 1);
        first.push_str(if index % 2 == 0 { &tagged } else { line });
        first.push('\n');
    }
    let scratch = common::scratch("json-lines-threads");
    let (one, two) = (scratch.join("one.jsonl"), scratch.join("two.jsonl"));
    std::fs::write(&one, &first).unwrap();
    // The second file ends without a newline.
    std::fs::write(&two, b"{\"http_status\":429}\n\xff\n{\"http_status\":529}").unwrap();
    let args = |jobs: &'static str| {
        vec![
            "classify".to_owned(),
            "--jobs".to_owned(),
            jobs.to_owned(),
            "--now".to_owned(),
            "2026-01-15T12:00:00Z".to_owned(),
            one.display().to_string(),
            "-".to_owned(),
            two.display().to_string(),
        ]
    };
    let stdin = b"{\"http_status\":401}\n{}\n".to_vec();
    let outputs: Vec<std::process::Output> = ["1", "3"]
        .iter()
        .map(|jobs| {
            let mut command = faultline();
            command.args(args(jobs));
            common::run_with_input(command, stdin.clone())
        })
        .collect();
    let (one_thread, three) = (&outputs[0], &outputs[1]);
    assert_eq!(one_thread.status.code(), Some(1), "bad lines were reported");
    let answers_one = answers(one_thread);
    assert_eq!(
        answers_one.len(),
        first.lines().count() + 2 + 3,
        "one answer per line"
    );
    assert!(
        answers_one
            .iter()
            .any(|answer| answer["code"] == "provider_overloaded"),
        "the fixtures were classified"
    );
    assert_eq!(three.status.code(), one_thread.status.code());
    assert!(
        answers(three) == answers_one,
        "the answers on three threads differ from the answers on one"
    );
    assert_eq!(
        String::from_utf8_lossy(&three.stderr),
        String::from_utf8_lossy(&one_thread.stderr)
    );
}
