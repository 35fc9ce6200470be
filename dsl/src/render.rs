//! Renderers: the same diagnostics as human-readable reports, JSON, SARIF 2.1.0 and GitHub
//! workflow commands.

use serde_json::{Value, json};

use crate::codes::{Code, Severity};
use crate::diagnostic::{Diagnostic, Label, MietteView};

/// Options for the human renderer.
#[derive(Debug, Clone, Copy)]
pub struct HumanOptions {
    /// Use ANSI colours.
    pub color: bool,
    /// Wrap width in columns.
    pub width: usize,
}

impl Default for HumanOptions {
    fn default() -> Self {
        HumanOptions {
            color: false,
            width: 100,
        }
    }
}

/// Renders one diagnostic as a human-readable report with the source underlined.
pub fn human(diagnostic: &Diagnostic, options: HumanOptions) -> String {
    let theme = if options.color {
        miette::GraphicalTheme::unicode()
    } else {
        miette::GraphicalTheme::unicode_nocolor()
    };
    // A syntax error may be in a file that is not `.rules` text at all (an include gone
    // astray): it shows only the offending line, never the lines around it.
    let context_lines = if diagnostic.code() == Code::SyntaxError {
        0
    } else {
        1
    };
    let handler = miette::GraphicalReportHandler::new_themed(theme)
        .with_width(options.width)
        .with_links(false)
        .with_context_lines(context_lines);
    let mut out = String::new();
    let view = MietteView::new(diagnostic);
    if handler.render_report(&mut out, &view).is_err() {
        // The handler only fails when the formatter does; fall back to the bare message.
        out = format!(
            "{}[{}]: {}\n",
            diagnostic.severity().as_str(),
            diagnostic.code(),
            diagnostic.message()
        );
    }
    out
}

/// Counts errors and warnings.
pub fn counts(diagnostics: &[Diagnostic]) -> (usize, usize) {
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity() == Severity::Error)
        .count();
    (errors, diagnostics.len() - errors)
}

fn position(label: &Label, offset: usize) -> Value {
    let at = label.file().line_column(offset);
    json!({ "line": at.line, "column": at.column, "offset": offset })
}

fn label_json(label: &Label) -> Value {
    json!({
        "file": label.file().name(),
        "start": position(label, label.span().start),
        "end": position(label, label.span().end),
        "text": label.text(),
        "message": label.message(),
        "primary": label.is_primary(),
    })
}

/// One diagnostic as a JSON value (the element type of [`json()`]'s `diagnostics` array).
fn diagnostic_json(diagnostic: &Diagnostic) -> Value {
    let primary = diagnostic.primary_label();
    json!({
        "code": diagnostic.code().as_str(),
        "name": diagnostic.code().slug(),
        "severity": diagnostic.severity().as_str(),
        "message": diagnostic.message(),
        "file": primary.map(|label| label.file().name()),
        "start": primary.map(|label| position(label, label.span().start)),
        "end": primary.map(|label| position(label, label.span().end)),
        "labels": diagnostic.labels().iter().map(label_json).collect::<Vec<_>>(),
        "help": diagnostic.help_text(),
        "notes": diagnostic.notes(),
    })
}

/// All diagnostics of a run as one JSON document (`docs/diagnostics.md` documents the shape).
pub fn json(diagnostics: &[Diagnostic]) -> String {
    let (errors, warnings) = counts(diagnostics);
    let document = json!({
        "version": 1,
        "diagnostics": diagnostics.iter().map(diagnostic_json).collect::<Vec<_>>(),
        "summary": { "errors": errors, "warnings": warnings },
    });
    serde_json::to_string_pretty(&document).unwrap_or_default()
}

/// SARIF's unit for columns and character offsets: its default, declared explicitly, so that a
/// consumer that ignores `columnKind` counts as this log does.
const SARIF_COLUMN_KIND: &str = "utf16CodeUnits";

fn sarif_region(label: &Label) -> Value {
    let file = label.file();
    let span = label.span();
    let start = file.utf16_line_column(span.start);
    let end = file.utf16_line_column(span.end);
    let char_offset = file.utf16_offset(span.start);
    json!({
        "startLine": start.line,
        "startColumn": start.column,
        "endLine": end.line,
        "endColumn": end.column,
        "charOffset": char_offset,
        "charLength": file.utf16_offset(span.end).saturating_sub(char_offset),
        "snippet": { "text": label.text() },
    })
}

fn sarif_location(label: &Label) -> Value {
    let mut location = json!({
        "physicalLocation": {
            "artifactLocation": { "uri": label.file().name().replace('\\', "/") },
            "region": sarif_region(label),
        }
    });
    if !label.message().is_empty()
        && let Some(object) = location.as_object_mut()
    {
        object.insert("message".to_owned(), json!({ "text": label.message() }));
    }
    location
}

/// All diagnostics as a SARIF 2.1.0 log, with every code of the registry as a rule.
pub fn sarif(diagnostics: &[Diagnostic], tool_version: &str) -> String {
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|code| {
            json!({
                "id": code.as_str(),
                "name": code.slug(),
                "shortDescription": { "text": code.title() },
                "fullDescription": { "text": code.doc() },
                "defaultConfiguration": { "level": code.severity().as_str() },
            })
        })
        .collect();
    let results: Vec<Value> = diagnostics
        .iter()
        .map(|diagnostic| {
            let mut text = diagnostic.message().to_owned();
            if let Some(help) = diagnostic.help_text() {
                text.push_str("\nhelp: ");
                text.push_str(help);
            }
            let rule_index = Code::ALL.iter().position(|code| *code == diagnostic.code()).unwrap_or(0);
            json!({
                "ruleId": diagnostic.code().as_str(),
                "ruleIndex": rule_index,
                "level": diagnostic.severity().as_str(),
                "message": { "text": text },
                "locations": diagnostic.primary_label().map(sarif_location).into_iter().collect::<Vec<_>>(),
                "relatedLocations": diagnostic
                    .labels()
                    .iter()
                    .filter(|label| !label.is_primary())
                    .enumerate()
                    .map(|(index, label)| {
                        let mut location = sarif_location(label);
                        if let Some(object) = location.as_object_mut() {
                            object.insert("id".to_owned(), json!(index));
                        }
                        location
                    })
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "faultline",
                "version": tool_version,
                "informationUri": "https://example.invalid/faultline/docs/diagnostics.md",
                "rules": rules,
            }},
            "columnKind": SARIF_COLUMN_KIND,
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&log).unwrap_or_default()
}

fn escape_github_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_github_property(text: &str) -> String {
    escape_github_data(text)
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// One GitHub Actions workflow command per diagnostic (`::error file=…,line=…::message`).
pub fn github(diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for diagnostic in diagnostics {
        let level = match diagnostic.severity() {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut properties = vec![format!(
            "title={}",
            escape_github_property(&format!(
                "{} {}",
                diagnostic.code(),
                diagnostic.code().slug()
            ))
        )];
        if let Some(label) = diagnostic.primary_label() {
            let start = label.file().line_column(label.span().start);
            let end = label.file().line_column(label.span().end);
            properties.insert(
                0,
                format!("file={}", escape_github_property(label.file().name())),
            );
            properties.insert(1, format!("line={}", start.line));
            properties.insert(2, format!("col={}", start.column));
            properties.insert(3, format!("endLine={}", end.line));
            properties.insert(4, format!("endColumn={}", end.column));
        }
        let mut message = diagnostic.message().to_owned();
        if let Some(help) = diagnostic.help_text() {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }
        out.push_str(&format!(
            "::{level} {}::{}\n",
            properties.join(","),
            escape_github_data(&message)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{SourceFile, Span};

    /// The text that `count` UTF-16 code units from `start` select in `text`.
    fn utf16_slice(text: &str, start: usize, count: usize) -> String {
        let units: Vec<u16> = text.encode_utf16().collect();
        String::from_utf16(&units[start..start + count]).unwrap()
    }

    #[test]
    fn sarif_regions_count_utf16_code_units_and_select_the_underlined_text() {
        // Two-byte, three-byte and four-byte (astral: two UTF-16 units) characters before the
        // label, on earlier lines and on its own line, and inside it.
        let text = "// café 日本 😀\nprovider \"é😀\" tier \"ß😀x\"\n";
        let file = SourceFile::new("non-ascii.rules", text);
        let start = text.find("\"ß").unwrap();
        let end = start + "\"ß😀x\"".len();
        let diagnostic = Diagnostic::new(Code::UnknownTier, "unknown tier")
            .primary(&file, Span::new(start, end), "not a tier")
            .help("declare it");
        let log: Value = serde_json::from_str(&sarif(&[diagnostic], "0.0.0")).unwrap();
        assert_eq!(log["runs"][0]["columnKind"], "utf16CodeUnits");
        let region = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
        insta::assert_json_snapshot!("sarif_region_non_ascii", region);
        let char_offset = region["charOffset"].as_u64().unwrap() as usize;
        let char_length = region["charLength"].as_u64().unwrap() as usize;
        assert_eq!(utf16_slice(text, char_offset, char_length), "\"ß😀x\"");
        // The columns select the same text within its line.
        let line = text.lines().nth(1).unwrap();
        let start_column = region["startColumn"].as_u64().unwrap() as usize;
        let end_column = region["endColumn"].as_u64().unwrap() as usize;
        assert_eq!(region["startLine"], 2);
        assert_eq!(region["endLine"], 2);
        assert_eq!(
            utf16_slice(line, start_column - 1, end_column - start_column),
            "\"ß😀x\""
        );
        assert_eq!(region["snippet"]["text"], "\"ß😀x\"");
    }

    #[test]
    fn json_github_and_human_columns_count_characters() {
        let text = "provider \"😀\" x\n";
        let file = SourceFile::new("c.rules", text);
        let start = text.find('x').unwrap();
        let diagnostic = Diagnostic::new(Code::SyntaxError, "unexpected")
            .primary(&file, Span::new(start, start + 1), "here")
            .help("remove it");
        let value = diagnostic_json(&diagnostic);
        // `provider "😀" ` is 13 characters, so `x` is in column 14 (byte 16).
        assert_eq!(value["start"]["column"], 14);
        assert_eq!(value["start"]["offset"], 16);
        assert_eq!(value["end"]["column"], 15);
        let report = human(&diagnostic, HumanOptions::default());
        assert!(report.contains("[c.rules:1:14]"), "{report}");
        let annotation = github(&[diagnostic]);
        assert!(
            annotation.contains("line=1,col=14,endLine=1,endColumn=15"),
            "{annotation}"
        );
    }

    #[test]
    fn a_syntax_error_shows_only_its_own_line() {
        let text = "first line\nsecond: the offending one\nthird line\n";
        let file = SourceFile::new("not-rules.txt", text);
        let start = text.find("second").unwrap();
        let diagnostic = Diagnostic::new(Code::SyntaxError, "expected a top-level item")
            .primary(&file, Span::new(start, start + 6), "unexpected `second`")
            .help("write a top-level item");
        let report = human(&diagnostic, HumanOptions::default());
        assert!(report.contains("second: the offending one"), "{report}");
        assert!(!report.contains("first line"), "{report}");
        assert!(!report.contains("third line"), "{report}");
    }
}
