//! `faultline serve`: the engine as a long-running sidecar (the `faultline-serve` crate), with
//! the bundle from a file, a catalogue compiled at start and on every reload, or the catalogue
//! built into this binary.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use faultline_serve::{BundleFile, BundleSource, Config, Limits, Listen, LogFormat};

use super::files::{self, FileSystem};
use super::{Exit, err};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The TCP address to listen on (loopback by default: exposing the server is a choice).
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "127.0.0.1:8462",
        conflicts_with = "unix"
    )]
    listen: SocketAddr,
    /// Listen on a Unix socket at this path instead.
    #[arg(long, value_name = "PATH")]
    unix: Option<PathBuf>,
    /// Serve a compiled bundle file; it is watched, and a change reloads it.
    #[arg(long, value_name = "FILE", conflicts_with = "catalogue")]
    bundle: Option<PathBuf>,
    /// Serve a catalogue, compiled at start and again on every reload (SIGHUP or the admin
    /// endpoint). Without `--bundle` or `--catalogue`, the built-in catalogue is served.
    #[arg(long, value_name = "CATALOGUE")]
    catalogue: Option<PathBuf>,
    /// Keep recovery sessions in DIR (`sessions.redb`), so they survive a restart. Without
    /// it, sessions live in memory only.
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// A file holding the admin token (for `POST /v1/admin/reload`); the environment variable
    /// `FAULTLINE_ADMIN_TOKEN` is read when this is not given. Without a token, admin endpoints
    /// are off.
    #[arg(long, value_name = "FILE")]
    admin_token_file: Option<PathBuf>,
    /// Log format on standard error (filter with `RUST_LOG`).
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogChoice,
    /// The largest request body, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_body_bytes)]
    max_body_bytes: usize,
    /// The largest request head (request line and headers), in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_header_bytes)]
    max_header_bytes: usize,
    /// How long one request may take, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = Limits::default().request_timeout.as_secs())]
    request_timeout: u64,
    /// How many recovery sessions the server holds.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_sessions)]
    max_sessions: usize,
    /// How many connections are served at once.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_connections)]
    max_connections: usize,
    /// How often the bundle file is checked for changes, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    watch_interval: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogChoice {
    Text,
    Json,
}

/// A catalogue directory, compiled anew on every read.
#[derive(Debug)]
struct CatalogueSource {
    root: PathBuf,
}

impl BundleSource for CatalogueSource {
    fn read(&self) -> Result<Vec<u8>, String> {
        let what = format!("`{}`", self.root.display());
        let (compilation, _) = super::classify::compile(
            faultline_dsl::load(&self.root, &FileSystem),
            &what,
        )
        .map_err(|_| {
            format!("{what} does not compile (the errors are above); run `faultline check` on it")
        })?;
        compilation
            .bundle
            .ok_or_else(|| format!("{what} compiled to no bundle"))
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }
}

/// The catalogue built into this binary: the same bytes on every read.
#[derive(Debug)]
struct BuiltIn {
    bytes: Vec<u8>,
}

impl BundleSource for BuiltIn {
    fn read(&self) -> Result<Vec<u8>, String> {
        Ok(self.bytes.clone())
    }

    fn describe(&self) -> String {
        "the built-in catalogue".to_owned()
    }
}

fn admin_token(args: &Args) -> Result<Option<String>, Exit> {
    if let Some(path) = &args.admin_token_file {
        let text = std::fs::read_to_string(path).map_err(|error| {
            err(&format!("error: cannot read `{}`: {error}", path.display()));
            Exit::Failure
        })?;
        let token = text.trim().to_owned();
        if token.len() < 16 {
            err(&format!(
                "error: the admin token in `{}` is shorter than 16 characters",
                path.display()
            ));
            return Err(Exit::Failure);
        }
        return Ok(Some(token));
    }
    Ok(std::env::var("FAULTLINE_ADMIN_TOKEN")
        .ok()
        .map(|token| token.trim().to_owned())
        .filter(|token| !token.is_empty()))
}

pub fn run(args: &Args) -> Exit {
    let source: Box<dyn BundleSource> = match (&args.bundle, &args.catalogue) {
        (Some(path), _) => Box::new(BundleFile::new(path)),
        (None, Some(path)) => Box::new(CatalogueSource {
            root: files::catalogue_root(path),
        }),
        (None, None) => match super::classify::embedded_bundle_file() {
            Ok((_, bytes)) => Box::new(BuiltIn { bytes }),
            Err(exit) => return exit,
        },
    };
    let admin_token = match admin_token(args) {
        Ok(token) => token,
        Err(exit) => return exit,
    };
    faultline_serve::init_logging(match args.log_format {
        LogChoice::Text => LogFormat::Text,
        LogChoice::Json => LogFormat::Json,
    });
    let mut config = Config::new(source);
    config.listen = match &args.unix {
        Some(path) => Listen::Unix(path.clone()),
        None => Listen::Tcp(args.listen),
    };
    config.state = args.state.clone();
    config.admin_token = admin_token;
    config.limits = Limits {
        max_body_bytes: args.max_body_bytes,
        max_header_bytes: args.max_header_bytes,
        request_timeout: Duration::from_secs(args.request_timeout.max(1)),
        max_sessions: args.max_sessions,
        max_connections: args.max_connections.max(1),
    };
    config.watch_interval = Duration::from_millis(args.watch_interval.max(10));
    match faultline_serve::run(config, |address| {
        err(&format!("faultline serve: listening on {address}"));
    }) {
        Ok(()) => Exit::Clean,
        Err(error) => {
            err(&format!("error: {error}"));
            Exit::Failure
        }
    }
}
