//! Examples: inline evidence of `example` and `counterexample` clauses, completed with the
//! rule's single-valued guards so that each exercises the rule in context.

use std::sync::Arc;

use faultline_dsl::ast::{self, Value};
use faultline_dsl::{Code, Diagnostic, SourceFile, Span};
use faultline_runtime::{Body, Evidence, EvidenceField, Headers, Phase, Source};

use super::Checker;
use crate::ir::*;

impl Checker<'_> {
    pub(super) fn example(
        &mut self,
        file: &Arc<SourceFile>,
        evidence: &ast::Evidence,
        guards: &Guards,
        providers: &[String],
    ) -> Option<Example> {
        let mut out = Evidence::default();
        let span = match evidence {
            ast::Evidence::Text(text) => {
                out.stderr = Some(text.value.clone());
                text.span
            }
            ast::Evidence::Object { span, fields } => {
                let mut ok = true;
                let mut seen: Vec<(EvidenceField, Span)> = Vec::new();
                for field in fields {
                    let Some(name) = self.vocab::<EvidenceField>(file, &field.name) else {
                        ok = false;
                        continue;
                    };
                    if let Some((_, first)) = seen.iter().find(|(f, _)| *f == name) {
                        let first = *first;
                        ok = false;
                        self.push(
                            Diagnostic::new(
                                Code::DuplicateDeclaration,
                                format!("field `{name}` is given twice"),
                            )
                            .primary(file, field.name.span, "given again here")
                            .secondary(file, first, "first given here")
                            .help("give each evidence field once"),
                        );
                        continue;
                    }
                    seen.push((name, field.name.span));
                    ok &= self.evidence_field(file, name, &field.value, &mut out, providers);
                }
                if !ok {
                    return None;
                }
                *span
            }
        };
        // Single-valued guards complete the example, so that it exercises the rule in context.
        if out.phase.is_none() {
            out.phase = guards
                .phase
                .as_ref()
                .and_then(|p| single(p))
                .or(Some(Phase::PromptSend));
        }
        if out.provider_id.is_none() {
            out.provider_id = guards.provider_id.as_ref().and_then(|p| single(p));
        }
        if out.source.is_none() {
            out.source = guards.source.as_ref().and_then(|s| single(s));
        }
        if out.http_status.is_none() {
            out.http_status = guards.http_status.as_ref().and_then(|s| single(s));
        }
        if out.exit_code.is_none() {
            out.exit_code = guards.exit_code.as_ref().and_then(|s| single(s));
        }
        Some(Example {
            evidence: out,
            origin: Origin {
                file: Arc::clone(file),
                span,
            },
        })
    }

    pub(super) fn evidence_field(
        &mut self,
        file: &Arc<SourceFile>,
        field: EvidenceField,
        value: &Value,
        out: &mut Evidence,
        providers: &[String],
    ) -> bool {
        let text = |checker: &mut Self| match value {
            Value::Str(string) => Some(string.value.clone()),
            other => {
                checker.type_mismatch(file, other, "a string");
                None
            }
        };
        match field {
            EvidenceField::Phase => out.phase = self.vocab_value::<Phase>(file, value),
            EvidenceField::Source => out.source = self.vocab_value::<Source>(file, value),
            EvidenceField::ProviderId => out.provider_id = self.provider(file, value, providers),
            EvidenceField::HttpStatus => {
                out.http_status = self
                    .int_value(file, value, 100..=599, "HTTP status")
                    .and_then(|v| u16::try_from(v).ok());
            }
            EvidenceField::ExitCode => {
                out.exit_code = self
                    .int_value(
                        file,
                        value,
                        i64::from(i32::MIN)..=i64::from(i32::MAX),
                        "exit code",
                    )
                    .and_then(|v| i32::try_from(v).ok());
            }
            EvidenceField::ResetHint => out.reset_hint = text(self),
            EvidenceField::Stderr => out.stderr = text(self),
            EvidenceField::Stdout => out.stdout = text(self),
            EvidenceField::ManagedRuntimePackageSpec => {
                out.managed_runtime_package_spec = text(self)
            }
            // A header block (`"retry-after: 30\nx-should-retry: false"`) and a body's text
            // (JSON, or not), ingested as `classify` ingests them.
            EvidenceField::Headers => out.headers = text(self).map(|t| Headers::from_block(&t)),
            EvidenceField::Body => out.body = text(self).map(|t| Body::from_text(&t)),
        }
        match field {
            EvidenceField::Phase => out.phase.is_some(),
            EvidenceField::Source => out.source.is_some(),
            EvidenceField::ProviderId => out.provider_id.is_some(),
            EvidenceField::HttpStatus => out.http_status.is_some(),
            EvidenceField::ExitCode => out.exit_code.is_some(),
            EvidenceField::ResetHint => out.reset_hint.is_some(),
            EvidenceField::Stderr => out.stderr.is_some(),
            EvidenceField::Stdout => out.stdout.is_some(),
            EvidenceField::ManagedRuntimePackageSpec => out.managed_runtime_package_spec.is_some(),
            EvidenceField::Headers => out.headers.is_some(),
            EvidenceField::Body => out.body.is_some(),
        }
    }
}

fn single<T: Clone>(values: &[T]) -> Option<T> {
    match values {
        [one] => Some(one.clone()),
        _ => None,
    }
}
