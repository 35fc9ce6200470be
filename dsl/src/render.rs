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
    let handler = miette::GraphicalReportHandler::new_themed(theme)
        .with_width(options.width)
        .with_links(false);
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
pub fn diagnostic_json(diagnostic: &Diagnostic) -> Value {
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

fn sarif_region(label: &Label) -> Value {
    let start = label.file().line_column(label.span().start);
    let end = label.file().line_column(label.span().end);
    json!({
        "startLine": start.line,
        "startColumn": start.column,
        "endLine": end.line,
        "endColumn": end.column,
        "charOffset": label.span().start,
        "charLength": label.span().len(),
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
            "columnKind": "unicodeCodePoints",
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
