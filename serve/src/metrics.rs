//! `GET /metrics`: the server's counters in Prometheus' text format, from the Prometheus
//! project's own Rust client (`prometheus-client`: typed label sets, OpenMetrics-conformant
//! text, no global registry to collide with an embedding process's).
//!
//! Labels stay bounded whatever the input: routes are the router's templates (never a raw
//! path), codes come from the active bundle's closed list, outcomes and triggers are fixed
//! words.

use std::time::{Duration, UNIX_EPOCH};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::bundles::ActiveBundle;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassificationLabels {
    code: String,
    confidence: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BundleLabels {
    hash: String,
    catalogue_version: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReloadLabels {
    trigger: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    operation: &'static str,
}

fn latency_histogram() -> Histogram {
    // 10 µs to ~10 s.
    Histogram::new(exponential_buckets(0.000_01, 2.5, 16))
}

/// Every metric the server keeps.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    classifications: Family<ClassificationLabels, Counter>,
    bundle: Family<BundleLabels, Gauge>,
    bundle_loaded: Gauge<f64, std::sync::atomic::AtomicU64>,
    reloads: Family<ReloadLabels, Counter>,
    sessions: Gauge,
    session_events: Counter,
    waits_armed: Gauge,
    waits_due: Gauge,
    store_errors: Family<OperationLabels, Counter>,
    panics: Counter,
}

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("faultline");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route template, method and status",
            requests.clone(),
        );
        let latency: Family<RouteLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's arrival to its response head, by route template",
            latency.clone(),
        );
        let classifications = Family::<ClassificationLabels, Counter>::default();
        registry.register(
            "classifications",
            "Classification answers, by code, confidence and outcome (classified, or error for a line that could not be read)",
            classifications.clone(),
        );
        let bundle = Family::<BundleLabels, Gauge>::default();
        registry.register(
            "bundle_info",
            "The active bundle: 1 for its content hash and catalogue version",
            bundle.clone(),
        );
        let bundle_loaded = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        registry.register(
            "bundle_loaded_timestamp_seconds",
            "When the active bundle was loaded, in seconds since the Unix epoch",
            bundle_loaded.clone(),
        );
        let reloads = Family::<ReloadLabels, Counter>::default();
        registry.register(
            "bundle_reloads",
            "Bundle reloads, by trigger (sighup, file, admin) and outcome (swapped, unchanged, refused)",
            reloads.clone(),
        );
        let sessions = Gauge::default();
        registry.register(
            "sessions",
            "Recovery sessions held (in memory and in the store)",
            sessions.clone(),
        );
        let session_events = Counter::default();
        registry.register(
            "session_events",
            "Session events acknowledged (durably stored, then applied)",
            session_events.clone(),
        );
        let waits_armed = Gauge::default();
        registry.register(
            "waits_armed",
            "Retry waits with a timer armed (deadline not reached)",
            waits_armed.clone(),
        );
        let waits_due = Gauge::default();
        registry.register(
            "waits_due",
            "Retry waits whose deadline has passed and that no later event has ended",
            waits_due.clone(),
        );
        let store_errors = Family::<OperationLabels, Counter>::default();
        registry.register(
            "store_errors",
            "Durable store operations that failed, by operation",
            store_errors.clone(),
        );
        let panics = Counter::default();
        registry.register(
            "handler_panics",
            "Requests whose handler panicked (answered 500 with an id)",
            panics.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            classifications,
            bundle,
            bundle_loaded,
            reloads,
            sessions,
            session_events,
            waits_armed,
            waits_due,
            store_errors,
            panics,
        }
    }

    /// The text exposition.
    pub(crate) fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }

    pub(crate) fn request(&self, route: &str, method: &str, status: u16, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.to_owned(),
                method: method.to_owned(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                route: route.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    pub(crate) fn classified(&self, code: &str, confidence: &str) {
        self.classifications
            .get_or_create(&ClassificationLabels {
                code: code.to_owned(),
                confidence: confidence.to_owned(),
                outcome: "classified",
            })
            .inc();
    }

    pub(crate) fn classification_error(&self) {
        self.classifications
            .get_or_create(&ClassificationLabels {
                code: String::new(),
                confidence: String::new(),
                outcome: "error",
            })
            .inc();
    }

    pub(crate) fn bundle_activated(&self, active: &ActiveBundle) {
        self.bundle.clear();
        self.bundle
            .get_or_create(&BundleLabels {
                hash: active.hash.clone(),
                catalogue_version: active.bundle.header().catalogue_version().to_owned(),
            })
            .set(1);
        let loaded = active
            .loaded_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        self.bundle_loaded.set(loaded.as_secs_f64());
    }

    pub(crate) fn reload(&self, trigger: &str, outcome: &'static str) {
        self.reloads
            .get_or_create(&ReloadLabels {
                trigger: trigger.to_owned(),
                outcome,
            })
            .inc();
    }

    pub(crate) fn set_sessions(&self, count: usize) {
        self.sessions.set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    pub(crate) fn session_event(&self) {
        self.session_events.inc();
    }

    pub(crate) fn set_waits(&self, armed: usize, due: usize) {
        self.waits_armed
            .set(i64::try_from(armed).unwrap_or(i64::MAX));
        self.waits_due.set(i64::try_from(due).unwrap_or(i64::MAX));
    }

    pub(crate) fn store_error(&self, operation: &'static str) {
        self.store_errors
            .get_or_create(&OperationLabels { operation })
            .inc();
    }

    pub(crate) fn panicked(&self) {
        self.panics.inc();
    }
}
