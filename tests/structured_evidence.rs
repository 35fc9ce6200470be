//! Structured evidence (issue 12): response headers and error bodies as inputs.
//!
//! - `classify` accepts `headers` and `body`; a malformed or oversized body is never an error.
//! - Property: no header value or body string of a credential shape, nor the value of a header
//!   or body key that names a secret, reaches any output field (the classification, the trace's
//!   timing steps) or the ingested evidence itself (what a log of the input would write).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use common::classify_stdin;

use std::sync::LazyLock;

use faultline_runtime::{Body, Bundle, Evidence, parse_instant};
use proptest::prelude::*;
use serde_json::{Value, json};

static BUNDLE: LazyLock<Bundle> = LazyLock::new(common::catalogue_bundle);

/// The clock every classification and explanation here runs at.
const NOW: &str = "2026-09-01T00:00:00Z";

/// Every answer line of a `faultline classify` run, as JSON.
fn answers(output: &std::process::Output) -> Vec<Value> {
    common::stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Writes `text` as the root file of a catalogue in a fresh scratch directory named `name`;
/// returns the directory, as the CLI's `--catalogue` takes it.
fn scratch_catalogue(name: &str, text: &str) -> String {
    let directory = common::scratch(name);
    std::fs::write(directory.join("catalogue.rules"), text).unwrap();
    directory.to_str().unwrap().to_owned()
}

/// What `faultline explain` prints about one evidence line, classified by `catalogue` at
/// [`NOW`].
fn explain(catalogue: &str, line: &str) -> String {
    let output = common::faultline(&["explain", "--catalogue", catalogue, "--now", NOW, line]);
    common::stdout(&output)
}

/// `source` formatted, after checking that formatting it again changes nothing.
fn formatted_canonically(source: &str) -> String {
    let format = |text: &str| {
        faultline_dsl::format(&faultline_dsl::SourceFile::new("x.rules", text.to_owned())).unwrap()
    };
    let formatted = format(source);
    assert_eq!(format(&formatted), formatted);
    formatted
}

#[test]
fn classify_accepts_headers_and_a_body_and_never_fails_a_line_for_a_body() {
    let input = [
        r#"{"http_status":429,"headers":{"Retry-After":"30","x-should-retry":"true"},"body":{"error":{"type":"rate_limit_error"}}}"#,
        r#"{"http_status":429,"body":"{\"error\":{\"code\":\"insufficient_quota\"}}"}"#,
        r#"{"http_status":500,"body":"<html>502 Bad Gateway</html>"}"#,
        r#"{"http_status":500,"body":"{\"error\": truncated"}"#,
        r#"{"http_status":429,"headers":["retry-after: 30"]}"#,
    ]
    .join("\n");
    let output = classify_stdin(&["--now", NOW], &format!("{input}\n"));
    let answers = answers(&output);
    assert_eq!(answers.len(), 5);
    assert_eq!(answers[0]["rule"], "anthropic.type.rate_limit_error.v1");
    assert_eq!(answers[0]["reset_hint"], "2026-09-01T00:00:30Z");
    assert_eq!(answers[1]["rule"], "openai.code.insufficient_quota.v1");
    assert_eq!(answers[2]["rule"], "http.500");
    assert_eq!(answers[3]["rule"], "http.500");
    // Headers that are not an object are the one structured-evidence error, for that line.
    assert_eq!(answers[4]["error"]["field"], "headers");
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn explain_accepts_headers_and_a_body() {
    let line = r#"{"http_status":529,"headers":{"x-should-retry":"true"},"body":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}"#;
    let output = common::faultline(&["explain", "--now", NOW, line]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

/// A credential of some shape, and the part of it that must never be seen again.
fn credential() -> impl Strategy<Value = (String, String)> {
    let keyed = |prefix: &'static str, body: &'static str| {
        proptest::string::string_regex(body)
            .unwrap()
            .prop_map(move |rest| (format!("{prefix}{rest}"), rest))
    };
    prop_oneof![
        keyed("sk-", "[A-Za-z0-9]{20,40}"),
        keyed("sk-proj-", "[A-Za-z0-9_-]{40,60}"),
        keyed("ghp_", "[A-Za-z0-9]{36}"),
        keyed("github_pat_", "[A-Za-z0-9_]{60}"),
        keyed("AKIA", "[A-Z0-9]{16}"),
        keyed("Bearer ", "[A-Za-z0-9._-]{24,48}"),
        keyed(
            "eyJ",
            "[A-Za-z0-9_-]{8,30}\\.[A-Za-z0-9_-]{8,60}\\.[A-Za-z0-9_-]{8,40}"
        ),
    ]
}

/// A plain value (no credential shape) that a secret-named key holds.
fn secret_value() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z][a-z0-9]{11,20}").unwrap()
}

const BENIGN_HEADERS: &[&str] = &[
    "retry-after",
    "x-request-id",
    "x-debug",
    "www-authenticate",
    "x-ratelimit-reset-tokens",
];
const SECRET_NAMES: &[&str] = &[
    "Authorization",
    "proxy-authorization",
    "Cookie",
    "set-cookie",
    "x-api-key",
    "x-goog-api-key",
    "x-amz-security-token",
    "api_key",
    "password",
    "access_token",
    "client_secret",
];
const CONTEXTS: &[&str] = &[
    "{}",
    "Incorrect API key provided: {}.",
    "key={}",
    "\"{}\"",
    "{} is invalid\nsee docs",
];

/// Every 8-byte window of `secret` found in `output`.
fn leaked(secret: &str, output: &str) -> Option<String> {
    (0..=secret.len().saturating_sub(8))
        .filter_map(|i| secret.get(i..i + 8))
        .find(|window| output.contains(window))
        .map(str::to_owned)
}

fn outputs(evidence: &Evidence) -> String {
    let now = parse_instant(NOW).unwrap();
    let (classification, trace) = BUNDLE.classify_traced(evidence, now);
    let mut text = serde_json::to_string(&classification).unwrap();
    for step in trace.timing() {
        text.push_str(&format!("\n{}: {:?}", step.source, step.outcome));
    }
    text.push('\n');
    text.push_str(&serde_json::to_string(evidence).unwrap());
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_credential_in_headers_or_a_body_reaches_an_output(
        (secret, hidden) in credential(),
        plain in secret_value(),
        benign in prop::sample::select(BENIGN_HEADERS),
        secret_name in prop::sample::select(SECRET_NAMES),
        context in prop::sample::select(CONTEXTS),
        status in prop::sample::select(&[429u16, 401, 500, 529][..]),
        body_as_text in any::<bool>(),
    ) {
        let shaped = context.replace("{}", &secret);
        let body = json!({
            "error": {
                "type": "rate_limit_error",
                "message": shaped,
                secret_name: plain,
                "details": [{"reason": secret, "metadata": {secret.clone(): "x"}}],
            }
        });
        let line = json!({
            "http_status": status,
            "headers": {
                benign: shaped,
                secret_name: plain,
                "x-trace": [secret.clone(), "ok"],
            },
            "body": if body_as_text { Value::from(body.to_string()) } else { body },
        });
        let evidence: Evidence = serde_json::from_value(line).unwrap();
        let text = outputs(&evidence);
        for needle in [&hidden, &plain] {
            if let Some(window) = leaked(needle, &text) {
                prop_assert!(false, "`{}` of `{}` in {}", window, needle, text);
            }
        }
        // The same through the library's own constructors.
        let built = Evidence::new()
            .with_http_status(status)
            .with_header(benign, &shaped)
            .with_header(secret_name, &plain)
            .with_body(Body::from_text(&format!("{{\"error\":{{\"message\":{}}}}}", Value::from(shaped.clone()))));
        let text = outputs(&built);
        if let Some(window) = leaked(&hidden, &text) {
            prop_assert!(false, "`{}` in {}", window, text);
        }
    }

    /// A malformed or truncated body is kept as text, with its credentials removed.
    #[test]
    fn a_text_body_loses_its_credentials((secret, hidden) in credential(), cut in 0usize..8) {
        let text = format!("{{\"error\":{{\"message\":\"{secret} more\"}}}}");
        let truncated = &text[..text.len().saturating_sub(cut + 1)];
        let evidence: Evidence = serde_json::from_value(json!({"body": truncated})).unwrap();
        let out = outputs(&evidence);
        prop_assert!(leaked(&hidden, &out).is_none(), "{}", out);
    }
}

/// A catalogue named `name` of one 429 rule that reads `timing` (the inside of its `timing
/// [...]` list), and the fallback.
fn catalogue_of_429(name: &str, timing: &str) -> String {
    format!(
        r#"
catalogue "{name}" version "{name}.v1"
tiers [structured, fallback]

code rate_limited {{
    class transient
    flags [auto_retryable, fallback_allowed]
    scope account
}}

code agent_runtime_error {{
    class unclassified
    flags []
    scope session
}}

rule http.429 {{
    code rate_limited
    confidence high
    tier structured
    when http_status = 429
    timing [{timing}]
}}

rule fallback.v1 {{
    code agent_runtime_error
    confidence low
    tier fallback
}}
"#
    )
}

#[test]
fn structured_timing_comes_before_text_and_explain_lists_every_source() {
    // The 429 rule reads every structured source, then the text.
    let catalogue = &scratch_catalogue(
        "structured-timing",
        &catalogue_of_429(
            "structured-timing",
            "try_again_at, retry_after_ms, retry_after, ratelimit_reset, body_reset",
        ),
    );
    // OpenAI: `retry-after-ms` wins over the text and over a stale `retry-after`.
    let line = r#"{"http_status":429,"headers":{"retry-after-ms":"1500","retry-after":"soon","x-ratelimit-reset-tokens":"6m0s"},"stderr":"try again at Sep 27th, 2026 3:09 AM UTC","body":{"error":{"code":"rate_limit_exceeded"}}}"#;
    let output = classify_stdin(
        &["--catalogue", catalogue, "--now", NOW],
        &format!("{line}\n"),
    );
    let answer: Value = serde_json::from_str(common::stdout(&output).trim()).unwrap();
    assert_eq!(answer["reset_hint"], "2026-09-01T00:00:01.5Z");
    assert_eq!(answer["retry_after"], 2);
    let report = explain(catalogue, line);
    assert!(
        report.contains("header extractor `retry_after_ms`: 2026-09-01T00:00:01.5Z, accepted"),
        "{report}"
    );
    // Google: RetryInfo in a body lifted from the text, when no header says anything.
    let line = r#"{"http_status":429,"stderr":"[API Error: 429] {\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"34s\"}]}}"}"#;
    let report = explain(catalogue, line);
    assert!(
        report.contains("header extractor `retry_after`: nothing of that shape"),
        "{report}"
    );
    assert!(
        report.contains("body extractor `body_reset`: 2026-09-01T00:00:34Z, accepted"),
        "{report}"
    );
    assert!(
        report.contains("reset_hint 2026-09-01T00:00:34Z, retry_after 34 s"),
        "{report}"
    );
    // An unreadable header is listed with why, and the text is consulted after it.
    let line = r#"{"http_status":429,"headers":{"retry-after":"soon"},"stderr":"try again at Sep 27th, 2026 3:09 AM UTC"}"#;
    let report = explain(catalogue, line);
    assert!(
        report.contains("header extractor `retry_after`: found, but names no instant: `retry-after`: `soon` is neither delta-seconds nor an HTTP-date"),
        "{report}"
    );
    assert!(
        report.contains("text extractor `try_again_at`: 2026-09-27T03:09:00Z, accepted"),
        "{report}"
    );
}

fn classify_line(line: &str) -> faultline_runtime::Classification {
    let evidence: Evidence = serde_json::from_str(line).unwrap();
    BUNDLE.classify_at(&evidence, parse_instant(NOW).unwrap())
}

#[test]
fn the_catalogue_reads_structure_before_the_status() {
    // Google 429: the quota id decides, per day → quota, per minute → rate limit.
    let per_day = classify_line(
        r#"{"http_status":429,"body":{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}}"#,
    );
    assert_eq!(
        (per_day.code.as_str(), per_day.rule.as_str()),
        ("quota_limited", "google.quota_id.per_day.v1")
    );
    let per_minute = classify_line(
        r#"{"http_status":429,"body":{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34s"}]}}}"#,
    );
    assert_eq!(per_minute.code, "rate_limited");
    assert_eq!(per_minute.retry_after, Some(34));
    // OpenAI 429: `insufficient_quota` → quota; `rate_limit_exceeded` with `retry-after-ms`.
    let quota = classify_line(
        r#"{"http_status":429,"body":{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}}"#,
    );
    assert_eq!(quota.code, "quota_limited");
    let rate = classify_line(
        r#"{"http_status":429,"headers":{"retry-after-ms":"2500"},"body":{"error":{"type":"tokens","code":"rate_limit_exceeded"}}}"#,
    );
    assert_eq!(
        (rate.code.as_str(), rate.retry_after),
        ("rate_limited", Some(3))
    );
    // Anthropic 529 body; `x-should-retry: false` on a bare 429.
    let overloaded = classify_line(
        r#"{"http_status":529,"body":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}}"#,
    );
    assert_eq!(overloaded.rule, "anthropic.type.overloaded_error.v1");
    let no_retry = classify_line(r#"{"http_status":429,"headers":{"x-should-retry":"false"}}"#);
    assert_eq!(
        (no_retry.code.as_str(), no_retry.rule.as_str()),
        ("quota_limited", "http.429.no_retry.v1")
    );
    // Without structure, the status mapping keeps its id; a body printed into the text is not
    // read by guards.
    let text_only = classify_line(
        r#"{"http_status":429,"stderr":"API Error: 429 {\"error\":{\"code\":\"insufficient_quota\"}}"}"#,
    );
    assert_eq!(text_only.rule, "http.429");
}

#[test]
fn keyed_guards_parse_and_format_canonically() {
    let source = "catalogue \"x\" version \"x.v1\"\ntiers [main]\n\nrule a.v1 {\n    code c\n    confidence high\n    tier main\n    when header   \"x-should-retry\" =   \"false\"\n    when body r\"/error/details/*/reason\"   in [\"A\",  \"B\"]\n    when body \"/error/code\" present\n}\n";
    let formatted = formatted_canonically(source);
    assert!(
        formatted.contains("    when header \"x-should-retry\" = \"false\"\n"),
        "{formatted}"
    );
    assert!(
        formatted.contains("    when body r\"/error/details/*/reason\" in [\"A\", \"B\"]\n"),
        "{formatted}"
    );
    assert!(
        formatted.contains("    when body \"/error/code\" present\n"),
        "{formatted}"
    );
}

/// A catalogue of text matchers on the error body: a number read as its JSON text, a `*`
/// pointer read element by element, and an object that is never read.
const BODY_VIEW_CATALOGUE: &str = r##"
catalogue "body-views" version "body-views.v1"
tiers [structured, fallback]

code quota_limited {
    class hard
    flags [user_action]
    scope account
}

code rate_limited {
    class transient
    flags [auto_retryable, fallback_allowed]
    scope account
}

code agent_runtime_error {
    class unclassified
    flags []
    scope session
}

/// Two matchers on one `*` pointer: each may be met by an element of its own.
rule body.details.quota.v1 {
    code quota_limited
    confidence high
    tier structured
    rank 0
    match contains "quota" on body "/error/details/*/msg"
    match contains "per day" on body "/error/details/*/msg"
    unless contains "per minute" on body "/error/details/*/msg"
    example { body: r#"{"error":{"details":[{"msg":"quota"},{"msg":"per day"}]}}"# }
    counterexample { body: r#"{"error":{"details":[{"msg":"quota per day"},{"msg":"per minute"}]}}"# }
}

/// A number is read as its JSON text.
rule body.code.number.v1 {
    code rate_limited
    confidence high
    tier structured
    rank 1
    match whole "429" on body "/error/code"
    example { body: r#"{"error":{"code":429}}"# }
    counterexample { body: r#"{"error":{"code":4290}}"# }
}

/// An object is not a value: this matcher reads nothing from `{"error":{…}}`.
rule body.object.v1 {
    code rate_limited
    confidence high
    tier structured
    rank 2
    match regex r"code" on body "/error"
    example { body: r#"{"error":"code"}"# }
    counterexample { body: r#"{"error":{"code":1}}"# }
}

rule fallback.v1 {
    code agent_runtime_error
    confidence low
    tier fallback
}
"##;

#[test]
fn text_matchers_read_the_body_at_a_pointer() {
    let catalogue = &scratch_catalogue("body-views", BODY_VIEW_CATALOGUE);
    let check = common::faultline(&["check", catalogue, "--deny-warnings"]);
    assert_eq!(check.status.code(), Some(0), "{check:?}");
    let lines = [
        r#"{"body":{"error":{"details":[{"msg":"quota"},{"msg":"per day"}]}}}"#,
        r#"{"body":{"error":{"details":[{"msg":"quota"},{"msg":"per day"},{"msg":"per minute"}]}}}"#,
        r#"{"body":{"error":{"code":429}}}"#,
        r#"{"body":{"error":{"code":"429"}}}"#,
        r#"{"body":{"error":{"code":{"value":429}}}}"#,
        r#"{"stderr":"quota per day 429","body":"quota per day"}"#,
    ];
    let output = classify_stdin(&["--catalogue", catalogue], &(lines.join("\n") + "\n"));
    let rules: Vec<String> = answers(&output)
        .iter()
        .map(|answer| answer["rule"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        rules,
        [
            "body.details.quota.v1",
            // A veto on a `*` pointer holds when some element matches it.
            "fallback.v1",
            "body.code.number.v1",
            "body.code.number.v1",
            // An object at the pointer is not read; neither is the text nor a text body.
            "fallback.v1",
            "fallback.v1",
        ]
    );
}

#[test]
fn a_body_text_rule_of_the_catalogue_reports_the_body_value_redacted() {
    let groq = classify_line(
        r#"{"http_status":429,"stderr":"upstream said so","body":{"error":{"code":"rate_limit_exceeded","type":"tokens","message":"Rate limit reached for model `llama-3.3-70b-versatile` on tokens per day (TPD) for alice@example.com in /home/alice/work. Please try again in 9m38.016s."}}}"#,
    );
    assert_eq!(
        (groq.code.as_str(), groq.rule.as_str()),
        ("quota_limited", "openai.message.per_day.v1")
    );
    assert!(
        groq.excerpt.contains("on tokens per day (TPD)"),
        "{}",
        groq.excerpt
    );
    assert!(!groq.excerpt.contains("alice"), "{}", groq.excerpt);
    assert!(
        !groq.excerpt.contains("upstream said so"),
        "{}",
        groq.excerpt
    );
    // Per minute stays a rate limit.
    let tpm = classify_line(
        r#"{"http_status":429,"body":{"error":{"code":"rate_limit_exceeded","message":"Rate limit reached on tokens per minute (TPM)."}}}"#,
    );
    assert_eq!(tpm.rule, "openai.code.rate_limit_exceeded.v1");
    // A body printed into the text is never read by a body matcher.
    let printed = classify_line(
        r#"{"http_status":429,"stderr":"API Error: 429 {\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"tokens per day\"}}"}"#,
    );
    assert_ne!(printed.rule, "openai.message.per_day.v1");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A body message a body text rule matches (and reports as its excerpt) never carries a
    /// credential into an output.
    #[test]
    fn no_credential_in_a_matched_body_message_reaches_an_output(
        (secret, hidden) in credential(),
        context in prop::sample::select(CONTEXTS),
    ) {
        let message = format!("Rate limit reached on tokens per day (TPD). {}", context.replace("{}", &secret));
        let line = json!({
            "http_status": 429,
            "body": {"error": {"code": "rate_limit_exceeded", "message": message}},
        });
        let evidence: Evidence = serde_json::from_value(line).unwrap();
        let text = outputs(&evidence);
        prop_assert!(text.contains("openai.message.per_day.v1"), "{}", text);
        if let Some(window) = leaked(&hidden, &text) {
            prop_assert!(false, "`{}` of `{}` in {}", window, hidden, text);
        }
    }
}

#[test]
fn body_views_parse_and_format_canonically() {
    let source = "catalogue \"x\" version \"x.v1\"\ntiers [main]\n\nrule a.v1 {\n    code c\n    confidence high\n    tier main\n    match regex r\"quota\"   on   body   r\"/error/details/*/message\"\n    unless contains \"minute\" ignore_case on body \"/error/message\"\n}\n";
    let formatted = formatted_canonically(source);
    assert!(
        formatted.contains("    match regex r\"quota\" on body r\"/error/details/*/message\"\n"),
        "{formatted}"
    );
    assert!(
        formatted
            .contains("    unless contains \"minute\" ignore_case on body \"/error/message\"\n"),
        "{formatted}"
    );
}

#[test]
fn explain_lists_body_reset_at_a_named_pointer_and_try_again_in() {
    // The 429 rule names a body pointer for `body_reset`, then reads text delays.
    let catalogue = &scratch_catalogue(
        "named-pointer",
        &catalogue_of_429(
            "named-pointer",
            r#"try_again_in, body_reset "/error/limit/resets_at""#,
        ),
    );
    // The named pointer is read first (structured before text), and accepted.
    let report = explain(
        catalogue,
        r#"{"http_status":429,"stderr":"Please try again in 2.746s.","body":{"error":{"limit":{"resets_at":"2026-09-01T01:00:00Z"}}}}"#,
    );
    assert!(
        report.contains("body extractor `body_reset`: 2026-09-01T01:00:00Z, accepted"),
        "{report}"
    );
    // A stale instant there is rejected with why, and the text's delay is taken instead.
    let report = explain(
        catalogue,
        r#"{"http_status":429,"stderr":"Please try again in 2.746s.","body":{"error":{"limit":{"resets_at":"2026-08-01T00:00:00Z"}}}}"#,
    );
    assert!(report.contains("it is not after now"), "{report}");
    assert!(
        report.contains("text extractor `try_again_in`: 2026-09-01T00:00:02.746Z, accepted"),
        "{report}"
    );
}
