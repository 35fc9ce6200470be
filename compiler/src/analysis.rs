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

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use faultline_dsl::{Code, Diagnostic};
use faultline_runtime::build::REGEX_SIZE_LIMIT;
use faultline_runtime::{Bundle, Evidence, EvidenceField, Phase, RulePosition, Step, TextView};
use regex_automata::Anchored;
use regex_automata::dfa::{Automaton as _, dense};
use regex_automata::util::primitives::StateID;
use regex_automata::util::start;

use crate::compile::example_evidence;
use crate::db::{Db, PatternKey, QueryKey};
use crate::ir::{
    Catalogue, ExampleEvidence, Guards, MatcherKind, RemediationSpec, RuleDef, TextMatcher,
};
use crate::lower::AutomatonError;
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
    dfa: Arc<dense::DFA<Vec<u32>>>,
    start: StateID,
}

/// The budgets a component automaton is built under: the analysis's own size budget, and the
/// lowering's (whose exact attempt at the same pattern is shared), determinization and NFA
/// budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ComponentBudget {
    first: usize,
    budget: usize,
    determinize: usize,
    nfa: usize,
}

impl ComponentBudget {
    fn new(analysis: &AnalysisBudget, lowering: &crate::lower::Budget) -> Self {
        ComponentBudget {
            first: lowering.pattern_dfa_bytes,
            budget: analysis.component_dfa_bytes,
            determinize: lowering.determinize_bytes,
            nfa: lowering.nfa_bytes,
        }
    }

    fn key<'db>(&self, db: &'db dyn Db, pattern: &str) -> PatternKey<'db> {
        PatternKey::new(
            db,
            pattern.to_owned(),
            self.first,
            self.budget,
            self.budget,
            self.determinize,
            self.nfa,
        )
    }

    fn as_tuple(&self) -> (usize, usize, usize, usize) {
        (self.first, self.budget, self.determinize, self.nfa)
    }

    fn from_tuple((first, budget, determinize, nfa): (usize, usize, usize, usize)) -> Self {
        ComponentBudget {
            first,
            budget,
            determinize,
            nfa,
        }
    }
}

/// A component automaton and whether it had to be widened. Tracked: built once per session.
#[salsa::tracked(returns(ref), no_eq)]
fn automaton<'db>(
    db: &'db dyn Db,
    key: PatternKey<'db>,
) -> Result<(Arc<Automaton>, bool), AutomatonError> {
    let built = crate::lower::alone(db, key)?;
    let start = built
        .dfa
        .start_state(&start::Config::new().anchored(Anchored::No))
        .map_err(|e| AutomatonError::Other(e.to_string()))?;
    Ok((
        Arc::new(Automaton {
            dfa: built.dfa,
            start,
        }),
        built.approximate,
    ))
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
    fn analysed(&self, rule: usize) -> bool {
        self.analysed.get(rule).copied().unwrap_or(true)
    }

    fn flag(flags: &[bool], rule: usize) -> bool {
        flags.get(rule).copied().unwrap_or(false)
    }

    /// Whether the rule's place in the order is settled: its shadowing and examples can be
    /// judged.
    pub fn order_known(&self, rule: usize) -> bool {
        !Self::flag(&self.above_unknown, rule) && !Self::flag(&self.below_unknown, rule)
    }

    /// Whether fixing the rules with errors cannot order `a` and `b` against each other.
    pub fn pair_order_known(&self, a: usize, b: usize) -> bool {
        let (up, down) = (&self.above_unknown, &self.below_unknown);
        !(Self::flag(up, a) && Self::flag(down, b) || Self::flag(up, b) && Self::flag(down, a))
    }
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
    bundle: &'a Bundle,
    budget: &'a AnalysisBudget,
    components: ComponentBudget,
    scope: &'a Scope,
    texts: Vec<RuleText>,
    /// Catalogue index of each rule id.
    rule_index: HashMap<&'a str, usize>,
    /// Findings; interior mutability lets queries borrow the analyzer while reporting.
    diagnostics: std::cell::RefCell<Vec<Diagnostic>>,
}

/// What the analysis reads: the checked catalogue, its order and compiled bundle, the budgets.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The checked catalogue.
    pub catalogue: &'a Catalogue,
    /// Its effective order.
    pub priority: &'a Priority,
    /// Its compiled bundle (the rules `scope` analyses).
    pub bundle: &'a Bundle,
    /// The analysis budget.
    pub budget: &'a AnalysisBudget,
    /// The automaton budgets (component automata share the lowering's exact attempts).
    pub lowering: &'a crate::lower::Budget,
    /// Which rules are analysed.
    pub scope: &'a Scope,
}

impl<'a> Analyzer<'a> {
    /// An analyzer of the rules `inputs.scope` covers (of `only` among them, when given).
    fn new(db: &'a dyn Db, inputs: Inputs<'a>, only: Option<&[usize]>) -> Self {
        let components = ComponentBudget::new(inputs.budget, inputs.lowering);
        let texts = inputs
            .catalogue
            .rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                if inputs.scope.analysed(index) && only.is_none_or(|only| only.contains(&index)) {
                    rule_text(db, rule, &components)
                } else {
                    RuleText::default()
                }
            })
            .collect();
        let rule_index = inputs
            .catalogue
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.as_str(), i))
            .collect();
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
            diagnostics: std::cell::RefCell::new(Vec::new()),
        }
    }
}

/// Runs every analysis on the rules `inputs.scope` covers.
pub fn analyze(db: &dyn Db, inputs: Inputs<'_>) -> Vec<Diagnostic> {
    let analyzer = Analyzer::new(db, inputs, None);
    let live = analyzer.dead_rules_and_vetoes();
    analyzer.ties(&live);
    analyzer.shadowed(&live);
    analyzer.overlaps(&live);
    analyzer.diagnostics.into_inner()
}

/// The collision analysis's verdict on two rules (catalogue indices), as `faultline check`
/// reaches it for the pair.
pub fn pair_verdict(db: &dyn Db, inputs: Inputs<'_>, a: usize, b: usize) -> PairVerdict {
    let analyzer = Analyzer::new(db, inputs, Some(&[a, b]));
    let live = |rule: usize| analyzer.fires_somewhere(rule);
    analyzer.pair_verdict(a, b, &live)
}

fn component_automaton(
    db: &dyn Db,
    pattern: &str,
    budget: &ComponentBudget,
) -> Result<(Arc<Automaton>, bool), AutomatonError> {
    automaton(db, budget.key(db, pattern)).clone()
}

fn rule_text(db: &dyn Db, rule: &RuleDef, budget: &ComponentBudget) -> RuleText {
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
    let budget = ComponentBudget::from_tuple(*key.component_budget(db));
    let mut automata: Vec<(Arc<Automaton>, Polarity)> = Vec::new();
    for (pattern, must) in key
        .components(db)
        .iter()
        .map(|(p, must, _)| (p, *must))
        .chain(std::iter::once((&UTF8_PATTERN.to_owned(), true)))
    {
        match automaton(db, budget.key(db, pattern)) {
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

/// Hashes the search's product states (short vectors of state ids) with a multiply-rotate mix:
/// the standard library's SipHash would dominate the search.
#[derive(Debug, Clone, Copy, Default)]
struct StateHash;

impl std::hash::BuildHasher for StateHash {
    type Hasher = StateHasher;

    fn build_hasher(&self) -> StateHasher {
        StateHasher(0)
    }
}

#[derive(Debug, Clone, Copy)]
struct StateHasher(u64);

impl StateHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for StateHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.add(u64::from(byte));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
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
    let mut seen: std::collections::HashSet<Node, StateHash> =
        std::collections::HashSet::with_hasher(StateHash);
    seen.insert(start);
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
            if pruned || seen.contains(&next) {
                continue;
            }
            if states.len() >= max_states {
                return if witnesses.is_empty() {
                    ViewSearch::Exhausted
                } else {
                    ViewSearch::Witnesses(witnesses)
                };
            }
            seen.insert(next.clone());
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
            self.components.as_tuple(),
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
        example_evidence(&evidence)
    }

    fn rule(&self, index: usize) -> Option<&RuleDef> {
        self.catalogue.rules.get(index)
    }

    fn classify(&self, evidence: &Evidence) -> faultline_runtime::Classification {
        self.bundle.classify(evidence)
    }

    /// Whether the rule at bundle position `position` fires on `evidence`, alone (never, for a
    /// rule the bundle does not hold).
    fn fires(&self, position: Option<RulePosition>, evidence: &Evidence) -> bool {
        position.and_then(|position| self.bundle.rule_step(position, evidence)) == Some(Step::Fired)
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

    /// Whether a rule fires on some evidence, as the dead-rule check decides it (a rule it
    /// cannot decide counts as live).
    fn fires_somewhere(&self, index: usize) -> bool {
        let (Some(rule), Some(text)) = (self.rule(index), self.texts.get(index)) else {
            return false;
        };
        if !self.scope.analysed(index) {
            return false;
        }
        if text.components.is_empty() && rule.matchers.is_empty() {
            return true;
        }
        let components: Vec<&Component> = text.components.iter().collect();
        let position = self.bundle.rule_position(&rule.id);
        !matches!(
            self.verified(&[index], &components, |evidence| {
                self.fires(position, evidence)
            }),
            Ok(None)
        )
    }

    fn dead_rules_and_vetoes(&self) -> Vec<bool> {
        let mut live = vec![true; self.catalogue.rules.len()];
        for (index, rule) in self.catalogue.rules.iter().enumerate() {
            let Some(text) = self.texts.get(index) else {
                continue;
            };
            if !self.scope.analysed(index) {
                if let Some(slot) = live.get_mut(index) {
                    *slot = false;
                }
                continue;
            }
            if text.components.is_empty() && rule.matchers.is_empty() {
                continue;
            }
            let components: Vec<&Component> = text.components.iter().collect();
            let position = self.bundle.rule_position(&rule.id);
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
        Self::exclusive_field(a, b).is_none()
    }

    /// A structured field on which two rules' guards allow no common value.
    fn exclusive_field(a: &Guards, b: &Guards) -> Option<EvidenceField> {
        fn overlap<T: PartialEq>(a: &Option<Vec<T>>, b: &Option<Vec<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => a.iter().any(|value| b.contains(value)),
                _ => true,
            }
        }
        [
            (overlap(&a.phase, &b.phase), EvidenceField::Phase),
            (
                overlap(&a.provider_id, &b.provider_id),
                EvidenceField::ProviderId,
            ),
            (overlap(&a.source, &b.source), EvidenceField::Source),
            (
                overlap(&a.http_status, &b.http_status),
                EvidenceField::HttpStatus,
            ),
            (overlap(&a.exit_code, &b.exit_code), EvidenceField::ExitCode),
        ]
        .into_iter()
        .find(|(overlaps, _)| !overlaps)
        .map(|(_, field)| field)
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
        rule: &RuleDef,
    ) -> (
        &str,
        faultline_runtime::Confidence,
        faultline_runtime::Scope,
    ) {
        (&rule.code, rule.confidence, rule.scope)
    }

    /// The verdict on two rules, with `live` telling which rules fire on some evidence.
    fn pair_verdict(&self, a: usize, b: usize, live: &dyn Fn(usize) -> bool) -> PairVerdict {
        let (Some(rule_a), Some(rule_b)) = (self.rule(a), self.rule(b)) else {
            return PairVerdict::Ordered;
        };
        if !self.priority.unordered(self.catalogue, a, b) {
            return PairVerdict::Ordered;
        }
        for (index, rule) in [(a, rule_a), (b, rule_b)] {
            if !self.scope.analysed(index) {
                return PairVerdict::NotAnalysed(rule.id.clone());
            }
        }
        if !self.scope.pair_order_known(a, b) {
            let waiting = if self.scope.order_known(a) {
                rule_b
            } else {
                rule_a
            };
            return PairVerdict::NotAnalysed(waiting.id.clone());
        }
        for (index, rule) in [(a, rule_a), (b, rule_b)] {
            if !live(index) {
                return PairVerdict::Dead(rule.id.clone());
            }
        }
        if Self::outcome(rule_a) == Self::outcome(rule_b) {
            return PairVerdict::SameOutcome;
        }
        if let Some(field) = Self::exclusive_field(&rule_a.guards, &rule_b.guards) {
            return PairVerdict::GuardsExclusive(field);
        }
        let (Some(text_a), Some(text_b)) = (self.texts.get(a), self.texts.get(b)) else {
            return PairVerdict::Undecided;
        };
        let components: Vec<&Component> =
            text_a.components.iter().chain(&text_b.components).collect();
        let (position_a, position_b) = (
            self.bundle.rule_position(&rule_a.id),
            self.bundle.rule_position(&rule_b.id),
        );
        match self.verified(&[a, b], &components, |evidence| {
            self.fires(position_a, evidence) && self.fires(position_b, evidence)
        }) {
            Ok(None) => PairVerdict::Disjoint,
            Ok(Some(evidence)) => PairVerdict::Tie(Box::new(evidence)),
            Err(()) => PairVerdict::Undecided,
        }
    }

    fn ties(&self, live: &[bool]) {
        let is_live = |index: usize| live.get(index).copied().unwrap_or(false);
        for (a, b) in self.tie_candidates(live) {
            let (Some(rule_a), Some(rule_b)) = (self.rule(a), self.rule(b)) else {
                continue;
            };
            match self.pair_verdict(a, b, &is_live) {
                PairVerdict::Tie(evidence) => {
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
                PairVerdict::Undecided => self.budget_exceeded(
                    rule_b,
                    Some(rule_a.id.clone()),
                    "could not prove they never fire together",
                ),
                _ => {}
            }
        }
    }

    /// The pairs `(a, b)`, `a < b`, that the tie check must look at: live rules of one tier
    /// that may be unordered and whose guards may hold together. A superset of the pairs that
    /// pass those tests, found without visiting every pair: ranked rules of different ranks
    /// are always ordered, so only same-rank pairs and pairs with an unranked rule are
    /// candidates, and of those only pairs sharing a value of the tier's most selective guard
    /// field (or where one rule does not guard it).
    fn tie_candidates(&self, live: &[bool]) -> Vec<(usize, usize)> {
        let mut tiers: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (index, rule) in self.catalogue.rules.iter().enumerate() {
            if live.get(index).copied().unwrap_or(false) {
                tiers.entry(rule.tier).or_default().push(index);
            }
        }
        let mut pairs = Vec::new();
        for members in tiers.values() {
            let field = self.selective_field(members);
            let mut by_rank: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
            let mut unranked = Vec::new();
            for &index in members {
                match self.rule(index).and_then(|rule| rule.rank) {
                    Some(rank) => by_rank.entry(rank).or_default().push(index),
                    None => unranked.push(index),
                }
            }
            for group in by_rank.values() {
                self.pairs_sharing(field, group, group, &mut pairs);
            }
            self.pairs_sharing(field, &unranked, members, &mut pairs);
        }
        pairs.sort_unstable();
        pairs.dedup();
        pairs
    }

    /// The guard values a rule allows on a field, as comparable keys; `None` when it does not
    /// guard the field.
    fn guard_keys(&self, index: usize, field: usize) -> Option<Vec<String>> {
        fn keys<T: std::fmt::Debug>(values: &Option<Vec<T>>) -> Option<Vec<String>> {
            values
                .as_ref()
                .map(|values| values.iter().map(|v| format!("{v:?}")).collect())
        }
        let guards = &self.rule(index)?.guards;
        match field {
            0 => keys(&guards.provider_id),
            1 => keys(&guards.phase),
            2 => keys(&guards.source),
            3 => keys(&guards.http_status),
            _ => keys(&guards.exit_code),
        }
    }

    /// The guard field that splits `members` into the fewest candidate pairs.
    fn selective_field(&self, members: &[usize]) -> usize {
        (0..5)
            .min_by_key(|&field| {
                let mut counts: HashMap<String, usize> = HashMap::new();
                let mut unguarded = 0usize;
                for &index in members {
                    match self.guard_keys(index, field) {
                        Some(keys) => {
                            for key in keys {
                                *counts.entry(key).or_default() += 1;
                            }
                        }
                        None => unguarded += 1,
                    }
                }
                counts
                    .values()
                    .map(|count| count.saturating_mul(*count))
                    .sum::<usize>()
                    .saturating_add(unguarded.saturating_mul(members.len()))
            })
            .unwrap_or(0)
    }

    /// Appends the pairs of a rule of `left` and another of `right` that share a value of
    /// `field` or where one does not guard it, as `(smaller, larger)`.
    fn pairs_sharing(
        &self,
        field: usize,
        left: &[usize],
        right: &[usize],
        pairs: &mut Vec<(usize, usize)>,
    ) {
        if left.is_empty() || right.is_empty() {
            return;
        }
        let mut by_value: HashMap<String, Vec<usize>> = HashMap::new();
        let mut unguarded = Vec::new();
        for &index in right {
            match self.guard_keys(index, field) {
                Some(keys) => {
                    for key in keys {
                        by_value.entry(key).or_default().push(index);
                    }
                }
                None => unguarded.push(index),
            }
        }
        let mut push = |a: usize, b: usize| {
            if a != b {
                pairs.push((a.min(b), a.max(b)));
            }
        };
        for &a in left {
            match self.guard_keys(a, field) {
                None => right.iter().for_each(|&b| push(a, b)),
                Some(keys) => {
                    for key in keys {
                        by_value
                            .get(&key)
                            .into_iter()
                            .flatten()
                            .for_each(|&b| push(a, b));
                    }
                    unguarded.iter().for_each(|&b| push(a, b));
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
            // A rule whose order waits on a rule with errors may yet be ordered above the rules
            // that cover it now.
            if !live.get(index).copied().unwrap_or(false) || !self.scope.order_known(index) {
                continue;
            }
            let id = rule.id.clone();
            let position = self.bundle.rule_position(&id);
            let mut excluded: Vec<Component> = Vec::new();
            let mut covering_rules: Vec<usize> = Vec::new();
            let mut verdict: Option<Result<(), ()>> = None;
            let mut first_witness: Option<Evidence> = None;
            let mut held = false;
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
                    // Beside errors, a winner that nothing orders above the rule is above it
                    // only by the tie-break, which the rules with errors may change.
                    if let Some(winner) = winner
                        && self.scope.partial
                        && self.priority.unordered(self.catalogue, winner, index)
                    {
                        held = true;
                        break 'refine;
                    }
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
            if held {
                continue;
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
        let mut pairs: Vec<(usize, usize)> = Vec::new();
        for members in groups.values() {
            self.nesting_candidates(members, &mut pairs);
        }
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
                            &self.components,
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
                            let verified = crate::pattern::regex(
                                &format!(r"\A(?:{outer})\z"),
                                REGEX_SIZE_LIMIT,
                            )
                            .is_ok_and(|r| r.is_match(&span))
                                && crate::pattern::regex(inner, REGEX_SIZE_LIMIT)
                                    .is_ok_and(|r| r.is_match(&span));
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

    /// The ordered pairs `(a, b)` of `members` (one outcome group) where some pattern of `a`
    /// may match inside a match of a pattern of `b`, by the required-words pre-filter: an index
    /// of the words' three-letter pieces finds, for each inner word, the outer words that can
    /// contain it, instead of comparing every pair. Patterns without required words pair with
    /// every pattern of their view.
    fn nesting_candidates(&self, members: &[usize], pairs: &mut Vec<(usize, usize)>) {
        // Per view: outer words by trigram (rule, word), and the rules with an unconstrained
        // pattern.
        let mut trigrams: HashMap<(TextView, &str), Vec<(usize, &str)>> = HashMap::new();
        let mut short: HashMap<TextView, Vec<(usize, &str)>> = HashMap::new();
        let mut unconstrained: HashMap<TextView, Vec<usize>> = HashMap::new();
        let mut with_view: HashMap<TextView, Vec<usize>> = HashMap::new();
        for &b in members {
            let Some(text) = self.texts.get(b) else {
                continue;
            };
            for (view, _, words) in &text.patterns {
                with_view.entry(*view).or_default().push(b);
                match words {
                    None => unconstrained.entry(*view).or_default().push(b),
                    Some(words) => {
                        for word in words {
                            let pieces = trigram_pieces(word);
                            if pieces.is_empty() {
                                short.entry(*view).or_default().push((b, word));
                            }
                            for piece in pieces {
                                trigrams.entry((*view, piece)).or_default().push((b, word));
                            }
                        }
                    }
                }
            }
        }
        let start = pairs.len();
        for &a in members {
            let Some(text) = self.texts.get(a) else {
                continue;
            };
            for (view, _, words) in &text.patterns {
                match words {
                    None => {
                        pairs.extend(with_view.get(view).into_iter().flatten().map(|&b| (a, b)))
                    }
                    Some(words) => {
                        pairs.extend(
                            unconstrained
                                .get(view)
                                .into_iter()
                                .flatten()
                                .map(|&b| (a, b)),
                        );
                        for inner in words {
                            let pieces = trigram_pieces(inner);
                            // Every outer word holding `inner` holds its rarest piece.
                            let candidates = pieces
                                .iter()
                                .map(|piece| trigrams.get(&(*view, *piece)))
                                .min_by_key(|found| found.map_or(0, Vec::len));
                            let outer: Vec<&(usize, &str)> = match candidates {
                                Some(found) => found.into_iter().flatten().collect(),
                                // Shorter than a piece: any outer word may hold it.
                                None => trigrams
                                    .iter()
                                    .filter(|((v, _), _)| v == view)
                                    .flat_map(|(_, found)| found)
                                    .chain(short.get(view).into_iter().flatten())
                                    .collect(),
                            };
                            pairs.extend(
                                outer
                                    .into_iter()
                                    .filter(|(_, word)| word.contains(inner.as_str()))
                                    .map(|&(b, _)| (a, b)),
                            );
                        }
                    }
                }
            }
        }
        let mut found: Vec<(usize, usize)> = pairs.drain(start..).filter(|(a, b)| a != b).collect();
        found.sort_unstable();
        found.dedup();
        pairs.extend(found);
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

/// The three-byte pieces of a word (none when it is shorter).
fn trigram_pieces(word: &str) -> Vec<&str> {
    (0..word.len().saturating_sub(2))
        .filter_map(|start| word.get(start..start + 3))
        .collect()
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
