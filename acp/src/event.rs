//! What the adapter emits: ordered evidence events, each with the identity of the prompt it
//! belongs to, and their tokens as replay fixtures name them.

use faultline_recovery::session::{Claim, Event, Role};
use serde::{Deserialize, Serialize};

/// One piece of evidence from the adapter's ordered event stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AdapterEvent {
    /// An assistant or user message chunk; `diagnostic_candidate` is the marker, decided once
    /// here and carried unchanged.
    MessageChunk {
        /// Who wrote it.
        role: ChunkRole,
        /// Its text.
        text: String,
        /// The provider-diagnostic candidate marker.
        diagnostic_candidate: bool,
    },
    /// A thought (reasoning) chunk.
    ThoughtChunk {
        /// Its text.
        text: String,
    },
    /// A new tool call.
    ToolCall {
        /// The tool call's id.
        tool_call_id: String,
    },
    /// An update of a tool call.
    ToolUpdate {
        /// The tool call's id.
        tool_call_id: String,
    },
    /// The session settled its current model.
    ModelSettled {
        /// The model id.
        model_id: String,
    },
}

/// The role of a message chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ChunkRole {
    /// The assistant.
    #[default]
    Assistant,
    /// The user.
    User,
}

impl AdapterEvent {
    /// The event's replay token (`message_chunk`, `message_chunk:diagnostic`, `thought_chunk`,
    /// `tool_call`, `tool_update`), or `None` for events fixtures do not tokenise.
    pub fn token(&self) -> Option<&'static str> {
        match self {
            AdapterEvent::MessageChunk {
                diagnostic_candidate: true,
                ..
            } => Some("message_chunk:diagnostic"),
            AdapterEvent::MessageChunk { .. } => Some("message_chunk"),
            AdapterEvent::ThoughtChunk { .. } => Some("thought_chunk"),
            AdapterEvent::ToolCall { .. } => Some("tool_call"),
            AdapterEvent::ToolUpdate { .. } => Some("tool_update"),
            AdapterEvent::ModelSettled { .. } => None,
        }
    }

    /// The recovery engine's event for this evidence, under `claim`.
    pub fn to_recovery(&self, claim: &Claim) -> Event {
        match self {
            AdapterEvent::MessageChunk {
                role,
                text,
                diagnostic_candidate,
            } => Event::Chunk {
                claim: claim.clone(),
                role: match role {
                    ChunkRole::Assistant => Role::Assistant,
                    ChunkRole::User => Role::User,
                },
                text: text.clone(),
                diagnostic_candidate: *diagnostic_candidate,
            },
            AdapterEvent::ThoughtChunk { text } => Event::Chunk {
                claim: claim.clone(),
                role: Role::Thought,
                text: text.clone(),
                diagnostic_candidate: false,
            },
            AdapterEvent::ToolCall { .. } => Event::ToolCall {
                claim: claim.clone(),
            },
            AdapterEvent::ToolUpdate { .. } => Event::ToolUpdate {
                claim: claim.clone(),
            },
            AdapterEvent::ModelSettled { model_id } => Event::ModelSettled {
                model_id: model_id.clone(),
            },
        }
    }
}
