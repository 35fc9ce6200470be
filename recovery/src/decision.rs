//! [`Decision`]: what the catalogue's recovery policy says to do about a terminal failure,
//! returned beside its verdict by an engine made with [`crate::Recovery::deciding`].
//!
//! The decision is taken in three steps, each from data only (codes, classes, confidences,
//! validated reset times; never provider names or raw text, AC .4, .6):
//!
//! 1. a failure that is not pre-result and effect-safe (AC .8), or a re-delivered one, stops
//!    for manual recovery;
//! 2. the decision table (`faultline_policy::decide`) names an outcome for the session's
//!    context;
//! 3. a short retry takes the next step of the interactive ladder (its notice follows the
//!    decision); a long retry or a fallback goes to the route state machine
//!    (`faultline_policy::PolicyState`), which waits for a reset, retries after an exponential
//!    delay, switches route or stops; park and manual stop.

use std::time::SystemTime;

use faultline_policy::{DecisionOutcome, DecisionReason, LadderStep, RouteAction};
use faultline_runtime::{Class, format_instant};
use serde::Serialize;

/// What the policy decided about one terminal failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The failure's code.
    pub code: String,
    /// Its class.
    pub class: Class,
    /// The failure's clock (RFC 3339): the decision's `now`.
    pub at: String,
    /// The failure's validated reset time (RFC 3339), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reset_hint: Option<String>,
    /// Whether the boundary was pre-result and effect-safe.
    pub effect_safe: bool,
    /// The decision table's outcome (`manual` when the failure was not effect-safe).
    pub outcome: DecisionOutcome,
    /// The step taken.
    pub step: Step,
}

/// The step a [`Decision`] takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Retry on the interactive ladder; the retry notice shows `notice`.
    ShortRetry {
        /// The attempt, from 1.
        attempt: u32,
        /// The ladder's limit.
        max_attempts: u32,
        /// Whole seconds until the attempt.
        retry_in_seconds: u64,
        /// When the attempt is dispatched (RFC 3339).
        retry_at: String,
        /// Whether a reset within the ladder's window replaced the step.
        from_reset: bool,
        /// The notice's text.
        notice: String,
    },
    /// The ladder's attempts are used up: manual Resume or Start fresh.
    LadderExhausted {
        /// The ladder's limit.
        max_attempts: u32,
    },
    /// The route state machine decided (reference §F.2–§F.3).
    Route {
        /// Its action.
        action: RouteAction,
        /// Why.
        reason: DecisionReason,
        /// The exponential retries used this cycle after the decision.
        retry_ordinal: u32,
        /// The class policy's retry budget.
        max_retries: u32,
        /// Seconds until the deadline, for a wait or a retry.
        #[serde(skip_serializing_if = "Option::is_none")]
        wait_seconds: Option<u64>,
        /// The deadline (RFC 3339), for a wait or a retry.
        #[serde(skip_serializing_if = "Option::is_none")]
        deadline: Option<String>,
    },
    /// The route state machine refused the failure (a write is pending, or the route is
    /// waiting and expects no failure): nothing new is decided, and its state is unchanged.
    RouteRefused {
        /// Why.
        refused: String,
    },
    /// Parked until the provider recovers or a person acts.
    Park,
    /// Stop for manual recovery.
    Manual,
}

impl Step {
    pub(crate) fn short_retry(step: &LadderStep) -> Step {
        Step::ShortRetry {
            attempt: step.attempt,
            max_attempts: step.max_attempts,
            retry_in_seconds: step.retry_in_seconds(),
            retry_at: format_instant(step.retry_at),
            from_reset: step.from_reset,
            notice: step.notice_text(),
        }
    }

    pub(crate) fn route(
        action: RouteAction,
        reason: DecisionReason,
        retry_ordinal: u32,
        max_retries: u32,
        deadline: Option<SystemTime>,
        now: SystemTime,
    ) -> Step {
        Step::Route {
            action,
            reason,
            retry_ordinal,
            max_retries,
            wait_seconds: deadline.map(|deadline| {
                deadline
                    .duration_since(now)
                    .map_or(0, |wait| wait.as_secs())
            }),
            deadline: deadline.map(format_instant),
        }
    }
}

/// `14:00` for a deadline on the failure's day, the full instant otherwise.
fn clock(deadline: &str, now: SystemTime) -> String {
    let today = format_instant(now);
    match (deadline.get(..10), today.get(..10), deadline.get(11..16)) {
        (Some(day), Some(current), Some(time)) if day == current => time.to_owned(),
        _ => deadline.to_owned(),
    }
}

fn seconds(value: u64) -> String {
    match value {
        v if v >= 86_400 && v % 86_400 == 0 => format!("{} d", v / 86_400),
        v if v >= 3600 && v % 3600 == 0 => format!("{} h", v / 3600),
        v if v >= 60 && v % 60 == 0 => format!("{} min", v / 60),
        v => format!("{v} s"),
    }
}

impl Decision {
    /// The decision path as one line: `provider_overloaded, effect-safe → retry 2/5 in 10 s`,
    /// `quota_limited, reset 14:00 within max wait → wait until 14:00`, `auth_required → stop:
    /// manual`.
    pub fn path(&self) -> String {
        let now = faultline_runtime::parse_instant(&self.at).unwrap_or(SystemTime::UNIX_EPOCH);
        let reset = self.reset_hint.as_deref();
        let code = &self.code;
        let safe = if self.effect_safe {
            "effect-safe"
        } else {
            "not effect-safe"
        };
        match &self.step {
            Step::ShortRetry {
                attempt,
                max_attempts,
                retry_in_seconds,
                from_reset,
                ..
            } => format!(
                "{code}, {safe}{} → retry {attempt}/{max_attempts} in {}",
                if *from_reset {
                    ", reset within the ladder's window"
                } else {
                    ""
                },
                seconds(*retry_in_seconds)
            ),
            Step::LadderExhausted { max_attempts } => format!(
                "{code}, {safe}, {max_attempts}/{max_attempts} attempts used → stop: manual (Resume or Start fresh)"
            ),
            Step::Route {
                action,
                reason,
                retry_ordinal,
                max_retries,
                wait_seconds,
                deadline,
            } => {
                let reset_note = |within: bool| {
                    reset
                        .map(|reset| {
                            format!(
                                ", reset {} {}",
                                clock(reset, now),
                                if within {
                                    "within max wait"
                                } else {
                                    "beyond max wait (not shortened)"
                                }
                            )
                        })
                        .unwrap_or_default()
                };
                match action {
                    RouteAction::WaitingForReset => format!(
                        "{code}{} → wait until {}",
                        reset_note(true),
                        deadline
                            .as_deref()
                            .map(|d| clock(d, now))
                            .unwrap_or_default()
                    ),
                    RouteAction::RetryWait => format!(
                        "{code}, {safe}{} → retry {retry_ordinal}/{max_retries} in {}",
                        reset_note(false),
                        seconds(wait_seconds.unwrap_or(0))
                    ),
                    RouteAction::Skip => format!(
                        "{code}, {safe}{} → skip: switch to the next candidate ({})",
                        reset_note(false),
                        reason_text(*reason)
                    ),
                    RouteAction::Stop => format!(
                        "{code}{} → stop: manual ({})",
                        reset_note(false),
                        reason_text(*reason)
                    ),
                }
            }
            Step::RouteRefused { refused } => {
                format!(
                    "{code}, {safe} → no new decision: the route refused the failure ({refused})"
                )
            }
            Step::Park => format!("{code}, {safe} → park"),
            Step::Manual if !self.effect_safe => format!("{code}, {safe} → stop: manual"),
            Step::Manual => format!("{code} → stop: manual"),
        }
    }
}

fn reason_text(reason: DecisionReason) -> &'static str {
    match reason {
        DecisionReason::NoFailure => "no failure",
        DecisionReason::NotEffectSafe => "not effect-safe",
        DecisionReason::FallbackNotAllowed => "the code allows no fallback",
        DecisionReason::NoPolicy => "no policy for the class",
        DecisionReason::InvalidPolicy => "invalid policy",
        DecisionReason::ResetWithinMaxWait => "reset within max wait",
        DecisionReason::RetryBudgetLeft => "retry budget left",
        DecisionReason::Exhausted => "retries exhausted",
    }
}
