//! The runtime's public API is the product an orchestrator links: no type of another crate in
//! it, the invariants it promises hold, and bundles load into views without the wire model.

#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "integration tests report failure by panicking, and this one reads the crate's own \
              sources to scan its signatures"
)]

use std::path::Path;

use faultline_runtime::{Bundle, Evidence, LoadErrorKind, Phase, parse_instant};

/// Paths and names of other crates' types, which must never appear in a public signature of the
/// runtime.
const THIRD_PARTY: &[&str] = &[
    "regex_automata::",
    "aho_corasick::",
    "jiff::",
    "postcard::",
    "serde_json::",
    "regex::",
    "sha2::",
    "bytemuck::",
    "dense::",
    "Regex",
    "Captures",
    "AhoCorasick",
    "PatternSet",
    "DFA<",
    "Timestamp",
    "TimeZone",
    "DateTime",
    "Offset",
];

/// Every `pub` signature of `source` (functions up to their body, fields, constants, type
/// aliases), one string each; `pub(crate)` and `pub(super)` items are not public.
fn public_signatures(source: &str) -> Vec<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let mut signatures = Vec::new();
    let mut current: Option<String> = None;
    for line in code.lines() {
        let trimmed = line.trim_start();
        if let Some(signature) = current.as_mut() {
            signature.push(' ');
            signature.push_str(trimmed);
        } else if trimmed.starts_with("pub ") && !trimmed.starts_with("pub use") {
            current = Some(trimmed.to_owned());
        }
        if let Some(signature) = &current
            && (signature.contains('{') || signature.ends_with(';') || signature.ends_with(','))
        {
            let head = signature.split('{').next().unwrap_or(signature).to_owned();
            signatures.push(head);
            current = None;
        }
    }
    signatures
}

fn rust_files(directory: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_public_signature_names_a_third_party_type() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut offending = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        for signature in public_signatures(&source) {
            if THIRD_PARTY.iter().any(|name| signature.contains(name)) {
                offending.push(format!("{}: {signature}", file.display()));
            }
        }
    }
    assert!(files.len() > 10, "the scan found the sources");
    assert!(
        offending.is_empty(),
        "third-party types in public signatures:\n{}",
        offending.join("\n")
    );
}

#[test]
fn a_bundle_is_send_and_sync_and_refusals_have_a_kind() {
    fn shared<T: Send + Sync>() {}
    shared::<Bundle>();
    let error = Bundle::from_bytes(b"not a bundle at all").unwrap_err();
    assert_eq!(error.kind(), LoadErrorKind::BadMagic);
    assert_eq!(
        error.to_string(),
        "not a faultline bundle (bad magic bytes)"
    );
    assert_eq!(error.format_version(), None);
    let error = Bundle::from_bytes(b"FLB").unwrap_err();
    assert_eq!(error.kind(), LoadErrorKind::Truncated);
    assert_eq!(
        error.to_string(),
        "the bundle is truncated: 8 bytes needed, 3 present"
    );
}

#[test]
fn parse_instant_errors_name_the_text_and_the_problem() {
    assert!(parse_instant("2026-09-27T15:09:00Z").is_ok());
    let error = parse_instant("tomorrow").unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("`tomorrow` is not an RFC 3339 instant: "),
        "{message}"
    );
}

#[test]
fn evidence_is_built_with_setters() {
    let evidence = Evidence::new()
        .with_phase(Phase::Streaming)
        .with_provider_id("claude-acp")
        .with_http_status(529)
        .with_stderr("API Error: 529 Overloaded");
    assert_eq!(evidence.phase, Some(Phase::Streaming));
    assert_eq!(evidence.provider_id.as_deref(), Some("claude-acp"));
    assert_eq!(evidence.http_status, Some(529));
    assert_eq!(evidence.raw_text(), "API Error: 529 Overloaded");
    assert_eq!(Evidence::new(), Evidence::default());
}
