//! What faultline's tests and benchmarks share, so that each of them reads the repository the
//! same way: its root, catalogue sources from the file system, the repository catalogue
//! compiled into a bundle, and fixture documents read from a directory.
//!
//! A dev-only crate: it panics on a broken repository, which is how a test fails.

#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "a test kit reports a broken repository by panicking, as tests do"
)]

use std::path::{Path, PathBuf};

use faultline_compiler::{Compilation, Compiler};
use faultline_runtime::Bundle;

/// The repository root.
pub fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// Reads catalogue sources from the file system (the libraries do no I/O of their own), with no
/// confinement: tests read only the repository's own files.
#[derive(Debug, Default, Clone, Copy)]
pub struct FileSystem;

impl faultline_dsl::SourceProvider for FileSystem {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }
}

/// Compiles the catalogue rooted at `root_file` (relative to the repository root), which must
/// check clean.
pub fn compile(root_file: &str) -> Compilation {
    let path = root().join(root_file);
    let (loaded, diagnostics) = faultline_dsl::load(&path, &FileSystem)
        .unwrap_or_else(|error| panic!("cannot read `{}`: {error}", path.display()));
    assert!(
        !diagnostics.iter().any(faultline_dsl::Diagnostic::is_error),
        "{diagnostics:#?}"
    );
    let compilation = Compiler::new().compile(&loaded);
    assert!(!compilation.has_errors(), "{:#?}", compilation.diagnostics);
    compilation
}

/// The bundle of a compilation that checked clean.
pub fn bundle_of(compilation: &Compilation) -> Bundle {
    let bytes = compilation
        .bundle
        .as_ref()
        .expect("a clean compilation has a bundle");
    Bundle::from_bytes(bytes).expect("a freshly built bundle loads")
}

/// The repository's catalogue (`catalogue/`), compiled and loaded as a bundle.
pub fn catalogue_bundle() -> Bundle {
    bundle_of(&compile("catalogue/catalogue.rules"))
}

/// Every file of `directory` (relative to the repository root) whose name ends in
/// `.{extension}`, as `(path relative to the root, text)`, sorted by path.
pub fn documents(directory: &str, extension: &str) -> Vec<(String, String)> {
    let path = root().join(directory);
    let entries = std::fs::read_dir(&path)
        .unwrap_or_else(|error| panic!("cannot list `{}`: {error}", path.display()));
    let mut documents: Vec<(String, String)> = entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|file| file.extension().is_some_and(|found| found == extension))
        .map(|file| {
            let name = file
                .file_name()
                .map(|name| name.to_string_lossy().into_owned());
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|error| panic!("cannot read `{}`: {error}", file.display()));
            (format!("{directory}/{}", name.unwrap_or_default()), text)
        })
        .collect();
    documents.sort();
    documents
}

/// `relative` under the repository root.
pub fn path(relative: &str) -> PathBuf {
    root().join(relative)
}
