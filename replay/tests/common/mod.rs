//! What both replay test binaries read: the repository's replay corpus, loaded and linted.
#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the helpers"
)]

use faultline_replay::fixture::{Fixture, FixtureError, load_corpus};

/// The corpus files of `fixtures/replay/`, as `(path, text)`.
pub fn corpus_files() -> Vec<(String, String)> {
    faultline_testkit::documents("fixtures/replay", "json")
}

/// The repository's replay corpus; every fixture must load.
pub fn corpus() -> Vec<Fixture> {
    match load_corpus(corpus_files()) {
        Ok(corpus) => corpus.fixtures().to_vec(),
        Err(errors) => panic!("the corpus does not load:\n{}", render(&errors)),
    }
}

/// Load errors, one per line.
pub fn render(errors: &[FixtureError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
