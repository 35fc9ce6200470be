//! Writes a generated catalogue of any size to disk, for measuring `faultline check` on it
//! (time and peak memory) outside the benchmark harness:
//!
//! ```sh
//! cargo run --release --example synthetic -- 10000 /tmp/synthetic-10k
//! /usr/bin/time -v target/release/faultline check /tmp/synthetic-10k
//! ```
//!
//! The catalogue is the one `benches/compile.rs` measures (`faultline_compiler::synthetic`): a
//! root `catalogue.rules` including one file per provider. It checks clean. With `--realistic`
//! first, it is the one `benches/growth.rs` measures instead (`realistic_files`: the pattern
//! shapes of the repository catalogue, a quarter of them bounded gaps):
//!
//! ```sh
//! cargo run --release --example synthetic -- --realistic 1000 /tmp/realistic-1k
//! ```

use std::io::Write as _;
use std::path::PathBuf;

fn main() -> std::process::ExitCode {
    let mut stderr = std::io::stderr();
    let mut args = std::env::args().skip(1).peekable();
    let realistic = args.next_if(|arg| arg == "--realistic").is_some();
    let (Some(rules), Some(directory)) = (
        args.next().and_then(|n| n.parse::<usize>().ok()),
        args.next().map(PathBuf::from),
    ) else {
        let _ = writeln!(stderr, "usage: synthetic [--realistic] RULES DIRECTORY");
        return std::process::ExitCode::from(2);
    };
    if let Err(error) = std::fs::create_dir_all(&directory) {
        let _ = writeln!(stderr, "cannot create `{}`: {error}", directory.display());
        return std::process::ExitCode::from(2);
    }
    let files = if realistic {
        faultline_compiler::synthetic::realistic_files(rules)
    } else {
        faultline_compiler::synthetic::synthetic_files(rules, None)
    };
    for (path, text) in files {
        let target = directory.join(&path);
        if let Err(error) = std::fs::write(&target, text) {
            let _ = writeln!(stderr, "cannot write `{}`: {error}", target.display());
            return std::process::ExitCode::from(2);
        }
    }
    std::process::ExitCode::SUCCESS
}
