//! File access for the library crates: reading sources and finding catalogues under a path.

use std::path::{Path, PathBuf};

use faultline_dsl::SourceProvider;

/// Reads sources from the file system.
#[derive(Debug, Default)]
pub struct FileSystem;

impl SourceProvider for FileSystem {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
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
