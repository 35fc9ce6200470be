//! Hostile patterns: every stage of compiling a pattern is bounded by the compiler's budgets
//! (regex nesting, NFA size, determinization, DFA size, the runtime's regexes), so one pattern
//! ends in a coded diagnostic on the pattern, quoting the budget in force, not in minutes of
//! work and gigabytes of memory. The CLI runs under a 1 GiB address-space limit where `prlimit`
//! exists: without the bounds, `a{10000}{10000}` alone needs several gigabytes.

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

/// A catalogue whose one text rule matches `pattern`.
fn catalogue(pattern: &str) -> String {
    format!(
        r##"catalogue "hostile" version "hostile.v1"
tiers [main, fallback]

code overloaded {{
    class transient
    flags [auto_retryable, fallback_allowed]
    scope provider
}}

code unknown {{
    class unclassified
    flags []
    scope session
}}

rule fallback.any {{
    code unknown
    confidence low
    tier fallback
}}

rule hostile.pattern.v1 {{
    code overloaded
    confidence high
    tier main
    match regex r#"{pattern}"#
    example "x"
    counterexample "fine"
}}
"##
    )
}

/// Writes a catalogue into a fresh directory under the target directory.
fn write(name: &str, text: &str) -> PathBuf {
    let directory = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("budgets-{name}"));
    std::fs::create_dir_all(&directory).unwrap();
    std::fs::write(directory.join("catalogue.rules"), text).unwrap();
    directory
}

/// Runs `faultline check --format json` on a directory, under a 1 GiB address-space limit when
/// `prlimit` is available.
fn check(directory: &Path, extra: &[&str]) -> Output {
    let binary = assert_cmd::cargo::cargo_bin("faultline");
    let mut args: Vec<String> = vec![
        "check".into(),
        directory.display().to_string(),
        "--format".into(),
        "json".into(),
    ];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let limited = std::process::Command::new("prlimit")
        .arg("--as=1073741824")
        .arg(&binary)
        .args(&args)
        .output();
    match limited {
        Ok(output) => output,
        // No `prlimit` here: the bounds are still asserted through the diagnostics.
        Err(_) => std::process::Command::new(&binary)
            .args(&args)
            .output()
            .unwrap(),
    }
}

/// The FL0109 diagnostics of a run, as (message, primary label text).
fn too_large(output: &Output) -> Vec<(String, String)> {
    assert_eq!(
        output.status.code(),
        Some(1),
        "check must end with findings, not a crash: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    document["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "FL0109")
        .map(|d| {
            let label = d["labels"]
                .as_array()
                .unwrap()
                .iter()
                .find(|label| label["primary"] == true)
                .map(|label| label["text"].as_str().unwrap().to_owned())
                .unwrap_or_default();
            (d["message"].as_str().unwrap().to_owned(), label)
        })
        .collect()
}

#[test]
fn hostile_patterns_end_in_fl0109_on_the_pattern_quoting_the_budget_in_force() {
    let huge_alternation: String = (0..500_000)
        .map(|i| format!("w{i}x"))
        .collect::<Vec<_>>()
        .join("|");
    // (name, pattern, the budget the message must quote)
    let cases: [(&str, &str, &str); 5] = [
        // A million copies of `a`: the NFA budget stops it (it used to take 6.6 GB).
        ("nested-repetition", "a{10000}{10000}", "16,777,216-byte"),
        (
            "alternation-repetition",
            "(a|b){1000}{1000}",
            "16,777,216-byte",
        ),
        ("class-repetition", "[a-z]{1000}{1000}", "16,777,216-byte"),
        // The DFA widens the gap; the exact regex the runtime confirms hits with is too large.
        ("huge-bounded-gap", r"x[^\n]{0,100000}y", "10,485,760-byte"),
        // Parsing alone would take a gigabyte: the pattern budget refuses it unparsed.
        ("huge-alternation", &huge_alternation, "262,144-byte"),
    ];
    for (name, pattern, budget) in cases {
        let directory = write(name, &catalogue(pattern));
        let found = too_large(&check(&directory, &[]));
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        let (message, label) = &found[0];
        assert_eq!(
            label,
            &format!("r#\"{pattern}\"#"),
            "{name}: label on the pattern"
        );
        assert!(message.contains(budget), "{name}: {message}");
    }
}

#[test]
fn the_dfa_budget_quoted_is_the_one_given() {
    // Exponential in an unanchored DFA, with nothing to widen.
    let pattern = format!("(?:a|b)*a{}", "(?:a|b)".repeat(10));
    let directory = write("dfa-budget", &catalogue(&pattern));
    for (given, quoted) in [("4096", "4,096-byte"), ("8192", "8,192-byte")] {
        let found = too_large(&check(&directory, &["--dfa-budget", given]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].0.contains(quoted), "{}", found[0].0);
        assert_eq!(found[0].1, format!("r#\"{pattern}\"#"));
    }
}

#[test]
fn deep_nesting_is_a_regex_error_on_the_pattern() {
    let pattern = format!("{}a{}", "(".repeat(10_000), ")".repeat(10_000));
    let directory = write("deep-nesting", &catalogue(&pattern));
    let output = check(&directory, &[]);
    assert_eq!(output.status.code(), Some(1));
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let invalid = document["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "FL0027")
        .expect("FL0027");
    assert!(invalid["message"].as_str().unwrap().contains("nest"));
}

#[test]
fn budgets_are_configuration() {
    use faultline_compiler::{Budget, Compiler};
    use faultline_dsl::MemorySources;

    let codes_of = |pattern: &str, budget: Budget| -> Vec<String> {
        let mut sources = MemorySources::new();
        sources.insert("hostile/catalogue.rules", catalogue(pattern));
        let root = Path::new("hostile/catalogue.rules");
        let (loaded, _) = faultline_dsl::load(root, &sources).unwrap();
        Compiler::new()
            .budget(budget)
            .compile(&loaded)
            .diagnostics
            .iter()
            .map(|d| d.code().to_string())
            .collect()
    };
    let codes = |budget: Budget| codes_of("(?:(?:(?:abc)))", budget);
    // The defaults accept the pattern (its example fails: FL0107 only).
    assert_eq!(codes(Budget::default()), ["FL0107"]);
    // Three groups deep is over a nesting limit of two.
    let shallow = Budget {
        nest_limit: 2,
        ..Budget::default()
    };
    assert_eq!(codes(shallow), ["FL0027"]);
    // A tiny NFA budget. A pattern the bundle gives a DFA (an ungated rule's: no word the
    // prefilter could require) does not fit, and its rule, left out, has no example to fail.
    let tiny = Budget {
        nfa_bytes: 64,
        ..Budget::default()
    };
    let found = codes_of("[ab]c[ab]", tiny);
    assert!(found.contains(&"FL0109".to_owned()), "{found:?}");
    assert!(!found.contains(&"FL0107".to_owned()), "{found:?}");
    // A gated rule's pattern gets no DFA, only its regex (under its own budget): the bundle
    // keeps it, and the analysis, whose automata do not fit, says what it could not decide.
    let found = codes(tiny);
    assert!(!found.contains(&"FL0109".to_owned()), "{found:?}");
    assert!(found.contains(&"FL0108".to_owned()), "{found:?}");
    // Patterns and literals longer than the pattern budget are refused before parsing.
    let short = Budget {
        pattern_bytes: 8,
        ..Budget::default()
    };
    assert_eq!(codes(short), ["FL0109"]);
}
