//! The structured extractors: reset times read from the response headers (`retry_after`,
//! `retry_after_ms`, `ratelimit_reset`) and the error body (`body_reset`), with the value
//! readers they share (delta-seconds, HTTP-dates, Go and protobuf durations, epoch seconds).

use super::*;

/// The rate-limit reset headers `ratelimit_reset` reads: Go durations (OpenAI, Groq) or
/// RFC 3339 instants (Anthropic); `anthropic-ratelimit-unified-reset` is epoch seconds.
pub(super) const RATELIMIT_RESET_HEADERS: &[&str] = &[
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
    "anthropic-ratelimit-unified-reset",
];

/// Where `body_reset` looks, in order, and how each value reads.
pub(super) const BODY_RESETS: &[(&str, BodyValue)] = &[
    // google.rpc.RetryInfo, in `error.details[]` of Gemini and Vertex bodies.
    ("/error/details/*/retryDelay", BodyValue::Duration),
    // Codex `usage_limit_reached`.
    ("/error/resets_at", BodyValue::Instant),
    ("/error/resets_in_seconds", BodyValue::Seconds),
    // OpenRouter.
    ("/error/metadata/retry_after_seconds", BodyValue::Seconds),
];

#[derive(Debug, Clone, Copy)]
pub(super) enum BodyValue {
    /// A protobuf JSON duration (`34.074824224s`) or a Go duration (`900ms`).
    Duration,
    /// RFC 3339, or epoch seconds.
    Instant,
    /// A delay in seconds.
    Seconds,
}

/// Runs one structured extractor (before validation).
pub(super) fn extract_structured(
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
                // The rule's own pointers first: RFC 3339 or epoch seconds, else a duration.
                for pointer in fields.body_reset_at {
                    for value in body.select(pointer) {
                        let read = read_instant(&value).or_else(|_| {
                            read_duration(&value)
                                .and_then(|delay| after(now, delay))
                                .map_err(|_| {
                                    format!(
                                        "`{}` is neither RFC 3339, epoch seconds nor a duration",
                                        quoted(&value)
                                    )
                                })
                        });
                        candidates.push((pointer.clone(), read));
                    }
                }
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
        TimingExtractor::TryAgainAt
        | TimingExtractor::ResetsClock
        | TimingExtractor::ResetsIn
        | TimingExtractor::TryAgainIn => {
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
pub(super) fn quoted(value: &str) -> String {
    crate::sanitize::diagnostic(value)
}

/// `now` plus a delay in (possibly fractional) seconds, to the nanosecond.
pub(super) fn after(now: Timestamp, seconds: f64) -> Result<Timestamp, String> {
    let delay = jiff::SignedDuration::try_from_secs_f64(seconds)
        .map_err(|_| "the delay is too large".to_owned())?;
    now.checked_add(delay)
        .map_err(|_| "the delay is too large".to_owned())
}

/// A non-negative decimal number (`30`, `1.5`) times `unit` seconds, at most twice the horizon
/// (validation then decides).
pub(super) fn read_seconds(value: &str, unit: f64) -> Result<f64, String> {
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
pub(super) fn read_number(value: &str) -> Result<f64, String> {
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
pub(super) fn read_retry_after(value: &str, now: Timestamp) -> Result<Timestamp, String> {
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
pub(super) fn read_reset(value: &str, now: Timestamp) -> Result<Timestamp, String> {
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
pub(super) fn read_instant(value: &str) -> Result<Timestamp, String> {
    if let Ok(at) = value.trim().parse::<Timestamp>() {
        return Ok(at);
    }
    read_epoch(value)
        .map_err(|_| format!("`{}` is neither RFC 3339 nor epoch seconds", quoted(value)))
}

/// Epoch seconds, possibly fractional.
pub(super) fn read_epoch(value: &str) -> Result<Timestamp, String> {
    let seconds =
        read_number(value).map_err(|_| format!("`{}` is not epoch seconds", quoted(value)))?;
    after(Timestamp::UNIX_EPOCH, seconds).map_err(|_| "out of range".to_owned())
}

/// A Go-style duration, a run of number–unit pairs (`6m0s`, `1h2m3.5s`, `20ms`, `1.5s`; units
/// `h`, `m`, `s`, `ms`, `us`/`µs`, `ns`), or a protobuf JSON duration (`34.074824224s`), in
/// seconds.
pub(super) fn read_duration(value: &str) -> Result<f64, String> {
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
