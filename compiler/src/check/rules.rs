//! Rules: a rule block's id, code, confidence, scope, tier, rank, fixed excerpt and
//! remediation, its `before`/`after` relations (same tier only), and the assembly of the
//! checked [`RuleDef`] from every clause.

use std::collections::HashMap;
use std::sync::Arc;

use faultline_dsl::ast::{Block, ClauseKind, StringLit};
use faultline_dsl::{Code, Diagnostic, SourceFile};
use faultline_runtime::{Confidence, Scope, TimingExtractor};

use super::declarations::Declarations;
use super::doc_text;
use super::{Checker, MAX_RANK};
use crate::ir::*;
use crate::suggest;

/// Whether `id` is a well-formed rule id; `versioned` requires a final `vN` segment.
fn rule_id_problem(id: &str, versioned: bool) -> Option<String> {
    let segments: Vec<&str> = id.split('.').collect();
    if segments.len() < 2 {
        return Some("a rule id has at least two dot-separated segments".to_owned());
    }
    for segment in &segments {
        let mut chars = segment.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if !first_ok
            || !segment
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        {
            return Some(format!(
                "segment `{segment}` must be lowercase ASCII letters, digits, `_` and `-`, starting with a letter or digit"
            ));
        }
    }
    let is_version = |segment: &str| {
        segment.strip_prefix('v').is_some_and(|digits| {
            !digits.is_empty()
                && digits.chars().all(|c| c.is_ascii_digit())
                && !digits.starts_with('0')
        })
    };
    let last = segments.last().copied().unwrap_or("");
    let looks_like_version = last
        .strip_prefix('v')
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()));
    if looks_like_version && !is_version(last) {
        return Some(format!(
            "version segment `{last}` must be `v` and a positive number without leading zeros"
        ));
    }
    if versioned && !is_version(last) {
        return Some(
            "a rule that matches text must end in a version segment such as `.v1`".to_owned(),
        );
    }
    None
}

impl Checker<'_> {
    /// A fixed excerpt must be safe as written: the diagnostic tier leaves it unchanged.
    pub(super) fn fixed_excerpt(
        &mut self,
        file: &Arc<SourceFile>,
        text: &StringLit,
    ) -> Option<String> {
        let problem = if text.value.trim().is_empty() {
            Some("the excerpt is empty".to_owned())
        } else if text.value.len() > faultline_runtime::MAX_EXCERPT_BYTES {
            Some(format!(
                "{} bytes, more than the {}-byte excerpt bound",
                text.value.len(),
                faultline_runtime::MAX_EXCERPT_BYTES
            ))
        } else {
            let redacted = faultline_runtime::redact_diagnostic(&text.value);
            (redacted != text.value).then(|| format!("redaction would rewrite it as `{redacted}`"))
        };
        let Some(problem) = problem else {
            return Some(text.value.clone());
        };
        self.push(
            Diagnostic::new(Code::UnsafeExcerpt, "the fixed excerpt is not redaction-clean")
                .primary(file, text.span, problem)
                .help("write placeholders such as `<release-date>` or `<package>` where the values would be"),
        );
        None
    }

    pub(super) fn rule_block(
        &mut self,
        file: &Arc<SourceFile>,
        block: &Block,
        declarations: &Declarations<'_>,
        codes: &HashMap<&str, &CodeDef>,
    ) -> Option<RuleDef> {
        let mut ok = true;
        for clause in &block.clauses {
            if matches!(clause.kind, ClauseKind::Class(_) | ClauseKind::Flags(_)) {
                ok = false;
                self.misplaced(file, "rule", clause, "`class` and `flags` belong to the rule's `code` declaration, which every rule with that code shares");
            }
        }
        let matches_text = block
            .clauses
            .iter()
            .any(|clause| matches!(clause.kind, ClauseKind::Match(_)));
        if let Some(problem) = rule_id_problem(&block.name.value, matches_text) {
            ok = false;
            self.push(
                Diagnostic::new(Code::MalformedRuleId, format!("malformed rule id `{}`", block.name.value))
                    .primary(file, block.name.span, problem)
                    .help("rule ids look like `family.kind.signature.v1`, e.g. `anthropic.overloaded.529.v1`"),
            );
        }
        ok &= self.require(file, block, "code", "rule", "code provider_overloaded");
        ok &= self.require(file, block, "confidence", "rule", "confidence high");
        ok &= self.require(file, block, "tier", "rule", "tier provider");

        let code = match self.single(file, block, "code").map(|c| &c.kind) {
            Some(ClauseKind::Code(name)) => match codes.get(name.value.as_str()) {
                Some(code) => Some(*code),
                None => {
                    if !declarations.codes.contains_key(&name.value) {
                        self.push(
                            Diagnostic::new(Code::UndeclaredCode, format!("code `{}` is not declared", name.value))
                                .primary(file, name.span, "undeclared code")
                                .help(match suggest::closest(&name.value, declarations.codes.keys().map(String::as_str)) {
                                    Some(best) => format!("did you mean `{best}`? otherwise declare it with a `code {} {{ … }}` block", name.value),
                                    None => format!("declare it with `code {} {{ class … flags [...] scope … }}`", name.value),
                                }),
                        );
                    }
                    None
                }
            },
            _ => None,
        };
        let confidence = match self.single(file, block, "confidence").map(|c| &c.kind) {
            Some(ClauseKind::Confidence(name)) => self.vocab::<Confidence>(file, name),
            _ => None,
        };
        let explicit_scope = match self.single(file, block, "scope").map(|c| &c.kind) {
            Some(ClauseKind::Scope(name)) => Some(self.vocab::<Scope>(file, name)),
            _ => None,
        };
        let tier = match self.single(file, block, "tier").map(|c| &c.kind) {
            Some(ClauseKind::Tier(name)) => {
                let index = declarations
                    .tiers
                    .iter()
                    .position(|tier| *tier == name.value);
                if index.is_none() && !declarations.tiers.is_empty() {
                    self.push(
                        Diagnostic::new(
                            Code::UnknownTier,
                            format!("unknown tier `{}`", name.value),
                        )
                        .primary(file, name.span, "not in the catalogue's `tiers` list")
                        .help(suggest::help(
                            &name.value,
                            "tier",
                            declarations.tiers.iter().map(String::as_str),
                        )),
                    );
                }
                index
            }
            _ => None,
        };
        let rank = match self.single(file, block, "rank").map(|c| &c.kind) {
            Some(ClauseKind::Rank(int)) => {
                let rank = self.int_in(file, int, 0..=MAX_RANK, "rank");
                ok &= rank.is_some();
                rank
            }
            _ => None,
        };
        let (timing, body_reset_at) = match self.single(file, block, "timing").map(|c| &c.kind) {
            Some(ClauseKind::Timing(list)) => {
                let timing = self.vocab_list::<TimingExtractor>(file, &list.names());
                let pointers = self.timing_pointers(file, list);
                ok &= timing.is_some() && pointers.is_some();
                (timing.unwrap_or_default(), pointers.unwrap_or_default())
            }
            _ => (Vec::new(), Vec::new()),
        };
        let excerpt = match self.single(file, block, "excerpt").map(|c| &c.kind) {
            Some(ClauseKind::Excerpt(text)) => {
                let excerpt = self.fixed_excerpt(file, text);
                ok &= excerpt.is_some();
                excerpt
            }
            _ => None,
        };
        let remediation = match self.single(file, block, "remediation").map(|c| &c.kind) {
            Some(ClauseKind::Remediation(remediation)) => {
                let spec = self.remediation(file, remediation);
                ok &= spec.is_some();
                spec
            }
            _ => None,
        };
        let (before, after) = self.order_relations(file, block, tier, declarations, &mut ok);
        let guards = self.guards(file, block, &declarations.providers, &mut ok);
        let mut matchers = Vec::new();
        let mut vetoes = Vec::new();
        for clause in &block.clauses {
            match &clause.kind {
                ClauseKind::Match(matcher) => match self.matcher(file, matcher) {
                    Some(checked) => matchers.push(checked),
                    None => ok = false,
                },
                ClauseKind::Unless(matcher) => match self.matcher(file, matcher) {
                    Some(checked) => vetoes.push(checked),
                    None => ok = false,
                },
                ClauseKind::UnlessShared(name) => {
                    match declarations.checked_vetoes.get(&name.value) {
                        // Later stages report on the rule's own file: the span is the use.
                        Some(Some(shared)) => vetoes.extend(shared.iter().map(|one| TextMatcher {
                            span: name.span,
                            shared: one.shared.as_ref().map(|declared| SharedVetoUse {
                                used_as: name.value.clone(),
                                veto: declared.veto.clone(),
                            }),
                            ..one.clone()
                        })),
                        // Its errors are reported at its declaration.
                        Some(None) => ok = false,
                        None => {
                            ok = false;
                            self.push(super::declarations::undeclared_veto(
                                file,
                                name,
                                &declarations.vetoes,
                                true,
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        let mut examples = Vec::new();
        let mut counterexamples = Vec::new();
        for clause in &block.clauses {
            let (target, evidence) = match &clause.kind {
                ClauseKind::Example(evidence) => (&mut examples, evidence),
                ClauseKind::Counterexample(evidence) => (&mut counterexamples, evidence),
                _ => continue,
            };
            match self.example(file, evidence, &guards, &declarations.providers) {
                Some(example) => target.push(example),
                None => ok = false,
            }
        }
        let has_clause = |keyword: &str| {
            block
                .clauses
                .iter()
                .any(|clause| clause.kind.keyword() == keyword)
        };
        let missing = match (has_clause("example"), has_clause("counterexample")) {
            (false, false) => Some("an `example` and a `counterexample`"),
            (false, true) => Some("an `example`"),
            (true, false) => Some("a `counterexample`"),
            (true, true) => None,
        };
        if let Some(missing) = missing.filter(|_| matches_text) {
            self.push(
                Diagnostic::new(Code::MissingExample, format!("text rule `{}` lacks {missing}", block.name.value))
                    .primary(file, block.name.span, format!("needs {missing}"))
                    .help("every text rule carries a real (sanitized) message it must classify, `example \"…\"`, and prose quoting it that it must not fire on, `counterexample \"…\"`"),
            );
        }
        let code = code?;
        let scope = match explicit_scope {
            Some(scope) => scope?,
            None => code.scope,
        };
        if !ok {
            return None;
        }
        Some(RuleDef {
            id: block.name.value.clone(),
            doc: doc_text(block),
            code: code.name.clone(),
            confidence: confidence?,
            scope,
            tier: tier?,
            rank,
            before,
            after,
            guards,
            matchers,
            vetoes,
            timing,
            body_reset_at,
            remediation,
            excerpt,
            examples,
            counterexamples,
            origin: Origin {
                file: Arc::clone(file),
                span: block.name.span,
            },
        })
    }

    pub(super) fn order_relations(
        &mut self,
        file: &Arc<SourceFile>,
        block: &Block,
        tier: Option<usize>,
        declarations: &Declarations<'_>,
        ok: &mut bool,
    ) -> (Vec<String>, Vec<String>) {
        let mut before = Vec::new();
        let mut after = Vec::new();
        for clause in &block.clauses {
            let (target, name) = match &clause.kind {
                ClauseKind::Before(name) => (&mut before, name),
                ClauseKind::After(name) => (&mut after, name),
                _ => continue,
            };
            match declarations.rules.get(&name.value) {
                None => {
                    *ok = false;
                    self.push(
                        Diagnostic::new(
                            Code::UnknownRuleReference,
                            format!("no rule has the id `{}`", name.value),
                        )
                        .primary(file, name.span, "unknown rule")
                        .help(
                            match suggest::closest(
                                &name.value,
                                declarations.rules.keys().map(String::as_str),
                            ) {
                                Some(best) => format!("did you mean `{best}`?"),
                                None => {
                                    "order relations name rules of the same tier by their full id"
                                        .to_owned()
                                }
                            },
                        ),
                    );
                }
                Some((other_file, other)) => {
                    let other_tier = other.clauses.iter().find_map(|clause| match &clause.kind {
                        ClauseKind::Tier(tier) => {
                            declarations.tiers.iter().position(|t| *t == tier.value)
                        }
                        _ => None,
                    });
                    if let (Some(mine), Some(theirs)) = (tier, other_tier)
                        && mine != theirs
                    {
                        *ok = false;
                        let (mine_name, theirs_name) = (
                            declarations.tiers.get(mine).cloned().unwrap_or_default(),
                            declarations.tiers.get(theirs).cloned().unwrap_or_default(),
                        );
                        let other_file = Arc::clone(other_file);
                        self.push(
                            Diagnostic::new(
                                Code::CrossTierOrder,
                                format!("`{}` (tier `{mine_name}`) is ordered against `{}` (tier `{theirs_name}`)", block.name.value, name.value),
                            )
                            .primary(file, clause.span, "relation across tiers")
                            .secondary(&other_file, other.name.span, format!("in tier `{theirs_name}`"))
                            .help("tiers already order these rules; delete the relation, or move one rule into the other's tier"),
                        );
                    } else {
                        target.push(name.value.clone());
                    }
                }
            }
        }
        (before, after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn rule_ids_are_dotted_lowercase_and_text_rules_are_versioned() {
        assert_eq!(rule_id_problem("anthropic.overloaded.529.v1", true), None);
        assert_eq!(rule_id_problem("http.429", false), None);
        assert!(rule_id_problem("http.429", true).is_some());
        assert!(rule_id_problem("Claude.rate.v1", true).is_some());
        assert!(rule_id_problem("claude..rate.v1", true).is_some());
        assert!(rule_id_problem("claude.rate.v01", true).is_some());
        assert!(rule_id_problem("single", false).is_some());
    }
}
