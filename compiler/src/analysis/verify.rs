//! Witness verification: a found text becomes evidence that satisfies the rules' guards, and
//! only what the compiled classifier confirms is reported. The inline examples are checked
//! here too: they are evidence run through the same classifier.

use std::collections::HashMap;

use faultline_dsl::{Code, Diagnostic};
use faultline_runtime::build::KeyedGuardEntry;
use faultline_runtime::build::REGEX_SIZE_LIMIT;
use faultline_runtime::{Body, Evidence, EvidenceField, Headers, Phase, TextView};

use crate::ir::{Catalogue, Example, Guards, RuleDef, RuleIndex};
use crate::priority::Priority;

use super::search::{Component, Search, WitnessText};
use super::{Analyzer, Compiled, Scope, describe};

impl Analyzer<'_> {
    /// Evidence for a witness: the texts of the evidence text's views joined into stderr, those
    /// of body pointers set in the body (each further text of one pointer with `*` as a new
    /// element), and the structured fields chosen to satisfy every rule's guards.
    pub(super) fn evidence(&self, rules: &[RuleIndex], texts: &[WitnessText]) -> Evidence {
        let mut evidence = Evidence::default();
        let guards: Vec<&Guards> = rules
            .iter()
            .filter_map(|&r| self.catalogue.rule(r))
            .map(|r| &r.guards)
            .collect();
        fn pick<T: Clone + PartialEq>(lists: Vec<&Option<Vec<T>>>) -> Option<T> {
            let constrained: Vec<&Vec<T>> = lists.into_iter().flatten().collect();
            let first = constrained.first()?;
            first
                .iter()
                .find(|value| constrained.iter().all(|list| list.contains(value)))
                .cloned()
        }
        evidence.phase = pick(guards.iter().map(|g| &g.phase).collect());
        evidence.provider_id = pick(guards.iter().map(|g| &g.provider_id).collect());
        evidence.source = pick(guards.iter().map(|g| &g.source).collect());
        evidence.http_status = pick(guards.iter().map(|g| &g.http_status).collect());
        evidence.exit_code = pick(guards.iter().map(|g| &g.exit_code).collect());
        let headers: Vec<&KeyedGuardEntry> = guards.iter().flat_map(|g| &g.headers).collect();
        if !headers.is_empty() {
            let mut built = Headers::new();
            for (key, value) in keyed_witness(&headers) {
                built.insert(&key, &value);
            }
            evidence.headers = Some(built);
        }
        let body: Vec<&KeyedGuardEntry> = guards.iter().flat_map(|g| &g.body).collect();
        let wants_body = guards
            .iter()
            .any(|g| g.present.contains(&EvidenceField::Body));
        let body_texts: Vec<(&str, &str)> = texts
            .iter()
            .filter_map(|(view, pointer, text)| match (view, pointer) {
                (TextView::Body, Some(pointer)) => Some((pointer.as_str(), text.as_str())),
                _ => None,
            })
            .collect();
        if !body.is_empty() || wants_body || !body_texts.is_empty() {
            let mut root = serde_json::Value::Object(serde_json::Map::new());
            for (pointer, value) in keyed_witness(&body) {
                set_pointer(&mut root, &pointer, value, false);
            }
            // Under a `*`, one array holds a value for every guard: two rules on different
            // values of `/error/details/*/reason` both fire on a body listing both.
            for guard in &body {
                let starred = guard.key.split('/').any(|segment| segment == "*");
                if let (true, Some(first)) =
                    (starred, guard.values.as_ref().and_then(|v| v.first()))
                {
                    set_pointer(&mut root, &guard.key, first.clone(), true);
                }
            }
            let mut written: Vec<&str> = Vec::new();
            for (pointer, text) in &body_texts {
                let again = written.contains(pointer);
                set_pointer(&mut root, pointer, (*text).to_owned(), again);
                written.push(pointer);
            }
            evidence.body = Some(Body::from_text(&root.to_string()));
        }
        if guards
            .iter()
            .any(|g| g.present.contains(&EvidenceField::Headers))
            && evidence.headers.as_ref().is_none_or(Headers::is_empty)
        {
            evidence.headers = Some(Headers::from_block("x-request-id: witness"));
        }
        let text: Vec<&str> = texts
            .iter()
            .filter(|(view, _, _)| *view != TextView::Body)
            .map(|(_, _, text)| text.as_str())
            .collect();
        evidence.stderr = Some(text.join("\n")).filter(|t| !t.is_empty());
        for field in guards.iter().flat_map(|g| g.present.iter()) {
            match field {
                EvidenceField::Phase if evidence.phase.is_none() => {
                    evidence.phase = Some(Phase::PromptSend)
                }
                EvidenceField::Source if evidence.source.is_none() => {
                    evidence.source = Some(faultline_runtime::Source::AcpUpdate)
                }
                EvidenceField::ExitCode if evidence.exit_code.is_none() => {
                    evidence.exit_code = Some(1)
                }
                EvidenceField::HttpStatus if evidence.http_status.is_none() => {
                    evidence.http_status = Some(418)
                }
                EvidenceField::ProviderId if evidence.provider_id.is_none() => {
                    evidence.provider_id = self.catalogue.providers.first().cloned()
                }
                EvidenceField::ResetHint => {
                    evidence.reset_hint = Some("2030-01-01T00:00:00Z".to_owned())
                }
                EvidenceField::Stderr if evidence.stderr.is_none() => {
                    evidence.stderr = Some("x".to_owned())
                }
                EvidenceField::Stdout => evidence.stdout = Some("x".to_owned()),
                EvidenceField::ManagedRuntimePackageSpec => {
                    evidence.managed_runtime_package_spec = Some("pkg@1.0.0".to_owned())
                }
                _ => {}
            }
        }
        for &rule in rules {
            if let Some((pattern, group, field)) =
                self.text(rule).and_then(|t| t.group_fill.clone())
            {
                let raw = evidence.stderr.clone().unwrap_or_default();
                let captured = crate::pattern::regex(&pattern, REGEX_SIZE_LIMIT)
                    .ok()
                    .and_then(|regex| {
                        regex
                            .captures(&raw)
                            .and_then(|c| c.get(group as usize).map(|g| g.as_str().to_owned()))
                    });
                if let (Some(value), EvidenceField::ManagedRuntimePackageSpec) = (captured, field) {
                    evidence.managed_runtime_package_spec = Some(value);
                }
            }
        }
        evidence
    }

    /// Finds the first witness of a query on which `verify` holds: `Ok(None)` when the search
    /// proves the query empty, [`Undecided`] when it ran out of budget or no witness it found
    /// held.
    pub(super) fn verified(
        &self,
        rules: &[RuleIndex],
        components: &[&Component],
        verify: impl Fn(&Evidence) -> bool,
    ) -> Result<Option<Evidence>, Undecided> {
        match self.search(components, self.budget.max_witnesses) {
            Search::Empty => Ok(None),
            Search::Exhausted => Err(Undecided),
            Search::Witnesses(witnesses) => {
                for texts in witnesses {
                    let evidence = self.evidence(rules, &texts);
                    if verify(&evidence) {
                        return Ok(Some(evidence));
                    }
                }
                Err(Undecided)
            }
        }
    }
}

/// The search could neither prove a query empty nor find a witness that the bundle confirms,
/// within its budget: the analysis reports nothing it cannot show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Undecided;

/// Runs every inline example of the analysed rules through the compiled bundle; the examples
/// of a rule whose order waits on a rule with errors wait with it (counterexamples do not
/// depend on the order).
pub(crate) fn check_examples(
    catalogue: &Catalogue,
    priority: &Priority,
    bundle: &Compiled<'_>,
    scope: &Scope,
) -> Vec<Diagnostic> {
    let index: HashMap<&str, RuleIndex> = catalogue
        .indices()
        .map(|(i, rule)| (rule.id.as_str(), i))
        .collect();
    let rules: Vec<(RuleIndex, &RuleDef)> = catalogue
        .indices()
        .filter(|(rule_index, _)| scope.analysed(*rule_index))
        .collect();
    // Each rule's examples are independent, and classifying them compiles most of the bundle's
    // regexes for the first time: the rules are checked on worker threads.
    crate::parallel::map(&rules, |&(rule_index, rule)| {
        rule_examples(rule_index, rule, &index, priority, bundle, scope)
    })
    .into_iter()
    .flatten()
    .collect()
}

/// The failures of one rule's examples and counterexamples.
fn rule_examples(
    rule_index: RuleIndex,
    rule: &RuleDef,
    index: &HashMap<&str, RuleIndex>,
    priority: &Priority,
    bundle: &Compiled<'_>,
    scope: &Scope,
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let order_known = scope.order_known(rule_index);
    let run = |example: &Example| {
        let evidence = example.evidence.clone();
        let classification = bundle.classify(&evidence);
        // A shared veto is named as the rule names it: `vetoed by `unless` 3` would point at no
        // clause when the third veto is a member of a veto set.
        let own_step = bundle
            .step(rule_index, &evidence)
            .map(
                |step| match step.vetoed_by.and_then(|index| rule.veto_clause(index)) {
                    Some(clause) => format!("vetoed by {clause}"),
                    None => step.said,
                },
            )
            .unwrap_or_default();
        (evidence, classification, own_step)
    };
    for example in rule.examples.iter().filter(|_| order_known) {
        let (evidence, classification, own_step) = run(example);
        // Beside errors, a winner that nothing orders above the rule wins only by the
        // tie-break, which the rules with errors may change.
        let by_tie_break = scope.partial
            && own_step == "fired"
            && index
                .get(classification.rule.as_str())
                .is_some_and(|&winner| priority.unordered(winner, rule_index));
        if classification.rule != rule.id && !by_tie_break {
            let why = if own_step == "fired" {
                format!(
                    "`{}` fired but `{}` outranks it",
                    rule.id, classification.rule
                )
            } else {
                format!(
                    "`{}` {own_step}; `{}` won with `{}`",
                    rule.id, classification.rule, classification.code
                )
            };
            diagnostics.push(
                Diagnostic::new(Code::ExampleFailed, format!("example does not classify as `{}`", rule.id))
                    .primary(&example.origin.file, example.origin.span, why)
                    .note(format!("evidence: {}", describe(&evidence)))
                    .note(format!("sanitized text: {:?}", classification.excerpt))
                    .help("correct the rule or the example; if another rule rightly wins, declare the order with `before`/`after`"),
            );
        }
    }
    for example in &rule.counterexamples {
        let (evidence, classification, own_step) = run(example);
        if own_step == "fired" {
            diagnostics.push(
                Diagnostic::new(Code::ExampleFailed, format!("counterexample fires `{}`", rule.id))
                    .primary(&example.origin.file, example.origin.span, format!("`{}` fires on this (the winner is `{}`)", rule.id, classification.rule))
                    .note(format!("evidence: {}", describe(&evidence)))
                    .help("narrow the rule (anchor it, or add an `unless` veto), or correct the counterexample"),
            );
        }
    }
    diagnostics
}

/// One value per key that satisfies every guard on it when one exists (the first value of the
/// first list that every other list allows), else the first guard's; `present` alone gives a
/// placeholder. Keys in first-seen order.
fn keyed_witness(guards: &[&KeyedGuardEntry]) -> Vec<(String, String)> {
    let mut keys: Vec<&str> = Vec::new();
    for guard in guards {
        if !keys.contains(&guard.key.as_str()) {
            keys.push(&guard.key);
        }
    }
    keys.into_iter()
        .map(|key| {
            let lists: Vec<&Vec<String>> = guards
                .iter()
                .filter(|guard| guard.key == key)
                .filter_map(|guard| guard.values.as_ref())
                .collect();
            let value = lists
                .first()
                .and_then(|first| {
                    first
                        .iter()
                        .find(|value| {
                            lists
                                .iter()
                                .all(|list| list.iter().any(|v| v.eq_ignore_ascii_case(value)))
                        })
                        .or_else(|| first.first())
                })
                .cloned()
                .unwrap_or_else(|| "witness".to_owned());
            (key.to_owned(), value)
        })
        .collect()
}

/// Sets `value` at a JSON Pointer in `root`, creating what is missing on the way: an object,
/// or an array of one element where the next segment is `*`. A pointer that runs through a
/// value already set otherwise is skipped.
///
/// With `append`, the last `*` segment gets a new element rather than reusing the first.
fn set_pointer(root: &mut serde_json::Value, pointer: &str, value: String, append: bool) {
    use serde_json::Value;
    let Some(segments) = faultline_runtime::parse_pointer(pointer) else {
        return;
    };
    let fresh = |next: Option<&String>| {
        if next.is_some_and(|segment| segment == "*") {
            Value::Array(Vec::new())
        } else {
            Value::Object(serde_json::Map::new())
        }
    };
    let last_star = segments.iter().rposition(|segment| segment == "*");
    let mut at = root;
    for (index, segment) in segments.iter().enumerate() {
        let following = segments.get(index + 1);
        let next = match at {
            Value::Array(items) if segment == "*" => {
                if items.is_empty() || (append && Some(index) == last_star) {
                    items.push(fresh(following));
                }
                let reuse_first = !(append && Some(index) == last_star);
                let item = if reuse_first {
                    items.first_mut()
                } else {
                    items.last_mut()
                };
                match item {
                    Some(item) => item,
                    None => return,
                }
            }
            Value::Object(map) => map
                .entry(segment.clone())
                .or_insert_with(|| fresh(following)),
            _ => return,
        };
        at = next;
    }
    *at = Value::String(value);
}
