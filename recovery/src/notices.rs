//! The retry-notice lifecycle (AC .9–.11, .25) as store effects.
//!
//! While the backend owns an interactive transient retry (reference §F.5), the session's chat
//! shows one retry notice: reason, provider, attempt count, deadline and a Cancel action
//! (AC .9). The notice is a *projection* of that ownership, so it must exist exactly while the
//! ownership does:
//!
//! - one current notice per retry loop, updated in place on every attempt; moving from attempt
//!   N to N+1 never retires it (AC .25);
//! - when ownership ends (success, exhaustion, a terminal failure, a stop, shutdown or an
//!   authorised cancel) every notice marked `retrying` is *deleted*, never flipped to
//!   `retrying: false`, which would leave a stale warning with a live Cancel action (AC .10);
//! - duplicates left by earlier failures consolidate on the next successful write, and a
//!   notice that cannot be read or updated never leads to creating another one (AC .25);
//! - an authorised cancel always retires notices, even after the loop ended; cancelling an
//!   active loop also disarms it and offers Resume and Start fresh. Denied and foreign
//!   task–session pairs learn nothing, not even whether retry state exists (AC .11);
//! - storage failures are reported and swallowed: they never fail the surrounding transition,
//!   and a later cleanup retries what is left (AC .10).
//!
//! The lifecycle is one of the engine's private parts, per session. It is sans-I/O and
//! deterministic: no clocks, threads or storage. The orchestrator feeds the engine
//! ([`crate::Recovery`]) retry decisions, endings, cancel requests and the results of store
//! operations, and applies the [`NoticeEffect`]s it returns, in order. Because the lifecycle
//! holds no lock while the store works, durable message operations can never run under the
//! orchestrator's runtime-state mutex (§F.6).
//!
//! # The store protocol
//!
//! At most one store operation per session is in flight: after the lifecycle emits
//! [`NoticeEffect::ListNotices`], [`NoticeEffect::WriteNotice`] or
//! [`NoticeEffect::DeleteNotices`], it emits no other store operation until the matching result
//! event arrives ([`RecoveryEvent::NoticesListed`](crate::RecoveryEvent::NoticesListed) or [`RecoveryEvent::NoticeListFailed`](crate::RecoveryEvent::NoticeListFailed),
//! [`RecoveryEvent::NoticeWritten`](crate::RecoveryEvent::NoticeWritten) or [`RecoveryEvent::NoticeWriteFailed`](crate::RecoveryEvent::NoticeWriteFailed), [`RecoveryEvent::NoticesDeleted`](crate::RecoveryEvent::NoticesDeleted)). Requests
//! that arrive meanwhile are remembered and coalesced: a burst of attempts writes only the
//! latest one, and a listing taken for a write serves a retirement requested before it
//! returned (nothing was written in between, since the lifecycle is the notices' only writer).
//! A result nobody asked for is ignored.
//!
//! Every write is preceded by a fresh listing, because the listing is what lets a write update
//! the existing notice instead of adding one, and what finds the duplicates to consolidate.

use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// The store's identifier of one transcript message (a retry notice or any other message).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NoticeId(String);

impl NoticeId {
    /// Wraps the store's identifier.
    pub fn new(id: impl Into<String>) -> Self {
        NoticeId(id.into())
    }

    /// The store's identifier.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NoticeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Identifies one retry loop of a session: the lifecycle numbers loops from 1 as they start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct LoopId(u64);

impl LoopId {
    /// The loop's number within its session, starting at 1.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// What a retry notice shows for one scheduled attempt (AC .9).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notice {
    /// Why the retry happens, as the user reads it (e.g. "Provider overloaded").
    pub reason: String,
    /// The provider being retried, already sanitised for display.
    pub provider: String,
    /// The attempt this notice announces, starting at 1.
    pub attempt: u32,
    /// The loop's attempt budget, for "attempt 2/5".
    pub max_attempts: u32,
    /// When the attempt fires; the UI counts down to it. The orchestrator's clock decides it.
    /// Written as an RFC 3339 instant.
    #[serde(with = "rfc3339")]
    pub deadline: SystemTime,
}

/// The Cancel action a notice offers.
///
/// It names the loop it was offered for, so logs and viewers can tell banners of different
/// loops apart. Cancelling is deliberately not fenced on it: a cancel is idempotent and always
/// retires whatever notices exist (§F.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CancelAction {
    /// The loop the Cancel action stops.
    pub loop_id: LoopId,
}

/// How the backend's ownership of a session's retry ended, other than by a cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// A normal turn completed successfully, whether or not it was a retried attempt. It looks
    /// for notices only if a retry loop is active or an earlier cleanup was left incomplete,
    /// so ordinary turns cost no store read.
    TurnSucceeded,
    /// The loop ran out of attempts.
    Exhausted,
    /// A terminal (non-retryable) failure ended the turn.
    Terminal,
    /// The user or the coordinator stopped the session.
    Stopped,
    /// The orchestrator is shutting down.
    Shutdown,
}

/// The orchestrator's verdict on whether the requester owns the task–session pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Authorization {
    /// The requester may act on this session.
    Granted,
    /// The requester may not act on this session.
    Denied,
    /// The session does not belong to the named task (or does not exist).
    Foreign,
}

/// How a store listing marks one message of the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Marker {
    /// Its metadata carries boolean `retrying: true`: a retry notice.
    Retrying,
    /// Its metadata is readable and is not a live retry notice: an unrelated message. The
    /// lifecycle never writes or deletes it.
    NotRetrying,
    /// Its metadata could not be read, so it may be a retry notice. The lifecycle never deletes
    /// or overwrites it, and while one is listed and no readable notice is, it creates none.
    Unreadable,
}

/// One message of a store listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListedNotice {
    /// The message (`notice_id` in the event log).
    #[serde(rename = "notice_id")]
    pub id: NoticeId,
    /// What its metadata says.
    pub marker: Marker,
}

/// Where a notice write goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteTarget {
    /// Create the notice: the listing showed none.
    Create,
    /// Overwrite this existing notice in place.
    Update(NoticeId),
}

/// An input to a session's [`NoticeLifecycle`]; the engine builds it from the orchestrator's
/// retry and store events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoticeEvent {
    /// The orchestrator took (or kept) ownership of a transient retry and scheduled this
    /// attempt. The first one after an ending starts a new loop.
    AttemptScheduled(Notice),
    /// Ownership ended, or a normal turn succeeded.
    Ended(Ending),
    /// A request to cancel the session's retry, already authorised (or not) by the caller.
    Cancel(Authorization),
    /// The store listed the session's messages, in transcript order.
    Listed(Vec<ListedNotice>),
    /// The store could not list the session's messages.
    ListFailed,
    /// The store wrote the notice; for [`WriteTarget::Create`] this is the new id.
    Written(NoticeId),
    /// The store could not write the notice.
    WriteFailed,
    /// The store tried every requested deletion; these ones failed.
    Deleted {
        /// The ids that could not be deleted (unknown ids are ignored).
        failed: Vec<NoticeId>,
    },
}

/// The answer to a cancel request, for the requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum CancelReply {
    /// An active loop was cancelled; manual recovery is offered.
    Cancelled,
    /// No loop was active: the request only cleaned up notices ("no active cancellation").
    NoActiveRetry,
    /// The pair was denied or foreign. The same answer whatever the session's state.
    Refused,
}

/// A storage problem the lifecycle swallowed (AC .10, .25). None of them fails the surrounding
/// transition: the orchestrator logs them, and a later cleanup or attempt retries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "report", rename_all = "snake_case")]
pub enum Report {
    /// The listing failed, so nothing was written or deleted this time.
    ListFailed,
    /// The notice write failed. No other notice was created in its place.
    WriteFailed,
    /// No readable notice was listed but these unreadable messages were, and one of them may be
    /// the current notice, so no notice was created.
    NoticeUnreadable {
        /// The unreadable messages, in listing order.
        ids: Vec<NoticeId>,
    },
    /// These notices could not be deleted; a later cleanup retries them.
    CleanupIncomplete {
        /// The notices still in the store, in the order their deletion was requested.
        remaining: Vec<NoticeId>,
    },
}

/// A decision for the orchestrator to apply, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum NoticeEffect {
    /// List the session's messages with their [`Marker`]s; answer with [`RecoveryEvent::NoticesListed`](crate::RecoveryEvent::NoticesListed)
    /// or [`RecoveryEvent::NoticeListFailed`](crate::RecoveryEvent::NoticeListFailed).
    ListNotices,
    /// Write the notice with boolean `retrying: true`, its content and the Cancel action;
    /// answer with [`RecoveryEvent::NoticeWritten`](crate::RecoveryEvent::NoticeWritten) or [`RecoveryEvent::NoticeWriteFailed`](crate::RecoveryEvent::NoticeWriteFailed).
    WriteNotice {
        /// Create, or update which notice in place.
        target: WriteTarget,
        /// What it shows.
        notice: Notice,
        /// The Cancel action it offers.
        cancel: CancelAction,
    },
    /// Delete these notices (publishing each deletion), trying every one even if some fail;
    /// answer with [`RecoveryEvent::NoticesDeleted`](crate::RecoveryEvent::NoticesDeleted).
    DeleteNotices {
        /// The notices, in listing order, without duplicates.
        ids: Vec<NoticeId>,
    },
    /// Cancel the armed retry timer: the loop is over.
    DisarmRetry,
    /// Post the manual recovery message offering Resume and Start fresh.
    ShowManualRecovery,
    /// Answer the cancel request.
    Reply(CancelReply),
    /// Log a swallowed storage problem.
    Report(Report),
}

/// One session's retry-notice lifecycle. See the [module documentation](self).
///
/// Comparable and clonable so a test can check that an event changed nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NoticeLifecycle {
    /// How many loops this session has started; the last one's [`LoopId`].
    loops_started: u64,
    /// The in-memory retry entry: present exactly while the backend owns a retry.
    active: Option<ActiveLoop>,
    /// A retirement was requested and no listing has served it yet.
    retire_owed: bool,
    /// The last retirement could not finish, so notices may remain; a later successful turn
    /// looks for them too, not only stop, terminal and cancel paths.
    leftovers: bool,
    /// The store operation in flight, if any.
    pending: Option<Pending>,
}

/// The in-memory retry entry of the active loop.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ActiveLoop {
    id: LoopId,
    /// The latest scheduled attempt: the only one worth writing.
    notice: Notice,
    /// The latest attempt has not been written (or given up on) yet.
    write_owed: bool,
    /// The notice this loop last wrote successfully: preferred as the update target.
    current: Option<NoticeId>,
}

/// The store operation in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pending {
    List,
    Write {
        loop_id: LoopId,
        /// The other `retrying` notices of the listing, deleted once the write succeeds.
        extras: Vec<NoticeId>,
    },
    Delete {
        ids: Vec<NoticeId>,
        /// A retirement rather than a consolidation: its outcome decides `leftovers`.
        retiring: bool,
    },
}

impl NoticeLifecycle {
    /// A session with no retry state.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Applies one event and returns the effects to apply, in order.
    ///
    /// A denied or foreign [`NoticeEvent::Cancel`] returns exactly
    /// `[Reply(CancelReply::Refused)]` and changes nothing, whatever the state, so a fresh
    /// lifecycle answers an unknown session identically.
    #[must_use = "the effects are the decisions: dropping them loses writes and deletions"]
    pub(crate) fn handle(&mut self, event: NoticeEvent) -> Vec<NoticeEffect> {
        let mut out = Vec::new();
        match event {
            NoticeEvent::AttemptScheduled(notice) => self.schedule(notice),
            NoticeEvent::Ended(ending) => {
                // An ordinary successful turn has nothing to retire unless a loop (or an
                // unfinished cleanup) says so; every other ending always looks (§F.6).
                if ending != Ending::TurnSucceeded || self.active.is_some() || self.leftovers {
                    self.active = None;
                    self.retire_owed = true;
                }
            }
            NoticeEvent::Cancel(Authorization::Granted) => {
                let was_active = self.active.take().is_some();
                self.retire_owed = true;
                if was_active {
                    // Stop the timer before anything else so no attempt fires mid-cancel.
                    out.push(NoticeEffect::DisarmRetry);
                }
                self.start_next(&mut out);
                if was_active {
                    out.push(NoticeEffect::ShowManualRecovery);
                    out.push(NoticeEffect::Reply(CancelReply::Cancelled));
                } else {
                    out.push(NoticeEffect::Reply(CancelReply::NoActiveRetry));
                }
                return out;
            }
            NoticeEvent::Cancel(Authorization::Denied | Authorization::Foreign) => {
                // Checked before any state is read, so the answer cannot depend on it.
                return vec![NoticeEffect::Reply(CancelReply::Refused)];
            }
            NoticeEvent::Listed(listing) => {
                if self.pending == Some(Pending::List) {
                    self.pending = None;
                    self.on_listed(&listing, &mut out);
                }
            }
            NoticeEvent::ListFailed => {
                if self.pending == Some(Pending::List) {
                    self.pending = None;
                    out.push(NoticeEffect::Report(Report::ListFailed));
                    // Give up on both until the next trigger: retrying at once would spin on a
                    // broken store. A failed retirement is remembered as leftovers.
                    if self.retire_owed {
                        self.retire_owed = false;
                        self.leftovers = true;
                    }
                    if let Some(active) = self.active.as_mut() {
                        active.write_owed = false;
                    }
                }
            }
            NoticeEvent::Written(id) => {
                match self.pending.take() {
                    Some(Pending::Write { loop_id, extras }) => {
                        self.on_written(loop_id, extras, id, &mut out);
                    }
                    // Unsolicited: whatever is in flight stays in flight.
                    other => self.pending = other,
                }
            }
            NoticeEvent::WriteFailed => {
                if let Some(Pending::Write { .. }) = self.pending {
                    self.pending = None;
                    // Never fall back to creating: the notice may still be there (AC .25).
                    out.push(NoticeEffect::Report(Report::WriteFailed));
                }
            }
            NoticeEvent::Deleted { failed } => match self.pending.take() {
                Some(Pending::Delete { ids, retiring }) => {
                    let remaining: Vec<NoticeId> =
                        ids.into_iter().filter(|id| failed.contains(id)).collect();
                    if retiring {
                        self.leftovers = !remaining.is_empty();
                    }
                    if !remaining.is_empty() {
                        out.push(NoticeEffect::Report(Report::CleanupIncomplete {
                            remaining,
                        }));
                    }
                }
                other => self.pending = other,
            },
        }
        self.start_next(&mut out);
        out
    }

    /// Whether handling `event` retires the session's notices: every ending but an ordinary
    /// successful turn with no loop active and no cleanup left over, and every authorised
    /// cancel. The engine reads it before handling the event: a retirement of the notices is
    /// also the retirement of the retry lifecycle the prompt evidence depends on (reference
    /// §A.5).
    pub(crate) fn retires(&self, event: &NoticeEvent) -> bool {
        match event {
            NoticeEvent::Ended(ending) => {
                *ending != Ending::TurnSucceeded || self.active.is_some() || self.leftovers
            }
            NoticeEvent::Cancel(authorization) => *authorization == Authorization::Granted,
            _ => false,
        }
    }

    fn schedule(&mut self, notice: Notice) {
        if let Some(active) = self.active.as_mut() {
            active.notice = notice;
            active.write_owed = true;
        } else {
            self.loops_started = self.loops_started.saturating_add(1);
            self.active = Some(ActiveLoop {
                id: LoopId(self.loops_started),
                notice,
                write_owed: true,
                current: None,
            });
        }
    }

    /// Starts the next store operation if none is in flight and one is owed. Retirement goes
    /// first: it was requested before any loop that is active now started.
    fn start_next(&mut self, out: &mut Vec<NoticeEffect>) {
        let write_owed = self.active.as_ref().is_some_and(|active| active.write_owed);
        if self.pending.is_none() && (self.retire_owed || write_owed) {
            self.pending = Some(Pending::List);
            out.push(NoticeEffect::ListNotices);
        }
    }

    fn on_listed(&mut self, listing: &[ListedNotice], out: &mut Vec<NoticeEffect>) {
        let retrying = marked(listing, Marker::Retrying);
        if self.retire_owed {
            self.retire_owed = false;
            if retrying.is_empty() {
                self.leftovers = false;
            } else {
                out.push(NoticeEffect::DeleteNotices {
                    ids: retrying.clone(),
                });
                self.pending = Some(Pending::Delete {
                    ids: retrying,
                    retiring: true,
                });
            }
            return;
        }
        let Some(active) = self.active.as_mut() else {
            return;
        };
        if !active.write_owed {
            return;
        }
        active.write_owed = false;
        // Keep the notice this loop already wrote; otherwise adopt the first listed one, which
        // may be a leftover of an earlier loop: updating it is what consolidates.
        let kept = active
            .current
            .as_ref()
            .filter(|current| retrying.contains(current))
            .or_else(|| retrying.first())
            .cloned();
        let target = match kept {
            Some(id) => WriteTarget::Update(id),
            None => {
                let unreadable = marked(listing, Marker::Unreadable);
                if !unreadable.is_empty() {
                    out.push(NoticeEffect::Report(Report::NoticeUnreadable {
                        ids: unreadable,
                    }));
                    return;
                }
                WriteTarget::Create
            }
        };
        let extras = match &target {
            WriteTarget::Update(kept) => retrying.into_iter().filter(|id| id != kept).collect(),
            WriteTarget::Create => Vec::new(),
        };
        out.push(NoticeEffect::WriteNotice {
            target,
            notice: active.notice.clone(),
            cancel: CancelAction { loop_id: active.id },
        });
        self.pending = Some(Pending::Write {
            loop_id: active.id,
            extras,
        });
    }

    fn on_written(
        &mut self,
        loop_id: LoopId,
        extras: Vec<NoticeId>,
        written: NoticeId,
        out: &mut Vec<NoticeEffect>,
    ) {
        // A write that lands after its loop ended is not adopted: the owed retirement lists
        // again and deletes it with the rest.
        let Some(active) = self.active.as_mut().filter(|active| active.id == loop_id) else {
            return;
        };
        let extras: Vec<NoticeId> = extras.into_iter().filter(|id| *id != written).collect();
        active.current = Some(written);
        // Consolidate only now that the write succeeded: a failed write must not also lose
        // the notices the user can still see.
        if !extras.is_empty() {
            out.push(NoticeEffect::DeleteNotices {
                ids: extras.clone(),
            });
            self.pending = Some(Pending::Delete {
                ids: extras,
                retiring: false,
            });
        }
    }
}

/// The ids listed with `marker`, in listing order, without duplicates.
fn marked(listing: &[ListedNotice], marker: Marker) -> Vec<NoticeId> {
    let mut ids: Vec<NoticeId> = Vec::new();
    for entry in listing {
        if entry.marker == marker && !ids.contains(&entry.id) {
            ids.push(entry.id.clone());
        }
    }
    ids
}

/// The RFC 3339 form of a notice's deadline.
mod rfc3339 {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        instant: &SystemTime,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&faultline_runtime::format_instant(*instant))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(deserializer)?;
        faultline_runtime::parse_instant(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use NoticeEffect as Fx;
    use NoticeEvent as Ev;

    fn nid(id: &str) -> NoticeId {
        NoticeId::new(id)
    }

    fn ids(list: &[&str]) -> Vec<NoticeId> {
        list.iter().map(|id| nid(id)).collect()
    }

    fn notice(attempt: u32) -> Notice {
        Notice {
            reason: "Provider overloaded".to_owned(),
            provider: "anthropic".to_owned(),
            attempt,
            max_attempts: 5,
            deadline: UNIX_EPOCH + Duration::from_secs(1_000 + u64::from(attempt) * 10),
        }
    }

    fn listed(entries: &[(&str, Marker)]) -> Ev {
        Ev::Listed(
            entries
                .iter()
                .map(|(id, marker)| ListedNotice {
                    id: nid(id),
                    marker: *marker,
                })
                .collect(),
        )
    }

    fn retrying(list: &[&str]) -> Ev {
        Ev::Listed(
            list.iter()
                .map(|id| ListedNotice {
                    id: nid(id),
                    marker: Marker::Retrying,
                })
                .collect(),
        )
    }

    fn write(target: WriteTarget, attempt: u32, loop_id: u64) -> Fx {
        Fx::WriteNotice {
            target,
            notice: notice(attempt),
            cancel: CancelAction {
                loop_id: LoopId(loop_id),
            },
        }
    }

    fn update(id: &str, attempt: u32, loop_id: u64) -> Fx {
        write(WriteTarget::Update(nid(id)), attempt, loop_id)
    }

    fn delete(list: &[&str]) -> Fx {
        Fx::DeleteNotices { ids: ids(list) }
    }

    fn report(report: Report) -> Fx {
        Fx::Report(report)
    }

    /// A session whose first loop wrote notice `n1` for attempt 1 and is idle.
    fn looping() -> NoticeLifecycle {
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        assert_eq!(
            life.handle(retrying(&[])),
            [write(WriteTarget::Create, 1, 1)]
        );
        assert_eq!(life.handle(Ev::Written(nid("n1"))), []);
        life
    }

    /// AC .9: the first attempt lists the session, then creates exactly one notice carrying
    /// reason, provider, attempt count, deadline and the loop's Cancel action.
    #[test]
    fn ac_9_first_attempt_creates_one_notice() {
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        let effects = life.handle(listed(&[("m1", Marker::NotRetrying)]));
        assert_eq!(effects, [write(WriteTarget::Create, 1, 1)]);
        let Some(Fx::WriteNotice { notice: shown, .. }) = effects.first() else {
            panic!("expected a write, got {effects:?}");
        };
        assert_eq!(shown.reason, "Provider overloaded");
        assert_eq!(shown.provider, "anthropic");
        assert_eq!((shown.attempt, shown.max_attempts), (1, 5));
        assert_eq!(shown.deadline, UNIX_EPOCH + Duration::from_secs(1_010));
        assert_eq!(life.handle(Ev::Written(nid("n1"))), []);
    }

    /// AC .9: once ownership has ended, nothing writes a notice, not even a listing that was
    /// requested for the write; the next attempt starts a new loop with its own Cancel action.
    #[test]
    fn ac_9_no_notice_is_written_after_ownership_ends() {
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        // The listing is still in flight, so the cancel adds no second listing.
        assert_eq!(
            life.handle(Ev::Cancel(Authorization::Granted)),
            [
                Fx::DisarmRetry,
                Fx::ShowManualRecovery,
                Fx::Reply(CancelReply::Cancelled)
            ]
        );
        assert_eq!(life.handle(retrying(&[])), []);
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        assert_eq!(
            life.handle(retrying(&[])),
            [write(WriteTarget::Create, 1, 2)]
        );
    }

    /// AC .25 (and reference G.16): attempt N+1 updates the loop's notice in place and never
    /// retires it.
    #[test]
    fn ac_25_next_attempt_updates_in_place_and_never_retires() {
        let mut life = looping();
        for attempt in 2..=5 {
            assert_eq!(
                life.handle(Ev::AttemptScheduled(notice(attempt))),
                [Fx::ListNotices]
            );
            assert_eq!(life.handle(retrying(&["n1"])), [update("n1", attempt, 1)]);
            assert_eq!(life.handle(Ev::Written(nid("n1"))), []);
        }
    }

    /// AC .25: attempts scheduled while the store is busy coalesce; only the latest is written.
    #[test]
    fn ac_25_attempts_while_the_store_is_busy_write_only_the_latest() {
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(Ev::AttemptScheduled(notice(2))), []);
        assert_eq!(life.handle(Ev::AttemptScheduled(notice(3))), []);
        assert_eq!(
            life.handle(retrying(&[])),
            [write(WriteTarget::Create, 3, 1)]
        );
        // An attempt during the write is written after it, to the same notice.
        assert_eq!(life.handle(Ev::AttemptScheduled(notice(4))), []);
        assert_eq!(life.handle(Ev::Written(nid("n1"))), [Fx::ListNotices]);
        assert_eq!(life.handle(retrying(&["n1"])), [update("n1", 4, 1)]);
    }

    /// AC .25: existing duplicates consolidate on the next successful write: the first listed
    /// notice is updated, the others deleted, unrelated and unreadable messages left alone.
    #[test]
    fn ac_25_duplicates_consolidate_on_next_successful_write() {
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        let listing = listed(&[
            ("m1", Marker::NotRetrying),
            ("n1", Marker::Retrying),
            ("u1", Marker::Unreadable),
            ("n2", Marker::Retrying),
            ("n3", Marker::Retrying),
        ]);
        assert_eq!(life.handle(listing), [update("n1", 1, 1)]);
        assert_eq!(life.handle(Ev::Written(nid("n1"))), [delete(&["n2", "n3"])]);
        assert_eq!(life.handle(Ev::Deleted { failed: vec![] }), []);
    }

    /// AC .25: consolidation waits for a successful write; a failed write deletes nothing and
    /// creates nothing, and the next attempt tries the same notice again.
    #[test]
    fn ac_25_duplicates_survive_a_failed_write() {
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(retrying(&["n1", "n2"])), [update("n1", 1, 1)]);
        assert_eq!(life.handle(Ev::WriteFailed), [report(Report::WriteFailed)]);
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(2))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(retrying(&["n1", "n2"])), [update("n1", 2, 1)]);
        assert_eq!(life.handle(Ev::Written(nid("n1"))), [delete(&["n2"])]);
    }

    /// AC .25: the notice this loop wrote stays current even when a leftover is listed first;
    /// the leftover is the one consolidated away.
    #[test]
    fn ac_25_the_loops_own_notice_is_kept_over_a_leftover() {
        let mut life = looping();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(2))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(retrying(&["n0", "n1"])), [update("n1", 2, 1)]);
        assert_eq!(life.handle(Ev::Written(nid("n1"))), [delete(&["n0"])]);
    }

    /// AC .25: a notice whose update fails is never replaced by a new one.
    #[test]
    fn ac_25_failed_update_never_creates_another() {
        let mut life = looping();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(2))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(retrying(&["n1"])), [update("n1", 2, 1)]);
        assert_eq!(life.handle(Ev::WriteFailed), [report(Report::WriteFailed)]);
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(3))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(retrying(&["n1"])), [update("n1", 3, 1)]);
    }

    /// AC .25: when the only candidate notice cannot be read, no notice is created beside it,
    /// and a retirement leaves it alone too (it may be an unrelated message).
    #[test]
    fn ac_25_unreadable_notice_never_creates_another() {
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        let listing = listed(&[("m1", Marker::NotRetrying), ("u1", Marker::Unreadable)]);
        assert_eq!(
            life.handle(listing.clone()),
            [report(Report::NoticeUnreadable { ids: ids(&["u1"]) })]
        );
        assert_eq!(
            life.handle(Ev::Ended(Ending::TurnSucceeded)),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(listing), []);
    }

    /// AC .25: a listing failure means the existing notice cannot be read: nothing is created,
    /// and the next attempt reads again.
    #[test]
    fn ac_25_failed_listing_never_creates_another() {
        let mut life = looping();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(2))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(Ev::ListFailed), [report(Report::ListFailed)]);
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(3))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(retrying(&["n1"])), [update("n1", 3, 1)]);
    }

    /// AC .25: the next loop adopts a notice an earlier loop failed to retire instead of adding
    /// a second one beside it.
    #[test]
    fn ac_25_a_new_loop_adopts_a_leftover_notice() {
        let mut life = looping();
        assert_eq!(life.handle(Ev::Ended(Ending::Terminal)), [Fx::ListNotices]);
        assert_eq!(life.handle(retrying(&["n1"])), [delete(&["n1"])]);
        assert_eq!(
            life.handle(Ev::Deleted {
                failed: ids(&["n1"])
            }),
            [report(Report::CleanupIncomplete {
                remaining: ids(&["n1"])
            })]
        );
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(retrying(&["n1"])), [update("n1", 1, 2)]);
    }

    /// AC .25: results nobody asked for change nothing, and do not unblock what is in flight.
    #[test]
    fn ac_25_unsolicited_store_results_are_ignored() {
        let strays = [
            retrying(&["n1"]),
            Ev::ListFailed,
            Ev::Written(nid("n1")),
            Ev::WriteFailed,
            Ev::Deleted {
                failed: ids(&["n1"]),
            },
        ];
        let mut fresh = NoticeLifecycle::new();
        for stray in strays.clone() {
            assert_eq!(fresh.handle(stray), []);
        }
        assert_eq!(fresh, NoticeLifecycle::new());

        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        let before = life.clone();
        for stray in [
            Ev::Written(nid("n9")),
            Ev::WriteFailed,
            Ev::Deleted { failed: vec![] },
        ] {
            assert_eq!(life.handle(stray), []);
        }
        assert_eq!(life, before);
        assert_eq!(
            life.handle(retrying(&[])),
            [write(WriteTarget::Create, 1, 1)]
        );
    }

    /// AC .10: a successful turn with a retry entry deletes every `retrying` notice of the
    /// session (never flips it), duplicates included, and leaves other messages unchanged.
    #[test]
    fn ac_10_success_retires_every_notice() {
        let mut life = looping();
        assert_eq!(
            life.handle(Ev::Ended(Ending::TurnSucceeded)),
            [Fx::ListNotices]
        );
        let listing = listed(&[
            ("n1", Marker::Retrying),
            ("m1", Marker::NotRetrying),
            ("n2", Marker::Retrying),
            ("u1", Marker::Unreadable),
            ("n1", Marker::Retrying),
        ]);
        assert_eq!(life.handle(listing), [delete(&["n1", "n2"])]);
        assert_eq!(life.handle(Ev::Deleted { failed: vec![] }), []);
        // Retired cleanly: the next ordinary turn costs no store read.
        assert_eq!(life.handle(Ev::Ended(Ending::TurnSucceeded)), []);
    }

    /// AC .10: exhaustion, a terminal failure, a stop and shutdown retire the notice too.
    #[test]
    fn ac_10_every_ending_retires() {
        for ending in [
            Ending::Exhausted,
            Ending::Terminal,
            Ending::Stopped,
            Ending::Shutdown,
        ] {
            let mut life = looping();
            assert_eq!(
                life.handle(Ev::Ended(ending)),
                [Fx::ListNotices],
                "{ending:?}"
            );
            assert_eq!(life.handle(retrying(&["n1"])), [delete(&["n1"])]);
            assert_eq!(life.handle(Ev::Deleted { failed: vec![] }), []);
            // The loop is over: a late attempt-free turn has nothing to do.
            assert_eq!(life.handle(Ev::Ended(Ending::TurnSucceeded)), []);
        }
    }

    /// AC .10 (§F.6): an ordinary successful turn looks up notices only if a retry entry
    /// exists.
    #[test]
    fn ac_10_successful_turn_without_retry_entry_does_not_look() {
        let mut life = NoticeLifecycle::new();
        assert_eq!(life.handle(Ev::Ended(Ending::TurnSucceeded)), []);
        assert_eq!(life, NoticeLifecycle::new());
    }

    /// AC .10, .11 (§F.6): stop, terminal, exhaustion, shutdown and cancel always look, even
    /// with no retry entry, and delete what they find.
    #[test]
    fn ac_10_stop_terminal_and_cancel_look_even_without_retry_entry() {
        for ending in [
            Ending::Exhausted,
            Ending::Terminal,
            Ending::Stopped,
            Ending::Shutdown,
        ] {
            let mut life = NoticeLifecycle::new();
            assert_eq!(
                life.handle(Ev::Ended(ending)),
                [Fx::ListNotices],
                "{ending:?}"
            );
            assert_eq!(life.handle(retrying(&["n7"])), [delete(&["n7"])]);
        }
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::Cancel(Authorization::Granted)),
            [Fx::ListNotices, Fx::Reply(CancelReply::NoActiveRetry)]
        );
        assert_eq!(life.handle(retrying(&["n7"])), [delete(&["n7"])]);
    }

    /// AC .10: a failed listing is reported, does not fail the ending, and a later successful
    /// turn (which otherwise would not look) retries the cleanup.
    #[test]
    fn ac_10_failed_listing_is_reported_and_a_later_cleanup_retries() {
        let mut life = looping();
        assert_eq!(life.handle(Ev::Ended(Ending::Exhausted)), [Fx::ListNotices]);
        assert_eq!(life.handle(Ev::ListFailed), [report(Report::ListFailed)]);
        assert_eq!(
            life.handle(Ev::Ended(Ending::TurnSucceeded)),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(retrying(&["n1"])), [delete(&["n1"])]);
        assert_eq!(life.handle(Ev::Deleted { failed: vec![] }), []);
        assert_eq!(life.handle(Ev::Ended(Ending::TurnSucceeded)), []);
    }

    /// AC .10: every deletion is tried; the failed ones are reported as remaining and a later
    /// authorised cleanup retries exactly those still listed.
    #[test]
    fn ac_10_failed_deletions_are_reported_and_a_later_cleanup_retries() {
        let mut life = looping();
        assert_eq!(life.handle(Ev::Ended(Ending::Stopped)), [Fx::ListNotices]);
        assert_eq!(
            life.handle(retrying(&["n0", "n1", "n2"])),
            [delete(&["n0", "n1", "n2"])]
        );
        assert_eq!(
            life.handle(Ev::Deleted {
                failed: ids(&["n2", "zz", "n0"])
            }),
            [report(Report::CleanupIncomplete {
                remaining: ids(&["n0", "n2"])
            })]
        );
        assert_eq!(
            life.handle(Ev::Cancel(Authorization::Granted)),
            [Fx::ListNotices, Fx::Reply(CancelReply::NoActiveRetry)]
        );
        assert_eq!(
            life.handle(retrying(&["n0", "n2"])),
            [delete(&["n0", "n2"])]
        );
        assert_eq!(life.handle(Ev::Deleted { failed: vec![] }), []);
    }

    /// AC .10: a notice write still in flight when ownership ends is retired once it lands.
    #[test]
    fn ac_10_write_in_flight_when_the_loop_ends_is_retired() {
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        assert_eq!(
            life.handle(retrying(&[])),
            [write(WriteTarget::Create, 1, 1)]
        );
        assert_eq!(life.handle(Ev::Ended(Ending::TurnSucceeded)), []);
        assert_eq!(life.handle(Ev::Written(nid("n1"))), [Fx::ListNotices]);
        assert_eq!(life.handle(retrying(&["n1"])), [delete(&["n1"])]);
    }

    /// AC .10: a listing requested for a write serves a retirement requested before it returned,
    /// and nothing is written.
    #[test]
    fn ac_10_listing_in_flight_serves_the_retirement() {
        let mut life = NoticeLifecycle::new();
        assert_eq!(
            life.handle(Ev::AttemptScheduled(notice(1))),
            [Fx::ListNotices]
        );
        assert_eq!(life.handle(Ev::Ended(Ending::Terminal)), []);
        assert_eq!(life.handle(retrying(&["n0"])), [delete(&["n0"])]);
        assert_eq!(life.handle(Ev::Deleted { failed: vec![] }), []);
    }

    /// AC .11: cancelling an active loop disarms it, retires its notice and offers Resume and
    /// Start fresh.
    #[test]
    fn ac_11_cancel_of_active_loop_disarms_retires_and_offers_manual_recovery() {
        let mut life = looping();
        assert_eq!(
            life.handle(Ev::Cancel(Authorization::Granted)),
            [
                Fx::DisarmRetry,
                Fx::ListNotices,
                Fx::ShowManualRecovery,
                Fx::Reply(CancelReply::Cancelled)
            ]
        );
        assert_eq!(life.handle(retrying(&["n1"])), [delete(&["n1"])]);
        assert_eq!(life.handle(Ev::Deleted { failed: vec![] }), []);
        // The loop is gone: an ordinary success afterwards does not look again.
        assert_eq!(life.handle(Ev::Ended(Ending::TurnSucceeded)), []);
    }

    /// AC .11: after the loop ended, an authorised cancel still retires notices, with no
    /// recovery message and no disarm.
    #[test]
    fn ac_11_cancel_after_loop_ended_still_retires_without_recovery_message() {
        let mut life = looping();
        assert_eq!(life.handle(Ev::Ended(Ending::Exhausted)), [Fx::ListNotices]);
        assert_eq!(life.handle(Ev::ListFailed), [report(Report::ListFailed)]);
        assert_eq!(
            life.handle(Ev::Cancel(Authorization::Granted)),
            [Fx::ListNotices, Fx::Reply(CancelReply::NoActiveRetry)]
        );
        assert_eq!(life.handle(retrying(&["n1"])), [delete(&["n1"])]);
    }

    /// AC .11: cancel is idempotent: repeating it never offers recovery twice and only cleans.
    #[test]
    fn ac_11_cancel_is_idempotent() {
        let mut life = looping();
        assert_eq!(
            life.handle(Ev::Cancel(Authorization::Granted)),
            [
                Fx::DisarmRetry,
                Fx::ListNotices,
                Fx::ShowManualRecovery,
                Fx::Reply(CancelReply::Cancelled)
            ]
        );
        // The listing in flight already covers the second request.
        assert_eq!(
            life.handle(Ev::Cancel(Authorization::Granted)),
            [Fx::Reply(CancelReply::NoActiveRetry)]
        );
        assert_eq!(life.handle(retrying(&["n1"])), [delete(&["n1"])]);
        assert_eq!(life.handle(Ev::Deleted { failed: vec![] }), []);
        assert_eq!(
            life.handle(Ev::Cancel(Authorization::Granted)),
            [Fx::ListNotices, Fx::Reply(CancelReply::NoActiveRetry)]
        );
        assert_eq!(life.handle(retrying(&[])), []);
    }

    /// AC .11: denied and foreign pairs get the same answer whether the session is fresh,
    /// looping, busy with the store or holding leftovers, and the answer changes nothing.
    #[test]
    fn ac_11_denied_and_foreign_cancel_reveal_nothing() {
        let fresh = NoticeLifecycle::new();
        let idle_loop = looping();
        let mut busy = looping();
        assert_eq!(
            busy.handle(Ev::AttemptScheduled(notice(2))),
            [Fx::ListNotices]
        );
        let mut leftovers = looping();
        assert_eq!(
            leftovers.handle(Ev::Ended(Ending::Stopped)),
            [Fx::ListNotices]
        );
        assert_eq!(
            leftovers.handle(Ev::ListFailed),
            [report(Report::ListFailed)]
        );

        for authorization in [Authorization::Denied, Authorization::Foreign] {
            for state in [&fresh, &idle_loop, &busy, &leftovers] {
                let mut probe = state.clone();
                assert_eq!(
                    probe.handle(Ev::Cancel(authorization)),
                    [Fx::Reply(CancelReply::Refused)]
                );
                assert_eq!(&probe, state, "{authorization:?} changed the state");
            }
        }
    }

    /// The reference model and the property tests.
    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// A deliberately naive second implementation: it keeps the whole history of events and
        /// of its own effects, and answers every question ("is a loop active?", "what is in
        /// flight?", "is a retirement owed?") by scanning that history from the start.
        #[derive(Default)]
        struct Model {
            log: Vec<Entry>,
        }

        /// One handled event, with what the model decided and why.
        struct Entry {
            event: NoticeEvent,
            effects: Vec<NoticeEffect>,
            /// The event answered the store operation in flight.
            accepted: bool,
            /// That operation.
            answered: Option<NoticeEffect>,
            /// The event asked for a retirement.
            retire_request: bool,
            /// The event settled the owed write (written or given up on).
            discharged_write: bool,
            /// The event finished a retirement: cleanly or leaving notices behind.
            retire_clean: Option<bool>,
        }

        fn is_store_op(effect: &NoticeEffect) -> bool {
            matches!(
                effect,
                NoticeEffect::ListNotices
                    | NoticeEffect::WriteNotice { .. }
                    | NoticeEffect::DeleteNotices { .. }
            )
        }

        fn unique(listing: &[ListedNotice], marker: Marker) -> Vec<NoticeId> {
            let mut seen = std::collections::BTreeSet::new();
            listing
                .iter()
                .filter(|entry| entry.marker == marker)
                .filter(|entry| seen.insert(entry.id.clone()))
                .map(|entry| entry.id.clone())
                .collect()
        }

        impl Model {
            /// The last store operation and where it was emitted, unless answered since.
            fn in_flight(&self) -> Option<(usize, NoticeEffect)> {
                let at = self
                    .log
                    .iter()
                    .rposition(|entry| entry.effects.iter().any(is_store_op))?;
                let op = self.log[at]
                    .effects
                    .iter()
                    .find(|e| is_store_op(e))?
                    .clone();
                let answered = self.log[at + 1..].iter().any(|entry| entry.accepted);
                (!answered).then_some((at, op))
            }

            /// The active loop's number and latest notice, replayed from the events.
            fn active_loop(&self) -> Option<(LoopId, Notice)> {
                let mut started = 0;
                let mut active = None;
                for entry in &self.log {
                    match &entry.event {
                        NoticeEvent::AttemptScheduled(notice) => {
                            if active.is_none() {
                                started += 1;
                            }
                            active = Some(notice.clone());
                        }
                        NoticeEvent::Ended(_) | NoticeEvent::Cancel(Authorization::Granted) => {
                            active = None;
                        }
                        _ => {}
                    }
                }
                active.map(|notice| (LoopId(started), notice))
            }

            /// A retirement was asked for after the last listing result.
            fn retire_owed(&self) -> bool {
                let request = self.log.iter().rposition(|entry| entry.retire_request);
                let listing = self.log.iter().rposition(|entry| {
                    entry.accepted
                        && matches!(
                            entry.event,
                            NoticeEvent::Listed(_) | NoticeEvent::ListFailed
                        )
                });
                match (request, listing) {
                    (Some(request), Some(listing)) => request > listing,
                    (Some(_), None) => true,
                    (None, _) => false,
                }
            }

            /// A loop is active and its latest attempt was not written or given up on.
            fn write_owed(&self) -> bool {
                if self.active_loop().is_none() {
                    return false;
                }
                let Some(latest) = self
                    .log
                    .iter()
                    .rposition(|entry| matches!(entry.event, NoticeEvent::AttemptScheduled(_)))
                else {
                    return false;
                };
                !self.log[latest + 1..]
                    .iter()
                    .any(|entry| entry.discharged_write)
            }

            /// The last notice written for this loop.
            fn current(&self, loop_id: LoopId) -> Option<NoticeId> {
                self.log
                    .iter()
                    .rev()
                    .find_map(|entry| match (&entry.event, &entry.answered) {
                        (
                            NoticeEvent::Written(id),
                            Some(NoticeEffect::WriteNotice { cancel, .. }),
                        ) if entry.accepted && cancel.loop_id == loop_id => Some(id.clone()),
                        _ => None,
                    })
            }

            /// The last retirement to finish left notices behind.
            fn leftovers(&self) -> bool {
                self.log
                    .iter()
                    .rev()
                    .find_map(|entry| entry.retire_clean)
                    .is_some_and(|clean| !clean)
            }

            fn step(&mut self, event: NoticeEvent) -> Vec<NoticeEffect> {
                let in_flight = self.in_flight();
                let active = self.active_loop();
                let retire_owed = self.retire_owed();
                let write_owed = self.write_owed();
                let mut entry = Entry {
                    event: event.clone(),
                    effects: Vec::new(),
                    accepted: false,
                    answered: None,
                    retire_request: false,
                    discharged_write: false,
                    retire_clean: None,
                };
                let mut last = Vec::new();
                match (&event, in_flight) {
                    (NoticeEvent::AttemptScheduled(_), _) => {}
                    (NoticeEvent::Ended(ending), _) => {
                        entry.retire_request = *ending != Ending::TurnSucceeded
                            || active.is_some()
                            || self.leftovers();
                    }
                    (NoticeEvent::Cancel(Authorization::Granted), _) => {
                        entry.retire_request = true;
                        if active.is_some() {
                            entry.effects.push(NoticeEffect::DisarmRetry);
                            last.push(NoticeEffect::ShowManualRecovery);
                            last.push(NoticeEffect::Reply(CancelReply::Cancelled));
                        } else {
                            last.push(NoticeEffect::Reply(CancelReply::NoActiveRetry));
                        }
                    }
                    (NoticeEvent::Cancel(_), _) => {
                        last.push(NoticeEffect::Reply(CancelReply::Refused));
                    }
                    (NoticeEvent::Listed(listing), Some((_, op @ NoticeEffect::ListNotices))) => {
                        entry.accepted = true;
                        entry.answered = Some(op);
                        let retrying = unique(listing, Marker::Retrying);
                        if retire_owed {
                            if retrying.is_empty() {
                                entry.retire_clean = Some(true);
                            } else {
                                entry
                                    .effects
                                    .push(NoticeEffect::DeleteNotices { ids: retrying });
                            }
                        } else if write_owed {
                            entry.discharged_write = true;
                            let (loop_id, notice) = active.clone().unwrap();
                            let current = self.current(loop_id).filter(|id| retrying.contains(id));
                            let target = match current.or_else(|| retrying.first().cloned()) {
                                Some(id) => Some(WriteTarget::Update(id)),
                                None if unique(listing, Marker::Unreadable).is_empty() => {
                                    Some(WriteTarget::Create)
                                }
                                None => None,
                            };
                            match target {
                                Some(target) => entry.effects.push(NoticeEffect::WriteNotice {
                                    target,
                                    notice,
                                    cancel: CancelAction { loop_id },
                                }),
                                None => entry.effects.push(NoticeEffect::Report(
                                    Report::NoticeUnreadable {
                                        ids: unique(listing, Marker::Unreadable),
                                    },
                                )),
                            }
                        }
                    }
                    (NoticeEvent::ListFailed, Some((_, op @ NoticeEffect::ListNotices))) => {
                        entry.accepted = true;
                        entry.answered = Some(op);
                        entry.effects.push(NoticeEffect::Report(Report::ListFailed));
                        if retire_owed {
                            entry.retire_clean = Some(false);
                        }
                        entry.discharged_write = write_owed;
                    }
                    (
                        NoticeEvent::Written(id),
                        Some((at, op @ NoticeEffect::WriteNotice { .. })),
                    ) => {
                        entry.accepted = true;
                        entry.answered = Some(op.clone());
                        let NoticeEffect::WriteNotice { target, cancel, .. } = op else {
                            unreachable!()
                        };
                        if active.as_ref().map(|(id, _)| *id) == Some(cancel.loop_id) {
                            let NoticeEvent::Listed(listing) = &self.log[at].event else {
                                unreachable!("writes follow a listing")
                            };
                            let extras: Vec<NoticeId> = unique(listing, Marker::Retrying)
                                .into_iter()
                                .filter(|extra| extra != id)
                                .filter(|extra| target != WriteTarget::Update(extra.clone()))
                                .collect();
                            if !extras.is_empty() {
                                entry
                                    .effects
                                    .push(NoticeEffect::DeleteNotices { ids: extras });
                            }
                        }
                    }
                    (
                        NoticeEvent::WriteFailed,
                        Some((_, op @ NoticeEffect::WriteNotice { .. })),
                    ) => {
                        entry.accepted = true;
                        entry.answered = Some(op);
                        entry
                            .effects
                            .push(NoticeEffect::Report(Report::WriteFailed));
                    }
                    (
                        NoticeEvent::Deleted { failed },
                        Some((at, op @ NoticeEffect::DeleteNotices { .. })),
                    ) => {
                        entry.accepted = true;
                        entry.answered = Some(op.clone());
                        let NoticeEffect::DeleteNotices { ids } = op else {
                            unreachable!()
                        };
                        let remaining: Vec<NoticeId> =
                            ids.into_iter().filter(|id| failed.contains(id)).collect();
                        // Deletions issued from a listing retire; from a write, consolidate.
                        if matches!(self.log[at].event, NoticeEvent::Listed(_)) {
                            entry.retire_clean = Some(remaining.is_empty());
                        }
                        if !remaining.is_empty() {
                            entry
                                .effects
                                .push(NoticeEffect::Report(Report::CleanupIncomplete {
                                    remaining,
                                }));
                        }
                    }
                    _ => {}
                }
                self.log.push(entry);
                let start = self.in_flight().is_none() && (self.retire_owed() || self.write_owed());
                let entry = self.log.last_mut().unwrap();
                if start {
                    entry.effects.push(NoticeEffect::ListNotices);
                }
                entry.effects.extend(last);
                entry.effects.clone()
            }
        }

        /// One step of a random history, abstract enough that store answers fit the operation
        /// in flight most of the time.
        #[derive(Debug, Clone)]
        enum Act {
            Attempt(u32, u64),
            End(Ending),
            Cancel(Authorization),
            /// Answers the operation in flight (a listing if none): `ok` decides success, the
            /// listing and fresh id fill in a listing or a create, the mask picks failed
            /// deletions.
            Answer {
                ok: bool,
                listing: Vec<ListedNotice>,
                fresh: u8,
                mask: u8,
            },
            /// Any result at all, whatever is in flight.
            Stray(NoticeEvent),
        }

        /// Reads small choices out of one random `u64`. Histories are generated as flat seed
        /// vectors and decoded: proptest's nested strategies cost about twenty times more to
        /// generate in a debug build, and removing steps still shrinks a failing history.
        struct Seed(u64);

        impl Seed {
            /// A choice in `0..n`.
            fn pick(&mut self, n: u64) -> u64 {
                let choice = self.0 % n;
                self.0 /= n;
                choice
            }

            fn id(&mut self) -> NoticeId {
                NoticeId::new(format!("n{}", self.pick(6)))
            }

            /// Mostly notices, some unrelated messages, a few unreadable ones.
            fn marker(&mut self) -> Marker {
                match self.pick(9) {
                    0..=5 => Marker::Retrying,
                    6 | 7 => Marker::NotRetrying,
                    _ => Marker::Unreadable,
                }
            }

            fn ending(&mut self) -> Ending {
                match self.pick(7) {
                    0..=2 => Ending::TurnSucceeded,
                    3 => Ending::Exhausted,
                    4 => Ending::Terminal,
                    5 => Ending::Stopped,
                    _ => Ending::Shutdown,
                }
            }

            fn authorization(&mut self) -> Authorization {
                match self.pick(4) {
                    0 | 1 => Authorization::Granted,
                    2 => Authorization::Denied,
                    _ => Authorization::Foreign,
                }
            }

            fn listing(&mut self, max: u64) -> Vec<ListedNotice> {
                (0..self.pick(max + 1))
                    .map(|_| ListedNotice {
                        id: self.id(),
                        marker: self.marker(),
                    })
                    .collect()
            }

            fn stray(&mut self) -> NoticeEvent {
                match self.pick(5) {
                    0 => NoticeEvent::Listed(self.listing(3)),
                    1 => NoticeEvent::ListFailed,
                    2 => NoticeEvent::Written(self.id()),
                    3 => NoticeEvent::WriteFailed,
                    _ => NoticeEvent::Deleted {
                        failed: (0..self.pick(3)).map(|_| self.id()).collect(),
                    },
                }
            }
        }

        /// Decodes one step: attempts 4, endings 2, cancels 2, answers 9, strays 1 in 18.
        fn act(seed: u64) -> Act {
            let mut seed = Seed(seed);
            match seed.pick(18) {
                0..=3 => Act::Attempt(1 + seed.pick(6) as u32, seed.pick(100_000)),
                4 | 5 => Act::End(seed.ending()),
                6 | 7 => Act::Cancel(seed.authorization()),
                17 => Act::Stray(seed.stray()),
                _ => Act::Answer {
                    ok: seed.pick(5) != 0,
                    listing: seed.listing(4),
                    fresh: seed.pick(6) as u8,
                    mask: seed.pick(256) as u8,
                },
            }
        }

        fn attempt_notice(attempt: u32, at: u64) -> Notice {
            Notice {
                reason: format!("reason {}", attempt % 3),
                provider: "provider".to_owned(),
                attempt,
                max_attempts: 5,
                deadline: UNIX_EPOCH + Duration::from_secs(at),
            }
        }

        /// Whether a result event answers this store operation.
        fn answers(event: &NoticeEvent, op: &NoticeEffect) -> bool {
            matches!(
                (event, op),
                (
                    NoticeEvent::Listed(_) | NoticeEvent::ListFailed,
                    NoticeEffect::ListNotices
                ) | (
                    NoticeEvent::Written(_) | NoticeEvent::WriteFailed,
                    NoticeEffect::WriteNotice { .. }
                ) | (
                    NoticeEvent::Deleted { .. },
                    NoticeEffect::DeleteNotices { .. }
                )
            )
        }

        /// Turns an abstract step into an event, given the operation in flight.
        fn concretise(act: Act, in_flight: Option<&NoticeEffect>) -> NoticeEvent {
            match act {
                Act::Attempt(attempt, at) => {
                    NoticeEvent::AttemptScheduled(attempt_notice(attempt, at))
                }
                Act::End(ending) => NoticeEvent::Ended(ending),
                Act::Cancel(authorization) => NoticeEvent::Cancel(authorization),
                Act::Stray(event) => event,
                Act::Answer {
                    ok,
                    listing,
                    fresh,
                    mask,
                } => match in_flight {
                    Some(NoticeEffect::WriteNotice { target, .. }) if ok => {
                        NoticeEvent::Written(match target {
                            WriteTarget::Update(id) => id.clone(),
                            WriteTarget::Create => NoticeId::new(format!("n{fresh}")),
                        })
                    }
                    Some(NoticeEffect::WriteNotice { .. }) => NoticeEvent::WriteFailed,
                    Some(NoticeEffect::DeleteNotices { ids }) => NoticeEvent::Deleted {
                        failed: ids
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| !ok && (mask >> (i % 8)) & 1 == 1)
                            .map(|(_, id)| id.clone())
                            .collect(),
                    },
                    _ if ok => NoticeEvent::Listed(listing),
                    _ => NoticeEvent::ListFailed,
                },
            }
        }

        /// Tracks the operation in flight from the lifecycle's own effects.
        fn track(
            in_flight: &mut Option<NoticeEffect>,
            event: &NoticeEvent,
            effects: &[NoticeEffect],
        ) {
            if in_flight.as_ref().is_some_and(|op| answers(event, op)) {
                *in_flight = None;
            }
            let ops: Vec<&NoticeEffect> = effects.iter().filter(|e| is_store_op(e)).collect();
            assert!(
                ops.len() <= 1,
                "two store operations in one step: {effects:?}"
            );
            assert!(
                ops.is_empty() || in_flight.is_none(),
                "a store operation while another is in flight: {effects:?}"
            );
            if let Some(op) = ops.first() {
                *in_flight = Some((*op).clone());
            }
        }

        /// A faithful in-memory store for one session, plus the messages it started with.
        #[derive(Debug, Clone)]
        struct Store {
            messages: Vec<(NoticeId, Marker, Option<Notice>)>,
            created: u32,
        }

        impl Store {
            fn count(&self, marker: Marker) -> usize {
                self.messages.iter().filter(|m| m.1 == marker).count()
            }

            fn listing(&self) -> Vec<ListedNotice> {
                self.messages
                    .iter()
                    .map(|(id, marker, _)| ListedNotice {
                        id: id.clone(),
                        marker: *marker,
                    })
                    .collect()
            }

            fn unrelated(&self) -> Vec<(NoticeId, Marker)> {
                self.messages
                    .iter()
                    .filter(|m| m.1 != Marker::Retrying)
                    .map(|m| (m.0.clone(), m.1))
                    .collect()
            }

            /// Applies an operation, failing as told, and returns the result event.
            fn apply(
                &mut self,
                op: &NoticeEffect,
                fail: bool,
                mask: u8,
                creates: &mut Vec<u64>,
            ) -> NoticeEvent {
                match op {
                    NoticeEffect::ListNotices if fail => NoticeEvent::ListFailed,
                    NoticeEffect::ListNotices => NoticeEvent::Listed(self.listing()),
                    NoticeEffect::WriteNotice {
                        target,
                        notice,
                        cancel,
                    } => match target {
                        WriteTarget::Create => {
                            assert_eq!(
                                self.count(Marker::Retrying) + self.count(Marker::Unreadable),
                                0,
                                "created a notice beside an existing one: {self:?}"
                            );
                            if fail {
                                return NoticeEvent::WriteFailed;
                            }
                            creates.push(cancel.loop_id.get());
                            let n = creates
                                .iter()
                                .filter(|l| **l == cancel.loop_id.get())
                                .count();
                            assert!(n <= 1, "loop {:?} created {n} notices", cancel.loop_id);
                            self.created += 1;
                            let id = NoticeId::new(format!("c{}", self.created));
                            self.messages.push((
                                id.clone(),
                                Marker::Retrying,
                                Some(notice.clone()),
                            ));
                            NoticeEvent::Written(id)
                        }
                        WriteTarget::Update(id) => {
                            let message = self
                                .messages
                                .iter_mut()
                                .find(|m| m.0 == *id)
                                .expect("updates target a listed notice");
                            assert_eq!(message.1, Marker::Retrying, "updated a non-notice");
                            if fail {
                                return NoticeEvent::WriteFailed;
                            }
                            message.2 = Some(notice.clone());
                            NoticeEvent::Written(id.clone())
                        }
                    },
                    NoticeEffect::DeleteNotices { ids } => {
                        let mut failed = Vec::new();
                        for (i, id) in ids.iter().enumerate() {
                            let at = self.messages.iter().position(|m| m.0 == *id);
                            let at = at.expect("deletions target a listed notice");
                            assert_eq!(
                                self.messages[at].1,
                                Marker::Retrying,
                                "deleted a non-notice {id}"
                            );
                            if fail && (mask >> (i % 8)) & 1 == 1 {
                                failed.push(id.clone());
                            } else {
                                self.messages.remove(at);
                            }
                        }
                        NoticeEvent::Deleted { failed }
                    }
                    other => panic!("not a store operation: {other:?}"),
                }
            }
        }

        /// One step against the simulated store.
        #[derive(Debug, Clone)]
        enum StoreAct {
            Attempt(u32, u64),
            End(Ending),
            Cancel(Authorization),
            Answer { fail: bool, mask: u8 },
        }

        /// Decodes one step against the store; a quarter of the answers inject failures.
        fn store_act(seed: u64) -> StoreAct {
            let mut seed = Seed(seed);
            match seed.pick(17) {
                0..=3 => StoreAct::Attempt(1 + seed.pick(6) as u32, seed.pick(100_000)),
                4 | 5 => StoreAct::End(seed.ending()),
                6 | 7 => StoreAct::Cancel(seed.authorization()),
                _ => StoreAct::Answer {
                    fail: seed.pick(4) == 0,
                    mask: seed.pick(256) as u8,
                },
            }
        }

        /// The lifecycle, its store and what the harness knows independently of both.
        #[derive(Debug, Clone)]
        struct Session {
            life: NoticeLifecycle,
            store: Store,
            in_flight: Option<NoticeEffect>,
            creates: Vec<u64>,
            loops: u64,
            looping: bool,
            ceiling: usize,
        }

        impl Session {
            fn new(initial: &[Marker]) -> Self {
                let messages: Vec<_> = initial
                    .iter()
                    .enumerate()
                    .map(|(i, marker)| (NoticeId::new(format!("s{i}")), *marker, None))
                    .collect();
                let store = Store {
                    messages,
                    created: 0,
                };
                let ceiling = store.count(Marker::Retrying).max(1);
                Session {
                    life: NoticeLifecycle::new(),
                    store,
                    in_flight: None,
                    creates: Vec::new(),
                    loops: 0,
                    looping: false,
                    ceiling,
                }
            }

            fn run(&mut self, act: StoreAct) {
                let event = match act {
                    StoreAct::Attempt(attempt, at) => {
                        if !self.looping {
                            self.looping = true;
                            self.loops += 1;
                        }
                        NoticeEvent::AttemptScheduled(attempt_notice(attempt, at))
                    }
                    StoreAct::End(ending) => {
                        self.looping = false;
                        NoticeEvent::Ended(ending)
                    }
                    StoreAct::Cancel(authorization) => {
                        if authorization == Authorization::Granted {
                            self.looping = false;
                        }
                        NoticeEvent::Cancel(authorization)
                    }
                    StoreAct::Answer { fail, mask } => match self.in_flight.clone() {
                        Some(op) => self.store.apply(&op, fail, mask, &mut self.creates),
                        None => return,
                    },
                };
                let effects = self.life.handle(event.clone());
                track(&mut self.in_flight, &event, &effects);
                for effect in &effects {
                    if let NoticeEffect::WriteNotice { cancel, .. } = effect {
                        assert!(self.looping, "a notice written with no loop active");
                        assert_eq!(cancel.loop_id.get(), self.loops);
                    }
                }
                assert!(
                    self.store.count(Marker::Retrying) <= self.ceiling,
                    "more notices than before the run: {:?}",
                    self.store
                );
            }

            /// Answers every operation successfully until nothing is in flight.
            fn drain(&mut self) {
                for _ in 0..16 {
                    if self.in_flight.is_none() {
                        return;
                    }
                    self.run(StoreAct::Answer {
                        fail: false,
                        mask: 0,
                    });
                }
                panic!("the lifecycle never settled");
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4096))]

            /// AC .9–.11, .25: the lifecycle and the naive history-scanning model emit the same
            /// effects for every event of long random histories, stray results included.
            #[test]
            fn lifecycle_matches_the_reference_model(seeds in prop::collection::vec(any::<u64>(), 0..=60)) {
                let mut life = NoticeLifecycle::new();
                let mut model = Model::default();
                let mut in_flight = None;
                for act in seeds.into_iter().map(act) {
                    let event = concretise(act, in_flight.as_ref());
                    let effects = life.handle(event.clone());
                    let expected = model.step(event.clone());
                    prop_assert_eq!(&effects, &expected, "after {:?}", event);
                    track(&mut in_flight, &event, &effects);
                }
            }

            /// AC .9, .10, .25 against a faithful store with injected failures: one store
            /// operation at a time; never a create beside an existing or unreadable notice; at
            /// most one create per loop; never more notices than the store started with (or
            /// one); deletions and updates touch only notices; writes only while a loop is
            /// active. Then, with the store healthy again, a stop leaves no notice and every
            /// unrelated message as it was, and a new attempt leaves exactly its own notice.
            #[test]
            fn lifecycle_keeps_its_invariants_against_a_store(
                initial in any::<u64>(),
                seeds in prop::collection::vec(any::<u64>(), 0..=60),
            ) {
                let mut initial = Seed(initial);
                let initial: Vec<Marker> = (0..initial.pick(6)).map(|_| initial.marker()).collect();
                let mut session = Session::new(&initial);
                let unrelated = session.store.unrelated();
                for act in seeds.into_iter().map(store_act) {
                    session.run(act);
                }

                let mut stopped = session.clone();
                stopped.run(StoreAct::End(Ending::Stopped));
                stopped.drain();
                prop_assert_eq!(stopped.store.count(Marker::Retrying), 0);
                prop_assert_eq!(stopped.store.unrelated(), unrelated.clone());

                let mut retried = session;
                retried.run(StoreAct::Attempt(9, 123));
                retried.drain();
                let notices: Vec<_> = retried
                    .store
                    .messages
                    .iter()
                    .filter(|m| m.1 == Marker::Retrying)
                    .collect();
                if notices.is_empty() {
                    // Only an unreadable message may hold creation back.
                    prop_assert!(retried.store.count(Marker::Unreadable) > 0);
                } else {
                    prop_assert_eq!(notices.len(), 1);
                    prop_assert_eq!(notices[0].2.clone(), Some(attempt_notice(9, 123)));
                }
                prop_assert_eq!(retried.store.unrelated(), unrelated);
            }

            /// AC .11: in every state a random history reaches, a denied or foreign cancel
            /// answers exactly as it would for a session with no state at all, and changes
            /// nothing.
            #[test]
            fn denied_and_foreign_cancel_reveal_nothing(seeds in prop::collection::vec(any::<u64>(), 0..=60)) {
                let mut life = NoticeLifecycle::new();
                let mut in_flight = None;
                for act in seeds.into_iter().map(act) {
                    let event = concretise(act, in_flight.as_ref());
                    let effects = life.handle(event.clone());
                    track(&mut in_flight, &event, &effects);
                    for authorization in [Authorization::Denied, Authorization::Foreign] {
                        let mut probe = life.clone();
                        let answer = probe.handle(NoticeEvent::Cancel(authorization));
                        let stateless = NoticeLifecycle::new().handle(NoticeEvent::Cancel(authorization));
                        prop_assert_eq!(&answer, &stateless);
                        prop_assert_eq!(&probe, &life);
                    }
                }
            }
        }
    }
}
