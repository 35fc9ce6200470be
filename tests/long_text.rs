//! Rules match the whole text up to the documented bound (the last mebibyte,
//! `faultline_runtime::MAX_MATCHED_BYTES`), and the excerpt stays bounded and shows the
//! error that matched (issue 10, item 5; docs/evidence.md states the bounds).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::sync::LazyLock;

use faultline_compiler::reference::Reference;
use faultline_compiler::{Compilation, Compiler};
use faultline_runtime::MAX_EXCERPT_BYTES;
use faultline_runtime::MAX_MATCHED_BYTES;
use faultline_runtime::{Bundle, Confidence, Evidence, Phase};

use common::FileSystem;

struct Engines {
    bundle: Bundle,
    reference: Reference,
    _compilation: Compilation,
}

static ENGINES: LazyLock<Engines> = LazyLock::new(|| {
    let (loaded, _) = faultline_dsl::load(
        &common::root().join("catalogue/catalogue.rules"),
        &FileSystem,
    )
    .unwrap();
    let compilation = Compiler::new().compile(&loaded);
    assert!(!compilation.has_errors(), "{:#?}", compilation.diagnostics);
    let bundle = Bundle::from_bytes(compilation.bundle.as_ref().unwrap()).unwrap();
    let reference = Reference::new(
        &compilation.catalogue,
        compilation.priority.as_ref().unwrap(),
    )
    .unwrap();
    Engines {
        bundle,
        reference,
        _compilation: compilation,
    }
});

/// `bytes` of ordinary agent log, whole lines.
fn log(bytes: usize) -> String {
    let line = "2026-09-01T10:00:00Z INFO worker: compiled 12 modules, 0 warnings, cache warm\n";
    line.repeat(bytes.div_ceil(line.len()))
}

const OVERLOADED: &str = r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_***"}"#;

fn streaming(stderr: String) -> Evidence {
    Evidence::new()
        .with_phase(Phase::Streaming)
        .with_provider_id("claude-acp".to_owned())
        .with_stderr(stderr)
}

/// The compiled bundle and the reference interpreter agree, and the gate is sound.
fn agree(evidence: &Evidence) {
    let compiled = ENGINES.bundle.classify(evidence);
    let reference = ENGINES.reference.classify(evidence).map(|(rule, _)| rule);
    assert_eq!(Some(compiled.rule.clone()), reference);
    if !ENGINES.bundle.may_classify(evidence) {
        assert_eq!(compiled.confidence, Confidence::Low);
    }
    assert!(compiled.excerpt.len() <= MAX_EXCERPT_BYTES);
}

// Issue 10, item 5: 6 KB of ordinary log, then the real error, used to be a low-confidence
// fallback because only the first 4096 bytes were matched.
#[test]
fn a_late_error_after_6kb_of_log_classifies() {
    let evidence = streaming(format!("{}{OVERLOADED}", log(6 * 1024)));
    let classification = ENGINES.bundle.classify(&evidence);
    assert_eq!(classification.code, "provider_overloaded");
    assert_eq!(classification.rule, "anthropic.overloaded.529.v1");
    assert_eq!(classification.confidence, Confidence::High);
    // The excerpt is bounded and shows the error that matched, from its line start.
    assert!(classification.excerpt.len() <= MAX_EXCERPT_BYTES);
    assert!(
        classification.excerpt.contains("API Error: 529"),
        "{}",
        classification.excerpt
    );
    assert!(classification.excerpt.starts_with("2026-09-01"));
    assert!(ENGINES.bundle.may_classify(&evidence));
    agree(&evidence);
}

#[test]
fn an_early_error_in_a_long_text_is_shown_by_the_excerpt() {
    let evidence = streaming(format!("{OVERLOADED}\n{}", log(20 * 1024)));
    let classification = ENGINES.bundle.classify(&evidence);
    assert_eq!(classification.rule, "anthropic.overloaded.529.v1");
    assert!(classification.excerpt.starts_with("API Error: 529"));
    assert_eq!(classification.excerpt.len(), MAX_EXCERPT_BYTES);
    // With no text match (the fallback), the excerpt is the end of the text.
    let fallback = streaming(format!("first line\n{}last line", log(20 * 1024)));
    let classification = ENGINES.bundle.classify(&fallback);
    assert_eq!(classification.confidence, Confidence::Low);
    assert!(classification.excerpt.ends_with("last line"));
    assert!(classification.excerpt.len() <= MAX_EXCERPT_BYTES);
}

#[test]
fn the_tail_is_matched_up_to_the_bound_and_no_further() {
    // The error ends a text three times the bound: it is in the tail, so it is matched.
    let late = streaming(format!("{}{OVERLOADED}", log(3 * MAX_MATCHED_BYTES)));
    let classification = ENGINES.bundle.classify(&late);
    assert_eq!(classification.rule, "anthropic.overloaded.529.v1");
    assert!(classification.excerpt.contains("API Error: 529"));
    assert!(ENGINES.bundle.may_classify(&late));
    agree(&late);
    // The error starts a text longer than the bound: it is beyond it, so it is not matched.
    let early = streaming(format!("{OVERLOADED}\n{}", log(MAX_MATCHED_BYTES + 1024)));
    let classification = ENGINES.bundle.classify(&early);
    assert_eq!(classification.confidence, Confidence::Low);
    assert!(!classification.excerpt.contains("API Error"));
    agree(&early);
}

#[test]
fn the_tail_spans_both_streams() {
    // The error in stderr, a long stdout after it: the joined text's tail holds both only
    // while stdout is shorter than the bound.
    let evidence = {
        let mut built = streaming(OVERLOADED.to_owned());
        built.stdout = Some(log(64 * 1024));
        built
    };
    assert_eq!(
        ENGINES.bundle.classify(&evidence).rule,
        "anthropic.overloaded.529.v1"
    );
    agree(&evidence);
    let evidence = {
        let mut built = streaming(OVERLOADED.to_owned());
        built.stdout = Some(log(MAX_MATCHED_BYTES + 10));
        built
    };
    assert_eq!(
        ENGINES.bundle.classify(&evidence).confidence,
        Confidence::Low
    );
    agree(&evidence);
}

#[test]
fn raw_view_rules_read_the_tail_and_their_excerpt_shows_the_match() {
    let evidence = Evidence::new().with_phase(Phase::SessionInit).with_stderr(format!(
            "{}npm error code ENOTEMPTY\nnpm error path /home/alice/.npm/_npx/0123abcd/node_modules/x\nnpm error errno -66",
            log(9 * 1024)
        ));
    let classification = ENGINES.bundle.classify(&evidence);
    assert_eq!(classification.rule, "npm.enotempty.npx.v1");
    assert_eq!(
        classification.remediation.as_deref(),
        Some("/home/alice/.npm/_npx/0123abcd")
    );
    assert!(
        classification
            .excerpt
            .contains("npm error code ENOTEMPTY\nnpm error path /home/<redacted>/[path-redacted]"),
        "{}",
        classification.excerpt
    );
    assert!(!classification.excerpt.contains("alice"));
    agree(&evidence);
}

#[test]
fn every_example_padded_with_log_agrees_with_the_reference() {
    let compilation = &ENGINES._compilation;
    let mut checked = 0;
    for rule in &compilation.catalogue.rules {
        for example in rule.examples.iter().chain(&rule.counterexamples) {
            let evidence = example.evidence.clone();
            let Some(text) = evidence.stderr.clone().or(evidence.stdout.clone()) else {
                continue;
            };
            for padding in [5 * 1024, 70 * 1024] {
                let padded = {
                    let mut built = evidence.clone();
                    built.stderr = Some(format!("{}{text}", log(padding)));
                    built.stdout = None;
                    built
                };
                agree(&padded);
                checked += 1;
            }
        }
    }
    assert!(checked > 300, "only {checked} padded examples");
}
