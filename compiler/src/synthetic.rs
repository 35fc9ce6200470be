//! Synthetic catalogues of any size, for benchmarks and scale tests: providers with ranked
//! rule lists, each rule a distinct signature with its example and counterexample, and the
//! phase fallback. They check clean by construction.

use std::fmt::Write as _;

/// Providers the rules are spread over.
pub const PROVIDERS: usize = 10;
/// Codes the rules cycle through.
pub const CODES: usize = 5;

/// The text of one rule of a synthetic catalogue; `variant` changes its signature, as an edit
/// would.
pub fn synthetic_rule(index: usize, variant: usize) -> String {
    let provider = index % PROVIDERS;
    let code = index % CODES;
    let rank = index / PROVIDERS;
    let signature = if variant == 0 {
        format!("sig{index}")
    } else {
        format!("sig{index}v{variant}")
    };
    format!(
        "rule synthetic.p{provider}.r{index}.v1 {{\n    code code_{code}\n    confidence high\n    tier provider\n    rank {rank}\n    when provider_id = \"p{provider}\"\n    match regex r\"(?i)\\b{signature}\\s+(?:failed|error)\\b\"\n    example \"{signature} failed\"\n    counterexample \"the {signature} step succeeded\"\n}}\n"
    )
}

/// A catalogue of `rules` rules in one file, with rule `edited` changed to `variant`.
pub fn synthetic_catalogue(rules: usize, edited: Option<(usize, usize)>) -> String {
    let mut text = String::from(
        "catalogue \"synthetic\" version \"synthetic.v1\"\n\ntiers [provider, fallback]\n\n",
    );
    for provider in 0..PROVIDERS {
        let _ = writeln!(text, "provider \"p{provider}\"");
    }
    for code in 0..CODES {
        let _ = write!(
            text,
            "\ncode code_{code} {{\n    class transient\n    flags [auto_retryable, fallback_allowed]\n    scope provider\n}}\n"
        );
    }
    text.push_str("\ncode unknown {\n    class unclassified\n    flags []\n    scope session\n}\n\nrule fallback.any {\n    code unknown\n    confidence low\n    tier fallback\n}\n");
    for index in 0..rules {
        let variant = match edited {
            Some((rule, variant)) if rule == index => variant,
            _ => 0,
        };
        text.push('\n');
        text.push_str(&synthetic_rule(index, variant));
    }
    text
}

/// The same catalogue as [`synthetic_catalogue`], spread over files as a real catalogue is: a
/// root `catalogue.rules` that includes one file per provider. Returns (relative path, text).
pub fn synthetic_files(rules: usize, edited: Option<(usize, usize)>) -> Vec<(String, String)> {
    let whole = synthetic_catalogue(0, None);
    let mut root = whole;
    let mut files = Vec::new();
    for provider in 0..PROVIDERS {
        let _ = writeln!(root, "\ninclude \"p{provider}.rules\"");
        let mut text = String::new();
        for index in (provider..rules).step_by(PROVIDERS) {
            let variant = match edited {
                Some((rule, variant)) if rule == index => variant,
                _ => 0,
            };
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&synthetic_rule(index, variant));
        }
        files.push((format!("p{provider}.rules"), text));
    }
    files.insert(0, ("catalogue.rules".to_owned(), root));
    files
}
