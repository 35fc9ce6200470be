//! `faultline classify`: evidence as JSON lines in, one classification per line out.

use std::io::BufRead as _;
use std::path::PathBuf;

use faultline_runtime::{Bundle, Evidence};

use super::files::{self, FileSystem};
use super::{Exit, embedded, err, out};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Evidence files, one JSON object per line; standard input when none is given.
    #[arg(value_name = "FILE")]
    inputs: Vec<PathBuf>,
    /// Classify with a compiled bundle.
    #[arg(long, value_name = "FILE", conflicts_with = "catalogue")]
    bundle: Option<PathBuf>,
    /// Classify with a catalogue, compiled now (a directory holding `catalogue.rules`, or a root
    /// file). Without `--bundle` or `--catalogue`, the catalogue built into this binary is used.
    #[arg(long, value_name = "CATALOGUE")]
    catalogue: Option<PathBuf>,
}

/// Compiles a catalogue into a bundle, reporting its errors.
fn compile(
    loaded: Result<
        (
            faultline_dsl::LoadedCatalogue,
            Vec<faultline_dsl::Diagnostic>,
        ),
        std::io::Error,
    >,
    what: &str,
) -> Result<Bundle, Exit> {
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
    let Some(bytes) = compilation.bundle.filter(|_| errors.is_empty()) else {
        err(&format!(
            "error: {what} has {} error(s); run `faultline check` on it",
            errors.len().max(1)
        ));
        return Err(Exit::Findings);
    };
    Bundle::from_bytes(&bytes).map_err(|error| {
        err(&format!(
            "error: {what} compiled to an invalid bundle: {error}"
        ));
        Exit::Failure
    })
}

fn bundle(args: &Args) -> Result<Bundle, Exit> {
    if let Some(path) = &args.bundle {
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
    if let Some(path) = &args.catalogue {
        let root = files::catalogue_root(path);
        return compile(
            faultline_dsl::load(&root, &FileSystem),
            &format!("`{}`", root.display()),
        );
    }
    let (sources, root) = embedded::sources();
    compile(
        faultline_dsl::load(root, &sources),
        "the built-in catalogue",
    )
}

/// Classifies every line; a bad line is reported with its number and the others still run.
fn classify_lines(
    bundle: &Bundle,
    name: &str,
    reader: &mut dyn std::io::BufRead,
    failed: &mut usize,
) {
    let mut output = String::new();
    for (index, line) in reader.lines().enumerate() {
        let number = index + 1;
        let line = match line {
            Ok(line) => line,
            Err(error) => {
                *failed += 1;
                err(&format!("{name}:{number}: cannot read the line: {error}"));
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Evidence>(&line) {
            Ok(evidence) => {
                let classification = bundle.classify(&evidence);
                output.push_str(&serde_json::to_string(&classification).unwrap_or_default());
                output.push('\n');
            }
            Err(error) => {
                *failed += 1;
                err(&format!("{name}:{number}: invalid evidence: {error}"));
            }
        }
        if output.len() > 64 << 10 {
            out(&std::mem::take(&mut output));
        }
    }
    out(&output);
}

pub fn run(args: &Args) -> Exit {
    let bundle = match bundle(args) {
        Ok(bundle) => bundle,
        Err(exit) => return exit,
    };
    let mut failed = 0;
    let mut unreadable = 0;
    if args.inputs.is_empty() {
        classify_lines(
            &bundle,
            "<stdin>",
            &mut std::io::stdin().lock(),
            &mut failed,
        );
    }
    for path in &args.inputs {
        match std::fs::File::open(path) {
            Ok(file) => classify_lines(
                &bundle,
                &path.display().to_string(),
                &mut std::io::BufReader::new(file),
                &mut failed,
            ),
            Err(error) => {
                unreadable += 1;
                err(&format!("error: cannot read `{}`: {error}", path.display()));
            }
        }
    }
    if unreadable > 0 {
        Exit::Failure
    } else if failed > 0 {
        Exit::Findings
    } else {
        Exit::Clean
    }
}
