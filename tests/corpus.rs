//! The catalogue against ordinary coding-agent output: narration, source code and tool output
//! (`fixtures/corpus/*.jsonl`, made by `fixtures/corpus/generate.py`; its README says what is in
//! it). Nothing there is a failure, so every chunk should classify as the phase fallback.
//!
//! Prints a report (per corpus file: chunks, and non-fallback hits by rule and confidence; run
//! with `cargo test --test corpus -- --nocapture`). Fails when the corpus is smaller than 10,000
//! chunks, or when the high-confidence hits differ from the list in the section
//! `## Known hits in ordinary agent output` of `catalogue/README.md`, in either direction: every
//! high-confidence hit must be listed with its reason, and every listed entry must still hit.
//! Medium and low hits are reported, not failed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stdout,
    reason = "integration tests report failure by panicking; this one also prints its report"
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use faultline_runtime::{Bundle, Evidence};

const CORPUS: &[&str] = &["prose.jsonl", "code.jsonl", "tool-output.jsonl"];
const FALLBACKS: &[&str] = &["phase.poststart.unknown", "phase.prestart.unknown"];
const SECTION: &str = "## Known hits in ordinary agent output";
/// The share of the corpus the gate must reject without redaction or automata.
const MINIMUM_GATED_OUT_PERCENT: usize = 85;
const MINIMUM_CHUNKS: usize = 10_000;

fn bundle() -> Bundle {
    common::catalogue_bundle()
}

/// (corpus file, line number, rule id) of one hit.
type Hit = (String, usize, String);

/// The `(file, line, rule)` rows of the known-hits table in `catalogue/README.md`, each with
/// its reason (which must not be empty).
fn known_hits() -> BTreeMap<Hit, String> {
    let readme = std::fs::read_to_string(common::root().join("catalogue/README.md")).unwrap();
    let Some(start) = readme.find(SECTION) else {
        return BTreeMap::new();
    };
    let section = &readme[start + SECTION.len()..];
    let section = section.find("\n## ").map_or(section, |end| &section[..end]);
    let mut known = BTreeMap::new();
    for line in section.lines().filter(|l| l.trim_start().starts_with('|')) {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(|cell| cell.trim().trim_matches('`'))
            .collect();
        let [file, number, rule, reason, ..] = cells.as_slice() else {
            continue;
        };
        let Ok(number) = number.parse::<usize>() else {
            continue; // the header and the separator row
        };
        assert!(
            !reason.is_empty(),
            "{SECTION}: {file}:{number} ({rule}) gives no reason"
        );
        let previous = known.insert(
            ((*file).to_owned(), number, (*rule).to_owned()),
            (*reason).to_owned(),
        );
        assert!(
            previous.is_none(),
            "{SECTION}: {file}:{number} ({rule}) is listed twice"
        );
    }
    known
}

#[test]
fn ordinary_agent_output_classifies_as_the_phase_fallback() {
    let bundle = bundle();
    let mut total = 0;
    let mut gated_out = 0;
    let mut high: BTreeMap<Hit, String> = BTreeMap::new();
    let mut report = String::from("# Ordinary agent output against the catalogue\n");
    for file in CORPUS {
        let data =
            std::fs::read_to_string(common::root().join("fixtures/corpus").join(file)).unwrap();
        let mut chunks = 0;
        let mut by_rule: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (index, line) in data.lines().enumerate() {
            let evidence: Evidence = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("fixtures/corpus/{file}:{}: {e}", index + 1));
            chunks += 1;
            let result = bundle.classify(&evidence);
            if !bundle.may_classify(&evidence) {
                gated_out += 1;
                assert_eq!(
                    result.confidence.to_string(),
                    "low",
                    "fixtures/corpus/{file}:{}: the gate rejected a `{}` chunk",
                    index + 1,
                    result.rule
                );
            }
            if FALLBACKS.contains(&result.rule.as_str()) {
                continue;
            }
            let confidence = result.confidence.to_string();
            *by_rule
                .entry((result.rule.clone(), confidence.clone()))
                .or_default() += 1;
            if confidence == "high" {
                let excerpt: String = result.excerpt.chars().take(100).collect();
                high.insert(
                    ((*file).to_owned(), index + 1, result.rule.clone()),
                    excerpt.replace('\n', "⏎"),
                );
            }
        }
        total += chunks;
        let hits: usize = by_rule.values().sum();
        report.push_str(&format!(
            "\n{file}: {chunks} chunks, {hits} non-fallback ({:.2}%)\n",
            hits as f64 * 100.0 / chunks.max(1) as f64
        ));
        for ((rule, confidence), count) in &by_rule {
            report.push_str(&format!("  {count:>5}  {confidence:<6}  {rule}\n"));
        }
    }
    report.push_str(&format!(
        "\ntotal: {total} chunks, {} high-confidence hits; the cheap gate (`may_classify`) \
         rejects {gated_out} ({:.1}%) without redaction or automata\n",
        high.len(),
        gated_out as f64 * 100.0 / total.max(1) as f64
    ));
    println!("{report}");

    // Ordinary output is the common case: the gate must turn most of it away cheaply. With
    // prefilter conjuncts (bundle format 7) it rejects about 91%; one word per alternative let
    // 46% through.
    assert!(
        gated_out * 100 >= total * MINIMUM_GATED_OUT_PERCENT,
        "the gate rejects only {gated_out} of {total} ordinary chunks (at least \
         {MINIMUM_GATED_OUT_PERCENT}% expected)"
    );
    assert!(
        total >= MINIMUM_CHUNKS,
        "the corpus has {total} chunks, fewer than {MINIMUM_CHUNKS}"
    );

    let known = known_hits();
    let listed: BTreeSet<&Hit> = known.keys().collect();
    let found: BTreeSet<&Hit> = high.keys().collect();
    let unlisted: Vec<String> = found
        .difference(&listed)
        .map(|hit| {
            let (file, line, rule) = *hit;
            format!(
                "| `{file}` | {line} | `{rule}` | REASON (excerpt: {}) |",
                high[*hit]
            )
        })
        .collect();
    let stale: Vec<String> = listed
        .difference(&found)
        .map(|(file, line, rule)| format!("{file}:{line} {rule}"))
        .collect();
    assert!(
        unlisted.is_empty() && stale.is_empty(),
        "the high-confidence hits on ordinary agent output differ from `{SECTION}` in \
         catalogue/README.md.\nHits not listed there ({}): a genuine error message does not \
         belong in the corpus (remove it from fixtures/corpus/generate.py); a false positive \
         is listed with its reason:\n{}\nListed entries that no longer hit ({}):\n{}",
        unlisted.len(),
        unlisted.join("\n"),
        stale.len(),
        stale.join("\n"),
    );
}
