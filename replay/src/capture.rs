//! Fixture capture: record one live ACP prompt turn as a replay-fixture draft.
//!
//! The adapter is the client: it sends one prompt to an agent (a spawned process speaking ACP
//! on stdio, or any byte streams), and what it observed — the chunks, tool calls and updates,
//! model settlements and the prompt error — becomes the draft's frames. The draft's `expect`
//! is what the adapter and the recovery engine decided, so a draft states today's behaviour;
//! review it before committing it. A draft is `capture: recorded`, its `source` is the capture
//! command and its `capturedAt` the capture's instant, and it is returned only if the loader's
//! document lints pass ([`crate::fixture::load_str`]): a draft carrying a credential, a URL or
//! a host path is refused with the lints that failed.
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

use faultline_recovery::projection::ProjectionSource;
use faultline_runtime::Bundle;

use crate::fixture::{
    AgentId, Capture, Case, Expect, ExpectedProjection, Fixture, FixtureError, Frame, Gateway,
    Identity, Token, classify_projection, load_str, replay_recovery,
};
use crate::transport::{FakeAgent, TransportError};
use faultline_acp::adapter::{Adapter, AdapterError, PromptOutcome};
use faultline_acp::event::AdapterEvent;
use faultline_acp::pipe::{PipeReader, PipeWriter, pipe};

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
}

/// A draft that passed the loader's document lints, and its file text.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// The validated fixture.
    pub fixture: Fixture,
    /// Its JSON text, as it would be written.
    pub text: String,
}

/// Captures one prompt turn with an agent reached through `incoming` (what the agent writes)
/// and `outgoing` (what it reads), in `cwd`. The caller owns the agent: it starts it, connects
/// its streams (for a process, with [`read_into_pipe`] and [`write_from_pipe`]) and ends it once
/// this returns.
pub fn capture(
    bundle: Arc<Bundle>,
    incoming: PipeReader,
    outgoing: PipeWriter,
    cwd: &Path,
    request: &CaptureRequest,
) -> Result<Draft, CaptureError> {
    let (adapter, mut events) = Adapter::new(bundle, request.agent_id.as_str());
    let outcome =
        futures::executor::block_on(adapter.prompt(outgoing, incoming, &request.prompt, cwd))?;
    draft(&adapter, &events.drain(), &outcome, request)
}

/// Builds the draft of a captured turn from the adapter's events and the prompt's outcome, and
/// lints it.
pub fn draft(
    adapter: &Adapter,
    events: &[AdapterEvent],
    outcome: &PromptOutcome,
    request: &CaptureRequest,
) -> Result<Draft, CaptureError> {
    let mut frames = Vec::new();
    let mut tokens = Vec::new();
    for event in events {
        let frame = match event {
            AdapterEvent::MessageChunk { role, text, .. } => Frame::MessageChunk {
                role: *role,
                text: text.clone(),
            },
            AdapterEvent::ThoughtChunk { text } => Frame::ThoughtChunk { text: text.clone() },
            AdapterEvent::ToolCall { tool_call_id } => Frame::ToolCall {
                tool_call_id: tool_call_id.clone(),
                title: None,
                status: Default::default(),
            },
            AdapterEvent::ToolUpdate { tool_call_id } => Frame::ToolUpdate {
                tool_call_id: tool_call_id.clone(),
                status: None,
            },
            AdapterEvent::ModelSettled { model_id } => Frame::ModelSettled {
                model_id: model_id.clone(),
            },
            AdapterEvent::ResponseAttemptReset => {
                return Err(CaptureError::ResponseAttemptBoundary);
            }
        };
        frames.push(frame);
        tokens.extend(Token::of(event));
    }
    let provider_error = match outcome {
        PromptOutcome::Failed(failure) => {
            frames.push(Frame::PromptError {
                code: failure.error.code,
                message: failure.error.message.clone(),
                data: failure.error.error_kind.as_ref().map(|kind| {
                    let mut data = serde_json::Map::new();
                    data.insert(
                        "errorKind".to_owned(),
                        serde_json::Value::String(kind.clone()),
                    );
                    data
                }),
            });
            tokens.push(Token::Error);
            ExpectedProjection {
                source: failure.projection.source(),
                rpc_code: failure.projection.rpc_code().unwrap_or_default(),
                error_kind: failure.projection.error_kind().map(str::to_owned),
                provider_id: failure
                    .projection
                    .provider_id()
                    .map(str::to_owned)
                    .unwrap_or_default(),
                model_id: failure.projection.model_id().map(str::to_owned),
            }
        }
        // No error: the draft has no `prompt_error` and the lints will say so.
        PromptOutcome::Completed { .. } => ExpectedProjection {
            source: ProjectionSource::AcpPrompt,
            rpc_code: 0,
            error_kind: None,
            provider_id: adapter.provider_id().to_owned(),
            model_id: adapter.settled_model(),
        },
    };
    let diagnostic_code = match outcome {
        PromptOutcome::Failed(failure) => {
            classify_projection(adapter.bundle(), &failure.projection).code
        }
        PromptOutcome::Completed { .. } => String::new(),
    };
    let mut fixture = Fixture {
        name: String::new(),
        gateway: request.gateway,
        agent_id: request.agent_id,
        classifying: request.gateway.classifying(),
        case: request.case,
        capture: Capture::Recorded,
        captured_at: Some(request.captured_at.clone()),
        source: request.source.clone(),
        identity: request.identity.clone(),
        frames,
        expect: Expect {
            events: tokens,
            provider_error,
            diagnostic_code,
            pre_result_safe: false,
            recorded_diagnostic_code: String::new(),
        },
    };
    if matches!(outcome, PromptOutcome::Failed(_))
        && let Ok(recovery) = replay_recovery(adapter.bundle(), &fixture)
    {
        fixture.expect.pre_result_safe = recovery.pre_result_safe;
        fixture.expect.recorded_diagnostic_code = recovery.recorded_diagnostic.unwrap_or_default();
    }
    let mut text = serde_json::to_string_pretty(&fixture)?;
    text.push('\n');
    let name = fixture.cell().file_name();
    match load_str(&name, &text) {
        Ok(fixture) => Ok(Draft { fixture, text }),
        Err(lints) => Err(CaptureError::Lints(lints)),
    }
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
