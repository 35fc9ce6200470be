//! The faultline compiler: checks a catalogue and (in later stages) lowers it to automata.
//!
//! Pipeline: `.rules` source → syntax tree (`faultline-dsl`) → checked catalogue ([`check`],
//! [`ir`]) → priority order and collision analysis → automata → bundle. Each stage reports in
//! the one diagnostic vocabulary of `faultline_dsl::Code`.
//!
//! - [`check`] resolves names against the runtime's vocabularies and validates every value;
//! - [`pattern`] validates regexes and lowers them to RE2 semantics (ASCII `\b`, `\d`, `\s`,
//!   `\w`), the form every engine compiles.

mod check;
pub mod ir;
pub mod pattern;
mod suggest;

pub use check::{Checked, MAX_EXCERPT_BYTES, MAX_RANK, check};
