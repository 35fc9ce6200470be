//! Collision analysis: ties, shadowed and dead rules, dead vetoes and redundant signatures,
//! each proved over the automata and demonstrated by a verified witness.
//!
//! Every text matcher becomes a *component*: a DFA searched from its unanchored start, which is
//! satisfied once it has matched anywhere. A query is a set of components that must match and
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

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use faultline_dsl::{Code, Diagnostic};
use faultline_runtime::bundle::Step;
use faultline_runtime::{Bundle, Evidence, EvidenceField, Phase, TextView};
use regex_automata::Anchored;
use regex_automata::dfa::{Automaton as _, dense};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;

use crate::compile::example_evidence;
use crate::db::{Db, PatternKey, QueryKey};
use crate::ir::{
    Catalogue, ExampleEvidence, Guards, MatcherKind, RemediationSpec, RuleDef, TextMatcher,
};
use crate::lower::{build_dfa, widen};
use crate::priority::Priority;

/// Limits of the analysis. Part of the compiler's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnalysisBudget {
    /// Product states one query may explore.
    pub max_states: usize,
    /// Candidate witnesses one query may try before giving up on verifying one.
    pub max_witnesses: usize,
    /// Size of one component automaton, in bytes.
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

/// A component automaton.
#[derive(Debug)]
struct Automaton {
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
}

impl Automaton {
    fn build(pattern: &str, budget: usize) -> Result<(Arc<Automaton>, bool), String> {
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(pattern)
            .map_err(|e| e.to_string())?;
        let attempt = crate::lower::exact_attempt_budget(&hir, budget);
        let (dfa, approximate) = match build_dfa(std::slice::from_ref(&hir), attempt, attempt * 2) {
            Ok(dfa) => (dfa, false),
            Err(_) => (build_dfa(&[widen(&hir)], budget, budget * 4)?, true),
        };
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::No))
            .map_err(|e| e.to_string())?;
        Ok((Arc::new(Automaton { dfa, start }), approximate))
    }
}

/// A component automaton and whether it had to be widened. Tracked: built once per session.
#[salsa::tracked(returns(ref), no_eq)]
fn automaton<'db>(db: &'db dyn Db, key: PatternKey<'db>) -> Result<(Arc<Automaton>, bool), String> {
    Automaton::build(key.text(db), *key.budget(db))
}

/// Must a component match somewhere, or must it not?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Polarity {
    Must,
    MustNot,
}

#[derive(Debug, Clone)]
struct Component {
    /// The pattern (the key of its automaton and of the search memo).
    pattern: String,
    polarity: Polarity,
    view: TextView,
}

/// A rule's firing condition over text.
#[derive(Debug, Default)]
struct RuleText {
    /// Components whose conjunction (with polarities) the rule needs.
    components: Vec<Component>,
    /// Whether the components represent the rule exactly.
    exact: bool,
    /// Patterns of its regex matchers (for overlap), as (view, pattern, required words).
    patterns: Vec<(TextView, String, Option<Vec<String>>)>,
    /// A capture pattern whose group must equal an evidence field, for filling witnesses.
    group_fill: Option<(String, u32, EvidenceField)>,
}

fn whitespace_class() -> &'static str {
    r"\p{White_Space}"
}

/// The pattern a matcher is analysed as, and whether that is exact.
fn matcher_pattern(matcher: &TextMatcher) -> (String, bool) {
    let case = |ignore_case: bool| if ignore_case { "(?i)" } else { "" };
    let ws = whitespace_class();
    match &matcher.kind {
        MatcherKind::Regex {
            lowered,
            group_equals,
            ..
        } => (lowered.clone(), group_equals.is_none()),
        MatcherKind::Contains {
            literal,
            ignore_case,
        } => (
            format!("{}{}", case(*ignore_case), regex_syntax::escape(literal)),
            true,
        ),
        MatcherKind::Whole {
            literal,
            ignore_case,
        } => (
            format!(
                r"(?s)\A{ws}*(?:{}{}){ws}*\z",
                case(*ignore_case),
                regex_syntax::escape(literal)
            ),
            true,
        ),
        MatcherKind::Prefix {
            literal,
            ignore_case,
            suffix,
        } => {
            let head = format!(
                r"(?s)\A{ws}*(?:{}{})",
                case(*ignore_case),
                regex_syntax::escape(literal)
            );
            match suffix {
                None => (head, true),
                Some((0, _)) => (head, false),
                Some(_) => (format!(r"{head}{ws}*[^{ws}]"), false),
            }
        }
    }
}

struct Analyzer<'a> {
    db: &'a dyn Db,
    catalogue: &'a Catalogue,
    priority: &'a Priority,
    bundle: &'a Bundle,
    budget: &'a AnalysisBudget,
    texts: Vec<RuleText>,
    /// Catalogue index of each rule id.
    rule_index: HashMap<&'a str, usize>,
    /// Findings; interior mutability lets queries borrow the analyzer while reporting.
    diagnostics: std::cell::RefCell<Vec<Diagnostic>>,
}

/// Runs every analysis on a catalogue whose bundle compiled.
pub fn analyze(
    db: &dyn Db,
    catalogue: &Catalogue,
    priority: &Priority,
    bundle: &Bundle,
    budget: &AnalysisBudget,
) -> Vec<Diagnostic> {
    let mut texts = Vec::new();
    for rule in &catalogue.rules {
        texts.push(rule_text(db, rule, budget));
    }
    let rule_index = catalogue
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i))
        .collect();
    let analyzer = Analyzer {
        db,
        catalogue,
        priority,
        bundle,
        budget,
        texts,
        rule_index,
        diagnostics: std::cell::RefCell::new(Vec::new()),
    };
    let live = analyzer.dead_rules_and_vetoes();
    analyzer.ties(&live);
    analyzer.shadowed(&live);
    analyzer.overlaps(&live);
    analyzer.diagnostics.into_inner()
}

fn component_automaton(
    db: &dyn Db,
    pattern: &str,
    budget: &AnalysisBudget,
) -> Result<(Arc<Automaton>, bool), String> {
    let key = PatternKey::new(
        db,
        pattern.to_owned(),
        budget.component_dfa_bytes,
        budget.component_dfa_bytes,
    );
    automaton(db, key).clone()
}

fn rule_text(db: &dyn Db, rule: &RuleDef, budget: &AnalysisBudget) -> RuleText {
    let mut text = RuleText {
        exact: true,
        ..RuleText::default()
    };
    let component = |pattern: String, polarity: Polarity, view: TextView, text: &mut RuleText| {
        match component_automaton(db, &pattern, budget) {
            // A widened automaton over-approximates: sound for a positive matcher only.
            Ok((_, approximate)) if !(approximate && polarity == Polarity::MustNot) => {
                text.exact &= !approximate;
                text.components.push(Component {
                    pattern,
                    polarity,
                    view,
                });
            }
            _ => text.exact = false,
        }
    };
    for matcher in &rule.matchers {
        let (pattern, exact) = matcher_pattern(matcher);
        text.exact &= exact;
        if let MatcherKind::Regex {
            lowered,
            group_equals: Some((group, field)),
            ..
        } = &matcher.kind
        {
            text.group_fill = Some((lowered.clone(), *group, *field));
        }
        if let MatcherKind::Regex { lowered, .. } = &matcher.kind {
            let words =
                crate::db::required_words(db, crate::db::PatternText::new(db, lowered.clone()))
                    .clone();
            text.patterns.push((matcher.view, lowered.clone(), words));
        }
        component(pattern, Polarity::Must, matcher.view, &mut text);
    }
    for veto in &rule.vetoes {
        let (pattern, exact) = matcher_pattern(veto);
        if exact {
            component(pattern, Polarity::MustNot, veto.view, &mut text);
        } else {
            text.exact = false;
        }
    }
    if let Some(RemediationSpec::Capture { lowered, view, .. }) = &rule.remediation {
        component(lowered.clone(), Polarity::Must, *view, &mut text);
    }
    text
}

/// The outcome of a product search.
enum Search {
    /// The witness texts, per view, shortest first.
    Witnesses(Vec<Vec<(TextView, String)>>),
    /// No text satisfies the query.
    Empty,
    /// The budget ran out first.
    Exhausted,
}

/// Preference rank of a byte in witnesses: lower is preferred.
fn preference(byte: u8) -> u16 {
    match byte {
        b'a'..=b'z' => u16::from(byte - b'a'),
        b'0'..=b'9' => 26 + u16::from(byte - b'0'),
        b'A'..=b'Z' => 36 + u16::from(byte - b'A'),
        b' ' => 62,
        b'!'..=b'~' => 63 + u16::from(byte),
        b'\n' => 300,
        b'\t' => 301,
        _ => 400 + u16::from(byte),
    }
}

/// What one product search found: witnesses (shortest first), proof of emptiness, or the
/// budget's end.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ViewSearch {
    Witnesses(Vec<String>),
    Empty,
    Exhausted,
}

/// The pattern of the UTF-8 validity component: the whole text is valid UTF-8.
const UTF8_PATTERN: &str = r"(?s)\A.*\z";

/// One product search, memoized by its components: a query whose rules did not change is not
/// searched again.
#[salsa::tracked(returns(ref))]
fn search_query<'db>(db: &'db dyn Db, key: QueryKey<'db>) -> ViewSearch {
    let budget = *key.component_budget(db);
    let mut automata: Vec<(Arc<Automaton>, Polarity)> = Vec::new();
    for (pattern, must) in key
        .components(db)
        .iter()
        .map(|(p, must, _)| (p, *must))
        .chain(std::iter::once((&UTF8_PATTERN.to_owned(), true)))
    {
        let memo_key = PatternKey::new(db, pattern.clone(), budget, budget);
        match automaton(db, memo_key) {
            Ok((automaton, _)) => automata.push((
                Arc::clone(automaton),
                if must {
                    Polarity::Must
                } else {
                    Polarity::MustNot
                },
            )),
            Err(_) => return ViewSearch::Exhausted,
        }
    }
    breadth_first(&automata, *key.wanted(db), *key.max_states(db))
}

/// Breadth-first search over the product of the automata, collecting up to `wanted` shortest
/// witnesses.
fn breadth_first(
    automata: &[(Arc<Automaton>, Polarity)],
    wanted: usize,
    max_states: usize,
) -> ViewSearch {
    let all: Vec<(&Automaton, Polarity)> = automata.iter().map(|(a, p)| (a.as_ref(), *p)).collect();
    // Joint byte classes: one representative byte per class, most preferred first.
    let mut representatives: HashMap<Vec<u8>, u8> = HashMap::new();
    for byte in 0..=255u8 {
        let key: Vec<u8> = all
            .iter()
            .map(|(a, _)| a.dfa.byte_classes().get(byte))
            .collect();
        let slot = representatives.entry(key).or_insert(byte);
        if preference(byte) < preference(*slot) {
            *slot = byte;
        }
    }
    let mut alphabet: Vec<u8> = representatives.into_values().collect();
    alphabet.sort_by_key(|byte| preference(*byte));

    type Node = Vec<(StateID, bool)>;
    let start: Node = all.iter().map(|(a, _)| (a.start, false)).collect();
    let mut nodes: Vec<(usize, u8)> = vec![(usize::MAX, 0)];
    let mut states: Vec<Node> = vec![start.clone()];
    let mut seen: HashMap<Node, usize> = HashMap::from([(start, 0)]);
    let mut queue = VecDeque::from([0usize]);
    let mut witnesses = Vec::new();
    while let Some(index) = queue.pop_front() {
        let Some(node) = states.get(index).cloned() else {
            break;
        };
        let accepts = all
            .iter()
            .zip(&node)
            .all(|((automaton, polarity), (state, satisfied))| {
                let matched = *satisfied
                    || automaton
                        .dfa
                        .is_match_state(automaton.dfa.next_eoi_state(*state));
                matched == (*polarity == Polarity::Must)
            });
        if accepts {
            let mut bytes = Vec::new();
            let mut at = index;
            while let Some(&(parent, byte)) = nodes.get(at) {
                if parent == usize::MAX {
                    break;
                }
                bytes.push(byte);
                at = parent;
            }
            bytes.reverse();
            if let Ok(text) = String::from_utf8(bytes) {
                witnesses.push(text);
                if witnesses.len() >= wanted {
                    break;
                }
            }
        }
        for &byte in &alphabet {
            let mut next = Vec::with_capacity(node.len());
            let mut pruned = false;
            for ((automaton, polarity), (state, satisfied)) in all.iter().zip(&node) {
                let state = automaton.dfa.next_state(*state, byte);
                let satisfied = *satisfied || automaton.dfa.is_match_state(state);
                let dead = automaton.dfa.is_dead_state(state) && !satisfied;
                if (*polarity == Polarity::MustNot && satisfied)
                    || (*polarity == Polarity::Must && dead)
                {
                    pruned = true;
                    break;
                }
                next.push((state, satisfied));
            }
            if pruned || seen.contains_key(&next) {
                continue;
            }
            if states.len() >= max_states {
                return if witnesses.is_empty() {
                    ViewSearch::Exhausted
                } else {
                    ViewSearch::Witnesses(witnesses)
                };
            }
            seen.insert(next.clone(), states.len());
            nodes.push((index, byte));
            states.push(next);
            queue.push_back(states.len() - 1);
        }
    }
    if witnesses.is_empty() {
        ViewSearch::Empty
    } else {
        ViewSearch::Witnesses(witnesses)
    }
}

impl Analyzer<'_> {
    /// Searches the product of `components` (read as one text) for up to `wanted` witnesses.
    fn search_view(&self, components: &[&Component], wanted: usize) -> Search {
        let key_components: Vec<(String, bool, u8)> = components
            .iter()
            .map(|c| {
                (
                    c.pattern.clone(),
                    c.polarity == Polarity::Must,
                    u8::from(c.view == TextView::Raw),
                )
            })
            .collect();
        let key = QueryKey::new(
            self.db,
            key_components,
            wanted,
            self.budget.max_states,
            self.budget.component_dfa_bytes,
        );
        match search_query(self.db, key) {
            ViewSearch::Empty => Search::Empty,
            ViewSearch::Exhausted => Search::Exhausted,
            ViewSearch::Witnesses(found) => Search::Witnesses(
                found
                    .iter()
                    .map(|w| vec![(TextView::Sanitized, w.clone())])
                    .collect(),
            ),
        }
    }

    /// Searches for one text that every view shows unchanged (so that the witness is the
    /// evidence's text as it is). When the components read both views and no such text exists,
    /// the views are searched as independent texts, which over-approximates: an empty result is
    /// then still a proof, and any witness goes to verification.
    fn search(&self, components: &[&Component], wanted: usize) -> Search {
        let one_view = components
            .iter()
            .all(|c| components.first().is_some_and(|first| first.view == c.view));
        let together = self.search_view(components, wanted);
        if one_view || !matches!(together, Search::Empty) {
            return together;
        }
        let mut per_view: Vec<(TextView, Vec<String>)> = Vec::new();
        for view in [TextView::Sanitized, TextView::Raw] {
            let of_view: Vec<&Component> = components
                .iter()
                .copied()
                .filter(|c| c.view == view)
                .collect();
            if of_view.is_empty() {
                continue;
            }
            match self.search_view(&of_view, wanted) {
                Search::Empty => return Search::Empty,
                Search::Exhausted => return Search::Exhausted,
                Search::Witnesses(found) => {
                    per_view.push((
                        view,
                        found
                            .into_iter()
                            .filter_map(|w| w.into_iter().next().map(|(_, text)| text))
                            .collect(),
                    ));
                }
            }
        }
        if per_view.is_empty() {
            return Search::Witnesses(vec![Vec::new()]);
        }
        let count = per_view
            .iter()
            .map(|(_, found)| found.len())
            .max()
            .unwrap_or(0);
        let combined = (0..count)
            .map(|i| {
                per_view
                    .iter()
                    .filter_map(|(view, found)| {
                        found
                            .get(i)
                            .or_else(|| found.last())
                            .map(|text| (*view, text.clone()))
                    })
                    .collect()
            })
            .collect();
        Search::Witnesses(combined)
    }

    /// Evidence for a witness: the texts joined into stderr, and the structured fields chosen
    /// to satisfy every rule's guards.
    fn evidence(&self, rules: &[usize], texts: &[(TextView, String)]) -> Evidence {
        let mut evidence = ExampleEvidence::default();
        let guards: Vec<&Guards> = rules
            .iter()
            .filter_map(|&r| self.catalogue.rules.get(r))
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
        let text: Vec<&str> = texts.iter().map(|(_, text)| text.as_str()).collect();
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
                self.texts.get(rule).and_then(|t| t.group_fill.clone())
            {
                let raw = evidence.stderr.clone().unwrap_or_default();
                let captured = regex::Regex::new(&pattern).ok().and_then(|regex| {
                    regex
                        .captures(&raw)
                        .and_then(|c| c.get(group as usize).map(|g| g.as_str().to_owned()))
                });
                if let (Some(value), EvidenceField::ManagedRuntimePackageSpec) = (captured, field) {
                    evidence.managed_runtime_package_spec = Some(value);
                }
            }
        }
        example_evidence(&evidence)
    }

    fn rule(&self, index: usize) -> Option<&RuleDef> {
        self.catalogue.rules.get(index)
    }

    fn classify(&self, evidence: &Evidence) -> faultline_runtime::Classification {
        self.bundle.classify(evidence)
    }

    /// Whether the rule at bundle position `position` fires on `evidence`, alone.
    fn fires(&self, position: usize, evidence: &Evidence) -> bool {
        self.bundle.rule_step(position, evidence) == Some(Step::Fired)
    }

    /// Finds the first witness of a query on which `verify` holds.
    fn verified(
        &self,
        rules: &[usize],
        components: &[&Component],
        verify: impl Fn(&Evidence) -> bool,
    ) -> Result<Option<Evidence>, ()> {
        match self.search(components, self.budget.max_witnesses) {
            Search::Empty => Ok(None),
            Search::Exhausted => Err(()),
            Search::Witnesses(witnesses) => {
                for texts in witnesses {
                    let evidence = self.evidence(rules, &texts);
                    if verify(&evidence) {
                        return Ok(Some(evidence));
                    }
                }
                Err(())
            }
        }
    }

    fn dead_rules_and_vetoes(&self) -> Vec<bool> {
        let mut live = vec![true; self.catalogue.rules.len()];
        for (index, rule) in self.catalogue.rules.iter().enumerate() {
            let Some(text) = self.texts.get(index) else {
                continue;
            };
            if text.components.is_empty() && rule.matchers.is_empty() {
                continue;
            }
            let components: Vec<&Component> = text.components.iter().collect();
            let position = self.bundle.rule_position(&rule.id).unwrap_or(usize::MAX);
            match self.verified(&[index], &components, |evidence| {
                self.fires(position, evidence)
            }) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    if let Some(slot) = live.get_mut(index) {
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
                Err(()) => {
                    self.budget_exceeded(rule, None, "could not show that it fires on any evidence")
                }
            }
            // A veto that never matches where the rule's matchers do vetoes nothing.
            if live.get(index).copied().unwrap_or(false) {
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

    fn guards_compatible(a: &Guards, b: &Guards) -> bool {
        fn overlap<T: PartialEq>(a: &Option<Vec<T>>, b: &Option<Vec<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => a.iter().any(|value| b.contains(value)),
                _ => true,
            }
        }
        overlap(&a.phase, &b.phase)
            && overlap(&a.provider_id, &b.provider_id)
            && overlap(&a.source, &b.source)
            && overlap(&a.http_status, &b.http_status)
            && overlap(&a.exit_code, &b.exit_code)
    }

    /// Whether every evidence satisfying `lower`'s guards satisfies `upper`'s.
    fn guards_imply(lower: &Guards, upper: &Guards) -> bool {
        fn implied<T: PartialEq>(lower: &Option<Vec<T>>, upper: &Option<Vec<T>>) -> bool {
            match (lower, upper) {
                (_, None) => true,
                (None, Some(_)) => false,
                (Some(lower), Some(upper)) => lower.iter().all(|value| upper.contains(value)),
            }
        }
        let present_implied = upper.present.iter().all(|field| {
            lower.present.contains(field)
                || match field {
                    EvidenceField::Phase => lower.phase.is_some(),
                    EvidenceField::ProviderId => lower.provider_id.is_some(),
                    EvidenceField::Source => lower.source.is_some(),
                    EvidenceField::HttpStatus => lower.http_status.is_some(),
                    EvidenceField::ExitCode => lower.exit_code.is_some(),
                    _ => false,
                }
        });
        implied(&lower.phase, &upper.phase)
            && implied(&lower.provider_id, &upper.provider_id)
            && implied(&lower.source, &upper.source)
            && implied(&lower.http_status, &upper.http_status)
            && implied(&lower.exit_code, &upper.exit_code)
            && present_implied
    }

    fn outcome(
        &self,
        rule: &RuleDef,
    ) -> (
        String,
        faultline_runtime::Confidence,
        faultline_runtime::Scope,
    ) {
        (rule.code.clone(), rule.confidence, rule.scope)
    }

    fn ties(&self, live: &[bool]) {
        let count = self.catalogue.rules.len();
        for a in 0..count {
            for b in a + 1..count {
                let (Some(rule_a), Some(rule_b)) = (self.rule(a), self.rule(b)) else {
                    continue;
                };
                if !live.get(a).copied().unwrap_or(false) || !live.get(b).copied().unwrap_or(false)
                {
                    continue;
                }
                if !self.priority.unordered(self.catalogue, a, b)
                    || self.outcome(rule_a) == self.outcome(rule_b)
                    || !Self::guards_compatible(&rule_a.guards, &rule_b.guards)
                {
                    continue;
                }
                let (Some(text_a), Some(text_b)) = (self.texts.get(a), self.texts.get(b)) else {
                    continue;
                };
                let components: Vec<&Component> =
                    text_a.components.iter().chain(&text_b.components).collect();
                let (position_a, position_b) = (
                    self.bundle.rule_position(&rule_a.id).unwrap_or(usize::MAX),
                    self.bundle.rule_position(&rule_b.id).unwrap_or(usize::MAX),
                );
                match self.verified(&[a, b], &components, |evidence| {
                    self.fires(position_a, evidence) && self.fires(position_b, evidence)
                }) {
                    Ok(None) => {}
                    Ok(Some(evidence)) => {
                        let diagnostic = Diagnostic::new(
                            Code::Tie,
                            format!("`{}` and `{}` can both fire on the same evidence with different outcomes, and neither is ordered first", rule_a.id, rule_b.id),
                        )
                        .primary(&rule_b.origin.file, rule_b.origin.span, format!("`{}` → `{}`", rule_b.id, rule_b.code))
                        .secondary(&rule_a.origin.file, rule_a.origin.span, format!("`{}` → `{}`", rule_a.id, rule_a.code))
                        .note(format!("witness (verified: both fire): {}", describe(&evidence)))
                        .help(format!("declare the winner: add `before {}` to `{}` (or the reverse), or give them different ranks", rule_b.id, rule_a.id));
                        self.report(diagnostic);
                    }
                    Err(()) => self.budget_exceeded(
                        rule_b,
                        Some(rule_a.id.clone()),
                        "could not prove they never fire together",
                    ),
                }
            }
        }
    }

    /// Whether `upper` can stand in a query as "does not fire": its guards hold whenever
    /// `rule`'s do and its firing condition is one exactly represented component.
    fn covering_component(&self, rule: &RuleDef, upper_index: usize) -> Option<Option<Component>> {
        let upper = self.rule(upper_index)?;
        let upper_text = self.texts.get(upper_index)?;
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
    fn shadowed(&self, live: &[bool]) {
        const REFINEMENTS: usize = 24;
        for &index in &self.priority.order {
            let (Some(rule), Some(text)) = (self.rule(index), self.texts.get(index)) else {
                continue;
            };
            if !live.get(index).copied().unwrap_or(false) {
                continue;
            }
            let id = rule.id.clone();
            let position = self.bundle.rule_position(&id).unwrap_or(usize::MAX);
            let mut excluded: Vec<Component> = Vec::new();
            let mut covering_rules: Vec<usize> = Vec::new();
            let mut verdict: Option<Result<(), ()>> = None;
            let mut first_witness: Option<Evidence> = None;
            'refine: for _ in 0..REFINEMENTS {
                let query: Vec<&Component> = text.components.iter().chain(&excluded).collect();
                let witnesses = match self.search(&query, self.budget.max_witnesses) {
                    Search::Empty => {
                        verdict = Some(Err(()));
                        break;
                    }
                    Search::Exhausted => break,
                    Search::Witnesses(witnesses) => witnesses,
                };
                let mut refined = false;
                for texts in witnesses {
                    let evidence = self.evidence(&[index], &texts);
                    if !self.fires(position, &evidence) {
                        continue;
                    }
                    let classification = self.classify(&evidence);
                    if classification.rule == id {
                        verdict = Some(Ok(()));
                        break 'refine;
                    }
                    first_witness.get_or_insert(evidence);
                    let winner = self.rule_index.get(classification.rule.as_str()).copied();
                    if let Some(winner) = winner.filter(|w| !covering_rules.contains(w)) {
                        match self.covering_component(rule, winner) {
                            Some(None) => {
                                covering_rules.push(winner);
                                verdict = Some(Err(()));
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
            match verdict {
                Some(Ok(())) => {}
                Some(Err(())) => {
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
                            self.fires(position, e)
                        })
                        .ok()
                        .flatten()
                    });
                    if let Some(evidence) = witness {
                        let classification = self.classify(&evidence);
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

    fn overlaps(&self, live: &[bool]) {
        // Only rules of one tier with the same outcome can be redundant with each other.
        let mut groups: HashMap<
            (
                usize,
                &str,
                faultline_runtime::Confidence,
                faultline_runtime::Scope,
            ),
            Vec<usize>,
        > = HashMap::new();
        for (index, rule) in self.catalogue.rules.iter().enumerate() {
            if live.get(index).copied().unwrap_or(false) && !rule.matchers.is_empty() {
                groups
                    .entry((rule.tier, rule.code.as_str(), rule.confidence, rule.scope))
                    .or_default()
                    .push(index);
            }
        }
        let mut pairs: Vec<(usize, usize)> = groups
            .values()
            .flat_map(|members| {
                members.iter().flat_map(move |&a| {
                    members
                        .iter()
                        .filter(move |&&b| a != b)
                        .map(move |&b| (a, b))
                })
            })
            .collect();
        pairs.sort_unstable();
        for (a, b) in pairs {
            {
                let (Some(rule_a), Some(rule_b)) = (self.rule(a), self.rule(b)) else {
                    continue;
                };
                if !Self::guards_compatible(&rule_a.guards, &rule_b.guards) {
                    continue;
                }
                let (Some(text_a), Some(text_b)) = (self.texts.get(a), self.texts.get(b)) else {
                    continue;
                };
                'patterns: for (view_a, inner, inner_words) in &text_a.patterns {
                    for (view_b, outer, outer_words) in &text_b.patterns {
                        // A pre-filter: a match of `inner` can lie inside a match of `outer`
                        // only if one of its required words fits inside one of `outer`'s.
                        if view_a != view_b
                            || !words_may_nest(inner_words.as_deref(), outer_words.as_deref())
                        {
                            continue;
                        }
                        let exact = |pattern: String| match component_automaton(
                            self.db,
                            &pattern,
                            self.budget,
                        ) {
                            Ok((_, false)) => Some(Component {
                                pattern,
                                polarity: Polarity::Must,
                                view: *view_a,
                            }),
                            _ => None,
                        };
                        let (Some(inner_component), Some(outer_component)) =
                            (exact(inner.clone()), exact(format!(r"\A(?:{outer})\z")))
                        else {
                            continue;
                        };
                        let components = [inner_component, outer_component];
                        let refs: Vec<&Component> = components.iter().collect();
                        if let Search::Witnesses(found) = self.search_view(&refs, 1) {
                            let span = found
                                .first()
                                .and_then(|w| w.first())
                                .map(|(_, text)| text.clone())
                                .unwrap_or_default();
                            let verified = regex::Regex::new(&format!(r"\A(?:{outer})\z"))
                                .is_ok_and(|r| r.is_match(&span))
                                && regex::Regex::new(inner).is_ok_and(|r| r.is_match(&span));
                            if verified {
                                self.report(
                                    Diagnostic::new(
                                        Code::SameSpanOverlap,
                                        format!("a match of `{}` contains a match of `{}`, and both give `{}`", rule_b.id, rule_a.id, rule_a.code),
                                    )
                                    .primary(&rule_b.origin.file, rule_b.origin.span, "its signature")
                                    .secondary(&rule_a.origin.file, rule_a.origin.span, "matches inside it")
                                    .note(format!("witness span (verified: `{}` matches all of it, `{}` matches inside): {span:?}", rule_b.id, rule_a.id))
                                    .help("keep one signature for this outcome, or make the two disjoint"),
                                );
                                break 'patterns;
                            }
                        }
                    }
                }
            }
        }
    }

    fn report(&self, diagnostic: Diagnostic) {
        self.diagnostics.borrow_mut().push(diagnostic);
    }

    fn budget_exceeded(&self, rule: &RuleDef, other: Option<String>, what: &str) {
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

/// Whether some required word of `inner` is a substring of some required word of `outer` (or
/// either has no requirement, when nothing can be ruled out).
fn words_may_nest(inner: Option<&[String]>, outer: Option<&[String]>) -> bool {
    match (inner, outer) {
        (Some(inner), Some(outer)) => inner
            .iter()
            .any(|i| outer.iter().any(|o| o.contains(i.as_str()))),
        _ => true,
    }
}

fn describe(evidence: &Evidence) -> String {
    serde_json::to_string(evidence).unwrap_or_default()
}
