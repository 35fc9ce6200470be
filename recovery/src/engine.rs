//! The engine: [`Recovery`], one per agent session, the single entry point an orchestrator
//! feeds its ordered event stream to, and [`Effect`], everything it returns. How events are
//! routed to the three private state machines is documented on [`Recovery`].

use std::time::SystemTime;

use faultline_policy::{
    DecisionContext, DecisionOutcome, Failure, Input, PolicyState, decide, ladder_step,
};
use faultline_runtime::{Bundle, parse_instant};
use serde::Serialize;

use crate::decision::{Decision, Step};
use crate::event::{ProviderProfile, RecoveryEvent};
use crate::notices::{Ending, Notice, NoticeEffect, NoticeEvent, NoticeLifecycle};
use crate::prompt::{Claim, Outcome, Verdict};
use crate::prompt_evidence::PromptEvidence;
use crate::response_attempt::{
    AttemptEvent, AttemptTracker, MessageId, PromptEnd, TranscriptEffect,
};

/// One thing the orchestrator must know or do after an event, in the order returned.
///
/// Serialized without a tag of its own: an evidence outcome is an object tagged `outcome`, a
/// transcript or notice effect one tagged `effect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Effect {
    /// What the event did to the prompt-attempt evidence. On a terminal failure this is
    /// [`Outcome::Failed`], carrying the verdict: the only outcome to act on.
    Evidence(Outcome),
    /// Drop history or retract transcript records of an abandoned response attempt; apply
    /// before forwarding the next provider update.
    Transcript(TranscriptEffect),
    /// A retry-notice store operation, a retry decision, a cancel reply or a storage report.
    Notice(NoticeEffect),
    /// What the recovery policy decided about the terminal failure whose verdict precedes it
    /// (an engine made with [`Recovery::deciding`] only).
    Decision(Box<Decision>),
    /// An effect of the route state machine: persist its state, arm or disarm a timer,
    /// dispatch a retry, switch route, ask the user.
    Route(faultline_policy::Effect),
    /// The route state machine refused an event (a stale generation, a pending write, an event
    /// its status does not expect); its state is unchanged.
    RouteRefused {
        /// Why.
        refused: String,
    },
}

impl Effect {
    /// The verdict, when this is a terminal failure's outcome.
    pub fn verdict(&self) -> Option<&Verdict> {
        match self {
            Effect::Evidence(Outcome::Failed(verdict)) => Some(verdict),
            _ => None,
        }
    }

    /// The policy's decision, when this is one.
    pub fn decision(&self) -> Option<&Decision> {
        match self {
            Effect::Decision(decision) => Some(decision),
            _ => None,
        }
    }

    /// The evidence outcome, when this is one.
    pub fn evidence(&self) -> Option<&Outcome> {
        match self {
            Effect::Evidence(outcome) => Some(outcome),
            _ => None,
        }
    }
}

/// The recovery engine of one agent session.
///
/// Sans-I/O and deterministic: no threads, clocks, locks or storage. Feed it every event in
/// the order received and apply the effects in the order returned. Three state machines sit
/// behind it, each fed the part of an event that concerns it (docs/recovery.md lists the
/// routing per event):
///
/// - the prompt-attempt evidence: identity, output and effect fences, the provider
///   diagnostic, Cursor's barrier, and the verdict on a terminal failure ([`crate::prompt`]);
/// - the response-attempt tracker: the transcript records of the current provider response
///   attempt, retracted at a retry boundary ([`crate::response_attempt`]);
/// - the retry-notice lifecycle: the message-store operations that keep one retry notice
///   exactly while the backend owns a retry ([`crate::notices`]).
///
/// Two couplings are the engine's own, not any one machine's:
///
/// - **The tracker follows one agent execution.** A prompt that begins without an execution
///   id (a launch) or with another one than the tracked execution starts a new tracker; a bind
///   fills the execution the tracker lacks. Every other transcript event must name the
///   tracked execution (or, while none is tracked, any, which is then adopted): an event that
///   names another execution, or none while one is tracked, is not the current prompt's and
///   changes nothing, so no record is ever retracted on the word of an unidentified event. A
///   returned or failed prompt also ends its generation in the tracker.
/// - **A notice retirement retires the lifecycle.** An event that makes the notice lifecycle
///   retire the session's notices (every ending but an ordinary successful turn with no loop
///   and nothing left over, and every authorised cancel) ends the retry ownership the
///   evidence depends on (reference §A.5, §F.6): the evidence reads as unknown until a new
///   attempt binds its full identity, exactly as after [`RecoveryEvent::LifecycleRetired`].
///   Its [`Outcome::Retired`] comes after the notice effects (a cancel disarms the timer
///   first).
#[derive(Debug)]
pub struct Recovery {
    evidence: PromptEvidence,
    transcript: AttemptTracker,
    /// The execution the tracker follows, once known.
    tracked_execution: Option<String>,
    notices: NoticeLifecycle,
    /// The policy side, for an engine made with [`Recovery::deciding`].
    deciding: Option<Deciding>,
}

/// What a deciding engine keeps between failures.
#[derive(Debug)]
struct Deciding {
    context: DecisionContext,
    provider: String,
    /// Attempts of the current interactive retry loop (0: no loop).
    ladder_attempts: u32,
    route: PolicyState,
}

impl Recovery {
    /// The engine of a session whose provider `profile` describes.
    pub fn new(profile: ProviderProfile) -> Recovery {
        Recovery {
            evidence: PromptEvidence::new(&profile),
            transcript: AttemptTracker::new(),
            tracked_execution: None,
            notices: NoticeLifecycle::new(),
            deciding: None,
        }
    }

    /// The engine of a session whose provider `profile` describes, which also decides what
    /// to do about each terminal failure with the bundle's recovery policy in `context`
    /// ([`Effect::Decision`] after the verdict), drives the retry notices from those decisions
    /// (one notice per interactive loop, updated per attempt, retired on every ending), and
    /// runs the route state machine for long retries and fallbacks ([`Effect::Route`]).
    pub fn deciding(profile: ProviderProfile, context: DecisionContext) -> Recovery {
        let provider = profile.provider_id().to_owned();
        let mut recovery = Recovery::new(profile);
        recovery.deciding = Some(Deciding {
            context,
            provider,
            ladder_attempts: 0,
            route: PolicyState::new(),
        });
        recovery
    }

    /// The route state to persist, for a deciding engine.
    pub fn route_state(&self) -> Option<&PolicyState> {
        self.deciding.as_ref().map(|deciding| &deciding.route)
    }

    /// The code of the provider diagnostic the current attempt has recorded (and not
    /// cleared), if any.
    pub fn recorded_provider_diagnostic(&self) -> Option<&str> {
        self.evidence.recorded_provider_diagnostic()
    }

    /// The transcript records a response-attempt boundary would retract now, in allocation
    /// order.
    pub fn retractable(&self) -> &[MessageId] {
        self.transcript.eligible()
    }

    /// Applies one event; `bundle` classifies texts (provider diagnostics and terminal
    /// messages). Returns every effect, in the order to apply them.
    #[must_use = "the effects are the decisions: dropping them loses verdicts, retractions and notice writes"]
    pub fn apply(&mut self, bundle: &Bundle, event: RecoveryEvent) -> Vec<Effect> {
        match event {
            RecoveryEvent::PromptBegan { claim } => {
                let outcome = self.evidence.begin(&claim);
                self.track_prompt(&claim, true);
                vec![Effect::Evidence(outcome)]
            }
            RecoveryEvent::PromptBound { claim } => {
                let outcome = self.evidence.bind(&claim);
                self.track_prompt(&claim, false);
                vec![Effect::Evidence(outcome)]
            }
            RecoveryEvent::ModelSettled {
                model_id,
                execution_id,
            } => vec![Effect::Evidence(
                self.evidence
                    .settle_model(&model_id, execution_id.as_deref()),
            )],
            RecoveryEvent::Chunk {
                claim,
                role,
                text,
                provider_diagnostic_candidate,
            } => vec![Effect::Evidence(self.evidence.chunk(
                bundle,
                &claim,
                role,
                &text,
                provider_diagnostic_candidate,
            ))],
            RecoveryEvent::PartialResult { claim } => {
                vec![Effect::Evidence(self.evidence.partial_result(&claim))]
            }
            RecoveryEvent::ToolCall { claim, scope } => {
                let outcome = self.evidence.tool_call(&claim);
                let mut effects = vec![Effect::Evidence(outcome)];
                effects.extend(self.track(&claim, |generation| AttemptEvent::ToolCall {
                    generation,
                    scope,
                }));
                effects
            }
            RecoveryEvent::ToolUpdate { claim } => {
                vec![Effect::Evidence(self.evidence.tool_update(&claim))]
            }
            RecoveryEvent::RecordAllocated {
                claim,
                message_id,
                kind,
            } => self.track(&claim, |generation| AttemptEvent::RecordAllocated {
                generation,
                id: message_id,
                kind,
            }),
            RecoveryEvent::RecordContinued {
                claim,
                message_id,
                kind,
            } => self.track(&claim, |generation| AttemptEvent::RecordContinued {
                generation,
                id: message_id,
                kind,
            }),
            RecoveryEvent::ResponseAttemptReset { claim } => self.track(&claim, |generation| {
                AttemptEvent::ResponseAttemptReset { generation }
            }),
            RecoveryEvent::PromptReturned { claim, occurred_at } => {
                let outcome = self.evidence.returned(bundle, &claim, &occurred_at);
                let completed = outcome == Outcome::Completed;
                let mut effects = vec![Effect::Evidence(outcome)];
                if completed {
                    effects.extend(self.succeeded(bundle));
                }
                effects.extend(self.track(&claim, ended(PromptEnd::Completed)));
                effects
            }
            RecoveryEvent::PromptFailed {
                claim,
                error,
                occurred_at,
                lifecycle,
            } => {
                let outcome = self.evidence.prompt_failed(
                    bundle,
                    &claim,
                    &error,
                    &occurred_at,
                    lifecycle.as_ref(),
                );
                let decided = match &outcome {
                    Outcome::Failed(verdict) => self.decide(bundle, verdict, &occurred_at),
                    _ => Vec::new(),
                };
                let mut effects = vec![Effect::Evidence(outcome)];
                effects.extend(decided);
                effects.extend(self.track(&claim, ended(PromptEnd::Completed)));
                effects
            }
            RecoveryEvent::PromptEnded { claim, reason } => self.track(&claim, ended(reason)),
            RecoveryEvent::ExecutionTornDown { execution_id } => {
                let execution = execution_id.filter(|id| !id.is_empty());
                if execution.is_none() || execution == self.tracked_execution {
                    self.transcript_effects(AttemptEvent::TornDown)
                } else {
                    Vec::new()
                }
            }
            RecoveryEvent::LifecycleRetired => vec![Effect::Evidence(self.evidence.retire())],
            RecoveryEvent::EventUnreadable => {
                let mut effects = vec![Effect::Evidence(self.evidence.poison_session())];
                // The lost event may have been a commit boundary or a record: retract nothing
                // of the current prompt on what is known now.
                effects.extend(self.transcript_effects(AttemptEvent::TornDown));
                effects
            }
            RecoveryEvent::RetryScheduled { notice } => {
                self.notice(NoticeEvent::AttemptScheduled(notice))
            }
            RecoveryEvent::RetryEnded { ending } => self.notice(NoticeEvent::Ended(ending)),
            RecoveryEvent::RetryCancelRequested { authorization } => {
                self.notice(NoticeEvent::Cancel(authorization))
            }
            RecoveryEvent::NoticesListed { notices } => self.notice(NoticeEvent::Listed(notices)),
            RecoveryEvent::NoticeListFailed => self.notice(NoticeEvent::ListFailed),
            RecoveryEvent::NoticeWritten { notice_id } => {
                self.notice(NoticeEvent::Written(notice_id))
            }
            RecoveryEvent::NoticeWriteFailed => self.notice(NoticeEvent::WriteFailed),
            RecoveryEvent::NoticesDeleted { failed } => {
                self.notice(NoticeEvent::Deleted { failed })
            }
            RecoveryEvent::RouteWriteSucceeded => self.route(bundle, Input::WriteSucceeded),
            RecoveryEvent::RouteWriteFailed => self.route(bundle, Input::WriteFailed),
            RecoveryEvent::RouteTimerFired { generation, at } => match parse_instant(&at) {
                Ok(now) => self.route(bundle, Input::TimerFired { generation, now }),
                Err(error) => vec![refused(error.to_string())],
            },
            RecoveryEvent::RouteCancelRequested {
                expected_generation,
            } => self.route(
                bundle,
                Input::Cancel {
                    expected_generation,
                },
            ),
            RecoveryEvent::RouteSkipRequested {
                expected_generation,
            } => self.route(
                bundle,
                Input::SkipNow {
                    expected_generation,
                },
            ),
            RecoveryEvent::RouteLaunchFailed { generation } => {
                self.route(bundle, Input::LaunchFailed { generation })
            }
            RecoveryEvent::RouteRestarted { at } => match parse_instant(&at) {
                Ok(now) => {
                    // A restart reloads what was persisted: the state's serialized form.
                    if let Some(deciding) = self.deciding.as_mut()
                        && let Ok(reloaded) = PolicyState::from_json(&deciding.route.to_json())
                    {
                        deciding.route = reloaded;
                    }
                    self.route(bundle, Input::Restarted { now })
                }
                Err(error) => vec![refused(error.to_string())],
            },
        }
    }

    /// Applies one input to the route state machine of a deciding engine.
    fn route(&mut self, bundle: &Bundle, input: Input) -> Vec<Effect> {
        let Some(deciding) = self.deciding.as_mut() else {
            return Vec::new();
        };
        match deciding.route.apply(bundle.policy(), input) {
            Ok(effects) => effects.into_iter().map(Effect::Route).collect(),
            Err(rejection) => vec![refused(rejection.to_string())],
        }
    }

    /// A prompt completed: an interactive loop ends in success, a retrying route is active
    /// again.
    fn succeeded(&mut self, bundle: &Bundle) -> Vec<Effect> {
        let Some(deciding) = self.deciding.as_mut() else {
            return Vec::new();
        };
        deciding.ladder_attempts = 0;
        let retrying = deciding.route.status() == faultline_policy::RouteStatus::Retrying;
        let mut effects = self.notice(NoticeEvent::Ended(Ending::TurnSucceeded));
        if retrying {
            effects.extend(self.route(bundle, Input::Succeeded));
        }
        effects
    }

    /// The decision on a terminal failure, and the notice and route effects that follow it.
    fn decide(&mut self, bundle: &Bundle, verdict: &Verdict, occurred_at: &str) -> Vec<Effect> {
        let Some(deciding) = self.deciding.as_mut() else {
            return Vec::new();
        };
        let policy = bundle.policy();
        let failure = Failure::from_classification(&verdict.classification);
        let effect_safe = verdict.safety.is_safe() && !verdict.duplicate;
        let now = parse_instant(occurred_at).ok();
        let outcome = match now {
            Some(now) if effect_safe => decide(policy, deciding.context, Some(&failure), now),
            _ => DecisionOutcome::Manual,
        };
        let now = now.unwrap_or(SystemTime::UNIX_EPOCH);
        let mut after = Vec::new();
        let mut notice = None;
        let mut ending = None;
        let step = match outcome {
            DecisionOutcome::ShortRetry => {
                deciding.ladder_attempts = deciding.ladder_attempts.saturating_add(1);
                match ladder_step(policy, &failure, deciding.ladder_attempts, now) {
                    Some(step) => {
                        notice = Some(Notice {
                            reason: step.label.clone(),
                            provider: deciding.provider.clone(),
                            attempt: step.attempt,
                            max_attempts: step.max_attempts,
                            deadline: step.retry_at,
                        });
                        Step::short_retry(&step)
                    }
                    None => {
                        ending = Some(Ending::Exhausted);
                        Step::LadderExhausted {
                            max_attempts: policy.ladder.max_attempts,
                        }
                    }
                }
            }
            DecisionOutcome::LongRetry | DecisionOutcome::Fallback => {
                let input = Input::Failed {
                    failure: Some(failure.clone()),
                    effect_safe,
                    now,
                };
                match deciding.route.apply(policy, input) {
                    Ok(effects) => {
                        after.extend(effects.into_iter().map(Effect::Route));
                        let max_retries = policy
                            .policy_for(&failure.code, failure.class)
                            .map_or(0, |class_policy| class_policy.retry.max_retries);
                        match deciding.route.history().last() {
                            Some(record) => Step::route(
                                record.action,
                                record.reason,
                                record.retry_ordinal,
                                max_retries,
                                record.deadline,
                                now,
                            ),
                            None => Step::Manual,
                        }
                    }
                    Err(rejection) => Step::RouteRefused {
                        refused: rejection.to_string(),
                    },
                }
            }
            DecisionOutcome::Park => Step::Park,
            DecisionOutcome::Manual => Step::Manual,
        };
        if notice.is_none() && deciding.ladder_attempts > 0 {
            // Any other decision ends the interactive loop; its notices are retired.
            ending = ending.or(Some(Ending::Terminal));
        }
        if notice.is_none() {
            deciding.ladder_attempts = 0;
        }
        let mut effects = vec![Effect::Decision(Box::new(Decision {
            code: failure.code.clone(),
            class: failure.class,
            at: faultline_runtime::format_instant(now),
            reset_hint: verdict.classification.reset_hint.clone(),
            effect_safe,
            outcome,
            step,
        }))];
        effects.extend(after);
        if let Some(notice) = notice {
            effects.extend(self.notice(NoticeEvent::AttemptScheduled(notice)));
        }
        if let Some(ending) = ending {
            effects.extend(self.notice(NoticeEvent::Ended(ending)));
        }
        effects
    }

    /// A prompt began (`began`) or was bound: the tracker follows its execution and starts
    /// its generation (the tracker refuses a generation at or below one already started).
    fn track_prompt(&mut self, claim: &Claim, began: bool) {
        let execution = claim.execution_id.as_deref().filter(|id| !id.is_empty());
        let new_execution = match (self.tracked_execution.as_deref(), execution) {
            // A launch, or a dynamic attempt: a new execution whose id is not known yet.
            (_, None) => began,
            (None, Some(_)) => began,
            (Some(tracked), Some(claimed)) => tracked != claimed,
        };
        if new_execution {
            self.transcript = AttemptTracker::new();
        }
        if new_execution || self.tracked_execution.is_none() {
            self.tracked_execution = execution.map(str::to_owned);
        }
        let _no_effects = self.transcript.handle(AttemptEvent::PromptStarted {
            generation: claim.generation,
        });
    }

    /// Feeds the tracker the event `make` builds for the claim's generation, if the claim
    /// names the tracked execution (see the module docs).
    fn track(&mut self, claim: &Claim, make: impl FnOnce(u64) -> AttemptEvent) -> Vec<Effect> {
        let execution = claim.execution_id.as_deref().filter(|id| !id.is_empty());
        match (self.tracked_execution.as_deref(), execution) {
            (Some(tracked), Some(claimed)) if tracked == claimed => {}
            (None, Some(claimed)) => self.tracked_execution = Some(claimed.to_owned()),
            (None, None) => {}
            (Some(_), _) => return Vec::new(),
        }
        self.transcript_effects(make(claim.generation))
    }

    fn transcript_effects(&mut self, event: AttemptEvent) -> Vec<Effect> {
        self.transcript
            .handle(event)
            .into_iter()
            .map(Effect::Transcript)
            .collect()
    }

    /// Feeds the notice lifecycle; a retirement of the notices also retires the lifecycle the
    /// evidence depends on, after the notice effects (a cancel disarms the timer first).
    fn notice(&mut self, event: NoticeEvent) -> Vec<Effect> {
        let retires = self.notices.retires(&event);
        let mut effects: Vec<Effect> = self
            .notices
            .handle(event)
            .into_iter()
            .map(Effect::Notice)
            .collect();
        if retires {
            effects.push(Effect::Evidence(self.evidence.retire()));
        }
        effects
    }
}

fn refused(reason: String) -> Effect {
    Effect::RouteRefused { refused: reason }
}

fn ended(reason: PromptEnd) -> impl FnOnce(u64) -> AttemptEvent {
    move |generation| AttemptEvent::PromptEnded { generation, reason }
}

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::notices::{
        Authorization, CancelReply, Ending, ListedNotice, Marker, Notice, NoticeId, WriteTarget,
    };
    use crate::projection::PromptError;
    use crate::prompt::{Role, Safety};
    use crate::response_attempt::{RecordKind, Retraction, ToolScope};

    static BUNDLE: LazyLock<Bundle> = LazyLock::new(faultline_testkit::catalogue_bundle);

    const GEN: u64 = 7;

    fn claim(execution: Option<&str>, generation: u64) -> Claim {
        Claim {
            execution_id: execution.map(str::to_owned),
            generation,
        }
    }

    fn current() -> Claim {
        claim(Some("exec-1"), GEN)
    }

    fn began(claim: Claim) -> RecoveryEvent {
        RecoveryEvent::PromptBegan { claim }
    }

    fn allocated(claim: Claim, id: &str, kind: RecordKind) -> RecoveryEvent {
        RecoveryEvent::RecordAllocated {
            claim,
            message_id: MessageId::new(id),
            kind,
        }
    }

    fn reset(claim: Claim) -> RecoveryEvent {
        RecoveryEvent::ResponseAttemptReset { claim }
    }

    fn failed(claim: Claim) -> RecoveryEvent {
        RecoveryEvent::PromptFailed {
            claim,
            error: PromptError {
                code: -32603,
                message: "Internal error: API Error: 529 Overloaded".to_owned(),
                error_kind: None,
            },
            occurred_at: "2026-10-01T08:00:00Z".to_owned(),
            lifecycle: None,
        }
    }

    fn retraction(generation: u64, ids: &[&str]) -> Vec<Effect> {
        vec![
            Effect::Transcript(TranscriptEffect::DropUncommittedHistory { generation }),
            Effect::Transcript(TranscriptEffect::Retract(Retraction {
                generation,
                message_ids: ids.iter().map(|id| MessageId::new(*id)).collect(),
            })),
        ]
    }

    /// The engine of a Claude session after `events`.
    fn after(events: Vec<RecoveryEvent>) -> Recovery {
        let mut recovery = Recovery::new(ProviderProfile::new("claude-acp"));
        for event in events {
            let _ = recovery.apply(&BUNDLE, event);
        }
        recovery
    }

    fn verdict(effects: &[Effect]) -> &Verdict {
        effects
            .iter()
            .find_map(Effect::verdict)
            .unwrap_or_else(|| panic!("no verdict in {effects:?}"))
    }

    #[test]
    fn ac_27_one_stream_retracts_the_abandoned_attempt() {
        let mut recovery = after(vec![
            began(current()),
            allocated(current(), "t1", RecordKind::Thinking),
            allocated(current(), "a1", RecordKind::Assistant),
        ]);
        assert_eq!(
            recovery.retractable(),
            [MessageId::new("t1"), MessageId::new("a1")]
        );
        assert_eq!(
            recovery.apply(&BUNDLE, reset(current())),
            retraction(GEN, &["t1", "a1"])
        );
        // A repeated boundary with nothing new is a no-op (AC .28).
        assert_eq!(recovery.apply(&BUNDLE, reset(current())), Vec::new());
    }

    /// The generation half of AC .26, which the adapter leaves to the engine: a boundary
    /// claimed for a zero, stale or future generation, or for no active prompt, removes
    /// nothing.
    #[test]
    fn ac_26_a_zero_or_stale_generation_is_not_a_boundary() {
        let records = || {
            vec![
                began(current()),
                allocated(current(), "a1", RecordKind::Assistant),
            ]
        };
        for generation in [0, GEN - 1, GEN + 1] {
            let mut recovery = after(records());
            let claim = claim(Some("exec-1"), generation);
            assert_eq!(recovery.apply(&BUNDLE, reset(claim)), Vec::new());
            assert_eq!(recovery.retractable(), [MessageId::new("a1")]);
        }
        // No active prompt: nothing is current.
        let mut idle = after(Vec::new());
        assert_eq!(idle.apply(&BUNDLE, reset(current())), Vec::new());
        // The prompt moved on before the boundary arrived: the new prompt's records stay.
        let next = claim(Some("exec-1"), GEN + 1);
        let mut moved = after(vec![
            began(current()),
            allocated(current(), "old", RecordKind::Assistant),
            began(next.clone()),
            allocated(next, "new", RecordKind::Assistant),
        ]);
        assert_eq!(moved.apply(&BUNDLE, reset(current())), Vec::new());
        assert_eq!(moved.retractable(), [MessageId::new("new")]);
    }

    #[test]
    fn ac_26_a_boundary_must_name_the_tracked_execution() {
        for claimed in [claim(Some("exec-2"), GEN), claim(None, GEN)] {
            let mut recovery = after(vec![
                began(current()),
                allocated(current(), "a1", RecordKind::Assistant),
            ]);
            assert_eq!(recovery.apply(&BUNDLE, reset(claimed.clone())), Vec::new());
            // Records claimed for another execution never join the attempt either.
            let _ = recovery.apply(&BUNDLE, allocated(claimed, "x1", RecordKind::Assistant));
            assert_eq!(recovery.retractable(), [MessageId::new("a1")]);
        }
    }

    #[test]
    fn a_launch_tracks_its_records_before_the_execution_is_bound() {
        let launch = claim(None, 1);
        let bound = claim(Some("exec-9"), 1);
        let mut recovery = after(vec![
            began(launch.clone()),
            allocated(launch, "a1", RecordKind::Assistant),
            RecoveryEvent::PromptBound {
                claim: bound.clone(),
            },
        ]);
        assert_eq!(
            recovery.apply(&BUNDLE, reset(bound)),
            retraction(1, &["a1"])
        );
    }

    #[test]
    fn a_new_execution_gets_a_new_tracker() {
        // Generations restart with a new execution; the old execution's records are gone.
        let other = claim(Some("exec-2"), 1);
        let mut recovery = after(vec![
            began(current()),
            allocated(current(), "a1", RecordKind::Assistant),
            began(other.clone()),
            allocated(other.clone(), "b1", RecordKind::Assistant),
        ]);
        assert_eq!(
            recovery.apply(&BUNDLE, reset(other)),
            retraction(1, &["b1"])
        );
        assert_eq!(recovery.apply(&BUNDLE, reset(current())), Vec::new());
    }

    #[test]
    fn ac_28_a_top_level_tool_call_commits_and_a_nested_one_does_not() {
        for (scope, retracted) in [
            (ToolScope::TopLevel, vec!["a2"]),
            (ToolScope::Nested, vec!["a1", "a2"]),
        ] {
            let mut recovery = after(vec![
                began(current()),
                allocated(current(), "a1", RecordKind::Assistant),
                RecoveryEvent::ToolCall {
                    claim: current(),
                    scope,
                },
                allocated(current(), "a2", RecordKind::Assistant),
            ]);
            assert_eq!(
                recovery.apply(&BUNDLE, reset(current())),
                retraction(GEN, &retracted),
                "{scope:?}"
            );
        }
    }

    #[test]
    fn ac_28_retraction_never_erases_the_fences() {
        let mut recovery = after(vec![
            began(current()),
            RecoveryEvent::Chunk {
                claim: current(),
                role: Role::Assistant,
                text: "Let me look.".to_owned(),
                provider_diagnostic_candidate: false,
            },
            allocated(current(), "a1", RecordKind::Assistant),
        ]);
        assert_eq!(
            recovery.apply(&BUNDLE, reset(current())),
            retraction(GEN, &["a1"])
        );
        let effects = recovery.apply(&BUNDLE, failed(current()));
        assert_eq!(verdict(&effects).safety, Safety::OutputObserved);
        // The failed prompt ended its generation: a late boundary reaches nothing.
        let _ = recovery.apply(&BUNDLE, allocated(current(), "late", RecordKind::Assistant));
        assert_eq!(recovery.apply(&BUNDLE, reset(current())), Vec::new());
    }

    #[test]
    fn a_cancelled_or_handed_off_prompt_and_a_teardown_end_tracking() {
        for end in [
            RecoveryEvent::PromptEnded {
                claim: current(),
                reason: PromptEnd::Cancelled,
            },
            RecoveryEvent::PromptEnded {
                claim: current(),
                reason: PromptEnd::HandedOff,
            },
            RecoveryEvent::ExecutionTornDown {
                execution_id: Some("exec-1".to_owned()),
            },
            RecoveryEvent::ExecutionTornDown { execution_id: None },
        ] {
            let mut recovery = after(vec![
                began(current()),
                allocated(current(), "a1", RecordKind::Assistant),
                end.clone(),
            ]);
            assert_eq!(
                recovery.apply(&BUNDLE, reset(current())),
                Vec::new(),
                "{end:?}"
            );
        }
        // Another execution's teardown leaves the tracked one alone.
        let mut recovery = after(vec![
            began(current()),
            allocated(current(), "a1", RecordKind::Assistant),
            RecoveryEvent::ExecutionTornDown {
                execution_id: Some("exec-2".to_owned()),
            },
        ]);
        assert_eq!(
            recovery.apply(&BUNDLE, reset(current())),
            retraction(GEN, &["a1"])
        );
    }

    fn notice(attempt: u32) -> Notice {
        Notice {
            reason: "Provider overloaded".to_owned(),
            provider: "anthropic".to_owned(),
            attempt,
            max_attempts: 5,
            deadline: UNIX_EPOCH + Duration::from_secs(1_000),
        }
    }

    #[test]
    fn ac_10_ending_the_retry_retires_notices_and_the_evidence() {
        let mut recovery = after(vec![began(current())]);
        let scheduled =
            recovery.apply(&BUNDLE, RecoveryEvent::RetryScheduled { notice: notice(1) });
        assert_eq!(scheduled, [Effect::Notice(NoticeEffect::ListNotices)]);
        let listed = recovery.apply(
            &BUNDLE,
            RecoveryEvent::NoticesListed {
                notices: Vec::new(),
            },
        );
        assert!(matches!(
            listed.as_slice(),
            [Effect::Notice(NoticeEffect::WriteNotice {
                target: WriteTarget::Create,
                ..
            })]
        ));
        let _ = recovery.apply(
            &BUNDLE,
            RecoveryEvent::NoticeWritten {
                notice_id: NoticeId::new("n1"),
            },
        );
        let ended = recovery.apply(
            &BUNDLE,
            RecoveryEvent::RetryEnded {
                ending: Ending::Exhausted,
            },
        );
        assert_eq!(
            ended,
            [
                Effect::Notice(NoticeEffect::ListNotices),
                Effect::Evidence(Outcome::Retired)
            ]
        );
        let listed = recovery.apply(
            &BUNDLE,
            RecoveryEvent::NoticesListed {
                notices: vec![ListedNotice {
                    id: NoticeId::new("n1"),
                    marker: Marker::Retrying,
                }],
            },
        );
        assert_eq!(
            listed,
            [Effect::Notice(NoticeEffect::DeleteNotices {
                ids: vec![NoticeId::new("n1")]
            })]
        );
        // The evidence now reads as unknown until a new attempt binds.
        let effects = recovery.apply(&BUNDLE, failed(current()));
        assert_eq!(verdict(&effects).safety, Safety::LifecycleRetired);
    }

    #[test]
    fn ac_11_a_granted_cancel_disarms_first_and_retires_the_evidence_last() {
        let mut recovery = after(vec![
            began(current()),
            RecoveryEvent::RetryScheduled { notice: notice(1) },
        ]);
        assert_eq!(
            recovery.apply(
                &BUNDLE,
                RecoveryEvent::RetryCancelRequested {
                    authorization: Authorization::Granted,
                },
            ),
            [
                Effect::Notice(NoticeEffect::DisarmRetry),
                Effect::Notice(NoticeEffect::ShowManualRecovery),
                Effect::Notice(NoticeEffect::Reply(CancelReply::Cancelled)),
                Effect::Evidence(Outcome::Retired),
            ]
        );
    }

    #[test]
    fn ac_11_a_refused_cancel_reveals_and_changes_nothing() {
        for authorization in [Authorization::Denied, Authorization::Foreign] {
            let mut recovery = after(vec![
                began(current()),
                RecoveryEvent::RetryScheduled { notice: notice(1) },
            ]);
            assert_eq!(
                recovery.apply(
                    &BUNDLE,
                    RecoveryEvent::RetryCancelRequested { authorization },
                ),
                [Effect::Notice(NoticeEffect::Reply(CancelReply::Refused))]
            );
            let effects = recovery.apply(&BUNDLE, failed(current()));
            assert_eq!(verdict(&effects).safety, Safety::Safe, "{authorization:?}");
        }
    }

    #[test]
    fn an_ordinary_successful_turn_retires_nothing() {
        let mut recovery = after(vec![began(current())]);
        assert_eq!(
            recovery.apply(
                &BUNDLE,
                RecoveryEvent::RetryEnded {
                    ending: Ending::TurnSucceeded,
                },
            ),
            Vec::new()
        );
        let effects = recovery.apply(&BUNDLE, failed(current()));
        assert_eq!(verdict(&effects).safety, Safety::Safe);
    }

    /// The event-log format: every event reads from, and writes back to, its JSON line.
    #[test]
    fn every_event_round_trips_through_its_log_line() {
        let lines = [
            r#"{"event":"prompt_began","execution_id":"exec-1","generation":7}"#,
            r#"{"event":"prompt_bound","execution_id":"exec-1","generation":7}"#,
            r#"{"event":"model_settled","model_id":"claude-sonnet-4"}"#,
            r#"{"event":"chunk","execution_id":"exec-1","generation":7,"role":"assistant","text":"x","diagnostic_candidate":true}"#,
            r#"{"event":"partial_result","execution_id":"exec-1","generation":7}"#,
            r#"{"event":"tool_call","execution_id":"exec-1","generation":7,"scope":"nested"}"#,
            r#"{"event":"tool_update","execution_id":"exec-1","generation":7}"#,
            r#"{"event":"record_allocated","execution_id":"exec-1","generation":7,"message_id":"a1","kind":"assistant"}"#,
            r#"{"event":"record_continued","execution_id":"exec-1","generation":7,"message_id":"a1","kind":"thinking"}"#,
            r#"{"event":"response_attempt_reset","execution_id":"exec-1","generation":7}"#,
            r#"{"event":"prompt_returned","execution_id":"exec-1","generation":7,"occurred_at":"2026-10-01T08:00:00Z"}"#,
            r#"{"event":"prompt_failed","execution_id":"exec-1","generation":7,"error":{"code":-32603,"message":"Internal error","data":{"errorKind":"server_error"}},"occurred_at":"2026-10-01T08:00:00Z"}"#,
            r#"{"event":"prompt_ended","execution_id":"exec-1","generation":7,"reason":"handed_off"}"#,
            r#"{"event":"execution_torn_down","execution_id":"exec-1"}"#,
            r#"{"event":"lifecycle_retired"}"#,
            r#"{"event":"event_unreadable"}"#,
            r#"{"event":"model_settled","model_id":"gpt-5","execution_id":"exec-2"}"#,
            r#"{"event":"retry_scheduled","reason":"Provider overloaded","provider":"anthropic","attempt":2,"max_attempts":5,"deadline":"2026-10-01T08:00:10Z"}"#,
            r#"{"event":"retry_ended","ending":"exhausted"}"#,
            r#"{"event":"retry_cancel_requested","authorization":"foreign"}"#,
            r#"{"event":"notices_listed","notices":[{"notice_id":"n1","marker":"retrying"},{"notice_id":"m1","marker":"unreadable"}]}"#,
            r#"{"event":"notice_list_failed"}"#,
            r#"{"event":"notice_written","notice_id":"n1"}"#,
            r#"{"event":"notice_write_failed"}"#,
            r#"{"event":"notices_deleted","failed":["n1"]}"#,
        ];
        for line in lines {
            let event: RecoveryEvent = serde_json::from_str(line).unwrap();
            let written: serde_json::Value = serde_json::to_value(&event).unwrap();
            let read: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(written, read, "{line}");
        }
        // Defaults: a tool call is top-level, a chunk unmarked; unknown fields are refused.
        let tool: RecoveryEvent =
            serde_json::from_str(r#"{"event":"tool_call","execution_id":"e","generation":1}"#)
                .unwrap();
        assert_eq!(
            tool,
            RecoveryEvent::ToolCall {
                claim: claim(Some("e"), 1),
                scope: ToolScope::TopLevel
            }
        );
        for bad in [
            r#"{"event":"tool_call","execution_id":"e","generation":1,"tool_call_id":"t1"}"#,
            r#"{"event":"retry_scheduled","reason":"r","provider":"p","attempt":1,"max_attempts":5,"deadline":"soon"}"#,
            r#"{"event":"notices_listed","notices":[{"notice_id":"n1","marker":"maybe"}]}"#,
        ] {
            assert!(serde_json::from_str::<RecoveryEvent>(bad).is_err(), "{bad}");
        }
    }
}
