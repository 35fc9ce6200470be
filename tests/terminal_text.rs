//! Rules read evidence text as a terminal shows it (docs/evidence.md, "Evidence"): every real
//! error of `fixtures/classify/` classifies the same when its process coloured it or ended its
//! lines the Windows way, and no excerpt carries an escape sequence.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

use faultline_runtime::{Classification, Evidence};
use faultline_testkit::{catalogue_bundle, documents, evidence_of};
use serde_json::Value;

/// Every fixture whose evidence is text (`stderr`), with its name.
fn text_fixtures() -> Vec<(String, Value)> {
    let mut fixtures = Vec::new();
    for (path, text) in documents("fixtures/classify", "jsonl") {
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let fixture: Value = serde_json::from_str(line).unwrap();
            let evidence = fixture["evidence"].clone();
            if evidence.get("stderr").is_some_and(Value::is_string) {
                let name = format!("{path}: {}", fixture["name"].as_str().unwrap_or(""));
                fixtures.push((name, evidence));
            }
        }
    }
    fixtures
}

/// The evidence with its `stderr` rewritten by `dress`.
fn dressed(evidence: &Value, dress: impl Fn(&str) -> String) -> Evidence {
    let mut evidence = evidence.clone();
    let text = evidence["stderr"].as_str().unwrap().to_owned();
    evidence["stderr"] = Value::String(dress(&text));
    evidence_of(&evidence)
}

/// How a process might have written a text.
type Dress = fn(&str) -> String;

fn verdict(classification: &Classification) -> (String, String, String) {
    (
        classification.code.clone(),
        format!("{:?}", classification.confidence),
        classification.rule.clone(),
    )
}

#[test]
fn coloured_and_crlf_texts_classify_as_their_plain_text() {
    let bundle = catalogue_bundle();
    let dresses: [(&str, Dress); 2] = [
        ("coloured", |text| {
            text.lines()
                .map(|line| format!("\u{1b}[2m\u{1b}[31m{line}\u{1b}[39m\u{1b}[22m"))
                .collect::<Vec<_>>()
                .join("\n")
        }),
        ("crlf", |text| text.replace('\n', "\r\n")),
    ];
    let fixtures = text_fixtures();
    assert!(fixtures.len() > 1000, "the fixtures were found");
    let mut differences = Vec::new();
    for (name, evidence) in &fixtures {
        let plain = bundle.classify(&evidence_of(evidence));
        for (dress_name, dress) in &dresses {
            let shown = bundle.classify(&dressed(evidence, dress));
            if verdict(&shown) != verdict(&plain) {
                differences.push(format!(
                    "{name} ({dress_name}): {:?} became {:?}",
                    verdict(&plain),
                    verdict(&shown)
                ));
            }
            assert!(
                !shown.excerpt.contains('\u{1b}'),
                "{name} ({dress_name}): the excerpt holds an escape"
            );
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
