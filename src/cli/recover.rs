//! `faultline recover`: replays a JSON-lines log of recovery events through the engine and
//! prints what each event did, and each terminal verdict with its reason — for orchestrator
//! authors debugging a session.

use std::collections::BTreeMap;
use std::path::PathBuf;

use faultline_recovery::session::{Event, Outcome, Session};

use faultline_runtime::Bundle;
use serde_json::{Map, Value};

use super::Exit;
use super::json_lines::{self, LineError};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Event logs, one JSON object per line; `-` or none: standard input.
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
fn parse(mut fields: Map<String, Value>) -> Result<(String, Option<String>, Event), LineError> {
    let mut text = |key: &str| match fields.remove(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(LineError::field(
            key,
            format!("expected a string, found {}", json_lines::kind(&other)),
        )),
    };
    let session = text("session")?.unwrap_or_else(|| "default".to_owned());
    let provider = text("provider_id")?;
    let event: Event = super::classify::typed(fields)?;
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
                faultline_recovery::session::Disposition::Automatic => "automatic",
                faultline_recovery::session::Disposition::Manual => "manual",
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

/// Recovery answers: what each event did, as text or as a JSON object.
struct Replay<'a> {
    bundle: &'a Bundle,
    args: &'a Args,
    sessions: BTreeMap<String, Session>,
}

impl json_lines::Answers for Replay<'_> {
    fn subject(&self) -> &'static str {
        "event"
    }

    fn answer(&mut self, line: json_lines::Line<'_>) -> Result<String, LineError> {
        let (session_id, provider, event) = parse(line.fields)?;
        let session = self.sessions.entry(session_id.clone()).or_insert_with(|| {
            Session::new(provider.unwrap_or_else(|| self.args.provider.clone()))
        });
        let outcome = session.apply(self.bundle, &event);
        Ok(if self.args.json {
            serde_json::json!({"line": line.number, "session": session_id, "outcome": outcome})
                .to_string()
        } else {
            format!(
                "{}:{} [{session_id}] {}",
                line.input,
                line.number,
                describe(&outcome)
            )
        })
    }

    fn error_line(
        &self,
        input: &str,
        number: usize,
        id: Option<&Value>,
        error: &LineError,
    ) -> String {
        if self.args.json {
            json_lines::error_object(input, number, id, error)
        } else {
            let field = error
                .field
                .as_ref()
                .map(|field| format!("field `{field}`: "))
                .unwrap_or_default();
            format!("{input}:{number} error: {field}{}", error.message)
        }
    }
}

pub fn run(args: &Args) -> Exit {
    let bundle = match super::classify::load_bundle(args.bundle.as_ref(), args.catalogue.as_ref()) {
        Ok(bundle) => bundle,
        Err(exit) => return exit,
    };
    json_lines::run(
        &args.inputs,
        &mut Replay {
            bundle: &bundle,
            args,
            sessions: BTreeMap::new(),
        },
    )
}
