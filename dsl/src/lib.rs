//! The faultline catalogue language: `.rules` source → syntax tree, plus the formatter and
//! the diagnostics every stage of faultline reports in.
//!
//! - [`parse`] turns one file into a [`SyntaxFile`] and syntax diagnostics (it never stops at
//!   the first error);
//! - [`load`] follows `include`s from a root file through a [`SourceProvider`] (file I/O stays
//!   with the caller);
//! - [`format()`] prints a file in canonical form, keeping comments;
//! - [`Diagnostic`] and [`Code`] are the one diagnostic vocabulary, rendered by [`render`].
//!
//! Names are not resolved here: the compiler's checker validates them against the runtime's
//! vocabularies.

pub mod ast;
mod codes;
mod diagnostic;
mod format;
mod load;
mod parser;
pub mod render;
mod source;

pub use ast::SyntaxFile;
pub use codes::{Code, Severity, registry_markdown};
pub use diagnostic::{Diagnostic, Label};
pub use format::{FormatError, format};
pub use load::{
    LoadedCatalogue, LoadedFile, MemorySources, ParseFn, SourceProvider, load, load_with,
    normalize_path,
};
pub use parser::parse;
pub use source::{LineColumn, SourceFile, Span};
