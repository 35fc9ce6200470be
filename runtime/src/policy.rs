//! The recovery policy a catalogue carries (reference §F): what an orchestrator does about a
//! classified failure — retry, wait for a reset, switch route, stop — written as data in the
//! catalogue's `policy` block, compiled into the bundle and validated when the bundle loads.
//!
//! This module holds only the document and its validation, because the bundle loader must
//! refuse an invalid one and this crate depends on neither the language nor the compiler. The
//! behaviour (evaluation, the decision table, the retry ladder, the route state machine) is the
//! `faultline-policy` crate's.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::vocab::{Class, Confidence, DecisionContext, DecisionOutcome, OnExhausted};

/// The policy document version this crate reads and writes.
pub const POLICY_VERSION: u32 = 1;
/// How many retries an enabled retry section may allow (reference §F.1).
pub const MAX_RETRIES_RANGE: RangeInclusive<u32> = 1..=10;
/// The first retry delay of an enabled retry section, in seconds (reference §F.1).
pub const INITIAL_INTERVAL_RANGE: RangeInclusive<u32> = 1..=3600;
/// How far ahead an enabled reset wait may wait, in seconds: up to seven days (§F.1).
pub const MAX_WAIT_RANGE: RangeInclusive<u32> = 1..=604_800;
/// The cap on every computed retry delay, in seconds: 24 hours (reference §F.2).
pub const MAX_RETRY_DELAY_SECONDS: u64 = 86_400;
/// A step of the interactive retry ladder, in seconds.
pub const LADDER_STEP_RANGE: RangeInclusive<u32> = 1..=3600;
/// How many steps the interactive retry ladder may have.
pub const LADDER_STEPS_RANGE: RangeInclusive<usize> = 1..=16;
/// How many attempts the interactive retry ladder may make.
pub const LADDER_ATTEMPTS_RANGE: RangeInclusive<u32> = 1..=20;
/// How close a reset must be, in seconds, to replace a ladder step or make a decision row
/// apply.
pub const RESET_WITHIN_RANGE: RangeInclusive<u32> = 0..=3600;
/// The longest notice label, in bytes.
pub const MAX_LABEL_BYTES: usize = 120;
/// Upper bound on per-code policies, decision rows and labels, so a hostile bundle stays small.
pub const MAX_POLICY_ENTRIES: usize = 1024;

/// A catalogue's recovery policy (reference §F.1, §F.4, §F.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoveryPolicy {
    /// The document version, [`POLICY_VERSION`].
    pub version: u32,
    /// The policy of the `transient` class.
    pub transient: ClassPolicy,
    /// The policy of the `hard` class.
    pub hard: ClassPolicy,
    /// Policies of single codes, which replace their class's policy for that code.
    pub codes: Vec<CodePolicy>,
    /// The interactive short-retry ladder (reference §F.5).
    pub ladder: RetryLadder,
    /// The decision table (reference §F.4): the first row that applies decides; no row means
    /// [`DecisionOutcome::Manual`].
    pub decisions: Vec<DecisionRow>,
    /// The retry notice's label per code (reference §F.5).
    pub labels: Vec<NoticeLabel>,
    /// The label of a code without one of its own.
    pub default_label: String,
}

/// What one class (or code) does about a failure (reference §F.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassPolicy {
    /// Exponential retries on the same route.
    pub retry: RetrySection,
    /// Waiting for a validated reset time.
    pub wait_for_reset: ResetWaitSection,
    /// What happens once both are used up.
    pub on_exhausted: OnExhausted,
}

/// The retry section: `max_retries` retries, the first after `initial_interval_seconds`, each
/// later one twice as long (capped at [`MAX_RETRY_DELAY_SECONDS`]). Disabled: both zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySection {
    /// Whether retries are allowed.
    pub enabled: bool,
    /// How many ([`MAX_RETRIES_RANGE`] when enabled).
    pub max_retries: u32,
    /// The first delay, in seconds ([`INITIAL_INTERVAL_RANGE`] when enabled).
    pub initial_interval_seconds: u32,
}

/// The reset-wait section: wait for a validated reset at most `max_wait_seconds` ahead, once
/// per class per route cycle. Disabled: zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetWaitSection {
    /// Whether waiting is allowed.
    pub enabled: bool,
    /// The furthest reset waited for, in seconds ([`MAX_WAIT_RANGE`] when enabled).
    pub max_wait_seconds: u32,
}

/// The policy of one code, replacing its class's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodePolicy {
    /// The code.
    pub code: String,
    /// Its policy.
    pub policy: ClassPolicy,
}

/// The interactive short-retry ladder (reference §F.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryLadder {
    /// The delay before each attempt, in seconds; attempts past the last step use the last.
    pub steps_seconds: Vec<u32>,
    /// How many attempts one loop may make.
    pub max_attempts: u32,
    /// A reset at most this many seconds away replaces the step's delay.
    pub reset_within_seconds: u32,
}

/// One row of the decision table: it applies when every condition it sets holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionRow {
    /// The context it applies in; `None`: every context.
    pub context: Option<DecisionContext>,
    /// The codes it applies to; empty: every code.
    pub codes: Vec<String>,
    /// The confidences it applies to; empty: every confidence.
    pub confidences: Vec<Confidence>,
    /// It applies only when a reset lies between the clock and this many seconds after it.
    pub reset_within_seconds: Option<u32>,
    /// What it decides.
    pub outcome: DecisionOutcome,
}

/// The retry notice's label of one code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoticeLabel {
    /// The code.
    pub code: String,
    /// The label, e.g. `Provider overloaded`.
    pub label: String,
}

/// Why a policy document is invalid: the field, addressed like `transient.retry.max_retries`,
/// and the problem. An invalid policy never authorises work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("recovery policy: {field}: {problem}")]
pub struct PolicyError {
    field: String,
    problem: String,
}

impl PolicyError {
    fn new(field: impl Into<String>, problem: impl Into<String>) -> PolicyError {
        PolicyError {
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// The field, e.g. `hard.wait_for_reset.max_wait_seconds`.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &str {
        &self.problem
    }
}

/// The retry section of a class policy that never retries.
pub const RETRY_OFF: RetrySection = RetrySection {
    enabled: false,
    max_retries: 0,
    initial_interval_seconds: 0,
};

/// The reset-wait section of a class policy that never waits.
pub const WAIT_OFF: ResetWaitSection = ResetWaitSection {
    enabled: false,
    max_wait_seconds: 0,
};

impl ClassPolicy {
    /// The reference's default for new and legacy candidates (§F.1): no retry, no wait, skip.
    pub const DEFAULT: ClassPolicy = ClassPolicy {
        retry: RETRY_OFF,
        wait_for_reset: WAIT_OFF,
        on_exhausted: OnExhausted::Skip,
    };

    fn validate(&self, field: &str) -> Result<(), PolicyError> {
        let retry = &self.retry;
        if retry.enabled {
            in_range(
                &format!("{field}.retry.max_retries"),
                retry.max_retries,
                &MAX_RETRIES_RANGE,
            )?;
            in_range(
                &format!("{field}.retry.initial_interval_seconds"),
                retry.initial_interval_seconds,
                &INITIAL_INTERVAL_RANGE,
            )?;
        } else if retry.max_retries != 0 || retry.initial_interval_seconds != 0 {
            return Err(PolicyError::new(
                format!("{field}.retry"),
                "a disabled section must store zeros",
            ));
        }
        let wait = &self.wait_for_reset;
        if wait.enabled {
            in_range(
                &format!("{field}.wait_for_reset.max_wait_seconds"),
                wait.max_wait_seconds,
                &MAX_WAIT_RANGE,
            )?;
        } else if wait.max_wait_seconds != 0 {
            return Err(PolicyError::new(
                format!("{field}.wait_for_reset"),
                "a disabled section must store zeros",
            ));
        }
        Ok(())
    }
}

fn in_range(field: &str, value: u32, range: &RangeInclusive<u32>) -> Result<(), PolicyError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(PolicyError::new(
            field,
            format!("{value} is outside {}–{}", range.start(), range.end()),
        ))
    }
}

fn bounded<T>(field: &str, items: &[T]) -> Result<(), PolicyError> {
    if items.len() > MAX_POLICY_ENTRIES {
        return Err(PolicyError::new(
            field,
            format!("more than {MAX_POLICY_ENTRIES} entries"),
        ));
    }
    Ok(())
}

fn code_name(field: &str, code: &str) -> Result<(), PolicyError> {
    let valid = !code.is_empty()
        && code.len() <= 64
        && code
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(PolicyError::new(
            field,
            format!("`{code}` is not a code name"),
        ))
    }
}

fn label_text(field: &str, label: &str) -> Result<(), PolicyError> {
    if label.trim().is_empty()
        || label.len() > MAX_LABEL_BYTES
        || label.chars().any(char::is_control)
    {
        return Err(PolicyError::new(
            field,
            format!("a label is 1–{MAX_LABEL_BYTES} bytes of text on one line"),
        ));
    }
    Ok(())
}

impl RecoveryPolicy {
    /// The reference's defaults (§F.1, §F.4, §F.5): both classes with no retry, no wait and
    /// `skip`; the ladder `5s, 10s, 20s, 40s, 60s` with five attempts and resets within a minute
    /// replacing a step; the reference's decision table and notice labels. What a bundle built
    /// before policies existed (format 4 and older) is given.
    pub fn reference() -> RecoveryPolicy {
        let codes = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect();
        let label = |code: &str, label: &str| NoticeLabel {
            code: code.to_owned(),
            label: label.to_owned(),
        };
        RecoveryPolicy {
            version: POLICY_VERSION,
            transient: ClassPolicy::DEFAULT,
            hard: ClassPolicy::DEFAULT,
            codes: Vec::new(),
            ladder: RetryLadder {
                steps_seconds: vec![5, 10, 20, 40, 60],
                max_attempts: 5,
                reset_within_seconds: 60,
            },
            decisions: vec![
                DecisionRow {
                    context: None,
                    codes: codes(&[
                        "network_unavailable",
                        "provider_unavailable",
                        "provider_overloaded",
                        "model_capacity",
                        "agent_transport_lost",
                        "provider_resource_exhausted",
                        "credential_refresh_contention",
                    ]),
                    confidences: vec![Confidence::High, Confidence::Medium],
                    reset_within_seconds: None,
                    outcome: DecisionOutcome::ShortRetry,
                },
                DecisionRow {
                    context: None,
                    codes: codes(&["rate_limited"]),
                    confidences: Vec::new(),
                    reset_within_seconds: Some(60),
                    outcome: DecisionOutcome::ShortRetry,
                },
                DecisionRow {
                    context: Some(DecisionContext::Office),
                    codes: codes(&[
                        "rate_limited",
                        "quota_limited",
                        "provider_unavailable",
                        "provider_overloaded",
                        "model_capacity",
                    ]),
                    confidences: Vec::new(),
                    reset_within_seconds: None,
                    outcome: DecisionOutcome::LongRetry,
                },
                DecisionRow {
                    context: Some(DecisionContext::Office),
                    codes: codes(&[
                        "auth_required",
                        "missing_credentials",
                        "subscription_required",
                        "model_unavailable",
                        "provider_not_configured",
                    ]),
                    confidences: Vec::new(),
                    reset_within_seconds: None,
                    outcome: DecisionOutcome::Fallback,
                },
                DecisionRow {
                    context: Some(DecisionContext::Office),
                    codes: Vec::new(),
                    confidences: Vec::new(),
                    reset_within_seconds: None,
                    outcome: DecisionOutcome::Park,
                },
                DecisionRow {
                    context: Some(DecisionContext::Kanban),
                    codes: Vec::new(),
                    confidences: Vec::new(),
                    reset_within_seconds: None,
                    outcome: DecisionOutcome::Manual,
                },
            ],
            labels: vec![
                label("model_capacity", "Model at capacity"),
                label("network_unavailable", "Network unavailable"),
                label("provider_overloaded", "Provider overloaded"),
                label("rate_limited", "Rate limited"),
                label("agent_transport_lost", "Agent connection lost"),
                label("provider_resource_exhausted", "Resource exhausted"),
            ],
            default_label: "Provider temporarily unavailable".to_owned(),
        }
    }

    /// Checks every range and consistency rule of §F.1 and the bounds of the ladder, table and
    /// labels; the first problem found is returned.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.version != POLICY_VERSION {
            return Err(PolicyError::new(
                "version",
                format!(
                    "unknown version {} (this reader knows {POLICY_VERSION})",
                    self.version
                ),
            ));
        }
        self.transient.validate("transient")?;
        self.hard.validate("hard")?;
        bounded("codes", &self.codes)?;
        for (index, entry) in self.codes.iter().enumerate() {
            let field = format!("codes[{index}]");
            code_name(&format!("{field}.code"), &entry.code)?;
            if self
                .codes
                .iter()
                .take(index)
                .any(|earlier| earlier.code == entry.code)
            {
                return Err(PolicyError::new(
                    field,
                    format!("a second policy for code `{}`", entry.code),
                ));
            }
            entry.policy.validate(&field)?;
        }
        let ladder = &self.ladder;
        if !LADDER_STEPS_RANGE.contains(&ladder.steps_seconds.len()) {
            return Err(PolicyError::new(
                "ladder.steps_seconds",
                format!(
                    "{} steps; a ladder has {}–{}",
                    ladder.steps_seconds.len(),
                    LADDER_STEPS_RANGE.start(),
                    LADDER_STEPS_RANGE.end()
                ),
            ));
        }
        for (index, step) in ladder.steps_seconds.iter().enumerate() {
            in_range(
                &format!("ladder.steps_seconds[{index}]"),
                *step,
                &LADDER_STEP_RANGE,
            )?;
        }
        in_range(
            "ladder.max_attempts",
            ladder.max_attempts,
            &LADDER_ATTEMPTS_RANGE,
        )?;
        in_range(
            "ladder.reset_within_seconds",
            ladder.reset_within_seconds,
            &RESET_WITHIN_RANGE,
        )?;
        bounded("decisions", &self.decisions)?;
        for (index, row) in self.decisions.iter().enumerate() {
            let field = format!("decisions[{index}]");
            bounded(&format!("{field}.codes"), &row.codes)?;
            for code in &row.codes {
                code_name(&format!("{field}.codes"), code)?;
            }
            if let Some(within) = row.reset_within_seconds {
                in_range(
                    &format!("{field}.reset_within_seconds"),
                    within,
                    &RESET_WITHIN_RANGE,
                )?;
            }
        }
        bounded("labels", &self.labels)?;
        for (index, entry) in self.labels.iter().enumerate() {
            let field = format!("labels[{index}]");
            code_name(&format!("{field}.code"), &entry.code)?;
            if self
                .labels
                .iter()
                .take(index)
                .any(|earlier| earlier.code == entry.code)
            {
                return Err(PolicyError::new(
                    field,
                    format!("a second label for code `{}`", entry.code),
                ));
            }
            label_text(&format!("{field}.label"), &entry.label)?;
        }
        label_text("default_label", &self.default_label)
    }

    /// The policy that applies to a failure of `code` in `class`: the code's own, else its
    /// class's; `None` for `unclassified`, which never has one.
    pub fn policy_for(&self, code: &str, class: Class) -> Option<&ClassPolicy> {
        if let Some(entry) = self.codes.iter().find(|entry| entry.code == code) {
            return Some(&entry.policy);
        }
        match class {
            Class::Transient => Some(&self.transient),
            Class::Hard => Some(&self.hard),
            Class::Unclassified => None,
        }
    }

    /// The retry notice's label of `code`.
    pub fn label_for(&self, code: &str) -> &str {
        self.labels
            .iter()
            .find(|entry| entry.code == code)
            .map_or(self.default_label.as_str(), |entry| entry.label.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_defaults_are_valid() {
        assert_eq!(RecoveryPolicy::reference().validate(), Ok(()));
    }

    #[test]
    fn a_disabled_section_must_store_zeros() {
        let mut policy = RecoveryPolicy::reference();
        policy.hard.retry.max_retries = 3;
        let error = policy.validate().unwrap_err();
        assert_eq!(error.field(), "hard.retry");
    }

    #[test]
    fn enabled_sections_are_range_checked() {
        let mut policy = RecoveryPolicy::reference();
        policy.transient.retry = RetrySection {
            enabled: true,
            max_retries: 11,
            initial_interval_seconds: 5,
        };
        assert_eq!(
            policy.validate().unwrap_err().field(),
            "transient.retry.max_retries"
        );
        policy.transient.retry.max_retries = 3;
        policy.transient.wait_for_reset = ResetWaitSection {
            enabled: true,
            max_wait_seconds: 604_801,
        };
        assert_eq!(
            policy.validate().unwrap_err().field(),
            "transient.wait_for_reset.max_wait_seconds"
        );
    }

    #[test]
    fn code_policies_replace_their_class_and_unclassified_has_none() {
        let mut policy = RecoveryPolicy::reference();
        let mut own = ClassPolicy::DEFAULT;
        own.on_exhausted = OnExhausted::Stop;
        policy.codes.push(CodePolicy {
            code: "rate_limited".to_owned(),
            policy: own,
        });
        assert_eq!(
            policy.policy_for("rate_limited", Class::Transient),
            Some(&own)
        );
        assert_eq!(
            policy.policy_for("provider_overloaded", Class::Transient),
            Some(&ClassPolicy::DEFAULT)
        );
        assert_eq!(policy.policy_for("x", Class::Unclassified), None);
        assert_eq!(policy.label_for("rate_limited"), "Rate limited");
        assert_eq!(policy.label_for("x"), "Provider temporarily unavailable");
    }
}
