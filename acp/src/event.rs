//! What the adapter emits: ordered evidence events, their mapping to the recovery engine's
//! events under the identity of the prompt they belong to, and their tokens as replay fixtures
//! name them.

use faultline_recovery::RecoveryEvent;
use faultline_recovery::prompt::{Claim, Role};
use faultline_recovery::response_attempt::ToolScope;
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
    /// A new tool call. ACP does not say where a tool call sits, so every one is top-level
    /// for the recovery engine: a commit boundary of the transcript, which keeps the records
    /// before it out of any later retraction.
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
    /// The provider abandoned its active response attempt and will stream a replacement: a
    /// `session_info_update` whose `_meta` is the dialect's exact retry-boundary shape
    /// ([`crate::dialect`]). No provider text or metadata travels with it.
    ResponseAttemptReset,
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
            AdapterEvent::ModelSettled { .. } | AdapterEvent::ResponseAttemptReset => None,
        }
    }

    /// The recovery engine's event for this evidence, under `claim` (the prompt the adapter is
    /// running: the engine checks it against the active attempt, so a boundary claimed for a
    /// zero or stale generation retracts nothing).
    pub fn to_recovery(&self, claim: &Claim) -> RecoveryEvent {
        match self {
            AdapterEvent::MessageChunk {
                role,
                text,
                diagnostic_candidate,
            } => RecoveryEvent::Chunk {
                claim: claim.clone(),
                role: match role {
                    ChunkRole::Assistant => Role::Assistant,
                    ChunkRole::User => Role::User,
                },
                text: text.clone(),
                provider_diagnostic_candidate: *diagnostic_candidate,
            },
            AdapterEvent::ThoughtChunk { text } => RecoveryEvent::Chunk {
                claim: claim.clone(),
                role: Role::Thought,
                text: text.clone(),
                provider_diagnostic_candidate: false,
            },
            AdapterEvent::ToolCall { .. } => RecoveryEvent::ToolCall {
                claim: claim.clone(),
                scope: ToolScope::TopLevel,
            },
            AdapterEvent::ToolUpdate { .. } => RecoveryEvent::ToolUpdate {
                claim: claim.clone(),
            },
            // The model belongs to the execution the adapter runs (the claim's).
            AdapterEvent::ModelSettled { model_id } => RecoveryEvent::ModelSettled {
                model_id: model_id.clone(),
                execution_id: claim.execution_id.clone(),
            },
            AdapterEvent::ResponseAttemptReset => RecoveryEvent::ResponseAttemptReset {
                claim: claim.clone(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boundary_reaches_the_engine_under_the_prompts_claim_and_has_no_token() {
        let claim = Claim {
            execution_id: Some("exec-1".to_owned()),
            generation: 7,
        };
        let event = AdapterEvent::ResponseAttemptReset;
        assert_eq!(event.token(), None);
        assert_eq!(
            event.to_recovery(&claim),
            RecoveryEvent::ResponseAttemptReset { claim }
        );
    }
}
