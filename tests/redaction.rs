//! No secret reaches an output. A deterministic seeded generator plants a secret of every
//! shape the redaction covers (`runtime/src/sanitize.rs`; the list is in docs/evidence.md) at
//! the start, in the middle and at the end of every real fixture message
//! (`fixtures/classify/*.jsonl`), bare, quoted, inside a JSON string, inside escaped JSON (JSON
//! inside a JSON string), glued to a URL, after a URL on the line, after a line break and
//! inside a reset-time notice, and asserts that no 8-character window of the secret appears in
//! any output field: the classification (excerpt, remediation and every other field), and
//! what `faultline explain` prints about it (the sanitized text rules read, and the timing
//! steps); for shapes of the credential tier, also in that tier's output. More than 100,000
//! planted cases per run; a small sample also goes through the `faultline explain` binary.
//!
//! The one documented exception: the home directory inside the remediation path of
//! `npm.enotempty.npx.v1`, which the orchestrator deletes on the same host.
//!
//! The named regression tests of issue 10, items 16–21, are here (bundle level) and in
//! `runtime/src/sanitize.rs` (redaction level).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::sync::LazyLock;
use std::time::SystemTime;

use faultline_runtime::parse_instant;
use faultline_runtime::{Bundle, Classification, Evidence, TextViews, redact_credentials};
use serde_json::Value;

static BUNDLE: LazyLock<Bundle> = LazyLock::new(common::catalogue_bundle);

/// The planted cases of one position, per run: three positions, so more than 100,000 in all.
const CASES_PER_POSITION: usize = 36_000;

/// A small deterministic generator (xorshift64*): the same cases on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn between(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    /// `length` characters of `alphabet`, starting with a letter (so that no value is a bare
    /// count, and no run is mistaken for a number).
    fn word(&mut self, alphabet: &str, length: usize) -> String {
        let alphabet: Vec<char> = alphabet.chars().collect();
        let letters: Vec<char> = alphabet
            .iter()
            .copied()
            .filter(char::is_ascii_alphabetic)
            .collect();
        (0..length)
            .map(|i| {
                if i == 0 && !letters.is_empty() {
                    letters[self.below(letters.len())]
                } else {
                    alphabet[self.below(alphabet.len())]
                }
            })
            .collect()
    }

    fn word_between(&mut self, alphabet: &str, low: usize, high: usize) -> String {
        let length = self.between(low, high);
        self.word(alphabet, length)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGITS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const BASE64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const BASE64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const PASSWORD: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#%*+?^~_-";
const LOWER_DIGITS: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &str = "0123456789abcdef";

/// Which tier removes a shape: the credential tier's shapes must also be gone from its output.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tier {
    Credential,
    Diagnostic,
}

/// A planted secret: the text written into the message, and the values none of whose
/// 8-character windows may appear in an output.
struct Planted {
    shape: &'static str,
    tier: Tier,
    text: String,
    secrets: Vec<String>,
    /// The home directory of an npx cache path, which the remediation may report.
    home: Option<String>,
}

type Maker = fn(&mut Rng) -> (String, Vec<String>);

/// `key` without the part of its fixed marker that an 8-character window can lie in wholly:
/// the redaction keeps a marker such as `github_pat_` on purpose, and every window of what is
/// left holds a character of the secret value.
fn without_marker(key: &str, marker: &str) -> String {
    key[marker.len().saturating_sub(7)..].to_owned()
}

/// Every covered shape: name, tier, and how to make one.
fn shapes() -> Vec<(&'static str, Tier, Maker)> {
    use Tier::{Credential, Diagnostic};
    vec![
        ("sk", Credential, |r| {
            let key = format!("sk-{}", r.word_between(ALNUM, 20, 48));
            (key.clone(), vec![key])
        }),
        ("sk-proj", Credential, |r| {
            let key = format!("sk-proj-{}", r.word_between(BASE64URL, 40, 80));
            (key.clone(), vec![without_marker(&key, "sk-proj-")])
        }),
        ("github_pat", Credential, |r| {
            let key = format!(
                "github_pat_{}",
                r.word(
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_",
                    82
                )
            );
            (key.clone(), vec![without_marker(&key, "github_pat_")])
        }),
        ("ghp", Credential, |r| {
            let key = format!("ghp_{}", r.word(ALNUM, 36));
            (key.clone(), vec![key])
        }),
        ("kandev_pat", Credential, |r| {
            let key = format!("kandev_pat_{}", r.word_between(ALNUM, 8, 40));
            (key.clone(), vec![without_marker(&key, "kandev_pat_")])
        }),
        ("aws_access_key_id", Credential, |r| {
            let prefix = r.pick(&["AKIA", "ASIA"]);
            let key = format!("{prefix}{}", r.word(UPPER_DIGITS, 16));
            (key.clone(), vec![key])
        }),
        ("jwt", Credential, |r| {
            // Any length: from a few characters per segment to a real token's size.
            let (a, b, c) = (r.between(1, 40), r.between(1, 120), r.between(0, 43));
            let jwt = format!(
                "eyJ{}.{}.{}",
                r.word(BASE64URL, a),
                r.word(BASE64URL, b),
                r.word(BASE64URL, c)
            );
            (jwt.clone(), vec![jwt])
        }),
        ("jwe", Credential, |r| {
            // Five segments; the encrypted key is empty with direct encryption.
            let key = if r.below(2) == 0 {
                String::new()
            } else {
                r.word_between(BASE64URL, 40, 80)
            };
            let jwe = format!(
                "eyJ{}.{key}.{}.{}.{}",
                r.word_between(BASE64URL, 20, 60),
                r.word(BASE64URL, 16),
                r.word_between(BASE64URL, 10, 90),
                r.word(BASE64URL, 22),
            );
            (jwe.clone(), vec![jwe])
        }),
        ("jwt_with_sk", Credential, |r| {
            let jwt = format!(
                "eyJ{}.eyJ{}.{}sk-{}",
                r.word_between(BASE64URL, 10, 36),
                r.word_between(BASE64URL, 10, 60),
                r.word_between(BASE64URL, 1, 12),
                r.word_between(ALNUM, 12, 30),
            );
            (jwt.clone(), vec![jwt])
        }),
        ("bearer", Credential, |r| {
            let token = r.word_between(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-+/=",
                20,
                60,
            );
            let scheme = r.pick(&["Bearer", "bearer", "BEARER"]);
            (format!("{scheme} {token}"), vec![token])
        }),
        ("authorization_header", Credential, |r| {
            let credential = r.word_between(BASE64, 8, 40);
            let scheme = r.pick(&["Basic", "Bearer", "token", "Digest"]);
            let key = r.pick(&["Authorization", "authorization", "Proxy-Authorization"]);
            (format!("{key}: {scheme} {credential}"), vec![credential])
        }),
        ("authorization_json", Credential, |r| {
            let credential = r.word_between(BASE64, 8, 31);
            let scheme = r.pick(&["Basic", "Bearer"]);
            let key = r.pick(&["Authorization", "authorization"]);
            let text = if r.below(2) == 0 {
                format!("\"{key}\": \"{scheme} {credential}\"")
            } else {
                format!("'{key}': '{scheme} {credential}'")
            };
            (text, vec![credential])
        }),
        ("secret_option", Credential, |r| {
            let value = r.word_between(PASSWORD, 8, 40);
            let option = r.pick(&[
                "--api-key",
                "--password",
                "--token",
                "--github-token",
                "--db-password",
                "--secret",
            ]);
            let separator = r.pick(&[" ", "=", "  "]);
            (format!("{option}{separator}{value}"), vec![value])
        }),
        ("secret_option_quoted", Credential, |r| {
            let (one, two) = (r.word(PASSWORD, 10), r.word(PASSWORD, 12));
            let option = r.pick(&["--password", "--token", "--api-key"]);
            (format!("{option} \"{one} {two}\""), vec![one, two])
        }),
        ("assignment", Credential, |r| {
            let key = r.pick(&[
                "password",
                "passwd",
                "pwd",
                "secret",
                "token",
                "api_key",
                "apiKey",
                "x-api-key",
                "AWS_SECRET_ACCESS_KEY",
                "client_secret",
                "DB_PASSWORD",
                "access_token",
            ]);
            let value = r.word_between(PASSWORD, 8, 40);
            let text = match r.below(6) {
                0 => format!("{key}={value}"),
                1 => format!("{key}: {value}"),
                2 => format!("\"{key}\": \"{value}\""),
                3 => format!("'{key}': '{value}'"),
                4 => format!("\"{key}\":\"{value}\""),
                _ => format!("{key} = {value}"),
            };
            (text, vec![value])
        }),
        ("assignment_with_blanks", Credential, |r| {
            let key = r.pick(&["password", "secret", "passwd"]);
            let (one, two) = (r.word(PASSWORD, 9), r.word(PASSWORD, 11));
            let text = if r.below(2) == 0 {
                format!("{key}=\"{one} {two}\"")
            } else {
                format!("\"{key}\": \"{one} {two}\"")
            };
            (text, vec![one, two])
        }),
        ("url_userinfo", Credential, |r| {
            let (user, password) = (r.word(LOWER_DIGITS, 10), r.word_between(ALNUM, 8, 24));
            let scheme = r.pick(&["https", "postgres", "redis", "ftp"]);
            (
                format!("{scheme}://{user}:{password}@db.example.com:5432/app"),
                vec![user, password],
            )
        }),
        ("email", Diagnostic, |r| {
            let address = format!(
                "{}@{}.{}",
                r.word_between("abcdefghijklmnopqrstuvwxyz0123456789._+-", 8, 20),
                r.word_between(LOWER_DIGITS, 8, 16),
                r.pick(&["com", "org", "io", "dev", "co.uk"])
            );
            (address.clone(), vec![address])
        }),
        ("windows_path", Diagnostic, |r| {
            let (user, file) = (r.word_between(ALNUM, 8, 14), r.word(ALNUM, 10));
            let separator = r.pick(&["\\", "\\\\", "/"]);
            let drive = r.pick(&["C", "D", "c"]);
            let text = [
                format!("{drive}:"),
                "Users".to_owned(),
                user.clone(),
                "AppData".to_owned(),
                format!("{file}.log"),
            ]
            .join(separator);
            (text, vec![user, file])
        }),
        ("home_path", Diagnostic, |r| {
            let (user, project) = (r.word_between(ALNUM, 8, 14), r.word(ALNUM, 10));
            let home = r.pick(&["/home", "/Users"]);
            (
                format!("{home}/{user}/{project}/src/main.rs"),
                vec![user, project],
            )
        }),
        ("local_path", Diagnostic, |r| {
            let (one, two) = (r.word(ALNUM, 10), r.word(ALNUM, 9));
            (format!("/workspace/{one}/{two}.ts"), vec![one, two])
        }),
        ("workspace_id", Diagnostic, |r| {
            let prefix = r.pick(&["ses", "wrk", "run"]);
            let id = format!("{prefix}_{}", r.word(UPPER_DIGITS, 26));
            (id.clone(), vec![id])
        }),
        ("opaque_run", Diagnostic, |r| {
            let run = r.word_between(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-",
                32,
                64,
            );
            (run.clone(), vec![run])
        }),
        ("opaque_run_with_key", Diagnostic, |r| {
            // A key glued inside a longer opaque secret: the key pattern alone would leave the
            // rest of the run.
            let key = match r.below(3) {
                0 => format!("sk-{}", r.word(ALNUM, 14)),
                1 => format!("AKIA{}", r.word(UPPER_DIGITS, 16)),
                _ => format!("ghp_{}", r.word(ALNUM, 36)),
            };
            // An opaque run is 32 characters or more (in a shorter one, only the key is a
            // secret).
            let before = r.word_between(ALNUM, 4, 20);
            let after = r.word(
                ALNUM,
                32usize.saturating_sub(before.len() + key.len()).max(1),
            );
            let run = format!("{before}{key}{after}");
            (run.clone(), vec![run])
        }),
        ("url_path", Diagnostic, |r| {
            let (path, query) = (r.word(ALNUM, 12), r.word(ALNUM, 16));
            (
                format!("https://api.example.com/v1/{path}?session={query}"),
                vec![path, query],
            )
        }),
        ("npx_cache", Diagnostic, |r| {
            // The home directory is the documented exception (remediation only); the package
            // path after the cache directory is not.
            let (user, package) = (r.word_between(ALNUM, 8, 12), r.word(ALNUM, 12));
            (
                format!(
                    "npm error code ENOTEMPTY\nnpm error path /home/{user}/.npm/_npx/{}/node_modules/{package}",
                    r.word(HEX, 16)
                ),
                vec![user, package],
            )
        }),
    ]
}

/// Where a planted secret sits: how it is wrapped.
const CONTEXTS: &[&str] = &[
    "bare",
    "double_quoted",
    "single_quoted",
    "json_string",
    "escaped_json",
    "url_semicolon",
    "url_comma",
    "url_slash",
    "after_url",
    "after_newline",
    "own_line",
    "reset_notice",
];

fn wrap(context: &str, text: &str) -> String {
    match context {
        "bare" => text.to_owned(),
        "double_quoted" => format!("\"{text}\""),
        "single_quoted" => format!("'{text}'"),
        "json_string" => format!(
            "{{\"error\":{{\"message\":{}}}}}",
            serde_json::to_string(text).unwrap()
        ),
        "escaped_json" => {
            let inner = format!("{{\"body\":{}}}", serde_json::to_string(text).unwrap());
            format!("request failed: {}", serde_json::to_string(&inner).unwrap())
        }
        "url_semicolon" => format!("https://api.example.com/v1;{text}"),
        "url_comma" => format!("https://api.example.com/v1,{text}"),
        "url_slash" => format!("https://api.example.com/v1/{text}"),
        "after_url" => format!("see https://status.example.com/incidents/x then {text}"),
        "after_newline" => format!("\n{text}"),
        "own_line" => format!("\n{text}\n"),
        "reset_notice" => format!("limit reached, resets 3pm ({text})"),
        _ => unreachable!("unknown context {context}"),
    }
}

/// The real fixture messages: their evidence, with the text in `stderr` (or `stdout`).
static MESSAGES: LazyLock<Vec<Evidence>> = LazyLock::new(|| {
    let mut messages = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(common::root().join("fixtures/classify"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let fixture: Value = serde_json::from_str(line).unwrap();
            let evidence: Evidence = serde_json::from_value(fixture["evidence"].clone()).unwrap();
            if evidence.stderr.is_some() || evidence.stdout.is_some() {
                messages.push(evidence);
            }
        }
    }
    assert!(messages.len() >= 250, "only {} messages", messages.len());
    messages
});

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Position {
    Start,
    Middle,
    End,
}

/// `planted` inside `message`: at its start, at the blank nearest its middle, or at its end.
fn plant(message: &str, planted: &str, position: Position) -> String {
    match position {
        Position::Start => format!("{planted} {message}"),
        Position::End => format!("{message} {planted}"),
        Position::Middle => {
            let middle = message.len() / 2;
            let blank = message
                .char_indices()
                .filter(|(_, c)| c.is_whitespace())
                .map(|(i, _)| i)
                .min_by_key(|i| i.abs_diff(middle));
            match blank {
                Some(at) => format!("{} {planted} {}", &message[..at], &message[at..]),
                None => format!("{message} {planted}"),
            }
        }
    }
}

/// The first 8-character window of any secret found in `output`.
fn leaked<'s>(secrets: &'s [String], output: &str) -> Option<&'s str> {
    secrets.iter().find_map(|secret| {
        (0..=secret.len().saturating_sub(8))
            .filter_map(|i| secret.get(i..i + 8))
            .find(|window| output.contains(window))
    })
}

/// The remediation, without the home directory of an npx cache path (the exception).
fn remediation_outside_home(remediation: &str, home: Option<&str>) -> String {
    match home {
        Some(home) => {
            for prefix in ["/home/", "/Users/"] {
                let owned = format!("{prefix}{home}/.npm/_npx/");
                if let Some(rest) = remediation.strip_prefix(&owned) {
                    return rest.to_owned();
                }
            }
            remediation.to_owned()
        }
        None => remediation.to_owned(),
    }
}

/// Every output field of the classification and of what `explain` prints, as one text (the
/// remediation apart, for its exception).
fn outputs(evidence: &Evidence, now: SystemTime) -> (Classification, String) {
    let (classification, trace) = BUNDLE.classify_traced(evidence, now);
    let mut fields = classification.clone();
    fields.remediation = None;
    let excerpt = std::mem::take(&mut fields.excerpt);
    let mut text = serde_json::to_string(&fields).unwrap();
    text.push('\u{0}');
    text.push_str(&excerpt);
    // `explain` prints the sanitized text rules read (most often the excerpt itself) and every
    // timing step.
    let views = TextViews::new(evidence);
    if views.sanitized() != excerpt {
        text.push('\u{0}');
        text.push_str(views.sanitized());
    }
    for step in trace.timing() {
        text.push('\u{0}');
        text.push_str(&format!("{}: {:?}", step.source, step.outcome));
    }
    (classification, text)
}

fn check(evidence: &Evidence, planted: &Planted, now: SystemTime) -> Result<(), String> {
    let (classification, text) = outputs(evidence, now);
    if let Some(window) = leaked(&planted.secrets, &text) {
        return Err(format!("`{window}` in the output {text:?}"));
    }
    if let Some(remediation) = &classification.remediation {
        let checked = remediation_outside_home(remediation, planted.home.as_deref());
        if let Some(window) = leaked(&planted.secrets, &checked) {
            return Err(format!("`{window}` in the remediation {remediation:?}"));
        }
    }
    if planted.tier == Tier::Credential {
        let planted_text = evidence.raw_text();
        let credentials = redact_credentials(&planted_text);
        if let Some(window) = leaked(&planted.secrets, &credentials) {
            return Err(format!(
                "`{window}` in the credential tier's output {credentials:?}"
            ));
        }
    }
    Ok(())
}

/// A secret of `shape`, wrapped in `context`.
fn planted(rng: &mut Rng, shape: &(&'static str, Tier, Maker), context: &str) -> Planted {
    let (name, tier, make) = shape;
    let (text, secrets) = make(rng);
    let home = (*name == "npx_cache").then(|| secrets[0].clone());
    Planted {
        shape: name,
        tier: *tier,
        text: wrap(context, &text),
        secrets,
        home,
    }
}

/// Every (shape, context) pair in turn, each with messages drawn at random, planted at
/// `position`: `cases` in all. Reports every leak found (at most 20 of them).
fn run(position: Position, seed: u64, cases: usize) {
    let shapes = shapes();
    let now = parse_instant("2026-08-01T00:00:00Z").unwrap();
    let mut rng = Rng(seed);
    let mut failures = Vec::new();
    let mut count = 0;
    let pairs = shapes.len() * CONTEXTS.len();
    for case in 0..cases {
        let shape = &shapes[case % shapes.len()];
        let context = CONTEXTS[(case / shapes.len()) % CONTEXTS.len()];
        let message = &MESSAGES[rng.below(MESSAGES.len())];
        let planted = planted(&mut rng, shape, context);
        let mut evidence = message.clone();
        let slot = if evidence.stderr.is_some() {
            &mut evidence.stderr
        } else {
            &mut evidence.stdout
        };
        let original = slot.take().unwrap_or_default();
        *slot = Some(plant(&original, &planted.text, position));
        count += 1;
        if let Err(problem) = check(&evidence, &planted, now) {
            failures.push(format!(
                "{} / {context} / {position:?}: {problem}\n  evidence: {:?}",
                planted.shape,
                evidence.raw_text()
            ));
            if failures.len() >= 20 {
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} leaks:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        count >= pairs * 10,
        "each shape and context is planted at least ten times"
    );
}

#[test]
fn no_secret_planted_at_the_start_reaches_an_output() {
    run(Position::Start, 0x5EED_0001, CASES_PER_POSITION);
}

#[test]
fn no_secret_planted_in_the_middle_reaches_an_output() {
    run(Position::Middle, 0x5EED_0002, CASES_PER_POSITION);
}

#[test]
fn no_secret_planted_at_the_end_reaches_an_output() {
    run(Position::End, 0x5EED_0003, CASES_PER_POSITION);
}

/// What `faultline explain` prints, for one planted case of every shape: the binary's own
/// output holds no window of the secret either.
#[test]
fn explain_prints_no_planted_secret() {
    let directory =
        std::env::temp_dir().join(format!("faultline-redaction-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let bundle = directory.join("catalogue.flb");
    let built = common::faultline(&["build", "catalogue", "-o", bundle.to_str().unwrap()]);
    assert!(built.status.success(), "{built:?}");
    let mut rng = Rng(0x5EED_0004);
    for (index, shape) in shapes().iter().enumerate() {
        let context = CONTEXTS[index % CONTEXTS.len()];
        let planted = planted(&mut rng, shape, context);
        let message = &MESSAGES[rng.below(MESSAGES.len())];
        let position = [Position::Start, Position::Middle, Position::End][index % 3];
        let mut evidence = message.clone();
        let text = evidence.stderr.take().or(evidence.stdout.take()).unwrap();
        evidence.stderr = Some(plant(&text, &planted.text, position));
        let json = serde_json::to_string(&evidence).unwrap();
        let output = common::faultline(&[
            "explain",
            "--bundle",
            bundle.to_str().unwrap(),
            "--now",
            "2026-08-01T00:00:00Z",
            &json,
        ]);
        assert!(output.status.success(), "{output:?}");
        let printed = common::stdout(&output);
        assert!(printed.contains("winner:"), "{printed}");
        // The remediation line is part of the classification JSON; only the npx home directory
        // may appear, inside it.
        let checked = match &planted.home {
            Some(home) => printed.replace(
                &format!("/home/{home}/.npm/_npx/"),
                "/home/<home>/.npm/_npx/",
            ),
            None => printed.clone(),
        };
        assert!(
            leaked(&planted.secrets, &checked).is_none(),
            "{} / {context}: explain printed a secret:\n{printed}",
            planted.shape
        );
    }
    std::fs::remove_dir_all(&directory).ok();
}

// Issue 10, item 16: the npx remediation is captured from the raw text; it must be exactly one
// file-system path, never a URL or a token that precedes the path on the line.
#[test]
fn npx_remediation_is_exactly_one_clean_path() {
    let token = "ghp_Zq9xW2vB7nK4mP3rT6yU8aS1dF5gH0jL2kQw";
    let evidence = Evidence::new().with_stderr(format!(
            "npm error code ENOTEMPTY: fetch https://registry.example/ with npm_token={token} failed; rename /home/alice/.npm/_npx/0123abcd"
        ));
    let classification = BUNDLE.classify(&evidence);
    assert_eq!(classification.rule, "npm.enotempty.npx.v1");
    assert_eq!(
        classification.remediation.as_deref(),
        Some("/home/alice/.npm/_npx/0123abcd")
    );
    assert!(!classification.excerpt.contains("Zq9xW2vB"));
    // The reference's pinned case keeps its home directory.
    let pinned = Evidence::new().with_stderr("npm error code ENOTEMPTY\nnpm error syscall rename\nnpm error path /Users/cfl/.npm/_npx/d820eb7d96bc2600/node_modules/@anthropic-ai/claude-agent-sdk-darwin-arm64\nnpm error errno -66".to_owned());
    assert_eq!(
        BUNDLE.classify(&pinned).remediation.as_deref(),
        Some("/Users/cfl/.npm/_npx/d820eb7d96bc2600")
    );
    // A path that itself holds a credential shape is never reported: the rule does not fire.
    let shaped = Evidence::new().with_stderr(format!(
        "npm error code ENOTEMPTY\nnpm error path /home/{token}/.npm/_npx/0123abcd/x"
    ));
    let classification = BUNDLE.classify(&shaped);
    assert_ne!(classification.rule, "npm.enotempty.npx.v1");
    assert_eq!(classification.remediation, None);
    // Every remediation is one path of path characters.
    for text in [
        "npm error code ENOTEMPTY rename '/home/a b/.npm/_npx/0a' x /home/b/.npm/_npx/0b",
        "npm error code ENOTEMPTY see https://x.example/home/alice/.npm/_npx/0c and (/tmp/h/.npm/_npx/0d)",
        "npm error code ENOTEMPTY path=/srv/../etc/.npm/_npx/0e then \"/opt/h/.npm/_npx/0f\"",
    ] {
        let evidence = Evidence::new().with_stderr(text.to_owned());
        let remediation = BUNDLE.classify(&evidence).remediation.unwrap();
        assert!(
            remediation.starts_with('/')
                && !remediation.contains(char::is_whitespace)
                && !remediation.contains("//")
                && !remediation.split('/').any(|part| part == "..")
                && remediation.ends_with(|c: char| c.is_ascii_hexdigit()),
            "{text} → {remediation}"
        );
    }
}

// Items 17–21 through the whole classifier: the excerpt of each is clean.
#[test]
fn each_leak_of_issue_10_is_closed_in_the_excerpt() {
    let cases = [
        // 17: a Windows path after a URL; doubled backslashes.
        (
            r"failed, see https://example.com then C:\Users\alice\AppData\Local\x.log",
            "alice",
        ),
        (r#"{"path":"C:\\Users\\alice\\AppData"}"#, "alice"),
        // 18: assignments inside escaped JSON.
        (
            r#"request: "{\"password\": \"hunter2hunter2\", \"api_key\":\"Zq9xW2vB7nK4\"}""#,
            "hunter2hunter2",
        ),
        (
            r#"request: "{\"password\": \"hunter2hunter2\", \"api_key\":\"Zq9xW2vB7nK4\"}""#,
            "Zq9xW2vB7nK4",
        ),
        // 19: a secret glued to a URL.
        (
            "https://api.example.com/v1;--api-key Zq9xW2vB7nK4",
            "Zq9xW2vB7nK4",
        ),
        (
            r#"https://api.example.com/v1,"password": "Zq9xW2vB7nK4""#,
            "Zq9xW2vB7nK4",
        ),
        (
            "https://api.example.com/v1;Bearer Zq9xW2vB7nK4mP3rT6yU8",
            "Zq9xW2vB7nK4mP3rT6yU8",
        ),
        // 20: a JSON authorization key with a short credential; `sk-` inside a JWT.
        (r#"{"Authorization": "Basic dXNlcjpwYXNz"}"#, "dXNlcjpwYXNz"),
        (
            "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.Qx7aBcsk-abcdefghijklmnop",
            "Qx7aBcsk",
        ),
        // 21: new shapes.
        ("aws AKIAIOSFODNN7EXAMPLE denied", "IOSFODNN7"),
        ("mail ops.alice@corp-example.com", "ops.alice"),
        ("eyJhbGciOiJub25lIn0.e30.c2ln", "bGciOiJub25lIn0"),
        ("mysql passwd=Zq9xW2vB7nK4 pwd=Zq9xW2vB7nK5", "Zq9xW2vB7nK"),
        (
            "run --password Zq9xW2vB7nK4 --token Zq9xW2vB7nK5",
            "Zq9xW2vB7nK",
        ),
    ];
    for (text, secret) in cases {
        let evidence = Evidence::new()
            .with_phase(faultline_runtime::Phase::Streaming)
            .with_stderr(text.to_owned());
        let classification = BUNDLE.classify(&evidence);
        let json = serde_json::to_string(&classification).unwrap();
        assert!(!json.contains(secret), "{text} → {json}");
    }
}
