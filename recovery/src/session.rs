//! One session's prompt-attempt evidence: correlation (AC .2), the output and effect fences
//! (AC .8, .21), the provider-diagnostic record and its correlation with the terminal failure
//! (AC .16, .20, .21, .23), Cursor's `RetriableError` barrier (AC .12–.15), and the verdict.
//!
//! The state is one record per session, replaced when a prompt attempt begins. Every event
//! claims an identity (execution id, prompt generation); the record checks it before the event
//! counts, and everything missing fails closed: no record, a poisoned identity, a zero
//! generation or an absent execution id never authorise recovery.
//!
//! Normalization for diagnostic–terminal containment (AC .23, reference §H.4): both texts go
//! through the provider-message tier ([`faultline_runtime::sanitize::provider_message`]) — trim, collapse
//! whitespace runs, and also redact credentials, URLs and ids and trim trailing `.:;,-`. The
//! spec's trim-and-collapse alone is not enough here: the terminal message reaches the engine
//! already projected through that tier, so a diagnostic normalized differently could never be
//! contained in it whenever it carries a URL, an id or a final full stop. Redaction is applied
//! identically to both sides, so it can make two different texts equal only where they differ
//! in redacted values; containment stays case-sensitive and one-directional.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::cursor::{self, CURSOR_PROVIDER_ID, RetriableChunk};
use crate::projection::{
    ProjectionSource, PromptError, ProviderProjection, project_prompt_error, projected_message,
};
use faultline_runtime::sanitize;
use faultline_runtime::vocab::{Class, Confidence, Phase};
use faultline_runtime::{Bundle, Classification, Evidence};

/// The identity an event claims: the agent execution and the prompt generation it belongs to.
/// A generation of zero is no generation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The agent execution id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<String>,
    /// The prompt generation.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Who a streamed chunk is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The assistant's message.
    Assistant,
    /// The assistant's thought or reasoning.
    Thought,
    /// The user's own message, echoed.
    User,
}

/// What the lifecycle saw of the prompt when it marked it terminal: an immutable snapshot
/// carried on the failure, so the verdict does not depend on whether stream events reach the
/// engine before or after the failure.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LifecycleSnapshot {
    /// Whether the lifecycle's evidence is complete.
    pub evidence_known: bool,
    /// Output was observed.
    #[serde(default)]
    pub output_observed: bool,
    /// Tool activity was observed.
    #[serde(default)]
    pub effect_observed: bool,
    /// The first marked diagnostic's text, if one was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostic_text: Option<String>,
}

/// An event of one session, in the order the orchestrator received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    /// A prompt attempt begins; it replaces any earlier record of the session. An initial
    /// launch has no execution id yet and generation 1.
    PromptBegan {
        /// The identity known so far.
        #[serde(flatten)]
        claim: Claim,
    },
    /// The attempt's execution id and generation became known.
    PromptBound {
        /// The full identity.
        #[serde(flatten)]
        claim: Claim,
    },
    /// The session settled its model (a configuration or model update with a non-empty id).
    ModelSettled {
        /// The model id.
        model_id: String,
    },
    /// A streamed chunk. `diagnostic_candidate` is the marker decided once at the ACP
    /// conversion boundary ([`diagnostic_candidate`]); absent means ordinary output.
    Chunk {
        /// Whose chunk.
        #[serde(flatten)]
        claim: Claim,
        /// Who wrote it.
        role: Role,
        /// Its text.
        text: String,
        /// The provider-diagnostic candidate marker.
        #[serde(default)]
        diagnostic_candidate: bool,
    },
    /// A partial utility result (output).
    PartialResult {
        /// Whose result.
        #[serde(flatten)]
        claim: Claim,
    },
    /// A new tool call (an effect).
    ToolCall {
        /// Whose tool call.
        #[serde(flatten)]
        claim: Claim,
    },
    /// An update of an in-flight tool call (an effect).
    ToolUpdate {
        /// Whose update.
        #[serde(flatten)]
        claim: Claim,
    },
    /// `session/prompt` returned successfully.
    PromptReturned {
        /// Whose prompt.
        #[serde(flatten)]
        claim: Claim,
        /// When (RFC 3339); timing hints are validated against it.
        occurred_at: String,
    },
    /// `session/prompt` returned an error.
    PromptFailed {
        /// Whose prompt.
        #[serde(flatten)]
        claim: Claim,
        /// The error as returned.
        error: PromptError,
        /// When (RFC 3339); timing hints are validated against it.
        occurred_at: String,
        /// The lifecycle's snapshot, when the failure arrives through it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lifecycle: Option<LifecycleSnapshot>,
    },
    /// The session's retry-notice lifecycle was retired (a retry loop's ownership ended):
    /// evidence reads as unknown until a new attempt binds its full identity.
    LifecycleRetired,
}

/// Whether recovery may be automatic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// The boundary is pre-result and effect-safe and the code's policy allows retry or
    /// fallback: the orchestrator may recover without asking.
    Automatic,
    /// Stop and expose manual recovery.
    Manual,
}

/// Why a failure boundary is, or is not, pre-result safe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Safety {
    /// No output, no tool activity, identity complete and current.
    Safe,
    /// The only output was a recorded diagnostic that the terminal failure confirms.
    SafeDiagnosticConfirmed {
        /// The shared code.
        code: String,
    },
    /// No attempt was ever begun for this session.
    NoRecord,
    /// A retry lifecycle was retired and no new attempt has bound its identity since.
    LifecycleRetired,
    /// The failure belongs to another execution or generation than the current attempt.
    Stale,
    /// The evidence is incomplete: an event without the identity the record had bound, or a
    /// conflicting bind, poisoned it; or the lifecycle said so.
    EvidenceUnknown,
    /// The attempt has no execution id.
    MissingExecution,
    /// The attempt has no (non-zero) generation.
    ZeroGeneration,
    /// Tool activity happened: a retry could repeat it.
    EffectObserved,
    /// Assistant, thought or partial-result output happened.
    OutputObserved,
    /// A diagnostic was recorded, but the terminal failure classifies to another code (or to
    /// none that is high-confidence and fallback-eligible).
    DiagnosticCodeDiffers {
        /// The recorded diagnostic's code.
        recorded: String,
        /// The terminal message's code.
        terminal: String,
    },
    /// A diagnostic was recorded with the terminal's code, but its text is not contained in
    /// the terminal message (prose quoting the error).
    DiagnosticNotContained {
        /// The shared code.
        code: String,
    },
}

impl Safety {
    /// Whether the boundary is pre-result safe.
    pub fn is_safe(&self) -> bool {
        matches!(self, Safety::Safe | Safety::SafeDiagnosticConfirmed { .. })
    }
}

impl std::fmt::Display for Safety {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Safety::Safe => {
                f.write_str("pre-result: no output and no tool activity in the current attempt")
            }
            Safety::SafeDiagnosticConfirmed { code } => write!(
                f,
                "pre-result: the only output was a `{code}` diagnostic the terminal failure contains"
            ),
            Safety::NoRecord => {
                f.write_str("unsafe: no prompt attempt was recorded for the session")
            }
            Safety::LifecycleRetired => f.write_str(
                "unsafe: the retry lifecycle was retired and no new attempt bound its identity",
            ),
            Safety::Stale => {
                f.write_str("unsafe: the failure belongs to another execution or generation")
            }
            Safety::EvidenceUnknown => {
                f.write_str("unsafe: the attempt's evidence is incomplete (identity poisoned)")
            }
            Safety::MissingExecution => f.write_str("unsafe: the attempt has no execution id"),
            Safety::ZeroGeneration => f.write_str("unsafe: the attempt has no prompt generation"),
            Safety::EffectObserved => f.write_str("unsafe: tool activity was observed"),
            Safety::OutputObserved => f.write_str("unsafe: output was observed"),
            Safety::DiagnosticCodeDiffers { recorded, terminal } => write!(
                f,
                "unsafe: the recorded diagnostic is `{recorded}` but the terminal failure is `{terminal}`"
            ),
            Safety::DiagnosticNotContained { code } => write!(
                f,
                "unsafe: the `{code}` diagnostic's text is not contained in the terminal message"
            ),
        }
    }
}

/// The decision on one terminal failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The sanitized failure that crossed the boundary.
    pub projection: ProviderProjection,
    /// Its classification.
    pub classification: Classification,
    /// The recorded diagnostic's code, if one was recorded and not cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_diagnostic: Option<String>,
    /// Whether the boundary is pre-result safe, and why.
    pub safety: Safety,
    /// What the orchestrator may do.
    pub disposition: Disposition,
}

/// What one event did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// A new attempt record.
    AttemptBegan,
    /// The identity was bound (or adopted).
    Bound,
    /// A conflicting bind or an identity-less event poisoned the evidence.
    Poisoned,
    /// The event belongs to another execution or generation: ignored.
    Stale,
    /// No attempt is recorded: ignored.
    NoRecord,
    /// The settled model was recorded.
    ModelSettled,
    /// The output fence closed (sticky for the attempt); a recorded diagnostic was cleared if
    /// `cleared_diagnostic`.
    Output {
        /// Whether a recorded diagnostic was cleared.
        cleared_diagnostic: bool,
    },
    /// The effect fence closed (sticky for the attempt).
    Effect,
    /// A marked chunk was recorded as the attempt's diagnostic.
    DiagnosticRecorded {
        /// Its code.
        code: String,
    },
    /// A marked chunk was not recorded: output or tools came first, or a diagnostic already
    /// is (the first wins).
    DiagnosticIgnored,
    /// A marked chunk does not classify high-confidence and fallback-eligible: output.
    DiagnosticDemoted,
    /// A chunk that counts as nothing (a user echo, an empty chunk).
    Nothing,
    /// Cursor's control chunk: suppressed from the transcript, pending until the prompt
    /// settles.
    CursorMarkerPending,
    /// A pending Cursor marker was superseded by progress: Cursor resumed its own attempt.
    CursorMarkerSuperseded,
    /// The prompt completed normally.
    Completed,
    /// A terminal failure and its verdict (exactly one per prompt).
    Failed(Box<Verdict>),
    /// The retry lifecycle was retired.
    Retired,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Diagnostic {
    code: String,
    text: String,
}

/// The evidence of the current attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Attempt {
    execution_id: Option<String>,
    generation: u64,
    evidence_known: bool,
    output: bool,
    effect: bool,
    diagnostic: Option<Diagnostic>,
    cursor_pending: Option<String>,
    /// Whether the attempt began after the retry lifecycle was retired: only such an attempt
    /// re-opens it, once its identity is fully bound.
    after_retirement: bool,
    /// The terminal outcome, once the prompt settled: immutable, so a re-delivered terminal
    /// event gets the same answer whatever arrived in between.
    settled: Option<Outcome>,
}

/// How an event's claim relates to the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Correlation {
    Current,
    Stale,
    Poisoned,
}

/// One session's recovery evidence.
#[derive(Debug, Clone)]
pub struct Session {
    provider_id: String,
    model_id: Option<String>,
    attempt: Option<Attempt>,
    retired: bool,
}

impl Session {
    /// A session whose adapter negotiated `provider_id` (e.g. `claude-acp`).
    pub fn new(provider_id: impl Into<String>) -> Session {
        Session {
            provider_id: provider_id.into(),
            model_id: None,
            attempt: None,
            retired: false,
        }
    }

    /// The code of the diagnostic the current attempt has recorded (and not cleared), if any.
    pub fn recorded_diagnostic(&self) -> Option<&str> {
        self.attempt
            .as_ref()
            .and_then(|attempt| attempt.diagnostic.as_ref())
            .map(|diagnostic| diagnostic.code.as_str())
    }

    /// Applies one event; `bundle` classifies texts (diagnostics and terminal messages).
    pub fn apply(&mut self, bundle: &Bundle, event: &Event) -> Outcome {
        match event {
            Event::PromptBegan { claim } => {
                self.attempt = Some(Attempt {
                    execution_id: claim.execution_id.clone().filter(|id| !id.is_empty()),
                    generation: claim.generation,
                    evidence_known: true,
                    output: false,
                    effect: false,
                    diagnostic: None,
                    cursor_pending: None,
                    after_retirement: self.retired,
                    settled: None,
                });
                self.reopen_if_bound();
                Outcome::AttemptBegan
            }
            Event::PromptBound { claim } => self.bind(claim),
            Event::ModelSettled { model_id } => {
                if !model_id.is_empty() {
                    self.model_id = Some(model_id.clone());
                }
                Outcome::ModelSettled
            }
            Event::Chunk {
                claim,
                role,
                text,
                diagnostic_candidate,
            } => self.chunk(bundle, claim, *role, text, *diagnostic_candidate),
            Event::PartialResult { claim } => self.fence(claim, Fence::Output),
            Event::ToolCall { claim } => self.fence(claim, Fence::NewTool),
            Event::ToolUpdate { claim } => self.fence(claim, Fence::ToolUpdate),
            Event::PromptReturned { claim, occurred_at } => {
                self.returned(bundle, claim, occurred_at)
            }
            Event::PromptFailed {
                claim,
                error,
                occurred_at,
                lifecycle,
            } => {
                if let Some(settled) = self.settled(claim) {
                    return settled;
                }
                let projection =
                    project_prompt_error(error, &self.provider_id, self.model_id.as_deref());
                self.failed(bundle, claim, projection, occurred_at, lifecycle.as_ref())
            }
            Event::LifecycleRetired => {
                self.retired = true;
                // The current attempt began before this retirement: it can never re-open it.
                if let Some(attempt) = self.attempt.as_mut() {
                    attempt.after_retirement = false;
                }
                Outcome::Retired
            }
        }
    }

    /// A retired lifecycle re-opens only once a new attempt's full identity is bound.
    fn reopen_if_bound(&mut self) {
        if let Some(attempt) = &self.attempt
            && attempt.after_retirement
            && attempt.execution_id.is_some()
            && attempt.generation != 0
        {
            self.retired = false;
        }
    }

    fn bind(&mut self, claim: &Claim) -> Outcome {
        let Some(attempt) = self.attempt.as_mut() else {
            return Outcome::NoRecord;
        };
        let execution = claim.execution_id.as_deref().filter(|id| !id.is_empty());
        // A bind that contradicts, or drops, what the record already bound poisons it.
        let conflicts = match (attempt.execution_id.as_deref(), execution) {
            (Some(bound), Some(claimed)) => bound != claimed,
            (Some(_), None) => true,
            (None, _) => false,
        } || (attempt.generation != 0 && attempt.generation != claim.generation);
        if conflicts {
            attempt.evidence_known = false;
            return Outcome::Poisoned;
        }
        if attempt.execution_id.is_none() {
            attempt.execution_id = execution.map(str::to_owned);
        }
        if attempt.generation == 0 {
            attempt.generation = claim.generation;
        }
        self.reopen_if_bound();
        Outcome::Bound
    }

    /// Checks an event's claim against the record (reference §A.5): a missing value where the
    /// record has one poisons; a different one is stale and ignored; a value the record lacks
    /// is adopted.
    fn correlate(attempt: &mut Attempt, claim: &Claim) -> Correlation {
        let execution = claim.execution_id.as_deref().filter(|id| !id.is_empty());
        match (attempt.execution_id.as_deref(), execution) {
            (Some(_), None) => {
                attempt.evidence_known = false;
                return Correlation::Poisoned;
            }
            (Some(bound), Some(claimed)) if bound != claimed => return Correlation::Stale,
            _ => {}
        }
        match (attempt.generation, claim.generation) {
            (bound, 0) if bound != 0 => {
                attempt.evidence_known = false;
                return Correlation::Poisoned;
            }
            (bound, claimed) if bound != 0 && bound != claimed => return Correlation::Stale,
            _ => {}
        }
        if attempt.execution_id.is_none() {
            attempt.execution_id = execution.map(str::to_owned);
        }
        if attempt.generation == 0 {
            attempt.generation = claim.generation;
        }
        Correlation::Current
    }

    fn current(&mut self, claim: &Claim) -> Result<&mut Attempt, Outcome> {
        let attempt = self.attempt.as_mut().ok_or(Outcome::NoRecord)?;
        match Self::correlate(attempt, claim) {
            Correlation::Current => Ok(attempt),
            Correlation::Stale => Err(Outcome::Stale),
            Correlation::Poisoned => Err(Outcome::Poisoned),
        }
    }

    fn fence(&mut self, claim: &Claim, fence: Fence) -> Outcome {
        let attempt = match self.current(claim) {
            Ok(attempt) => attempt,
            Err(outcome) => return outcome,
        };
        match fence {
            Fence::Output => {
                attempt.output = true;
                // Ordinary output clears a recorded diagnostic: the attempt produced results.
                let cleared = attempt.diagnostic.take().is_some();
                // A partial result is not Cursor resuming its attempt: a pending marker stays.
                Outcome::Output {
                    cleared_diagnostic: cleared,
                }
            }
            Fence::NewTool | Fence::ToolUpdate => {
                // Tools never clear a diagnostic; the effect fence fails the attempt on its own.
                attempt.effect = true;
                if fence == Fence::NewTool {
                    attempt.cursor_pending = None;
                }
                Outcome::Effect
            }
        }
    }

    fn chunk(
        &mut self,
        bundle: &Bundle,
        claim: &Claim,
        role: Role,
        text: &str,
        marked: bool,
    ) -> Outcome {
        if role == Role::User || text.trim().is_empty() {
            return Outcome::Nothing;
        }
        let provider_id = self.provider_id.clone();
        let attempt = match self.current(claim) {
            Ok(attempt) => attempt,
            Err(outcome) => return outcome,
        };
        if provider_id == CURSOR_PROVIDER_ID
            && role == Role::Assistant
            && attempt.generation != 0
            && let RetriableChunk::Marker { observed } = cursor::retriable_chunk(text)
        {
            // Re-arms: a later marker replaces an earlier one.
            attempt.cursor_pending = Some(observed);
            return Outcome::CursorMarkerPending;
        }
        let superseded = attempt.cursor_pending.take().is_some();
        if marked && role == Role::Assistant {
            let outcome = Self::diagnostic(bundle, &provider_id, attempt, text);
            return match (superseded, outcome) {
                (true, Outcome::DiagnosticDemoted) => Outcome::CursorMarkerSuperseded,
                (_, outcome) => outcome,
            };
        }
        attempt.output = true;
        let cleared = attempt.diagnostic.take().is_some();
        if superseded {
            Outcome::CursorMarkerSuperseded
        } else {
            Outcome::Output {
                cleared_diagnostic: cleared,
            }
        }
    }

    /// A marked chunk (reference §D.3 `observeProviderDiagnostic`).
    fn diagnostic(
        bundle: &Bundle,
        provider_id: &str,
        attempt: &mut Attempt,
        text: &str,
    ) -> Outcome {
        let classification = classify_text(bundle, provider_id, text);
        if !fallback_eligible(&classification) {
            attempt.output = true;
            attempt.diagnostic = None;
            return Outcome::DiagnosticDemoted;
        }
        if attempt.output || attempt.effect || attempt.diagnostic.is_some() {
            return Outcome::DiagnosticIgnored;
        }
        // The marked chunk is output too; the correlation decides whether it is explained.
        attempt.output = true;
        attempt.diagnostic = Some(Diagnostic {
            code: classification.code.clone(),
            text: normalize(text),
        });
        Outcome::DiagnosticRecorded {
            code: classification.code,
        }
    }

    fn returned(&mut self, bundle: &Bundle, claim: &Claim, occurred_at: &str) -> Outcome {
        if let Some(settled) = self.settled(claim) {
            return settled;
        }
        let pending = match self.current(claim) {
            Ok(attempt) => attempt.cursor_pending.take(),
            Err(outcome) => return outcome,
        };
        match pending {
            // The barrier: the prompt settled with a marker still pending, so Cursor gave up.
            Some(observed) => {
                let message = projected_message(&observed);
                let projection = ProviderProjection {
                    source: ProjectionSource::CursorAcp,
                    message,
                    rpc_code: None,
                    error_kind: None,
                    provider_id: Some(CURSOR_PROVIDER_ID.to_owned()),
                    model_id: None,
                };
                self.failed(bundle, claim, projection, occurred_at, None)
            }
            None => {
                if let Some(attempt) = self.attempt.as_mut() {
                    attempt.settled = Some(Outcome::Completed);
                }
                Outcome::Completed
            }
        }
    }

    fn failed(
        &mut self,
        bundle: &Bundle,
        claim: &Claim,
        projection: ProviderProjection,
        occurred_at: &str,
        lifecycle: Option<&LifecycleSnapshot>,
    ) -> Outcome {
        let now = faultline_runtime::timing::parse_instant(occurred_at).unwrap_or(SystemTime::UNIX_EPOCH);
        let provider_id = self.provider_id.clone();
        let (safety, recorded, phase, current) =
            self.safety(bundle, claim, &projection.message, lifecycle);
        let evidence = Evidence {
            phase: Some(phase),
            provider_id: (!provider_id.is_empty()).then_some(provider_id),
            stderr: Some(projection.message.clone()),
            ..Evidence::default()
        };
        let classification = bundle.classify_at(&evidence, now);
        let disposition = if safety.is_safe() && recoverable(&classification) {
            Disposition::Automatic
        } else {
            Disposition::Manual
        };
        let outcome = Outcome::Failed(Box::new(Verdict {
            projection,
            classification,
            recorded_diagnostic: recorded,
            safety,
            disposition,
        }));
        if current && let Some(attempt) = self.attempt.as_mut() {
            attempt.settled = Some(outcome.clone());
        }
        outcome
    }

    /// The stored outcome when the claimed attempt already settled: a terminal event that
    /// claims it (or names nothing it contradicts) gets the same answer; exactly one per prompt.
    /// Like every event, it first correlates: a slot the record lacks is adopted.
    fn settled(&mut self, claim: &Claim) -> Option<Outcome> {
        let attempt = self.attempt.as_mut()?;
        let settled = attempt.settled.clone()?;
        let execution = claim.execution_id.as_deref().filter(|id| !id.is_empty());
        let same_execution = match (attempt.execution_id.as_deref(), execution) {
            (Some(bound), Some(claimed)) => bound == claimed,
            (Some(_), None) => false,
            (None, _) => true,
        };
        let same_generation = match (attempt.generation, claim.generation) {
            (0, _) => true,
            (_, 0) => false,
            (bound, claimed) => bound == claimed,
        };
        if !(same_execution && same_generation) {
            return None;
        }
        Self::correlate(attempt, claim);
        Some(settled)
    }

    /// The pre-result predicate (reference §D.1, §D.4), failing closed on every missing piece;
    /// also the lifecycle phase the evidence implies (§A.6).
    fn safety(
        &mut self,
        bundle: &Bundle,
        claim: &Claim,
        terminal: &str,
        lifecycle: Option<&LifecycleSnapshot>,
    ) -> (Safety, Option<String>, Phase, bool) {
        let provider_id = self.provider_id.clone();
        let retired = self.retired;
        let Some(attempt) = self.attempt.as_mut() else {
            return (Safety::NoRecord, None, Phase::Streaming, false);
        };
        let correlation = Self::correlate(attempt, claim);
        if correlation != Correlation::Current {
            // Stale or identity-less evidence changes nothing: not the record, not the
            // pending Cursor marker, and its snapshot is not imported.
            let recorded = attempt.diagnostic.as_ref().map(|d| d.code.clone());
            let safety = if retired {
                Safety::LifecycleRetired
            } else if correlation == Correlation::Stale {
                Safety::Stale
            } else {
                Safety::EvidenceUnknown
            };
            return (safety, recorded, Phase::Streaming, false);
        }
        // A prompt error is the one failure; a pending Cursor marker is moot.
        attempt.cursor_pending = None;
        let mut output = attempt.output;
        let mut effect = attempt.effect;
        let mut known = attempt.evidence_known;
        // Ordinary output the lifecycle saw (marked diagnostics are not counted there).
        let mut lifecycle_output = false;
        if let Some(snapshot) = lifecycle {
            known &= snapshot.evidence_known;
            effect |= snapshot.effect_observed;
            lifecycle_output = snapshot.output_observed;
            output |= lifecycle_output;
            // The lifecycle's diagnostic counts only as the engine's own would: re-classified;
            // an empty or ineligible text is ordinary output; an eligible one is recorded only
            // if nothing was recorded or observed first (the first wins).
            if let Some(text) = snapshot.diagnostic_text.as_deref() {
                let classification = classify_text(bundle, &provider_id, text);
                let eligible = fallback_eligible(&classification) && !normalize(text).is_empty();
                if !eligible {
                    lifecycle_output = true;
                } else if attempt.diagnostic.is_none() && !attempt.output && !attempt.effect {
                    attempt.diagnostic = Some(Diagnostic {
                        code: classification.code,
                        text: normalize(text),
                    });
                }
                output = true;
            }
        }
        // The snapshot is evidence about this attempt: it stays merged into the record.
        attempt.evidence_known = known;
        attempt.output = output;
        attempt.effect = effect;
        let phase = if !known {
            Phase::Streaming
        } else if effect {
            Phase::ToolExecution
        } else if output {
            Phase::Streaming
        } else {
            Phase::PromptSend
        };
        let recorded = attempt.diagnostic.as_ref().map(|d| d.code.clone());
        let safety = if retired {
            Safety::LifecycleRetired
        } else if correlation == Correlation::Stale {
            Safety::Stale
        } else if correlation == Correlation::Poisoned || !known {
            Safety::EvidenceUnknown
        } else if attempt.execution_id.is_none() {
            Safety::MissingExecution
        } else if attempt.generation == 0 {
            Safety::ZeroGeneration
        } else if effect {
            Safety::EffectObserved
        } else if lifecycle_output {
            Safety::OutputObserved
        } else if !output {
            Safety::Safe
        } else {
            match &attempt.diagnostic {
                None => Safety::OutputObserved,
                Some(diagnostic) => {
                    let terminal_classification = classify_text(bundle, &provider_id, terminal);
                    let terminal_code = if fallback_eligible(&terminal_classification) {
                        terminal_classification.code
                    } else {
                        String::new()
                    };
                    if terminal_code != diagnostic.code {
                        Safety::DiagnosticCodeDiffers {
                            recorded: diagnostic.code.clone(),
                            terminal: terminal_classification_name(&terminal_code),
                        }
                    } else if diagnostic.text.is_empty()
                        || !normalize(terminal).contains(&diagnostic.text)
                    {
                        Safety::DiagnosticNotContained {
                            code: diagnostic.code.clone(),
                        }
                    } else {
                        Safety::SafeDiagnosticConfirmed {
                            code: diagnostic.code.clone(),
                        }
                    }
                }
            }
        };
        (safety, recorded, phase, true)
    }
}

fn terminal_classification_name(code: &str) -> String {
    if code.is_empty() {
        "no high-confidence, fallback-eligible code".to_owned()
    } else {
        code.to_owned()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fence {
    Output,
    NewTool,
    ToolUpdate,
}

/// The diagnostic normalization of this module (see the module docs).
pub fn normalize(text: &str) -> String {
    sanitize::provider_message(text)
}

/// A chunk or terminal text as the marker and the correlation classify it: phase
/// `prompt_send`, the adapter's provider id, the text as standard error.
fn text_evidence(provider_id: &str, text: &str) -> Evidence {
    Evidence {
        phase: Some(Phase::PromptSend),
        provider_id: (!provider_id.is_empty()).then(|| provider_id.to_owned()),
        stderr: Some(text.to_owned()),
        ..Evidence::default()
    }
}

/// Classifies [`text_evidence`]. The clock is fixed (timing hints play no part here), so the
/// result is deterministic.
fn classify_text(bundle: &Bundle, provider_id: &str, text: &str) -> Classification {
    bundle.classify_at(&text_evidence(provider_id, text), SystemTime::UNIX_EPOCH)
}

fn fallback_eligible(classification: &Classification) -> bool {
    classification.confidence == Confidence::High && classification.fallback_allowed
}

/// Whether a classification lets policy recover at all (retry or fallback) once the boundary
/// is safe: a low-confidence or unclassified result never does.
fn recoverable(classification: &Classification) -> bool {
    classification.confidence != Confidence::Low
        && classification.class != Class::Unclassified
        && (classification.auto_retryable || classification.fallback_allowed)
}

/// The provider-diagnostic candidate marker (AC .20), decided once at the ACP conversion
/// boundary: an assistant chunk whose text classifies high-confidence and fallback-eligible
/// for this adapter's provider. A user or thought chunk, or an adapter without an id, never
/// marks.
///
/// This runs on every streamed chunk, so [`Bundle::may_classify`] screens the chunk first:
/// ordinary prose is rejected without being redacted or classified.
pub fn diagnostic_candidate(bundle: &Bundle, provider_id: &str, role: Role, text: &str) -> bool {
    if role != Role::Assistant || provider_id.is_empty() || text.trim().is_empty() {
        return false;
    }
    let evidence = text_evidence(provider_id, text);
    bundle.may_classify(&evidence)
        && fallback_eligible(&bundle.classify_at(&evidence, SystemTime::UNIX_EPOCH))
}

/// The launch prompt as it may be stored and sent on every attempt, attempt 0 included
/// (AC .29): credential-only redaction, unbounded, so task and session ids the agent's tools
/// need survive. Provider output and failure reasons use the diagnostic tier instead.
pub fn redact_launch_prompt(prompt: &str) -> String {
    sanitize::credentials_unbounded(prompt)
}
