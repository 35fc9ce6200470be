//! The product search: a breadth-first search over the product of component automata
//! ([`super::automaton`]) for the shortest texts that satisfy a query, or a proof that none
//! exists.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use faultline_runtime::TextView;
use regex_automata::Anchored;
use regex_automata::hybrid::LazyStateID;

use crate::db::{Db, QueryKey};

use super::Analyzer;
use super::automaton::{Automaton, ComponentBudget, OverBudget, Walk, automaton};

/// Must a component match somewhere, or must it not?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Polarity {
    Must,
    MustNot,
}

#[derive(Debug, Clone)]
pub(super) struct Component {
    /// The pattern (the key of its automaton and of the search memo).
    pub(super) pattern: String,
    pub(super) polarity: Polarity,
    pub(super) view: TextView,
    /// The JSON Pointer whose values it reads, for [`TextView::Body`].
    pub(super) pointer: Option<String>,
}

/// One text of a witness: where it goes (a view of the evidence text, or the body at a
/// pointer) and the text.
pub(super) type WitnessText = (TextView, Option<String>, String);

/// The outcome of a product search.
pub(super) enum Search {
    /// The witness texts, per view, shortest first.
    Witnesses(Vec<Vec<WitnessText>>),
    /// No text satisfies the query.
    Empty,
    /// The budget ran out first.
    Exhausted,
}

/// Preference rank of a byte in witnesses: lower is preferred.
fn preference(byte: u8) -> u16 {
    match byte {
        b'a'..=b'z' => u16::from(byte - b'a'),
        b'0'..=b'9' => 26 + u16::from(byte - b'0'),
        b'A'..=b'Z' => 36 + u16::from(byte - b'A'),
        b' ' => 62,
        b'!'..=b'~' => 63 + u16::from(byte),
        b'\n' => 300,
        b'\t' => 301,
        _ => 400 + u16::from(byte),
    }
}

/// What one product search found: witnesses (shortest first), proof of emptiness, or the
/// budget's end.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ViewSearch {
    Witnesses(Vec<String>),
    Empty,
    Exhausted,
}

/// The pattern of the UTF-8 validity component: the whole text is valid UTF-8.
const UTF8_PATTERN: &str = r"(?s)\A.*\z";

/// One product search, memoized by its components: a query whose rules did not change is not
/// searched again.
#[salsa::tracked(returns(ref))]
fn search_query<'db>(db: &'db dyn Db, key: QueryKey<'db>) -> ViewSearch {
    let budget = ComponentBudget::from_tuple(*key.component_budget(db));
    let mut automata: Vec<(Arc<Automaton>, Polarity)> = Vec::new();
    for (pattern, must) in key
        .components(db)
        .iter()
        .map(|(p, must, _)| (p, *must))
        .chain(std::iter::once((&UTF8_PATTERN.to_owned(), true)))
    {
        match automaton(db, budget.key(db, pattern)) {
            Ok((automaton, _)) => automata.push((
                Arc::clone(automaton),
                if must {
                    Polarity::Must
                } else {
                    Polarity::MustNot
                },
            )),
            Err(_) => return ViewSearch::Exhausted,
        }
    }
    if let Some(joined) = joined_witness(db, key, &automata) {
        return ViewSearch::Witnesses(vec![joined]);
    }
    let (wanted, max_states) = (*key.wanted(db), *key.max_states(db));
    // One witness of one pattern: the shortest text it matches from the text's first byte is
    // a witness, and nearly always a shortest one, found among the states of matches begun at
    // the start only; searching from every position explores the states of every overlap of
    // partial matches, most of such a query's time. Only the search from every position proves
    // a query empty.
    if let ([(_, true, _)], 1) = (key.components(db).as_slice(), wanted) {
        let found = breadth_first(&automata, 1, max_states, Anchored::Yes);
        if let ViewSearch::Witnesses(_) = found {
            return found;
        }
    }
    breadth_first(&automata, wanted, max_states, Anchored::No)
}

/// For one witness of a query whose components must all match: each component's own shortest
/// witness, joined by line breaks, when that text satisfies every component. Matches anywhere
/// mostly survive being joined (an anchor such as `\A` or `\z` may not, hence the check and
/// the other orders tried), and the search of several unanchored components at once is the
/// costliest kind (an `unless` tested against its rule's matchers), while each alone is cheap
/// and shared. Vetoes anchored at the text's start (`^\[bug\]`) failed the one order tried
/// before, and their searches were the longest single queries of a check (0.2-0.3 s each).
fn joined_witness(
    db: &dyn Db,
    key: QueryKey<'_>,
    automata: &[(Arc<Automaton>, Polarity)],
) -> Option<String> {
    let components = key.components(db);
    if *key.wanted(db) != 1 || components.len() < 2 || components.iter().any(|(_, must, _)| !must) {
        return None;
    }
    let mut parts = Vec::with_capacity(components.len());
    for component in components {
        let alone = QueryKey::new(
            db,
            vec![component.clone()],
            1,
            *key.max_states(db),
            *key.component_budget(db),
        );
        match search_query(db, alone) {
            ViewSearch::Witnesses(found) => parts.push(found.first()?.clone()),
            _ => return None,
        }
    }
    // Joined in the query's order, then reversed (a component anchored at the text's start,
    // such as a veto `^\[bug\]`, needs its part first, one anchored at the end its part last),
    // then each part alone (a whole match of one may hold a match of the others).
    let forward = parts.join("\n");
    let backward = parts
        .iter()
        .rev()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n");
    [forward, backward]
        .into_iter()
        .chain(parts.iter().cloned())
        .find(|candidate| satisfies_all(automata, candidate))
}

/// Whether every automaton (all must match) matches somewhere in `text`; an automaton over its
/// budget here leaves the query to the breadth-first search.
fn satisfies_all(automata: &[(Arc<Automaton>, Polarity)], text: &str) -> bool {
    automata.iter().all(|(automaton, _)| {
        let matched = automaton.walk(true, Anchored::No).and_then(|mut walk| {
            let matched = walk.matches_somewhere(text.as_bytes())?;
            walk.keep();
            Ok(matched)
        });
        matches!(matched, Ok(true))
    })
}

/// Hashes the search's product states (short vectors of state ids) with a multiply-rotate mix:
/// the standard library's SipHash would dominate the search.
#[derive(Debug, Clone, Copy, Default)]
struct StateHash;

impl std::hash::BuildHasher for StateHash {
    type Hasher = StateHasher;

    fn build_hasher(&self) -> StateHasher {
        StateHasher(0)
    }
}

#[derive(Debug, Clone, Copy)]
struct StateHasher(u64);

impl StateHasher {
    pub(super) fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for StateHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.add(u64::from(byte));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// Breadth-first search over the product of the automata, collecting up to `wanted` shortest
/// witnesses: texts in which each component matches somewhere (`Anchored::No`), or in which
/// each matches from the first byte (`Anchored::Yes`).
fn breadth_first(
    automata: &[(Arc<Automaton>, Polarity)],
    wanted: usize,
    max_states: usize,
    anchored: Anchored,
) -> ViewSearch {
    let run = |warm: bool| -> Result<ViewSearch, OverBudget> {
        let mut walks = Vec::with_capacity(automata.len());
        for (automaton, polarity) in automata {
            walks.push((automaton.walk(warm, anchored)?, *polarity));
        }
        let found = explore(&mut walks, wanted, max_states)?;
        for (walk, _) in walks {
            walk.keep();
        }
        Ok(found)
    };
    run(true)
        .or_else(|OverBudget| run(false))
        .unwrap_or(ViewSearch::Exhausted)
}

/// The breadth-first search proper; `Err` when an automaton's cache is full.
fn explore(
    walks: &mut [(Walk<'_>, Polarity)],
    wanted: usize,
    max_states: usize,
) -> Result<ViewSearch, OverBudget> {
    // Joint byte classes: one representative byte per class, most preferred first.
    let mut representatives: HashMap<Vec<u8>, u8> = HashMap::new();
    for byte in 0..=255u8 {
        let key: Vec<u8> = walks
            .iter()
            .map(|(walk, _)| walk.byte_class(byte))
            .collect();
        let slot = representatives.entry(key).or_insert(byte);
        if preference(byte) < preference(*slot) {
            *slot = byte;
        }
    }
    let mut alphabet: Vec<u8> = representatives.into_values().collect();
    alphabet.sort_by_key(|byte| preference(*byte));
    // A component that must match and has matched holds whatever follows: for one witness its
    // states are one, which can only shrink the product (a search that proves a query empty
    // explores all of it). The first witness is the same either way: a merged state is
    // reached after the one that stands for it, with the same future. Beyond one witness,
    // merging would drop witnesses that differ only after such a match, so they are kept.
    let merge_satisfied = wanted == 1;

    // A product state is stored once, shared by the queue's index and the set of states seen;
    // the state being expanded and each successor are built in buffers reused throughout (an
    // allocation per successor tried was a tenth of a check).
    type Node = std::rc::Rc<[(LazyStateID, bool)]>;
    let start: Node = walks.iter().map(|(walk, _)| (walk.start, false)).collect();
    // Per state: the state it was reached from and the byte read, `None` for the start.
    let mut nodes: Vec<Option<(usize, u8)>> = vec![None];
    let mut states: Vec<Node> = vec![Node::clone(&start)];
    let mut seen: std::collections::HashSet<Node, StateHash> =
        std::collections::HashSet::with_hasher(StateHash);
    seen.insert(start);
    let mut queue = VecDeque::from([0usize]);
    let mut witnesses = Vec::new();
    let mut next: Vec<(LazyStateID, bool)> = Vec::with_capacity(walks.len());
    while let Some(index) = queue.pop_front() {
        let Some(node) = states.get(index).map(Node::clone) else {
            break;
        };
        let mut accepts = true;
        for ((walk, polarity), (state, satisfied)) in walks.iter_mut().zip(node.iter()) {
            let matched = *satisfied || walk.matches_at_end(*state)?;
            if matched != (*polarity == Polarity::Must) {
                accepts = false;
                break;
            }
        }
        if accepts {
            let mut bytes = Vec::new();
            let mut at = index;
            while let Some(&Some((parent, byte))) = nodes.get(at) {
                bytes.push(byte);
                at = parent;
            }
            bytes.reverse();
            if let Ok(text) = String::from_utf8(bytes) {
                witnesses.push(text);
                if witnesses.len() >= wanted {
                    break;
                }
            }
        }
        for &byte in &alphabet {
            next.clear();
            let mut pruned = false;
            for ((walk, polarity), (state, satisfied)) in walks.iter_mut().zip(node.iter()) {
                if merge_satisfied && *satisfied && *polarity == Polarity::Must {
                    // Whatever follows, it has matched: one state stands for all its states.
                    next.push((walk.start, true));
                    continue;
                }
                let state = walk.next(*state, byte)?;
                let satisfied = *satisfied || state.is_match();
                let dead = state.is_dead() && !satisfied;
                if (*polarity == Polarity::MustNot && satisfied)
                    || (*polarity == Polarity::Must && dead)
                {
                    pruned = true;
                    break;
                }
                next.push((state, satisfied));
            }
            if pruned || seen.contains(next.as_slice()) {
                continue;
            }
            if states.len() >= max_states {
                return Ok(if witnesses.is_empty() {
                    ViewSearch::Exhausted
                } else {
                    ViewSearch::Witnesses(witnesses)
                });
            }
            let stored: Node = Node::from(next.as_slice());
            seen.insert(Node::clone(&stored));
            nodes.push(Some((index, byte)));
            states.push(stored);
            queue.push_back(states.len() - 1);
        }
    }
    Ok(if witnesses.is_empty() {
        ViewSearch::Empty
    } else {
        ViewSearch::Witnesses(witnesses)
    })
}

/// Searches for one witness of `component` matching alone (a veto too), as a query whose
/// components must all match first does for each of them; the result is memoized.
pub(super) fn search_alone(
    db: &dyn Db,
    component: &Component,
    max_states: usize,
    budget: &ComponentBudget,
) {
    let must = Component {
        polarity: Polarity::Must,
        ..component.clone()
    };
    let key = QueryKey::new(db, view_key(&[&must]), 1, max_states, budget.as_tuple());
    search_query(db, key);
}

/// The components of a query on one text, as its memo key reads them.
fn view_key(components: &[&Component]) -> Vec<(String, bool, u8)> {
    components
        .iter()
        .map(|c| {
            (
                c.pattern.clone(),
                c.polarity == Polarity::Must,
                u8::from(c.view == TextView::Raw),
            )
        })
        .collect()
}

impl Analyzer<'_> {
    /// Runs the product searches of `queries` (each read as one text, one witness wanted) on
    /// worker threads, so that [`Analyzer::search_view`] then finds them memoized: the
    /// searches are independent, and many are proofs that explore their whole product.
    pub(super) fn prefetch_views(&self, queries: &[Vec<&Component>]) {
        let (max_states, budget) = (self.budget.max_states, self.components.as_tuple());
        crate::db::prefetch_in_parallel(self.db, queries, |db, components| {
            let key = QueryKey::new(db, view_key(components), 1, max_states, budget);
            search_query(db, key);
        });
    }

    /// Searches the product of `components` (read as one text) for up to `wanted` witnesses.
    pub(super) fn search_view(&self, components: &[&Component], wanted: usize) -> Search {
        let key = QueryKey::new(
            self.db,
            view_key(components),
            wanted,
            self.budget.max_states,
            self.components.as_tuple(),
        );
        match search_query(self.db, key) {
            ViewSearch::Empty => Search::Empty,
            ViewSearch::Exhausted => Search::Exhausted,
            ViewSearch::Witnesses(found) => Search::Witnesses(
                found
                    .iter()
                    .map(|w| vec![(TextView::Sanitized, None, w.clone())])
                    .collect(),
            ),
        }
    }

    /// Searches for witnesses of a query: texts for the evidence text's views
    /// ([`Analyzer::search_text`]) and, independently, for each body pointer read
    /// ([`Analyzer::search_pointer`]): the values at two pointers are different texts, so two
    /// rules on different pointers may co-fire. Pointers that overlap (`/a/0/m` and `/a/*/m`)
    /// are searched as independent too, which over-approximates: an empty result is still a
    /// proof, and any witness goes to verification.
    pub(super) fn search(&self, components: &[&Component], wanted: usize) -> Search {
        let text: Vec<&Component> = components
            .iter()
            .copied()
            .filter(|c| c.view != TextView::Body)
            .collect();
        let mut pointers: Vec<(&str, Vec<&Component>)> = Vec::new();
        for component in components.iter().copied() {
            let (TextView::Body, Some(pointer)) = (component.view, &component.pointer) else {
                continue;
            };
            match pointers.iter_mut().find(|(p, _)| p == pointer) {
                Some((_, group)) => group.push(component),
                None => pointers.push((pointer, vec![component])),
            }
        }
        let mut parts: Vec<Vec<Vec<WitnessText>>> = Vec::new();
        if !text.is_empty() || pointers.is_empty() {
            match self.search_text(&text, wanted) {
                Search::Witnesses(found) => parts.push(found),
                other => return other,
            }
        }
        for (pointer, group) in pointers {
            match self.search_pointer(pointer, &group, wanted) {
                Search::Witnesses(found) => parts.push(found),
                other => return other,
            }
        }
        let count = parts.iter().map(Vec::len).max().unwrap_or(0);
        Search::Witnesses(
            (0..count)
                .map(|i| {
                    parts
                        .iter()
                        .filter_map(|found| found.get(i).or_else(|| found.last()))
                        .flatten()
                        .cloned()
                        .collect()
                })
                .collect(),
        )
    }

    /// Searches the values at one body pointer. Without `*` the pointer holds one value, which
    /// must satisfy every component. With `*`, a matcher holds when some element matches and a
    /// veto when some element does: so each matcher needs an element of its own that no veto
    /// matches, and the query is searched that way when one element cannot serve them all.
    fn search_pointer(&self, pointer: &str, components: &[&Component], wanted: usize) -> Search {
        let at_pointer = |found: Vec<Vec<WitnessText>>| -> Vec<Vec<WitnessText>> {
            found
                .into_iter()
                .map(|texts| {
                    texts
                        .into_iter()
                        .map(|(_, _, text)| (TextView::Body, Some(pointer.to_owned()), text))
                        .collect()
                })
                .collect()
        };
        let starred = pointer.split('/').any(|segment| segment == "*");
        let together = self.search_view(components, wanted);
        let musts: Vec<&Component> = components
            .iter()
            .copied()
            .filter(|c| c.polarity == Polarity::Must)
            .collect();
        if !starred || musts.len() < 2 || !matches!(together, Search::Empty) {
            return match together {
                Search::Witnesses(found) => Search::Witnesses(at_pointer(found)),
                other => other,
            };
        }
        let vetoes: Vec<&Component> = components
            .iter()
            .copied()
            .filter(|c| c.polarity == Polarity::MustNot)
            .collect();
        let mut elements: Vec<Vec<Vec<WitnessText>>> = Vec::new();
        for must in musts {
            let query: Vec<&Component> = std::iter::once(must)
                .chain(vetoes.iter().copied())
                .collect();
            match self.search_view(&query, wanted) {
                Search::Witnesses(found) => elements.push(at_pointer(found)),
                other => return other,
            }
        }
        let count = elements.iter().map(Vec::len).max().unwrap_or(0);
        Search::Witnesses(
            (0..count)
                .map(|i| {
                    elements
                        .iter()
                        .filter_map(|found| found.get(i).or_else(|| found.last()))
                        .flatten()
                        .cloned()
                        .collect()
                })
                .collect(),
        )
    }

    /// Searches for one text that every view shows unchanged (so that the witness is the
    /// evidence's text as it is). When the components read both views and no such text exists,
    /// the views are searched as independent texts, which over-approximates: an empty result is
    /// then still a proof, and any witness goes to verification.
    fn search_text(&self, components: &[&Component], wanted: usize) -> Search {
        let one_view = components
            .iter()
            .all(|c| components.first().is_some_and(|first| first.view == c.view));
        let together = self.search_view(components, wanted);
        if one_view || !matches!(together, Search::Empty) {
            return together;
        }
        let mut per_view: Vec<(TextView, Vec<String>)> = Vec::new();
        for view in [TextView::Sanitized, TextView::Raw] {
            let of_view: Vec<&Component> = components
                .iter()
                .copied()
                .filter(|c| c.view == view)
                .collect();
            if of_view.is_empty() {
                continue;
            }
            match self.search_view(&of_view, wanted) {
                Search::Empty => return Search::Empty,
                Search::Exhausted => return Search::Exhausted,
                Search::Witnesses(found) => {
                    per_view.push((
                        view,
                        found
                            .into_iter()
                            .filter_map(|w| w.into_iter().next().map(|(_, _, text)| text))
                            .collect(),
                    ));
                }
            }
        }
        if per_view.is_empty() {
            return Search::Witnesses(vec![Vec::new()]);
        }
        let count = per_view
            .iter()
            .map(|(_, found)| found.len())
            .max()
            .unwrap_or(0);
        let combined = (0..count)
            .map(|i| {
                per_view
                    .iter()
                    .filter_map(|(view, found)| {
                        found
                            .get(i)
                            .or_else(|| found.last())
                            .map(|text| (*view, None, text.clone()))
                    })
                    .collect()
            })
            .collect();
        Search::Witnesses(combined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::AnalysisBudget;
    use crate::db::Database;

    /// One product search over `components` (pattern, must match) in the sanitized view.
    fn search(components: &[(&str, bool)], wanted: usize, max_states: usize) -> ViewSearch {
        let db = Database::default();
        let budget = ComponentBudget::new(&AnalysisBudget::default(), &crate::Budget::default());
        let components: Vec<(String, bool, u8)> = components
            .iter()
            .map(|(pattern, must)| ((*pattern).to_owned(), *must, 0))
            .collect();
        let key = QueryKey::new(&db, components, wanted, max_states, budget.as_tuple());
        search_query(&db, key).clone()
    }

    #[test]
    fn the_witness_is_the_shortest_text_in_preferred_bytes() {
        // Letters are preferred to digits, digits to capitals, all to punctuation.
        assert_eq!(
            search(&[(r"x[a0A!]", true)], 1, 10_000),
            ViewSearch::Witnesses(vec!["xa".to_owned()])
        );
        assert_eq!(
            search(&[(r"[0-9]{3}", true)], 1, 10_000),
            ViewSearch::Witnesses(vec!["000".to_owned()])
        );
    }

    #[test]
    fn a_witness_matches_every_must_and_no_must_not() {
        let ViewSearch::Witnesses(found) = search(
            &[
                ("overloaded", true),
                ("529", true),
                ("not overloaded", false),
            ],
            4,
            100_000,
        ) else {
            panic!("the query is satisfiable");
        };
        assert!(!found.is_empty() && found.len() <= 4, "{found:?}");
        for text in &found {
            assert!(
                text.contains("overloaded") && text.contains("529"),
                "{text:?}"
            );
            assert!(!text.contains("not overloaded"), "{text:?}");
        }
        // Shortest first.
        assert!(
            found.windows(2).all(|w| w[0].len() <= w[1].len()),
            "{found:?}"
        );
    }

    #[test]
    fn contradictions_are_proved_empty() {
        // Anchored to two different whole texts.
        assert_eq!(
            search(&[(r"\Aa\z", true), (r"\Ab\z", true)], 1, 10_000),
            ViewSearch::Empty
        );
        // A veto that every match of the matcher contains.
        assert_eq!(
            search(&[("quota exceeded", true), ("quota", false)], 1, 10_000),
            ViewSearch::Empty
        );
    }

    #[test]
    fn witnesses_are_valid_utf8_text() {
        // Any byte above 0x7f alone would do for the automaton; the UTF-8 component demands
        // whole characters.
        let ViewSearch::Witnesses(found) = search(&[(r"\xE9", true)], 1, 10_000) else {
            panic!("`é` exists");
        };
        assert_eq!(found, ["é"]);
    }

    #[test]
    fn musts_alone_are_joined_and_the_join_is_checked() {
        // Each alone is short; together, the breadth-first search would need both words in one
        // text. The joined witness is each one's own, a line apart.
        assert_eq!(
            search(&[("overloaded", true), ("529", true)], 1, 100_000),
            ViewSearch::Witnesses(vec!["overloaded\n529".to_owned()])
        );
        // `\z` is defeated by the join in the query's order ("a" then "b"), not by the reverse;
        // `\A` likewise needs its part first.
        assert_eq!(
            search(&[(r"a\z", true), ("b", true)], 1, 100_000),
            ViewSearch::Witnesses(vec!["b\na".to_owned()])
        );
        assert_eq!(
            search(&[("b", true), (r"\Aa", true)], 1, 100_000),
            ViewSearch::Witnesses(vec!["a\nb".to_owned()])
        );
        // A whole match of one may hold the other: that part alone is the witness.
        assert_eq!(
            search(&[(r"\Aab\z", true), ("b", true)], 1, 100_000),
            ViewSearch::Witnesses(vec!["ab".to_owned()])
        );
        // Neither order nor either part alone satisfies both: the search finds one text.
        assert_eq!(
            search(&[(r"\Aab", true), (r"\Aa.c", true)], 1, 100_000),
            ViewSearch::Witnesses(vec!["abc".to_owned()])
        );
        // The join never turns an empty query into a witness.
        assert_eq!(
            search(&[(r"\Aa\z", true), (r"\Ab\z", true)], 1, 10_000),
            ViewSearch::Empty
        );
    }

    #[test]
    fn a_pattern_that_cannot_match_from_the_first_byte_is_searched_from_every_position() {
        // `\B` before a word character needs one before it: no text matches from its first
        // byte, so the search from the start finds nothing, and the search from every position
        // finds the witness.
        assert_eq!(
            search(&[(r"(?-u:\B)b", true)], 1, 10_000),
            ViewSearch::Witnesses(vec!["ab".to_owned()])
        );
    }

    #[test]
    fn states_kept_from_earlier_searches_change_no_outcome() {
        // One database: the second round of searches reads the automata (and the states they
        // kept) of the first, in another order.
        let db = Database::default();
        let budget = ComponentBudget::new(&AnalysisBudget::default(), &crate::Budget::default());
        let queries: Vec<Vec<(String, bool, u8)>> = vec![
            vec![
                ("overloaded".into(), true, 0),
                ("not overloaded".into(), false, 0),
            ],
            vec![
                ("quota exceeded".into(), true, 0),
                ("quota".into(), false, 0),
            ],
            vec![
                (r"[a-z]{3}\d".into(), true, 0),
                ("overloaded".into(), false, 0),
            ],
        ];
        let run = |components: &Vec<(String, bool, u8)>, wanted: usize| {
            let key = QueryKey::new(&db, components.clone(), wanted, 100_000, budget.as_tuple());
            breadth_first_of(&db, key)
        };
        let first: Vec<ViewSearch> = queries.iter().map(|q| run(q, 3)).collect();
        let again: Vec<ViewSearch> = queries.iter().rev().map(|q| run(q, 3)).collect();
        assert_eq!(first, again.into_iter().rev().collect::<Vec<_>>());
        assert!(matches!(first.get(1), Some(ViewSearch::Empty)), "{first:?}");
    }

    /// The breadth-first search of a query, run afresh (not memoized).
    fn breadth_first_of(db: &Database, key: QueryKey<'_>) -> ViewSearch {
        let budget = ComponentBudget::from_tuple(*key.component_budget(db));
        let automata: Vec<(Arc<Automaton>, Polarity)> = key
            .components(db)
            .iter()
            .map(|(pattern, must, _)| (pattern.clone(), *must))
            .chain(std::iter::once((UTF8_PATTERN.to_owned(), true)))
            .map(|(pattern, must)| {
                let (automaton, _) = automaton(db, budget.key(db, &pattern)).clone().unwrap();
                let polarity = if must {
                    Polarity::Must
                } else {
                    Polarity::MustNot
                };
                (automaton, polarity)
            })
            .collect();
        breadth_first(
            &automata,
            *key.wanted(db),
            *key.max_states(db),
            Anchored::No,
        )
    }

    #[test]
    fn a_search_over_its_budget_is_exhausted_not_empty() {
        assert_eq!(
            search(&[(r"[a-z]{40}\d", true)], 1, 8),
            ViewSearch::Exhausted
        );
    }
}
