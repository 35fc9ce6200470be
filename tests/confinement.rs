//! A catalogue is confined to the directory of its root file: `check` (every output format,
//! watch mode included), `build` and `fmt` never read a file outside it, whether an include
//! climbs out with `..`, names an absolute path or passes through a symbolic link; an included
//! file that is not text is refused unquoted, and one that is not `.rules` text is quoted no
//! further than its offending line (issue 10, item 15).
//!
//! Each test builds its catalogue in a temporary directory next to a `outside/` directory
//! holding secrets, and asserts that no byte of any secret line reaches standard output or
//! standard error.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// Lines that must never appear in any output.
const SECRETS: [&str; 3] = [
    "SECRET-FIRST-LINE",
    "SECRET-SECOND-LINE",
    "SECRET-THIRD-LINE",
];

const PRELUDE: &str = "catalogue \"fixture\" version \"fixture.v1\"\ntiers [main]\n\ncode c {\n    class transient\n    flags []\n    scope provider\n}\n\nrule fallback.any {\n    code c\n    confidence low\n    tier main\n}\n";

/// A fresh directory with `outside/secret.rules` (secret lines that even parse as a syntax
/// error's offending line) and an empty `cat/`.
fn workspace(name: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!(
        "faultline-confinement-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(directory.join("outside")).unwrap();
    std::fs::create_dir_all(directory.join("cat")).unwrap();
    std::fs::write(
        directory.join("outside/secret.rules"),
        format!("{}\n{}\n{}\n", SECRETS[0], SECRETS[1], SECRETS[2]),
    )
    .unwrap();
    directory
}

fn write_catalogue(directory: &Path, includes: &[&str]) {
    let mut text = PRELUDE.to_owned();
    for include in includes {
        text.push_str(&format!("include \"{include}\"\n"));
    }
    std::fs::write(directory.join("cat/catalogue.rules"), text).unwrap();
}

fn run(args: &[&str]) -> Output {
    common::faultline(args)
}

fn all_output(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn assert_no_secret(output: &Output, context: &str) {
    let text = all_output(output);
    for secret in SECRETS {
        // Any 8-character window of the secret would be a leak.
        for window in secret.as_bytes().windows(8) {
            let window = std::str::from_utf8(window).unwrap();
            assert!(
                !text.contains(window),
                "{context}: `{window}` of a secret appears in the output:\n{text}"
            );
        }
    }
}

/// Checks `cat/` in every output format: exit 1, the codes expected (with the underlined texts
/// expected) in the JSON, and no secret anywhere.
fn check_everywhere(directory: &Path, expected: &[(&str, &str)]) -> Value {
    let cat = directory.join("cat");
    let cat = cat.to_str().unwrap();
    for format in ["human", "json", "sarif", "github"] {
        let output = run(&["check", cat, "--format", format, "--color", "never"]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{format}: {}",
            all_output(&output)
        );
        assert_no_secret(&output, format);
    }
    let output = run(&["check", cat, "--format", "json"]);
    let document: Value = serde_json::from_str(&common::stdout(&output)).unwrap();
    let found: Vec<(String, String)> = document["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["labels"][0]["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(code, text)| ((*code).to_owned(), (*text).to_owned()))
        .collect();
    assert_eq!(found, expected);
    document
}

#[test]
fn an_include_climbing_out_with_dot_dot_is_refused_unread_in_every_format() {
    let directory = workspace("dotdot");
    write_catalogue(&directory, &["../outside/secret.rules"]);
    check_everywhere(&directory, &[("FL0037", "\"../outside/secret.rules\"")]);
    // The issue's own example, whatever the machine's /etc/passwd holds.
    write_catalogue(&directory, &["../../../../../../../../etc/passwd"]);
    let output = run(&[
        "check",
        directory.join("cat").to_str().unwrap(),
        "--format",
        "github",
    ]);
    let github = common::stdout(&output);
    assert!(
        github.contains("title=FL0037 include-escapes-root"),
        "{github}"
    );
    assert!(!github.contains("root:x:"), "{github}");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn an_absolute_include_is_refused_unread() {
    let directory = workspace("absolute");
    let secret = directory.join("outside/secret.rules");
    let secret = secret.to_str().unwrap().to_owned();
    write_catalogue(&directory, &[&secret]);
    check_everywhere(&directory, &[("FL0037", &format!("\"{secret}\""))]);
    std::fs::remove_dir_all(&directory).unwrap();
}

#[cfg(unix)]
#[test]
fn an_include_through_a_symbolic_link_that_leaves_the_catalogue_is_refused_unread() {
    use std::os::unix::fs::symlink;
    let directory = workspace("symlink");
    // A linked file and a linked directory, both leading outside. (Their names are not
    // `*.rules`, so that `check`'s directory walk does not pick them up as files of the
    // catalogue: see `the_directory_walk_does_not_quote_a_linked_file_outside`.)
    std::fs::create_dir_all(directory.join("outside/dir")).unwrap();
    std::fs::copy(
        directory.join("outside/secret.rules"),
        directory.join("outside/dir/secret.inc"),
    )
    .unwrap();
    symlink(
        directory.join("outside/secret.rules"),
        directory.join("cat/link.inc"),
    )
    .unwrap();
    symlink(directory.join("outside/dir"), directory.join("cat/shared")).unwrap();
    write_catalogue(&directory, &["link.inc", "shared/secret.inc"]);
    let document = check_everywhere(
        &directory,
        &[
            ("FL0037", "\"link.inc\""),
            ("FL0037", "\"shared/secret.inc\""),
        ],
    );
    assert!(
        document["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("symbolic link")
    );
    std::fs::remove_dir_all(&directory).unwrap();
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_that_stays_inside_the_catalogue_is_followed_once() {
    use std::os::unix::fs::symlink;
    let directory = workspace("inside-link");
    std::fs::create_dir_all(directory.join("cat/real")).unwrap();
    std::fs::write(
        directory.join("cat/real/provider.rules"),
        "provider \"claude-acp\"\n",
    )
    .unwrap();
    symlink(
        directory.join("cat/real/provider.rules"),
        directory.join("cat/alias.rules"),
    )
    .unwrap();
    write_catalogue(&directory, &["real/provider.rules", "alias.rules"]);
    let output = run(&["check", directory.join("cat").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", all_output(&output));
    std::fs::remove_dir_all(&directory).unwrap();
}

#[cfg(unix)]
#[test]
fn a_root_file_linked_outside_its_directory_is_not_read() {
    use std::os::unix::fs::symlink;
    let directory = workspace("root-link");
    symlink(
        directory.join("outside/secret.rules"),
        directory.join("cat/catalogue.rules"),
    )
    .unwrap();
    let root = directory.join("cat/catalogue.rules");
    for args in [
        vec!["check", root.to_str().unwrap()],
        vec![
            "build",
            root.to_str().unwrap(),
            "-o",
            directory.join("out.flb").to_str().unwrap(),
        ],
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{}", all_output(&output));
        assert!(
            all_output(&output).contains("outside its directory"),
            "{}",
            all_output(&output)
        );
        assert_no_secret(&output, args[0]);
    }
    std::fs::remove_dir_all(&directory).unwrap();
}

/// `check DIRECTORY` walks the directory for `.rules` files and reports those no include
/// reaches (FL0035), quoting their first line. A `*.rules` symbolic link to a file outside is
/// such a file. The walk and that report are in `src/cli/check.rs` and `files::rules_files`,
/// outside this change: they need to apply `FileSystem::is_inside` (as `fmt` does) before
/// reading a file they found.
#[cfg(unix)]
#[test]
fn the_directory_walk_does_not_quote_a_linked_file_outside() {
    use std::os::unix::fs::symlink;
    let directory = workspace("walk");
    symlink(
        directory.join("outside/secret.rules"),
        directory.join("cat/link.rules"),
    )
    .unwrap();
    write_catalogue(&directory, &[]);
    let output = run(&["check", directory.join("cat").to_str().unwrap()]);
    assert_no_secret(&output, "check DIRECTORY");
    // The same when the root file itself is the link.
    std::fs::remove_file(directory.join("cat/link.rules")).unwrap();
    std::fs::remove_file(directory.join("cat/catalogue.rules")).unwrap();
    symlink(
        directory.join("outside/secret.rules"),
        directory.join("cat/catalogue.rules"),
    )
    .unwrap();
    let output = run(&["check", directory.join("cat").to_str().unwrap()]);
    assert_no_secret(&output, "check DIRECTORY with a linked root");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn build_refuses_an_escaping_include_unread() {
    let directory = workspace("build");
    write_catalogue(&directory, &["../outside/secret.rules"]);
    let bundle = directory.join("out.flb");
    let output = run(&[
        "build",
        directory.join("cat").to_str().unwrap(),
        "-o",
        bundle.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", all_output(&output));
    assert!(common::stdout(&output).contains("error[FL0037]"));
    assert!(!bundle.exists());
    assert_no_secret(&output, "build");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn included_files_that_are_not_text_are_refused_unquoted() {
    let directory = workspace("not-text");
    std::fs::write(
        directory.join("cat/latin1.txt"),
        b"SECRET-FIRST-LINE caf\xe9\nSECRET-SECOND-LINE\n",
    )
    .unwrap();
    std::fs::write(
        directory.join("cat/binary.dat"),
        b"\0\0\0\0SECRET-FIRST-LINE\nSECRET-SECOND-LINE\n",
    )
    .unwrap();
    write_catalogue(&directory, &["latin1.txt", "binary.dat"]);
    let document = check_everywhere(
        &directory,
        &[("FL0038", "\"latin1.txt\""), ("FL0038", "\"binary.dat\"")],
    );
    assert!(
        document["diagnostics"][1]["message"]
            .as_str()
            .unwrap()
            .contains("U+0000")
    );
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn a_file_that_is_not_rules_text_is_quoted_only_on_its_offending_line() {
    let directory = workspace("not-rules");
    // Inside the catalogue, so it is read; its first line is the offending one.
    std::fs::write(
        directory.join("cat/passwd"),
        "root:x:0:0:root:/root:/bin/bash\nSECRET-SECOND-LINE:x:1:1\nSECRET-THIRD-LINE:x:2:2\n",
    )
    .unwrap();
    write_catalogue(&directory, &["passwd"]);
    check_everywhere(&directory, &[("FL0001", "root")]);
    let human = run(&[
        "check",
        directory.join("cat").to_str().unwrap(),
        "--color",
        "never",
    ]);
    assert!(common::stdout(&human).contains("root:x:0:0:root:/root:/bin/bash"));
    std::fs::remove_dir_all(&directory).unwrap();
}

#[cfg(unix)]
#[test]
fn fmt_does_not_follow_a_symbolic_link_out_of_the_directory() {
    use std::os::unix::fs::symlink;
    let directory = workspace("fmt");
    std::fs::write(
        directory.join("outside/unformatted.rules"),
        "provider   \"SECRET-FIRST-LINE\"\n",
    )
    .unwrap();
    symlink(
        directory.join("outside/unformatted.rules"),
        directory.join("cat/link.rules"),
    )
    .unwrap();
    write_catalogue(&directory, &[]);
    let cat = directory.join("cat");
    let check = run(&["fmt", "--check", cat.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(2), "{}", all_output(&check));
    assert!(all_output(&check).contains("outside"));
    assert_no_secret(&check, "fmt --check");
    let write = run(&["fmt", cat.to_str().unwrap()]);
    assert_eq!(write.status.code(), Some(2), "{}", all_output(&write));
    assert_eq!(
        std::fs::read_to_string(directory.join("outside/unformatted.rules")).unwrap(),
        "provider   \"SECRET-FIRST-LINE\"\n",
        "fmt rewrote a file outside the directory"
    );
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn watch_mode_applies_the_same_confinement() {
    use std::io::BufRead as _;
    let directory = workspace("watch");
    write_catalogue(&directory, &["../outside/secret.rules"]);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("faultline"))
        .args([
            "check",
            "--watch",
            "--color",
            "never",
            directory.join("cat").to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if sender.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    // A bound so that a broken watch mode fails the test instead of hanging it.
    let mut seen = String::new();
    while !seen.contains("checked 1 catalogue") {
        match receiver.recv_timeout(std::time::Duration::from_secs(120)) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(_) => break,
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(seen.contains("error[FL0037]"), "{seen}");
    for secret in SECRETS {
        assert!(!seen.contains(secret), "{seen}");
    }
    std::fs::remove_dir_all(&directory).unwrap();
}
