//! Cursor's `RetriableError` control chunk (AC .12–.15): what counts as one.
//!
//! Cursor streams `Error: RetriableError: <cause>` as an ordinary assistant chunk while it
//! retries its own upstream call. The chunk is a marker only when, after a Unicode whitespace
//! trim, it *starts* with the prefix (any case) and carries a non-empty cause of at most 256
//! UTF-8 bytes (itself trimmed). Cancellation, deadline and escalation causes are the user's or
//! Cursor's own decision, not transport loss: they stay ordinary output. The veto is read
//! broadly (AC .12 names the signatures, not their spellings): a context cancellation in either
//! spelling (`context canceled`, `context cancelled`, `context canceled_by_client`), any
//! deadline (`deadline exceeded` with or without `context`, `[deadline_exceeded]`), and any
//! escalation (`cancel escalated`, `retry escalated`). Cursor's `[canceled]` decoration is not
//! a cancellation. The catalogue's `cursor.*` rules apply the same trim and bound; they match
//! exact envelopes, none of which carries a vetoed word, so both layers agree on every chunk.
//!
//! Which sessions the barrier applies to is not decided here from a provider id: the adapter
//! says so in the session's [`ProviderProfile`](crate::ProviderProfile).

use std::sync::LazyLock;

use regex::Regex;

/// The control prefix, compared case-insensitively.
pub const RETRIABLE_PREFIX: &str = "Error: RetriableError:";
/// The largest cause, in UTF-8 bytes, after trimming.
pub const MAX_CAUSE_BYTES: usize = 256;

#[expect(
    clippy::expect_used,
    reason = "a constant pattern of this module, compiled by its tests"
)]
static CANCELLATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bcontext[\s_-]*cancel|deadline|escalat")
        .expect("constant cancellation pattern")
});

/// What a chunk is to the Cursor observer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetriableChunk {
    /// Ordinary output: no marker, prose before the prefix, an empty or oversized cause.
    Ordinary,
    /// A marker whose cause is a cancellation, deadline or escalation: ordinary output too.
    Cancelled,
    /// A control chunk; the cause is trimmed and at most [`MAX_CAUSE_BYTES`].
    Marker {
        /// The chunk, trimmed (prefix and cause).
        observed: String,
    },
}

/// Classifies a chunk's text for the Cursor observer.
pub fn retriable_chunk(text: &str) -> RetriableChunk {
    let trimmed = text.trim();
    let has_prefix = trimmed
        .get(..RETRIABLE_PREFIX.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(RETRIABLE_PREFIX));
    let Some(cause) = trimmed
        .get(RETRIABLE_PREFIX.len()..)
        .filter(|_| has_prefix)
        .map(str::trim)
    else {
        return RetriableChunk::Ordinary;
    };
    if cause.is_empty() || cause.len() > MAX_CAUSE_BYTES {
        return RetriableChunk::Ordinary;
    }
    if CANCELLATION.is_match(cause) {
        return RetriableChunk::Cancelled;
    }
    RetriableChunk::Marker {
        observed: trimmed.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_marker(text: &str) -> bool {
        matches!(retriable_chunk(text), RetriableChunk::Marker { .. })
    }

    #[test]
    fn ac_12_markers_need_the_prefix_first_and_a_bounded_cause() {
        assert!(is_marker(
            "Error: RetriableError: [unavailable] PING timed out"
        ));
        assert!(is_marker("  error: retriableerror: Connection stalled\n"));
        assert!(is_marker(
            "\u{3000}Error: RetriableError: [canceled] HTTP/2 stream closed with error code CANCEL (0x8)\u{2003}"
        ));
        assert!(!is_marker(
            "I saw Error: RetriableError: Connection stalled in the log"
        ));
        assert!(!is_marker("Error: RetriableError:"));
        assert!(!is_marker("Error: RetriableError:   \t"));
        assert!(!is_marker("Error: Retriable"));
        // The bound is in bytes after the trim: 256 two-byte characters are 512 bytes.
        assert!(is_marker(&format!(
            "Error: RetriableError: {}  ",
            "x".repeat(256)
        )));
        assert!(!is_marker(&format!(
            "Error: RetriableError: {}",
            "x".repeat(257)
        )));
        assert!(!is_marker(&format!(
            "Error: RetriableError: {}",
            "é".repeat(129)
        )));
    }

    #[test]
    fn ac_14_cancellation_deadline_and_escalation_are_vetoed_but_canceled_decoration_is_not() {
        for cause in [
            "context canceled",
            "context canceled_by_client",
            "Context  Deadline Exceeded",
            "cancel escalated",
            // Read broadly: the spellings the narrow veto once let through.
            "deadline exceeded",
            "[deadline_exceeded] upstream",
            "context cancelled",
            "retry escalated",
        ] {
            let text = format!("Error: RetriableError: {cause}");
            assert_eq!(retriable_chunk(&text), RetriableChunk::Cancelled, "{cause}");
        }
        assert!(is_marker(
            "Error: RetriableError: HTTP/2 stream closed with error code CANCEL (0x8) [canceled]"
        ));
    }
}
