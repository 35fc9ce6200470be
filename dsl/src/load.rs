//! Loading a catalogue: a root file and every file it `include`s, each parsed once.
//!
//! File access goes through [`SourceProvider`], so the library does no I/O of its own: the CLI
//! reads the file system, tests read memory.
//!
//! A catalogue is confined to its root directory, the directory of its root file: a catalogue
//! checked in CI may come from an untrusted pull request, and checking it must not read (let
//! alone quote in a diagnostic) anything else on the machine. The loader enforces this in two
//! steps. First lexically: an absolute include path, or one whose `..` components climb above
//! the root directory, is refused (FL0037) without touching the file system. Then through the
//! provider: [`SourceProvider::resolve`] gives the real location of the root directory and of
//! every included file (a file-system provider resolves symbolic links), and a file whose real
//! location is not inside the real root directory is refused (FL0037) without being read. The
//! root file itself must also really be inside its directory, else [`load`] fails. An included
//! file that is not text (not UTF-8, or holding control characters) is refused too (FL0038),
//! rather than parsed and quoted.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use crate::ast::{Item, SyntaxFile};
use crate::codes::Code;
use crate::diagnostic::Diagnostic;
use crate::parser::parse;
use crate::source::{SourceFile, Span};

/// Reads `.rules` files for the loader.
///
/// The loader confines a catalogue to the directory of its root file (see the module
/// documentation): it checks include paths lexically itself, and relies on [`resolve`] for
/// what only the storage knows. A provider over storage with symbolic links (a file system)
/// must override [`resolve`] to resolve them; otherwise a link inside the catalogue could lead
/// the loader to read any file.
///
/// [`resolve`]: SourceProvider::resolve
pub trait SourceProvider {
    /// The text of the file at `path`. A file that is not UTF-8 is an error of kind
    /// [`std::io::ErrorKind::InvalidData`] (reported as FL0038 for an included file).
    fn read(&self, path: &Path) -> std::io::Result<String>;

    /// Where `path` (a file or a directory) really is: with every symbolic link resolved, in a
    /// form that compares with [`Path::starts_with`] against the resolved root directory (for a
    /// file system, the canonical absolute path; an empty `path` means the current directory).
    /// The loader only ever reads resolved paths that lie inside the resolved root directory.
    /// An error means the path does not exist or cannot be resolved, and is reported like a
    /// failed read. The default, for storage without links, is the lexically normalized path.
    fn resolve(&self, path: &Path) -> std::io::Result<PathBuf> {
        Ok(normalize_path(path))
    }
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

fn display_directory(path: &Path) -> String {
    if path.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        display(path)
    }
}

/// Why a text is not a `.rules` source file, if it is not: it holds a control character other
/// than tab, line feed, carriage return or form feed (a NUL byte marks a binary file; escape
/// sequences would reach the terminal if the text were quoted). Names the position, never the
/// content.
fn non_text_reason(text: &str) -> Option<String> {
    let (index, character) = text
        .char_indices()
        .find(|(_, c)| c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\u{c}'))?;
    let before = text.get(..index).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    Some(format!(
        "it holds the control character U+{:04X} on line {line}",
        u32::from(character)
    ))
}

/// Loads the catalogue rooted at `root`. Fails only when the root itself cannot be read (or
/// really lies outside its own directory, through a symbolic link); every other problem
/// (syntax, missing, cyclic, escaping or non-text includes) is a diagnostic.
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
    let root_directory = root.parent().map(Path::to_path_buf).unwrap_or_default();
    let real_root_directory = sources.resolve(&root_directory)?;
    let real_root = sources.resolve(&root)?;
    if !real_root.starts_with(&real_root_directory) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "`{}` is a symbolic link to a file outside its directory `{}`; a catalogue's files must lie inside the directory of its root file",
                display(&root),
                display_directory(&root_directory)
            ),
        ));
    }
    let text = sources.read(&real_root)?;
    let relative = root
        .strip_prefix(&root_directory)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| root.clone());
    let mut loader = Loader {
        sources,
        parse,
        root_directory,
        real_root_directory,
        files: Vec::new(),
        real_paths: Vec::new(),
        diagnostics: Vec::new(),
        stack: Vec::new(),
    };
    loader.visit(root, &relative, real_root, text);
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
    /// The directory of the root file, as given (normalized) and as the provider resolves it.
    root_directory: PathBuf,
    real_root_directory: PathBuf,
    files: Vec<LoadedFile>,
    /// The resolved path of each of `files`, index for index: a file reached through two
    /// paths (a symbolic link inside the catalogue) is loaded once.
    real_paths: Vec<PathBuf>,
    diagnostics: Vec<Diagnostic>,
    /// The chain of files being visited (indices into `files`), for cycle detection.
    stack: Vec<usize>,
}

/// How an include leaves the root directory.
enum Escape {
    /// The include path is absolute.
    Absolute,
    /// Its `..` components climb above the root directory.
    Climbs,
    /// It resolves, through a symbolic link, to a file outside the root directory.
    Link,
}

impl Loader<'_, '_> {
    /// Parses a file and follows its includes. `relative` is its path relative to the root
    /// directory (no `..` components), `real` where the provider resolved it.
    fn visit(&mut self, path: PathBuf, relative: &Path, real: PathBuf, text: String) {
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
        let relative_directory = relative.parent().map(Path::to_path_buf).unwrap_or_default();
        self.stack.push(self.files.len());
        self.files.push(LoadedFile {
            path,
            source: Arc::clone(&source),
            syntax,
        });
        self.real_paths.push(real);
        for include in includes {
            let requested = Path::new(&include.value);
            if requested.has_root()
                || requested
                    .components()
                    .any(|component| matches!(component, Component::Prefix(_)))
            {
                self.escape(&source, include.span, &include.value, Escape::Absolute);
                continue;
            }
            let relative_target = normalize_path(&relative_directory.join(requested));
            if relative_target.starts_with("..") {
                self.escape(&source, include.span, &include.value, Escape::Climbs);
                continue;
            }
            let target = normalize_path(&self.root_directory.join(&relative_target));
            let real = match self.sources.resolve(&target) {
                Ok(real) => real,
                Err(error) => {
                    self.not_found(&source, include.span, &target, &directory, &error);
                    continue;
                }
            };
            if !real.starts_with(&self.real_root_directory) {
                self.escape(&source, include.span, &include.value, Escape::Link);
                continue;
            }
            if let Some(position) = self
                .stack
                .iter()
                .position(|index| self.real_paths.get(*index) == Some(&real))
            {
                self.cycle(&source, include.span, position, &target);
                continue;
            }
            if self.real_paths.contains(&real) {
                continue;
            }
            match self.sources.read(&real) {
                Ok(text) => match non_text_reason(&text) {
                    Some(reason) => self.not_text(&source, include.span, &target, &reason),
                    None => self.visit(target, &relative_target, real, text),
                },
                Err(error) if error.kind() == std::io::ErrorKind::InvalidData => {
                    self.not_text(&source, include.span, &target, &error.to_string());
                }
                Err(error) => self.not_found(&source, include.span, &target, &directory, &error),
            }
        }
        self.stack.pop();
    }

    fn escape(&mut self, source: &Arc<SourceFile>, span: Span, requested: &str, how: Escape) {
        let root = display_directory(&self.root_directory);
        let (message, label) = match how {
            Escape::Absolute => (
                format!("include path `{requested}` is absolute"),
                "an absolute path leaves the catalogue's directory".to_owned(),
            ),
            Escape::Climbs => (
                format!(
                    "included file `{requested}` is outside the catalogue's directory `{root}`"
                ),
                format!("this path climbs out of `{root}`"),
            ),
            Escape::Link => (
                format!(
                    "included file `{requested}` leads, through a symbolic link, outside the catalogue's directory `{root}`"
                ),
                format!("resolves outside `{root}`"),
            ),
        };
        self.diagnostics.push(
            Diagnostic::new(Code::IncludeEscapesRoot, message)
                .primary(source, span, label)
                .note("the file was not read: a catalogue's files must lie inside the directory of its root file")
                .help(format!(
                    "move the file into `{root}` (or a directory below it) and include it by a path relative to the including file"
                )),
        );
    }

    fn not_found(
        &mut self,
        source: &Arc<SourceFile>,
        span: Span,
        target: &Path,
        directory: &Path,
        error: &std::io::Error,
    ) {
        self.diagnostics.push(
            Diagnostic::new(Code::IncludeNotFound, format!("cannot read included file `{}`: {error}", display(target)))
                .primary(source, span, "included here")
                .help(format!(
                    "include paths are relative to the directory of the including file (`{}`); correct the path or add the file",
                    display_directory(directory)
                )),
        );
    }

    fn not_text(&mut self, source: &Arc<SourceFile>, span: Span, target: &Path, reason: &str) {
        self.diagnostics.push(
            Diagnostic::new(
                Code::IncludeNotText,
                format!("included file `{}` is not text: {reason}", display(target)),
            )
            .primary(source, span, "not a `.rules` source file")
            .note("none of its content is shown")
            .help("include only `.rules` source files, which are UTF-8 text; correct the path"),
        );
    }

    fn cycle(&mut self, source: &Arc<SourceFile>, span: Span, position: usize, target: &Path) {
        let chain: Vec<String> = self
            .stack
            .iter()
            .skip(position)
            .filter_map(|index| self.files.get(*index))
            .map(|file| file.path.as_path())
            .chain(std::iter::once(target))
            .map(|p| format!("`{}`", display(p)))
            .collect();
        self.diagnostics.push(
            Diagnostic::new(Code::IncludeCycle, format!("`{}` includes itself through a cycle", display(target)))
                .primary(source, span, "this include closes the cycle")
                .note(format!("include chain: {}", chain.join(" → ")))
                .help("remove one `include` of the chain; each file needs to be included only once, usually from the root file"),
        );
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

    /// Memory sources with symbolic links: `links` maps a path to where it really is.
    struct Linked {
        files: MemorySources,
        links: BTreeMap<PathBuf, PathBuf>,
        read: std::cell::RefCell<Vec<PathBuf>>,
    }

    impl SourceProvider for Linked {
        fn read(&self, path: &Path) -> std::io::Result<String> {
            self.read.borrow_mut().push(path.to_path_buf());
            self.files.read(path)
        }

        fn resolve(&self, path: &Path) -> std::io::Result<PathBuf> {
            let path = normalize_path(path);
            Ok(self.links.get(&path).cloned().unwrap_or(path))
        }
    }

    fn linked(files: &[(&str, &str)], links: &[(&str, &str)]) -> Linked {
        let mut sources = MemorySources::new();
        for (path, text) in files {
            sources.insert(*path, *text);
        }
        Linked {
            files: sources,
            links: links
                .iter()
                .map(|(from, to)| (PathBuf::from(from), PathBuf::from(to)))
                .collect(),
            read: std::cell::RefCell::new(Vec::new()),
        }
    }

    fn codes_and_labels(diagnostics: &[Diagnostic]) -> Vec<(Code, String)> {
        diagnostics
            .iter()
            .map(|d| (d.code(), d.primary_label().unwrap().text().to_owned()))
            .collect()
    }

    #[test]
    fn includes_that_leave_the_root_directory_are_refused_unread() {
        let sources = linked(
            &[
                (
                    "cat/catalogue.rules",
                    "include \"../secret\"\ninclude \"/etc/passwd\"\ninclude \"a/../../secret\"\ninclude \"link.rules\"\ninclude \"a/inside.rules\"\n",
                ),
                ("cat/a/inside.rules", "include \"../../secret\"\n"),
                ("secret", "password = hunter2\n"),
                ("/etc/passwd", "root:x:0:0\n"),
            ],
            &[("cat/link.rules", "secret")],
        );
        let (catalogue, diagnostics) = load(Path::new("cat/catalogue.rules"), &sources).unwrap();
        assert_eq!(
            codes_and_labels(&diagnostics),
            [
                (Code::IncludeEscapesRoot, "\"../secret\"".to_owned()),
                (Code::IncludeEscapesRoot, "\"/etc/passwd\"".to_owned()),
                (Code::IncludeEscapesRoot, "\"a/../../secret\"".to_owned()),
                (Code::IncludeEscapesRoot, "\"link.rules\"".to_owned()),
                (Code::IncludeEscapesRoot, "\"../../secret\"".to_owned()),
            ]
        );
        assert!(diagnostics[3].message().contains("symbolic link"));
        assert_eq!(catalogue.files.len(), 2);
        // Only the two files inside the catalogue were read.
        assert_eq!(
            *sources.read.borrow(),
            [
                PathBuf::from("cat/catalogue.rules"),
                PathBuf::from("cat/a/inside.rules")
            ]
        );
    }

    #[test]
    fn a_parent_component_that_stays_inside_is_followed() {
        let mut sources = MemorySources::new();
        sources
            .insert("../up/catalogue.rules", "include \"a/../b.rules\"\n")
            .insert("../up/b.rules", "include \"./sub/../catalogue.rules\"\n");
        let (catalogue, diagnostics) = load(Path::new("../up/catalogue.rules"), &sources).unwrap();
        assert_eq!(catalogue.files.len(), 2);
        assert_eq!(codes_and_labels(&diagnostics)[0].0, Code::IncludeCycle);
    }

    #[test]
    fn a_root_file_that_links_outside_its_directory_is_not_read() {
        let sources = linked(
            &[("secret", "password = hunter2\n")],
            &[("cat/catalogue.rules", "secret")],
        );
        let error = load(Path::new("cat/catalogue.rules"), &sources).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(error.to_string().contains("outside its directory `cat`"));
        assert!(sources.read.borrow().is_empty());
    }

    #[test]
    fn a_file_reached_through_a_link_inside_the_catalogue_loads_once() {
        let sources = linked(
            &[
                (
                    "cat/catalogue.rules",
                    "include \"one.rules\"\ninclude \"alias.rules\"\n",
                ),
                ("cat/one.rules", "provider \"x\"\n"),
            ],
            &[("cat/alias.rules", "cat/one.rules")],
        );
        let (catalogue, diagnostics) = load(Path::new("cat/catalogue.rules"), &sources).unwrap();
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(catalogue.files.len(), 2);
    }

    #[test]
    fn an_included_file_that_is_not_text_is_refused_unquoted() {
        let mut sources = MemorySources::new();
        sources
            .insert(
                "catalogue.rules",
                "include \"blob.bin\"\ninclude \"escape.rules\"\n",
            )
            .insert("blob.bin", "\u{7f}ELF\0\0secret")
            .insert("escape.rules", "provider \"x\"\n\u{1b}[2J secret\n");
        let (catalogue, diagnostics) = load(Path::new("catalogue.rules"), &sources).unwrap();
        assert_eq!(
            codes_and_labels(&diagnostics),
            [
                (Code::IncludeNotText, "\"blob.bin\"".to_owned()),
                (Code::IncludeNotText, "\"escape.rules\"".to_owned()),
            ]
        );
        assert!(diagnostics[0].message().contains("U+007F on line 1"));
        assert!(diagnostics[1].message().contains("U+001B on line 2"));
        assert!(diagnostics.iter().all(|d| !d.message().contains("secret")));
        assert_eq!(catalogue.files.len(), 1);
    }

    #[test]
    fn normalize_keeps_leading_parent_components() {
        assert_eq!(
            normalize_path(Path::new("../a/./b/../c")),
            PathBuf::from("../a/c")
        );
    }
}
