//! [`evaluate`] (reference §F.2): the dynamic route's next step after a failure.

use std::time::{Duration, SystemTime};

use faultline_runtime::{Class, MAX_RETRY_DELAY_SECONDS, OnExhausted, RecoveryPolicy};
use serde::{Deserialize, Serialize};

use crate::failure::Failure;

/// What [`evaluate`] reads.
#[derive(Debug, Clone, Copy)]
pub struct Evaluation<'a> {
    /// The failure; `None` when the attempt failed without one (it stops).
    pub failure: Option<&'a Failure>,
    /// The clock.
    pub now: SystemTime,
    /// How many exponential retries this route cycle has used.
    pub retry_ordinal: u32,
    /// Whether this cycle already waited for a reset of the failure's class.
    pub reset_wait_used: bool,
    /// Whether the recovery-evidence layer found the boundary pre-result and effect-safe.
    pub effect_safe: bool,
}

/// The step [`evaluate`] chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteAction {
    /// Wait until the validated reset, then retry once.
    WaitingForReset,
    /// Wait the exponential delay, then retry.
    RetryWait,
    /// Switch to the next candidate route.
    Skip,
    /// Stop and ask the user.
    Stop,
}

/// Why [`evaluate`] chose its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionReason {
    /// There was no failure to act on.
    NoFailure,
    /// The boundary was not pre-result and effect-safe (AC .8).
    NotEffectSafe,
    /// The failure's code does not allow recovery away from the failed attempt.
    FallbackNotAllowed,
    /// The failure's class has no policy (`unclassified`).
    NoPolicy,
    /// The policy document is invalid: it authorises nothing.
    InvalidPolicy,
    /// A validated reset lies within the maximum wait.
    ResetWithinMaxWait,
    /// The retry budget is not used up.
    RetryBudgetLeft,
    /// Nothing is left: the policy's `on_exhausted` decided.
    Exhausted,
}

/// The route decision (reference §F.2 `RouteDecision`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteDecision {
    /// The step.
    pub action: RouteAction,
    /// Why.
    pub reason: DecisionReason,
    /// The failure's code, once a policy applied.
    pub code: Option<String>,
    /// The failure's class, once a policy applied.
    pub class: Option<Class>,
    /// The retry ordinal after this decision (one more than before for a retry).
    pub retry_ordinal: u32,
    /// What happens when the wait or retry this decision schedules is used up.
    pub pending_outcome: OnExhausted,
    /// When the wait ends, for a wait or a retry.
    #[serde(with = "crate::state::instant_option")]
    pub deadline: Option<SystemTime>,
}

/// Why a retry delay could not be computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RetryDelayError {
    /// The initial interval is zero: no delay is defined, and no retry happens.
    #[error("the initial retry interval is zero")]
    ZeroInitialInterval,
}

/// The delay before exponential retry number `ordinal + 1`: `initial × 2^ordinal` seconds,
/// capped at 24 hours (an ordinal of 63 or more, or an overflow, gives the cap).
pub fn next_retry_delay(
    initial_interval_seconds: u32,
    ordinal: u32,
) -> Result<Duration, RetryDelayError> {
    if initial_interval_seconds == 0 {
        return Err(RetryDelayError::ZeroInitialInterval);
    }
    let seconds = if ordinal >= 63 {
        MAX_RETRY_DELAY_SECONDS
    } else {
        1u64.checked_shl(ordinal)
            .and_then(|factor| u64::from(initial_interval_seconds).checked_mul(factor))
            .map_or(MAX_RETRY_DELAY_SECONDS, |delay| {
                delay.min(MAX_RETRY_DELAY_SECONDS)
            })
    };
    Ok(Duration::from_secs(seconds))
}

fn stop(reason: DecisionReason, retry_ordinal: u32) -> RouteDecision {
    RouteDecision {
        action: RouteAction::Stop,
        reason,
        code: None,
        class: None,
        retry_ordinal,
        pending_outcome: OnExhausted::Stop,
        deadline: None,
    }
}

/// Evaluates `policy` for one failure, exactly in the order of reference §F.2:
///
/// 1. stop unless there is a failure, the boundary is effect-safe and the code allows
///    fallback; stop for a class without a policy and for an invalid document;
/// 2. wait for the reset when waiting is enabled, not yet used this cycle for the class, and
///    the reset lies after `now` and at most the maximum wait ahead (a reset further ahead is
///    not shortened: evaluation goes on);
/// 3. retry after `initial × 2^ordinal` seconds while the retry budget lasts;
/// 4. otherwise `on_exhausted`: skip or stop.
pub fn evaluate(policy: &RecoveryPolicy, input: &Evaluation<'_>) -> RouteDecision {
    let ordinal = input.retry_ordinal;
    let Some(failure) = input.failure else {
        return stop(DecisionReason::NoFailure, ordinal);
    };
    if !input.effect_safe {
        return stop(DecisionReason::NotEffectSafe, ordinal);
    }
    if !failure.fallback_allowed {
        return stop(DecisionReason::FallbackNotAllowed, ordinal);
    }
    if policy.validate().is_err() {
        return stop(DecisionReason::InvalidPolicy, ordinal);
    }
    let Some(class_policy) = policy.policy_for(&failure.code, failure.class) else {
        return stop(DecisionReason::NoPolicy, ordinal);
    };
    let mut decision = RouteDecision {
        action: RouteAction::Stop,
        reason: DecisionReason::Exhausted,
        code: Some(failure.code.clone()),
        class: Some(failure.class),
        retry_ordinal: ordinal,
        pending_outcome: class_policy.on_exhausted,
        deadline: None,
    };
    let wait = &class_policy.wait_for_reset;
    if wait.enabled
        && !input.reset_wait_used
        && let Some(reset) = failure.reset_hint
        && reset > input.now
        && input
            .now
            .checked_add(Duration::from_secs(u64::from(wait.max_wait_seconds)))
            .is_some_and(|latest| reset <= latest)
    {
        decision.action = RouteAction::WaitingForReset;
        decision.reason = DecisionReason::ResetWithinMaxWait;
        decision.deadline = Some(reset);
        return decision;
    }
    let retry = &class_policy.retry;
    if retry.enabled
        && ordinal < retry.max_retries
        && let Ok(delay) = next_retry_delay(retry.initial_interval_seconds, ordinal)
        && let Some(deadline) = input.now.checked_add(delay)
    {
        decision.action = RouteAction::RetryWait;
        decision.reason = DecisionReason::RetryBudgetLeft;
        decision.deadline = Some(deadline);
        decision.retry_ordinal = ordinal.saturating_add(1);
        return decision;
    }
    decision.action = match class_policy.on_exhausted {
        OnExhausted::Skip => RouteAction::Skip,
        OnExhausted::Stop => RouteAction::Stop,
    };
    decision
}

#[cfg(test)]
mod tests {
    use faultline_runtime::{ClassPolicy, Confidence, ResetWaitSection, RetrySection};

    use super::*;

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
    }

    fn failure(code: &str, class: Class, reset: Option<SystemTime>) -> Failure {
        Failure {
            code: code.to_owned(),
            class,
            confidence: Confidence::High,
            fallback_allowed: true,
            reset_hint: reset,
            catalogue_version: "test.v1".to_owned(),
        }
    }

    fn policy() -> RecoveryPolicy {
        let mut policy = RecoveryPolicy::reference();
        policy.transient = ClassPolicy {
            retry: RetrySection {
                enabled: true,
                max_retries: 3,
                initial_interval_seconds: 5,
            },
            wait_for_reset: ResetWaitSection {
                enabled: true,
                max_wait_seconds: 3600,
            },
            on_exhausted: OnExhausted::Skip,
        };
        policy
    }

    fn run(policy: &RecoveryPolicy, failure: &Failure, ordinal: u32, used: bool) -> RouteDecision {
        evaluate(
            policy,
            &Evaluation {
                failure: Some(failure),
                now: at(0),
                retry_ordinal: ordinal,
                reset_wait_used: used,
                effect_safe: true,
            },
        )
    }

    #[test]
    fn delays_double_from_the_initial_interval() {
        let delays: Vec<u64> = (0..3)
            .map(|ordinal| next_retry_delay(5, ordinal).unwrap().as_secs())
            .collect();
        assert_eq!(delays, [5, 10, 20]);
    }

    #[test]
    fn delays_are_capped_at_a_day_without_overflowing() {
        assert_eq!(next_retry_delay(3600, 5).unwrap().as_secs(), 86_400);
        assert_eq!(next_retry_delay(1, 62).unwrap().as_secs(), 86_400);
        assert_eq!(next_retry_delay(1, 63).unwrap().as_secs(), 86_400);
        assert_eq!(next_retry_delay(u32::MAX, 40).unwrap().as_secs(), 86_400);
        assert_eq!(next_retry_delay(1, u32::MAX).unwrap().as_secs(), 86_400);
        assert_eq!(next_retry_delay(1, 16).unwrap().as_secs(), 65_536);
        assert_eq!(next_retry_delay(1, 17).unwrap().as_secs(), 86_400);
        assert_eq!(
            next_retry_delay(0, 0),
            Err(RetryDelayError::ZeroInitialInterval)
        );
    }

    #[test]
    fn a_reset_within_the_maximum_wait_is_waited_for_once() {
        let policy = policy();
        let quota = failure("rate_limited", Class::Transient, Some(at(600)));
        let decision = run(&policy, &quota, 0, false);
        assert_eq!(decision.action, RouteAction::WaitingForReset);
        assert_eq!(decision.deadline, Some(at(600)));
        assert_eq!(decision.retry_ordinal, 0, "a wait does not use the budget");
        let again = run(&policy, &quota, 0, true);
        assert_eq!(again.action, RouteAction::RetryWait);
        assert_eq!(again.deadline, Some(at(5)));
    }

    #[test]
    fn a_reset_beyond_the_maximum_is_not_shortened() {
        let policy = policy();
        let far = failure("rate_limited", Class::Transient, Some(at(3601)));
        let decision = run(&policy, &far, 0, false);
        assert_eq!(decision.action, RouteAction::RetryWait);
        let edge = failure("rate_limited", Class::Transient, Some(at(3600)));
        assert_eq!(run(&policy, &edge, 0, false).deadline, Some(at(3600)));
        let past = failure("rate_limited", Class::Transient, Some(at(0)));
        assert_eq!(run(&policy, &past, 0, false).action, RouteAction::RetryWait);
    }

    #[test]
    fn exhaustion_follows_on_exhausted() {
        let mut policy = policy();
        let overload = failure("provider_overloaded", Class::Transient, None);
        assert_eq!(run(&policy, &overload, 3, false).action, RouteAction::Skip);
        policy.transient.on_exhausted = OnExhausted::Stop;
        let decision = run(&policy, &overload, 3, false);
        assert_eq!(decision.action, RouteAction::Stop);
        assert_eq!(decision.reason, DecisionReason::Exhausted);
    }

    #[test]
    fn unsafe_unflagged_unclassified_and_invalid_stop() {
        let policy = policy();
        let overload = failure("provider_overloaded", Class::Transient, None);
        let mut input = Evaluation {
            failure: Some(&overload),
            now: at(0),
            retry_ordinal: 0,
            reset_wait_used: false,
            effect_safe: false,
        };
        assert_eq!(
            evaluate(&policy, &input).reason,
            DecisionReason::NotEffectSafe
        );
        input.effect_safe = true;
        input.failure = None;
        assert_eq!(evaluate(&policy, &input).reason, DecisionReason::NoFailure);
        let mut lost = failure("agent_transport_lost", Class::Transient, None);
        lost.fallback_allowed = false;
        input.failure = Some(&lost);
        assert_eq!(
            evaluate(&policy, &input).reason,
            DecisionReason::FallbackNotAllowed
        );
        let unknown = failure("unknown_provider_error", Class::Unclassified, None);
        input.failure = Some(&unknown);
        assert_eq!(evaluate(&policy, &input).reason, DecisionReason::NoPolicy);
        let mut invalid = policy.clone();
        invalid.transient.retry.max_retries = 0;
        input.failure = Some(&overload);
        assert_eq!(
            evaluate(&invalid, &input).reason,
            DecisionReason::InvalidPolicy
        );
    }
}
