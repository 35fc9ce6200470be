//! `faultline build`: compile a catalogue into a bundle file.

use std::path::PathBuf;

use faultline_dsl::render;

use super::files::{self, FileSystem};
use super::{Exit, err, out};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The catalogue: a directory holding `catalogue.rules`, or a root `.rules` file.
    #[arg(value_name = "CATALOGUE")]
    catalogue: PathBuf,
    /// Where to write the bundle.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    #[command(flatten)]
    budgets: super::Budgets,
}

pub fn run(args: &Args) -> Exit {
    let root = files::catalogue_root(&args.catalogue);
    let (loaded, mut diagnostics) = match faultline_dsl::load(&root, &FileSystem) {
        Ok(loaded) => loaded,
        Err(error) => {
            err(&files::describe_io(&root, &error));
            return Exit::Failure;
        }
    };
    let compilation = args.budgets.compiler().compile(&loaded);
    diagnostics.extend(compilation.diagnostics);
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let mut report = String::new();
    for diagnostic in &diagnostics {
        report.push_str(&render::human(diagnostic, render::HumanOptions::default()));
        report.push('\n');
    }
    out(&report);
    let bundle = match compilation.bundle {
        Some(bundle) if errors == 0 => bundle,
        _ => {
            out(&format!("not built: {errors} error(s)\n"));
            return Exit::Findings;
        }
    };
    if let Err(error) = std::fs::write(&args.output, &bundle) {
        err(&format!(
            "error: cannot write `{}`: {error}",
            args.output.display()
        ));
        return Exit::Failure;
    }
    out(&format!(
        "built `{}`: {} rules, {} bytes\n",
        args.output.display(),
        compilation.catalogue.rules.len(),
        bundle.len()
    ));
    Exit::Clean
}
