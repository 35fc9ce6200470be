//! The budgets every automaton and regex built from a catalogue's patterns is held to, why an
//! automaton could not be built, and how budgets are quoted in diagnostics.

/// Limits of every automaton and regex built from a catalogue's patterns. Part of the
/// compiler's configuration; the defaults bound what any single pattern can cost (see
/// docs/bundle.md, "Budgets").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// A pattern alone must determinize within this, or its bounded gaps are widened.
    pub pattern_dfa_bytes: usize,
    /// Each DFA of the bundle must fit within this (`--dfa-budget`).
    pub view_dfa_bytes: usize,
    /// Working memory the determinizer may use for one DFA.
    pub determinize_bytes: usize,
    /// Heap one Thompson NFA may use while it is built: repetitions are expanded into copies
    /// (`a{1000}{1000}` is a million), and this stops them before determinization starts.
    pub nfa_bytes: usize,
    /// Size of the compiled program of every `regex` built from a pattern (the exact regexes
    /// that confirm widened patterns and extract captures). Never more than the runtime's
    /// [`faultline_runtime::build::REGEX_SIZE_LIMIT`], under which bundles load.
    pub regex_bytes: usize,
    /// Deepest nesting of groups, repetitions and classes in a pattern (at most
    /// 1,000, `pattern::MAX_NEST_LIMIT`); deeper patterns are FL0027.
    pub nest_limit: u32,
    /// Longest pattern or literal, in bytes: parsing a pattern takes memory in proportion to
    /// its length before any automaton budget applies.
    pub pattern_bytes: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            pattern_dfa_bytes: 4 << 20,
            view_dfa_bytes: 32 << 20,
            determinize_bytes: 128 << 20,
            nfa_bytes: 16 << 20,
            regex_bytes: faultline_runtime::build::REGEX_SIZE_LIMIT,
            nest_limit: crate::pattern::NEST_LIMIT,
            pattern_bytes: 256 << 10,
        }
    }
}

impl Budget {
    /// The regex size limit in force: the configured one, capped at the runtime's.
    pub fn regex_limit(&self) -> usize {
        self.regex_bytes
            .min(faultline_runtime::build::REGEX_SIZE_LIMIT)
    }
}

/// Why an automaton could not be built: the budget it exceeds, or (never for a validated
/// pattern) another problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AutomatonError {
    /// The Thompson NFA exceeds [`Budget::nfa_bytes`].
    #[error("its NFA needs more than the {} NFA budget", bytes(*limit))]
    Nfa {
        /// The budget in force, in bytes.
        limit: usize,
    },
    /// The DFA exceeds its size budget.
    #[error("its DFA needs more than the {} DFA budget", bytes(*limit))]
    Dfa {
        /// The budget in force, in bytes.
        limit: usize,
    },
    /// Determinization needs more working memory than allowed.
    #[error("determinizing it needs more than the {} determinization budget", bytes(*limit))]
    Determinize {
        /// The budget in force, in bytes.
        limit: usize,
    },
    /// The exact regex that confirms or captures its matches exceeds [`Budget::regex_bytes`].
    #[error("its exact regex needs more than the {} regex budget", bytes(*limit))]
    Regex {
        /// The budget in force, in bytes.
        limit: usize,
    },
    /// Anything else (a pattern that does not parse).
    #[error("{0}")]
    Other(String),
}

/// A count with thousands separators: `33,554,432`.
pub fn grouped(count: usize) -> String {
    let digits = count.to_string();
    let mut grouped = String::new();
    for (position, digit) in digits.chars().enumerate() {
        if position > 0 && (digits.len() - position).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// A byte budget as people read it: `33,554,432-byte (32 MiB)`.
pub fn bytes(count: usize) -> String {
    let grouped = grouped(count);
    if count >= 1 << 20 && count.is_multiple_of(1 << 20) {
        format!("{grouped}-byte ({} MiB)", count >> 20)
    } else if count >= 1 << 10 && count.is_multiple_of(1 << 10) {
        format!("{grouped}-byte ({} KiB)", count >> 10)
    } else {
        format!("{grouped}-byte")
    }
}

/// The limits one automaton is built under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Size of the DFA.
    pub dfa: usize,
    /// Working memory of the determinizer.
    pub determinize: usize,
    /// Heap of the Thompson NFA.
    pub nfa: usize,
}
