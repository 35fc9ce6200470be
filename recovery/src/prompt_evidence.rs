//! One agent session's prompt-attempt evidence, the engine's evidence part: correlation
//! (AC .2), the output and effect fences (AC .8, .21), the provider-diagnostic record and its
//! correlation with the terminal failure (AC .16, .20, .21, .23), Cursor's `RetriableError`
//! barrier (AC .12–.15), and the verdict.
//!
//! The state is one record per session, replaced when a prompt attempt begins. Every event
//! claims an identity (execution id, prompt generation); the record checks it before the event
//! counts, and everything missing fails closed: no record, a poisoned identity, a zero
//! generation or an absent execution id never authorise recovery. The normalization used for
//! containment is described in [`crate::prompt`].

use std::time::SystemTime;

use faultline_runtime::Bundle;
use faultline_runtime::Evidence;
use faultline_runtime::Phase;

use crate::ProviderProfile;
use crate::cursor::{self, RetriableChunk};
use crate::projection::{PromptError, ProviderProjection, project_prompt_error};
use crate::prompt::{
    Claim, Disposition, LifecycleSnapshot, Outcome, Role, Safety, Verdict, classify_text,
    fallback_eligible, normalize_provider_diagnostic, recoverable,
};

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

/// One agent session's prompt-attempt evidence: the engine's evidence part. See the
/// [module documentation](self).
#[derive(Debug, Clone)]
pub(crate) struct PromptEvidence {
    provider_id: String,
    /// Whether Cursor's `RetriableError` chunks form the barrier in this session.
    retriable_error_barrier: bool,
    model_id: Option<String>,
    attempt: Option<Attempt>,
    retired: bool,
}

impl PromptEvidence {
    /// A session of the provider `profile` describes.
    pub(crate) fn new(profile: &ProviderProfile) -> PromptEvidence {
        PromptEvidence {
            provider_id: profile.provider_id().to_owned(),
            retriable_error_barrier: profile.retriable_error_barrier(),
            model_id: None,
            attempt: None,
            retired: false,
        }
    }

    /// The code of the provider diagnostic the current attempt has recorded (and not
    /// cleared), if any.
    pub(crate) fn recorded_provider_diagnostic(&self) -> Option<&str> {
        self.attempt
            .as_ref()
            .and_then(|attempt| attempt.diagnostic.as_ref())
            .map(|diagnostic| diagnostic.code.as_str())
    }

    /// A prompt attempt begins; it replaces any earlier record of the session.
    pub(crate) fn begin(&mut self, claim: &Claim) -> Outcome {
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

    /// The session settled its model.
    pub(crate) fn settle_model(&mut self, model_id: &str) -> Outcome {
        if !model_id.is_empty() {
            self.model_id = Some(model_id.to_owned());
        }
        Outcome::ModelSettled
    }

    /// A partial utility result (output).
    pub(crate) fn partial_result(&mut self, claim: &Claim) -> Outcome {
        self.fence(claim, Fence::Output)
    }

    /// A new tool call (an effect).
    pub(crate) fn tool_call(&mut self, claim: &Claim) -> Outcome {
        self.fence(claim, Fence::NewTool)
    }

    /// An update of an in-flight tool call (an effect).
    pub(crate) fn tool_update(&mut self, claim: &Claim) -> Outcome {
        self.fence(claim, Fence::ToolUpdate)
    }

    /// `session/prompt` returned an error.
    pub(crate) fn prompt_failed(
        &mut self,
        bundle: &Bundle,
        claim: &Claim,
        error: &PromptError,
        occurred_at: &str,
        lifecycle: Option<&LifecycleSnapshot>,
    ) -> Outcome {
        if let Some(settled) = self.settled(claim) {
            return settled;
        }
        let projection = project_prompt_error(error, &self.provider_id, self.model_id.as_deref());
        self.failed(bundle, claim, projection, occurred_at, lifecycle)
    }

    /// The retry lifecycle was retired: evidence reads as unknown until a new attempt binds
    /// its full identity.
    pub(crate) fn retire(&mut self) -> Outcome {
        self.retired = true;
        // The current attempt began after this retirement: it can never re-open it.
        if let Some(attempt) = self.attempt.as_mut() {
            attempt.after_retirement = false;
        }
        Outcome::Retired
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

    /// The attempt's execution id and generation became known.
    pub(crate) fn bind(&mut self, claim: &Claim) -> Outcome {
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

    /// A streamed chunk; `marked` is the provider-diagnostic candidate marker.
    pub(crate) fn chunk(
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
        let barrier = self.retriable_error_barrier;
        let attempt = match self.current(claim) {
            Ok(attempt) => attempt,
            Err(outcome) => return outcome,
        };
        if barrier
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
                (true, Outcome::ProviderDiagnosticDemoted) => Outcome::CursorMarkerSuperseded,
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
            return Outcome::ProviderDiagnosticDemoted;
        }
        if attempt.output || attempt.effect || attempt.diagnostic.is_some() {
            return Outcome::ProviderDiagnosticIgnored;
        }
        // The marked chunk is output too; the correlation decides whether it is explained.
        attempt.output = true;
        attempt.diagnostic = Some(Diagnostic {
            code: classification.code.clone(),
            text: normalize_provider_diagnostic(text),
        });
        Outcome::ProviderDiagnosticRecorded {
            code: classification.code,
        }
    }

    /// `session/prompt` returned successfully.
    pub(crate) fn returned(
        &mut self,
        bundle: &Bundle,
        claim: &Claim,
        occurred_at: &str,
    ) -> Outcome {
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
                let projection = ProviderProjection::cursor_retriable(&observed, &self.provider_id);
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
        let now = faultline_runtime::parse_instant(occurred_at).unwrap_or(SystemTime::UNIX_EPOCH);
        let provider_id = self.provider_id.clone();
        let (safety, recorded, phase, current) =
            self.safety(bundle, claim, projection.message(), lifecycle);
        let mut evidence = Evidence::new()
            .with_phase(phase)
            .with_stderr(projection.message());
        evidence.provider_id = (!provider_id.is_empty()).then_some(provider_id);
        let classification = bundle.classify_at(&evidence, now);
        let disposition = if safety.is_safe() && recoverable(&classification) {
            Disposition::Automatic
        } else {
            Disposition::Manual
        };
        let outcome = Outcome::Failed(Box::new(Verdict {
            projection,
            classification,
            recorded_provider_diagnostic: recorded,
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
            if let Some(text) = snapshot.provider_diagnostic_text.as_deref() {
                let classification = classify_text(bundle, &provider_id, text);
                let eligible = fallback_eligible(&classification)
                    && !normalize_provider_diagnostic(text).is_empty();
                if !eligible {
                    lifecycle_output = true;
                } else if attempt.diagnostic.is_none() && !attempt.output && !attempt.effect {
                    attempt.diagnostic = Some(Diagnostic {
                        code: classification.code,
                        text: normalize_provider_diagnostic(text),
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
                        Safety::ProviderDiagnosticCodeDiffers {
                            recorded: diagnostic.code.clone(),
                            terminal: terminal_classification_name(&terminal_code),
                        }
                    } else if diagnostic.text.is_empty()
                        || !normalize_provider_diagnostic(terminal).contains(&diagnostic.text)
                    {
                        Safety::ProviderDiagnosticNotContained {
                            code: diagnostic.code.clone(),
                        }
                    } else {
                        Safety::SafeProviderDiagnosticConfirmed {
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
