//! Every renderer's columns and offsets select exactly the underlined text, counted in the unit
//! `docs/diagnostics.md` states for it, on a file with non-ASCII text before and inside the
//! labels: SARIF in UTF-16 code units (the run declares `columnKind`), JSON, GitHub annotations
//! and the human report's location in characters, JSON offsets in bytes (issue 10, item 13).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use common::{faultline, root, stdout};
use serde_json::Value;

const FIXTURE: &str = "fixtures/malformed/non-ascii-columns.rules";

fn text() -> String {
    std::fs::read_to_string(root().join(FIXTURE)).unwrap()
}

/// `count` UTF-16 code units of `text` from `start`.
fn utf16_slice(text: &str, start: usize, count: usize) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    String::from_utf16(&units[start..start + count]).unwrap()
}

/// Characters `start..end` (0-based) of `line`.
fn char_slice(line: &str, start: usize, end: usize) -> String {
    line.chars().skip(start).take(end - start).collect()
}

fn json() -> Value {
    let output = faultline(&["check", FIXTURE, "--format", "json"]);
    assert_eq!(output.status.code(), Some(1));
    serde_json::from_str(&stdout(&output)).unwrap()
}

#[test]
fn sarif_counts_utf16_code_units_and_selects_the_underlined_text() {
    let output = faultline(&["check", FIXTURE, "--format", "sarif"]);
    assert_eq!(output.status.code(), Some(1));
    let log: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let run = &log["runs"][0];
    assert_eq!(run["columnKind"], "utf16CodeUnits");
    let text = text();
    let lines: Vec<&str> = text.lines().collect();
    let mut regions = Vec::new();
    for result in run["results"].as_array().unwrap() {
        for location in result["locations"]
            .as_array()
            .unwrap()
            .iter()
            .chain(result["relatedLocations"].as_array().unwrap())
        {
            let region = &location["physicalLocation"]["region"];
            let snippet = region["snippet"]["text"].as_str().unwrap();
            let offset = region["charOffset"].as_u64().unwrap() as usize;
            let length = region["charLength"].as_u64().unwrap() as usize;
            assert_eq!(utf16_slice(&text, offset, length), snippet, "{region}");
            let line = region["startLine"].as_u64().unwrap() as usize;
            assert_eq!(region["endLine"], line as u64, "one-line labels here");
            let start = region["startColumn"].as_u64().unwrap() as usize;
            let end = region["endColumn"].as_u64().unwrap() as usize;
            assert_eq!(
                utf16_slice(lines[line - 1], start - 1, end - start),
                snippet,
                "{region}"
            );
            regions.push(region.clone());
        }
    }
    // The label after `"café-😀", ` and five lines holding non-ASCII text.
    assert!(
        regions
            .iter()
            .any(|region| region["snippet"]["text"] == "\"日本-😀\""),
        "{regions:#?}"
    );
    insta::assert_json_snapshot!("non-ascii-sarif-regions", regions);
}

#[test]
fn json_columns_count_characters_and_offsets_count_bytes() {
    let text = text();
    let lines: Vec<&str> = text.lines().collect();
    let document = json();
    let diagnostics = document["diagnostics"].as_array().unwrap();
    assert!(!diagnostics.is_empty());
    for diagnostic in diagnostics {
        for label in diagnostic["labels"].as_array().unwrap() {
            let underlined = label["text"].as_str().unwrap();
            let start = label["start"]["offset"].as_u64().unwrap() as usize;
            let end = label["end"]["offset"].as_u64().unwrap() as usize;
            assert_eq!(&text[start..end], underlined, "{label}");
            let line = label["start"]["line"].as_u64().unwrap() as usize;
            let from = label["start"]["column"].as_u64().unwrap() as usize;
            let to = label["end"]["column"].as_u64().unwrap() as usize;
            assert_eq!(
                char_slice(lines[line - 1], from - 1, to - 1),
                underlined,
                "{label}"
            );
        }
    }
}

#[test]
fn github_annotations_and_the_human_location_use_the_json_columns() {
    let document = json();
    let github = stdout(&faultline(&["check", FIXTURE, "--format", "github"]));
    let human = stdout(&faultline(&["check", FIXTURE, "--color", "never"]));
    for diagnostic in document["diagnostics"].as_array().unwrap() {
        let (start, end) = (&diagnostic["start"], &diagnostic["end"]);
        let position = format!(
            "line={},col={},endLine={},endColumn={}",
            start["line"], start["column"], end["line"], end["column"]
        );
        assert!(github.contains(&position), "{position} not in {github}");
        let location = format!("{FIXTURE}:{}:{}]", start["line"], start["column"]);
        assert!(human.contains(&location), "{location} not in {human}");
    }
}
