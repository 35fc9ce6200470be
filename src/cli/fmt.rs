//! `faultline fmt`: canonical formatting, in place or as a check with a diff.

use std::path::PathBuf;

use faultline_dsl::{FormatError, SourceFile, render};

use super::files;
use super::{Exit, err, out};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files or directories (searched for `.rules` files).
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Do not write; print a diff for every file that is not formatted and exit 1.
    #[arg(long)]
    check: bool,
}

pub fn run(args: &Args) -> Exit {
    let mut targets = Vec::new();
    let mut io_failures = 0;
    for path in &args.paths {
        if path.is_dir() {
            match files::catalogue_files(path) {
                Ok(walk) => {
                    // A link out of the directory must not lead `fmt` to read, or rewrite, a
                    // file elsewhere.
                    io_failures += walk.report_links_outside(path);
                    targets.extend(walk.files);
                }
                Err(error) => {
                    io_failures += 1;
                    err(&files::describe_io(path, &error));
                }
            }
        } else {
            targets.push(path.clone());
        }
    }
    let mut unformatted = 0;
    let mut unparsable = 0;
    let mut written = 0;
    for path in &targets {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                io_failures += 1;
                err(&files::describe_io(path, &error));
                continue;
            }
        };
        let source = SourceFile::new(path.to_string_lossy(), text);
        let formatted = match faultline_dsl::format(&source) {
            Ok(formatted) => formatted,
            Err(FormatError::Syntax(diagnostics)) => {
                unparsable += 1;
                let mut report = String::new();
                for diagnostic in &diagnostics {
                    report.push_str(&render::human(diagnostic, render::HumanOptions::default()));
                }
                out(&report);
                continue;
            }
            Err(other) => {
                unparsable += 1;
                err(&format!(
                    "error: cannot format `{}`: {other}",
                    path.display()
                ));
                continue;
            }
        };
        if formatted == source.text() {
            continue;
        }
        if args.check {
            unformatted += 1;
            let diff = similar::TextDiff::from_lines(source.text(), &formatted);
            let name = path.display().to_string();
            out(&diff
                .unified_diff()
                .context_radius(3)
                .header(&name, &format!("{name} (formatted)"))
                .to_string());
        } else {
            match std::fs::write(path, &formatted) {
                Ok(()) => written += 1,
                Err(error) => {
                    io_failures += 1;
                    err(&format!(
                        "error: cannot write `{}`: {error}",
                        path.display()
                    ));
                }
            }
        }
    }
    if args.check {
        out(&format!(
            "{} of {} file(s) would be reformatted\n",
            unformatted,
            targets.len()
        ));
    } else {
        out(&format!(
            "formatted {} of {} file(s)\n",
            written,
            targets.len()
        ));
    }
    if io_failures > 0 {
        Exit::Failure
    } else if unformatted > 0 || unparsable > 0 {
        Exit::Findings
    } else {
        Exit::Clean
    }
}
