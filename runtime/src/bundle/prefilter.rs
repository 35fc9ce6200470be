//! The literal prefilter and the gate: the cheap passes that decide which rules a
//! classification evaluates at all.
//!
//! The compiler records, for every gated rule, conjuncts of literals (ASCII-lowercase, compared
//! case-insensitively): any match of the rule holds every literal of at least one of them. The
//! first literal of a conjunct, its most selective, is its anchor. One overlapping Aho-Corasick
//! pass over the raw text finds the anchors that occur; only when an anchor of a conjunct with
//! more literals occurs are its other literals looked for, each alone with a SIMD searcher. A gated rule none of whose
//! conjuncts is complete cannot fire, so the rule walk (`super::classify`) skips it. The gate,
//! [`crate::Bundle::may_classify`], runs the same passes over the conjuncts of the rules above
//! low confidence, stopping at the first admitted rule whose guards hold.
//!
//! Not one pass over every literal: anchors are fewer and rarer, so the pass runs over a smaller
//! automaton and reports few matches, and the other literals are looked for only when needed.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind as AcMatchKind};

use super::LoadError;
use super::model::CatalogueModel;
use crate::vocab::Confidence;

/// The two non-ASCII characters whose simple case folding reaches ASCII letters (KELVIN SIGN →
/// k, LATIN SMALL LETTER LONG S → s).
const NON_ASCII_FOLDS: [char; 2] = ['\u{212A}', '\u{017F}'];

#[derive(Debug)]
pub(super) struct Prefilter {
    /// The anchors, one pattern per distinct anchor literal.
    anchors: Option<AhoCorasick>,
    /// Per anchor pattern: the conjuncts it anchors.
    anchored: Vec<Vec<usize>>,
    /// The other literals of conjuncts with more than one, one searcher per distinct literal:
    /// each is looked for alone, with its own SIMD prefilter, only when a conjunct needs it.
    others: Vec<OtherLiteral>,
    /// Per conjunct: its rule, the patterns of `others` it needs, and whether it gates.
    conjuncts: Vec<Conjunct>,
    /// Rules admitted when the text holds a non-ASCII character folding to ASCII.
    fold_rules: Vec<usize>,
    /// Those of them above low confidence, for the gate.
    fold_gate_rules: Vec<usize>,
}

#[derive(Debug)]
struct Conjunct {
    rule: usize,
    /// Patterns of [`Prefilter::others`], all required besides the anchor.
    others: Vec<usize>,
    /// Whether the rule is above low confidence (the gate only considers those).
    gates: bool,
}

/// An Aho-Corasick automaton over `literals`, for overlapping searches (every literal that
/// occurs, not only leftmost ones), ASCII case-insensitive.
fn automaton(literals: &[&str]) -> Result<Option<AhoCorasick>, LoadError> {
    if literals.is_empty() {
        return Ok(None);
    }
    let mut builder = AhoCorasickBuilder::new();
    builder
        .ascii_case_insensitive(true)
        .match_kind(AcMatchKind::Standard)
        .prefilter(false);
    // An overlapping search cannot skip ahead, so a DFA (one table lookup per byte) is several
    // times faster than the contiguous NFA the builder picks by itself for over 100 literals.
    // Its size is bounded by the literals' total length; should it not build, the builder's own
    // choice stands.
    let built = builder
        .clone()
        .kind(Some(AhoCorasickKind::DFA))
        .build(literals)
        .or_else(|_| builder.build(literals));
    built
        .map(Some)
        .map_err(|error| LoadError::malformed(format!("prefilter: {error}")))
}

/// One of a conjunct's other literals, with a searcher built the first time it is looked for.
///
/// Most texts complete few conjuncts, so most of these are never looked for; building them all
/// at load took about a tenth of it.
#[derive(Debug)]
struct OtherLiteral {
    literal: String,
    /// ASCII case-insensitive, with the library's own prefilter; `None` if it could not be built.
    searcher: OnceLock<Option<AhoCorasick>>,
}

impl OtherLiteral {
    fn new(literal: &str) -> OtherLiteral {
        OtherLiteral {
            literal: literal.to_owned(),
            searcher: OnceLock::new(),
        }
    }

    /// Whether the literal may occur in `raw`. A searcher that cannot be built (one literal of
    /// valid UTF-8 always builds) answers `true`: the gate may admit too much, never too little.
    fn may_occur(&self, raw: &str) -> bool {
        self.searcher
            .get_or_init(|| {
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .build([self.literal.as_str()])
                    .ok()
            })
            .as_ref()
            .is_none_or(|searcher| searcher.is_match(raw))
    }
}

/// The conjuncts whose anchors occur, in one overlapping pass: `on_single` is given each
/// single-literal conjunct as found and stops the pass by answering `true`; the others are
/// returned, each once.
fn anchored_conjuncts(
    prefilter: &Prefilter,
    anchors: &AhoCorasick,
    raw: &str,
    mut on_single: impl FnMut(&Conjunct) -> bool,
) -> (bool, Vec<usize>) {
    let mut seen = Vec::new();
    let mut pending = Vec::new();
    for found in anchors.find_overlapping_iter(raw) {
        let anchor = found.pattern().as_usize();
        if seen.is_empty() {
            seen = vec![false; prefilter.anchored.len()];
        }
        match seen.get_mut(anchor) {
            Some(seen) if !*seen => *seen = true,
            _ => continue,
        }
        for id in prefilter.anchored.get(anchor).into_iter().flatten() {
            let Some(conjunct) = prefilter.conjuncts.get(*id) else {
                continue;
            };
            if conjunct.others.is_empty() {
                if on_single(conjunct) {
                    return (true, pending);
                }
            } else {
                pending.push(*id);
            }
        }
    }
    (false, pending)
}

impl Prefilter {
    pub(super) fn new(model: &CatalogueModel) -> Result<Prefilter, LoadError> {
        let mut fold_rules = Vec::new();
        for literal in &model.literals {
            if literal.folds_beyond_ascii {
                fold_rules.extend(literal.rules.iter().map(|rule| *rule as usize));
            }
        }
        let above_low = |rule: usize| {
            model
                .rules
                .get(rule)
                .is_some_and(|rule| rule.confidence != Confidence::Low)
        };
        // Patterns are numbered per automaton, in order of first use.
        let mut anchor_pattern = vec![None; model.literals.len()];
        let mut other_pattern = vec![None; model.literals.len()];
        let (mut anchor_literals, mut other_literals): (Vec<&str>, Vec<&str>) =
            (Vec::new(), Vec::new());
        let mut anchored: Vec<Vec<usize>> = Vec::new();
        let mut conjuncts = Vec::with_capacity(model.requirements.len());
        fn pattern_of<'m>(
            model: &'m CatalogueModel,
            slots: &mut [Option<usize>],
            texts: &mut Vec<&'m str>,
            id: u32,
        ) -> Option<usize> {
            let slot = slots.get_mut(id as usize)?;
            let text = model.literals.get(id as usize)?.literal.as_str();
            Some(*slot.get_or_insert_with(|| {
                texts.push(text);
                texts.len() - 1
            }))
        }
        for requirement in &model.requirements {
            let Some((anchor, rest)) = requirement.literals.split_first() else {
                continue;
            };
            let Some(anchor) =
                pattern_of(model, &mut anchor_pattern, &mut anchor_literals, *anchor)
            else {
                continue;
            };
            let mut others = Vec::new();
            for literal in rest {
                if let Some(pattern) =
                    pattern_of(model, &mut other_pattern, &mut other_literals, *literal)
                    && !others.contains(&pattern)
                {
                    others.push(pattern);
                }
            }
            if anchored.len() <= anchor {
                anchored.resize(anchor + 1, Vec::new());
            }
            if let Some(slot) = anchored.get_mut(anchor) {
                slot.push(conjuncts.len());
            }
            let rule = requirement.rule as usize;
            conjuncts.push(Conjunct {
                rule,
                others,
                gates: above_low(rule),
            });
        }
        let fold_gate_rules = fold_rules
            .iter()
            .copied()
            .filter(|rule| above_low(*rule))
            .collect();
        Ok(Prefilter {
            anchors: automaton(&anchor_literals)?,
            anchored,
            others: other_literals.into_iter().map(OtherLiteral::new).collect(),
            conjuncts,
            fold_rules,
            fold_gate_rules,
        })
    }

    /// Which gated rules the prefilter admits, as one flag per rule.
    pub(super) fn admitted(&self, raw: &str, rule_count: usize) -> Vec<bool> {
        let mut admitted = vec![false; rule_count];
        for rule in self.admitted_rules(raw) {
            if let Some(slot) = admitted.get_mut(rule) {
                *slot = true;
            }
        }
        admitted
    }

    /// The gated rules the prefilter admits, unsorted and possibly repeated: those of every
    /// conjunct whose literals all occur in the raw text, and those that non-ASCII case folds
    /// may hide a literal of.
    pub(super) fn admitted_rules(&self, raw: &str) -> Vec<usize> {
        let mut admitted = Vec::new();
        if let Some(anchors) = &self.anchors {
            let (_, pending) = anchored_conjuncts(self, anchors, raw, |conjunct| {
                admitted.push(conjunct.rule);
                false
            });
            admitted.extend(self.completed(raw, &pending));
        }
        if self.folds(raw) {
            admitted.extend(&self.fold_rules);
        }
        admitted
    }

    /// Whether some rule above low confidence that the raw text admits (or that a non-ASCII
    /// case fold may hide a literal of) passes `accept`. It stops at the first rule accepted,
    /// so that text which may classify is often read only in part; the other literals are looked
    /// for only for conjuncts whose rules `accept` would take.
    pub(super) fn any_admitted(&self, raw: &str, mut accept: impl FnMut(usize) -> bool) -> bool {
        if self.folds(raw) && self.fold_gate_rules.iter().any(|rule| accept(*rule)) {
            return true;
        }
        let Some(anchors) = &self.anchors else {
            return false;
        };
        let (accepted, mut pending) = anchored_conjuncts(self, anchors, raw, |conjunct| {
            conjunct.gates && accept(conjunct.rule)
        });
        if accepted {
            return true;
        }
        pending.retain(|id| {
            self.conjuncts
                .get(*id)
                .is_some_and(|conjunct| conjunct.gates && accept(conjunct.rule))
        });
        !pending.is_empty() && self.completed(raw, &pending).next().is_some()
    }

    /// The rules of the `pending` conjuncts (whose anchors occur) whose other literals all
    /// occur too, each literal looked for at most once.
    fn completed<'p>(&'p self, raw: &str, pending: &[usize]) -> impl Iterator<Item = usize> + 'p {
        let mut found: Vec<Option<bool>> = Vec::new();
        let mut occurs = |pattern: usize| -> bool {
            if found.is_empty() {
                found = vec![None; self.others.len()];
            }
            match found.get_mut(pattern) {
                Some(Some(known)) => *known,
                Some(slot) => {
                    let occurs = self
                        .others
                        .get(pattern)
                        .is_some_and(|other| other.may_occur(raw));
                    *slot = Some(occurs);
                    occurs
                }
                None => false,
            }
        };
        let complete: Vec<usize> = pending
            .iter()
            .filter_map(|id| self.conjuncts.get(*id))
            .filter(|conjunct| conjunct.others.iter().all(|pattern| occurs(*pattern)))
            .map(|conjunct| conjunct.rule)
            .collect();
        complete.into_iter()
    }

    /// Whether the text holds a non-ASCII character folding to a letter some literal needs.
    fn folds(&self, raw: &str) -> bool {
        !self.fold_rules.is_empty()
            && !raw.is_ascii()
            && NON_ASCII_FOLDS.iter().any(|fold| raw.contains(*fold))
    }
}
