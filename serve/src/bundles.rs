//! The active bundle and its reload: read, fully validate, then swap atomically.
//!
//! Readers take the active bundle with one atomic load ([`arc_swap`]) and keep that `Arc` for
//! their whole request, so a swap never changes the bundle under a request that already began
//! (every answer names the hash of the bundle it used). A reload reads the source anew and
//! validates every byte with the runtime's loader ([`Bundle::from_bytes`] is a full validator:
//! format, versions, content hash, every automaton); only a bundle that loads is swapped in. A
//! damaged or incompatible one is refused, logged and counted, and the last good bundle keeps
//! serving. Reloads are serialized, so two triggers at once cannot interleave.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use arc_swap::ArcSwap;
use faultline_runtime::Bundle;

use crate::metrics::Metrics;

/// Where the server's bundle comes from. The server reads it at start and on every reload.
pub trait BundleSource: Send + Sync + std::fmt::Debug {
    /// Reads the bundle's bytes anew; the error says what could not be read, for a person.
    fn read(&self) -> Result<Vec<u8>, String>;

    /// What the source is, for logs and `GET /v1/bundle`: a path, or "the built-in catalogue".
    fn describe(&self) -> String;

    /// A file whose changes should trigger a reload (polled), if any.
    fn watched_file(&self) -> Option<&Path> {
        None
    }
}

/// A compiled bundle file (`faultline build`), read from disk on every reload and watched for
/// changes.
#[derive(Debug, Clone)]
pub struct BundleFile {
    path: PathBuf,
}

impl BundleFile {
    /// The bundle file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> BundleFile {
        BundleFile { path: path.into() }
    }
}

impl BundleSource for BundleFile {
    fn read(&self) -> Result<Vec<u8>, String> {
        std::fs::read(&self.path)
            .map_err(|error| format!("cannot read `{}`: {error}", self.path.display()))
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn watched_file(&self) -> Option<&Path> {
        Some(&self.path)
    }
}

/// A validated bundle with what the API reports about it.
#[derive(Debug)]
pub(crate) struct ActiveBundle {
    pub(crate) bundle: Bundle,
    /// The bundle file's bytes, kept so a session log can store the bundle its events were
    /// applied with (a replay after a restart must classify exactly as the first run did).
    pub(crate) bytes: Arc<Vec<u8>>,
    /// The content hash, lowercase hex: what every answer names.
    pub(crate) hash: String,
    pub(crate) loaded_at: SystemTime,
}

impl ActiveBundle {
    /// Validates `bytes` fully; the error is the loader's, for a person.
    pub(crate) fn load(bytes: Vec<u8>) -> Result<ActiveBundle, String> {
        let bundle = Bundle::from_bytes(&bytes).map_err(|error| error.to_string())?;
        let hash = bundle.header().content_hash_hex();
        Ok(ActiveBundle {
            bundle,
            bytes: Arc::new(bytes),
            hash,
            loaded_at: SystemTime::now(),
        })
    }
}

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reloaded {
    /// A new bundle now serves.
    Swapped { from: String, to: String },
    /// The source holds the bundle that already serves.
    Unchanged { hash: String },
}

/// The active bundle, its source and the reload lock.
#[derive(Debug)]
pub(crate) struct Bundles {
    active: ArcSwap<ActiveBundle>,
    source: Box<dyn BundleSource>,
    reload: tokio::sync::Mutex<()>,
}

impl Bundles {
    /// Reads and validates the source's bundle: the server does not start without one.
    pub(crate) fn open(source: Box<dyn BundleSource>) -> Result<Bundles, String> {
        let bytes = source.read()?;
        let active = ActiveBundle::load(bytes)
            .map_err(|error| format!("`{}` is not a valid bundle: {error}", source.describe()))?;
        Ok(Bundles {
            active: ArcSwap::from_pointee(active),
            source,
            reload: tokio::sync::Mutex::new(()),
        })
    }

    /// The bundle serving now; keep it for the whole request.
    pub(crate) fn current(&self) -> Arc<ActiveBundle> {
        self.active.load_full()
    }

    pub(crate) fn source(&self) -> &dyn BundleSource {
        self.source.as_ref()
    }

    /// Reads the source, validates it and swaps it in; on any failure the active bundle stays.
    /// `trigger` names what asked (`sighup`, `file`, `admin`), for logs and metrics.
    pub(crate) async fn reload(
        &self,
        trigger: &str,
        metrics: &Metrics,
    ) -> Result<Reloaded, String> {
        let _serialized = self.reload.lock().await;
        let read = self.source.read();
        let loaded = read.and_then(|bytes| {
            ActiveBundle::load(bytes).map_err(|error| {
                format!(
                    "`{}` is not a valid bundle: {error}",
                    self.source.describe()
                )
            })
        });
        let previous = self.current();
        match loaded {
            Ok(next) if next.hash == previous.hash => {
                metrics.reload(trigger, "unchanged");
                Ok(Reloaded::Unchanged {
                    hash: previous.hash.clone(),
                })
            }
            Ok(next) => {
                let to = next.hash.clone();
                metrics.bundle_activated(&next);
                self.active.store(Arc::new(next));
                metrics.reload(trigger, "swapped");
                tracing::info!(trigger, from = %previous.hash, to = %to, "bundle reloaded");
                Ok(Reloaded::Swapped {
                    from: previous.hash.clone(),
                    to,
                })
            }
            Err(error) => {
                metrics.reload(trigger, "refused");
                tracing::warn!(
                    trigger,
                    serving = %previous.hash,
                    error = %error,
                    "bundle reload refused; the last good bundle keeps serving"
                );
                Err(error)
            }
        }
    }
}

/// What the watcher compares between polls: cheap metadata first, the content hash only when
/// the metadata moved (a rewrite within one mtime tick still changes the length or the hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
}

impl FileStamp {
    pub(crate) fn of(path: &Path) -> Option<FileStamp> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(FileStamp {
            modified: metadata.modified().ok(),
            len: metadata.len(),
        })
    }
}
