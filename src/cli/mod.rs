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
mod order;
mod recover;
mod replay;
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
    Check(check::Args),
    /// Format `.rules` files canonically, in place (or check that they are).
    Fmt(fmt::Args),
    /// Classify evidence given as JSON lines; one classification per line.
    Classify(classify::Args),
    /// Explain one classification: the text read, every rule that matched or was vetoed, the
    /// priority path to the winner, and the timing extraction.
    Explain(explain::Args),
    /// Replay a JSON-lines log of recovery events and print each outcome and terminal verdict.
    Recover(recover::Args),
    /// Run every inline example and classification fixture; ends with `N passed, N failed`.
    Test(test::Args),
    /// Run the ACP replay fixtures through the transport and recovery layers; ends with
    /// `N passed, N failed`. `replay capture` records a live agent turn as a fixture draft.
    Replay(replay::Args),
    /// Compile a catalogue into a bundle file.
    Build(build::Args),
    /// Show what a bundle holds: header, automata sizes, effective order.
    Inspect(inspect::Args),
    /// Print the effective priority order, or explain how two rules are ordered.
    Order(order::Args),
    /// Print the documentation of a diagnostic code, or list every code.
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
        Command::Diagnostic(args) => diagnostic::run(&args),
    };
    exit.into()
}
