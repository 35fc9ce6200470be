//! Properties of the front end over generated input: it never panics, whatever the text, and
//! the formatter is idempotent on everything it accepts.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::path::Path;

use faultline_dsl::{MemorySources, SourceFile, format, load, parse};
use proptest::prelude::*;

/// Runs every front-end stage on one file; panics only through a failed property.
fn run_front_end(text: &str) {
    let source = SourceFile::new("generated.rules", text);
    let (_, diagnostics) = parse(&source);
    for diagnostic in &diagnostics {
        let label = diagnostic
            .primary_label()
            .expect("every syntax diagnostic points somewhere");
        assert!(label.span().end <= text.len());
        assert!(!faultline_dsl::render::human(diagnostic, Default::default()).is_empty());
    }
    if let Ok(once) = format(&source) {
        let twice = format(&SourceFile::new("generated.rules", once.clone()))
            .expect("formatted text parses");
        assert_eq!(once, twice, "formatting is not idempotent");
    }
    let mut sources = MemorySources::new();
    sources.insert("generated.rules", text);
    let (loaded, _) = load(Path::new("generated.rules"), &sources).expect("the file is in memory");
    let checked = faultline_compiler::check(&loaded);
    let _ = faultline_dsl::render::json(&checked.diagnostics);
    let _ = faultline_dsl::render::sarif(&checked.diagnostics, "test");
}

const TOKENS: &[&str] = &[
    "catalogue",
    "version",
    "include",
    "tiers",
    "provider",
    "code",
    "rule",
    "class",
    "flags",
    "confidence",
    "scope",
    "tier",
    "rank",
    "before",
    "after",
    "when",
    "in",
    "present",
    "match",
    "unless",
    "regex",
    "prefix",
    "whole",
    "contains",
    "ignore_case",
    "suffix",
    "bytes",
    "group",
    "where",
    "on",
    "raw",
    "timing",
    "remediation",
    "capture",
    "example",
    "counterexample",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    "==",
    "..=",
    "///",
    "//",
    "\"",
    "r\"",
    "r#\"",
    "\"#",
    "\\",
    "\n",
    " ",
    "\t",
    "a.b.v1",
    "http.529",
    "phase",
    "http_status",
    "529",
    "-1",
    "99999999999999999999",
    "\"claude-acp\"",
    "r\"(?i)\\b529\\b\"",
    "r\"(\"",
    "\"\\q\"",
    "\"\\u{110000}\"",
    "é",
    "\u{2003}",
    "\r\n",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..80).prop_map(|tokens| tokens.join(" "))
}

fn mutated_catalogue() -> impl Strategy<Value = String> {
    let files: Vec<String> = common::rules_files("catalogue")
        .into_iter()
        .chain(common::rules_files("fixtures/valid"))
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    (
        prop::sample::select(files),
        prop::collection::vec((any::<prop::sample::Index>(), 0usize..12, ".{0,6}"), 1..6),
    )
        .prop_map(|(text, edits)| common::apply_edits(text, edits))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        run_front_end(&text);
    }

    #[test]
    fn token_soup_never_panics(text in token_soup()) {
        run_front_end(&text);
    }

    #[test]
    fn mutated_catalogues_never_panic(text in mutated_catalogue()) {
        run_front_end(&text);
    }
}
