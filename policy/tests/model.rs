//! The route state machine against a naive model of reference §F.2–§F.3, over random
//! sequences of failures, clock advances, timers (current and stale), cancels, skips,
//! successes, launch failures, restarts and durable writes that succeed or fail.
//!
//! The model is written from the reference's tables, not from the implementation: a plain
//! struct, the evaluation order of §F.2 with 128-bit arithmetic for the delay, and the
//! transition table of §F.3 with its fencing, idempotent cancel, two-phase writes and restart
//! rules. After every step the effects (or the refusal) and the observable state must agree; a
//! restart reloads the implementation from the JSON it last persisted.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "tests report failure by panicking"
)]

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use faultline_policy::{
    AskCause, DecisionReason, Effect, Failure, Input, PolicyState, Rejection, RouteStatus,
};
use faultline_runtime::{
    Class, ClassPolicy, CodePolicy, Confidence, OnExhausted, RecoveryPolicy, ResetWaitSection,
    RetrySection,
};
use proptest::prelude::*;

const BASE: u64 = 1_800_000_000;

fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(BASE + seconds)
}

/// The codes failures are drawn from: (code, class, fallback allowed).
const CODES: &[(&str, Class, bool)] = &[
    ("provider_overloaded", Class::Transient, true),
    ("rate_limited", Class::Transient, true),
    ("agent_transport_lost", Class::Transient, false),
    ("quota_limited", Class::Hard, true),
    ("unknown_provider_error", Class::Unclassified, true),
];

#[derive(Debug, Clone)]
enum Op {
    Fail {
        code: usize,
        present: bool,
        safe: bool,
        reset_in: Option<u64>,
    },
    Advance(u64),
    Timer {
        stale: bool,
    },
    Cancel {
        stale: bool,
    },
    Skip {
        stale: bool,
    },
    Succeed,
    LaunchFailed,
    Restart,
    WriteOk,
    WriteFail,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..CODES.len(), prop::bool::weighted(0.95), prop::bool::weighted(0.85),
              prop::option::of(prop_oneof![0u64..120, 0u64..700_000]))
            .prop_map(|(code, present, safe, reset_in)| Op::Fail { code, present, safe, reset_in }),
        2 => prop_oneof![0u64..90, 0u64..100_000].prop_map(Op::Advance),
        3 => prop::bool::weighted(0.2).prop_map(|stale| Op::Timer { stale }),
        1 => prop::bool::weighted(0.3).prop_map(|stale| Op::Cancel { stale }),
        1 => prop::bool::weighted(0.3).prop_map(|stale| Op::Skip { stale }),
        2 => Just(Op::Succeed),
        1 => Just(Op::LaunchFailed),
        1 => Just(Op::Restart),
        5 => Just(Op::WriteOk),
        1 => Just(Op::WriteFail),
    ]
}

fn class_policy() -> impl Strategy<Value = ClassPolicy> {
    (
        prop::option::of((1u32..=10, prop_oneof![1u32..=10, 1u32..=3600])),
        prop::option::of(prop_oneof![1u32..=120, 1u32..=604_800]),
        any::<bool>(),
    )
        .prop_map(|(retry, wait, skip)| ClassPolicy {
            retry: match retry {
                Some((max_retries, initial_interval_seconds)) => RetrySection {
                    enabled: true,
                    max_retries,
                    initial_interval_seconds,
                },
                None => faultline_runtime::RETRY_OFF,
            },
            wait_for_reset: match wait {
                Some(max_wait_seconds) => ResetWaitSection {
                    enabled: true,
                    max_wait_seconds,
                },
                None => faultline_runtime::WAIT_OFF,
            },
            on_exhausted: if skip {
                OnExhausted::Skip
            } else {
                OnExhausted::Stop
            },
        })
}

fn policy() -> impl Strategy<Value = RecoveryPolicy> {
    (
        class_policy(),
        class_policy(),
        prop::option::of(class_policy()),
    )
        .prop_map(|(transient, hard, quota)| {
            let mut policy = RecoveryPolicy::reference();
            policy.transient = transient;
            policy.hard = hard;
            if let Some(quota) = quota {
                policy.codes.push(CodePolicy {
                    code: "quota_limited".to_owned(),
                    policy: quota,
                });
            }
            policy
        })
}

/// The naive model's state.
#[derive(Debug, Clone, PartialEq)]
struct Model {
    status: RouteStatus,
    generation: u64,
    ordinal: u32,
    used: BTreeSet<Class>,
    deadline: Option<u64>,
    pending: Option<(Box<Model>, Vec<Effect>)>,
}

enum Step {
    Wait(u64),
    Retry(u64),
    Skip,
    Stop(DecisionReason),
}

/// §F.2, literally.
fn evaluate(
    policy: &RecoveryPolicy,
    failure: Option<(usize, Option<u64>)>,
    safe: bool,
    now: u64,
    ordinal: u32,
    used: &BTreeSet<Class>,
) -> Step {
    let Some((code, reset)) = failure else {
        return Step::Stop(DecisionReason::NoFailure);
    };
    let (name, class, fallback) = CODES[code];
    if !safe {
        return Step::Stop(DecisionReason::NotEffectSafe);
    }
    if !fallback {
        return Step::Stop(DecisionReason::FallbackNotAllowed);
    }
    let own = policy.codes.iter().find(|entry| entry.code == name);
    let class_policy = match (own, class) {
        (Some(entry), _) => entry.policy,
        (None, Class::Transient) => policy.transient,
        (None, Class::Hard) => policy.hard,
        (None, Class::Unclassified) => return Step::Stop(DecisionReason::NoPolicy),
    };
    if class_policy.wait_for_reset.enabled
        && !used.contains(&class)
        && let Some(reset) = reset
        && reset > now
        && reset - now <= u64::from(class_policy.wait_for_reset.max_wait_seconds)
    {
        return Step::Wait(reset);
    }
    if class_policy.retry.enabled && ordinal < class_policy.retry.max_retries {
        let initial = u128::from(class_policy.retry.initial_interval_seconds);
        let delay = if ordinal >= 63 {
            86_400
        } else {
            (initial << ordinal).min(86_400)
        };
        return Step::Retry(now + u64::try_from(delay).unwrap());
    }
    match class_policy.on_exhausted {
        OnExhausted::Skip => Step::Skip,
        OnExhausted::Stop => Step::Stop(DecisionReason::Exhausted),
    }
}

impl Model {
    fn new() -> Model {
        Model {
            status: RouteStatus::Active,
            generation: 0,
            ordinal: 0,
            used: BTreeSet::new(),
            deadline: None,
            pending: None,
        }
    }

    fn waiting(&self) -> bool {
        matches!(
            self.status,
            RouteStatus::WaitingForReset | RouteStatus::RetryWait
        )
    }

    fn not_expected(&self) -> Result<Vec<Effect>, Rejection> {
        Err(Rejection::NotExpected {
            status: self.status,
        })
    }

    /// Moves to `next` at the next generation; `effects` wait for the write.
    fn propose(
        &mut self,
        mut next: Model,
        effects: impl FnOnce(u64) -> Vec<Effect>,
    ) -> Vec<Effect> {
        let previous = self.clone();
        next.generation = self.generation + 1;
        if !next.waiting() {
            next.deadline = None;
        }
        let held = effects(next.generation);
        next.pending = Some((Box::new(previous), held));
        *self = next;
        vec![Effect::Persist]
    }

    fn apply(
        &mut self,
        policy: &RecoveryPolicy,
        op: &Op,
        now: u64,
    ) -> Result<Vec<Effect>, Rejection> {
        if let Op::WriteOk = op {
            return match self.pending.take() {
                Some((_, effects)) => Ok(effects),
                None => self.not_expected(),
            };
        }
        if let Op::WriteFail = op {
            return match self.pending.take() {
                Some((previous, _)) => {
                    *self = *previous;
                    Ok(Vec::new())
                }
                None => self.not_expected(),
            };
        }
        if matches!(op, Op::Advance(_)) {
            return Ok(Vec::new());
        }
        if self.pending.is_some() {
            return Err(Rejection::WritePending);
        }
        match op {
            Op::Fail {
                code,
                present,
                safe,
                reset_in,
            } => {
                if !matches!(self.status, RouteStatus::Active | RouteStatus::Retrying) {
                    return self.not_expected();
                }
                let failure = present.then_some((*code, reset_in.map(|r| now + r)));
                let mut next = self.clone();
                Ok(
                    match evaluate(policy, failure, *safe, now, self.ordinal, &self.used) {
                        Step::Wait(reset) => {
                            next.status = RouteStatus::WaitingForReset;
                            next.deadline = Some(reset);
                            next.used.insert(CODES[*code].1);
                            self.propose(next, |generation| {
                                vec![Effect::ScheduleTimer {
                                    generation,
                                    at: at(reset),
                                }]
                            })
                        }
                        Step::Retry(deadline) => {
                            next.status = RouteStatus::RetryWait;
                            next.deadline = Some(deadline);
                            next.ordinal += 1;
                            self.propose(next, |generation| {
                                vec![Effect::ScheduleTimer {
                                    generation,
                                    at: at(deadline),
                                }]
                            })
                        }
                        Step::Skip => {
                            next.status = RouteStatus::Switching;
                            self.propose(next, |_| vec![Effect::SwitchRoute])
                        }
                        Step::Stop(reason) => {
                            next.status = RouteStatus::ActionRequired;
                            self.propose(next, |_| {
                                vec![Effect::AskUser {
                                    cause: AskCause::Evaluated(reason),
                                }]
                            })
                        }
                    },
                )
            }
            Op::Succeed => match self.status {
                RouteStatus::Active => Ok(Vec::new()),
                RouteStatus::Retrying => {
                    let mut next = self.clone();
                    next.status = RouteStatus::Active;
                    next.ordinal = 0;
                    next.used.clear();
                    Ok(self.propose(next, |_| Vec::new()))
                }
                _ => self.not_expected(),
            },
            Op::Timer { stale } => {
                let generation = if *stale {
                    self.generation.wrapping_sub(1)
                } else {
                    self.generation
                };
                if generation != self.generation || !self.waiting() {
                    return Ok(Vec::new());
                }
                let deadline = self.deadline.unwrap();
                if now < deadline {
                    return Ok(vec![Effect::ScheduleTimer {
                        generation,
                        at: at(deadline),
                    }]);
                }
                let mut next = self.clone();
                next.status = RouteStatus::Retrying;
                Ok(self.propose(next, |generation| {
                    vec![Effect::DispatchRetry { generation }]
                }))
            }
            Op::LaunchFailed => {
                if self.status != RouteStatus::Retrying {
                    return Ok(Vec::new());
                }
                let mut next = self.clone();
                next.status = RouteStatus::ActionRequired;
                Ok(self.propose(next, |_| {
                    vec![Effect::AskUser {
                        cause: AskCause::LaunchFailed,
                    }]
                }))
            }
            Op::Skip { stale } => {
                if *stale {
                    return Err(Rejection::StaleGeneration {
                        current: self.generation,
                    });
                }
                if !self.waiting() {
                    return self.not_expected();
                }
                let old = self.generation;
                let mut next = self.clone();
                next.status = RouteStatus::Switching;
                Ok(self.propose(next, |_| {
                    vec![Effect::DisarmTimer { generation: old }, Effect::SwitchRoute]
                }))
            }
            Op::Cancel { stale } => {
                if !(self.waiting() || self.status == RouteStatus::Retrying) {
                    return Ok(Vec::new());
                }
                if *stale {
                    return Err(Rejection::StaleGeneration {
                        current: self.generation,
                    });
                }
                let old = self.generation;
                let waiting = self.waiting();
                let mut next = self.clone();
                next.status = RouteStatus::ActionRequired;
                Ok(self.propose(next, |_| {
                    let mut effects = Vec::new();
                    if waiting {
                        effects.push(Effect::DisarmTimer { generation: old });
                    }
                    effects.push(Effect::AskUser {
                        cause: AskCause::Cancelled,
                    });
                    effects
                }))
            }
            Op::Restart => Ok(match (self.waiting(), self.deadline) {
                (true, Some(deadline)) => vec![Effect::ScheduleTimer {
                    generation: self.generation,
                    at: at(deadline),
                }],
                _ => Vec::new(),
            }),
            Op::WriteOk | Op::WriteFail | Op::Advance(_) => Ok(Vec::new()),
        }
    }
}

fn input(op: &Op, state: &PolicyState, now: u64) -> Option<Input> {
    let generation = |stale: bool| {
        if stale {
            state.generation().wrapping_sub(1)
        } else {
            state.generation()
        }
    };
    Some(match op {
        Op::Fail {
            code,
            present,
            safe,
            reset_in,
        } => {
            let (name, class, fallback_allowed) = CODES[*code];
            Input::Failed {
                failure: present.then(|| Failure {
                    code: name.to_owned(),
                    class,
                    confidence: Confidence::High,
                    fallback_allowed,
                    reset_hint: reset_in.map(|r| at(now + r)),
                    catalogue_version: "model.v1".to_owned(),
                }),
                effect_safe: *safe,
                now: at(now),
            }
        }
        Op::Advance(_) => return None,
        Op::Timer { stale } => Input::TimerFired {
            generation: generation(*stale),
            now: at(now),
        },
        Op::Cancel { stale } => Input::Cancel {
            expected_generation: generation(*stale),
        },
        Op::Skip { stale } => Input::SkipNow {
            expected_generation: generation(*stale),
        },
        Op::Succeed => Input::Succeeded,
        Op::LaunchFailed => Input::LaunchFailed {
            generation: state.generation(),
        },
        Op::Restart => Input::Restarted { now: at(now) },
        Op::WriteOk => Input::WriteSucceeded,
        Op::WriteFail => Input::WriteFailed,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    #[test]
    fn the_route_state_machine_agrees_with_the_model(
        policy in policy(),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        prop_assert_eq!(policy.validate(), Ok(()));
        let mut state = PolicyState::new();
        let mut durable = state.to_json();
        let mut model = Model::new();
        let mut now = 0u64;
        for (index, op) in ops.iter().enumerate() {
            if let Op::Advance(seconds) = op {
                now += seconds;
                continue;
            }
            let actual = if let Op::Restart = op {
                // A restart loses what was not written and reloads what was.
                if model.pending.is_some() {
                    let (previous, _) = model.pending.take().unwrap();
                    model = *previous;
                }
                state = PolicyState::from_json(&durable).unwrap();
                state.apply(&policy, Input::Restarted { now: at(now) })
            } else {
                let input = input(op, &state, now).unwrap();
                state.apply(&policy, input)
            };
            let expected = model.apply(&policy, op, now);
            prop_assert_eq!(&actual, &expected, "step {} {:?} of {:?}", index, op, ops);
            if let Op::WriteOk = op && actual.is_ok() {
                durable = state.to_json();
            }
            prop_assert_eq!(state.status(), model.status, "step {} {:?}", index, op);
            prop_assert_eq!(state.generation(), model.generation);
            prop_assert_eq!(state.retry_ordinal(), model.ordinal);
            prop_assert_eq!(state.deadline(), model.deadline.map(at));
            prop_assert_eq!(state.write_pending(), model.pending.is_some());
            for (_, class, _) in CODES {
                prop_assert_eq!(state.reset_wait_used(*class), model.used.contains(class));
            }
        }
    }
}
