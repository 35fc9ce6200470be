//! What the compiler's unit tests share: small catalogues loaded from memory.

use faultline_dsl::{Diagnostic, LoadedCatalogue, MemorySources};

/// The header, tiers, codes and catch-all every test catalogue starts with; `rules` follow.
pub(crate) fn catalogue(rules: &str) -> String {
    format!(
        r#"catalogue "test" version "test.v1"
tiers [main, fallback]

code overloaded {{
    class transient
    flags [auto_retryable, fallback_allowed]
    scope provider
}}

code rate_limited {{
    class transient
    flags [auto_retryable, fallback_allowed]
    scope account
}}

code unknown {{
    class unclassified
    flags []
    scope session
}}

rule fallback.any {{
    code unknown
    confidence low
    tier fallback
}}
{rules}"#
    )
}

/// A text rule of tier `main`: `clauses` (matchers, guards, order), then its example and
/// counterexample.
pub(crate) fn rule(id: &str, code: &str, clauses: &str, example: &str) -> String {
    format!(
        "\nrule {id} {{\n    code {code}\n    confidence high\n    tier main\n{clauses}\n    example {example:?}\n    counterexample \"nothing to see\"\n}}\n"
    )
}

/// Loads one catalogue file from memory; loading must succeed without diagnostics.
pub(crate) fn loaded(text: &str) -> LoadedCatalogue {
    let mut sources = MemorySources::new();
    sources.insert("test/catalogue.rules", text);
    let (loaded, diagnostics) =
        faultline_dsl::load(std::path::Path::new("test/catalogue.rules"), &sources)
            .expect("the catalogue is in memory");
    assert!(diagnostics.is_empty(), "{diagnostics:#?}");
    loaded
}

/// The diagnostics of one code, as (primary label text, message, notes).
pub(crate) fn found(
    diagnostics: &[Diagnostic],
    code: faultline_dsl::Code,
) -> Vec<(String, String, Vec<String>)> {
    diagnostics
        .iter()
        .filter(|d| d.code() == code)
        .map(|d| {
            (
                d.primary_label()
                    .map(|label| label.text().to_owned())
                    .unwrap_or_default(),
                d.message().to_owned(),
                d.notes().to_vec(),
            )
        })
        .collect()
}
