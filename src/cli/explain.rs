//! `faultline explain`: why one piece of evidence classifies as it does — the text rules read,
//! every rule that matched or was vetoed, the priority path to the winner, and the timing
//! extraction.

use std::io::Read as _;
use std::path::PathBuf;
use std::time::SystemTime;

use faultline_compiler::priority::{self, Priority};
use faultline_runtime::{
    Bundle, Evidence, HintOutcome, RulePosition, Step, TextView, format_instant, parse_instant,
};

use super::files::{self, FileSystem};
use super::{Exit, err, out};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The evidence: one JSON object (it may carry a `now`). Read from standard input when
    /// omitted or `-`.
    #[arg(value_name = "EVIDENCE")]
    evidence: Option<String>,
    /// Explain with a compiled bundle (the priority path then names tiers and positions only).
    #[arg(long, value_name = "FILE", conflicts_with = "catalogue")]
    bundle: Option<PathBuf>,
    /// Explain with a catalogue (a directory holding `catalogue.rules`, or a root file).
    /// Default: the catalogue built into this binary.
    #[arg(long, value_name = "CATALOGUE")]
    catalogue: Option<PathBuf>,
    /// Fix the clock reset times are validated against (RFC 3339). Default: the system clock.
    #[arg(long, value_name = "INSTANT", value_parser = parse_instant)]
    now: Option<SystemTime>,
    /// Also list the rules that did not apply, and why.
    #[arg(long)]
    all: bool,
}

fn read_evidence(args: &Args) -> Result<String, Exit> {
    match args.evidence.as_deref() {
        Some(text) if text != "-" => Ok(text.to_owned()),
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|error| {
                    err(&format!("error: cannot read standard input: {error}"));
                    Exit::Failure
                })?;
            Ok(text)
        }
    }
}

/// The catalogue's checked rules and their effective order: what the priority sentences are
/// made of. Only the front end runs (no automata, no analysis), so it costs milliseconds.
struct Order {
    catalogue: faultline_compiler::ir::Catalogue,
    priority: Priority,
}

impl Order {
    fn of(loaded: &faultline_dsl::LoadedCatalogue) -> Order {
        let checked = faultline_compiler::check(loaded);
        let (priority, _) = priority::order(&checked.catalogue);
        Order {
            catalogue: checked.catalogue,
            priority,
        }
    }
}

/// The bundle to explain with, and the sources its priority sentences come from (none for a
/// bundle file: its sentences then name tiers and positions only). The built-in catalogue's
/// bundle is the one `classify` caches, so `explain` never compiles it again.
fn load(args: &Args) -> Result<(Option<faultline_dsl::LoadedCatalogue>, Bundle), Exit> {
    if args.bundle.is_some() {
        return super::classify::load_bundle(args.bundle.as_ref(), None)
            .map(|bundle| (None, bundle));
    }
    let bundle = super::classify::load_bundle(None, args.catalogue.as_ref())?;
    let loaded = match &args.catalogue {
        Some(path) => faultline_dsl::load(&files::catalogue_root(path), &FileSystem),
        None => {
            let (sources, root) = super::embedded::sources();
            faultline_dsl::load(root, &sources)
        }
    };
    Ok((loaded.ok().map(|(loaded, _)| loaded), bundle))
}

/// Why the winner outranks another rule.
fn outranks(
    order: Option<&Order>,
    bundle: &Bundle,
    winner: RulePosition,
    other: RulePosition,
) -> String {
    let id = |position: RulePosition| bundle.rule(position).map_or("?", |rule| rule.id());
    if let Some(order) = order {
        let index = |position: RulePosition| order.catalogue.index_of(id(position));
        if let (Some(a), Some(b)) = (index(winner), index(other)) {
            return priority::explain(&order.catalogue, &order.priority, a, b);
        }
    }
    let tier = |position: RulePosition| bundle.rule(position).map_or("?", |rule| rule.tier());
    if tier(winner) == tier(other) {
        format!(
            "`{}` wins over `{}`: same tier `{}`, earlier in the bundle's order",
            id(winner),
            id(other),
            tier(winner)
        )
    } else {
        format!(
            "`{}` wins over `{}`: its tier `{}` comes before tier `{}`",
            id(winner),
            id(other),
            tier(winner),
            tier(other)
        )
    }
}

fn indent(text: &str) -> String {
    if text.is_empty() {
        return "    (empty)\n".to_owned();
    }
    text.lines().map(|line| format!("    │ {line}\n")).collect()
}

pub fn run(args: &Args) -> Exit {
    let text = match read_evidence(args) {
        Ok(text) => text,
        Err(exit) => return exit,
    };
    let (evidence, now): (Evidence, SystemTime) =
        match super::classify::parse_line(text.trim(), args.now) {
            Ok(parsed) => parsed,
            Err(error) => {
                err(&format!("error: {error}"));
                return Exit::Failure;
            }
        };
    let (sources, bundle) = match load(args) {
        Ok(loaded) => loaded,
        Err(exit) => return exit,
    };
    let (classification, trace) = bundle.classify_traced(&evidence, now);
    let order = std::cell::OnceCell::new();
    let mut report = String::new();

    // When the text as given fell to a low-confidence rule and an unwrapped reading of it did
    // not, the steps below are of that reading.
    let reading = trace
        .unwrapped()
        .and_then(|unwrapping| evidence.unwrapped(unwrapping));
    let views = faultline_runtime::TextViews::new(reading.as_ref().unwrap_or(&evidence));
    let sanitized = views.sanitized();
    report.push_str(&format!(
        "text rules read (sanitized, {} of {} raw bytes):\n{}",
        sanitized.len(),
        views.text_len(),
        indent(sanitized)
    ));
    if let Some(unwrapping) = trace.unwrapped() {
        report.push_str(&format!(
            "  (read again: the text as given fell to a low-confidence rule; this is it with {unwrapping})\n"
        ));
    }
    let raw_readers: Vec<&str> = bundle
        .rules()
        .filter(|rule| rule.reads(TextView::Raw))
        .map(|rule| rule.id())
        .collect();
    if !raw_readers.is_empty() {
        report.push_str(&format!(
            "  (the raw text is read only by: {})\n",
            raw_readers.join(", ")
        ));
    }

    let winner = bundle.rule_position(&classification.rule);
    report.push_str("\nrules that matched or were vetoed, in priority order:\n");
    let mut skipped = std::collections::BTreeMap::<&str, usize>::new();
    let mut listed = 0;
    for (position, step) in trace.steps() {
        let Some(rule) = bundle.rule(position) else {
            continue;
        };
        let relevant = matches!(step, Step::Fired | Step::Vetoed(_) | Step::NoCapture);
        if !relevant && !args.all {
            let reason = match step {
                Step::Guard(_) => "a guard does not hold",
                Step::Prefiltered => "none of their literals occurs",
                _ => "their text does not match",
            };
            *skipped.entry(reason).or_default() += 1;
            continue;
        }
        listed += 1;
        let note = match (Some(position) == winner, step, winner) {
            (true, _, _) => "  ← winner".to_owned(),
            (false, Step::Fired, Some(winner)) => {
                format!(
                    "\n        outranked: {}",
                    outranks(
                        order
                            .get_or_init(|| sources.as_ref().map(Order::of))
                            .as_ref(),
                        &bundle,
                        winner,
                        position
                    )
                )
            }
            (false, _, Some(winner)) if position < winner => {
                "\n        it outranks the winner, so only this kept it from winning".to_owned()
            }
            _ => String::new(),
        };
        // A bundle numbers a rule's vetoes; with the catalogue at hand, a shared veto is named as
        // the rule names it (`unless prose_quoting` has no third clause to count to).
        let said = match step {
            Step::Vetoed(index) => order
                .get_or_init(|| sources.as_ref().map(Order::of))
                .as_ref()
                .and_then(|order| {
                    let checked = order.catalogue.rule(order.catalogue.index_of(rule.id())?)?;
                    checked.veto_clause(index)
                })
                .map_or_else(|| step.to_string(), |clause| format!("vetoed by {clause}")),
            _ => step.to_string(),
        };
        report.push_str(&format!(
            "  {:>3}. {:<44} tier {:<14} {said}{note}\n",
            position.as_usize() + 1,
            rule.id(),
            rule.tier()
        ));
    }
    if listed == 0 {
        report.push_str("  (none)\n");
    }
    if !skipped.is_empty() {
        let summary: Vec<String> = skipped
            .iter()
            .map(|(reason, count)| format!("{count}: {reason}"))
            .collect();
        report.push_str(&format!(
            "  other rules did not apply ({}); `--all` lists them\n",
            summary.join("; ")
        ));
    }

    report.push_str(&format!(
        "\nwinner: {} → {} (class {}, confidence {}, scope {})\n  auto_retryable {}, fallback_allowed {}, user_action {}\n",
        classification.rule,
        classification.code,
        classification.class,
        classification.confidence,
        classification.scope,
        classification.auto_retryable,
        classification.fallback_allowed,
        classification.user_action,
    ));

    let clock = format_instant(now);
    report.push_str(&format!("\ntiming (clock {clock}):\n"));
    let declared = winner
        .and_then(|position| bundle.rule(position))
        .map(|rule| rule.timing())
        .unwrap_or_default();
    if declared.is_empty() {
        report.push_str("  the winning rule reads no reset time from the text\n");
    }
    if evidence.reset_hint.is_none() {
        report.push_str("  structured `reset_hint`: none in the evidence\n");
    }
    for step in trace.timing() {
        let outcome = match &step.outcome {
            HintOutcome::Absent => "nothing of that shape".to_owned(),
            HintOutcome::Unreadable(reason) => format!("found, but names no instant: {reason}"),
            HintOutcome::Rejected { at, reason } => format!("{at}, rejected: {reason}"),
            HintOutcome::Accepted { at } => format!("{at}, accepted"),
        };
        report.push_str(&format!("  {}: {outcome}\n", step.source));
    }
    match (&classification.reset_hint, classification.retry_after) {
        (Some(at), Some(after)) => {
            report.push_str(&format!("  → reset_hint {at}, retry_after {after} s\n"))
        }
        _ => report.push_str("  → no reset time\n"),
    }

    report.push_str(&format!(
        "\nclassification:\n  {}\n",
        serde_json::to_string(&classification).unwrap_or_default()
    ));
    out(&report);
    Exit::Clean
}
