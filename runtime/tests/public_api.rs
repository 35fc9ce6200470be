//! The runtime's public API is the product an orchestrator links: the invariants it promises
//! hold, and refusals are typed. (That no type of another crate appears in a public signature is
//! checked on rustdoc's JSON by `.ci/public-api.py`.)

#![allow(
    clippy::unwrap_used,
    reason = "integration tests report failure by panicking"
)]

use faultline_runtime::{Bundle, Evidence, LoadErrorKind, Phase, parse_instant};

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
