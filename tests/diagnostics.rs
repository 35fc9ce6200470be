//! Every diagnostic code has a fixture under `fixtures/diagnostics/` that triggers it.
//!
//! Each fixture states what it expects in lines `// expect FLxxxx at `underlined text``; the
//! test runs the CLI on it, checks that every expectation is met by a diagnostic with that code,
//! a primary label over exactly that text and a help line, and snapshots the human rendering.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::collections::BTreeSet;

use common::{faultline, relative, root, stdout};
use faultline_dsl::Code;
use serde_json::Value;

struct Expectation {
    code: String,
    underlined: String,
}

fn expectations(text: &str) -> Vec<Expectation> {
    text.lines()
        .filter_map(|line| line.strip_prefix("// expect "))
        .map(|rest| {
            let (code, underlined) = rest
                .split_once(" at `")
                .expect("`// expect FLxxxx at `text``");
            let underlined = underlined
                .strip_suffix('`')
                .expect("expectation ends with a backtick");
            Expectation {
                code: code.to_owned(),
                underlined: underlined.to_owned(),
            }
        })
        .collect()
}

/// Fixture paths (files, or directories for catalogue-level codes), sorted.
fn fixtures() -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(root().join("fixtures/diagnostics"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("FL")
        })
        .collect();
    found.sort();
    found
}

fn fixture_text(path: &std::path::Path) -> String {
    if path.is_dir() {
        std::fs::read_to_string(path.join("catalogue.rules")).unwrap()
    } else {
        std::fs::read_to_string(path).unwrap()
    }
}

#[test]
fn every_fixture_produces_its_expected_diagnostics() {
    for path in fixtures() {
        let name = relative(&path);
        let text = fixture_text(&path);
        let expected = expectations(&text);
        assert!(!expected.is_empty(), "{name} states no `// expect` line");
        // A fixture may need a budget lowered to trigger its finding: `// args: --flag value`.
        let extra: Vec<&str> = text
            .lines()
            .find_map(|line| line.strip_prefix("// args: "))
            .map(|args| args.split_whitespace().collect())
            .unwrap_or_default();
        let run = |format: &[&str]| {
            let mut args = vec!["check", name.as_str()];
            args.extend(format);
            args.extend(&extra);
            faultline(&args)
        };
        let json = run(&["--format", "json", "--deny-warnings"]);
        assert_eq!(json.status.code(), Some(1), "{name}: check should fail");
        let document: Value = serde_json::from_str(&stdout(&json)).unwrap();
        let diagnostics = document["diagnostics"].as_array().unwrap();
        for expectation in &expected {
            let found = diagnostics.iter().any(|d| {
                d["code"] == expectation.code.as_str()
                    && d["labels"].as_array().unwrap().iter().any(|label| {
                        label["primary"] == true && label["text"] == expectation.underlined.as_str()
                    })
            });
            assert!(
                found,
                "{name}: no {} underlining `{}`; got {:#?}",
                expectation.code,
                expectation.underlined,
                diagnostics
                    .iter()
                    .map(|d| (d["code"].clone(), d["labels"][0]["text"].clone()))
                    .collect::<Vec<_>>()
            );
        }
        for diagnostic in diagnostics {
            assert!(
                diagnostic["help"].as_str().is_some_and(|h| !h.is_empty()),
                "{name}: {diagnostic} has no help"
            );
            assert!(
                !diagnostic["labels"].as_array().unwrap().is_empty(),
                "{name}: {diagnostic} has no label"
            );
        }
        let human = run(&["--color", "never"]);
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        insta::assert_snapshot!(stem.clone(), stdout(&human));
        insta::assert_json_snapshot!(format!("{stem}.json"), document);
    }
}

/// Codes no catalogue is known to trigger: each reports a failure that every check before it
/// rules out (their registry entries say so), so they are tested where the failure can be built
/// directly, by unit tests of faultline-compiler (`lower::tests`, `compile::tests`).
const UNREACHABLE_FROM_SOURCE: &[Code] = &[Code::PatternNotCompiled, Code::BundleDoesNotLoad];

#[test]
fn every_registered_code_has_a_fixture_a_snapshot_and_a_doc_entry() {
    let fixtures = fixtures();
    let docs = std::fs::read_to_string(root().join("docs/diagnostics.md")).unwrap();
    for code in Code::ALL {
        assert!(
            docs.contains(&format!("## {}", code.as_str())),
            "{code} has no entry in docs/diagnostics.md"
        );
        if UNREACHABLE_FROM_SOURCE.contains(code) {
            continue;
        }
        let prefix = format!("{}-", code.as_str());
        let triggering: Vec<_> = fixtures
            .iter()
            .filter(|path| {
                path.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&prefix)
            })
            .collect();
        assert!(
            !triggering.is_empty(),
            "{code} has no fixture named fixtures/diagnostics/{prefix}<what>.rules"
        );
        for path in triggering {
            assert!(
                expectations(&fixture_text(path))
                    .iter()
                    .any(|e| e.code == code.as_str()),
                "{} does not expect {code}",
                relative(path)
            );
            let stem = path.file_stem().unwrap().to_string_lossy();
            let snapshot = root().join(format!("tests/snapshots/diagnostics__{stem}.snap"));
            assert!(
                snapshot.is_file(),
                "{code}: missing snapshot {}",
                relative(&snapshot)
            );
        }
    }
}

#[test]
fn no_snapshot_is_orphaned() {
    let stems: BTreeSet<String> = fixtures()
        .iter()
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for entry in std::fs::read_dir(root().join("tests/snapshots")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if let Some(stem) = name
            .strip_prefix("diagnostics__")
            .and_then(|n| n.strip_suffix(".snap"))
        {
            let stem = stem.strip_suffix(".json").unwrap_or(stem);
            assert!(stems.contains(stem), "snapshot {name} has no fixture");
        }
    }
}
