//! Every mistake in one run: rules with errors (front-end errors, a priority cycle, a pattern
//! over its budget) are left out, and the collision analysis still runs on every rule that is
//! well-formed. A rule whose order depends on a rule with errors is not judged in pairs until
//! that rule is fixed, so no finding depends on an order the author has not finished writing.
//! (The snapshots of `fixtures/diagnostics/FL0102-tie-beside-a-check-error.rules` and
//! `FL0001-syntax-error-beside-a-tie.rules` show a tie reported beside a check error and beside
//! a syntax error.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;

const HEADER: &str = r#"catalogue "mistakes" version "mistakes.v1"
tiers [main, fallback]

code overloaded {
    class transient
    flags [auto_retryable, fallback_allowed]
    scope provider
}

code rate_limited {
    class transient
    flags [auto_retryable, fallback_allowed]
    scope account
}

code unknown {
    class unclassified
    flags []
    scope session
}

rule fallback.any {
    code unknown
    confidence low
    tier fallback
}
"#;

/// A text rule: `extra` holds more clauses (order relations, a broken clause).
fn rule(id: &str, code: &str, word: &str, extra: &str) -> String {
    format!(
        "\nrule {id} {{\n    code {code}\n    confidence high\n    tier main\n{extra}    match regex r\"(?i)\\b{word}\\b\"\n    example \"{word}\"\n    counterexample \"fine\"\n}}\n"
    )
}

/// Two rules that tie on "delta epsilon": the finding every case must still report.
fn tie_pair() -> String {
    rule("mistakes.delta.v1", "overloaded", "delta", "")
        + &rule("mistakes.epsilon.v1", "rate_limited", "epsilon", "")
}

fn write(name: &str, text: &str) -> PathBuf {
    let directory = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("mistakes-{name}"));
    std::fs::create_dir_all(&directory).unwrap();
    std::fs::write(directory.join("catalogue.rules"), text).unwrap();
    directory
}

/// The diagnostics of `faultline check`, as (code, message).
fn check(directory: &Path) -> Vec<(String, String)> {
    let output = common::faultline(&[
        "check",
        &directory.display().to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    document["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn has(found: &[(String, String)], code: &str, mentions: &[&str]) -> bool {
    found.iter().any(|(c, message)| {
        c == code
            && mentions
                .iter()
                .all(|id| message.contains(&format!("`{id}`")))
    })
}

#[test]
fn a_tie_is_reported_beside_a_rule_with_errors() {
    let text = String::from(HEADER)
        + &tie_pair()
        + &rule(
            "mistakes.broken.v1",
            "overloaded",
            "broken",
            "    when phase = lunch\n",
        );
    let found = check(&write("check-error", &text));
    assert!(has(&found, "FL0017", &[]), "{found:#?}");
    assert!(
        has(
            &found,
            "FL0102",
            &["mistakes.delta.v1", "mistakes.epsilon.v1"]
        ),
        "{found:#?}"
    );
}

#[test]
fn rules_ordered_through_a_rule_with_errors_are_not_judged_against_each_other() {
    // `alpha before broken`, `broken before gamma`: once `broken` is fixed, `alpha` precedes
    // `gamma`, so their collision ("alpha gamma") is no tie. Without `broken` nothing orders
    // them, and a tie reported now would be wrong.
    let text = String::from(HEADER)
        + &tie_pair()
        + &rule(
            "mistakes.alpha.v1",
            "overloaded",
            "alpha",
            "    before mistakes.broken.v1\n",
        )
        + &rule(
            "mistakes.broken.v1",
            "overloaded",
            "broken",
            "    before mistakes.gamma.v1\n    when phase = lunch\n",
        )
        + &rule("mistakes.gamma.v1", "rate_limited", "gamma", "");
    let found = check(&write("relations", &text));
    assert!(has(&found, "FL0017", &[]), "{found:#?}");
    assert!(
        !has(
            &found,
            "FL0102",
            &["mistakes.alpha.v1", "mistakes.gamma.v1"]
        ),
        "{found:#?}"
    );
    assert!(
        has(
            &found,
            "FL0102",
            &["mistakes.delta.v1", "mistakes.epsilon.v1"]
        ),
        "{found:#?}"
    );
    // Fixed, the catalogue has the one tie, and alpha and gamma are ordered.
    let fixed = text.replace("    when phase = lunch\n", "");
    let found = check(&write("relations-fixed", &fixed));
    assert!(
        !has(
            &found,
            "FL0102",
            &["mistakes.alpha.v1", "mistakes.gamma.v1"]
        ),
        "{found:#?}"
    );
    assert!(has(
        &found,
        "FL0102",
        &["mistakes.delta.v1", "mistakes.epsilon.v1"]
    ));
}

#[test]
fn a_tie_is_reported_beside_a_priority_cycle() {
    let text = String::from(HEADER)
        + &tie_pair()
        + &rule(
            "mistakes.first.v1",
            "overloaded",
            "first",
            "    before mistakes.second.v1\n",
        )
        + &rule(
            "mistakes.second.v1",
            "overloaded",
            "second",
            "    before mistakes.first.v1\n",
        );
    let found = check(&write("cycle", &text));
    assert!(has(&found, "FL0101", &["mistakes.first.v1"]), "{found:#?}");
    assert!(
        has(
            &found,
            "FL0102",
            &["mistakes.delta.v1", "mistakes.epsilon.v1"]
        ),
        "{found:#?}"
    );
}

#[test]
fn a_tie_is_reported_beside_a_pattern_over_its_budget() {
    let text = String::from(HEADER)
        + &tie_pair()
        + "\nrule mistakes.huge.v1 {\n    code overloaded\n    confidence high\n    tier main\n    match regex r\"a{10000}{10000}\"\n    example \"a\"\n    counterexample \"fine\"\n}\n";
    let found = check(&write("budget", &text));
    assert!(has(&found, "FL0109", &["mistakes.huge.v1"]), "{found:#?}");
    assert!(
        has(
            &found,
            "FL0102",
            &["mistakes.delta.v1", "mistakes.epsilon.v1"]
        ),
        "{found:#?}"
    );
    // The rule left out has no example to fail.
    assert!(!has(&found, "FL0107", &["mistakes.huge.v1"]), "{found:#?}");
}
