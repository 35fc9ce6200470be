//! `faultline order`: the effective priority order, or how two rules are ordered and why.

use std::path::PathBuf;

use faultline_compiler::priority;

use super::files::{self, FileSystem};
use super::{Exit, err, out};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The catalogue: a directory holding `catalogue.rules`, or a root `.rules` file.
    #[arg(value_name = "CATALOGUE")]
    catalogue: PathBuf,
    /// Two rule ids to compare; omit to print the whole order.
    #[arg(value_name = "RULE", num_args = 0..=2)]
    rules: Vec<String>,
}

pub fn run(args: &Args) -> Exit {
    let root = files::catalogue_root(&args.catalogue);
    let loaded = match faultline_dsl::load(&root, &FileSystem) {
        Ok((loaded, _)) => loaded,
        Err(error) => {
            err(&files::describe_io(&root, &error));
            return Exit::Failure;
        }
    };
    let checked = faultline_compiler::check(&loaded);
    if checked.has_errors() {
        err("error: the catalogue has errors; run `faultline check` first");
        return Exit::Findings;
    }
    let catalogue = &checked.catalogue;
    let (order, _) = priority::order(catalogue);
    match args.rules.as_slice() {
        [] => {
            let mut text = String::new();
            for (position, &index) in order.order.iter().enumerate() {
                if let Some(rule) = catalogue.rules.get(index) {
                    let tier = catalogue.tiers.get(rule.tier).map_or("?", String::as_str);
                    let rank = rule
                        .rank
                        .map(|rank| format!("rank {rank}"))
                        .unwrap_or_default();
                    text.push_str(&format!(
                        "{:>4}. {:<46} {:<14} {}\n",
                        position + 1,
                        rule.id,
                        tier,
                        rank
                    ));
                }
            }
            out(&text);
            Exit::Clean
        }
        [a, b] => {
            let find = |id: &str| catalogue.rules.iter().position(|rule| rule.id == id);
            match (find(a), find(b)) {
                (Some(a), Some(b)) => {
                    out(&format!("{}\n", priority::explain(catalogue, &order, a, b)));
                    Exit::Clean
                }
                _ => {
                    err("error: both arguments must be rule ids of the catalogue");
                    Exit::Failure
                }
            }
        }
        _ => {
            err("error: give two rule ids to compare, or none for the whole order");
            Exit::Failure
        }
    }
}
