//! The ACP evidence adapter: the client side of a real ACP connection (the
//! `agent-client-protocol` SDK, protocol v1) that turns an agent's `session/update`
//! notifications into ordered [`AdapterEvent`]s and a failed `session/prompt` into the one
//! sanitized [`ProviderProjection`] that crosses the boundary (reference §D.3, §D.7, §D.8).
//!
//! # What it decides
//!
//! - The provider-diagnostic candidate marker, **once**, for every assistant message chunk,
//!   with [`provider_diagnostic_candidate`] under the adapter's negotiated provider id (AC .20).
//!   User and thought chunks never carry it.
//! - The settled model: the last non-empty current value of a `model` configuration option.
//! - The dialect, from the negotiated provider id ([`Dialect::for_agent`]): the engine's
//!   [`ProviderProfile`] ([`Adapter::recovery_profile`]), and, for Codex, a
//!   `session_info_update` whose `_meta` is the exact retry-boundary shape becomes
//!   [`AdapterEvent::ResponseAttemptReset`] (AC .26).
//! - The projection of a prompt error: only its code, its message and a validated
//!   `data.errorKind` cross; raw `data` never does (AC .22, .24).
//!
//! # Ordering
//!
//! Notifications are handed, in arrival order, from the SDK's dispatch loop to a FIFO queue
//! that one update worker drains; the worker converts and publishes the events. The SDK routes
//! the prompt's response through the same dispatch loop, after every notification the agent
//! sent before it, so by the time [`Adapter::prompt`] sees the response every earlier update
//! is in the queue. Before reporting the result it posts a barrier behind them and waits for
//! the worker to reach it: every update the agent sent before its prompt response is on the
//! event stream before the terminal failure is reported, whatever the worker's scheduling.
//! The projection reads the settled model after that barrier, so a model settled before the
//! failure is carried and one settled later never is (AC .22). The worker also runs only for
//! the duration of [`Adapter::prompt`] (it is joined with the connection), so the call cannot
//! return while anything it queued is still unconverted.
//!
//! No SDK type appears in this module's public API.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, Implementation, InitializeRequest, NewSessionRequest,
    PromptRequest, SessionConfigKind, SessionConfigOptionCategory, SessionNotification,
    SessionUpdate,
};
use agent_client_protocol::{ByteStreams, Client, schema::ProtocolVersion};
use faultline_recovery::ProviderProfile;
use faultline_recovery::projection::{PromptError, ProviderProjection, project_prompt_error};
use faultline_recovery::prompt::{Role, provider_diagnostic_candidate};
use faultline_runtime::Bundle;
use futures::StreamExt as _;
use futures::channel::{mpsc, oneshot};
use futures::io::{AsyncRead, AsyncWrite};

use crate::dialect::{self, Dialect};
use crate::event::{AdapterEvent, ChunkRole};

/// The client name the adapter announces in `initialize`.
const CLIENT_NAME: &str = "faultline-acp";

/// What the update worker is asked to do, in queue order.
enum Work {
    /// A `session/update` notification's payload.
    Update(Box<SessionUpdate>),
    /// Signal once every earlier item has been handled.
    Barrier(oneshot::Sender<()>),
    /// Park the worker until released (or the hold is dropped).
    #[cfg(feature = "worker-hold")]
    Hold {
        reached: oneshot::Sender<()>,
        release: oneshot::Receiver<()>,
    },
    /// End the worker's current run.
    Stop,
}

/// The adapter's ordered event stream: everything the update worker published, in order.
#[derive(Debug)]
pub struct AdapterEvents {
    receiver: mpsc::UnboundedReceiver<AdapterEvent>,
}

impl AdapterEvents {
    /// The next event already published, without waiting.
    pub fn try_next(&mut self) -> Option<AdapterEvent> {
        self.receiver.try_recv().ok()
    }

    /// Every event already published, without waiting.
    pub fn drain(&mut self) -> Vec<AdapterEvent> {
        std::iter::from_fn(|| self.try_next()).collect()
    }

    /// Waits for the next event; `None` once the adapter is gone and the stream is empty.
    pub async fn next(&mut self) -> Option<AdapterEvent> {
        self.receiver.next().await
    }
}

/// A hold on the adapter's update worker (see [`Adapter::hold_worker`]): updates queued behind
/// it are not converted until it is released. Dropping it releases it. A test hook of the
/// replay tooling, behind the `worker-hold` feature.
#[cfg(feature = "worker-hold")]
#[derive(Debug)]
pub struct WorkerHold {
    reached: Option<oneshot::Receiver<()>>,
    release: Option<oneshot::Sender<()>>,
}

#[cfg(feature = "worker-hold")]
impl WorkerHold {
    /// Waits until the worker is parked at this hold (every item queued before it handled).
    /// Returns at once if the worker is gone.
    pub async fn reached(&mut self) {
        if let Some(reached) = self.reached.take() {
            let _ = reached.await;
        }
    }

    /// Lets the worker go on.
    pub fn release(mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.send(());
        }
    }
}

/// How a prompt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptOutcome {
    /// `session/prompt` returned a response.
    Completed {
        /// The stop reason as the protocol spells it (`end_turn`, `cancelled`, …).
        stop_reason: String,
    },
    /// `session/prompt` returned an error.
    Failed(PromptFailure),
}

/// A terminal `session/prompt` error, as it may cross the boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptFailure {
    /// The sanitized projection with the allowlisted metadata.
    pub projection: ProviderProjection,
    /// The error for the recovery engine's `prompt_failed` event: the code and message as the
    /// agent sent them, and of `data` only the validated `errorKind` (raw data never crosses).
    pub error: PromptError,
}

/// What went wrong outside the prompt's own result: the connection or its setup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdapterError {
    /// `initialize` or `session/new` failed.
    #[error("`{step}` failed: {message}")]
    Setup {
        /// The request that failed.
        step: &'static str,
        /// The error's code and message.
        message: String,
    },
    /// The connection closed or failed before the prompt settled.
    #[error("the ACP connection ended before the prompt settled: {0}")]
    Connection(String),
    /// Another prompt of this adapter is running.
    #[error("another prompt of this adapter is running")]
    Busy,
}

/// What the worker and the prompt share.
#[derive(Debug, Default)]
struct Shared {
    settled_model: Option<String>,
}

/// The ACP evidence adapter of one agent (see the module docs).
#[derive(Debug)]
pub struct Adapter {
    bundle: Arc<Bundle>,
    provider_id: String,
    dialect: Dialect,
    queue: mpsc::UnboundedSender<Work>,
    worker: Mutex<Option<mpsc::UnboundedReceiver<Work>>>,
    events: mpsc::UnboundedSender<AdapterEvent>,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for Work {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Work::Update(_) => "Update",
            Work::Barrier(_) => "Barrier",
            #[cfg(feature = "worker-hold")]
            Work::Hold { .. } => "Hold",
            Work::Stop => "Stop",
        })
    }
}

impl Adapter {
    /// An adapter for an agent whose negotiated provider id is `provider_id` (e.g.
    /// `claude-acp`), classifying with `bundle`; and its event stream.
    pub fn new(bundle: Arc<Bundle>, provider_id: impl Into<String>) -> (Adapter, AdapterEvents) {
        let (queue, worker) = mpsc::unbounded();
        let (events, receiver) = mpsc::unbounded();
        let provider_id = provider_id.into();
        (
            Adapter {
                bundle,
                dialect: Dialect::for_agent(&provider_id),
                provider_id,
                queue,
                worker: Mutex::new(Some(worker)),
                events,
                shared: Arc::new(Mutex::new(Shared::default())),
            },
            AdapterEvents { receiver },
        )
    }

    /// The bundle it classifies with.
    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }

    /// The negotiated provider id.
    pub fn provider_id(&self) -> &str {
        &self.provider_id
    }

    /// The dialect of the negotiated provider id.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// What the recovery engine needs to know of this adapter's sessions: the profile to build
    /// their `faultline_recovery::Recovery` with.
    pub fn recovery_profile(&self) -> ProviderProfile {
        self.dialect.profile(&self.provider_id)
    }

    /// The session's settled model: the last non-empty current model id the agent published.
    pub fn settled_model(&self) -> Option<String> {
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .settled_model
            .clone()
    }

    /// Posts a hold on the update worker's queue: the worker stops there, once everything
    /// queued before it is handled, until the hold is released or dropped. Updates received
    /// meanwhile queue up behind it. This is the test hook for the queued-diagnostic case
    /// (reference §E.3): a prompt's own drain barrier queues behind the hold too, so
    /// [`Adapter::prompt`] does not return while a hold posted before its failure is held.
    #[cfg(feature = "worker-hold")]
    pub fn hold_worker(&self) -> WorkerHold {
        let (reached_tx, reached_rx) = oneshot::channel();
        let (release_tx, release_rx) = oneshot::channel();
        let _ = self.queue.unbounded_send(Work::Hold {
            reached: reached_tx,
            release: release_rx,
        });
        WorkerHold {
            reached: Some(reached_rx),
            release: Some(release_tx),
        }
    }

    /// Runs one prompt turn against an agent reached through `outgoing` (the agent's standard
    /// input) and `incoming` (its standard output): `initialize`, `session/new` in `cwd`,
    /// `session/prompt` with `text`. Every update the agent sends is published on the event
    /// stream; all those sent before the prompt's response are published before this
    /// returns.
    pub async fn prompt<W, R>(
        &self,
        outgoing: W,
        incoming: R,
        text: &str,
        cwd: &Path,
    ) -> Result<PromptOutcome, AdapterError>
    where
        W: AsyncWrite + Send + 'static,
        R: AsyncRead + Send + 'static,
    {
        let Some(receiver) = self
            .worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return Err(AdapterError::Busy);
        };
        let worker = self.work(receiver);
        let connection = async {
            let outcome = self.connect(outgoing, incoming, text, cwd).await;
            let _ = self.queue.unbounded_send(Work::Stop);
            outcome
        };
        let (outcome, receiver) = futures::future::join(connection, worker).await;
        *self.worker.lock().unwrap_or_else(PoisonError::into_inner) = Some(receiver);
        outcome
    }

    async fn connect<W, R>(
        &self,
        outgoing: W,
        incoming: R,
        text: &str,
        cwd: &Path,
    ) -> Result<PromptOutcome, AdapterError>
    where
        W: AsyncWrite + Send + 'static,
        R: AsyncRead + Send + 'static,
    {
        let queue = self.queue.clone();
        let text = text.to_owned();
        let cwd = cwd.to_path_buf();
        let result = Client
            .v1()
            .name(CLIENT_NAME)
            .on_receive_notification(
                async move |notification: SessionNotification, _connection| {
                    // The dispatch loop waits for this: enqueueing keeps arrival order.
                    let _ = queue.unbounded_send(Work::Update(Box::new(notification.update)));
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_with(
                ByteStreams::new(outgoing, incoming),
                async move |connection| {
                    let initialize = InitializeRequest::new(ProtocolVersion::V1)
                        .client_capabilities(ClientCapabilities::new())
                        .client_info(Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")));
                    if let Err(error) = connection.send_request(initialize).block_task().await {
                        return Ok(Err(setup_error("initialize", &error)));
                    }
                    let session = match connection
                        .send_request(NewSessionRequest::new(cwd))
                        .block_task()
                        .await
                    {
                        Ok(session) => session,
                        Err(error) => return Ok(Err(setup_error("session/new", &error))),
                    };
                    let prompt =
                        PromptRequest::new(session.session_id, vec![ContentBlock::from(text)]);
                    let result = connection.send_request(prompt).block_task().await;
                    Ok(self.settle(result).await)
                },
            )
            .await;
        match result {
            Ok(outcome) => outcome,
            Err(error) => Err(AdapterError::Connection(describe(&error))),
        }
    }

    /// Drains the update queue, then turns the prompt's result into its outcome.
    async fn settle(
        &self,
        result: Result<
            agent_client_protocol::v1::schema::PromptResponse,
            agent_client_protocol::Error,
        >,
    ) -> Result<PromptOutcome, AdapterError> {
        let (drained, barrier) = oneshot::channel();
        if self.queue.unbounded_send(Work::Barrier(drained)).is_ok() {
            let _ = barrier.await;
        }
        match result {
            Ok(response) => Ok(PromptOutcome::Completed {
                stop_reason: serde_json::to_value(response.stop_reason)
                    .ok()
                    .and_then(|value| value.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            }),
            Err(error)
                if agent_client_protocol::is_incoming_transport_closed(&error)
                    || agent_client_protocol::is_connection_terminated(&error) =>
            {
                Err(AdapterError::Connection(describe(&error)))
            }
            Err(error) => Ok(PromptOutcome::Failed(self.project(&error))),
        }
    }

    /// The boundary value of a prompt error (reference §D.7, §D.8).
    fn project(&self, error: &agent_client_protocol::Error) -> PromptFailure {
        let raw = PromptError {
            code: i64::from(error.code.value()),
            message: error.message.clone(),
            error_kind: declared_error_kind(error.data.as_ref()),
        };
        let projection =
            project_prompt_error(&raw, &self.provider_id, self.settled_model().as_deref());
        let error = PromptError {
            error_kind: projection.error_kind().map(str::to_owned),
            ..raw
        };
        PromptFailure { projection, error }
    }

    /// The update worker: handles queued work in order until `Stop` (or until the adapter is
    /// gone), and hands its queue back.
    async fn work(
        &self,
        mut receiver: mpsc::UnboundedReceiver<Work>,
    ) -> mpsc::UnboundedReceiver<Work> {
        while let Some(work) = receiver.next().await {
            match work {
                Work::Update(update) => self.convert(*update),
                Work::Barrier(done) => {
                    let _ = done.send(());
                }
                #[cfg(feature = "worker-hold")]
                Work::Hold { reached, release } => {
                    let _ = reached.send(());
                    let _ = release.await;
                }
                Work::Stop => break,
            }
        }
        receiver
    }

    /// Converts one update and publishes its event, if it has one.
    fn convert(&self, update: SessionUpdate) {
        let event = match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                let text = content_text(&chunk.content);
                let diagnostic_candidate = provider_diagnostic_candidate(
                    &self.bundle,
                    &self.provider_id,
                    Role::Assistant,
                    &text,
                );
                Some(AdapterEvent::MessageChunk {
                    role: ChunkRole::Assistant,
                    text,
                    diagnostic_candidate,
                })
            }
            SessionUpdate::UserMessageChunk(chunk) => Some(AdapterEvent::MessageChunk {
                role: ChunkRole::User,
                text: content_text(&chunk.content),
                diagnostic_candidate: false,
            }),
            SessionUpdate::AgentThoughtChunk(chunk) => Some(AdapterEvent::ThoughtChunk {
                text: content_text(&chunk.content),
            }),
            SessionUpdate::ToolCall(call) => Some(AdapterEvent::ToolCall {
                tool_call_id: call.tool_call_id.0.to_string(),
            }),
            SessionUpdate::ToolCallUpdate(update) => Some(AdapterEvent::ToolUpdate {
                tool_call_id: update.tool_call_id.0.to_string(),
            }),
            SessionUpdate::ConfigOptionUpdate(update) => {
                update.config_options.iter().rev().find_map(|option| {
                    let is_model =
                        matches!(option.category, Some(SessionConfigOptionCategory::Model))
                            || (option.category.is_none() && option.id.0.as_ref() == "model");
                    match &option.kind {
                        SessionConfigKind::Select(select)
                            if is_model && !select.current_value.0.trim().is_empty() =>
                        {
                            Some(AdapterEvent::ModelSettled {
                                model_id: select.current_value.0.to_string(),
                            })
                        }
                        _ => None,
                    }
                })
            }
            SessionUpdate::SessionInfoUpdate(info) => info
                .meta
                .map(serde_json::Value::Object)
                .filter(|meta| dialect::response_attempt_reset(self.dialect, meta))
                .map(|_| AdapterEvent::ResponseAttemptReset),
            // Plans, commands, modes, usage and the rest are no recovery evidence.
            _ => None,
        };
        if let Some(event) = event {
            if let AdapterEvent::ModelSettled { model_id } = &event {
                self.shared
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .settled_model = Some(model_id.clone());
            }
            let _ = self.events.unbounded_send(event);
        }
    }
}

/// `data.errorKind` as the agent declared it, when `data` is an object and the value a string:
/// the only part of `data` ever read.
fn declared_error_kind(data: Option<&serde_json::Value>) -> Option<String> {
    data?
        .as_object()?
        .get("errorKind")?
        .as_str()
        .map(str::to_owned)
}

/// A content block's text. Content without text (an image, audio, a resource) still counts:
/// it becomes a short non-empty placeholder, so it is output and never an empty chunk.
fn content_text(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(_) => "[image]".to_owned(),
        ContentBlock::Audio(_) => "[audio]".to_owned(),
        ContentBlock::ResourceLink(_) | ContentBlock::Resource(_) => "[resource]".to_owned(),
        _ => "[content]".to_owned(),
    }
}

/// A setup failure as text: the code and message, and the agent's `data` (where agents put
/// the cause: `Internal error` alone says nothing) redacted as a diagnostic excerpt —
/// credentials, URLs, ids, e-mail addresses and paths removed, cut to
/// `faultline_runtime::MAX_EXCERPT_BYTES`. Unlike a prompt error, a setup error is never
/// projected for recovery, so its data may be shown.
fn setup_error(step: &'static str, error: &agent_client_protocol::Error) -> AdapterError {
    let mut message = describe(error);
    let details = match &error.data {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(serde_json::Value::Null) | None => String::new(),
        Some(data) => data.to_string(),
    };
    let details = faultline_runtime::redact_diagnostic(details.trim());
    if !details.is_empty() {
        message.push_str(": ");
        message.push_str(&details);
    }
    AdapterError::Setup { step, message }
}

/// An SDK error as text: its code and message, never its data.
fn describe(error: &agent_client_protocol::Error) -> String {
    format!("{} ({})", error.message, error.code.value())
}

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;

    use agent_client_protocol::v1::schema::SessionInfoUpdate;
    use serde_json::json;

    use super::*;

    static BUNDLE: LazyLock<Arc<Bundle>> =
        LazyLock::new(|| Arc::new(faultline_testkit::catalogue_bundle()));

    fn session_info(meta: serde_json::Value) -> SessionUpdate {
        let serde_json::Value::Object(meta) = meta else {
            panic!("`_meta` is an object");
        };
        SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new().title("Working").meta(meta))
    }

    /// The events converting `updates` publishes, for an adapter of `provider_id`.
    fn converted(provider_id: &str, updates: Vec<SessionUpdate>) -> Vec<AdapterEvent> {
        let (adapter, mut events) = Adapter::new(Arc::clone(&BUNDLE), provider_id);
        for update in updates {
            adapter.convert(update);
        }
        events.drain()
    }

    #[test]
    fn ac_26_a_codex_boundary_is_a_typed_event_and_nothing_else_is() {
        let boundary = json!({"codex": {"error": {
            "message": "Reconnecting... 2/5",
            "willRetry": true,
            "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 502}},
        }}});
        let terminal = json!({"codex": {"error": {
            "willRetry": false,
            "codexErrorInfo": {"responseStreamDisconnected": {}},
        }}});
        assert_eq!(
            converted(
                "codex-acp",
                vec![session_info(boundary.clone()), session_info(terminal)]
            ),
            vec![AdapterEvent::ResponseAttemptReset]
        );
        // Another dialect's update never forms a boundary, whatever its metadata says; an
        // update without metadata is ordinary session information.
        for agent in ["claude-acp", "cursor-acp", "mock-agent"] {
            assert_eq!(
                converted(agent, vec![session_info(boundary.clone())]),
                Vec::new(),
                "{agent}"
            );
        }
        let bare = SessionUpdate::SessionInfoUpdate(SessionInfoUpdate::new());
        assert_eq!(converted("codex-acp", vec![bare]), Vec::new());
    }

    #[test]
    fn the_recovery_profile_follows_the_dialect() {
        let (cursor, _) = Adapter::new(Arc::clone(&BUNDLE), "cursor-acp");
        assert_eq!(cursor.dialect(), Dialect::Cursor);
        assert!(cursor.recovery_profile().retriable_error_barrier());
        let (claude, _) = Adapter::new(Arc::clone(&BUNDLE), "claude-acp");
        assert_eq!(claude.dialect(), Dialect::Generic);
        assert_eq!(claude.recovery_profile().provider_id(), "claude-acp");
        assert!(!claude.recovery_profile().retriable_error_barrier());
    }
}
