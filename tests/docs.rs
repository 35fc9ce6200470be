//! The documentation's examples are true: every ```rules block of `docs/language.md` checks
//! clean (with the page's prelude) and is canonically formatted.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::path::Path;

use faultline_dsl::{MemorySources, SourceFile, format, load};

struct Block {
    info: String,
    text: String,
    line: usize,
}

fn rules_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    for (index, line) in markdown.lines().enumerate() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(info)) if info.starts_with("rules") => {
                current = Some(Block {
                    info: info.to_owned(),
                    text: String::new(),
                    line: index + 1,
                });
            }
            (Some(_), Some("")) => blocks.extend(current.take()),
            (Some(block), _) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

#[test]
fn every_language_example_checks_clean_and_is_formatted() {
    let markdown = std::fs::read_to_string(common::root().join("docs/language.md")).unwrap();
    let blocks = rules_blocks(&markdown);
    let prelude = blocks
        .iter()
        .find(|b| b.info == "rules,prelude")
        .expect("the page has a prelude")
        .text
        .clone();
    assert!(blocks.len() >= 12, "only {} examples found", blocks.len());
    for block in &blocks {
        let at = format!("docs/language.md:{}", block.line);
        let formatted = format(&SourceFile::new(at.clone(), block.text.clone())).unwrap();
        assert_eq!(
            formatted, block.text,
            "{at}: the example is not canonically formatted"
        );
        let text = match block.info.as_str() {
            "rules,prelude" | "rules,standalone" => block.text.clone(),
            "rules" => format!("{prelude}\n{}", block.text),
            other => panic!("{at}: unknown block kind `{other}`"),
        };
        let mut sources = MemorySources::new();
        sources.insert("example.rules", text);
        let (loaded, load_diagnostics) = load(Path::new("example.rules"), &sources).unwrap();
        let checked = faultline_compiler::check(&loaded);
        let problems: Vec<String> = load_diagnostics
            .iter()
            .chain(&checked.diagnostics)
            .map(|d| format!("{}: {}", d.code(), d.message()))
            .collect();
        assert!(problems.is_empty(), "{at}: {problems:#?}");
    }
}
