//! `--lock-timeout`: the bound on a prepare that waits behind another
//! user's DROP or ALTER. The server offers none (see
//! [`fbunload::longest_prepare`]), so a thread watches the prepares under
//! way and, when one has waited too long, names its table and ends the
//! process, as a stop after Ctrl-C does when the server does not let go.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the watch looks; small beside any timeout a user gives.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// Watches while it lives.
pub(crate) struct LockWatch {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LockWatch {
    pub(crate) fn start(timeout: Duration) -> LockWatch {
        let done = Arc::new(AtomicBool::new(false));
        let thread = {
            let done = done.clone();
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    std::thread::park_timeout(LOOK_EVERY);
                    if let Some(stuck) = fbunload::longest_prepare() {
                        if stuck.waited >= timeout && !done.load(Ordering::Relaxed) {
                            give_up(&stuck.subject, timeout);
                        }
                    }
                }
            })
        };
        LockWatch {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for LockWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            // Wakes it, so that a run does not end up to LOOK_EVERY late.
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Ends the process: the thread in the prepare cannot be got back, and
/// the client library's exit handlers would wait for it.
fn give_up(subject: &str, timeout: Duration) -> ! {
    eprintln!(
        "fbunload: error: {subject}: its query waited {} s to be prepared: another attachment \
         is dropping or altering it (its DDL waits to commit). Try again when that is done, or \
         wait longer with --lock-timeout SECONDS. No manifest.json was written; the next run \
         into the directory removes the unfinished files",
        timeout.as_secs()
    );
    crate::exit_without_cleanup(1)
}
