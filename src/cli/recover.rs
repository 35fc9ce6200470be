//! `faultline recover`: replays a JSON-lines log of recovery events through the engine and
//! prints what each event did, and each terminal verdict with its reason — for orchestrator
//! authors debugging a session.

use std::collections::BTreeMap;
use std::path::PathBuf;

use faultline_runtime::recovery::session::{Event, Outcome, Session};

use super::Exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Event logs, one JSON object per line; standard input when none is given.
    #[arg(value_name = "FILE")]
    inputs: Vec<PathBuf>,
    /// Classify with a compiled bundle.
    #[arg(long, value_name = "FILE", conflicts_with = "catalogue")]
    bundle: Option<PathBuf>,
    /// Classify with a catalogue compiled now. Default: the catalogue built into this binary.
    #[arg(long, value_name = "CATALOGUE")]
    catalogue: Option<PathBuf>,
    /// The provider id of sessions whose first event names none.
    #[arg(long, value_name = "ID", default_value = "")]
    provider: String,
    /// Print each outcome as a JSON line instead of text.
    #[arg(long)]
    json: bool,
}

/// One log line: an event, the session it belongs to (`session`, default `default`), and on a
/// session's first line optionally its adapter's `provider_id`.
fn parse(line: &str) -> Result<(String, Option<String>, Event), String> {
    let mut fields: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(line).map_err(|error| format!("invalid event: {error}"))?;
    let text = |fields: &mut serde_json::Map<String, serde_json::Value>, key: &str| match fields
        .remove(key)
    {
        None => Ok(None),
        Some(serde_json::Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!(
            "invalid event: `{key}` must be a string, found `{other}`"
        )),
    };
    let session = text(&mut fields, "session")?.unwrap_or_else(|| "default".to_owned());
    let provider = text(&mut fields, "provider_id")?;
    let event: Event = serde_path_to_error::deserialize(serde_json::Value::Object(fields))
        .map_err(|error| match error.path().to_string().as_str() {
            "." => format!("invalid event: {}", error.inner()),
            path => format!("invalid event: field `{path}`: {}", error.inner()),
        })?;
    Ok((session, provider, event))
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Failed(verdict) => format!(
            "terminal failure `{}` → {} ({}, {}, rule {}); {}; recovery: {}{}",
            verdict.projection.message,
            verdict.classification.code,
            verdict.classification.class,
            verdict.classification.confidence,
            verdict.classification.rule,
            verdict.safety,
            match verdict.disposition {
                faultline_runtime::recovery::session::Disposition::Automatic => "automatic",
                faultline_runtime::recovery::session::Disposition::Manual => "manual",
            },
            verdict
                .recorded_diagnostic
                .as_ref()
                .map(|code| format!(" (recorded diagnostic `{code}`)"))
                .unwrap_or_default(),
        ),
        Outcome::AttemptBegan => "attempt began (earlier evidence replaced)".to_owned(),
        Outcome::Bound => "identity bound".to_owned(),
        Outcome::Poisoned => "identity missing or conflicting: evidence poisoned".to_owned(),
        Outcome::Stale => "another execution or generation: ignored".to_owned(),
        Outcome::NoRecord => "no attempt recorded: ignored".to_owned(),
        Outcome::ModelSettled => "model settled".to_owned(),
        Outcome::Output {
            cleared_diagnostic: true,
        } => "output fence closed; the recorded diagnostic is cleared".to_owned(),
        Outcome::Output { .. } => "output fence closed".to_owned(),
        Outcome::Effect => "effect fence closed".to_owned(),
        Outcome::DiagnosticRecorded { code } => format!("diagnostic `{code}` recorded"),
        Outcome::DiagnosticIgnored => {
            "diagnostic not recorded (output, tools or an earlier diagnostic came first)".to_owned()
        }
        Outcome::DiagnosticDemoted => {
            "marked chunk is not a high-confidence, fallback-eligible failure: output".to_owned()
        }
        Outcome::Nothing => "nothing to observe".to_owned(),
        Outcome::CursorMarkerPending => {
            "Cursor RetriableError: suppressed, pending until the prompt settles".to_owned()
        }
        Outcome::CursorMarkerSuperseded => {
            "progress superseded the pending Cursor marker; output fence closed".to_owned()
        }
        Outcome::Completed => "prompt completed".to_owned(),
        Outcome::Retired => {
            "retry lifecycle retired: evidence unknown until a new attempt binds".to_owned()
        }
    }
}

pub fn run(args: &Args) -> Exit {
    let bundle = match super::classify::load_bundle(args.bundle.as_ref(), args.catalogue.as_ref()) {
        Ok(bundle) => bundle,
        Err(exit) => return exit,
    };
    let mut sessions: BTreeMap<String, Session> = BTreeMap::new();
    super::files::json_lines(&args.inputs, |name, number, line| {
        let (session_id, provider, event) = parse(line)?;
        let session = sessions
            .entry(session_id.clone())
            .or_insert_with(|| Session::new(provider.unwrap_or_else(|| args.provider.clone())));
        let outcome = session.apply(&bundle, &event);
        Ok(if args.json {
            serde_json::json!({"line": number, "session": session_id, "outcome": outcome})
                .to_string()
        } else {
            format!("{name}:{number} [{session_id}] {}", describe(&outcome))
        })
    })
}
