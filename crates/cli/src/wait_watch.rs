//! The bounds on waiting for the database that the server does not give.
//!
//! `--lock-timeout`: a prepare that waits behind another user's DROP or
//! ALTER (see [`fbunload::longest_prepare`]). It cannot be cancelled, so a
//! thread watches the prepares and, when one has waited too long, names
//! its table and ends the process, as a stop after Ctrl-C does when the
//! server does not let go.
//!
//! `--stall-timeout`: a worker's call that the server never answers, as
//! when the server is stopped or stuck or the network drops the connection
//! without closing it. The run itself ends that one cleanly, by closing
//! its connections ([`fbunload::RunOptions::stall_timeout`]); the same
//! thread ends the process if that has not worked [`FALLBACK_AFTER`] later
//! (see [`fbunload::ReadWatch`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the watch looks; small beside any timeout a user gives.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// How long after `--stall-timeout` the process ends by itself if the
/// run's own closing of its connections did not end the wait.
const FALLBACK_AFTER: Duration = Duration::from_secs(15);

/// Watches while it lives.
pub(crate) struct WaitWatch {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl WaitWatch {
    /// `stall_timeout`: `None` waits on reads for ever.
    pub(crate) fn start(lock_timeout: Duration, stall_timeout: Option<Duration>) -> WaitWatch {
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut reads = fbunload::ReadWatch::new();
                while !done.load(Ordering::Relaxed) {
                    std::thread::park_timeout(LOOK_EVERY);
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Some(stuck) = fbunload::longest_prepare() {
                        if stuck.waited >= lock_timeout {
                            give_up_on_prepare(&stuck.subject, lock_timeout);
                        }
                    }
                    if let Some(limit) = stall_timeout {
                        if let Some(read) = reads.look() {
                            if fallback_due(read.waited, limit) {
                                give_up_on_read(&read.subject, limit);
                            }
                        }
                    }
                }
            })
        };
        WaitWatch {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for WaitWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            // Wakes it, so that a run does not end up to LOOK_EVERY late.
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Whether a read that has `waited` is [`FALLBACK_AFTER`] past `limit`;
/// never, where that sum is beyond what a `Duration` holds.
fn fallback_due(waited: Duration, limit: Duration) -> bool {
    limit
        .checked_add(FALLBACK_AFTER)
        .is_some_and(|due| waited >= due)
}

const NOTHING_PUBLISHED: &str = "No manifest.json was written; the next run into the directory \
                                 removes the unfinished files";

/// Ends the process: the thread in the prepare cannot be got back, and
/// the client library's exit handlers would wait for it.
fn give_up_on_prepare(subject: &str, timeout: Duration) -> ! {
    eprintln!(
        "fbunload: error: {subject}: its query waited {} s to be prepared: another attachment \
         is dropping or altering it (its DDL waits to commit), or the server stopped answering. \
         Try again when that is done, or wait longer with --lock-timeout SECONDS. \
         {NOTHING_PUBLISHED}",
        timeout.as_secs()
    );
    crate::exit_without_cleanup(1)
}

/// Ends the process, as [`give_up_on_prepare`] does.
fn give_up_on_read(subject: &str, timeout: Duration) -> ! {
    eprintln!(
        "fbunload: error: {subject}: no answer from the database for {} s: the server or the \
         network stopped answering (a stopped or stuck server, a connection dropped without \
         being closed). Check the server and try again, or wait longer with --stall-timeout \
         SECONDS (0: no limit). {NOTHING_PUBLISHED}",
        timeout.as_secs()
    );
    crate::exit_without_cleanup(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_comes_15_s_after_the_limit_and_never_past_durations_end() {
        let limit = Duration::from_secs(5);
        assert!(!fallback_due(Duration::from_secs(19), limit));
        assert!(fallback_due(Duration::from_secs(20), limit));
        // `limit + FALLBACK_AFTER` overflowed here and ended the watch.
        assert!(!fallback_due(Duration::MAX, Duration::MAX));
        assert!(!fallback_due(Duration::MAX, Duration::from_secs(u64::MAX)));
    }
}
