//! Timing hints: when a quota or rate limit resets, from the evidence.
//!
//! A structured reset time (the evidence's `reset_hint`) beats anything read from headers, the
//! body or text. Text is read only by the extractors the winning rule declares (`timing
//! [...]`), in that order, over the raw text, and the first hint that passes validation wins:
//!
//! - `try_again_at`: "try again at Sep 27th, 2026 3:09 PM UTC". The zone (`UTC`, `GMT`, `Z` or a
//!   numeric offset up to ±14:00) is mandatory: a wall-clock time without one names no instant.
//!   The ordinal suffix must fit the day, the date must exist, and a missing year is the first
//!   year (at most eight ahead, the reach of a February 29th) that puts the time after now.
//! - `resets_clock`: "resets 3pm (Europe/Paris)", Claude's session-limit notice (and "Your
//!   limit will reset at 7am (Asia/Singapore)", its earlier usage-limit notice): today or
//!   tomorrow in a named IANA zone. A wall-clock time the zone skips (spring gap) or repeats
//!   (autumn fold) names no single instant, so it gives no hint.
//! - `resets_in`: "resets in 2h 30m", a delay from now.
//! - `try_again_in`: "Please try again in 2.746s", "retry in 37.6s", "retry after 20 seconds",
//!   "try again in 1 hour 23 minutes", "Please wait 17 seconds before trying again": a delay
//!   from now, Go-style or in words.
//!
//! - Structured extractors (`retry_after`, `retry_after_ms`, `ratelimit_reset`, `body_reset`)
//!   read the response headers and the error body, and are consulted before every text
//!   extractor of the rule, whatever the declared order.
//!
//! Validation: a hint must lie strictly after `now` and at most eight years ahead, so nothing
//! stale or absurd reaches an orchestrator; how long it is willing to wait is its own policy.
//! Time zones come from the IANA database compiled into this crate, so a hint never depends on
//! the host's zone files or its local zone.

use std::sync::LazyLock;
use std::time::SystemTime;

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use regex::{Captures, Regex};

use crate::structured::{Body, Headers};
use crate::vocab::TimingExtractor;

mod structured;
mod text;

use structured::*;
use text::*;

/// How far ahead a hint may lie: eight years of 365.25 days.
const MAX_HORIZON_SECONDS: i64 = 2922 * 86_400;
/// The farthest a yearless date rolls forward.
const MAX_ROLL_FORWARD_YEARS: i16 = 8;

/// Where a hint came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HintSource {
    /// The evidence's structured `reset_hint`.
    Structured,
    /// A structured extractor of the winning rule: one that reads the response headers or the
    /// error body ([`TimingExtractor::is_structured`]).
    Field(TimingExtractor),
    /// A text extractor of the winning rule.
    Text(TimingExtractor),
}

impl std::fmt::Display for HintSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HintSource::Structured => f.write_str("structured `reset_hint`"),
            HintSource::Field(extractor @ TimingExtractor::BodyReset) => {
                write!(f, "body extractor `{extractor}`")
            }
            HintSource::Field(extractor) => write!(f, "header extractor `{extractor}`"),
            HintSource::Text(extractor) => write!(f, "text extractor `{extractor}`"),
        }
    }
}

/// The structured evidence the structured extractors read.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fields<'e> {
    /// The response headers.
    pub(crate) headers: Option<&'e Headers>,
    /// The error body (the evidence's, or one lifted from its text).
    pub(crate) body: Option<&'e Body>,
    /// The JSON Pointers the winning rule names for `body_reset`, read before its usual places.
    pub(crate) body_reset_at: &'e [String],
}

/// What one source gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HintOutcome {
    /// Nothing of that shape is in the evidence.
    Absent,
    /// Text of that shape is there, but it names no instant (the reason says why).
    Unreadable(String),
    /// It names an instant that fails validation.
    Rejected {
        /// The instant, RFC 3339 in UTC.
        at: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The hint returned.
    Accepted {
        /// The instant, RFC 3339 in UTC.
        at: String,
    },
}

/// One source the timing stage consulted, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HintStep {
    /// The source.
    pub source: HintSource,
    /// What it gave.
    pub outcome: HintOutcome,
}

/// A validated reset time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResetHint {
    at: Timestamp,
    now: Timestamp,
}

impl ResetHint {
    /// RFC 3339 in UTC.
    pub(crate) fn rfc3339(&self) -> String {
        self.at.to_string()
    }

    /// Whole seconds from now until the reset, rounded up (never zero: the hint is in the
    /// future).
    pub(crate) fn retry_after_seconds(&self) -> u64 {
        let nanos = self.at.as_nanosecond() - self.now.as_nanosecond();
        let seconds =
            nanos.div_euclid(1_000_000_000) + i128::from(nanos.rem_euclid(1_000_000_000) != 0);
        u64::try_from(seconds).unwrap_or(0)
    }
}

/// Converts a clock reading; a time outside jiff's range (years −9999..=9999) is clamped, which
/// no real clock reaches.
pub(crate) fn timestamp(now: SystemTime) -> Timestamp {
    Timestamp::try_from(now).unwrap_or_else(|_| {
        if now < SystemTime::UNIX_EPOCH {
            Timestamp::MIN
        } else {
            Timestamp::MAX
        }
    })
}

/// Why [`parse_instant`] refused a text. Its message names the text and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` {problem}")]
pub struct ParseInstantError {
    text: String,
    problem: InstantProblem,
}

/// What is wrong with the text. Private: the reasons carry the time library's messages, whose
/// types stay out of this crate's API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum InstantProblem {
    #[error("is not an RFC 3339 instant: {0}")]
    NotAnInstant(String),
    #[error("is out of range: {0}")]
    OutOfRange(String),
}

/// Parses an RFC 3339 instant (a `--now` flag or a `now` field), for callers outside this crate.
pub fn parse_instant(text: &str) -> Result<SystemTime, ParseInstantError> {
    let error = |problem| ParseInstantError {
        text: text.to_owned(),
        problem,
    };
    let instant: Timestamp = text
        .parse()
        .map_err(|e: jiff::Error| error(InstantProblem::NotAnInstant(e.to_string())))?;
    SystemTime::try_from(instant).map_err(|e| error(InstantProblem::OutOfRange(e.to_string())))
}

/// Formats a clock reading as RFC 3339 in UTC.
pub fn format_instant(instant: SystemTime) -> String {
    timestamp(instant).to_string()
}

/// Reads a reset time from `text` with `extractors`, in order, as a rule declaring them would:
/// the first hint valid at `now`, as RFC 3339 in UTC.
/// The structured extractors (headers, body) find nothing in a bare text.
pub fn reset_time(text: &str, extractors: &[TimingExtractor], now: SystemTime) -> Option<String> {
    resolve(
        None,
        extractors,
        text,
        Fields::default(),
        timestamp(now),
        None,
    )
    .map(|hint| hint.rfc3339())
}

/// The timing stage: the structured hint if it is valid, otherwise the first valid hint of the
/// winning rule's structured extractors (headers and body), in declared order, otherwise the
/// first valid hint of its text extractors, in declared order. Records every source consulted
/// into `steps`.
pub(crate) fn resolve(
    structured: Option<&str>,
    extractors: &[TimingExtractor],
    raw: &str,
    fields: Fields<'_>,
    now: Timestamp,
    mut steps: Option<&mut Vec<HintStep>>,
) -> Option<ResetHint> {
    let mut record = |source: HintSource, outcome: HintOutcome| {
        if let Some(steps) = steps.as_deref_mut() {
            steps.push(HintStep { source, outcome });
        }
    };
    if let Some(text) = structured {
        match text.trim().parse::<Timestamp>() {
            Ok(at) => match validate(at, now) {
                Ok(hint) => {
                    record(HintSource::Structured, accepted(&hint));
                    return Some(hint);
                }
                Err(reason) => record(HintSource::Structured, rejected(at, reason)),
            },
            Err(_) => record(
                HintSource::Structured,
                HintOutcome::Unreadable(format!(
                    "`{}` is not an RFC 3339 instant",
                    crate::sanitize::diagnostic(text)
                )),
            ),
        }
    }
    // Structured before text, whatever the declared order.
    let ordered = extractors
        .iter()
        .filter(|extractor| extractor.is_structured())
        .chain(
            extractors
                .iter()
                .filter(|extractor| !extractor.is_structured()),
        );
    for extractor in ordered {
        let (source, extracted) = if extractor.is_structured() {
            (
                HintSource::Field(*extractor),
                extract_structured(*extractor, fields, now),
            )
        } else {
            (HintSource::Text(*extractor), extract(*extractor, raw, now))
        };
        match extracted {
            Extracted::Absent => record(source, HintOutcome::Absent),
            Extracted::Unreadable(reason) => record(source, HintOutcome::Unreadable(reason)),
            Extracted::At(at) => match validate(at, now) {
                Ok(hint) => {
                    record(source, accepted(&hint));
                    return Some(hint);
                }
                Err(reason) => record(source, rejected(at, reason)),
            },
        }
    }
    None
}

fn accepted(hint: &ResetHint) -> HintOutcome {
    HintOutcome::Accepted { at: hint.rfc3339() }
}

fn rejected(at: Timestamp, reason: &str) -> HintOutcome {
    HintOutcome::Rejected {
        at: at.to_string(),
        reason: reason.to_owned(),
    }
}

fn validate(at: Timestamp, now: Timestamp) -> Result<ResetHint, &'static str> {
    if at <= now {
        return Err("it is not after now");
    }
    let horizon = i128::from(MAX_HORIZON_SECONDS) * 1_000_000_000;
    if at.as_nanosecond() - now.as_nanosecond() > horizon {
        return Err("it is more than eight years ahead");
    }
    Ok(ResetHint { at, now })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn read(extractor: TimingExtractor, text: &str, now: &str) -> Option<String> {
        match extract(extractor, text, at(now)) {
            Extracted::At(instant) => Some(instant.to_string()),
            _ => None,
        }
    }

    #[test]
    fn the_patterns_compile() {
        LazyLock::force(&TRY_AGAIN_AT);
        LazyLock::force(&RESETS_CLOCK);
        LazyLock::force(&RESETS_IN);
        LazyLock::force(&TRY_AGAIN_IN);
    }

    #[test]
    fn try_again_in_reads_every_shape_the_catalogue_meets() {
        let now = "2026-10-01T08:00:00Z";
        let read = |text: &str| read(TimingExtractor::TryAgainIn, text, now);
        let cases = [
            ("Please try again in 2.746s.", "2026-10-01T08:00:02.746Z"),
            (
                "Please try again in 12m54.72s. Visit https://x",
                "2026-10-01T08:12:54.72Z",
            ),
            (
                "Rate limit reached ... Please try again in 64ms.",
                "2026-10-01T08:00:00.064Z",
            ),
            ("Please try again in 6m0s.", "2026-10-01T08:06:00Z"),
            ("Please retry in 37.6s.", "2026-10-01T08:00:37.6Z"),
            (
                "Please retry in 37.628253658s.",
                "2026-10-01T08:00:37.628253658Z",
            ),
            (
                "Too many requests, retry after 20 seconds",
                "2026-10-01T08:00:20Z",
            ),
            (
                "You can try again in 1 hour 23 minutes.",
                "2026-10-01T09:23:00Z",
            ),
            ("try again in 2 hours and 5 minutes", "2026-10-01T10:05:00Z"),
            ("Try again in 3 hours, 10 minutes.", "2026-10-01T11:10:00Z"),
            ("TRY AGAIN IN 1h2m3.5s", "2026-10-01T09:02:03.5Z"),
            ("try again in 1 day", "2026-10-02T08:00:00Z"),
            (
                "Sorry, your request was rate-limited. Please wait 17 seconds before trying again.",
                "2026-10-01T08:00:17Z",
            ),
            (
                "Rate limit of 40000 per 60s exceeded for UserByModelByMinuteTokens. Please wait 60 seconds before retrying.",
                "2026-10-01T08:01:00Z",
            ),
            (
                "Please wait 4 hours 26 minutes before trying again.",
                "2026-10-01T12:26:00Z",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(read(text).as_deref(), Some(expected), "{text}");
        }
    }

    #[test]
    fn a_wait_needs_before_trying_again_and_a_reset_needs_its_zone() {
        let now = "2026-10-01T08:00:00Z";
        // "wait" alone is not a retry delay: the sentence must say it comes before a retry.
        for text in [
            "Please wait 5 seconds.",
            "We wait 10 seconds before reading the log.",
        ] {
            assert_eq!(read(TimingExtractor::TryAgainIn, text, now), None, "{text}");
        }
        let clock = |text: &str| read(TimingExtractor::ResetsClock, text, now);
        assert_eq!(
            clock("Claude usage limit reached. Your limit will reset at 7am (Asia/Singapore).")
                .as_deref(),
            // It is 16:00 in Singapore (UTC+8): the next 07:00 there is 23:00 UTC on the 1st.
            Some("2026-10-01T23:00:00Z"),
        );
        // Terminals wrap the notice before the zone.
        assert_eq!(
            clock(
                "Claude usage limit reached. Your limit will reset at 10am \n     (America/Lima)."
            )
            .as_deref(),
            Some("2026-10-01T15:00:00Z"),
        );
        // An escaped line break (`\n` as two characters) is text, not white space.
        assert_eq!(
            clock(r"Your limit will reset at 10am \n (America/Lima)."),
            None
        );
        // A wall-clock time without a zone names no instant.
        assert_eq!(clock("Limits will reset at 9:30 AM."), None);
    }

    #[test]
    fn try_again_in_rejects_zero_negative_far_and_absurd_delays() {
        let now = at("2026-10-01T08:00:00Z");
        let extract_in = |text: &str| extract(TimingExtractor::TryAgainIn, text, now);
        // Zero names no future instant; no sign is read, so a negative delay is not one.
        assert!(matches!(
            extract_in("try again in 0s"),
            Extracted::Unreadable(_)
        ));
        assert!(matches!(
            extract_in("try again in 0 minutes 0 seconds"),
            Extracted::Unreadable(_)
        ));
        assert_eq!(extract_in("try again in -5s"), Extracted::Absent);
        assert_eq!(extract_in("try again in a few minutes"), Extracted::Absent);
        assert_eq!(extract_in("Retrying in 5 seconds"), Extracted::Absent);
        // Beyond the horizon: read, then rejected by validation.
        let mut steps = Vec::new();
        let far = resolve(
            None,
            &[TimingExtractor::TryAgainIn],
            "try again in 4000 days",
            Fields::default(),
            now,
            Some(&mut steps),
        );
        assert_eq!(far, None);
        assert!(
            matches!(&steps[0].outcome, HintOutcome::Rejected { reason, .. } if reason.contains("eight years")),
            "{steps:?}"
        );
        // Absurd numbers neither overflow nor panic.
        for text in [
            "try again in 99999999999999999999999999999999h",
            "try again in 1e309s",
            "try again in 999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999ms",
        ] {
            assert!(!matches!(extract_in(text), Extracted::At(_)), "{text}");
        }
        // Validated like the others: the first readable candidate that names an instant wins.
        let hint = resolve(
            None,
            &[TimingExtractor::TryAgainIn],
            "retry in 0s; try again in 5s",
            Fields::default(),
            now,
            None,
        );
        assert_eq!(
            hint.map(|h| h.rfc3339()).as_deref(),
            Some("2026-10-01T08:00:05Z")
        );
    }

    #[test]
    fn ordinals_fit_their_day() {
        let cases = [
            (1, "st"),
            (2, "nd"),
            (3, "rd"),
            (4, "th"),
            (11, "th"),
            (12, "th"),
        ];
        for (day, suffix) in cases {
            assert_eq!(ordinal_suffix(day), suffix, "{day}");
        }
        for (day, suffix) in [(13, "th"), (21, "st"), (22, "nd"), (23, "rd"), (31, "st")] {
            assert_eq!(ordinal_suffix(day), suffix, "{day}");
        }
    }

    #[test]
    fn months_are_full_names_or_three_letters() {
        assert_eq!(month("Sep"), Some(9));
        assert_eq!(month("SEPTEMBER"), Some(9));
        assert_eq!(month("Sept"), None);
        assert_eq!(month("Ja"), None);
    }

    #[test]
    fn resets_in_adds_the_delay_to_now() {
        let now = "2026-10-01T08:00:00Z";
        let hint = read(
            TimingExtractor::ResetsIn,
            "Usage limit reached, resets in 2h 30m",
            now,
        );
        assert_eq!(hint.as_deref(), Some("2026-10-01T10:30:00Z"));
        let hint = read(
            TimingExtractor::ResetsIn,
            "Your limit will reset in 1 day 3 hours.",
            now,
        );
        assert_eq!(hint.as_deref(), Some("2026-10-02T11:00:00Z"));
        assert_eq!(read(TimingExtractor::ResetsIn, "resets in 0m", now), None);
        assert_eq!(
            read(TimingExtractor::ResetsIn, "resets in a while", now),
            None
        );
        let huge = "resets in 99999999999999999999 days";
        assert_eq!(read(TimingExtractor::ResetsIn, huge, now), None);
    }

    #[test]
    fn the_structured_hint_beats_text_and_both_are_validated() {
        let now = at("2026-10-01T08:00:00Z");
        let text = "try again at Oct 2nd, 2026 1:00 PM UTC";
        let extractors = [TimingExtractor::TryAgainAt];
        let mut steps = Vec::new();
        let hint = resolve(
            Some("2026-10-01T09:00:00Z"),
            &extractors,
            text,
            Fields::default(),
            now,
            Some(&mut steps),
        );
        assert_eq!(
            hint.map(|h| h.rfc3339()).as_deref(),
            Some("2026-10-01T09:00:00Z")
        );
        assert_eq!(hint.map(|h| h.retry_after_seconds()), Some(3600));
        assert_eq!(steps.len(), 1);
        // A stale structured hint gives way to the text.
        let mut steps = Vec::new();
        let hint = resolve(
            Some("2026-10-01T07:00:00Z"),
            &extractors,
            text,
            Fields::default(),
            now,
            Some(&mut steps),
        );
        assert_eq!(
            hint.map(|h| h.rfc3339()).as_deref(),
            Some("2026-10-02T13:00:00Z")
        );
        assert!(matches!(steps[0].outcome, HintOutcome::Rejected { .. }));
        // Too far ahead, and unreadable.
        assert_eq!(
            resolve(
                Some("2040-01-01T00:00:00Z"),
                &[],
                "",
                Fields::default(),
                now,
                None
            ),
            None
        );
        assert_eq!(
            resolve(Some("tomorrow"), &[], "", Fields::default(), now, None),
            None
        );
    }

    fn structured(
        extractor: TimingExtractor,
        headers: &[(&str, &str)],
        body: Option<&str>,
        now: &str,
    ) -> Extracted {
        let mut kept = Headers::new();
        for (name, value) in headers {
            kept.insert(name, value);
        }
        let body = body.map(Body::from_text);
        let fields = Fields {
            headers: Some(&kept),
            body: body.as_ref(),
            body_reset_at: &[],
        };
        extract_structured(extractor, fields, at(now))
    }

    fn instant(extracted: Extracted) -> Option<String> {
        match extracted {
            Extracted::At(at) => Some(at.to_string()),
            _ => None,
        }
    }

    #[test]
    fn retry_after_reads_delta_seconds_and_http_dates() {
        let now = "2026-10-01T08:00:00Z";
        let read = |value: &str| {
            instant(structured(
                TimingExtractor::RetryAfter,
                &[("Retry-After", value)],
                None,
                now,
            ))
        };
        assert_eq!(read("30").as_deref(), Some("2026-10-01T08:00:30Z"));
        assert_eq!(read("1.5").as_deref(), Some("2026-10-01T08:00:01.5Z"));
        assert_eq!(
            read("Thu, 01 Oct 2026 09:00:00 GMT").as_deref(),
            Some("2026-10-01T09:00:00Z")
        );
        // The weekday must fit the date; negative and non-numeric delays are refused.
        assert_eq!(read("Fri, 01 Oct 2026 09:00:00 GMT"), None);
        assert_eq!(read("-5"), None);
        assert_eq!(read("soon"), None);
        assert!(matches!(
            structured(
                TimingExtractor::RetryAfter,
                &[("retry-after", "soon")],
                None,
                now
            ),
            Extracted::Unreadable(_)
        ));
        assert_eq!(
            structured(TimingExtractor::RetryAfter, &[], None, now),
            Extracted::Absent
        );
    }

    #[test]
    fn retry_after_ms_reads_milliseconds() {
        let now = "2026-10-01T08:00:00Z";
        let hint = structured(
            TimingExtractor::RetryAfterMs,
            &[("retry-after-ms", "1500")],
            None,
            now,
        );
        assert_eq!(instant(hint).as_deref(), Some("2026-10-01T08:00:01.5Z"));
        let hint = structured(
            TimingExtractor::RetryAfterMs,
            &[("x-ms-retry-after-ms", "20")],
            None,
            now,
        );
        assert_eq!(instant(hint).as_deref(), Some("2026-10-01T08:00:00.02Z"));
    }

    #[test]
    fn ratelimit_reset_reads_go_durations_and_instants_and_takes_the_latest() {
        let now = "2026-10-01T08:00:00Z";
        let read = |headers: &[(&str, &str)]| {
            instant(structured(
                TimingExtractor::RatelimitReset,
                headers,
                None,
                now,
            ))
        };
        assert_eq!(
            read(&[("x-ratelimit-reset-tokens", "6m0s")]).as_deref(),
            Some("2026-10-01T08:06:00Z")
        );
        assert_eq!(
            read(&[("x-ratelimit-reset-requests", "1h2m3.5s")]).as_deref(),
            Some("2026-10-01T09:02:03.5Z")
        );
        assert_eq!(
            read(&[
                ("x-ratelimit-reset-requests", "20ms"),
                ("x-ratelimit-reset-tokens", "1.5s")
            ])
            .as_deref(),
            Some("2026-10-01T08:00:01.5Z")
        );
        assert_eq!(
            read(&[("anthropic-ratelimit-tokens-reset", "2026-10-01T08:01:00Z")]).as_deref(),
            Some("2026-10-01T08:01:00Z")
        );
        assert_eq!(
            read(&[("anthropic-ratelimit-unified-reset", "1790000000")]).as_deref(),
            Some("2026-09-21T14:13:20Z")
        );
        assert_eq!(read(&[("x-ratelimit-reset-tokens", "6 minutes")]), None);
        assert_eq!(read(&[("x-ratelimit-reset-tokens", "6x")]), None);
    }

    #[test]
    fn body_reset_reads_retry_info_and_reset_fields() {
        let now = "2026-10-01T08:00:00Z";
        let read =
            |body: &str| instant(structured(TimingExtractor::BodyReset, &[], Some(body), now));
        let google = r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34.074824224s"}]}}"#;
        assert_eq!(
            read(google).as_deref(),
            Some("2026-10-01T08:00:34.074824224Z")
        );
        let codex = r#"{"error":{"type":"usage_limit_reached","resets_at":1790000000}}"#;
        assert_eq!(read(codex).as_deref(), Some("2026-09-21T14:13:20Z"));
        let codex = r#"{"error":{"type":"usage_limit_reached","resets_in_seconds":90}}"#;
        assert_eq!(read(codex).as_deref(), Some("2026-10-01T08:01:30Z"));
        let router = r#"{"error":{"code":429,"metadata":{"retry_after_seconds":5}}}"#;
        assert_eq!(read(router).as_deref(), Some("2026-10-01T08:00:05Z"));
        let rfc = r#"{"error":{"resets_at":"2026-10-02T00:00:00Z"}}"#;
        assert_eq!(read(rfc).as_deref(), Some("2026-10-02T00:00:00Z"));
        assert_eq!(read(r#"{"error":{"resets_at":"later"}}"#), None);
        assert_eq!(read("not json"), None);
    }

    #[test]
    fn body_reset_reads_the_pointer_the_rule_names_first() {
        let now = at("2026-09-01T00:00:00Z");
        let body = Body::from_text(
            r#"{"error":{"resets_at":1790000000,"limit":{"next":"2026-10-01T09:00:00Z","in":"90s","epoch":"1790000000","stale":"2026-09-01T00:00:00Z","bad":"soon"}}}"#,
        );
        let read = |pointer: &str| {
            let pointers = [pointer.to_owned()];
            let fields = Fields {
                headers: None,
                body: Some(&body),
                body_reset_at: &pointers,
            };
            let mut steps = Vec::new();
            let hint = resolve(
                None,
                &[TimingExtractor::BodyReset],
                "",
                fields,
                now,
                Some(&mut steps),
            );
            (hint.map(|h| h.rfc3339()), steps)
        };
        assert_eq!(
            read("/error/limit/next").0.as_deref(),
            Some("2026-10-01T09:00:00Z")
        );
        assert_eq!(
            read("/error/limit/in").0.as_deref(),
            Some("2026-09-01T00:01:30Z")
        );
        assert_eq!(
            read("/error/limit/epoch").0.as_deref(),
            Some("2026-09-21T14:13:20Z")
        );
        // A stale instant at the named pointer is rejected by validation, with why.
        let (hint, steps) = read("/error/limit/stale");
        assert_eq!(hint, None);
        assert!(
            matches!(&steps[0].outcome, HintOutcome::Rejected { reason, .. } if reason == "it is not after now"),
            "{steps:?}"
        );
        // An unreadable value at the named pointer gives way to the usual places.
        let (hint, _) = read("/error/limit/bad");
        assert_eq!(hint.as_deref(), Some("2026-09-21T14:13:20Z"));
        // Nothing at the named pointer: the usual places.
        assert_eq!(
            read("/error/nothing").0.as_deref(),
            Some("2026-09-21T14:13:20Z")
        );
    }

    #[test]
    fn structured_extractors_go_before_text_ones_and_are_validated() {
        let now = at("2026-10-01T08:00:00Z");
        let mut headers = Headers::new();
        headers.insert("retry-after", "30");
        let fields = Fields {
            headers: Some(&headers),
            body: None,
            body_reset_at: &[],
        };
        let text = "try again at Oct 2nd, 2026 1:00 PM UTC";
        let extractors = [TimingExtractor::TryAgainAt, TimingExtractor::RetryAfter];
        let mut steps = Vec::new();
        let hint = resolve(None, &extractors, text, fields, now, Some(&mut steps));
        assert_eq!(
            hint.map(|h| h.rfc3339()).as_deref(),
            Some("2026-10-01T08:00:30Z")
        );
        assert_eq!(
            steps[0].source,
            HintSource::Field(TimingExtractor::RetryAfter)
        );
        assert_eq!(
            steps[0].source.to_string(),
            "header extractor `retry_after`"
        );
        // A zero delay is not after now: rejected, and the text is consulted.
        let mut headers = Headers::new();
        headers.insert("retry-after", "0");
        let fields = Fields {
            headers: Some(&headers),
            body: None,
            body_reset_at: &[],
        };
        let mut steps = Vec::new();
        let hint = resolve(None, &extractors, text, fields, now, Some(&mut steps));
        assert_eq!(
            hint.map(|h| h.rfc3339()).as_deref(),
            Some("2026-10-02T13:00:00Z")
        );
        assert!(matches!(steps[0].outcome, HintOutcome::Rejected { .. }));
        // Beyond the horizon.
        let mut headers = Headers::new();
        headers.insert("retry-after", "999999999");
        let fields = Fields {
            headers: Some(&headers),
            body: None,
            body_reset_at: &[],
        };
        assert_eq!(
            resolve(None, &[TimingExtractor::RetryAfter], "", fields, now, None),
            None
        );
    }

    #[test]
    fn retry_after_rounds_up() {
        let now = at("2026-10-01T08:00:00Z");
        let hint = validate(at("2026-10-01T08:00:00.5Z"), now).unwrap();
        assert_eq!(hint.retry_after_seconds(), 1);
    }

    #[test]
    fn a_gap_or_fold_tomorrow_gives_no_hint() {
        // 2026-03-29 03:30 does not exist in Helsinki; asked the evening before, it is tomorrow.
        let hint = read(
            TimingExtractor::ResetsClock,
            "resets 3:30am (Europe/Helsinki)",
            "2026-03-28T20:00:00Z",
        );
        assert_eq!(hint, None);
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        const PIECES: &[&str] = &[
            "try again at ",
            "resets ",
            "reset in ",
            "resets in ",
            "Sep ",
            "February ",
            "Feb ",
            "29",
            "30",
            "31st",
            "27th",
            "2nd",
            "3rd",
            ", ",
            "2026 ",
            "1969 ",
            "9999 ",
            "12:00 ",
            "3:09",
            "24:09 ",
            "0",
            "am ",
            "PM ",
            "UTC",
            "Z",
            "+14:00",
            "-04:30",
            "+15:00",
            " ",
            ".",
            "(Europe/Helsinki)",
            "(UTC)",
            "(../Etc/UTC)",
            "(EET)",
            "2h ",
            "30m",
            "99999999999 days",
            "\n",
            "·",
        ];

        fn text() -> impl Strategy<Value = String> {
            prop::collection::vec(prop::sample::select(PIECES), 0..14)
                .prop_map(|pieces| pieces.concat())
        }

        fn now() -> impl Strategy<Value = Timestamp> {
            // 1990..2090
            (631_152_000i64..3_786_912_000).prop_map(|s| Timestamp::from_second(s).unwrap())
        }

        proptest! {
            /// Whatever the text, every hint returned lies after now and within the horizon.
            #[test]
            fn every_returned_hint_is_valid(text in text(), now in now()) {
                let extractors = [TimingExtractor::TryAgainAt, TimingExtractor::ResetsClock, TimingExtractor::ResetsIn];
                if let Some(hint) = resolve(None, &extractors, &text, Fields::default(), now, None) {
                    prop_assert!(hint.at > now);
                    prop_assert!(hint.at.as_second() - now.as_second() <= MAX_HORIZON_SECONDS);
                    prop_assert!(hint.retry_after_seconds() > 0);
                }
            }

            /// Whatever the headers and body say, every hint returned lies after now and within
            /// the horizon, and structured extractors never panic.
            #[test]
            fn every_structured_hint_is_valid(
                value in "[0-9.hmsunµ:TZ +-]{0,24}|Thu, 01 Oct 20[0-9]{2} 0[0-9]:00:00 GMT",
                now in now(),
            ) {
                let mut headers = Headers::new();
                for name in ["retry-after", "retry-after-ms", "x-ratelimit-reset-tokens", "anthropic-ratelimit-unified-reset"] {
                    headers.insert(name, &value);
                }
                let body = Body::from_text(&format!(
                    r#"{{"error":{{"resets_at":{0:?},"details":[{{"retryDelay":{0:?}}}]}}}}"#,
                    value
                ));
                let fields = Fields { headers: Some(&headers), body: Some(&body), body_reset_at: &[] };
                let extractors = [
                    TimingExtractor::RetryAfter,
                    TimingExtractor::RetryAfterMs,
                    TimingExtractor::RatelimitReset,
                    TimingExtractor::BodyReset,
                ];
                for extractor in extractors {
                    if let Some(hint) = resolve(None, &[extractor], "", fields, now, None) {
                        prop_assert!(hint.at > now);
                        prop_assert!(hint.at.as_second() - now.as_second() <= MAX_HORIZON_SECONDS);
                    }
                }
            }

            /// A time written out as a notice would write it reads back as the same instant.
            #[test]
            fn a_written_time_reads_back(
                now in now(),
                ahead in 60i64..(300 * 86_400),
                offset_minutes in -(14i32 * 60)..=(14 * 60),
                twelve_hour in any::<bool>(),
                full_month in any::<bool>(),
                with_year in any::<bool>(),
            ) {
                let offset = Offset::from_seconds(offset_minutes * 60).unwrap();
                let at = Timestamp::from_second(now.as_second() + ahead).unwrap();
                let wall = offset.to_datetime(at);
                let name = MONTHS[usize::try_from(wall.month() - 1).unwrap()];
                let month = if full_month { name.to_owned() } else { name[..3].to_owned() };
                let day = wall.day();
                let year = if with_year { format!(", {}", wall.year()) } else { String::new() };
                let clock = if twelve_hour {
                    let hour = match wall.hour() % 12 { 0 => 12, h => h };
                    let meridiem = if wall.hour() < 12 { "AM" } else { "PM" };
                    format!("{hour}:{:02}:{:02} {meridiem}", wall.minute(), wall.second())
                } else {
                    format!("{}:{:02}:{:02}", wall.hour(), wall.minute(), wall.second())
                };
                let sign = if offset_minutes < 0 { '-' } else { '+' };
                let zone = format!("{sign}{:02}:{:02}", offset_minutes.abs() / 60, offset_minutes.abs() % 60);
                let text = format!("Limit reached; try again at {month} {day}{}{year} {clock} {zone}.", ordinal_suffix(day));
                prop_assert_eq!(extract(TimingExtractor::TryAgainAt, &text, now), Extracted::At(at), "{}", text);
            }
        }
    }
}
