//! `faultline classify` end to end: the release binary run on generated JSON-lines files, so the
//! figure includes process start, bundle load, JSON parsing, classification, redaction and
//! writing the answers.
//!
//! Two files, written to the temporary directory once per run and the same every run:
//! ordinary agent output (the first 3,000 chunks of `fixtures/corpus/`, then 17,000 generated
//! chunks of narration, code and tool output of 20–160 bytes, as in `classify.rs`: 20,000 lines,
//! about 5 MB)
//! and real error messages (the fixtures and conformance cases of `classify.rs`, repeated to
//! 20,000 lines). The bundle is the repository catalogue's, built once through the compiler and
//! passed with `--bundle`; `--now` fixes the clock. Each answer goes to `/dev/null`; before
//! anything is timed, one run's answers are counted (one per line) and checked to hold no error.
//! A third run classifies an empty file: process start and bundle load alone. Each file is
//! classified twice, side by side: with the command's default threads (one per core, at most 8)
//! and with `--jobs 1`.
//!
//! Run with `cargo bench --bench cli`; a closing table gives the median time per run and MB/s of
//! JSON lines. To see where the time goes, run it with `FAULTLINE_BENCH_KEEP=1`, which keeps the
//! files, and profile the same command (the README's "Benchmarks" section shows how with
//! `perf`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr,
    reason = "a benchmark fails by panicking, and reports its inputs and results on standard error"
)]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use criterion::{Criterion, Throughput};
use faultline_runtime::Evidence;

/// The input sets and criterion's medians, shared with `classify.rs` and `growth.rs`.
#[path = "shared/mod.rs"]
mod shared;

use shared::{Lcg, error_messages, generated_prose, median, prose_chunks};

/// Lines in each evidence file.
const LINES: usize = 20_000;
/// Of the ordinary-output file's lines, how many come from the corpus (the rest are generated).
const CORPUS_LINES: usize = 3_000;
/// The clock reset times are validated against, so every run does the same work.
const NOW: &str = "2026-01-15T12:00:00Z";
const GROUP: &str = "cli_classify";
/// Set, keeps the bundle and the evidence files (for profiling the same command).
const KEEP: &str = "FAULTLINE_BENCH_KEEP";

/// The files one run reads: the bundle and one evidence file per set.
struct Files {
    bundle: PathBuf,
    sets: Vec<(&'static str, PathBuf, u64)>,
}

/// How each file is classified: the command's default (`--jobs` one per core) and, side by
/// side, on one thread (`--jobs 1`), whose ratio is what the threads bring.
const JOBS: [(&str, Option<&str>); 2] = [("", None), ("-jobs-1", Some("1"))];

fn write_lines(path: &Path, evidence: impl Iterator<Item = Evidence>) -> u64 {
    let mut text = String::new();
    for (index, evidence) in evidence.enumerate() {
        let mut line = serde_json::to_value(&evidence).unwrap();
        line["id"] = serde_json::Value::from(format!("line-{index}"));
        text.push_str(&serde_json::to_string(&line).unwrap());
        text.push('\n');
    }
    std::fs::write(path, &text).unwrap();
    text.len() as u64
}

fn files() -> Files {
    let directory =
        std::env::temp_dir().join(format!("faultline-bench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let bundle = directory.join("repository.flb");
    let compilation = faultline_testkit::compile(faultline_testkit::CATALOGUE_ROOT);
    std::fs::write(&bundle, compilation.bundle.as_ref().unwrap()).unwrap();

    let (corpus, origin) = prose_chunks();
    let generated = generated_prose(
        LINES - CORPUS_LINES.min(corpus.len()),
        20..160,
        &mut Lcg(0x00c1_1f11),
    );
    let prose_path = directory.join("prose.jsonl");
    let prose_bytes = write_lines(
        &prose_path,
        corpus.into_iter().take(CORPUS_LINES).chain(generated),
    );
    eprintln!("prose.jsonl: {LINES} lines ({origin} and generated), {prose_bytes} bytes");

    let errors = error_messages();
    let errors_path = directory.join("errors.jsonl");
    let errors_bytes = write_lines(&errors_path, errors.iter().cloned().cycle().take(LINES));
    eprintln!(
        "errors.jsonl: {LINES} lines ({} distinct error messages, repeated), {errors_bytes} bytes",
        errors.len()
    );

    let empty_path = directory.join("empty.jsonl");
    std::fs::write(&empty_path, "").unwrap();
    Files {
        bundle,
        sets: vec![
            ("prose", prose_path, prose_bytes),
            ("errors", errors_path, errors_bytes),
            ("startup", empty_path, 0),
        ],
    }
}

fn classify(bundle: &Path, input: &Path, jobs: Option<&str>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_faultline"));
    command
        .arg("classify")
        .arg("--bundle")
        .arg(bundle)
        .arg("--now")
        .arg(NOW);
    if let Some(jobs) = jobs {
        command.arg("--jobs").arg(jobs);
    }
    command.arg(input);
    command
}

/// One run's answers: one per line, none an error.
fn check_answers(bundle: &Path, input: &Path, lines: usize) {
    let output = classify(bundle, input, None).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers = String::from_utf8(output.stdout).unwrap();
    assert_eq!(answers.lines().count(), lines, "one answer per line");
    let failed = answers
        .lines()
        .filter(|answer| {
            serde_json::from_str::<serde_json::Value>(answer)
                .unwrap()
                .get("error")
                .is_some()
        })
        .count();
    assert_eq!(failed, 0, "every line is valid evidence");
}

fn main() {
    let started = SystemTime::now();
    let files = files();
    for (name, path, _) in &files.sets {
        let lines = if *name == "startup" { 0 } else { LINES };
        check_answers(&files.bundle, path, lines);
    }
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group(GROUP);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for (name, path, bytes) in &files.sets {
        for (suffix, jobs) in JOBS {
            if *name == "startup" && jobs.is_some() {
                continue;
            }
            group.throughput(Throughput::Bytes(*bytes));
            group.bench_function(format!("{name}{suffix}"), |b| {
                b.iter(|| {
                    let status = classify(&files.bundle, path, jobs)
                        .stdout(Stdio::null())
                        .status()
                        .unwrap();
                    black_box(status.success())
                })
            });
        }
    }
    group.finish();
    criterion.final_summary();

    let startup = median(GROUP, "startup", started);
    let mut table = String::from(
        "\n| input file | threads | lines | MB of JSON lines | ms per run | MB/s | MB/s without start-up |\n|---|---|---:|---:|---:|---:|---:|\n",
    );
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    for ((name, _, bytes), (suffix, jobs)) in files
        .sets
        .iter()
        .flat_map(|set| JOBS.iter().map(move |jobs| (set, *jobs)))
    {
        let Some(ns) = median(GROUP, &format!("{name}{suffix}"), started) else {
            continue;
        };
        let threads = match jobs {
            Some(jobs) => jobs.to_owned(),
            None => format!("default ({})", threads.min(8)),
        };
        let bytes = *bytes as f64;
        let (lines, mbs, net) = if *name == "startup" {
            (0, "–".to_owned(), "–".to_owned())
        } else {
            (
                LINES,
                format!("{:.1}", bytes / ns * 1e3),
                startup.map_or("–".to_owned(), |startup| {
                    format!("{:.1}", bytes / (ns - startup) * 1e3)
                }),
            )
        };
        table.push_str(&format!(
            "| {name} | {threads} | {lines} | {:.2} | {:.1} | {mbs} | {net} |\n",
            bytes / 1e6,
            ns / 1e6
        ));
    }
    eprintln!("{table}");
    let directory = files.bundle.parent().unwrap();
    if std::env::var_os(KEEP).is_some() {
        eprintln!("{KEEP}: the files are kept in `{}`", directory.display());
    } else {
        let _ = std::fs::remove_dir_all(directory);
    }
}
