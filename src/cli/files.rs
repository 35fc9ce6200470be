//! File access for the library crates: reading sources and finding catalogues under a path.

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

/// The name of the root file of a catalogue directory.
pub const ROOT_FILE: &str = "catalogue.rules";

/// The `.rules` files of a directory tree.
#[derive(Debug, Default)]
pub struct RulesFiles {
    /// Every `.rules` file, sorted, each real file once.
    pub files: Vec<PathBuf>,
    /// Symbolic links that lead out of the tree, which were not followed.
    pub links_outside: Vec<PathBuf>,
}

impl RulesFiles {
    /// Reports each link that leads out of the tree as an error (nothing behind it is read),
    /// and returns how many there were: each is a path the command could not use.
    pub fn report_links_outside(&self, directory: &Path) -> usize {
        for link in &self.links_outside {
            super::err(&format!(
                "error: `{}` is a symbolic link to a place outside `{}`; it is not read",
                link.display(),
                directory.display()
            ));
        }
        self.links_outside.len()
    }
}

/// Every `.rules` file under `directory`, recursively, each real file once.
///
/// Symbolic links are followed only while they stay inside `directory` (after resolving them):
/// a link out of the tree would make a check read and quote files the catalogue does not
/// hold, and a link loop would make it read the same files again and again.
pub fn rules_files(directory: &Path) -> std::io::Result<RulesFiles> {
    let root = directory.canonicalize()?;
    let mut walk = RulesFiles::default();
    let mut seen_directories = std::collections::HashSet::from([root.clone()]);
    let mut seen_files = std::collections::HashSet::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current)? {
            let path = entry?.path();
            let is_rules = path
                .extension()
                .is_some_and(|extension| extension == "rules");
            if !path.is_dir() && !is_rules {
                continue;
            }
            // A dangling link, or one into a place that cannot be read, holds no catalogue.
            let Ok(real) = path.canonicalize() else {
                continue;
            };
            if !real.starts_with(&root) {
                walk.links_outside.push(path);
                continue;
            }
            if real.is_dir() {
                if seen_directories.insert(real) {
                    pending.push(path);
                }
            } else if seen_files.insert(real) {
                walk.files.push(path);
            }
        }
    }
    walk.files.sort();
    walk.links_outside.sort();
    Ok(walk)
}

/// Every `.rules` file under `directory` ([`rules_files`]), refusing a directory that holds
/// none: a mistyped path must not pass as a clean check.
pub fn catalogue_files(directory: &Path) -> std::io::Result<RulesFiles> {
    let walk = rules_files(directory)?;
    if walk.files.is_empty() && walk.links_outside.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "it holds no `.rules` file; give a catalogue directory or a `.rules` file",
        ));
    }
    Ok(walk)
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
