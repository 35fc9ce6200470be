//! Ties (FL0102): the pairs of one tier that nothing orders, the candidates among them found
//! without visiting every pair, and the verdict on each pair.

use std::collections::{BTreeMap, HashMap};

use faultline_dsl::{Code, Diagnostic};
use faultline_runtime::EvidenceField;
use faultline_runtime::build::KeyedGuardEntry;

use crate::ir::{Guards, RuleDef, RuleIndex};

use super::search::Component;
use super::verify::Undecided;
use super::{Analyzer, PairVerdict, describe, flag};

/// Whether two rules' keyed guards (both on headers, or both on the body) exclude each other:
/// they guard one key on value lists with nothing in common. A header has one value, and a
/// body pointer without `*` selects at most one; a pointer with `*` selects every element of an
/// array, which may hold both values, so it excludes nothing. (Header values compare ignoring
/// ASCII case, body values exactly.)
fn keyed_exclusive(a: &[KeyedGuardEntry], b: &[KeyedGuardEntry], headers: bool) -> bool {
    a.iter().any(|left| {
        b.iter().any(|right| {
            if left.key != right.key || (!headers && left.key.split('/').any(|s| s == "*")) {
                return false;
            }
            match (&left.values, &right.values) {
                (Some(left), Some(right)) => !left.iter().any(|l| {
                    right.iter().any(|r| {
                        if headers {
                            l.eq_ignore_ascii_case(r)
                        } else {
                            l == r
                        }
                    })
                }),
                _ => false,
            }
        })
    })
}

impl Analyzer<'_> {
    pub(super) fn guards_compatible(a: &Guards, b: &Guards) -> bool {
        Self::exclusive_field(a, b).is_none()
    }

    /// A structured field on which two rules' guards allow no common value.
    pub(super) fn exclusive_field(a: &Guards, b: &Guards) -> Option<EvidenceField> {
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
        .or_else(|| keyed_exclusive(&a.headers, &b.headers, true).then_some(EvidenceField::Headers))
        .or_else(|| keyed_exclusive(&a.body, &b.body, false).then_some(EvidenceField::Body))
    }

    /// Whether every evidence satisfying `lower`'s guards satisfies `upper`'s.
    pub(super) fn guards_imply(lower: &Guards, upper: &Guards) -> bool {
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
                    EvidenceField::Headers => !lower.headers.is_empty(),
                    EvidenceField::Body => !lower.body.is_empty(),
                    _ => false,
                }
        });
        // Every keyed guard of `upper` is implied by one of `lower` on the same key: a value
        // list within `upper`'s (for a body with `*` too: an element holding a value of the
        // smaller list holds one of the larger), or any guard for `present`.
        // Header values compare ignoring ASCII case, body values exactly.
        let keyed_implied = |lower: &[KeyedGuardEntry], upper: &[KeyedGuardEntry], fold: bool| {
            upper.iter().all(|guard| {
                lower.iter().any(|narrower| {
                    narrower.key == guard.key
                        && match (&narrower.values, &guard.values) {
                            (_, None) => true,
                            (None, Some(_)) => false,
                            (Some(narrow), Some(wide)) => narrow.iter().all(|v| {
                                wide.iter().any(|w| {
                                    if fold {
                                        w.eq_ignore_ascii_case(v)
                                    } else {
                                        w == v
                                    }
                                })
                            }),
                        }
                })
            })
        };
        keyed_implied(&lower.headers, &upper.headers, true)
            && keyed_implied(&lower.body, &upper.body, false)
            && implied(&lower.phase, &upper.phase)
            && implied(&lower.provider_id, &upper.provider_id)
            && implied(&lower.source, &upper.source)
            && implied(&lower.http_status, &upper.http_status)
            && implied(&lower.exit_code, &upper.exit_code)
            && present_implied
    }

    pub(super) fn outcome(
        rule: &RuleDef,
    ) -> (
        &str,
        faultline_runtime::Confidence,
        faultline_runtime::Scope,
    ) {
        (&rule.code, rule.confidence, rule.scope)
    }

    /// The verdict on two rules, with `live` telling which rules fire on some evidence.
    pub(super) fn pair_verdict(
        &self,
        a: RuleIndex,
        b: RuleIndex,
        live: &dyn Fn(RuleIndex) -> bool,
    ) -> PairVerdict {
        let (Some(rule_a), Some(rule_b)) = (self.rule(a), self.rule(b)) else {
            return PairVerdict::Ordered;
        };
        if !self.priority.unordered(a, b) {
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
        let (Some(text_a), Some(text_b)) = (self.text(a), self.text(b)) else {
            return PairVerdict::Undecided;
        };
        let components: Vec<&Component> =
            text_a.components.iter().chain(&text_b.components).collect();
        match self.verified(&[a, b], &components, |evidence| {
            self.bundle.fires(a, evidence) && self.bundle.fires(b, evidence)
        }) {
            Ok(None) => PairVerdict::Disjoint,
            Ok(Some(evidence)) => PairVerdict::Tie(Box::new(evidence)),
            Err(Undecided) => PairVerdict::Undecided,
        }
    }

    pub(super) fn ties(&self, live: &[bool]) {
        let is_live = |index: RuleIndex| flag(live, index);
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
    pub(super) fn tie_candidates(&self, live: &[bool]) -> Vec<(RuleIndex, RuleIndex)> {
        let mut tiers: BTreeMap<usize, Vec<RuleIndex>> = BTreeMap::new();
        for (index, rule) in self.catalogue.indices() {
            if flag(live, index) {
                tiers.entry(rule.tier).or_default().push(index);
            }
        }
        let mut pairs = Vec::new();
        for members in tiers.values() {
            let field = self.selective_field(members);
            let mut by_rank: BTreeMap<i64, Vec<RuleIndex>> = BTreeMap::new();
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
    pub(super) fn guard_keys(&self, index: RuleIndex, field: usize) -> Option<Vec<String>> {
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
    pub(super) fn selective_field(&self, members: &[RuleIndex]) -> usize {
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
    pub(super) fn pairs_sharing(
        &self,
        field: usize,
        left: &[RuleIndex],
        right: &[RuleIndex],
        pairs: &mut Vec<(RuleIndex, RuleIndex)>,
    ) {
        if left.is_empty() || right.is_empty() {
            return;
        }
        let mut by_value: HashMap<String, Vec<RuleIndex>> = HashMap::new();
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
        let mut push = |a: RuleIndex, b: RuleIndex| {
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
}
