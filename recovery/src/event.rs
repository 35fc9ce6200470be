//! What an orchestrator feeds the engine: [`RecoveryEvent`], one ordered stream per agent
//! session, and [`ProviderProfile`], what the engine knows of the session's provider.
//!
//! The serde form of [`RecoveryEvent`] is the event-log format `faultline recover` replays
//! (docs/recovery.md, "The event log"): one JSON object per event, tagged by `event`, unknown
//! fields refused.

use serde::{Deserialize, Serialize};

use crate::notices::{Authorization, Ending, ListedNotice, Notice, NoticeId};
use crate::projection::PromptError;
use crate::prompt::{Claim, LifecycleSnapshot, Role};
use crate::response_attempt::{MessageId, PromptEnd, RecordKind, ToolScope};

/// What the engine knows of one agent session's provider: the negotiated provider id (a
/// classification input and projection metadata) and which provider-specific evidence rules
/// apply.
///
/// The engine never compares provider ids itself: the ACP adapter decides the profile from
/// the id it negotiated (`faultline_acp::dialect`) and passes it in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderProfile {
    provider_id: String,
    retriable_error_barrier: bool,
}

impl ProviderProfile {
    /// A provider with no provider-specific evidence rules; `provider_id` may be empty (no
    /// negotiated id: nothing is marked as a provider diagnostic).
    pub fn new(provider_id: impl Into<String>) -> ProviderProfile {
        ProviderProfile {
            provider_id: provider_id.into(),
            retriable_error_barrier: false,
        }
    }

    /// The same provider, whose assistant chunks of the form `Error: RetriableError: <cause>`
    /// form Cursor's barrier (AC .12–.15; [`crate::cursor`]).
    #[must_use]
    pub fn with_retriable_error_barrier(self) -> ProviderProfile {
        ProviderProfile {
            retriable_error_barrier: true,
            ..self
        }
    }

    /// The negotiated provider id.
    pub fn provider_id(&self) -> &str {
        &self.provider_id
    }

    /// Whether Cursor's `RetriableError` barrier applies.
    pub fn retriable_error_barrier(&self) -> bool {
        self.retriable_error_barrier
    }
}

/// One event of an agent session, in the order the orchestrator received it.
///
/// Every event that belongs to a prompt claims its identity ([`Claim`]: execution id, prompt
/// generation). What each one feeds — the prompt-attempt evidence, the transcript's response
/// attempts, the retry notices — is listed in docs/recovery.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum RecoveryEvent {
    // ---- Identity ------------------------------------------------------------------------
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
    /// The model belongs to the execution it was settled under: a projection for an attempt
    /// of another execution never carries it.
    ModelSettled {
        /// The model id.
        model_id: String,
        /// The execution it was settled under; absent: the current attempt's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
    },

    // ---- Streamed evidence ---------------------------------------------------------------
    /// A streamed chunk. The marker is decided once at the ACP conversion boundary
    /// ([`provider_diagnostic_candidate`](crate::prompt::provider_diagnostic_candidate));
    /// absent means ordinary output.
    Chunk {
        /// Whose chunk.
        #[serde(flatten)]
        claim: Claim,
        /// Who wrote it.
        role: Role,
        /// Its text.
        text: String,
        /// The provider-diagnostic candidate marker.
        #[serde(default, rename = "diagnostic_candidate")]
        provider_diagnostic_candidate: bool,
    },
    /// A partial utility result (output).
    PartialResult {
        /// Whose result.
        #[serde(flatten)]
        claim: Claim,
    },
    /// A new tool call (an effect). A top-level one is also a transcript commit boundary.
    ToolCall {
        /// Whose tool call.
        #[serde(flatten)]
        claim: Claim,
        /// Top-level (the default) or nested under a subagent's tool call.
        #[serde(default)]
        scope: ToolScope,
    },
    /// An update of an in-flight tool call (an effect).
    ToolUpdate {
        /// Whose update.
        #[serde(flatten)]
        claim: Claim,
    },

    // ---- The transcript ------------------------------------------------------------------
    /// The orchestrator allocated a new transcript record for the prompt's output.
    RecordAllocated {
        /// Whose output.
        #[serde(flatten)]
        claim: Claim,
        /// The new record.
        message_id: MessageId,
        /// Assistant or thinking.
        kind: RecordKind,
    },
    /// The orchestrator appended output to an existing record (e.g. a provider reusing a
    /// protocol message id): never retractable.
    RecordContinued {
        /// Whose output.
        #[serde(flatten)]
        claim: Claim,
        /// The existing record.
        message_id: MessageId,
        /// Assistant or thinking.
        kind: RecordKind,
    },
    /// The adapter recognised a response-attempt retry boundary (AC .26): the provider
    /// abandoned its active response attempt and will stream a replacement.
    ResponseAttemptReset {
        /// The prompt whose response attempt was abandoned.
        #[serde(flatten)]
        claim: Claim,
    },

    // ---- How prompts and executions end --------------------------------------------------
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
    /// The prompt stopped owning the execution without returning: it was cancelled or handed
    /// off (a returned or failed prompt has ended already).
    PromptEnded {
        /// Whose prompt.
        #[serde(flatten)]
        claim: Claim,
        /// How it ended.
        reason: PromptEnd,
    },
    /// The agent execution was torn down: nothing of its transcript is tracked any more.
    ExecutionTornDown {
        /// The execution; absent: the one tracked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        execution_id: Option<String>,
    },
    /// The session's retry lifecycle was retired by the orchestrator outside the retry events
    /// below (which retire it themselves when ownership ends): evidence reads as unknown
    /// until a new attempt binds its full identity.
    LifecycleRetired,
    /// An event of the session could not be read (malformed, or lost on the way): from now on
    /// nothing in the session is known for certain, so every later verdict is manual, and
    /// the transcript tracker stops tracking the current prompt (no record is retracted on
    /// incomplete knowledge).
    EventUnreadable,

    // ---- Retry ownership and its notices -------------------------------------------------
    /// The orchestrator took (or kept) ownership of a transient retry and scheduled this
    /// attempt; the first one after an ending starts a new retry loop.
    RetryScheduled {
        /// What the notice shows.
        #[serde(flatten)]
        notice: Notice,
    },
    /// Ownership of the retry ended, or a normal turn succeeded.
    RetryEnded {
        /// How.
        ending: Ending,
    },
    /// A request to cancel the session's retry, already authorised (or not) by the
    /// orchestrator.
    RetryCancelRequested {
        /// Whether the requester owns the task–session pair.
        authorization: Authorization,
    },
    /// The message store listed the session's messages, in transcript order.
    NoticesListed {
        /// The messages and their markers.
        notices: Vec<ListedNotice>,
    },
    /// The message store could not list the session's messages.
    NoticeListFailed,
    /// The message store wrote the notice (for a create, under this new id).
    NoticeWritten {
        /// The notice's id. (Not `id`: that is the JSON-lines request id of a log line.)
        notice_id: NoticeId,
    },
    /// The message store could not write the notice.
    NoticeWriteFailed,
    /// The message store tried every requested deletion.
    NoticesDeleted {
        /// The ids that could not be deleted.
        #[serde(default)]
        failed: Vec<NoticeId>,
    },

    // ---- The route state machine (an engine made with `Recovery::deciding`) -------------
    /// The durable write of the route state a `persist` effect asked for succeeded: the
    /// transition's held effects are released.
    RouteWriteSucceeded,
    /// That write failed: the route state is restored and nothing is scheduled.
    RouteWriteFailed,
    /// A route timer fired.
    RouteTimerFired {
        /// The generation it was armed with.
        generation: u64,
        /// When (RFC 3339).
        at: String,
    },
    /// The user cancelled (or stopped) the route's wait or retry. Idempotent.
    RouteCancelRequested {
        /// The generation the user saw.
        expected_generation: u64,
    },
    /// The user chose "skip now" during the route's wait.
    RouteSkipRequested {
        /// The generation the user saw.
        expected_generation: u64,
    },
    /// The dispatched route retry could not be launched.
    RouteLaunchFailed {
        /// The generation it was dispatched with.
        generation: u64,
    },
    /// The orchestrator restarted and reloaded the route state it persisted: waits with a
    /// deadline are re-armed; a `retrying` route is left for manual recovery.
    RouteRestarted {
        /// When (RFC 3339).
        at: String,
    },
}
