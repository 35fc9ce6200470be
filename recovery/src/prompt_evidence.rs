//! One agent session's prompt-attempt evidence, the engine's evidence part: correlation
//! (AC .2), the output and effect fences (AC .8, .21), the provider-diagnostic record and its
//! correlation with the terminal failure (AC .16, .20, .21, .23), Cursor's `RetriableError`
//! barrier (AC .12–.15), and the verdict.
//!
//! The state is one record per session, replaced when a prompt attempt begins. Every event
//! claims an identity (execution id, prompt generation); the record checks it before the event
//! counts, and everything missing fails closed: no record, a poisoned identity, a zero
//! generation, an absent execution id or an event of the session that could not be read never
//! authorise recovery. The normalization used for containment is described in
//! [`crate::prompt`].

use std::collections::HashMap;
use std::time::SystemTime;

use faultline_runtime::Bundle;
use faultline_runtime::Evidence;
use faultline_runtime::Phase;

use crate::ProviderProfile;
use crate::cursor::{self, RetriableChunk};
use crate::projection::{PromptError, ProviderProjection, project_prompt_error};
use crate::prompt::{
    Claim, Disposition, LifecycleSnapshot, MAX_PROVIDER_DIAGNOSTIC_BYTES, Outcome, Role, Safety,
    Verdict, classify_text, fallback_eligible, normalize_provider_diagnostic,
    provider_diagnostic_contained, recoverable,
};

#[derive(Debug, Clone, PartialEq, Eq)]
struct Diagnostic {
    code: String,
    /// The normalized raw text; `None` when it is longer than the bound, so never contained.
    text: Option<String>,
}

impl Diagnostic {
    fn new(code: String, raw: &str) -> Diagnostic {
        let text = normalize_provider_diagnostic(raw);
        Diagnostic {
            code,
            text: (text.len() <= MAX_PROVIDER_DIAGNOSTIC_BYTES).then_some(text),
        }
    }
}

/// The model the session settled, and the execution it was settled under (`None`: the current
/// record's, whose execution is not known yet).
#[derive(Debug, Clone, PartialEq, Eq)]
struct SettledModel {
    execution_id: Option<String>,
    model_id: String,
}

/// What the engine knows of an attempt's identity once it is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Registration {
    /// The execution id or the generation is still missing.
    Partial,
    /// Complete, and no earlier record of the session held it (or a later generation of the
    /// same execution).
    New,
    /// Complete, and an earlier record held it: that attempt's evidence is gone.
    Reused,
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
    /// A marked provider diagnostic of another execution or generation arrived while this
    /// attempt was current (AC .16: a stale generation stops automatic recovery).
    stale_diagnostic: bool,
    /// Whether the attempt began after the retry lifecycle was retired: only such an attempt
    /// re-opens it, once its identity is fully bound and new.
    after_retirement: bool,
    registration: Registration,
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
    model: Option<SettledModel>,
    attempt: Option<Attempt>,
    retired: bool,
    /// Per execution, the highest generation a record of this session has held in full: an
    /// identity at or below it is not a new attempt.
    highest_generation: HashMap<String, u64>,
    /// An event of the session could not be read: nothing is automatic any more.
    poisoned: bool,
}

impl PromptEvidence {
    /// A session of the provider `profile` describes.
    pub(crate) fn new(profile: &ProviderProfile) -> PromptEvidence {
        PromptEvidence {
            provider_id: profile.provider_id().to_owned(),
            retriable_error_barrier: profile.retriable_error_barrier(),
            model: None,
            attempt: None,
            retired: false,
            highest_generation: HashMap::new(),
            poisoned: false,
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

    /// A prompt attempt begins; it replaces any earlier record of the session, unless it names
    /// the current record's full identity again (a repeated begin keeps the record, fences
    /// included). A record whose full identity an earlier record already held starts poisoned:
    /// that attempt's evidence is gone, so nothing about it can be known.
    pub(crate) fn begin(&mut self, claim: &Claim) -> Outcome {
        let execution = claim.execution_id.as_deref().filter(|id| !id.is_empty());
        if let Some(attempt) = &self.attempt
            && execution.is_some()
            && claim.generation != 0
            && attempt.execution_id.as_deref() == execution
            && attempt.generation == claim.generation
        {
            return Outcome::AttemptRepeated;
        }
        // The settled model belongs to its execution: a begin of another or an unknown one
        // (a launch) leaves the next projection without it.
        if self.model.as_ref().is_some_and(|model| {
            model.execution_id.is_none() || model.execution_id.as_deref() != execution
        }) {
            self.model = None;
        }
        self.attempt = Some(Attempt {
            execution_id: execution.map(str::to_owned),
            generation: claim.generation,
            evidence_known: true,
            output: false,
            effect: false,
            diagnostic: None,
            cursor_pending: None,
            stale_diagnostic: false,
            after_retirement: self.retired,
            registration: Registration::Partial,
            settled: None,
        });
        if self.register(true) == Registration::Reused {
            return Outcome::Poisoned;
        }
        Outcome::AttemptBegan
    }

    /// The session settled its model, under `execution_id` (absent: the current record's).
    pub(crate) fn settle_model(&mut self, model_id: &str, execution_id: Option<&str>) -> Outcome {
        if !model_id.is_empty() {
            let execution_id = execution_id
                .filter(|id| !id.is_empty())
                .map(str::to_owned)
                .or_else(|| self.attempt.as_ref().and_then(|a| a.execution_id.clone()));
            self.model = Some(SettledModel {
                execution_id,
                model_id: model_id.to_owned(),
            });
        }
        Outcome::ModelSettled
    }

    /// The model a projection for a failure claiming `claim` carries: the one settled under
    /// the failing attempt's execution (the record's, or the claim's when the record has none
    /// yet); none for a claim that contradicts the record.
    fn projected_model(&self, claim: &Claim) -> Option<&str> {
        let model = self.model.as_ref()?;
        let record = self
            .attempt
            .as_ref()
            .and_then(|attempt| attempt.execution_id.as_deref());
        let claimed = claim.execution_id.as_deref().filter(|id| !id.is_empty());
        if let (Some(record), Some(claimed)) = (record, claimed)
            && record != claimed
        {
            return None;
        }
        let carried = match (model.execution_id.as_deref(), record.or(claimed)) {
            // Settled under the current record before its execution was known.
            (None, _) => record.is_none(),
            (Some(settled), Some(failing)) => settled == failing,
            (Some(_), None) => false,
        };
        carried.then_some(model.model_id.as_str())
    }

    /// Notes the current record's identity once it is complete: new, or reused (poisoned).
    /// A new identity completed by a begin or a bind (`binding`) re-opens a lifecycle retired
    /// before the attempt began; one completed by adopting an event's claim does not (F.6: the
    /// attempt must bind its full identity). Also gives a model settled before the execution
    /// was known the execution it was settled under.
    fn register(&mut self, binding: bool) -> Registration {
        let Some(attempt) = self.attempt.as_mut() else {
            return Registration::Partial;
        };
        if let (Some(execution), Some(model)) = (&attempt.execution_id, self.model.as_mut())
            && model.execution_id.is_none()
        {
            model.execution_id = Some(execution.clone());
        }
        if attempt.registration != Registration::Partial {
            return attempt.registration;
        }
        let Some(execution) = attempt.execution_id.clone() else {
            return Registration::Partial;
        };
        if attempt.generation == 0 {
            return Registration::Partial;
        }
        let highest = self.highest_generation.entry(execution).or_insert(0);
        if attempt.generation > *highest {
            *highest = attempt.generation;
            attempt.registration = Registration::New;
            if attempt.after_retirement && binding {
                self.retired = false;
            }
        } else {
            attempt.registration = Registration::Reused;
            attempt.evidence_known = false;
        }
        attempt.registration
    }

    /// An event of the session could not be read: every later verdict is manual.
    pub(crate) fn poison_session(&mut self) -> Outcome {
        self.poisoned = true;
        Outcome::SessionPoisoned
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
            return duplicate(settled);
        }
        // The projection carries the model settled under the failing execution, as it is now.
        let projection =
            project_prompt_error(error, &self.provider_id, self.projected_model(claim));
        let terminal = Terminal {
            raw: &error.message,
            structured: true,
        };
        self.failed(bundle, claim, projection, terminal, occurred_at, lifecycle)
    }

    /// The retry lifecycle was retired: evidence reads as unknown until a new attempt (one
    /// begun after the retirement, whose full identity no earlier record held) binds in full.
    pub(crate) fn retire(&mut self) -> Outcome {
        self.retired = true;
        // The current attempt began before this retirement: it can never re-open it.
        if let Some(attempt) = self.attempt.as_mut() {
            attempt.after_retirement = false;
        }
        Outcome::Retired
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
        if self.register(true) == Registration::Reused {
            return Outcome::Poisoned;
        }
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
            Correlation::Current => {}
            Correlation::Stale => return Err(Outcome::Stale),
            Correlation::Poisoned => return Err(Outcome::Poisoned),
        }
        // An adopted value may have completed the identity.
        self.register(false);
        self.attempt.as_mut().ok_or(Outcome::NoRecord)
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
    ///
    /// Any assistant or thought text counts, whitespace included (only the empty text and a
    /// user echo count as nothing): a whitespace-only chunk closes the output fence, but it is
    /// no sign that Cursor resumed, so it leaves a pending Cursor marker pending.
    pub(crate) fn chunk(
        &mut self,
        bundle: &Bundle,
        claim: &Claim,
        role: Role,
        text: &str,
        marked: bool,
    ) -> Outcome {
        if role == Role::User || text.is_empty() {
            return Outcome::Nothing;
        }
        let provider_id = self.provider_id.clone();
        let barrier = self.retriable_error_barrier;
        let attempt = match self.current(claim) {
            Ok(attempt) => attempt,
            Err(Outcome::Stale) if marked && role == Role::Assistant => {
                // A provider diagnostic of another generation: it proves nothing about the
                // current attempt, and AC .16 says it stops automatic recovery.
                if let Some(attempt) = self.attempt.as_mut() {
                    attempt.stale_diagnostic = true;
                }
                return Outcome::StaleProviderDiagnostic;
            }
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
        let superseded = !text.trim().is_empty() && attempt.cursor_pending.take().is_some();
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

    /// A marked chunk (reference §D.3 `observeProviderDiagnostic`, with AC .20/.21 deciding
    /// where the two disagree): the marker is trusted as carried and a marked chunk never
    /// clears a recorded diagnostic. Its text is classified only for its code: the first
    /// marked chunk before any output or tool activity is recorded when that code is
    /// high-confidence and fallback-eligible; otherwise it is output no terminal can explain.
    fn diagnostic(
        bundle: &Bundle,
        provider_id: &str,
        attempt: &mut Attempt,
        text: &str,
    ) -> Outcome {
        if attempt.diagnostic.is_some() || attempt.output || attempt.effect {
            // First wins; a later marked chunk neither overwrites nor clears it (AC .21, .23).
            attempt.output = true;
            return Outcome::ProviderDiagnosticIgnored;
        }
        attempt.output = true;
        let classification = classify_text(bundle, provider_id, text);
        if !fallback_eligible(&classification) || normalize_provider_diagnostic(text).is_empty() {
            return Outcome::ProviderDiagnosticDemoted;
        }
        // The marked chunk is output too; the correlation decides whether it is explained.
        attempt.diagnostic = Some(Diagnostic::new(classification.code.clone(), text));
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
            return duplicate(settled);
        }
        let pending = match self.current(claim) {
            Ok(attempt) => attempt.cursor_pending.take(),
            Err(outcome) => return outcome,
        };
        match pending {
            // The barrier: the prompt settled with a marker still pending, so Cursor gave up.
            Some(observed) => {
                let projection = ProviderProjection::cursor_retriable(&observed, &self.provider_id);
                let terminal = Terminal {
                    raw: &observed,
                    structured: false,
                };
                self.failed(bundle, claim, projection, terminal, occurred_at, None)
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
        terminal: Terminal<'_>,
        occurred_at: &str,
        lifecycle: Option<&LifecycleSnapshot>,
    ) -> Outcome {
        let now = faultline_runtime::parse_instant(occurred_at).unwrap_or(SystemTime::UNIX_EPOCH);
        let provider_id = self.provider_id.clone();
        let (safety, recorded, phase, current) =
            self.safety(bundle, claim, projection.message(), terminal, lifecycle);
        let mut evidence = Evidence::new()
            .with_phase(phase)
            .with_stderr(projection.message());
        evidence.provider_id = (!provider_id.is_empty()).then_some(provider_id);
        let classification = bundle.classify_at(&evidence, now);
        // Cursor's `RetriableError`, at the barrier or as a prompt error: same provider only
        // (AC .15), whatever its code's fallback flag says.
        let same_provider_only = self.retriable_error_barrier
            && (!terminal.structured
                || cursor::retriable_chunk(terminal.raw) != RetriableChunk::Ordinary);
        let disposition = if safety.is_safe() && recoverable(&classification, same_provider_only) {
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
            same_provider_only,
            duplicate: false,
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
        self.register(false);
        Some(settled)
    }

    /// The pre-result predicate (reference §D.1, §D.4), failing closed on every missing piece;
    /// also the lifecycle phase the evidence implies (§A.6). `projected` is the projection's
    /// message (what the terminal classifies as); containment reads `terminal.raw`.
    fn safety(
        &mut self,
        bundle: &Bundle,
        claim: &Claim,
        projected: &str,
        terminal: Terminal<'_>,
        lifecycle: Option<&LifecycleSnapshot>,
    ) -> (Safety, Option<String>, Phase, bool) {
        let provider_id = self.provider_id.clone();
        let poisoned = self.poisoned;
        let Some(attempt) = self.attempt.as_mut() else {
            let safety = if poisoned {
                Safety::SessionPoisoned
            } else {
                Safety::NoRecord
            };
            return (safety, None, Phase::Streaming, false);
        };
        let correlation = Self::correlate(attempt, claim);
        if correlation != Correlation::Current {
            // Stale or identity-less evidence changes nothing: not the record, not the
            // pending Cursor marker, and its snapshot is not imported.
            let recorded = attempt.diagnostic.as_ref().map(|d| d.code.clone());
            let safety = if poisoned {
                Safety::SessionPoisoned
            } else if self.retired {
                Safety::LifecycleRetired
            } else if correlation == Correlation::Stale {
                Safety::Stale
            } else {
                Safety::EvidenceUnknown
            };
            return (safety, recorded, Phase::Streaming, false);
        }
        // An adopted value may have completed the identity (and re-opened the lifecycle).
        self.register(false);
        let retired = self.retired;
        let Some(attempt) = self.attempt.as_mut() else {
            return (Safety::NoRecord, None, Phase::Streaming, false);
        };
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
                    attempt.diagnostic = Some(Diagnostic::new(classification.code, text));
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
        let safety = if poisoned {
            Safety::SessionPoisoned
        } else if retired {
            Safety::LifecycleRetired
        } else if !known {
            Safety::EvidenceUnknown
        } else if attempt.execution_id.is_none() {
            Safety::MissingExecution
        } else if attempt.generation == 0 {
            Safety::ZeroGeneration
        } else if effect {
            Safety::EffectObserved
        } else if lifecycle_output {
            Safety::OutputObserved
        } else if attempt.stale_diagnostic {
            Safety::StaleProviderDiagnostic
        } else if !output {
            Safety::Safe
        } else if !terminal.structured {
            // AC .16's exemption is for a structured `session/prompt` error: a prompt that
            // returned successfully explains no diagnostic, so it stays output.
            Safety::OutputObserved
        } else {
            match &attempt.diagnostic {
                None => Safety::OutputObserved,
                Some(diagnostic) => {
                    let terminal_classification = classify_text(bundle, &provider_id, projected);
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
                    } else if !diagnostic
                        .text
                        .as_deref()
                        .is_some_and(|text| provider_diagnostic_contained(text, terminal.raw))
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

/// The terminal failure's raw text, and whether it is a structured `session/prompt` error
/// (`false`: Cursor's barrier failure, after a prompt that returned successfully).
#[derive(Debug, Clone, Copy)]
struct Terminal<'a> {
    raw: &'a str,
    structured: bool,
}

/// A re-delivered terminal event of a settled attempt: the settled verdict again, marked as a
/// duplicate and manual, so it never authorises anything anew; a completion stays one.
fn duplicate(settled: Outcome) -> Outcome {
    match settled {
        Outcome::Failed(mut verdict) => {
            verdict.duplicate = true;
            verdict.disposition = Disposition::Manual;
            Outcome::Failed(verdict)
        }
        other => other,
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
