//! Matchers: `match` and `unless` clauses over a text view, their regexes (validated and
//! lowered within the pattern budget) and literals, `where group` conditions, suffix byte
//! bounds, and remediation captures.

use std::sync::Arc;

use faultline_dsl::ast::{self, StringLit};
use faultline_dsl::{Code, Diagnostic, SourceFile};
use faultline_runtime::{EvidenceField, TextView, TimingExtractor};

use super::{Checker, MAX_EXCERPT_BYTES};
use crate::ir::*;
use crate::pattern::{self, PatternProblem};

impl Checker<'_> {
    /// The view a matcher reads, with the JSON Pointer of a `body` view; `text_only` refuses
    /// the body (a remediation capture reads the evidence text).
    pub(super) fn view(
        &mut self,
        file: &Arc<SourceFile>,
        view: Option<&ast::View>,
        text_only: bool,
    ) -> Option<(TextView, Option<String>)> {
        let Some(view) = view else {
            return Some((TextView::Sanitized, None));
        };
        let name = self.vocab::<TextView>(file, &view.name)?;
        match (name, &view.pointer) {
            (TextView::Body, _) if text_only => {
                self.push(
                    Diagnostic::new(Code::MisplacedPointer, "a remediation capture reads the evidence text, not the body")
                        .primary(file, view.name.span, "the body is not read here")
                        .help("capture from `on sanitized` or `on raw`; a rule can still require the body's text with `match … on body \"/error/message\"`"),
                );
                None
            }
            (TextView::Body, None) => {
                self.push(
                    Diagnostic::new(Code::MisplacedPointer, "`on body` needs a JSON Pointer")
                        .primary(file, view.name.span, "no JSON Pointer after it")
                        .help("name the value to read: `on body \"/error/message\"` (with `*` over array elements: `\"/error/details/*/reason\"`)"),
                );
                None
            }
            (TextView::Body, Some(pointer)) => {
                if faultline_runtime::parse_pointer(&pointer.value).is_none() {
                    self.push(
                        Diagnostic::new(
                            Code::MalformedPointer,
                            format!("`{}` is not a JSON Pointer", pointer.value),
                        )
                        .primary(file, pointer.span, "malformed pointer")
                        .help("a pointer starts with `/`, and a `~` is written `~0` and a `/` inside a key `~1`: `\"/error/message\"`"),
                    );
                    return None;
                }
                Some((TextView::Body, Some(pointer.value.clone())))
            }
            (_, Some(pointer)) => {
                self.push(
                    Diagnostic::new(
                        Code::MisplacedPointer,
                        format!("the `{name}` view takes no JSON Pointer"),
                    )
                    .primary(file, pointer.span, "a pointer of a view that has none")
                    .help(format!("`{name}` is the evidence text; write `on {name}` without it, or `on body \"…\"` to read the error body")),
                );
                None
            }
            (name, None) => Some((name, None)),
        }
    }

    /// The JSON Pointers a `timing` list names: only `body_reset` reads one (FL0043), and it
    /// must be well-formed (FL0039).
    pub(super) fn timing_pointers(
        &mut self,
        file: &Arc<SourceFile>,
        list: &ast::TimingList,
    ) -> Option<Vec<String>> {
        let mut pointers = Vec::new();
        let mut ok = true;
        for item in &list.items {
            let Some(pointer) = &item.pointer else {
                continue;
            };
            let name = match &item.extractor {
                ast::Value::Ident(name) => name.value.as_str(),
                _ => "",
            };
            if name != TimingExtractor::BodyReset.as_str() {
                ok = false;
                self.push(
                    Diagnostic::new(Code::MisplacedPointer, format!("`{name}` reads no JSON Pointer"))
                        .primary(file, pointer.span, "a pointer of an extractor that reads none")
                        .help("only `body_reset` reads the error body at a pointer the rule names: `timing [body_reset \"/error/resets_at\"]`"),
                );
            } else if faultline_runtime::parse_pointer(&pointer.value).is_none() {
                ok = false;
                self.push(
                    Diagnostic::new(
                        Code::MalformedPointer,
                        format!("`{}` is not a JSON Pointer", pointer.value),
                    )
                    .primary(file, pointer.span, "malformed pointer")
                    .help("a pointer starts with `/`, and a `~` is written `~0` and a `/` inside a key `~1`: `\"/error/resets_at\"`"),
                );
            } else {
                pointers.push(pointer.value.clone());
            }
        }
        ok.then_some(pointers)
    }

    /// Refuses a pattern or literal longer than the pattern budget.
    pub(super) fn within_budget(
        &mut self,
        file: &Arc<SourceFile>,
        text: &StringLit,
        what: &str,
    ) -> bool {
        if text.value.len() <= self.pattern_bytes {
            return true;
        }
        self.push(
            Diagnostic::new(
                Code::AutomatonTooLarge,
                format!(
                    "a {what} exceeds its budget: it is {} bytes long, more than the {} pattern budget",
                    crate::lower::grouped(text.value.len()),
                    crate::lower::bytes(self.pattern_bytes)
                ),
            )
            .primary(file, text.span, "too long to compile: parsing alone needs memory in proportion to its length")
            .help("split the rule into several rules with shorter patterns, or match a shorter, distinctive part of the text (see docs/bundle.md)"),
        );
        false
    }

    pub(super) fn pattern(
        &mut self,
        file: &Arc<SourceFile>,
        pattern: &StringLit,
    ) -> Option<pattern::LoweredPattern> {
        if !self.within_budget(file, pattern, "pattern") {
            return None;
        }
        match (self.lower)(&pattern.value) {
            Ok(lowered) => Some(lowered),
            Err(problems) => {
                for problem in problems {
                    let diagnostic = match problem {
                        PatternProblem::Invalid { message, range } => {
                            Diagnostic::new(Code::InvalidRegex, format!("invalid regex: {message}"))
                                .primary(file, pattern.span_of(range.start, range.end.max(range.start)), message)
                                .help("faultline regexes use Rust `regex` syntax with RE2 semantics; write them as raw strings `r\"…\"` (see docs/language.md)")
                        }
                        PatternProblem::MatchesEmpty => {
                            Diagnostic::new(Code::RegexMatchesEmpty, format!("regex `{}` matches the empty string", pattern.value))
                                .primary(file, pattern.span, "matches the empty string, so it fires on any text")
                                .help("require at least one character, e.g. replace `x*` with `x+` or remove an empty alternative")
                        }
                        PatternProblem::UnicodeWordBoundary { range } => {
                            Diagnostic::new(Code::DfaHostileRegex, "a Unicode word boundary cannot be compiled to a deterministic automaton")
                                .primary(file, pattern.span_of(range.start, range.end), "Unicode-aware boundary (the `u` flag is set)")
                                .help("remove the `u` flag around it: faultline's `\\b` is already an ASCII word boundary, as in RE2 and Go, or write `(?-u:\\b)`")
                        }
                    };
                    self.push(diagnostic);
                }
                None
            }
        }
    }

    pub(super) fn literal(
        &mut self,
        file: &Arc<SourceFile>,
        literal: &StringLit,
        kind: &str,
    ) -> Option<String> {
        if !self.within_budget(file, literal, "literal") {
            return None;
        }
        if literal.value.trim().is_empty() {
            self.push(
                Diagnostic::new(
                    Code::EmptyLiteral,
                    format!("`{kind}` matcher with an empty literal"),
                )
                .primary(file, literal.span, "empty, so it would match every text")
                .help(format!("write the text the `{kind}` matcher requires")),
            );
            return None;
        }
        // `prefix` and `whole` compare the trimmed text: surrounding whitespace in the literal
        // could never be there.
        if kind != "contains" && literal.value.trim() != literal.value {
            self.push(
                Diagnostic::new(
                    Code::EmptyLiteral,
                    format!(
                        "`{kind}` literal `{}` has surrounding whitespace",
                        literal.value
                    ),
                )
                .primary(
                    file,
                    literal.span,
                    "the text is trimmed before it is compared, so this whitespace can never match",
                )
                .help(format!(
                    "remove the leading and trailing whitespace: `{kind} \"{}\"`",
                    literal.value.trim()
                )),
            );
            return None;
        }
        Some(literal.value.clone())
    }

    pub(super) fn matcher(
        &mut self,
        file: &Arc<SourceFile>,
        matcher: &ast::Matcher,
    ) -> Option<TextMatcher> {
        let view = self.view(file, matcher.view.as_ref(), false);
        let span = match &matcher.kind {
            ast::MatcherKind::Regex { pattern, .. } => pattern.span,
            ast::MatcherKind::Prefix { literal, .. }
            | ast::MatcherKind::Whole { literal, .. }
            | ast::MatcherKind::Contains { literal, .. } => literal.span,
        };
        let kind = match &matcher.kind {
            ast::MatcherKind::Regex {
                pattern,
                group_equals,
            } => {
                let lowered = self.pattern(file, pattern)?;
                let group_equals = match group_equals {
                    Some(condition) => {
                        let field = self.vocab::<EvidenceField>(file, &condition.field);
                        let group = self.int_in(
                            file,
                            &condition.group,
                            0..=i64::from(u32::MAX),
                            "capture group",
                        )?;
                        let group = u32::try_from(group).ok()?;
                        if group > lowered.capture_groups {
                            self.push(
                                Diagnostic::new(Code::MissingCaptureGroup, format!("the pattern has no capture group {group}"))
                                    .primary(file, condition.group.span, format!("the pattern has {} capture group(s)", lowered.capture_groups))
                                    .secondary(file, pattern.span, "in this pattern")
                                    .help("add the group to the pattern, e.g. `(\\S+@\\S+)`, or correct the number"),
                            );
                            return None;
                        }
                        let field = field?;
                        if !matches!(
                            field,
                            EvidenceField::ProviderId
                                | EvidenceField::ResetHint
                                | EvidenceField::Stderr
                                | EvidenceField::Stdout
                                | EvidenceField::ManagedRuntimePackageSpec
                        ) {
                            self.push(
                                Diagnostic::new(Code::TypeMismatch, format!("a capture group can only equal a text field, not `{field}`"))
                                    .primary(file, condition.field.span, "not a text field")
                                    .help("compare with `provider_id`, `reset_hint`, `stderr`, `stdout` or `managed_runtime_package_spec`; structured fields are tested with `when`"),
                            );
                            return None;
                        }
                        Some((group, field))
                    }
                    None => None,
                };
                MatcherKind::Regex {
                    written: pattern.value.clone(),
                    lowered: lowered.lowered,
                    group_equals,
                }
            }
            ast::MatcherKind::Prefix {
                literal,
                ignore_case,
                suffix,
            } => {
                let literal = self.literal(file, literal, "prefix")?;
                let suffix = match suffix {
                    Some(bound) => Some(self.suffix_bound(file, bound)?),
                    None => None,
                };
                MatcherKind::Prefix {
                    literal,
                    ignore_case: ignore_case.is_some(),
                    suffix,
                }
            }
            ast::MatcherKind::Whole {
                literal,
                ignore_case,
            } => MatcherKind::Whole {
                literal: self.literal(file, literal, "whole")?,
                ignore_case: ignore_case.is_some(),
            },
            ast::MatcherKind::Contains {
                literal,
                ignore_case,
            } => MatcherKind::Contains {
                literal: self.literal(file, literal, "contains")?,
                ignore_case: ignore_case.is_some(),
            },
        };
        let (view, pointer) = view?;
        Some(TextMatcher {
            view,
            pointer,
            kind,
            span,
            shared: None,
        })
    }

    pub(super) fn suffix_bound(
        &mut self,
        file: &Arc<SourceFile>,
        bound: &ast::SuffixBytes,
    ) -> Option<(usize, usize)> {
        let (min, max) = (bound.min.value?, bound.max.value?);
        let problem = if min < 0 || max < 0 {
            Some("byte bounds cannot be negative")
        } else if min > max {
            Some("the minimum is larger than the maximum")
        } else if max > MAX_EXCERPT_BYTES {
            Some("the maximum is larger than the 4096-byte sanitized excerpt")
        } else {
            None
        };
        if let Some(problem) = problem {
            self.push(
                Diagnostic::new(
                    Code::ByteBoundOutOfRange,
                    format!("byte bound `{min}..={max}` is out of range"),
                )
                .primary(file, bound.span, problem)
                .help("use 0 <= MIN <= MAX <= 4096, e.g. `suffix 1..=256 bytes`"),
            );
            return None;
        }
        Some((usize::try_from(min).ok()?, usize::try_from(max).ok()?))
    }

    pub(super) fn remediation(
        &mut self,
        file: &Arc<SourceFile>,
        remediation: &ast::Remediation,
    ) -> Option<RemediationSpec> {
        match remediation {
            ast::Remediation::Token(token) => self.token(file, token).map(RemediationSpec::Token),
            ast::Remediation::Capture {
                pattern,
                group,
                view,
            } => {
                let view = self.view(file, view.as_ref(), true);
                let lowered = self.pattern(file, pattern)?;
                let group_number =
                    self.int_in(file, group, 0..=i64::from(u32::MAX), "capture group")?;
                let group_number = u32::try_from(group_number).ok()?;
                if group_number == 0 || group_number > lowered.capture_groups {
                    self.push(
                        Diagnostic::new(Code::MissingCaptureGroup, format!("remediation captures group {group_number}, which the pattern does not have"))
                            .primary(file, group.span, format!("the pattern has {} capture group(s)", lowered.capture_groups))
                            .secondary(file, pattern.span, "in this pattern")
                            .help("wrap the value to report in a group, e.g. `(/[^\\n]*?/\\.npm/_npx/[0-9a-f]+)`, and capture group 1"),
                    );
                    return None;
                }
                Some(RemediationSpec::Capture {
                    lowered: lowered.lowered,
                    group: group_number,
                    view: view?.0,
                    span: pattern.span,
                })
            }
        }
    }
}
