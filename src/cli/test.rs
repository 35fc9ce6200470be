//! `faultline test`: every inline example of a catalogue, and every classification fixture,
//! through the compiled bundle; a line per failure, with `--table` the fixtures passed per
//! expected code and per surface (fixture file), and a closing `N passed, N failed` line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::time::SystemTime;

use faultline_runtime::parse_instant;
use faultline_runtime::{Bundle, Evidence};
use serde::Deserialize;

use super::files::{self, FileSystem};
use super::{Exit, err, out};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The catalogue (a directory holding `catalogue.rules`, or a root file).
    #[arg(value_name = "CATALOGUE", default_value = "catalogue")]
    catalogue: PathBuf,
    /// Classification fixtures: a directory of `*.jsonl` files, or one such file.
    #[arg(long, value_name = "DIR", default_value = "fixtures/classify")]
    fixtures: PathBuf,
    /// Also print, as Markdown tables, how many fixtures pass per expected code and per surface
    /// (the fixture file they are in).
    #[arg(long)]
    table: bool,
}

/// Fixtures passed and run, per key (an expected code, or a fixture file).
#[derive(Debug, Default)]
struct Tally(BTreeMap<String, (usize, usize)>);

impl Tally {
    fn count(&mut self, key: &str, passed: bool) {
        let entry = self.0.entry(key.to_owned()).or_default();
        entry.0 += usize::from(passed);
        entry.1 += 1;
    }

    fn markdown(&self, heading: &str) -> String {
        let mut table = format!("| {heading} | passed | fixtures |\n|---|---:|---:|\n");
        for (key, (passed, total)) in &self.0 {
            table.push_str(&format!("| {key} | {passed} | {total} |\n"));
        }
        table
    }
}

/// What a fixture is counted under in the per-code table: its expected code, if it pins one
/// (prose and ordinary output pin the fallback's code, or only rules that must not win).
fn tally_code(fixture: &Fixture) -> &str {
    fixture.expect.code.as_deref().unwrap_or("(no code pinned)")
}

/// One classification fixture: a sanitized real message (or a piece of prose) and what it must
/// classify as.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    /// A short name, unique in its file.
    name: String,
    /// Where the message was seen (agent, provider, document).
    source: String,
    /// The evidence.
    evidence: Evidence,
    /// The clock to classify at (RFC 3339); required when the fixture pins a reset time.
    #[serde(default)]
    now: Option<String>,
    /// What the classification must be.
    expect: Expectation,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expectation {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    confidence: Option<faultline_runtime::Confidence>,
    /// Rules that must not win (for prose that quotes an error).
    #[serde(default)]
    rule_not: Vec<String>,
    /// The reset time it must report (compared as an instant).
    #[serde(default)]
    reset_hint: Option<String>,
    /// It must report no reset time.
    #[serde(default)]
    no_reset_hint: bool,
}

/// The fixture's clock, and its expected reset time as an instant; an error makes the fixture
/// invalid.
fn clock(fixture: &Fixture) -> Result<(SystemTime, Option<SystemTime>), String> {
    let pins_reset = fixture.expect.reset_hint.is_some() || fixture.expect.no_reset_hint;
    let now = match &fixture.now {
        Some(now) => parse_instant(now).map_err(|error| error.to_string())?,
        None if pins_reset => {
            return Err(
                "a fixture that pins a reset time must fix the clock with `now`".to_owned(),
            );
        }
        None => SystemTime::now(),
    };
    let reset = fixture
        .expect
        .reset_hint
        .as_deref()
        .map(parse_instant)
        .transpose()
        .map_err(|error| error.to_string())?;
    Ok((now, reset))
}

fn check(
    bundle: &Bundle,
    fixture: &Fixture,
    now: SystemTime,
    reset: Option<SystemTime>,
) -> Vec<String> {
    let result = bundle.classify_at(&fixture.evidence, now);
    let mut problems = Vec::new();
    let actual_reset = result
        .reset_hint
        .as_deref()
        .and_then(|at| parse_instant(at).ok());
    if (reset.is_some() || fixture.expect.no_reset_hint) && actual_reset != reset {
        problems.push(format!(
            "reset hint {}, expected {}",
            result.reset_hint.as_deref().unwrap_or("none"),
            fixture.expect.reset_hint.as_deref().unwrap_or("none")
        ));
    }
    if let Some(code) = &fixture.expect.code
        && result.code != *code
    {
        problems.push(format!("code `{}`, expected `{code}`", result.code));
    }
    if let Some(rule) = &fixture.expect.rule
        && result.rule != *rule
    {
        problems.push(format!("rule `{}`, expected `{rule}`", result.rule));
    }
    if let Some(confidence) = fixture.expect.confidence
        && result.confidence != confidence
    {
        problems.push(format!(
            "confidence `{}`, expected `{confidence}`",
            result.confidence
        ));
    }
    if fixture.expect.rule_not.contains(&result.rule) {
        problems.push(format!(
            "rule `{}`, which the fixture rules out",
            result.rule
        ));
    }
    problems
}

/// The fixture files `--fixtures` names: the `*.jsonl` files of a directory, or one such file.
/// A path that holds no fixture is an error, never an empty (and so passing) fixture set.
fn fixture_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let is_jsonl = |path: &Path| {
        path.extension()
            .is_some_and(|extension| extension == "jsonl")
    };
    if std::fs::metadata(path)?.is_file() {
        if is_jsonl(path) {
            return Ok(vec![path.to_path_buf()]);
        }
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a `.jsonl` fixture file; give a directory of fixtures or one `.jsonl` file",
        ));
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let path = entry?.path();
        if is_jsonl(&path) && path.is_file() {
            found.push(path);
        }
    }
    if found.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "it holds no `*.jsonl` fixture file",
        ));
    }
    found.sort();
    Ok(found)
}

pub fn run(args: &Args) -> Exit {
    let root = files::catalogue_root(&args.catalogue);
    let (loaded, diagnostics) = match faultline_dsl::load(&root, &FileSystem) {
        Ok(loaded) => loaded,
        Err(error) => {
            err(&files::describe_io(&root, &error));
            return Exit::Failure;
        }
    };
    let compilation = faultline_compiler::Compiler::new().compile(&loaded);
    let example_failures: Vec<_> = compilation
        .diagnostics
        .iter()
        .filter(|d| d.code() == faultline_dsl::Code::ExampleFailed)
        .collect();
    let other_errors = diagnostics
        .iter()
        .chain(&compilation.diagnostics)
        .filter(|d| d.is_error() && d.code() != faultline_dsl::Code::ExampleFailed)
        .count();
    if other_errors > 0 {
        err(&format!(
            "error: `{}` has {other_errors} error(s) besides examples; run `faultline check` on it",
            root.display()
        ));
        return Exit::Findings;
    }
    let examples: usize = compilation
        .catalogue
        .rules
        .iter()
        .map(|rule| rule.examples.len() + rule.counterexamples.len())
        .sum();
    let mut report = String::new();
    for failure in &example_failures {
        let at = failure.primary_label().map(|label| {
            let position = label.file().line_column(label.span().start);
            format!("{}:{}", label.file().name(), position.line)
        });
        report.push_str(&format!(
            "FAIL example {}: {}\n",
            at.unwrap_or_default(),
            failure.message()
        ));
    }
    let mut passed = examples.saturating_sub(example_failures.len());
    let mut failed = example_failures.len();
    // The bundle as built, even when examples failed: fixtures still run against it.
    let bundle = compilation
        .built
        .as_ref()
        .and_then(|bytes| Bundle::from_bytes(bytes).ok());
    let fixtures = match fixture_files(&args.fixtures) {
        Ok(fixtures) => fixtures,
        Err(error) => {
            err(&files::describe_io(&args.fixtures, &error));
            return Exit::Failure;
        }
    };
    let mut invalid = 0;
    let (mut by_code, mut by_surface) = (Tally::default(), Tally::default());
    for path in &fixtures {
        let surface = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                err(&files::describe_io(path, &error));
                invalid += 1;
                continue;
            }
        };
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let at = format!("{}:{}", path.display(), index + 1);
            let parsed = serde_json::from_str::<Fixture>(line)
                .map_err(|error| error.to_string())
                .and_then(|fixture| clock(&fixture).map(|clock| (fixture, clock)));
            let (fixture, (now, reset)) = match parsed {
                Ok(parsed) => parsed,
                Err(error) => {
                    err(&format!("{at}: invalid fixture: {error}"));
                    invalid += 1;
                    continue;
                }
            };
            let Some(bundle) = bundle.as_ref() else {
                failed += 1;
                report.push_str(&format!(
                    "FAIL {at} {}: the catalogue did not build\n",
                    fixture.name
                ));
                continue;
            };
            let problems = check(bundle, &fixture, now, reset);
            by_code.count(tally_code(&fixture), problems.is_empty());
            by_surface.count(&surface, problems.is_empty());
            if problems.is_empty() {
                passed += 1;
            } else {
                failed += 1;
                report.push_str(&format!(
                    "FAIL {at} {} ({}): {}\n",
                    fixture.name,
                    fixture.source,
                    problems.join("; ")
                ));
            }
        }
    }
    if args.table {
        report.push('\n');
        report.push_str(&by_code.markdown("expected code"));
        report.push('\n');
        report.push_str(&by_surface.markdown("surface (fixture file)"));
        report.push('\n');
    }
    report.push_str(&format!("{passed} passed, {failed} failed\n"));
    out(&report);
    if invalid > 0 {
        Exit::Failure
    } else if failed > 0 {
        Exit::Findings
    } else {
        Exit::Clean
    }
}
