//! Fixture capture: record one live ACP prompt turn as a replay-fixture draft.
//!
//! The adapter is the client: it sends one prompt to an agent (a spawned process speaking ACP
//! on stdio, or any byte streams), and what it observed — the chunks, tool calls and updates,
//! model settlements and the prompt error — becomes the draft's frames, with every forbidden
//! payload shape (a documentation URL in a provider's 429, a host path, a key) replaced by its
//! placeholder and reported ([`Draft::replacements`]). The draft's `expect` is what replaying
//! those sanitized frames through the adapter and the recovery engine decides (the terminal
//! message classified with the agent's provider id), so a draft states today's behaviour;
//! review it before committing it. A draft is `capture: recorded`, its `source` is the capture
//! command and its `capturedAt` the capture's instant, and it is returned only if the loader's
//! document lints pass ([`crate::fixture::load_str`]). A turn that does not settle within the
//! request's timeout ends the capture with [`CaptureError::Timeout`].
//!
//! What a frame cannot record: a tool call's title and status (the adapter keeps only ids),
//! and raw error `data` beyond a validated `errorKind` (it never crosses the boundary).
//!
//! This module also bridges blocking standard streams to the adapter's async byte streams
//! (one thread per direction), for spawned agents and for [`serve`].

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use faultline_recovery::projection::ProjectionSource;
use faultline_runtime::Bundle;

use crate::fixture::forbidden::{Replacement, sanitize};
use crate::fixture::{
    AgentId, Capture, Case, Expect, ExpectedProjection, Fixture, FixtureError, Frame, Gateway,
    Identity, Recording, Token, classify_projection, load_str, replay_recovery,
};
use crate::transport::{FakeAgent, Schedule, TransportError, replay};
use faultline_acp::adapter::{Adapter, AdapterError, PromptOutcome};
use faultline_acp::event::AdapterEvent;
use faultline_acp::pipe::{PipeReader, PipeWriter, pipe};

/// How long a capture waits for the turn to settle unless told otherwise: long enough for an
/// agent's own retries of a transient error with short delays, short enough that an agent
/// retrying silently forever does not hang the harness.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// What to capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureRequest {
    /// The gateway the agent is configured for.
    pub gateway: Gateway,
    /// The case the turn exercises.
    pub case: Case,
    /// The agent identity (the adapter's negotiated provider id).
    pub agent_id: AgentId,
    /// The replay identity to record.
    pub identity: Identity,
    /// The prompt to send.
    pub prompt: String,
    /// The capture command, recorded as the draft's `source`.
    pub source: String,
    /// The capture's instant (RFC 3339), recorded as `capturedAt`.
    pub captured_at: String,
    /// The harness's recording (agent, version, scenario), if the harness captures.
    pub recording: Option<Recording>,
    /// How long the whole turn (`initialize`, `session/new`, `session/prompt`) may take.
    pub timeout: Duration,
}

/// Why a capture produced no draft.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The ACP connection failed.
    #[error(transparent)]
    Adapter(#[from] AdapterError),
    /// The draft fails the loader's lints.
    #[error("the draft fails {} lint(s)", .0.len())]
    Lints(Vec<FixtureError>),
    /// The draft could not be encoded.
    #[error("cannot encode the draft: {0}")]
    Encode(#[from] serde_json::Error),
    /// The turn has a response-attempt retry boundary (a Codex `session_info_update`), which
    /// no replay frame can hold: dropping it would draft a fixture of another turn.
    #[error(
        "the turn crossed a response-attempt retry boundary, which replay fixtures cannot hold; capture a turn without one"
    )]
    ResponseAttemptBoundary,
    /// The turn did not settle in time: the agent never answered (an agent retrying a
    /// transient error silently does this). Nothing is drafted: a turn without its terminal
    /// failure is not a fixture.
    #[error(
        "the agent did not settle the turn within {} s ({events} update(s) received); it may be retrying silently — raise the timeout (--timeout SECONDS) or make the agent give up sooner",
        .after.as_secs()
    )]
    Timeout {
        /// The timeout that expired.
        after: Duration,
        /// How many updates had been received.
        events: usize,
    },
    /// The sanitized frames could not be replayed to derive the draft's expectations.
    #[error("the sanitized frames do not replay: {0}")]
    Replay(#[from] TransportError),
}

/// A draft that passed the loader's document lints, its file text, and what sanitizing
/// replaced.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// The validated fixture.
    pub fixture: Fixture,
    /// Its JSON text, as it would be written.
    pub text: String,
    /// Every forbidden shape the capture replaced with its placeholder (the frame it was in,
    /// and the replacement).
    pub replacements: Vec<(String, Replacement)>,
}

/// Captures one prompt turn with an agent reached through `incoming` (what the agent writes)
/// and `outgoing` (what it reads), in `cwd`, giving up after `request.timeout`. The caller owns
/// the agent: it starts it, connects its streams (for a process, with [`read_into_pipe`] and
/// [`write_from_pipe`]) and ends it once this returns.
pub fn capture(
    bundle: Arc<Bundle>,
    incoming: PipeReader,
    outgoing: PipeWriter,
    cwd: &Path,
    request: &CaptureRequest,
) -> Result<Draft, CaptureError> {
    let (adapter, mut events) = Adapter::new(Arc::clone(&bundle), request.agent_id.as_str());
    let (expired, timer) = futures::channel::oneshot::channel::<()>();
    let timeout = request.timeout;
    // The timer thread outlives a turn that settles first; its send then fails harmlessly.
    let _timer = std::thread::spawn(move || {
        std::thread::sleep(timeout);
        let _ = expired.send(());
    });
    let prompt = Box::pin(adapter.prompt(outgoing, incoming, &request.prompt, cwd));
    let outcome = match futures::executor::block_on(futures::future::select(prompt, timer)) {
        futures::future::Either::Left((outcome, _)) => outcome?,
        futures::future::Either::Right(_) => {
            return Err(CaptureError::Timeout {
                after: timeout,
                events: events.drain().len(),
            });
        }
    };
    draft(&bundle, &adapter, &events.drain(), &outcome, request)
}

/// Builds the draft of a captured turn from the adapter's events and the prompt's outcome:
/// the frames, with every forbidden payload shape replaced by its placeholder
/// ([`crate::fixture::forbidden::sanitize`]); the expectations, from replaying the sanitized
/// frames through both layers (so the draft states what its own frames produce, classified
/// with the agent's provider id); then the loader's lints.
pub fn draft(
    bundle: &Arc<Bundle>,
    adapter: &Adapter,
    events: &[AdapterEvent],
    outcome: &PromptOutcome,
    request: &CaptureRequest,
) -> Result<Draft, CaptureError> {
    let mut frames = Vec::new();
    let mut replacements = Vec::new();
    let mut clean = |field: String, text: &str| -> String {
        let (text, replaced) = sanitize(text);
        replacements.extend(
            replaced
                .into_iter()
                .map(|replacement| (field.clone(), replacement)),
        );
        text
    };
    for event in events {
        let index = frames.len();
        let frame = match event {
            AdapterEvent::MessageChunk { role, text, .. } => Frame::MessageChunk {
                role: *role,
                text: clean(format!("frames[{index}].text"), text),
            },
            AdapterEvent::ThoughtChunk { text } => Frame::ThoughtChunk {
                text: clean(format!("frames[{index}].text"), text),
            },
            AdapterEvent::ToolCall { tool_call_id } => Frame::ToolCall {
                tool_call_id: clean(format!("frames[{index}].toolCallId"), tool_call_id),
                title: None,
                status: Default::default(),
            },
            AdapterEvent::ToolUpdate { tool_call_id } => Frame::ToolUpdate {
                tool_call_id: clean(format!("frames[{index}].toolCallId"), tool_call_id),
                status: None,
            },
            AdapterEvent::ModelSettled { model_id } => Frame::ModelSettled {
                model_id: clean(format!("frames[{index}].modelId"), model_id),
            },
            AdapterEvent::ResponseAttemptReset => {
                return Err(CaptureError::ResponseAttemptBoundary);
            }
        };
        frames.push(frame);
    }
    if let PromptOutcome::Failed(failure) = outcome {
        let index = frames.len();
        frames.push(Frame::PromptError {
            code: failure.error.code,
            message: clean(format!("frames[{index}].message"), &failure.error.message),
            data: failure.error.error_kind.as_ref().map(|kind| {
                let mut data = serde_json::Map::new();
                data.insert(
                    "errorKind".to_owned(),
                    serde_json::Value::String(clean(
                        format!("frames[{index}].data.errorKind"),
                        kind,
                    )),
                );
                data
            }),
        });
    }
    let mut fixture = Fixture {
        name: String::new(),
        gateway: request.gateway,
        agent_id: request.agent_id.clone(),
        classifying: request.gateway.classifying(),
        case: request.case,
        capture: Capture::Recorded,
        captured_at: Some(request.captured_at.clone()),
        source: request.source.clone(),
        recording: request.recording.clone(),
        identity: request.identity.clone(),
        frames,
        expect: Expect {
            events: Vec::new(),
            provider_error: ExpectedProjection {
                source: ProjectionSource::AcpPrompt,
                rpc_code: 0,
                error_kind: None,
                provider_id: adapter.provider_id().to_owned(),
                model_id: None,
            },
            diagnostic_code: String::new(),
            pre_result_safe: false,
            recorded_diagnostic_code: String::new(),
        },
    };
    // A turn that completed has no `prompt_error`: the lints below refuse it, and there is
    // nothing to replay.
    if matches!(outcome, PromptOutcome::Failed(_)) {
        expect_replayed(bundle, &mut fixture)?;
    }
    let mut text = serde_json::to_string_pretty(&fixture)?;
    text.push('\n');
    let name = fixture
        .recording
        .as_ref()
        .map_or_else(|| fixture.cell().file_name(), Recording::file_name);
    match load_str(&name, &text) {
        Ok(fixture) => Ok(Draft {
            fixture,
            text,
            replacements,
        }),
        Err(lints) => Err(CaptureError::Lints(lints)),
    }
}

/// Sets `fixture.expect` to what replaying its frames produces: the transport layer's tokens,
/// projection and classification, and the recovery layer's record and verdict.
fn expect_replayed(bundle: &Arc<Bundle>, fixture: &mut Fixture) -> Result<(), CaptureError> {
    let observation = replay(
        Arc::clone(bundle),
        fixture.agent_id.as_str(),
        &fixture.identity.session_id,
        &fixture.frames,
        Schedule::Free,
    )?;
    let mut tokens: Vec<Token> = observation.events.iter().filter_map(Token::of).collect();
    if let PromptOutcome::Failed(failure) = &observation.outcome {
        tokens.push(Token::Error);
        let projection = &failure.projection;
        fixture.expect.provider_error = ExpectedProjection {
            source: projection.source(),
            rpc_code: projection.rpc_code().unwrap_or_default(),
            error_kind: projection.error_kind().map(str::to_owned),
            provider_id: projection
                .provider_id()
                .map(str::to_owned)
                .unwrap_or_default(),
            model_id: projection.model_id().map(str::to_owned),
        };
        fixture.expect.diagnostic_code = classify_projection(bundle, projection).code;
    }
    fixture.expect.events = tokens;
    if let Ok(recovery) = replay_recovery(bundle, fixture) {
        fixture.expect.pre_result_safe = recovery.pre_result_safe;
        fixture.expect.recorded_diagnostic_code = recovery.recorded_diagnostic.unwrap_or_default();
    }
    Ok(())
}

/// Pumps a blocking reader into a new pipe on a thread; the pipe closes at end-of-file.
pub fn read_into_pipe(mut reader: impl Read + Send + 'static) -> (PipeReader, JoinHandle<()>) {
    let (pipe_reader, writer) = pipe();
    let thread = std::thread::spawn(move || {
        let mut buffer = [0_u8; 8192];
        loop {
            match reader.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(count) => {
                    let Some(bytes) = buffer.get(..count) else {
                        break;
                    };
                    if writer.send(bytes).is_err() {
                        break;
                    }
                }
            }
        }
        writer.close();
    });
    (pipe_reader, thread)
}

/// Pumps a new pipe into a blocking writer on a thread, flushing after every chunk; the
/// writer is dropped (closed) when the pipe closes.
pub fn write_from_pipe(mut writer: impl Write + Send + 'static) -> (PipeWriter, JoinHandle<()>) {
    let (mut reader, pipe_writer) = pipe();
    let thread = std::thread::spawn(move || {
        while let Some(chunk) = futures::executor::block_on(reader.next_chunk()) {
            if writer
                .write_all(&chunk)
                .and_then(|()| writer.flush())
                .is_err()
            {
                break;
            }
        }
    });
    (pipe_writer, thread)
}

/// Serves `fixture`'s frames as a fake ACP agent on `input` and `output` (for a stand-in agent
/// on standard streams, to try the capture path and ACP clients) until the client hangs up.
pub fn serve(
    fixture: &Fixture,
    input: impl Read + Send + 'static,
    output: impl Write + Send + 'static,
) -> Result<(), TransportError> {
    let agent = FakeAgent::new(fixture.identity.session_id.clone(), &fixture.frames)?;
    let (incoming, reading) = read_into_pipe(input);
    let (outgoing, writing) = write_from_pipe(output);
    let served = futures::executor::block_on(agent.serve(incoming, outgoing));
    let _ = writing.join();
    // The reading thread may block on its input (standard input, say); it ends with the
    // process.
    drop(reading);
    served
}
