//! `faultline check`: load, check and report.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use faultline_dsl::{Code, Diagnostic, SourceFile, Span, load, normalize_path, render};

use super::files::{self, FileSystem, ROOT_FILE};
use super::{ColorChoice, Exit, err, out};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    /// Reports with the source underlined.
    #[default]
    Human,
    /// One JSON document (see docs/diagnostics.md).
    Json,
    /// A SARIF 2.1.0 log, for code-scanning tools.
    Sarif,
    /// GitHub Actions workflow commands (annotations on the pull request).
    Github,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files or directories. A directory holding `catalogue.rules` is one catalogue rooted
    /// there; any other directory is searched for `.rules` files, each checked as a root
    /// unless another one includes it.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    deny_warnings: bool,
    /// Colour human output.
    #[arg(long, value_enum, default_value_t)]
    color: ColorChoice,
    /// Keep running, and check again whenever a `.rules` file under PATH changes.
    #[arg(long)]
    watch: bool,
    #[command(flatten)]
    budgets: super::Budgets,
}

#[derive(Default)]
struct Run {
    compiler: faultline_compiler::Compiler,
    /// One incremental session per catalogue root, kept across watch-mode runs.
    sessions: std::collections::HashMap<PathBuf, faultline_compiler::CompileSession>,
    diagnostics: Vec<Diagnostic>,
    catalogues: usize,
    rules: usize,
    io_failures: usize,
}

impl Run {
    fn check_root(&mut self, root: &Path) -> Option<HashSet<PathBuf>> {
        let compiler = self.compiler;
        let session = self
            .sessions
            .entry(root.to_path_buf())
            .or_insert_with(|| faultline_compiler::CompileSession::new(compiler));
        match session.load(root, &FileSystem) {
            Ok((loaded, diagnostics)) => {
                // Every mistake in one run: a block that does not parse is left out like a rule
                // with errors, and the rules that checked clean are still analysed.
                let compilation = session.compile_loaded(&loaded, &diagnostics);
                self.diagnostics.extend(diagnostics);
                let (diagnostics, rules) =
                    (compilation.diagnostics, compilation.catalogue.rules.len());
                self.diagnostics.extend(diagnostics);
                self.catalogues += 1;
                self.rules += rules;
                Some(loaded.files.iter().map(|file| file.path.clone()).collect())
            }
            Err(error) => {
                self.io_failures += 1;
                err(&files::describe_io(root, &error));
                None
            }
        }
    }

    fn check_directory(&mut self, directory: &Path) {
        let walk = match files::catalogue_files(directory) {
            Ok(walk) => walk,
            Err(error) => {
                self.io_failures += 1;
                err(&files::describe_io(directory, &error));
                return;
            }
        };
        let root = directory.join(ROOT_FILE);
        if root.is_file() {
            // The walk only looks for files no include reaches. A link out of the tree is no
            // such file: the catalogue cannot include it (FL0037), so it is passed over.
            let reached = self.check_root(&root).unwrap_or_default();
            for candidate in walk.files {
                if !reached.contains(&normalize_path(&candidate)) {
                    self.unreachable(&candidate, &root);
                }
            }
            return;
        }
        // Without a root file every file is a root, except those another file includes; a
        // link out of the tree would be a root outside it, which is never read.
        self.io_failures += walk.report_links_outside(directory);
        let candidates = walk.files;
        let mut included = HashSet::new();
        for candidate in &candidates {
            if let Ok((loaded, _)) = load(candidate, &FileSystem) {
                included.extend(loaded.files.iter().skip(1).map(|file| file.path.clone()));
            }
        }
        for candidate in candidates {
            if !included.contains(&normalize_path(&candidate)) {
                self.check_root(&candidate);
            }
        }
    }

    fn unreachable(&mut self, path: &Path, root: &Path) {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                self.io_failures += 1;
                err(&files::describe_io(path, &error));
                return;
            }
        };
        let first_line_end = text.find('\n').unwrap_or(text.len());
        let file = SourceFile::new(normalize_path(path).to_string_lossy(), text);
        let root_directory = root.parent().unwrap_or(Path::new(""));
        let relative = path
            .strip_prefix(root_directory)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
        self.diagnostics.push(
            Diagnostic::new(Code::UnreachableFile, format!("`{}` is not included by `{}`", file.name(), root.display()))
                .primary(&file, Span::new(0, first_line_end), "no `include` reaches this file")
                .help(format!("add `include \"{relative}\"` (relative to the including file) to the catalogue, or delete the file")),
        );
    }
}

fn dedupe(diagnostics: &mut Vec<Diagnostic>) {
    diagnostics.sort_by_key(Diagnostic::sort_key);
    let mut seen = HashSet::new();
    diagnostics
        .retain(|diagnostic| seen.insert((diagnostic.sort_key(), diagnostic.message().to_owned())));
}

pub fn run(args: &Args) -> Exit {
    let mut run = Run {
        compiler: args.budgets.compiler(),
        ..Run::default()
    };
    // Taken before the first check, so that an edit made while it runs is not missed.
    let mut seen = if args.watch {
        fingerprint(&args.paths)
    } else {
        Vec::new()
    };
    let exit = run_once(&mut run, args);
    if !args.watch {
        // The process ends now: freeing the sessions' automata and syntax trees one by one
        // would only delay it (a tenth of a second for the repository catalogue, a perf
        // profile); the operating system takes the memory back whole.
        std::mem::forget(run);
        return exit;
    }
    // Watch mode runs until interrupted; each change is checked with the sessions' memory, so
    // only what the edit reaches is recomputed.
    loop {
        std::thread::sleep(std::time::Duration::from_millis(250));
        let now = fingerprint(&args.paths);
        if now != seen {
            seen = now;
            out("\n--- change detected, checking again ---\n");
            run_once(&mut run, args);
        }
    }
}

/// Names, sizes and modification times of every `.rules` file under the paths.
fn fingerprint(paths: &[PathBuf]) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    let mut found = Vec::new();
    for path in paths {
        let files = if path.is_dir() {
            files::rules_files(path).unwrap_or_default().files
        } else {
            vec![path.clone()]
        };
        for file in files {
            let metadata = std::fs::metadata(&file).ok();
            let len = metadata.as_ref().map_or(0, std::fs::Metadata::len);
            found.push((file, len, metadata.and_then(|m| m.modified().ok())));
        }
    }
    found
}

fn run_once(run: &mut Run, args: &Args) -> Exit {
    run.diagnostics.clear();
    run.catalogues = 0;
    run.rules = 0;
    run.io_failures = 0;
    for path in &args.paths {
        if path.is_dir() {
            run.check_directory(path);
        } else if path.is_file() {
            run.check_root(path);
        } else {
            run.io_failures += 1;
            err(&format!(
                "error: `{}` is not a file or directory",
                path.display()
            ));
        }
    }
    dedupe(&mut run.diagnostics);
    let (errors, warnings) = render::counts(&run.diagnostics);
    match args.format {
        Format::Human => {
            let options = render::HumanOptions {
                color: args.color.enabled(),
                ..Default::default()
            };
            let mut text = String::new();
            for diagnostic in &run.diagnostics {
                text.push_str(&render::human(diagnostic, options));
                text.push('\n');
            }
            text.push_str(&format!(
                "checked {} catalogue{}, {} rule{}: {} error{}, {} warning{}\n",
                run.catalogues,
                plural(run.catalogues),
                run.rules,
                plural(run.rules),
                errors,
                plural(errors),
                warnings,
                plural(warnings),
            ));
            out(&text);
        }
        Format::Json => out(&(render::json(&run.diagnostics) + "\n")),
        Format::Sarif => out(&(render::sarif(&run.diagnostics, env!("CARGO_PKG_VERSION")) + "\n")),
        Format::Github => out(&render::github(&run.diagnostics)),
    }
    if run.io_failures > 0 {
        Exit::Failure
    } else if errors > 0 || (args.deny_warnings && warnings > 0) {
        Exit::Findings
    } else {
        Exit::Clean
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
