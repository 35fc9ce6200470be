//! The ACP evidence adapter and the replay fixture matrix.
//!
//! Agents speak the Agent Client Protocol (JSON-RPC over stdio). The evidence that authorises
//! recovery is decided where ACP traffic is converted: this crate sits on the client side of a
//! real ACP connection and turns `session/update` notifications and `session/prompt` errors into
//! ordered [`event::AdapterEvent`]s for the recovery engine (`faultline_runtime::recovery`).
//! The replay fixtures (`fixtures/replay/`) prove that boundary by replaying protocol traffic
//! through it.
//!
//! It is a crate of its own so that the runtime an orchestrator links stays free of the ACP SDK
//! and its async stack.

pub mod adapter;
pub mod capture;
pub mod event;
pub mod fixture;
pub mod pipe;
pub mod transport;
