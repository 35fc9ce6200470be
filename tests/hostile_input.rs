//! `classify` and `recover` under hostile input: random bytes, blank and huge lines, invalid
//! UTF-8, empty files and directories. Whatever arrives, the process ends, exits 0, 1 or 2,
//! never panics, and answers every input line with exactly one output line.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;

/// This binary's scratch directory (its bundle cache is shared by every case).
fn scratch() -> PathBuf {
    static SCRATCH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    SCRATCH
        .get_or_init(|| common::scratch("hostile-input"))
        .clone()
}

/// One input line's bytes (without its newline).
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Random bytes, newlines taken out: one line each.
        proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..64),
        // Valid evidence and events.
        Just(br#"{"http_status":529}"#.to_vec()),
        Just(br#"{"id":"r","provider_id":"claude-acp","stderr":"API Error: 529 overloaded"}"#.to_vec()),
        Just(br#"{"event":"prompt_began","execution_id":"e","generation":1}"#.to_vec()),
        Just(br#"{"event":"prompt_failed","execution_id":"e","generation":1,"error":{"message":"API Error: 529"},"occurred_at":"2026-10-01T08:00:00Z"}"#.to_vec()),
        // Almost evidence: wrong types, unknown fields, deep nesting, control characters.
        Just(br#"{"http_status":"529","exit_code":1e99}"#.to_vec()),
        Just(br#"{"session":"a\nb\u0000","event":"chunk"}"#.to_vec()),
        Just([b"[".repeat(300), b"]".repeat(300)].concat()),
        Just(b"\xff\xfe{}\r".to_vec()),
        Just(Vec::new()),
        // Large lines: 1.5 MiB of text with a real error at its end.
        (1usize..3).prop_map(|halves| {
            let mut line = br#"{"stderr":""#.to_vec();
            line.resize(line.len() + halves * (768 << 10), b'x');
            line.extend_from_slice(br#" API Error: 529 overloaded"}"#);
            line
        }),
    ]
}

#[derive(Debug, Clone)]
enum Input {
    /// Lines on standard input.
    Stdin(Vec<Vec<u8>>),
    /// An empty file.
    EmptyFile,
    /// A directory.
    Directory,
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        8 => proptest::collection::vec(line(), 0..12).prop_map(Input::Stdin),
        1 => Just(Input::EmptyFile),
        1 => Just(Input::Directory),
    ]
}

/// Runs the command on the input, with a bound that only catches a hang.
fn drive(command: &[&str], input: &Input, scratch: &Path) -> (Option<i32>, usize, String) {
    let mut process = Command::new(env!("CARGO_BIN_EXE_faultline"));
    process
        .args(command)
        .current_dir(common::root())
        .env("FAULTLINE_CACHE_DIR", scratch.join("cache"));
    let bytes = match input {
        Input::Stdin(lines) => lines
            .iter()
            .flat_map(|line| [&line[..], b"\n"].concat())
            .collect(),
        Input::EmptyFile => {
            let file = scratch.join("empty.jsonl");
            std::fs::write(&file, b"").unwrap();
            process.arg(file);
            Vec::new()
        }
        Input::Directory => {
            process.arg(scratch);
            Vec::new()
        }
    };
    let output = common::run_with_input(process, bytes);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), stdout.lines().count(), stderr)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_input_line_gets_exactly_one_answer_and_the_command_ends(input in input()) {
        let scratch = scratch();
        for command in [&["classify"][..], &["recover"], &["recover", "--json"]] {
            let (code, answers, stderr) = drive(command, &input, &scratch);
            prop_assert!(!stderr.contains("panicked"), "{command:?} panicked: {stderr}");
            prop_assert!(matches!(code, Some(0..=2)), "{command:?} exited {code:?}: {stderr}");
            match &input {
                Input::Stdin(lines) => prop_assert_eq!(answers, lines.len(), "{:?}: {}", command, stderr),
                Input::EmptyFile => prop_assert_eq!((code, answers), (Some(0), 0)),
                Input::Directory => {
                    prop_assert_eq!((code, answers), (Some(2), 0));
                    prop_assert_eq!(stderr.lines().count(), 1, "{}", stderr);
                }
            }
        }
    }
}
