//! The prepares under way in this process, and the calls that read rows
//! on the threads that asked to be watched, so that a watcher can see one
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

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
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

/// Why reads are watched as well: a read (a prepare, opening a cursor,
/// fetching, a blob segment, an array slice) waits on the server's answer, and a
/// server that stops answering without closing the connection (a process
/// stopped or stuck, a firewall that drops an idle connection's packets)
/// leaves that call waiting for ever. TCP keepalive ends it only after
/// hours, or never when the server's machine still acknowledges. The
/// client library has no bound for it either, and `fb_cancel_operation`
/// needs the server's answer too. So, as for prepares, the bound is a
/// watcher outside the call ([`ReadWatch`]).
///
/// Only threads that ask ([`watch_reads_on_this_thread`]) are watched: an
/// unload's workers read a unit at a time, so no call of theirs should wait
/// long, while a `COUNT(*)` of a whole table may legitimately take hours.
struct ReadState {
    id: u64,
    /// The run the thread reads for now ([`new_read_group`]), so that one
    /// run's watch sees its own workers only.
    group: AtomicU64,
    /// Reads this thread has finished: the watcher sees progress by it.
    /// Written by its thread only, so a plain load and store suffice.
    finished: AtomicU64,
    /// Whether the thread is inside a read now.
    in_read: AtomicBool,
    /// What the thread reads, as its statement's subject names it.
    subject: Mutex<Option<Arc<str>>>,
    /// The address of `subject`'s text, so that a read of the same
    /// statement, row after row, need not take the lock. `subject` keeps
    /// that text alive, so the same address is the same subject.
    subject_key: AtomicUsize,
}

static READERS: Mutex<Vec<Weak<ReadState>>> = Mutex::new(Vec::new());

thread_local! {
    static THIS_READER: RefCell<Option<Arc<ReadState>>> = const { RefCell::new(None) };
}

/// A new group of watched threads: one run's workers.
pub fn new_read_group() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Makes the calls that read rows on this thread visible to a
/// [`ReadWatch`] of `group` (and to one of every group) until the thread
/// ends or joins another group.
pub fn watch_reads_on_this_thread(group: u64) {
    THIS_READER.with(|reader| {
        let mut reader = reader.borrow_mut();
        if let Some(state) = reader.as_ref() {
            state.group.store(group, Ordering::Relaxed);
        } else {
            let state = Arc::new(ReadState {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                group: AtomicU64::new(group),
                finished: AtomicU64::new(0),
                in_read: AtomicBool::new(false),
                subject: Mutex::new(None),
                subject_key: AtomicUsize::new(0),
            });
            let mut readers = READERS.lock().unwrap_or_else(|e| e.into_inner());
            // Threads that ended leave, even in a process with no watcher.
            readers.retain(|r| r.strong_count() > 0);
            readers.push(Arc::downgrade(&state));
            *reader = Some(state);
        }
    });
}

/// Undoes [`watch_reads_on_this_thread`]: this thread's calls are no
/// longer seen by any watch.
pub fn stop_watching_reads_on_this_thread() {
    THIS_READER.with(|reader| reader.borrow_mut().take());
}

/// Names what this thread's calls are for until a read names its own
/// subject (`attaching a reader`), if the thread is watched.
pub fn name_reads_on_this_thread(subject: &str) {
    THIS_READER.with(|reader| {
        if let Some(state) = reader.borrow().as_ref() {
            let subject: Arc<str> = Arc::from(subject);
            state
                .subject_key
                .store(subject.as_ptr() as usize, Ordering::Relaxed);
            *state.subject.lock().unwrap_or_else(|e| e.into_inner()) = Some(subject);
        }
    });
}

/// Whether this thread's calls are watched.
pub(crate) fn is_watched() -> bool {
    THIS_READER.with(|reader| reader.borrow().is_some())
}

/// Marks a read under way on this thread (if it is watched) until dropped.
/// Made and dropped on the same thread; it is on the path of every row.
pub(crate) struct Reading {
    watched: bool,
}

/// Enters a read; `subject` names what it reads (`None`: the same as the
/// thread's last read, as for a blob of the row just fetched).
pub(crate) fn reading(subject: Option<&Arc<str>>) -> Reading {
    let watched = THIS_READER.with(|reader| {
        let reader = reader.borrow();
        let Some(state) = reader.as_ref() else {
            return false;
        };
        if let Some(subject) = subject {
            let key = subject.as_ptr() as usize;
            if state.subject_key.load(Ordering::Relaxed) != key {
                *state.subject.lock().unwrap_or_else(|e| e.into_inner()) = Some(subject.clone());
                state.subject_key.store(key, Ordering::Relaxed);
            }
        }
        state.in_read.store(true, Ordering::Release);
        true
    });
    Reading { watched }
}

impl Drop for Reading {
    fn drop(&mut self) {
        if self.watched {
            THIS_READER.with(|reader| {
                if let Some(state) = reader.borrow().as_ref() {
                    let finished = state.finished.load(Ordering::Relaxed);
                    state.finished.store(finished + 1, Ordering::Release);
                    state.in_read.store(false, Ordering::Release);
                }
            });
        }
    }
}

/// A read that has waited `waited` with no other read finishing on its
/// thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StalledRead {
    /// What it reads (e.g. `table STOCK`), or `a read` if unnamed.
    pub subject: String,
    pub waited: Duration,
}

/// Looks at the watched threads from time to time and tells how long the
/// longest-waiting read has waited, to within the time between looks.
#[derive(Default)]
pub struct ReadWatch {
    /// Only the threads of this group; `None`: every watched thread.
    group: Option<u64>,
    /// Per watched thread inside a read at the last look: its count of
    /// finished reads then, and since when that count has not moved.
    seen: HashMap<u64, (u64, Instant)>,
}

impl ReadWatch {
    /// A watch of every watched thread.
    pub fn new() -> ReadWatch {
        ReadWatch::default()
    }

    /// A watch of the threads of `group` ([`new_read_group`]).
    pub fn of_group(group: u64) -> ReadWatch {
        ReadWatch {
            group: Some(group),
            ..ReadWatch::default()
        }
    }

    /// The read that has waited longest as of now, if any is under way.
    pub fn look(&mut self) -> Option<StalledRead> {
        let now = Instant::now();
        let live: Vec<Arc<ReadState>> = {
            let mut readers = READERS.lock().unwrap_or_else(|e| e.into_inner());
            readers.retain(|r| r.strong_count() > 0);
            readers.iter().filter_map(Weak::upgrade).collect()
        };
        let mut seen = HashMap::new();
        let mut longest: Option<(Duration, &Arc<ReadState>)> = None;
        for state in &live {
            let in_group = self
                .group
                .is_none_or(|group| state.group.load(Ordering::Relaxed) == group);
            if !in_group || !state.in_read.load(Ordering::Acquire) {
                continue;
            }
            let finished = state.finished.load(Ordering::Acquire);
            let since = match self.seen.get(&state.id) {
                Some(&(then, since)) if then == finished => since,
                _ => now,
            };
            seen.insert(state.id, (finished, since));
            let waited = now.saturating_duration_since(since);
            if longest.is_none_or(|(w, _)| waited > w) {
                longest = Some((waited, state));
            }
        }
        self.seen = seen;
        longest.map(|(waited, state)| StalledRead {
            subject: state
                .subject
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_deref()
                .unwrap_or("a read")
                .to_string(),
            waited,
        })
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

    /// A watched thread that is stuck in a read is seen waiting longer at
    /// every look; one whose reads keep finishing never is; an unwatched
    /// thread is not seen at all.
    #[test]
    fn a_read_that_never_finishes_is_seen_waiting_and_one_that_moves_is_not() {
        let group = new_read_group();
        let stop = Arc::new(AtomicBool::new(false));
        let moving = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                watch_reads_on_this_thread(group);
                let subject: Arc<str> = Arc::from("table MOVING");
                while !stop.load(Ordering::Relaxed) {
                    let _read = reading(Some(&subject));
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        let unwatched = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let _read = reading(Some(&Arc::from("table UNWATCHED")));
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        let mut watch = ReadWatch::of_group(group);
        let mut other_run = ReadWatch::of_group(new_read_group());
        std::thread::sleep(Duration::from_millis(20));
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(20));
            // The moving thread's wait starts again at each look (give or
            // take a loaded machine's pauses).
            if let Some(read) = watch.look() {
                assert_eq!(read.subject, "table MOVING");
                assert!(read.waited < Duration::from_millis(500), "{read:?}");
            }
        }
        let stuck = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                watch_reads_on_this_thread(group);
                let subject: Arc<str> = Arc::from("table STUCK");
                drop(reading(Some(&subject)));
                // A blob of the row just read: no subject of its own.
                let _read = reading(None);
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        watch.look();
        other_run.look();
        std::thread::sleep(Duration::from_millis(60));
        let read = watch.look().expect("the stuck read");
        assert_eq!(read.subject, "table STUCK");
        assert!(read.waited >= Duration::from_millis(60), "{read:?}");
        assert_eq!(
            other_run.look(),
            None,
            "another run's watch sees none of it"
        );
        stop.store(true, Ordering::Relaxed);
        for thread in [moving, unwatched, stuck] {
            thread.join().unwrap();
        }
        // Finished threads leave the registry.
        assert_eq!(watch.look(), None);
    }
}
