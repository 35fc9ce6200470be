//! Redaction tiers: what evidence text looks like before any rule reads it.
//!
//! Rules are written against redacted text, so the redaction a bundle was checked with must be
//! the one the runtime applies: bundles carry [`REDACTION_VERSION`] and the loader refuses a
//! bundle stamped with another.
//!
//! - The **credential tier** removes secrets (API keys, tokens, bearer credentials, password
//!   assignments, URL user-info) and keeps everything else: for user-authored text such as a
//!   launch prompt, whose ids and hashes must survive.
//! - The **diagnostic tier** also strips URLs to scheme and host, hides `wrk_`/`ses_`/`run_`
//!   ids, long opaque runs and local paths: for provider output, classifier excerpts and failure
//!   reasons.
//!
//! Both are idempotent, and sanitize before cutting, so a secret can never be split from its
//! key marker by the cut.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// The version of the redaction rules below; stamped on and checked in every bundle.
pub const REDACTION_VERSION: &str = "faultline-redaction.v1";
/// The bound of a classifier excerpt.
pub const MAX_EXCERPT_BYTES: usize = 4096;
/// The bound of a provider message projection.
pub const MAX_PROVIDER_MESSAGE_BYTES: usize = 2048;

/// Words the diagnostic tier writes that the raw text may not contain (in `[redacted-id]`,
/// `[path-redacted]`, `/Users/<redacted>/`, `[redacted]`). A prefilter that scans the raw text
/// must not require any part of them; every other word of the sanitized text is in the raw text.
pub const INTRODUCED_WORDS: &[&str] = &["redacted", "path", "id"];

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

struct Replacement {
    pattern: Regex,
    replacement: &'static str,
}

static CREDENTIAL_REPLACEMENTS: LazyLock<Vec<Replacement>> = LazyLock::new(|| {
    [
        (r"sk-[A-Za-z0-9_-]{12,}", "sk-***"),
        (r"github_pat_[A-Za-z0-9_]{50,}", "github_pat_***"),
        (r"ghp_[A-Za-z0-9]{30,}", "ghp_***"),
        (r"kandev_pat_[A-Za-z0-9_]+", "kandev_pat_***"),
        (r"(?i)Bearer\s+[A-Za-z0-9._\-+/=]{20,}", "Bearer ***"),
        (r"(?i)Authorization:[ \t]*[^\r\n]+", "Authorization: ***"),
        (r"--api-key[= ]\S+", "--api-key ***"),
    ]
    .into_iter()
    .map(|(pattern, replacement)| Replacement {
        pattern: regex(pattern),
        replacement,
    })
    .collect()
});

const KEY: &str = r"[A-Za-z0-9_.-]*(?:[Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]|[Ss][Ee][Cc][Rr][Ee][Tt]|[Tt][Oo][Kk][Ee][Nn]|[Aa][Pp][Ii][_-]?[Kk][Ee][Yy])[A-Za-z0-9_.-]*";

static ASSIGNMENT_KEY: LazyLock<Regex> = LazyLock::new(|| {
    regex(&format!(
        r#""({KEY})"[ \t]*[:=][ \t]*|'({KEY})'[ \t]*[:=][ \t]*|({KEY})[ \t]*[:=][ \t]*"#
    ))
});
static URL_USERINFO: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)([a-z][a-z0-9+.-]*://)[^\s/?#]+@"));
static URL: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(https?://)(?:[^@\s/]+@)?([^/\s?#]+)[^\s]*"));
static WORKSPACE_ID: LazyLock<Regex> =
    LazyLock::new(|| regex(r"\b(?:wrk|ses|run)_[A-Za-z0-9_-]+\b"));
static OPAQUE_RUN: LazyLock<Regex> = LazyLock::new(|| regex(r"[A-Za-z0-9+/=_-]{32,}"));
static USERS_HOME: LazyLock<Regex> = LazyLock::new(|| regex(r"/Users/[^/\s]+/"));
static HOME_HOME: LazyLock<Regex> = LazyLock::new(|| regex(r"/home/[^/\s]+/"));
static WINDOWS_PATH: LazyLock<Regex> = LazyLock::new(|| regex(r#"(?i)[A-Z]:[\\/][^\r\n"']+"#));
static UNIX_PATH: LazyLock<Regex> = LazyLock::new(|| regex(r#"/(?:[^/\s"']+/)+[^\r\n\s"'<>]+"#));
static PROVIDER_URL: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)https?://[^\s]+"));
static PROVIDER_ID: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)\b(?:wrk|ses|run)_[A-Za-z0-9_-]+\b"));
static WHITESPACE_RUN: LazyLock<Regex> = LazyLock::new(|| regex(r"\s+"));

/// The credential tier, unbounded: secrets removed, everything else kept.
pub fn credentials_unbounded(text: &str) -> String {
    let mut out = text.to_owned();
    for replacement in CREDENTIAL_REPLACEMENTS.iter() {
        if replacement.pattern.is_match(&out) {
            out = replacement
                .pattern
                .replace_all(&out, replacement.replacement)
                .into_owned();
        }
    }
    out = redact_assignments(&out);
    if URL_USERINFO.is_match(&out) {
        out = URL_USERINFO.replace_all(&out, "${1}***@").into_owned();
    }
    out
}

/// The credential tier, cut to [`MAX_EXCERPT_BYTES`] on a character boundary.
pub fn credentials(text: &str) -> String {
    cut(credentials_unbounded(text), MAX_EXCERPT_BYTES)
}

/// The diagnostic tier, unbounded.
pub fn diagnostic_unbounded(text: &str) -> String {
    let mut out = text.to_owned();
    if URL.is_match(&out) {
        out = URL.replace_all(&out, "${1}${2}").into_owned();
    }
    if WORKSPACE_ID.is_match(&out) {
        out = WORKSPACE_ID.replace_all(&out, "[redacted-id]").into_owned();
    }
    out = credentials_unbounded(&out);
    if OPAQUE_RUN.is_match(&out) {
        out = OPAQUE_RUN.replace_all(&out, "***").into_owned();
    }
    if USERS_HOME.is_match(&out) {
        out = USERS_HOME
            .replace_all(&out, "/Users/<redacted>/")
            .into_owned();
    }
    if HOME_HOME.is_match(&out) {
        out = HOME_HOME
            .replace_all(&out, "/home/<redacted>/")
            .into_owned();
    }
    redact_local_paths(&out)
}

/// The diagnostic tier, cut to [`MAX_EXCERPT_BYTES`] on a character boundary: the text rules
/// read as the `sanitized` view.
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

fn redact_local_paths(text: &str) -> String {
    let mut out = text.to_owned();
    if WINDOWS_PATH.is_match(&out) {
        out = WINDOWS_PATH
            .replace_all(&out, |captures: &Captures<'_>| {
                let whole = captures.get(0).map_or("", |m| m.as_str());
                // `C://` is a URL-ish drive-letter scheme, not a Windows path.
                if whole
                    .get(2..)
                    .is_some_and(|rest| rest.starts_with("//") || rest.starts_with("\\\\"))
                {
                    whole.to_owned()
                } else {
                    "[path-redacted]".to_owned()
                }
            })
            .into_owned();
    }
    if !UNIX_PATH.is_match(&out) {
        return out;
    }
    let source = out;
    let mut result = String::with_capacity(source.len());
    let mut last = 0;
    for found in UNIX_PATH.find_iter(&source) {
        let (start, end) = (found.start(), found.end());
        let preceded_by_url = start >= 2 && source.get(start - 2..start) == Some(":/");
        let whole = found.as_str();
        result.push_str(source.get(last..start).unwrap_or(""));
        if preceded_by_url || whole.contains("[path-redacted]") {
            result.push_str(whole);
        } else if whole.starts_with("/Users/<redacted>/") {
            result.push_str("/Users/<redacted>/[path-redacted]");
        } else if whole.starts_with("/home/<redacted>/") {
            result.push_str("/home/<redacted>/[path-redacted]");
        } else {
            result.push_str("[path-redacted]");
        }
        last = end;
    }
    result.push_str(source.get(last..).unwrap_or(""));
    result
}

/// `key: value` and `key=value` assignments of secret-looking keys become `key: ***`.
fn redact_assignments(text: &str) -> String {
    if !ASSIGNMENT_KEY.is_match(text) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut search_from = 0;
    while let Some(captures) = ASSIGNMENT_KEY.captures_at(text, search_from) {
        let Some(whole) = captures.get(0) else { break };
        let key_match = captures
            .get(1)
            .or_else(|| captures.get(2))
            .or_else(|| captures.get(3));
        let Some(key) = key_match else { break };
        let key_written = text
            .get(whole.start()..key.end() + usize::from(captures.get(3).is_none()))
            .unwrap_or("");
        let value_start = whole.end();
        let value_end = scan_value(text, value_start);
        let value = text.get(value_start..value_end).unwrap_or("");
        let is_count = COUNT_KEYS.contains(&key.as_str().to_ascii_lowercase().as_str())
            && !value.is_empty()
            && value.bytes().all(|b| b.is_ascii_digit());
        if value.is_empty() || is_count {
            search_from = value_end.max(whole.end()).max(search_from + 1);
            continue;
        }
        out.push_str(text.get(last..whole.start()).unwrap_or(""));
        out.push_str(key_written);
        out.push_str(": ***");
        last = value_end;
        search_from = value_end.max(whole.end());
        if search_from >= text.len() {
            break;
        }
    }
    out.push_str(text.get(last..).unwrap_or(""));
    out
}

/// The end of an assignment's value starting at `start`: a quoted string (with `\` escapes), or
/// a bare run up to whitespace, leaving trailing `}])>` and `,`/`;` outside.
fn scan_value(text: &str, start: usize) -> usize {
    let rest = text.get(start..).unwrap_or("");
    let mut chars = rest.char_indices();
    if let Some((_, quote @ ('"' | '\''))) = chars.next() {
        let mut escaped = false;
        for (index, c) in chars {
            if c == '\n' {
                break;
            }
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == quote {
                return start + index + c.len_utf8();
            }
        }
        // An unterminated quote: scan it as a bare value.
    }
    let bare_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let bare = rest.get(..bare_end).unwrap_or("");
    let trimmed = bare
        .trim_end_matches([',', ';'])
        .trim_end_matches(['}', ']', ')', '>'])
        .trim_end_matches([',', ';']);
    start + trimmed.len()
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
            ("sk-***", &["sk"][..]),
            ("github_pat_***", &["github_pat_"]),
            ("ghp_***", &["ghp_"]),
            ("kandev_pat_***", &["kandev_pat_"]),
            ("Bearer ***", &["bearer"]),
            ("Authorization: ***", &["authorization"]),
            ("--api-key ***", &["api", "key"]),
            (": ***", &[]),
            ("***@", &[]),
            ("[redacted-id]", &[]),
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
        (0usize..6, value).prop_map(|(shape, value)| {
            let text = match shape {
                0 => format!("sk-{value}"),
                1 => format!("ghp_{value}"),
                2 => format!("github_pat_{value}{value}"),
                3 => format!("Bearer {value}"),
                4 => format!("api_key={value}"),
                _ => format!("Authorization: token {value}"),
            };
            (text, value)
        })
    }

    proptest! {
        #[test]
        fn both_tiers_are_idempotent(text in "[ -~\n]{0,200}") {
            let once = diagnostic(&text);
            prop_assert_eq!(diagnostic(&once), once.clone());
            let credential_once = credentials(&text);
            prop_assert_eq!(credentials(&credential_once), credential_once);
        }

        #[test]
        fn no_generated_secret_survives(prefix in "[a-z ]{0,20}", (secret, value) in secret(), suffix in "[a-z ]{0,20}") {
            let text = format!("{prefix} {secret} {suffix}");
            for redacted in [credentials(&text), diagnostic(&text)] {
                prop_assert!(!redacted.contains(&value), "{} survived in {}", value, redacted);
            }
        }
    }
}
