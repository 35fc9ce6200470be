//! Component automata: each pattern a lazy DFA (built once per session), the states earlier
//! searches determinized kept for the next ones within a bound, and a search's walk over one.

use std::sync::Arc;

use regex_automata::Anchored;
use regex_automata::hybrid::LazyStateID;
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::util::start;

use crate::db::{Db, PatternKey};
use crate::lower::AutomatonError;

use super::AnalysisBudget;

/// A component automaton: a lazy DFA, whose states a search determinizes as it reaches them.
#[derive(Debug)]
pub(super) struct Automaton {
    dfa: DFA,
    /// The states earlier searches determinized, with their size, kept for the next search
    /// while they are few ([`WARM_CACHE_BYTES`], [`WARM_TOTAL_BYTES`]): most queries of a
    /// check read the same automata.
    warm: std::sync::Mutex<Option<(Cache, usize)>>,
}

/// The largest cache of states one automaton keeps between searches; a larger one is dropped
/// after its search. As large as a search's own cache ([`super::AnalysisBudget`]'s default
/// `component_dfa_bytes`): the overlap check's queries each read a whole match of a large outer
/// pattern, most outer patterns in several queries, and at 256 KiB their states were
/// determinized again for nearly every query (docs/analysis.md, "Scaling").
const WARM_CACHE_BYTES: usize = 8 << 20;

/// The most that the kept caches of all automata hold together, so that a catalogue of many
/// patterns does not multiply a check's memory (docs/bundle.md, "Memory ceiling").
const WARM_TOTAL_BYTES: usize = 256 << 20;

/// What the kept caches hold now, in bytes.
static WARM_BYTES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn release_warm(bytes: usize) {
    WARM_BYTES.fetch_sub(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// Reserves room for a kept cache of `bytes`, if the total allows it.
fn reserve_warm(bytes: usize) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    WARM_BYTES
        .fetch_update(Relaxed, Relaxed, |used| {
            used.checked_add(bytes)
                .filter(|total| *total <= WARM_TOTAL_BYTES)
        })
        .is_ok()
}

impl Drop for Automaton {
    fn drop(&mut self) {
        if let Ok(Some((_, bytes))) = self.warm.get_mut().map(Option::take) {
            release_warm(bytes);
        }
    }
}

/// A search's use of one automaton: a cache of determinized states, and its start.
pub(super) struct Walk<'a> {
    automaton: &'a Automaton,
    cache: Cache,
    /// Where the walk starts.
    pub(super) start: LazyStateID,
}

/// The automaton's cache is full: the search is over its budget.
pub(super) struct OverBudget;

impl Automaton {
    fn new(dfa: DFA) -> Self {
        Automaton {
            dfa,
            warm: std::sync::Mutex::new(None),
        }
    }

    /// A walk with the states earlier searches kept (`warm`), or with none. The outcome of a
    /// search is the same either way unless its cache fills up, and a search whose warm cache
    /// fills up is run again cold: what a query concludes never depends on what ran before.
    pub(super) fn walk(&self, warm: bool, anchored: Anchored) -> Result<Walk<'_>, OverBudget> {
        let kept = if warm {
            self.warm.lock().ok().and_then(|mut slot| slot.take())
        } else {
            None
        };
        let mut cache = match kept {
            Some((cache, bytes)) => {
                release_warm(bytes);
                cache
            }
            None => self.dfa.create_cache(),
        };
        let start = self
            .dfa
            .start_state(&mut cache, &start::Config::new().anchored(anchored))
            .map_err(|_| OverBudget)?;
        Ok(Walk {
            automaton: self,
            cache,
            start,
        })
    }
}

impl Walk<'_> {
    /// The equivalence class of `byte` in the automaton (bytes of one class are alike to it).
    pub(super) fn byte_class(&self, byte: u8) -> u8 {
        self.automaton.dfa.byte_classes().get(byte)
    }

    /// Gives the walk's states back to its automaton, for the next search, if they are few.
    pub(super) fn keep(self) {
        let bytes = self.cache.memory_usage();
        if bytes > WARM_CACHE_BYTES {
            return;
        }
        if let Ok(mut slot) = self.automaton.warm.lock()
            && reserve_warm(bytes)
            && let Some((_, replaced)) = slot.replace((self.cache, bytes))
        {
            // Another search of the same automaton kept its states meanwhile.
            release_warm(replaced);
        }
    }

    /// The state after `byte`.
    pub(super) fn next(&mut self, state: LazyStateID, byte: u8) -> Result<LazyStateID, OverBudget> {
        match self.automaton.dfa.next_state(&mut self.cache, state, byte) {
            // A quit state (a byte the automaton cannot decide on) ends the search too.
            Ok(next) if !next.is_quit() => Ok(next),
            _ => Err(OverBudget),
        }
    }

    /// Whether a text that ends in `state` has matched at its end.
    pub(super) fn matches_at_end(&mut self, state: LazyStateID) -> Result<bool, OverBudget> {
        match self.automaton.dfa.next_eoi_state(&mut self.cache, state) {
            Ok(end) if !end.is_quit() => Ok(end.is_match()),
            _ => Err(OverBudget),
        }
    }

    /// Whether the automaton matches somewhere in `text`, read as the product search reads it.
    pub(super) fn matches_somewhere(&mut self, text: &[u8]) -> Result<bool, OverBudget> {
        let mut state = self.start;
        for &byte in text {
            state = self.next(state, byte)?;
            if state.is_match() {
                return Ok(true);
            }
            if state.is_dead() {
                return Ok(false);
            }
        }
        self.matches_at_end(state)
    }
}

/// The DFA size under which a pattern with a long bounded repetition is searched exactly; one
/// whose exact DFA does not fit is searched widened. A quarter of the lowering's first attempt
/// (256 KiB): a failed attempt costs in proportion to its limit, and most fail (386 of the 444
/// such patterns of the repository catalogue do not fit even 256 KiB), so at 256 KiB those
/// failures were a fifth of a check's time (a perf profile); the 35 patterns whose DFA takes
/// 64-256 KiB change no finding of that catalogue when widened.
pub(super) const EXACT_ATTEMPT_BYTES: usize = 64 << 10;

/// The budgets a component automaton works under: the analysis's own size budget (the cache
/// of states one search may determinize), the size under which a pattern with a long bounded
/// repetition is tried exactly ([`EXACT_ATTEMPT_BYTES`], at most the lowering's per-pattern
/// budget), and the determinization and NFA budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ComponentBudget {
    first: usize,
    budget: usize,
    determinize: usize,
    nfa: usize,
}

impl ComponentBudget {
    pub(super) fn new(analysis: &AnalysisBudget, lowering: &crate::lower::Budget) -> Self {
        ComponentBudget {
            first: lowering.pattern_dfa_bytes.min(EXACT_ATTEMPT_BYTES),
            budget: analysis.component_dfa_bytes,
            determinize: lowering.determinize_bytes,
            nfa: lowering.nfa_bytes,
        }
    }

    pub(super) fn key<'db>(&self, db: &'db dyn Db, pattern: &str) -> PatternKey<'db> {
        PatternKey::new(
            db,
            pattern.to_owned(),
            self.first,
            self.budget,
            // The widened attempt under the analysis's budget too: not under the lowering's
            // larger one, which only the DFAs the bundle ships need (the largest unions of the
            // catalogue are gated, have none, and would cost seconds only to be refused).
            self.budget,
            self.determinize,
            self.nfa,
        )
    }

    pub(super) fn as_tuple(&self) -> (usize, usize, usize, usize) {
        (self.first, self.budget, self.determinize, self.nfa)
    }

    pub(super) fn from_tuple(
        (first, budget, determinize, nfa): (usize, usize, usize, usize),
    ) -> Self {
        ComponentBudget {
            first,
            budget,
            determinize,
            nfa,
        }
    }
}

/// A component automaton and whether it had to be widened. Tracked: built once per session.
#[salsa::tracked(returns(ref), no_eq)]
pub(super) fn automaton<'db>(
    db: &'db dyn Db,
    key: PatternKey<'db>,
) -> Result<(Arc<Automaton>, bool), AutomatonError> {
    let (hir, approximate) = crate::lower::analysed_hir(
        db,
        key.text(db),
        *key.first(db),
        *key.determinize(db),
        *key.nfa(db),
    )?;
    let dfa = crate::lower::build_lazy_dfa(&hir, *key.budget(db), *key.nfa(db))?;
    Ok((Arc::new(Automaton::new(dfa)), approximate))
}

pub(super) fn component_automaton(
    db: &dyn Db,
    pattern: &str,
    budget: &ComponentBudget,
) -> Result<(Arc<Automaton>, bool), AutomatonError> {
    automaton(db, budget.key(db, pattern)).clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Database;

    /// Whether the analysis reads `pattern` widened (not exactly).
    fn widened(pattern: &str) -> bool {
        let db = Database::default();
        let budget = ComponentBudget::new(&AnalysisBudget::default(), &crate::Budget::default());
        match component_automaton(&db, pattern, &budget) {
            Ok((_, approximate)) => approximate,
            Err(error) => panic!("{pattern}: {error:?}"),
        }
    }

    #[test]
    fn a_long_bounded_class_that_is_no_gap_is_searched_exactly_where_it_fits() {
        assert!(!widened(r"model [0-9A-Za-z_.-]{1,40} not found"));
        assert!(!widened(r"\[RID: [0-9a-f]{8,64}\] Validation error: "));
    }

    #[test]
    fn a_bounded_gap_is_widened() {
        // Its exact DFA (44 KB) would fit the exact attempt, but gaps are widened unattempted:
        // nearly all are larger (docs/analysis.md, "Scaling").
        assert!(widened(r"quota[^\n]{0,9}exceeded"));
        assert!(widened(
            r"(?i)(?-u:\b)error(?-u:\b)[^\n]{0,80}(?-u:\b)quota(?-u:\b)[^\n]{0,80}exceeded"
        ));
        // Widening leaves a short bounded repetition alone.
        assert!(!widened(r"quota[^\n]{0,8}exceeded"));
    }
}
