//! Argument parsing, exit codes and the subcommands, one module each.

use std::io::Write as _;

use clap::{Parser, Subcommand, ValueEnum};

mod build;
mod check;
mod classify;
mod diagnostic;
mod embedded;
mod explain;
mod files;
mod fmt;
mod inspect;
mod json_lines;
mod order;
mod pages;
mod record;
mod recover;
mod replay;
mod serve;
mod test;

/// What a run of `faultline` ended with. The numbers are documented in the README.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Nothing to report.
    Clean = 0,
    /// The check found errors (or warnings with `--deny-warnings`), or `fmt --check` found
    /// unformatted files.
    Findings = 1,
    /// Bad usage, or a file could not be read or written.
    Failure = 2,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit as u8)
    }
}

/// Deterministic classification of AI coding-agent and LLM-provider failures.
#[derive(Debug, Parser)]
#[command(name = "faultline", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check `.rules` catalogues and report every problem.
    #[command(
        after_help = "Examples:\n  faultline check catalogue/\n  faultline check catalogue/ --format sarif --deny-warnings > faultline.sarif"
    )]
    Check(check::Args),
    /// Format `.rules` files canonically, in place (or check that they are).
    #[command(
        after_help = "Examples:\n  faultline fmt catalogue/\n  faultline fmt --check catalogue/"
    )]
    Fmt(fmt::Args),
    /// Classify evidence given as JSON lines; one classification per line.
    #[command(
        after_help = "Evidence fields (all optional; see docs/evidence.md): phase, provider_id, source, exit_code,\nhttp_status, reset_hint, stderr, stdout, managed_runtime_package_spec; plus `id` (echoed on the\nanswer) and `now` (the clock for reset times). Each input line gets one answer line, in order.\n\nExamples:\n  faultline classify examples/evidence.jsonl\n  echo '{\"id\":\"r1\",\"provider_id\":\"claude-acp\",\"stderr\":\"API Error: 529 overloaded_error\"}' | faultline classify -"
    )]
    Classify(classify::Args),
    /// Explain one classification: the text read, every rule that matched or was vetoed, the
    /// priority path to the winner, and the timing extraction.
    #[command(
        after_help = "Examples:\n  faultline explain '{\"provider_id\":\"claude-acp\",\"stderr\":\"API Error: 529 overloaded_error\"}'\n  faultline explain --all --now 2026-10-01T08:00:00Z < evidence.json"
    )]
    Explain(explain::Args),
    /// Replay a JSON-lines log of recovery events and print every effect of each: verdicts,
    /// transcript retractions, retry-notice store operations.
    #[command(
        after_help = "Examples:\n  faultline recover examples/recovery/claude-overloaded.jsonl\n  faultline recover --json examples/recovery/notices.jsonl\n  faultline recover --json --provider claude-acp - < events.jsonl"
    )]
    Recover(recover::Args),
    /// Run every inline example and classification fixture; ends with `N passed, N failed`.
    #[command(
        after_help = "Examples:\n  faultline test\n  faultline test catalogue --fixtures fixtures/classify/claude.jsonl"
    )]
    Test(test::Args),
    /// Run the ACP replay fixtures through the transport and recovery layers; ends with
    /// `N passed, N failed`. `replay capture` records a live agent turn as a fixture draft.
    #[command(
        after_help = "Examples:\n  faultline replay fixtures/replay\n  faultline replay fixtures/replay --explain claude-direct-matched"
    )]
    Replay(replay::Args),
    /// Compile a catalogue into a bundle file.
    #[command(
        after_help = "Examples:\n  faultline build catalogue/ -o provider-errors.flb\n  faultline build catalogue/ -o provider-errors.flb --dfa-budget 16777216"
    )]
    Build(build::Args),
    /// Show what a bundle holds: header, automata sizes, effective order.
    #[command(after_help = "Example:\n  faultline inspect provider-errors.flb")]
    Inspect(inspect::Args),
    /// Print the effective priority order, or explain how two rules are ordered.
    #[command(
        after_help = "Examples:\n  faultline order catalogue/\n  faultline order catalogue/ http.529 anthropic.overloaded.529.v1"
    )]
    Order(order::Args),
    /// Serve classification, explanation and durable recovery sessions over HTTP (JSON under
    /// /v1; docs/serve.md), with hot bundle reload. Runs until SIGTERM or SIGINT.
    #[command(
        after_help = "Examples:\n  faultline serve\n  faultline serve --bundle provider-errors.flb --state /var/lib/faultline --admin-token-file token\n  curl -s localhost:8462/v1/classify -d '{\"http_status\":529}'"
    )]
    Serve(serve::Args),
    /// Print the documentation of a diagnostic code, or list every code.
    #[command(after_help = "Examples:\n  faultline diagnostic\n  faultline diagnostic FL0010")]
    Diagnostic(diagnostic::Args),
}

/// When to colour human output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorChoice {
    /// When standard output is a terminal and `NO_COLOR` is unset.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    fn enabled(self) -> bool {
        use std::io::IsTerminal as _;
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
            }
        }
    }
}

/// Budgets of the compiler, shared by the subcommands that compile.
#[derive(Debug, Clone, clap::Args)]
pub struct Budgets {
    /// Largest size of one DFA in the bundle, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = faultline_compiler::Budget::default().view_dfa_bytes)]
    dfa_budget: usize,
    /// Product states one collision-analysis query may explore.
    #[arg(long, value_name = "STATES", default_value_t = faultline_compiler::AnalysisBudget::default().max_states)]
    analysis_budget: usize,
}

impl Budgets {
    /// A compiler configured with these budgets.
    pub fn compiler(&self) -> faultline_compiler::Compiler {
        let defaults = faultline_compiler::Budget::default();
        // Determinization may use four times the DFA budget (the default's ratio), so that
        // `--dfa-budget` bounds both.
        let budget = faultline_compiler::Budget {
            view_dfa_bytes: self.dfa_budget,
            pattern_dfa_bytes: defaults.pattern_dfa_bytes.min(self.dfa_budget),
            determinize_bytes: self.dfa_budget.saturating_mul(4),
            ..defaults
        };
        let analysis = faultline_compiler::AnalysisBudget {
            max_states: self.analysis_budget,
            ..Default::default()
        };
        faultline_compiler::Compiler::new()
            .budget(budget)
            .analysis_budget(analysis)
    }
}

/// Writes to standard output; a closed pipe is not an error worth a panic.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes an error line to standard error.
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{text}");
}

/// Parses arguments and runs the subcommand.
pub fn run() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            let exit = if error.use_stderr() {
                Exit::Failure
            } else {
                Exit::Clean
            };
            return exit.into();
        }
    };
    if matches!(
        cli.command,
        Command::Check(_) | Command::Test(_) | Command::Build(_) | Command::Order(_)
    ) {
        pages::prefer_small_pages();
    }
    let exit = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Fmt(args) => fmt::run(&args),
        Command::Classify(args) => classify::run(&args),
        Command::Test(args) => test::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Build(args) => build::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Order(args) => order::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Recover(args) => recover::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Diagnostic(args) => diagnostic::run(&args),
    };
    exit.into()
}
