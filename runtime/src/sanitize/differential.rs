//! The redaction with its trigger prefilter gives byte for byte what the passes gave before it
//! (`reference`, kept unchanged): both tiers, the marks of `diagnostic_marked`, the provider
//! message and `holds_credential`, on generated text mixing prose with every trigger shape and
//! its near misses, on every string literal of the unit tests, and on every string of the
//! classification fixtures and the prose corpus.

use std::path::Path;

use proptest::prelude::*;
use regex::Regex;

use super::reference;
use super::*;

/// The largest character boundary of `text` at or before `at`.
fn boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Checks every entry point against the reference on `text`, with `marks` for the marked one.
fn agree(text: &str, marks: &[usize]) -> Result<(), String> {
    let differs = |what: &str, ours: &dyn std::fmt::Debug, theirs: &dyn std::fmt::Debug| {
        format!("{what} differs on {text:?}:\n  new:       {ours:?}\n  reference: {theirs:?}")
    };
    let (ours, theirs) = (
        credentials_unbounded(text),
        reference::credentials_unbounded(text),
    );
    if ours != theirs {
        return Err(differs("credential tier", &ours, &theirs));
    }
    let (ours, theirs) = (
        diagnostic_unbounded(text),
        reference::diagnostic_unbounded(text),
    );
    if ours != theirs {
        return Err(differs("diagnostic tier", &ours, &theirs));
    }
    let (mut our_marks, mut their_marks) = (marks.to_vec(), marks.to_vec());
    let (ours, theirs) = (
        diagnostic_marked(text, &mut our_marks),
        reference::diagnostic_marked(text, &mut their_marks),
    );
    if (&ours, &our_marks) != (&theirs, &their_marks) {
        return Err(differs(
            "diagnostic_marked",
            &(ours, our_marks),
            &(theirs, their_marks),
        ));
    }
    let (ours, theirs) = (diagnostic(text), reference::diagnostic(text));
    if ours != theirs {
        return Err(differs("cut diagnostic tier", &ours, &theirs));
    }
    let (ours, theirs) = (provider_message(text), reference::provider_message(text));
    if ours != theirs {
        return Err(differs("provider message", &ours, &theirs));
    }
    let (ours, theirs) = (holds_credential(text), reference::holds_credential(text));
    if ours != theirs {
        return Err(differs("holds_credential", &ours, &theirs));
    }
    Ok(())
}

/// Marks at the start, the end and a few boundaries between.
fn some_marks(text: &str) -> Vec<usize> {
    let len = text.len();
    [0, len / 3, len / 2, len.saturating_sub(1), len]
        .into_iter()
        .map(|at| boundary(text, at))
        .collect()
}

/// Every string literal of the unit tests (`sanitize/tests.rs`), raw or with its escapes.
fn unit_test_literals() -> Vec<String> {
    let source = include_str!("tests.rs");
    let literal = Regex::new(r##"(?s)r#"(.*?)"#|r"([^"]*)"|"((?:[^"\\]|\\.)*)""##)
        .unwrap_or_else(|error| unreachable!("constant pattern: {error}"));
    let mut literals = Vec::new();
    for found in literal.captures_iter(source) {
        if let Some(raw) = found.get(1).or_else(|| found.get(2)) {
            literals.push(raw.as_str().to_owned());
        } else if let Some(escaped) = found.get(3) {
            literals.push(unescape(escaped.as_str()));
        }
    }
    literals
}

fn unescape(escaped: &str) -> String {
    let mut out = String::new();
    let mut chars = escaped.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

#[test]
fn the_unit_test_strings_redact_as_before() {
    let literals = unit_test_literals();
    assert!(literals.len() > 150, "found {} literals", literals.len());
    let check = |text: &str| {
        if let Err(report) = agree(text, &some_marks(text)) {
            panic!("{report}");
        }
    };
    for text in &literals {
        check(text);
    }
    // Neighbours glued without a blank, and in both orders.
    for pair in literals.windows(2) {
        if let [a, b] = pair {
            check(&format!("{a}{b}"));
            check(&format!("{b}\r\n{a}"));
        }
    }
}

/// Every string of every line of the JSON-lines files in `dir`, and each line's evidence text
/// (`stderr` and `stdout` joined by a line break, as the text views read it).
#[expect(
    clippy::disallowed_methods,
    reason = "a test of the library reads the repository's fixtures"
)]
fn fixture_strings(dir: &Path) -> Vec<String> {
    fn strings(value: &serde_json::Value, into: &mut Vec<String>) {
        match value {
            serde_json::Value::String(text) => into.push(text.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, into)),
            serde_json::Value::Object(fields) => fields.values().for_each(|v| strings(v, into)),
            _ => {}
        }
    }
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let content = std::fs::read_to_string(&file)
            .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
        for line in content.lines().filter(|line| !line.trim().is_empty()) {
            let value: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("{}: {error}", file.display()));
            strings(&value, &mut out);
            let evidence = value.get("evidence").unwrap_or(&value);
            let field = |name: &str| evidence.get(name).and_then(|v| v.as_str()).unwrap_or("");
            if !field("stderr").is_empty() && !field("stdout").is_empty() {
                out.push(format!("{}\n{}", field("stderr"), field("stdout")));
            }
        }
    }
    out
}

#[test]
fn every_fixture_and_corpus_string_redacts_as_before() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for dir in ["fixtures/classify", "fixtures/corpus"] {
        let texts = fixture_strings(&root.join(dir));
        assert!(texts.len() > 100, "{dir}: only {} strings", texts.len());
        let mut changed = 0;
        for text in &texts {
            if let Err(report) = agree(text, &some_marks(text)) {
                panic!("{dir}: {report}");
            }
            changed += usize::from(diagnostic_view(text, &mut []) != text.as_str());
        }
        // Both kinds, redacted and untouched, were compared.
        assert!(changed > 0 && changed < texts.len(), "{dir}: {changed}");
    }
}

/// Pieces of text: ordinary prose, every trigger shape, near misses of each, Unicode (with
/// the characters that Unicode case folding matches to ASCII letters), and line endings.
fn piece() -> impl Strategy<Value = String> {
    let prose = prop::sample::select(vec![
        "The build passes now. ",
        "Let me check the test suite first",
        "max tokens reached",
        "the tokenizer ",
        "see the docs",
        "API Error: 529 overloaded",
        "src/lib.rs",
        "and/or",
        "a - b -- c",
        "email me",
        "x=1, y: 2",
        "e.g. ",
        ", ",
        ". ",
        " ",
        "\n",
        "\r\n",
        "\t",
    ]);
    let shapes = prop::sample::select(vec![
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.Qx7_aBcDeFgsk-abcdefghijklmnop",
        "eyJ0.e.x",
        "eyJa.b",
        "keyJSON.parse.x",
        "sk-abcdefghijklmnop",
        "sk-abcdefghijk",
        "sk_abcdefghijklmnop",
        "skabcdefghijklmnop",
        "github_pat_11ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnop",
        "github_pat_short",
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "ghp_abcdefghijklmnopqrstuvwxyz012",
        "kandev_pat_abc_123",
        "AKIAIOSFODNN7EXAMPLE",
        "ASIAY34FZKBOKMUTVV7",
        "akiaIOSFODNN7EXAMPLE",
        "Bearer abcdefghijklmnopqrstuvwxyz",
        "bearer abcdefghijklmnopqrs",
        "Bearer",
        "BEARER\n",
        "Authorization: Basic dXNlcjpwYXNz",
        "authorization",
        "AUTHORIZATION:",
        "--api-key=xyz123",
        "--token ",
        "--password \"two words\"",
        "--max-tokens 4096",
        "--",
        "password: hunter2",
        "passwd=Zq9xW2",
        "DB_PWD=\"a b\"",
        "upwds8: value",
        "OLDPWD=/x",
        "max_tokens: 4096",
        "\"api_key\": \"ab\\\"c\"",
        "{\\\"secret\\\": \\\"s3 cr3t\\\"}",
        "'token': 'x'",
        "token=",
        "Secret",
        "https://user:pw@example.com/x",
        "https://status.claude.com/incidents/x?y=1",
        "http://",
        "ftp://a:b@host",
        "://",
        "ses_abc123",
        "wrk_9",
        "run_",
        "xses_1",
        "alice.smith+ci@corp-example.co.uk",
        "pkg@1.0.0-alpha.beta",
        "@",
        "/Users/cfl/.npm/_npx/d8/x",
        "/Users/",
        "/home/dev/project/src/main.rs",
        "/home/",
        "/workspace/repo/a.txt",
        "/",
        "C:\\Users\\me\\file.txt",
        "c://host/x",
        "D:/x",
        "C:\\\\Users\\\\alice",
        ":\\",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ01234",
        "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=",
        "\"",
        "'",
        "\\",
        "=",
        ": ",
        "}",
        ";",
    ]);
    let unicode = prop::sample::select(vec![
        "é",
        "日本語",
        "\u{212A}",
        "\u{17F}",
        "\u{130}",
        "\u{131}",
        "\u{A0}",
        "\u{2028}",
        "ß",
        "\u{1F600}",
    ]);
    prop_oneof![
        4 => prose.prop_map(str::to_owned),
        5 => shapes.prop_map(str::to_owned),
        1 => unicode.prop_map(str::to_owned),
        1 => "[ -~]{0,12}",
        1 => "[A-Za-z0-9+/=_-]{28,36}",
        1 => (
            prop::sample::select(vec!["sk-", "ghp_", "github_pat_", "AKIA", "eyJ", "Bearer ", "ses_", "--token=", "token: "]),
            "[A-Za-z0-9_.-]{8,56}",
        )
            .prop_map(|(marker, value)| format!("{marker}{value}")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn generated_text_redacts_as_before(
        parts in prop::collection::vec(piece(), 0..16),
        at in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let text = parts.concat();
        let mut marks = some_marks(&text);
        marks.extend(at.iter().map(|at| boundary(&text, at.index(text.len() + 1))));
        if let Err(report) = agree(&text, &marks) {
            return Err(TestCaseError::fail(report));
        }
    }

    #[test]
    fn printable_text_redacts_as_before(text in "[ -~\n\r\té\u{212A}\u{17F}]{0,160}") {
        if let Err(report) = agree(&text, &some_marks(&text)) {
            return Err(TestCaseError::fail(report));
        }
    }
}
