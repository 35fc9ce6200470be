//! Findings on single rules: dead rules and dead vetoes (FL0104, FL0105), shadowed rules
//! (FL0103), and the budget finding (FL0108) every analysis falls back to.

use faultline_dsl::{Code, Diagnostic};
use faultline_runtime::Evidence;

use crate::ir::{RuleDef, RuleIndex};

use super::search::{Component, Polarity, Search};
use super::verify::Undecided;
use super::{Analyzer, describe, flag};

/// What the shadowing search settled about one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shadowing {
    /// A witness on which the rule fires and wins.
    Wins,
    /// Higher-priority rules fire on every evidence the rule fires on.
    NeverWins,
}

impl Analyzer<'_> {
    /// Whether one of the rule's inline examples shows it firing: a witness the author already
    /// wrote, verified by the compiled classifier like any found one, which spares the product
    /// search (the costliest queries are the liveness and shadowing searches of rules with
    /// many vetoes). Classified ahead, on worker threads ([`super::ExampleVerdict`]).
    fn fires_on_example(&self, index: RuleIndex) -> bool {
        self.examples
            .get(index.as_usize())
            .is_some_and(|verdict| verdict.fires)
    }

    /// Whether one of the rule's inline examples shows it winning.
    fn wins_on_example(&self, index: RuleIndex) -> bool {
        self.examples
            .get(index.as_usize())
            .is_some_and(|verdict| verdict.wins)
    }

    /// Whether a rule fires on some evidence, as the dead-rule check decides it (a rule it
    /// cannot decide counts as live).
    pub(super) fn fires_somewhere(&self, index: RuleIndex) -> bool {
        let (Some(rule), Some(text)) = (self.rule(index), self.text(index)) else {
            return false;
        };
        if !self.scope.analysed(index) {
            return false;
        }
        if text.components.is_empty() && rule.matchers.is_empty() {
            return true;
        }
        if self.fires_on_example(index) {
            return true;
        }
        let components: Vec<&Component> = text.components.iter().collect();
        !matches!(
            self.verified(&[index], &components, |evidence| {
                self.bundle.fires(index, evidence)
            }),
            Ok(None)
        )
    }

    pub(super) fn dead_rules_and_vetoes(&self) -> Vec<bool> {
        let mut live = vec![true; self.catalogue.rules.len()];
        for (index, rule) in self.catalogue.indices() {
            let Some(text) = self.text(index) else {
                continue;
            };
            if !self.scope.analysed(index) {
                if let Some(slot) = live.get_mut(index.as_usize()) {
                    *slot = false;
                }
                continue;
            }
            if text.components.is_empty() && rule.matchers.is_empty() {
                continue;
            }
            let components: Vec<&Component> = text.components.iter().collect();
            let fires_on_example = self.fires_on_example(index);
            let found = if fires_on_example {
                Ok(Some(()))
            } else {
                self.verified(&[index], &components, |evidence| {
                    self.bundle.fires(index, evidence)
                })
                .map(|witness| witness.map(|_| ()))
            };
            match found {
                Ok(Some(())) => {}
                Ok(None) => {
                    if let Some(slot) = live.get_mut(index.as_usize()) {
                        *slot = false;
                    }
                    let vetoed = text
                        .components
                        .iter()
                        .any(|c| c.polarity == Polarity::MustNot);
                    let must: Vec<&Component> = text
                        .components
                        .iter()
                        .filter(|c| c.polarity == Polarity::Must)
                        .collect();
                    let matchers_alone = self.search(&must, 1);
                    if let (true, Search::Witnesses(found)) = (vetoed, matchers_alone) {
                        let evidence =
                            self.evidence(&[index], found.first().map_or(&[][..], Vec::as_slice));
                        self.report(
                            Diagnostic::new(Code::DeadVeto, format!("the vetoes of `{}` veto everything its matchers accept", rule.id))
                                .primary(&rule.origin.file, rule.origin.span, "every text its matchers accept is vetoed")
                                .note(format!("witness (matched, then vetoed): {}", describe(&evidence)))
                                .note("proof: the search over its matchers and vetoes found no text that fires the rule")
                                .help("narrow the `unless` so that it only vetoes what it should, or delete it"),
                        );
                    } else {
                        self.report(
                            Diagnostic::new(Code::DeadRule, format!("`{}` fires on no evidence", rule.id))
                                .primary(&rule.origin.file, rule.origin.span, "no text satisfies all its matchers")
                                .note("proof: the breadth-first search over the product of its matchers' automata is empty")
                                .help("correct the matcher that contradicts the others (check anchors such as `^`, `\\A`, `$`), or delete the rule"),
                        );
                    }
                }
                Err(Undecided) => {
                    self.budget_exceeded(rule, None, "could not show that it fires on any evidence")
                }
            }
            // A veto that never matches where the rule's matchers do vetoes nothing.
            if flag(&live, index) {
                for veto in text
                    .components
                    .iter()
                    .filter(|c| c.polarity == Polarity::MustNot)
                {
                    let mut query: Vec<Component> = text
                        .components
                        .iter()
                        .filter(|c| c.polarity == Polarity::Must)
                        .cloned()
                        .collect();
                    query.push(Component {
                        polarity: Polarity::Must,
                        ..veto.clone()
                    });
                    let refs: Vec<&Component> = query.iter().collect();
                    if let Search::Empty = self.search(&refs, 1) {
                        self.report(
                            Diagnostic::new(Code::DeadVeto, format!("an `unless` of `{}` never matches where its matchers do", rule.id))
                                .primary(&rule.origin.file, rule.origin.span, "this rule's veto vetoes nothing")
                                .note("proof: no text satisfies the rule's matchers and the veto together")
                                .help("correct the veto so that it matches the texts it should stop, or delete it"),
                        );
                    }
                }
            }
        }
        live
    }

    /// Whether `upper` can stand in a query as "does not fire": its guards hold whenever
    /// `rule`'s do and its firing condition is one exactly represented component.
    pub(super) fn covering_component(
        &self,
        rule: &RuleDef,
        upper_index: RuleIndex,
    ) -> Option<Option<Component>> {
        let upper = self.rule(upper_index)?;
        let upper_text = self.text(upper_index)?;
        if !Self::guards_imply(&rule.guards, &upper.guards) || !upper_text.exact {
            return None;
        }
        match upper_text.components.as_slice() {
            [] if upper.matchers.is_empty() => Some(None),
            [single] if single.polarity == Polarity::Must => Some(Some(Component {
                polarity: Polarity::MustNot,
                ..single.clone()
            })),
            _ => None,
        }
    }

    /// Counterexample-guided: search for evidence where the rule fires, classify it, and when a
    /// higher rule wins instead, exclude that rule's text and search again. An empty query
    /// proves the rule can never win; a witness it wins on proves it can.
    pub(super) fn shadowed(&self, live: &[bool]) {
        const REFINEMENTS: usize = 24;
        for &index in self.priority.order() {
            let (Some(rule), Some(text)) = (self.rule(index), self.text(index)) else {
                continue;
            };
            // A rule whose order waits on a rule with errors may yet be ordered above the rules
            // that cover it now.
            if !flag(live, index) || !self.scope.order_known(index) {
                continue;
            }
            let id = rule.id.clone();
            if self.wins_on_example(index) {
                continue;
            }
            let mut excluded: Vec<Component> = Vec::new();
            let mut covering_rules: Vec<RuleIndex> = Vec::new();
            let mut verdict: Option<Shadowing> = None;
            let mut first_witness: Option<Evidence> = None;
            let mut held = false;
            'refine: for _ in 0..REFINEMENTS {
                let query: Vec<&Component> = text.components.iter().chain(&excluded).collect();
                let witnesses = match self.search(&query, self.budget.max_witnesses) {
                    Search::Empty => {
                        verdict = Some(Shadowing::NeverWins);
                        break;
                    }
                    Search::Exhausted => break,
                    Search::Witnesses(witnesses) => witnesses,
                };
                let mut refined = false;
                for texts in witnesses {
                    let evidence = self.evidence(&[index], &texts);
                    if !self.bundle.fires(index, &evidence) {
                        continue;
                    }
                    let classification = self.bundle.classify(&evidence);
                    if classification.rule == id {
                        verdict = Some(Shadowing::Wins);
                        break 'refine;
                    }
                    first_witness.get_or_insert(evidence);
                    let winner = self.rule_index.get(classification.rule.as_str()).copied();
                    // Beside errors, a winner that nothing orders above the rule is above it
                    // only by the tie-break, which the rules with errors may change.
                    if let Some(winner) = winner
                        && self.scope.partial
                        && self.priority.unordered(winner, index)
                    {
                        held = true;
                        break 'refine;
                    }
                    if let Some(winner) = winner.filter(|w| !covering_rules.contains(w)) {
                        match self.covering_component(rule, winner) {
                            Some(None) => {
                                covering_rules.push(winner);
                                verdict = Some(Shadowing::NeverWins);
                                break 'refine;
                            }
                            Some(Some(component)) => {
                                excluded.push(component);
                                covering_rules.push(winner);
                                refined = true;
                                break;
                            }
                            None => {}
                        }
                    }
                }
                if !refined {
                    break;
                }
            }
            if held {
                continue;
            }
            match verdict {
                Some(Shadowing::Wins) => {}
                Some(Shadowing::NeverWins) => {
                    let names: Vec<String> = covering_rules
                        .iter()
                        .filter_map(|&r| self.rule(r))
                        .map(|r| format!("`{}`", r.id))
                        .collect();
                    let mut diagnostic = Diagnostic::new(
                        Code::ShadowedRule,
                        format!("`{}` can never win: higher-priority rules fire on every evidence it fires on", rule.id),
                    )
                    .primary(&rule.origin.file, rule.origin.span, "never wins");
                    for &covering_rule in covering_rules.iter().take(4) {
                        if let Some(upper) = self.rule(covering_rule) {
                            diagnostic = diagnostic.secondary(
                                &upper.origin.file,
                                upper.origin.span,
                                "outranks it",
                            );
                        }
                    }
                    let witness = first_witness.or_else(|| {
                        self.verified(&[index], &text.components.iter().collect::<Vec<_>>(), |e| {
                            self.bundle.fires(index, e)
                        })
                        .ok()
                        .flatten()
                    });
                    if let Some(evidence) = witness {
                        let classification = self.bundle.classify(&evidence);
                        diagnostic = diagnostic.note(format!(
                            "witness (verified: it fires, `{}` wins): {}",
                            classification.rule,
                            describe(&evidence)
                        ));
                    }
                    self.report(
                        diagnostic
                            .note(format!("covered by {}", names.join(", ")))
                            .help(format!("move `{}` above the rules that cover it (tier, rank or `before`), or delete it", rule.id)),
                    );
                }
                None => {
                    self.budget_exceeded(rule, None, "could not show evidence on which it wins")
                }
            }
        }
    }

    pub(super) fn budget_exceeded(&self, rule: &RuleDef, other: Option<String>, what: &str) {
        let subject = match &other {
            Some(other) => format!("`{other}` and `{}`", rule.id),
            None => format!("`{}`", rule.id),
        };
        self.report(
            Diagnostic::new(Code::AnalysisBudget, format!("analysis of {subject} exceeded its budget: {what}"))
                .primary(&rule.origin.file, rule.origin.span, "treated as colliding")
                .note(format!(
                    "budget: {} product states and {} candidate witnesses per query",
                    self.budget.max_states, self.budget.max_witnesses
                ))
                .help("order the rules explicitly, simplify the patterns, or raise the budget with `--analysis-budget`"),
        );
    }
}

#[cfg(test)]
mod tests {
    use faultline_dsl::Code;

    use crate::test_support::{catalogue, found, loaded, rule};
    use crate::{Compiler, PairVerdict};

    fn compile(rules: &str) -> Vec<faultline_dsl::Diagnostic> {
        Compiler::new()
            .compile(&loaded(&catalogue(rules)))
            .diagnostics
    }

    #[test]
    fn a_rule_whose_matchers_contradict_is_dead() {
        let diagnostics = compile(&rule(
            "test.dead.v1",
            "overloaded",
            "    match regex r\"\\Aoverloaded\\z\"\n    match regex r\"\\Aquota\\z\"",
            "overloaded",
        ));
        let dead = found(&diagnostics, Code::DeadRule);
        assert_eq!(dead.len(), 1, "{diagnostics:#?}");
        assert_eq!(dead[0].0, "test.dead.v1");
    }

    #[test]
    fn a_veto_of_everything_is_dead_with_a_witness_it_vetoes() {
        let diagnostics = compile(&rule(
            "test.vetoed.v1",
            "overloaded",
            "    match regex r\"overloaded\"\n    unless contains \"load\"",
            "overloaded",
        ));
        let vetoes = found(&diagnostics, Code::DeadVeto);
        let [(label, message, notes)] = vetoes.as_slice() else {
            panic!("{diagnostics:#?}");
        };
        assert_eq!(label, "test.vetoed.v1");
        assert!(message.contains("veto everything"), "{message}");
        assert!(
            notes
                .iter()
                .any(|note| note.starts_with("witness") && note.contains("overloaded")),
            "{notes:?}"
        );
    }

    #[test]
    fn an_example_the_rule_wins_on_shows_it_alive_without_a_search() {
        // The shortest witness needs more product states than this budget allows, so the
        // search alone cannot decide; the rule's own example, confirmed by the classifier, can.
        let budget = crate::AnalysisBudget {
            max_states: 8,
            ..crate::AnalysisBudget::default()
        };
        let compile_with_budget = |rules: &str| {
            Compiler::new()
                .analysis_budget(budget)
                .compile(&loaded(&catalogue(rules)))
                .diagnostics
        };
        let with_example = compile_with_budget(&rule(
            "test.long.v1",
            "overloaded",
            "    match regex r\"[a-z]{12}[0-9]\"",
            "abcdefghijkl9",
        ));
        assert!(
            found(&with_example, Code::AnalysisBudget).is_empty(),
            "{with_example:#?}"
        );
        // With an example it does not fire on (itself an error), the search must decide, and
        // cannot within the budget.
        let without_example = compile_with_budget(
            "\nrule test.long.v1 {\n    code overloaded\n    confidence high\n    tier main\n    match regex r\"[a-z]{12}[0-9]\"\n    example \"too short9\"\n    counterexample \"nothing to see\"\n}\n",
        );
        let undecided = found(&without_example, Code::AnalysisBudget);
        assert!(
            undecided
                .iter()
                .any(|(label, _, _)| label == "test.long.v1"),
            "{without_example:#?}"
        );
    }

    #[test]
    fn a_rule_covered_by_a_higher_one_is_shadowed_with_a_verified_witness() {
        let rules = rule(
            "test.wide.v1",
            "overloaded",
            "    rank 1\n    match contains \"overloaded\"",
            "server overloaded",
        ) + &rule(
            "test.narrow.v1",
            "rate_limited",
            "    rank 2\n    match contains \"overloaded 529\"",
            "overloaded 529",
        );
        let diagnostics = compile(&rules);
        let shadowed = found(&diagnostics, Code::ShadowedRule);
        let [(label, _, notes)] = shadowed.as_slice() else {
            panic!("{diagnostics:#?}");
        };
        assert_eq!(label, "test.narrow.v1");
        assert!(
            notes
                .iter()
                .any(|note| note.contains("`test.wide.v1` wins") && note.contains("overloaded 529")),
            "{notes:?}"
        );
        assert!(notes.iter().any(|note| note == "covered by `test.wide.v1`"));
    }

    #[test]
    fn pair_verdicts_name_what_keeps_two_unordered_rules_apart() {
        let rules = rule(
            "test.a.v1",
            "overloaded",
            "    match contains \"overloaded\"",
            "server overloaded",
        ) + &rule(
            "test.b.v1",
            "rate_limited",
            "    match contains \"quota\"",
            "quota",
        ) + &rule(
            "test.c.v1",
            "rate_limited",
            "    when http_status = 429\n    match contains \"overloaded\"",
            "overloaded",
        ) + &rule(
            "test.d.v1",
            "overloaded",
            "    when http_status = 500\n    match contains \"overloaded\"",
            "overloaded",
        ) + &rule(
            "test.e.v1",
            "overloaded",
            "    match contains \"busy\"",
            "busy",
        );
        let loaded = loaded(&catalogue(&rules));
        let verdict = |a: &str, b: &str| Compiler::new().pair_verdict(&loaded, a, b).unwrap().2;
        // Both fire on a text holding both signatures.
        let PairVerdict::Tie(evidence) = verdict("test.a.v1", "test.b.v1") else {
            panic!("a tie");
        };
        let text = evidence.stderr.unwrap_or_default();
        assert!(
            text.contains("overloaded") && text.contains("quota"),
            "{text:?}"
        );
        assert_eq!(
            verdict("test.c.v1", "test.d.v1"),
            PairVerdict::GuardsExclusive(faultline_runtime::EvidenceField::HttpStatus)
        );
        assert_eq!(verdict("test.a.v1", "test.e.v1"), PairVerdict::SameOutcome);
        assert_eq!(verdict("fallback.any", "test.a.v1"), PairVerdict::Ordered);
        assert!(
            Compiler::new()
                .pair_verdict(&loaded, "test.a.v1", "no.such.v1")
                .is_none()
        );
    }
}
