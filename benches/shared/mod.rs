//! What the classification benchmarks (`classify.rs`, `growth.rs`, `cli.rs`) share, included by
//! each with `#[path]`: the input sets (ordinary agent output, real error messages, 4 KiB stderr
//! blobs, long texts), built the same way every run, and criterion's medians of the current run.
//! (The repository catalogue comes from `faultline_testkit`.)
//!
//! Each benchmark keeps its own `#![allow(…)]` header: a benchmark is a crate of its own, and a
//! crate-level attribute must stand in its root file; from this module it would cover only
//! this module.

#![allow(
    dead_code,
    reason = "each benchmark uses the input sets it times, not every one"
)]

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use faultline_runtime::{Evidence, Phase};
use serde_json::Value;

fn root() -> &'static Path {
    faultline_testkit::root()
}

/// Evidence from a JSON object, leaving out nulls and empty strings.
pub fn evidence(value: &Value) -> Evidence {
    faultline_testkit::evidence_of(value)
}

pub fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

pub fn sorted_files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok().map(|e| e.path()))
                .filter(|path| path.extension().is_some_and(|e| e == extension))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// A small deterministic generator (64-bit LCG), so generated inputs are the same every run.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as usize
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() % items.len()]
    }
}

pub const NARRATION: &[&str] = &[
    "I'll start by reading the existing implementation to understand how the parser handles nested blocks.",
    "Let me check the test suite first so I know what behaviour is pinned before changing anything.",
    "The function takes a slice of tokens and returns the index of the matching closing bracket.",
    "Good, the build passes now. Next I'll update the documentation to describe the new flag.",
    "I've refactored the loop so each iteration only allocates when the buffer actually grows.",
    "This looks like an off-by-one in the range check: the upper bound should be exclusive.",
    "Now I'll add a regression test that reproduces the issue with a minimal input.",
    "The configuration is loaded once at startup and shared through an Arc, so no locking is needed here.",
    "All 42 tests pass. The change is limited to the tokenizer and its unit tests.",
    "I'm going to rename `handle_event` to `dispatch` since it no longer handles anything itself.",
    "Looking at the git history, this behaviour was introduced when the cache layer was added.",
    "Let me run the linter to make sure the new code follows the project's conventions.",
    "The migration adds a nullable column first, backfills it, and only then adds the constraint.",
    "Here's a summary of what changed: the retry helper now uses exponential backoff with jitter.",
    "I'll keep the public API unchanged and move the helper into a private module.",
    "The component re-renders on every keystroke because the callback is recreated each time.",
    "Wrapping it in useCallback with the right dependency list fixes the extra renders.",
    "I checked the benchmark numbers before and after; the difference is within noise.",
    "Next, I'll update the README so the new command shows up in the usage section.",
    "The CSV exporter now quotes fields containing commas, quotes or line breaks.",
];

pub const CODE: &[&str] = &[
    "```rust\nfn parse(tokens: &[Token]) -> Result<Ast, ParseError> {\n    let mut stack = Vec::new();\n    for token in tokens {\n        match token.kind {\n            Kind::Open => stack.push(token.span),\n            Kind::Close => { stack.pop(); }\n            _ => {}\n        }\n    }\n    Ok(Ast::default())\n}\n```",
    "```ts\nexport function debounce<T extends (...args: unknown[]) => void>(fn: T, ms: number) {\n  let timer: ReturnType<typeof setTimeout> | undefined;\n  return (...args: Parameters<T>) => {\n    clearTimeout(timer);\n    timer = setTimeout(() => fn(...args), ms);\n  };\n}\n```",
    "```python\ndef chunks(items, size):\n    for start in range(0, len(items), size):\n        yield items[start:start + size]\n```",
    "```diff\n-    let total = items.iter().map(|i| i.price).sum();\n+    let total: u64 = items.iter().map(|i| i.price * i.quantity).sum();\n```",
    "```go\nfunc (s *Server) Close() error {\n\ts.mu.Lock()\n\tdefer s.mu.Unlock()\n\treturn s.listener.Close()\n}\n```",
    "```sql\nSELECT user_id, count(*) AS orders FROM orders WHERE created_at > now() - interval '7 days' GROUP BY user_id;\n```",
];

pub const TOOL_OUTPUT: &[&str] = &[
    "$ cargo test -p tokenizer\n   Compiling tokenizer v0.3.1\n    Finished test profile [unoptimized + debuginfo] target(s) in 4.21s\n     Running unittests src/lib.rs\nrunning 18 tests\ntest result: ok. 18 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s",
    "$ git status --short\n M src/parser.rs\n M tests/parser.rs\n?? docs/grammar.md",
    "$ npm test\n\n> app@1.4.0 test\n> vitest run\n\n ✓ src/utils/debounce.test.ts (3 tests) 12ms\n ✓ src/components/Form.test.tsx (7 tests) 88ms\n\n Test Files  2 passed (2)\n      Tests  10 passed (10)",
    "$ ls src\nlib.rs  main.rs  parser.rs  tokenizer.rs  util.rs",
    "$ rg -n \"fn dispatch\" src\nsrc/events.rs:41:pub fn dispatch(event: &Event) -> Outcome {",
    "$ python -m pytest -q\n........................                                     [100%]\n24 passed in 1.37s",
    "$ wc -l src/*.rs\n   212 src/lib.rs\n    48 src/main.rs\n   530 src/parser.rs\n   790 total",
];

pub const PHASES: &[&str] = &["streaming", "streaming", "streaming", "prompt_send"];
pub const PROVIDERS: &[&str] = &[
    "claude-acp",
    "codex-acp",
    "opencode-acp",
    "copilot-acp",
    "amp-acp",
];

/// Ordinary agent output: the corpus in `fixtures/corpus/*.jsonl` when it exists, otherwise a
/// deterministic set of narration, code and tool output, 200–2,000 bytes each.
pub fn prose_chunks() -> (Vec<Evidence>, String) {
    let corpus = sorted_files(&root().join("fixtures/corpus"), "jsonl");
    if !corpus.is_empty() {
        let chunks: Vec<Evidence> = corpus
            .iter()
            .flat_map(|path| jsonl(path))
            .map(|value| match value.get("evidence") {
                Some(inner) => evidence(inner),
                None => evidence(&value),
            })
            .collect();
        return (chunks, "fixtures/corpus/*.jsonl".to_owned());
    }
    (
        generated_prose(500, 200..2000, &mut Lcg(0x5eed_f00d)),
        "generated (no fixtures/corpus/*.jsonl)".to_owned(),
    )
}

/// `count` chunks of narration, code and tool output, each of a length drawn from `bytes`
/// (cut at its end), as agent output on stdout.
pub fn generated_prose(
    count: usize,
    bytes: std::ops::Range<usize>,
    rng: &mut Lcg,
) -> Vec<Evidence> {
    let mut chunks = Vec::new();
    for _ in 0..count {
        let target = bytes.start + rng.next() % (bytes.end - bytes.start);
        let mut text = String::new();
        while text.len() < target {
            let piece = match rng.next() % 6 {
                0 => rng.pick(CODE),
                1 => rng.pick(TOOL_OUTPUT),
                _ => rng.pick(NARRATION),
            };
            if !text.is_empty() {
                text.push_str(if piece.starts_with("```") || piece.starts_with('$') {
                    "\n\n"
                } else {
                    " "
                });
            }
            text.push_str(piece);
        }
        let mut cut = text.len().min(bytes.end);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        chunks.push({
            let mut built = Evidence::new();
            built.phase = Phase::from_name(rng.pick(PHASES));
            built.provider_id = Some(rng.pick(PROVIDERS).to_owned());
            built.stdout = Some(text);
            built
        });
    }
    chunks
}

/// Real error messages: the classification fixtures and the Kandev conformance cases.
pub fn error_messages() -> Vec<Evidence> {
    let mut all = Vec::new();
    for path in sorted_files(&root().join("fixtures/classify"), "jsonl") {
        all.extend(jsonl(&path).iter().map(|case| evidence(&case["evidence"])));
    }
    for case in jsonl(&root().join("fixtures/conformance/kandev-parity.jsonl")) {
        if case["api"] == "classify" {
            all.push(evidence(&case["input"]));
        }
    }
    all
}

pub const LOG_LINES: &[&str] = &[
    "npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory. Do not use it.",
    "npm warn deprecated glob@7.2.3: Glob versions prior to v9 are no longer supported",
    "npm http fetch GET 200 https://registry.npmjs.org/typescript 112ms (cache revalidated)",
    "   Compiling serde_derive v1.0.219",
    "   Compiling tokio v1.45.1",
    "   Compiling proc-macro2 v1.0.95",
    "warning: unused variable: `config`\n  --> src/main.rs:14:9\n   |\n14 |     let config = load();\n   |         ^^^^^^ help: if this is intentional, prefix it with an underscore: `_config`",
    "2025-11-30T10:04:12.381Z INFO  agent::session: starting session model=claude-sonnet-4 cwd=/workspace/app",
    "2025-11-30T10:04:12.904Z DEBUG agent::tools: registered 14 tools (read, write, edit, bash, grep, glob, ...)",
    "2025-11-30T10:04:13.117Z INFO  agent::mcp: connected to server name=filesystem transport=stdio",
    "[info] Watching for file changes in /workspace/app/src",
    "(node:4123) ExperimentalWarning: The Fetch API is an experimental feature. This feature could change at any time",
    "(Use `node --trace-warnings ...` to show where the warning was created)",
    "    at Module._compile (node:internal/modules/cjs/loader:1554:14)",
    "    at Object..js (node:internal/modules/cjs/loader:1706:10)",
    "    at Module.load (node:internal/modules/cjs/loader:1289:32)",
    "    at Function._load (node:internal/modules/cjs/loader:1108:12)",
    "    at TracingChannel.traceSync (node:diagnostics_channel:322:14)",
    "    at node:internal/main/run_main_module:36:49",
    "added 312 packages, and audited 313 packages in 6s",
    "58 packages are looking for funding\n  run `npm fund` for details",
    "found 0 vulnerabilities",
    "thread 'main' panicked at src/parser.rs:88:21:\nindex out of bounds: the len is 3 but the index is 3\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
    "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 12.48s",
    "     Running `target/debug/app --port 8080`",
];

pub const BLOB_SIZE: usize = 4096;

/// 4 KiB stderr blobs of log lines and stack traces; every other one ends with a real error
/// message (taken from the error set, where it has stderr text) followed by one more line.
pub fn stderr_blobs(errors: &[Evidence]) -> Vec<Evidence> {
    let tails: Vec<&Evidence> = errors
        .iter()
        .filter(|e| {
            e.stderr
                .as_deref()
                .is_some_and(|s| !s.is_empty() && s.len() < 1500)
        })
        .collect();
    let mut rng = Lcg(0x000b_10b5);
    let mut blobs = Vec::new();
    for index in 0..64 {
        let tail = (index % 2 == 0).then(|| tails[(index / 2 * 7) % tails.len()]);
        let ending = match tail {
            Some(error) => format!(
                "{}\nnpm error A complete log of this run can be found in: /root/.npm/_logs/debug-0.log\n",
                error.stderr.as_deref().unwrap_or("")
            ),
            None => "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 3.02s\n"
                .to_owned(),
        };
        let mut text = String::new();
        while text.len() + ending.len() < BLOB_SIZE {
            text.push_str(rng.pick(LOG_LINES));
            text.push('\n');
        }
        let mut cut = BLOB_SIZE - ending.len();
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str(&ending);
        while text.len() < BLOB_SIZE {
            text.push(' ');
        }
        blobs.push(match tail {
            Some(error) => {
                let mut built = error.clone();
                built.stderr = Some(text);
                built.stdout = None;
                built
            }
            None => {
                let mut built = Evidence::new();
                built.phase = Phase::from_name(rng.pick(PHASES));
                built.provider_id = Some(rng.pick(PROVIDERS).to_owned());
                built.stderr = Some(text);
                built
            }
        });
    }
    blobs
}

/// The long-text inputs: (group name, evidence).
pub fn long_texts(errors: &[Evidence]) -> Vec<(&'static str, Evidence)> {
    let error = errors
        .iter()
        .find(|e| {
            e.stderr
                .as_deref()
                .is_some_and(|s| s.starts_with("API Error: 529"))
        })
        .unwrap_or(&errors[0]);
    let mut rng = Lcg(0x0010_c0de);
    let log = |bytes: usize, rng: &mut Lcg| {
        let mut text = String::with_capacity(bytes + 4096);
        while text.len() < bytes {
            text.push_str(rng.pick(LOG_LINES));
            text.push('\n');
        }
        text
    };
    let ending = error.stderr.clone().unwrap_or_default();
    let mut inputs = Vec::new();
    for (name, bytes) in [
        ("long_text_64k_log", 64 << 10),
        ("long_text_256k_log", 256 << 10),
        ("long_text_1m_log", 1 << 20),
        ("long_text_4m_log", 4 << 20),
    ] {
        inputs.push((name, {
            let mut built = error.clone();
            built.stderr = Some(log(bytes, &mut rng) + &ending);
            built
        }));
    }
    let mut line = String::with_capacity((1 << 20) + 256);
    let mut index = 0;
    while line.len() < 1 << 20 {
        line.push_str(&format!(
            r#"{{"url":"https://api.example.com/v1/items/{index}?token=Zq9xW2vB{index}","path":"/home/dev/p/{index}.rs","password":"hunter{index} x","id":"ses_{index}","mail":"u{index}@example.com","blob":"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo{index}"}},"#
        ));
        index += 1;
    }
    inputs.push(("long_text_1m_json_line", {
        let mut built = error.clone();
        built.stderr = Some(line + &ending);
        built
    }));
    inputs
}

pub fn text_bytes(inputs: &[Evidence]) -> u64 {
    inputs.iter().map(|e| e.raw_text().len() as u64).sum()
}

pub fn criterion_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root().join("target"), PathBuf::from)
        .join("criterion")
}

/// Criterion's median for one benchmark of this run, in ns per iteration.
pub fn median(group: &str, engine: &str, since: SystemTime) -> Option<f64> {
    let path = criterion_home()
        .join(group)
        .join(engine)
        .join("new/estimates.json");
    let modified = std::fs::metadata(&path).ok()?.modified().ok()?;
    if modified < since {
        return None;
    }
    let estimates: Value = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}
