//! Redaction tiers: what evidence text looks like before any rule reads it.
//!
//! Rules are written against redacted text, so the redaction a bundle was checked with must be
//! the one the runtime applies: bundles carry [`REDACTION_VERSION`] and the loader refuses a
//! bundle stamped with another.
//!
//! - The **credential tier** removes secrets and keeps everything else: for user-authored text
//!   such as a launch prompt, whose ids and hashes must survive. In order: JWTs and JWEs
//!   (`eyJ…` and two or more dot-separated base64url segments, any length), `sk-…` keys, GitHub
//!   tokens (`github_pat_…`, `ghp_…`), `kandev_pat_…`, AWS access key ids (`AKIA…`, `ASIA…`),
//!   `Bearer` credentials, `Authorization:` headers, URL user-info, the values of options named
//!   like secrets (`--api-key`, `--password`, `--token`, `--secret`, also with a prefix), and
//!   assignments of secret-looking keys (any key containing `password`, `passwd`, `secret`,
//!   `token`, `api_key` or `authorization`, or with `pwd` as a whole part, as `key=v`, `key: v`,
//!   and quoted or escaped-quoted JSON keys and values).
//! - The **diagnostic tier** first takes JWTs and long opaque runs with a key inside them
//!   whole, applies the credential tier, then strips URLs to scheme and host, hides
//!   `wrk_`/`ses_`/`run_` ids, e-mail addresses, long opaque runs and local paths (home
//!   directories, Unix and Windows paths): for provider output, classifier excerpts and failure
//!   reasons.
//!
//! The list, with each shape's replacement, is in `docs/evidence.md` (Redaction).
//!
//! Both are idempotent, and sanitize before cutting, so a secret can never be split from its
//! key marker by the cut. Secrets are removed in the text as written, before the URL stripping
//! rewrites it, so a URL can never swallow the marker of a secret glued to it.
//!
//! Cost: one scan for the triggers of every pass (`triggers`: the literals of the shapes, and
//! long opaque runs) decides which passes can change the text; text holding none is returned
//! borrowed after that scan alone. Each pass that runs scans the text once; one that changes
//! it applies its edits in place (the first copies the borrowed input once, with headroom), and
//! the triggers are scanned again around its replacements. So redaction is linear in the text's length, and holds at
//! most one copy of it besides the input, with the edits of one pass as bookkeeping. The
//! passes before the prefilter are kept, unchanged, as the arbiter of the differential tests
//! (`sanitize/reference.rs`).

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use edits::{Edit, moved};
use triggers::{Trigger, Triggers};

#[cfg(test)]
mod differential;
mod edits;
#[cfg(test)]
mod reference;
mod triggers;

/// The version of the redaction rules below; stamped on and checked in every bundle.
pub const REDACTION_VERSION: &str = "faultline-redaction.v2";
/// The bound of a classifier excerpt.
pub const MAX_EXCERPT_BYTES: usize = 4096;
/// The bound of a provider message projection.
pub const MAX_PROVIDER_MESSAGE_BYTES: usize = 2048;

/// Words the diagnostic tier writes that the raw text may not contain (in `[redacted-id]`,
/// `[path-redacted]`, `/Users/<redacted>/`, `[email-redacted]`, `[redacted]`). A prefilter
/// that scans the raw text must not require any part of them; every other word of the
/// sanitized text is in the raw text.
#[cfg_attr(
    not(any(test, feature = "bundle-writer")),
    expect(dead_code, reason = "only the compiler reads it, through `build`")
)]
pub const INTRODUCED_WORDS: &[&str] = &["redacted", "path", "id", "email"];

/// Every text the diagnostic tier writes that is not a copy of the raw text: its markers and
/// the separators it writes before a hidden value (`password=x` becomes `password: ***`). A
/// prefilter literal of words joined by punctuation (`i/o`) that could overlap one of them,
/// agreeing with it, is not required whole; every other such literal of the sanitized text is
/// in the raw text (the tests check both).
#[cfg_attr(
    not(any(test, feature = "bundle-writer")),
    expect(dead_code, reason = "only the compiler reads it, through `build`")
)]
pub const INTRODUCED_TEXTS: &[&str] = &[
    "***",
    ": ***",
    " ***",
    "***@",
    "[redacted-id]",
    "[email-redacted]",
    "/Users/<redacted>/",
    "/home/<redacted>/",
    "[path-redacted]",
    "[redacted]",
];

/// Whether every occurrence of a joined literal (ASCII word characters joined by single ASCII
/// punctuation characters, starting and ending with a word character: `i/o`, `x-api-key`) in
/// a diagnostic-tier text is also in the raw text it was made from, so that a prefilter
/// scanning the raw text may require it.
///
/// The tier keeps text, removes it, or writes [`INTRODUCED_TEXTS`]. Where it removes text
/// without writing any, the two sides it joins are a separator and a blank or another separator
/// (the rest of a URL up to a blank, user-info after `//`), and a joined literal holds no blank
/// and no two punctuation characters in a row. So an occurrence that is not in the raw text
/// overlaps a written text and agrees with it wherever they overlap; a literal that can is
/// refused. (Words alone need less: the written texts' words are bracketed by non-word
/// characters, see [`INTRODUCED_WORDS`].)
#[cfg_attr(
    not(any(test, feature = "bundle-writer")),
    expect(dead_code, reason = "only the compiler reads it, through `build`")
)]
pub fn joined_literal_is_raw(literal: &str) -> bool {
    let literal = literal.to_ascii_lowercase();
    INTRODUCED_TEXTS.iter().all(|written| {
        let written = written.to_ascii_lowercase();
        // They overlap, agreeing, when one holds the other or one's end is the other's start.
        let end_meets_start = |a: &str, b: &str| {
            (1..a.len().min(b.len()))
                .any(|n| a.get(a.len() - n..).is_some_and(|end| b.starts_with(end)))
        };
        !(literal.contains(&written)
            || written.contains(&literal)
            || end_meets_start(&literal, &written)
            || end_meets_start(&written, &literal))
    })
}

/// Keys whose bare integer values are counts, not secrets.
const COUNT_KEYS: &[&str] = &[
    "tokens",
    "max_tokens",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "prompt_tokens",
    "completion_tokens",
];

#[expect(
    clippy::expect_used,
    reason = "the patterns are constants of this module; every one is compiled by its tests"
)]
fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant redaction pattern")
}

/// `word` matched in any ASCII case, without Unicode case folding.
fn ascii_any_case(word: &str) -> String {
    word.chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
            } else {
                regex::escape(&c.to_string())
            }
        })
        .collect()
}

/// A JWT or JWE. JWS compact serialization (RFC 7515, section 3.1; a JWT) is three base64url
/// segments joined by dots, the first an encoded JSON header (`{"` → `eyJ`); a JWE (RFC 7516)
/// has five, some possibly empty. Replaced first: a JWT's signature may contain `sk-`, which
/// would otherwise leave the rest of it.
static JWT: LazyLock<Regex> =
    LazyLock::new(|| regex(r"\beyJ[A-Za-z0-9_=-]+(?:\.[A-Za-z0-9_=-]*){2,}"));

/// Secret shapes replaced whole after JWTs, in order (`$n` in a replacement expands a group),
/// with the trigger each needs.
static CREDENTIAL_REPLACEMENTS: LazyLock<Vec<(Regex, &'static str, Trigger)>> =
    LazyLock::new(|| {
        [
            (r"sk-[A-Za-z0-9_-]{12,}", "sk-***", Trigger::MarkedKey),
            (
                r"github_pat_[A-Za-z0-9_]{50,}",
                "github_pat_***",
                Trigger::MarkedKey,
            ),
            (r"ghp_[A-Za-z0-9]{30,}", "ghp_***", Trigger::MarkedKey),
            (
                r"kandev_pat_[A-Za-z0-9_]+",
                "kandev_pat_***",
                Trigger::MarkedKey,
            ),
            (r"(AKIA|ASIA)[A-Z0-9]{16}", "${1}***", Trigger::AwsKeyId),
            (
                r"(?i)Bearer\s+[A-Za-z0-9._\-+/=]{20,}",
                "Bearer ***",
                Trigger::Bearer,
            ),
            // The key keeps its case, so that `authorization: ***` (an assignment's output) is
            // left as it is: both tiers are idempotent.
            (
                r"(?i)(Authorization):[ \t]*[^\r\n]+",
                "${1}: ***",
                Trigger::Authorization,
            ),
        ]
        .into_iter()
        .map(|(pattern, replacement, trigger)| (regex(pattern), replacement, trigger))
        .collect()
    });

/// The keywords that make a key or an option name secret-looking, anywhere in it (`pwd` only
/// as a whole part of the key: `DB_PWD`, not `upwds8`).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "api-key",
    "apikey",
    "authorization",
];

/// Whether `name` is a key the redaction reads a secret after (`authorization: …`,
/// `db_password: …`; see [`SECRET_WORDS`]): a reading that takes a label off a line must keep
/// such a key, or the secret after it would no longer be redacted.
pub(crate) fn is_secret_key(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|word| lower.contains(word))
        || lower.split(['_', '.', '-']).any(|part| part == "pwd")
}

static KEY: LazyLock<String> = LazyLock::new(|| {
    let words: Vec<String> = SECRET_WORDS.iter().map(|w| ascii_any_case(w)).collect();
    let pwd = ascii_any_case("pwd");
    format!(
        "[A-Za-z0-9_.-]*(?:{})[A-Za-z0-9_.-]*|(?:[A-Za-z0-9_.-]*[_.-])?{pwd}(?:[_.-][A-Za-z0-9_.-]*)?",
        words.join("|")
    )
});

/// A secret-looking key and its `:`/`=`: double-quoted, single-quoted (either possibly escaped
/// with backslashes, as JSON inside a JSON string is), or bare.
static ASSIGNMENT_KEY: LazyLock<Regex> = LazyLock::new(|| {
    let key = &*KEY;
    regex(&format!(
        r#"(?:\\*"(?P<dq>{key})(?P<dqc>\\*")|\\*'(?P<sq>{key})(?P<sqc>\\*')|(?P<bare>{key}))[ \t]*[:=][ \t]*"#
    ))
});

/// An option whose value is a secret, and its `=` or blanks: `--api-key`, `--password`,
/// `--token`, `--secret`, also with a prefix (`--github-token`, `--db-password`).
static SECRET_OPTION: LazyLock<Regex> = LazyLock::new(|| {
    let words: Vec<String> = [
        "api-key", "api_key", "apikey", "password", "passwd", "token", "secret",
    ]
    .iter()
    .map(|w| ascii_any_case(w))
    .collect();
    regex(&format!(
        r"--(?P<name>[A-Za-z0-9_-]*(?:{}))(?:=|[ \t]+)",
        words.join("|")
    ))
});

/// A long run of token characters, and a key prefix inside one: a key that does not cover its
/// run is part of a larger opaque secret.
static TOKEN_RUN: LazyLock<Regex> = LazyLock::new(|| regex(r"[A-Za-z0-9+_-]{32,}"));
static KEY_IN_RUN: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"sk-[A-Za-z0-9_-]{12,}|github_pat_[A-Za-z0-9_]{50,}|ghp_[A-Za-z0-9]{30,}|kandev_pat_[A-Za-z0-9_]+|(?:AKIA|ASIA)[A-Z0-9]{16}",
    )
});

static URL_USERINFO: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)([a-z][a-z0-9+.-]*://)[^\s/?#]+@"));
static URL: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(https?://)(?:[^@\s/]+@)?([^/\s?#]+)[^\s]*"));
static WORKSPACE_ID: LazyLock<Regex> =
    LazyLock::new(|| regex(r"\b(?:wrk|ses|run)_[A-Za-z0-9_-]+\b"));
static EMAIL: LazyLock<Regex> =
    LazyLock::new(|| regex(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"));
static OPAQUE_RUN: LazyLock<Regex> = LazyLock::new(|| regex(r"[A-Za-z0-9+/=_-]{32,}"));
static USERS_HOME: LazyLock<Regex> = LazyLock::new(|| regex(r"/Users/[^/\s]+/"));
static HOME_HOME: LazyLock<Regex> = LazyLock::new(|| regex(r"/home/[^/\s]+/"));
/// A drive letter at a word start (so `https://` never reads as drive `s:`), then the rest of
/// the line up to a quote.
static WINDOWS_PATH: LazyLock<Regex> = LazyLock::new(|| regex(r#"(?i)\b[A-Z]:[\\/][^\r\n"']+"#));
static UNIX_PATH: LazyLock<Regex> = LazyLock::new(|| regex(r#"/(?:[^/\s"']+/)+[^\r\n\s"'<>]+"#));
static PROVIDER_URL: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)https?://[^\s]+"));
static PROVIDER_ID: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)\b(?:wrk|ses|run)_[A-Za-z0-9_-]+\b"));
static WHITESPACE_RUN: LazyLock<Regex> = LazyLock::new(|| regex(r"\s+"));

/// A text being redacted pass by pass, with some of the original's byte offsets (`marks`)
/// carried along to where they land in the result.
struct Redacting<'t, 'm> {
    text: Cow<'t, str>,
    marks: &'m mut [usize],
    edits: Vec<Edit>,
    /// What the tier's passes can need.
    wanted: Triggers,
    /// What the text holds now, of `wanted`.
    triggers: Triggers,
}

impl<'t> Redacting<'t, '_> {
    /// Runs one pass, if the text holds what it `needs`: `find` lists its edits in order,
    /// without overlaps; they are applied, and the triggers scanned again, only when there is
    /// one.
    fn pass(&mut self, needs: impl Into<Triggers>, find: impl FnOnce(&str, &mut Vec<Edit>)) {
        if !self.triggers.intersects(needs.into()) {
            return;
        }
        self.edits.clear();
        find(&self.text, &mut self.edits);
        if self.edits.is_empty() {
            return;
        }
        for mark in self.marks.iter_mut() {
            *mark = moved(*mark, &self.edits);
        }
        self.text = edits::apply(std::mem::take(&mut self.text), &self.edits);
        self.triggers = triggers::scan_after(
            &self.text,
            edits::replaced(&self.edits),
            self.triggers,
            self.wanted,
        );
    }

    /// Replaces every match of `pattern` (`$n` in `replacement` expands a group).
    fn replace(&mut self, needs: impl Into<Triggers>, pattern: &Regex, replacement: &'static str) {
        self.pass(needs, |text, edits| {
            if replacement.contains('$') {
                for captures in pattern.captures_iter(text) {
                    let Some(whole) = captures.get(0) else {
                        continue;
                    };
                    let mut with = String::new();
                    captures.expand(replacement, &mut with);
                    edits.push(Edit {
                        start: whole.start(),
                        end: whole.end(),
                        with: Cow::Owned(with),
                    });
                }
            } else {
                edits.extend(pattern.find_iter(text).map(|found| Edit {
                    start: found.start(),
                    end: found.end(),
                    with: Cow::Borrowed(replacement),
                }));
            }
        });
    }

    fn finish(self) -> Cow<'t, str> {
        self.text
    }
}

/// A tier: its passes, and every trigger they can need.
struct Tier {
    passes: fn(&mut Redacting<'_, '_>),
    wanted: Triggers,
}

const CREDENTIAL_TIER: Tier = Tier {
    passes: credential_passes,
    wanted: triggers::CREDENTIAL,
};

const DIAGNOSTIC_TIER: Tier = Tier {
    passes: diagnostic_passes,
    wanted: Triggers::ALL,
};

fn credential_passes(redacting: &mut Redacting<'_, '_>) {
    redacting.replace(Trigger::Jwt, &JWT, "eyJ***");
    for (pattern, replacement, trigger) in CREDENTIAL_REPLACEMENTS.iter() {
        redacting.replace(*trigger, pattern, replacement);
    }
    // User-info before assignments: a user name that looks like a key (`token:…@`, `pwd:…@`)
    // must not turn the password after it into an assignment value that hides the `@`.
    redacting.replace(Trigger::Scheme, &URL_USERINFO, "${1}***@");
    redacting.pass(Trigger::DoubleDash, secret_options);
    redacting.pass(Trigger::SecretWord, assignments);
}

fn diagnostic_passes(redacting: &mut Redacting<'_, '_>) {
    // JWTs first here too: a JWT segment is a run that may hold a key, and taking the run alone
    // would leave the JWT's other segments.
    redacting.replace(Trigger::Jwt, &JWT, "eyJ***");
    redacting.pass(Trigger::KeyInRun, keys_inside_runs);
    credential_passes(redacting);
    redacting.replace(Trigger::Scheme, &URL, "${1}${2}");
    redacting.replace(Trigger::WorkspaceId, &WORKSPACE_ID, "[redacted-id]");
    redacting.pass(Trigger::At, emails);
    redacting.replace(Trigger::OpaqueRun, &OPAQUE_RUN, "***");
    redacting.replace(Trigger::UsersHome, &USERS_HOME, "/Users/<redacted>/");
    redacting.replace(Trigger::HomeHome, &HOME_HOME, "/home/<redacted>/");
    redacting.pass(Trigger::DriveColon, windows_paths);
    redacting.pass(Trigger::Slash, unix_paths);
    // Removing a run or a path can leave `scheme://…@` with nothing between (`C://"x/y/@`):
    // user-info once more, so that the tier is idempotent.
    redacting.replace(Trigger::Scheme, &URL_USERINFO, "${1}***@");
}

/// `text` through `tier`: borrowed when it holds none of the tier's triggers (after that one
/// scan) or no pass changed it.
fn run<'t>(text: &'t str, marks: &mut [usize], tier: &Tier) -> Cow<'t, str> {
    let triggers = triggers::scan(text, tier.wanted);
    if triggers.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut redacting = Redacting {
        text: Cow::Borrowed(text),
        marks,
        edits: Vec::new(),
        wanted: tier.wanted,
        triggers,
    };
    (tier.passes)(&mut redacting);
    redacting.finish()
}

/// The credential tier, unbounded: secrets removed, everything else kept.
pub fn credentials_unbounded(text: &str) -> String {
    run(text, &mut [], &CREDENTIAL_TIER).into_owned()
}

/// The credential tier, cut to [`MAX_EXCERPT_BYTES`] on a character boundary.
#[cfg(test)]
pub fn credentials(text: &str) -> String {
    cut(credentials_unbounded(text), MAX_EXCERPT_BYTES)
}

/// Whether `text` holds anything the credential tier removes: a value that must never be
/// reported, such as a captured remediation, is refused when it does.
pub fn holds_credential(text: &str) -> bool {
    matches!(run(text, &mut [], &CREDENTIAL_TIER), Cow::Owned(redacted) if redacted != text)
}

/// The diagnostic tier, unbounded.
pub fn diagnostic_unbounded(text: &str) -> String {
    run(text, &mut [], &DIAGNOSTIC_TIER).into_owned()
}

/// The diagnostic tier of `text`, with byte offsets of `text` in `marks` moved to where they
/// land in the result (an offset inside a redacted span lands after its replacement).
pub fn diagnostic_marked(text: &str, marks: &mut [usize]) -> String {
    diagnostic_view(text, marks).into_owned()
}

/// [`diagnostic_marked`], borrowed when the redaction changes nothing.
pub(crate) fn diagnostic_view<'t>(text: &'t str, marks: &mut [usize]) -> Cow<'t, str> {
    run(text, marks, &DIAGNOSTIC_TIER)
}

/// The diagnostic tier, cut to [`MAX_EXCERPT_BYTES`] on a character boundary.
pub fn diagnostic(text: &str) -> String {
    cut(diagnostic_unbounded(text), MAX_EXCERPT_BYTES)
}

/// A provider message projection: the diagnostic tier, URLs and ids removed, whitespace
/// collapsed, trailing punctuation trimmed, cut to [`MAX_PROVIDER_MESSAGE_BYTES`].
pub fn provider_message(text: &str) -> String {
    let out = diagnostic_unbounded(text);
    let out = PROVIDER_URL.replace_all(&out, "");
    let out = PROVIDER_ID.replace_all(&out, "[redacted]");
    let out = WHITESPACE_RUN.replace_all(&out, " ");
    let trimmed = out.trim().trim_end_matches(['.', ':', ';', ',', '-', ' ']);
    cut(trimmed.to_owned(), MAX_PROVIDER_MESSAGE_BYTES)
}

/// Cuts `text` to at most `limit` bytes, on a character boundary.
pub fn cut(mut text: String, limit: usize) -> String {
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// A long opaque run with a key inside it that does not cover it whole (`…Xsk-…`, `AKIA…` with
/// more glued after it) is one secret: it becomes `***` whole, before the credential tier's
/// key pattern could cut it into pieces too short for the opaque-run rule. A run that is
/// exactly a key keeps the credential tier's marker (`sk-***`).
fn keys_inside_runs(text: &str, edits: &mut Vec<Edit>) {
    for run in TOKEN_RUN.find_iter(text) {
        let covered = KEY_IN_RUN
            .find(run.as_str())
            .is_none_or(|key| key.start() == 0 && key.end() == run.len());
        if !covered {
            edits.push(Edit {
                start: run.start(),
                end: run.end(),
                with: Cow::Borrowed("***"),
            });
        }
    }
}

/// E-mail addresses, except npm's `name@1.2.3-tag.rc`, whose "domain" is a version.
fn emails(text: &str, edits: &mut Vec<Edit>) {
    for found in EMAIL.find_iter(text) {
        let domain = found
            .as_str()
            .split_once('@')
            .map_or("", |(_, domain)| domain);
        let mut labels = domain.split('.');
        let numeric = |label: Option<&str>| {
            label.is_some_and(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
        };
        if numeric(labels.next()) && numeric(labels.next()) {
            continue;
        }
        edits.push(Edit {
            start: found.start(),
            end: found.end(),
            with: Cow::Borrowed("[email-redacted]"),
        });
    }
}

fn windows_paths(text: &str, edits: &mut Vec<Edit>) {
    let mut from = 0;
    while let Some(found) = WINDOWS_PATH.find_at(text, from) {
        // `C://` is a URL-ish drive-letter scheme, not a Windows path: look again after it,
        // so a path later on the line is still found.
        if found
            .as_str()
            .get(2..)
            .is_some_and(|rest| rest.starts_with("//"))
        {
            from = found.start() + 4;
            continue;
        }
        edits.push(Edit {
            start: found.start(),
            end: found.end(),
            with: Cow::Borrowed("[path-redacted]"),
        });
        from = found.end();
    }
}

fn unix_paths(text: &str, edits: &mut Vec<Edit>) {
    for found in UNIX_PATH.find_iter(text) {
        let start = found.start();
        let preceded_by_url = start >= 2 && text.get(start - 2..start) == Some(":/");
        let whole = found.as_str();
        let with = if preceded_by_url || whole.contains("[path-redacted]") {
            continue;
        } else if whole.starts_with("/Users/<redacted>/") {
            "/Users/<redacted>/[path-redacted]"
        } else if whole.starts_with("/home/<redacted>/") {
            "/home/<redacted>/[path-redacted]"
        } else {
            "[path-redacted]"
        };
        edits.push(Edit {
            start,
            end: found.end(),
            with: Cow::Borrowed(with),
        });
    }
}

/// `--password VALUE`, `--token=VALUE` and the like become `--password ***`.
fn secret_options(text: &str, edits: &mut Vec<Edit>) {
    let mut from = 0;
    while let Some(captures) = SECRET_OPTION.captures_at(text, from) {
        let (Some(whole), Some(name)) = (captures.get(0), captures.name("name")) else {
            break;
        };
        let value_end = scan_value(text, whole.end());
        if value_end > whole.end() {
            edits.push(Edit {
                start: whole.start(),
                end: value_end,
                with: Cow::Owned(format!("--{} ***", name.as_str())),
            });
        }
        from = value_end.max(whole.end());
        if from >= text.len() {
            break;
        }
    }
}

/// `key: value` and `key=value` assignments of secret-looking keys become `key: ***`.
fn assignments(text: &str, edits: &mut Vec<Edit>) {
    let mut search_from = 0;
    while let Some(captures) = ASSIGNMENT_KEY.captures_at(text, search_from) {
        let Some(whole) = captures.get(0) else { break };
        // The key, and where the text kept before `: ***` ends (after a quoted key's quote).
        let (key, written_end) = match (
            captures.name("dq").zip(captures.name("dqc")),
            captures.name("sq").zip(captures.name("sqc")),
            captures.name("bare"),
        ) {
            (Some((key, quote)), _, _) | (None, Some((key, quote)), _) => (key, quote.end()),
            (None, None, Some(key)) => (key, key.end()),
            (None, None, None) => break,
        };
        let value_start = whole.end();
        let key_lower = key.as_str().to_ascii_lowercase();
        let value_end = if key_lower.contains("authorization") {
            // An authorization value is a scheme and a credential (`Basic dXNl…`), quoted or
            // not: it runs to the end of the line, as the `Authorization:` header form does
            // (which also reads this tier's own `authorization: ***` so, idempotently).
            let rest = text.get(value_start..).unwrap_or("");
            value_start + rest.find(['\r', '\n']).unwrap_or(rest.len())
        } else {
            scan_value(text, value_start)
        };
        let value = text.get(value_start..value_end).unwrap_or("");
        let is_count = COUNT_KEYS.contains(&key_lower.as_str())
            && !value.is_empty()
            && value.bytes().all(|b| b.is_ascii_digit());
        if value.is_empty() || is_count {
            search_from = value_end.max(whole.end()).max(search_from + 1);
            if search_from > text.len() {
                break;
            }
            continue;
        }
        edits.push(Edit {
            start: whole.start(),
            end: value_end,
            with: Cow::Owned(format!(
                "{}: ***",
                text.get(whole.start()..written_end).unwrap_or("")
            )),
        });
        search_from = value_end.max(whole.end());
        if search_from >= text.len() {
            break;
        }
    }
}

/// The first secret key's assignment or secret option at or after `from`: inside a value, the
/// start of another secret (`--api-key {"message":"--token \"two words\""}`, a key glued into a
/// quoted value), whose value the outer one must take along.
fn nested_secret(text: &str, from: usize) -> Option<regex::Match<'_>> {
    let assignment = ASSIGNMENT_KEY.find_at(text, from);
    let option = SECRET_OPTION.find_at(text, from);
    match (assignment, option) {
        (Some(assignment), Some(option)) if option.start() < assignment.start() => Some(option),
        (assignment, option) => assignment.or(option),
    }
}

/// The end of an assignment's value starting at `start`: a quoted string, or a bare run up to
/// whitespace, leaving trailing `}])>` and `,`/`;` outside.
///
/// A quote may itself be escaped (`\"` when the text is JSON inside a JSON string, `\\\"` one
/// level deeper): the value then ends at the first quote escaped the same way, counting the
/// backslashes the inner escaping adds (a quote preceded by `n + k·2(n+1)` backslashes closes a
/// value opened by `n` of them).
///
/// A value can hold another secret key's assignment or secret option whose own value runs
/// further (`token: https://host/"password": "two words"`): the value then runs to the end of
/// that one, so that no key swallowed by the first value leaves its own value behind.
fn scan_value(text: &str, start: usize) -> usize {
    let mut end = value_end(text, start);
    let mut extended = false;
    // A nested key may begin inside the value's quotes (`token: ""passwd": "two words""`, where
    // the empty string's glued tail is the key), so the search starts at the value itself. Each
    // round moves `search_from` forward, so the loop ends.
    let mut search_from = start;
    while let Some(nested) = nested_secret(text, search_from).filter(|found| found.start() < end) {
        let nested_end = value_end(text, nested.end());
        if nested_end > end {
            end = nested_end;
            extended = true;
        }
        search_from = nested.end().max(search_from + 1);
    }
    if extended {
        // What is glued to a nested value's closing quote (the outer value's own closing quote)
        // belongs to the value too: left behind, it would make the next pass read `***"` as a
        // new bare value, and redaction would not be idempotent.
        end = bare_end(text, end);
    }
    end
}

/// Where a value starting at `start` ends, not looking inside it for further assignments.
fn value_end(text: &str, start: usize) -> usize {
    // Not quoted, or an unterminated quote: a bare value.
    written_mark_end(text, start)
        .or_else(|| quoted_end(text, start))
        .unwrap_or_else(|| bare_end(text, start))
}

/// Where a value ends that is this tier's own mark, `***`, where a quoted value's glued tail
/// would end ([`ends_before`]).
///
/// A quoted value is replaced without what follows its closing quote (`{\"token\":\"abc\",
/// \"x\":1}` keeps `,\"x\":1}`), but a second pass would read `***,\"x\":1` as one bare value
/// and take the rest along: read as the mark, the redacted text redacts to itself. A raw `***`
/// glued to more of a value (`***"hunter2"`, `***:hunter2`) is no mark, and is taken whole.
fn written_mark_end(text: &str, start: usize) -> Option<usize> {
    let after = text.get(start..)?.strip_prefix("***")?;
    ends_before(after.as_bytes()).then_some(start + "***".len())
}

/// The most backslashes read before a quote when deciding whether it closes an enclosing string
/// (JSON nested three deep escapes a quote with seven).
const MAX_ESCAPES: usize = 64;

/// Whether a value's glued tail, or this tier's mark, ends where `rest` begins: at the end or a
/// blank; at `}])>` before the end, a blank or another delimiter; at `,` or `;` before a blank, a
/// quote, a backslash, `{` or `[` (the next item of a list or an object); at `:` before a blank;
/// at a quote (after any backslashes escaping it) before the end, a blank or a delimiter (the
/// end of an enclosing string). Anything else continues the value, so that a secret glued to a
/// closing quote (`"a""hunter2"`) or to the mark is taken with it; the mark and a quoted value's
/// tail end at the same places, so the redacted text redacts to itself.
fn ends_before(rest: &[u8]) -> bool {
    let closes = |next: Option<&u8>| {
        next.is_none_or(|byte| {
            byte.is_ascii_whitespace()
                || matches!(
                    byte,
                    b',' | b';' | b':' | b'}' | b']' | b')' | b'>' | b'"' | b'\'' | b'\\'
                )
        })
    };
    let Some((&first, after)) = rest.split_first() else {
        return true;
    };
    match first {
        byte if byte.is_ascii_whitespace() => true,
        b'}' | b']' | b')' | b'>' => closes(after.first()),
        b',' | b';' => after.first().is_none_or(|byte| {
            byte.is_ascii_whitespace() || matches!(byte, b'"' | b'\'' | b'\\' | b'{' | b'[')
        }),
        b':' => after.first().is_none_or(u8::is_ascii_whitespace),
        b'"' | b'\'' | b'\\' => {
            let escapes = rest
                .iter()
                .take(MAX_ESCAPES)
                .take_while(|byte| **byte == b'\\')
                .count();
            match rest.get(escapes) {
                Some(b'"' | b'\'') => rest.get(escapes + 1).is_none_or(|byte| {
                    byte.is_ascii_whitespace()
                        || matches!(byte, b',' | b';' | b':' | b'}' | b']' | b')' | b'>')
                }),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Where a bare value starting at `start` ends: at a blank, leaving trailing `}])>` and `,`/`;`
/// outside.
fn bare_end(text: &str, start: usize) -> usize {
    let rest = text.get(start..).unwrap_or("");
    let blank = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let bare = rest.get(..blank).unwrap_or("");
    let trimmed = bare
        .trim_end_matches([',', ';'])
        .trim_end_matches(['}', ']', ')', '>'])
        .trim_end_matches([',', ';']);
    start + trimmed.len()
}

/// Where a quoted value starting at `start` ends (with what is glued to its closing quote:
/// `"abc"def` is one value, as a shell reads it, up to where [`ends_before`] ends it), if it is
/// one and its quote closes on its line.
fn quoted_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.get(start..).unwrap_or("").as_bytes();
    let opening = bytes.iter().take_while(|b| **b == b'\\').count();
    let &quote = bytes.get(opening).filter(|b| matches!(b, b'"' | b'\''))?;
    let period = 2 * (opening + 1);
    let mut run = 0;
    for (index, &byte) in bytes.iter().enumerate().skip(opening + 1) {
        match byte {
            b'\n' => return None,
            b'\\' => run += 1,
            _ if byte == quote => {
                if run >= opening && (run - opening) % period == 0 {
                    let after = bytes.get(index + 1..).unwrap_or_default();
                    let glued = (0..after.len())
                        .find(|&at| ends_before(after.get(at..).unwrap_or_default()))
                        .unwrap_or(after.len());
                    return Some(start + index + 1 + glued);
                }
                run = 0;
            }
            _ => run = 0,
        }
    }
    None
}

#[cfg(test)]
mod tests;
