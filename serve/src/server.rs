//! Connections, signals and the bundle-file watcher.
//!
//! Connections are served by hyper's HTTP/1.1 connection directly (not `axum::serve`) so that
//! the header buffer (`max_buf_size`: header bytes per request) and the time to receive a
//! request's headers (`header_read_timeout`: a slow client cannot hold a connection by
//! trickling headers) are bounded, and connections are counted against a bound (a semaphore:
//! one more waits in the kernel's backlog instead of costing a task).

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use crate::api::App;
use crate::bundles::FileStamp;

/// A bound socket.
#[derive(Debug)]
pub(crate) enum Listener {
    Tcp(tokio::net::TcpListener),
    Unix(tokio::net::UnixListener),
}

/// How long a connection may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves until `stop` turns true, then lets open connections finish (for at most the
/// request timeout).
pub(crate) async fn serve(
    listener: Listener,
    router: axum::Router,
    app: Arc<App>,
    mut stop: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    let permits = Arc::new(tokio::sync::Semaphore::new(app.limits.max_connections));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        // hyper refuses buffers under 8 KiB.
        .max_buf_size(app.limits.max_header_bytes.max(8192));
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = stop.changed() => break,
        };
        let accepted = tokio::select! {
            accepted = accept(&listener) => accepted,
            _ = stop.changed() => break,
        };
        let io = match accepted {
            Ok(io) => io,
            Err(error) => {
                // Out of descriptors, or a connection reset before it was accepted: pause
                // briefly rather than spin.
                tracing::warn!(error = %error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = TowerToHyperService::new(router.clone());
        let connection = builder.serve_connection(TokioIo::new(io), service);
        let watched = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = watched.await {
                tracing::debug!(error = %error, "connection ended with an error");
            }
            drop(permit);
        });
    }
    let drain = app.limits.request_timeout;
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(drain) => {
            tracing::warn!("connections still open after the drain time were dropped");
        }
    }
}

/// Something a connection can be served on.
trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

async fn accept(listener: &Listener) -> std::io::Result<Box<dyn Io>> {
    match listener {
        Listener::Tcp(listener) => {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            Ok(Box::new(stream))
        }
        Listener::Unix(listener) => {
            let (stream, _) = listener.accept().await?;
            Ok(Box::new(stream))
        }
    }
}

/// SIGHUP reloads; SIGTERM and SIGINT stop.
pub(crate) async fn signals(app: Arc<App>, stop: watch::Sender<bool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut hangup), Ok(mut terminate), Ok(mut interrupt)) = (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers: SIGHUP will not reload");
        return;
    };
    loop {
        tokio::select! {
            _ = hangup.recv() => {
                let _ = app.bundles.reload("sighup", &app.metrics).await;
            }
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
        }
    }
    tracing::info!("stopping: open requests finish first");
    let _ = stop.send(true);
}

/// Polls the bundle file: when its modification time or length moves, reload (which compares
/// content hashes, so a touch without a change swaps nothing).
pub(crate) async fn watch_file(app: Arc<App>, every: Duration, mut stop: watch::Receiver<bool>) {
    let Some(path) = app
        .bundles
        .source()
        .watched_file()
        .map(std::path::Path::to_path_buf)
    else {
        return;
    };
    let mut last = FileStamp::of(&path);
    // The first poll comes one interval from now: `interval` would tick at once, and a file
    // rewritten between start-up and that tick would be reloaded by the watcher, so that a
    // reload asked for explicitly a moment later found nothing to do.
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = stop.changed() => return,
        }
        let stamp = FileStamp::of(&path);
        if stamp != last && stamp.is_some() {
            last = stamp;
            let _ = app.bundles.reload("file", &app.metrics).await;
        }
    }
}
