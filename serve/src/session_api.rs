//! The session routes: `POST /v1/sessions/{id}/events` (events in; effects out, each event
//! acknowledged only once durable), `GET` and `DELETE /v1/sessions/{id}`, `GET /v1/waits`.
//!
//! An event is the log line of docs/recovery.md (`{"event":"prompt_began",…}`) without its
//! `session` (the path names it), with an optional `provider_id` (the session's agent; read on
//! the session's first event), an optional `context` (`kanban` or `office`: on the session's
//! first event it makes the session decide with the bundle's recovery policy, docs/policy.md, so
//! every terminal failure's answer also carries the decision and the route effects) and an
//! optional `id` (echoed). A body of JSON lines
//! (`Content-Type: application/x-ndjson`) is a batch: one answer line per input line, in order,
//! and the batch stops at the first line that is not acknowledged (every later line is answered
//! "not applied"), because applying later events over a gap would decide on a stream the
//! engine never saw.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use axum::routing::{get, post};
use faultline_recovery::RecoveryEvent;
use faultline_runtime::DecisionContext;
use serde_json::{Map, Value, json};

use crate::api::{App, answer, error_response, read_body};
use crate::lines::{self, LineError};
use crate::sessions::{Applied, Refusal};

/// The longest session id; ids are `[A-Za-z0-9._:-]`, so they are safe in logs and paths.
const MAX_SESSION_ID: usize = 128;

pub(crate) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/v1/sessions/{id}/events", post(events))
        .route("/v1/sessions/{id}", get(session).delete(delete))
        .route("/v1/waits", get(waits))
}

/// The refusal of a malformed session id, if it is one.
fn refuse_id(id: &str) -> Option<Response> {
    let well_formed = !id.is_empty()
        && id.len() <= MAX_SESSION_ID
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"._:-".contains(&byte));
    if well_formed {
        None
    } else {
        Some(error_response(
            StatusCode::BAD_REQUEST,
            &LineError::field(
                "session",
                format!(
                    "a session id is 1 to {MAX_SESSION_ID} characters of A-Z, a-z, 0-9, `.`, `_`, `:`, `-`"
                ),
            ),
        ))
    }
}

/// An event and the session settings it came with.
pub(crate) struct Provided {
    pub(crate) provider: Option<String>,
    pub(crate) context: Option<DecisionContext>,
    pub(crate) event: RecoveryEvent,
}

/// One line: its `id`, `provider_id`, `context` and typed event.
fn read_event(bytes: &[u8]) -> (Option<Value>, Result<Provided, LineError>) {
    let (id, fields) = lines::parse_object(bytes);
    let parsed = fields.and_then(|mut fields| {
        let provider = lines::string_field(&mut fields, "provider_id")?;
        let context = lines::context_field(&mut fields)?;
        if fields.contains_key("session") {
            return Err(LineError::field(
                "session",
                "the path names the session: leave `session` out of the event",
            ));
        }
        lines::typed::<RecoveryEvent>(fields).map(|event| Provided {
            provider,
            context,
            event,
        })
    });
    (id, parsed)
}

/// The answer object of an acknowledged event.
fn applied_json(session: &str, id: Option<&Value>, applied: &Applied) -> String {
    let body = json!({
        "session": session,
        "sequence": applied.sequence,
        "bundle": applied.bundle,
        "effects": applied.effects,
        "wait": applied.wait,
        "route_write": applied.route_write,
    });
    lines::one_line(lines::with_id(body.to_string(), id))
}

/// How a refusal answers: its status and error.
fn refusal(refused: &Refusal) -> (StatusCode, LineError) {
    match refused {
        Refusal::TooManySessions(max) => (
            StatusCode::TOO_MANY_REQUESTS,
            LineError::line(format!(
                "the server holds its maximum of {max} sessions: delete finished ones (DELETE /v1/sessions/{{id}}) or raise --max-sessions"
            )),
        ),
        Refusal::ProviderMismatch { session, given } => (
            StatusCode::CONFLICT,
            LineError::field(
                "provider_id",
                format!("the session's provider is `{session}`, not `{given}`"),
            ),
        ),
        Refusal::ContextMismatch { session, given } => (
            StatusCode::CONFLICT,
            LineError::field(
                "context",
                format!(
                    "the session's decision context is {}, not `{given}`: it is set by the session's first event",
                    session.map_or_else(|| "unset".to_owned(), |name| format!("`{name}`"))
                ),
            ),
        ),
        Refusal::Store(error) => (
            StatusCode::SERVICE_UNAVAILABLE,
            LineError::line(format!(
                "the event was not stored ({error}): nothing was applied or scheduled; send it again"
            )),
        ),
        Refusal::Deleted => (
            StatusCode::CONFLICT,
            LineError::line("the session was deleted while this event waited: nothing was applied"),
        ),
    }
}

fn error_line(number: usize, id: Option<Value>, error: &LineError, status: StatusCode) -> String {
    let mut object = Map::new();
    object.insert("line".to_owned(), Value::from(number));
    if let Some(id) = id {
        object.insert("id".to_owned(), id);
    }
    object.insert("status".to_owned(), Value::from(status.as_u16()));
    object.insert("error".to_owned(), error.to_json());
    lines::one_line(Value::Object(object).to_string())
}

async fn events(
    State(app): State<Arc<App>>,
    Path(session): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Some(response) = refuse_id(&session) {
        return response;
    }
    let batch = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            let kind = value.split(';').next().unwrap_or_default().trim();
            kind.eq_ignore_ascii_case("application/x-ndjson")
                || kind.eq_ignore_ascii_case("application/jsonl")
        });
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let active = app.bundles.current();
    if !batch {
        let (id, parsed) = read_event(&bytes);
        let provided = match parsed {
            Ok(parsed) => parsed,
            Err(error) => return error_response(StatusCode::BAD_REQUEST, &error),
        };
        return match app.sessions.append(&session, provided, &active).await {
            Ok(applied) => answer(
                StatusCode::OK,
                applied_json(&session, id.as_ref(), &applied),
                &applied.bundle,
            ),
            Err(refused) => {
                let (status, error) = refusal(&refused);
                error_response(status, &error)
            }
        };
    }
    let mut out = String::new();
    let mut stopped: Option<usize> = None;
    let mut input: Vec<&[u8]> = bytes.split(|&byte| byte == b'\n').collect();
    if input.last().is_some_and(|line| line.is_empty()) {
        input.pop();
    }
    for (index, line) in input.into_iter().enumerate() {
        let number = index.saturating_add(1);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let (id, parsed) = read_event(line);
        if let Some(first) = stopped {
            let error = LineError::line(format!(
                "not applied: line {first} of this batch was not acknowledged, and events apply in order"
            ));
            out.push_str(&error_line(number, id, &error, StatusCode::CONFLICT));
            out.push('\n');
            continue;
        }
        let result = match parsed {
            Ok(provided) => app
                .sessions
                .append(&session, provided, &active)
                .await
                .map_err(|refused| refusal(&refused)),
            Err(error) => Err((StatusCode::BAD_REQUEST, error)),
        };
        match result {
            Ok(applied) => out.push_str(&applied_json(&session, id.as_ref(), &applied)),
            Err((status, error)) => {
                stopped = Some(number);
                out.push_str(&error_line(number, id, &error, status));
            }
        }
        out.push('\n');
    }
    let mut response = answer(StatusCode::OK, out, &active.hash);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/x-ndjson"),
    );
    response
}

async fn session(State(app): State<Arc<App>>, Path(session): Path<String>) -> Response {
    if let Some(response) = refuse_id(&session) {
        return response;
    }
    match app.sessions.get(&session) {
        Some(shared) => {
            let view = shared.lock().await.view(&session);
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                view.to_string(),
            )
                .into_response()
        }
        None => error_response(
            StatusCode::NOT_FOUND,
            &LineError::field("session", format!("no session `{session}`")),
        ),
    }
}

async fn delete(State(app): State<Arc<App>>, Path(session): Path<String>) -> Response {
    if let Some(response) = refuse_id(&session) {
        return response;
    }
    match app.sessions.delete(&session).await {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => error_response(
            StatusCode::NOT_FOUND,
            &LineError::field("session", format!("no session `{session}`")),
        ),
        Err(error) => error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            &LineError::line(format!("the session was not deleted: {error}")),
        ),
    }
}

async fn waits(State(app): State<Arc<App>>) -> Response {
    let waits: Vec<Value> = app
        .sessions
        .waits()
        .await
        .into_iter()
        .map(|(session, wait)| {
            let mut value = serde_json::to_value(&wait).unwrap_or(Value::Null);
            if let Value::Object(object) = &mut value {
                object.insert("session".to_owned(), Value::from(session));
            }
            value
        })
        .collect();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        json!({ "waits": waits }).to_string(),
    )
        .into_response()
}
