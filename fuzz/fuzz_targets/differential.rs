//! Any text, as evidence for the repository catalogue: the compiled bundle and the reference
//! interpreter pick the same rule. Run from the repository root.
#![no_main]

use std::path::Path;
use std::sync::LazyLock;

use faultline_compiler::reference::Reference;
use faultline_compiler::Compiler;
use faultline_runtime::{Bundle, Evidence};
use libfuzzer_sys::fuzz_target;

struct FileSystem;

impl faultline_dsl::SourceProvider for FileSystem {
    fn read(&self, path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }
}

static ENGINES: LazyLock<(Bundle, Reference)> = LazyLock::new(|| {
    let (loaded, _) = faultline_dsl::load(Path::new("catalogue/catalogue.rules"), &FileSystem).expect("run from the repository root");
    let compilation = Compiler::new().compile(&loaded);
    let bundle = Bundle::from_bytes(compilation.bundle.as_ref().expect("the catalogue compiles")).expect("the bundle loads");
    let reference = Reference::new(&compilation.catalogue, compilation.priority.as_ref().expect("ordered")).expect("patterns compile");
    (bundle, reference)
});

fuzz_target!(|text: &str| {
    let (bundle, reference) = &*ENGINES;
    let evidence = Evidence::new().with_stderr(text.to_owned());
    let compiled = bundle.classify(&evidence).rule;
    let expected = reference.classify(&evidence).map(|(rule, _)| rule);
    assert_eq!(Some(compiled), expected, "disagreement on {text:?}");
});
