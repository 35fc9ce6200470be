//! The faultline runtime: what an orchestrator links to classify agent and provider failures.
//!
//! - [`Bundle`]: a compiled catalogue, loaded from untrusted bytes with every byte validated;
//!   [`Bundle::classify`] maps [`Evidence`] to a [`Classification`], always.
//! - [`sanitize`]: the redaction tiers rules are written against.
//! - [`text`]: the text rules read (the bounded tail of the evidence, in both views) and the
//!   excerpt a classification reports.
//! - [`timing`]: reset times, structured or read from the text, validated against a clock.
//! - [`vocab`]: the closed vocabularies evidence and classifications are written in; the
//!   catalogue checker validates `.rules` files against these same lists.
//!
//! This crate depends on neither the catalogue language (`faultline-dsl`) nor the compiler
//! (`faultline-compiler`), and it only *searches* automata: building them is the compiler's job.

pub mod bundle;
mod evidence;
pub mod sanitize;
pub mod text;
pub mod timing;
pub mod vocab;

pub use bundle::{Bundle, BundleError};
pub use evidence::{Classification, Evidence};
pub use text::TextViews;
pub use vocab::{
    Class, Confidence, EvidenceField, Flag, Phase, Scope, Source, TextView, TimingExtractor,
};
