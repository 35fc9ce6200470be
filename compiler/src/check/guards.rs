//! Guards: `when` clauses on structured evidence fields, each field guarded at most once.

use std::sync::Arc;

use faultline_dsl::ast::{Block, ClauseKind, GuardTest, StringLit, Value};
use faultline_dsl::{Code, Diagnostic, SourceFile, Span};
use faultline_runtime::build::KeyedGuardEntry;
use faultline_runtime::{EvidenceField, Headers, Phase, Source, parse_pointer};

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
        let mut seen_keys: Vec<(bool, String, Span)> = Vec::new();
        let mut body_spans: Vec<Span> = Vec::new();
        for clause in &block.clauses {
            let ClauseKind::When(guard) = &clause.kind else {
                continue;
            };
            let keyed_field = matches!(guard.field.value.as_str(), "header" | "body");
            if let Some(key) = &guard.key
                && keyed_field
            {
                let is_header = guard.field.value == "header";
                let normal = if is_header {
                    key.value.trim().to_ascii_lowercase()
                } else {
                    key.value.clone()
                };
                if let Some((_, _, first)) = seen_keys
                    .iter()
                    .find(|(header, k, _)| *header == is_header && *k == normal)
                {
                    let first = *first;
                    *ok = false;
                    self.push(
                        Diagnostic::new(
                            Code::DuplicateClause,
                            format!(
                                "two guards on {} `{}` in `{}`",
                                guard.field.value, key.value, block.name.value
                            ),
                        )
                        .primary(file, clause.span, "second guard")
                        .secondary(file, first, "first guard")
                        .help(
                            "guards are all required; to accept several values write `in [a, b]`",
                        ),
                    );
                    continue;
                }
                seen_keys.push((is_header, normal, clause.span));
                match self.keyed_guard(file, is_header, key, &guard.test) {
                    Some(entry) if is_header => guards.headers.push(entry),
                    Some(entry) => {
                        body_spans.push(key.span);
                        guards.body.push(entry);
                    }
                    None => *ok = false,
                }
                continue;
            }
            if let Some(key) = &guard.key {
                *ok = false;
                self.push(
                    Diagnostic::new(
                        Code::MisplacedGuardKey,
                        format!("`{}` takes no key", guard.field.value),
                    )
                    .primary(file, key.span, "key of a field that has none")
                    .help(format!(
                        "only `header` and `body` are keyed (`when header \"name\" = \"value\"`, `when body \"/pointer\" = \"value\"`); write `when {} …` without it",
                        guard.field.value
                    )),
                );
                continue;
            }
            if keyed_field {
                *ok = false;
                self.push(
                    Diagnostic::new(
                        Code::MisplacedGuardKey,
                        format!("`when {}` needs a key", guard.field.value),
                    )
                    .primary(file, guard.field.span, "no header name or JSON Pointer after it")
                    .help(if guard.field.value == "header" {
                        "name the header: `when header \"x-should-retry\" = \"false\"`; `when headers present` tests that any header was sent"
                    } else {
                        "give a JSON Pointer: `when body \"/error/type\" = \"overloaded_error\"`; `when body present` tests that a body was sent"
                    }),
                );
                continue;
            }
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
                | EvidenceField::Headers
                | EvidenceField::Body
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
        // A value guard on a pointer without `*` makes what it selects a string, number or
        // boolean: nothing lies below it, so a guard on a pointer that extends it never holds.
        for (outer, outer_span) in guards.body.iter().zip(&body_spans) {
            if outer.values.is_none() || outer.key.split('/').any(|segment| segment == "*") {
                continue;
            }
            let prefix = format!("{}/", outer.key);
            for (inner, inner_span) in guards.body.iter().zip(&body_spans) {
                if inner.key.starts_with(&prefix) {
                    *ok = false;
                    self.push(
                        Diagnostic::new(
                            Code::ImpossibleGuard,
                            format!("`when body \"{}\"` can never hold beside a value guard on `{}`", inner.key, outer.key),
                        )
                        .primary(file, *inner_span, "nothing lies below a value")
                        .secondary(file, *outer_span, "this guard makes it a string, number or boolean")
                        .help(format!("guard `{}` with `present` (an object is present), or drop one of the guards", outer.key)),
                    );
                }
            }
        }
        guards
    }

    /// A `when header "name" …` or `when body "/pointer" …` guard, or `None` after a
    /// diagnostic.
    fn keyed_guard(
        &mut self,
        file: &Arc<SourceFile>,
        is_header: bool,
        key: &StringLit,
        test: &GuardTest,
    ) -> Option<KeyedGuardEntry> {
        let before = self.diagnostics.len();
        let what = if is_header { "header" } else { "body" };
        let values: Option<Vec<&Value>> = match test {
            GuardTest::Present(_) => None,
            GuardTest::Equals(value) => Some(vec![value]),
            GuardTest::In(list) if list.items.is_empty() => {
                self.push(
                    Diagnostic::new(
                        Code::TypeMismatch,
                        format!("`when {what} \"{}\" in []` can never hold", key.value),
                    )
                    .primary(file, list.span, "empty list")
                    .help("list at least one value, or delete the guard"),
                );
                return None;
            }
            GuardTest::In(list) => Some(list.items.iter().collect()),
        };
        let texts: Option<Vec<String>> = values.map(|values| {
            values
                .into_iter()
                .filter_map(|value| match value {
                    Value::Str(string) => Some(string.value.clone()),
                    Value::Int(int) => int.value.map(|v| v.to_string()),
                    Value::Ident(name)
                        if !is_header && matches!(name.value.as_str(), "true" | "false") =>
                    {
                        Some(name.value.clone())
                    }
                    other => {
                        self.type_mismatch(file, other, "a string or an integer");
                        None
                    }
                })
                .collect()
        });
        let key_text = if is_header {
            let name = key.value.trim().to_ascii_lowercase();
            if !Headers::keeps(&name, "x") {
                self.push(
                    Diagnostic::new(
                        Code::DroppedAtIngestion,
                        format!("header `{}` never reaches a rule", key.value),
                    )
                    .primary(file, key.span, "ingestion drops this header")
                    .help("credential headers and names that are not visible-ASCII tokens are dropped as evidence is read; guard on another header, or on the body"),
                );
            }
            for value in texts.iter().flatten() {
                if Headers::keeps(&name, "x") && !Headers::keeps(&name, value) {
                    self.push(
                        Diagnostic::new(
                            Code::DroppedAtIngestion,
                            format!("header value `{}` never reaches a rule", faultline_runtime::redact_credentials(value)),
                        )
                        .primary(file, key.span, "ingestion drops this header with that value")
                        .help("a value of a credential shape or longer than 1024 bytes is dropped as evidence is read"),
                    );
                }
            }
            name
        } else {
            if parse_pointer(&key.value).is_none() {
                self.push(
                    Diagnostic::new(
                        Code::MalformedPointer,
                        format!("`{}` is not a JSON Pointer", key.value),
                    )
                    .primary(file, key.span, "malformed pointer")
                    .help("a pointer starts with `/` (or is empty, for the whole body), and a `~` is written `~0` and a `/` inside a key `~1`: `\"/error/details/*/reason\"`"),
                );
            }
            key.value.clone()
        };
        if self.diagnostics.len() > before {
            return None;
        }
        Some(KeyedGuardEntry {
            key: key_text,
            values: texts,
        })
    }
}
