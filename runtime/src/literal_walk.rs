//! Which literals of an Aho-Corasick automaton occur in a text: the question both literal
//! scans of the runtime ask (the redaction's triggers, the rules' prefilter), answered by
//! walking the automaton's states a byte at a time.
//!
//! Neither scan needs where a literal occurs, or a literal reported once per occurrence, and
//! the crate's overlapping match iterator costs a step of its own machinery per match and per
//! call: ordinary text is full of short literals (`/`, `--`, `for`), so on it that machinery
//! cost more than the automaton's own table steps. The walk is the iterator's loop without
//! it: one transition per byte and, at a match state, every literal that ends there (standard
//! match semantics list them all, a literal inside another included).

use std::ops::ControlFlow;

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::{Anchored, MatchError};

/// An automaton, built without a prefilter (so only its dead and match states are special),
/// with its unanchored start state.
#[derive(Debug)]
pub(crate) struct LiteralWalk<A> {
    automaton: A,
    start: StateID,
}

impl<A: Automaton> LiteralWalk<A> {
    /// Fails when the automaton has no unanchored start state (it was built for anchored
    /// searches only).
    pub(crate) fn new(automaton: A) -> Result<LiteralWalk<A>, MatchError> {
        let start = automaton.start_state(Anchored::No)?;
        Ok(LiteralWalk { automaton, start })
    }

    /// Gives `visit` the pattern of every literal occurrence in `text`, in the order their ends
    /// are read, until it answers `Break` (which is then returned).
    pub(crate) fn walk(
        &self,
        text: &[u8],
        mut visit: impl FnMut(usize) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let automaton = &self.automaton;
        let mut state = self.start;
        // An empty literal matches before the first byte.
        self.matches_at(state, &mut visit)?;
        for &byte in text {
            state = automaton.next_state(Anchored::No, state, byte);
            if automaton.is_special(state) {
                if automaton.is_dead(state) {
                    break;
                }
                self.matches_at(state, &mut visit)?;
            }
        }
        ControlFlow::Continue(())
    }

    fn matches_at(
        &self,
        state: StateID,
        visit: &mut impl FnMut(usize) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if self.automaton.is_match(state) {
            for index in 0..self.automaton.match_len(state) {
                visit(self.automaton.match_pattern(state, index).as_usize())?;
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::dfa::DFA;
    use aho_corasick::nfa::contiguous::NFA;
    use aho_corasick::{AhoCorasick, MatchKind};
    use proptest::prelude::*;

    fn walked<A: Automaton>(walk: &LiteralWalk<A>, text: &str) -> Vec<usize> {
        let mut seen = Vec::new();
        let _ = walk.walk(text.as_bytes(), |pattern| {
            seen.push(pattern);
            ControlFlow::Continue(())
        });
        seen
    }

    proptest! {
        /// The walk reports exactly what the crate's overlapping iterator reports, in order,
        /// for a DFA and for a contiguous NFA, case-insensitively.
        #[test]
        fn the_walk_agrees_with_the_overlapping_iterator(
            literals in prop::collection::vec("[abAB/-]{1,4}", 1..12),
            text in "[abAB/ -]{0,64}",
        ) {
            let reference = AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::Standard)
                .build(&literals)
                .unwrap();
            let expected: Vec<usize> = reference
                .find_overlapping_iter(&text)
                .map(|hit| hit.pattern().as_usize())
                .collect();
            let dfa = DFA::builder()
                .ascii_case_insensitive(true)
                .prefilter(false)
                .build(&literals)
                .unwrap();
            let nfa = NFA::builder()
                .ascii_case_insensitive(true)
                .prefilter(false)
                .build(&literals)
                .unwrap();
            prop_assert_eq!(&walked(&LiteralWalk::new(dfa).unwrap(), &text), &expected);
            prop_assert_eq!(&walked(&LiteralWalk::new(nfa).unwrap(), &text), &expected);
        }
    }

    #[test]
    fn a_break_stops_the_walk() {
        let dfa = DFA::new(["a"]).unwrap();
        let walk = LiteralWalk::new(dfa).unwrap();
        let mut seen = 0;
        let flow = walk.walk(b"aaaa", |_| {
            seen += 1;
            if seen == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!((flow, seen), (ControlFlow::Break(()), 2));
    }
}
