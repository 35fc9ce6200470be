//! The literal prefilter and the gate: the cheap passes that decide which rules a
//! classification evaluates at all.
//!
//! The compiler records, for every gated rule, literals of which any match needs one
//! (ASCII-lowercase, compared case-insensitively). One overlapping Aho-Corasick pass over the
//! raw text admits the rules of every literal found; a gated rule that is not admitted cannot
//! fire, so the rule walk (`super::classify`) skips it. The gate is the same idea for
//! [`crate::Bundle::may_classify`]: one `is_match` over the literals of the rules above low
//! confidence.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind as AcMatchKind};

use super::LoadError;
use super::model::CatalogueModel;
use crate::vocab::Confidence;

/// The UTF-8 encodings of the two non-ASCII characters whose simple case folding reaches ASCII
/// letters (KELVIN SIGN → k, LATIN SMALL LETTER LONG S → s).
const NON_ASCII_FOLDS: [&[u8]; 2] = ["\u{212A}".as_bytes(), "\u{017F}".as_bytes()];

#[derive(Debug)]
pub(super) struct Prefilter {
    literals: Option<AhoCorasick>,
    /// Per prefilter literal: the rules it admits.
    literal_rules: Vec<Vec<usize>>,
    /// Rules admitted when the text holds a non-ASCII character folding to ASCII.
    fold_rules: Vec<usize>,
    /// The literals of every rule that is not low-confidence, for [`Prefilter::gate_passes`]:
    /// built for `is_match`, so it may skip ahead with its own prefilter.
    gate: Option<AhoCorasick>,
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
        let gate_literals: Vec<&[u8]> = model
            .literals
            .iter()
            .filter(|literal| {
                literal.rules.iter().any(|rule| {
                    model
                        .rules
                        .get(*rule as usize)
                        .is_some_and(|rule| rule.confidence != Confidence::Low)
                })
            })
            .map(|literal| literal.literal.as_bytes())
            .collect();
        let gate = if gate_literals.is_empty() {
            None
        } else {
            // A DFA without a prefilter: with a hundred-odd literals no SIMD prefilter applies,
            // and the builder's own pick (an NFA) is several times slower on prose.
            Some(
                AhoCorasickBuilder::new()
                    .ascii_case_insensitive(true)
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

    /// Whether some literal of a rule above low confidence may occur in the raw text: one of
    /// them does, or a non-ASCII character that case folds to ASCII may hide one.
    pub(super) fn gate_passes(&self, raw: &str) -> bool {
        self.folds(raw) || self.gate.as_ref().is_some_and(|gate| gate.is_match(raw))
    }

    /// Whether the text holds a non-ASCII character folding to a letter some literal needs.
    fn folds(&self, raw: &str) -> bool {
        !self.fold_rules.is_empty()
            && !raw.is_ascii()
            && NON_ASCII_FOLDS
                .iter()
                .any(|needle| contains_bytes(raw.as_bytes(), needle))
    }
}

fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}
