//! Replay tooling: the fixtures that prove the ACP evidence boundary, and the tools that make
//! and play them.
//!
//! - [`fixture`]: the replay fixture document (`fixtures/replay/<gateway>-<case>.json`), its
//!   loader and lints, the forbidden identifier shapes, and the recovery-evidence layer of the
//!   replay;
//! - [`transport`]: a fake agent on the agent side of a real ACP connection that plays a
//!   fixture's frames to the live adapter (`faultline_acp::adapter`);
//! - [`capture`]: records one live agent turn as a fixture draft, and serves a fixture to a
//!   client on standard streams;
//! - [`mock`]: the mock provider, a loopback HTTP server answering with one documented provider
//!   error (a scenario file), for recording real agents.
//!
//! The adapter an orchestrator links lives in `faultline-acp`; this crate is for the CLI
//! (`faultline replay`) and the tests, and pulls in the fixture format, the fake agent and
//! process spawning, which an orchestrator has no use for. It reads no files: callers hand it
//! the documents' text.

pub mod capture;
pub mod fixture;
pub mod mock;
pub mod transport;
