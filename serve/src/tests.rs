//! The API through its router (no socket): answers, errors, limits, reload, durable sessions
//! with a failing store, replay after a restart, and the OpenAPI document against the server.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

use crate::api::App;
use crate::store::{FailingStore, RedbStore, Store};
use crate::{BundleFile, Limits, assemble};

const TOKEN: &str = "test-admin-token-0123456789";

fn golden() -> Vec<u8> {
    std::fs::read(faultline_testkit::path(
        "fixtures/bundles/format-4-redaction-markers.flb",
    ))
    .unwrap()
}

fn other() -> Vec<u8> {
    faultline_testkit::compile("fixtures/valid/all-constructs.rules")
        .bundle
        .unwrap()
}

struct Harness {
    app: Arc<App>,
    router: axum::Router,
    bundle_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn harness_with(store: Arc<dyn Store>, limits: Limits) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let bundle_path = dir.path().join("bundle.flb");
    std::fs::write(&bundle_path, golden()).unwrap();
    let (app, _) = assemble(
        Box::new(BundleFile::new(&bundle_path)),
        store,
        limits,
        Some(TOKEN),
    )
    .unwrap();
    app.ready.store(true, Ordering::Release);
    Harness {
        router: crate::api::router(app.clone()),
        app,
        bundle_path,
        _dir: dir,
    }
}

fn harness() -> Harness {
    harness_limited(Limits::default())
}

/// A harness on an in-memory store, under `limits`.
fn harness_limited(limits: Limits) -> Harness {
    harness_with(Arc::new(RedbStore::in_memory().unwrap()), limits)
}

/// A harness on the durable store in `dir`, which outlives it (a restart opens it again).
fn harness_durable(dir: &tempfile::TempDir) -> Harness {
    harness_with(
        Arc::new(RedbStore::open(dir.path()).unwrap()),
        Limits::default(),
    )
}

/// An in-memory store whose `fail_at`-th append (from 1) fails.
fn failing_store(fail_at: u64) -> Arc<FailingStore> {
    Arc::new(FailingStore {
        inner: RedbStore::in_memory().unwrap(),
        fail_at,
        appends: AtomicU64::new(0),
    })
}

impl Harness {
    /// Replaces the bundle file with `bytes` and reloads it with the admin token; it must swap.
    async fn swap_in(&self, bytes: Vec<u8>) {
        std::fs::write(&self.bundle_path, bytes).unwrap();
        let reloaded = reload(&self.router, Some(TOKEN)).await;
        assert_eq!(reloaded.json()["outcome"], "swapped");
    }
}

struct Answer {
    status: StatusCode,
    bundle: Option<String>,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&self.body)))
    }

    fn lines(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.body)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

async fn call(
    router: &axum::Router,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: impl Into<Body>,
    token: Option<&str>,
) -> Answer {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(kind) = content_type {
        request = request.header("content-type", kind);
    }
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = router
        .clone()
        .oneshot(request.body(body.into()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bundle = response
        .headers()
        .get(crate::api::BUNDLE_HEADER)
        .map(|value| value.to_str().unwrap().to_owned());
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Answer {
        status,
        bundle,
        body,
    }
}

/// Asks for a reload, with `token` as the admin token.
async fn reload(router: &axum::Router, token: Option<&str>) -> Answer {
    call(
        router,
        "POST",
        "/v1/admin/reload",
        None,
        Body::empty(),
        token,
    )
    .await
}

async fn get(router: &axum::Router, path: &str) -> Answer {
    call(router, "GET", path, None, Body::empty(), None).await
}

/// Posts a batch: one JSON object a line.
async fn post_lines(router: &axum::Router, path: &str, body: String) -> Answer {
    call(
        router,
        "POST",
        path,
        Some("application/x-ndjson"),
        body,
        None,
    )
    .await
}

async fn post(router: &axum::Router, path: &str, body: &str) -> Answer {
    call(
        router,
        "POST",
        path,
        Some("application/json"),
        body.to_owned(),
        None,
    )
    .await
}

#[tokio::test]
async fn classify_answers_one_object_and_names_the_bundle() {
    let h = harness();
    let hash = h.app.bundles.current().hash.clone();
    let answer = post(
        &h.router,
        "/v1/classify",
        r#"{"id":"r1","http_status":529}"#,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    let body = answer.json();
    assert_eq!(body["id"], "r1");
    assert_eq!(body["bundle"], hash.as_str());
    assert_eq!(answer.bundle.as_deref(), Some(hash.as_str()));
    assert!(body["code"].is_string());
}

#[tokio::test]
async fn a_batch_answers_every_line_in_order_with_errors_per_line() {
    let h = harness();
    let input = "{\"id\":1,\"http_status\":529}\n{\"phase\":\"bogus\"}\nnot json\n\n{\"id\":5,\"stderr\":\"x\"}";
    let answer = post_lines(&h.router, "/v1/classify", input.to_owned()).await;
    assert_eq!(answer.status, StatusCode::OK);
    let lines = answer.lines();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[1]["line"], 2);
    assert_eq!(lines[1]["error"]["field"], "phase");
    assert_eq!(lines[2]["error"]["field"], Value::Null);
    assert!(
        lines[3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("blank")
    );
    assert_eq!(lines[4]["id"], 5);
    assert!(lines[4]["code"].is_string());
}

#[tokio::test]
async fn malformed_json_is_a_400_naming_the_field() {
    let h = harness();
    for (body, field) in [
        (r#"{"http_status":"x"}"#, json!("http_status")),
        (r#"{"now":"yesterday"}"#, json!("now")),
        (r#"{"unknown_field":1}"#, json!("unknown_field")),
        (r#"{"id":[1]}"#, json!("id")),
        (r#"{"stderr": "trunc"#, Value::Null),
    ] {
        let answer = post(&h.router, "/v1/classify", body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(answer.json()["error"]["field"], field, "{body}");
        let answer = post(&h.router, "/v1/explain", body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
    }
}

#[tokio::test]
async fn explain_lists_the_winner_and_the_timing_stage() {
    let h = harness();
    let answer = post(
        &h.router,
        "/v1/explain?all=true",
        r#"{"id":"e","stderr":"hello"}"#,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    let body = answer.json();
    assert_eq!(body["id"], "e");
    let rules = body["rules"].as_array().unwrap();
    assert_eq!(rules.len(), h.app.bundles.current().bundle.rules().len());
    let winners: Vec<_> = rules.iter().filter(|rule| rule["winner"] == true).collect();
    assert_eq!(winners.len(), 1);
    assert_eq!(winners[0]["rule"], body["classification"]["rule"]);
}

#[tokio::test]
async fn bodies_over_the_limit_are_413_and_the_server_goes_on() {
    let h = harness_limited(Limits {
        max_body_bytes: 1024,
        ..Limits::default()
    });
    let big = format!("{{\"stderr\":\"{}\"}}", "x".repeat(4096));
    let answer = post(&h.router, "/v1/classify", &big).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    // A chunked body without a length is cut off as it streams.
    let chunks = futures::stream::iter(
        (0..8).map(|_| Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b' '; 512]))),
    );
    let answer = call(
        &h.router,
        "POST",
        "/v1/classify",
        Some("application/json"),
        Body::from_stream(chunks),
        None,
    )
    .await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        post(&h.router, "/v1/classify", "{}").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_panicking_handler_is_a_500_with_an_id_and_the_server_goes_on() {
    let h = harness();
    let answer = get(&h.router, "/v1/test/panic").await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        answer.json()["error"]["id"]
            .as_str()
            .unwrap()
            .starts_with("panic-")
    );
    assert_eq!(
        post(&h.router, "/v1/classify", "{}").await.status,
        StatusCode::OK
    );
    assert!(
        h.app
            .metrics
            .encode()
            .contains("faultline_handler_panics_total 1")
    );
}

#[tokio::test]
async fn reload_needs_the_token_refuses_damage_and_swaps_a_good_bundle() {
    let h = harness();
    let first = h.app.bundles.current().hash.clone();
    assert_eq!(
        reload(&h.router, None).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        reload(&h.router, Some("wrong-token-wrong-token"))
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    let unchanged = reload(&h.router, Some(TOKEN)).await;
    assert_eq!(unchanged.status, StatusCode::OK);
    assert_eq!(unchanged.json()["outcome"], "unchanged");

    // Damaged (one byte flipped), too old, truncated, empty: each refused, the first serves on.
    let mut damaged = golden();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x40;
    let old = std::fs::read(faultline_testkit::path(
        "fixtures/bundles/format-2-redaction-markers.flb",
    ))
    .unwrap();
    let truncated = golden()[..100].to_vec();
    for bad in [damaged, old, truncated, Vec::new()] {
        std::fs::write(&h.bundle_path, bad).unwrap();
        let refused = reload(&h.router, Some(TOKEN)).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(refused.json()["serving"], first.as_str());
        assert_eq!(
            post(&h.router, "/v1/classify", "{}").await.json()["bundle"],
            first.as_str()
        );
    }
    std::fs::write(&h.bundle_path, other()).unwrap();
    let swapped = reload(&h.router, Some(TOKEN)).await;
    assert_eq!(swapped.status, StatusCode::OK);
    let body = swapped.json();
    assert_eq!(body["outcome"], "swapped");
    assert_eq!(body["previous"], first.as_str());
    let second = body["bundle"]["hash"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    assert_eq!(
        post(&h.router, "/v1/classify", "{}").await.json()["bundle"],
        second.as_str()
    );
    let metrics = h.app.metrics.encode();
    assert!(
        metrics.contains(r#"faultline_bundle_reloads_total{trigger="admin",outcome="refused"} 4"#),
        "{metrics}"
    );
    assert!(metrics.contains(&format!("hash=\"{second}\"")));
}

#[tokio::test]
async fn admin_endpoints_are_off_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.flb");
    std::fs::write(&path, golden()).unwrap();
    let (app, _) = assemble(
        Box::new(BundleFile::new(&path)),
        Arc::new(RedbStore::in_memory().unwrap()),
        Limits::default(),
        None,
    )
    .unwrap();
    let router = crate::api::router(app);
    let answer = reload(&router, Some(TOKEN)).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
}

const BEGAN: &str =
    r#"{"provider_id":"claude-acp","event":"prompt_began","execution_id":"exec-1","generation":7}"#;
const FAILED: &str = r#"{"event":"prompt_failed","execution_id":"exec-1","generation":7,"error":{"code":-32603,"message":"Internal error: API Error: 529 Overloaded"},"occurred_at":"2026-10-01T08:00:00Z"}"#;

fn scheduled(deadline: &str) -> String {
    format!(
        r#"{{"event":"retry_scheduled","reason":"Provider overloaded","provider":"anthropic","attempt":1,"max_attempts":5,"deadline":"{deadline}"}}"#
    )
}

#[tokio::test]
async fn a_failed_store_write_is_a_503_and_nothing_is_applied_or_scheduled() {
    let store = failing_store(2);
    let h = harness_with(store, Limits::default());
    let path = "/v1/sessions/s1/events";
    assert_eq!(post(&h.router, path, BEGAN).await.status, StatusCode::OK);
    let refused = post(&h.router, path, &scheduled("2099-01-01T00:00:00Z")).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nothing was applied or scheduled")
    );
    let session = get(&h.router, "/v1/sessions/s1").await.json();
    assert_eq!(session["events"], 1);
    assert_eq!(session["wait"], Value::Null);
    let waits = get(&h.router, "/v1/waits").await.json();
    assert_eq!(waits["waits"], json!([]));
    // The next event takes the sequence number the failed one did not use.
    let next = post(&h.router, path, FAILED).await;
    assert_eq!(next.status, StatusCode::OK);
    assert_eq!(next.json()["sequence"], 1);
    assert!(
        h.app
            .metrics
            .encode()
            .contains(r#"faultline_store_errors_total{operation="append"} 1"#)
    );
}

#[tokio::test]
async fn a_failed_first_write_creates_no_session() {
    let store = failing_store(1);
    let h = harness_with(store, Limits::default());
    assert_eq!(
        post(&h.router, "/v1/sessions/s1/events", BEGAN)
            .await
            .status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let missing = get(&h.router, "/v1/sessions/s1").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_batch_of_events_stops_at_the_first_line_not_acknowledged() {
    let h = harness();
    let input = format!("{BEGAN}\n{{\"event\":\"nope\"}}\n{FAILED}\n");
    let answer = post_lines(&h.router, "/v1/sessions/b/events", input).await;
    let lines = answer.lines();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["sequence"], 0);
    assert_eq!(lines[1]["error"]["field"], "event");
    assert_eq!(lines[2]["status"], 409);
    let session = get(&h.router, "/v1/sessions/b").await.json();
    assert_eq!(session["events"], 1);
}

#[tokio::test]
async fn sessions_are_bounded_and_ids_checked() {
    let h = harness_limited(Limits {
        max_sessions: 2,
        ..Limits::default()
    });
    for id in ["a", "b"] {
        assert_eq!(
            post(&h.router, &format!("/v1/sessions/{id}/events"), BEGAN)
                .await
                .status,
            StatusCode::OK
        );
    }
    assert_eq!(
        post(&h.router, "/v1/sessions/c/events", BEGAN).await.status,
        StatusCode::TOO_MANY_REQUESTS
    );
    // An existing session still takes events.
    assert_eq!(
        post(&h.router, "/v1/sessions/a/events", FAILED)
            .await
            .status,
        StatusCode::OK
    );
    let deleted = call(
        &h.router,
        "DELETE",
        "/v1/sessions/a",
        None,
        Body::empty(),
        None,
    )
    .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(
        post(&h.router, "/v1/sessions/c/events", BEGAN).await.status,
        StatusCode::OK
    );
    let bad = post(&h.router, "/v1/sessions/a%20b/events", BEGAN).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.json()["error"]["field"], "session");
    let other = post(
        &h.router,
        "/v1/sessions/b/events",
        r#"{"provider_id":"codex-acp","event":"lifecycle_retired"}"#,
    )
    .await;
    assert_eq!(other.status, StatusCode::CONFLICT);
    assert_eq!(other.json()["error"]["field"], "provider_id");
}

#[tokio::test]
async fn a_restart_replays_every_session_and_re_arms_its_wait() {
    let dir = tempfile::tempdir().unwrap();
    let before;
    {
        let h = harness_durable(&dir);
        for line in [
            BEGAN.to_owned(),
            FAILED.to_owned(),
            scheduled("2099-01-01T00:00:00Z"),
        ] {
            assert_eq!(
                post(&h.router, "/v1/sessions/later/events", &line)
                    .await
                    .status,
                StatusCode::OK
            );
        }
        for line in [BEGAN.to_owned(), scheduled("2001-01-01T00:00:00Z")] {
            assert_eq!(
                post(&h.router, "/v1/sessions/past/events", &line)
                    .await
                    .status,
                StatusCode::OK
            );
        }
        // A reload between events: the replay must use the bundle each event was applied with.
        h.swap_in(other()).await;
        assert_eq!(
            post(
                &h.router,
                "/v1/sessions/later/events",
                r#"{"event":"model_settled","model_id":"m"}"#
            )
            .await
            .status,
            StatusCode::OK
        );
        before = get(&h.router, "/v1/sessions/later").await.json();
    }
    let h = harness_durable(&dir);
    let after = get(&h.router, "/v1/sessions/later").await.json();
    assert_eq!(after, before);
    assert_eq!(after["events"], 4);
    assert_eq!(
        after["last_verdict"]["classification"]["code"],
        before["last_verdict"]["classification"]["code"]
    );
    // The past deadline fires at once; the future one stays armed.
    let mut waits = Value::Null;
    for _ in 0..200 {
        waits = get(&h.router, "/v1/waits").await.json();
        if waits["waits"][0]["due"] == true {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(waits["waits"][0]["session"], "past");
    assert_eq!(waits["waits"][0]["due"], true);
    assert_eq!(waits["waits"][1]["session"], "later");
    assert_eq!(waits["waits"][1]["due"], false);
    assert_eq!(waits["waits"][1]["deadline"], "2099-01-01T00:00:00Z");
    // A retry_ended ends the wait.
    post(
        &h.router,
        "/v1/sessions/later/events",
        r#"{"event":"retry_ended","ending":"exhausted"}"#,
    )
    .await;
    let waits = get(&h.router, "/v1/waits").await.json();
    assert_eq!(waits["waits"].as_array().unwrap().len(), 1);
}

/// A request of the document test: method, path, content type, body, admin token.
type Probe = (
    &'static str,
    &'static str,
    Option<&'static str>,
    String,
    Option<&'static str>,
);

/// A subset of JSON Schema, enough for the document's schemas: `$ref`, `type` (one or a
/// list), `required`, `properties`, `items`, `enum`, `oneOf` (as any-of).
fn check(schema: &Value, value: &Value, document: &Value, at: &str) -> Result<(), String> {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        return check(
            &document["components"]["schemas"][name],
            value,
            document,
            at,
        );
    }
    if let Some(options) = schema["oneOf"].as_array() {
        return if options
            .iter()
            .any(|option| check(option, value, document, at).is_ok())
        {
            Ok(())
        } else {
            Err(format!("{at}: matches no schema of oneOf: {value}"))
        };
    }
    let type_of = |value: &Value| match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let allowed: Vec<&str> = match &schema["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let actual = type_of(value);
    if !allowed.is_empty()
        && !allowed
            .iter()
            .any(|t| *t == actual || (*t == "number" && actual == "integer"))
    {
        return Err(format!("{at}: {actual}, expected {allowed:?}"));
    }
    if let Some(values) = schema["enum"].as_array()
        && !values.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {values:?}"));
    }
    if let Value::Object(object) = value {
        for name in schema["required"].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap();
            if !object.contains_key(name) {
                return Err(format!("{at}: `{name}` is missing"));
            }
        }
        if let Some(properties) = schema["properties"].as_object() {
            for (name, property) in properties {
                if let Some(member) = object.get(name) {
                    check(property, member, document, &format!("{at}.{name}"))?;
                }
            }
        }
    }
    if let (Value::Array(items), Some(schema)) = (value, schema.get("items")) {
        for (index, item) in items.iter().enumerate() {
            check(schema, item, document, &format!("{at}[{index}]"))?;
        }
    }
    Ok(())
}

#[tokio::test]
async fn every_route_is_documented_and_every_answer_matches_the_openapi_document() {
    let document: Value = serde_json::from_str(include_str!("../../docs/openapi.json")).unwrap();
    let paths = document["paths"].as_object().unwrap();
    // Every route the router declares is documented, with its methods (and no other).
    let sources = [include_str!("api.rs"), include_str!("session_api.rs")];
    let mut served = Vec::new();
    for source in sources {
        for piece in source.split(".route(\"").skip(1) {
            let path = piece.split('"').next().unwrap();
            if path.starts_with("/v1/test/") {
                continue;
            }
            let rest = &piece[path.len()..piece.find('\n').unwrap_or(piece.len())];
            for method in ["get", "post", "delete", "put", "patch"] {
                if rest.contains(&format!("{method}(")) || rest.contains(&format!(".{method}(")) {
                    served.push((path.to_owned(), method.to_owned()));
                }
            }
        }
    }
    served.sort();
    let mut documented: Vec<(String, String)> = paths
        .iter()
        .flat_map(|(path, operations)| {
            operations
                .as_object()
                .unwrap()
                .keys()
                .map(move |method| (path.clone(), method.clone()))
        })
        .collect();
    documented.sort();
    assert_eq!(served, documented);

    // Every documented operation answers, with a documented status and a body of its schema.
    let h = harness();
    post(&h.router, "/v1/sessions/s1/events", BEGAN).await;
    let requests: Vec<Probe> = vec![
        (
            "post",
            "/v1/classify",
            Some("application/json"),
            r#"{"http_status":529}"#.to_owned(),
            None,
        ),
        (
            "post",
            "/v1/classify",
            Some("application/json"),
            r#"{"phase":1}"#.to_owned(),
            None,
        ),
        (
            "post",
            "/v1/classify",
            Some("application/x-ndjson"),
            "{}\nnope\n".to_owned(),
            None,
        ),
        (
            "post",
            "/v1/explain",
            Some("application/json"),
            r#"{"stderr":"x"}"#.to_owned(),
            None,
        ),
        (
            "post",
            "/v1/sessions/s1/events",
            Some("application/json"),
            FAILED.to_owned(),
            None,
        ),
        (
            "post",
            "/v1/sessions/s1/events",
            Some("application/json"),
            scheduled("2099-01-01T00:00:00Z"),
            None,
        ),
        (
            "post",
            "/v1/sessions/s1/events",
            Some("application/x-ndjson"),
            format!("{FAILED}\nnope\n"),
            None,
        ),
        ("get", "/v1/sessions/s1", None, String::new(), None),
        ("get", "/v1/sessions/nobody", None, String::new(), None),
        ("get", "/v1/waits", None, String::new(), None),
        ("get", "/v1/bundle", None, String::new(), None),
        ("post", "/v1/admin/reload", None, String::new(), Some(TOKEN)),
        ("post", "/v1/admin/reload", None, String::new(), None),
        ("get", "/v1/openapi.json", None, String::new(), None),
        ("get", "/healthz", None, String::new(), None),
        ("get", "/readyz", None, String::new(), None),
        ("get", "/metrics", None, String::new(), None),
        ("delete", "/v1/sessions/s1", None, String::new(), None),
    ];
    let mut answered = std::collections::BTreeSet::new();
    for (method, path, kind, body, token) in requests {
        let answer = call(&h.router, &method.to_uppercase(), path, kind, body, token).await;
        let template = if path.starts_with("/v1/sessions/") {
            if path.ends_with("/events") {
                "/v1/sessions/{id}/events"
            } else {
                "/v1/sessions/{id}"
            }
        } else {
            path
        };
        answered.insert((template.to_owned(), method.to_owned()));
        let responses = &paths[template][method]["responses"];
        let documented = &responses[answer.status.as_str()];
        assert!(
            documented.is_object(),
            "{method} {path}: status {} is not documented",
            answer.status
        );
        let Some(content) = documented["content"].as_object() else {
            assert!(answer.body.is_empty(), "{method} {path}: undocumented body");
            continue;
        };
        let media = kind
            .filter(|kind| content.contains_key(*kind))
            .unwrap_or_else(|| content.keys().next().unwrap());
        let schema = &content[media]["schema"];
        if media == "application/x-ndjson" {
            for line in answer.lines() {
                check(schema, &line, &document, path).unwrap();
            }
        } else if media.starts_with("application/json") {
            check(schema, &answer.json(), &document, path).unwrap();
        }
    }
    let all: std::collections::BTreeSet<_> = documented.into_iter().collect();
    assert_eq!(answered, all, "every documented operation is exercised");
}

/// The repository catalogue's bundle: its policy waits for a validated quota reset (a
/// bundle older than format 6 decides with the reference defaults, which never wait).
fn catalogue_bytes() -> Vec<u8> {
    faultline_testkit::compile("catalogue/catalogue.rules")
        .bundle
        .unwrap()
}

const QUOTA_BEGAN: &str = r#"{"provider_id":"claude-acp","context":"office","event":"prompt_began","execution_id":"exec-1","generation":7}"#;
const QUOTA_FAILED: &str = r#"{"event":"prompt_failed","execution_id":"exec-1","generation":7,"error":{"code":-32603,"message":"Internal error: You've hit your limit · resets 2pm (UTC)"},"occurred_at":"2099-10-01T09:30:00Z"}"#;

#[tokio::test]
async fn a_deciding_session_answers_with_the_decision_and_waits_on_the_route() {
    let dir = tempfile::tempdir().unwrap();
    {
        let h = harness_durable(&dir);
        h.swap_in(catalogue_bytes()).await;
        let began = post(&h.router, "/v1/sessions/quota/events", QUOTA_BEGAN).await;
        assert_eq!(began.status, StatusCode::OK, "{:?}", began.json());
        let failed = post(&h.router, "/v1/sessions/quota/events", QUOTA_FAILED).await;
        assert_eq!(failed.status, StatusCode::OK, "{:?}", failed.json());
        let answer = failed.json();
        let effects = answer["effects"].to_string();
        // The decision, and the timer the route state released once the server stored it.
        assert!(effects.contains(r#""outcome":"long_retry""#), "{effects}");
        assert!(
            effects.contains(r#""action":"waiting_for_reset""#),
            "{effects}"
        );
        assert!(effects.contains(r#""schedule_timer""#), "{effects}");
        assert_eq!(answer["route_write"], "stored");
        assert_eq!(answer["wait"]["kind"], "route");
        assert_eq!(answer["wait"]["deadline"], "2099-10-01T14:00:00Z");
        assert_eq!(answer["wait"]["reason"], "quota_limited");
        let generation = answer["wait"]["generation"].clone();
        assert!(generation.is_u64(), "{answer}");
        // Another context than the first event's is refused, naming the field.
        let other = post(
            &h.router,
            "/v1/sessions/quota/events",
            r#"{"context":"kanban","event":"model_settled","model_id":"m"}"#,
        )
        .await;
        assert_eq!(other.status, StatusCode::CONFLICT);
        assert_eq!(other.json()["error"]["field"], "context");
        let view = get(&h.router, "/v1/sessions/quota").await.json();
        assert_eq!(view["context"], "office");
        assert_eq!(view["route"]["status"], "waiting_for_reset");
    }
    // After a restart the route's wait is re-armed with its deadline (F.3).
    let h = harness_durable(&dir);
    let waits = get(&h.router, "/v1/waits").await.json();
    assert_eq!(waits["waits"][0]["session"], "quota", "{waits}");
    assert_eq!(waits["waits"][0]["kind"], "route");
    assert_eq!(waits["waits"][0]["deadline"], "2099-10-01T14:00:00Z");
    assert_eq!(waits["waits"][0]["due"], false);
    let view = get(&h.router, "/v1/sessions/quota").await.json();
    assert_eq!(view["route"]["status"], "waiting_for_reset");
}

#[tokio::test]
async fn a_failed_route_write_schedules_nothing() {
    // The first two writes (the two events) succeed; the third, the route state's confirmation,
    // fails: the engine is told, nothing is scheduled, and the answer says so.
    let h = harness_with(failing_store(3), Limits::default());
    h.swap_in(catalogue_bytes()).await;
    assert_eq!(
        post(&h.router, "/v1/sessions/quota/events", QUOTA_BEGAN)
            .await
            .status,
        StatusCode::OK
    );
    let failed = post(&h.router, "/v1/sessions/quota/events", QUOTA_FAILED).await;
    assert_eq!(failed.status, StatusCode::OK);
    let answer = failed.json();
    assert_eq!(answer["route_write"], "failed");
    assert!(
        !answer["effects"].to_string().contains("schedule_timer"),
        "{answer}"
    );
    assert_eq!(answer["wait"], Value::Null);
}
