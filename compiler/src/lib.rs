//! The faultline compiler: from a checked catalogue to a verified bundle.
//!
//! Pipeline: `.rules` source → syntax tree (`faultline-dsl`) → checked catalogue ([`check`],
//! [`ir`]) → effective priority order ([`priority`]) → automata and bundle ([`lower`], written
//! by the runtime's bundle writer) → inline examples run through the reloaded bundle and
//! collision analysis over the automata ([`analysis`]). [`Compiler`] runs it all; each stage
//! reports in the one diagnostic vocabulary of `faultline_dsl::Code`.
//!
//! - [`mod@pattern`] validates regexes and lowers them to RE2 semantics (ASCII `\b`, `\d`, `\s`,
//!   `\w`), the form every engine compiles;
//! - [`mod@literals`] derives each rule's required words for the runtime prefilter;
//! - [`mod@reference`] is the simplest possible evaluation of a catalogue, the twin the compiled
//!   bundle is tested against.

pub mod analysis;
mod check;
mod compile;
pub mod db;
pub mod ir;
pub mod literals;
pub mod lower;
pub mod pattern;
pub mod priority;
pub mod reference;
mod suggest;
pub mod synthetic;

pub use analysis::AnalysisBudget;
pub use check::{Checked, LowerFn, MAX_EXCERPT_BYTES, MAX_RANK, check, check_with, check_within};
pub use compile::{Compilation, Compiler, Session, example_evidence, manifest_hash};
pub use lower::Budget;
