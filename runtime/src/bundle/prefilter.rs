//! The literal prefilter and the gate: the cheap passes that decide which rules a
//! classification evaluates at all.
//!
//! The compiler records, for every gated rule, conjuncts of literals (ASCII-lowercase words,
//! compared case-insensitively, or runs of CJK characters, which have no case): any match of the
//! rule holds every literal of at least one of them. One Aho-Corasick pass over the raw text finds every literal that occurs; a conjunct
//! all of whose literals occur is complete. A gated rule none of whose conjuncts is complete
//! cannot fire, so the rule walk (`super::classify`) skips it. The gate,
//! [`crate::Bundle::may_classify`], looks at the same conjuncts of the rules above low
//! confidence, stopping at the first complete one whose rule's guards hold.
//!
//! The pass only records which literals occur; the conjuncts are looked at after it, each once,
//! and only if its first literal (the compiler puts the most selective first) occurred. Looking
//! at every conjunct of a literal when that literal is first seen cost more than the pass on
//! error messages: their common words (`error`, `rate`, `limit`) are needed by dozens of
//! conjuncts each.
//!
//! One pass over every literal, not a pass over each conjunct's first literal followed by a
//! search for each of its other literals: on error messages, which complete or nearly complete
//! many conjuncts, those searches cost more than the pass, and on ordinary text the larger
//! automaton costs no more (both measured: see the README's benchmark section).

use std::ops::ControlFlow;

use aho_corasick::MatchKind as AcMatchKind;
use aho_corasick::dfa::DFA;
use aho_corasick::nfa::contiguous::NFA;

use crate::literal_walk::LiteralWalk;

use super::LoadError;
use super::literal_table::LiteralTable;
use super::model::CatalogueModel;
use crate::vocab::Confidence;

/// The two non-ASCII characters whose simple case folding reaches ASCII letters (KELVIN SIGN →
/// k, LATIN SMALL LETTER LONG S → s).
const NON_ASCII_FOLDS: [char; 2] = ['\u{212A}', '\u{017F}'];

#[derive(Debug)]
pub(super) struct Prefilter {
    /// Every literal some conjunct needs, one pattern per distinct literal.
    literals: Option<Literals>,
    /// Per literal pattern: the conjuncts it is the first literal of.
    first_of: Vec<Vec<usize>>,
    /// Per conjunct: its rule, how many distinct literals it needs, and whether it gates.
    conjuncts: Vec<Conjunct>,
    /// Rules admitted when the text holds a non-ASCII character folding to ASCII.
    fold_rules: Vec<usize>,
    /// Those of them above low confidence, for the gate.
    fold_gate_rules: Vec<usize>,
}

#[derive(Debug)]
struct Conjunct {
    rule: usize,
    /// The distinct literal patterns it needs (at least one).
    literals: Vec<usize>,
    /// Whether the rule is above low confidence (the gate only considers those).
    gates: bool,
}

/// The literal patterns found so far in one text, one bit each.
struct Seen(Vec<u64>);

impl Seen {
    fn new(patterns: usize) -> Seen {
        Seen(vec![0; patterns.div_ceil(64)])
    }

    /// Marks `pattern` seen.
    fn insert(&mut self, pattern: usize) {
        if let Some(word) = self.0.get_mut(pattern / 64) {
            *word |= 1 << (pattern % 64);
        }
    }

    fn contains(&self, pattern: usize) -> bool {
        self.0
            .get(pattern / 64)
            .is_some_and(|word| word & (1 << (pattern % 64)) != 0)
    }

    /// The patterns seen, in ascending order.
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(index, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(index * 64 + bit)
            })
        })
    }
}

/// The automaton over every conjunct literal, ASCII case-insensitive, walked for every
/// literal that occurs. The table the bundle carries (format 9, [`LiteralTable`]), one table
/// lookup per byte; for a bundle without one, the Aho-Corasick DFA that table was built from,
/// built at load and walked by [`crate::literal_walk`], and should it not build, a contiguous
/// NFA (a few lookups per byte).
#[derive(Debug)]
enum Literals {
    Table(LiteralTable),
    Dfa(LiteralWalk<DFA>),
    Nfa(LiteralWalk<NFA>),
}

impl Literals {
    fn new(literals: &[&str], table: Option<LiteralTable>) -> Result<Option<Literals>, LoadError> {
        if literals.is_empty() {
            return Ok(None);
        }
        if let Some(table) = table {
            table.check_literal_count(literals.len())?;
            return Ok(Some(Literals::Table(table)));
        }
        let malformed =
            |error: &dyn std::fmt::Display| LoadError::malformed(format!("prefilter: {error}"));
        let dfa = DFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(AcMatchKind::Standard)
            .prefilter(false)
            .build(literals);
        let built = match dfa {
            Ok(dfa) => LiteralWalk::new(dfa).map(Literals::Dfa),
            Err(_) => {
                let nfa = NFA::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(AcMatchKind::Standard)
                    .prefilter(false)
                    .build(literals)
                    .map_err(|error| malformed(&error))?;
                LiteralWalk::new(nfa).map(Literals::Nfa)
            }
        };
        built.map(Some).map_err(|error| malformed(&error))
    }

    fn walk(&self, text: &[u8], visit: impl FnMut(usize) -> ControlFlow<()>) -> ControlFlow<()> {
        match self {
            Literals::Table(table) => table.walk(text, visit),
            Literals::Dfa(walk) => walk.walk(text, visit),
            Literals::Nfa(walk) => walk.walk(text, visit),
        }
    }
}

/// The conjuncts completed by the literals of `raw`: `on_complete` is given each, and stops
/// the search by answering `true`.
fn complete_conjuncts(
    prefilter: &Prefilter,
    literals: &Literals,
    raw: &str,
    mut on_complete: impl FnMut(&Conjunct) -> bool,
) -> bool {
    let mut seen = Seen::new(prefilter.first_of.len());
    let _ = literals.walk(raw.as_bytes(), |literal| {
        seen.insert(literal);
        ControlFlow::Continue(())
    });
    seen.iter().any(|literal| {
        prefilter
            .first_of
            .get(literal)
            .into_iter()
            .flatten()
            .filter_map(|id| prefilter.conjuncts.get(*id))
            .any(|conjunct| {
                conjunct
                    .literals
                    .iter()
                    .all(|needed| seen.contains(*needed))
                    && on_complete(conjunct)
            })
    })
}

/// The prefilter's literal patterns and conjuncts, numbered as the loader and the writer of
/// the bundle's literal table both number them: patterns in order of first use.
struct Numbered<'model> {
    /// Per literal pattern: its text.
    texts: Vec<&'model str>,
    first_of: Vec<Vec<usize>>,
    conjuncts: Vec<Conjunct>,
}

fn number_literals(model: &CatalogueModel) -> Numbered<'_> {
    let above_low = |rule: usize| {
        model
            .rules
            .get(rule)
            .is_some_and(|rule| rule.confidence != Confidence::Low)
    };
    let mut pattern_of_literal = vec![None; model.literals.len()];
    let mut texts: Vec<&str> = Vec::new();
    let mut first_of: Vec<Vec<usize>> = Vec::new();
    let mut conjuncts = Vec::with_capacity(model.requirements.len());
    for requirement in &model.requirements {
        let mut needs = Vec::new();
        for literal in &requirement.literals {
            let (Some(slot), Some(entry)) = (
                pattern_of_literal.get_mut(*literal as usize),
                model.literals.get(*literal as usize),
            ) else {
                continue;
            };
            let pattern = *slot.get_or_insert_with(|| {
                texts.push(entry.literal.as_str());
                first_of.push(Vec::new());
                texts.len() - 1
            });
            if !needs.contains(&pattern) {
                needs.push(pattern);
            }
        }
        let Some(first) = needs.first().and_then(|first| first_of.get_mut(*first)) else {
            continue;
        };
        first.push(conjuncts.len());
        let rule = requirement.rule as usize;
        conjuncts.push(Conjunct {
            rule,
            literals: needs,
            gates: above_low(rule),
        });
    }
    Numbered {
        texts,
        first_of,
        conjuncts,
    }
}

/// The bundle section holding the literal table of `model`'s prefilter (format 9): empty when
/// it has no literals.
#[cfg(feature = "bundle-writer")]
pub(super) fn literal_table_section(model: &CatalogueModel) -> Vec<u8> {
    super::literal_table::build(&number_literals(model).texts)
}

impl Prefilter {
    /// The prefilter of `model`, walking `table` (read from the bundle's literal table section,
    /// format 9) when there is one, and otherwise an automaton built now.
    pub(super) fn new(
        model: &CatalogueModel,
        table: Option<LiteralTable>,
    ) -> Result<Prefilter, LoadError> {
        let mut fold_rules = Vec::new();
        for literal in &model.literals {
            if literal.folds_beyond_ascii {
                fold_rules.extend(literal.rules.iter().map(|rule| *rule as usize));
            }
        }
        let fold_gate_rules = fold_rules
            .iter()
            .copied()
            .filter(|rule| {
                model
                    .rules
                    .get(*rule)
                    .is_some_and(|rule| rule.confidence != Confidence::Low)
            })
            .collect();
        let Numbered {
            texts,
            first_of,
            conjuncts,
        } = number_literals(model);
        Ok(Prefilter {
            literals: Literals::new(&texts, table)?,
            first_of,
            conjuncts,
            fold_rules,
            fold_gate_rules,
        })
    }

    /// Bytes of memory the literal table read from the bundle holds; `None` when the automaton
    /// was built at load instead.
    pub(super) fn literal_table_bytes(&self) -> Option<usize> {
        match &self.literals {
            Some(Literals::Table(table)) => Some(table.memory_usage()),
            _ => None,
        }
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
        if let Some(literals) = &self.literals {
            complete_conjuncts(self, literals, raw, |conjunct| {
                admitted.push(conjunct.rule);
                false
            });
        }
        if self.folds(raw) {
            admitted.extend(&self.fold_rules);
        }
        admitted
    }

    /// Whether some rule above low confidence that the raw text admits (or that a non-ASCII
    /// case fold may hide a literal of) passes `accept`. The text is read whole (the walk only
    /// records literals); the conjuncts are then looked at until the first rule accepted.
    pub(super) fn any_admitted(&self, raw: &str, mut accept: impl FnMut(usize) -> bool) -> bool {
        if self.folds(raw) && self.fold_gate_rules.iter().any(|rule| accept(*rule)) {
            return true;
        }
        let Some(literals) = &self.literals else {
            return false;
        };
        complete_conjuncts(self, literals, raw, |conjunct| {
            conjunct.gates && accept(conjunct.rule)
        })
    }

    /// Whether the text holds a non-ASCII character folding to a letter some literal needs.
    fn folds(&self, raw: &str) -> bool {
        !self.fold_rules.is_empty()
            && !raw.is_ascii()
            && NON_ASCII_FOLDS.iter().any(|fold| raw.contains(*fold))
    }
}
