//! The transport layer of the replay: a fake agent on the agent side of a real ACP connection
//! (the SDK's agent-side builder) that plays a fixture's frames, connected to the live
//! [`Adapter`] through in-memory pipes (reference §E.3).
//!
//! The fake agent answers `initialize` and `session/new`, and on `session/prompt` sends each
//! frame as a `session/update` notification — `message_chunk` as `AgentMessageChunk` or
//! `UserMessageChunk`, `thought_chunk` as `AgentThoughtChunk`, `tool_call` as `ToolCall`,
//! `tool_update` as `ToolCallUpdate`, `model_settled` as a `ConfigOptionUpdate` whose `model`
//! option carries the current model — and returns the `prompt_error` frame as the JSON-RPC
//! error of its prompt handler. Nothing here handles raw frames or request ids, sleeps or
//! reads a clock: every run is driven on the current thread, deterministically.

use std::cell::RefCell;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, ConfigOptionUpdate, ContentBlock, ContentChunk, InitializeRequest,
    InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
    SessionNotification, SessionUpdate, StopReason, ToolCall, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use agent_client_protocol::{Agent, ByteStreams, Responder, V1};
use faultline_recovery::projection::{ProviderProjection, projected_message};
use faultline_runtime::{Bundle, Classification};
use futures::channel::oneshot;
use futures::io::{AsyncRead, AsyncWrite};

use crate::fixture::{Fixture, Frame, Token, classify_projection};
use faultline_acp::adapter::{Adapter, AdapterError, PromptOutcome};
use faultline_acp::event::{AdapterEvent, ChunkRole};
use faultline_acp::pipe::pipe;

/// Why a replay could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// A frame cannot be played.
    #[error("frame {index}: {message}")]
    Frame {
        /// The frame's index.
        index: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The adapter failed outside the prompt's result.
    #[error(transparent)]
    Adapter(#[from] AdapterError),
    /// The fake agent's side of the connection failed.
    #[error("the fake agent failed: {0}")]
    Agent(String),
}

/// What the transport layer observed of one replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The adapter's events on its stream at the moment the prompt call returned, in order.
    pub events: Vec<AdapterEvent>,
    /// How the prompt ended.
    pub outcome: PromptOutcome,
    /// For a held replay: the events that were on the stream when the fake agent returned
    /// its result and the worker was released (nothing, if the hold held).
    pub before_release: Vec<AdapterEvent>,
}

/// How the update worker is scheduled during a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// The worker runs freely.
    #[default]
    Free,
    /// The worker is held at a barrier posted before the prompt, so every update is enqueued
    /// but not drained; the barrier is released when the fake agent returns its prompt
    /// result, after yielding to the other tasks this many times (reference §E.3, the queued
    /// case).
    HeldUntilAgentReturns {
        /// Scheduler yields between the agent's return and the release.
        yields: usize,
    },
}

/// The session id the fake agent hands out when none is given.
pub const DEFAULT_SESSION_ID: &str = "replay-session";

/// A fake ACP agent playing frames (see the module docs).
#[derive(Debug)]
pub struct FakeAgent {
    session_id: String,
    updates: Vec<SessionUpdate>,
    error: Option<agent_client_protocol::Error>,
    returned: Option<oneshot::Sender<()>>,
}

/// Completes when a [`FakeAgent`]'s prompt handler returns its result (or the agent is gone).
#[derive(Debug)]
pub struct AgentReturned(oneshot::Receiver<()>);

impl Future for AgentReturned {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(|_| ())
    }
}

impl FakeAgent {
    /// A fake agent for session `session_id` playing `frames`: every frame but a
    /// `prompt_error` becomes a notification; a `prompt_error` (the last frame, if any) is
    /// the prompt's result, and without one the prompt ends with `end_turn`.
    pub fn new(session_id: impl Into<String>, frames: &[Frame]) -> Result<Self, TransportError> {
        let mut updates = Vec::new();
        let mut error = None;
        for (index, frame) in frames.iter().enumerate() {
            if error.is_some() {
                return Err(TransportError::Frame {
                    index,
                    message: "a frame follows the prompt_error".to_owned(),
                });
            }
            let frame_error = |message: String| TransportError::Frame { index, message };
            match frame {
                Frame::MessageChunk { role, text } => {
                    let chunk = ContentChunk::new(ContentBlock::from(text.clone()));
                    updates.push(match role {
                        ChunkRole::Assistant => SessionUpdate::AgentMessageChunk(chunk),
                        ChunkRole::User => SessionUpdate::UserMessageChunk(chunk),
                    });
                }
                Frame::ThoughtChunk { text } => updates.push(SessionUpdate::AgentThoughtChunk(
                    ContentChunk::new(ContentBlock::from(text.clone())),
                )),
                Frame::ToolCall {
                    tool_call_id,
                    title,
                    status,
                } => {
                    let status = tool_status(status.as_str()).map_err(frame_error)?;
                    updates.push(SessionUpdate::ToolCall(
                        ToolCall::new(tool_call_id.clone(), title.clone().unwrap_or_default())
                            .status(status),
                    ));
                }
                Frame::ToolUpdate {
                    tool_call_id,
                    status,
                } => {
                    let mut fields = ToolCallUpdateFields::new();
                    if let Some(status) = status {
                        fields = fields.status(tool_status(status.as_str()).map_err(frame_error)?);
                    }
                    updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        tool_call_id.clone(),
                        fields,
                    )));
                }
                Frame::ModelSettled { model_id } => {
                    let option = SessionConfigOption::select(
                        "model",
                        "Model",
                        model_id.clone(),
                        vec![SessionConfigSelectOption::new(
                            model_id.clone(),
                            model_id.clone(),
                        )],
                    )
                    .category(SessionConfigOptionCategory::Model);
                    updates.push(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
                        vec![option],
                    )));
                }
                Frame::PromptError {
                    code,
                    message,
                    data,
                } => {
                    let code = i32::try_from(*code).map_err(|_| {
                        frame_error(format!("the code {code} is not a JSON-RPC error code"))
                    })?;
                    error = Some(
                        agent_client_protocol::Error::new(code, message.clone())
                            .data(data.clone().map(serde_json::Value::Object)),
                    );
                }
            }
        }
        Ok(FakeAgent {
            session_id: session_id.into(),
            updates,
            error,
            returned: None,
        })
    }

    /// A future that completes when the prompt handler returns its result.
    pub fn on_return(&mut self) -> AgentReturned {
        let (sender, receiver) = oneshot::channel();
        self.returned = Some(sender);
        AgentReturned(receiver)
    }

    /// Serves one client over `incoming` (the agent's standard input) and `outgoing` (its
    /// standard output) until the client hangs up.
    pub async fn serve<R, W>(self, incoming: R, outgoing: W) -> Result<(), TransportError>
    where
        R: AsyncRead + Send + 'static,
        W: AsyncWrite + Send + 'static,
    {
        let FakeAgent {
            session_id,
            updates,
            error,
            returned,
        } = self;
        let turn = Arc::new(Mutex::new(Some((updates, error, returned))));
        Agent
            .v1()
            .name("faultline-fake-agent")
            .on_receive_request(
                async move |request: InitializeRequest,
                            responder: Responder<InitializeResponse, V1>,
                            _connection| {
                    responder.respond(
                        InitializeResponse::new(request.protocol_version)
                            .agent_capabilities(AgentCapabilities::new()),
                    )
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |_request: NewSessionRequest,
                            responder: Responder<NewSessionResponse, V1>,
                            _connection| {
                    responder.respond(NewSessionResponse::new(session_id.clone()))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: PromptRequest,
                            responder: Responder<PromptResponse, V1>,
                            connection| {
                    let taken = turn.lock().unwrap_or_else(PoisonError::into_inner).take();
                    let Some((updates, error, returned)) = taken else {
                        return responder.respond(PromptResponse::new(StopReason::EndTurn));
                    };
                    for update in updates {
                        connection.send_notification(SessionNotification::new(
                            request.session_id.clone(),
                            update,
                        ))?;
                    }
                    if let Some(returned) = returned {
                        let _ = returned.send(());
                    }
                    match error {
                        Some(error) => responder.respond_with_error(error),
                        None => responder.respond(PromptResponse::new(StopReason::EndTurn)),
                    }
                },
                agent_client_protocol::on_receive_request!(),
            )
            .connect_to(ByteStreams::new(outgoing, incoming))
            .await
            .map_err(|error| {
                TransportError::Agent(format!("{} ({})", error.message, error.code.value()))
            })
    }
}

/// The protocol's tool-call status of a fixture spelling (`pending`, `in_progress`,
/// `completed`, `failed`), decoded by the schema type itself.
fn tool_status(status: &str) -> Result<ToolCallStatus, String> {
    serde_json::from_value(serde_json::Value::String(status.to_owned()))
        .map_err(|_| format!("the protocol has no tool call status `{status}`"))
}

/// Yields to the executor once.
#[derive(Debug, Default)]
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Replays `frames` through a fake agent and a live adapter (provider id `provider_id`,
/// classifying with `bundle`) over in-memory pipes, on the current thread, under `schedule`.
pub fn replay(
    bundle: Arc<Bundle>,
    provider_id: &str,
    session_id: &str,
    frames: &[Frame],
    schedule: Schedule,
) -> Result<Observation, TransportError> {
    let mut agent = FakeAgent::new(session_id, frames)?;
    let returned = agent.on_return();
    let (adapter, events) = Adapter::new(bundle, provider_id);
    let events = RefCell::new(events);
    let (agent_in, client_out) = pipe();
    let (client_in, agent_out) = pipe();
    let hold = match schedule {
        Schedule::Free => None,
        Schedule::HeldUntilAgentReturns { .. } => Some(adapter.hold_worker()),
    };
    let release = async {
        let Some(hold) = hold else {
            return Vec::new();
        };
        returned.await;
        if let Schedule::HeldUntilAgentReturns { yields } = schedule {
            for _ in 0..yields {
                YieldNow::default().await;
            }
        }
        let before = events.borrow_mut().drain();
        hold.release();
        before
    };
    let client = async {
        let outcome = adapter
            .prompt(client_out, client_in, "replay", Path::new("/"))
            .await;
        let observed = events.borrow_mut().drain();
        (outcome, observed)
    };
    let served = agent.serve(agent_in, agent_out);
    let ((outcome, observed), before_release, served) =
        futures::executor::block_on(async { futures::join!(client, release, served) });
    let outcome = outcome?;
    served?;
    let mut events = before_release.clone();
    events.extend(observed);
    Ok(Observation {
        events,
        outcome,
        before_release,
    })
}

/// What the transport layer found for one fixture.
#[derive(Debug, Clone, PartialEq)]
pub struct TransportCheck {
    /// What was observed.
    pub observation: Observation,
    /// The tokens of the observed stream (events without a token — model settlements — left
    /// out).
    pub tokens: Vec<Token>,
    /// The projection of the prompt's error, if it failed.
    pub projection: Option<ProviderProjection>,
    /// The projection's message classified at `prompt_send` with its provider id.
    pub classification: Option<Classification>,
    /// How the observation differs from the fixture's expectations, one line each (empty: the
    /// transport layer passes).
    pub mismatches: Vec<String>,
}

/// Replays `fixture` at the transport layer under `schedule` and compares what was observed
/// with `expect` (reference §E.3): the tokenised stream at the moment the prompt returned
/// against `expect.events` without the trailing `error`; the projection of the returned error
/// (source, rpcCode, errorKind, providerId, modelId, and its message against the sanitized
/// `prompt_error.message`) and the `error` token; and `expect.diagnosticCode` against the
/// projection's message classified at `prompt_send` with its provider id. Under a held
/// schedule, nothing may have reached the stream before the worker was released.
pub fn check(
    bundle: Arc<Bundle>,
    fixture: &Fixture,
    schedule: Schedule,
) -> Result<TransportCheck, TransportError> {
    let observation = replay(
        Arc::clone(&bundle),
        fixture.agent_id.as_str(),
        &fixture.identity.session_id,
        &fixture.frames,
        schedule,
    )?;
    let mut mismatches = Vec::new();
    let mut tokens = Vec::new();
    for event in &observation.events {
        match (Token::of(event), event) {
            (Some(token), _) => tokens.push(token),
            (None, AdapterEvent::ModelSettled { .. }) => {}
            (None, other) => {
                mismatches.push(format!("an untokenised event on the stream: {other:?}"))
            }
        }
    }
    let expected = fixture.expect.streamed();
    if tokens != expected {
        mismatches.push(format!(
            "events before the prompt returned: expected [{}], got [{}]",
            joined(expected),
            joined(&tokens)
        ));
    }
    if !matches!(schedule, Schedule::Free) && !observation.before_release.is_empty() {
        mismatches.push(format!(
            "the held worker published {} event(s) before it was released",
            observation.before_release.len()
        ));
    }
    let expects_error = fixture.expect.events.last() == Some(&Token::Error);
    let (projection, classification) = match &observation.outcome {
        PromptOutcome::Failed(failure) => {
            if !expects_error {
                mismatches.push("the prompt failed, but `expect.events` has no `error`".to_owned());
            }
            mismatches.extend(
                fixture
                    .expect
                    .provider_error
                    .mismatches(&failure.projection),
            );
            if let Some(error) = fixture.prompt_error() {
                let message = projected_message(&error.message);
                if failure.projection.message() != message {
                    mismatches.push(format!(
                        "providerError.message: expected `{message}`, got `{}`",
                        failure.projection.message()
                    ));
                }
            }
            let classification = classify_projection(&bundle, &failure.projection);
            if classification.code != fixture.expect.diagnostic_code {
                mismatches.push(format!(
                    "diagnosticCode: expected `{}`, got `{}`",
                    fixture.expect.diagnostic_code, classification.code
                ));
            }
            (Some(failure.projection.clone()), Some(classification))
        }
        PromptOutcome::Completed { stop_reason } => {
            mismatches.push(format!(
                "the prompt returned `{stop_reason}` instead of the `error` token"
            ));
            (None, None)
        }
    };
    Ok(TransportCheck {
        observation,
        tokens,
        projection,
        classification,
        mismatches,
    })
}

fn joined(tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(|token| token.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
