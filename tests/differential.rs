//! The compiled bundle agrees with the reference interpreter on every input: examples,
//! mutations of them, token soups built from the catalogue's own words, random text, and random
//! structured fields, response headers and error bodies (given, or printed into the text for
//! the runtime to lift) built from the catalogue's own header and body guards, and examples
//! under log prefixes, quotes, request ids and JSON log records (which the runtime reads again
//! without). At least
//! 100,000 generated inputs per run. On every one, the cheap gate (`Bundle::may_classify`) is
//! sound: when it rejects, the winner is low-confidence.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::sync::LazyLock;

use faultline_compiler::Compiler;
use faultline_compiler::reference::Reference;
use faultline_runtime::{Body, Bundle, Evidence, Headers, Phase, Source};
use proptest::prelude::*;

use common::FileSystem;

struct Engines {
    bundle: Bundle,
    reference: Reference,
    seeds: Vec<Evidence>,
    words: Vec<String>,
    providers: Vec<String>,
    /// The header names and their guarded values, from every `when header` guard.
    headers: Vec<(String, Vec<String>)>,
    /// The JSON Pointers and their guarded values, from every `when body` guard.
    pointers: Vec<(String, Vec<String>)>,
    /// The JSON Pointers text matchers read (`on body "…"`), and one no rule reads.
    text_pointers: Vec<String>,
    /// The values the examples' bodies hold at those pointers.
    body_texts: Vec<String>,
}

fn engines(root: &str) -> Engines {
    let (loaded, _) = faultline_dsl::load(&common::root().join(root), &FileSystem).unwrap();
    let compilation = Compiler::new().compile(&loaded);
    assert!(!compilation.has_errors(), "{:#?}", compilation.diagnostics);
    let bundle = Bundle::from_bytes(compilation.bundle.as_ref().unwrap()).unwrap();
    let reference = Reference::new(
        &compilation.catalogue,
        compilation.priority.as_ref().unwrap(),
    )
    .unwrap();
    let seeds = compilation
        .catalogue
        .rules
        .iter()
        .flat_map(|rule| rule.examples.iter().chain(&rule.counterexamples))
        .map(|example| example.evidence.clone())
        .collect();
    let mut words: Vec<String> = bundle.prefilter_literals().map(str::to_owned).collect();
    words.extend(
        [
            "API Error:",
            "Error: RetriableError:",
            "529",
            "429",
            "overloaded",
            "Overloaded",
            "\n",
            " ",
            "  ",
            ".",
            ":",
            "https://status.example.com/x?y",
            "/Users/me/.npm/_npx/0a1b/x",
            "/home/dev/p/q",
            "sk-abcdefghijklmnopq",
            "token=abc",
            "ses_123",
            "context canceled",
            "[canceled]",
            "é",
            "\u{212A}",
            "\u{017F}",
            "\u{2003}",
            "’",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd",
            "npm error code ENOTEMPTY",
            "_npx/",
            "No matching version found for ",
            "a@1.2.3",
            "thinking blocks cannot be modified",
            "temporarily unavailable",
            "selected model is at capacity",
        ]
        .map(str::to_owned),
    );
    words.extend(
        [
            "[redacted-id]",
            "[path-redacted]",
            " expired",
            "cannot open ",
            "run_7",
            "/workspace/x/y",
        ]
        .map(str::to_owned),
    );
    let keyed = |body: bool| -> Vec<(String, Vec<String>)> {
        let mut keys: Vec<(String, Vec<String>)> = compilation
            .catalogue
            .rules
            .iter()
            .flat_map(|rule| {
                if body {
                    rule.guards.body.clone()
                } else {
                    rule.guards.headers.clone()
                }
            })
            .map(|guard| (guard.key, guard.values.unwrap_or_default()))
            .collect();
        // Keys no rule guards, and values no guard names.
        keys.push((
            if body { "/error/type" } else { "x-request-id" }.to_owned(),
            vec!["other".to_owned()],
        ));
        keys
    };
    let headers = keyed(false);
    let pointers = keyed(true);
    let mut text_pointers: Vec<String> = compilation
        .catalogue
        .rules
        .iter()
        .flat_map(|rule| rule.matchers.iter().chain(&rule.vetoes))
        .filter_map(|matcher| matcher.pointer.clone())
        .collect();
    text_pointers.push("/error/message".to_owned());
    text_pointers.sort();
    text_pointers.dedup();
    let mut body_texts: Vec<String> = seeds_of(&compilation)
        .filter_map(|evidence| evidence.body.clone())
        .flat_map(|body| {
            text_pointers
                .iter()
                .flat_map(|pointer| body.select(pointer))
                .collect::<Vec<_>>()
        })
        .collect();
    body_texts.push("429".to_owned());
    let mut providers = compilation.catalogue.providers.clone();
    // Evidence may name a provider the catalogue does not declare.
    providers.push("unknown-acp".to_owned());
    Engines {
        bundle,
        reference,
        seeds,
        words,
        providers,
        headers,
        pointers,
        text_pointers,
        body_texts,
    }
}

fn seeds_of(compilation: &faultline_compiler::Compilation) -> impl Iterator<Item = &Evidence> {
    compilation
        .catalogue
        .rules
        .iter()
        .flat_map(|rule| rule.examples.iter().chain(&rule.counterexamples))
        .map(|example| &example.evidence)
}

/// A value for a guarded key: one of its guarded values (in another case, for a header), or
/// another.
fn keyed_value(values: Vec<String>, header: bool) -> impl Strategy<Value = String> {
    let values = if values.is_empty() {
        vec!["x".to_owned()]
    } else {
        values
    };
    (prop::sample::select(values), 0u8..4).prop_map(move |(value, roll)| match roll {
        0 if header => value.to_ascii_uppercase(),
        1 => "other".to_owned(),
        _ => value,
    })
}

/// Response headers built from the catalogue's header guards.
fn headers(engines: &'static Engines) -> impl Strategy<Value = Option<Headers>> {
    let entry = prop::sample::select(engines.headers.clone())
        .prop_flat_map(|(name, values)| (Just(name), keyed_value(values, true)));
    prop::option::weighted(
        0.3,
        prop::collection::vec(entry, 0..4).prop_map(|entries| {
            let mut headers = Headers::new();
            for (name, value) in entries {
                headers.insert(&name, &value);
            }
            headers
        }),
    )
}

/// Sets `value` at `pointer` in `root` (an array of one element for a `*` segment).
fn set_pointer(root: &mut serde_json::Value, pointer: &str, value: &str) {
    use serde_json::Value;
    let Some(segments) = faultline_runtime::parse_pointer(pointer) else {
        return;
    };
    let mut at = root;
    for (index, segment) in segments.iter().enumerate() {
        let fresh = if segments.get(index + 1).is_some_and(|s| s == "*") {
            Value::Array(Vec::new())
        } else {
            Value::Object(serde_json::Map::new())
        };
        at = match at {
            Value::Array(items) if segment == "*" => {
                if items.is_empty() {
                    items.push(fresh);
                }
                &mut items[0]
            }
            Value::Object(map) => map.entry(segment.clone()).or_insert(fresh),
            _ => return,
        };
    }
    // Digits go in as a number, which guards and body views read as its JSON text.
    *at = match value.parse::<u32>() {
        Ok(number) if !value.starts_with('0') => Value::from(number),
        _ => Value::String(value.to_owned()),
    };
}

/// An error body built from the catalogue's body guards, as JSON or text; `true` when it
/// should be printed into the text rather than given as a field (so that the runtime lifts it).
fn body(engines: &'static Engines) -> impl Strategy<Value = Option<(String, bool)>> {
    let entry = prop::sample::select(engines.pointers.clone())
        .prop_flat_map(|(pointer, values)| (Just(pointer), keyed_value(values, false)));
    // Text for the pointers text matchers read: the examples' own values, mutated, or soup.
    let mutated = (
        prop::sample::select(engines.body_texts.clone()),
        prop::collection::vec((any::<prop::sample::Index>(), 0usize..4, "\\PC{0,4}"), 0..3),
    )
        .prop_map(|(text, edits)| common::apply_edits(text, edits));
    let texts = (
        prop::sample::select(engines.text_pointers.clone()),
        prop_oneof![2 => mutated, 1 => text(engines)],
    );
    prop::option::weighted(
        0.3,
        (
            prop::collection::vec(entry, 0..4),
            prop::collection::vec(texts, 0..3),
            any::<bool>(),
            "\\PC{0,8}",
        )
            .prop_map(|(entries, texts, embedded, noise)| {
                let mut root = serde_json::json!({});
                for (pointer, value) in entries.iter().chain(&texts) {
                    set_pointer(&mut root, pointer, value);
                }
                let text = if root.get("error").is_none() && !embedded {
                    noise
                } else {
                    root.to_string()
                };
                (text, embedded)
            }),
    )
}

static CATALOGUE: LazyLock<Engines> = LazyLock::new(|| engines("catalogue/catalogue.rules"));
static CONSTRUCTS: LazyLock<Engines> =
    LazyLock::new(|| engines("fixtures/valid/all-constructs.rules"));
static MARKERS: LazyLock<Engines> =
    LazyLock::new(|| engines("fixtures/valid/redaction-markers.rules"));
/// Rules the prefilter cannot gate: their patterns are searched by DFAs (format 8 searches a
/// pattern that only gated rules read, most of the repository catalogue's, by its regex).
static SCANNED: LazyLock<Engines> =
    LazyLock::new(|| engines("fixtures/valid/scanned-by-dfa.rules"));

fn agree(engines: &Engines, evidence: &Evidence) -> Result<(), TestCaseError> {
    let compiled = engines.bundle.classify(evidence);
    let reference = engines.reference.classify(evidence);
    let reference_rule = reference.as_ref().map(|(rule, _)| rule.as_str());
    prop_assert_eq!(
        Some(compiled.rule.as_str()),
        reference_rule,
        "evidence: {:?}",
        evidence
    );
    // The gate is sound: when it says no rule above low confidence can fire, none wins.
    if !engines.bundle.may_classify(evidence) {
        prop_assert_eq!(
            compiled.confidence,
            faultline_runtime::Confidence::Low,
            "the gate rejected {:?}, which classifies as `{}`",
            evidence,
            compiled.rule
        );
    }
    if let Some((_, Some(captured))) = &reference {
        prop_assert_eq!(
            compiled.remediation.as_ref(),
            Some(captured),
            "remediation differs on {:?}",
            evidence
        );
    }
    Ok(())
}

/// Text from the catalogue's own words, noise and mutations of its examples.
fn text(engines: &'static Engines) -> impl Strategy<Value = String> {
    let words = engines.words.clone();
    let seeds: Vec<String> = engines
        .seeds
        .iter()
        .filter_map(|e| e.stderr.clone())
        .collect();
    // Words in other cases, including the two non-ASCII letters that fold to ASCII.
    let folded = (prop::sample::select(words.clone()), any::<u64>()).prop_map(|(word, bits)| {
        word.chars()
            .enumerate()
            .map(|(i, c)| match (c, bits >> (i % 64) & 1 == 1) {
                ('k', true) => '\u{212A}',
                ('s', true) => '\u{017F}',
                (c, true) => c.to_ascii_uppercase(),
                (c, false) => c,
            })
            .collect::<String>()
    });
    let soup = prop::collection::vec(
        prop_oneof![
            prop::sample::select(words),
            folded,
            "[a-z0-9 ]{0,6}",
            "\\PC{0,3}"
        ],
        0..10,
    )
    .prop_map(|parts| parts.concat());
    let mutated = (
        prop::sample::select(seeds.clone()),
        prop::collection::vec((any::<prop::sample::Index>(), 0usize..4, "\\PC{0,4}"), 0..4),
    )
        .prop_map(|(text, edits)| common::apply_edits(text, edits));
    // Examples under the wrapping a logger or a quoting user puts around a line, which the
    // runtime's readings take off (`Evidence::unwrapped`), and near misses of it.
    let wrapped = (
        prop::sample::select(seeds),
        prop::sample::select(WRAPPINGS.to_vec()),
        any::<bool>(),
    )
        .prop_map(|(text, (before, after), every_line)| {
            if every_line {
                text.split('\n')
                    .map(|line| format!("{before}{line}{after}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            } else {
                format!("{before}{text}{after}")
            }
        });
    prop_oneof![3 => mutated, 3 => soup, 2 => wrapped, 1 => "\\PC{0,40}"]
}

/// What a wrapped line is given before and after it: log prefixes of every kind the readings
/// take off, quotes, request ids, closing full stops, and some they leave on.
const WRAPPINGS: &[(&str, &str)] = &[
    ("2026-03-04T10:11:12.345Z ERROR ", ""),
    ("[2026-03-04 10:11:12] [error] ", ""),
    ("[ERROR] ", ""),
    ("ERROR:root:", ""),
    ("2024-05-01 12:00:00.123 | ERROR    | app.llm:ask:88 - ", ""),
    ("2025-09-03T10:00:00Z ERROR codex_core::client: ", ""),
    ("Error: ", ""),
    ("\"", "\""),
    ("'", "'"),
    ("", " (request id: req_011CAbc)"),
    ("[W] ", " [trace_id=8f1e]"),
    ("2024-12-24 15:53:34 INFO:     ", ""),
    ("    \"", " \""),
    ("`", "`"),
    ("", "."),
    ("[ERROR] \"", ".\"."),
    ("It failed. ", "."),
    ("", "..."),
    ("> ", ""),
    ("> Caused by: ", ""),
    ("- ", ""),
    ("[my-agent] ", ""),
    ("[Bug] ", ""),
    // A structured logger's record (a text without quotes or line breaks stays valid JSON).
    ("{\"level\":\"error\",\"msg\":\"", "\"}"),
    (
        "{\"time\":\"2026-03-04T10:11:12Z\",\"log\":\"",
        "\\n\",\"stream\":\"stderr\"}",
    ),
];

fn evidence(engines: &'static Engines) -> impl Strategy<Value = Evidence> {
    let phases = prop::option::of(prop::sample::select(Phase::ALL.to_vec()));
    let providers = prop::option::of(prop::sample::select(engines.providers.clone()));
    let sources = prop::option::of(prop::sample::select(Source::ALL.to_vec()));
    let statuses = prop::option::weighted(
        0.2,
        prop::sample::select(vec![
            400u16, 401, 402, 403, 418, 429, 500, 502, 503, 504, 529,
        ]),
    );
    let exits = prop::option::weighted(0.2, prop::sample::select(vec![0, 1, 2, 127]));
    let spec = prop::option::weighted(
        0.3,
        prop::sample::select(vec![
            "a@1.2.3".to_owned(),
            "@kandev/agent@1.2.3".to_owned(),
            "pkg@1.0.0".to_owned(),
        ]),
    );
    (
        phases,
        providers,
        sources,
        statuses,
        exits,
        prop::option::weighted(0.95, text(engines)),
        prop::option::weighted(0.3, text(engines)),
        spec,
        (headers(engines), body(engines)),
    )
        .prop_map(
            |(
                phase,
                provider_id,
                source,
                http_status,
                exit_code,
                stderr,
                stdout,
                managed_runtime_package_spec,
                (headers, body),
            )| {
                let mut built = Evidence::new();
                built.phase = phase;
                built.provider_id = provider_id;
                built.source = source;
                built.http_status = http_status;
                built.exit_code = exit_code;
                built.stderr = stderr;
                built.stdout = stdout;
                built.managed_runtime_package_spec = managed_runtime_package_spec;
                built.headers = headers;
                match body {
                    // A body printed at the end of the text, as agents print them.
                    Some((json, true)) => {
                        let text = built.stderr.take().unwrap_or_default();
                        built.stderr = Some(format!("{text}\nAPI Error: 429 {json}"));
                    }
                    Some((text, false)) => built.body = Some(Body::from_text(&text)),
                    None => {}
                }
                built
            },
        )
}

#[test]
fn every_example_agrees() {
    for engines in [&*CATALOGUE, &*CONSTRUCTS, &*MARKERS, &*SCANNED] {
        for seed in &engines.seeds {
            agree(engines, seed).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_repository_catalogue_agrees_with_the_reference(evidence in evidence(&CATALOGUE)) {
        agree(&CATALOGUE, &evidence)?;
    }

    #[test]
    fn every_construct_agrees_with_the_reference(evidence in evidence(&CONSTRUCTS)) {
        agree(&CONSTRUCTS, &evidence)?;
    }

    #[test]
    fn rules_on_redaction_markers_agree_with_the_reference(evidence in evidence(&MARKERS)) {
        agree(&MARKERS, &evidence)?;
    }

    #[test]
    fn rules_searched_by_dfas_agree_with_the_reference(evidence in evidence(&SCANNED)) {
        agree(&SCANNED, &evidence)?;
    }
}

#[test]
fn generated_inputs_reach_text_rules() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = evidence(&CATALOGUE);
    let mut winners = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..2000 {
        let evidence = strategy.new_tree(&mut runner).unwrap().current();
        *winners
            .entry(CATALOGUE.bundle.classify(&evidence).rule)
            .or_default() += 1;
    }
    let text_rules = winners.keys().filter(|rule| rule.ends_with(".v1")).count();
    assert!(
        text_rules >= 4,
        "generated inputs reach too few text rules: {winners:?}"
    );
}
