//! Loading a catalogue: a root file and every file it `include`s, each parsed once.
//!
//! File access goes through [`SourceProvider`], so the library does no I/O of its own: the CLI
//! reads the file system, tests read memory.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::ast::{Item, SyntaxFile};
use crate::codes::Code;
use crate::diagnostic::Diagnostic;
use crate::parser::parse;
use crate::source::SourceFile;

/// Reads `.rules` files for the loader.
pub trait SourceProvider {
    /// The text of the file at `path`.
    fn read(&self, path: &Path) -> std::io::Result<String>;
}

/// An in-memory file set, for tests and for catalogues embedded in a binary.
#[derive(Debug, Default, Clone)]
pub struct MemorySources {
    files: BTreeMap<PathBuf, String>,
}

impl MemorySources {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a file.
    pub fn insert(&mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> &mut Self {
        self.files.insert(normalize_path(&path.into()), text.into());
        self
    }
}

impl SourceProvider for MemorySources {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        self.files
            .get(&normalize_path(path))
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"))
    }
}

/// One parsed file of a catalogue.
#[derive(Debug)]
pub struct LoadedFile {
    /// The normalized path it was read from.
    pub path: PathBuf,
    /// Its text, for diagnostics.
    pub source: Arc<SourceFile>,
    /// Its syntax tree (the items that parsed).
    pub syntax: SyntaxFile,
}

/// A root file and everything it includes, in first-visit order (root first).
#[derive(Debug)]
pub struct LoadedCatalogue {
    /// Every file, each once.
    pub files: Vec<LoadedFile>,
}

/// Resolves `.` and `..` components without touching the file system.
pub fn normalize_path(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let can_pop = matches!(out.components().next_back(), Some(Component::Normal(_)));
                if can_pop {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn display(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// Loads the catalogue rooted at `root`. Fails only when the root itself cannot be read; every
/// other problem (syntax, missing or cyclic includes) is a diagnostic.
pub fn load(
    root: &Path,
    sources: &dyn SourceProvider,
) -> std::io::Result<(LoadedCatalogue, Vec<Diagnostic>)> {
    load_with(root, sources, &mut |name: &str, text: String| {
        let source = SourceFile::new(name, text);
        let (syntax, diagnostics) = parse(&source);
        (source, syntax, diagnostics)
    })
}

/// How a loader turns a file's name and text into its source, tree and syntax diagnostics.
pub type ParseFn<'a> =
    dyn FnMut(&str, String) -> (Arc<SourceFile>, SyntaxFile, Vec<Diagnostic>) + 'a;

/// [`load`], with the parsing step supplied by the caller (an incremental session memoizes it).
pub fn load_with(
    root: &Path,
    sources: &dyn SourceProvider,
    parse: &mut ParseFn<'_>,
) -> std::io::Result<(LoadedCatalogue, Vec<Diagnostic>)> {
    let root = normalize_path(root);
    let text = sources.read(&root)?;
    let mut loader = Loader {
        sources,
        parse,
        files: Vec::new(),
        diagnostics: Vec::new(),
        stack: Vec::new(),
    };
    loader.visit(root, text);
    Ok((
        LoadedCatalogue {
            files: loader.files,
        },
        loader.diagnostics,
    ))
}

struct Loader<'a, 'p> {
    sources: &'a dyn SourceProvider,
    parse: &'a mut ParseFn<'p>,
    files: Vec<LoadedFile>,
    diagnostics: Vec<Diagnostic>,
    /// The chain of files being visited, for cycle detection.
    stack: Vec<PathBuf>,
}

impl Loader<'_, '_> {
    fn visit(&mut self, path: PathBuf, text: String) {
        let (source, syntax, diagnostics) = (self.parse)(&display(&path), text);
        self.diagnostics.extend(diagnostics);
        let includes: Vec<_> = syntax
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Include(include) => Some(include.path.clone()),
                _ => None,
            })
            .collect();
        let directory = path.parent().map(Path::to_path_buf).unwrap_or_default();
        self.stack.push(path.clone());
        self.files.push(LoadedFile {
            path,
            source: Arc::clone(&source),
            syntax,
        });
        for include in includes {
            let target = normalize_path(&directory.join(&include.value));
            if let Some(position) = self.stack.iter().position(|on_stack| *on_stack == target) {
                let chain: Vec<String> = self
                    .stack
                    .iter()
                    .skip(position)
                    .chain(std::iter::once(&target))
                    .map(|p| format!("`{}`", display(p)))
                    .collect();
                self.diagnostics.push(
                    Diagnostic::new(Code::IncludeCycle, format!("`{}` includes itself through a cycle", display(&target)))
                        .primary(&source, include.span, "this include closes the cycle")
                        .note(format!("include chain: {}", chain.join(" → ")))
                        .help("remove one `include` of the chain; each file needs to be included only once, usually from the root file"),
                );
                continue;
            }
            if self.files.iter().any(|file| file.path == target) {
                continue;
            }
            match self.sources.read(&target) {
                Ok(text) => self.visit(target, text),
                Err(error) => self.diagnostics.push(
                    Diagnostic::new(Code::IncludeNotFound, format!("cannot read included file `{}`: {error}", display(&target)))
                        .primary(&source, include.span, "included here")
                        .help(format!(
                            "include paths are relative to the directory of the including file (`{}`); correct the path or add the file",
                            if directory.as_os_str().is_empty() { ".".to_owned() } else { display(&directory) }
                        )),
                ),
            }
        }
        self.stack.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_resolve_relative_to_the_including_file_and_load_once() {
        let mut sources = MemorySources::new();
        sources
            .insert(
                "cat/catalogue.rules",
                "include \"a/one.rules\"\ninclude \"two.rules\"\n",
            )
            .insert("cat/a/one.rules", "include \"../two.rules\"\n")
            .insert("cat/two.rules", "provider \"x\"\n");
        let (catalogue, diagnostics) = load(Path::new("cat/catalogue.rules"), &sources).unwrap();
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let names: Vec<_> = catalogue
            .files
            .iter()
            .map(|f| f.source.name().to_owned())
            .collect();
        assert_eq!(
            names,
            ["cat/catalogue.rules", "cat/a/one.rules", "cat/two.rules"]
        );
    }

    #[test]
    fn cycles_and_missing_files_are_diagnostics() {
        let mut sources = MemorySources::new();
        sources
            .insert(
                "root.rules",
                "include \"b.rules\"\ninclude \"missing.rules\"\n",
            )
            .insert("b.rules", "include \"root.rules\"\n");
        let (_, diagnostics) = load(Path::new("root.rules"), &sources).unwrap();
        let codes: Vec<_> = diagnostics.iter().map(Diagnostic::code).collect();
        assert_eq!(codes, [Code::IncludeCycle, Code::IncludeNotFound]);
        assert!(diagnostics[0].notes()[0].contains("`root.rules` → `b.rules` → `root.rules`"));
    }

    #[test]
    fn normalize_keeps_leading_parent_components() {
        assert_eq!(
            normalize_path(Path::new("../a/./b/../c")),
            PathBuf::from("../a/c")
        );
    }
}
