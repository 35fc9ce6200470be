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
//!
//! [`budget`] holds the limits and how an excess is reported; [`automata`] builds each pattern's
//! automaton and each group's DFA (tracked queries); this module turns the catalogue into the
//! bundle's model.

mod automata;
mod budget;

pub(crate) use automata::*;
pub use budget::*;

use std::collections::{BTreeMap, HashMap};

use faultline_dsl::{Code, Diagnostic, Span};
use faultline_runtime::build::{BundleContents, PatternRegex, PatternRegexError, WriteError};
use faultline_runtime::build::{
    CatalogueModel, CodeEntry, DfaEntry, DfaSlot, LiteralEntry, MatcherEntry, MatcherKindEntry,
    PatternEntry, RemediationEntry, RequirementEntry, RuleEntry, ViewEntry,
};
use faultline_runtime::{Bundle, REDACTION_VERSION, TextView};

use crate::db::{Db, PatternKey, RegexKey};
use crate::ir::{Catalogue, MatcherKind, RemediationSpec, RuleDef, RuleIndex, TextMatcher};
use crate::literals;
use crate::priority::Priority;

/// How one pattern was lowered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternReport {
    /// The view.
    pub view: TextView,
    /// The pattern (lowered syntax).
    pub pattern: String,
    /// Size of its DFA alone, in bytes; `None` for a pattern that gets no DFA (only gated rules
    /// read it, and the runtime searches it with its regex).
    pub alone_bytes: Option<usize>,
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
    /// The catalogue rules in the bundle, in the bundle's order (its rule positions).
    pub order: Vec<RuleIndex>,
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

/// The prefilter requirement of a rule: the strongest of its positive matchers' conjuncts.
fn rule_requirement(db: &dyn Db, rule: &RuleDef) -> Option<literals::Conjuncts> {
    let mut best: Option<literals::Conjuncts> = None;
    // The prefilter scans the evidence text: a matcher on the body cannot gate the rule.
    for matcher in rule
        .matchers
        .iter()
        .filter(|matcher| matcher.view != TextView::Body)
    {
        let requirement = match &matcher.kind {
            MatcherKind::Regex { lowered, .. } => {
                crate::db::required_conjuncts(db, crate::db::PatternText::new(db, lowered.clone()))
                    .clone()
                    .map(|conjuncts| literals::Conjuncts { conjuncts })
            }
            MatcherKind::Contains { literal, .. }
            | MatcherKind::Prefix { literal, .. }
            | MatcherKind::Whole { literal, .. } => literals::literal_conjuncts(literal),
        };
        // A sanitized-view word the redaction could write need not be in the raw text: it is
        // dropped from its conjunct (a conjunct left empty requires nothing).
        let requirement = requirement.and_then(|requirement| {
            if matcher.view == TextView::Raw {
                Some(requirement)
            } else {
                requirement.without(literals::introduced_by_redaction)
            }
        });
        best = match (best, requirement) {
            (Some(a), Some(b)) => Some(if b.strength() > a.strength() { b } else { a }),
            (a, b) => a.or(b),
        };
    }
    best
}

/// FL0113 for every rule of `include` that reads the evidence text but gives the prefilter no
/// word to require: the runtime can then never skip it, and every piece of evidence that reaches
/// its views runs the automata.
pub fn ungated_rules(db: &dyn Db, catalogue: &Catalogue, include: &[bool]) -> Vec<Diagnostic> {
    catalogue
        .rules
        .iter()
        .zip(include)
        .filter(|(_, included)| **included)
        .filter_map(|(rule, _)| {
            let first_text_matcher = rule
                .matchers
                .iter()
                .find(|matcher| matcher.view != TextView::Body)?;
            if rule_requirement(db, rule).is_some() {
                return None;
            }
            Some(
                Diagnostic::new(
                    Code::UngatedRule,
                    format!(
                        "`{}` has no word the prefilter can require, so it is never skipped",
                        rule.id
                    ),
                )
                .primary(
                    &rule.origin.file,
                    first_text_matcher.span,
                    "some text this matches holds no required word (3 or more ASCII letters, digits or `_`, or 2 or more CJK characters)",
                )
                .help("give every alternative a distinctive word it requires (a provider's phrase, an error type, a JSON key), or split the rule"),
            )
        })
        .collect()
}

/// The diagnostic of a pattern (at `span` in `rule`) whose automaton or regex could not be
/// built: FL0109 when it does not fit its budget, FL0111 when it cannot be built at all.
fn too_large(rule: &RuleDef, span: Span, error: &AutomatonError) -> Diagnostic {
    let (label, help) = match error {
        AutomatonError::Other(message) => {
            return Diagnostic::new(
                Code::PatternNotCompiled,
                format!("a pattern of `{}` cannot be compiled: {message}", rule.id),
            )
            .primary(
                &rule.origin.file,
                span,
                "the automaton library refuses this pattern",
            )
            .help("rewrite the pattern with simpler constructs; the checks before compilation should have refused it with a precise code, so please report the pattern");
        }
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
    };
    Diagnostic::new(
        Code::AutomatonTooLarge,
        format!("a pattern of `{}` exceeds its budget: {error}", rule.id),
    )
    .primary(&rule.origin.file, span, label)
    .help(help)
}

/// Every use of one pattern: the rule (catalogue index) and where the pattern is written.
type Uses = Vec<(RuleIndex, Span)>;

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
    loop {
        match lower_included(db, catalogue, priority, budget, &included) {
            Ok(mut lowered) => {
                lowered.included = included;
                return (lowered, diagnostics);
            }
            Err(failures) => {
                let mut progressed = false;
                for (rule, diagnostic) in failures {
                    if let Some(slot) = included.get_mut(rule.as_usize()).filter(|slot| **slot) {
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

/// Checks that `pattern` compiles as a `regex` within the regex budget.
fn regex_fits(db: &dyn Db, pattern: &str, budget: &Budget) -> Option<AutomatonError> {
    runtime_regex(
        db,
        RegexKey::new(db, pattern.to_owned(), budget.regex_limit()),
    )
    .as_ref()
    .err()
    .cloned()
}

/// A pattern compiled as the runtime compiles it within a size limit, or why it does not
/// compile. Tracked: compiled once per session, ahead of the lowering on worker threads; the
/// bundle the check loads adopts the compiled regexes ([`adopt_checked_regexes`]) rather than
/// compile each again when the examples first classify.
#[salsa::tracked(returns(ref), no_eq)]
pub(crate) fn runtime_regex<'db>(
    db: &'db dyn Db,
    key: RegexKey<'db>,
) -> Result<PatternRegex, AutomatonError> {
    PatternRegex::compile(
        key.text(db),
        *key.limit(db),
        crate::pattern::DOWNSTREAM_NEST_LIMIT,
    )
    .map_err(|error| match error {
        PatternRegexError::TooBig { limit } => AutomatonError::Regex { limit },
        other => AutomatonError::Other(other.to_string()),
    })
}

/// Gives `bundle` the regexes this session compiled to check its patterns: every pattern the
/// bundle compiles on first use was checked by [`regex_fits`], so each is found memoized (a
/// pattern that was not, if any, is compiled here, as its first use would).
pub(crate) fn adopt_checked_regexes(db: &dyn Db, bundle: &Bundle, budget: &Budget) {
    faultline_runtime::build::adopt_regexes(bundle, |pattern| {
        runtime_regex(
            db,
            RegexKey::new(db, pattern.to_owned(), budget.regex_limit()),
        )
        .as_ref()
        .ok()
        .cloned()
    });
}

/// The regexes the runtime compiles for a rule (on first use), besides those of widened
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
/// The key a pattern is prepared under by the lowering.
fn pattern_key<'db>(db: &'db dyn Db, pattern: &str, budget: &Budget) -> PatternKey<'db> {
    PatternKey::new(
        db,
        pattern.to_owned(),
        budget.pattern_dfa_bytes,
        budget.pattern_dfa_bytes,
        budget.view_dfa_bytes,
        budget.determinize_bytes,
        budget.nfa_bytes,
    )
}

/// Prepares the patterns on worker threads ahead of the lowering, which then finds them
/// memoized: the builds are independent of one another and are most of a build's time.
fn prepare_in_parallel(db: &dyn Db, patterns: &[&str], budget: &Budget) {
    crate::db::prefetch_in_parallel(db, patterns, |db, pattern| {
        // Errors are reported by the lowering, which reads the memoized result.
        let _ = prepared(db, pattern_key(db, pattern, budget));
    });
}

/// Builds the groups' DFAs on worker threads ahead of the lowering, which then finds them
/// memoized (a group that does not fit is split by the lowering, on this thread): after the
/// patterns, they were the longest stretch of a check that ran on one thread (a perf profile).
fn build_groups_in_parallel(db: &dyn Db, mut groups: Vec<Vec<(String, bool)>>, budget: &Budget) {
    // Largest first, so that the last build to start is a small one.
    groups.sort_by_key(|members| {
        std::cmp::Reverse(members.iter().map(|(p, _)| p.len()).sum::<usize>())
    });
    crate::db::prefetch_in_parallel(db, &groups, |db, members| {
        // Errors are reported by the lowering, which reads the memoized result.
        let _ = group_dfa(db, group_key(db, members.clone(), budget));
    });
}

fn lower_included(
    db: &dyn Db,
    catalogue: &Catalogue,
    priority: &Priority,
    budget: &Budget,
    included: &[bool],
) -> Result<Lowered, Vec<(RuleIndex, Diagnostic)>> {
    let order: Vec<RuleIndex> = priority
        .order()
        .iter()
        .copied()
        .filter(|index| included.get(index.as_usize()).copied().unwrap_or(false))
        .collect();
    let mut failures: Vec<(RuleIndex, Diagnostic)> = Vec::new();
    let fail = |failures: &mut Vec<(RuleIndex, Diagnostic)>,
                uses: &[(RuleIndex, Span)],
                error: &AutomatonError| {
        for &(rule_index, span) in uses {
            if let Some(rule) = catalogue.rule(rule_index) {
                failures.push((rule_index, too_large(rule, span, error)));
            }
        }
    };
    // Patterns per view, deduplicated, in first-use order, with every use of each.
    let mut view_patterns: BTreeMap<TextView, Vec<(String, Uses)>> = BTreeMap::new();
    let mut pattern_slot: HashMap<(TextView, String), usize> = HashMap::new();
    for &rule_index in &order {
        let Some(rule) = catalogue.rule(rule_index) else {
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
            if let Some(error) = regex_fits(db, &pattern, budget) {
                fail(&mut failures, &[(rule_index, span)], &error);
            }
        }
    }
    // A pattern that only gated rules read gets no DFA: the runtime searches it with its regex,
    // and only once the prefilter admits one of those rules (docs/bundle.md, "Layout").
    let mut gated = vec![false; catalogue.rules.len()];
    for &rule_index in &order {
        if let (Some(rule), Some(slot)) = (
            catalogue.rule(rule_index),
            gated.get_mut(rule_index.as_usize()),
        ) {
            *slot = rule_requirement(db, rule).is_some();
        }
    }
    let regex_only = |uses: &Uses| {
        uses.iter()
            .all(|(rule_index, _)| gated.get(rule_index.as_usize()).copied().unwrap_or(false))
    };
    // Only the patterns that get a DFA are built: a gated pattern's automaton would be most of
    // the build's time (the largest unions of the catalogue are gated) and never shipped.
    let mut dfa_patterns: Vec<&str> = view_patterns
        .values()
        .flatten()
        .filter(|(_, uses)| !regex_only(uses))
        .map(|(pattern, _)| pattern.as_str())
        .collect();
    // Longest first, a rough proxy for the costliest: the last build to start ends the wait.
    dfa_patterns.sort_by_key(|pattern| std::cmp::Reverse(pattern.len()));
    prepare_in_parallel(db, &dfa_patterns, budget);
    let mut prepared_views: Vec<(TextView, Vec<Prepared>)> = Vec::new();
    for (view, patterns) in &view_patterns {
        let mut prepared_patterns = Vec::new();
        for (pattern, uses) in patterns {
            if regex_only(uses) {
                // The runtime searches a pattern without a DFA with its regex.
                if let Some(error) = regex_fits(db, pattern, budget) {
                    fail(&mut failures, uses, &error);
                }
                prepared_patterns.push(Prepared::regex_only(pattern));
                continue;
            }
            match prepared(db, pattern_key(db, pattern, budget)) {
                Ok(p) => {
                    // The runtime confirms every hit of a widened pattern with its exact regex.
                    if p.approximate
                        && let Some(error) = regex_fits(db, pattern, budget)
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
    // Each view's groups (bucketed by the rule that first uses each pattern).
    let view_groups: Vec<Vec<Vec<usize>>> = view_patterns
        .values()
        .zip(&prepared_views)
        .map(|(patterns, (_, prepared_patterns))| {
            let owners: Vec<String> = patterns
                .iter()
                .map(|(_, uses)| {
                    uses.first()
                        .and_then(|&(i, _)| catalogue.rule(i))
                        .map(|rule| rule.id.clone())
                        .unwrap_or_default()
                })
                .collect();
            groups(prepared_patterns, &owners)
        })
        .collect();
    build_groups_in_parallel(
        db,
        view_groups
            .iter()
            .zip(&prepared_views)
            .flat_map(|(groups, (_, prepared_patterns))| {
                groups
                    .iter()
                    .map(|group| group_members(prepared_patterns, group))
            })
            .collect(),
        budget,
    );
    let mut views = Vec::new();
    let mut dfas = Vec::new();
    let mut reports = Vec::new();
    for (((view, patterns), (_, prepared_patterns)), groups) in
        view_patterns.iter().zip(&prepared_views).zip(view_groups)
    {
        let mut built = Vec::new();
        for group in groups {
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
                        dfa: Some(DfaSlot {
                            dfa: position as u32,
                            pattern: dfa_pattern as u32,
                        }),
                        approximate: p.approximate,
                        alone_bytes: p.alone_bytes.unwrap_or(0) as u64,
                    });
                }
            }
        }
        for ((slot, p), (_, uses)) in pattern_entries
            .iter_mut()
            .zip(prepared_patterns)
            .zip(patterns)
        {
            if slot.is_none() && regex_only(uses) {
                *slot = Some(PatternEntry {
                    pattern: p.pattern.clone(),
                    dfa: None,
                    approximate: p.approximate,
                    alone_bytes: p.alone_bytes.unwrap_or(0) as u64,
                });
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
            pointer: matcher.pointer.clone(),
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
    let mut rule_conjuncts: Vec<(u32, Vec<String>)> = Vec::new();
    for (position, &rule_index) in order.iter().enumerate() {
        let Some(rule) = catalogue.rule(rule_index) else {
            continue;
        };
        let requirement = if rule.matchers.is_empty() {
            None
        } else {
            rule_requirement(db, rule)
        };
        if let Some(requirement) = &requirement {
            for words in &requirement.conjuncts {
                for word in words {
                    let rules = literal_rules.entry(word.clone()).or_default();
                    if rules.last() != Some(&(position as u32)) {
                        rules.push(position as u32);
                    }
                }
                rule_conjuncts.push((position as u32, words.clone()));
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
            body_reset_at: rule.body_reset_at.clone(),
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
    let literal_ids: BTreeMap<&str, u32> = literal_rules
        .keys()
        .enumerate()
        .map(|(id, literal)| (literal.as_str(), id as u32))
        .collect();
    let requirements = rule_conjuncts
        .iter()
        .map(|(rule, words)| RequirementEntry {
            rule: *rule,
            literals: words
                .iter()
                .filter_map(|word| literal_ids.get(word.as_str()).copied())
                .collect(),
        })
        .collect();
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
        policy: catalogue.policy.clone(),
        requirements,
    };
    Ok(Lowered {
        model,
        dfas,
        patterns: reports,
        included: Vec::new(),
        order,
    })
}

/// Gives a lowering that serves only the analysis (the catalogue has errors) the catch-all it
/// lacks, so that every evidence classifies: the stand-in, after every rule.
pub fn ensure_catch_all(catalogue: &Catalogue, lowered: &mut Lowered) {
    let model = &mut lowered.model;
    let ends_with_catch_all = model.rules.last().is_some_and(|rule| {
        rule.guards == crate::ir::Guards::default()
            && rule.matchers.is_empty()
            && rule.vetoes.is_empty()
            && !matches!(rule.remediation, Some(RemediationEntry::Capture { .. }))
    });
    if !ends_with_catch_all {
        model.rules.push(stand_in_catch_all(catalogue));
    }
}

/// The id of the catch-all that stands in, in a bundle built only for the analysis, for one
/// the catalogue lacks or has with errors. Not a valid rule id, so it never clashes.
pub const STAND_IN_CATCH_ALL: &str = "<no catch-all>";

fn stand_in_catch_all(catalogue: &Catalogue) -> RuleEntry {
    RuleEntry {
        id: STAND_IN_CATCH_ALL.to_owned(),
        doc: String::new(),
        code: 0,
        confidence: faultline_runtime::Confidence::Low,
        scope: catalogue
            .codes
            .first()
            .map_or(faultline_runtime::Scope::Session, |code| code.scope),
        tier: catalogue.tiers.len().saturating_sub(1) as u32,
        guards: crate::ir::Guards::default(),
        matchers: Vec::new(),
        vetoes: Vec::new(),
        timing: Vec::new(),
        body_reset_at: Vec::new(),
        excerpt: None,
        remediation: None,
        gated: false,
        verified_examples: 0,
    }
}

/// Why the bundle of a lowering could not be written or loaded back. Neither happens for a
/// catalogue that checked clean (the compiler makes every check the loader makes first); the
/// compiler reports it as FL0112.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RoundTripError {
    /// The writer refused the parts.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The loader refused the bytes the writer made.
    #[error(transparent)]
    Load(#[from] faultline_runtime::LoadError),
}

/// Writes the bundle of a lowering and loads it back, as every consumer will: the bundle
/// the examples and the analysis run against.
pub(crate) fn write_and_load(
    catalogue: &Catalogue,
    lowered: &Lowered,
    manifest_hash: [u8; 32],
) -> Result<(Vec<u8>, Bundle), RoundTripError> {
    let bytes = write_bundle(catalogue, lowered, manifest_hash)?;
    let bundle = Bundle::from_bytes(&bytes)?;
    Ok((bytes, bundle))
}

/// Writes the bundle bytes for a lowered catalogue. The writer stamps the format, its versions
/// and the content hash; this passes only what the compiler knows.
fn write_bundle(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{catalogue, loaded, rule};

    #[test]
    fn a_budget_is_fl0109_and_a_pattern_no_engine_accepts_is_fl0111() {
        let loaded = loaded(&catalogue(&rule(
            "test.overloaded.v1",
            "overloaded",
            "    match regex r\"over(loaded)\"",
            "server overloaded",
        )));
        let checked = crate::check(&loaded);
        let rule = checked
            .catalogue
            .rules
            .iter()
            .find(|rule| rule.id == "test.overloaded.v1")
            .unwrap();
        let span = rule.matchers[0].span;
        let over = too_large(rule, span, &AutomatonError::Dfa { limit: 4096 });
        assert_eq!(over.code(), Code::AutomatonTooLarge);
        assert!(over.message().contains("4,096-byte (4 KiB) DFA budget"));
        // No validated pattern is known to fail but by a budget; the library's refusal has
        // its own code, on the pattern, with its own help.
        let refused = too_large(
            rule,
            span,
            &AutomatonError::Other("cannot build DFAs for this".to_owned()),
        );
        assert_eq!(refused.code(), Code::PatternNotCompiled);
        assert_eq!(
            refused.message(),
            "a pattern of `test.overloaded.v1` cannot be compiled: cannot build DFAs for this"
        );
        let label = refused.primary_label().unwrap();
        assert_eq!(label.text(), r#"r"over(loaded)""#);
        assert_ne!(refused.help_text(), over.help_text());
    }

    /// The check's regexes, adopted by the bundle it loads, classify as the bundle's own: a
    /// differential test over the kinds of regex a bundle compiles on first use (a widened
    /// pattern's exact confirmation, a case-folded `prefix` literal).
    #[test]
    fn adopted_regexes_classify_as_the_bundles_own() {
        let rules = [
            rule(
                "test.gap.v1",
                "overloaded",
                r#"    match regex r"(?i)\bserver\b[^\n]{0,300}\boverloaded\b"
    before test.prefix.v1"#,
                "Server is, for the moment and for reasons unknown, overloaded",
            ),
            rule(
                "test.prefix.v1",
                "rate_limited",
                r#"    match prefix "Too Many Requests" ignore_case"#,
                "too many requests: slow down",
            ),
        ]
        .concat();
        let compilation = crate::Compiler::new().compile(&loaded(&catalogue(&rules)));
        let bytes = compilation
            .bundle
            .unwrap_or_else(|| panic!("{:#?}", compilation.diagnostics));
        let own = Bundle::from_bytes(&bytes).unwrap();
        let adopted = Bundle::from_bytes(&bytes).unwrap();
        let mut offered = Vec::new();
        faultline_runtime::build::adopt_regexes(&adopted, |pattern| {
            offered.push(pattern.to_owned());
            PatternRegex::compile(pattern, faultline_runtime::build::REGEX_SIZE_LIMIT, 250).ok()
        });
        assert!(
            offered.iter().any(|p| p.contains("overloaded"))
                && offered.iter().any(|p| p.contains("Too Many Requests")),
            "{offered:?}"
        );
        for text in [
            "Server is, for the moment and for reasons unknown, overloaded",
            &format!("server {}overloaded", "and so on ".repeat(40)),
            "TOO MANY REQUESTS right now",
            "requests: too many",
        ] {
            let evidence = faultline_runtime::Evidence::default().with_stderr(text);
            assert_eq!(
                own.classify(&evidence),
                adopted.classify(&evidence),
                "{text}"
            );
        }
    }

    /// A regex compiled for another pattern is never adopted.
    #[test]
    fn a_regex_of_another_pattern_is_not_adopted() {
        let rules = rule(
            "test.gap.v1",
            "overloaded",
            r#"    match regex r"(?i)\bserver\b[^\n]{0,300}\boverloaded\b""#,
            "server overloaded",
        );
        let compilation = crate::Compiler::new().compile(&loaded(&catalogue(&rules)));
        let bundle = Bundle::from_bytes(&compilation.bundle.unwrap()).unwrap();
        // Offered a regex that matches everything, the bundle keeps to its own pattern.
        faultline_runtime::build::adopt_regexes(&bundle, |_| {
            PatternRegex::compile("(?s).", faultline_runtime::build::REGEX_SIZE_LIMIT, 250).ok()
        });
        // Both words, too far apart: only the exact regex tells (the catch-all wins).
        let evidence = faultline_runtime::Evidence::default()
            .with_stderr(format!("server {}overloaded", "and so on ".repeat(40)));
        assert_eq!(bundle.classify(&evidence).rule, "fallback.any");
    }
}
