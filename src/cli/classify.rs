//! `faultline classify`: evidence as JSON lines in, one classification per line out.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use faultline_runtime::parse_instant;
use faultline_runtime::{Bundle, Evidence};

use serde_json::Value;

use super::files::{self, FileSystem};
use super::json_lines::{self, LineError};
use super::{Exit, embedded, err};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Evidence files, one JSON object per line; `-` or none: standard input.
    #[arg(value_name = "FILE")]
    inputs: Vec<PathBuf>,
    /// Classify with a compiled bundle.
    #[arg(long, value_name = "FILE", conflicts_with = "catalogue")]
    bundle: Option<PathBuf>,
    /// Classify with a catalogue, compiled now (a directory holding `catalogue.rules`, or a root
    /// file). Without `--bundle` or `--catalogue`, the catalogue built into this binary is used.
    #[arg(long, value_name = "CATALOGUE")]
    catalogue: Option<PathBuf>,
    /// Fix the clock (RFC 3339, such as `2026-09-01T12:00:00Z`) that reset times are validated
    /// against, for reproducible output; a line's own `now` field overrides it. Default: the
    /// system clock.
    #[arg(long, value_name = "INSTANT", value_parser = parse_instant)]
    now: Option<SystemTime>,
    /// Classify on N threads (default: one per core, at most 8). Answers keep the input's order
    /// either way; `--jobs 1` answers on the reading thread, the least latency for a co-process
    /// that writes one line and waits.
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<NonZeroUsize>,
}

pub(super) use faultline_serve::{evidence_of, typed};

/// Parses a line of evidence (a JSON object), for `explain`.
pub(super) fn parse_line(
    line: &str,
    default_now: Option<SystemTime>,
) -> Result<(Evidence, SystemTime), String> {
    let fields = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(mut fields)) => {
            // `explain` takes the same lines as `classify`, whose callers may tag them.
            fields.remove("id");
            fields
        }
        Ok(other) => {
            return Err(format!(
                "invalid evidence: expected a JSON object, found {}",
                json_lines::kind(&other)
            ));
        }
        Err(error) => return Err(format!("invalid evidence: {error}")),
    };
    evidence_of(fields, default_now)
        .map_err(|error| format!("invalid evidence: {}", error.describe()))
}

/// Compiles a catalogue into a bundle, reporting its errors.
pub(super) fn compile(
    loaded: Result<
        (
            faultline_dsl::LoadedCatalogue,
            Vec<faultline_dsl::Diagnostic>,
        ),
        std::io::Error,
    >,
    what: &str,
) -> Result<(faultline_compiler::Compilation, Bundle), Exit> {
    let (loaded, diagnostics) = loaded.map_err(|error| {
        err(&format!("error: cannot read {what}: {error}"));
        Exit::Failure
    })?;
    let compilation = faultline_compiler::Compiler::new().compile(&loaded);
    let errors: Vec<_> = diagnostics
        .iter()
        .chain(&compilation.diagnostics)
        .filter(|d| d.is_error())
        .collect();
    let Some(bytes) = compilation.bundle.as_ref().filter(|_| errors.is_empty()) else {
        err(&format!(
            "error: {what} has {} error(s); run `faultline check` on it",
            errors.len().max(1)
        ));
        return Err(Exit::Findings);
    };
    let bundle = Bundle::from_bytes(bytes).map_err(|error| {
        err(&format!(
            "error: {what} compiled to an invalid bundle: {error}"
        ));
        Exit::Failure
    })?;
    Ok((compilation, bundle))
}

/// Loads the bundle a command asked for: a bundle file, a catalogue compiled now, or the
/// built-in catalogue.
pub(super) fn load_bundle(
    bundle: Option<&PathBuf>,
    catalogue: Option<&PathBuf>,
) -> Result<Bundle, Exit> {
    if let Some(path) = bundle {
        let bytes = std::fs::read(path).map_err(|error| {
            err(&format!("error: cannot read `{}`: {error}", path.display()));
            Exit::Failure
        })?;
        return Bundle::from_bytes(&bytes).map_err(|error| {
            err(&format!(
                "error: `{}` is not a valid bundle: {error}",
                path.display()
            ));
            Exit::Failure
        });
    }
    if let Some(path) = catalogue {
        let root = files::catalogue_root(path);
        return compile(
            faultline_dsl::load(&root, &FileSystem),
            &format!("`{}`", root.display()),
        )
        .map(|(_, bundle)| bundle);
    }
    embedded_bundle()
}

/// The provider ids the catalogue declares (`provider "…"`): of `catalogue` if given, else of
/// the built-in one (a compiled bundle does not carry its declarations). Only the files are
/// parsed; nothing is compiled.
pub(super) fn declared_providers(catalogue: Option<&PathBuf>) -> Result<Vec<String>, Exit> {
    let loaded = match catalogue {
        Some(path) => faultline_dsl::load(&files::catalogue_root(path), &FileSystem),
        None => {
            let (sources, root) = embedded::sources();
            faultline_dsl::load(root, &sources)
        }
    };
    let Ok((loaded, _)) = loaded else {
        err(
            "error: cannot read the catalogue's provider declarations; run `faultline check` on it",
        );
        return Err(Exit::Failure);
    };
    Ok(loaded
        .files
        .iter()
        .flat_map(|file| &file.syntax.items)
        .filter_map(|item| match item {
            faultline_dsl::ast::Item::Provider(provider) => Some(provider.id.value.clone()),
            _ => None,
        })
        .collect())
}

/// The built-in catalogue's bundle. Compiling it takes most of a second, so the bundle is
/// cached (under `$FAULTLINE_CACHE_DIR`, else `$XDG_CACHE_HOME/faultline`, else
/// `~/.cache/faultline`; an empty `FAULTLINE_CACHE_DIR` turns the cache off), keyed by the
/// catalogue's sources and this executable. A cached bundle is untrusted like any other: it
/// is fully validated on load, and a bad one is simply rebuilt.
fn embedded_bundle() -> Result<Bundle, Exit> {
    embedded_bundle_file().map(|(bundle, _)| bundle)
}

/// The built-in catalogue's bundle and its file's bytes (what `faultline serve` serves and
/// stores beside session logs).
pub(super) fn embedded_bundle_file() -> Result<(Bundle, Vec<u8>), Exit> {
    let (sources, root) = embedded::sources();
    let loaded = faultline_dsl::load(root, &sources);
    let cached = loaded
        .as_ref()
        .ok()
        .and_then(|(loaded, _)| cache_path(loaded));
    if let Some((bundle, bytes)) = cached
        .as_ref()
        .and_then(|path| std::fs::read(path).ok())
        .and_then(|bytes| Some((Bundle::from_bytes(&bytes).ok()?, bytes)))
    {
        return Ok((bundle, bytes));
    }
    let (compilation, bundle) = compile(loaded, "the built-in catalogue")?;
    let bytes = compilation.bundle.unwrap_or_default();
    if let Some(path) = cached {
        store(&path, &bytes);
    }
    Ok((bundle, bytes))
}

fn cache_path(loaded: &faultline_dsl::LoadedCatalogue) -> Option<PathBuf> {
    use std::fmt::Write as _;
    let directory = match std::env::var_os("FAULTLINE_CACHE_DIR") {
        Some(directory) if directory.is_empty() => return None,
        Some(directory) => PathBuf::from(directory),
        None => match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
            Some(directory) => PathBuf::from(directory).join("faultline"),
            None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/faultline"),
        },
    };
    // The executable's identity stands for the compiler that built the bundle.
    let executable = std::env::current_exe().ok()?.metadata().ok()?;
    let built = executable
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    let mut key = String::new();
    for byte in faultline_compiler::manifest_hash(loaded).iter().take(12) {
        let _ = write!(key, "{byte:02x}");
    }
    let name = format!(
        "builtin-{key}-{}-{}-{}.flb",
        env!("CARGO_PKG_VERSION"),
        executable.len(),
        built.as_nanos()
    );
    Some(directory.join(name))
}

/// Writes the cache file atomically (a reader never sees half a file); failures only cost the
/// next run a compilation.
fn store(path: &std::path::Path, bytes: &[u8]) {
    let Some(directory) = path.parent() else {
        return;
    };
    if std::fs::create_dir_all(directory).is_err() {
        return;
    }
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&temporary, bytes).is_ok() && std::fs::rename(&temporary, path).is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    // Bundles of other builds linger after every rebuild: drop those unused for a day.
    let day = std::time::Duration::from_secs(86_400);
    for entry in std::fs::read_dir(directory).into_iter().flatten().flatten() {
        let stale = entry
            .metadata()
            .and_then(|metadata| metadata.accessed().or_else(|_| metadata.modified()))
            .ok()
            .and_then(|used| used.elapsed().ok())
            .is_some_and(|age| age > day);
        let ours = entry.file_name().to_string_lossy().starts_with("builtin-");
        if ours && stale && entry.path() != path {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Room for a classification's fields besides its excerpt (code, rule id, flags, hints): the
/// longest answers of the fixtures hold about 400 bytes of them.
const ANSWER_FIELDS_BYTES: usize = 512;

/// Classification answers: one classification object per line. The answer to a line depends
/// on that line alone, so lines may be answered on several threads, a clone each.
#[derive(Clone)]
struct Classifier {
    bundle: Arc<Bundle>,
    now: Option<SystemTime>,
}

impl json_lines::Answers for Classifier {
    fn subject(&self) -> &'static str {
        "evidence"
    }

    fn answer(&mut self, line: json_lines::Line<'_>) -> Result<String, LineError> {
        let (evidence, now) = evidence_of(line.fields, self.now)?;
        let classification = self.bundle.classify_at(&evidence, now);
        // Sized for the answer at once: growing from empty cost a reallocation per doubling on
        // every line.
        let mut answer = Vec::with_capacity(classification.excerpt.len() + ANSWER_FIELDS_BYTES);
        serde_json::to_writer(&mut answer, &classification).map_err(|error| {
            LineError::line(format!("cannot write the classification: {error}"))
        })?;
        String::from_utf8(answer)
            .map_err(|error| LineError::line(format!("cannot write the classification: {error}")))
    }

    fn error_line(
        &mut self,
        input: &str,
        number: usize,
        id: Option<&Value>,
        error: &LineError,
    ) -> String {
        json_lines::error_object(input, number, id, error)
    }
}

pub fn run(args: &Args) -> Exit {
    let bundle = match load_bundle(args.bundle.as_ref(), args.catalogue.as_ref()) {
        Ok(bundle) => bundle,
        Err(exit) => return exit,
    };
    let mut classifier = Classifier {
        bundle: Arc::new(bundle),
        now: args.now,
    };
    let jobs = args.jobs.unwrap_or_else(json_lines::default_jobs);
    if jobs.get() == 1 {
        json_lines::run(&args.inputs, &mut classifier)
    } else {
        json_lines::run_parallel(&args.inputs, classifier, jobs)
    }
}
