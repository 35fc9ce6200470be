//! The mock provider: a loopback HTTP server that answers every request with one documented
//! provider error response (a *scenario*), for recording real agents' turns against provider
//! failures without a network or a key (`faultline replay mock-provider`, `faultline replay
//! record`).
//!
//! A scenario is a data file (`fixtures/mock-provider/<api>/<name>.json`): the API it imitates,
//! the documentation it cites, the code its error should classify to, and the response — status,
//! headers (`retry-after`, `retry-after-ms`, …) and body — or `closedPort` for a provider that
//! cannot be reached at all. A request that asks for a stream (`"stream": true` in its body, or a
//! Gemini `streamGenerateContent` / `alt=sse` URL) gets the scenario's `stream` response if it
//! has one, else the same error response: the providers answer a failed streaming request with
//! the HTTP error before any event.
//!
//! The server binds 127.0.0.1 only (never a wildcard address) and reads at most
//! [`MAX_REQUEST_BODY`] bytes of a request. It is built on `tiny_http` (a small, synchronous
//! server: the capture path is synchronous and needs no async runtime here), which stays out of
//! this module's signatures.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use serde::Deserialize;

/// The most of a request body the server reads (to tell a streaming request apart).
pub const MAX_REQUEST_BODY: u64 = 1 << 20;

/// The provider API a scenario imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// Anthropic's Messages API (`POST /v1/messages`).
    AnthropicMessages,
    /// OpenAI's Chat Completions API (`POST /v1/chat/completions`).
    OpenaiChat,
    /// OpenAI's Responses API (`POST /v1/responses`).
    OpenaiResponses,
    /// The Gemini API (`POST /v1beta/models/{model}:generateContent` and
    /// `:streamGenerateContent`).
    Gemini,
}

/// One HTTP response of a scenario.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers, by name (`content-type` defaults to `application/json`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body: a JSON value sent as JSON, or a string sent as it is (an SSE stream).
    pub body: serde_json::Value,
}

impl Response {
    fn body_bytes(&self) -> Vec<u8> {
        match &self.body {
            serde_json::Value::String(text) => text.clone().into_bytes(),
            other => other.to_string().into_bytes(),
        }
    }
}

/// A scenario: one documented provider error response.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Scenario {
    /// Its name (the file's stem), lowercase dash-separated words.
    pub name: String,
    /// The API it imitates.
    pub api: Api,
    /// The public documentation the response is taken from.
    pub source: String,
    /// The code the agent's error text should classify to.
    pub expect: String,
    /// Other codes an agent's text may fairly classify to, each with why (an agent that
    /// retries a rate limit until it gives up may report it as a timeout, say).
    #[serde(default)]
    pub alternatives: BTreeMap<String, String>,
    /// The response to every request (absent only for a closed port).
    #[serde(default)]
    pub response: Option<Response>,
    /// The response to a streaming request, if it differs.
    #[serde(default)]
    pub stream: Option<Response>,
    /// Nothing listens: the agent's connection is refused.
    #[serde(default)]
    pub closed_port: bool,
}

/// Why a scenario file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct ScenarioError {
    /// The file.
    pub file: String,
    /// What is wrong, and how to fix it.
    pub problem: String,
}

/// Decodes and checks a scenario file: a known API, a public `https://` source, a name of
/// lowercase dash-separated words, an error status (400–599), and a response unless the port is
/// closed.
pub fn load_scenario(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
    let error = |problem: String| ScenarioError {
        file: file.to_owned(),
        problem,
    };
    let scenario: Scenario = serde_json::from_str(text)
        .map_err(|e| error(format!("not a scenario ({e}); see docs/fixtures.md")))?;
    let label = !scenario.name.is_empty()
        && scenario.name.split('-').all(|word| {
            !word.is_empty()
                && word
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit())
        });
    if !label {
        return Err(error(format!(
            "`name` `{}` is not lowercase dash-separated words",
            scenario.name
        )));
    }
    if !scenario.source.starts_with("https://") {
        return Err(error(
            "`source` must cite the provider's public documentation (an https:// URL)".to_owned(),
        ));
    }
    match (&scenario.response, scenario.closed_port) {
        (None, false) => return Err(error("give a `response`, or set `closedPort`".to_owned())),
        (Some(_), true) => {
            return Err(error(
                "a `closedPort` scenario has no `response`: nothing answers".to_owned(),
            ));
        }
        _ => {}
    }
    for response in scenario.response.iter().chain(&scenario.stream) {
        if !(200..=599).contains(&response.status)
            || (response.status < 400 && scenario.stream.as_ref() != Some(response))
        {
            return Err(error(format!(
                "status {} is not an error status (400–599; a `stream` response may be 200 with an error event)",
                response.status
            )));
        }
    }
    Ok(scenario)
}

/// One request the mock received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The method.
    pub method: String,
    /// The path and query.
    pub url: String,
    /// Whether it asked for a stream.
    pub streaming: bool,
}

/// A running mock provider (or, for a closed-port scenario, a port nothing listens on).
pub struct MockProvider {
    port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    server: Option<(Arc<tiny_http::Server>, JoinHandle<()>)>,
}

impl std::fmt::Debug for MockProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockProvider")
            .field("port", &self.port)
            .field("serving", &self.server.is_some())
            .finish()
    }
}

impl MockProvider {
    /// Starts serving `scenario` on 127.0.0.1 (`port` 0: any free port). A closed-port
    /// scenario binds a free port and releases it, so connections to it are refused.
    pub fn start(scenario: &Scenario, port: u16) -> std::io::Result<MockProvider> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let received = Arc::new(Mutex::new(Vec::new()));
        let Some(response) = scenario.response.clone().filter(|_| !scenario.closed_port) else {
            let port = TcpListener::bind(address)?.local_addr()?.port();
            return Ok(MockProvider {
                port,
                received,
                server: None,
            });
        };
        let server = Arc::new(tiny_http::Server::http(address).map_err(std::io::Error::other)?);
        let port = server
            .server_addr()
            .to_ip()
            .map(|address| address.port())
            .ok_or_else(|| std::io::Error::other("the mock is not on an IP socket"))?;
        let stream = scenario.stream.clone().unwrap_or_else(|| response.clone());
        let serving = Arc::clone(&server);
        let log = Arc::clone(&received);
        let thread = std::thread::spawn(move || {
            for mut request in serving.incoming_requests() {
                let mut body = Vec::new();
                let _ = request
                    .as_reader()
                    .take(MAX_REQUEST_BODY)
                    .read_to_end(&mut body);
                let streaming = asks_for_stream(request.url(), &body);
                log.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(Received {
                        method: request.method().to_string(),
                        url: request.url().to_owned(),
                        streaming,
                    });
                let chosen = if streaming { &stream } else { &response };
                let _ = request.respond(http_response(chosen));
            }
        });
        Ok(MockProvider {
            port,
            received,
            server: Some((server, thread)),
        })
    }

    /// The port it listens on (or that is closed).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The base URL to point an agent at, `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests received so far.
    pub fn received(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Stops serving and waits for the server thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some((server, thread)) = self.server.take() {
            server.unblock();
            let _ = thread.join();
        }
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Whether a request asks for a streamed answer.
fn asks_for_stream(url: &str, body: &[u8]) -> bool {
    if url.contains(":streamGenerateContent") || url.contains("alt=sse") {
        return true;
    }
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|body| body.get("stream").and_then(serde_json::Value::as_bool))
        .unwrap_or(false)
}

fn http_response(response: &Response) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut answer =
        tiny_http::Response::from_data(response.body_bytes()).with_status_code(response.status);
    let mut typed = false;
    for (name, value) in &response.headers {
        typed |= name.eq_ignore_ascii_case("content-type");
        if let Ok(header) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            answer.add_header(header);
        }
    }
    if !typed
        && let Ok(header) =
            tiny_http::Header::from_bytes(&b"content-type"[..], &b"application/json"[..])
    {
        answer.add_header(header);
    }
    answer
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    use super::*;

    fn scenario(text: &str) -> Scenario {
        match load_scenario("test.json", text) {
            Ok(scenario) => scenario,
            Err(error) => panic!("{error}"),
        }
    }

    /// Sends one HTTP/1.1 request to the mock and returns the raw response.
    fn request(port: u16, path: &str, body: &str) -> std::io::Result<String> {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        Ok(answer)
    }

    const RATE_LIMIT: &str = r#"{"name": "anthropic-429-rate-limit", "api": "anthropic-messages",
        "source": "https://docs.anthropic.com/en/api/errors", "expect": "rate_limited",
        "response": {"status": 429, "headers": {"retry-after": "30"},
                     "body": {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}},
        "stream": {"status": 200, "headers": {"content-type": "text/event-stream"},
                   "body": "event: error\ndata: {}\n\n"}}"#;

    #[test]
    fn the_mock_answers_with_the_scenarios_status_headers_and_body() -> std::io::Result<()> {
        let mock = MockProvider::start(&scenario(RATE_LIMIT), 0)?;
        let answer = request(mock.port(), "/v1/messages", r#"{"model": "m"}"#)?;
        assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
        let lower = answer.to_ascii_lowercase();
        assert!(lower.contains("retry-after: 30"), "{answer}");
        assert!(lower.contains("content-type: application/json"), "{answer}");
        assert!(
            answer.ends_with(r#""message":"Rate limited"}}"#),
            "{answer}"
        );
        // A streaming request gets the stream response.
        let answer = request(mock.port(), "/v1/messages", r#"{"stream": true}"#)?;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("event: error\ndata: {}\n\n"), "{answer}");
        let received = mock.received();
        assert_eq!(
            received
                .iter()
                .map(|request| (request.url.as_str(), request.streaming))
                .collect::<Vec<_>>(),
            [("/v1/messages", false), ("/v1/messages", true)]
        );
        assert!(mock.base_url().starts_with("http://127.0.0.1:"));
        mock.stop();
        Ok(())
    }

    #[test]
    fn a_streaming_request_without_a_stream_response_gets_the_error_before_any_event()
    -> std::io::Result<()> {
        let gemini = r#"{"name": "gemini-429", "api": "gemini", "source": "https://ai.google.dev/gemini-api/docs/troubleshooting",
            "expect": "rate_limited", "response": {"status": 429, "body": {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}}}"#;
        let mock = MockProvider::start(&scenario(gemini), 0)?;
        let answer = request(
            mock.port(),
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            "{}",
        )?;
        assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
        assert!(answer.contains("RESOURCE_EXHAUSTED"), "{answer}");
        assert!(mock.received().iter().all(|request| request.streaming));
        Ok(())
    }

    #[test]
    fn a_closed_port_scenario_refuses_connections() -> std::io::Result<()> {
        let closed = r#"{"name": "anthropic-closed-port", "api": "anthropic-messages",
            "source": "https://nodejs.org/api/errors.html", "expect": "network_unavailable", "closedPort": true}"#;
        let mock = MockProvider::start(&scenario(closed), 0)?;
        assert!(TcpStream::connect((Ipv4Addr::LOCALHOST, mock.port())).is_err());
        Ok(())
    }

    #[test]
    fn a_bad_scenario_is_refused_with_what_to_fix() {
        for (text, problem) in [
            (
                r#"{"name": "x", "api": "gemini", "source": "https://a.example", "expect": "c"}"#,
                "give a `response`, or set `closedPort`",
            ),
            (
                r#"{"name": "X Y", "api": "gemini", "source": "https://a.example", "expect": "c", "closedPort": true}"#,
                "is not lowercase dash-separated words",
            ),
            (
                r#"{"name": "x", "api": "gemini", "source": "notes", "expect": "c", "closedPort": true}"#,
                "public documentation",
            ),
            (
                r#"{"name": "x", "api": "gemini", "source": "https://a.example", "expect": "c", "response": {"status": 200, "body": {}}}"#,
                "not an error status",
            ),
            (
                r#"{"name": "x", "api": "cohere", "source": "https://a.example", "expect": "c", "closedPort": true}"#,
                "not a scenario",
            ),
        ] {
            match load_scenario("bad.json", text) {
                Ok(scenario) => panic!("accepted {scenario:?}"),
                Err(error) => assert!(error.to_string().contains(problem), "{error}"),
            }
        }
    }
}
