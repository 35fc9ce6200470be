//! One prompt attempt's recovery evidence as an orchestrator sees it: the identity events
//! claim, the lifecycle's terminal snapshot, what each event did to the evidence ([`Outcome`])
//! and the verdict on a terminal failure ([`Verdict`], [`Safety`], [`Disposition`]); and the
//! text rules the engine and the ACP adapter share — the provider-diagnostic candidate marker
//! (AC .20), the normalization of provider diagnostics (AC .23) and the launch-prompt redaction
//! (AC .29).
//!
//! Normalization for diagnostic–terminal containment (AC .23): trim leading and trailing
//! whitespace and collapse every internal whitespace run to one space — nothing else. The
//! comparison is case-sensitive and one-directional, and it runs on the *raw* texts (the
//! diagnostic chunk as streamed, the terminal error's message before projection), never on
//! their redacted forms: redaction maps different texts to one placeholder (two URLs, two
//! keys), and its 2048-byte cut would hide a diagnostic's tail. A normalized diagnostic longer
//! than [`MAX_PROVIDER_DIAGNOSTIC_BYTES`] is never contained.

use std::time::SystemTime;

use faultline_runtime::redact_credentials;
use faultline_runtime::{Bundle, Classification, Evidence};
use faultline_runtime::{Class, Confidence, Phase};
use serde::{Deserialize, Serialize};

use crate::projection::ProviderProjection;

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
    /// The first marked provider diagnostic's text, if one was seen.
    #[serde(
        default,
        rename = "diagnostic_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_diagnostic_text: Option<String>,
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
    /// The only output was a recorded provider diagnostic that the terminal failure confirms.
    #[serde(rename = "safe_diagnostic_confirmed")]
    SafeProviderDiagnosticConfirmed {
        /// The shared code.
        code: String,
    },
    /// An event of the session could not be read: from then on nothing in the session is
    /// known for certain, so no verdict of it is ever automatic.
    SessionPoisoned,
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
    /// A provider diagnostic of another execution or generation arrived while this attempt
    /// was current (AC .16 lists a stale generation among what stops automatic recovery).
    #[serde(rename = "stale_diagnostic")]
    StaleProviderDiagnostic,
    /// A provider diagnostic was recorded, but the terminal failure classifies to another code
    /// (or to none that is high-confidence and fallback-eligible).
    #[serde(rename = "diagnostic_code_differs")]
    ProviderDiagnosticCodeDiffers {
        /// The recorded provider diagnostic's code.
        recorded: String,
        /// The terminal message's code.
        terminal: String,
    },
    /// A provider diagnostic was recorded with the terminal's code, but its text is not
    /// contained in the terminal message (prose quoting the error).
    #[serde(rename = "diagnostic_not_contained")]
    ProviderDiagnosticNotContained {
        /// The shared code.
        code: String,
    },
}

impl Safety {
    /// Whether the boundary is pre-result safe.
    pub fn is_safe(&self) -> bool {
        matches!(
            self,
            Safety::Safe | Safety::SafeProviderDiagnosticConfirmed { .. }
        )
    }
}

impl std::fmt::Display for Safety {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Safety::Safe => {
                f.write_str("pre-result: no output and no tool activity in the current attempt")
            }
            Safety::SafeProviderDiagnosticConfirmed { code } => write!(
                f,
                "pre-result: the only output was a `{code}` diagnostic the terminal failure contains"
            ),
            Safety::SessionPoisoned => f.write_str(
                "unsafe: an event of the session could not be read, so its evidence is unknown",
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
            Safety::StaleProviderDiagnostic => f.write_str(
                "unsafe: a provider diagnostic of another execution or generation arrived during the attempt",
            ),
            Safety::ProviderDiagnosticCodeDiffers { recorded, terminal } => write!(
                f,
                "unsafe: the recorded diagnostic is `{recorded}` but the terminal failure is `{terminal}`"
            ),
            Safety::ProviderDiagnosticNotContained { code } => write!(
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
    /// The recorded provider diagnostic's code, if one was recorded and not cleared.
    #[serde(
        default,
        rename = "recorded_diagnostic",
        skip_serializing_if = "Option::is_none"
    )]
    pub recorded_provider_diagnostic: Option<String>,
    /// Whether the boundary is pre-result safe, and why.
    pub safety: Safety,
    /// What the orchestrator may do.
    pub disposition: Disposition,
    /// Recovery may only retry the selected provider, never fall back to another: the
    /// failure is Cursor's `RetriableError` (AC .15), whatever its code's `fallback_allowed`
    /// says. An orchestrator and its class policy read this before the classification's flags.
    #[serde(default)]
    pub same_provider_only: bool,
    /// A re-delivery of a terminal event the attempt already settled: the settled verdict
    /// again, for information, with a `Manual` disposition — it authorises nothing anew.
    #[serde(default, skip_serializing_if = "is_false")]
    pub duplicate: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// What one event did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// A new attempt record.
    AttemptBegan,
    /// A begin of the attempt already current (the same full identity): its record and
    /// evidence are kept, fences included.
    AttemptRepeated,
    /// The identity was bound (or adopted).
    Bound,
    /// A conflicting bind or an identity-less event poisoned the evidence.
    Poisoned,
    /// The event belongs to another execution or generation: ignored.
    Stale,
    /// A marked provider diagnostic of another execution or generation: ignored as evidence,
    /// but it stops automatic recovery of the current attempt
    /// ([`Safety::StaleProviderDiagnostic`]).
    #[serde(rename = "stale_diagnostic")]
    StaleProviderDiagnostic,
    /// No attempt is recorded: ignored.
    NoRecord,
    /// The settled model was recorded.
    ModelSettled,
    /// The output fence closed (sticky for the attempt); a recorded provider diagnostic was
    /// cleared if `cleared_diagnostic`.
    Output {
        /// Whether a recorded provider diagnostic was cleared.
        cleared_diagnostic: bool,
    },
    /// The effect fence closed (sticky for the attempt).
    Effect,
    /// A marked chunk was recorded as the attempt's provider diagnostic.
    #[serde(rename = "diagnostic_recorded")]
    ProviderDiagnosticRecorded {
        /// Its code.
        code: String,
    },
    /// A marked chunk was not recorded: output or tools came first, or a provider diagnostic
    /// already is (the first wins).
    #[serde(rename = "diagnostic_ignored")]
    ProviderDiagnosticIgnored,
    /// A marked chunk does not classify high-confidence and fallback-eligible: output.
    #[serde(rename = "diagnostic_demoted")]
    ProviderDiagnosticDemoted,
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
    /// An event of the session could not be read: every later verdict of the session is
    /// manual ([`Safety::SessionPoisoned`]).
    SessionPoisoned,
}

/// The longest normalized provider diagnostic that can be contained in a terminal message,
/// in bytes; a longer one never is (AC .23 asks for containment of the whole text).
pub const MAX_PROVIDER_DIAGNOSTIC_BYTES: usize = 64 << 10;

/// The normalization of a provider diagnostic and of the terminal message it must be contained
/// in (AC .23): trimmed, every whitespace run collapsed to one space, nothing redacted; see the
/// [module documentation](self).
pub fn normalize_provider_diagnostic(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether the normalized `diagnostic` is contained, case-sensitively, in the normalized raw
/// `terminal` message (AC .23): never when it is empty or longer than
/// [`MAX_PROVIDER_DIAGNOSTIC_BYTES`].
pub fn provider_diagnostic_contained(diagnostic: &str, terminal: &str) -> bool {
    let diagnostic = normalize_provider_diagnostic(diagnostic);
    !diagnostic.is_empty()
        && diagnostic.len() <= MAX_PROVIDER_DIAGNOSTIC_BYTES
        && normalize_provider_diagnostic(terminal).contains(&diagnostic)
}

/// A chunk or terminal text as the marker and the correlation classify it: phase
/// `prompt_send`, the adapter's provider id, the text as standard error.
pub(crate) fn text_evidence(provider_id: &str, text: &str) -> Evidence {
    let mut evidence = Evidence::new()
        .with_phase(Phase::PromptSend)
        .with_stderr(text);
    evidence.provider_id = (!provider_id.is_empty()).then(|| provider_id.to_owned());
    evidence
}

/// Classifies [`text_evidence`]. The clock is fixed (timing hints play no part here), so the
/// result is deterministic.
pub(crate) fn classify_text(bundle: &Bundle, provider_id: &str, text: &str) -> Classification {
    bundle.classify_at(&text_evidence(provider_id, text), SystemTime::UNIX_EPOCH)
}

pub(crate) fn fallback_eligible(classification: &Classification) -> bool {
    classification.confidence == Confidence::High && classification.fallback_allowed
}

/// Whether a classification lets policy recover at all (retry or fallback) once the boundary
/// is safe: a low-confidence or unclassified result never does, and a failure recoverable on
/// the same provider only needs a code that allows a retry.
pub(crate) fn recoverable(classification: &Classification, same_provider_only: bool) -> bool {
    classification.confidence != Confidence::Low
        && classification.class != Class::Unclassified
        && (classification.auto_retryable
            || (classification.fallback_allowed && !same_provider_only))
}

/// The provider-diagnostic candidate marker (AC .20), decided once at the ACP conversion
/// boundary: an assistant chunk whose text classifies high-confidence and fallback-eligible
/// for this adapter's provider. A user or thought chunk, or an adapter without an id, never
/// marks.
///
/// This runs on every streamed chunk, so [`Bundle::may_classify`] screens the chunk first:
/// ordinary prose is rejected without being redacted or classified.
pub fn provider_diagnostic_candidate(
    bundle: &Bundle,
    provider_id: &str,
    role: Role,
    text: &str,
) -> bool {
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
    redact_credentials(prompt)
}
