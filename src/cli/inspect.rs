//! `faultline inspect`: what a bundle holds.

use std::fmt::Write as _;
use std::path::PathBuf;

use faultline_runtime::Bundle;
use faultline_runtime::bundle::model::MatcherKindEntry;

use super::{Exit, err, out};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The bundle file.
    #[arg(value_name = "BUNDLE")]
    bundle: PathBuf,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
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
    let model = bundle.model();
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
        header.catalogue_name, header.catalogue_version
    );
    let _ = writeln!(
        text,
        "format            {} (needs reader {})",
        header.format_version, header.min_reader_version
    );
    let _ = writeln!(text, "compiler          {}", header.compiler_version);
    let _ = writeln!(text, "regex-automata    {}", header.regex_automata_version);
    let _ = writeln!(text, "redaction         {}", model.redaction_version);
    let _ = writeln!(text, "content hash      {}", hex(&header.content_hash));
    let _ = writeln!(text, "manifest hash     {}", hex(&header.manifest_hash));
    let gated = model.rules.iter().filter(|rule| rule.gated).count();
    let _ = writeln!(
        text,
        "rules             {} ({} behind the prefilter, {} literals)",
        model.rules.len(),
        gated,
        model.literals.len()
    );
    let _ = writeln!(text, "codes             {}", model.codes.len());
    let _ = writeln!(text, "\nautomata");
    let sizes = bundle.automaton_sizes();
    let mut position = 0;
    for view in &model.views {
        for (index, dfa) in view.dfas.iter().enumerate() {
            let size = sizes.get(position).map_or(0, |(_, size)| *size);
            position += 1;
            let approximate = view
                .patterns
                .iter()
                .filter(|p| p.dfa as usize == index && p.approximate)
                .count();
            let _ = writeln!(
                text,
                "  {:<10} dfa {index}: {:>3} patterns{}, {:>9} bytes",
                view.view.as_str(),
                dfa.pattern_count,
                if approximate > 0 {
                    format!(" ({approximate} widened, confirmed exactly)")
                } else {
                    String::new()
                },
                size
            );
        }
    }
    let _ = writeln!(
        text,
        "\neffective order (highest first), with each rule's patterns and their DFA size alone"
    );
    for (position, rule) in model.rules.iter().enumerate() {
        let tier = model
            .tiers
            .get(rule.tier as usize)
            .map_or("?", String::as_str);
        let code = model
            .codes
            .get(rule.code as usize)
            .map_or("?", |code| code.name.as_str());
        let _ = writeln!(
            text,
            "  {:>3}. {:<44} {:<14} {:<30} {}",
            position + 1,
            rule.id,
            tier,
            code,
            rule.confidence
        );
        for matcher in rule.matchers.iter().chain(&rule.vetoes) {
            if let MatcherKindEntry::Pattern { pattern, .. } = matcher.kind {
                let entry = model
                    .views
                    .iter()
                    .find(|v| v.view == matcher.view)
                    .and_then(|v| v.patterns.get(pattern as usize));
                if let Some(entry) = entry {
                    let _ = writeln!(
                        text,
                        "         {:>9} bytes{} {}",
                        entry.alone_bytes,
                        if entry.approximate { " (widened)" } else { "" },
                        entry.pattern
                    );
                }
            }
        }
    }
    out(&text);
    Exit::Clean
}
