//! The recovery-evidence engine: whether automatic recovery of an agent's failed prompt is
//! safe, decided from one ordered stream of session events.
//!
//! Classification alone never authorises anything (AC .8). An orchestrator keeps one
//! [`Recovery`] per agent session, feeds it every [`RecoveryEvent`] in the order received —
//! identity, streamed chunks, tool activity, transcript records, response-attempt boundaries,
//! terminal failures, retry scheduling and cancels, the message store's answers — and applies
//! every [`Effect`] it returns, in order: the verdict on each terminal failure, the transcript
//! records to retract, the retry-notice store operations. Everything here is sans-I/O and
//! deterministic: no threads, clocks, locks or storage inside.
//!
//! - [`Recovery`], [`RecoveryEvent`], [`Effect`], [`ProviderProfile`]: the entry point.
//! - [`Decision`], [`Step`]: what the catalogue's recovery policy decided about a terminal
//!   failure, returned beside its verdict by an engine made with [`Recovery::deciding`]; its
//!   retry notices then follow the decisions (docs/policy.md).
//! - [`prompt`]: the prompt attempt's identity, outcomes and verdicts, and the text rules the
//!   engine and the ACP adapter share (the provider-diagnostic marker, the launch prompt).
//! - [`projection`]: the sanitized provider projection of a terminal prompt error.
//! - [`response_attempt`]: the transcript records of a provider response attempt and their
//!   retraction at a retry boundary (AC .26–.28).
//! - [`notices`]: the retry-notice lifecycle's store operations and reports (AC .9–.11, .25).
//! - [`cursor`]: what counts as Cursor's `RetriableError` control chunk (AC .12–.15).
//!
//! The three state machines behind [`Recovery`] (the prompt-attempt evidence, the
//! response-attempt tracker and the notice lifecycle) are private: they are driven only
//! through it, so one event stream always exercises all three in the same order.
//!
//! This crate depends on the runtime (classification, redaction, timing) and on nothing of ACP:
//! the ACP adapter (`faultline-acp`) parses protocol metadata and provider ids and hands the
//! engine typed events and a [`ProviderProfile`].

mod decision;
mod engine;
mod event;
mod prompt_evidence;

pub mod cursor;
pub mod notices;
pub mod projection;
pub mod prompt;
pub mod response_attempt;

pub use decision::{Decision, Step};
pub use engine::{Effect, Recovery};
pub use event::{ProviderProfile, RecoveryEvent};
