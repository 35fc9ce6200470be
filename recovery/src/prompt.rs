//! One prompt attempt's recovery evidence as an orchestrator sees it: the identity events
//! claim, the lifecycle's terminal snapshot, what each event did to the evidence ([`Outcome`])
//! and the verdict on a terminal failure ([`Verdict`], [`Safety`], [`Disposition`]); and the
//! text rules the engine and the ACP adapter share — the provider-diagnostic candidate marker
//! (AC .20), the normalization of provider diagnostics (AC .23) and the launch-prompt redaction
//! (AC .29).
//!
//! Normalization for diagnostic–terminal containment (AC .23, reference §H.4): both texts go
//! through the provider-message tier ([`faultline_runtime::redact_provider_message`]) —
//! trim, collapse whitespace runs, and also redact credentials, URLs and ids and trim trailing
//! `.:;,-`. The spec's trim-and-collapse alone is not enough here: the terminal message reaches
//! the engine already projected through that tier, so a diagnostic normalized differently
//! could never be contained in it whenever it carries a URL, an id or a final full stop.
//! Redaction is applied identically to both sides, so it can make two different texts equal
//! only where they differ in redacted values; containment stays case-sensitive and
//! one-directional.

use std::time::SystemTime;

use faultline_runtime::{Bundle, Classification, Evidence};
use faultline_runtime::{Class, Confidence, Phase};
use faultline_runtime::{redact_credentials, redact_provider_message};
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
}

/// The normalization of a provider diagnostic and of the terminal message it must be contained
/// in (AC .23; see the [module documentation](self)).
pub fn normalize_provider_diagnostic(text: &str) -> String {
    redact_provider_message(text)
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
/// is safe: a low-confidence or unclassified result never does.
pub(crate) fn recoverable(classification: &Classification) -> bool {
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
