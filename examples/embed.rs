//! How an orchestrator embeds faultline: load a compiled bundle once, then classify a stream of
//! evidence through the runtime crate's API (it links neither the language nor the compiler).
//!
//! ```sh
//! cargo run -- build catalogue/ -o provider-errors.flb
//! cargo run --example embed -- provider-errors.flb < evidence.jsonl
//! ```
//!
//! Each input line is one evidence object (see docs/evidence.md); each output line is the
//! classification and whether the orchestrator may consider automatic recovery for it.

use std::io::{BufRead as _, Write as _};

use faultline_runtime::{Bundle, Class, Confidence, Evidence};

fn main() -> std::process::ExitCode {
    let mut stderr = std::io::stderr();
    let Some(path) = std::env::args().nth(1) else {
        let _ = writeln!(stderr, "usage: embed BUNDLE < evidence.jsonl");
        return std::process::ExitCode::from(2);
    };
    // Loading validates the whole file; a damaged or incompatible bundle is a typed error.
    let bundle = match std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|bytes| Bundle::from_bytes(&bytes).map_err(|e| e.to_string()))
    {
        Ok(bundle) => bundle,
        Err(error) => {
            let _ = writeln!(stderr, "cannot load `{path}`: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut stdout = std::io::stdout().lock();
    let mut failed = false;
    for (number, line) in std::io::stdin().lock().lines().enumerate() {
        let Ok(line) = line else { break };
        let evidence: Evidence = match serde_json::from_str(&line) {
            Ok(evidence) => evidence,
            Err(error) => {
                let _ = writeln!(stderr, "line {}: {error}", number + 1);
                failed = true;
                continue;
            }
        };
        let classification = bundle.classify(&evidence);
        // Classification alone never authorises a replay: it only says whether recovery may be
        // considered, which the recovery-evidence layer then decides from the prompt's evidence.
        let may_consider_retry = classification.class == Class::Transient
            && classification.auto_retryable
            && classification.confidence != Confidence::Low;
        let _ = writeln!(
            stdout,
            "{}\t{}\t{}\tretry-candidate={}",
            classification.code, classification.class, classification.rule, may_consider_retry
        );
    }
    if failed {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}
