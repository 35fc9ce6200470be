//! Why a bundle could not be loaded. (Writing has its own error, beside the writer: an
//! orchestrator only ever loads, and the compiler only ever writes.)
//!
//! [`LoadError`] is opaque (its message names what is wrong and where); [`LoadError::kind`]
//! says which kind of failure it is, for a caller that reacts to some of them (rebuild on
//! [`LoadErrorKind::TooOld`], upgrade on [`LoadErrorKind::TooNew`]).

/// Why a bundle could not be loaded. Its message says what is wrong; [`LoadError::kind`] says
/// which kind of failure it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct LoadError(Repr);

/// The kind of a [`LoadError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// The input ends before a field it must hold.
    Truncated,
    /// The input does not start with the bundle magic: it is not a bundle.
    BadMagic,
    /// The bundle needs a newer reader (upgrade the runtime).
    TooNew,
    /// The bundle's format is older than this reader reads (rebuild the bundle).
    TooOld,
    /// The content hash does not match the rest of the file: it is corrupt.
    HashMismatch,
    /// The automata were serialized by an incompatible regex-automata.
    RegexAutomataVersion,
    /// The catalogue was checked with other redaction rules than this runtime applies.
    RedactionVersion,
    /// An automaton section failed validation.
    Automaton,
    /// Anything else that is inconsistent.
    Malformed,
}

/// What went wrong, with the details the message names. Private, so that the details can grow
/// without breaking a caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Repr {
    #[error("the bundle is truncated: {needed} bytes needed, {len} present")]
    Truncated { needed: usize, len: usize },
    #[error("not a faultline bundle (bad magic bytes)")]
    BadMagic,
    #[error(
        "the bundle (format {format_version}) needs reader version {min_reader_version}; this reader is version {reader_version}"
    )]
    TooNew {
        format_version: u16,
        min_reader_version: u16,
        reader_version: u16,
    },
    #[error(
        "the bundle's format version {format_version} is older than the oldest readable, {oldest_readable}; rebuild it"
    )]
    TooOld {
        format_version: u16,
        oldest_readable: u16,
    },
    #[error("the bundle's content hash does not match its contents (corrupted file)")]
    HashMismatch,
    #[error(
        "the automata were serialized by regex-automata {bundle}; this runtime reads {runtime}.x"
    )]
    RegexAutomataVersion {
        bundle: String,
        runtime: &'static str,
    },
    #[error("the bundle was checked with redaction `{bundle}`; this runtime applies `{runtime}`")]
    RedactionVersion {
        bundle: String,
        runtime: &'static str,
    },
    #[error("automaton section {section} is invalid: {message}")]
    Automaton { section: usize, message: String },
    #[error("the bundle is malformed: {0}")]
    Malformed(String),
}

impl LoadError {
    /// Which kind of failure this is.
    pub fn kind(&self) -> LoadErrorKind {
        match &self.0 {
            Repr::Truncated { .. } => LoadErrorKind::Truncated,
            Repr::BadMagic => LoadErrorKind::BadMagic,
            Repr::TooNew { .. } => LoadErrorKind::TooNew,
            Repr::TooOld { .. } => LoadErrorKind::TooOld,
            Repr::HashMismatch => LoadErrorKind::HashMismatch,
            Repr::RegexAutomataVersion { .. } => LoadErrorKind::RegexAutomataVersion,
            Repr::RedactionVersion { .. } => LoadErrorKind::RedactionVersion,
            Repr::Automaton { .. } => LoadErrorKind::Automaton,
            Repr::Malformed(_) => LoadErrorKind::Malformed,
        }
    }

    /// The bundle's format version, when the failure is about it ([`LoadErrorKind::TooNew`],
    /// [`LoadErrorKind::TooOld`]): what an orchestrator logs beside "rebuild" or "upgrade".
    pub fn format_version(&self) -> Option<u16> {
        match &self.0 {
            Repr::TooNew { format_version, .. } | Repr::TooOld { format_version, .. } => {
                Some(*format_version)
            }
            _ => None,
        }
    }

    pub(crate) fn malformed(what: impl Into<String>) -> Self {
        LoadError(Repr::Malformed(what.into()))
    }

    pub(crate) fn truncated(needed: usize, len: usize) -> Self {
        LoadError(Repr::Truncated { needed, len })
    }
}

impl From<Repr> for LoadError {
    fn from(repr: Repr) -> Self {
        LoadError(repr)
    }
}
