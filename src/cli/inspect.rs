//! `faultline inspect`: what a bundle holds.

use std::fmt::Write as _;
use std::path::PathBuf;

use faultline_runtime::Bundle;

use super::{Exit, err, out};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The bundle file.
    #[arg(value_name = "BUNDLE")]
    bundle: PathBuf,
}

pub fn run(args: &Args) -> Exit {
    let bytes = match std::fs::read(&args.bundle) {
        Ok(bytes) => bytes,
        Err(error) => {
            err(&format!(
                "error: cannot read `{}`: {error}",
                args.bundle.display()
            ));
            return Exit::Failure;
        }
    };
    let bundle = match Bundle::from_bytes(&bytes) {
        Ok(bundle) => bundle,
        Err(error) => {
            err(&format!(
                "error: `{}` is not a valid bundle: {error}",
                args.bundle.display()
            ));
            return Exit::Findings;
        }
    };
    let header = bundle.header();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "bundle            {} ({} bytes)",
        args.bundle.display(),
        bytes.len()
    );
    let _ = writeln!(
        text,
        "catalogue         {} {}",
        header.catalogue_name(),
        header.catalogue_version()
    );
    let _ = writeln!(
        text,
        "format            {} (needs reader {})",
        header.format_version(),
        header.min_reader_version()
    );
    let _ = writeln!(text, "compiler          {}", header.compiler_version());
    let _ = writeln!(
        text,
        "regex-automata    {}",
        header.regex_automata_version()
    );
    let _ = writeln!(text, "redaction         {}", header.redaction_version());
    let _ = writeln!(text, "content hash      {}", header.content_hash_hex());
    let _ = writeln!(text, "manifest hash     {}", header.manifest_hash_hex());
    let gated = bundle.rules().filter(|rule| rule.gated()).count();
    let _ = writeln!(
        text,
        "rules             {} ({} behind the prefilter, {} literals)",
        bundle.rules().len(),
        gated,
        bundle.prefilter_literals().len()
    );
    let _ = writeln!(text, "codes             {}", bundle.code_count());
    let _ = writeln!(text, "\nautomata");
    for automaton in bundle.automata() {
        let approximate = automaton.approximate_patterns();
        let _ = writeln!(
            text,
            "  {:<10} dfa {}: {:>3} patterns{}, {:>9} bytes",
            automaton.view().as_str(),
            automaton.index(),
            automaton.pattern_count(),
            if approximate > 0 {
                format!(" ({approximate} widened, confirmed exactly)")
            } else {
                String::new()
            },
            automaton.memory_bytes()
        );
    }
    let regex_only: std::collections::BTreeSet<&str> = bundle
        .rules()
        .flat_map(|rule| rule.matchers().chain(rule.vetoes()).collect::<Vec<_>>())
        .filter_map(|matcher| matcher.pattern())
        .filter(|pattern| !pattern.has_dfa())
        .map(|pattern| pattern.source())
        .collect();
    let _ = writeln!(
        text,
        "  {} patterns searched by their regex only once the prefilter admits a rule that reads them",
        regex_only.len()
    );
    let _ = match bundle.prefilter_table_bytes() {
        Some(bytes) => writeln!(
            text,
            "  prefilter  literal table: {bytes:>9} bytes, read from the bundle"
        ),
        None => writeln!(text, "  prefilter  literal automaton built at load"),
    };
    let _ = writeln!(
        text,
        "\neffective order (highest first), with each rule's patterns and their DFA size alone \
         (`regex`: no DFA in the bundle)"
    );
    for rule in bundle.rules() {
        let _ = writeln!(
            text,
            "  {:>3}. {:<44} {:<14} {:<30} {}",
            rule.position().as_usize() + 1,
            rule.id(),
            rule.tier(),
            rule.code(),
            rule.confidence()
        );
        for pattern in rule
            .matchers()
            .chain(rule.vetoes())
            .filter_map(|matcher| matcher.pattern())
        {
            let size = match pattern.alone_bytes() {
                Some(bytes) => format!("{bytes:>9} bytes"),
                None => format!("{:>15}", "regex"),
            };
            let _ = writeln!(
                text,
                "         {size}{} {}",
                if pattern.approximate() {
                    " (widened)"
                } else {
                    ""
                },
                pattern.source()
            );
        }
    }
    out(&text);
    Exit::Clean
}
