//! The producer's entry point: what the compiler needs to write a bundle, and nothing an
//! orchestrator links. Compiled only with the `bundle-writer` feature (off by default; the
//! compiler, the bundle tests and the fuzz targets enable it).
//!
//! - [`write()`] and [`BundleContents`]: the writer. It takes what the compiler knows (catalogue
//!   name and version, compiler version, source-manifest hash, the catalogue model, the
//!   serialized automata) and stamps the format version, the minimum reader version, the
//!   regex-automata serialization family and the content hash itself.
//! - The catalogue model ([`CatalogueModel`] and its entries): the rules in effective priority
//!   order as the bundle carries them. Only the compiler builds one; readers see it through
//!   [`crate::Bundle`]'s views.
//! - The limits the loader compiles patterns under ([`REGEX_SIZE_LIMIT`],
//!   [`REGEX_DFA_SIZE_LIMIT`]), which the compiler checks every pattern against so that a bundle
//!   it accepts always loads, and the words and texts the redaction introduces
//!   ([`INTRODUCED_WORDS`], [`INTRODUCED_TEXTS`]), which a prefilter literal must never require
//!   ([`joined_literal_is_raw`]).
//! - A pattern compiled as a bundle compiles it ([`PatternRegex`]): the compiler compiles every
//!   regex to prove it fits the limits, and the bundle it loads to run the examples adopts those
//!   ([`adopt_regexes`]) rather than compile each again.
//! - The format's constants and its content hash, for tests that damage a bundle on purpose
//!   and reseal it ([`content_hash`], [`HASH_RANGE`]).

pub use crate::bundle::model::{
    CatalogueModel, CodeEntry, DfaEntry, DfaSlot, GuardsEntry, KeyedGuardEntry, LiteralEntry,
    MatcherEntry, MatcherKindEntry, PatternEntry, RemediationEntry, RequirementEntry, RuleEntry,
    ViewEntry,
};
pub use crate::bundle::wire::{
    FORMAT_VERSION, HASH_RANGE, MAGIC, OLDEST_READABLE_VERSION, READER_VERSION,
    REGEX_AUTOMATA_FAMILY,
};
pub use crate::bundle::write::{BundleContents, WriteError, write};
pub use crate::bundle::{REGEX_DFA_SIZE_LIMIT, REGEX_SIZE_LIMIT};
pub use crate::sanitize::{INTRODUCED_TEXTS, INTRODUCED_WORDS, joined_literal_is_raw};

/// A pattern compiled as a bundle compiles its regexes on first use, for a compiler that checks
/// every pattern against [`REGEX_SIZE_LIMIT`] by compiling it and would have the bundle it loads
/// compile it again: [`adopt_regexes`] hands the compiled form over. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PatternRegex {
    regex: regex::Regex,
}

/// Why a pattern does not compile as a bundle's regex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternRegexError {
    /// Its program exceeds the size limit (in bytes).
    #[error("the compiled regex exceeds the size limit of {limit} bytes")]
    TooBig {
        /// The limit it exceeds.
        limit: usize,
    },
    /// It does not parse, or nests deeper than the limit.
    #[error("{0}")]
    Invalid(String),
}

impl PatternRegex {
    /// Compiles `pattern` as a bundle would (under a `size_limit` of at most
    /// [`REGEX_SIZE_LIMIT`] and a `nest_limit` of the caller's choice: either only refuses
    /// more patterns, never changes what one compiles to).
    pub fn compile(
        pattern: &str,
        size_limit: usize,
        nest_limit: u32,
    ) -> Result<PatternRegex, PatternRegexError> {
        crate::bundle::build_regex(pattern, size_limit.min(REGEX_SIZE_LIMIT), nest_limit)
            .map(|regex| PatternRegex { regex })
            .map_err(|error| match error {
                regex::Error::CompiledTooBig(limit) => PatternRegexError::TooBig { limit },
                other => PatternRegexError::Invalid(other.to_string()),
            })
    }

    /// The pattern it was compiled from.
    pub fn pattern(&self) -> &str {
        self.regex.as_str()
    }
}

/// Gives each regex of `bundle` whose pattern `compiled` returns a [`PatternRegex`] for that
/// compiled form, so that its first use does not compile it again. A returned regex of another
/// pattern is ignored.
pub fn adopt_regexes(
    bundle: &crate::Bundle,
    mut compiled: impl FnMut(&str) -> Option<PatternRegex>,
) {
    bundle.adopt_regexes(&mut |pattern| {
        compiled(pattern)
            .filter(|found| found.pattern() == pattern)
            .map(|found| found.regex)
    });
}

/// The content hash of a bundle's bytes: SHA-256 of every byte except the hash field
/// ([`HASH_RANGE`]). `None` when the bytes are too short to hold that field.
pub fn content_hash(bytes: &[u8]) -> Option<[u8; 32]> {
    crate::bundle::wire::content_hash(bytes).ok()
}
