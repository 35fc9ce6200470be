//! The faultline compiler: from a checked catalogue to a verified bundle.
//!
//! Pipeline, one private module per stage: `.rules` source → syntax tree (`faultline-dsl`) →
//! checked catalogue (`check`, [`ir`]) → effective priority order ([`priority`]) → automata and
//! bundle (`lower`, written by the runtime's bundle writer) → inline examples run through the
//! reloaded bundle and collision analysis over the automata (`analysis`). Beside them, `pattern`
//! validates regexes and lowers them to RE2 semantics (ASCII `\b`, `\d`, `\s`, `\w`), the form
//! every engine compiles; `literals` derives each rule's required words for the runtime
//! prefilter; `db` holds the incremental queries.
//!
//! The API is the pipeline's entry points: a [`Compiler`] (with its [`Budget`] and
//! [`AnalysisBudget`]) runs it all once and returns a [`Compilation`]; a [`CompileSession`]
//! keeps its work across compilations; [`check`] runs the front end alone; [`Priority`] is the
//! effective order, [`Compiler::pair_verdict`] the analysis's [`PairVerdict`] on two rules. Every
//! stage reports in the one diagnostic vocabulary of `faultline_dsl::Code`.
//!
//! With the `testing` feature, `reference` is the simplest possible evaluation of a catalogue,
//! the twin the compiled bundle is tested against, and `synthetic` generates catalogues of any
//! size for benchmarks and scale tests.

mod analysis;
mod check;
mod compile;
mod db;
pub mod ir;
mod literals;
mod lower;
mod parallel;
mod pattern;
pub mod priority;
#[cfg(feature = "testing")]
pub mod reference;
mod suggest;
#[cfg(feature = "testing")]
pub mod synthetic;
#[cfg(test)]
mod test_support;

pub use analysis::{AnalysisBudget, PairVerdict};
pub use check::{Checked, MAX_EXCERPT_BYTES, MAX_RANK, check};
pub use compile::{Compilation, CompileSession, Compiler, manifest_hash};
pub use ir::RuleIndex;
pub use lower::{Budget, PatternReport};
pub use priority::{Position, Priority};
