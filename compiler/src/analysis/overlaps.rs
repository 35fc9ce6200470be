//! Redundant signatures (FL0106): a match of one rule's pattern that lies inside a match of
//! another's with the same outcome, found through a required-words pre-filter.

use std::collections::HashMap;

use faultline_dsl::{Code, Diagnostic};
use faultline_runtime::TextView;
use faultline_runtime::build::REGEX_SIZE_LIMIT;

use crate::ir::{RuleDef, RuleIndex};

use super::automaton::component_automaton;
use super::search::{Component, Polarity, Search};
use super::{Analyzer, flag};

impl Analyzer<'_> {
    pub(super) fn overlaps(&self, live: &[bool]) {
        // Only rules of one tier with the same outcome can be redundant with each other.
        let mut groups: HashMap<
            (
                usize,
                &str,
                faultline_runtime::Confidence,
                faultline_runtime::Scope,
            ),
            Vec<RuleIndex>,
        > = HashMap::new();
        for (index, rule) in self.catalogue.indices() {
            if flag(live, index) && !rule.matchers.is_empty() {
                groups
                    .entry((rule.tier, rule.code.as_str(), rule.confidence, rule.scope))
                    .or_default()
                    .push(index);
            }
        }
        let mut pairs: Vec<(RuleIndex, RuleIndex)> = Vec::new();
        for members in groups.values() {
            self.nesting_candidates(members, &mut pairs);
        }
        pairs.sort_unstable();
        // The automata the queries read first, built on worker threads (a whole outer match is
        // a pattern no other stage builds, and some are exact attempts that fail at their
        // budget), then every query, searched on worker threads too (most are proofs that
        // explore their whole product), then judged in order.
        let nestables: Vec<(RuleIndex, RuleIndex, Vec<Nestable<'_>>)> = pairs
            .into_iter()
            .map(|(a, b)| (a, b, self.nestable_patterns(a, b)))
            .collect();
        let mut patterns: Vec<String> = nestables
            .iter()
            .flat_map(|(_, _, found)| found)
            .flat_map(|nestable| [nestable.inner.to_owned(), nestable.whole_outer.clone()])
            .collect();
        patterns.sort_unstable();
        patterns.dedup();
        // The longest first: a rough proxy for the costliest, so that no long build is left
        // for the end while the other thread idles.
        patterns.sort_by_key(|pattern| std::cmp::Reverse(pattern.len()));
        let components = self.components;
        crate::db::prefetch_in_parallel(self.db, &patterns, |db, pattern| {
            let _ = component_automaton(db, pattern, &components);
        });
        let candidates: Vec<Candidate<'_>> = nestables
            .into_iter()
            .filter_map(|(a, b, found)| self.nesting_queries(a, b, found))
            .collect();
        let queries: Vec<Vec<&Component>> = candidates
            .iter()
            .flat_map(|candidate| &candidate.queries)
            .map(|query| query.components.iter().collect())
            .collect();
        self.prefetch_views(&queries);
        for candidate in &candidates {
            for query in &candidate.queries {
                if self.report_nesting(candidate, query) {
                    break;
                }
            }
        }
    }

    /// The pairs of a pattern of `a` and a pattern of `b` on one view whose required words may
    /// nest, when the rules' guards allow both to hold.
    fn nestable_patterns(&self, a: RuleIndex, b: RuleIndex) -> Vec<Nestable<'_>> {
        let (Some(rule_a), Some(rule_b)) = (self.rule(a), self.rule(b)) else {
            return Vec::new();
        };
        let (Some(text_a), Some(text_b)) = (self.text(a), self.text(b)) else {
            return Vec::new();
        };
        if !Self::guards_compatible(&rule_a.guards, &rule_b.guards) {
            return Vec::new();
        }
        let mut found = Vec::new();
        for (view_a, pointer_a, inner, inner_words) in &text_a.patterns {
            for (view_b, pointer_b, outer, outer_words) in &text_b.patterns {
                // A pre-filter: a match of `inner` can lie inside a match of `outer` only if one
                // of its required words fits inside one of `outer`'s.
                if view_a == view_b
                    && pointer_a == pointer_b
                    && words_may_nest(inner_words.as_deref(), outer_words.as_deref())
                {
                    found.push(Nestable {
                        view: *view_a,
                        pointer: pointer_a.as_ref(),
                        inner,
                        whole_outer: format!(r"\A(?:{outer})\z"),
                    });
                }
            }
        }
        found
    }

    /// The queries for a match of a pattern of `a` inside a match of a pattern of `b`: one per
    /// pair of their [`Analyzer::nestable_patterns`], `nestables`, both represented exactly.
    fn nesting_queries<'a>(
        &'a self,
        a: RuleIndex,
        b: RuleIndex,
        nestables: Vec<Nestable<'a>>,
    ) -> Option<Candidate<'a>> {
        let (rule_a, rule_b) = (self.rule(a)?, self.rule(b)?);
        let mut queries = Vec::new();
        for nestable in nestables {
            let exact =
                |pattern: String| match component_automaton(self.db, &pattern, &self.components) {
                    Ok((_, false)) => Some(Component {
                        pattern,
                        polarity: Polarity::Must,
                        view: nestable.view,
                        pointer: nestable.pointer.cloned(),
                    }),
                    _ => None,
                };
            if let (Some(inner_component), Some(outer_component)) = (
                exact(nestable.inner.to_owned()),
                exact(nestable.whole_outer.clone()),
            ) {
                queries.push(NestingQuery {
                    inner: nestable.inner,
                    whole_outer: nestable.whole_outer,
                    components: [inner_component, outer_component],
                });
            }
        }
        Some(Candidate {
            rule_a,
            rule_b,
            queries,
        })
    }

    /// Reports the overlap a nesting query shows, if its witness verifies; whether it did.
    fn report_nesting(&self, candidate: &Candidate<'_>, query: &NestingQuery<'_>) -> bool {
        let (rule_a, rule_b) = (candidate.rule_a, candidate.rule_b);
        let refs: Vec<&Component> = query.components.iter().collect();
        let Search::Witnesses(found) = self.search_view(&refs, 1) else {
            return false;
        };
        let span = found
            .first()
            .and_then(|w| w.first())
            .map(|(_, _, text)| text.clone())
            .unwrap_or_default();
        let verified = crate::pattern::regex(&query.whole_outer, REGEX_SIZE_LIMIT)
            .is_ok_and(|r| r.is_match(&span))
            && crate::pattern::regex(query.inner, REGEX_SIZE_LIMIT)
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
        }
        verified
    }

    /// The ordered pairs `(a, b)` of `members` (one outcome group) where some pattern of `a`
    /// may match inside a match of a pattern of `b`, by the required-words pre-filter: an index
    /// of the words' three-letter pieces finds, for each inner word, the outer words that can
    /// contain it, instead of comparing every pair. Patterns without required words pair with
    /// every pattern of their view.
    pub(super) fn nesting_candidates(
        &self,
        members: &[RuleIndex],
        pairs: &mut Vec<(RuleIndex, RuleIndex)>,
    ) {
        // Per view: outer words by trigram (rule, word), and the rules with an unconstrained
        // pattern.
        let mut trigrams: HashMap<(TextView, &str), Vec<(RuleIndex, &str)>> = HashMap::new();
        let mut short: HashMap<TextView, Vec<(RuleIndex, &str)>> = HashMap::new();
        let mut unconstrained: HashMap<TextView, Vec<RuleIndex>> = HashMap::new();
        let mut with_view: HashMap<TextView, Vec<RuleIndex>> = HashMap::new();
        for &b in members {
            let Some(text) = self.text(b) else {
                continue;
            };
            for (view, _, _, words) in &text.patterns {
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
            let Some(text) = self.text(a) else {
                continue;
            };
            for (view, _, _, words) in &text.patterns {
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
                            let outer: Vec<&(RuleIndex, &str)> = match candidates {
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
        let mut found: Vec<(RuleIndex, RuleIndex)> =
            pairs.drain(start..).filter(|(a, b)| a != b).collect();
        found.sort_unstable();
        found.dedup();
        pairs.extend(found);
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

/// The nesting queries of an ordered pair of rules of one outcome.
struct Candidate<'a> {
    /// The rule whose pattern may match inside.
    rule_a: &'a RuleDef,
    /// The rule whose pattern may contain it.
    rule_b: &'a RuleDef,
    queries: Vec<NestingQuery<'a>>,
}

/// A pattern of `a` that may match inside a match of a pattern of `b`, on one view.
struct Nestable<'a> {
    view: TextView,
    pointer: Option<&'a String>,
    inner: &'a str,
    /// The pattern of `b`, anchored to match the whole span.
    whole_outer: String,
}

/// One pattern of `a` matching inside a whole match of one pattern of `b`.
struct NestingQuery<'a> {
    inner: &'a str,
    /// The pattern of `b`, anchored to match the whole span.
    whole_outer: String,
    components: [Component; 2],
}
