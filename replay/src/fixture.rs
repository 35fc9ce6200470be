//! Replay fixtures: the document format, the loader and its lints, the forbidden identifier
//! shapes, and the recovery-evidence layer of the replay (AC .17–.19; `docs/fixtures.md`).
//!
//! A fixture is one cell of the replay matrix (`fixtures/replay/<gateway>-<case>.json`): raw
//! ACP traffic (frames) and what replaying it must produce (expected tokens, the terminal
//! failure's projection and code, the recorded diagnostic and the pre-result verdict). Two layers
//! consume the same file: the ACP transport layer (a real connection through the adapter,
//! elsewhere in this crate) and the recovery-evidence layer ([`replay_recovery`]).
//!
//! - [`load_corpus`] / [`load_str`]: decode and lint documents (the caller reads the files),
//!   reporting every error with its file, field and fix ([`FixtureError`], [`Lint`]);
//! - [`Fixture`] and its parts: the validated document; [`Fixture::steps`] walks frames and
//!   expected tokens in lockstep, [`Expect::streamed`] is what the adapter's stream must carry
//!   before the prompt returns, [`ExpectedProjection::mismatches`] compares a projection;
//! - [`forbidden`]: the enforced forbidden-shape table;
//! - [`replay_recovery`]: the evidence-layer procedure with the real engine.

mod document;
pub mod forbidden;
mod lint;
mod load;
mod replay;

pub use document::{
    AgentId, Capture, Case, Cell, Expect, ExpectedProjection, Fixture, Frame, Gateway, Identity,
    LockstepError, Recording, Step, Token, ToolStatus,
};
pub use lint::{FixtureError, Level, Lint, markdown_table as lints_markdown_table};
pub use load::{Corpus, load_corpus, load_recorded_corpus, load_str, missing_required_cells};
pub use replay::{
    REPLAY_INSTANT, RecoveryOutcome, ReplayError, classify_projection, replay_recovery,
    replay_recovery_in,
};
