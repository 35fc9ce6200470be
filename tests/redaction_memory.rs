//! Redacting one text holds at most one copy of it beside the input (plus the edits of one
//! pass, and a little headroom): an 8 MiB text with secrets of every shape scattered through
//! it, redacted by both tiers, and the text views of it (which redact only its last MiB and
//! the context before it). The peak is measured by a counting global allocator, which is why
//! this test is a binary of its own; it counts a reallocation as a new block beside the old.
//!
//! The redaction before the prefilter (`runtime/src/sanitize/reference.rs`, included here) is
//! measured the same way, to show that the bound tells the two apart: it copied the text once
//! per pass that changed it, holding two copies at a time.

#![allow(
    clippy::print_stderr,
    reason = "the test reports the peaks it measured, for the performance note"
)]

#[path = "../runtime/src/sanitize/reference.rs"]
mod reference;

use faultline_runtime::{TextViews, redact_credentials, redact_diagnostic};
use peak_alloc::PeakAlloc;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

const TEXT_BYTES: usize = 8 << 20;

/// Ordinary log lines, with secrets, ids, addresses, URLs and paths every few hundred KiB:
/// shapes whose replacement is shorter (`sk-***`) and longer (`/home/<redacted>/…`) alike.
fn text() -> String {
    let secrets = [
        "key sk-abcdefghijklmnopqrstuvwx used",
        "Authorization: Bearer Zq9xW2vB7nK4mP3rT6yU8abc",
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.Qx7_aBcDeFg",
        "login --password hunter2hunter2 --verbose",
        "{\"api_key\": \"abc123xyz\", \"x\": 1}",
        "https://user:pw@registry.example.com/a/b?token=x",
        "session ses_abc123 run_9 wrk_1",
        "mail alice.smith+ci@corp-example.co.uk failed",
        "open /home/dev/project/src/main.rs and /Users/cfl/.npm/x",
        r"C:\Users\me\AppData\Local\x.log",
        "blob QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVowMTIzNDU2Nzg5",
    ];
    let line = "   Compiling tokio v1.45.1 (the ordinary build output of an agent's tool call)\n";
    let mut text = String::with_capacity(TEXT_BYTES + 4096);
    let mut next = 0;
    let mut secrets = secrets.iter().cycle();
    while text.len() < TEXT_BYTES {
        text.push_str(line);
        if text.len() / (256 << 10) >= next {
            text.push_str(secrets.next().unwrap_or(&""));
            text.push('\n');
            next += 1;
        }
    }
    text
}

/// The most bytes live at once while `redact` runs, beyond what was live before.
fn peak_extra(redact: impl FnOnce() -> usize) -> usize {
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let kept = redact();
    assert!(kept > 0);
    ALLOCATOR.peak_usage().saturating_sub(before)
}

#[test]
fn one_redaction_holds_one_copy_of_its_text() {
    let text = text();
    // Compile the patterns and the trigger automaton before anything is measured.
    let warm = "sk-abcdefghijklmnop /home/a/b ses_1 a@b.co https://x.y/z";
    let _ = (redact_credentials(warm), redact_diagnostic(warm));
    let _ = reference::diagnostic_unbounded(warm);
    let _ = TextViews::of_text(warm).into_sanitized();

    let size = text.len();
    // One copy, its headroom (1/32) and bounded bookkeeping.
    let bound = size + size / 16 + (256 << 10);
    let diagnostic = peak_extra(|| redact_diagnostic(&text).len());
    let credentials = peak_extra(|| redact_credentials(&text).len());
    let views = peak_extra(|| TextViews::of_text(&text).into_sanitized().len());
    let before = peak_extra(|| reference::diagnostic_unbounded(&text).len());
    eprintln!(
        "peak extra bytes for a {size}-byte text: diagnostic {diagnostic}, credentials \
         {credentials}, text views {views}; the redaction before the prefilter {before}"
    );
    assert!(
        diagnostic < bound,
        "diagnostic tier: {diagnostic} ≥ {bound}"
    );
    assert!(
        credentials < bound,
        "credential tier: {credentials} ≥ {bound}"
    );
    // The views redact the last MiB and its context only, whatever the text's length.
    let window = faultline_runtime::MAX_MATCHED_BYTES;
    let window_bound = window + window / 16 + (256 << 10);
    assert!(views < window_bound, "text views: {views} ≥ {window_bound}");
    // The bound is one the old redaction did not meet.
    assert!(before >= 2 * size, "the old redaction peaked at {before}");
}
