//! Any text: parsing, formatting and checking a `.rules` file never panic.
#![no_main]

use std::path::Path;

use faultline_dsl::{MemorySources, SourceFile, format, load};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = format(&SourceFile::new("fuzz.rules", text));
    let mut sources = MemorySources::new();
    sources.insert("fuzz.rules", text);
    if let Ok((loaded, _)) = load(Path::new("fuzz.rules"), &sources) {
        let _ = faultline_compiler::check(&loaded);
    }
});
