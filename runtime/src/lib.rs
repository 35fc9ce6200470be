//! The faultline runtime: what an orchestrator links to classify agent and provider failures.
//!
//! Its public API is the product, and only that:
//!
//! - **Loading**: [`Bundle::from_bytes`] loads a compiled catalogue from untrusted bytes with
//!   every byte validated, or fails with a [`LoadError`] (its [`LoadError::kind`] a
//!   [`LoadErrorKind`]). A [`Bundle`] is `Send + Sync`: load one, share it.
//! - **Classification**: [`Bundle::classify`] (or [`Bundle::classify_at`], with a fixed clock)
//!   maps [`Evidence`] to a [`Classification`], always; [`Bundle::may_classify`] is the cheap
//!   gate for hot paths. Text that falls to a low-confidence rule as given is read again
//!   without the wrapping a logger or a quoting user put around its lines ([`Unwrapping`],
//!   [`Evidence::unwrapped`]). Both are written in the closed vocabularies [`Phase`], [`Source`],
//!   [`Class`], [`Confidence`], [`Scope`], [`EvidenceField`], [`TextView`],
//!   [`TimingExtractor`] and [`Flag`], which the catalogue checker validates `.rules` files
//!   against. Structured evidence, the provider's response [`Headers`] and error [`Body`], is
//!   bounded and stripped of credentials as it is ingested.
//! - **Explanation**: [`Bundle::classify_traced`] also returns a [`Trace`] (a [`Step`] per rule
//!   and the [`HintStep`]s of the timing stage); [`Bundle::header`], [`Bundle::rules`] and
//!   [`Bundle::automata`] are read-only views of what a bundle holds ([`HeaderView`],
//!   [`RuleView`] at a [`RulePosition`], [`MatcherView`], [`PatternView`], [`AutomatonView`]).
//!   [`TextViews`] is the text rules read (the bounded tail of the evidence, raw and
//!   sanitized), at most [`MAX_MATCHED_BYTES`] of it.
//! - **Redaction**: the tiers rules are written against, for text an orchestrator shows or
//!   stores: [`redact_credentials`] (secrets removed, everything else kept),
//!   [`redact_diagnostic`] (also URLs, ids, e-mail addresses, paths; cut to
//!   [`MAX_EXCERPT_BYTES`]), [`redact_provider_message`] (a provider message projection, cut to
//!   [`MAX_PROVIDER_MESSAGE_BYTES`]) and [`holds_credential`]. Bundles carry the
//!   [`REDACTION_VERSION`] they were checked with; `docs/evidence.md` lists every shape.
//! - **Recovery policy**: [`RecoveryPolicy`], what the catalogue says to do about a classified
//!   failure ([`ClassPolicy`] per class or code, the [`RetryLadder`], the [`DecisionRow`]s of
//!   the decision table, the [`NoticeLabel`]s), validated on load ([`PolicyError`]) and read
//!   with [`Bundle::policy`]; the `faultline-policy` crate evaluates it.
//! - **Timing**: [`parse_instant`] (failing with a [`ParseInstantError`]) and
//!   [`format_instant`] for RFC 3339 clocks, and [`reset_time`], the reset time the text
//!   extractors read.
//!
//! The compiler writes bundles through `build`, a module compiled only with the
//! `bundle-writer` feature; an orchestrator that links only this crate does not see it.
//!
//! This crate depends on neither the catalogue language (`faultline-dsl`) nor the compiler
//! (`faultline-compiler`), and it only *searches* automata: building them is the compiler's job.
//! No type of another crate appears in its public API.

#[cfg(feature = "bundle-writer")]
pub mod build;
mod bundle;
mod evidence;
mod literal_walk;
mod policy;
mod sanitize;
mod structured;
mod text;
mod timing;
mod vocab;

pub use bundle::{
    AutomatonView, Bundle, HeaderView, LoadError, LoadErrorKind, MatcherKind, MatcherView,
    PatternView, RulePosition, RuleView, Step, Trace,
};
pub use evidence::{Classification, Evidence};
pub use policy::{
    ClassPolicy, CodePolicy, DecisionRow, INITIAL_INTERVAL_RANGE, LADDER_ATTEMPTS_RANGE,
    LADDER_STEP_RANGE, LADDER_STEPS_RANGE, MAX_LABEL_BYTES, MAX_POLICY_ENTRIES, MAX_RETRIES_RANGE,
    MAX_RETRY_DELAY_SECONDS, MAX_WAIT_RANGE, NoticeLabel, POLICY_VERSION, PolicyError,
    RESET_WITHIN_RANGE, RETRY_OFF, RecoveryPolicy, ResetWaitSection, RetryLadder, RetrySection,
    WAIT_OFF,
};
pub use sanitize::{
    MAX_EXCERPT_BYTES, MAX_PROVIDER_MESSAGE_BYTES, REDACTION_VERSION, holds_credential,
};
pub use sanitize::{
    credentials_unbounded as redact_credentials, diagnostic as redact_diagnostic,
    provider_message as redact_provider_message,
};
pub use structured::{
    Body, Headers, MAX_BODY_BYTES, MAX_BODY_DEPTH, MAX_HEADER_NAME_BYTES, MAX_HEADER_VALUE_BYTES,
    MAX_HEADERS, parse_pointer,
};
pub use text::{MAX_MATCHED_BYTES, TextViews, Unwrapping};
pub use timing::{
    HintOutcome, HintSource, HintStep, ParseInstantError, format_instant, parse_instant, reset_time,
};
pub use vocab::{
    Class, Confidence, DecisionContext, DecisionOutcome, EvidenceField, Flag, OnExhausted, Phase,
    Scope, Source, TextView, TimingExtractor,
};
