//! The run's one memory budget, shared by every worker and every table.
//!
//! What a file destination holds of a run's rows beyond the batch each
//! worker is filling is counted here, in one total (`--memory`):
//!
//! - the bytes of units that finished ahead of their turn ([`crate::spool::Spool`])
//!   and the batches of Parquet and Arrow units until their rows are cut
//!   into groups ([`crate::spool::HeldBatches`]);
//! - the rows of groups cut and waiting to be encoded;
//! - groups being encoded (their rows, and what the format's encoder
//!   says it holds beside them while it works: its copies and output,
//!   and for Parquet the one column writer it holds at a time);
//! - encoded groups waiting for the groups before them to be appended.
//!
//! Two ways to stay within it. What can wait on disk does: a unit's bytes
//! or batches spill to a part file once the budget is spent
//! ([`MemoryBudget::try_take`]), so reading goes on. What cannot (a group
//! to encode) waits for room, except the group its table's writer needs
//! next: that one always proceeds ([`MemoryBudget::take`]), going over the
//! budget by one group if it must.
//! Room comes back as groups are appended, and appending needs only the
//! next group, so a wait always ends: nothing that waits holds up what it
//! waits for.
//!
//! So that the group a writer needs next does not go over the budget, what
//! is taken only if it fits leaves room for one such group being encoded
//! ([`MemoryBudget::keep_free`]): a Parquet or Arrow table keeps its
//! group's rows and working bytes free. Units then spill to part files
//! sooner instead. Before, units held the whole budget and the next group
//! went over it by its rows, pages and copies: 500-column Parquet at
//! `--memory 64` peaked 54 MB over what docs/PERFORMANCE.md promises.
//!
//! Before this budget, groups being encoded and encoded groups waiting for
//! their turn were not counted, and their number grew with the cores: on
//! 16 cores, Parquet at `-j 16` peaked at 574 MB.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a wait for room looks again: room given back by another
/// table, or the run stopping, signals no one.
pub(crate) const WAIT_TICK: Duration = Duration::from_millis(20);

/// Bytes of the run's rows held in memory, shared by all workers.
///
/// It also bounds the row groups being encoded at once by the cores: more
/// of them than cores gains no speed, only memory
/// (see [`MemoryBudget::try_start_encoding`]).
#[derive(Debug)]
pub struct MemoryBudget {
    total: usize,
    used: AtomicUsize,
    /// The most `used` has been, for tests and benchmarks.
    peak: AtomicUsize,
    stopped: AtomicBool,
    /// Row groups being encoded now, in all tables.
    encoding: AtomicUsize,
    /// How many may be, beyond the one each table may always encode.
    max_encoding: usize,
    /// Bytes that only what must proceed may take (see the module docs).
    kept_free: AtomicUsize,
}

impl MemoryBudget {
    pub fn new(bytes: usize) -> Arc<Self> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Arc::new(MemoryBudget {
            total: bytes,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
            encoding: AtomicUsize::new(0),
            max_encoding: cores,
            kept_free: AtomicUsize::new(0),
        })
    }

    /// The budget, in bytes.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Bytes not taken (none when over the budget).
    pub fn free(&self) -> usize {
        self.total.saturating_sub(self.used())
    }

    /// Bytes taken now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    /// The most bytes taken at once so far.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }

    /// Keeps at least `bytes` of the budget for what must proceed (the
    /// group a table's writer needs next): [`MemoryBudget::try_take`]
    /// leaves them free. Keeping more than the budget leaves nothing to
    /// take, and everything that can spills.
    pub(crate) fn keep_free(&self, bytes: usize) {
        self.kept_free.fetch_max(bytes, Ordering::AcqRel);
    }

    /// Bytes [`MemoryBudget::try_take`] leaves free.
    pub fn kept_free(&self) -> usize {
        self.kept_free.load(Ordering::Acquire)
    }

    /// Takes `bytes` if they fit in what is free, beside what is kept free
    /// ([`MemoryBudget::keep_free`]).
    pub(crate) fn try_take(&self, bytes: usize) -> bool {
        let limit = self.total.saturating_sub(self.kept_free());
        // A compare-exchange loop: `fetch_update` is deprecated in newer
        // Rust and its successor missing in older.
        let mut used = self.used.load(Ordering::Acquire);
        loop {
            match used.checked_add(bytes) {
                Some(now) if now <= limit => {}
                _ => return false,
            }
            match self.used.compare_exchange_weak(
                used,
                used + bytes,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    self.peak.fetch_max(used + bytes, Ordering::AcqRel);
                    return true;
                }
                Err(now) => used = now,
            }
        }
    }

    /// Takes `bytes` whether they fit or not: for memory that is already
    /// held (rows read back from a part file) or must be (the group a
    /// table's writer needs next).
    pub(crate) fn take(&self, bytes: usize) {
        let now = self.used.fetch_add(bytes, Ordering::AcqRel) + bytes;
        self.peak.fetch_max(now, Ordering::AcqRel);
    }

    pub(crate) fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }

    /// The run is stopping: every wait ends with [`Wait::Stopped`].
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Whether a table that already has `table_encoding` groups being
    /// encoded may start one more; if so, it is counted until
    /// [`MemoryBudget::end_encoding`]. A table with none may always
    /// start one, so every table progresses and nothing waits on another.
    pub(crate) fn try_start_encoding(&self, table_encoding: usize) -> bool {
        let now = self.encoding.fetch_add(1, Ordering::AcqRel);
        if table_encoding == 0 || now < self.max_encoding {
            return true;
        }
        self.encoding.fetch_sub(1, Ordering::AcqRel);
        false
    }

    pub(crate) fn end_encoding(&self) {
        self.encoding.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Bytes taken from a budget, given back when dropped: whatever happens
/// to what they count (appended, dropped by a failed run), the budget
/// gets them back.
#[derive(Debug)]
pub(crate) struct Taken {
    budget: Arc<MemoryBudget>,
    bytes: usize,
}

impl Taken {
    /// `bytes` taken from `budget` whether they fit or not
    /// ([`MemoryBudget::take`]).
    pub fn over(budget: &Arc<MemoryBudget>, bytes: usize) -> Taken {
        budget.take(bytes);
        Taken {
            budget: budget.clone(),
            bytes,
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// `bytes` taken from `budget` if they fit.
    pub fn within(budget: &Arc<MemoryBudget>, bytes: usize) -> Option<Taken> {
        budget.try_take(bytes).then(|| Taken {
            budget: budget.clone(),
            bytes,
        })
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}
