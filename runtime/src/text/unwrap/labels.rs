//! The labels a line opens with before its message: a component's tag in brackets, a
//! program's name, an `Error:` label, and the words prose opens with the same way, which stay.

use std::sync::OnceLock;

use regex::Regex;

use super::{BLANKS, compiled, has_text};

/// A component's tag in brackets opening a line, as applications log it (`[server] `,
/// `[openai] `, `[sdk-driver] `): a name without blanks.
fn component_tag() -> Option<&'static Regex> {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    compiled(&PATTERN, || {
        r"(?-u)^[ \t]*\[([A-Za-z][\w.:/@\-]{0,40})\](?:[ \t]*[:\-][ \t]*|[ \t]+)".to_owned()
    })
}

/// The tags an issue's title opens with, which a component tag must not be (a title quoting an
/// error is prose).
const TITLE_TAGS: [&str; 16] = [
    "bug",
    "bugs",
    "feature",
    "feat",
    "question",
    "docs",
    "doc",
    "help",
    "enhancement",
    "proposal",
    "rfc",
    "wip",
    "fix",
    "issue",
    "request",
    "regression",
];

/// Levels that say a line is no failure, which a tag must not be either (see [`super::LEVEL`]).
const QUIET_TAGS: [&str; 7] = ["info", "debug", "trace", "notice", "verbose", "i", "d"];

/// gRPC's and Connect's status codes, which clients print in brackets before the message
/// (`[resource_exhausted] Error`): the bracket holds the error's code, not a component's name.
const STATUS_CODE_TAGS: [&str; 16] = [
    "canceled",
    "cancelled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "unauthenticated",
];

/// `line` without a component's tag opening it (see [`component_tag`]), unless the tag is one
/// an issue's title opens with, a level that says the line is no failure, or a status code.
pub(super) fn without_component_tag(line: &str) -> &str {
    if !line.trim_start_matches(BLANKS).starts_with('[') {
        return line;
    }
    let Some(found) = component_tag().and_then(|tag| tag.captures(line)) else {
        return line;
    };
    let (Some(whole), Some(name)) = (found.get(0), found.get(1)) else {
        return line;
    };
    let not_a_component = TITLE_TAGS
        .iter()
        .chain(&QUIET_TAGS)
        .chain(&STATUS_CODE_TAGS)
        .any(|tag| tag.eq_ignore_ascii_case(name.as_str()));
    match line.get(whole.end()..) {
        Some(after) if !not_a_component && has_text(after) => after,
        _ => line,
    }
}

/// The labels the error-label reading takes off a line's start.
pub(super) const ERROR_LABELS: [&str; 3] = ["Error:", "ERROR:", "error:"];

/// Words that open a line the way a program's name opens its messages but are none, besides an
/// issue title's tags ([`TITLE_TAGS`]) and the quiet levels ([`QUIET_TAGS`]): a commit's type
/// and a note's label (`fix: …`, `FYI: …`: changelogs and notes quote errors after them), the
/// other levels (`error: …` is the `Error:` label, read once), and shells and their launchers,
/// whose name opens their own messages (`zsh: command not found: aider`), which rules read.
const NOT_PROGRAM_NAMES: [&str; 32] = [
    "fixes", "fixed", "chore", "refactor", "test", "tests", "perf", "ci", "build", "revert", "fyi",
    "note", "tip", "todo", "handle", "update", "error", "err", "warning", "warn", "fatal", "panic",
    "sh", "bash", "zsh", "fish", "dash", "ksh", "csh", "tcsh", "sudo", "env",
];

/// What follows a program's name labelling a line (`mytool: …`, `codex: …`, `httpx: …`,
/// `@scope/pkg: …`): a lower-case name without blanks, at most 40 bytes, then a colon and a
/// blank, unless prose or a log opens with the name ([`NOT_PROGRAM_NAMES`]). What else opens a line
/// so stays: two words or more (a sentence's, `The request failed: …`), a capitalised word or a
/// model's name (an issue's title, `GPT-5: …`, `Deepseek-671B: …`), an error code
/// (`session_failure: …`) or an exception's name (`TypeError: …`), which rules read.
pub(super) fn after_program_label(opening: &str) -> Option<&str> {
    let bytes = opening.as_bytes();
    if !bytes
        .first()
        .is_some_and(|byte| byte.is_ascii_lowercase() || *byte == b'@')
    {
        return None;
    }
    let end = bytes.iter().position(|byte| {
        !(byte.is_ascii_lowercase()
            || byte.is_ascii_digit()
            || matches!(byte, b'.' | b'-' | b'/' | b'@'))
    })?;
    if end > 40
        || bytes.get(end) != Some(&b':')
        || !matches!(bytes.get(end + 1), Some(b' ' | b'\t'))
    {
        return None;
    }
    let name = opening.get(..end)?;
    let first_part = name.split('.').next().unwrap_or(name);
    let last_part = name.rsplit('.').next().unwrap_or(name);
    let after = opening.get(end + 1..)?;
    let message = after.trim_start_matches(BLANKS);
    let not_a_program = TITLE_TAGS
        .iter()
        .chain(&QUIET_TAGS)
        .chain(&NOT_PROGRAM_NAMES)
        .any(|word| *word == first_part);
    if not_a_program
        // A key the redaction reads a secret after (`authorization: Digest …`): cut off, the
        // secret would reach the output unredacted.
        || crate::sanitize::is_secret_key(name)
        // A field's path (`messages.5: …`, `error.code: …`) names where the error is.
        || last_part.bytes().all(|byte| byte.is_ascii_digit())
        // The program is what the message is about (`kimi: command not found`).
        || message.starts_with("command not found")
        || message.starts_with("not found")
    {
        return None;
    }
    Some(after)
}

/// Whether `line` opens with a key and a colon (`vary: origin`, `status: 429,`, `code:`): the
/// text's first line then opens a listing of fields (a response's headers, an object printed
/// as YAML), not a message a program's name labels.
pub(super) fn opens_with_key(line: &str) -> bool {
    let opening = line.trim_start_matches(BLANKS).as_bytes();
    let end = opening
        .iter()
        .position(|byte| !(byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-')))
        .unwrap_or(opening.len());
    end > 0
        && opening.get(end) == Some(&b':')
        && matches!(opening.get(end + 1), None | Some(b' ' | b'\t' | b'\r'))
}

/// Whether some line of `text` could open with an error label: a cheap look for the label's
/// tail anywhere, so that text without one is scanned once, not twice.
pub(crate) fn may_hold_error_label(text: &str) -> bool {
    // Built once: a searcher's set-up costs more than searching a short text.
    static FINDERS: OnceLock<[memchr::memmem::Finder<'static>; 2]> = OnceLock::new();
    let [lower, upper] = FINDERS.get_or_init(|| {
        [
            memchr::memmem::Finder::new(b"rror:"),
            memchr::memmem::Finder::new(b"RROR:"),
        ]
    });
    lower.find(text.as_bytes()).is_some() || upper.find(text.as_bytes()).is_some()
}
