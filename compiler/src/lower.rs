//! Lowering a checked catalogue to a bundle: rules in effective order, each text view's
//! patterns compiled into a few multi-pattern dense DFAs (`MatchKind::All`, searched in one
//! overlapping pass), and the prefilter's literals.
//!
//! Partition: every pattern is first built alone. One whose DFA exceeds the per-pattern budget
//! (bounded gaps such as `[^\n]{0,512}` blow up in an unanchored DFA) is rebuilt with its
//! bounded repetitions widened to unbounded ones and marked *approximate*: the runtime confirms
//! a DFA hit with the exact pattern, so classification stays exact and linear-time. The exact
//! patterns of a view then share DFAs, and the approximate ones share others, each group split
//! in halves until every DFA fits the view budget.
//!
//! Every stage is bounded by the [`Budget`]: regex nesting (checked by the front end), the
//! Thompson NFA's heap (repetitions are expanded into copies before anything else), the
//! determinizer's working memory and each DFA's size, and the `regex` programs the runtime
//! compiles for exact confirmation and captures. A pattern over any of them is FL0109 on the
//! pattern, quoting the budget in force, and its rule is left out of the bundle.

use std::collections::{BTreeMap, HashMap};

use faultline_dsl::{Code, Diagnostic, Span};
use faultline_runtime::build::{BundleContents, WriteError};
use faultline_runtime::build::{
    CatalogueModel, CodeEntry, DfaEntry, LiteralEntry, MatcherEntry, MatcherKindEntry,
    PatternEntry, RemediationEntry, RuleEntry, ViewEntry,
};
use faultline_runtime::{REDACTION_VERSION, TextView};
use regex_automata::dfa::{StartKind, dense};
use regex_automata::nfa::thompson;
use regex_automata::{MatchKind, util::syntax};
use regex_syntax::hir::{Hir, HirKind, Repetition};

use std::sync::Arc;

use crate::db::{Db, ExactKey, GroupKey, PatternKey};
use crate::ir::{Catalogue, MatcherKind, RemediationSpec, RuleDef, TextMatcher};
use crate::literals;
use crate::priority::Priority;

/// Limits of every automaton and regex built from a catalogue's patterns. Part of the
/// compiler's configuration; the defaults bound what any single pattern can cost (see
/// docs/bundle.md, "Budgets").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// A pattern alone must determinize within this, or its bounded gaps are widened.
    pub pattern_dfa_bytes: usize,
    /// Each DFA of the bundle must fit within this (`--dfa-budget`).
    pub view_dfa_bytes: usize,
    /// Working memory the determinizer may use for one DFA.
    pub determinize_bytes: usize,
    /// Heap one Thompson NFA may use while it is built: repetitions are expanded into copies
    /// (`a{1000}{1000}` is a million), and this stops them before determinization starts.
    pub nfa_bytes: usize,
    /// Size of the compiled program of every `regex` built from a pattern (the exact regexes
    /// that confirm widened patterns and extract captures). Never more than the runtime's
    /// [`faultline_runtime::build::REGEX_SIZE_LIMIT`], under which bundles load.
    pub regex_bytes: usize,
    /// Deepest nesting of groups, repetitions and classes in a pattern (at most
    /// [`crate::pattern::MAX_NEST_LIMIT`]); deeper patterns are FL0027.
    pub nest_limit: u32,
    /// Longest pattern or literal, in bytes: parsing a pattern takes memory in proportion to
    /// its length before any automaton budget applies.
    pub pattern_bytes: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            pattern_dfa_bytes: 4 << 20,
            view_dfa_bytes: 32 << 20,
            determinize_bytes: 128 << 20,
            nfa_bytes: 16 << 20,
            regex_bytes: faultline_runtime::build::REGEX_SIZE_LIMIT,
            nest_limit: crate::pattern::NEST_LIMIT,
            pattern_bytes: 256 << 10,
        }
    }
}

impl Budget {
    /// The regex size limit in force: the configured one, capped at the runtime's.
    pub fn regex_limit(&self) -> usize {
        self.regex_bytes
            .min(faultline_runtime::build::REGEX_SIZE_LIMIT)
    }
}

/// Why an automaton could not be built: the budget it exceeds, or (never for a validated
/// pattern) another problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AutomatonError {
    /// The Thompson NFA exceeds [`Budget::nfa_bytes`].
    #[error("its NFA needs more than the {} NFA budget", bytes(*limit))]
    Nfa {
        /// The budget in force, in bytes.
        limit: usize,
    },
    /// The DFA exceeds its size budget.
    #[error("its DFA needs more than the {} DFA budget", bytes(*limit))]
    Dfa {
        /// The budget in force, in bytes.
        limit: usize,
    },
    /// Determinization needs more working memory than allowed.
    #[error("determinizing it needs more than the {} determinization budget", bytes(*limit))]
    Determinize {
        /// The budget in force, in bytes.
        limit: usize,
    },
    /// The exact regex that confirms or captures its matches exceeds [`Budget::regex_bytes`].
    #[error("its exact regex needs more than the {} regex budget", bytes(*limit))]
    Regex {
        /// The budget in force, in bytes.
        limit: usize,
    },
    /// Anything else (a pattern that does not parse).
    #[error("{0}")]
    Other(String),
}

impl AutomatonError {
    /// The budget in force that was exceeded, in bytes, if a budget was the cause.
    pub fn limit(&self) -> Option<usize> {
        match self {
            AutomatonError::Nfa { limit }
            | AutomatonError::Dfa { limit }
            | AutomatonError::Determinize { limit }
            | AutomatonError::Regex { limit } => Some(*limit),
            AutomatonError::Other(_) => None,
        }
    }
}

/// A count with thousands separators: `33,554,432`.
pub fn grouped(count: usize) -> String {
    let digits = count.to_string();
    let mut grouped = String::new();
    for (position, digit) in digits.chars().enumerate() {
        if position > 0 && (digits.len() - position).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// A byte budget as people read it: `33,554,432-byte (32 MiB)`.
pub fn bytes(count: usize) -> String {
    let grouped = grouped(count);
    if count >= 1 << 20 && count.is_multiple_of(1 << 20) {
        format!("{grouped}-byte ({} MiB)", count >> 20)
    } else if count >= 1 << 10 && count.is_multiple_of(1 << 10) {
        format!("{grouped}-byte ({} KiB)", count >> 10)
    } else {
        format!("{grouped}-byte")
    }
}

/// The limits one automaton is built under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Size of the DFA.
    pub dfa: usize,
    /// Working memory of the determinizer.
    pub determinize: usize,
    /// Heap of the Thompson NFA.
    pub nfa: usize,
}

/// Bounded repetitions longer than this are widened when a pattern does not fit its budget.
pub const WIDEN_ABOVE: u32 = 8;

/// How one pattern was lowered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternReport {
    /// The view.
    pub view: TextView,
    /// The pattern (lowered syntax).
    pub pattern: String,
    /// Size of its DFA alone, in bytes.
    pub alone_bytes: usize,
    /// Whether bounded gaps were widened for the DFA.
    pub approximate: bool,
}

/// The result of lowering.
#[derive(Debug)]
pub struct Lowered {
    /// The catalogue model written into the bundle.
    pub model: CatalogueModel,
    /// The DFAs' serialized bytes, in section order.
    pub dfas: Vec<Vec<u8>>,
    /// Per-pattern report, for `faultline inspect`.
    pub patterns: Vec<PatternReport>,
    /// Per catalogue rule: whether it is in the bundle (a rule whose automata exceed their
    /// budget is left out, with its diagnostic, and the others are lowered without it).
    pub included: Vec<bool>,
}

fn dfa_config(limits: Limits) -> dense::Config {
    dense::Config::new()
        .match_kind(MatchKind::All)
        .start_kind(StartKind::Unanchored)
        .dfa_size_limit(Some(limits.dfa))
        .determinize_size_limit(Some(limits.determinize))
        .minimize(false)
        .byte_classes(true)
}

/// Replaces bounded repetitions longer than [`WIDEN_ABOVE`] by unbounded ones.
pub fn widen(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Repetition(repetition) => {
            let max = repetition.max.filter(|max| *max <= WIDEN_ABOVE);
            Hir::repetition(Repetition {
                min: repetition.min,
                max,
                greedy: repetition.greedy,
                sub: Box::new(widen(&repetition.sub)),
            })
        }
        HirKind::Capture(capture) => Hir::capture(regex_syntax::hir::Capture {
            index: capture.index,
            name: capture.name.clone(),
            sub: Box::new(widen(&capture.sub)),
        }),
        HirKind::Concat(parts) => Hir::concat(parts.iter().map(widen).collect()),
        HirKind::Alternation(parts) => Hir::alternation(parts.iter().map(widen).collect()),
        _ => hir.clone(),
    }
}

/// Whether a syntax tree holds a bounded repetition longer than [`WIDEN_ABOVE`]: the construct
/// whose unanchored subset construction is exponential in its bound.
pub fn has_long_bounded_repetition(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Repetition(repetition) => {
            repetition.max.is_some_and(|max| max > WIDEN_ABOVE)
                || has_long_bounded_repetition(&repetition.sub)
        }
        HirKind::Capture(capture) => has_long_bounded_repetition(&capture.sub),
        HirKind::Concat(parts) | HirKind::Alternation(parts) => {
            parts.iter().any(has_long_bounded_repetition)
        }
        _ => false,
    }
}

/// Whether a syntax tree holds an unbounded repetition of a broad class (`.*`, `[^\n]*`): a
/// gap, whose DFA multiplies the size of any union it joins.
pub fn has_gap(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Repetition(repetition) => {
            let broad = match repetition.sub.kind() {
                HirKind::Class(regex_syntax::hir::Class::Unicode(class)) => {
                    class
                        .iter()
                        .map(|r| (r.end() as u32).saturating_sub(r.start() as u32) + 1)
                        .sum::<u32>()
                        > 256
                }
                HirKind::Class(regex_syntax::hir::Class::Bytes(class)) => {
                    class
                        .iter()
                        .map(|r| u32::from(r.end().saturating_sub(r.start())) + 1)
                        .sum::<u32>()
                        > 64
                }
                _ => false,
            };
            (repetition.max.is_none() && broad) || has_gap(&repetition.sub)
        }
        HirKind::Capture(capture) => has_gap(&capture.sub),
        HirKind::Concat(parts) | HirKind::Alternation(parts) => parts.iter().any(has_gap),
        _ => false,
    }
}

/// The budget of a first, exact attempt: small for a pattern with a long bounded repetition,
/// so that the attempt that is likely to explode fails fast.
pub fn exact_attempt_budget(hir: &Hir, budget: usize) -> usize {
    if has_long_bounded_repetition(hir) {
        budget.min(256 << 10)
    } else {
        budget
    }
}

/// Builds one DFA from syntax trees under `limits`: the NFA first (its size limit stops
/// repetition blow-up), then determinization (its working memory and the DFA's size limited).
pub(crate) fn build_dfa(
    hirs: &[Hir],
    limits: Limits,
) -> Result<dense::DFA<Vec<u32>>, AutomatonError> {
    let nfa = thompson::Compiler::new()
        .syntax(syntax::Config::new())
        .configure(thompson::Config::new().nfa_size_limit(Some(limits.nfa)))
        .build_many_from_hir(hirs)
        .map_err(|error| match error.size_limit() {
            Some(limit) => AutomatonError::Nfa { limit },
            None => AutomatonError::Other(error.to_string()),
        })?;
    dense::Builder::new()
        .configure(dfa_config(limits))
        .build_from_nfa(&nfa)
        .map_err(|error| {
            if !error.is_size_limit_exceeded() {
                AutomatonError::Other(error.to_string())
            } else if error.to_string().starts_with("determinization") {
                // regex-automata names the limit it hit only in its message.
                AutomatonError::Determinize {
                    limit: limits.determinize,
                }
            } else {
                AutomatonError::Dfa { limit: limits.dfa }
            }
        })
}

/// A pattern's syntax tree, parsed once per session.
fn parsed_hir(db: &dyn Db, pattern: &str) -> Result<Hir, AutomatonError> {
    crate::db::pattern_hir(db, crate::db::PatternText::new(db, pattern.to_owned()))
        .as_ref()
        .map(|hir| Hir::clone(hir))
        .map_err(|error| AutomatonError::Other(error.clone()))
}

/// A pattern's DFA alone, exact or widened, under limits. Tracked: the lowering and the
/// analysis make the same first attempt at a pattern, and a widened pattern's DFA alone is its
/// group's, so they are shared.
#[salsa::tracked(returns(ref), no_eq)]
pub(crate) fn exact_dfa<'db>(
    db: &'db dyn Db,
    key: ExactKey<'db>,
) -> Result<Arc<dense::DFA<Vec<u32>>>, AutomatonError> {
    let parsed = parsed_hir(db, key.text(db))?;
    let hir = if *key.widened(db) {
        widen(&parsed)
    } else {
        parsed
    };
    let limits = Limits {
        dfa: *key.dfa(db),
        determinize: *key.determinize(db),
        nfa: *key.nfa(db),
    };
    build_dfa(std::slice::from_ref(&hir), limits).map(Arc::new)
}

/// A pattern's DFA alone, as [`alone`] builds it.
#[derive(Debug)]
pub(crate) struct Alone {
    /// The DFA.
    pub dfa: Arc<dense::DFA<Vec<u32>>>,
    /// The syntax tree it was built from (widened when approximate).
    pub hir: Hir,
    /// Whether bounded gaps were widened.
    pub approximate: bool,
}

/// Builds a pattern's DFA alone, exact if it fits `key`'s budget, else with bounded gaps widened
/// (under the wide budget). The exact attempt is first made with the key's `first` budget when
/// that is smaller: its success yields the very DFA the larger budget would (the limits only
/// stop a build early), and it is the attempt the lowering makes, so the analysis shares it.
pub(crate) fn alone(db: &dyn Db, key: PatternKey<'_>) -> Result<Alone, AutomatonError> {
    let text = key.text(db);
    let hir = parsed_hir(db, text)?;
    let (determinize, nfa) = (*key.determinize(db), *key.nfa(db));
    let exact = |budget: usize| {
        let attempt = exact_attempt_budget(&hir, budget);
        let key = ExactKey::new(
            db,
            text.clone(),
            false,
            attempt,
            attempt.saturating_mul(2).min(determinize),
            nfa,
        );
        (attempt, exact_dfa(db, key).clone())
    };
    let budget = *key.budget(db);
    let (first_attempt, mut exact_result) = exact((*key.first(db)).min(budget));
    if exact_result.is_err() && first_attempt < exact_attempt_budget(&hir, budget) {
        exact_result = exact(budget).1;
    }
    match exact_result {
        Ok(dfa) => Ok(Alone {
            dfa,
            hir,
            approximate: false,
        }),
        Err(_) => {
            let wide = *key.wide_budget(db);
            let key = ExactKey::new(
                db,
                text.clone(),
                true,
                wide,
                wide.saturating_mul(4).min(determinize),
                nfa,
            );
            let dfa = exact_dfa(db, key).clone()?;
            Ok(Alone {
                dfa,
                hir: widen(&hir),
                approximate: true,
            })
        }
    }
}

/// A pattern prepared for the DFA: its syntax tree (widened when approximate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pattern: String,
    hir: Hir,
    approximate: bool,
    alone_bytes: usize,
}

/// Prepares a pattern: its DFA alone, exact if it fits, else with bounded gaps widened. Tracked:
/// a pattern is prepared once per session.
#[salsa::tracked(returns(ref))]
pub fn prepared<'db>(db: &'db dyn Db, key: PatternKey<'db>) -> Result<Prepared, AutomatonError> {
    let built = alone(db, key)?;
    Ok(Prepared {
        pattern: key.text(db).clone(),
        alone_bytes: built.dfa.memory_usage(),
        hir: built.hir,
        approximate: built.approximate,
    })
}

/// Patterns per DFA, at most: big enough that a real catalogue's view is one DFA, small enough
/// that determinizing one group stays fast and an edit rebuilds one group, not all.
pub const GROUP_SIZE: usize = 16;

/// Groups the patterns of a view: exact and widened patterns apart; each kind in buckets by a
/// stable hash of the id of the rule that uses the pattern, so that editing a rule's pattern
/// changes its own bucket only.
fn groups(prepared: &[Prepared], owners: &[String]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for approximate in [false, true] {
        let members: Vec<usize> = (0..prepared.len())
            .filter(|&i| {
                prepared
                    .get(i)
                    .is_some_and(|p| p.approximate == approximate)
            })
            .collect();
        // Gap-style patterns (`.*`, `[^\n]*`, widened bounded gaps) multiply each other's size in
        // a union (four of the reference catalogue's take 12 MB together, 60-225 KB apart),
        // and a failed determinization costs seconds: each gets a DFA of its own.
        let (gapped, members): (Vec<usize>, Vec<usize>) = members.into_iter().partition(|&index| {
            approximate || prepared.get(index).is_some_and(|p| has_gap(&p.hir))
        });
        out.extend(gapped.into_iter().map(|index| vec![index]));
        let buckets = members
            .len()
            .div_ceil(GROUP_SIZE)
            .max(1)
            .next_power_of_two();
        let mut grouped: Vec<Vec<usize>> = vec![Vec::new(); buckets];
        for index in members {
            let hash = owners.get(index).map_or(0, |owner| stable_hash(owner));
            if let Some(bucket) = grouped.get_mut((hash % buckets as u64) as usize) {
                bucket.push(index);
            }
        }
        out.extend(grouped.into_iter().filter(|group| !group.is_empty()));
    }
    out
}

/// FNV-1a: stable across runs and platforms, unlike the standard library's hasher.
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One built DFA: its serialized bytes and its size in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDfa {
    /// Little-endian serialization.
    pub bytes: Vec<u8>,
    /// Heap size of the DFA.
    pub memory: usize,
}

/// Builds one group's DFA. Tracked: a group whose members did not change is not rebuilt.
#[salsa::tracked(returns(ref))]
pub fn group_dfa<'db>(
    db: &'db dyn Db,
    key: GroupKey<'db>,
) -> Result<Arc<GroupDfa>, AutomatonError> {
    // A widened pattern alone (every one has a DFA of its own) was built while it was
    // prepared, under the same limits when the budgets keep their ratio: reuse it.
    if let [(pattern, true)] = key.patterns(db).as_slice() {
        let alone = ExactKey::new(
            db,
            pattern.clone(),
            true,
            *key.budget(db),
            *key.determinize(db),
            *key.nfa(db),
        );
        let dfa = exact_dfa(db, alone).clone()?;
        let (bytes, padding) = dfa.to_bytes_little_endian();
        return Ok(Arc::new(GroupDfa {
            bytes: bytes.get(padding..).unwrap_or_default().to_vec(),
            memory: dfa.memory_usage(),
        }));
    }
    let mut hirs = Vec::new();
    for (pattern, approximate) in key.patterns(db) {
        let hir = parsed_hir(db, pattern)?;
        hirs.push(if *approximate { widen(&hir) } else { hir });
    }
    let limits = Limits {
        dfa: *key.budget(db),
        determinize: *key.determinize(db),
        nfa: *key.nfa(db),
    };
    let dfa = build_dfa(&hirs, limits)?;
    let (bytes, padding) = dfa.to_bytes_little_endian();
    Ok(Arc::new(GroupDfa {
        bytes: bytes.get(padding..).unwrap_or_default().to_vec(),
        memory: dfa.memory_usage(),
    }))
}

/// Splits `group` (indices into `prepared`) into DFAs that fit the budget; a pattern that does
/// not fit even alone is the error, with its index.
fn partition(
    db: &dyn Db,
    prepared: &[Prepared],
    group: &[usize],
    budget: &Budget,
    out: &mut Vec<(Vec<usize>, Arc<GroupDfa>)>,
) -> Result<(), (usize, AutomatonError)> {
    if group.is_empty() {
        return Ok(());
    }
    let members: Vec<(String, bool)> = group
        .iter()
        .filter_map(|&i| prepared.get(i).map(|p| (p.pattern.clone(), p.approximate)))
        .collect();
    let key = GroupKey::new(
        db,
        members,
        budget.view_dfa_bytes,
        budget.determinize_bytes,
        budget.nfa_bytes,
    );
    match group_dfa(db, key) {
        Ok(dfa) => {
            out.push((group.to_vec(), Arc::clone(dfa)));
            Ok(())
        }
        Err(error) => match group {
            [single] => Err((*single, error.clone())),
            _ => {
                let (left, right) = group.split_at(group.len() / 2);
                partition(db, prepared, left, budget, out)?;
                partition(db, prepared, right, budget, out)
            }
        },
    }
}

/// A text matcher's pattern as the DFA sees it: regexes as lowered, `contains` as an escaped
/// literal.
fn dfa_pattern(matcher: &TextMatcher) -> Option<String> {
    match &matcher.kind {
        MatcherKind::Regex { lowered, .. } => Some(lowered.clone()),
        MatcherKind::Contains {
            literal,
            ignore_case,
        } => Some(format!(
            "{}{}",
            if *ignore_case { "(?i)" } else { "" },
            regex_syntax::escape(literal)
        )),
        MatcherKind::Prefix { .. } | MatcherKind::Whole { .. } => None,
    }
}

/// The prefilter requirement of a rule: the strongest of its positive matchers'.
fn rule_requirement(db: &dyn Db, rule: &RuleDef) -> Option<literals::Requirement> {
    let mut best: Option<literals::Requirement> = None;
    for matcher in &rule.matchers {
        let requirement = match &matcher.kind {
            MatcherKind::Regex { lowered, .. } => {
                crate::db::required_words(db, crate::db::PatternText::new(db, lowered.clone()))
                    .clone()
                    .map(|words| literals::Requirement { words })
            }
            MatcherKind::Contains { literal, .. }
            | MatcherKind::Prefix { literal, .. }
            | MatcherKind::Whole { literal, .. } => literals::literal_requirement(literal),
        };
        // A sanitized-view requirement on a word the redaction writes could be met by text the
        // raw input does not hold: such a matcher does not gate the rule.
        let requirement = requirement
            .filter(|r| matcher.view == TextView::Raw || !literals::touches_introduced_words(r));
        let strength =
            |r: &literals::Requirement| r.words.iter().map(String::len).min().unwrap_or(0);
        best = match (best, requirement) {
            (Some(a), Some(b)) => Some(if strength(&b) > strength(&a) { b } else { a }),
            (a, b) => a.or(b),
        };
    }
    best
}

/// The FL0109 diagnostic of a pattern (at `span` in `rule`) whose automaton or regex does not
/// fit its budget.
fn too_large(rule: &RuleDef, span: Span, error: &AutomatonError) -> Diagnostic {
    let (label, help) = match error {
        AutomatonError::Nfa { .. } => (
            "its repetitions expand into more automaton states than the NFA budget allows",
            "simplify the pattern: a bounded repetition is expanded into copies, so nested or long ones multiply (`a{1000}{1000}` is a million states); the budgets are listed in docs/bundle.md",
        ),
        AutomatonError::Dfa { .. } => (
            "its deterministic automaton is too large, even with bounded gaps widened",
            "simplify the pattern (long bounded repetitions after a wide class and large Unicode classes are the usual cause), or raise the budget with `--dfa-budget` (see docs/bundle.md)",
        ),
        AutomatonError::Determinize { .. } => (
            "determinizing it needs too much memory, even with bounded gaps widened",
            "simplify the pattern (long literals or bounded repetitions in an unanchored search are the usual cause), or raise the budget with `--dfa-budget`, which sets the determinization budget to four times itself (see docs/bundle.md)",
        ),
        AutomatonError::Regex { .. } => (
            "the exact regex that confirms its matches when the bundle runs is too large",
            "shorten the bounded repetition (for example `{0,512}`, not `{0,100000}`): the runtime confirms every match of a widened pattern with its exact regex, which must fit the runtime's regex limit (see docs/bundle.md)",
        ),
        AutomatonError::Other(_) => (
            "this pattern cannot be compiled",
            "simplify the pattern (see docs/bundle.md)",
        ),
    };
    Diagnostic::new(
        Code::AutomatonTooLarge,
        format!("a pattern of `{}` exceeds its budget: {error}", rule.id),
    )
    .primary(&rule.origin.file, span, label)
    .help(help)
}

/// Every use of one pattern: the rule (catalogue index) and where the pattern is written.
type Uses = Vec<(usize, Span)>;

/// Lowers the rules of a checked catalogue that `include` marks, in effective priority order.
/// A rule whose automata or regexes exceed their budget is left out with its diagnostic
/// (FL0109, on the pattern) and the others are lowered without it.
pub fn lower(
    db: &dyn Db,
    catalogue: &Catalogue,
    priority: &Priority,
    budget: &Budget,
    include: &[bool],
) -> (Lowered, Vec<Diagnostic>) {
    let mut included: Vec<bool> = (0..catalogue.rules.len())
        .map(|index| include.get(index).copied().unwrap_or(false))
        .collect();
    let mut diagnostics = Vec::new();
    let mut regexes = HashMap::new();
    loop {
        match lower_included(db, catalogue, priority, budget, &included, &mut regexes) {
            Ok(mut lowered) => {
                lowered.included = included;
                return (lowered, diagnostics);
            }
            Err(failures) => {
                let mut progressed = false;
                for (rule, diagnostic) in failures {
                    if let Some(slot) = included.get_mut(rule).filter(|slot| **slot) {
                        *slot = false;
                        progressed = true;
                    }
                    diagnostics.push(diagnostic);
                }
                // Every failure names an included rule; should one ever not, lower nothing
                // rather than loop.
                if !progressed {
                    included.fill(false);
                }
            }
        }
    }
}

/// Checks that `pattern` compiles as a `regex` within the regex budget (memoized per lowering).
fn regex_fits(
    pattern: &str,
    budget: &Budget,
    memo: &mut HashMap<String, Option<AutomatonError>>,
) -> Option<AutomatonError> {
    memo.entry(pattern.to_owned())
        .or_insert_with(|| {
            crate::pattern::regex(pattern, budget.regex_limit())
                .err()
                .map(|error| match error {
                    regex::Error::CompiledTooBig(limit) => AutomatonError::Regex { limit },
                    other => AutomatonError::Other(other.to_string()),
                })
        })
        .clone()
}

/// The regexes the runtime compiles for a rule when a bundle loads, besides those of widened
/// patterns: captures (`where group`, `remediation capture`) and case-folded `prefix`/`whole`
/// literals. Each with where it is written.
fn runtime_regexes(rule: &RuleDef) -> Vec<(String, Span)> {
    let mut found = Vec::new();
    for matcher in rule.matchers.iter().chain(&rule.vetoes) {
        match &matcher.kind {
            MatcherKind::Regex {
                lowered,
                group_equals: Some(_),
                ..
            } => found.push((lowered.clone(), matcher.span)),
            MatcherKind::Prefix {
                literal,
                ignore_case: true,
                ..
            } => found.push((
                format!(r"(?i)\A(?:{})", regex::escape(literal)),
                matcher.span,
            )),
            MatcherKind::Whole {
                literal,
                ignore_case: true,
            } => found.push((
                format!(r"(?i)\A(?:{})\z", regex::escape(literal)),
                matcher.span,
            )),
            _ => {}
        }
    }
    if let Some(RemediationSpec::Capture { lowered, span, .. }) = &rule.remediation {
        found.push((lowered.clone(), *span));
    }
    found
}

/// One attempt at lowering the included rules: the lowering, or every rule that must be left
/// out with its diagnostic.
fn lower_included(
    db: &dyn Db,
    catalogue: &Catalogue,
    priority: &Priority,
    budget: &Budget,
    included: &[bool],
    regexes: &mut HashMap<String, Option<AutomatonError>>,
) -> Result<Lowered, Vec<(usize, Diagnostic)>> {
    let order: Vec<usize> = priority
        .order
        .iter()
        .copied()
        .filter(|&index| included.get(index).copied().unwrap_or(false))
        .collect();
    let mut failures: Vec<(usize, Diagnostic)> = Vec::new();
    let fail = |failures: &mut Vec<(usize, Diagnostic)>,
                uses: &[(usize, Span)],
                error: &AutomatonError| {
        for &(rule_index, span) in uses {
            if let Some(rule) = catalogue.rules.get(rule_index) {
                failures.push((rule_index, too_large(rule, span, error)));
            }
        }
    };
    // Patterns per view, deduplicated, in first-use order, with every use of each.
    let mut view_patterns: BTreeMap<TextView, Vec<(String, Uses)>> = BTreeMap::new();
    let mut pattern_slot: HashMap<(TextView, String), usize> = HashMap::new();
    for &rule_index in &order {
        let Some(rule) = catalogue.rules.get(rule_index) else {
            continue;
        };
        for matcher in rule.matchers.iter().chain(&rule.vetoes) {
            if let Some(pattern) = dfa_pattern(matcher) {
                let patterns = view_patterns.entry(matcher.view).or_default();
                let slot = *pattern_slot
                    .entry((matcher.view, pattern.clone()))
                    .or_insert_with(|| {
                        patterns.push((pattern, Vec::new()));
                        patterns.len() - 1
                    });
                if let Some((_, uses)) = patterns.get_mut(slot) {
                    uses.push((rule_index, matcher.span));
                }
            }
        }
        for (pattern, span) in runtime_regexes(rule) {
            if let Some(error) = regex_fits(&pattern, budget, regexes) {
                fail(&mut failures, &[(rule_index, span)], &error);
            }
        }
    }
    let mut prepared_views: Vec<(TextView, Vec<Prepared>)> = Vec::new();
    for (view, patterns) in &view_patterns {
        let mut prepared_patterns = Vec::new();
        for (pattern, uses) in patterns {
            let key = PatternKey::new(
                db,
                pattern.clone(),
                budget.pattern_dfa_bytes,
                budget.pattern_dfa_bytes,
                budget.view_dfa_bytes,
                budget.determinize_bytes,
                budget.nfa_bytes,
            );
            match prepared(db, key) {
                Ok(p) => {
                    // The runtime confirms every hit of a widened pattern with its exact regex.
                    if p.approximate
                        && let Some(error) = regex_fits(pattern, budget, regexes)
                    {
                        fail(&mut failures, uses, &error);
                    }
                    prepared_patterns.push(p.clone());
                }
                Err(error) => fail(&mut failures, uses, error),
            }
        }
        prepared_views.push((*view, prepared_patterns));
    }
    if !failures.is_empty() {
        return Err(failures);
    }
    let mut views = Vec::new();
    let mut dfas = Vec::new();
    let mut reports = Vec::new();
    for ((view, patterns), (_, prepared_patterns)) in view_patterns.iter().zip(&prepared_views) {
        let mut built = Vec::new();
        let owners: Vec<String> = patterns
            .iter()
            .map(|(_, uses)| {
                uses.first()
                    .and_then(|&(i, _)| catalogue.rules.get(i))
                    .map(|rule| rule.id.clone())
                    .unwrap_or_default()
            })
            .collect();
        for group in groups(prepared_patterns, &owners) {
            if let Err((member, error)) =
                partition(db, prepared_patterns, &group, budget, &mut built)
            {
                fail(
                    &mut failures,
                    patterns.get(member).map_or(&[][..], |(_, uses)| uses),
                    &error,
                );
            }
        }
        let mut pattern_entries: Vec<Option<PatternEntry>> = vec![None; prepared_patterns.len()];
        let mut dfa_entries = Vec::new();
        for (position, (members, dfa)) in built.iter().enumerate() {
            dfas.push(dfa.bytes.clone());
            dfa_entries.push(DfaEntry {
                section: dfas.len() as u32,
                pattern_count: members.len() as u32,
            });
            for (dfa_pattern, &member) in members.iter().enumerate() {
                if let (Some(slot), Some(p)) = (
                    pattern_entries.get_mut(member),
                    prepared_patterns.get(member),
                ) {
                    *slot = Some(PatternEntry {
                        pattern: p.pattern.clone(),
                        dfa: position as u32,
                        dfa_pattern: dfa_pattern as u32,
                        approximate: p.approximate,
                        alone_bytes: p.alone_bytes as u64,
                    });
                }
            }
        }
        for p in prepared_patterns {
            reports.push(PatternReport {
                view: *view,
                pattern: p.pattern.clone(),
                alone_bytes: p.alone_bytes,
                approximate: p.approximate,
            });
        }
        views.push(ViewEntry {
            view: *view,
            patterns: pattern_entries.into_iter().flatten().collect(),
            dfas: dfa_entries,
        });
    }
    if !failures.is_empty() {
        return Err(failures);
    }
    let pattern_index = |view: TextView, pattern: String| -> u32 {
        pattern_slot.get(&(view, pattern)).copied().unwrap_or(0) as u32
    };
    let matcher_entry = |matcher: &TextMatcher| -> MatcherEntry {
        let kind = match &matcher.kind {
            MatcherKind::Regex { group_equals, .. } => MatcherKindEntry::Pattern {
                pattern: pattern_index(matcher.view, dfa_pattern(matcher).unwrap_or_default()),
                group_equals: *group_equals,
            },
            MatcherKind::Contains { .. } => MatcherKindEntry::Pattern {
                pattern: pattern_index(matcher.view, dfa_pattern(matcher).unwrap_or_default()),
                group_equals: None,
            },
            MatcherKind::Prefix {
                literal,
                ignore_case,
                suffix,
            } => MatcherKindEntry::Prefix {
                literal: literal.clone(),
                ignore_case: *ignore_case,
                suffix: suffix.map(|(min, max)| (min as u32, max as u32)),
            },
            MatcherKind::Whole {
                literal,
                ignore_case,
            } => MatcherKindEntry::Whole {
                literal: literal.clone(),
                ignore_case: *ignore_case,
            },
        };
        MatcherEntry {
            view: matcher.view,
            kind,
        }
    };
    let code_index: BTreeMap<&str, u32> = catalogue
        .codes
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i as u32))
        .collect();
    let mut rules = Vec::new();
    let mut literal_rules: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for (position, &rule_index) in order.iter().enumerate() {
        let Some(rule) = catalogue.rules.get(rule_index) else {
            continue;
        };
        let requirement = if rule.matchers.is_empty() {
            None
        } else {
            rule_requirement(db, rule)
        };
        if let Some(requirement) = &requirement {
            for word in &requirement.words {
                literal_rules
                    .entry(word.clone())
                    .or_default()
                    .push(position as u32);
            }
        }
        rules.push(RuleEntry {
            id: rule.id.clone(),
            doc: rule.doc.clone(),
            code: code_index.get(rule.code.as_str()).copied().unwrap_or(0),
            confidence: rule.confidence,
            scope: rule.scope,
            tier: rule.tier as u32,
            guards: rule.guards.clone(),
            matchers: rule.matchers.iter().map(&matcher_entry).collect(),
            vetoes: rule.vetoes.iter().map(&matcher_entry).collect(),
            timing: rule.timing.clone(),
            excerpt: rule.excerpt.clone(),
            remediation: rule
                .remediation
                .as_ref()
                .map(|remediation| match remediation {
                    RemediationSpec::Token(token) => RemediationEntry::Token(token.clone()),
                    RemediationSpec::Capture {
                        lowered,
                        group,
                        view,
                        ..
                    } => RemediationEntry::Capture {
                        pattern: lowered.clone(),
                        group: *group,
                        view: *view,
                    },
                }),
            gated: requirement.is_some(),
            verified_examples: (rule.examples.len() + rule.counterexamples.len()) as u32,
        });
    }
    let literals = literal_rules
        .into_iter()
        .map(|(literal, rules)| LiteralEntry {
            folds_beyond_ascii: literal.contains(['k', 's']),
            literal,
            rules,
        })
        .collect();
    let model = CatalogueModel {
        redaction_version: REDACTION_VERSION.to_owned(),
        tiers: catalogue.tiers.clone(),
        codes: catalogue
            .codes
            .iter()
            .map(|code| CodeEntry {
                name: code.name.clone(),
                class: code.class,
                auto_retryable: code.auto_retryable,
                fallback_allowed: code.fallback_allowed,
                user_action: code.user_action,
                scope: code.scope,
                remediation: code.remediation.clone(),
            })
            .collect(),
        rules,
        views,
        literals,
    };
    Ok(Lowered {
        model,
        dfas,
        patterns: reports,
        included: Vec::new(),
    })
}

/// Writes the bundle bytes for a lowered catalogue. The writer stamps the format and its
/// versions and the content hash; this passes only what the compiler knows.
pub fn write_bundle(
    catalogue: &Catalogue,
    lowered: &Lowered,
    manifest_hash: [u8; 32],
) -> Result<Vec<u8>, WriteError> {
    faultline_runtime::build::write(&BundleContents {
        catalogue_name: &catalogue.name,
        catalogue_version: &catalogue.version,
        compiler_version: env!("CARGO_PKG_VERSION"),
        manifest_hash,
        model: &lowered.model,
        automata: &lowered.dfas,
    })
}
