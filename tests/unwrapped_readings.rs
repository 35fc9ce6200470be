//! Text that falls to the fallback as given is read again without the wrapping a logger, a
//! quoting user or an HTTP client put around its lines (docs/evidence.md, "Wrapped lines: a
//! second reading"): every real error of `fixtures/classify/` keeps its code under a log
//! prefix, a blockquote marker, `Caused by: `, a component's tag, quotes, an `Error:` label, a
//! trailing request id, inside a structured logger's JSON record, with its JSON body
//! pretty-printed, or with a closing full stop added or taken off (all but a measured few,
//! listed on failure);
//! the cheap gate stays sound on every wrapped text, and a traced classification answers as an
//! untraced one.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stdout,
    reason = "integration tests report failure by panicking; this one also prints its counts"
)]

use faultline_runtime::{Confidence, Evidence, Unwrapping};
use faultline_testkit::{catalogue_bundle, documents, evidence_of};
use serde_json::Value;

/// Codes that mean "nothing recognised": a fixture expecting one says nothing about readings.
const FALLBACK_CODES: &[&str] = &["agent_runtime_error", "unknown_provider_error"];

/// The least share, in per mille, of the errors that must keep their code under each wrapping.
/// Measured when the second reading landed: 999.3 under a log prefix, 994.3 under enclosing
/// quotes (a few rules read the quotes themselves), 998.1 under a request id; 994.2 with a
/// closing full stop added or taken off when the third reading landed (968.9 before).
const LEAST_KEPT_PER_MILLE: usize = 990;

/// Every fixture whose evidence is text (`stderr`) and which expects a code other than the
/// fallback, with its name and that code.
fn real_errors() -> Vec<(String, Value, String)> {
    let mut fixtures = Vec::new();
    for (path, text) in documents("fixtures/classify", "jsonl") {
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            let fixture: Value = serde_json::from_str(line).unwrap();
            let Some(code) = fixture["expect"]["code"].as_str() else {
                continue;
            };
            let evidence = fixture["evidence"].clone();
            if FALLBACK_CODES.contains(&code) || !evidence["stderr"].is_string() {
                continue;
            }
            let name = format!("{path}: {}", fixture["name"].as_str().unwrap_or(""));
            fixtures.push((name, evidence, code.to_owned()));
        }
    }
    fixtures
}

fn wrapped(evidence: &Value, wrap: fn(&str) -> String) -> Evidence {
    let mut evidence = evidence.clone();
    let text = evidence["stderr"].as_str().unwrap().to_owned();
    evidence["stderr"] = Value::String(wrap(&text));
    evidence_of(&evidence)
}

type Wrap = fn(&str) -> String;

const WRAPS: [(&str, Wrap); 16] = [
    ("timestamp and level", |text| {
        format!("2026-03-04T10:11:12.345Z ERROR {text}")
    }),
    ("bracketed level", |text| format!("[ERROR] {text}")),
    ("Python logging", |text| format!("ERROR:root:{text}")),
    ("Error label", |text| format!("Error: {text}")),
    ("blockquote", |text| format!("> {text}")),
    ("error chain's cause", |text| format!("Caused by: {text}")),
    ("component tag", |text| format!("[my-agent] {text}")),
    ("quotes", |text| format!("\"{text}\"")),
    // Copied from an agent's terminal: a status mark, or a box around every line.
    ("Claude Code's tool-call branch", |text| {
        format!("  ⎿  {text}")
    }),
    ("Gemini CLI's cross", |text| format!("✕ {text}")),
    ("box borders", |text| {
        text.split('\n')
            .map(|line| format!("│ {line} │"))
            .collect::<Vec<_>>()
            .join("\n")
    }),
    ("program's name", |text| format!("mytool: {text}")),
    ("request id", |text| {
        format!("{text} (request id: req_011CAbc)")
    }),
    // A structured logger's record: the message escaped inside JSON (the fourth reading).
    ("JSON log record", |text| {
        let message = serde_json::to_string(text).unwrap();
        format!(r#"{{"level":"error","time":"2026-03-04T10:11:12Z","msg":{message}}}"#)
    }),
    // The JSON body pretty-printed, as `JSON.stringify(body, null, 2)` and most reports show
    // it (the sixth reading writes it compactly again).
    ("JSON body pretty-printed", pretty_printed_body),
    // A full stop where the source printed none, or none where it printed one: the third
    // reading takes one off, and rules accept a message's last word at a line's end.
    ("closing full stop added or taken off", |text| {
        text.strip_suffix('.')
            .map_or_else(|| format!("{text}."), str::to_owned)
    }),
];

/// `text` with the first JSON object in it that parses pretty-printed (two-space indents, keys
/// in their order); `text` itself when it holds none.
fn pretty_printed_body(text: &str) -> String {
    for (start, _) in text.match_indices('{') {
        let mut values =
            serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde_json::Value>();
        if let Some(Ok(value)) = values.next() {
            let end = start + values.byte_offset();
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            return format!("{}{pretty}{}", &text[..start], &text[end..]);
        }
    }
    text.to_owned()
}

#[test]
fn wrapped_errors_keep_their_code_and_the_gate_stays_sound() {
    let bundle = catalogue_bundle();
    let fixtures = real_errors();
    assert!(fixtures.len() > 5000, "the fixtures were found");
    for (wrap_name, wrap) in WRAPS {
        let mut considered = 0;
        let mut changed = Vec::new();
        for (nth, (name, evidence, code)) in fixtures.iter().enumerate() {
            let plain = bundle.classify(&evidence_of(evidence));
            if plain.code != *code {
                // `faultline test` reports it; this test is about the wrapping.
                continue;
            }
            considered += 1;
            let wrapped = wrapped(evidence, wrap);
            let read = bundle.classify_at(&wrapped, std::time::SystemTime::UNIX_EPOCH);
            if nth % 8 == 0 {
                // A traced walk reads the readings its own way (every rule, to show them all).
                let (traced, _) =
                    bundle.classify_traced(&wrapped, std::time::SystemTime::UNIX_EPOCH);
                assert_eq!(
                    traced, read,
                    "{name} ({wrap_name}): traced and untraced differ"
                );
            }
            if read.confidence != Confidence::Low {
                assert!(
                    bundle.may_classify(&wrapped),
                    "{name} ({wrap_name}): the gate rejected a text that classifies as `{}`",
                    read.rule
                );
            }
            if read.code != plain.code {
                changed.push(format!("{name}: `{}` became `{}`", plain.rule, read.rule));
            }
        }
        let kept = considered - changed.len();
        println!("{wrap_name}: {kept} of {considered} keep their code");
        assert!(
            kept * 1000 >= considered * LEAST_KEPT_PER_MILLE,
            "{wrap_name}: only {kept} of {considered} keep their code:\n{}",
            changed.join("\n")
        );
    }
}

#[test]
fn a_reading_is_used_only_when_the_text_as_given_falls_to_the_fallback() {
    let bundle = catalogue_bundle();
    // Read as given, a rule above low confidence wins: the reading is never consulted, even
    // though it would be read differently.
    let given = Evidence::new().with_stderr("[ERROR] API Error: 529 overloaded_error");
    assert!(given.unwrapped(Unwrapping::LogWrapping).is_some());
    let (classification, trace) = bundle.classify_traced(&given, std::time::SystemTime::UNIX_EPOCH);
    assert_eq!(classification.code, "provider_overloaded");
    assert_eq!(trace.unwrapped(), None);

    // Only the reading classifies: it answers, and the trace says so.
    let wrapped =
        Evidence::new().with_stderr("2026-03-04T10:11:12Z ERROR Upstream idle timeout exceeded");
    let (classification, trace) =
        bundle.classify_traced(&wrapped, std::time::SystemTime::UNIX_EPOCH);
    assert_eq!(classification.code, "timeout", "{classification:?}");
    assert_eq!(trace.unwrapped(), Some(Unwrapping::LogWrapping));
    assert_eq!(classification.rule, "gateway.upstream_timeout.v1");

    // A terminal's mark comes off alone first, so that what lies behind it is read as printed.
    let drawn = Evidence::new().with_stderr("  ⎿  Upstream idle timeout exceeded");
    let (classification, trace) = bundle.classify_traced(&drawn, std::time::SystemTime::UNIX_EPOCH);
    assert_eq!(classification.rule, "gateway.upstream_timeout.v1");
    assert_eq!(trace.unwrapped(), Some(Unwrapping::TerminalDrawing));
    assert_eq!(classification.excerpt, "Upstream idle timeout exceeded");

    // A full stop its source does not print: the third reading takes it off.
    let stopped = Evidence::new().with_stderr("no healthy upstream.");
    let (classification, trace) =
        bundle.classify_traced(&stopped, std::time::SystemTime::UNIX_EPOCH);
    assert_eq!(classification.rule, "gateway.envoy_upstream.v1");
    assert_eq!(trace.unwrapped(), Some(Unwrapping::LogWrappingAndFullStop));
    assert_eq!(classification.excerpt, "no healthy upstream");

    // A structured logger's record: the fourth reading reads its message.
    let record = Evidence::new().with_stderr(
        r#"{"level":"error","time":"2026-03-04T10:11:12Z","msg":"upstream call failed","error":"Upstream idle timeout exceeded"}"#,
    );
    let (classification, trace) =
        bundle.classify_traced(&record, std::time::SystemTime::UNIX_EPOCH);
    assert_eq!(classification.rule, "gateway.upstream_timeout.v1");
    assert_eq!(trace.unwrapped(), Some(Unwrapping::JsonLogMessage));
    // The excerpt is the reading's text: the record's message and error, unescaped.
    assert_eq!(
        classification.excerpt,
        "upstream call failed\nUpstream idle timeout exceeded"
    );
    assert!(bundle.may_classify(&record));
    // A pretty-printed body whose rule reads it compactly: the sixth reading answers, and the
    // excerpt is the body on one line.
    let pretty = Evidence::new().with_stderr(
        "402 {\n  \"error\": \"Rate limited\",\n  \"reasons\": [\n    \"premium-usage-exceeded\",\n    \"not-enough-credits\"\n  ]\n}",
    );
    let (classification, trace) =
        bundle.classify_traced(&pretty, std::time::SystemTime::UNIX_EPOCH);
    assert_eq!(classification.rule, "letta.banner.out_of_credits.v1");
    assert_eq!(trace.unwrapped(), Some(Unwrapping::CompactJson));
    assert_eq!(
        classification.excerpt,
        r#"402 {"error":"Rate limited","reasons":["premium-usage-exceeded","not-enough-credits"]}"#
    );
    assert!(bundle.may_classify(&pretty));
    // An informational record is not read so.
    let quiet = Evidence::new().with_stderr(
        r#"{"level":"info","time":"2026-03-04T10:11:12Z","msg":"Upstream idle timeout exceeded"}"#,
    );
    assert_eq!(quiet.unwrapped(Unwrapping::JsonLogMessage), None);
    assert_eq!(bundle.classify(&quiet).confidence, Confidence::Low);

    // A line of prose keeps the full stop that ends its last sentence.
    let prose = Evidence::new()
        .with_stderr("The scenario ran. The OpenAI module returned: 429 Too Many Requests.");
    assert_eq!(prose.unwrapped(Unwrapping::LogWrappingAndFullStop), None);
    assert_eq!(bundle.classify(&prose).confidence, Confidence::Low);

    // An informational line keeps its prefix and stays ordinary.
    let info = Evidence::new().with_stderr("2024-12-24 15:53:34 INFO:     connection closed");
    assert_eq!(info.unwrapped(Unwrapping::LogWrapping), None);
    assert_eq!(bundle.classify(&info).confidence, Confidence::Low);
}
