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
//! - `resets_clock`: "resets 3pm (Europe/Paris)", Claude's session-limit notice: today or
//!   tomorrow in a named IANA zone. A wall-clock time the zone skips (spring gap) or repeats
//!   (autumn fold) names no single instant, so it gives no hint.
//! - `resets_in`: "resets in 2h 30m", a delay from now.
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

/// What an extractor found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Extracted {
    Absent,
    Unreadable(String),
    At(Timestamp),
}

/// Reads one candidate: an instant, or why the text names none.
type Reader = fn(&Captures<'_>, Timestamp) -> Result<Timestamp, String>;

/// Runs one extractor over `text` (before validation). Of several candidates the first that
/// names an instant wins; if none does, the first one's reason is reported.
pub(crate) fn extract(extractor: TimingExtractor, text: &str, now: Timestamp) -> Extracted {
    let (pattern, read): (&Regex, Reader) = match extractor {
        TimingExtractor::TryAgainAt => (&TRY_AGAIN_AT, read_try_again_at),
        TimingExtractor::ResetsClock => (&RESETS_CLOCK, read_resets_clock),
        TimingExtractor::ResetsIn => (&RESETS_IN, read_resets_in),
        // Structured extractors read no text.
        TimingExtractor::RetryAfter
        | TimingExtractor::RetryAfterMs
        | TimingExtractor::RatelimitReset
        | TimingExtractor::BodyReset => return Extracted::Absent,
    };
    let mut first_reason = None;
    for captures in pattern.captures_iter(text) {
        match read(&captures, now) {
            Ok(at) => return Extracted::At(at),
            Err(reason) => {
                first_reason.get_or_insert(reason);
            }
        }
    }
    match first_reason {
        Some(reason) => Extracted::Unreadable(reason),
        None => Extracted::Absent,
    }
}

/// The rate-limit reset headers `ratelimit_reset` reads: Go durations (OpenAI, Groq) or
/// RFC 3339 instants (Anthropic); `anthropic-ratelimit-unified-reset` is epoch seconds.
const RATELIMIT_RESET_HEADERS: &[&str] = &[
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
    "anthropic-ratelimit-unified-reset",
];

/// Where `body_reset` looks, in order, and how each value reads.
const BODY_RESETS: &[(&str, BodyValue)] = &[
    // google.rpc.RetryInfo, in `error.details[]` of Gemini and Vertex bodies.
    ("/error/details/*/retryDelay", BodyValue::Duration),
    // Codex `usage_limit_reached`.
    ("/error/resets_at", BodyValue::Instant),
    ("/error/resets_in_seconds", BodyValue::Seconds),
    // OpenRouter.
    ("/error/metadata/retry_after_seconds", BodyValue::Seconds),
];

#[derive(Debug, Clone, Copy)]
enum BodyValue {
    /// A protobuf JSON duration (`34.074824224s`) or a Go duration (`900ms`).
    Duration,
    /// RFC 3339, or epoch seconds.
    Instant,
    /// A delay in seconds.
    Seconds,
}

/// Runs one structured extractor (before validation).
pub(crate) fn extract_structured(
    extractor: TimingExtractor,
    fields: Fields<'_>,
    now: Timestamp,
) -> Extracted {
    let header = |name: &str| fields.headers.and_then(|headers| headers.get(name));
    let mut candidates: Vec<(String, Result<Timestamp, String>)> = Vec::new();
    match extractor {
        TimingExtractor::RetryAfter => {
            if let Some(value) = header("retry-after") {
                candidates.push(("retry-after".to_owned(), read_retry_after(value, now)));
            }
        }
        TimingExtractor::RetryAfterMs => {
            for name in ["retry-after-ms", "x-ms-retry-after-ms"] {
                if let Some(value) = header(name) {
                    let read = read_seconds(value, 0.001).and_then(|delay| after(now, delay));
                    candidates.push((name.to_owned(), read));
                }
            }
        }
        TimingExtractor::RatelimitReset => {
            let mut latest: Option<Timestamp> = None;
            let mut first_reason = None;
            for name in RATELIMIT_RESET_HEADERS {
                let Some(value) = header(name) else {
                    continue;
                };
                let read = if name.ends_with("unified-reset") {
                    read_epoch(value)
                } else {
                    read_reset(value, now)
                };
                match read {
                    Ok(at) => latest = Some(latest.map_or(at, |latest| latest.max(at))),
                    Err(reason) => {
                        first_reason.get_or_insert(format!("header `{name}`: {reason}"));
                    }
                }
            }
            // Several limits may be exhausted at once: the latest reset is the one after which
            // every one of them has reset.
            return match (latest, first_reason) {
                (Some(at), _) => Extracted::At(at),
                (None, Some(reason)) => Extracted::Unreadable(reason),
                (None, None) => Extracted::Absent,
            };
        }
        TimingExtractor::BodyReset => {
            if let Some(body) = fields.body {
                for (pointer, shape) in BODY_RESETS {
                    for value in body.select(pointer) {
                        let read = match shape {
                            BodyValue::Duration => {
                                read_duration(&value).and_then(|delay| after(now, delay))
                            }
                            BodyValue::Instant => read_instant(&value),
                            BodyValue::Seconds => {
                                read_seconds(&value, 1.0).and_then(|delay| after(now, delay))
                            }
                        };
                        candidates.push(((*pointer).to_owned(), read));
                    }
                }
            }
        }
        TimingExtractor::TryAgainAt | TimingExtractor::ResetsClock | TimingExtractor::ResetsIn => {
            return Extracted::Absent;
        }
    }
    let mut first_reason = None;
    for (place, read) in candidates {
        match read {
            Ok(at) => return Extracted::At(at),
            Err(reason) => {
                first_reason.get_or_insert(format!("`{place}`: {reason}"));
            }
        }
    }
    match first_reason {
        Some(reason) => Extracted::Unreadable(reason),
        None => Extracted::Absent,
    }
}

/// A value quoted in a reason: header values and body strings hold no credential (ingestion
/// removed them), but they are arbitrary text, so they are quoted as explanations show text.
fn quoted(value: &str) -> String {
    crate::sanitize::diagnostic(value)
}

/// `now` plus a delay in (possibly fractional) seconds, to the nanosecond.
fn after(now: Timestamp, seconds: f64) -> Result<Timestamp, String> {
    let delay = jiff::SignedDuration::try_from_secs_f64(seconds)
        .map_err(|_| "the delay is too large".to_owned())?;
    now.checked_add(delay)
        .map_err(|_| "the delay is too large".to_owned())
}

/// A non-negative decimal number (`30`, `1.5`) times `unit` seconds, at most twice the horizon
/// (validation then decides).
fn read_seconds(value: &str, unit: f64) -> Result<f64, String> {
    let seconds = read_number(value)? * unit;
    #[expect(
        clippy::cast_precision_loss,
        reason = "the horizon is far below 2^52 seconds"
    )]
    let horizon = MAX_HORIZON_SECONDS as f64;
    if !seconds.is_finite() || seconds > 2.0 * horizon {
        return Err("the delay is too large".to_owned());
    }
    Ok(seconds)
}

/// A non-negative decimal number: digits, at most one `.`, no sign, no exponent.
fn read_number(value: &str) -> Result<f64, String> {
    let value = value.trim();
    let digits = !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && value.bytes().filter(|b| *b == b'.').count() <= 1
        && value.bytes().next().is_some_and(|b| b.is_ascii_digit());
    digits
        .then(|| value.parse::<f64>().ok())
        .flatten()
        .filter(|number| number.is_finite())
        .ok_or_else(|| format!("`{}` is not a non-negative number", quoted(value)))
}

/// `retry-after`: delta-seconds, or an HTTP-date (IMF-fixdate, `Sun, 06 Nov 1994 08:49:37
/// GMT`; the weekday must fit the date).
fn read_retry_after(value: &str, now: Timestamp) -> Result<Timestamp, String> {
    if value
        .trim()
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit())
    {
        return read_seconds(value, 1.0).and_then(|delay| after(now, delay));
    }
    static HTTP_DATE: jiff::fmt::rfc2822::DateTimeParser =
        jiff::fmt::rfc2822::DateTimeParser::new();
    HTTP_DATE.parse_timestamp(value.trim()).map_err(|_| {
        format!(
            "`{}` is neither delta-seconds nor an HTTP-date",
            quoted(value)
        )
    })
}

/// A rate-limit reset header: RFC 3339, else a Go duration from now.
fn read_reset(value: &str, now: Timestamp) -> Result<Timestamp, String> {
    if let Ok(at) = value.trim().parse::<Timestamp>() {
        return Ok(at);
    }
    read_duration(value)
        .and_then(|delay| after(now, delay))
        .map_err(|_| {
            format!(
                "`{}` is neither an RFC 3339 instant nor a duration",
                quoted(value)
            )
        })
}

/// RFC 3339, or epoch seconds (an integer or a decimal).
fn read_instant(value: &str) -> Result<Timestamp, String> {
    if let Ok(at) = value.trim().parse::<Timestamp>() {
        return Ok(at);
    }
    read_epoch(value)
        .map_err(|_| format!("`{}` is neither RFC 3339 nor epoch seconds", quoted(value)))
}

/// Epoch seconds, possibly fractional.
fn read_epoch(value: &str) -> Result<Timestamp, String> {
    let seconds =
        read_number(value).map_err(|_| format!("`{}` is not epoch seconds", quoted(value)))?;
    after(Timestamp::UNIX_EPOCH, seconds).map_err(|_| "out of range".to_owned())
}

/// A Go-style duration, a run of number–unit pairs (`6m0s`, `1h2m3.5s`, `20ms`, `1.5s`; units
/// `h`, `m`, `s`, `ms`, `us`/`µs`, `ns`), or a protobuf JSON duration (`34.074824224s`), in
/// seconds.
fn read_duration(value: &str) -> Result<f64, String> {
    let text = value.trim();
    let invalid = || format!("`{}` is not a duration", quoted(text));
    let mut rest = text;
    let mut total = 0.0;
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let (number, tail) = rest.split_at(number_end);
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale = match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(invalid()),
        };
        let amount = read_seconds(number, 1.0).map_err(|_| invalid())?;
        total += amount * scale;
        rest = tail;
    }
    Ok(total)
}

#[expect(
    clippy::expect_used,
    reason = "the patterns are constants of this module; every one is compiled by its tests"
)]
fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant timing pattern")
}

static TRY_AGAIN_AT: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)try again at\s+([A-Za-z]{3,9})[\s,]+(\d{1,2})(st|nd|rd|th)?(?:[\s,]+(\d{4}))?[\s,]+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(AM|PM)?\s+(UTC|GMT|Z|[+-]\d{2}:?\d{2})(?:\s|[.,;!?]|$)",
    )
});

static RESETS_CLOCK: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)\bresets\s+(\d{1,2})(?::(\d{2}))?\s*(AM|PM)\s+\(([^()\r\n]+)\)"));

static RESETS_IN: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\bresets?\s+in\s+(?:(\d+)\s*(?:days?|d)\b)?\s*(?:(\d+)\s*(?:hours?|hrs?|h)\b)?\s*(?:(\d+)\s*(?:minutes?|mins?|min|m)\b)?",
    )
});

fn group<'t>(captures: &Captures<'t>, index: usize) -> Option<&'t str> {
    captures.get(index).map(|m| m.as_str())
}

fn number<T: std::str::FromStr>(captures: &Captures<'_>, index: usize) -> Option<T> {
    group(captures, index).and_then(|text| text.parse().ok())
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// A month by its full English name or its first three letters, in any case.
fn month(name: &str) -> Option<i8> {
    let name = name.to_ascii_lowercase();
    let position = MONTHS
        .iter()
        .position(|full| *full == name || (name.len() == 3 && full.starts_with(name.as_str())))?;
    i8::try_from(position + 1).ok()
}

fn ordinal_suffix(day: i8) -> &'static str {
    match (day % 10, day % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// The hour of a 12-hour clock reading, or of a 24-hour one when `meridiem` is absent.
fn hour(hour: i8, meridiem: Option<&str>) -> Result<i8, String> {
    match meridiem.map(str::to_ascii_lowercase).as_deref() {
        None if (0..=23).contains(&hour) => Ok(hour),
        None => Err(format!("hour {hour} is not on a 24-hour clock")),
        Some(_) if !(1..=12).contains(&hour) => {
            Err(format!("hour {hour} is not on a 12-hour clock"))
        }
        Some("am") => Ok(hour % 12),
        Some(_) => Ok(hour % 12 + 12),
    }
}

/// `UTC`, `GMT`, `Z`, or `±HH:MM` / `±HHMM` up to ±14:00.
fn offset(text: &str) -> Result<Offset, String> {
    if ["utc", "gmt", "z"].contains(&text.to_ascii_lowercase().as_str()) {
        return Ok(Offset::UTC);
    }
    let (sign, digits) = match text.split_at_checked(1) {
        Some(("+", digits)) => (1, digits),
        Some(("-", digits)) => (-1, digits),
        _ => return Err(format!("`{text}` is not a zone")),
    };
    let digits = digits.replace(':', "");
    let (hours, minutes) = digits
        .split_at_checked(2)
        .and_then(|(hours, minutes)| {
            Some((hours.parse::<i32>().ok()?, minutes.parse::<i32>().ok()?))
        })
        .ok_or_else(|| format!("`{text}` is not an offset"))?;
    if minutes > 59 || hours * 60 + minutes > 14 * 60 {
        return Err(format!("offset `{text}` is beyond ±14:00"));
    }
    Offset::from_seconds(sign * (hours * 3600 + minutes * 60))
        .map_err(|error| format!("offset `{text}`: {error}"))
}

fn read_try_again_at(captures: &Captures<'_>, now: Timestamp) -> Result<Timestamp, String> {
    let month_name = group(captures, 1).unwrap_or_default();
    let month = month(month_name).ok_or_else(|| format!("`{month_name}` is not a month"))?;
    let day: i8 = number(captures, 2).ok_or("the day is not a number")?;
    if let Some(suffix) = group(captures, 3)
        && !suffix.eq_ignore_ascii_case(ordinal_suffix(day))
    {
        return Err(format!("`{day}{suffix}` is not an ordinal"));
    }
    let hour = hour(
        number(captures, 5).ok_or("the hour is not a number")?,
        group(captures, 8),
    )?;
    let minute: i8 = number(captures, 6).ok_or("the minute is not a number")?;
    let second: i8 = match group(captures, 7) {
        Some(_) => number(captures, 7).ok_or("the second is not a number")?,
        None => 0,
    };
    if minute > 59 || second > 59 {
        return Err(format!("{minute:02}:{second:02} is not a time"));
    }
    let offset = offset(group(captures, 9).unwrap_or_default())?;
    let at_year = |year: i16| -> Result<Timestamp, String> {
        let civil = DateTime::new(year, month, day, hour, minute, second, 0)
            .map_err(|_| format!("{month_name} {day}, {year} is not a date"))?;
        offset
            .to_timestamp(civil)
            .map_err(|error| format!("out of range: {error}"))
    };
    match group(captures, 4) {
        Some(year) => {
            let year: i16 = year
                .parse()
                .map_err(|_| format!("`{year}` is not a year"))?;
            if !(1970..=9999).contains(&year) {
                return Err(format!("year {year} is out of range"));
            }
            at_year(year)
        }
        None => {
            let this_year = offset.to_datetime(now).year();
            let mut first_reason = None;
            for year in this_year..=this_year.saturating_add(MAX_ROLL_FORWARD_YEARS) {
                match at_year(year) {
                    Ok(at) if at > now => return Ok(at),
                    Ok(_) => {}
                    Err(reason) => {
                        first_reason.get_or_insert(reason);
                    }
                }
            }
            Err(first_reason.unwrap_or_else(|| {
                format!("{month_name} {day} does not come within {MAX_ROLL_FORWARD_YEARS} years")
            }))
        }
    }
}

/// An IANA zone name as a notice may carry it: `UTC`, or a relative, clean path such as
/// `America/Argentina/Buenos_Aires`. Abbreviations (`EET`) and `Local` name no fixed zone.
fn zone(name: &str) -> Result<TimeZone, String> {
    let clean = name
        .split('/')
        .all(|part| !part.is_empty() && part != "." && part != "..");
    // A name that is not a zone is arbitrary text of the evidence: it is quoted redacted, as
    // explanations show it.
    if name != "UTC" && (!name.contains('/') || !clean || name.contains('\\') || name == "Local") {
        return Err(format!(
            "`{}` is not an IANA zone name",
            crate::sanitize::diagnostic(name)
        ));
    }
    TimeZone::get(name).map_err(|_| {
        format!(
            "`{}` is not a known time zone",
            crate::sanitize::diagnostic(name)
        )
    })
}

fn read_resets_clock(captures: &Captures<'_>, now: Timestamp) -> Result<Timestamp, String> {
    let hour = hour(
        number(captures, 1).ok_or("the hour is not a number")?,
        group(captures, 3),
    )?;
    let minute: i8 = match group(captures, 2) {
        Some(_) => number(captures, 2).ok_or("the minute is not a number")?,
        None => 0,
    };
    if minute > 59 {
        return Err(format!("minute {minute} is not a time"));
    }
    let zone_name = group(captures, 4).unwrap_or_default().trim();
    let zone = zone(zone_name)?;
    let local_now = zone.to_datetime(now);
    let today: Date = local_now.date();
    let tomorrow = today
        .tomorrow()
        .map_err(|error| format!("out of range: {error}"))?;
    for day in [today, tomorrow] {
        let wall = DateTime::new(day.year(), day.month(), day.day(), hour, minute, 0, 0)
            .map_err(|error| format!("out of range: {error}"))?;
        match zone.to_ambiguous_timestamp(wall).offset() {
            AmbiguousOffset::Unambiguous { offset } => {
                let at = offset
                    .to_timestamp(wall)
                    .map_err(|error| format!("out of range: {error}"))?;
                if at > now {
                    return Ok(at);
                }
            }
            // A skipped or repeated wall-clock time names no single instant; only if it has
            // already gone by today is tomorrow's the one meant.
            AmbiguousOffset::Gap { .. } | AmbiguousOffset::Fold { .. }
                if day == today && wall < local_now => {}
            AmbiguousOffset::Gap { .. } => {
                return Err(format!(
                    "{wall} does not exist in {zone_name} (clocks skip it)"
                ));
            }
            AmbiguousOffset::Fold { .. } => {
                return Err(format!(
                    "{wall} happens twice in {zone_name} (clocks repeat it)"
                ));
            }
        }
    }
    Err("no future time".to_owned())
}

fn read_resets_in(captures: &Captures<'_>, now: Timestamp) -> Result<Timestamp, String> {
    let part = |index: usize| -> Result<i64, String> {
        match group(captures, index) {
            None => Ok(0),
            Some(text) => text.parse().map_err(|_| format!("`{text}` is too large")),
        }
    };
    let seconds = part(1)?
        .checked_mul(86_400)
        .zip(part(2)?.checked_mul(3_600))
        .zip(part(3)?.checked_mul(60))
        .and_then(|((days, hours), minutes)| days.checked_add(hours)?.checked_add(minutes))
        .ok_or("the delay is too large")?;
    if seconds == 0 {
        return Err("the delay is empty or zero".to_owned());
    }
    now.checked_add(jiff::SignedDuration::from_secs(seconds))
        .map_err(|_| "the delay is too large".to_owned())
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
    fn structured_extractors_go_before_text_ones_and_are_validated() {
        let now = at("2026-10-01T08:00:00Z");
        let mut headers = Headers::new();
        headers.insert("retry-after", "30");
        let fields = Fields {
            headers: Some(&headers),
            body: None,
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
                let fields = Fields { headers: Some(&headers), body: Some(&body) };
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
