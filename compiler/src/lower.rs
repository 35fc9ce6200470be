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

use std::collections::BTreeMap;

use faultline_dsl::{Code, Diagnostic};
use faultline_runtime::bundle::model::{
    CatalogueModel, CodeEntry, DfaEntry, LiteralEntry, MatcherEntry, MatcherKindEntry,
    PatternEntry, RemediationEntry, RuleEntry, ViewEntry,
};
use faultline_runtime::bundle::{Header, wire};
use faultline_runtime::sanitize::REDACTION_VERSION;
use faultline_runtime::{Bundle, TextView};
use regex_automata::dfa::{StartKind, dense};
use regex_automata::nfa::thompson;
use regex_automata::{MatchKind, util::syntax};
use regex_syntax::hir::{Hir, HirKind, Repetition};

use std::sync::Arc;

use crate::db::{Db, GroupKey, PatternKey};
use crate::ir::{Catalogue, MatcherKind, RemediationSpec, RuleDef, TextMatcher};
use crate::literals;
use crate::priority::Priority;

/// Size limits of the automata, in bytes. Part of the compiler's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// A pattern alone must determinize within this, or its bounded gaps are widened.
    pub pattern_dfa_bytes: usize,
    /// Each DFA of the bundle must fit within this.
    pub view_dfa_bytes: usize,
    /// Memory the determinizer may use for one DFA.
    pub determinize_bytes: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            pattern_dfa_bytes: 4 << 20,
            view_dfa_bytes: 32 << 20,
            determinize_bytes: 128 << 20,
        }
    }
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
}

fn dfa_config(budget: usize, determinize: usize) -> dense::Config {
    dense::Config::new()
        .match_kind(MatchKind::All)
        .start_kind(StartKind::Unanchored)
        .dfa_size_limit(Some(budget))
        .determinize_size_limit(Some(determinize))
        .minimize(false)
        .byte_classes(true)
}

fn parse_hir(pattern: &str) -> Result<Hir, String> {
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .map_err(|error| error.to_string())
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

/// Builds one DFA from syntax trees.
pub fn build_dfa(
    hirs: &[Hir],
    budget: usize,
    determinize: usize,
) -> Result<dense::DFA<Vec<u32>>, String> {
    let nfa = thompson::Compiler::new()
        .syntax(syntax::Config::new())
        .build_many_from_hir(hirs)
        .map_err(|error| error.to_string())?;
    dense::Builder::new()
        .configure(dfa_config(budget, determinize))
        .build_from_nfa(&nfa)
        .map_err(|error| error.to_string())
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
pub fn prepared<'db>(db: &'db dyn Db, key: PatternKey<'db>) -> Result<Prepared, String> {
    prepare(key.text(db), *key.budget(db), *key.wide_budget(db))
}

fn prepare(pattern: &str, pattern_budget: usize, wide_budget: usize) -> Result<Prepared, String> {
    let hir = parse_hir(pattern)?;
    // A pattern that does not fit is usually a bounded gap, whose subset construction explodes:
    // a small determinization limit makes that attempt fail fast.
    let attempt = exact_attempt_budget(&hir, pattern_budget);
    match build_dfa(
        std::slice::from_ref(&hir),
        attempt,
        attempt.saturating_mul(2),
    ) {
        Ok(dfa) => Ok(Prepared {
            pattern: pattern.to_owned(),
            hir,
            approximate: false,
            alone_bytes: dfa.memory_usage(),
        }),
        Err(_) => {
            let widened = widen(&hir);
            let dfa = build_dfa(
                std::slice::from_ref(&widened),
                wide_budget,
                wide_budget.saturating_mul(4),
            )?;
            Ok(Prepared {
                pattern: pattern.to_owned(),
                hir: widened,
                approximate: true,
                alone_bytes: dfa.memory_usage(),
            })
        }
    }
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
pub fn group_dfa<'db>(db: &'db dyn Db, key: GroupKey<'db>) -> Result<Arc<GroupDfa>, String> {
    let mut hirs = Vec::new();
    for (pattern, approximate) in key.patterns(db) {
        let hir = parse_hir(pattern)?;
        hirs.push(if *approximate { widen(&hir) } else { hir });
    }
    let dfa = build_dfa(&hirs, *key.budget(db), *key.determinize(db))?;
    let (bytes, padding) = dfa.to_bytes_little_endian();
    Ok(Arc::new(GroupDfa {
        bytes: bytes.get(padding..).unwrap_or_default().to_vec(),
        memory: dfa.memory_usage(),
    }))
}

/// Splits `group` (indices into `prepared`) into DFAs that fit the budget.
fn partition(
    db: &dyn Db,
    prepared: &[Prepared],
    group: &[usize],
    budget: &Budget,
    out: &mut Vec<(Vec<usize>, Arc<GroupDfa>)>,
) -> Result<(), String> {
    if group.is_empty() {
        return Ok(());
    }
    let members: Vec<(String, bool)> = group
        .iter()
        .filter_map(|&i| prepared.get(i).map(|p| (p.pattern.clone(), p.approximate)))
        .collect();
    let key = GroupKey::new(db, members, budget.view_dfa_bytes, budget.determinize_bytes);
    match group_dfa(db, key) {
        Ok(dfa) => {
            out.push((group.to_vec(), Arc::clone(dfa)));
            Ok(())
        }
        Err(error) if group.len() == 1 => Err(error.clone()),
        Err(_) => {
            let (left, right) = group.split_at(group.len() / 2);
            partition(db, prepared, left, budget, out)?;
            partition(db, prepared, right, budget, out)
        }
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

/// Lowers a checked catalogue in effective priority order.
pub fn lower(
    db: &dyn Db,
    catalogue: &Catalogue,
    priority: &Priority,
    budget: &Budget,
) -> Result<Lowered, Vec<Diagnostic>> {
    let mut diagnostics = Vec::new();
    // Patterns per view, deduplicated, in first-use order.
    let mut view_patterns: BTreeMap<TextView, Vec<String>> = BTreeMap::new();
    let mut pattern_owner: BTreeMap<(TextView, String), usize> = BTreeMap::new();
    for &rule_index in &priority.order {
        let Some(rule) = catalogue.rules.get(rule_index) else {
            continue;
        };
        for matcher in rule.matchers.iter().chain(&rule.vetoes) {
            if let Some(pattern) = dfa_pattern(matcher) {
                let patterns = view_patterns.entry(matcher.view).or_default();
                if !patterns.contains(&pattern) {
                    patterns.push(pattern.clone());
                    pattern_owner.insert((matcher.view, pattern), rule_index);
                }
            }
        }
    }
    let mut views = Vec::new();
    let mut dfas = Vec::new();
    let mut reports = Vec::new();
    for (view, patterns) in &view_patterns {
        let mut prepared_patterns = Vec::new();
        for pattern in patterns {
            let key = PatternKey::new(
                db,
                pattern.clone(),
                budget.pattern_dfa_bytes,
                budget.view_dfa_bytes,
            );
            match prepared(db, key).clone() {
                Ok(p) => prepared_patterns.push(p),
                Err(error) => {
                    if let Some(rule) = pattern_owner
                        .get(&(*view, pattern.clone()))
                        .and_then(|&i| catalogue.rules.get(i))
                    {
                        diagnostics.push(
                            Diagnostic::new(Code::AutomatonTooLarge, format!("the automaton for a pattern of `{}` exceeds its budget", rule.id))
                                .primary(&rule.origin.file, rule.origin.span, error)
                                .help("simplify the pattern (large Unicode classes and nested bounded repetitions are the usual cause), or raise the budget"),
                        );
                    }
                }
            }
        }
        if !diagnostics.is_empty() {
            continue;
        }
        let mut built = Vec::new();
        let owners: Vec<String> = patterns
            .iter()
            .map(|pattern| {
                pattern_owner
                    .get(&(*view, pattern.clone()))
                    .and_then(|&i| catalogue.rules.get(i))
                    .map(|rule| rule.id.clone())
                    .unwrap_or_default()
            })
            .collect();
        for group in groups(&prepared_patterns, &owners) {
            if let Err(error) = partition(db, &prepared_patterns, &group, budget, &mut built) {
                diagnostics.push(Diagnostic::new(
                    Code::AutomatonTooLarge,
                    format!("a `{view}` automaton exceeds its budget: {error}"),
                ));
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
        for p in &prepared_patterns {
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
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    let pattern_index = |view: TextView, pattern: &str| -> u32 {
        view_patterns
            .get(&view)
            .and_then(|patterns| patterns.iter().position(|p| p == pattern))
            .unwrap_or(0) as u32
    };
    let matcher_entry = |matcher: &TextMatcher| -> MatcherEntry {
        let kind = match &matcher.kind {
            MatcherKind::Regex { group_equals, .. } => MatcherKindEntry::Pattern {
                pattern: pattern_index(matcher.view, &dfa_pattern(matcher).unwrap_or_default()),
                group_equals: *group_equals,
            },
            MatcherKind::Contains { .. } => MatcherKindEntry::Pattern {
                pattern: pattern_index(matcher.view, &dfa_pattern(matcher).unwrap_or_default()),
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
    for (position, &rule_index) in priority.order.iter().enumerate() {
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
    })
}

/// Writes the bundle bytes for a lowered catalogue.
pub fn write_bundle(
    catalogue: &Catalogue,
    lowered: &Lowered,
    manifest_hash: [u8; 32],
) -> Result<Vec<u8>, String> {
    let header = Header {
        format_version: wire::FORMAT_VERSION,
        min_reader_version: wire::READER_VERSION,
        content_hash: [0; 32],
        manifest_hash,
        catalogue_name: catalogue.name.clone(),
        catalogue_version: catalogue.version.clone(),
        compiler_version: env!("CARGO_PKG_VERSION").to_owned(),
        regex_automata_version: wire::REGEX_AUTOMATA_FAMILY.to_owned(),
    };
    Bundle::write(&header, &lowered.model, &lowered.dfas).map_err(|error| error.to_string())
}
