//! Guards: `when` clauses on structured evidence fields, each field guarded at most once.

use std::sync::Arc;

use faultline_dsl::ast::{Block, ClauseKind, GuardTest, Value};
use faultline_dsl::{Code, Diagnostic, SourceFile, Span};
use faultline_runtime::{EvidenceField, Phase, Source};

use super::Checker;
use crate::ir::*;

impl Checker<'_> {
    pub(super) fn guards(
        &mut self,
        file: &Arc<SourceFile>,
        block: &Block,
        providers: &[String],
        ok: &mut bool,
    ) -> Guards {
        let mut guards = Guards::default();
        let mut seen: Vec<(EvidenceField, Span)> = Vec::new();
        for clause in &block.clauses {
            let ClauseKind::When(guard) = &clause.kind else {
                continue;
            };
            let Some(field) = self.vocab::<EvidenceField>(file, &guard.field) else {
                *ok = false;
                continue;
            };
            if let Some((_, first)) = seen.iter().find(|(f, _)| *f == field) {
                let first = *first;
                *ok = false;
                self.push(
                    Diagnostic::new(Code::DuplicateClause, format!("two guards on `{field}` in `{}`", block.name.value))
                        .primary(file, clause.span, "second guard")
                        .secondary(file, first, "first guard")
                        .help(format!("guards are all required; to accept several values write `when {field} in [a, b]`")),
                );
                continue;
            }
            seen.push((field, clause.span));
            let values: Vec<&Value> = match &guard.test {
                GuardTest::Present(_) => {
                    guards.present.push(field);
                    continue;
                }
                GuardTest::Equals(value) => vec![value],
                GuardTest::In(list) => {
                    if list.items.is_empty() {
                        *ok = false;
                        self.push(
                            Diagnostic::new(
                                Code::TypeMismatch,
                                format!("`when {field} in []` can never hold"),
                            )
                            .primary(file, list.span, "empty list")
                            .help("list at least one value, or delete the guard"),
                        );
                        continue;
                    }
                    list.items.iter().collect()
                }
            };
            let before_count = self.diagnostics.len();
            match field {
                EvidenceField::Phase => {
                    guards.phase = Some(
                        values
                            .iter()
                            .filter_map(|v| self.vocab_value::<Phase>(file, v))
                            .collect(),
                    );
                }
                EvidenceField::Source => {
                    guards.source = Some(
                        values
                            .iter()
                            .filter_map(|v| self.vocab_value::<Source>(file, v))
                            .collect(),
                    );
                }
                EvidenceField::ProviderId => {
                    guards.provider_id = Some(
                        values
                            .iter()
                            .filter_map(|v| self.provider(file, v, providers))
                            .collect(),
                    );
                }
                EvidenceField::HttpStatus => {
                    let statuses = values
                        .iter()
                        .filter_map(|v| self.int_value(file, v, 100..=599, "HTTP status"))
                        .filter_map(|v| u16::try_from(v).ok())
                        .collect();
                    guards.http_status = Some(statuses);
                }
                EvidenceField::ExitCode => {
                    let codes = values
                        .iter()
                        .filter_map(|v| {
                            self.int_value(
                                file,
                                v,
                                i64::from(i32::MIN)..=i64::from(i32::MAX),
                                "exit code",
                            )
                        })
                        .filter_map(|v| i32::try_from(v).ok())
                        .collect();
                    guards.exit_code = Some(codes);
                }
                EvidenceField::ResetHint
                | EvidenceField::Stderr
                | EvidenceField::Stdout
                | EvidenceField::ManagedRuntimePackageSpec => {
                    self.push(
                        Diagnostic::new(Code::TypeMismatch, format!("`{field}` can only be tested with `present`"))
                            .primary(file, clause.span, "not a structured value")
                            .help(format!("write `when {field} present`; to test the text itself, use a `match` clause")),
                    );
                }
            }
            if self.diagnostics.len() > before_count {
                *ok = false;
            }
        }
        guards
    }
}
