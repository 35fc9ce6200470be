//! The text extractors: reset times read from the raw text of the evidence (`try_again_at`,
//! `resets_clock`, `resets_in`, `try_again_in`), their patterns and the calendar arithmetic
//! they need.

use super::*;

/// What an extractor found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Extracted {
    Absent,
    Unreadable(String),
    At(Timestamp),
}

/// Reads one candidate: an instant, or why the text names none.
pub(super) type Reader = fn(&Captures<'_>, Timestamp) -> Result<Timestamp, String>;

/// Runs one extractor over `text` (before validation). Of several candidates the first that
/// names an instant wins; if none does, the first one's reason is reported.
pub(super) fn extract(extractor: TimingExtractor, text: &str, now: Timestamp) -> Extracted {
    let (pattern, read): (&Regex, Reader) = match extractor {
        TimingExtractor::TryAgainAt => (&TRY_AGAIN_AT, read_try_again_at),
        TimingExtractor::ResetsClock => (&RESETS_CLOCK, read_resets_clock),
        TimingExtractor::ResetsIn => (&RESETS_IN, read_resets_in),
        TimingExtractor::TryAgainIn => (&TRY_AGAIN_IN, read_try_again_in),
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

#[expect(
    clippy::expect_used,
    reason = "the patterns are constants of this module; every one is compiled by its tests"
)]
pub(super) fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant timing pattern")
}

pub(super) static TRY_AGAIN_AT: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)try again at\s+([A-Za-z]{3,9})[\s,]+(\d{1,2})(st|nd|rd|th)?(?:[\s,]+(\d{4}))?[\s,]+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(AM|PM)?\s+(UTC|GMT|Z|[+-]\d{2}:?\d{2})(?:\s|[.,;!?]|$)",
    )
});

/// A clock time in a named zone after "resets" (Claude Code's session-limit notice, `resets 3pm
/// (Europe/Paris)`) or "reset at" (its earlier usage-limit notice, `Your limit will reset at 7am
/// (Asia/Singapore).`, which terminals may wrap before the zone).
pub(super) static RESETS_CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\b(?:resets(?:\s+at)?|reset\s+at)\s+(\d{1,2})(?::(\d{2}))?\s*(AM|PM)\s+\(([^()\r\n]+)\)",
    )
});

pub(super) static RESETS_IN: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)\bresets?\s+in\s+(?:(\d+)\s*(?:days?|d)\b)?\s*(?:(\d+)\s*(?:hours?|hrs?|h)\b)?\s*(?:(\d+)\s*(?:minutes?|mins?|min|m)\b)?",
    )
});

/// A delay as providers print it after "try again in" / "retry in" / "retry after", or between
/// "wait" and "before trying again" / "before retrying" (GitHub Copilot's `Please wait 17 seconds
/// before trying again.`, Azure AI Foundry's and GitHub Models' `Please wait 60 seconds before
/// retrying.`): Go-style
/// (`2.746s`, `12m54.72s`, `64ms`, `6m0s`) or in words (`20 seconds`, `1 hour 23 minutes`,
/// `2 hours and 5 minutes`). Units are matched longest first, so `ms` is never read as `m`. The
/// delay is the first group that took part in the match.
pub(super) static TRY_AGAIN_IN: LazyLock<Regex> = LazyLock::new(|| {
    let delays = format!(r"(?:\d+(?:\.\d+)?\s*{DELAY_UNIT}(?:\s*,\s*|\s+and\s+|\s*)?)+");
    regex(&format!(
        r"(?i)\b(?:(?:try\s+again|retry)\s+(?:in|after)\s+({delays})(?:\b|$)|wait\s+({delays})\s*before\s+(?:trying\s+again|retrying)\b)"
    ))
});

/// The units of [`TRY_AGAIN_IN`], longest spelling first.
const DELAY_UNIT: &str = r"(?:days?|hours?|hrs?|hr|h|minutes?|mins?|min|milliseconds?|msecs?|ms|microseconds?|us|µs|nanoseconds?|ns|seconds?|secs?|sec|m|s|d)";

/// The seconds one unit of [`DELAY_UNIT`] stands for.
fn unit_seconds(unit: &str) -> Option<f64> {
    let unit = unit.to_ascii_lowercase();
    let unit = unit.as_str();
    Some(match unit {
        "d" | "day" | "days" => 86_400.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600.0,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
        "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
        "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => 1e-3,
        "us" | "µs" | "microsecond" | "microseconds" => 1e-6,
        "ns" | "nanosecond" | "nanoseconds" => 1e-9,
        _ => return None,
    })
}

/// Reads a delay of [`TRY_AGAIN_IN`] into seconds: each number is bounded (see
/// [`read_seconds`]), so no text overflows; a delay of zero is no delay.
pub(super) fn read_delay(text: &str) -> Result<f64, String> {
    static PART: LazyLock<Regex> =
        LazyLock::new(|| regex(&format!(r"(?i)(\d+(?:\.\d+)?)\s*({DELAY_UNIT})")));
    let mut total = 0.0;
    let mut parts = 0;
    for captures in PART.captures_iter(text) {
        let amount = read_seconds(group(&captures, 1).unwrap_or_default(), 1.0)?;
        let unit = group(&captures, 2).unwrap_or_default();
        let scale = unit_seconds(unit)
            .ok_or_else(|| format!("`{}` is not a unit of time", quoted(unit)))?;
        total += amount * scale;
        parts += 1;
    }
    if parts == 0 {
        return Err(format!("`{}` is not a delay", quoted(text)));
    }
    if total <= 0.0 {
        return Err("the delay is zero".to_owned());
    }
    Ok(total)
}

pub(super) fn read_try_again_in(
    captures: &Captures<'_>,
    now: Timestamp,
) -> Result<Timestamp, String> {
    let delay = read_delay(
        group(captures, 1)
            .or(group(captures, 2))
            .unwrap_or_default(),
    )?;
    after(now, delay)
}

pub(super) fn group<'t>(captures: &Captures<'t>, index: usize) -> Option<&'t str> {
    captures.get(index).map(|m| m.as_str())
}

pub(super) fn number<T: std::str::FromStr>(captures: &Captures<'_>, index: usize) -> Option<T> {
    group(captures, index).and_then(|text| text.parse().ok())
}

pub(super) const MONTHS: [&str; 12] = [
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
pub(super) fn month(name: &str) -> Option<i8> {
    let name = name.to_ascii_lowercase();
    let position = MONTHS
        .iter()
        .position(|full| *full == name || (name.len() == 3 && full.starts_with(name.as_str())))?;
    i8::try_from(position + 1).ok()
}

pub(super) fn ordinal_suffix(day: i8) -> &'static str {
    match (day % 10, day % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// The hour of a 12-hour clock reading, or of a 24-hour one when `meridiem` is absent.
pub(super) fn hour(hour: i8, meridiem: Option<&str>) -> Result<i8, String> {
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
pub(super) fn offset(text: &str) -> Result<Offset, String> {
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

pub(super) fn read_try_again_at(
    captures: &Captures<'_>,
    now: Timestamp,
) -> Result<Timestamp, String> {
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
pub(super) fn zone(name: &str) -> Result<TimeZone, String> {
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

pub(super) fn read_resets_clock(
    captures: &Captures<'_>,
    now: Timestamp,
) -> Result<Timestamp, String> {
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

pub(super) fn read_resets_in(captures: &Captures<'_>, now: Timestamp) -> Result<Timestamp, String> {
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
