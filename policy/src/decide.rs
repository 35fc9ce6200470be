//! [`decide`] (reference §F.4), the decision table, and [`ladder_step`] (§F.5), the
//! interactive short-retry ladder and its notice.

use std::time::{Duration, SystemTime};

use faultline_runtime::{DecisionContext, DecisionOutcome, DecisionRow, RecoveryPolicy};
use serde::{Deserialize, Serialize};

use crate::failure::Failure;

/// Whether `reset` lies between `now` and `within` seconds after it (both ends included).
fn reset_within(reset: Option<SystemTime>, now: SystemTime, within: u32) -> bool {
    reset.is_some_and(|reset| {
        reset
            .duration_since(now)
            .is_ok_and(|ahead| ahead <= Duration::from_secs(u64::from(within)))
    })
}

fn applies(
    row: &DecisionRow,
    context: DecisionContext,
    failure: &Failure,
    now: SystemTime,
) -> bool {
    row.context.is_none_or(|wanted| wanted == context)
        && (row.codes.is_empty() || row.codes.contains(&failure.code))
        && (row.confidences.is_empty() || row.confidences.contains(&failure.confidence))
        && row
            .reset_within_seconds
            .is_none_or(|within| reset_within(failure.reset_hint, now, within))
}

/// The decision table's outcome for a failure in `context`: the outcome of the first row that
/// applies; `manual` when there is no failure or no row applies.
pub fn decide(
    policy: &RecoveryPolicy,
    context: DecisionContext,
    failure: Option<&Failure>,
    now: SystemTime,
) -> DecisionOutcome {
    let Some(failure) = failure else {
        return DecisionOutcome::Manual;
    };
    policy
        .decisions
        .iter()
        .find(|row| applies(row, context, failure, now))
        .map_or(DecisionOutcome::Manual, |row| row.outcome)
}

/// One scheduled attempt of the interactive short-retry ladder, and what its notice shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LadderStep {
    /// The attempt, from 1.
    pub attempt: u32,
    /// The ladder's attempt limit.
    pub max_attempts: u32,
    /// How long until the attempt.
    pub delay: Duration,
    /// When it is dispatched.
    #[serde(with = "crate::state::instant")]
    pub retry_at: SystemTime,
    /// Whether a near reset replaced the ladder's step.
    pub from_reset: bool,
    /// The notice's label for the failure's code.
    pub label: String,
}

impl LadderStep {
    /// Whole seconds until the attempt, rounded up (a notice never says "0s" for a wait).
    pub fn retry_in_seconds(&self) -> u64 {
        let whole = self.delay.as_secs();
        if self.delay.subsec_nanos() > 0 {
            whole.saturating_add(1)
        } else {
            whole
        }
    }

    /// The notice's text: `<label> — retrying in <N>s (attempt a/max)`.
    pub fn notice_text(&self) -> String {
        format!(
            "{} — retrying in {}s (attempt {}/{})",
            self.label,
            self.retry_in_seconds(),
            self.attempt,
            self.max_attempts
        )
    }
}

/// Attempt `attempt` (from 1) of the ladder for `failure` at `now`: the ladder's step (the
/// last one once the attempts outnumber the steps), replaced by the time left until a reset
/// that is not in the past and at most the ladder's `reset_within` away. `None` once the
/// attempt limit is passed (the loop is exhausted: manual Resume or Start fresh) and for
/// attempt 0.
pub fn ladder_step(
    policy: &RecoveryPolicy,
    failure: &Failure,
    attempt: u32,
    now: SystemTime,
) -> Option<LadderStep> {
    let ladder = &policy.ladder;
    if attempt == 0 || attempt > ladder.max_attempts {
        return None;
    }
    let index = usize::try_from(attempt - 1).unwrap_or(usize::MAX);
    let step = ladder
        .steps_seconds
        .get(index)
        .or(ladder.steps_seconds.last())?;
    let (delay, from_reset) = match failure.reset_hint {
        Some(reset) if reset_within(Some(reset), now, ladder.reset_within_seconds) => {
            (reset.duration_since(now).unwrap_or_default(), true)
        }
        _ => (Duration::from_secs(u64::from(*step)), false),
    };
    Some(LadderStep {
        attempt,
        max_attempts: ladder.max_attempts,
        delay,
        retry_at: now.checked_add(delay)?,
        from_reset,
        label: policy.label_for(&failure.code).to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use faultline_runtime::{Class, Confidence};

    use super::*;

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
    }

    fn failure(code: &str, confidence: Confidence, reset: Option<SystemTime>) -> Failure {
        Failure {
            code: code.to_owned(),
            class: Class::Transient,
            confidence,
            fallback_allowed: true,
            reset_hint: reset,
            catalogue_version: "test.v1".to_owned(),
        }
    }

    #[test]
    fn the_ladder_clamps_to_its_last_step_and_stops_at_its_limit() {
        let policy = RecoveryPolicy::reference();
        let overload = failure("provider_overloaded", Confidence::High, None);
        let delays: Vec<u64> = (1..=5)
            .map(|attempt| {
                ladder_step(&policy, &overload, attempt, at(0))
                    .unwrap()
                    .delay
                    .as_secs()
            })
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 60]);
        assert_eq!(ladder_step(&policy, &overload, 6, at(0)), None);
        assert_eq!(ladder_step(&policy, &overload, 0, at(0)), None);
        let mut short = policy.clone();
        short.ladder.steps_seconds = vec![7];
        assert_eq!(
            ladder_step(&short, &overload, 4, at(0)).unwrap().delay,
            Duration::from_secs(7)
        );
    }

    #[test]
    fn a_reset_within_a_minute_replaces_the_step() {
        let policy = RecoveryPolicy::reference();
        let near = failure("rate_limited", Confidence::High, Some(at(42)));
        let step = ladder_step(&policy, &near, 1, at(0)).unwrap();
        assert_eq!((step.delay.as_secs(), step.from_reset), (42, true));
        assert_eq!(
            step.notice_text(),
            "Rate limited — retrying in 42s (attempt 1/5)"
        );
        let far = failure("rate_limited", Confidence::High, Some(at(61)));
        assert_eq!(
            ladder_step(&policy, &far, 2, at(0))
                .unwrap()
                .delay
                .as_secs(),
            10
        );
        let past = failure("model_capacity", Confidence::High, Some(at(0)));
        let step = ladder_step(&policy, &past, 2, at(1)).unwrap();
        assert_eq!(
            step.notice_text(),
            "Model at capacity — retrying in 10s (attempt 2/5)"
        );
    }

    #[test]
    fn the_table_falls_through_to_manual() {
        let policy = RecoveryPolicy::reference();
        let low = failure("provider_overloaded", Confidence::Low, None);
        assert_eq!(
            decide(&policy, DecisionContext::Kanban, Some(&low), at(0)),
            DecisionOutcome::Manual
        );
        assert_eq!(
            decide(&policy, DecisionContext::Office, Some(&low), at(0)),
            DecisionOutcome::LongRetry
        );
        assert_eq!(
            decide(&policy, DecisionContext::Office, None, at(0)),
            DecisionOutcome::Manual
        );
        let other = failure("repo_error", Confidence::High, None);
        assert_eq!(
            decide(&policy, DecisionContext::Office, Some(&other), at(0)),
            DecisionOutcome::Park
        );
    }
}
