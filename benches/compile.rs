//! Compile-side benchmarks: checking the repository catalogue, a full check and an incremental
//! re-check (one rule edited) of a generated 1,000-rule catalogue, building and loading the
//! repository catalogue's bundle, and how a full check scales with the number of rules
//! (`check/scaling`: 1,000 to 10,000 generated rules). Run with `cargo bench --bench compile`
//! (one group: `cargo bench --bench compile -- check/scaling`).
//!
//! Peak memory is not a criterion measure; for one size, write the same catalogue to disk and
//! check it under `/usr/bin/time -v` (the README's "Scaling" section has the figures):
//!
//! ```sh
//! cargo run --release --example synthetic -- 10000 /tmp/synthetic-10k
//! /usr/bin/time -v target/release/faultline check /tmp/synthetic-10k
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    reason = "a benchmark fails by panicking, and reports sizes on standard error"
)]

use std::hint::black_box;
use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use faultline_compiler::synthetic::synthetic_files;
use faultline_compiler::{CompileSession, Compiler};
use faultline_dsl::MemorySources;
use faultline_runtime::Bundle;

use faultline_testkit::FileSystem;

const SYNTHETIC_RULES: usize = 1000;
const EDITED_RULE: usize = 500;

fn repository_catalogue(c: &mut Criterion) {
    let root = faultline_testkit::path("catalogue/catalogue.rules");
    c.bench_function("check/repository catalogue (full pipeline)", |b| {
        b.iter(|| {
            let (loaded, _) = faultline_dsl::load(&root, &FileSystem).unwrap();
            let compilation = Compiler::new().compile(&loaded);
            assert!(!compilation.has_errors());
            black_box(compilation)
        })
    });
    let (loaded, _) = faultline_dsl::load(&root, &FileSystem).unwrap();
    let bytes = Compiler::new().compile(&loaded).bundle.unwrap();
    eprintln!("repository bundle: {} bytes", bytes.len());
    c.bench_function("bundle/load and validate (repository catalogue)", |b| {
        b.iter(|| black_box(Bundle::from_bytes(black_box(&bytes)).unwrap()))
    });
}

fn synthetic(c: &mut Criterion) {
    let mut group = c.benchmark_group("check/synthetic 1000 rules");
    group.sample_size(10);
    let sources = |edit: Option<(usize, usize)>| {
        let mut sources = MemorySources::new();
        for (path, text) in synthetic_files(SYNTHETIC_RULES, edit) {
            sources.insert(format!("synthetic/{path}"), text);
        }
        sources
    };
    let root = Path::new("synthetic/catalogue.rules");
    group.bench_function("full check", |b| {
        let sources = sources(None);
        b.iter(|| {
            let (loaded, _) = faultline_dsl::load(root, &sources).unwrap();
            let compilation = Compiler::new().compile(&loaded);
            assert!(!compilation.has_errors());
            black_box(compilation)
        })
    });
    group.bench_function("re-check after editing one rule", |b| {
        let mut session = CompileSession::new(Compiler::new());
        let (loaded, _) = session.load(root, &sources(None)).unwrap();
        assert!(!session.compile(&loaded).has_errors());
        // Every iteration is a new edit of the same rule, so nothing about it is memoized.
        let mut variant = 0;
        b.iter(|| {
            variant += 1;
            let (loaded, _) = session
                .load(root, &sources(Some((EDITED_RULE, variant))))
                .unwrap();
            let compilation = session.compile(&loaded);
            assert!(!compilation.has_errors());
            black_box(compilation)
        })
    });
    group.finish();
}

/// A full check (load, check, order, lower, verify, analyse) of generated catalogues of growing
/// size: near-linear growth is the claim (README, "Scaling").
fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("check/scaling");
    group.sample_size(10);
    group.warm_up_time(std::time::Duration::from_secs(1));
    group.measurement_time(std::time::Duration::from_secs(5));
    let root = Path::new("synthetic/catalogue.rules");
    for rules in [1000, 2000, 5000, 10_000] {
        let mut sources = MemorySources::new();
        for (path, text) in synthetic_files(rules, None) {
            sources.insert(format!("synthetic/{path}"), text);
        }
        group.bench_with_input(
            BenchmarkId::from_parameter(rules),
            &sources,
            |b, sources| {
                b.iter(|| {
                    let (loaded, _) = faultline_dsl::load(root, sources).unwrap();
                    let compilation = Compiler::new().compile(&loaded);
                    assert!(!compilation.has_errors());
                    black_box(compilation)
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, repository_catalogue, synthetic, scaling);
criterion_main!(benches);
