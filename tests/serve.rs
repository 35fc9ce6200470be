//! `faultline serve` as a process: started on a state directory, fed a session's events,
//! killed with SIGKILL in the middle of the stream, restarted on the same directory; and
//! started with a bundle file whose change it picks up by itself. Loopback only; every wait is
//! bounded.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "integration tests report failure by panicking"
)]

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const GOLDEN: &str = "fixtures/bundles/format-4-redaction-markers.flb";

/// A `faultline serve` process and the address it printed.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start(bundle: &Path, state: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["serve", "--listen", "127.0.0.1:0", "--bundle"])
            .arg(bundle)
            .arg("--state")
            .arg(state)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(address) = line.strip_prefix("faultline serve: listening on http://") {
                    let _ = sender.send(address.to_owned());
                }
            }
        });
        let address = receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("the server printed its address");
        Server { child, address }
    }

    /// One request on a fresh connection: the status and the body.
    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let status = answer
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    fn json(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let (status, body) = self.request(method, path, body);
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn sigkill_mid_stream_loses_no_acknowledged_event_and_re_arms_waits() {
    let state = common::scratch("serve-crash");
    let bundle = common::root().join(GOLDEN);
    let server = Server::start(&bundle, &state, &[]);
    let events = "/v1/sessions/crash/events";
    let opening = [
        r#"{"provider_id":"claude-acp","event":"prompt_began","execution_id":"exec-1","generation":7}"#.to_owned(),
        r#"{"event":"prompt_failed","execution_id":"exec-1","generation":7,"error":{"code":-32603,"message":"Internal error: API Error: 529 Overloaded"},"occurred_at":"2026-10-01T08:00:00Z"}"#.to_owned(),
        r#"{"event":"retry_scheduled","reason":"Provider overloaded","provider":"anthropic","attempt":1,"max_attempts":5,"deadline":"2099-01-01T00:00:00Z"}"#.to_owned(),
    ];
    for line in &opening {
        assert_eq!(server.json("POST", events, line).0, 200);
    }
    let (status, due) = server.json(
        "POST",
        "/v1/sessions/due/events",
        r#"{"event":"retry_scheduled","reason":"Rate limited","provider":"openai","attempt":2,"max_attempts":5,"deadline":"2001-01-01T00:00:00Z"}"#,
    );
    assert_eq!(status, 200, "{due}");
    // Stream events from another thread; kill the server while it streams.
    let address = server.address.clone();
    let streamer = std::thread::spawn(move || {
        let mut acknowledged = Vec::new();
        for n in 0..100_000 {
            let line = format!(
                r#"{{"event":"model_settled","model_id":"model-{n}","execution_id":"exec-1"}}"#
            );
            let Ok(mut stream) = TcpStream::connect(&address) else {
                break;
            };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let request = format!(
                "POST /v1/sessions/crash/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{line}",
                line.len()
            );
            if stream.write_all(request.as_bytes()).is_err() {
                break;
            }
            let mut answer = String::new();
            if stream.read_to_string(&mut answer).is_err() || !answer.starts_with("HTTP/1.1 200") {
                break;
            }
            let body: Value =
                serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
            acknowledged.push(body["sequence"].as_u64().unwrap());
        }
        acknowledged
    });
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        let (_, session) = server.json("GET", "/v1/sessions/crash", "");
        if session["events"].as_u64().unwrap_or(0) >= 40 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut server = server;
    server.child.kill().unwrap(); // SIGKILL
    server.child.wait().unwrap();
    let acknowledged = streamer.join().unwrap();
    assert!(
        acknowledged.len() >= 30,
        "{} acknowledged",
        acknowledged.len()
    );
    // Acknowledged sequence numbers are contiguous after the opening three.
    let expected: Vec<u64> = (3..3 + acknowledged.len() as u64).collect();
    assert_eq!(acknowledged, expected);

    let restarted = Server::start(&bundle, &state, &[]);
    let (_, session) = restarted.json("GET", "/v1/sessions/crash", "");
    let events = session["events"].as_u64().unwrap();
    let last_acknowledged = acknowledged.last().unwrap() + 1;
    // Every acknowledged event is there; at most the one in flight when the process died was
    // committed without its answer reaching the client, and then whole.
    assert!(
        events == last_acknowledged || events == last_acknowledged + 1,
        "{events} events after {last_acknowledged} acknowledged"
    );
    assert_eq!(session["provider_id"], "claude-acp");
    assert!(session["last_verdict"]["classification"]["rule"].is_string());
    assert_eq!(session["wait"]["deadline"], "2099-01-01T00:00:00Z");
    // The waits are re-armed: the future one pending, the past one due.
    let started = Instant::now();
    let waits = loop {
        let (_, waits) = restarted.json("GET", "/v1/waits", "");
        if waits["waits"][0]["due"] == true || started.elapsed() > Duration::from_secs(10) {
            break waits;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(waits["waits"][0]["session"], "due");
    assert_eq!(waits["waits"][0]["due"], true);
    assert_eq!(waits["waits"][1]["session"], "crash");
    assert_eq!(waits["waits"][1]["due"], false);
    // The session goes on where it stopped.
    let (status, next) = restarted.json(
        "POST",
        "/v1/sessions/crash/events",
        r#"{"event":"retry_ended","ending":"exhausted"}"#,
    );
    assert_eq!(status, 200);
    assert_eq!(next["sequence"], events);
    assert_eq!(next["wait"], Value::Null);
    let metrics = restarted.request("GET", "/metrics", "").1;
    assert!(metrics.contains("faultline_sessions 2"), "{metrics}");
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn a_changed_bundle_file_is_picked_up_and_a_damaged_one_refused() {
    let state = common::scratch("serve-watch");
    let bundle = state.join("bundle.flb");
    std::fs::copy(common::root().join(GOLDEN), &bundle).unwrap();
    let server = Server::start(&bundle, &state.join("state"), &["--watch-interval", "20"]);
    let first = server.json("GET", "/v1/bundle", "").1["hash"]
        .as_str()
        .unwrap()
        .to_owned();
    let wait_for = |predicate: &dyn Fn(&str) -> bool| {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            let metrics = server.request("GET", "/metrics", "").1;
            if predicate(&metrics) {
                return metrics;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("the watcher did not act in time");
    };
    std::fs::write(&bundle, b"FLB damaged").unwrap();
    wait_for(&|metrics| metrics.contains(r#"trigger="file",outcome="refused"} 1"#));
    assert_eq!(
        server.json("GET", "/v1/bundle", "").1["hash"],
        first.as_str()
    );
    let (status, answer) = server.json("POST", "/v1/classify", r#"{"http_status":529}"#);
    assert_eq!(status, 200);
    assert_eq!(answer["bundle"], first.as_str());
    let built = state.join("built.flb");
    let output = common::faultline(&[
        "build",
        "fixtures/valid/all-constructs.rules",
        "-o",
        built.to_str().unwrap(),
    ]);
    assert!(output.status.success());
    std::fs::rename(&built, &bundle).unwrap();
    wait_for(&|metrics| metrics.contains(r#"trigger="file",outcome="swapped"} 1"#));
    let (_, answer) = server.json("POST", "/v1/classify", r#"{"http_status":529}"#);
    assert_ne!(answer["bundle"], first.as_str());
    // SIGHUP reloads too (the file holds the serving bundle now: unchanged).
    let status = Command::new("kill")
        .args(["-HUP", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    wait_for(&|metrics| metrics.contains(r#"trigger="sighup",outcome="unchanged"} 1"#));
    // Admin endpoints are off without a token.
    assert_eq!(server.json("POST", "/v1/admin/reload", "").0, 403);
    let _ = std::fs::remove_dir_all(&state);
}
