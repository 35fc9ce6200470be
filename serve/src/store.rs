//! Durable recovery state: each session's event log, on redb.
//!
//! The recovery engine is deterministic and sans-I/O, so its state is a function of its event
//! log and the bundle each event was classified with: the store keeps exactly that (event
//! sourcing), and a restart rebuilds every session by replaying its log. Each acknowledged
//! event is appended in one write transaction together with the session's counter and, the
//! first time a bundle is used, the bundle's bytes (so a replay classifies with the bundle the
//! event was first applied with, whatever serves now). The server applies an event only after
//! the commit returns, and answers only after applying: nothing is acknowledged, applied or
//! scheduled unless it is durable.
//!
//! Why redb rather than SQLite: pure Rust (no C toolchain, nothing for `cargo deny` to vet
//! beyond one crate), ACID with copy-on-write B-trees and a checksummed commit, one file,
//! and a typed key-value API that fits an append-only log keyed by `(session, sequence)`;
//! SQLite's SQL and schema migrations would buy nothing here. Layout (docs/serve.md):
//!
//! - `sessions`: session id → `{"provider_id":…,"events":N}`;
//! - `events`: `(session id, sequence from 0)` → `{"bundle":hash,"event":{…}}`;
//! - `bundles`: content hash → the bundle file's bytes.

use std::path::Path;

use redb::{Database, ReadableTable as _, TableDefinition};
use serde::{Deserialize, Serialize};

const SESSIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("sessions");
const EVENTS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("events");
const BUNDLES: TableDefinition<&str, &[u8]> = TableDefinition::new("bundles");

/// A store operation failed; the message is redb's, for a person.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{operation} failed: {message}")]
pub(crate) struct StoreError {
    pub(crate) operation: &'static str,
    pub(crate) message: String,
}

impl StoreError {
    fn new(operation: &'static str, error: impl std::fmt::Display) -> StoreError {
        StoreError {
            operation,
            message: error.to_string(),
        }
    }
}

/// One event to append.
#[derive(Debug)]
pub(crate) struct Append<'a> {
    pub(crate) session: &'a str,
    /// Its sequence number: the session's event count before it.
    pub(crate) sequence: u64,
    pub(crate) provider_id: &'a str,
    /// The session's decision context (`kanban`, `office`), if it decides.
    pub(crate) context: Option<&'a str>,
    pub(crate) bundle_hash: &'a str,
    pub(crate) bundle_bytes: &'a [u8],
    /// The event as the engine reads it (its JSON object).
    pub(crate) event: &'a serde_json::Value,
}

/// What the `sessions` table holds per session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SessionRecord {
    pub(crate) provider_id: String,
    pub(crate) events: u64,
    /// The decision context the session decides in; absent: it does not decide (and in the
    /// records of servers that predate decisions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<String>,
}

/// What the `events` table holds per event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EventRecord {
    pub(crate) bundle: String,
    pub(crate) event: serde_json::Value,
}

/// The durable store the sessions write through.
pub(crate) trait Store: Send + Sync + std::fmt::Debug {
    /// Appends one event in one transaction; durable when this returns `Ok`.
    fn append(&self, append: &Append<'_>) -> Result<(), StoreError>;
    /// Every session and its record.
    fn sessions(&self) -> Result<Vec<(String, SessionRecord)>, StoreError>;
    /// A session's events, in order.
    fn events(&self, session: &str) -> Result<Vec<EventRecord>, StoreError>;
    /// A stored bundle's bytes.
    fn bundle(&self, hash: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Removes a session and its log in one transaction.
    fn delete(&self, session: &str) -> Result<bool, StoreError>;
}

/// The redb store: a file under the state directory, or memory when there is none.
#[derive(Debug)]
pub(crate) struct RedbStore {
    database: Database,
}

impl RedbStore {
    /// Opens (or creates) `directory/sessions.redb`.
    pub(crate) fn open(directory: &Path) -> Result<RedbStore, StoreError> {
        std::fs::create_dir_all(directory).map_err(|error| StoreError::new("open", error))?;
        let database = Database::create(directory.join("sessions.redb"))
            .map_err(|error| StoreError::new("open", error))?;
        RedbStore::initialized(database)
    }

    /// A store that lives in memory: sessions then last as long as the process.
    pub(crate) fn in_memory() -> Result<RedbStore, StoreError> {
        let database = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(|error| StoreError::new("open", error))?;
        RedbStore::initialized(database)
    }

    /// Creates the tables, so that readers never meet a missing one.
    fn initialized(database: Database) -> Result<RedbStore, StoreError> {
        let write = database
            .begin_write()
            .map_err(|error| StoreError::new("open", error))?;
        {
            write
                .open_table(SESSIONS)
                .map_err(|error| StoreError::new("open", error))?;
            write
                .open_table(EVENTS)
                .map_err(|error| StoreError::new("open", error))?;
            write
                .open_table(BUNDLES)
                .map_err(|error| StoreError::new("open", error))?;
        }
        write
            .commit()
            .map_err(|error| StoreError::new("open", error))?;
        Ok(RedbStore { database })
    }
}

impl Store for RedbStore {
    fn append(&self, append: &Append<'_>) -> Result<(), StoreError> {
        let fail = |error: &dyn std::fmt::Display| StoreError::new("append", error);
        let record = serde_json::to_vec(&EventRecord {
            bundle: append.bundle_hash.to_owned(),
            event: append.event.clone(),
        })
        .map_err(|error| fail(&error))?;
        let session = serde_json::to_vec(&SessionRecord {
            provider_id: append.provider_id.to_owned(),
            events: append.sequence.saturating_add(1),
            context: append.context.map(str::to_owned),
        })
        .map_err(|error| fail(&error))?;
        let write = self.database.begin_write().map_err(|error| fail(&error))?;
        {
            let mut bundles = write.open_table(BUNDLES).map_err(|error| fail(&error))?;
            let known = bundles
                .get(append.bundle_hash)
                .map_err(|error| fail(&error))?
                .is_some();
            if !known {
                bundles
                    .insert(append.bundle_hash, append.bundle_bytes)
                    .map_err(|error| fail(&error))?;
            }
            let mut events = write.open_table(EVENTS).map_err(|error| fail(&error))?;
            events
                .insert((append.session, append.sequence), record.as_slice())
                .map_err(|error| fail(&error))?;
            let mut sessions = write.open_table(SESSIONS).map_err(|error| fail(&error))?;
            sessions
                .insert(append.session, session.as_slice())
                .map_err(|error| fail(&error))?;
        }
        write.commit().map_err(|error| fail(&error))
    }

    fn sessions(&self) -> Result<Vec<(String, SessionRecord)>, StoreError> {
        let fail = |error: &dyn std::fmt::Display| StoreError::new("list sessions", error);
        let read = self.database.begin_read().map_err(|error| fail(&error))?;
        let table = read.open_table(SESSIONS).map_err(|error| fail(&error))?;
        let mut found = Vec::new();
        for entry in table.iter().map_err(|error| fail(&error))? {
            let (key, value) = entry.map_err(|error| fail(&error))?;
            let record: SessionRecord =
                serde_json::from_slice(value.value()).map_err(|error| fail(&error))?;
            found.push((key.value().to_owned(), record));
        }
        Ok(found)
    }

    fn events(&self, session: &str) -> Result<Vec<EventRecord>, StoreError> {
        let fail = |error: &dyn std::fmt::Display| StoreError::new("read events", error);
        let read = self.database.begin_read().map_err(|error| fail(&error))?;
        let table = read.open_table(EVENTS).map_err(|error| fail(&error))?;
        let mut found = Vec::new();
        for entry in table
            .range((session, 0)..=(session, u64::MAX))
            .map_err(|error| fail(&error))?
        {
            let (_, value) = entry.map_err(|error| fail(&error))?;
            found.push(serde_json::from_slice(value.value()).map_err(|error| fail(&error))?);
        }
        Ok(found)
    }

    fn bundle(&self, hash: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let fail = |error: &dyn std::fmt::Display| StoreError::new("read bundle", error);
        let read = self.database.begin_read().map_err(|error| fail(&error))?;
        let table = read.open_table(BUNDLES).map_err(|error| fail(&error))?;
        Ok(table
            .get(hash)
            .map_err(|error| fail(&error))?
            .map(|value| value.value().to_vec()))
    }

    fn delete(&self, session: &str) -> Result<bool, StoreError> {
        let fail = |error: &dyn std::fmt::Display| StoreError::new("delete", error);
        let write = self.database.begin_write().map_err(|error| fail(&error))?;
        let existed;
        {
            let mut sessions = write.open_table(SESSIONS).map_err(|error| fail(&error))?;
            existed = sessions
                .remove(session)
                .map_err(|error| fail(&error))?
                .is_some();
            let mut events = write.open_table(EVENTS).map_err(|error| fail(&error))?;
            events
                .retain_in((session, 0)..=(session, u64::MAX), |_, _| false)
                .map_err(|error| fail(&error))?;
        }
        write.commit().map_err(|error| fail(&error))?;
        Ok(existed)
    }
}

/// A store whose `n`-th append (counting from 1) fails, for the tests that prove a failed
/// write acknowledges, applies and schedules nothing.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct FailingStore {
    pub(crate) inner: RedbStore,
    pub(crate) fail_at: u64,
    pub(crate) appends: std::sync::atomic::AtomicU64,
}

#[cfg(test)]
impl Store for FailingStore {
    fn append(&self, append: &Append<'_>) -> Result<(), StoreError> {
        let n = self
            .appends
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .saturating_add(1);
        if n == self.fail_at {
            return Err(StoreError::new("append", "injected failure: disk full"));
        }
        self.inner.append(append)
    }

    fn sessions(&self) -> Result<Vec<(String, SessionRecord)>, StoreError> {
        self.inner.sessions()
    }

    fn events(&self, session: &str) -> Result<Vec<EventRecord>, StoreError> {
        self.inner.events(session)
    }

    fn bundle(&self, hash: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.inner.bundle(hash)
    }

    fn delete(&self, session: &str) -> Result<bool, StoreError> {
        self.inner.delete(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_events_survive_reopening_in_order() {
        let directory = tempfile::tempdir().unwrap();
        let event = |n: u64| serde_json::json!({"event": "lifecycle_retired", "n": n});
        {
            let store = RedbStore::open(directory.path()).unwrap();
            for sequence in 0..3 {
                store
                    .append(&Append {
                        session: "s1",
                        sequence,
                        provider_id: "claude-acp",
                        context: Some("office"),
                        bundle_hash: "h1",
                        bundle_bytes: b"bytes",
                        event: &event(sequence),
                    })
                    .unwrap();
            }
            store
                .append(&Append {
                    session: "s10",
                    sequence: 0,
                    provider_id: "",
                    context: None,
                    bundle_hash: "h1",
                    bundle_bytes: b"other bytes are ignored: the hash is known",
                    event: &event(9),
                })
                .unwrap();
        }
        let store = RedbStore::open(directory.path()).unwrap();
        let sessions = store.sessions().unwrap();
        assert_eq!(
            sessions,
            vec![
                (
                    "s1".to_owned(),
                    SessionRecord {
                        provider_id: "claude-acp".to_owned(),
                        events: 3,
                        context: Some("office".to_owned()),
                    }
                ),
                (
                    "s10".to_owned(),
                    SessionRecord {
                        provider_id: String::new(),
                        events: 1,
                        context: None,
                    }
                )
            ]
        );
        let events: Vec<_> = store
            .events("s1")
            .unwrap()
            .into_iter()
            .map(|record| record.event["n"].clone())
            .collect();
        assert_eq!(events, vec![0, 1, 2]);
        assert_eq!(store.bundle("h1").unwrap(), Some(b"bytes".to_vec()));
        assert!(store.delete("s1").unwrap());
        assert!(store.events("s1").unwrap().is_empty());
        assert_eq!(store.events("s10").unwrap().len(), 1);
        assert!(!store.delete("s1").unwrap());
    }
}
