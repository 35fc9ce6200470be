//! What faultline's tests and benchmarks share, so that each of them reads the repository the
//! same way: its root, catalogue sources from the file system, the repository catalogue
//! compiled into a bundle (alone, or grown by generated rules), and fixture documents read from
//! a directory.
//!
//! A dev-only crate: it panics on a broken repository, which is how a test fails.

#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "a test kit reports a broken repository by panicking, as tests do"
)]

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use faultline_compiler::{Compilation, Compiler};
use faultline_dsl::{MemorySources, SourceProvider};
use faultline_runtime::{Bundle, Evidence};
use serde_json::Value;

/// The repository root: this checkout's, or the one `FAULTLINE_REPO_ROOT` names. The override
/// lets a catalogue author run already-built test binaries (the corpus, conformance and fixture
/// tests) against another checkout's catalogue and fixtures, a branch in a worktree for
/// example, without compiling them again there.
pub fn root() -> &'static Path {
    static ROOT: LazyLock<PathBuf> = LazyLock::new(|| {
        std::env::var_os("FAULTLINE_REPO_ROOT").map_or_else(
            || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/..")),
            PathBuf::from,
        )
    });
    &ROOT
}

/// Reads catalogue sources from the file system (the libraries do no I/O of their own), with no
/// confinement: tests read only the repository's own files.
#[derive(Debug, Default, Clone, Copy)]
pub struct FileSystem;

impl SourceProvider for FileSystem {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }
}

/// Compiles the catalogue rooted at `root_file` (relative to the repository root), which must
/// check clean.
pub fn compile(root_file: &str) -> Compilation {
    compile_from(&root().join(root_file), &FileSystem)
}

/// Compiles the catalogue rooted at `root_file` as `sources` provide it, which must check
/// clean.
pub fn compile_from(root_file: &Path, sources: &dyn SourceProvider) -> Compilation {
    let (loaded, diagnostics) = faultline_dsl::load(root_file, sources)
        .unwrap_or_else(|error| panic!("cannot read `{}`: {error}", root_file.display()));
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

/// Evidence from a JSON object, leaving out nulls and empty strings (as the Kandev conformance
/// data writes absent fields).
pub fn evidence_of(value: &Value) -> Evidence {
    let fields: serde_json::Map<String, Value> = value
        .as_object()
        .expect("evidence is a JSON object")
        .iter()
        .filter(|(_, value)| !value.is_null() && *value != "")
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    serde_json::from_value(Value::Object(fields))
        .unwrap_or_else(|error| panic!("not evidence: {error}: {value}"))
}

/// The root file of the repository's catalogue, relative to the repository root.
pub const CATALOGUE_ROOT: &str = "catalogue/catalogue.rules";

/// The repository's catalogue (`catalogue/`), compiled and loaded as a bundle.
pub fn catalogue_bundle() -> Bundle {
    bundle_of(&compile(CATALOGUE_ROOT))
}

/// The repository catalogue's sources (every `.rules` file under `catalogue/`, by its path
/// relative to the repository root) with `generated` added as `catalogue/generated.rules`,
/// which the root file includes: how the real catalogue would grow. Compile it from
/// [`CATALOGUE_ROOT`].
pub fn grown_catalogue(generated: String) -> MemorySources {
    let mut sources = MemorySources::new();
    let mut pending = vec![path("catalogue")];
    while let Some(directory) = pending.pop() {
        let entries = std::fs::read_dir(&directory)
            .unwrap_or_else(|error| panic!("cannot list `{}`: {error}", directory.display()));
        for entry in entries {
            let file = entry.expect("a directory entry").path();
            if file.is_dir() {
                pending.push(file);
            } else if file.extension().is_some_and(|found| found == "rules") {
                let relative = file
                    .strip_prefix(root())
                    .expect("a file under the repository root");
                let mut text = std::fs::read_to_string(&file)
                    .unwrap_or_else(|error| panic!("cannot read `{}`: {error}", file.display()));
                if relative == Path::new(CATALOGUE_ROOT) {
                    text.push_str("\ninclude \"generated.rules\"\n");
                }
                sources.insert(relative, text);
            }
        }
    }
    sources.insert("catalogue/generated.rules", generated);
    sources
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
