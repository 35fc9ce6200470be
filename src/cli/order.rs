//! `faultline order`: the effective priority order, or how two rules are ordered and why. For
//! two rules that nothing orders, it reports the collision analysis's verdict on the pair, the
//! same analysis (and the same conclusion) as `faultline check`.

use std::path::PathBuf;

use faultline_compiler::{PairVerdict, ir::Catalogue, priority};

use super::files::{self, FileSystem};
use super::{Exit, err, out};

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  faultline order catalogue/\n  \
    faultline order catalogue/ anthropic.overloaded.529.v1 http.529\n\n\
    Comparing two rules of one tier that nothing orders runs the collision check on them: exit 1 \
    when they can both fire with different outcomes (a tie, FL0102) or the check cannot decide \
    (FL0108).")]
pub struct Args {
    /// The catalogue: a directory holding `catalogue.rules`, or a root `.rules` file.
    #[arg(value_name = "CATALOGUE")]
    catalogue: PathBuf,
    /// Two rule ids to compare; omit to print the whole order.
    #[arg(value_name = "RULE", num_args = 0..=2)]
    rules: Vec<String>,
    #[command(flatten)]
    budgets: super::Budgets,
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
    match args.rules.as_slice() {
        [] => {
            let catalogue = &checked.catalogue;
            let (order, _) = priority::order(catalogue);
            let mut text = String::new();
            for (position, &index) in order.order().iter().enumerate() {
                if let Some(rule) = catalogue.rule(index) {
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
            let Some((catalogue, order, verdict)) =
                args.budgets.compiler().pair_verdict(&loaded, a, b)
            else {
                err("error: both arguments must be rule ids of the catalogue");
                return Exit::Failure;
            };
            let (Some(ia), Some(ib)) = (catalogue.index_of(a), catalogue.index_of(b)) else {
                err("error: both arguments must be rule ids of the catalogue");
                return Exit::Failure;
            };
            let mut text = priority::explain(&catalogue, &order, ia, ib);
            if let Some(sentence) = verdict_sentence(&catalogue, a, b, &verdict) {
                text.push_str(&format!("\n{sentence}"));
            }
            out(&format!("{text}\n"));
            match verdict {
                PairVerdict::Tie(_) | PairVerdict::Undecided => Exit::Findings,
                _ => Exit::Clean,
            }
        }
        _ => {
            err("error: give two rule ids to compare, or none for the whole order");
            Exit::Failure
        }
    }
}

/// What the collision analysis says about an unordered pair, in the words of `faultline check`.
fn verdict_sentence(
    catalogue: &Catalogue,
    a: &str,
    b: &str,
    verdict: &PairVerdict,
) -> Option<String> {
    let outcome = |id: &str| {
        catalogue
            .rules
            .iter()
            .find(|rule| rule.id == id)
            .map(|rule| format!("`{}`", rule.code))
            .unwrap_or_default()
    };
    Some(match verdict {
        PairVerdict::Ordered => return None,
        PairVerdict::SameOutcome => format!(
            "they give the same outcome ({}, same confidence and scope), so whichever fires first, the classification is the same",
            outcome(a)
        ),
        PairVerdict::GuardsExclusive(field) => format!(
            "their guards on `{field}` have no value in common, so they never fire on the same evidence"
        ),
        PairVerdict::Dead(id) => {
            format!("`{id}` fires on no evidence (FL0104), so they never fire together")
        }
        PairVerdict::NotAnalysed(id) => format!(
            "`{id}` is not analysed: an automaton of it exceeds its budget, or its order depends on a rule with errors (run `faultline check`)"
        ),
        PairVerdict::Disjoint => {
            "the collision check proves they cannot both fire on the same evidence".to_owned()
        }
        PairVerdict::Tie(evidence) => format!(
            "error[FL0102]: `{a}` ({}) and `{b}` ({}) can both fire on the same evidence with different outcomes, and neither is ordered first\n  witness (verified: both fire): {}\n  declare the winner: add `before {b}` to `{a}` (or the reverse), or give them different ranks",
            outcome(a),
            outcome(b),
            serde_json::to_string(evidence).unwrap_or_default()
        ),
        PairVerdict::Undecided => format!(
            "error[FL0108]: the collision check could not prove that `{a}` and `{b}` never fire together within its budget, so they count as colliding; order them explicitly, or raise `--analysis-budget`"
        ),
        _ => return None,
    })
}
