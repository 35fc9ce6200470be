//! The HTTP API: the router, its layers (limits, timeouts, panics, metrics, tracing) and the
//! stateless handlers (classification, explanation, bundle, health, metrics, admin). The
//! session handlers are in [`crate::session_api`]. docs/openapi.json documents every route; a
//! test holds the two together.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use faultline_runtime::{Bundle, Classification, Evidence, HintOutcome, Step, TextViews};
use futures::StreamExt as _;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::Limits;
use crate::bundles::{ActiveBundle, Bundles, Reloaded};
use crate::lines::{self, LineError};
use crate::metrics::Metrics;
use crate::sessions::Sessions;

/// The header every answer carries: the content hash of the bundle it used.
pub(crate) const BUNDLE_HEADER: &str = "faultline-bundle";

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct App {
    pub(crate) bundles: Bundles,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) sessions: Arc<Sessions>,
    /// SHA-256 of the admin token; `None`: admin endpoints are off.
    pub(crate) admin_token: Option<[u8; 32]>,
    pub(crate) limits: Limits,
    pub(crate) ready: AtomicBool,
    pub(crate) panic_ids: AtomicU64,
}

impl App {
    pub(crate) fn hash_token(token: &str) -> [u8; 32] {
        Sha256::digest(token.as_bytes()).into()
    }
}

/// `{"error":{"field":…,"message":…}}` with `status`.
pub(crate) fn error_response(status: StatusCode, error: &LineError) -> Response {
    let body = json!({ "error": error.to_json() });
    (status, json_headers(), body.to_string()).into_response()
}

fn json_headers() -> [(header::HeaderName, HeaderValue); 1] {
    [(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    )]
}

/// A JSON answer that used `bundle`.
pub(crate) fn answer(status: StatusCode, body: String, bundle: &str) -> Response {
    let mut response = (status, json_headers(), body).into_response();
    if let Ok(value) = HeaderValue::from_str(bundle) {
        response.headers_mut().insert(BUNDLE_HEADER, value);
    }
    response
}

/// Reads a whole body; too large is 413, anything else that breaks the read is 400.
pub(crate) async fn read_body(body: Body) -> Result<Bytes, Response> {
    axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|error| {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
            while let Some(cause) = source {
                if cause.is::<http_body_util::LengthLimitError>() {
                    return error_response(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &LineError::line("the request body is larger than the server's limit"),
                    );
                }
                source = cause.source();
            }
            error_response(
                StatusCode::BAD_REQUEST,
                &LineError::line(format!("the request body could not be read: {error}")),
            )
        })
}

/// Whether the request is a batch of JSON lines.
fn is_ndjson(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(';').next().unwrap_or_default().trim())
        .is_some_and(|kind| {
            kind.eq_ignore_ascii_case("application/x-ndjson")
                || kind.eq_ignore_ascii_case("application/jsonl")
        })
}

/// One classification answer: the CLI's classification object with the caller's `id` first
/// and the bundle's hash last.
fn classification_json(
    classification: &Classification,
    id: Option<&Value>,
    bundle: &str,
) -> Result<String, LineError> {
    let mut object = match serde_json::to_value(classification) {
        Ok(Value::Object(object)) => object,
        _ => return Err(LineError::line("cannot write the classification")),
    };
    object.insert("bundle".to_owned(), Value::from(bundle));
    Ok(lines::with_id(Value::Object(object).to_string(), id))
}

/// Answers one line of evidence, as a JSON line (an error object for a bad line).
fn classify_line(bytes: &[u8], active: &ActiveBundle, metrics: &Metrics, number: usize) -> String {
    let (id, fields) = lines::parse_object(bytes);
    let result = fields
        .and_then(|fields| lines::evidence_of(fields, None))
        .and_then(|(evidence, now)| {
            let classification = active.bundle.classify_at(&evidence, now);
            metrics.classified(&classification.code, &classification.confidence.to_string());
            classification_json(&classification, id.as_ref(), &active.hash)
        });
    match result {
        Ok(answer) => lines::one_line(answer),
        Err(error) => {
            metrics.classification_error();
            tracing::debug!(line = number, error = %redacted(&error.describe()), "evidence line refused");
            let mut object = Map::new();
            object.insert("line".to_owned(), Value::from(number));
            if let Some(id) = id {
                object.insert("id".to_owned(), id);
            }
            object.insert("bundle".to_owned(), Value::from(active.hash.clone()));
            object.insert("error".to_owned(), error.to_json());
            lines::one_line(Value::Object(object).to_string())
        }
    }
}

/// Log text derived from input passes the diagnostic redaction tier (ids, paths, URLs,
/// secrets removed; bounded): logs never carry raw evidence.
pub(crate) fn redacted(text: &str) -> String {
    faultline_runtime::redact_diagnostic(text)
}

async fn classify(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let active = app.bundles.current();
    if is_ndjson(&headers) {
        return classify_stream(app, active, body);
    }
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let (id, fields) = lines::parse_object(&bytes);
    let result = fields
        .and_then(|fields| lines::evidence_of(fields, None))
        .map(|(evidence, now)| active.bundle.classify_at(&evidence, now));
    match result.and_then(|classification| {
        app.metrics
            .classified(&classification.code, &classification.confidence.to_string());
        classification_json(&classification, id.as_ref(), &active.hash)
    }) {
        Ok(body) => answer(StatusCode::OK, body, &active.hash),
        Err(error) => {
            app.metrics.classification_error();
            error_response(StatusCode::BAD_REQUEST, &error)
        }
    }
}

/// A batch: one answer line per input line, in order, each written as soon as its line has
/// arrived; the whole batch uses the bundle that served when it began. A line longer than the
/// body limit cannot arrive (the limit ends the body first); a body that breaks off or stalls
/// past the request timeout ends the answer with an error line.
fn classify_stream(app: Arc<App>, active: Arc<ActiveBundle>, body: Body) -> Response {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    let idle = app.limits.request_timeout;
    let hash = active.hash.clone();
    tokio::spawn(async move {
        let mut stream = body.into_data_stream();
        let mut pending: Vec<u8> = Vec::new();
        let mut number = 0usize;
        loop {
            let next = tokio::time::timeout(idle, stream.next()).await;
            let chunk = match next {
                Ok(Some(Ok(chunk))) => chunk,
                Ok(None) => break,
                Ok(Some(Err(error))) => {
                    let message = if format!("{error:?}").contains("LengthLimit") {
                        "the request body is larger than the server's limit: the batch ends here"
                            .to_owned()
                    } else {
                        format!("the request body broke off: {error}")
                    };
                    let _ = sender.send(Ok(end_line(&message))).await;
                    return;
                }
                Err(_) => {
                    let _ = sender
                        .send(Ok(end_line(
                            "no input arrived within the request timeout: the batch ends here",
                        )))
                        .await;
                    return;
                }
            };
            pending.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(offset) = pending
                .get(start..)
                .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
            {
                let end = start + offset;
                let mut line = pending.get(start..end).unwrap_or_default();
                if line.last() == Some(&b'\r') {
                    line = line.get(..line.len().saturating_sub(1)).unwrap_or_default();
                }
                number += 1;
                let mut text = classify_line(line, &active, &app.metrics, number);
                text.push('\n');
                if sender.send(Ok(Bytes::from(text))).await.is_err() {
                    return;
                }
                start = end + 1;
            }
            pending.drain(..start);
        }
        if !pending.is_empty() {
            number += 1;
            let mut text = classify_line(&pending, &active, &app.metrics, number);
            text.push('\n');
            let _ = sender.send(Ok(Bytes::from(text))).await;
        }
    });
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    if let Ok(value) = HeaderValue::from_str(&hash) {
        response.headers_mut().insert(BUNDLE_HEADER, value);
    }
    response
}

fn end_line(message: &str) -> Bytes {
    let mut text = json!({ "error": LineError::line(message).to_json() }).to_string();
    text.push('\n');
    Bytes::from(text)
}

#[derive(Debug, serde::Deserialize)]
struct ExplainQuery {
    /// Also list the rules that did not apply.
    #[serde(default)]
    all: bool,
}

fn step_json(step: Step) -> Value {
    let (kind, detail) = match step {
        Step::Fired => ("fired", Value::Null),
        Step::Vetoed(index) => ("vetoed", Value::from(index.saturating_add(1))),
        Step::NoCapture => ("no_capture", Value::Null),
        Step::Guard(field) => ("guard", Value::from(field.to_string())),
        Step::Prefiltered => ("prefiltered", Value::Null),
        Step::NoMatch(index) => ("no_match", Value::from(index.saturating_add(1))),
        _ => ("other", Value::Null),
    };
    json!({ "step": kind, "detail": detail, "says": step.to_string() })
}

/// What `POST /v1/explain` answers: the text rules read (sanitized), every rule that fired or
/// was vetoed (every rule with `?all=true`), the winner and the timing stage.
fn explain_json(bundle: &Bundle, evidence: &Evidence, now: SystemTime, all: bool) -> Value {
    let (classification, trace) = bundle.classify_traced(evidence, now);
    // The steps are of an unwrapped reading when the text as given fell to a low-confidence
    // rule and the reading did not.
    let reading = trace
        .unwrapped()
        .and_then(|unwrapping| evidence.unwrapped(unwrapping));
    let views = TextViews::new(reading.as_ref().unwrap_or(evidence));
    let winner = trace.winner();
    let rules: Vec<Value> = trace
        .steps()
        .filter(|(_, step)| all || matches!(step, Step::Fired | Step::Vetoed(_) | Step::NoCapture))
        .filter_map(|(position, step)| {
            let rule = bundle.rule(position)?;
            let mut object = json!({
                "position": position.as_usize().saturating_add(1),
                "rule": rule.id(),
                "tier": rule.tier(),
                "winner": Some(position) == winner,
            });
            if let (Value::Object(object), Value::Object(step)) = (&mut object, step_json(step)) {
                object.extend(step);
            }
            Some(object)
        })
        .collect();
    let timing: Vec<Value> = trace
        .timing()
        .iter()
        .map(|step| {
            let (outcome, at, reason) = match &step.outcome {
                HintOutcome::Absent => ("absent", None, None),
                HintOutcome::Unreadable(reason) => ("unreadable", None, Some(reason.clone())),
                HintOutcome::Rejected { at, reason } => {
                    ("rejected", Some(at.clone()), Some(reason.clone()))
                }
                HintOutcome::Accepted { at } => ("accepted", Some(at.clone()), None),
            };
            json!({ "source": step.source.to_string(), "outcome": outcome, "at": at, "reason": reason })
        })
        .collect();
    json!({
        "classification": classification,
        "text": {
            "sanitized": views.sanitized(),
            "raw_bytes": views.text_len(),
            "unwrapped": trace.unwrapped().map(|unwrapping| unwrapping.to_string()),
        },
        "rules": rules,
        "timing": timing,
        "clock": faultline_runtime::format_instant(now),
    })
}

async fn explain(
    State(app): State<Arc<App>>,
    Query(query): Query<ExplainQuery>,
    body: Body,
) -> Response {
    let active = app.bundles.current();
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(response) => return response,
    };
    let (id, fields) = lines::parse_object(&bytes);
    match fields.and_then(|fields| lines::evidence_of(fields, None)) {
        Ok((evidence, now)) => {
            let mut body = explain_json(&active.bundle, &evidence, now, query.all);
            if let Value::Object(object) = &mut body {
                object.insert("bundle".to_owned(), Value::from(active.hash.clone()));
            }
            answer(
                StatusCode::OK,
                lines::with_id(body.to_string(), id.as_ref()),
                &active.hash,
            )
        }
        Err(error) => error_response(StatusCode::BAD_REQUEST, &error),
    }
}

/// What `GET /v1/bundle` and a reload answer about a bundle.
fn bundle_json(active: &ActiveBundle, source: &str) -> Value {
    let header = active.bundle.header();
    json!({
        "hash": active.hash,
        "manifest_hash": header.manifest_hash_hex(),
        "catalogue": header.catalogue_name(),
        "catalogue_version": header.catalogue_version(),
        "format_version": header.format_version(),
        "compiler_version": header.compiler_version(),
        "redaction_version": header.redaction_version(),
        "rules": active.bundle.rules().len(),
        "codes": active.bundle.code_count(),
        "bytes": active.bytes.len(),
        "loaded_at": faultline_runtime::format_instant(active.loaded_at),
        "source": source,
    })
}

async fn bundle(State(app): State<Arc<App>>) -> Response {
    let active = app.bundles.current();
    let body = bundle_json(&active, &app.bundles.source().describe());
    answer(StatusCode::OK, body.to_string(), &active.hash)
}

async fn healthz() -> Response {
    (
        StatusCode::OK,
        json_headers(),
        json!({"status": "ok"}).to_string(),
    )
        .into_response()
}

async fn readyz(State(app): State<Arc<App>>) -> Response {
    if app.ready.load(Ordering::Acquire) {
        let active = app.bundles.current();
        answer(
            StatusCode::OK,
            json!({"status": "ready", "bundle": active.hash}).to_string(),
            &active.hash,
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            json_headers(),
            json!({"status": "starting"}).to_string(),
        )
            .into_response()
    }
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    // The wait gauges are counted at scrape time.
    let _counted = app.sessions.waits().await;
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )],
        app.metrics.encode(),
    )
        .into_response()
}

async fn openapi() -> Response {
    (
        StatusCode::OK,
        json_headers(),
        include_str!("../../docs/openapi.json"),
    )
        .into_response()
}

/// The refusal of a request without the admin token (`Authorization: Bearer …`), compared in
/// constant time (of the token's hash, so not even its length leaks).
fn refuse_unauthorized(app: &App, headers: &HeaderMap) -> Option<Response> {
    let Some(expected) = app.admin_token else {
        return Some(error_response(
            StatusCode::FORBIDDEN,
            &LineError::line(
                "admin endpoints are off: start the server with --admin-token-file FILE",
            ),
        ));
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(App::hash_token);
    match given {
        Some(given) if bool::from(given.ct_eq(&expected)) => None,
        _ => Some(error_response(
            StatusCode::UNAUTHORIZED,
            &LineError::field(
                "authorization",
                "missing or wrong admin token: send `Authorization: Bearer <token>`",
            ),
        )),
    }
}

async fn admin_reload(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(response) = refuse_unauthorized(&app, &headers) {
        return response;
    }
    match app.bundles.reload("admin", &app.metrics).await {
        Ok(reloaded) => {
            let active = app.bundles.current();
            let (outcome, previous) = match reloaded {
                Reloaded::Swapped { from, .. } => ("swapped", Some(from)),
                Reloaded::Unchanged { .. } => ("unchanged", None),
            };
            let body = json!({
                "outcome": outcome,
                "previous": previous,
                "bundle": bundle_json(&active, &app.bundles.source().describe()),
            });
            answer(StatusCode::OK, body.to_string(), &active.hash)
        }
        Err(error) => {
            let active = app.bundles.current();
            let body = json!({
                "error": LineError::line(format!("reload refused, the last good bundle keeps serving: {error}")).to_json(),
                "serving": active.hash,
            });
            answer(
                StatusCode::UNPROCESSABLE_ENTITY,
                body.to_string(),
                &active.hash,
            )
        }
    }
}

async fn not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        &LineError::line("no such route: GET /v1/openapi.json lists them"),
    )
}

/// Records every request's route template, status and latency.
async fn record(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let method = request.method().as_str().to_owned();
    let response = next.run(request).await;
    app.metrics.request(
        &route,
        &method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// A panic in a handler: a 500 naming an id that the log line carries too; the process and
/// every other request go on.
fn panic_response(app: &App, panic: &(dyn std::any::Any + Send)) -> Response {
    let id = format!(
        "panic-{:x}-{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs(),
        app.panic_ids.fetch_add(1, Ordering::Relaxed)
    );
    let message = panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    app.metrics.panicked();
    tracing::error!(panic_id = %id, message = %redacted(&message), "a request handler panicked");
    let body = json!({
        "error": { "field": null, "message": "internal error: the request failed and was logged; the server goes on", "id": id },
    });
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        json_headers(),
        body.to_string(),
    )
        .into_response()
}

/// The router with every route and layer.
pub(crate) fn router(app: Arc<App>) -> Router {
    let limits = app.limits.clone();
    let routes = Router::new()
        .route("/v1/classify", post(classify))
        .route("/v1/explain", post(explain))
        .route("/v1/bundle", get(bundle))
        .route("/v1/admin/reload", post(admin_reload))
        .route("/v1/openapi.json", get(openapi))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .merge(crate::session_api::routes());
    #[cfg(test)]
    let routes = routes.route(
        "/v1/test/panic",
        get(|| async {
            let empty: Vec<u8> = Vec::new();
            let byte = empty[1];
            byte.to_string()
        }),
    );
    let panic_app = app.clone();
    routes
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(app.clone(), record))
        .layer(
            tower::ServiceBuilder::new()
                .layer(tower_http::trace::TraceLayer::new_for_http())
                .layer(tower_http::catch_panic::CatchPanicLayer::custom(
                    move |panic: Box<dyn std::any::Any + Send>| {
                        panic_response(&panic_app, panic.as_ref())
                    },
                ))
                .layer(tower_http::limit::RequestBodyLimitLayer::new(
                    limits.max_body_bytes,
                ))
                .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    limits.request_timeout,
                )),
        )
        .with_state(app)
}

/// The default per-request timeout.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
