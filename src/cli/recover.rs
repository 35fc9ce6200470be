//! `faultline recover`: replays a JSON-lines log of recovery events through the engine's one
//! entry point (`faultline_recovery::Recovery`, one per session) and prints every effect of
//! each event — what it did to the prompt-attempt evidence and each terminal verdict with its
//! reason, the transcript records to retract, the retry-notice store operations — for
//! orchestrator authors debugging a session. The log format is docs/recovery.md's. A session
//! whose first line names a decision `context` (`kanban`, `office`) also decides with the
//! recovery policy: each terminal failure's decision path is printed, its retry notices
//! follow the decisions, and the `route_*` events drive its route state (docs/policy.md).
//!
//! A line that cannot be read is still answered (with an error object, as the JSON-lines
//! protocol says), but the replay does not pretend it never happened: the event it held is
//! lost, so its session is poisoned (every later verdict manual), and when even the session
//! cannot be told, every session is — those seen so far and those that appear later.

use std::collections::BTreeMap;
use std::path::PathBuf;

use faultline_acp::dialect::recovery_profile;
use faultline_policy::{AskCause, DecisionContext};
use faultline_recovery::notices::{CancelReply, NoticeEffect, Report, WriteTarget};
use faultline_recovery::prompt::{Disposition, Outcome};
use faultline_recovery::response_attempt::{MessageId, TranscriptEffect};
use faultline_recovery::{Effect, Recovery, RecoveryEvent};
use faultline_runtime::{Bundle, format_instant};
use serde_json::{Map, Value};

use super::Exit;
use super::json_lines::{self, LineError, context_field, string_field};

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

/// One log line's `session` (default `default`).
fn session_of(fields: &mut Map<String, Value>) -> Result<String, LineError> {
    string_field(fields, "session").map(|session| session.unwrap_or_else(|| "default".to_owned()))
}

fn describe_outcome(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Failed(verdict) => format!(
            "{}terminal failure `{}` → {} ({}, {}, rule {}); {}; recovery: {}{}{}",
            if verdict.duplicate {
                "re-delivered (duplicate, authorises nothing): "
            } else {
                ""
            },
            verdict.projection.message(),
            verdict.classification.code,
            verdict.classification.class,
            verdict.classification.confidence,
            verdict.classification.rule,
            verdict.safety,
            match verdict.disposition {
                Disposition::Automatic => "automatic",
                Disposition::Manual => "manual",
            },
            if verdict.same_provider_only {
                ", same provider only (no fallback)"
            } else {
                ""
            },
            verdict
                .recorded_provider_diagnostic
                .as_ref()
                .map(|code| format!(" (recorded diagnostic `{code}`)"))
                .unwrap_or_default(),
        ),
        Outcome::AttemptBegan => "attempt began (earlier evidence replaced)".to_owned(),
        Outcome::AttemptRepeated => {
            "the current attempt began again: its evidence is kept".to_owned()
        }
        Outcome::StaleProviderDiagnostic => {
            "a provider diagnostic of another execution or generation: no automatic recovery for the current attempt".to_owned()
        }
        Outcome::SessionPoisoned => {
            "an event of the session could not be read: every later verdict is manual".to_owned()
        }
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
        Outcome::ProviderDiagnosticRecorded { code } => format!("diagnostic `{code}` recorded"),
        Outcome::ProviderDiagnosticIgnored => {
            "diagnostic not recorded (output, tools or an earlier diagnostic came first)".to_owned()
        }
        Outcome::ProviderDiagnosticDemoted => {
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

fn ids(ids: &[MessageId]) -> String {
    let ids: Vec<&str> = ids.iter().map(MessageId::as_str).collect();
    format!("[{}]", ids.join(", "))
}

fn describe_transcript(effect: &TranscriptEffect) -> String {
    match effect {
        TranscriptEffect::DropUncommittedHistory { generation } => {
            format!("drop the uncommitted assistant history of generation {generation}")
        }
        TranscriptEffect::Retract(retraction) => format!(
            "retract records {} of generation {}",
            ids(&retraction.message_ids),
            retraction.generation
        ),
    }
}

fn describe_notice(effect: &NoticeEffect) -> String {
    match effect {
        NoticeEffect::ListNotices => "list the session's notices".to_owned(),
        NoticeEffect::WriteNotice {
            target,
            notice,
            cancel,
        } => format!(
            "{} (`{}`, {}, attempt {}/{}, due {}, Cancel stops loop {})",
            match target {
                WriteTarget::Create => "create the retry notice".to_owned(),
                WriteTarget::Update(id) => format!("update notice `{id}` in place"),
            },
            notice.reason,
            notice.provider,
            notice.attempt,
            notice.max_attempts,
            faultline_runtime::format_instant(notice.deadline),
            cancel.loop_id.get()
        ),
        NoticeEffect::DeleteNotices { ids } => {
            let ids: Vec<&str> = ids.iter().map(|id| id.as_str()).collect();
            format!("delete notices [{}]", ids.join(", "))
        }
        NoticeEffect::DisarmRetry => "disarm the retry timer".to_owned(),
        NoticeEffect::ShowManualRecovery => {
            "offer manual recovery (Resume, Start fresh)".to_owned()
        }
        NoticeEffect::Reply(reply) => format!(
            "reply: {}",
            match reply {
                CancelReply::Cancelled => "cancelled",
                CancelReply::NoActiveRetry => "no active retry",
                CancelReply::Refused => "refused",
            }
        ),
        NoticeEffect::Report(report) => format!(
            "report: {}",
            match report {
                Report::ListFailed => "the listing failed; nothing written or deleted".to_owned(),
                Report::WriteFailed => "the write failed; no other notice created".to_owned(),
                Report::NoticeUnreadable { ids } => format!(
                    "unreadable messages [{}] may be the notice; none created",
                    ids.iter()
                        .map(|id| id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Report::CleanupIncomplete { remaining } => format!(
                    "notices [{}] could not be deleted; a later cleanup retries",
                    remaining
                        .iter()
                        .map(|id| id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        ),
    }
}

fn describe_route(effect: &faultline_policy::Effect) -> String {
    use faultline_policy::Effect as Route;
    match effect {
        Route::Persist => "route: persist the state (then report the write)".to_owned(),
        Route::ScheduleTimer { generation, at } => format!(
            "route: arm the timer of generation {generation} at {}",
            format_instant(*at)
        ),
        Route::DisarmTimer { generation } => {
            format!("route: disarm the timer of generation {generation}")
        }
        Route::DispatchRetry { generation } => {
            format!("route: dispatch the retry (generation {generation})")
        }
        Route::SwitchRoute => "route: switch to the next candidate".to_owned(),
        Route::AskUser { cause } => format!(
            "route: ask the user ({})",
            match cause {
                AskCause::Evaluated(reason) => {
                    serde_json::to_value(reason)
                        .ok()
                        .and_then(|value| value.as_str().map(str::to_owned))
                        .unwrap_or_default()
                }
                AskCause::Cancelled => "cancelled".to_owned(),
                AskCause::LaunchFailed => "route_action_launch_failed".to_owned(),
            }
        ),
    }
}

fn describe(effect: &Effect) -> String {
    match effect {
        Effect::Evidence(outcome) => describe_outcome(outcome),
        Effect::Transcript(effect) => describe_transcript(effect),
        Effect::Notice(effect) => describe_notice(effect),
        Effect::Decision(decision) => format!("decision: {}", decision.path()),
        Effect::Route(effect) => describe_route(effect),
        Effect::RouteRefused { refused } => format!("route: refused ({refused})"),
    }
}

/// Recovery answers: what each event did, as text or as a JSON object.
struct Replay<'a> {
    bundle: &'a Bundle,
    args: &'a Args,
    sessions: BTreeMap<String, Recovery>,
    /// A line whose session could not be told was lost: every session, later ones included,
    /// is poisoned.
    poison_every_session: bool,
    /// The sessions the line being answered poisoned because it could not be read (set by
    /// `answer`, reported by `error_line`).
    poisoned_by_line: Option<Vec<String>>,
}

impl Replay<'_> {
    /// The session's engine, created on its first line for the adapter `provider` names (a
    /// session that appears after a lost line of unknown session starts poisoned).
    fn session(&mut self, session_id: &str, provider: Option<String>) -> &mut Recovery {
        self.session_in(session_id, provider, None)
    }

    /// [`Replay::session`]; a session created with a decision `context` decides with the
    /// bundle's recovery policy ([`Recovery::deciding`]).
    fn session_in(
        &mut self,
        session_id: &str,
        provider: Option<String>,
        context: Option<DecisionContext>,
    ) -> &mut Recovery {
        let bundle = self.bundle;
        let poisoned = self.poison_every_session;
        let default_provider = &self.args.provider;
        self.sessions
            .entry(session_id.to_owned())
            .or_insert_with(|| {
                let profile =
                    recovery_profile(&provider.unwrap_or_else(|| default_provider.clone()));
                let mut recovery = match context {
                    Some(context) => Recovery::deciding(profile, context),
                    None => Recovery::new(profile),
                };
                if poisoned {
                    let _poisoned = recovery.apply(bundle, RecoveryEvent::EventUnreadable);
                }
                recovery
            })
    }

    /// A line of `session_id` could not be read: its event is lost.
    fn poison(&mut self, session_id: &str, provider: Option<String>) -> Vec<String> {
        let bundle = self.bundle;
        let recovery = self.session(session_id, provider);
        let _poisoned = recovery.apply(bundle, RecoveryEvent::EventUnreadable);
        vec![session_id.to_owned()]
    }

    /// A line whose session cannot be told could not be read: every session is poisoned.
    fn poison_all(&mut self) -> Vec<String> {
        self.poison_every_session = true;
        for recovery in self.sessions.values_mut() {
            let _poisoned = recovery.apply(self.bundle, RecoveryEvent::EventUnreadable);
        }
        self.sessions.keys().cloned().collect()
    }

    /// The line's session and event; a line that cannot be read poisons what it may have
    /// belonged to.
    fn read(
        &mut self,
        mut fields: Map<String, Value>,
    ) -> Result<(String, RecoveryEvent), LineError> {
        let session_id = match session_of(&mut fields) {
            Ok(session_id) => session_id,
            Err(error) => {
                self.poisoned_by_line = Some(self.poison_all());
                return Err(error);
            }
        };
        let provider = match string_field(&mut fields, "provider_id") {
            Ok(provider) => provider,
            Err(error) => {
                self.poisoned_by_line = Some(self.poison(&session_id, None));
                return Err(error);
            }
        };
        let context = match context_field(&mut fields) {
            Ok(context) => context,
            Err(error) => {
                self.poisoned_by_line = Some(self.poison(&session_id, provider));
                return Err(error);
            }
        };
        match super::classify::typed::<RecoveryEvent>(fields) {
            Ok(event) => {
                self.session_in(&session_id, provider, context);
                Ok((session_id, event))
            }
            Err(error) => {
                self.poisoned_by_line = Some(self.poison(&session_id, provider));
                Err(error)
            }
        }
    }
}

impl json_lines::Answers for Replay<'_> {
    fn subject(&self) -> &'static str {
        "event"
    }

    fn answer(&mut self, line: json_lines::Line<'_>) -> Result<String, LineError> {
        let (session_id, event) = self.read(line.fields)?;
        let transcript_record = matches!(
            event,
            RecoveryEvent::RecordAllocated { .. } | RecoveryEvent::RecordContinued { .. }
        );
        let restart = matches!(event, RecoveryEvent::RouteRestarted { .. });
        let bundle = self.bundle;
        let args = self.args;
        let recovery = self.session(&session_id, None);
        let effects = recovery.apply(bundle, event);
        Ok(if args.json {
            // The evidence outcome keeps its own key; every other effect is listed in order.
            let mut answer = Map::new();
            answer.insert("line".to_owned(), Value::from(line.number));
            answer.insert("session".to_owned(), Value::from(session_id));
            if let Some(outcome) = effects.iter().find_map(Effect::evidence) {
                answer.insert("outcome".to_owned(), json_value(outcome));
            }
            if let Some(decision) = effects.iter().find_map(Effect::decision) {
                let mut value = json_value(decision);
                if let Value::Object(fields) = &mut value {
                    fields.insert("path".to_owned(), Value::from(decision.path()));
                }
                answer.insert("decision".to_owned(), value);
            }
            let others: Vec<Value> = effects
                .iter()
                .filter(|effect| effect.evidence().is_none() && effect.decision().is_none())
                .map(json_value)
                .collect();
            answer.insert("effects".to_owned(), Value::Array(others));
            Value::Object(answer).to_string()
        } else {
            let mut parts: Vec<String> = effects.iter().map(describe).collect();
            if transcript_record {
                parts.push(format!("retractable now: {}", ids(recovery.retractable())));
            } else if restart && parts.is_empty() {
                parts.push(format!(
                    "route: nothing to re-arm (the route is {}; a `retrying` route is left for manual recovery)",
                    recovery
                        .route_state()
                        .and_then(|state| serde_json::to_value(state.status()).ok())
                        .and_then(|status| status.as_str().map(str::to_owned))
                        .unwrap_or_else(|| "not decided".to_owned())
                ));
            } else if parts.is_empty() {
                parts.push("no effect".to_owned());
            }
            format!(
                "{}:{} [{session_id}] {}",
                line.input,
                line.number,
                parts.join("; ")
            )
        })
    }

    fn error_line(
        &mut self,
        input: &str,
        number: usize,
        id: Option<&Value>,
        error: &LineError,
    ) -> String {
        // A line that never reached `answer` (not JSON, too long, a bad `id`) names no session
        // that can be trusted: every session is poisoned.
        let poisoned = match self.poisoned_by_line.take() {
            Some(poisoned) => poisoned,
            None => self.poison_all(),
        };
        let later = self.poison_every_session;
        if self.args.json {
            let mut object: Map<String, Value> =
                serde_json::from_str(&json_lines::error_object(input, number, id, error))
                    .unwrap_or_default();
            let mut detail = Map::new();
            detail.insert("sessions".to_owned(), Value::from(poisoned));
            detail.insert("later_sessions".to_owned(), Value::from(later));
            object.insert("poisoned".to_owned(), Value::Object(detail));
            Value::Object(object).to_string()
        } else {
            let field = error
                .field
                .as_ref()
                .map(|field| format!("field `{field}`: "))
                .unwrap_or_default();
            let names: Vec<String> = poisoned.iter().map(|name| format!("`{name}`")).collect();
            let sessions = match (names.is_empty(), later) {
                (true, _) => "every later session is".to_owned(),
                (false, true) => format!("{} and every later session are", names.join(", ")),
                (false, false) => format!("session {} is", names.join(", ")),
            };
            format!(
                "{input}:{number} error: {field}{}; the event is lost, so {sessions} poisoned: every later verdict is manual",
                error.message
            )
        }
    }
}

fn json_value(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
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
            poison_every_session: false,
            poisoned_by_line: None,
        },
    )
}
