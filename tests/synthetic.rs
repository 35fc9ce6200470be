//! The realistic synthetic catalogues `benches/growth.rs` measures: one with every pattern shape
//! checks clean (so each rule's example fires it and its counterexample does not), and the same
//! rules added to the repository catalogue check clean beside its own.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    reason = "a test fails by panicking"
)]

use std::collections::HashSet;
use std::path::Path;

use faultline_compiler::synthetic::{SHAPES, made_up_word, realistic_extension, realistic_files};
use faultline_dsl::MemorySources;
use faultline_runtime::Bundle;

#[test]
fn made_up_words_are_distinct() {
    let words: HashSet<String> = (0..30_000).map(made_up_word).collect();
    assert_eq!(words.len(), 30_000);
}

#[test]
fn a_realistic_catalogue_of_every_shape_checks_clean() {
    let mut sources = MemorySources::new();
    for (path, text) in realistic_files(2 * SHAPES) {
        sources.insert(format!("realistic/{path}"), text);
    }
    let compilation =
        faultline_testkit::compile_from(Path::new("realistic/catalogue.rules"), &sources);
    // Every generated rule and the fallback.
    assert_eq!(compilation.catalogue.rules.len(), 2 * SHAPES + 1);
    let bundle = Bundle::from_bytes(compilation.bundle.as_ref().unwrap()).unwrap();
    let mut evidence = faultline_runtime::Evidence::new();
    evidence.stderr = Some(format!(
        "request failed: {}_{}",
        made_up_word(7 * 3 + 1),
        made_up_word(7 * 3 + 2)
    ));
    assert_eq!(bundle.classify(&evidence).rule, "realistic.s7.r7.v1");
}

#[test]
fn realistic_rules_grow_the_repository_catalogue_cleanly() {
    let repository = faultline_testkit::compile(faultline_testkit::CATALOGUE_ROOT);
    let sources = faultline_testkit::grown_catalogue(realistic_extension(SHAPES, 10_000));
    let grown =
        faultline_testkit::compile_from(Path::new(faultline_testkit::CATALOGUE_ROOT), &sources);
    assert_eq!(
        grown.catalogue.rules.len(),
        repository.catalogue.rules.len() + SHAPES
    );
}
