//! Classification with structured evidence (issue 12): the same provider failures classified
//! from their response headers and error body, and from text alone (the body printed into
//! stderr as an agent prints it, `API Error: <status> <body>`, without headers or body), so
//! that the cost of the structured guards and body text matchers shows beside the text path.
//!
//! The inputs are the fixtures of `fixtures/classify/structured.jsonl` that carry a body.
//! `cargo bench --bench structured` prints criterion's estimates per group member; the
//! closing table gives the median per classification.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::print_stderr,
    reason = "a benchmark reports failure by panicking and prints its table"
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use faultline_runtime::{Bundle, Evidence};
use serde_json::Value;

/// The fixtures with a body, as given (headers and body) and as text only.
fn inputs() -> (Vec<Evidence>, Vec<Evidence>) {
    let path = faultline_testkit::path("fixtures/classify/structured.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let mut structured = Vec::new();
    let mut text_only = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let evidence = &case["evidence"];
        let Some(body) = evidence.get("body") else {
            continue;
        };
        structured.push(serde_json::from_value(evidence.clone()).unwrap());
        let body = match body {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let status = evidence["http_status"].as_u64().unwrap_or(500);
        let mut printed = Evidence::new();
        printed.stderr = Some(format!("API Error: {status} {body}"));
        text_only.push(printed);
    }
    (structured, text_only)
}

fn main() {
    let bundle: Bundle = faultline_testkit::catalogue_bundle();
    let (structured, text_only) = inputs();
    assert!(
        structured.len() >= 80,
        "{} structured inputs",
        structured.len()
    );
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("classify_structured");
    group.throughput(Throughput::Elements(structured.len() as u64));
    group.sample_size(20);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for (name, inputs) in [("headers_and_body", &structured), ("text_only", &text_only)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                for input in inputs.iter() {
                    black_box(bundle.classify(black_box(input)));
                }
            })
        });
    }
    group.finish();
    criterion.final_summary();
    eprintln!(
        "classify_structured: {} inputs per iteration (divide criterion's time by it for the cost of one classification)",
        structured.len()
    );
}
