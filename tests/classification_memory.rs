//! Classifying one text holds a bounded amount of memory beside it, whatever its length: the
//! rules, the gate, the timing extractors and the excerpt read only the last
//! [`MAX_MATCHED_BYTES`] of a text (and the context before it), so the peak is the same for a
//! text of 8 MiB and of 32 MiB, both far above that window. The peak is measured by a counting
//! global allocator, which is why this test is a binary of its own (like
//! `tests/redaction_memory.rs`, which bounds one redaction of a whole text).

#![allow(
    clippy::print_stderr,
    reason = "the test reports the peaks it measured, for the performance note"
)]

use faultline_runtime::{Bundle, Evidence, MAX_MATCHED_BYTES};
use faultline_testkit::{catalogue_bundle, evidence_of};
use peak_alloc::PeakAlloc;
use serde_json::json;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// The allocator counts every thread's bytes: the tests measure one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Ordinary build output with secrets, ids, URLs and paths every few KiB, `bytes` long, then the
/// error the agent died of on its last line.
fn log_ending_in_an_error(bytes: usize) -> String {
    let lines = [
        "   Compiling tokio v1.45.1 (the ordinary build output of an agent's tool call)\n",
        "warning: unused variable `token` in /home/dev/project/src/main.rs:41\n",
        "GET https://registry.example.com/a/b?token=x 200 (ses_abc123, run_9)\n",
        "curl -H 'Authorization: Bearer Zq9xW2vB7nK4mP3rT6yU8abc' --api-key sk-abcdefghijklmnop\n",
        "mail alice.smith+ci@corp-example.co.uk: retrying in 2s (attempt 1/5)\n",
    ];
    let mut text = String::with_capacity(bytes + 4096);
    for line in lines.iter().cycle() {
        if text.len() >= bytes {
            break;
        }
        text.push_str(line);
    }
    text.push_str(
        r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    text
}

fn evidence(text: &str) -> Evidence {
    evidence_of(&json!({"phase": "streaming", "provider_id": "claude-acp", "stderr": text}))
}

/// The most bytes live at once while `classify` runs, beyond what was live before; and the
/// code it answered.
fn peak_extra(bundle: &Bundle, evidence: &Evidence) -> (usize, String) {
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let code = bundle.classify(evidence).code;
    (ALLOCATOR.peak_usage().saturating_sub(before), code)
}

#[test]
fn one_classification_holds_a_bounded_window_of_its_text() {
    let _alone = ONE_AT_A_TIME.lock();
    let bundle = catalogue_bundle();
    // Every rule that the big texts reach compiles its pattern on first use: a text of the
    // same lines, just over the window, compiles them before anything is measured.
    let warm = evidence(&log_ending_in_an_error(MAX_MATCHED_BYTES + (256 << 10)));
    let _ = bundle.classify(&warm);

    let mut peaks = Vec::new();
    for bytes in [8 << 20, 32 << 20] {
        let evidence = evidence(&log_ending_in_an_error(bytes));
        let (peak, code) = peak_extra(&bundle, &evidence);
        assert_eq!(
            code, "provider_overloaded",
            "the error on the last line of {bytes} bytes"
        );
        peaks.push((bytes, peak));
    }
    eprintln!("peak extra bytes of one classification: {peaks:?}");
    // The window's sanitized copy and the redaction's headroom, with bounded bookkeeping
    // (measured: 1.6 MB for both lengths).
    let bound = 2 * MAX_MATCHED_BYTES;
    for (bytes, peak) in &peaks {
        assert!(
            peak < &bound,
            "a {bytes}-byte text peaked at {peak} ≥ {bound}"
        );
    }
    // Independent of the text's length: a text four times longer costs no more.
    if let [(_, small), (_, large)] = peaks.as_slice() {
        assert!(
            large.abs_diff(*small) < (64 << 10),
            "the peak grew with the text: {small} → {large}"
        );
    }
}

/// A coloured log with Windows line ends is read as a terminal shows it: one more copy of the
/// matched window (the shown text), still independent of the text's length.
#[test]
fn a_coloured_log_holds_one_more_window() {
    let _alone = ONE_AT_A_TIME.lock();
    let bundle = catalogue_bundle();
    let coloured = |bytes: usize| {
        log_ending_in_an_error(bytes)
            .replace("warning:", "\u{1b}[33mwarning\u{1b}[0m:")
            .replace('\n', "\r\n")
    };
    let _ = bundle.classify(&evidence(&coloured(MAX_MATCHED_BYTES + (256 << 10))));

    let mut peaks = Vec::new();
    for bytes in [8 << 20, 32 << 20] {
        let evidence = evidence(&coloured(bytes));
        let (peak, code) = peak_extra(&bundle, &evidence);
        assert_eq!(
            code, "provider_overloaded",
            "the coloured log of {bytes} bytes"
        );
        peaks.push((bytes, peak));
    }
    eprintln!("peak extra bytes of one classification of a coloured log: {peaks:?}");
    let bound = 3 * MAX_MATCHED_BYTES;
    for (bytes, peak) in &peaks {
        assert!(
            peak < &bound,
            "a {bytes}-byte coloured text peaked at {peak} ≥ {bound}"
        );
    }
    if let [(_, small), (_, large)] = peaks.as_slice() {
        assert!(
            large.abs_diff(*small) < (64 << 10),
            "the peak grew with the text: {small} → {large}"
        );
    }
}
