//! The bundle's DFAs, read where they lie: the DFA sections are copied once into 4-aligned
//! memory (regex-automata reads transitions as `u32`s, and a caller's bytes may lie anywhere),
//! and every DFA borrows its tables from that one buffer.
//!
//! Before, each section was copied to aligned memory and then again into a DFA of its own, so
//! loading held every table twice and copied it twice. Every DFA is still deserialized by
//! regex-automata's checked deserializer, which validates every transition.

use std::ops::Range;

use regex_automata::dfa::dense;
use self_cell::self_cell;

use super::LoadError;
use super::error::Repr;

type Dfas<'words> = Vec<dense::DFA<&'words [u32]>>;

self_cell!(
    /// The DFA sections in one aligned buffer, and the DFAs reading it.
    pub(super) struct Automata {
        owner: Vec<u32>,
        #[covariant]
        dependent: Dfas,
    }

    impl {Debug}
);

impl Automata {
    /// Copies `sections` (bundle sections 1.. in order) into one aligned buffer and
    /// deserializes each, checked.
    pub(super) fn load(sections: &[&[u8]]) -> Result<Automata, LoadError> {
        // Each section starts at a word boundary of the buffer.
        let mut ranges: Vec<Range<usize>> = Vec::with_capacity(sections.len());
        let mut words_needed = 0usize;
        for section in sections {
            let start = words_needed * 4;
            ranges.push(start..start + section.len());
            words_needed += section.len().div_ceil(4);
        }
        let mut words = vec![0u32; words_needed];
        let buffer: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        for (section, range) in sections.iter().zip(&ranges) {
            if let Some(target) = buffer.get_mut(range.clone()) {
                target.copy_from_slice(section);
            }
        }
        Automata::try_new(words, |words| {
            let buffer: &[u8] = bytemuck::cast_slice(words);
            ranges
                .iter()
                .enumerate()
                .map(|(index, range)| deserialize(index + 1, buffer.get(range.clone())))
                .collect()
        })
    }

    /// The DFAs, in section order (section `i + 1` is DFA `i`).
    pub(super) fn all(&self) -> &[dense::DFA<&[u32]>] {
        self.borrow_dependent()
    }
}

/// Deserializes bundle section `section`, which must be exactly one DFA.
fn deserialize(section: usize, bytes: Option<&[u8]>) -> Result<dense::DFA<&[u32]>, LoadError> {
    let automaton_error = |message: String| LoadError::from(Repr::Automaton { section, message });
    let bytes = bytes.ok_or_else(|| automaton_error("section out of range".to_owned()))?;
    let (dfa, read) =
        dense::DFA::from_bytes(bytes).map_err(|error| automaton_error(error.to_string()))?;
    if read != bytes.len() {
        return Err(automaton_error(format!(
            "{} trailing bytes",
            bytes.len() - read
        )));
    }
    Ok(dfa)
}
