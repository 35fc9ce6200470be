//! How classification and bundle loading grow with the catalogue, in one run: the repository
//! catalogue (`catalogue/`); the same grown to 1,000 and 3,000 rules by generated rules (an
//! included file, `faultline_compiler::synthetic::realistic_extension`); and generated
//! catalogues of 1,000 and 3,000 rules alone (`realistic_files`). Generated rules have the
//! pattern shapes of the repository catalogue, a quarter of them bounded gaps such as
//! `\bA\b[^\n]{0,64}\bB\s+exceeded\b`, each built around made-up words unique to its rule, so
//! they never fire on the real inputs: a generated catalogue alone sends every real error to the
//! fallback, while a grown one still classifies them with the repository's rules and shows what
//! the added rules cost.
//!
//! The repository's bundle is also measured with its literal table left out (the prefilter's
//! automaton built at load, as before bundle format 9), right after it.
//!
//! Per catalogue: its rule count, bundle bytes and bytes per rule, the time to load and validate
//! the bundle (`Bundle::from_bytes`), and, on the input sets of `classify.rs`, the rejecting
//! path (`Bundle::may_classify` on ordinary agent output) and full classification
//! (`Bundle::classify` on ordinary agent output, real error messages and 4 KiB stderr blobs).
//! Before anything is timed, the gate is checked sound on every ordinary chunk it rejects.
//!
//! Run with `cargo bench --bench growth`; a closing table on standard error gives the criterion
//! medians, then how much slower each generated catalogue is than the repository's per set.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::print_stderr,
    reason = "a benchmark fails by panicking, and reports its inputs and results on standard error"
)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use criterion::{Criterion, Throughput};
use faultline_compiler::synthetic::{realistic_extension, realistic_files};
use faultline_dsl::MemorySources;
use faultline_runtime::{Bundle, Confidence, Evidence};

/// The input sets and criterion's medians, shared with `classify.rs` and `cli.rs`.
#[path = "shared/mod.rs"]
mod shared;

use shared::{error_messages, median, prose_chunks, stderr_blobs, text_bytes};

/// One catalogue under test: its name in criterion's groups, its name in the table, its rule
/// count, its bundle's size and (while it is timed) its bundle.
struct Catalogue {
    key: String,
    label: String,
    rules: usize,
    bundle_bytes: usize,
    bundle: Vec<u8>,
}

/// Compiles a catalogue that must check clean, reporting how long the build took.
fn compile(
    key: &str,
    label: &str,
    root: &Path,
    sources: &dyn faultline_dsl::SourceProvider,
) -> Catalogue {
    let started = Instant::now();
    let compilation = faultline_testkit::compile_from(root, sources);
    let rules = compilation.catalogue.rules.len();
    let bundle = compilation.bundle.unwrap();
    eprintln!(
        "{label}: {rules} rules, bundle of {} bytes, built in {:.1} s",
        bundle.len(),
        started.elapsed().as_secs_f64()
    );
    Catalogue {
        key: key.to_owned(),
        label: label.to_owned(),
        rules,
        bundle_bytes: bundle.len(),
        bundle,
    }
}

fn repository() -> Catalogue {
    compile(
        "repository",
        "repository",
        &faultline_testkit::path(faultline_testkit::CATALOGUE_ROOT),
        &faultline_testkit::FileSystem,
    )
}

/// The repository's bundle with its literal table section emptied and the content hash
/// recomputed: the loader then builds the prefilter's Aho-Corasick DFA itself, as it did for
/// every bundle before format 9. Measured right after the repository's own bundle, so that the
/// table's effect on loading and on every input set is read side by side in one run.
fn without_literal_table(repository: &Catalogue) -> Catalogue {
    let bytes = &repository.bundle;
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let (header, sections) = (word(16), word(20));
    let last = header + 16 * (sections - 1);
    let offset = u64::from_le_bytes(bytes[last..last + 8].try_into().unwrap()) as usize;
    let mut bundle = bytes[..header + offset].to_vec();
    bundle[last + 8..last + 16].copy_from_slice(&0u64.to_le_bytes());
    let hash = faultline_runtime::build::content_hash(&bundle).unwrap();
    bundle[faultline_runtime::build::HASH_RANGE].copy_from_slice(&hash);
    let loaded = Bundle::from_bytes(&bundle).unwrap();
    assert!(loaded.prefilter_table_bytes().is_none());
    assert!(
        Bundle::from_bytes(bytes)
            .unwrap()
            .prefilter_table_bytes()
            .is_some()
    );
    Catalogue {
        key: "repository_built_at_load".to_owned(),
        label: "repository, prefilter automaton built at load".to_owned(),
        rules: repository.rules,
        bundle_bytes: bundle.len(),
        bundle,
    }
}

/// Ranks of the generated rules added to the repository catalogue start here, after its own.
const GROWN_RANK_BASE: usize = 10_000;

/// The repository catalogue with generated rules added (an included file of its own), up to
/// `rules` rules in all: how the real catalogue would grow.
fn grown(rules: usize, repository_rules: usize) -> Catalogue {
    let sources = faultline_testkit::grown_catalogue(realistic_extension(
        rules - repository_rules,
        GROWN_RANK_BASE,
    ));
    compile(
        &format!("grown_{rules}"),
        &format!("repository + {} generated", rules - repository_rules),
        Path::new(faultline_testkit::CATALOGUE_ROOT),
        &sources,
    )
}

fn generated(rules: usize) -> Catalogue {
    let mut sources = MemorySources::new();
    for (path, text) in realistic_files(rules) {
        sources.insert(format!("realistic/{path}"), text);
    }
    compile(
        &format!("generated_{rules}"),
        &format!("generated {rules}"),
        Path::new("realistic/catalogue.rules"),
        &sources,
    )
}

/// The sizes of the grown and generated catalogues, in rules.
const SIZES: [usize; 2] = [1000, 3000];

/// The runs of one catalogue's group, each over its own input set: (run, input set).
const RUNS: [&str; 4] = [
    "reject_prose",
    "classify_prose",
    "classify_errors",
    "classify_stderr_4k",
];

/// The name of a catalogue's criterion group.
fn group_name(catalogue: &Catalogue) -> String {
    format!("growth_{}", catalogue.key)
}

/// The gate is sound on every ordinary chunk: one it rejects classifies low-confidence.
fn check_gate(catalogue: &Catalogue, bundle: &Bundle, prose: &[Evidence]) {
    let rejected = prose
        .iter()
        .filter(|input| !bundle.may_classify(input))
        .inspect(|input| assert_eq!(bundle.classify(input).confidence, Confidence::Low))
        .count();
    eprintln!(
        "{}: the gate rejects {rejected} of {} prose chunks",
        catalogue.label,
        prose.len()
    );
}

fn bench_catalogue(c: &mut Criterion, catalogue: &Catalogue, sets: &[(&str, &[Evidence]); 4]) {
    let bundle = Bundle::from_bytes(&catalogue.bundle).unwrap();
    check_gate(catalogue, &bundle, sets[0].1);
    let mut group = c.benchmark_group(group_name(catalogue));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes(catalogue.bundle.len() as u64));
    group.bench_function("load", |b| {
        b.iter(|| black_box(Bundle::from_bytes(black_box(&catalogue.bundle)).unwrap()))
    });
    for (run, inputs) in sets {
        group.throughput(Throughput::Bytes(text_bytes(inputs)));
        let reject = *run == RUNS[0];
        group.bench_function(*run, |b| {
            b.iter(|| {
                for input in *inputs {
                    if reject {
                        black_box(bundle.may_classify(black_box(input)));
                    } else {
                        black_box(bundle.classify(black_box(input)));
                    }
                }
            })
        });
    }
    group.finish();
}

/// Nanoseconds per input and MB/s of one run of one catalogue, if it ran in this run.
fn per_input(
    catalogue: &Catalogue,
    run: &str,
    inputs: &[Evidence],
    since: SystemTime,
) -> Option<(f64, f64)> {
    let ns = median(&group_name(catalogue), run, since)?;
    Some((
        ns / inputs.len() as f64,
        text_bytes(inputs) as f64 / ns * 1e3,
    ))
}

/// The closing tables: the medians per catalogue, then each generated catalogue's time per
/// input over the repository's, per set (the growth goal: at most 2× at 1,000 rules).
fn table(catalogues: &[Catalogue], sets: &[(&str, &[Evidence]); 4], since: SystemTime) -> String {
    let mut out = String::from(
        "\n| catalogue | rules | bundle bytes | bytes/rule | load ms | reject prose ns (MB/s) | classify prose ns (MB/s) | classify errors ns (MB/s) | classify 4 KiB blobs ns (MB/s) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for catalogue in catalogues {
        let load = median(&group_name(catalogue), "load", since)
            .map_or_else(|| "–".to_owned(), |ns| format!("{:.2}", ns / 1e6));
        out.push_str(&format!(
            "| {} | {} | {} | {:.0} | {load} |",
            catalogue.label,
            catalogue.rules,
            catalogue.bundle_bytes,
            catalogue.bundle_bytes as f64 / catalogue.rules as f64,
        ));
        for (run, inputs) in sets {
            match per_input(catalogue, run, inputs, since) {
                Some((ns, mbs)) => out.push_str(&format!(" {ns:.0} ({mbs:.0}) |")),
                None => out.push_str(" – |"),
            }
        }
        out.push('\n');
    }
    let Some(base) = catalogues.first() else {
        return out;
    };
    out.push_str(&format!(
        "\n| time per input over the {} catalogue's | load | reject prose | classify prose | classify errors | classify 4 KiB blobs |\n|---|---:|---:|---:|---:|---:|\n",
        base.label
    ));
    for catalogue in catalogues.iter().skip(1) {
        out.push_str(&format!(
            "| {} ({} rules) |",
            catalogue.label, catalogue.rules
        ));
        let ratio = |run: &str| {
            let ours = median(&group_name(catalogue), run, since)?;
            let theirs = median(&group_name(base), run, since)?;
            Some(ours / theirs)
        };
        for run in std::iter::once("load").chain(sets.iter().map(|(run, _)| *run)) {
            match ratio(run) {
                Some(ratio) => out.push_str(&format!(" {ratio:.2}× |")),
                None => out.push_str(" – |"),
            }
        }
        out.push('\n');
    }
    out
}

fn main() {
    let started = SystemTime::now();
    let (prose, prose_origin) = prose_chunks();
    let errors = error_messages();
    let blobs = stderr_blobs(&errors);
    let sets: [(&str, &[Evidence]); 4] = [
        (RUNS[0], &prose),
        (RUNS[1], &prose),
        (RUNS[2], &errors),
        (RUNS[3], &blobs),
    ];
    eprintln!(
        "prose chunks: {prose_origin}, {} chunks; {} error messages; {} 4 KiB blobs",
        prose.len(),
        errors.len(),
        blobs.len()
    );
    let mut criterion = Criterion::default().configure_from_args();
    // One catalogue at a time, so only one large bundle is in memory at once.
    let mut catalogues: Vec<Catalogue> = Vec::new();
    let mut measure = |mut catalogue: Catalogue| {
        bench_catalogue(&mut criterion, &catalogue, &sets);
        catalogue.bundle = Vec::new();
        catalogues.push(catalogue);
    };
    let repository = repository();
    let repository_rules = repository.rules;
    let built_at_load = without_literal_table(&repository);
    measure(repository);
    measure(built_at_load);
    for rules in SIZES {
        measure(grown(rules, repository_rules));
    }
    for rules in SIZES {
        measure(generated(rules));
    }
    criterion.final_summary();
    eprintln!("{}", table(&catalogues, &sets, started));
}
