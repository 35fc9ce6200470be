//! Collision analysis: ties, shadowed and dead rules, dead vetoes and redundant signatures,
//! each proved over the automata and demonstrated by a verified witness.
//!
//! Every text matcher becomes a *component*: a lazy DFA searched from its unanchored start,
//! which is satisfied once it has matched anywhere. A query is a set of components that must match and
//! components that must not; a breadth-first search over the product of their automata, one
//! byte at a time in order of preference (letters, digits, space, punctuation, then the rest),
//! finds the shortest text satisfying the query, or proves that none exists. A component for
//! UTF-8 validity keeps witnesses valid text.
//!
//! Soundness. Where a component cannot be represented exactly within the budget, the analysis
//! over-approximates what a rule fires on: a positive matcher's bounded gaps are widened, a
//! prefix matcher's byte bound is relaxed, and a veto or a capture that does not fit is dropped.
//! So "cannot co-fire" and "fires on nothing" are exact claims; a found witness is only
//! reported after the compiled classifier confirms it; and a claim that needs more than the
//! budget is reported as such (FL0108), never dropped silently. A rule counts as covering
//! another (shadowing) only when its own firing condition is represented exactly.
//!
//! The stages, one module each: [`rule_text`] turns a rule's matchers into components,
//! [`automaton`] builds their automata, [`search`] runs the product search, [`verify`] turns a found text into evidence and confirms
//! it with the compiled classifier (through [`bundle`], the one door into it; the inline
//! examples are run through the same door), and the findings are [`findings`] (dead rules, dead vetoes,
//! shadowed rules), [`ties`] (pairs that nothing orders) and [`overlaps`] (redundant
//! signatures).

mod automaton;
mod bundle;
mod findings;
mod overlaps;
mod rule_text;
mod search;
mod ties;
mod verify;

use std::collections::HashMap;

use faultline_dsl::Diagnostic;
use faultline_runtime::{Evidence, EvidenceField};

use crate::db::Db;
use crate::ir::{Catalogue, RuleDef, RuleIndex};
use crate::priority::Priority;

pub(crate) use bundle::Compiled;
pub(crate) use verify::check_examples;

use automaton::ComponentBudget;
use rule_text::{RuleText, rule_text};
use search::Polarity;

/// Limits of the analysis. Part of the compiler's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalysisBudget {
    /// Product states one query may explore.
    pub max_states: usize,
    /// Candidate witnesses one query may try before giving up on verifying one.
    pub max_witnesses: usize,
    /// States one query may determinize per component automaton (its lazy DFA's cache), in bytes.
    pub component_dfa_bytes: usize,
}

impl Default for AnalysisBudget {
    fn default() -> Self {
        AnalysisBudget {
            max_states: 200_000,
            max_witnesses: 32,
            component_dfa_bytes: 8 << 20,
        }
    }
}

/// Which rules the analysis covers when some rules of the catalogue have errors (or are left
/// out of the bundle): the others are analysed, and findings that depend on the order of a
/// rule whose order is not known yet are held back (see docs/analysis.md).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Per catalogue rule: whether it is analysed at all (it checked clean and is in the
    /// bundle). Rules beyond the vector's end are.
    pub analysed: Vec<bool>,
    /// Per rule: whether it precedes (or is) a rule whose order is not known (it names a rule
    /// with errors in `before`/`after`, is named by one, or lies on a priority cycle).
    pub above_unknown: Vec<bool>,
    /// Per rule: whether it follows (or is) such a rule.
    pub below_unknown: Vec<bool>,
    /// Whether some rules are left out or some relations ignored: the tie-break between rules
    /// that nothing orders may then differ from the fixed catalogue's, so it decides nothing.
    pub partial: bool,
}

impl Scope {
    /// Whether the rule is analysed at all.
    pub fn analysed(&self, rule: RuleIndex) -> bool {
        self.analysed.get(rule.as_usize()).copied().unwrap_or(true)
    }

    /// Whether the rule's place in the order is settled: its shadowing and examples can be
    /// judged.
    pub fn order_known(&self, rule: RuleIndex) -> bool {
        !flag(&self.above_unknown, rule) && !flag(&self.below_unknown, rule)
    }

    /// Whether fixing the rules with errors cannot order `a` and `b` against each other.
    pub fn pair_order_known(&self, a: RuleIndex, b: RuleIndex) -> bool {
        let (up, down) = (&self.above_unknown, &self.below_unknown);
        !(flag(up, a) && flag(down, b) || flag(up, b) && flag(down, a))
    }
}

/// A per-rule flag (of a vector indexed by catalogue rule); `false` beyond its end.
fn flag(flags: &[bool], rule: RuleIndex) -> bool {
    flags.get(rule.as_usize()).copied().unwrap_or(false)
}

/// What the collision analysis concludes about two rules of one tier that nothing orders, the
/// answer `faultline check` (FL0102, FL0108) and `faultline order` give alike.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PairVerdict {
    /// A tier, a rank or a relation orders them: no collision check is needed.
    Ordered,
    /// They give the same outcome (code, confidence, scope): whichever wins, the result is the
    /// same.
    SameOutcome,
    /// Their structured guards cannot hold together (the field named).
    GuardsExclusive(EvidenceField),
    /// One of them fires on no evidence (its id).
    Dead(String),
    /// One of them is not analysed: it has errors, or its order waits on a rule that has.
    NotAnalysed(String),
    /// The search over their automata proves no evidence fires both.
    Disjoint,
    /// Both fire on this evidence, verified by the compiled classifier: a tie (FL0102).
    Tie(Box<Evidence>),
    /// The search ran out of budget, or found no verified witness (FL0108).
    Undecided,
}

struct Analyzer<'a> {
    db: &'a dyn Db,
    catalogue: &'a Catalogue,
    priority: &'a Priority,
    bundle: &'a Compiled<'a>,
    budget: &'a AnalysisBudget,
    components: ComponentBudget,
    scope: &'a Scope,
    texts: Vec<RuleText>,
    /// Catalogue index of each rule id.
    rule_index: HashMap<&'a str, RuleIndex>,
    /// Per catalogue rule: what its inline examples show.
    examples: Vec<ExampleVerdict>,
    /// Findings; interior mutability lets queries borrow the analyzer while reporting.
    diagnostics: std::cell::RefCell<Vec<Diagnostic>>,
}

/// What a rule's inline examples show of it, classified by the compiled bundle.
#[derive(Debug, Clone, Copy, Default)]
struct ExampleVerdict {
    /// It fires on one of them.
    fires: bool,
    /// It fires and wins on one of them.
    wins: bool,
}

impl ExampleVerdict {
    fn of(bundle: &Compiled<'_>, index: RuleIndex, rule: &RuleDef) -> Self {
        let mut verdict = ExampleVerdict::default();
        for example in &rule.examples {
            if !bundle.fires(index, &example.evidence) {
                continue;
            }
            verdict.fires = true;
            if bundle.classify(&example.evidence).rule == rule.id {
                verdict.wins = true;
                break;
            }
        }
        verdict
    }
}

/// What the analysis reads: the checked catalogue, its order and compiled bundle, the budgets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inputs<'a> {
    /// The checked catalogue.
    pub catalogue: &'a Catalogue,
    /// Its effective order.
    pub priority: &'a Priority,
    /// Its compiled bundle (the rules `scope` analyses).
    pub bundle: &'a Compiled<'a>,
    /// The analysis budget.
    pub budget: &'a AnalysisBudget,
    /// The automaton budgets (component automata share the lowering's exact attempts).
    pub lowering: &'a crate::lower::Budget,
    /// Which rules are analysed.
    pub scope: &'a Scope,
}

impl<'a> Analyzer<'a> {
    /// An analyzer of the rules `inputs.scope` covers (of `only` among them, when given).
    fn new(db: &'a dyn Db, inputs: Inputs<'a>, only: Option<&[RuleIndex]>) -> Self {
        let components = ComponentBudget::new(inputs.budget, inputs.lowering);
        let covered = |index: RuleIndex| {
            inputs.scope.analysed(index) && only.is_none_or(|only| only.contains(&index))
        };
        // Building the rules' automata is most of the analysis's time, and the builds are
        // independent: they run on worker threads first, the rule with the longest pattern
        // (a rough proxy for the costliest) first, and are then read memoized.
        let mut costliest_first: Vec<&RuleDef> = inputs
            .catalogue
            .indices()
            .filter(|(index, _)| covered(*index))
            .map(|(_, rule)| rule)
            .collect();
        costliest_first.sort_by_key(|rule| std::cmp::Reverse(rule_text::longest_pattern(rule)));
        let max_states = inputs.budget.max_states;
        crate::db::prefetch_in_parallel(db, &costliest_first, |db, rule| {
            let text = rule_text(db, rule, &components);
            // The dead-veto check of a rule with vetoes searches each of its components alone
            // (see `search::joined_witness`): those searches are independent too.
            if text
                .components
                .iter()
                .any(|c| c.polarity == Polarity::MustNot)
            {
                for component in &text.components {
                    search::search_alone(db, component, max_states, &components);
                }
            }
        });
        let texts = inputs
            .catalogue
            .indices()
            .map(|(index, rule)| {
                if covered(index) {
                    rule_text(db, rule, &components)
                } else {
                    RuleText::default()
                }
            })
            .collect();
        let rule_index = inputs
            .catalogue
            .indices()
            .map(|(i, r)| (r.id.as_str(), i))
            .collect();
        // The examples that spare a rule's liveness and shadowing searches, classified on worker
        // threads: on the main thread, one after another, they were a sixth of its time (a perf
        // profile, per thread).
        let covered_rules: Vec<(RuleIndex, &RuleDef)> = inputs
            .catalogue
            .indices()
            .filter(|(index, _)| covered(*index))
            .collect();
        let mut examples = vec![ExampleVerdict::default(); inputs.catalogue.rules.len()];
        let verdicts = crate::parallel::map(&covered_rules, |&(index, rule)| {
            ExampleVerdict::of(inputs.bundle, index, rule)
        });
        for ((index, _), verdict) in covered_rules.iter().zip(verdicts) {
            if let Some(slot) = examples.get_mut(index.as_usize()) {
                *slot = verdict;
            }
        }
        Analyzer {
            db,
            catalogue: inputs.catalogue,
            priority: inputs.priority,
            bundle: inputs.bundle,
            budget: inputs.budget,
            components,
            scope: inputs.scope,
            texts,
            rule_index,
            examples,
            diagnostics: std::cell::RefCell::new(Vec::new()),
        }
    }
}

/// Runs every analysis on the rules `inputs.scope` covers.
pub(crate) fn analyze(db: &dyn Db, inputs: Inputs<'_>) -> Vec<Diagnostic> {
    let analyzer = Analyzer::new(db, inputs, None);
    let live = analyzer.dead_rules_and_vetoes();
    analyzer.ties(&live);
    analyzer.shadowed(&live);
    analyzer.overlaps(&live);
    analyzer.diagnostics.into_inner()
}

/// The collision analysis's verdict on two rules (catalogue indices), as `faultline check`
/// reaches it for the pair.
pub(crate) fn pair_verdict(
    db: &dyn Db,
    inputs: Inputs<'_>,
    a: RuleIndex,
    b: RuleIndex,
) -> PairVerdict {
    let analyzer = Analyzer::new(db, inputs, Some(&[a, b]));
    let live = |rule: RuleIndex| analyzer.fires_somewhere(rule);
    analyzer.pair_verdict(a, b, &live)
}

impl Analyzer<'_> {
    fn rule(&self, index: RuleIndex) -> Option<&RuleDef> {
        self.catalogue.rule(index)
    }

    /// The rule's firing condition over text (empty for a rule not analysed).
    fn text(&self, index: RuleIndex) -> Option<&RuleText> {
        self.texts.get(index.as_usize())
    }

    fn report(&self, diagnostic: Diagnostic) {
        self.diagnostics.borrow_mut().push(diagnostic);
    }
}

fn describe(evidence: &Evidence) -> String {
    serde_json::to_string(evidence).unwrap_or_default()
}
