//! The faultline runtime: what an orchestrator links to classify agent and provider failures.
//!
//! This crate depends on neither the catalogue language (`faultline-dsl`) nor the compiler
//! (`faultline-compiler`). It owns the closed vocabularies that evidence and classifications are
//! written in ([`vocab`]); the catalogue checker validates `.rules` files against these same
//! lists, so a name the runtime does not know can never reach a compiled bundle.

pub mod vocab;

pub use vocab::{
    Class, Confidence, EvidenceField, Flag, Phase, Scope, Source, TextView, TimingExtractor,
};
