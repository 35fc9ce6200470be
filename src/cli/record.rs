//! `faultline replay record MATRIX`: the recording harness. For every agent × scenario cell of
//! a matrix file it starts the mock provider and the real agent (installed beforehand with npm,
//! at the pinned version) inside a network namespace with only loopback up, drives one turn
//! through the capture path, and writes a recorded replay fixture
//! (`fixtures/replay/recorded/<agent>-<scenario>.json`) and the classification fixtures of
//! every error text the agent emitted (`fixtures/classify/recorded-<agent>.jsonl`).
//!
//! The namespace is not optional: run normally, the command re-executes itself under
//! `unshare --net` with loopback brought up, and the re-executed process checks that it sees
//! no interface but an up loopback before starting anything; it refuses to record otherwise.
//! `faultline replay mock-provider SCENARIO` serves one scenario on its own.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use faultline_replay::capture::{
    CaptureError, CaptureRequest, capture, read_into_pipe, write_from_pipe,
};
use faultline_replay::fixture::forbidden::sanitize;
use faultline_replay::fixture::{AgentId, Case, Frame, Gateway, Identity, Recording};
use faultline_replay::mock::{Api, MockProvider, Scenario, load_scenario};
use faultline_runtime::{Bundle, Confidence, Evidence, Phase};
use serde::Deserialize;

use super::{Exit, err, out};

/// The most of an agent's standard error kept per cell.
const MAX_STDERR: u64 = 1 << 20;
/// The most error lines of standard error kept per cell.
const MAX_ERROR_LINES: usize = 6;
/// The longest error line kept.
const MAX_LINE: usize = 2000;

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// The matrix file (agents and scenarios; see docs/fixtures.md).
    #[arg(value_name = "MATRIX")]
    matrix: PathBuf,
    /// Record only these agents (by name; repeatable). Default: every agent.
    #[arg(long = "agent", value_name = "NAME")]
    agents: Vec<String>,
    /// Record only these scenarios (by name; repeatable). Default: each agent's list.
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// Where recorded replay fixtures go.
    #[arg(long, value_name = "DIR", default_value = "fixtures/replay/recorded")]
    out: PathBuf,
    /// Where the classification fixtures go (`recorded-<agent>.jsonl`).
    #[arg(long, value_name = "DIR", default_value = "fixtures/classify")]
    classify_out: PathBuf,
    /// How long one turn may take: seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 90)]
    timeout: u64,
    /// Set by the harness itself once it runs inside the namespace.
    #[arg(long, hide = true)]
    inside_namespace: bool,
    /// Where the namespace check reads the interfaces (for its tests).
    #[arg(
        long,
        hide = true,
        value_name = "FILE",
        default_value = "/proc/self/net/dev"
    )]
    proc_net_dev: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct MockArgs {
    /// The scenario file (`fixtures/mock-provider/<api>/<name>.json`).
    #[arg(value_name = "SCENARIO")]
    scenario: PathBuf,
    /// The port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

/// The matrix file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Matrix {
    /// Where scenario files are, relative to the matrix file.
    scenarios: PathBuf,
    agents: Vec<AgentEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AgentEntry {
    /// Its name: file names and the recording use it.
    name: String,
    /// The npm package and its pinned version.
    package: String,
    version: String,
    /// Where it is installed (`npm install --prefix DIR PACKAGE@VERSION`), relative to the
    /// working directory.
    install: PathBuf,
    /// The adapter's provider id.
    agent_id: String,
    /// The command line, `{install}`, `{home}`, `{port}`, `{base}` substituted.
    command: Vec<String>,
    /// The environment (nothing else is passed but `PATH`), substituted likewise: base URLs,
    /// dummy keys, telemetry and auto-update off, retry settings.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// Files to write under the cell's home directory (configuration), substituted likewise.
    #[serde(default)]
    files: BTreeMap<String, String>,
    /// A regular expression selecting the error lines of its standard error.
    error_lines: String,
    /// The scenarios (file stems under the scenario directory, `<api dir>/<name>`).
    scenarios: Vec<String>,
}

/// The gateway label of a scenario's API.
fn gateway(api: Api) -> Gateway {
    match api {
        Api::AnthropicMessages => Gateway::AnthropicApi,
        Api::OpenaiChat | Api::OpenaiResponses => Gateway::OpenaiApi,
        Api::Gemini => Gateway::GeminiApi,
    }
}

pub fn run_mock(args: &MockArgs) -> Exit {
    let scenario = match read_scenario(&args.scenario) {
        Ok(scenario) => scenario,
        Err(message) => {
            err(&format!("error: {message}"));
            return Exit::Failure;
        }
    };
    let mock = match MockProvider::start(&scenario, args.port) {
        Ok(mock) => mock,
        Err(error) => {
            err(&format!(
                "error: cannot listen on 127.0.0.1:{}: {error}",
                args.port
            ));
            return Exit::Failure;
        }
    };
    out(&format!(
        "serving `{}` on {}\n",
        scenario.name,
        mock.base_url()
    ));
    if scenario.closed_port {
        out("(a closed port: nothing listens there)\n");
        return Exit::Clean;
    }
    let mut seen = 0;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let received = mock.received();
        for request in received.iter().skip(seen) {
            err(&format!(
                "{} {}{}",
                request.method,
                request.url,
                if request.streaming { " (stream)" } else { "" }
            ));
        }
        seen = received.len();
    }
}

fn read_scenario(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read `{}`: {error}", path.display()))?;
    load_scenario(&path.display().to_string(), &text).map_err(|error| error.to_string())
}

/// Whether this process is in a loopback-only network namespace: the interfaces of its own
/// namespace (`proc_net_dev`, normally `/proc/self/net/dev`; `/sys/class/net` would show the
/// namespace sysfs was mounted in) are `lo` alone, and loopback carries a connection. `Err`
/// says what is wrong.
fn loopback_only(proc_net_dev: &Path) -> Result<(), String> {
    let table = std::fs::read_to_string(proc_net_dev)
        .map_err(|error| format!("cannot read `{}`: {error}", proc_net_dev.display()))?;
    // Two header lines, then `name: counters…` per interface.
    let mut names: Vec<&str> = table
        .lines()
        .skip(2)
        .filter_map(|line| line.split(':').next())
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .collect();
    names.sort_unstable();
    if names != ["lo"] {
        return Err(format!(
            "the network namespace has the interfaces {}; only `lo` may exist",
            names.join(", ")
        ));
    }
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
        .map_err(|error| format!("cannot listen on loopback: {error}"))?;
    let address = listener
        .local_addr()
        .map_err(|error| format!("cannot listen on loopback: {error}"))?;
    std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2))
        .map(drop)
        .map_err(|error| {
            format!("the loopback interface carries no connection ({error}); is it up?")
        })
}

pub fn run_record(args: &RecordArgs) -> Exit {
    if !args.inside_namespace {
        return reexecute_in_namespace();
    }
    if let Err(problem) = loopback_only(&args.proc_net_dev) {
        err(&format!(
            "error: refusing to record: {problem}; the harness runs agents only in a network namespace with nothing but loopback (run `faultline replay record` as root, which creates it with `unshare --net`)"
        ));
        return Exit::Failure;
    }
    let matrix: Matrix = match std::fs::read_to_string(&args.matrix)
        .map_err(|error| error.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|error| error.to_string()))
    {
        Ok(matrix) => matrix,
        Err(error) => {
            err(&format!("error: `{}`: {error}", args.matrix.display()));
            return Exit::Failure;
        }
    };
    let bundle = match super::classify::load_bundle(None, None) {
        Ok(bundle) => Arc::new(bundle),
        Err(exit) => return exit,
    };
    let scenario_dir = args
        .matrix
        .parent()
        .unwrap_or(Path::new("."))
        .join(&matrix.scenarios);
    let matrix_name = args
        .matrix
        .file_name()
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    let (mut recorded, mut missed) = (0_usize, 0_usize);
    for agent in matrix
        .agents
        .iter()
        .filter(|agent| args.agents.is_empty() || args.agents.contains(&agent.name))
    {
        let Some(agent_id) = AgentId::parse(&agent.agent_id) else {
            err(&format!(
                "error: agent `{}`: `agentId` is not a provider id",
                agent.name
            ));
            return Exit::Failure;
        };
        if !agent.install.exists() {
            err(&format!(
                "error: agent `{}` is not installed; run (outside the namespace): npm install --prefix {} {}@{}",
                agent.name,
                agent.install.display(),
                agent.package,
                agent.version
            ));
            return Exit::Failure;
        }
        let lines = match regex::Regex::new(&agent.error_lines) {
            Ok(lines) => lines,
            Err(error) => {
                err(&format!(
                    "error: agent `{}`: `errorLines`: {error}",
                    agent.name
                ));
                return Exit::Failure;
            }
        };
        let mut texts = Vec::new();
        for scenario_name in agent.scenarios.iter().filter(|name| {
            args.scenarios.is_empty() || args.scenarios.iter().any(|s| name.ends_with(s.as_str()))
        }) {
            let scenario = match read_scenario(&scenario_dir.join(format!("{scenario_name}.json")))
            {
                Ok(scenario) => scenario,
                Err(message) => {
                    err(&format!("error: {message}"));
                    return Exit::Failure;
                }
            };
            let cell = Cell {
                agent,
                agent_id: agent_id.clone(),
                scenario: &scenario,
                timeout: Duration::from_secs(args.timeout),
                source: format!(
                    "faultline replay record {matrix_name} --agent {} --scenario {}",
                    agent.name, scenario.name
                ),
            };
            let result = match record_cell(&bundle, &cell, &lines) {
                Ok(result) => result,
                Err(error) => {
                    err(&format!(
                        "error: {} × {}: {error}",
                        agent.name, scenario.name
                    ));
                    return Exit::Failure;
                }
            };
            let name = format!("{}-{}", agent.name, scenario.name);
            match &result.draft {
                Ok(text) => {
                    recorded += 1;
                    if let Err(error) = std::fs::create_dir_all(&args.out)
                        .and_then(|()| std::fs::write(args.out.join(format!("{name}.json")), text))
                    {
                        err(&format!(
                            "error: cannot write the fixture of {name}: {error}"
                        ));
                        return Exit::Failure;
                    }
                    out(&format!("RECORDED {name}: {}\n", result.summary));
                }
                Err(why) => {
                    missed += 1;
                    out(&format!("NO FIXTURE {name}: {why}\n"));
                }
            }
            for text in &result.texts {
                texts.push(classification_line(&bundle, &cell, text));
            }
        }
        if let Err(error) = write_classification(&args.classify_out, &agent.name, &texts) {
            err(&format!(
                "error: cannot write the classification fixtures of `{}`: {error}",
                agent.name
            ));
            return Exit::Failure;
        }
    }
    out(&format!(
        "{recorded} recorded, {missed} without a fixture\n"
    ));
    Exit::Clean
}

/// Runs this command again inside a new network namespace with loopback up.
fn reexecute_in_namespace() -> Exit {
    let Ok(executable) = std::env::current_exe() else {
        err("error: cannot find this executable to re-run it in a network namespace");
        return Exit::Failure;
    };
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    args.push("--inside-namespace".to_owned());
    let status = Command::new("unshare")
        .args([
            "--net",
            "--",
            "sh",
            "-c",
            "ip link set lo up && exec \"$0\" \"$@\"",
        ])
        .arg(executable)
        .args(args)
        .status();
    match status {
        Ok(status) if status.success() => Exit::Clean,
        Ok(status) => {
            if status.code() == Some(1) {
                err(
                    "error: cannot record in a loopback-only network namespace (`unshare --net` and `ip link set lo up` need root, or the run inside it failed); refusing to run agents outside one",
                );
            }
            Exit::Failure
        }
        Err(error) => {
            err(&format!(
                "error: cannot run `unshare` ({error}); the harness refuses to run agents outside a loopback-only network namespace"
            ));
            Exit::Failure
        }
    }
}

struct Cell<'a> {
    agent: &'a AgentEntry,
    agent_id: AgentId,
    scenario: &'a Scenario,
    timeout: Duration,
    source: String,
}

struct CellResult {
    /// The fixture text, or why there is none.
    draft: Result<String, String>,
    summary: String,
    /// The agent's error texts (sanitized): the prompt error, diagnostic chunks, stderr lines.
    texts: Vec<(String, String)>,
}

fn substitute(text: &str, values: &[(&str, String)]) -> String {
    values.iter().fold(text.to_owned(), |text, (key, value)| {
        text.replace(key, value)
    })
}

fn record_cell(
    bundle: &Arc<Bundle>,
    cell: &Cell<'_>,
    lines: &regex::Regex,
) -> std::io::Result<CellResult> {
    let name = format!("{}-{}", cell.agent.name, cell.scenario.name);
    let root = std::env::temp_dir()
        .join(format!("faultline-record-{}", std::process::id()))
        .join(&name);
    let home = root.join("home");
    let work = root.join("work");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&work)?;
    let mock = MockProvider::start(cell.scenario, 0)?;
    let install = std::fs::canonicalize(&cell.agent.install)?;
    let values = [
        ("{install}", install.display().to_string()),
        ("{home}", home.display().to_string()),
        ("{port}", mock.port().to_string()),
        ("{base}", mock.base_url()),
    ];
    for (file, text) in &cell.agent.files {
        let path = home.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, substitute(text, &values))?;
    }
    let command: Vec<String> = cell
        .agent
        .command
        .iter()
        .map(|word| substitute(word, &values))
        .collect();
    let Some((program, program_args)) = command.split_first() else {
        return Err(std::io::Error::other("the agent's `command` is empty"));
    };
    // Its own process group: npm's launchers start the real agent as a child, which must end
    // with it (a survivor would hold the standard streams open).
    let mut child = Command::new(program)
        .args(program_args)
        .process_group(0)
        .current_dir(&work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("TMPDIR", &root)
        .envs(
            cell.agent
                .env
                .iter()
                .map(|(key, value)| (key, substitute(value, &values))),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let not_piped = || std::io::Error::other("the agent's standard streams are not piped");
    let stdin = child.stdin.take().ok_or_else(not_piped)?;
    let stdout = child.stdout.take().ok_or_else(not_piped)?;
    let mut stderr = child.stderr.take().ok_or_else(not_piped)?;
    let stderr_thread = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(MAX_STDERR).read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    let (incoming, reading) = read_into_pipe(stdout);
    let (outgoing, writing) = write_from_pipe(stdin);
    let request = CaptureRequest {
        gateway: gateway(cell.scenario.api),
        case: Case::ProviderError,
        agent_id: cell.agent_id.clone(),
        identity: Identity {
            session_id: name.clone(),
            execution_id: format!("exec-{name}"),
            prompt_generation: 1,
        },
        prompt: "Reply with the word hello.".to_owned(),
        source: cell.source.clone(),
        captured_at: faultline_runtime::format_instant(std::time::SystemTime::now()),
        recording: Some(Recording {
            agent: cell.agent.name.clone(),
            package: cell.agent.package.clone(),
            version: cell.agent.version.clone(),
            scenario: cell.scenario.name.clone(),
        }),
        timeout: cell.timeout,
    };
    let captured = capture(Arc::clone(bundle), incoming, outgoing, &work, &request);
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.kill();
    let _ = child.wait();
    let _ = reading.join();
    let _ = writing.join();
    let stderr_text = stderr_thread.join().unwrap_or_default();
    let requests = mock.received().len();
    mock.stop();
    let _ = std::fs::remove_dir_all(&root);
    let markers = markers(cell.scenario);
    let mut texts = Vec::new();
    let (draft, summary) = match captured {
        Ok(draft) => {
            for frame in &draft.fixture.frames {
                match frame {
                    // A bare JSON-RPC message carries nothing of the scenario (codex-acp puts
                    // the cause in `data`, which never crosses the adapter).
                    Frame::PromptError { message, .. } if !GENERIC.contains(&message.trim()) => {
                        texts.push(("prompt error".to_owned(), message.clone()));
                    }
                    Frame::MessageChunk { text, .. }
                        if lines.is_match(text) && carries(text, &markers) =>
                    {
                        texts.push(("message".to_owned(), text.clone()));
                    }
                    _ => {}
                }
            }
            let tokens: Vec<&str> = draft
                .fixture
                .expect
                .events
                .iter()
                .map(|token| token.as_str())
                .collect();
            let summary = format!(
                "[{}] {} (scenario expects {}); {requests} request(s) to the mock",
                tokens.join(", "),
                draft.fixture.expect.diagnostic_code,
                cell.scenario.expect
            );
            (Ok(draft.text), summary)
        }
        Err(CaptureError::Lints(lints)) => {
            let why = lints
                .iter()
                .map(|lint| lint.to_string())
                .collect::<Vec<_>>()
                .join("; ");
            (
                Err(format!("the turn did not end in a prompt error ({why})")),
                String::new(),
            )
        }
        Err(error) => (Err(error.to_string()), String::new()),
    };
    let mut kept = 0;
    for line in stderr_text.lines() {
        let line = plain(line);
        let line = line.trim();
        // A line opening an object or array dump carries no text of its own.
        let dump = line.ends_with(['{', '[']);
        if kept < MAX_ERROR_LINES
            && !dump
            && line.len() >= MIN_LINE
            // The harness's own paths (the cell's directory names the scenario's status).
            && !line.contains(&*root.to_string_lossy())
            && lines.is_match(line)
            && carries(line, &markers)
            && !texts.iter().any(|(_, text)| line.contains(text.as_str()))
        {
            let line: String = line.chars().take(MAX_LINE).collect();
            texts.push(("stderr".to_owned(), sanitize(&line).0));
            kept += 1;
        }
    }
    Ok(CellResult {
        draft,
        summary,
        texts,
    })
}

/// JSON-RPC messages that say nothing but that a request failed.
const GENERIC: &[&str] = &["Internal error", "Internal error (-32603)"];
/// Shorter lines (`status: 400,`) are fragments of an object dump.
const MIN_LINE: usize = 24;

/// What shows that a text is about the scenario's error: its status code, and the strings of
/// its body (error type, status, the message's start); for a closed port, the refused
/// connection.
fn markers(scenario: &Scenario) -> Vec<String> {
    fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(text) if text.len() >= 6 => {
                out.push(text.chars().take(40).collect());
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
            serde_json::Value::Object(map) => map.values().for_each(|item| strings(item, out)),
            _ => {}
        }
    }
    let mut markers = Vec::new();
    match &scenario.response {
        Some(response) => {
            markers.push(response.status.to_string());
            strings(&response.body, &mut markers);
        }
        None => markers.extend(
            [
                "ECONNREFUSED",
                "onnection refused",
                "Connection error",
                "error sending request",
                "fetch failed",
            ]
            .map(str::to_owned),
        ),
    }
    markers
}

fn carries(text: &str, markers: &[String]) -> bool {
    markers.iter().any(|marker| text.contains(marker.as_str()))
}

/// A log line without its ANSI colours and its tracing timestamp.
fn plain(line: &str) -> String {
    let mut text = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters final-byte.
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        text.push(c);
    }
    let stamped = text.len() > 28
        && text.as_bytes().get(4) == Some(&b'-')
        && text.as_bytes().get(10) == Some(&b'T');
    match text.split_once(' ') {
        Some((_, rest)) if stamped => rest.trim_start().to_owned(),
        _ => text,
    }
}

/// One classification fixture line for an error text the agent emitted: the scenario's code
/// (or the alternative the scenario documents, when the text gives that), at the confidence
/// the catalogue gives it when that is high or medium, else `high` (so `faultline test` flags a
/// text the catalogue misses).
fn classification_line(
    bundle: &Bundle,
    cell: &Cell<'_>,
    (origin, text): &(String, String),
) -> String {
    let evidence = Evidence::new()
        .with_phase(Phase::PromptSend)
        .with_provider_id(cell.agent_id.as_str())
        .with_stderr(text.as_str());
    let result = bundle.classify(&evidence);
    let code = if cell.scenario.alternatives.contains_key(&result.code) {
        result.code.clone()
    } else {
        cell.scenario.expect.clone()
    };
    let confidence = if result.code == code
        && matches!(result.confidence, Confidence::High | Confidence::Medium)
    {
        result.confidence
    } else {
        Confidence::High
    };
    let line = serde_json::json!({
        "name": format!("recorded {} {} {origin}: {}", cell.agent.name, cell.scenario.name, text.chars().take(60).collect::<String>()),
        "source": cell.scenario.source,
        "evidence": {"phase": "prompt_send", "provider_id": cell.agent_id.as_str(), "stderr": text},
        "expect": {"code": code, "confidence": confidence},
    });
    line.to_string()
}

/// Replaces the agent's lines of the scenarios just recorded in `recorded-<agent>.jsonl`,
/// keeping the others.
fn write_classification(directory: &Path, agent: &str, lines: &[String]) -> std::io::Result<()> {
    let path = directory.join(format!("recorded-{agent}.jsonl"));
    let scenarios: Vec<String> = lines
        .iter()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|line| {
            line.get("name")
                .and_then(|name| name.as_str())
                .map(scenario_of)
        })
        .collect();
    let mut kept: Vec<String> = std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .filter(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|line| {
                    line.get("name")
                        .and_then(|name| name.as_str())
                        .map(scenario_of)
                })
                .is_none_or(|scenario| !scenarios.contains(&scenario))
        })
        .map(str::to_owned)
        .collect();
    kept.extend(lines.iter().cloned());
    kept.sort();
    kept.dedup();
    if kept.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(directory)?;
    std::fs::write(path, kept.join("\n") + "\n")
}

/// `recorded <agent> <scenario> …` → `<agent> <scenario>`.
fn scenario_of(name: &str) -> String {
    name.split(' ')
        .skip(1)
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}
