//! `faultline serve`: the engine as a sidecar for orchestrators in any language.
//!
//! One long-running process loads a bundle once and answers over HTTP/1.1 with JSON
//! (docs/serve.md, docs/openapi.json): classification (one object, or a stream of JSON lines
//! answered line by line), explanation, recovery sessions whose state is durable (an event is
//! acknowledged only once it is stored, and a restart replays every session and re-arms its
//! pending wait), the bundle's identity, health, readiness and Prometheus metrics. The bundle
//! is reloaded on SIGHUP, on a change of the bundle file or on an authenticated admin request:
//! read, fully validated, then swapped atomically; a damaged one is refused and the last good
//! one keeps serving.
//!
//! The entry points: [`spawn`] starts a server on its own threads and returns a [`Running`]
//! handle; [`run`] also handles signals and blocks until SIGTERM or SIGINT. [`Config`] says
//! where to listen ([`Listen`]), where the bundle comes from ([`BundleSource`], such as a
//! [`BundleFile`]), where state lives and the [`Limits`].
//!
//! The crate also holds the JSON-lines parsing the CLI shares ([`parse_object`],
//! [`evidence_of`], [`typed`], [`LineError`] and friends), so that the CLI and the server
//! read evidence and events exactly alike.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

mod api;
mod bundles;
mod lines;
mod metrics;
mod server;
mod session_api;
mod sessions;
mod store;
#[cfg(test)]
mod tests;

pub use bundles::{BundleFile, BundleSource};
pub use lines::{
    LineError, context_field, evidence_of, json_kind, one_line, parse_object, string_field, typed,
    with_id,
};

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address; port 0 picks a free port ([`Running::local_addr`] tells which).
    Tcp(SocketAddr),
    /// A Unix socket path (an existing socket file there is replaced).
    Unix(PathBuf),
}

impl Default for Listen {
    /// Loopback only: exposing the server is a deliberate choice.
    fn default() -> Listen {
        Listen::Tcp(SocketAddr::from(([127, 0, 0, 1], 8462)))
    }
}

/// How log lines are written (to standard error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per event.
    Json,
}

/// Bounds on what a client can make the server hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The largest request body; a larger one is answered 413.
    pub max_body_bytes: usize,
    /// The largest request head (request line and headers); hyper's floor is 8 KiB.
    pub max_header_bytes: usize,
    /// How long one request may take before it is answered 408; also how long a streamed
    /// batch may wait for its next bytes, and how long shutdown waits for open requests.
    pub request_timeout: Duration,
    /// How many recovery sessions the server holds; an event for a new session past it is
    /// answered 429.
    pub max_sessions: usize,
    /// How many connections are served at once; more wait to be accepted.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_body_bytes: 16 << 20,
            max_header_bytes: 16 << 10,
            request_timeout: api::DEFAULT_TIMEOUT,
            max_sessions: 10_000,
            max_connections: 1024,
        }
    }
}

/// Everything the server needs.
#[derive(Debug)]
pub struct Config {
    /// Where to listen.
    pub listen: Listen,
    /// Where the bundle comes from (read at start and on every reload).
    pub source: Box<dyn BundleSource>,
    /// The state directory (`sessions.redb` in it); `None`: sessions live in memory only.
    pub state: Option<PathBuf>,
    /// The admin token (`Authorization: Bearer …`); `None`: admin endpoints answer 403.
    pub admin_token: Option<String>,
    /// The bounds.
    pub limits: Limits,
    /// How often the bundle file is polled for changes.
    pub watch_interval: Duration,
}

impl Config {
    /// A configuration with the defaults: loopback, memory-only state, no admin token.
    pub fn new(source: Box<dyn BundleSource>) -> Config {
        Config {
            listen: Listen::default(),
            source,
            state: None,
            admin_token: None,
            limits: Limits::default(),
            watch_interval: Duration::from_secs(1),
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The bundle could not be read or is not valid.
    #[error("no bundle to serve: {0}")]
    Bundle(String),
    /// The state store could not be opened or replayed.
    #[error("the state store cannot be used: {0}")]
    Store(String),
    /// The address could not be bound.
    #[error("cannot listen on {address}: {message}")]
    Listen {
        /// The address or socket path.
        address: String,
        /// Why.
        message: String,
    },
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(String),
}

/// A server running on its own threads.
#[derive(Debug)]
pub struct Running {
    local_addr: Option<SocketAddr>,
    sessions_restored: usize,
    stop: tokio::sync::watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// The TCP address bound (`None` on a Unix socket).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    /// How many sessions were rebuilt from the state store at start.
    pub fn sessions_restored(&self) -> usize {
        self.sessions_restored
    }

    /// Stops accepting, lets open requests finish, and waits for the server to end.
    pub fn stop(mut self) {
        let _ = self.stop.send(true);
        self.join();
    }

    /// Waits until the server ends (after SIGTERM or SIGINT when it handles signals).
    pub fn wait(mut self) {
        self.join();
    }

    fn join(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.join();
    }
}

/// The application: the bundle loaded and validated, the sessions replayed from `store` (its
/// waits re-armed, so this runs inside the runtime). Returns it and the sessions restored.
fn assemble(
    source: Box<dyn BundleSource>,
    store: Arc<dyn store::Store>,
    limits: Limits,
    admin_token: Option<&str>,
) -> Result<(Arc<api::App>, usize), ServeError> {
    let metrics = Arc::new(metrics::Metrics::new());
    let bundles = bundles::Bundles::open(source).map_err(ServeError::Bundle)?;
    metrics.bundle_activated(&bundles.current());
    let sessions = Arc::new(sessions::Sessions::new(
        store,
        limits.max_sessions,
        metrics.clone(),
    ));
    let restored = sessions
        .restore()
        .map_err(|error| ServeError::Store(error.to_string()))?;
    let app = Arc::new(api::App {
        bundles,
        metrics,
        sessions,
        admin_token: admin_token.map(api::App::hash_token),
        limits,
        ready: AtomicBool::new(false),
        panic_ids: AtomicU64::new(0),
    });
    Ok((app, restored))
}

/// Starts the server on its own threads: the bundle is loaded and validated, the state store
/// opened and replayed, and the socket bound before this returns. With `signals`, SIGHUP
/// reloads and SIGTERM or SIGINT stop it.
pub fn spawn(config: Config, signals: bool) -> Result<Running, ServeError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("faultline-serve")
        .build()
        .map_err(|error| ServeError::Runtime(error.to_string()))?;
    let store: Arc<dyn store::Store> = match &config.state {
        Some(directory) => Arc::new(
            store::RedbStore::open(directory)
                .map_err(|error| ServeError::Store(error.to_string()))?,
        ),
        None => Arc::new(
            store::RedbStore::in_memory().map_err(|error| ServeError::Store(error.to_string()))?,
        ),
    };
    let (app, restored) = {
        let _context = runtime.enter();
        assemble(
            config.source,
            store,
            config.limits,
            config.admin_token.as_deref(),
        )?
    };
    let (listener, local_addr) = {
        let _context = runtime.enter();
        bind(&config.listen)?
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let router = api::router(app.clone());
    let watch_interval = config.watch_interval;
    let stop_for_signals = stop.clone();
    app.ready.store(true, Ordering::Release);
    tracing::info!(
        address = %local_addr.map_or_else(|| format!("{:?}", config.listen), |address| address.to_string()),
        bundle = %app.bundles.current().hash,
        sessions = restored,
        "listening"
    );
    let thread = std::thread::Builder::new()
        .name("faultline-serve".to_owned())
        .spawn(move || {
            runtime.block_on(async move {
                if signals {
                    tokio::spawn(server::signals(app.clone(), stop_for_signals));
                }
                tokio::spawn(server::watch_file(
                    app.clone(),
                    watch_interval,
                    stopped.clone(),
                ));
                server::serve(listener, router, app, stopped).await;
            });
            runtime.shutdown_timeout(Duration::from_secs(1));
        })
        .map_err(|error| ServeError::Runtime(error.to_string()))?;
    Ok(Running {
        local_addr,
        sessions_restored: restored,
        stop,
        thread: Some(thread),
    })
}

/// Binds with the standard library (so that this works from inside another runtime too) and
/// hands the socket to tokio; runs inside the server's runtime context.
fn bind(listen: &Listen) -> Result<(server::Listener, Option<SocketAddr>), ServeError> {
    match listen {
        Listen::Tcp(address) => {
            let failed = |error: std::io::Error| ServeError::Listen {
                address: address.to_string(),
                message: error.to_string(),
            };
            let listener = std::net::TcpListener::bind(address).map_err(failed)?;
            listener.set_nonblocking(true).map_err(failed)?;
            let listener = tokio::net::TcpListener::from_std(listener).map_err(failed)?;
            let local = listener.local_addr().ok();
            Ok((server::Listener::Tcp(listener), local))
        }
        Listen::Unix(path) => {
            let failed = |error: std::io::Error| ServeError::Listen {
                address: path.display().to_string(),
                message: error.to_string(),
            };
            use std::os::unix::fs::FileTypeExt as _;
            if std::fs::symlink_metadata(path)
                .is_ok_and(|metadata| metadata.file_type().is_socket())
            {
                std::fs::remove_file(path).map_err(failed)?;
            }
            let listener = std::os::unix::net::UnixListener::bind(path).map_err(failed)?;
            listener.set_nonblocking(true).map_err(failed)?;
            let listener = tokio::net::UnixListener::from_std(listener).map_err(failed)?;
            Ok((server::Listener::Unix(listener), None))
        }
    }
}

/// Installs the log subscriber: `format` lines on standard error, filtered by `RUST_LOG`
/// (default `info`). Call once, before [`spawn`] or [`run`]; a second call changes nothing.
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal as _;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _already = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Runs the server with signal handling until SIGTERM or SIGINT; `ready` is called with the
/// bound address (or socket path) once the server accepts connections.
pub fn run(config: Config, ready: impl FnOnce(&str)) -> Result<(), ServeError> {
    let described = match &config.listen {
        Listen::Unix(path) => path.display().to_string(),
        Listen::Tcp(_) => String::new(),
    };
    let running = spawn(config, true)?;
    let address = running
        .local_addr()
        .map_or(described, |address| format!("http://{address}"));
    ready(&address);
    running.wait();
    Ok(())
}
