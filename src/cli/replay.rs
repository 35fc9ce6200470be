//! `faultline replay`: runs the ACP replay matrix (`fixtures/replay/`) through both layers —
//! the transport layer (a fake agent and the live adapter over a real ACP connection) and the
//! recovery-evidence layer — with one line per cell and a closing `N passed, N failed` line;
//! `--explain CELL` shows one cell's event stream, projection, classification and recovery
//! decision path. `replay capture` records a live agent turn as a fixture draft, and
//! `replay serve` plays a fixture as a fake agent on stdio.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};

use faultline_acp::dialect::recovery_profile;
use faultline_recovery::prompt::Disposition;
use faultline_recovery::{Effect, Recovery, RecoveryEvent};
use faultline_replay::capture::{
    CaptureError, CaptureRequest, Draft, capture, read_into_pipe, serve, write_from_pipe,
};
use faultline_replay::fixture::{
    AgentId, Case, Corpus, Fixture, FixtureError, Gateway, Identity, Lint, load_corpus,
    load_recorded_corpus, load_str, replay_recovery,
};
use faultline_replay::transport::{Schedule, TransportCheck, check};
use faultline_runtime::Bundle;

use super::{Exit, err, out};

/// How many held-worker replays a queued cell gets, each releasing after a different number
/// of scheduler yields.
const QUEUED_ITERATIONS: usize = 4;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Subcommand>,
    /// The fixture directory.
    #[arg(value_name = "DIR", default_value = "fixtures/replay")]
    directory: PathBuf,
    /// Print one cell's event stream, projection, classification and recovery decision path.
    #[arg(long, value_name = "CELL")]
    explain: Option<String>,
    /// Classify with a compiled bundle.
    #[arg(long, value_name = "FILE", conflicts_with = "catalogue")]
    bundle: Option<PathBuf>,
    /// Classify with a catalogue compiled now. Default: the catalogue built into this binary.
    #[arg(long, value_name = "CATALOGUE")]
    catalogue: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum Subcommand {
    /// Spawn an ACP agent (the command after `--`), send it one prompt, and record the turn as
    /// a fixture draft; a draft failing the loader's lints is refused.
    Capture(Box<CaptureArgs>),
    /// Serve a fixture's frames as a fake ACP agent on standard input and output.
    Serve(ServeArgs),
    /// Serve one mock-provider scenario (a documented provider error response) on 127.0.0.1.
    MockProvider(super::record::MockArgs),
    /// Record real agents against the mock provider, in a loopback-only network namespace:
    /// recorded replay fixtures and classification fixtures of their error texts.
    Record(Box<super::record::RecordArgs>),
}

#[derive(Debug, clap::Args)]
struct CaptureArgs {
    /// The gateway the agent is configured for.
    #[arg(long, value_name = "GATEWAY")]
    gateway: String,
    /// The case the turn exercises.
    #[arg(long, value_name = "CASE")]
    case: String,
    /// The replay session id to record (unique across the corpus).
    #[arg(long, value_name = "ID")]
    session_id: String,
    /// The execution id to record. Default: `exec-<session id>`.
    #[arg(long, value_name = "ID")]
    execution_id: Option<String>,
    /// The prompt generation to record.
    #[arg(long, value_name = "N", default_value_t = 1)]
    generation: u64,
    /// The agent identity (the adapter's negotiated provider id): any provider the catalogue
    /// declares.
    #[arg(long, value_name = "ID", default_value = "claude-acp")]
    agent_id: String,
    /// How long the turn may take before the capture gives up (the agent may be retrying
    /// silently): seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = faultline_replay::capture::DEFAULT_TIMEOUT.as_secs())]
    timeout: u64,
    /// The prompt to send.
    #[arg(long, value_name = "TEXT")]
    prompt: String,
    /// Where to write the draft. Default: standard output.
    #[arg(long, short, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Classify with a compiled bundle.
    #[arg(long, value_name = "FILE", conflicts_with = "catalogue")]
    bundle: Option<PathBuf>,
    /// Classify with a catalogue compiled now. Default: the catalogue built into this binary.
    #[arg(long, value_name = "CATALOGUE")]
    catalogue: Option<PathBuf>,
    /// The agent's command line.
    #[arg(last = true, required = true, value_name = "AGENT")]
    agent: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct ServeArgs {
    /// The fixture file to play.
    #[arg(value_name = "FIXTURE")]
    fixture: PathBuf,
}

/// Loads every `*.json` file of `directory` (other files are ignored) as the replay corpus,
/// applying the document and corpus lints. Every error of every file is reported.
fn load_dir(directory: &Path) -> Result<Corpus, Vec<FixtureError>> {
    load_dir_with(directory, load_corpus)
}

/// Reads `directory`'s `*.json` files and loads them with `load`.
pub(super) fn load_dir_with(
    directory: &Path,
    load: impl FnOnce(Vec<(String, String)>) -> Result<Corpus, Vec<FixtureError>>,
) -> Result<Corpus, Vec<FixtureError>> {
    let shown = directory.display().to_string();
    let unreadable = |name: String, field: &str, message: String| {
        FixtureError::new(name, field, Lint::Unreadable, message)
    };
    let entries = std::fs::read_dir(directory).map_err(|error| {
        vec![unreadable(
            shown.clone(),
            "(directory)",
            format!("cannot list the fixture directory: {error}"),
        )]
    })?;
    let mut errors = Vec::new();
    let mut documents = Vec::new();
    for entry in entries {
        let path = match entry {
            Ok(entry) => entry.path(),
            Err(error) => {
                errors.push(unreadable(
                    shown.clone(),
                    "(directory)",
                    format!("cannot list an entry: {error}"),
                ));
                continue;
            }
        };
        if path.extension().is_none_or(|extension| extension != "json") {
            continue;
        }
        let name = path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) => documents.push((name, text)),
            Err(error) => errors.push(unreadable(
                name,
                "(file)",
                format!("cannot read the file: {error}"),
            )),
        }
    }
    match load(documents) {
        Ok(corpus) if errors.is_empty() => Ok(corpus),
        Ok(_) => Err(errors),
        Err(more) => {
            errors.extend(more);
            Err(errors)
        }
    }
}

/// Spawns the agent (speaking ACP on stdio; its standard error is inherited), captures one
/// prompt turn with it in `cwd`, then ends it. The outer error is about the process itself.
fn capture_agent(
    bundle: Arc<Bundle>,
    program: &str,
    args: &[String],
    cwd: &Path,
    request: &CaptureRequest,
) -> std::io::Result<Result<Draft, CaptureError>> {
    // Its own process group, ended whole: an npm launcher's child agent would otherwise
    // survive and hold the standard streams open.
    let mut child = Command::new(program)
        .args(args)
        .process_group(0)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let not_piped = || std::io::Error::other("the agent's standard streams are not piped");
    let stdin = child.stdin.take().ok_or_else(not_piped)?;
    let stdout = child.stdout.take().ok_or_else(not_piped)?;
    let (incoming, reading) = read_into_pipe(stdout);
    let (outgoing, writing) = write_from_pipe(stdin);
    let captured = capture(bundle, incoming, outgoing, cwd, request);
    // The turn is over: the agent is not needed any more.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.kill();
    let _ = child.wait();
    let _ = reading.join();
    let _ = writing.join();
    Ok(captured)
}

pub fn run(args: &Args) -> Exit {
    match &args.command {
        Some(Subcommand::Capture(capture)) => return run_capture(capture),
        Some(Subcommand::Serve(serve)) => return run_serve(serve),
        Some(Subcommand::MockProvider(mock)) => return super::record::run_mock(mock),
        Some(Subcommand::Record(record)) => return super::record::run_record(record),
        None => {}
    }
    let mut corpus: Vec<Fixture> = match load_dir(&args.directory) {
        Ok(corpus) => corpus.fixtures().to_vec(),
        Err(errors) => {
            report_load_errors(&errors);
            return Exit::Failure;
        }
    };
    // The recorded corpus (fixtures the harness recorded from real agents) is replayed with
    // the matrix when the directory has one.
    let recorded_directory = args.directory.join(RECORDED_DIRECTORY);
    if recorded_directory.is_dir() {
        match load_dir_with(&recorded_directory, load_recorded_corpus) {
            Ok(recorded) => corpus.extend(recorded.fixtures().iter().cloned()),
            Err(errors) => {
                report_load_errors(&errors);
                return Exit::Failure;
            }
        }
    }
    let providers = match super::classify::declared_providers(args.catalogue.as_ref()) {
        Ok(providers) => providers,
        Err(exit) => return exit,
    };
    let bundle = match super::classify::load_bundle(args.bundle.as_ref(), args.catalogue.as_ref()) {
        Ok(bundle) => Arc::new(bundle),
        Err(exit) => return exit,
    };
    if let Some(cell) = &args.explain {
        let Some(fixture) = corpus.iter().find(|fixture| label(fixture) == *cell) else {
            err(&format!(
                "error: no cell `{cell}` in `{}`",
                args.directory.display()
            ));
            return Exit::Failure;
        };
        return explain(&bundle, fixture);
    }
    let mut report = String::new();
    let (mut passed, mut failed) = (0_usize, 0_usize);
    for fixture in &corpus {
        let (summary, mut differences) = run_cell(&bundle, fixture);
        if !providers
            .iter()
            .any(|provider| provider == fixture.agent_id.as_str())
        {
            differences.push(format!(
                "agentId `{}` is not a provider the catalogue declares",
                fixture.agent_id
            ));
        }
        if differences.is_empty() {
            passed += 1;
            report.push_str(&format!("PASS {}: {summary}\n", label(fixture)));
        } else {
            failed += 1;
            report.push_str(&format!(
                "FAIL {}: {}\n",
                label(fixture),
                differences.join("; ")
            ));
        }
    }
    report.push_str(&format!("{passed} passed, {failed} failed\n"));
    out(&report);
    if failed > 0 {
        Exit::Findings
    } else {
        Exit::Clean
    }
}

/// The recorded corpus's subdirectory of the fixture directory.
pub(super) const RECORDED_DIRECTORY: &str = "recorded";

/// How a report names a fixture: its matrix cell, or `recorded/<agent>-<scenario>` for a
/// recorded fixture.
fn label(fixture: &Fixture) -> String {
    match &fixture.recording {
        Some(recording) => format!(
            "{RECORDED_DIRECTORY}/{}-{}",
            recording.agent, recording.scenario
        ),
        None => fixture.cell().to_string(),
    }
}

fn report_load_errors(errors: &[FixtureError]) {
    for error in errors {
        err(&format!("error: {error}"));
    }
    err(&format!(
        "error: the replay corpus does not load ({} error(s))",
        errors.len()
    ));
}

/// Runs one cell through both layers: a summary when it passes, else what differed.
fn run_cell(bundle: &Arc<Bundle>, fixture: &Fixture) -> (String, Vec<String>) {
    let mut differences = Vec::new();
    let mut schedules = vec![Schedule::Free];
    if fixture.case == Case::Queued {
        schedules.extend(
            (0..QUEUED_ITERATIONS).map(|yields| Schedule::HeldUntilAgentReturns { yields }),
        );
    }
    let mut transport = None;
    for schedule in schedules {
        match check(Arc::clone(bundle), fixture, schedule) {
            Ok(result) => {
                let label = match schedule {
                    Schedule::Free => "transport".to_owned(),
                    Schedule::HeldUntilAgentReturns { yields } => {
                        format!("transport (worker held, released after {yields} yield(s))")
                    }
                };
                differences.extend(
                    result
                        .mismatches
                        .iter()
                        .map(|mismatch| format!("{label}: {mismatch}")),
                );
                transport.get_or_insert(result);
            }
            Err(error) => differences.push(format!("transport: {error}")),
        }
    }
    let recovery = match replay_recovery(bundle, fixture) {
        Ok(recovery) => {
            differences.extend(
                recovery
                    .mismatches(&fixture.expect)
                    .into_iter()
                    .map(|mismatch| format!("recovery: {mismatch}")),
            );
            Some(recovery)
        }
        Err(error) => {
            differences.push(format!("recovery: {error}"));
            None
        }
    };
    let summary = match (transport, recovery) {
        (Some(transport), Some(recovery)) => format!(
            "[{}] {}; {}; recovery {}",
            tokens(&transport),
            transport
                .classification
                .as_ref()
                .map_or("-", |classification| classification.code.as_str()),
            recovery.verdict.safety,
            match recovery.verdict.disposition {
                Disposition::Automatic => "automatic",
                Disposition::Manual => "manual",
            }
        ),
        _ => String::new(),
    };
    (summary, differences)
}

fn tokens(transport: &TransportCheck) -> String {
    let mut tokens: Vec<&str> = transport
        .tokens
        .iter()
        .map(|token| token.as_str())
        .collect();
    if transport.projection.is_some() {
        tokens.push("error");
    }
    tokens.join(", ")
}

/// `--explain CELL`.
fn explain(bundle: &Arc<Bundle>, fixture: &Fixture) -> Exit {
    let mut text = format!(
        "cell {} ({}, agent {}, {})\n",
        label(fixture),
        fixture.name,
        fixture.agent_id,
        fixture.capture
    );
    let (_, differences) = run_cell(bundle, fixture);
    let transport = match check(Arc::clone(bundle), fixture, Schedule::Free) {
        Ok(transport) => transport,
        Err(error) => {
            err(&format!("error: transport replay failed: {error}"));
            return Exit::Findings;
        }
    };
    text.push_str("\nevent stream (adapter, when the prompt returned):\n");
    for (index, event) in transport.observation.events.iter().enumerate() {
        let token = event.token().unwrap_or("(no token)");
        let detail = serde_json::to_string(event).unwrap_or_default();
        text.push_str(&format!("  {index}. {token:<26} {detail}\n"));
    }
    text.push_str(&format!(
        "  expected: [{}]\n",
        fixture
            .expect
            .events
            .iter()
            .map(|token| token.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    text.push_str("\nprojection (the error the prompt call returned):\n");
    match &transport.projection {
        Some(projection) => text.push_str(&format!(
            "  {}\n",
            serde_json::to_string(projection).unwrap_or_default()
        )),
        None => text.push_str("  (none: the prompt completed)\n"),
    }
    text.push_str("\nclassification (phase prompt_send, the agent's provider id):\n");
    if let Some(classification) = &transport.classification {
        text.push_str(&format!(
            "  {} ({}, {}, rule {}); expected {}\n",
            classification.code,
            classification.class,
            classification.confidence,
            classification.rule,
            fixture.expect.diagnostic_code
        ));
    }
    text.push_str(&format!(
        "\nrecovery decision path (session of `{}`, claim {} generation {}):\n",
        fixture.agent_id, fixture.identity.execution_id, fixture.identity.prompt_generation
    ));
    let mut recovery = Recovery::new(recovery_profile(fixture.agent_id.as_str()));
    let claim = fixture.claim();
    let began = recovery.apply(
        bundle,
        RecoveryEvent::PromptBegan {
            claim: claim.clone(),
        },
    );
    text.push_str(&format!("  prompt_began → {}\n", effects_text(&began)));
    match fixture.steps() {
        Ok(steps) => {
            for step in steps {
                let marked = step.token == Some(faultline_replay::fixture::Token::DiagnosticChunk);
                let Some(event) = step.frame.adapter_event(marked) else {
                    continue;
                };
                let effects = recovery.apply(bundle, event.to_recovery(&claim));
                text.push_str(&format!(
                    "  frames[{}] {} → {}\n",
                    step.index,
                    step.token.map_or(step.frame.kind(), |token| token.as_str()),
                    effects_text(&effects)
                ));
            }
        }
        Err(error) => text.push_str(&format!("  {error}\n")),
    }
    match replay_recovery(bundle, fixture) {
        Ok(recovery) => text.push_str(&format!(
            "  recorded diagnostic: {} (expected {:?})\n  prompt_failed → {}; recovery {} (expected pre-result safe: {})\n",
            recovery.recorded_diagnostic.as_deref().unwrap_or("none"),
            fixture.expect.recorded_diagnostic_code,
            recovery.verdict.safety,
            match recovery.verdict.disposition {
                Disposition::Automatic => "automatic",
                Disposition::Manual => "manual",
            },
            fixture.expect.pre_result_safe
        )),
        Err(error) => text.push_str(&format!("  {error}\n")),
    }
    if differences.is_empty() {
        text.push_str("\nPASS (both layers)\n");
    } else {
        text.push_str(&format!("\nFAIL: {}\n", differences.join("; ")));
    }
    out(&text);
    if differences.is_empty() {
        Exit::Clean
    } else {
        Exit::Findings
    }
}

/// The engine's effects of one event, as JSON, joined by `; `.
fn effects_text(effects: &[Effect]) -> String {
    effects
        .iter()
        .map(|effect| serde_json::to_string(effect).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("; ")
}

fn run_capture(args: &CaptureArgs) -> Exit {
    let providers = match super::classify::declared_providers(args.catalogue.as_ref()) {
        Ok(providers) => providers,
        Err(exit) => return exit,
    };
    let agent_id = AgentId::parse(&args.agent_id)
        .filter(|id| providers.iter().any(|provider| provider == id.as_str()));
    let (Some(gateway), Some(case), Some(agent_id)) = (
        Gateway::parse(&args.gateway),
        Case::parse(&args.case),
        agent_id,
    ) else {
        err(&format!(
            "error: --gateway is one of {}, --case one of {}, --agent-id one of the catalogue's providers: {}",
            Gateway::spellings(),
            Case::spellings(),
            providers
                .iter()
                .map(|provider| format!("`{provider}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return Exit::Failure;
    };
    let Some((program, agent_args)) = args.agent.split_first() else {
        err("error: give the agent's command line after `--`");
        return Exit::Failure;
    };
    let bundle = match super::classify::load_bundle(args.bundle.as_ref(), args.catalogue.as_ref()) {
        Ok(bundle) => Arc::new(bundle),
        Err(exit) => return exit,
    };
    let request = CaptureRequest {
        gateway,
        case,
        agent_id,
        identity: Identity {
            session_id: args.session_id.clone(),
            execution_id: args
                .execution_id
                .clone()
                .unwrap_or_else(|| format!("exec-{}", args.session_id)),
            prompt_generation: args.generation,
        },
        prompt: args.prompt.clone(),
        source: source(args, program, agent_args),
        captured_at: faultline_runtime::format_instant(std::time::SystemTime::now()),
        recording: None,
        timeout: std::time::Duration::from_secs(args.timeout),
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let captured = match capture_agent(bundle, program, agent_args, &cwd, &request) {
        Ok(captured) => captured,
        Err(error) => {
            err(&format!("error: cannot run the agent `{program}`: {error}"));
            return Exit::Failure;
        }
    };
    match captured {
        Ok(draft) => {
            report_replacements(&draft);
            write_draft(&draft, args.out.as_deref())
        }
        Err(CaptureError::Lints(lints)) => {
            for lint in &lints {
                err(&format!("error: {lint}"));
            }
            err(&format!(
                "error: refused to write the draft: it fails {} lint(s)",
                lints.len()
            ));
            Exit::Findings
        }
        Err(error) => {
            err(&format!("error: {error}"));
            Exit::Failure
        }
    }
}

/// Says on standard error what sanitizing replaced in the draft.
pub(super) fn report_replacements(draft: &Draft) {
    for (field, replacement) in &draft.replacements {
        err(&format!(
            "note: `{field}`: replaced the {} `{}` with `{}`",
            replacement.shape, replacement.matched, replacement.placeholder
        ));
    }
}

fn write_draft(draft: &Draft, out_path: Option<&Path>) -> Exit {
    {
        match out_path {
            Some(path) => match std::fs::write(path, &draft.text) {
                Ok(()) => {
                    out(&format!(
                        "wrote the {} draft to {} ({} frame(s)); review it before committing\n",
                        draft.fixture.cell(),
                        path.display(),
                        draft.fixture.frames.len()
                    ));
                    Exit::Clean
                }
                Err(error) => {
                    err(&format!(
                        "error: cannot write `{}`: {error}",
                        path.display()
                    ));
                    Exit::Failure
                }
            },
            None => {
                out(&draft.text);
                Exit::Clean
            }
        }
    }
}

/// The capture command as recorded in `source`: the agent's program by its file name only (a
/// host path must not reach a fixture).
fn source(args: &CaptureArgs, program: &str, agent_args: &[String]) -> String {
    let program = Path::new(program).file_name().map_or_else(
        || program.to_owned(),
        |name| name.to_string_lossy().into_owned(),
    );
    let mut words = vec![
        "faultline replay capture".to_owned(),
        format!("--gateway {}", args.gateway),
        format!("--case {}", args.case),
        "--".to_owned(),
        program,
    ];
    words.extend(agent_args.iter().cloned());
    words.join(" ")
}

fn run_serve(args: &ServeArgs) -> Exit {
    let text = match std::fs::read_to_string(&args.fixture) {
        Ok(text) => text,
        Err(error) => {
            err(&format!(
                "error: cannot read `{}`: {error}",
                args.fixture.display()
            ));
            return Exit::Failure;
        }
    };
    let fixture = match load_str(&args.fixture.display().to_string(), &text) {
        Ok(fixture) => fixture,
        Err(errors) => {
            report_load_errors(&errors);
            return Exit::Failure;
        }
    };
    match serve(&fixture, std::io::stdin(), std::io::stdout()) {
        Ok(()) => Exit::Clean,
        Err(error) => {
            err(&format!("error: {error}"));
            Exit::Findings
        }
    }
}
