//! The prepares under way in this process, so that a watcher can see one
//! that waits too long and give up on the run.
//!
//! Why a registry rather than a timeout on the call: preparing a query
//! takes a lock on the definition of each table it reads, and when another
//! user's DROP or ALTER of that table is waiting to commit, the prepare
//! queues behind it. Firebird offers no bound for that wait: the
//! transaction's lock timeout does not apply to it and `fb_cancel_operation`
//! (raise or abort) does not end it (seen on Firebird 5). If the DDL itself
//! waits on the process's own transaction, which holds the table since it
//! read it, the two wait for each other for ever. The only bound left is
//! outside the call: a watcher that sees how long the oldest prepare has
//! waited ([`longest_prepare`]) and ends the process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A prepare that has been under way for `waited`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preparing {
    /// What the query reads, as the caller named it (e.g. `table STOCK`),
    /// or its SQL text when the caller gave no name.
    pub subject: String,
    pub waited: Duration,
}

struct Entry {
    id: u64,
    since: Instant,
    subject: String,
}

static UNDER_WAY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// The prepare that has been under way longest, if one is.
pub fn longest_prepare() -> Option<Preparing> {
    let now = Instant::now();
    let under_way = UNDER_WAY.lock().unwrap_or_else(|e| e.into_inner());
    under_way
        .iter()
        .min_by_key(|entry| entry.since)
        .map(|entry| Preparing {
            subject: entry.subject.clone(),
            waited: now.saturating_duration_since(entry.since),
        })
}

/// Keeps a prepare in the registry until dropped.
pub(crate) struct UnderWay {
    id: u64,
}

/// Enters a prepare of `subject` into the registry.
pub(crate) fn begin(subject: &str) -> UnderWay {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    UNDER_WAY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Entry {
            id,
            since: Instant::now(),
            subject: subject.to_string(),
        });
    UnderWay { id }
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        UNDER_WAY
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|entry| entry.id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Other tests in this binary prepare nothing, so the registry holds
    /// only what this test enters (one test, so no other thread races it).
    #[test]
    fn the_oldest_prepare_under_way_is_reported_until_it_ends() {
        assert_eq!(longest_prepare(), None);
        let first = begin("table A");
        std::thread::sleep(Duration::from_millis(20));
        let second = begin("table B");
        let longest = longest_prepare().unwrap();
        assert_eq!(longest.subject, "table A");
        assert!(longest.waited >= Duration::from_millis(20));
        drop(first);
        assert_eq!(longest_prepare().unwrap().subject, "table B");
        drop(second);
        assert_eq!(longest_prepare(), None);
    }
}
