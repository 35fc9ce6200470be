//! [`PolicyState`] (reference §F.3): the durable route state machine of one candidate route.
//!
//! Transitions are two-phase, so that nothing is scheduled when the durable write fails: a
//! transition that changes the state returns only [`Effect::Persist`] and holds its other
//! effects; the orchestrator writes the state and reports [`Input::WriteSucceeded`] (which
//! releases them) or [`Input::WriteFailed`] (which restores the previous state and releases
//! nothing). Every other input is refused while a write is pending: one transition owner.
//!
//! Timers, manual actions and provider events share one generation: a timer or manual action
//! of an older generation changes nothing.

use std::collections::BTreeSet;
use std::time::SystemTime;

use faultline_runtime::{Class, ClassPolicy, OnExhausted, RecoveryPolicy};
use serde::{Deserialize, Serialize};

use crate::evaluate::{DecisionReason, Evaluation, RouteAction, evaluate};
use crate::failure::Failure;

/// The format version of a persisted [`PolicyState`].
pub const STATE_FORMAT_VERSION: u32 = 1;
/// The most attempt records a state keeps; later ones are counted, not kept, so the history
/// stays append-only and bounded.
pub const MAX_HISTORY: usize = 256;

/// Where a route stands (reference §F.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteStatus {
    /// Working normally.
    Active,
    /// Waiting for a validated reset; a timer is armed at the deadline.
    WaitingForReset,
    /// Waiting out a retry delay; a timer is armed at the deadline.
    RetryWait,
    /// A retry was dispatched and has not settled.
    Retrying,
    /// Switching to the next candidate: this route is done.
    Switching,
    /// Stopped: the user decides.
    ActionRequired,
}

impl RouteStatus {
    /// Whether a timer belongs to this status.
    pub fn is_waiting(self) -> bool {
        matches!(self, RouteStatus::WaitingForReset | RouteStatus::RetryWait)
    }
}

/// Why the route asks the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "cause", content = "reason", rename_all = "snake_case")]
pub enum AskCause {
    /// Evaluation stopped, for this reason.
    Evaluated(DecisionReason),
    /// The user cancelled the wait or the retry.
    Cancelled,
    /// The retry could not be launched (`route_action_launch_failed`).
    LaunchFailed,
}

/// What the orchestrator does, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// Write the state durably now, then report [`Input::WriteSucceeded`] or
    /// [`Input::WriteFailed`]: the transition's other effects wait for that answer.
    Persist,
    /// Arm a timer that reports [`Input::TimerFired`] with this generation at `at`.
    ScheduleTimer {
        /// The generation the timer belongs to.
        generation: u64,
        /// When it fires.
        #[serde(with = "instant")]
        at: SystemTime,
    },
    /// Disarm the timer of this generation (a stale one would change nothing anyway).
    DisarmTimer {
        /// Its generation.
        generation: u64,
    },
    /// Dispatch the retry of the failed prompt; report [`Input::Succeeded`], a new
    /// [`Input::Failed`] or [`Input::LaunchFailed`].
    DispatchRetry {
        /// The generation it belongs to.
        generation: u64,
    },
    /// Switch to the next candidate route.
    SwitchRoute,
    /// Stop and ask the user (manual Resume or Start fresh).
    AskUser {
        /// Why.
        cause: AskCause,
    },
}

/// One thing that happened to the route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// The current attempt failed terminally.
    Failed {
        /// The classified failure; `None` when there is none.
        failure: Option<Failure>,
        /// Whether the recovery-evidence layer found the boundary effect-safe.
        effect_safe: bool,
        /// The clock.
        #[serde(with = "instant")]
        now: SystemTime,
    },
    /// The current attempt succeeded.
    Succeeded,
    /// A timer armed by [`Effect::ScheduleTimer`] fired.
    TimerFired {
        /// The generation it was armed with.
        generation: u64,
        /// The clock.
        #[serde(with = "instant")]
        now: SystemTime,
    },
    /// The dispatched retry could not be launched.
    LaunchFailed {
        /// The generation it was dispatched with.
        generation: u64,
    },
    /// The user chose "skip now" while waiting.
    SkipNow {
        /// The generation the user saw.
        expected_generation: u64,
    },
    /// The user cancelled (or stopped) the wait or the retry. Idempotent.
    Cancel {
        /// The generation the user saw.
        expected_generation: u64,
    },
    /// The orchestrator restarted and reloaded this state.
    Restarted {
        /// The clock.
        #[serde(with = "instant")]
        now: SystemTime,
    },
    /// The write [`Effect::Persist`] asked for succeeded.
    WriteSucceeded,
    /// The write [`Effect::Persist`] asked for failed.
    WriteFailed,
}

/// Why an input was refused; the state is unchanged and is the authoritative snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// A write is pending: report its result first.
    #[error("a durable write is pending; report its result first")]
    WritePending,
    /// A manual action carried another generation than the current one.
    #[error("stale generation: the route is at generation {current}")]
    StaleGeneration {
        /// The current generation.
        current: u64,
    },
    /// The input makes no sense in this status (e.g. a failure while waiting).
    #[error("not expected while the route is {status:?}")]
    NotExpected {
        /// The status.
        status: RouteStatus,
    },
}

/// Why a persisted state could not be read. An unreadable state authorises nothing.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Not the JSON of a state.
    #[error("policy state: {0}")]
    Malformed(String),
    /// Written by a newer or unknown format.
    #[error(
        "policy state: unknown format version {found} (this reader knows {STATE_FORMAT_VERSION})"
    )]
    UnknownVersion {
        /// The version found.
        found: u32,
    },
    /// Internally inconsistent.
    #[error("policy state: {0}")]
    Inconsistent(&'static str),
}

/// One recorded decision: the append-only history, so a later policy or catalogue change
/// never rewrites an earlier decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptRecord {
    /// When.
    #[serde(with = "instant")]
    pub at: SystemTime,
    /// The failure's code, if a policy applied.
    pub code: Option<String>,
    /// The failure's class, if a policy applied.
    pub class: Option<Class>,
    /// The catalogue version that classified it.
    pub catalogue_version: Option<String>,
    /// The step chosen.
    pub action: RouteAction,
    /// Why.
    pub reason: DecisionReason,
    /// The retry ordinal after the decision.
    pub retry_ordinal: u32,
    /// The deadline, for a wait or a retry.
    #[serde(with = "instant_option")]
    pub deadline: Option<SystemTime>,
}

/// The durable state of one candidate route (reference §F.2 `PolicyState`, §F.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyState {
    format: u32,
    generation: u64,
    status: RouteStatus,
    failure_code: Option<String>,
    failure_class: Option<Class>,
    catalogue_version: Option<String>,
    /// The policy that decided the last step, as it was then.
    policy: Option<ClassPolicy>,
    retry_ordinal: u32,
    reset_wait_classes: BTreeSet<Class>,
    #[serde(with = "instant_option")]
    deadline: Option<SystemTime>,
    pending_outcome: OnExhausted,
    ask_cause: Option<AskCause>,
    history: Vec<AttemptRecord>,
    history_dropped: u64,
    #[serde(skip)]
    uncommitted: Option<Box<Uncommitted>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Uncommitted {
    previous: PolicyState,
    effects: Vec<Effect>,
}

impl Default for PolicyState {
    fn default() -> PolicyState {
        PolicyState::new()
    }
}

impl PolicyState {
    /// A new, active route at generation 0.
    pub fn new() -> PolicyState {
        PolicyState {
            format: STATE_FORMAT_VERSION,
            generation: 0,
            status: RouteStatus::Active,
            failure_code: None,
            failure_class: None,
            catalogue_version: None,
            policy: None,
            retry_ordinal: 0,
            reset_wait_classes: BTreeSet::new(),
            deadline: None,
            pending_outcome: OnExhausted::Stop,
            ask_cause: None,
            history: Vec::new(),
            history_dropped: 0,
            uncommitted: None,
        }
    }

    /// The status.
    pub fn status(&self) -> RouteStatus {
        self.status
    }

    /// The generation timers and manual actions must carry.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// When the current wait ends.
    pub fn deadline(&self) -> Option<SystemTime> {
        self.deadline
    }

    /// Exponential retries used this route cycle.
    pub fn retry_ordinal(&self) -> u32 {
        self.retry_ordinal
    }

    /// Whether this cycle already waited for a reset of `class`.
    pub fn reset_wait_used(&self, class: Class) -> bool {
        self.reset_wait_classes.contains(&class)
    }

    /// The last failure's code.
    pub fn failure_code(&self) -> Option<&str> {
        self.failure_code.as_deref()
    }

    /// What happens once the current wait or retry is used up.
    pub fn pending_outcome(&self) -> OnExhausted {
        self.pending_outcome
    }

    /// Why the route asks the user, once it does.
    pub fn ask_cause(&self) -> Option<AskCause> {
        self.ask_cause
    }

    /// The recorded decisions, oldest first.
    pub fn history(&self) -> &[AttemptRecord] {
        &self.history
    }

    /// Whether a durable write is pending.
    pub fn write_pending(&self) -> bool {
        self.uncommitted.is_some()
    }

    /// The state as persisted (JSON); a pending write's proposed state.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a persisted state, refusing unknown versions and inconsistent data.
    pub fn from_json(text: &str) -> Result<PolicyState, StateError> {
        #[derive(Deserialize)]
        struct Version {
            format: u32,
        }
        let version: Version =
            serde_json::from_str(text).map_err(|error| StateError::Malformed(error.to_string()))?;
        if version.format != STATE_FORMAT_VERSION {
            return Err(StateError::UnknownVersion {
                found: version.format,
            });
        }
        let state: PolicyState =
            serde_json::from_str(text).map_err(|error| StateError::Malformed(error.to_string()))?;
        if state.history.len() > MAX_HISTORY {
            return Err(StateError::Inconsistent("more history than a state keeps"));
        }
        if state.status.is_waiting() != state.deadline.is_some() {
            return Err(StateError::Inconsistent(
                "a deadline belongs exactly to the two waiting statuses",
            ));
        }
        Ok(state)
    }

    /// Applies one input. `Ok` carries the effects to apply in order; an `Err` leaves the state
    /// unchanged.
    pub fn apply(
        &mut self,
        policy: &RecoveryPolicy,
        input: Input,
    ) -> Result<Vec<Effect>, Rejection> {
        match input {
            Input::WriteSucceeded => match self.uncommitted.take() {
                Some(uncommitted) => Ok(uncommitted.effects),
                None => Err(self.not_expected()),
            },
            Input::WriteFailed => match self.uncommitted.take() {
                Some(uncommitted) => {
                    *self = uncommitted.previous;
                    Ok(Vec::new())
                }
                None => Err(self.not_expected()),
            },
            _ if self.uncommitted.is_some() => Err(Rejection::WritePending),
            Input::Failed {
                failure,
                effect_safe,
                now,
            } => self.failed(policy, failure.as_ref(), effect_safe, now),
            Input::Succeeded => match self.status {
                RouteStatus::Active => Ok(Vec::new()),
                RouteStatus::Retrying => Ok(self.transition(Vec::new(), |state| {
                    state.status = RouteStatus::Active;
                    state.retry_ordinal = 0;
                    state.reset_wait_classes.clear();
                    state.failure_code = None;
                    state.failure_class = None;
                    state.policy = None;
                })),
                _ => Err(self.not_expected()),
            },
            Input::TimerFired { generation, now } => Ok(self.timer_fired(generation, now)),
            Input::LaunchFailed { generation } => {
                if generation != self.generation || self.status != RouteStatus::Retrying {
                    return Ok(Vec::new());
                }
                Ok(self.ask(AskCause::LaunchFailed, Vec::new()))
            }
            Input::SkipNow {
                expected_generation,
            } => {
                self.fence(expected_generation)?;
                if !self.status.is_waiting() {
                    return Err(self.not_expected());
                }
                let disarm = Effect::DisarmTimer {
                    generation: self.generation,
                };
                Ok(self.transition(vec![disarm, Effect::SwitchRoute], |state| {
                    state.status = RouteStatus::Switching;
                }))
            }
            Input::Cancel {
                expected_generation,
            } => {
                if !(self.status.is_waiting() || self.status == RouteStatus::Retrying) {
                    // Nothing to cancel: an idempotent no-op.
                    return Ok(Vec::new());
                }
                self.fence(expected_generation)?;
                let mut first = Vec::new();
                if self.status.is_waiting() {
                    first.push(Effect::DisarmTimer {
                        generation: self.generation,
                    });
                }
                Ok(self.ask(AskCause::Cancelled, first))
            }
            Input::Restarted { now: _ } => Ok(match (self.status, self.deadline) {
                (status, Some(at)) if status.is_waiting() => vec![Effect::ScheduleTimer {
                    generation: self.generation,
                    at,
                }],
                // A persisted `retrying` is left for manual recovery: whether the retry was
                // dispatched is unknown.
                _ => Vec::new(),
            }),
        }
    }

    fn not_expected(&self) -> Rejection {
        Rejection::NotExpected {
            status: self.status,
        }
    }

    fn fence(&self, expected_generation: u64) -> Result<(), Rejection> {
        if expected_generation == self.generation {
            Ok(())
        } else {
            Err(Rejection::StaleGeneration {
                current: self.generation,
            })
        }
    }

    /// Changes the state with `change`, moves to the next generation and holds `effects` until
    /// the write succeeds; returns [`Effect::Persist`].
    fn transition(
        &mut self,
        effects: Vec<Effect>,
        change: impl FnOnce(&mut PolicyState),
    ) -> Vec<Effect> {
        let previous = self.clone();
        change(self);
        self.generation = self.generation.saturating_add(1);
        if !self.status.is_waiting() {
            self.deadline = None;
        }
        // Effects that name the new generation are built after it is known.
        let effects = effects
            .into_iter()
            .map(|effect| match effect {
                Effect::ScheduleTimer { at, .. } => Effect::ScheduleTimer {
                    generation: self.generation,
                    at,
                },
                Effect::DispatchRetry { .. } => Effect::DispatchRetry {
                    generation: self.generation,
                },
                other => other,
            })
            .collect();
        self.uncommitted = Some(Box::new(Uncommitted { previous, effects }));
        vec![Effect::Persist]
    }

    fn ask(&mut self, cause: AskCause, mut effects: Vec<Effect>) -> Vec<Effect> {
        effects.push(Effect::AskUser { cause });
        self.transition(effects, |state| {
            state.status = RouteStatus::ActionRequired;
            state.ask_cause = Some(cause);
        })
    }

    fn failed(
        &mut self,
        policy: &RecoveryPolicy,
        failure: Option<&Failure>,
        effect_safe: bool,
        now: SystemTime,
    ) -> Result<Vec<Effect>, Rejection> {
        if !matches!(self.status, RouteStatus::Active | RouteStatus::Retrying) {
            return Err(self.not_expected());
        }
        let reset_wait_used = failure.is_some_and(|failure| self.reset_wait_used(failure.class));
        let decision = evaluate(
            policy,
            &Evaluation {
                failure,
                now,
                retry_ordinal: self.retry_ordinal,
                reset_wait_used,
                effect_safe,
            },
        );
        let record = AttemptRecord {
            at: now,
            code: decision.code.clone(),
            class: decision.class,
            catalogue_version: failure.map(|failure| failure.catalogue_version.clone()),
            action: decision.action,
            reason: decision.reason,
            retry_ordinal: decision.retry_ordinal,
            deadline: decision.deadline,
        };
        let applied = failure.and_then(|failure| policy.policy_for(&failure.code, failure.class));
        let applied = if decision.code.is_some() {
            applied.copied()
        } else {
            None
        };
        let change = |state: &mut PolicyState| {
            if state.history.len() < MAX_HISTORY {
                state.history.push(record);
            } else {
                state.history_dropped = state.history_dropped.saturating_add(1);
            }
            state.failure_code = decision.code.clone();
            state.failure_class = decision.class;
            state.catalogue_version = failure.map(|failure| failure.catalogue_version.clone());
            state.policy = applied;
            state.retry_ordinal = decision.retry_ordinal;
            state.pending_outcome = decision.pending_outcome;
            state.deadline = decision.deadline;
        };
        let deadline = decision.deadline;
        Ok(match (decision.action, deadline) {
            (RouteAction::WaitingForReset, Some(at)) => {
                let class = decision.class;
                self.transition(vec![Effect::ScheduleTimer { generation: 0, at }], |state| {
                    change(state);
                    state.status = RouteStatus::WaitingForReset;
                    state.reset_wait_classes.extend(class);
                })
            }
            (RouteAction::RetryWait, Some(at)) => {
                self.transition(vec![Effect::ScheduleTimer { generation: 0, at }], |state| {
                    change(state);
                    state.status = RouteStatus::RetryWait;
                })
            }
            (RouteAction::Skip, _) => self.transition(vec![Effect::SwitchRoute], |state| {
                change(state);
                state.status = RouteStatus::Switching;
            }),
            _ => {
                let cause = AskCause::Evaluated(decision.reason);
                self.transition(vec![Effect::AskUser { cause }], |state| {
                    change(state);
                    state.status = RouteStatus::ActionRequired;
                    state.ask_cause = Some(cause);
                })
            }
        })
    }

    fn timer_fired(&mut self, generation: u64, now: SystemTime) -> Vec<Effect> {
        // A stale timer, or one whose wait ended otherwise, changes nothing.
        let (true, Some(deadline)) = (
            generation == self.generation && self.status.is_waiting(),
            self.deadline,
        ) else {
            return Vec::new();
        };
        if now < deadline {
            return vec![Effect::ScheduleTimer {
                generation: self.generation,
                at: deadline,
            }];
        }
        self.transition(vec![Effect::DispatchRetry { generation: 0 }], |state| {
            state.status = RouteStatus::Retrying;
        })
    }
}

/// Serde of a clock reading as RFC 3339 in UTC.
pub(crate) mod instant {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        at: &SystemTime,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&faultline_runtime::format_instant(*at))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(deserializer)?;
        faultline_runtime::parse_instant(&text).map_err(serde::de::Error::custom)
    }
}

/// Serde of an optional clock reading as RFC 3339 in UTC, or `null`.
pub(crate) mod instant_option {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        at: &Option<SystemTime>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match at {
            Some(at) => serializer.serialize_str(&faultline_runtime::format_instant(*at)),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<SystemTime>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| faultline_runtime::parse_instant(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use faultline_runtime::{Confidence, ResetWaitSection, RetrySection};

    use super::*;

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
    }

    fn policy() -> RecoveryPolicy {
        let mut policy = RecoveryPolicy::reference();
        policy.transient.retry = RetrySection {
            enabled: true,
            max_retries: 2,
            initial_interval_seconds: 5,
        };
        policy.transient.wait_for_reset = ResetWaitSection {
            enabled: true,
            max_wait_seconds: 3600,
        };
        policy
    }

    fn overload(reset: Option<SystemTime>) -> Input {
        Input::Failed {
            failure: Some(Failure {
                code: "provider_overloaded".to_owned(),
                class: Class::Transient,
                confidence: Confidence::High,
                fallback_allowed: true,
                reset_hint: reset,
                catalogue_version: "test.v1".to_owned(),
            }),
            effect_safe: true,
            now: at(0),
        }
    }

    fn committed(state: &mut PolicyState, policy: &RecoveryPolicy, input: Input) -> Vec<Effect> {
        assert_eq!(state.apply(policy, input), Ok(vec![Effect::Persist]));
        state.apply(policy, Input::WriteSucceeded).unwrap()
    }

    #[test]
    fn a_failed_write_schedules_nothing_and_restores_the_state() {
        let policy = policy();
        let mut state = PolicyState::new();
        assert_eq!(
            state.apply(&policy, overload(None)),
            Ok(vec![Effect::Persist])
        );
        assert_eq!(state.status(), RouteStatus::RetryWait);
        assert_eq!(
            state.apply(&policy, Input::Succeeded),
            Err(Rejection::WritePending)
        );
        assert_eq!(state.apply(&policy, Input::WriteFailed), Ok(Vec::new()));
        assert_eq!(state, PolicyState::new());
    }

    #[test]
    fn waits_fire_retry_and_restart_re_arms_only_waits() {
        let policy = policy();
        let mut state = PolicyState::new();
        let effects = committed(&mut state, &policy, overload(Some(at(600))));
        assert_eq!(
            effects,
            [Effect::ScheduleTimer {
                generation: 1,
                at: at(600)
            }]
        );
        let mut reloaded = PolicyState::from_json(&state.to_json()).unwrap();
        assert_eq!(reloaded, state);
        assert_eq!(
            reloaded.apply(&policy, Input::Restarted { now: at(10) }),
            Ok(vec![Effect::ScheduleTimer {
                generation: 1,
                at: at(600)
            }])
        );
        let early = Input::TimerFired {
            generation: 1,
            now: at(599),
        };
        assert_eq!(
            reloaded.apply(&policy, early),
            Ok(vec![Effect::ScheduleTimer {
                generation: 1,
                at: at(600)
            }])
        );
        let stale = Input::TimerFired {
            generation: 0,
            now: at(700),
        };
        assert_eq!(reloaded.apply(&policy, stale), Ok(Vec::new()));
        let due = Input::TimerFired {
            generation: 1,
            now: at(600),
        };
        assert_eq!(
            committed(&mut reloaded, &policy, due),
            [Effect::DispatchRetry { generation: 2 }]
        );
        assert_eq!(
            reloaded.apply(&policy, Input::Restarted { now: at(601) }),
            Ok(Vec::new()),
            "a persisted retrying is left for manual recovery"
        );
    }

    #[test]
    fn cancel_is_fenced_and_idempotent() {
        let policy = policy();
        let mut state = PolicyState::new();
        let _ = committed(&mut state, &policy, overload(None));
        assert_eq!(
            state.apply(
                &policy,
                Input::Cancel {
                    expected_generation: 0
                }
            ),
            Err(Rejection::StaleGeneration { current: 1 })
        );
        let cancel = Input::Cancel {
            expected_generation: 1,
        };
        assert_eq!(
            committed(&mut state, &policy, cancel.clone()),
            [
                Effect::DisarmTimer { generation: 1 },
                Effect::AskUser {
                    cause: AskCause::Cancelled
                }
            ]
        );
        assert_eq!(state.apply(&policy, cancel), Ok(Vec::new()));
        assert_eq!(state.status(), RouteStatus::ActionRequired);
    }

    #[test]
    fn unknown_versions_and_inconsistent_states_are_refused() {
        let json = PolicyState::new()
            .to_json()
            .replace("\"format\":1", "\"format\":2");
        assert!(matches!(
            PolicyState::from_json(&json),
            Err(StateError::UnknownVersion { found: 2 })
        ));
        let waiting = PolicyState::new()
            .to_json()
            .replace("\"status\":\"active\"", "\"status\":\"retry_wait\"");
        assert!(matches!(
            PolicyState::from_json(&waiting),
            Err(StateError::Inconsistent(_))
        ));
    }
}
