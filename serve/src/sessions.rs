//! Recovery sessions: one [`Recovery`] engine per session id, written through the durable
//! store before anything is applied, rebuilt by replay after a restart, with the retry waits
//! their events schedule re-armed as timers.
//!
//! One event at a time per session (a per-session lock), in the order requests take it; any
//! number of sessions in parallel. The path of one event: parse (a bad one changes nothing),
//! append to the session's log in one transaction (a failed write answers 503 and changes
//! nothing), apply to the engine with the bundle serving now (the log names it), project the
//! waits, answer with every effect.
//!
//! Waits. The engine is sans-I/O: it never schedules anything itself. A session's pending wait
//! is what its event stream says the orchestrator scheduled and has not ended: the last
//! `retry_scheduled` notice (its deadline and attempt), until a `retry_ended` or an effect that
//! disarms the retry. The server arms a timer for it; at the deadline the wait turns `due`
//! (`GET /v1/waits`, `GET /v1/sessions/{id}`). After a restart the replay rebuilds every wait
//! and re-arms those still pending (reference F.3: only waits with a deadline; a past deadline
//! is due at once).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::SystemTime;

use faultline_acp::dialect::recovery_profile;
use faultline_recovery::notices::NoticeEffect;
use faultline_recovery::prompt::Outcome;
use faultline_recovery::{Effect, Recovery, RecoveryEvent};
use faultline_runtime::{Bundle, format_instant};
use serde::Serialize;
use serde_json::Value;

use crate::bundles::ActiveBundle;
use crate::metrics::Metrics;
use crate::store::{Append, Store, StoreError};

/// A retry the session's orchestrator scheduled and has not ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Wait {
    /// When the retry is due, RFC 3339 UTC.
    pub(crate) deadline: String,
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) reason: String,
    pub(crate) provider: String,
    /// Whether the deadline has passed (the timer fired).
    pub(crate) due: bool,
    #[serde(skip)]
    at: SystemTime,
}

/// One session's engine and what the API reports about it.
#[derive(Debug)]
pub(crate) struct Session {
    recovery: Recovery,
    provider_id: String,
    /// Events acknowledged so far: the next event's sequence number.
    events: u64,
    wait: Option<Wait>,
    /// Fences timers: a timer fires only for the wait of the generation it was armed for.
    wait_generation: u64,
    last_verdict: Option<Value>,
    last_bundle: Option<String>,
    /// Set when the session was deleted, for requests that still hold it.
    deleted: bool,
}

impl Session {
    fn new(provider_id: &str) -> Session {
        Session {
            recovery: Recovery::new(recovery_profile(provider_id)),
            provider_id: provider_id.to_owned(),
            events: 0,
            wait: None,
            wait_generation: 0,
            last_verdict: None,
            last_bundle: None,
            deleted: false,
        }
    }

    /// Applies one event and projects the wait; returns the effects and whether the wait
    /// changed (so a timer must be armed).
    fn apply(&mut self, bundle: &Bundle, hash: &str, event: RecoveryEvent) -> (Vec<Effect>, bool) {
        let scheduled = match &event {
            RecoveryEvent::RetryScheduled { notice } => Some(Wait {
                deadline: format_instant(notice.deadline),
                attempt: notice.attempt,
                max_attempts: notice.max_attempts,
                reason: notice.reason.clone(),
                provider: notice.provider.clone(),
                due: false,
                at: notice.deadline,
            }),
            _ => None,
        };
        let ended = matches!(event, RecoveryEvent::RetryEnded { .. });
        let effects = self.recovery.apply(bundle, event);
        let disarmed = effects
            .iter()
            .any(|effect| matches!(effect, Effect::Notice(NoticeEffect::DisarmRetry)));
        let before = self.wait.clone();
        if let Some(wait) = scheduled {
            self.wait = Some(wait);
        }
        if ended || disarmed {
            self.wait = None;
        }
        if let Some(verdict) = effects
            .iter()
            .find(|effect| matches!(effect, Effect::Evidence(Outcome::Failed(_))))
        {
            self.last_verdict = serde_json::to_value(verdict).ok();
        }
        self.events = self.events.saturating_add(1);
        self.last_bundle = Some(hash.to_owned());
        let changed = before != self.wait;
        if changed {
            self.wait_generation = self.wait_generation.wrapping_add(1);
        }
        (effects, changed)
    }

    /// What `GET /v1/sessions/{id}` answers.
    pub(crate) fn view(&self, id: &str) -> Value {
        serde_json::json!({
            "session": id,
            "provider_id": self.provider_id,
            "events": self.events,
            "bundle": self.last_bundle,
            "recorded_provider_diagnostic": self.recovery.recorded_provider_diagnostic(),
            "retractable": self.recovery.retractable().iter().map(|id| id.as_str()).collect::<Vec<_>>(),
            "last_verdict": self.last_verdict,
            "wait": self.wait,
        })
    }
}

/// Why an event was not acknowledged.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The session bound is reached; nothing was created.
    TooManySessions(usize),
    /// The event names another provider than the session's first event did.
    ProviderMismatch { session: String, given: String },
    /// The durable write failed: nothing was applied or scheduled.
    Store(StoreError),
    /// The session was deleted while the request waited for it.
    Deleted,
}

/// An acknowledged event's answer.
#[derive(Debug)]
pub(crate) struct Applied {
    pub(crate) sequence: u64,
    pub(crate) bundle: String,
    pub(crate) effects: Vec<Effect>,
    pub(crate) wait: Option<Wait>,
}

type Shared = Arc<tokio::sync::Mutex<Session>>;

/// Every session, the store they write through and the bound on their number.
#[derive(Debug)]
pub(crate) struct Sessions {
    store: Arc<dyn Store>,
    map: Mutex<HashMap<String, Shared>>,
    max_sessions: usize,
    metrics: Arc<Metrics>,
}

impl Sessions {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        max_sessions: usize,
        metrics: Arc<Metrics>,
    ) -> Sessions {
        Sessions {
            store,
            map: Mutex::new(HashMap::new()),
            max_sessions,
            metrics,
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Shared>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Shared> {
        self.map().get(id).cloned()
    }

    /// Rebuilds every stored session by replaying its log with the bundles it was applied
    /// with, and re-arms the pending waits. Returns how many sessions were restored.
    pub(crate) fn restore(self: &Arc<Self>) -> Result<usize, StoreError> {
        let stored = self.store.sessions()?;
        let mut bundles: BTreeMap<String, Option<Arc<Bundle>>> = BTreeMap::new();
        let mut restored = Vec::new();
        for (id, record) in stored {
            let mut session = Session::new(&record.provider_id);
            for entry in self.store.events(&id)? {
                let bundle = bundles
                    .entry(entry.bundle.clone())
                    .or_insert_with(|| {
                        let bytes = self.store.bundle(&entry.bundle).ok().flatten()?;
                        Bundle::from_bytes(&bytes).ok().map(Arc::new)
                    })
                    .clone();
                let event = serde_json::from_value::<RecoveryEvent>(entry.event);
                match (bundle, event) {
                    (Some(bundle), Ok(event)) => {
                        let _replayed = session.apply(&bundle, &entry.bundle, event);
                    }
                    (bundle, event) => {
                        // A log entry this build cannot read is an event lost: the session is
                        // poisoned, as the engine's contract says, rather than half-rebuilt.
                        tracing::error!(
                            session = %id,
                            bundle_missing = bundle.is_none(),
                            event_unreadable = event.is_err(),
                            "a logged event cannot be replayed; the session is poisoned"
                        );
                        let fallback = bundles.values().flatten().next().cloned();
                        if let Some(any) = fallback {
                            let _poisoned =
                                session.apply(&any, &entry.bundle, RecoveryEvent::EventUnreadable);
                        }
                    }
                }
            }
            restored.push((id, session));
        }
        let count = restored.len();
        let mut armed = Vec::new();
        {
            let mut map = self.map();
            for (id, session) in restored {
                let wait = session.wait.clone().filter(|wait| !wait.due);
                let generation = session.wait_generation;
                let shared = Arc::new(tokio::sync::Mutex::new(session));
                if let Some(wait) = wait {
                    armed.push((Arc::downgrade(&shared), generation, wait.at));
                }
                map.insert(id, shared);
            }
        }
        for (session, generation, at) in armed {
            arm(session, generation, at);
        }
        self.metrics.set_sessions(count);
        Ok(count)
    }

    /// Acknowledges one event: durable first, then applied.
    pub(crate) async fn append(
        &self,
        id: &str,
        provider_id: Option<String>,
        event: RecoveryEvent,
        active: &ActiveBundle,
    ) -> Result<Applied, Refusal> {
        let shared = {
            let mut map = self.map();
            let count = map.len();
            match map.get(id) {
                Some(shared) => shared.clone(),
                None if count >= self.max_sessions => {
                    return Err(Refusal::TooManySessions(self.max_sessions));
                }
                None => {
                    let shared = Arc::new(tokio::sync::Mutex::new(Session::new(
                        provider_id.as_deref().unwrap_or_default(),
                    )));
                    map.insert(id.to_owned(), shared.clone());
                    self.metrics.set_sessions(map.len());
                    shared
                }
            }
        };
        let mut session = shared.lock().await;
        if session.deleted {
            return Err(Refusal::Deleted);
        }
        if let Some(given) = provider_id.filter(|given| *given != session.provider_id) {
            return Err(Refusal::ProviderMismatch {
                session: session.provider_id.clone(),
                given,
            });
        }
        let logged = serde_json::to_value(&event).unwrap_or(Value::Null);
        let sequence = session.events;
        let store = self.store.clone();
        let append = {
            let session_id = id.to_owned();
            let provider = session.provider_id.clone();
            let hash = active.hash.clone();
            let bytes = active.bytes.clone();
            tokio::task::spawn_blocking(move || {
                store.append(&Append {
                    session: &session_id,
                    sequence,
                    provider_id: &provider,
                    bundle_hash: &hash,
                    bundle_bytes: &bytes,
                    event: &logged,
                })
            })
            .await
            .unwrap_or_else(|error| {
                Err(StoreError {
                    operation: "append",
                    message: error.to_string(),
                })
            })
        };
        if let Err(error) = append {
            self.metrics.store_error(error.operation);
            tracing::error!(session = %id, sequence, error = %error, "event not stored; nothing applied");
            if session.events == 0 {
                // The session was created for this event: it does not exist.
                session.deleted = true;
                let mut map = self.map();
                map.remove(id);
                self.metrics.set_sessions(map.len());
            }
            return Err(Refusal::Store(error));
        }
        let (effects, changed) = session.apply(&active.bundle, &active.hash, event);
        if changed && let Some(wait) = &session.wait {
            arm(Arc::downgrade(&shared), session.wait_generation, wait.at);
        }
        self.metrics.session_event();
        Ok(Applied {
            sequence,
            bundle: active.hash.clone(),
            effects,
            wait: session.wait.clone(),
        })
    }

    /// Deletes a session and its log; `Ok(false)` when there was none.
    pub(crate) async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let shared = self.get(id);
        let guard = match &shared {
            Some(shared) => Some(shared.lock().await),
            None => None,
        };
        let store = self.store.clone();
        let owned = id.to_owned();
        let removed = tokio::task::spawn_blocking(move || store.delete(&owned))
            .await
            .unwrap_or_else(|error| {
                Err(StoreError {
                    operation: "delete",
                    message: error.to_string(),
                })
            })
            .inspect_err(|error| self.metrics.store_error(error.operation))?;
        if let Some(mut session) = guard {
            session.deleted = true;
            session.wait = None;
            session.wait_generation = session.wait_generation.wrapping_add(1);
        }
        let mut map = self.map();
        let held = map.remove(id).is_some();
        self.metrics.set_sessions(map.len());
        Ok(removed || held)
    }

    /// Every pending wait, by session id, and the counts for the metrics.
    pub(crate) async fn waits(&self) -> Vec<(String, Wait)> {
        let sessions: Vec<(String, Shared)> = self
            .map()
            .iter()
            .map(|(id, shared)| (id.clone(), shared.clone()))
            .collect();
        let mut waits = Vec::new();
        for (id, shared) in sessions {
            if let Some(wait) = shared.lock().await.wait.clone() {
                waits.push((id, wait));
            }
        }
        waits.sort_by(|a, b| a.1.at.cmp(&b.1.at).then_with(|| a.0.cmp(&b.0)));
        let due = waits.iter().filter(|(_, wait)| wait.due).count();
        self.metrics.set_waits(waits.len().saturating_sub(due), due);
        waits
    }
}

/// Arms the timer of a session's wait: at `at`, the wait turns due if it is still the wait
/// of `generation` (a later event, a delete or a newer schedule fences it off).
fn arm(session: Weak<tokio::sync::Mutex<Session>>, generation: u64, at: SystemTime) {
    let delay = at.duration_since(SystemTime::now()).unwrap_or_default();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let Some(session) = session.upgrade() else {
            return;
        };
        let mut session = session.lock().await;
        if session.wait_generation == generation
            && !session.deleted
            && let Some(wait) = session.wait.as_mut()
        {
            wait.due = true;
        }
    });
}
