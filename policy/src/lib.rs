//! The recovery policy of faultline: what an orchestrator does about a classified failure,
//! decided deterministically from the catalogue's policy ([`faultline_runtime::RecoveryPolicy`],
//! compiled from the `policy` block of the `.rules` catalogue and carried by the bundle).
//!
//! Everything here is sans-I/O and deterministic: the caller passes the clock, persists the
//! state and arms the timers. Nothing here branches on a provider name or on raw text (AC .4,
//! .6): only on codes, classes, confidences, flags and validated reset times.
//!
//! - [`evaluate`] (reference §F.2): the dynamic route's next step — wait for a reset, retry
//!   after an exponential delay, skip to the next candidate or stop — from a [`Failure`] and
//!   the route's counters ([`Evaluation`] in, [`RouteDecision`] out). [`next_retry_delay`] is
//!   its delay arithmetic, overflow-safe and capped at 24 hours.
//! - [`decide`] (§F.4): the decision table's [`DecisionOutcome`] for a context.
//! - [`ladder_step`] (§F.5): the interactive short-retry ladder's next [`LadderStep`], and the
//!   retry notice's text and label.
//! - [`PolicyState`] (§F.3): the durable route state machine — typed, versioned, serialisable,
//!   with an append-only attempt history — whose transitions return [`Effect`]s, released only
//!   once the durable write they ask for succeeded.

mod decide;
mod evaluate;
mod failure;
mod state;

pub use decide::{LadderStep, decide, ladder_step};
pub use evaluate::{
    DecisionReason, Evaluation, RetryDelayError, RouteAction, RouteDecision, evaluate,
    next_retry_delay,
};
pub use failure::Failure;
pub use faultline_runtime::{DecisionContext, DecisionOutcome, OnExhausted};
pub use state::{
    AskCause, AttemptRecord, Effect, Input, MAX_HISTORY, PolicyState, Rejection, RouteStatus,
    STATE_FORMAT_VERSION, StateError,
};
