//! Helpers shared by the integration tests.
#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a different subset of the helpers"
)]

use std::path::{Path, PathBuf};
use std::process::Output;

pub use faultline_testkit::{FileSystem, catalogue_bundle, root};

/// A fresh, empty directory for one test (or one test binary), named after it.
pub fn scratch(name: &str) -> PathBuf {
    let directory =
        std::env::temp_dir().join(format!("faultline-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

/// Runs the `faultline` binary from the repository root.
pub fn faultline(args: &[&str]) -> Output {
    assert_cmd::Command::cargo_bin("faultline")
        .unwrap()
        .current_dir(root())
        .args(args)
        .output()
        .unwrap()
}

/// Runs `faultline classify ARGS…` from the repository root with `input` on stdin.
pub fn classify_stdin(args: &[&str], input: &str) -> Output {
    assert_cmd::Command::cargo_bin("faultline")
        .unwrap()
        .current_dir(root())
        .arg("classify")
        .args(args)
        .write_stdin(input)
        .output()
        .unwrap()
}

/// Runs a prepared `faultline` command with `input` written to its standard input (from a
/// thread, so a command that answers as it reads never blocks the writer). The bound only
/// catches a hang (an answer held back, a loop that never ends); it is no performance claim.
pub fn run_with_input(mut command: std::process::Command, input: Vec<u8>) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let shown = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let output = receiver
        .recv_timeout(std::time::Duration::from_secs(120))
        .unwrap_or_else(|_| panic!("{shown} did not end within 120 s"))
        .unwrap();
    writer.join().unwrap();
    output
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Every `.rules` file under a repository directory, sorted.
pub fn rules_files(directory: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root().join(directory)];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rules") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A path relative to the repository root, with `/` separators.
pub fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Applies (position, bytes to delete, text to insert) edits, each at the nearest character
/// boundary: how the property tests mutate real text.
pub fn apply_edits(
    mut text: String,
    edits: Vec<(proptest::sample::Index, usize, String)>,
) -> String {
    for (at, delete, insert) in edits {
        let mut start = at.index(text.len() + 1);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (start + delete).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        text.replace_range(start..end, &insert);
    }
    text
}
