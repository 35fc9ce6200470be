//! The recovery-evidence layer: whether automatic recovery is safe, decided from typed events.
//!
//! Classification alone never authorises anything (AC .8). Everything here is sans-I/O and
//! deterministic: no threads, clocks or storage inside. Time and events come in; verdicts and
//! effects (what to write, delete or emit) go out, and the orchestrator applies them.
//!
//! - [`session`]: one session's prompt-attempt evidence — correlation, the output and effect
//!   fences, the provider-diagnostic record and its correlation with the terminal failure,
//!   Cursor's `RetriableError` barrier — and the verdict on each terminal failure.
//! - [`projection`]: the sanitized provider projection of a terminal prompt error.
//! - [`cursor`]: what counts as Cursor's `RetriableError` control chunk.
//! - [`notices`]: the retry-notice lifecycle (AC .9–.11, .25) as store effects.
//! - [`response_attempt`]: the provider's own response-attempt retry boundary and the
//!   retraction of the abandoned attempt's records (AC .26–.28).

pub mod cursor;
pub mod notices;
pub mod projection;
pub mod response_attempt;
pub mod session;
