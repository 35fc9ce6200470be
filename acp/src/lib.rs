//! The ACP evidence adapter.
//!
//! Agents speak the Agent Client Protocol (JSON-RPC over stdio). The evidence that authorises
//! recovery is decided where ACP traffic is converted: this crate sits on the client side of a
//! real ACP connection and turns `session/update` notifications and `session/prompt` errors into
//! ordered [`event::AdapterEvent`]s for the recovery engine (`faultline_recovery`).
//!
//! - [`adapter`]: the adapter and its event stream;
//! - [`dialect`]: what the negotiated agent id brings (Cursor's barrier, Codex's
//!   response-attempt boundary) and the parsing of that boundary in protocol metadata;
//! - [`event`]: the events it emits, and their mapping to recovery events;
//! - [`pipe`]: in-memory byte pipes, to connect the adapter to an agent in the same process.
//!
//! It is a crate of its own so that the runtime an orchestrator links stays free of the ACP SDK
//! and its async stack. The replay fixtures that prove this boundary, the fake agent that plays
//! them and the capture of live agent turns are tooling, in `faultline-replay`.

pub mod adapter;
pub mod dialect;
pub mod event;
pub mod pipe;
