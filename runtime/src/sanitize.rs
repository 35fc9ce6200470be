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
//! rewrites it, so a URL can never swallow the marker of a secret glued to it. Each pass scans
//! the text once and copies it at most once (only when it replaces something), so redaction is
//! linear in the text's length.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

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

/// Secret shapes replaced whole after JWTs, in order (`$n` in a replacement expands a group).
static CREDENTIAL_REPLACEMENTS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (r"sk-[A-Za-z0-9_-]{12,}", "sk-***"),
        (r"github_pat_[A-Za-z0-9_]{50,}", "github_pat_***"),
        (r"ghp_[A-Za-z0-9]{30,}", "ghp_***"),
        (r"kandev_pat_[A-Za-z0-9_]+", "kandev_pat_***"),
        (r"(AKIA|ASIA)[A-Z0-9]{16}", "${1}***"),
        (r"(?i)Bearer\s+[A-Za-z0-9._\-+/=]{20,}", "Bearer ***"),
        // The key keeps its case, so that `authorization: ***` (an assignment's output) is
        // left as it is: both tiers are idempotent.
        (r"(?i)(Authorization):[ \t]*[^\r\n]+", "${1}: ***"),
    ]
    .into_iter()
    .map(|(pattern, replacement)| (regex(pattern), replacement))
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

/// One replacement a pass makes: bytes `start..end` of its input become `with`.
#[derive(Debug)]
struct Edit {
    start: usize,
    end: usize,
    with: Cow<'static, str>,
}

/// A text being redacted pass by pass, with some of the original's byte offsets (`marks`)
/// carried along to where they land in the result.
struct Redacting<'t, 'm> {
    text: Cow<'t, str>,
    marks: &'m mut [usize],
    edits: Vec<Edit>,
}

impl<'t> Redacting<'t, '_> {
    /// Runs one pass: `find` lists its edits in order, without overlaps; the text is rebuilt
    /// (one copy) only when there is one.
    fn pass(&mut self, find: impl FnOnce(&str, &mut Vec<Edit>)) {
        self.edits.clear();
        find(&self.text, &mut self.edits);
        if self.edits.is_empty() {
            return;
        }
        let mut out = String::with_capacity(self.text.len());
        let mut last = 0;
        for edit in &self.edits {
            out.push_str(self.text.get(last..edit.start).unwrap_or(""));
            out.push_str(&edit.with);
            last = edit.end;
        }
        out.push_str(self.text.get(last..).unwrap_or(""));
        for mark in self.marks.iter_mut() {
            *mark = moved(*mark, &self.edits);
        }
        self.text = Cow::Owned(out);
    }

    /// Replaces every match of `pattern` (`$n` in `replacement` expands a group).
    fn replace(&mut self, pattern: &Regex, replacement: &'static str) {
        self.pass(|text, edits| {
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

/// Where byte offset `mark` of a pass's input lands in its output. An offset inside a replaced
/// span lands after its replacement: text read from a mark on never starts inside a redacted
/// value, nor with the marker of a value that began before it.
fn moved(mark: usize, edits: &[Edit]) -> usize {
    let (mut added, mut removed) = (0, 0);
    for edit in edits {
        if edit.end <= mark {
            added += edit.with.len();
            removed += edit.end - edit.start;
        } else if edit.start < mark {
            return edit.start + added - removed + edit.with.len();
        } else {
            break;
        }
    }
    mark + added - removed
}

fn credential_passes(redacting: &mut Redacting<'_, '_>) {
    redacting.replace(&JWT, "eyJ***");
    for (pattern, replacement) in CREDENTIAL_REPLACEMENTS.iter() {
        redacting.replace(pattern, replacement);
    }
    // User-info before assignments: a user name that looks like a key (`token:…@`, `pwd:…@`)
    // must not turn the password after it into an assignment value that hides the `@`.
    redacting.replace(&URL_USERINFO, "${1}***@");
    redacting.pass(secret_options);
    redacting.pass(assignments);
}

fn diagnostic_passes(redacting: &mut Redacting<'_, '_>) {
    // JWTs first here too: a JWT segment is a run that may hold a key, and taking the run alone
    // would leave the JWT's other segments.
    redacting.replace(&JWT, "eyJ***");
    redacting.pass(keys_inside_runs);
    credential_passes(redacting);
    redacting.replace(&URL, "${1}${2}");
    redacting.replace(&WORKSPACE_ID, "[redacted-id]");
    redacting.pass(emails);
    redacting.replace(&OPAQUE_RUN, "***");
    redacting.replace(&USERS_HOME, "/Users/<redacted>/");
    redacting.replace(&HOME_HOME, "/home/<redacted>/");
    redacting.pass(windows_paths);
    redacting.pass(unix_paths);
    // Removing a run or a path can leave `scheme://…@` with nothing between (`C://"x/y/@`):
    // user-info once more, so that the tier is idempotent.
    redacting.replace(&URL_USERINFO, "${1}***@");
}

fn run<'t>(text: &'t str, marks: &mut [usize], passes: fn(&mut Redacting<'_, '_>)) -> Cow<'t, str> {
    let mut redacting = Redacting {
        text: Cow::Borrowed(text),
        marks,
        edits: Vec::new(),
    };
    passes(&mut redacting);
    redacting.finish()
}

/// The credential tier, unbounded: secrets removed, everything else kept.
pub fn credentials_unbounded(text: &str) -> String {
    run(text, &mut [], credential_passes).into_owned()
}

/// The credential tier, cut to [`MAX_EXCERPT_BYTES`] on a character boundary.
#[cfg(test)]
pub fn credentials(text: &str) -> String {
    cut(credentials_unbounded(text), MAX_EXCERPT_BYTES)
}

/// Whether `text` holds anything the credential tier removes: a value that must never be
/// reported, such as a captured remediation, is refused when it does.
pub fn holds_credential(text: &str) -> bool {
    matches!(run(text, &mut [], credential_passes), Cow::Owned(redacted) if redacted != text)
}

/// The diagnostic tier, unbounded.
pub fn diagnostic_unbounded(text: &str) -> String {
    run(text, &mut [], diagnostic_passes).into_owned()
}

/// The diagnostic tier of `text`, with byte offsets of `text` in `marks` moved to where they
/// land in the result (an offset inside a redacted span lands after its replacement).
pub fn diagnostic_marked(text: &str, marks: &mut [usize]) -> String {
    run(text, marks, diagnostic_passes).into_owned()
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

/// The end of an assignment's value starting at `start`: a quoted string, or a bare run up to
/// whitespace, leaving trailing `}])>` and `,`/`;` outside.
///
/// A quote may itself be escaped (`\"` when the text is JSON inside a JSON string, `\\\"` one
/// level deeper): the value then ends at the first quote escaped the same way, counting the
/// backslashes the inner escaping adds (a quote preceded by `n + k·2(n+1)` backslashes closes a
/// value opened by `n` of them).
fn scan_value(text: &str, start: usize) -> usize {
    if let Some(end) = quoted_end(text, start) {
        return end;
    }
    // Not quoted, or an unterminated quote: a bare value.
    let rest = text.get(start..).unwrap_or("");
    let bare_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let bare = rest.get(..bare_end).unwrap_or("");
    let trimmed = bare
        .trim_end_matches([',', ';'])
        .trim_end_matches(['}', ']', ')', '>'])
        .trim_end_matches([',', ';']);
    start + trimmed.len()
}

/// The end of a quoted value starting at `start`, if it is one and its quote closes on its line,
/// with what is glued to the closing quote (`"abc"def` is one value, as a shell reads it), up
/// to a blank or a JSON delimiter.
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
                    let glued = after
                        .iter()
                        .take_while(|b| {
                            !b.is_ascii_whitespace()
                                && !matches!(b, b',' | b';' | b':' | b'}' | b']' | b')' | b'>')
                                && !matches!(b, b'"' | b'\'' | b'\\')
                        })
                        .count();
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_word_the_redaction_writes_is_in_the_raw_text_or_declared_introduced() {
        // The replacement texts of both tiers, and the words of each that come from the raw
        // text the replacement was made for (a secret's marker, a kept key or prefix).
        let replacements = [
            ("eyJ***", &["eyj"][..]),
            ("sk-***", &["sk"]),
            ("github_pat_***", &["github_pat_"]),
            ("ghp_***", &["ghp_"]),
            ("kandev_pat_***", &["kandev_pat_"]),
            ("AKIA***", &["akia"]),
            ("ASIA***", &["asia"]),
            ("Bearer ***", &["bearer"]),
            ("Authorization: ***", &["authorization"]),
            ("--api-key ***", &["api", "key"]),
            ("--db-password ***", &["db", "password"]),
            (": ***", &[]),
            ("***@", &[]),
            ("[redacted-id]", &[]),
            ("[email-redacted]", &[]),
            ("***", &[]),
            ("/Users/<redacted>/", &["users"]),
            ("/home/<redacted>/", &["home"]),
            ("[path-redacted]", &[]),
            ("/Users/<redacted>/[path-redacted]", &["users"]),
            ("[redacted]", &[]),
        ];
        for (replacement, from_raw) in replacements {
            for word in replacement
                .to_ascii_lowercase()
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            {
                if word.is_empty() {
                    continue;
                }
                assert!(
                    from_raw.contains(&word)
                        || from_raw.iter().any(|raw| raw.contains(word))
                        || INTRODUCED_WORDS.contains(&word),
                    "`{word}` of `{replacement}` is neither from the raw text nor declared introduced"
                );
            }
        }
        assert!(diagnostic("ses_1 /workspace/a/b https://x.y/z").contains("[redacted-id]"));
    }

    #[test]
    fn credential_tier_redacts_every_listed_shape() {
        let cases = [
            ("key sk-abcdefghijklmnop done", "key sk-*** done"),
            (
                "github_pat_11ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnop",
                "github_pat_***",
            ),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123", "ghp_***"),
            ("kandev_pat_abc_123", "kandev_pat_***"),
            (
                "curl -H 'bearer abcdefghijklmnopqrstuvwxyz'",
                "curl -H 'Bearer ***'",
            ),
            (
                "Authorization: Basic dXNlcjpwYXNz\nnext",
                "Authorization: ***\nnext",
            ),
            ("agent --api-key=xyz123 run", "agent --api-key *** run"),
            (
                "AWS_SECRET_ACCESS_KEY=abc123 next",
                "AWS_SECRET_ACCESS_KEY: *** next",
            ),
            (
                "{\"api_key\": \"ab\\\"c\", \"x\": 1}",
                "{\"api_key\": ***, \"x\": 1}",
            ),
            ("password: 123456", "password: ***"),
            (
                "max_tokens: 4096 tokenizer: cl100k_base",
                "max_tokens: 4096 tokenizer: ***",
            ),
            ("token=abc}, rest", "token: ***}, rest"),
            (
                "password: \"unterminated value\nnext",
                "password: *** value\nnext",
            ),
            ("https://user:pw@example.com/x", "https://***@example.com/x"),
        ];
        for (input, expected) in cases {
            assert_eq!(credentials_unbounded(input), expected, "input: {input}");
        }
    }

    #[test]
    fn diagnostic_tier_redacts_urls_ids_runs_and_paths() {
        let cases = [
            (
                "see https://status.claude.com/incidents/x?y=1 now",
                "see https://status.claude.com now",
            ),
            (
                "session ses_abc123 in wrk_9",
                "session [redacted-id] in [redacted-id]",
            ),
            (
                "blob ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 end",
                "blob *** end",
            ),
            (
                "open /Users/cfl/.npm/_npx/d8/x failed",
                "open /Users/<redacted>/[path-redacted] failed",
            ),
            (
                "cd /home/dev/project/src/main.rs",
                "cd /home/<redacted>/[path-redacted]",
            ),
            ("file /workspace/repo/a.txt", "file [path-redacted]"),
            (r"C:\Users\me\file.txt", "[path-redacted]"),
            ("keeps https://opencode.ai", "keeps https://opencode.ai"),
        ];
        for (input, expected) in cases {
            assert_eq!(diagnostic(input), expected, "input: {input}");
        }
    }

    // Issue 10, item 17: a Windows path after a URL on the same line, and Windows paths with
    // doubled backslashes (a path inside JSON inside the text).
    #[test]
    fn windows_path_after_a_url_is_redacted() {
        let text = r"failed, see https://example.com then C:\Users\alice\AppData\Local\x.log";
        assert_eq!(
            diagnostic(text),
            "failed, see https://example.com then [path-redacted]"
        );
        // A URL-ish drive scheme is kept, and a path after it on the line is still found.
        assert_eq!(
            diagnostic(r"c://host/x then D:\Users\alice\y"),
            r"c://host/x then [path-redacted]"
        );
    }

    #[test]
    fn doubled_backslash_windows_paths_are_redacted() {
        for text in [
            r#"{"path":"C:\\Users\\alice\\AppData\\x.json"}"#,
            r#"{\"path\":\"C:\\\\Users\\\\alice\\\\AppData\"}"#,
            r"open C:\\Users\\alice\\AppData failed",
            r"C:\\Users\\alice",
        ] {
            let redacted = diagnostic(text);
            assert!(!redacted.contains("alice"), "{text} → {redacted}");
            assert!(redacted.contains("[path-redacted]"), "{text} → {redacted}");
        }
    }

    // Item 18: assignments inside escaped JSON (JSON inside a JSON string, as SDK reprs print
    // request bodies) lose their values, including values with blanks and escaped quotes.
    #[test]
    fn assignments_inside_escaped_json_are_redacted() {
        let cases = [
            (
                r#"body={\"password\": \"hunter2hunter2\", \"api_key\":\"abc123xyz\"}"#,
                r#"body={\"password\": ***, \"api_key\": ***}"#,
            ),
            (
                r#"{\"password\": \"correct horse \\\"battery\\\" staple\", \"x\": 1}"#,
                r#"{\"password\": ***, \"x\": 1}"#,
            ),
            (
                r#"{\\\"token\\\": \\\"tok en\\\"}"#,
                r#"{\\\"token\\\": ***}"#,
            ),
            (r"{\'secret\': \'s3 cr3t\'}", r"{\'secret\': ***}"),
            (r#"password=\"two words\" next"#, "password: *** next"),
        ];
        for (input, expected) in cases {
            assert_eq!(credentials_unbounded(input), expected, "input: {input}");
        }
    }

    // Item 19: the secret glued to a URL keeps its marker, so its value is removed before the
    // URL is cut to scheme and host.
    #[test]
    fn url_redaction_keeps_the_marker_of_a_glued_secret() {
        for (text, secret) in [
            (
                "https://api.example.com/v1;--api-key Zq9xW2vB7nK4",
                "Zq9xW2vB7nK4",
            ),
            (
                r#"https://api.example.com/v1,"password": "Zq9 xW2vB7nK4""#,
                "xW2vB7nK4",
            ),
            (
                "https://api.example.com/v1;Bearer Zq9xW2vB7nK4mP3rT6yU8",
                "Zq9xW2vB7nK4mP3rT6yU8",
            ),
            (
                "https://api.example.com/v1?token=Zq9xW2vB7nK4",
                "Zq9xW2vB7nK4",
            ),
        ] {
            let redacted = diagnostic(text);
            assert!(!redacted.contains(secret), "{text} → {redacted}");
            assert!(
                redacted.starts_with("https://api.example.com"),
                "{redacted}"
            );
        }
    }

    // Item 20: a JSON `Authorization` key with a short `Basic` credential, and `sk-` inside a
    // JWT's signature.
    #[test]
    fn json_authorization_key_with_a_short_credential_is_redacted() {
        let cases = [
            // Like the `Authorization:` header form, the value runs to the end of the line.
            (
                "{\"Authorization\": \"Basic dXNlcjpwYXNz\", \"x\": 1}\nnext",
                "{\"Authorization\": ***\nnext",
            ),
            (
                r#"{'authorization': 'Basic dXNlcjpw'}"#,
                r#"{'authorization': ***"#,
            ),
            (
                "authorization=Basic dXNlcjpw\nnext",
                "authorization: ***\nnext",
            ),
            (
                r#"{\"Authorization\": \"Bearer abc\"}"#,
                r#"{\"Authorization\": ***"#,
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(credentials_unbounded(input), expected, "input: {input}");
        }
    }

    #[test]
    fn sk_inside_a_jwt_leaves_nothing_of_it() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.Qx7_aBcDeFgsk-abcdefghijklmnop";
        for redacted in [credentials(jwt), diagnostic(jwt)] {
            assert_eq!(redacted, "eyJ***");
        }
    }

    // Item 21: shapes the reference does not cover, in the tier of their neighbours.
    #[test]
    fn aws_access_key_ids_are_credentials() {
        assert_eq!(
            credentials("key AKIAIOSFODNN7EXAMPLE and ASIAY34FZKBOKMUTVV7A."),
            "key AKIA*** and ASIA***."
        );
    }

    #[test]
    fn jwts_of_any_length_are_credentials() {
        for (jwt, expected) in [
            ("eyJhbGciOiJub25lIn0.e30.", "eyJ***"),
            ("eyJ0.e.x", "eyJ***"),
            (
                "\"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\"",
                "\"eyJ***\"",
            ),
        ] {
            assert_eq!(credentials(jwt), expected);
        }
        // A JWE's five segments (the second empty with direct encryption).
        assert_eq!(
            credentials(
                "jwe eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4R0NNIn0..48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6ji.XFBoMYUZodetZdvTiFvSkQ end"
            ),
            "jwe eyJ*** end"
        );
        // Not a JWT: `eyJ` inside a word, and two segments only.
        assert_eq!(credentials("keyJSON.parse.x"), "keyJSON.parse.x");
        assert_eq!(credentials("eyJa.b"), "eyJa.b");
    }

    #[test]
    fn passwd_and_pwd_assignments_are_credentials() {
        assert_eq!(
            credentials("mysql passwd=Zq9xW2 pwd: hunter2 DB_PWD=\"a b\""),
            "mysql passwd: *** pwd: *** DB_PWD: ***"
        );
    }

    #[test]
    fn url_user_names_that_look_like_keys_go_with_the_user_info() {
        assert_eq!(
            credentials("https://token:x-oauth-basic@github.com/o/r and redis://upwd:Zq9x@db:6379"),
            "https://***@github.com/o/r and redis://***@db:6379"
        );
        // `pwd` counts as a whole part of a key only.
        assert_eq!(credentials("upwds8: value"), "upwds8: value");
        assert_eq!(credentials("OLDPWD=/x DB_PWD=y"), "OLDPWD: *** DB_PWD: ***");
    }

    #[test]
    fn password_and_token_options_are_credentials() {
        let cases = [
            (
                "login --password Zq9xW2vB --verbose",
                "login --password *** --verbose",
            ),
            ("cli --token=Zq9xW2vB run", "cli --token *** run"),
            ("cli --github-token\tZq9xW2vB", "cli --github-token ***"),
            (r#"cli --password "two words" x"#, "cli --password *** x"),
            (
                "cli --max-tokens 4096 --token-file /x",
                "cli --max-tokens 4096 --token-file /x",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(credentials(input), expected, "input: {input}");
        }
    }

    #[test]
    fn email_addresses_are_diagnostic() {
        assert_eq!(
            diagnostic("mail alice.smith+ci@corp-example.co.uk failed"),
            "mail [email-redacted] failed"
        );
        // The credential tier keeps them (user-authored text may address someone).
        assert_eq!(
            credentials("mail alice@example.com"),
            "mail alice@example.com"
        );
        // npm's `name@version` is not an address, even with a letters-only pre-release tag.
        assert_eq!(
            diagnostic("No matching version found for pkg@1.0.0-alpha.beta."),
            "No matching version found for pkg@1.0.0-alpha.beta."
        );
    }

    #[test]
    fn keys_inside_longer_runs_take_the_whole_run() {
        assert_eq!(
            diagnostic("blob Qx7aBcDeFgHiJkLmNoPsk-abcdefghijklmnop end"),
            "blob *** end"
        );
        assert_eq!(
            diagnostic("id AKIAIOSFODNN7EXAMPLEZ0123456789abcdef end"),
            "id *** end"
        );
        // A key that is the whole run keeps its marker; keys after `=` or `/` are whole runs.
        assert_eq!(
            diagnostic(
                "k sk-abcdefghijklmnopqrstuvwxyz0123456789 api_key=sk-abcdefghijklmnopqrstuvwxyz01"
            ),
            "k sk-*** api_key: ***"
        );
    }

    #[test]
    fn marks_move_with_the_redaction() {
        let text = "a sk-abcdefghijklmnop b https://x.y/z c";
        let c = text.find(" c").unwrap_or(0);
        let inside = text.find("defg").unwrap_or(0);
        let mut marks = [0, inside, c];
        let redacted = diagnostic_marked(text, &mut marks);
        assert_eq!(redacted, "a sk-*** b https://x.y c");
        assert_eq!(marks[0], 0);
        // An offset inside a secret lands after its replacement.
        assert_eq!(redacted.get(marks[1]..), Some(" b https://x.y c"));
        assert_eq!(redacted.get(marks[2]..), Some(" c"));
    }

    #[test]
    fn holds_credential_names_what_the_credential_tier_removes() {
        assert!(holds_credential(
            "/home/a/ghp_abcdefghijklmnopqrstuvwxyz0123/x"
        ));
        assert!(!holds_credential("/home/alice/.npm/_npx/0123abcd"));
        assert!(!holds_credential("password: ***"));
    }

    #[test]
    fn excerpts_are_cut_on_a_character_boundary_after_sanitizing() {
        let text = format!("{}é", "a ".repeat(2047));
        let excerpt = diagnostic(&text);
        assert!(excerpt.len() <= MAX_EXCERPT_BYTES);
        assert!(excerpt.is_char_boundary(excerpt.len()));
        // The secret is redacted before the cut, so no prefix of it survives.
        let secret = format!("{}sk-abcdefghijklmnopqrstuvwxyz", "x ".repeat(2040));
        assert!(!diagnostic(&secret).contains("sk-abc"));
    }

    #[test]
    fn provider_messages_collapse_and_trim() {
        assert_eq!(
            provider_message("  Selected model is at capacity.  \n"),
            "Selected model is at capacity"
        );
        assert_eq!(
            provider_message("see https://x.y/z for ses_1"),
            "see for [redacted-id]"
        );
    }

    /// A secret of a covered shape, and the value that must not survive.
    fn secret() -> impl Strategy<Value = (String, String)> {
        let value = "[A-Za-z0-9]{30,40}";
        (0usize..12, value).prop_map(|(shape, value)| {
            let text = match shape {
                0 => format!("sk-{value}"),
                1 => format!("ghp_{value}"),
                2 => format!("github_pat_{value}{value}"),
                3 => format!("Bearer {value}"),
                4 => format!("api_key={value}"),
                5 => format!("eyJ{value}.{value}.{value}"),
                6 => format!("--token {value}"),
                7 => format!("\"passwd\": \"{value}\""),
                8 => format!("{{\\\"password\\\": \\\"{value}\\\"}}"),
                9 => format!("https://api.example.com/v1;--api-key {value}"),
                10 => format!("\"Authorization\": \"Basic {value}\""),
                _ => format!("Authorization: token {value}"),
            };
            (text, value)
        })
    }

    /// Pieces of the shapes the tiers look for, to be glued together in any order.
    fn soup_part() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "sk-",
                "ghp_",
                "github_pat_",
                "AKIA",
                "eyJ",
                ".",
                "Bearer ",
                "Authorization:",
                "authorization",
                "password",
                "pwd",
                "_PWD",
                "token",
                "api_key",
                "--token",
                "--password",
                "=",
                ": ",
                "\"",
                "'",
                "\\",
                "\\\"",
                "https://",
                "ftp://",
                "@",
                "/home/",
                "/Users/",
                "C:\\",
                "C://",
                "/",
                " ",
                "\n",
                "\t",
                ",",
                ";",
                "}",
                "ses_",
                "[",
                "*",
                "example.com",
                "1.2.3",
            ])
            .prop_map(str::to_owned),
            "[A-Za-z0-9]{1,40}",
        ]
    }

    proptest! {
        #[test]
        fn both_tiers_are_idempotent(text in "[ -~\n]{0,200}") {
            let once = diagnostic(&text);
            prop_assert_eq!(diagnostic(&once), once.clone());
            let credential_once = credentials(&text);
            prop_assert_eq!(credentials(&credential_once), credential_once);
        }

        // The credential tier is idempotent on text made of the pieces of the shapes it looks
        // for (the diagnostic tier is checked on printable text above: gluing URLs, homes and
        // paths together in any order can make its path rules disagree with themselves).
        #[test]
        fn the_credential_tier_is_idempotent_on_secret_shaped_soup(parts in prop::collection::vec(soup_part(), 0..14)) {
            let text = parts.concat();
            let once = credentials_unbounded(&text);
            prop_assert_eq!(credentials_unbounded(&once), once.clone(), "text: {:?}", text);
        }

        #[test]
        fn no_generated_secret_survives(prefix in "[a-z ]{0,20}", (secret, value) in secret(), suffix in "[a-z ]{0,20}") {
            let text = format!("{prefix} {secret} {suffix}");
            for redacted in [credentials(&text), diagnostic(&text)] {
                prop_assert!(!redacted.contains(&value), "{} survived in {}", value, redacted);
            }
        }

        #[test]
        fn marks_land_on_character_boundaries(text in "[ -~\né]{0,120}", at in any::<prop::sample::Index>()) {
            let mut mark = at.index(text.len() + 1);
            while !text.is_char_boundary(mark) {
                mark -= 1;
            }
            let mut marks = [mark, text.len()];
            let redacted = diagnostic_marked(&text, &mut marks);
            prop_assert!(redacted.is_char_boundary(marks[0]));
            prop_assert_eq!(marks[1], redacted.len());
            prop_assert!(marks[0] <= marks[1]);
        }
    }
}
