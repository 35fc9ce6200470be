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
//!
//! Decisions. A session whose first event names a decision `context` runs a deciding engine
//! (`Recovery::deciding`, docs/policy.md): its answers carry each failure's decision and the
//! route effects of the policy's state machine. The state machine asks for a durable write
//! before it releases a timer or a retry (`Persist`); the server is that store: the event that
//! asked is already in the log (the state is its replay), so the server logs a
//! `route_write_succeeded` event after it, applies it and answers with both events' effects. If
//! that write fails, the engine is told `route_write_failed` (its state goes back, nothing is
//! scheduled) and the answer says `"route_write": "failed"`; after a restart a write the log
//! never confirmed counts as failed in the same way. A route waiting with a deadline (a retry
//! delay or a validated reset) is the session's wait (`kind: "route"`, with the `generation` to
//! name in `route_timer_fired` when it is due), re-armed after a restart like a retry notice's.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::SystemTime;

use faultline_acp::dialect::recovery_profile;
use faultline_recovery::notices::NoticeEffect;
use faultline_recovery::prompt::Outcome;
use faultline_recovery::{Effect, Recovery, RecoveryEvent};
use faultline_runtime::{Bundle, DecisionContext, format_instant};
use serde::Serialize;
use serde_json::Value;

use crate::bundles::ActiveBundle;
use crate::metrics::Metrics;
use crate::session_api::Provided;
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
    /// What scheduled it: a retry notice the orchestrator scheduled (`retry_notice`) or the
    /// recovery policy's route state (`route`).
    pub(crate) kind: WaitKind,
    /// For a route wait, the generation its `route_timer_fired` event names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) generation: Option<u64>,
    /// Whether the deadline has passed (the timer fired).
    pub(crate) due: bool,
    #[serde(skip)]
    at: SystemTime,
}

/// What scheduled a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WaitKind {
    RetryNotice,
    Route,
}

/// One session's engine and what the API reports about it.
#[derive(Debug)]
pub(crate) struct Session {
    recovery: Recovery,
    provider_id: String,
    context: Option<DecisionContext>,
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
    fn new(provider_id: &str, context: Option<DecisionContext>) -> Session {
        let profile = recovery_profile(provider_id);
        Session {
            recovery: match context {
                Some(context) => Recovery::deciding(profile, context),
                None => Recovery::new(profile),
            },
            provider_id: provider_id.to_owned(),
            context,
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
    /// `logged`: the hash of the bundle the logged event applies with; `None` for what the
    /// server tells the engine without logging it (a durable write that failed).
    fn apply(
        &mut self,
        bundle: &Bundle,
        logged: Option<&str>,
        event: RecoveryEvent,
    ) -> (Vec<Effect>, bool) {
        let scheduled = match &event {
            RecoveryEvent::RetryScheduled { notice } => Some(Wait {
                deadline: format_instant(notice.deadline),
                attempt: notice.attempt,
                max_attempts: notice.max_attempts,
                reason: notice.reason.clone(),
                provider: notice.provider.clone(),
                kind: WaitKind::RetryNotice,
                generation: None,
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
        self.project_route_wait();
        if let Some(verdict) = effects
            .iter()
            .find(|effect| matches!(effect, Effect::Evidence(Outcome::Failed(_))))
        {
            self.last_verdict = serde_json::to_value(verdict).ok();
        }
        if let Some(hash) = logged {
            self.events = self.events.saturating_add(1);
            self.last_bundle = Some(hash.to_owned());
        }
        let changed = before != self.wait;
        if changed {
            self.wait_generation = self.wait_generation.wrapping_add(1);
        }
        (effects, changed)
    }

    /// A deciding session's route waiting with a deadline is its wait, unless a retry notice
    /// the orchestrator scheduled is (the short ladder runs on notices, the route on the
    /// policy's state: one session is in one of them at a time).
    fn project_route_wait(&mut self) {
        if self
            .wait
            .as_ref()
            .is_some_and(|wait| wait.kind == WaitKind::RetryNotice)
        {
            return;
        }
        let route = self.recovery.route_state().and_then(|state| {
            let deadline = state.deadline()?;
            state.status().is_waiting().then(|| Wait {
                deadline: format_instant(deadline),
                attempt: state.retry_ordinal(),
                max_attempts: 0,
                reason: state.failure_code().unwrap_or_default().to_owned(),
                provider: self.provider_id.clone(),
                kind: WaitKind::Route,
                generation: Some(state.generation()),
                due: false,
                at: deadline,
            })
        });
        let unchanged = match (&self.wait, &route) {
            (Some(held), Some(new)) => {
                held.generation == new.generation && held.deadline == new.deadline
            }
            (None, None) => true,
            _ => false,
        };
        if !unchanged {
            self.wait = route;
        }
    }

    /// Whether the deciding engine holds effects until its state is durable.
    fn route_write_pending(&self) -> bool {
        self.recovery
            .route_state()
            .is_some_and(|state| state.write_pending())
    }

    /// What `GET /v1/sessions/{id}` answers.
    pub(crate) fn view(&self, id: &str) -> Value {
        serde_json::json!({
            "session": id,
            "provider_id": self.provider_id,
            "context": self.context.map(|context| context.as_str()),
            "route": self.recovery.route_state().map(|state| serde_json::json!({
                "status": state.status(),
                "generation": state.generation(),
                "deadline": state.deadline().map(format_instant),
            })),
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
    /// The event names another decision context than the session's first event did.
    ContextMismatch {
        session: Option<&'static str>,
        given: &'static str,
    },
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
    /// For a deciding session whose state asked for a durable write: `stored` or `failed`.
    pub(crate) route_write: Option<&'static str>,
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
            let context = record
                .context
                .as_deref()
                .and_then(DecisionContext::from_name);
            let mut session = Session::new(&record.provider_id, context);
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
                        let _replayed = session.apply(&bundle, Some(&entry.bundle), event);
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
                            let _poisoned = session.apply(
                                &any,
                                Some(&entry.bundle),
                                RecoveryEvent::EventUnreadable,
                            );
                        }
                    }
                }
            }
            // A durable write the log never confirmed did not happen (F.3: nothing is
            // scheduled when the write fails), as the live session was told.
            if session.route_write_pending()
                && let Some(bundle) = session
                    .last_bundle
                    .clone()
                    .and_then(|hash| bundles.get(&hash).cloned().flatten())
            {
                let _failed = session.apply(&bundle, None, RecoveryEvent::RouteWriteFailed);
            }
            self.restart_route(&id, &mut session, &bundles);
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

    /// Tells a deciding session whose route is not idle that the server restarted
    /// (`route_restarted`, logged like any event, and its durable write confirmed): F.3 re-arms a
    /// wait with a deadline and leaves a `retrying` route for manual recovery.
    fn restart_route(
        &self,
        id: &str,
        session: &mut Session,
        bundles: &BTreeMap<String, Option<Arc<Bundle>>>,
    ) {
        let idle = session
            .recovery
            .route_state()
            .is_none_or(|state| state.status() == faultline_policy::RouteStatus::Active);
        let Some(hash) = session.last_bundle.clone() else {
            return;
        };
        let Some(bundle) = bundles.get(&hash).cloned().flatten() else {
            return;
        };
        if idle {
            return;
        }
        let restarted = RecoveryEvent::RouteRestarted {
            at: format_instant(SystemTime::now()),
        };
        if self.log_now(id, session, &restarted, &hash).is_err() {
            return;
        }
        let _restarted = session.apply(&bundle, Some(&hash), restarted);
        if session.route_write_pending() {
            let confirmation = RecoveryEvent::RouteWriteSucceeded;
            if self.log_now(id, session, &confirmation, &hash).is_ok() {
                let _stored = session.apply(&bundle, Some(&hash), confirmation);
            } else {
                let _failed = session.apply(&bundle, None, RecoveryEvent::RouteWriteFailed);
            }
        }
    }

    /// [`Sessions::log`] on the calling thread, for the restore at start-up.
    fn log_now(
        &self,
        id: &str,
        session: &Session,
        event: &RecoveryEvent,
        hash: &str,
    ) -> Result<(), StoreError> {
        let logged = serde_json::to_value(event).unwrap_or(Value::Null);
        let appended = self.store.append(&Append {
            session: id,
            sequence: session.events,
            provider_id: &session.provider_id,
            context: session.context.map(|context| context.as_str()),
            bundle_hash: hash,
            // The bundle is in the store already: the session's last event was applied with it.
            bundle_bytes: &[],
            event: &logged,
        });
        if let Err(error) = &appended {
            self.metrics.store_error(error.operation);
            tracing::error!(session = %id, error = %error, "restart not stored; nothing re-armed");
        }
        appended
    }

    /// Acknowledges one event: durable first, then applied.
    pub(crate) async fn append(
        &self,
        id: &str,
        provided: Provided,
        active: &ActiveBundle,
    ) -> Result<Applied, Refusal> {
        let Provided {
            provider: provider_id,
            context,
            event,
        } = provided;
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
                        context,
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
        if let Some(given) = context.filter(|given| Some(*given) != session.context) {
            return Err(Refusal::ContextMismatch {
                session: session.context.map(|context| context.as_str()),
                given: given.as_str(),
            });
        }
        let sequence = session.events;
        if let Err(error) = self.log(id, &session, &event, active).await {
            if session.events == 0 {
                // The session was created for this event: it does not exist.
                session.deleted = true;
                let mut map = self.map();
                map.remove(id);
                self.metrics.set_sessions(map.len());
            }
            return Err(Refusal::Store(error));
        }
        let (mut effects, mut changed) = session.apply(&active.bundle, Some(&active.hash), event);
        let mut route_write = None;
        if session.route_write_pending() {
            // The state machine holds its effects until its state is durable: the event that
            // changed it is in the log, so logging the confirmation makes the state durable.
            let confirmation = RecoveryEvent::RouteWriteSucceeded;
            let (more, more_changed) = match self.log(id, &session, &confirmation, active).await {
                Ok(()) => {
                    route_write = Some("stored");
                    session.apply(&active.bundle, Some(&active.hash), confirmation)
                }
                Err(_) => {
                    route_write = Some("failed");
                    session.apply(&active.bundle, None, RecoveryEvent::RouteWriteFailed)
                }
            };
            effects.extend(more);
            changed |= more_changed;
        }
        if changed && let Some(wait) = &session.wait {
            arm(Arc::downgrade(&shared), session.wait_generation, wait.at);
        }
        self.metrics.session_event();
        Ok(Applied {
            sequence,
            bundle: active.hash.clone(),
            effects,
            wait: session.wait.clone(),
            route_write,
        })
    }

    /// Appends one event to the session's log, durably, as the session's next event.
    async fn log(
        &self,
        id: &str,
        session: &Session,
        event: &RecoveryEvent,
        active: &ActiveBundle,
    ) -> Result<(), StoreError> {
        let logged = serde_json::to_value(event).unwrap_or(Value::Null);
        let sequence = session.events;
        let store = self.store.clone();
        let session_id = id.to_owned();
        let provider = session.provider_id.clone();
        let context = session.context.map(|context| context.as_str());
        let hash = active.hash.clone();
        let bytes = active.bytes.clone();
        let appended = tokio::task::spawn_blocking(move || {
            store.append(&Append {
                session: &session_id,
                sequence,
                provider_id: &provider,
                context,
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
        });
        if let Err(error) = &appended {
            self.metrics.store_error(error.operation);
            tracing::error!(session = %id, sequence, error = %error, "event not stored; nothing applied");
        }
        appended
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
