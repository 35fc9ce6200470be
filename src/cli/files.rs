//! File access for the library crates: reading sources and finding catalogues under a path.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use faultline_dsl::SourceProvider;

/// Reads sources from the file system. It resolves symbolic links for the loader, which
/// reads only files whose real location is inside the real directory of the catalogue's root
/// file (FL0037 otherwise, the target never opened); see `faultline_dsl::SourceProvider`.
#[derive(Debug, Default)]
pub struct FileSystem;

impl SourceProvider for FileSystem {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        let bytes = std::fs::read(path)?;
        String::from_utf8(bytes).map_err(|error| {
            // The position only: nothing of a file that is not text is ever shown.
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "it is not UTF-8 (invalid byte at offset {})",
                    error.utf8_error().valid_up_to()
                ),
            )
        })
    }

    fn resolve(&self, path: &Path) -> std::io::Result<PathBuf> {
        // The canonical path: absolute, no `.`/`..`, every symbolic link followed (stat and
        // readlink only; nothing is opened).
        let path = if path.as_os_str().is_empty() {
            Path::new(".")
        } else {
            path
        };
        std::fs::canonicalize(path)
    }
}

impl FileSystem {
    /// Whether `path` really lies inside `directory`, symbolic links resolved: the
    /// confinement the loader applies to includes, for commands that walk a directory
    /// themselves (`fmt`), so that a link found there never leads them to read or write a file
    /// elsewhere.
    pub fn is_inside(directory: &Path, path: &Path) -> std::io::Result<bool> {
        Ok(FileSystem
            .resolve(path)?
            .starts_with(FileSystem.resolve(directory)?))
    }
}

/// The name of the root file of a catalogue directory.
pub const ROOT_FILE: &str = "catalogue.rules";

/// Every `.rules` file under `directory`, sorted, recursively.
pub fn rules_files(directory: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|extension| extension == "rules")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// An error about a path the user gave, for exit code 2.
pub fn describe_io(path: &Path, error: &std::io::Error) -> String {
    format!("error: cannot read `{}`: {error}", path.display())
}

/// The root file of a catalogue given as a directory (its `catalogue.rules`) or a file.
pub fn catalogue_root(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(ROOT_FILE)
    } else {
        path.to_path_buf()
    }
}

/// Runs `handle` on every non-blank line of `inputs` (standard input when there are none), in
/// order, with the input's name and the line number. Its `Ok` text is written as an output line
/// (in batches); its `Err` is reported as `name:number: error` and the other lines still run.
/// Exit: 2 if an input could not be read, else 1 if a line failed, else 0.
pub fn json_lines(
    inputs: &[PathBuf],
    mut handle: impl FnMut(&str, usize, &str) -> Result<String, String>,
) -> super::Exit {
    let mut failed = 0;
    let mut unreadable = 0;
    let mut run = |name: &str, reader: &mut dyn std::io::BufRead| {
        let mut output = String::new();
        for (index, line) in reader.lines().enumerate() {
            let number = index + 1;
            let result = match line {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => handle(name, number, &line),
                Err(error) => Err(format!("cannot read the line: {error}")),
            };
            match result {
                Ok(text) => {
                    output.push_str(&text);
                    output.push('\n');
                }
                Err(error) => {
                    failed += 1;
                    super::err(&format!("{name}:{number}: {error}"));
                }
            }
            if output.len() > 64 << 10 {
                super::out(&std::mem::take(&mut output));
            }
        }
        super::out(&output);
    };
    if inputs.is_empty() {
        run("<stdin>", &mut std::io::stdin().lock());
    }
    for path in inputs {
        match std::fs::File::open(path) {
            Ok(file) => run(
                &path.display().to_string(),
                &mut std::io::BufReader::new(file),
            ),
            Err(error) => {
                unreadable += 1;
                super::err(&format!("error: cannot read `{}`: {error}", path.display()));
            }
        }
    }
    if unreadable > 0 {
        super::Exit::Failure
    } else if failed > 0 {
        super::Exit::Findings
    } else {
        super::Exit::Clean
    }
}
