//! The coordinator: hands units to workers, redoes the ones whose
//! connection was lost, stops everyone on the first error or signal, and
//! counts rows; a destination does the writing.
//!
//! Workers take units one at a time from a shared counter — the only
//! global scan state, as in DuckDB's postgres scanner — in the plan's
//! order (biggest table first), so one huge table and many small ones keep
//! every worker busy. The calling thread watches while they work: it checks
//! that the snapshot is still held, and when the run must stop it
//! interrupts whatever a connection is blocked in (a lock wait, say), so
//! that a signal ends the run within moments.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use fbunload_plan::{Plan, Unit};

use crate::destination::{Destination, UnitWriter};
use crate::session::{Reader, Session};
use crate::{ExecError, Progress};

/// How a dispatch goes.
pub(crate) struct DispatchOptions {
    pub workers: usize,
    pub fetch_only: bool,
    pub verify: bool,
    /// Redos of lost units per worker before the run fails.
    pub max_retries: u32,
    /// Whether each worker gets a writer thread (there are spare cores).
    pub pipelined: bool,
    pub cancel: Arc<AtomicBool>,
    /// See [`crate::RunOptions::stall_timeout`].
    pub stall_timeout: Option<Duration>,
}

/// What a successful dispatch read.
#[derive(Debug)]
pub(crate) struct Dispatched {
    /// Rows per table of the plan.
    pub rows: Vec<u64>,
    pub retries: u64,
}

/// How long a call may still wait once the run is stopping before its
/// connection is closed: a healthy server answers an interrupt at once.
const STOPPING_GRACE: Duration = Duration::from_secs(5);

/// How often the coordinator checks that the snapshot is still held.
const SNAPSHOT_CHECK: Duration = Duration::from_millis(250);
/// How often it looks at the workers and the cancel flag in between.
const WATCH_TICK: Duration = Duration::from_millis(20);

/// How often a worker without a unit looks whether the last planned one
/// was written (see `Run::next_follow_up`).
const FOLLOW_UP_WAIT: Duration = Duration::from_millis(2);

/// Batches a worker's fetcher may queue for its writer thread: enough to
/// smooth out a slow write, few enough to keep memory bounded.
const WRITER_QUEUE: usize = 4;

/// Bytes of batches a worker's fetcher may have handed to its writer
/// thread and not seen written (one batch is let through whatever its
/// size). Batches of narrow rows are a few MB and still queue
/// [`WRITER_QUEUE`] deep; batches of blobs reach the decoder's 16 MB cap,
/// and four of them queued beside the one being filled and the one being
/// written held about 100 MB that `--memory` does not count
/// (docs/PERFORMANCE.md, "BLOB-heavy and wide tables").
pub const WRITER_QUEUE_BYTES: usize = 16 << 20;

/// The bytes of batches handed to a writer thread and not yet written.
#[derive(Default)]
struct Handed {
    /// Bytes handed; whether the writer has stopped taking batches.
    state: Mutex<(usize, bool)>,
    written: Condvar,
}

impl Handed {
    /// Waits until `bytes` more fit in [`WRITER_QUEUE_BYTES`] (or nothing
    /// is handed, or the writer stopped), then counts them.
    fn reserve(&self, bytes: usize) {
        let mut state = self.state.lock().unwrap();
        while !state.1 && state.0 > 0 && state.0 + bytes > WRITER_QUEUE_BYTES {
            state = self.written.wait(state).unwrap();
        }
        state.0 += bytes;
    }

    fn release(&self, bytes: usize) {
        let mut state = self.state.lock().unwrap();
        state.0 = state.0.saturating_sub(bytes);
        self.written.notify_all();
    }

    /// The writer takes no more: nothing waits for it from now on.
    fn close(&self) {
        self.state.lock().unwrap().1 = true;
        self.written.notify_all();
    }
}

impl ToWriter {
    fn bytes(&self) -> usize {
        match self {
            ToWriter::Batch(batch) => batch.get_array_memory_size(),
            _ => 0,
        }
    }
}

/// Runs every unit of `plan` through `destination`. `on_start` is given the
/// session once every reader has joined its snapshot, before the first unit.
pub(crate) fn dispatch<S: Session>(
    session: &mut S,
    plan: &Plan,
    destination: &dyn Destination,
    options: &DispatchOptions,
    progress: &dyn Progress,
    on_start: &mut dyn FnMut(&S) -> Result<(), ExecError>,
) -> Result<Dispatched, ExecError> {
    let readers = readers_within(session, options)?;
    on_start(session)?;
    let run = Run {
        session: &*session,
        plan,
        destination,
        options,
        progress,
        next_unit: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        first_error: Mutex::new(None),
        rows: plan.tables.iter().map(|_| AtomicU64::new(0)).collect(),
        retries: AtomicU64::new(0),
        verifying: AtomicBool::new(false),
        unwritten: AtomicUsize::new(plan.units.len()),
        follow_ups: Mutex::new(None),
    };
    let busy = AtomicUsize::new(readers.len() + 1);
    // The read watch goes on until the coordinator's last check is done.
    let watching = AtomicBool::new(true);
    std::thread::scope(|scope| {
        let workers: Vec<_> = readers
            .into_iter()
            .map(|reader| {
                let (run, busy) = (&run, &busy);
                scope.spawn(move || {
                    run.guard(|| run.worker(reader));
                    busy.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        // Counting waits for the workers; the watch goes on meanwhile, so
        // a signal still interrupts a count blocked on a lock.
        let (run, busy, watching) = (&run, &busy, &watching);
        let watcher = std::thread::current();
        // Apart from the watch, which can itself wait on the database.
        let read_watcher = options.stall_timeout.map(|limit| {
            scope
                .spawn(move || run.watch_reads(watching, limit))
                .thread()
                .clone()
        });
        scope.spawn(move || {
            for worker in workers {
                let _ = worker.join();
            }
            if options.verify && !run.failed.load(Ordering::SeqCst) {
                run.guard(|| run.verify());
            }
            busy.fetch_sub(1, Ordering::SeqCst);
            // The watch ends now, not at its next tick.
            watcher.unpark();
        });
        run.watch(busy);
        watching.store(false, Ordering::SeqCst);
        if let Some(read_watcher) = read_watcher {
            read_watcher.unpark();
        }
    });
    if let Some(err) = run.first_error.into_inner().unwrap() {
        return Err(err);
    }
    Ok(Dispatched {
        rows: run.rows.iter().map(|r| r.load(Ordering::SeqCst)).collect(),
        retries: run.retries.load(Ordering::SeqCst),
    })
}

/// The session's readers, failing as a stalled read does when one of its
/// calls (an attach, the snapshot's start and checks, a reader process's
/// start) waits the stall timeout, and stopping at once on a signal: the
/// workers' watch does not run yet.
fn readers_within<S: Session>(
    session: &S,
    options: &DispatchOptions,
) -> Result<Vec<S::Reader>, ExecError> {
    let done = AtomicBool::new(false);
    // Why the watch stopped the start, if it did.
    let stopped: Mutex<Option<ExecError>> = Mutex::new(None);
    let readers = std::thread::scope(|scope| {
        let watch = scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                std::thread::park_timeout(WATCH_TICK);
                // A signal ends the start too (attaches, reader processes
                // starting): nothing here can go on once it is given.
                if options.cancel.load(Ordering::SeqCst) {
                    *stopped.lock().unwrap() = Some(ExecError::Interrupted);
                    session.abort();
                    return;
                }
                let Some(limit) = options.stall_timeout else {
                    continue;
                };
                if let Some((subject, waited)) = session.longest_read() {
                    if waited >= limit {
                        // Asked before the abort, which ends the processes
                        // it may look at.
                        *stopped.lock().unwrap() = Some(session.stalled(subject, limit.as_secs()));
                        session.abort();
                        return;
                    }
                }
            }
        });
        let readers = session.readers(options.workers);
        done.store(true, Ordering::SeqCst);
        watch.thread().unpark();
        readers
    });
    match stopped.into_inner().unwrap() {
        Some(err) => Err(err),
        None => readers,
    }
}

struct Run<'r, S: Session> {
    session: &'r S,
    plan: &'r Plan,
    destination: &'r dyn Destination,
    options: &'r DispatchOptions,
    progress: &'r dyn Progress,
    next_unit: AtomicUsize,
    failed: AtomicBool,
    first_error: Mutex<Option<ExecError>>,
    /// Rows of the units finished, per table.
    rows: Vec<AtomicU64>,
    retries: AtomicU64,
    /// `--verify` is counting on the main attachment: a check there would
    /// queue behind the count and block the watch, which must stay free
    /// to see a signal and interrupt a count blocked on a lock.
    verifying: AtomicBool,
    /// Planned units not written yet.
    unwritten: AtomicUsize,
    /// The units the destination asked for once every planned one was
    /// written ([`Destination::follow_ups`]), not yet taken; `None` until
    /// then.
    follow_ups: Mutex<Option<Vec<Unit>>>,
}

/// What a worker's fetcher tells the side that writes (its writer thread,
/// or itself).
enum ToWriter {
    Begin(Unit),
    Batch(RecordBatch),
    End,
    /// The unit failed or the run is stopping: undo what was written of it.
    Abort,
}

impl<'r, S: Session> Run<'r, S> {
    /// Records the first failure and tells every worker to stop.
    /// Runs `body`, failing the run if it fails. A panic (a bug) fails
    /// it too, rather than end a thread the others wait for, or leave the
    /// run to finish with a unit's rows missing.
    fn guard(&self, body: impl FnOnce() -> Result<(), ExecError>) {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            Ok(Ok(())) => {}
            Ok(Err(err)) => self.fail(err),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a thread panicked".into());
                self.fail(ExecError::Internal(message));
            }
        }
    }

    fn fail(&self, err: ExecError) {
        let mut first = self.first_error.lock().unwrap();
        if first.is_none() {
            *first = Some(err);
        }
        self.failed.store(true, Ordering::SeqCst);
    }

    /// Whether to stop: something failed, or the user interrupted.
    fn should_stop(&self) -> bool {
        if self.options.cancel.load(Ordering::SeqCst) && !self.failed.load(Ordering::SeqCst) {
            self.fail(ExecError::Interrupted);
        }
        self.failed.load(Ordering::SeqCst)
    }

    /// The coordinator's loop while anyone is busy: if the snapshot's
    /// holder goes, so does the guarantee that a worker can rejoin it, and
    /// the run stops rather than go on half protected. Once the run must
    /// stop, blocked connections are interrupted, once.
    fn watch(&self, busy: &AtomicUsize) {
        let mut last_check = Instant::now();
        let mut interrupted = false;
        while busy.load(Ordering::SeqCst) > 0 {
            std::thread::park_timeout(WATCH_TICK);
            if self.should_stop() {
                if !interrupted {
                    interrupted = true;
                    self.session.interrupt();
                    self.destination.stop();
                }
                continue;
            }
            if last_check.elapsed() >= SNAPSHOT_CHECK && !self.verifying.load(Ordering::SeqCst) {
                last_check = Instant::now();
                self.guard(|| self.session.check());
            }
        }
        // A loss in the last interval must still fail the run.
        if !self.failed.load(Ordering::SeqCst) {
            self.guard(|| self.session.check());
        }
    }

    /// Ends the run when a call of a worker (a read, and as much its
    /// attach, start, commit, rollback, detach and info calls, as in a redo
    /// after a lost connection) or of the coordinator's snapshot check has
    /// waited `limit` for the database ([`Session::longest_read`]), until
    /// the last check is done: on a server that stopped
    /// answering without closing the connections nothing else would. The
    /// error comes first, so that the workers' calls, failing as their
    /// connections close, are not taken for lost connections to redo. Once
    /// the run is stopping anyway (an error, a signal), a call still
    /// waiting after [`STOPPING_GRACE`] (or half of `limit`, if shorter)
    /// has its connection closed too.
    fn watch_reads(&self, watching: &AtomicBool, limit: Duration) {
        while watching.load(Ordering::SeqCst) {
            std::thread::park_timeout(WATCH_TICK);
            let Some((subject, waited)) = self.session.longest_read() else {
                continue;
            };
            if waited >= limit {
                self.fail(self.session.stalled(subject, limit.as_secs()));
                self.session.abort();
                return;
            }
            // `should_stop`, not `failed`: the watch that would turn a
            // signal into a failure may itself be waiting on the database.
            if waited >= STOPPING_GRACE.min(limit / 2) && self.should_stop() {
                self.session.abort();
                return;
            }
        }
    }

    /// One worker. A lost connection (a killed attachment, a network
    /// break) costs a new one and the redo of the unit in hand, if the
    /// session can rejoin the snapshot.
    fn worker(&self, reader: S::Reader) -> Result<(), ExecError> {
        let mut resume = None;
        let mut result = self.work(reader, &mut resume);
        let mut retries = 0;
        while let Err(err) = &result {
            if resume.is_none() || retries >= self.options.max_retries || self.should_stop() {
                break;
            }
            retries += 1;
            self.retries.fetch_add(1, Ordering::SeqCst);
            self.progress
                .warning(&format!("{err}; redoing the unit on a new connection"));
            result = self
                .session
                .rejoin()
                .and_then(|reader| self.work(reader, &mut resume));
        }
        result
    }

    /// Takes units until there are none left or the run stops. `resume`
    /// is a unit to do first; a unit whose connection is lost is put back
    /// there for a redo.
    ///
    /// Fetching and decoding happen on this thread (they must: rows live
    /// in the statement's buffer). What the destination does with batches
    /// happens here too when every core already runs a worker; when cores
    /// are spare, a writer thread per worker does it, so fetching never
    /// waits for encoding or the disk. Measured on 2 cores: one worker
    /// with a writer thread is ~12% faster, two workers with writer
    /// threads ~15% slower (four busy threads on two cores).
    fn work(&self, mut reader: S::Reader, resume: &mut Option<Unit>) -> Result<(), ExecError> {
        if self.options.fetch_only {
            return self.fetch_only(&mut reader, resume);
        }
        if !self.options.pipelined {
            let mut writing = Writing::default();
            let mut deliver = |message| match self.write(&mut writing, message) {
                Ok(()) => true,
                Err(err) => {
                    self.fail(err);
                    false
                }
            };
            return self.take_units(&mut reader, resume, &mut deliver);
        }
        let handed = Handed::default();
        std::thread::scope(|scope| {
            let (to_writer, from_fetcher) = std::sync::mpsc::sync_channel::<ToWriter>(WRITER_QUEUE);
            let handed = &handed;
            scope.spawn(move || {
                let mut writing = Writing::default();
                // Ends at the first error; the channel closes with it.
                self.guard(|| {
                    for message in from_fetcher {
                        let bytes = message.bytes();
                        let written = self.write(&mut writing, message);
                        handed.release(bytes);
                        written?;
                    }
                    Ok(())
                });
                handed.close();
                // Whatever is unfinished goes (a stop, or the fetcher died).
                self.guard(|| self.write(&mut writing, ToWriter::Abort));
            });
            // A closed channel means the writer failed; its error is the
            // one recorded, so this side just stops.
            let mut deliver = |message: ToWriter| {
                handed.reserve(message.bytes());
                to_writer.send(message).is_ok()
            };
            self.take_units(&mut reader, resume, &mut deliver)
        })
    }

    fn next_unit(&self, resume: &mut Option<Unit>) -> Option<Unit> {
        resume
            .take()
            .or_else(|| {
                self.plan
                    .units
                    .get(self.next_unit.fetch_add(1, Ordering::SeqCst))
                    .copied()
            })
            .or_else(|| self.next_follow_up())
    }

    /// Once the planned units are all taken, a worker waits for the last
    /// of them to be written; then the destination says which units it
    /// wants read besides, on the same readers (a new one could not always
    /// join the snapshot any more), and the workers share them out.
    fn next_follow_up(&self) -> Option<Unit> {
        loop {
            if self.should_stop() {
                return None;
            }
            {
                let mut follow_ups = self.follow_ups.lock().unwrap();
                if let Some(units) = follow_ups.as_mut() {
                    return units.pop();
                }
                if self.unwritten.load(Ordering::SeqCst) == 0 {
                    let mut asked = Vec::new();
                    self.guard(|| {
                        asked = self.destination.follow_ups()?;
                        Ok(())
                    });
                    if !asked.is_empty() {
                        self.progress.more_units(&asked);
                    }
                    // Taken from the end: the first asked is read first.
                    asked.reverse();
                    *follow_ups = Some(asked);
                    continue;
                }
            }
            std::thread::sleep(FOLLOW_UP_WAIT);
        }
    }

    fn take_units(
        &self,
        reader: &mut S::Reader,
        resume: &mut Option<Unit>,
        deliver: &mut dyn FnMut(ToWriter) -> bool,
    ) -> Result<(), ExecError> {
        while !self.should_stop() {
            let Some(unit) = self.next_unit(resume) else {
                break;
            };
            if !deliver(ToWriter::Begin(unit)) {
                return Ok(());
            }
            let mut stopped = false;
            let read = reader.read(&unit, false, &mut |batch| {
                let go_on = deliver(ToWriter::Batch(batch)) && !self.should_stop();
                stopped |= !go_on;
                go_on
            });
            match read {
                Ok(_) if !stopped => {
                    if !deliver(ToWriter::End) {
                        return Ok(());
                    }
                }
                Ok(_) => {
                    deliver(ToWriter::Abort);
                    return Ok(());
                }
                Err(err) => {
                    deliver(ToWriter::Abort);
                    if err.is_connection_lost() {
                        *resume = Some(unit);
                    }
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    /// Hands one message to the destination.
    fn write(&self, writing: &mut Writing<'r>, message: ToWriter) -> Result<(), ExecError> {
        match message {
            ToWriter::Begin(unit) => {
                writing.current = Some((unit, self.destination.begin_unit(&unit)?, 0));
            }
            ToWriter::Batch(batch) => {
                let Some((_, writer, rows)) = writing.current.as_mut() else {
                    return Ok(());
                };
                let n = batch.num_rows() as u64;
                writer.write(batch)?;
                *rows += n;
                self.progress.rows_read(n);
            }
            ToWriter::End => {
                let Some((unit, writer, rows)) = writing.current.take() else {
                    return Ok(());
                };
                let table_done = writer.finish()?;
                self.unit_done(&unit, rows, table_done);
            }
            ToWriter::Abort => {
                if let Some((_, writer, _)) = writing.current.take() {
                    writer.abort()?;
                }
            }
        }
        Ok(())
    }

    fn unit_done(&self, unit: &Unit, rows: u64, table_done: bool) {
        // Follow-ups come after the count reached 0: it stays there.
        let _ = self
            .unwritten
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        let total = self.rows[unit.table].fetch_add(rows, Ordering::SeqCst) + rows;
        self.progress.unit_finished(unit, rows);
        if table_done {
            self.progress
                .table_finished(&self.plan.tables[unit.table].name, total);
        }
    }

    /// `--fetch-only`: every unit read and dropped, nothing written.
    fn fetch_only(
        &self,
        reader: &mut S::Reader,
        resume: &mut Option<Unit>,
    ) -> Result<(), ExecError> {
        while !self.should_stop() {
            let Some(unit) = self.next_unit(resume) else {
                break;
            };
            match reader.read(&unit, true, &mut |_| true) {
                Ok(rows) => {
                    self.progress.rows_read(rows);
                    let last = self.plan.tables[unit.table].unit_count == unit.seq + 1;
                    self.unit_done(&unit, rows, last);
                }
                Err(err) => {
                    if err.is_connection_lost() {
                        *resume = Some(unit);
                    }
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    /// `--verify`: every table's rows written against `COUNT(*)` at the
    /// same snapshot.
    fn verify(&self) -> Result<(), ExecError> {
        self.verifying.store(true, Ordering::SeqCst);
        let mut mismatches = Vec::new();
        for (i, table) in self.plan.tables.iter().enumerate() {
            if self.should_stop() {
                return Ok(());
            }
            if table.role.is_helper() {
                continue;
            }
            // A count that fails because the snapshot's holder is gone
            // says so, as the watch would have a moment later.
            let counted = self
                .session
                .count(i)
                .map_err(|err| self.session.check().err().unwrap_or(err))?;
            let written = self.rows[i].load(Ordering::SeqCst);
            if counted != written {
                mismatches.push(format!(
                    "{}: wrote {written}, COUNT(*) {counted}",
                    table.name
                ));
            }
        }
        if mismatches.is_empty() {
            Ok(())
        } else {
            Err(ExecError::Verify(mismatches.join("; ")))
        }
    }
}

/// A writer's unit in progress: the unit, its writer, its rows so far.
#[derive(Default)]
struct Writing<'d> {
    current: Option<(Unit, Box<dyn UnitWriter + 'd>, u64)>,
}

#[cfg(test)]
mod tests {
    //! The coordinator against a made-up database: units of made-up rows,
    //! connections that are lost on cue, a destination that records.

    use std::collections::{BTreeMap, HashSet};
    use std::sync::atomic::AtomicU32;

    use arrow_array::{ArrayRef, Int32Array};
    use arrow_schema::{DataType, Field, Schema};
    use fbunload_plan::{Column, PlanOptions, Table};

    use super::*;
    use crate::destination::Written;
    use crate::Silent;

    const ROWS_PER_UNIT: i32 = 5;

    fn plan(tables: &[(&str, u32)], unit_pages: u64) -> Plan {
        let catalog: Vec<Table> = tables
            .iter()
            .enumerate()
            .map(|(i, (name, pointer_pages))| Table {
                relation_id: 128 + i as u16,
                name: name.to_string(),
                columns: vec![Column {
                    name: "V".into(),
                    field_type: 8,
                    ..Column::default()
                }],
                computed: Vec::new(),
                pointer_pages: *pointer_pages,
                readable_by_user: false,
            })
            .collect();
        Plan::new(
            &catalog,
            PlanOptions {
                unit_pages: Some(unit_pages),
                ..PlanOptions::default()
            },
        )
    }

    /// The rows of a unit: distinct per table and unit, so the recording
    /// destination can tell where every row came from.
    fn unit_batch(unit: &Unit, from: i32, to: i32) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("V", DataType::Int32, false)]));
        let base = (unit.table as i32 * 1000 + unit.seq as i32) * 100;
        let values: ArrayRef = Arc::new(Int32Array::from_iter_values(base + from..base + to));
        RecordBatch::try_new(schema, vec![values]).unwrap()
    }

    /// What goes wrong, and when.
    #[derive(Default)]
    struct Script {
        /// Units (table, seq) whose first reading loses the connection
        /// half way.
        lose_once: Mutex<HashSet<(usize, usize)>>,
        /// A unit whose reading fails for good, not as a lost connection.
        fail: Option<(usize, usize)>,
        /// Rows `count` reports per table, when not what was read.
        count_override: Option<u64>,
        /// Whether a new connection can join the snapshot.
        rejoin_refused: bool,
        /// The snapshot's holder is gone.
        snapshot_lost: bool,
        /// A reader blocks until interrupted.
        block_until_interrupted: bool,
        /// A unit whose reading panics (a bug).
        panic_in: Option<(usize, usize)>,
        /// A reader's call, and the snapshot check, are never answered (a
        /// stopped server): nothing but closing the connections ends them.
        never_answered: bool,
        /// Joining the snapshot (its attaches, its transactions' start) is
        /// never answered.
        join_never_answered: bool,
    }

    struct FakeSession {
        script: Arc<Script>,
        plan: Plan,
        rejoins: AtomicU32,
        interrupted: Arc<AtomicBool>,
        interrupts: AtomicU32,
        aborted: Arc<AtomicBool>,
        aborts: AtomicU32,
        /// When the first never-answered call began.
        waiting_since: Arc<Mutex<Option<Instant>>>,
    }

    struct FakeReader {
        script: Arc<Script>,
        interrupted: Arc<AtomicBool>,
        aborted: Arc<AtomicBool>,
        waiting_since: Arc<Mutex<Option<Instant>>>,
    }

    impl Session for FakeSession {
        type Reader = FakeReader;

        fn readers(&self, count: usize) -> Result<Vec<FakeReader>, ExecError> {
            if self.script.join_never_answered {
                *self.waiting_since.lock().unwrap() = Some(Instant::now());
                while !self.aborted.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return Err(ExecError::Server("connection lost".into()));
            }
            Ok((0..count).map(|_| self.reader()).collect())
        }

        fn snapshot_number(&self) -> Option<u64> {
            Some(42)
        }

        fn rejoin(&self) -> Result<FakeReader, ExecError> {
            self.rejoins.fetch_add(1, Ordering::SeqCst);
            if self.script.rejoin_refused {
                return Err(ExecError::Server("cannot rejoin".into()));
            }
            Ok(self.reader())
        }

        fn check(&self) -> Result<(), ExecError> {
            // The main attachment's ping is never answered either.
            if self.script.never_answered {
                while !self.aborted.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return Err(ExecError::Server("main attachment lost".into()));
            }
            if self.script.snapshot_lost {
                return Err(ExecError::Server("main attachment lost".into()));
            }
            Ok(())
        }

        fn count(&self, _table: usize) -> Result<u64, ExecError> {
            Ok(self
                .script
                .count_override
                .unwrap_or((ROWS_PER_UNIT as u64) * self.plan.tables[_table].unit_count as u64))
        }

        fn interrupt(&self) {
            self.interrupts.fetch_add(1, Ordering::SeqCst);
            self.interrupted.store(true, Ordering::SeqCst);
        }

        fn longest_read(&self) -> Option<(String, Duration)> {
            let since = (*self.waiting_since.lock().unwrap())?;
            Some(("table T0".into(), since.elapsed()))
        }

        fn abort(&self) {
            self.aborts.fetch_add(1, Ordering::SeqCst);
            self.aborted.store(true, Ordering::SeqCst);
        }
    }

    impl FakeSession {
        fn new(plan: &Plan, script: Script) -> Self {
            FakeSession {
                script: Arc::new(script),
                plan: plan.clone(),
                rejoins: AtomicU32::new(0),
                interrupted: Arc::new(AtomicBool::new(false)),
                interrupts: AtomicU32::new(0),
                aborted: Arc::new(AtomicBool::new(false)),
                aborts: AtomicU32::new(0),
                waiting_since: Arc::new(Mutex::new(None)),
            }
        }

        fn reader(&self) -> FakeReader {
            FakeReader {
                script: self.script.clone(),
                interrupted: self.interrupted.clone(),
                aborted: self.aborted.clone(),
                waiting_since: self.waiting_since.clone(),
            }
        }
    }

    impl Reader for FakeReader {
        fn read(
            &mut self,
            unit: &Unit,
            fetch_only: bool,
            deliver: &mut dyn FnMut(RecordBatch) -> bool,
        ) -> Result<u64, ExecError> {
            let lost = |what: &str| ExecError::ConnectionLost {
                table: format!("T{}", unit.table),
                message: what.into(),
            };
            if self.script.never_answered {
                self.waiting_since
                    .lock()
                    .unwrap()
                    .get_or_insert_with(Instant::now);
                while !self.aborted.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                // What a closed connection looks like to a worker.
                return Err(lost("Error reading data from the connection"));
            }
            if self.script.block_until_interrupted {
                while !self.interrupted.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return Err(ExecError::table("T", "operation was cancelled"));
            }
            if fetch_only {
                return Ok(ROWS_PER_UNIT as u64);
            }
            if self.script.panic_in == Some((unit.table, unit.seq)) {
                panic!("a bug met in unit {}", unit.seq);
            }
            if !deliver(unit_batch(unit, 0, 2)) {
                return Ok(2);
            }
            if self.script.fail == Some((unit.table, unit.seq)) {
                return Err(ExecError::table("T", "a bad value"));
            }
            if self
                .script
                .lose_once
                .lock()
                .unwrap()
                .remove(&(unit.table, unit.seq))
            {
                return Err(lost("connection reset"));
            }
            deliver(unit_batch(unit, 2, ROWS_PER_UNIT));
            Ok(ROWS_PER_UNIT as u64)
        }
    }

    /// Records what it is given, per unit, and what was taken back.
    #[derive(Default)]
    struct Recorder {
        finished: Mutex<BTreeMap<(usize, usize), Vec<i32>>>,
        aborted: AtomicU32,
        started: Mutex<Option<u64>>,
        /// A unit whose writing panics (a bug in a destination).
        panic_on: Option<(usize, usize)>,
        /// Units to ask for once the planned ones are written, and how many
        /// units were written each time it was asked.
        follow_ups: Vec<Unit>,
        asked: Mutex<Vec<usize>>,
    }

    struct RecordingUnit<'a> {
        recorder: &'a Recorder,
        unit: Unit,
        values: Vec<i32>,
    }

    impl Destination for Recorder {
        fn start(&self, run: &crate::RunInfo<'_>) -> Result<(), ExecError> {
            *self.started.lock().unwrap() = run.snapshot_number;
            Ok(())
        }

        fn begin_unit(&self, unit: &Unit) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
            Ok(Box::new(RecordingUnit {
                recorder: self,
                unit: *unit,
                values: Vec::new(),
            }))
        }

        fn finish(&self) -> Result<Vec<Written>, ExecError> {
            Ok(Vec::new())
        }

        fn follow_ups(&self) -> Result<Vec<Unit>, ExecError> {
            let written = self.finished.lock().unwrap().len();
            self.asked.lock().unwrap().push(written);
            Ok(self.follow_ups.clone())
        }
    }

    impl UnitWriter for RecordingUnit<'_> {
        fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
            if self.recorder.panic_on == Some((self.unit.table, self.unit.seq)) {
                panic!("a bug met writing unit {}", self.unit.seq);
            }
            let values = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap();
            self.values.extend(values.values().iter());
            Ok(())
        }

        fn finish(self: Box<Self>) -> Result<bool, ExecError> {
            let previous = self
                .recorder
                .finished
                .lock()
                .unwrap()
                .insert((self.unit.table, self.unit.seq), self.values);
            assert!(previous.is_none(), "a unit finished twice");
            Ok(false)
        }

        fn abort(self: Box<Self>) -> Result<(), ExecError> {
            self.recorder.aborted.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    fn options(workers: usize, pipelined: bool) -> DispatchOptions {
        DispatchOptions {
            workers,
            fetch_only: false,
            verify: true,
            max_retries: 2,
            pipelined,
            cancel: Arc::new(AtomicBool::new(false)),
            stall_timeout: None,
        }
    }

    fn run(
        session: &mut FakeSession,
        plan: &Plan,
        recorder: &Recorder,
        options: &DispatchOptions,
    ) -> Result<Dispatched, ExecError> {
        dispatch(session, plan, recorder, options, &Silent, &mut |_| Ok(()))
    }

    /// Every unit's rows, whole and in order, once each.
    fn assert_every_unit_once(plan: &Plan, recorder: &Recorder) {
        let finished = recorder.finished.lock().unwrap();
        assert_eq!(finished.len(), plan.units.len());
        for unit in &plan.units {
            let expected: Vec<i32> = unit_batch(unit, 0, ROWS_PER_UNIT)
                .column(0)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap()
                .values()
                .to_vec();
            assert_eq!(finished[&(unit.table, unit.seq)], expected, "{unit:?}");
        }
    }

    #[test]
    fn every_unit_reaches_the_destination_once_whatever_the_workers() {
        let plan = plan(&[("BIG", 6), ("MID", 3), ("SMALL", 1)], 400);
        for (workers, pipelined) in [(1, false), (1, true), (3, false), (4, true)] {
            let mut session = FakeSession::new(&plan, Script::default());
            let recorder = Recorder::default();
            let done = dispatch(
                &mut session,
                &plan,
                &recorder,
                &options(workers, pipelined),
                &Silent,
                &mut |session| {
                    *recorder.started.lock().unwrap() = session.snapshot_number();
                    Ok(())
                },
            )
            .unwrap();
            assert_every_unit_once(&plan, &recorder);
            let expected: Vec<u64> = plan
                .tables
                .iter()
                .map(|t| t.unit_count as u64 * ROWS_PER_UNIT as u64)
                .collect();
            assert_eq!(done.rows, expected);
            assert_eq!(done.retries, 0);
            assert_eq!(*recorder.started.lock().unwrap(), Some(42));
        }
    }

    #[test]
    fn follow_ups_are_asked_once_every_planned_unit_is_written_and_read_as_any() {
        let plan = plan(&[("BIG", 4), ("HELPER", 1)], 400);
        let planned = plan.units.len();
        let extra = |seq| Unit {
            table: 1,
            seq,
            first_slot: 0,
            end_slot: None,
        };
        for (workers, pipelined) in [(1, false), (3, true)] {
            let mut session = FakeSession::new(
                &plan,
                Script {
                    // A follow-up whose connection is lost is redone too.
                    lose_once: Mutex::new([(1, 11)].into()),
                    ..Script::default()
                },
            );
            let recorder = Recorder {
                follow_ups: vec![extra(10), extra(11), extra(12)],
                ..Recorder::default()
            };
            let options = DispatchOptions {
                verify: false,
                ..options(workers, pipelined)
            };
            let done = run(&mut session, &plan, &recorder, &options).unwrap();
            assert_eq!(*recorder.asked.lock().unwrap(), [planned]);
            let finished = recorder.finished.lock().unwrap();
            assert_eq!(finished.len(), planned + 3);
            for seq in [10, 11, 12] {
                assert!(finished.contains_key(&(1, seq)), "{seq}");
            }
            assert_eq!(done.rows[1], 4 * ROWS_PER_UNIT as u64);
            assert_eq!(done.retries, 1);
        }
    }

    #[test]
    fn a_lost_connection_costs_a_redo_of_its_unit_only() {
        let plan = plan(&[("BIG", 4)], 400);
        let lost: HashSet<_> = [(0, 1), (0, 5)].into();
        for pipelined in [false, true] {
            let mut session = FakeSession::new(
                &plan,
                Script {
                    lose_once: Mutex::new(lost.clone()),
                    ..Script::default()
                },
            );
            let recorder = Recorder::default();
            let done = run(&mut session, &plan, &recorder, &options(2, pipelined)).unwrap();
            assert_every_unit_once(&plan, &recorder);
            assert_eq!(done.retries, 2);
            assert_eq!(recorder.aborted.load(Ordering::SeqCst), 2);
            assert_eq!(session.rejoins.load(Ordering::SeqCst), 2);
        }
    }

    #[test]
    fn a_unit_that_cannot_be_redone_fails_the_run() {
        let plan = plan(&[("BIG", 4)], 400);
        let mut session = FakeSession::new(
            &plan,
            Script {
                lose_once: Mutex::new([(0, 2)].into()),
                rejoin_refused: true,
                ..Script::default()
            },
        );
        let recorder = Recorder::default();
        let err = run(&mut session, &plan, &recorder, &options(2, false)).unwrap_err();
        assert!(err.to_string().contains("cannot rejoin"), "{err}");
        assert!(!recorder.finished.lock().unwrap().contains_key(&(0, 2)));
    }

    #[test]
    fn the_first_error_stops_every_worker_and_is_the_one_reported() {
        let plan = plan(&[("BIG", 8)], 100);
        let mut session = FakeSession::new(
            &plan,
            Script {
                fail: Some((0, 3)),
                ..Script::default()
            },
        );
        let recorder = Recorder::default();
        let err = run(&mut session, &plan, &recorder, &options(3, true)).unwrap_err();
        assert!(err.to_string().contains("a bad value"), "{err}");
        assert!(!recorder.finished.lock().unwrap().contains_key(&(0, 3)));
        assert!(recorder.aborted.load(Ordering::SeqCst) >= 1);
        assert_eq!(
            session.rejoins.load(Ordering::SeqCst),
            0,
            "not a lost connection"
        );
        assert_eq!(session.interrupts.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_panic_in_a_reader_or_a_destination_fails_the_run_instead_of_hanging_it() {
        let plan = plan(&[("BIG", 8)], 100);
        for (pipelined, in_reader) in [(false, true), (true, true), (false, false), (true, false)] {
            let unit = Some((0, 3));
            let mut session = FakeSession::new(
                &plan,
                Script {
                    panic_in: unit.filter(|_| in_reader),
                    ..Script::default()
                },
            );
            let recorder = Recorder {
                panic_on: unit.filter(|_| !in_reader),
                ..Recorder::default()
            };
            // On a thread of its own, so that a hang fails the test too.
            let (done, finished) = std::sync::mpsc::channel();
            let plan = plan.clone();
            std::thread::spawn(move || {
                let result = run(&mut session, &plan, &recorder, &options(3, pipelined));
                let finished = recorder.finished.into_inner().unwrap();
                let _ = done.send((result.map(|_| ()).map_err(|e| e.to_string()), finished));
            });
            let (result, finished) = finished
                .recv_timeout(Duration::from_secs(20))
                .expect("the run ends");
            let err = result.expect_err("a run with a unit missing fails");
            assert!(
                err.contains("internal error") && err.contains("a bug met"),
                "{err}"
            );
            assert!(!finished.contains_key(&(0, 3)));
        }
    }

    #[test]
    fn a_signal_interrupts_a_blocked_reader_at_once() {
        let plan = plan(&[("BIG", 2)], 400);
        let mut session = FakeSession::new(
            &plan,
            Script {
                block_until_interrupted: true,
                ..Script::default()
            },
        );
        let recorder = Recorder::default();
        let options = options(2, false);
        let cancel = options.cancel.clone();
        let signal = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            cancel.store(true, Ordering::SeqCst);
        });
        let started = Instant::now();
        let err = run(&mut session, &plan, &recorder, &options).unwrap_err();
        signal.join().unwrap();
        assert!(matches!(err, ExecError::Interrupted), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(session.interrupts.load(Ordering::SeqCst), 1);
    }

    fn never_answered(plan: &Plan) -> FakeSession {
        FakeSession::new(
            plan,
            Script {
                never_answered: true,
                ..Script::default()
            },
        )
    }

    #[test]
    fn a_call_never_answered_fails_the_run_after_the_stall_timeout_without_redos() {
        let plan = plan(&[("BIG", 2)], 400);
        let mut session = never_answered(&plan);
        let recorder = Recorder::default();
        let options = DispatchOptions {
            stall_timeout: Some(Duration::from_millis(200)),
            ..options(2, false)
        };
        let started = Instant::now();
        let err = run(&mut session, &plan, &recorder, &options).unwrap_err();
        assert!(
            matches!(&err, ExecError::Stalled { subject, .. } if subject == "table T0"),
            "{err}"
        );
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(session.aborts.load(Ordering::SeqCst), 1);
        assert_eq!(
            session.rejoins.load(Ordering::SeqCst),
            0,
            "the closed connections are not redone as lost ones"
        );
    }

    /// The readers' attaches and the snapshot's start happen before the
    /// workers' watch runs: they waited for ever on a server that stopped.
    #[test]
    fn a_join_never_answered_fails_the_run_after_the_stall_timeout() {
        let plan = plan(&[("BIG", 2)], 400);
        let mut session = FakeSession::new(
            &plan,
            Script {
                join_never_answered: true,
                ..Script::default()
            },
        );
        let options = DispatchOptions {
            stall_timeout: Some(Duration::from_millis(200)),
            ..options(2, false)
        };
        let started = Instant::now();
        let err = run(&mut session, &plan, &Recorder::default(), &options).unwrap_err();
        assert!(matches!(&err, ExecError::Stalled { .. }), "{err}");
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(session.aborts.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_signal_closes_the_connection_of_a_call_never_answered() {
        let plan = plan(&[("BIG", 2)], 400);
        let mut session = never_answered(&plan);
        let recorder = Recorder::default();
        let options = DispatchOptions {
            stall_timeout: Some(Duration::from_secs(2)),
            ..options(2, false)
        };
        let cancel = options.cancel.clone();
        // After the coordinator's snapshot check has begun, and waits too.
        let signal = std::thread::spawn(move || {
            std::thread::sleep(SNAPSHOT_CHECK * 2);
            cancel.store(true, Ordering::SeqCst);
        });
        let started = Instant::now();
        let err = run(&mut session, &plan, &recorder, &options).unwrap_err();
        signal.join().unwrap();
        // Closing the connections, once the call has waited half the
        // limit, ends the run as the interrupted one it is (not, at the
        // limit, as a stalled one).
        assert!(matches!(err, ExecError::Interrupted), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(session.aborts.load(Ordering::SeqCst), 1);
        assert_eq!(session.rejoins.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn verify_compares_every_table_with_its_count() {
        let plan = plan(&[("A", 2), ("B", 1)], 400);
        let mut session = FakeSession::new(
            &plan,
            Script {
                count_override: Some(1),
                ..Script::default()
            },
        );
        let err = run(
            &mut session,
            &plan,
            &Recorder::default(),
            &options(2, false),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("A: wrote") && text.contains("B: wrote"),
            "{text}"
        );
    }

    #[test]
    fn losing_the_snapshot_fails_the_run() {
        let plan = plan(&[("A", 2)], 400);
        let mut session = FakeSession::new(
            &plan,
            Script {
                snapshot_lost: true,
                ..Script::default()
            },
        );
        let err = run(
            &mut session,
            &plan,
            &Recorder::default(),
            &options(1, false),
        )
        .unwrap_err();
        assert!(err.to_string().contains("main attachment lost"), "{err}");
    }

    #[test]
    fn fetch_only_reads_every_unit_and_writes_nothing() {
        let plan = plan(&[("A", 3), ("B", 1)], 400);
        let mut session = FakeSession::new(&plan, Script::default());
        let recorder = Recorder::default();
        let options = DispatchOptions {
            fetch_only: true,
            ..options(2, true)
        };
        let done = run(&mut session, &plan, &recorder, &options).unwrap();
        assert!(recorder.finished.lock().unwrap().is_empty());
        assert_eq!(
            done.rows.iter().sum::<u64>(),
            plan.units.len() as u64 * ROWS_PER_UNIT as u64
        );
    }
}
