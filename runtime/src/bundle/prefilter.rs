//! The literal prefilter and the gate: the cheap passes that decide which rules a
//! classification evaluates at all.
//!
//! The compiler records, for every gated rule, literals of which any match needs one
//! (ASCII-lowercase, compared case-insensitively). One overlapping Aho-Corasick pass over the
//! raw text admits the rules of every literal found; a gated rule that is not admitted cannot
//! fire, so the rule walk (`super::classify`) skips it. The gate is the same idea for
//! [`crate::Bundle::may_classify`]: one overlapping pass over the literals of the rules above
//! low confidence, which stops at the first literal admitting a rule whose guards hold.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind as AcMatchKind};

use super::LoadError;
use super::model::CatalogueModel;
use crate::vocab::Confidence;

/// The two non-ASCII characters whose simple case folding reaches ASCII letters (KELVIN SIGN →
/// k, LATIN SMALL LETTER LONG S → s).
const NON_ASCII_FOLDS: [char; 2] = ['\u{212A}', '\u{017F}'];

#[derive(Debug)]
pub(super) struct Prefilter {
    literals: Option<AhoCorasick>,
    /// Per prefilter literal: the rules it admits.
    literal_rules: Vec<Vec<usize>>,
    /// Rules admitted when the text holds a non-ASCII character folding to ASCII.
    fold_rules: Vec<usize>,
    /// The literals of every rule that is not low-confidence, for [`Prefilter::any_admitted`].
    gate: Option<AhoCorasick>,
    /// Per gate literal: the rules above low confidence it admits.
    gate_rules: Vec<Vec<usize>>,
    /// The rules above low confidence admitted when the text holds a non-ASCII character
    /// folding to ASCII.
    gate_fold_rules: Vec<usize>,
}

impl Prefilter {
    pub(super) fn new(model: &CatalogueModel) -> Result<Prefilter, LoadError> {
        let mut literal_rules = Vec::new();
        let mut fold_rules = Vec::new();
        for literal in &model.literals {
            literal_rules.push(literal.rules.iter().map(|rule| *rule as usize).collect());
            if literal.folds_beyond_ascii {
                fold_rules.extend(literal.rules.iter().map(|rule| *rule as usize));
            }
        }
        let literals = if model.literals.is_empty() {
            None
        } else {
            let literals = || {
                model
                    .literals
                    .iter()
                    .map(|literal| literal.literal.as_bytes())
            };
            let mut builder = AhoCorasickBuilder::new();
            builder
                .ascii_case_insensitive(true)
                .match_kind(AcMatchKind::Standard)
                .prefilter(false);
            // The search is overlapping (every literal that occurs, not only leftmost ones), so
            // it cannot skip ahead: a DFA (one table lookup per byte) is several times faster
            // than the contiguous NFA the builder picks by itself for over 100 literals. Its
            // size is bounded by the literals' total length; should it not build, the
            // builder's own choice stands.
            let built = builder
                .clone()
                .kind(Some(AhoCorasickKind::DFA))
                .build(literals())
                .or_else(|_| builder.build(literals()));
            Some(built.map_err(|error| LoadError::malformed(format!("prefilter: {error}")))?)
        };
        let above_low = |rule: &u32| {
            model
                .rules
                .get(*rule as usize)
                .is_some_and(|rule| rule.confidence != Confidence::Low)
        };
        let mut gate_literals: Vec<&[u8]> = Vec::new();
        let mut gate_rules = Vec::new();
        let mut gate_fold_rules = Vec::new();
        for literal in &model.literals {
            let rules: Vec<usize> = literal
                .rules
                .iter()
                .filter(|rule| above_low(rule))
                .map(|rule| *rule as usize)
                .collect();
            if rules.is_empty() {
                continue;
            }
            if literal.folds_beyond_ascii {
                gate_fold_rules.extend(&rules);
            }
            gate_literals.push(literal.literal.as_bytes());
            gate_rules.push(rules);
        }
        let gate = if gate_literals.is_empty() {
            None
        } else {
            // An overlapping search (every literal that occurs) over a DFA without a prefilter:
            // with a hundred-odd literals no SIMD prefilter applies, and the builder's own pick
            // (an NFA) is several times slower on prose.
            Some(
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
                    .match_kind(AcMatchKind::Standard)
                    .kind(Some(AhoCorasickKind::DFA))
                    .prefilter(false)
                    .build(&gate_literals)
                    .map_err(|error| LoadError::malformed(format!("gate: {error}")))?,
            )
        };
        Ok(Prefilter {
            literals,
            literal_rules,
            fold_rules,
            gate,
            gate_rules,
            gate_fold_rules,
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
    /// literal found in the raw text, and those of literals that non-ASCII case folds may hide.
    pub(super) fn admitted_rules(&self, raw: &str) -> Vec<usize> {
        let mut admitted = Vec::new();
        let Some(literals) = &self.literals else {
            return admitted;
        };
        for found in literals.find_overlapping_iter(raw) {
            admitted.extend(
                self.literal_rules
                    .get(found.pattern().as_usize())
                    .into_iter()
                    .flatten(),
            );
        }
        if self.folds(raw) {
            admitted.extend(&self.fold_rules);
        }
        admitted
    }

    /// Whether some rule above low confidence that a literal found in the raw text admits (or
    /// that a non-ASCII case fold may hide) passes `accept`. One overlapping pass, stopping at
    /// the first rule accepted, so that text whose literals all belong to rules whose guards
    /// fail is read once, and text that may classify is often read only in part.
    pub(super) fn any_admitted(&self, raw: &str, mut accept: impl FnMut(usize) -> bool) -> bool {
        if self.folds(raw) && self.gate_fold_rules.iter().any(|rule| accept(*rule)) {
            return true;
        }
        let Some(gate) = &self.gate else {
            return false;
        };
        // A literal repeated in the text admits the same rules: try them once.
        let mut tried: Vec<bool> = Vec::new();
        for found in gate.find_overlapping_iter(raw) {
            let literal = found.pattern().as_usize();
            if tried.is_empty() {
                tried = vec![false; self.gate_rules.len()];
            }
            match tried.get_mut(literal) {
                Some(seen) if !*seen => *seen = true,
                _ => continue,
            }
            let rules = self.gate_rules.get(literal).into_iter().flatten();
            if rules.copied().any(&mut accept) {
                return true;
            }
        }
        false
    }

    /// Whether the text holds a non-ASCII character folding to a letter some literal needs.
    fn folds(&self, raw: &str) -> bool {
        !self.fold_rules.is_empty()
            && !raw.is_ascii()
            && NON_ASCII_FOLDS.iter().any(|fold| raw.contains(*fold))
    }
}
