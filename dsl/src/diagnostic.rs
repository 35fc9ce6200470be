//! Diagnostics as data: a code, a message, labelled spans that carry their source, and help.
//!
//! Rendering is separate (see [`crate::render`]): human, JSON, SARIF and GitHub output are all
//! produced from this one model, so every format carries the same facts.

use std::sync::Arc;

use crate::codes::{Code, Severity};
use crate::source::{SourceFile, Span};

/// One labelled span.
#[derive(Debug, Clone)]
pub struct Label {
    file: Arc<SourceFile>,
    span: Span,
    message: String,
    primary: bool,
}

impl Label {
    /// The file the span is in.
    pub fn file(&self) -> &Arc<SourceFile> {
        &self.file
    }

    /// The byte span.
    pub fn span(&self) -> Span {
        self.span
    }

    /// What the label says about the span (may be empty).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether this is the label the diagnostic is about (the others add context).
    pub fn is_primary(&self) -> bool {
        self.primary
    }

    /// The underlined text.
    pub fn text(&self) -> &str {
        self.file.slice(self.span)
    }
}

/// A finding about a catalogue, with a stable code.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    code: Code,
    severity: Severity,
    message: String,
    labels: Vec<Label>,
    help: Option<String>,
    notes: Vec<String>,
}

impl Diagnostic {
    /// A diagnostic with the code's default severity.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
            labels: Vec::new(),
            help: None,
            notes: Vec::new(),
        }
    }

    /// Adds the primary label: the span the diagnostic is about.
    #[must_use]
    pub fn primary(self, file: &Arc<SourceFile>, span: Span, message: impl Into<String>) -> Self {
        self.label(file, span, message.into(), true)
    }

    /// Adds a secondary label that gives context (e.g. "first defined here").
    #[must_use]
    pub fn secondary(self, file: &Arc<SourceFile>, span: Span, message: impl Into<String>) -> Self {
        self.label(file, span, message.into(), false)
    }

    fn label(mut self, file: &Arc<SourceFile>, span: Span, message: String, primary: bool) -> Self {
        self.labels.push(Label {
            file: Arc::clone(file),
            span,
            message,
            primary,
        });
        self
    }

    /// Sets the help line: what to do about it.
    #[must_use]
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds a note: an extra fact (e.g. the chain of an include cycle).
    #[must_use]
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// The stable code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// Error or warning.
    pub fn severity(&self) -> Severity {
        self.severity
    }

    /// The message: lowercase, no final period, user text in backticks.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// All labels, primary first.
    pub fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// The primary label, if the diagnostic points anywhere.
    pub fn primary_label(&self) -> Option<&Label> {
        self.labels
            .iter()
            .find(|label| label.primary)
            .or_else(|| self.labels.first())
    }

    /// The help line.
    pub fn help_text(&self) -> Option<&str> {
        self.help.as_deref()
    }

    /// Extra notes.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether this is an error (as opposed to a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// A key that orders diagnostics by file, position and code, for stable output.
    pub fn sort_key(&self) -> (String, usize, usize, Code) {
        match self.primary_label() {
            Some(label) => (
                label.file.name().to_owned(),
                label.span.start,
                label.span.end,
                self.code,
            ),
            None => (String::new(), 0, 0, self.code),
        }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

/// A label in another file than the primary one, shown by miette as a related report.
#[derive(Debug)]
pub(crate) struct RelatedLabel {
    label: Label,
}

impl std::fmt::Display for RelatedLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.label.message.is_empty() {
            "related location"
        } else {
            &self.label.message
        })
    }
}

impl std::error::Error for RelatedLabel {}

impl miette::Diagnostic for RelatedLabel {
    fn severity(&self) -> Option<miette::Severity> {
        Some(miette::Severity::Advice)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(self.label.file.as_ref())
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let span = miette::SourceSpan::from(self.label.span.start..self.label.span.end);
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_with_span(Some(self.label.message.clone()), span),
        )))
    }
}

/// A diagnostic prepared for miette's renderer.
#[derive(Debug)]
pub(crate) struct MietteView<'a> {
    diagnostic: &'a Diagnostic,
    related: Vec<RelatedLabel>,
    help: Option<String>,
}

impl<'a> MietteView<'a> {
    pub(crate) fn new(diagnostic: &'a Diagnostic) -> Self {
        let primary_file = diagnostic
            .primary_label()
            .map(|label| Arc::clone(&label.file));
        let related = diagnostic
            .labels
            .iter()
            .filter(|label| {
                primary_file
                    .as_ref()
                    .is_some_and(|file| !Arc::ptr_eq(file, &label.file))
            })
            .map(|label| RelatedLabel {
                label: label.clone(),
            })
            .collect();
        let mut help_lines: Vec<String> = diagnostic
            .notes
            .iter()
            .map(|note| format!("note: {note}"))
            .collect();
        if let Some(help) = &diagnostic.help {
            help_lines.push(help.clone());
        }
        let help = if help_lines.is_empty() {
            None
        } else {
            Some(help_lines.join("\n"))
        };
        MietteView {
            diagnostic,
            related,
            help,
        }
    }
}

impl std::fmt::Display for MietteView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for MietteView<'_> {}

impl miette::Diagnostic for MietteView<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        Some(Box::new(format!(
            "{}[{}]",
            self.diagnostic.severity.as_str(),
            self.diagnostic.code.as_str()
        )))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diagnostic.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.diagnostic
            .primary_label()
            .map(|label| label.file.as_ref() as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let primary_file = self
            .diagnostic
            .primary_label()
            .map(|label| Arc::clone(&label.file))?;
        let labels: Vec<_> = self
            .diagnostic
            .labels
            .iter()
            .filter(|label| Arc::ptr_eq(&label.file, &primary_file))
            .map(|label| {
                let span = miette::SourceSpan::from(label.span.start..label.span.end);
                let text = if label.message.is_empty() {
                    None
                } else {
                    Some(label.message.clone())
                };
                if label.primary {
                    miette::LabeledSpan::new_primary_with_span(text, span)
                } else {
                    miette::LabeledSpan::new_with_span(text, span)
                }
            })
            .collect();
        Some(Box::new(labels.into_iter()))
    }

    fn related<'b>(&'b self) -> Option<Box<dyn Iterator<Item = &'b dyn miette::Diagnostic> + 'b>> {
        if self.related.is_empty() {
            return None;
        }
        Some(Box::new(
            self.related
                .iter()
                .map(|related| related as &dyn miette::Diagnostic),
        ))
    }
}
