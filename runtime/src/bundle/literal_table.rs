//! The prefilter's literal automaton as the bundle carries it (format 9): a transition table
//! read at load instead of an Aho-Corasick DFA built at every load.
//!
//! Building the DFA over the catalogue's 1,700-odd literals was the longest part of loading a
//! bundle (about 28 ms of the repository bundle's load, on a second thread), and the
//! aho-corasick crate cannot serialize an automaton. So the writer builds that DFA, as the loader
//! did, and records it: every state reachable from the unanchored start, its transition on every
//! class of bytes, and the literals that end in it. The loader copies the table and checks every
//! entry (a transition to a state that exists, a class for every byte, a literal for every match);
//! the walk is one table read a byte. A bundle whose table section is empty (no literals, or a
//! writer that could not build the DFA) gets the automaton built at load, as before format 9.
//!
//! ```text
//! word (u32 LE)  field
//!      0         entry width in bytes: 2 (every state index fits in a u16) or 4
//!      1         state count S (at least 1)
//!      2         byte-class count C (1 to 256)
//!      3         row shift K: a state's row is the 2^K entries from index s·2^K (C ≤ 2^K ≤ 256)
//!      4         start state (< S)
//!      5         match-state count M (≤ S): states 0..M are those where a literal ends
//!      6         literal count P: the prefilter's literal patterns, numbered as the loader numbers them
//!      7         match-entry count E
//!  8..72         the byte classes, one byte each (< C), for bytes 0..=255
//!     72         match offsets: M + 1 u32s, from 0, strictly increasing, the last E
//!      …         match entries: E u32s, literal patterns (< P); state s's are offsets[s]..offsets[s + 1]
//!      …         transitions: S·2^K entries of the entry width (< S); entries for classes ≥ C are 0
//! ```

use std::ops::ControlFlow;

use super::LoadError;

/// Words before the byte classes.
const HEADER_WORDS: usize = 8;
/// The byte classes, 256 bytes.
const CLASS_WORDS: usize = 64;

/// A state's transitions, as stored: narrow when every state index fits in 16 bits (half the
/// memory, and the table the walk reads stays twice as long in cache).
#[derive(Debug)]
enum Transitions {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

/// A state index in a transition table.
trait Entry: Copy {
    fn index(self) -> usize;
}

impl Entry for u16 {
    fn index(self) -> usize {
        usize::from(self)
    }
}

impl Entry for u32 {
    fn index(self) -> usize {
        self as usize
    }
}

/// The literal automaton: walk it over a text to learn which literals occur.
#[derive(Debug)]
pub(super) struct LiteralTable {
    classes: [u8; 256],
    shift: usize,
    start: usize,
    match_states: usize,
    match_offsets: Vec<u32>,
    match_patterns: Vec<u32>,
    transitions: Transitions,
    /// How many literal patterns the table reports (every reported pattern is below it).
    literal_count: usize,
}

/// Reads the little-endian u32 words of `bytes` (whose length is a multiple of 4).
fn words(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes.chunks_exact(4).map(|word| {
        word.iter()
            .rev()
            .fold(0u32, |value, byte| value << 8 | u32::from(*byte))
    })
}

impl LiteralTable {
    /// Reads and checks a table section. `Ok(None)` for an empty section: the bundle carries
    /// no table. It needs nothing but its own bytes (so it can be read while the catalogue
    /// model is decoded); [`LiteralTable::check_literal_count`] then checks it against the
    /// prefilter.
    pub(super) fn from_bytes(bytes: &[u8]) -> Result<Option<LiteralTable>, LoadError> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let malformed =
            |what: &str| LoadError::malformed(format!("prefilter literal table: {what}"));
        let header_bytes = (HEADER_WORDS + CLASS_WORDS) * 4;
        let (header, rest) = bytes
            .split_at_checked(header_bytes)
            .ok_or_else(|| malformed("shorter than its header"))?;
        let mut fields = words(header);
        let mut field = || fields.next().map_or(0, |word| word as usize);
        let (width, states, class_count, shift, start, match_states, literal_count, entries) = (
            field(),
            field(),
            field(),
            field(),
            field(),
            field(),
            field(),
            field(),
        );
        if width != 2 && width != 4 {
            return Err(malformed(&format!("entry width {width}, not 2 or 4")));
        }
        if states == 0 || (width == 2 && states > usize::from(u16::MAX) + 1) {
            return Err(malformed(&format!(
                "{states} states for {width}-byte entries"
            )));
        }
        if class_count == 0 || shift > 8 || class_count > 1 << shift {
            return Err(malformed(&format!(
                "{class_count} byte classes in rows of 2^{shift}"
            )));
        }
        if start >= states || match_states > states {
            return Err(malformed("a start or match-state count beyond the states"));
        }
        let mut classes = [0u8; 256];
        let class_bytes = header.get(HEADER_WORDS * 4..).unwrap_or_default();
        for (class, byte) in classes.iter_mut().zip(class_bytes) {
            if usize::from(*byte) >= class_count {
                return Err(malformed("a byte class beyond the class count"));
            }
            *class = *byte;
        }
        let row = 1usize << shift;
        let transition_count = states
            .checked_mul(row)
            .ok_or_else(|| malformed("too many transitions"))?;
        let offsets_bytes = (match_states + 1) * 4;
        let expected = offsets_bytes
            .checked_add(
                entries
                    .checked_mul(4)
                    .ok_or_else(|| malformed("too many matches"))?,
            )
            .and_then(|matches| matches.checked_add(transition_count.checked_mul(width)?))
            .ok_or_else(|| malformed("too large"))?;
        if rest.len() != expected {
            return Err(malformed(&format!(
                "{} bytes after the header; its counts need {expected}",
                rest.len()
            )));
        }
        let (offset_bytes, rest) = rest.split_at(offsets_bytes);
        let (entry_bytes, transition_bytes) = rest.split_at(entries * 4);
        let match_offsets: Vec<u32> = words(offset_bytes).collect();
        let increasing = match_offsets
            .windows(2)
            .all(|pair| pair.first() < pair.get(1));
        if match_offsets.first() != Some(&0)
            || match_offsets.last().map(|last| *last as usize) != Some(entries)
            || !increasing
        {
            return Err(malformed(
                "match offsets that do not rise from 0 to the entry count",
            ));
        }
        let match_patterns: Vec<u32> = words(entry_bytes).collect();
        if match_patterns
            .iter()
            .any(|pattern| *pattern as usize >= literal_count)
        {
            return Err(malformed(
                "a match of a literal the prefilter does not have",
            ));
        }
        let transitions = if width == 2 {
            let mut table = vec![0u16; transition_count];
            bytemuck::cast_slice_mut(&mut table).copy_from_slice(transition_bytes);
            table
                .iter_mut()
                .for_each(|entry| *entry = u16::from_le(*entry));
            // A maximum, not a search for the first bad entry: it vectorizes, and a good table
            // (the usual case) is read whole either way.
            let largest = table.iter().copied().fold(0, u16::max);
            if usize::from(largest) >= states {
                return Err(malformed("a transition to a state that does not exist"));
            }
            Transitions::Narrow(table)
        } else {
            let mut table = vec![0u32; transition_count];
            bytemuck::cast_slice_mut(&mut table).copy_from_slice(transition_bytes);
            table
                .iter_mut()
                .for_each(|entry| *entry = u32::from_le(*entry));
            let largest = table.iter().copied().fold(0, u32::max);
            if largest as usize >= states {
                return Err(malformed("a transition to a state that does not exist"));
            }
            Transitions::Wide(table)
        };
        Ok(Some(LiteralTable {
            classes,
            shift,
            start,
            match_states,
            match_offsets,
            match_patterns,
            transitions,
            literal_count,
        }))
    }

    /// Checks that the table reports the prefilter's `patterns` literal patterns, no more and
    /// no fewer.
    pub(super) fn check_literal_count(&self, patterns: usize) -> Result<(), LoadError> {
        if self.literal_count == patterns {
            Ok(())
        } else {
            Err(LoadError::malformed(format!(
                "prefilter literal table: {} literals; the prefilter has {patterns}",
                self.literal_count
            )))
        }
    }

    /// Gives `visit` the pattern of every literal occurrence in `text`, in the order their ends
    /// are read (the literals ending at one byte in the order the Aho-Corasick DFA lists them),
    /// until it answers `Break` (which is then returned).
    pub(super) fn walk(
        &self,
        text: &[u8],
        visit: impl FnMut(usize) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        match &self.transitions {
            Transitions::Narrow(table) => self.walk_table(table, text, visit),
            Transitions::Wide(table) => self.walk_table(table, text, visit),
        }
    }

    fn walk_table<E: Entry>(
        &self,
        table: &[E],
        text: &[u8],
        mut visit: impl FnMut(usize) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut state = self.start;
        // An empty literal matches before the first byte.
        self.matches_at(state, &mut visit)?;
        for &byte in text {
            let class = self.classes.get(usize::from(byte)).copied().unwrap_or(0);
            // Every entry was checked at load, so the lookup never misses; were it to, the
            // start state is a safe place to go on from.
            state = table
                .get(state << self.shift | usize::from(class))
                .map_or(self.start, |next| next.index());
            if state < self.match_states {
                self.matches_at(state, &mut visit)?;
            }
        }
        ControlFlow::Continue(())
    }

    fn matches_at(
        &self,
        state: usize,
        visit: &mut impl FnMut(usize) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if state >= self.match_states {
            return ControlFlow::Continue(());
        }
        let (Some(from), Some(to)) = (
            self.match_offsets.get(state),
            self.match_offsets.get(state + 1),
        ) else {
            return ControlFlow::Continue(());
        };
        for pattern in self
            .match_patterns
            .get(*from as usize..*to as usize)
            .unwrap_or_default()
        {
            visit(*pattern as usize)?;
        }
        ControlFlow::Continue(())
    }

    /// Bytes of memory the table holds.
    pub(super) fn memory_usage(&self) -> usize {
        let transitions = match &self.transitions {
            Transitions::Narrow(table) => table.len() * 2,
            Transitions::Wide(table) => table.len() * 4,
        };
        256 + (self.match_offsets.len() + self.match_patterns.len()) * 4 + transitions
    }
}

/// Builds the table section for `literals` (the prefilter's literal patterns, in its order),
/// from the Aho-Corasick DFA the loader would otherwise build. Empty when there are no literals
/// or that DFA cannot be built: the loader then builds its automaton itself.
#[cfg(feature = "bundle-writer")]
pub(crate) fn build(literals: &[&str]) -> Vec<u8> {
    use aho_corasick::automaton::{Automaton, StateID};
    use aho_corasick::dfa::DFA;
    use aho_corasick::{Anchored, MatchKind};
    use rustc_hash::FxHashMap as HashMap;

    if literals.is_empty() {
        return Vec::new();
    }
    let Ok(dfa) = DFA::builder()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .prefilter(false)
        .build(literals)
    else {
        return Vec::new();
    };
    let Ok(start) = dfa.start_state(Anchored::No) else {
        return Vec::new();
    };
    // Every state reachable from the start, breadth first.
    let mut reached: Vec<StateID> = vec![start];
    // FxHash: every state is looked up twice per byte, and with SipHash this function, which runs
    // on one thread, took 3% of a check of the repository catalogue, most of it hashing (perf).
    let mut number: HashMap<StateID, usize> = HashMap::default();
    number.insert(start, 0);
    let mut next_to_visit = 0;
    while let Some(&state) = reached.get(next_to_visit) {
        next_to_visit += 1;
        for byte in 0..=u8::MAX {
            let next = dfa.next_state(Anchored::No, state, byte);
            number.entry(next).or_insert_with(|| {
                reached.push(next);
                reached.len() - 1
            });
        }
    }
    // Two bytes share a class when every state moves the same way on both: the classes are
    // refined state by state (memory for 256 bytes, not for a column of every state per byte).
    let mut classes = [0u8; 256];
    let mut class_count = 1;
    let mut refined: HashMap<(u8, usize), u8> = HashMap::default();
    for state in &reached {
        refined.clear();
        for (byte, class) in (0..=u8::MAX).zip(classes.iter_mut()) {
            let next = number
                .get(&dfa.next_state(Anchored::No, *state, byte))
                .copied()
                .unwrap_or(0);
            let count = refined.len();
            // At most 256 classes, numbered from 0 in the order of their first byte.
            *class = *refined
                .entry((*class, next))
                .or_insert_with(|| u8::try_from(count).unwrap_or(u8::MAX));
        }
        class_count = refined.len();
    }
    let mut representatives: Vec<u8> = Vec::with_capacity(class_count);
    for (byte, class) in (0..=u8::MAX).zip(classes) {
        if usize::from(class) == representatives.len() {
            representatives.push(byte);
        }
    }
    // Match states first, so that the walk tells them by one comparison.
    let mut order: Vec<usize> = (0..reached.len()).collect();
    order.sort_by_key(|state| reached.get(*state).is_none_or(|id| !dfa.is_match(*id)));
    let mut renumbered = vec![0usize; reached.len()];
    for (new, old) in order.iter().enumerate() {
        if let Some(slot) = renumbered.get_mut(*old) {
            *slot = new;
        }
    }
    let states: Vec<StateID> = order
        .iter()
        .filter_map(|old| reached.get(*old).copied())
        .collect();
    let match_states = states.iter().filter(|state| dfa.is_match(**state)).count();
    let shift = representatives.len().next_power_of_two().trailing_zeros();
    let narrow = states.len() <= usize::from(u16::MAX) + 1;
    let mut offsets = vec![0u32];
    let mut entries: Vec<u32> = Vec::new();
    for state in states.iter().take(match_states) {
        for index in 0..dfa.match_len(*state) {
            entries.push(dfa.match_pattern(*state, index).as_u32());
        }
        offsets.push(entries.len() as u32);
    }
    let mut out: Vec<u8> = Vec::new();
    let mut put = |word: usize| out.extend_from_slice(&(word as u32).to_le_bytes());
    for field in [
        if narrow { 2 } else { 4 },
        states.len(),
        representatives.len(),
        shift as usize,
        renumbered.first().copied().unwrap_or(0),
        match_states,
        literals.len(),
        entries.len(),
    ] {
        put(field);
    }
    out.extend_from_slice(&classes);
    for word in offsets.iter().chain(&entries) {
        out.extend_from_slice(&word.to_le_bytes());
    }
    for state in &states {
        let row = (0..1usize << shift).map(|class| {
            representatives
                .get(class)
                .and_then(|byte| number.get(&dfa.next_state(Anchored::No, *state, *byte)))
                .and_then(|old| renumbered.get(*old))
                .copied()
                .unwrap_or(0)
        });
        for next in row {
            if narrow {
                out.extend_from_slice(&(next as u16).to_le_bytes());
            } else {
                out.extend_from_slice(&(next as u32).to_le_bytes());
            }
        }
    }
    out
}

#[cfg(test)]
#[cfg(feature = "bundle-writer")]
mod tests {
    use super::*;
    use crate::literal_walk::LiteralWalk;
    use aho_corasick::MatchKind;
    use aho_corasick::dfa::DFA;
    use proptest::prelude::*;

    /// Reads a table section as the loader does for a prefilter of `patterns` literals.
    fn read_for(section: &[u8], patterns: usize) -> Result<Option<LiteralTable>, LoadError> {
        let table = LiteralTable::from_bytes(section)?;
        if let Some(table) = &table {
            table.check_literal_count(patterns)?;
        }
        Ok(table)
    }

    fn table_walked(table: &LiteralTable, text: &[u8]) -> Vec<usize> {
        let mut seen = Vec::new();
        let _ = table.walk(text, |pattern| {
            seen.push(pattern);
            ControlFlow::Continue(())
        });
        seen
    }

    /// What the loader walks for a bundle without a table.
    fn dfa_walked(literals: &[String], text: &[u8]) -> Vec<usize> {
        let dfa = DFA::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .prefilter(false)
            .build(literals)
            .unwrap();
        let mut seen = Vec::new();
        let _ = LiteralWalk::new(dfa).unwrap().walk(text, |pattern| {
            seen.push(pattern);
            ControlFlow::Continue(())
        });
        seen
    }

    fn section(literals: &[String]) -> Vec<u8> {
        build(&literals.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// The same table with 4-byte entries (the writer uses them only past 65,536 states).
    fn widened(section: &[u8]) -> Vec<u8> {
        let word = |index: usize| {
            u32::from_le_bytes(section[index * 4..index * 4 + 4].try_into().unwrap()) as usize
        };
        assert_eq!(word(0), 2, "a narrow table");
        let transitions = word(1) << word(3);
        let start = section.len() - transitions * 2;
        let mut wide = section[..start].to_vec();
        wide[..4].copy_from_slice(&4u32.to_le_bytes());
        for entry in section[start..].chunks_exact(2) {
            let entry = u16::from_le_bytes([entry[0], entry[1]]);
            wide.extend_from_slice(&u32::from(entry).to_le_bytes());
        }
        wide
    }

    proptest! {
        /// The table the writer records reports, byte for byte, what the Aho-Corasick DFA it
        /// was built from reports (every literal occurrence, in order), narrow or wide.
        #[test]
        fn the_table_walks_as_the_automaton_it_was_built_from(
            literals in prop::collection::vec("[abAB/\\-é雪]{1,4}", 1..12),
            text in "[abAB/ \\-é雪x]{0,64}",
        ) {
            let expected = dfa_walked(&literals, text.as_bytes());
            let section = section(&literals);
            let narrow = read_for(&section, literals.len()).unwrap().unwrap();
            prop_assert_eq!(&table_walked(&narrow, text.as_bytes()), &expected);
            let wide = read_for(&widened(&section), literals.len()).unwrap().unwrap();
            prop_assert_eq!(&table_walked(&wide, text.as_bytes()), &expected);
        }

        /// A damaged table is refused with an error, or read as a table that walks without
        /// panicking: never a crash.
        #[test]
        fn a_damaged_table_is_refused_or_walks(
            position in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            text in "[ab/ -]{0,32}",
        ) {
            let literals = ["ab".to_owned(), "b/".to_owned(), "a-b".to_owned()];
            let mut section = section(&literals);
            let at = position.index(section.len());
            section[at] = byte;
            if let Ok(Some(table)) = read_for(&section, literals.len()) {
                let walked = table_walked(&table, text.as_bytes());
                prop_assert!(walked.iter().all(|pattern| *pattern < literals.len()));
            }
        }
    }

    #[test]
    fn an_empty_section_is_no_table() {
        assert!(LiteralTable::from_bytes(&[]).unwrap().is_none());
        assert!(build(&[]).is_empty());
    }

    #[test]
    fn a_table_that_breaks_its_counts_is_refused_saying_what() {
        let literals = ["rate".to_owned(), "limit".to_owned(), "i/o".to_owned()];
        let good = section(&literals);
        let header = (HEADER_WORDS + CLASS_WORDS) * 4;
        let set_word = |index: usize, value: u32| {
            let mut section = good.clone();
            section[index * 4..index * 4 + 4].copy_from_slice(&value.to_le_bytes());
            section
        };
        let states = u32::from_le_bytes(good[4..8].try_into().unwrap());
        let mut last_transition = good.clone();
        let end = last_transition.len();
        last_transition[end - 2..].copy_from_slice(&(states as u16).to_le_bytes());
        let mut class = good.clone();
        class[HEADER_WORDS * 4 + usize::from(b'r')] = 200;
        let mut pattern = good.clone();
        let match_states = u32::from_le_bytes(good[20..24].try_into().unwrap()) as usize;
        let first_entry = header + (match_states + 1) * 4;
        pattern[first_entry..first_entry + 4].copy_from_slice(&7u32.to_le_bytes());
        let cases = [
            ("shorter than its header", good[..header - 1].to_vec()),
            ("entry width 3", set_word(0, 3)),
            ("states for 2-byte entries", set_word(1, 70_000)),
            ("byte classes in rows", set_word(2, 300)),
            ("beyond the states", set_word(4, states)),
            ("3 literals; the prefilter has 4", good.clone()),
            ("bytes after the header", good[..good.len() - 2].to_vec()),
            (
                "a transition to a state that does not exist",
                last_transition,
            ),
            ("a byte class beyond the class count", class),
            ("a match of a literal the prefilter does not have", pattern),
        ];
        for (expected, section) in cases {
            let patterns = if expected.starts_with("3 literals") {
                4
            } else {
                3
            };
            let error = read_for(&section, patterns).unwrap_err().to_string();
            assert!(
                error.contains("prefilter literal table"),
                "{expected}: {error}"
            );
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn a_break_stops_the_walk() {
        let table = read_for(&section(&["a".to_owned()]), 1).unwrap().unwrap();
        let mut seen = 0;
        let flow = table.walk(b"aaaa", |_| {
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
