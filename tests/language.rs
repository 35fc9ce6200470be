//! The language end to end: syntax trees of valid files, and the formatter over every `.rules`
//! file in the repository (idempotent, comment-preserving, meaning-preserving).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use common::{relative, root, rules_files};
use faultline_dsl::{SourceFile, format, parse};
use serde_json::Value;

#[test]
fn valid_fixtures_check_clean_and_their_syntax_trees_are_stable() {
    for path in std::fs::read_dir(root().join("fixtures/valid"))
        .unwrap()
        .map(|e| e.unwrap().path())
    {
        if path.extension().is_none_or(|e| e != "rules") {
            continue;
        }
        let name = relative(&path);
        let output = common::faultline(&["check", &name]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}",
            common::stdout(&output)
        );
        let source = SourceFile::new(name.clone(), std::fs::read_to_string(&path).unwrap());
        let (tree, diagnostics) = parse(&source);
        assert!(diagnostics.is_empty());
        insta::assert_yaml_snapshot!(
            path.file_stem().unwrap().to_string_lossy().into_owned(),
            tree
        );
    }
}

/// The syntax tree without positions, with each block's clauses in a canonical order: what a
/// file means, independent of layout.
fn meaning(text: &str) -> (Value, Vec<String>) {
    let (tree, diagnostics) = parse(&SourceFile::new("x.rules", text));
    assert!(
        diagnostics
            .iter()
            .all(|d| d.code() != faultline_dsl::Code::SyntaxError)
    );
    let mut comments: Vec<String> = tree
        .comments
        .iter()
        .map(|c| c.text.trim_end().to_owned())
        .collect();
    comments.sort();
    let mut value = serde_json::to_value(&tree.items).unwrap();
    strip_positions(&mut value);
    (value, comments)
}

fn strip_positions(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for key in ["span", "keyword", "close"] {
                object.remove(key);
            }
            for child in object.values_mut() {
                strip_positions(child);
            }
            if let Some(Value::Array(clauses)) = object.get_mut("clauses") {
                clauses.sort_by_key(|clause| clause.to_string());
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_positions),
        _ => {}
    }
}

#[test]
fn formatting_every_rules_file_is_idempotent_and_keeps_meaning_and_comments() {
    let mut formatted_files = 0;
    for path in rules_files("catalogue")
        .into_iter()
        .chain(rules_files("fixtures"))
    {
        let name = relative(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(once) = format(&SourceFile::new(name.clone(), text.clone())) else {
            // Only the syntax-error fixtures cannot be formatted.
            assert!(
                name.contains("FL0001") || name.contains("every-error"),
                "{name} does not format"
            );
            continue;
        };
        let twice = format(&SourceFile::new(name.clone(), once.clone())).unwrap();
        assert_eq!(once, twice, "{name}: formatting twice changed the text");
        assert_eq!(
            meaning(&text),
            meaning(&once),
            "{name}: formatting changed its meaning or lost a comment"
        );
        formatted_files += 1;
    }
    assert!(
        formatted_files > 30,
        "only {formatted_files} files were formatted"
    );
}

#[test]
fn the_catalogue_is_formatted() {
    for path in rules_files("catalogue") {
        let text = std::fs::read_to_string(&path).unwrap();
        let formatted = format(&SourceFile::new(relative(&path), text.clone())).unwrap();
        assert!(
            text == formatted,
            "{} is not formatted: run `faultline fmt catalogue/`",
            relative(&path)
        );
    }
}
