//! The coordinator and its workers: one consistent, parallel unload.
//!
//! The main attachment reads the catalog and makes the [`Plan`]. Every
//! worker opens its own attachment (without garbage collection, as gbak
//! does); then the main attachment starts the SNAPSHOT transaction and
//! every worker's read-only transaction joins it *at its snapshot number*,
//! all started together and checked to see the same data (see [`unload`]).
//! Workers take units one at a time from a shared counter — the only
//! global scan state — so a mix of one huge table and many small ones
//! keeps everyone busy. A worker whose connection is lost redoes its unit
//! on a new attachment when that provably sees the same data.
//!
//! A unit flows one way: query → rows → [`RowDecoder`] → Arrow batch →
//! the format's encoder → the table's [`output::TableOutput`], which puts
//! units in order and renames the file when the table is complete.
//!
//! Servers before Firebird 4 cannot share a snapshot or address pointer
//! pages; there the run uses one worker on the main transaction itself,
//! which is still one consistent snapshot — or, if the user allows it,
//! one table per worker, each in a snapshot of its own.

mod error;
pub mod output;
pub mod spool;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fbunload_client::{Attachment, Client, ConnectOptions, Transaction, TransactionMode};
use fbunload_decode::{BatchLimits, OutputColumn, RowDecoder, TextDecoder};
use fbunload_plan::{read_catalog, Plan, PlanOptions, TableFilter, Unit};
use fbunload_sink::{BatchEncoder, FileInfo, Plain, StreamFormat};
use std::io::{self, Write};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use output::UnitSink;

pub use error::ExecError;
pub use output::file_name_for;
use output::TableOutput;
use spool::MemoryBudget;

/// Everything a run needs to know.
pub struct UnloadRequest {
    pub client: Arc<Client>,
    pub connect: ConnectOptions,
    pub filter: TableFilter,
    pub plan: PlanOptions,
    /// Worker attachments (at least 1).
    pub parallel: usize,
    pub output_dir: PathBuf,
    /// Write the one selected table to standard output: as it is assembled
    /// where the format allows (CSV, TSV, JSON Lines, compressed or not),
    /// else once its file in `output_dir` is complete. `output_dir` then
    /// only holds what is spilled, and should be a private directory.
    pub to_stdout: bool,
    pub format: Arc<dyn StreamFormat>,
    pub text: TextDecoder,
    /// Bytes that units waiting for their turn may hold in memory.
    pub memory_budget: usize,
    pub batch: BatchLimits,
    /// Fetch every row and drop it: no decoding, no files. The same
    /// attachments, snapshot and units as a real run, so it measures the
    /// engine's limit that a real run is compared against.
    pub fetch_only: bool,
    /// After unloading, count every table's rows in the main transaction
    /// (the same snapshot) and fail on any difference.
    pub verify: bool,
    /// Set from outside (Ctrl-C, SIGTERM) to stop the run; unfinished
    /// tables then leave no files.
    pub cancel: Arc<AtomicBool>,
    /// How often a worker whose connection is lost reattaches and redoes
    /// its unit at the same snapshot before the run fails.
    pub max_retries: u32,
    /// On servers without shared snapshots (before Firebird 4), unload
    /// tables in parallel anyway, each worker in a snapshot of its own:
    /// every table is consistent in itself, but not with the others.
    pub allow_inconsistent: bool,
}

/// What the main attachment found before any row was read.
#[derive(Debug, Clone)]
pub struct RunStart {
    pub server_version: String,
    /// `None` on servers that cannot share a snapshot (before Firebird 4).
    pub snapshot_number: Option<u64>,
    pub workers: usize,
    /// Workers read in snapshots of their own (`allow_inconsistent` on a
    /// server without shared snapshots): tables are not mutually consistent.
    pub per_worker_snapshots: bool,
}

/// Per-table results.
#[derive(Debug, Clone)]
pub struct TableSummary {
    pub name: String,
    pub path: PathBuf,
    pub rows: u64,
    pub bytes: u64,
    pub units: usize,
}

#[derive(Debug, Clone)]
pub struct Summary {
    pub start: RunStart,
    pub tables: Vec<TableSummary>,
    pub elapsed: Duration,
    /// Whether `--verify` compared every table with COUNT(*).
    pub verified: bool,
    /// Units redone on a new attachment after a lost connection.
    pub retries: u64,
}

impl Summary {
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }

    pub fn bytes(&self) -> u64 {
        self.tables.iter().map(|t| t.bytes).sum()
    }
}

/// Hooks for a progress display; all called from worker threads.
pub trait Progress: Sync {
    fn started(&self, _plan: &Plan, _start: &RunStart) {}
    fn rows_written(&self, _rows: u64, _bytes: u64) {}
    fn table_finished(&self, _table: &TableSummary) {}
    /// Something went wrong and was recovered from (a unit redone).
    fn warning(&self, _message: &str) {}
}

/// A progress sink that shows nothing.
pub struct Silent;
impl Progress for Silent {}

/// Attaches, plans and returns the plan without reading any row.
pub fn plan_only(req: &UnloadRequest) -> Result<(Plan, RunStart), ExecError> {
    let main = attach_main(req)?;
    let planned = Planned::make(req, &main)?;
    Ok((planned.plan, planned.start))
}

/// Runs the whole unload.
///
/// The order matters. Firebird decides what a transaction started "at
/// snapshot number N" sees partly from the state of the database when it
/// starts, so a transaction that joins N late can see some commits made
/// after N (measured under concurrent writers: in 1,000 tries, a joiner
/// started 2 ms after another at the same N saw more rows 314 times). So
/// every worker attaches first; then the main transaction and all worker
/// transactions start together from one thread, and are checked to agree
/// (see [`join_snapshot`]). The main transaction is read-write (it writes
/// nothing) where it can be, which keeps Firebird's oldest interesting
/// transaction from moving past it while the run lasts.
pub fn unload(req: &UnloadRequest, progress: &dyn Progress) -> Result<Summary, ExecError> {
    let started = Instant::now();
    let main = attach_main(req)?;
    let planned = Planned::make(req, &main)?;
    if !req.fetch_only {
        prepare_output_dir(&req.output_dir)?;
    }
    if req.to_stdout && planned.plan.tables.len() != 1 {
        return Err(ExecError::Usage(format!(
            "-o - writes one table to standard output, but the filter selects {}; narrow it \
             with --tables",
            planned.plan.tables.len()
        )));
    }
    let budget = MemoryBudget::new(req.memory_budget);
    // Recorded in files that can hold metadata; known once workers joined.
    let snapshot = Arc::new(AtomicU64::new(0));
    let outputs: Vec<TableOutput> = planned
        .plan
        .tables
        .iter()
        .map(|t| {
            let name = file_name_for(&t.name, req.format.extension());
            let (format, snapshot, table) = (req.format.clone(), snapshot.clone(), t.name.clone());
            let finisher: output::Finisher = Box::new(move |temp, final_path| {
                let number = snapshot.load(Ordering::SeqCst);
                let info = FileInfo {
                    table: table.clone(),
                    snapshot_number: (number != 0).then_some(number),
                };
                format.finish_file(temp, final_path, &info)
            });
            let stream = req
                .to_stdout
                .then(|| req.format.open_stream(Box::new(Plain(io::stdout()))))
                .flatten();
            match stream {
                Some(stream) => TableOutput::streamed(
                    &req.output_dir,
                    &name,
                    t.unit_count,
                    budget.clone(),
                    stream,
                ),
                None => TableOutput::new(
                    &req.output_dir,
                    &name,
                    t.unit_count,
                    budget.clone(),
                    finisher,
                ),
            }
        })
        .collect();
    let workers = planned.start.workers;
    let run = Run {
        req,
        plan: &planned.plan,
        outputs: &outputs,
        next_unit: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        first_error: Mutex::new(None),
        rows: planned
            .plan
            .tables
            .iter()
            .map(|_| AtomicU64::new(0))
            .collect(),
        progress,
        retries: AtomicU64::new(0),
        pipelined: workers < std::thread::available_parallelism().map_or(1, |n| n.get()),
        oldest_interesting: AtomicU64::new(0),
    };
    let mut start = planned.start.clone();

    let verified: Result<(), ExecError> = if planned.shared {
        let attachments = run.attach_workers(workers)?;
        let joined = join_snapshot(&main, &attachments)?;
        run.oldest_interesting
            .store(joined.oldest_interesting, Ordering::SeqCst);
        start.snapshot_number = Some(joined.number);
        snapshot.store(joined.number, Ordering::SeqCst);
        let running = AtomicUsize::new(workers);
        progress.started(&planned.plan, &start);
        std::thread::scope(|scope| {
            for tr in joined.workers {
                let (run, running, number) = (&run, &running, joined.number);
                scope.spawn(move || {
                    run.guard(|| run.worker(tr, number));
                    running.fetch_sub(1, Ordering::SeqCst);
                });
            }
            run.watch_main_attachment(&main, &running);
        });
        // The watch sleeps between checks; a loss in the last interval
        // must still fail the run.
        if !run.failed.load(Ordering::SeqCst) {
            if let Err(e) = main.ping() {
                run.fail(main_attachment_lost(e));
            }
        }
        if req.verify && !run.failed.load(Ordering::SeqCst) {
            verify(&joined.reference, &planned.plan, &run.row_counts())
        } else {
            Ok(())
        }
    } else if start.per_worker_snapshots {
        progress.started(&planned.plan, &start);
        progress.warning(
            "this server cannot share a snapshot (Firebird < 4): with --allow-inconsistent each \
             worker reads in a snapshot of its own, so every table is consistent in itself but \
             the tables are not mutually consistent",
        );
        let attachments = run.attach_workers(workers)?;
        std::thread::scope(|scope| {
            for attachment in &attachments {
                let run = &run;
                scope.spawn(move || {
                    run.guard(|| {
                        let tr = attachment
                            .start_transaction(TransactionMode::ReadOnlySnapshot)
                            .map_err(ExecError::Client)?;
                        run.work(&tr, &mut None)
                    })
                });
            }
        });
        Ok(())
    } else {
        let tr = main
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .map_err(ExecError::Client)?;
        progress.started(&planned.plan, &start);
        run.guard(|| run.work(&tr, &mut None));
        if req.verify && !run.failed.load(Ordering::SeqCst) {
            verify(&tr, &planned.plan, &run.row_counts())
        } else {
            Ok(())
        }
    };
    let retries = run.retries.load(Ordering::Relaxed);
    let rows = run.row_counts();
    if let Some(err) = run.first_error.into_inner().unwrap() {
        return Err(err);
    }
    verified?;
    for out in &outputs {
        if req.to_stdout && out.streamed_bytes().is_none() {
            copy_to_stdout(&out.final_path)?;
        }
    }
    let tables = planned
        .plan
        .tables
        .iter()
        .zip(&outputs)
        .zip(&rows)
        .map(|((t, out), rows)| TableSummary {
            name: t.name.clone(),
            path: out.final_path.clone(),
            rows: *rows,
            bytes: out
                .streamed_bytes()
                .unwrap_or_else(|| output_size(&out.final_path)),
            units: t.unit_count,
        })
        .collect();
    Ok(Summary {
        start,
        tables,
        elapsed: started.elapsed(),
        verified: req.verify,
        retries,
    })
}

/// The shared snapshot, joined by every worker.
struct Joined<'a> {
    number: u64,
    /// Keeps the snapshot alive for the whole run.
    _holder: Transaction<'a>,
    workers: Vec<Transaction<'a>>,
    /// At the snapshot too, on the main attachment, for `--verify`.
    reference: Transaction<'a>,
    oldest_interesting: u64,
}

/// Attempts at a snapshot whose transactions all agree (see below).
const JOIN_ATTEMPTS: usize = 20;

/// Starts the main transaction and, right after, every worker's
/// transaction at its snapshot number, all from this thread.
///
/// Firebird counts every transaction below a transaction's "oldest
/// interesting" number as committed, whatever its commit number; if that
/// number moves between two starts (a transaction that was running when
/// the snapshot was taken commits in between), the later one sees more.
/// So the starts are checked: all transactions must report the same
/// oldest interesting number, or all are dropped and started again.
fn join_snapshot<'a>(
    main: &'a Attachment,
    workers: &'a [Attachment],
) -> Result<Joined<'a>, ExecError> {
    for _ in 0..JOIN_ATTEMPTS {
        let holder = main
            .start_transaction(TransactionMode::HoldingSnapshot)
            .or_else(|_| main.start_transaction(TransactionMode::ReadOnlySnapshot))
            .map_err(ExecError::Client)?;
        let number = holder.snapshot_number().map_err(ExecError::Client)?;
        let at_snapshot = |att: &'a Attachment| {
            att.start_transaction(TransactionMode::ReadOnlyAtSnapshot(number))
                .map_err(|e| {
                    ExecError::Server(format!("a worker cannot join snapshot {number}: {e}"))
                })
        };
        let transactions = workers
            .iter()
            .map(at_snapshot)
            .collect::<Result<Vec<_>, _>>()?;
        let reference = at_snapshot(main)?;
        let oldest = reference.oldest_interesting().map_err(ExecError::Client)?;
        let mut agree = true;
        for tr in &transactions {
            agree &= tr.oldest_interesting().map_err(ExecError::Client)? == oldest;
        }
        if agree {
            return Ok(Joined {
                number,
                _holder: holder,
                workers: transactions,
                reference,
                oldest_interesting: oldest,
            });
        }
    }
    Err(ExecError::Server(format!(
        "could not start {} transactions that see the same snapshot in {JOIN_ATTEMPTS} attempts: \
         other transactions keep committing in between. Try again, or with fewer workers",
        workers.len() + 1
    )))
}

/// Sends a finished file (a format that cannot be streamed) to stdout.
fn copy_to_stdout(path: &Path) -> Result<(), ExecError> {
    let mut file = std::fs::File::open(path).map_err(|e| ExecError::OutputDir {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let mut stdout = io::stdout().lock();
    io::copy(&mut file, &mut stdout)
        .and_then(|_| stdout.flush())
        .map_err(|e| ExecError::Usage(format!("writing to standard output: {e}")))?;
    Ok(())
}

/// Bytes of a table's output: a file, or a directory of part files.
fn output_size(path: &Path) -> u64 {
    match std::fs::read_dir(path) {
        Ok(entries) => entries
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum(),
        Err(_) => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
    }
}

/// Counts every table in `tr` (a transaction at the workers' snapshot)
/// and compares with the rows written.
fn verify(tr: &Transaction<'_>, plan: &Plan, rows: &[u64]) -> Result<(), ExecError> {
    let mut mismatches = Vec::new();
    for (table, written) in plan.tables.iter().zip(rows) {
        let sql = format!(
            "SELECT COUNT(*) FROM {}",
            fbunload_plan::quote_identifier(&table.name)
        );
        let counted = (|| {
            let mut stmt = tr.prepare(&sql)?;
            stmt.execute()?;
            stmt.fetch()?;
            let value = stmt.row().value(0).unwrap_or(&[0; 8]);
            Ok::<_, fbunload_client::ClientError>(i64::from_ne_bytes(
                value.try_into().unwrap_or([0; 8]),
            ))
        })()
        .map_err(|e| {
            ExecError::table(&table.name, format!("--verify could not count rows: {e}"))
        })?;
        if counted as u64 != *written {
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

fn attach_main(req: &UnloadRequest) -> Result<Attachment, ExecError> {
    Attachment::connect(&req.client, &req.connect)
        .map_err(|e| ExecError::attach(&req.connect.database, req.connect.user.as_deref(), e))
}

/// The plan, made from the catalog before the unload's snapshot exists.
struct Planned {
    plan: Plan,
    start: RunStart,
    shared: bool,
}

impl Planned {
    /// Reads the catalog in a short transaction of its own: the plan only
    /// needs table names, columns and page counts, and the last unit of
    /// every table is open-ended, so pages added later are still read.
    fn make(req: &UnloadRequest, main: &Attachment) -> Result<Planned, ExecError> {
        let version = main.server_version().map_err(ExecError::Client)?;
        let shared = version.has_shared_snapshots();
        let catalog = {
            let tr = main
                .start_transaction(TransactionMode::ReadOnlySnapshot)
                .map_err(ExecError::Client)?;
            read_catalog(&tr, &req.filter)?
        };
        let plan = Plan::new(
            &catalog,
            PlanOptions {
                split_tables: shared && req.plan.split_tables,
                workers: req.parallel,
                page_size: main.page_size().map_err(ExecError::Client)?,
                ..req.plan
            },
        );
        let per_worker_snapshots = !shared && req.allow_inconsistent && req.parallel > 1;
        if per_worker_snapshots && req.verify {
            return Err(ExecError::Server(
                "--verify needs one snapshot for all tables, which --allow-inconsistent gives up; \
                 use one or the other"
                    .into(),
            ));
        }
        let workers = if shared || per_worker_snapshots {
            req.parallel.clamp(1, plan.units.len().max(1))
        } else {
            1
        };
        Ok(Planned {
            plan,
            start: RunStart {
                server_version: version.text,
                snapshot_number: None,
                workers,
                per_worker_snapshots,
            },
            shared,
        })
    }
}

/// Makes the directory if needed and proves we can create files in it, so
/// a bad `-o` fails before any work starts.
fn prepare_output_dir(dir: &Path) -> Result<(), ExecError> {
    let fail = |reason: String| ExecError::OutputDir {
        path: dir.to_path_buf(),
        reason,
    };
    if dir.exists() && !dir.is_dir() {
        return Err(fail("exists and is not a directory".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create it: {e}")))?;
    let probe = dir.join(format!(".fbunload-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| fail(format!("cannot write in it: {e}")))?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// State shared by the workers of one run.
struct Run<'r> {
    req: &'r UnloadRequest,
    plan: &'r Plan,
    outputs: &'r [TableOutput],
    next_unit: AtomicUsize,
    failed: AtomicBool,
    first_error: Mutex<Option<ExecError>>,
    rows: Vec<AtomicU64>,
    progress: &'r dyn Progress,
    retries: AtomicU64,
    /// Whether workers get a writer thread (there are spare cores).
    pipelined: bool,
    /// The "oldest interesting transaction" all first transactions agreed
    /// on (see [`join_snapshot`]).
    oldest_interesting: AtomicU64,
}

fn main_attachment_lost(e: fbunload_client::ClientError) -> ExecError {
    ExecError::Server(format!(
        "the main attachment was lost ({e}); the shared snapshot is gone, so the run \
         stopped. Tables finished before are complete; unfinished ones were removed. \
         Run fbunload again"
    ))
}

/// How often the coordinator checks that the main attachment, which keeps
/// the shared snapshot alive, is still there.
const MAIN_ATTACHMENT_CHECK: Duration = Duration::from_millis(250);

impl Run<'_> {
    /// Records the first failure and tells every worker to stop.
    fn guard(&self, body: impl FnOnce() -> Result<(), ExecError>) {
        if let Err(err) = body() {
            self.fail(err);
        }
    }

    fn fail(&self, err: ExecError) {
        let mut first = self.first_error.lock().unwrap();
        if first.is_none() {
            *first = Some(err);
        }
        self.failed.store(true, Ordering::SeqCst);
    }

    /// Whether to stop: another worker failed, or the user interrupted.
    fn should_stop(&self) -> bool {
        if self.req.cancel.load(Ordering::SeqCst) && !self.failed.load(Ordering::SeqCst) {
            self.fail(ExecError::Interrupted);
        }
        self.failed.load(Ordering::SeqCst)
    }

    /// Runs on the coordinator while workers work: if the main attachment
    /// goes, so does the guarantee that a worker can rejoin the snapshot,
    /// and the run stops rather than go on half-protected.
    fn watch_main_attachment(&self, main: &Attachment, running: &AtomicUsize) {
        while running.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(MAIN_ATTACHMENT_CHECK);
            if self.should_stop() {
                continue;
            }
            if let Err(e) = main.ping() {
                self.fail(main_attachment_lost(e));
            }
        }
    }

    fn row_counts(&self) -> Vec<u64> {
        self.rows
            .iter()
            .map(|r| r.load(Ordering::Relaxed))
            .collect()
    }

    fn worker_options(&self) -> ConnectOptions {
        ConnectOptions {
            no_garbage_collect: true,
            ..self.req.connect.clone()
        }
    }

    /// Opens every worker's attachment, in parallel (remote attaches take
    /// a round trip or more each).
    fn attach_workers(&self, count: usize) -> Result<Vec<Attachment>, ExecError> {
        let connect = self.worker_options();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..count)
                .map(|_| scope.spawn(|| Attachment::connect(&self.req.client, &connect)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap().map_err(|e| {
                        ExecError::attach(&connect.database, connect.user.as_deref(), e)
                    })
                })
                .collect()
        })
    }

    /// One worker, in its transaction at the shared snapshot. A lost
    /// connection (a killed attachment, a network break) costs a new
    /// attachment and the redo of the unit in hand — if that is safe.
    fn worker(&self, first: Transaction<'_>, snapshot: u64) -> Result<(), ExecError> {
        let mut resume = None;
        let mut result = self.work(&first, &mut resume);
        drop(first);
        let mut retries = 0;
        while let Err(err) = &result {
            if resume.is_none() || retries >= self.req.max_retries || self.should_stop() {
                break;
            }
            retries += 1;
            self.retries.fetch_add(1, Ordering::Relaxed);
            self.progress
                .warning(&format!("{err}; redoing the unit on a new attachment"));
            result = self.rejoin(snapshot, &mut resume);
        }
        result
    }

    /// A new attachment and transaction at the snapshot, for a redo. It
    /// sees the same data only if its oldest interesting transaction is
    /// not newer than the first transactions' (see [`join_snapshot`]).
    fn rejoin(&self, snapshot: u64, resume: &mut Option<Unit>) -> Result<(), ExecError> {
        let connect = self.worker_options();
        let attachment = Attachment::connect(&self.req.client, &connect)
            .map_err(|e| ExecError::attach(&connect.database, connect.user.as_deref(), e))?;
        let tr = attachment
            .start_transaction(TransactionMode::ReadOnlyAtSnapshot(snapshot))
            .map_err(|e| {
                ExecError::Server(format!("a worker cannot rejoin snapshot {snapshot}: {e}"))
            })?;
        if tr.oldest_interesting().map_err(ExecError::Client)?
            > self.oldest_interesting.load(Ordering::SeqCst)
        {
            return Err(ExecError::Server(format!(
                "a worker's connection was lost, and its unit cannot be redone at snapshot \
                 {snapshot}: transactions that were running when the snapshot was taken have \
                 committed since, and Firebird would show some of their changes to a transaction \
                 joining the snapshot now. The run stopped and unfinished tables were removed; \
                 run fbunload again"
            )));
        }
        self.work(&tr, resume)
    }

    /// Takes units until there are none left or the run has failed.
    ///
    /// `resume` is a unit to do first; when a unit fails because the
    /// connection was lost, it is put back there for a retry.
    ///
    /// Fetching and decoding happen on this thread (they must: the rows
    /// live in its statement's buffer). Encoding and writing happen here
    /// too when every core already runs a worker; when cores are spare, a
    /// writer thread per worker does them, so fetching never waits for
    /// formatting or the disk. Measured on 2 cores: one worker with a
    /// writer thread is ~12% faster, two workers with writer threads ~15%
    /// slower (four busy threads on two cores).
    fn work(&self, tr: &Transaction<'_>, resume: &mut Option<Unit>) -> Result<(), ExecError> {
        if !self.pipelined {
            let mut writer = WriterState::default();
            let mut deliver = |message| match self.write(&mut writer, message) {
                Ok(()) => true,
                Err(err) => {
                    self.fail(err);
                    false
                }
            };
            return self.take_units(tr, resume, &mut deliver);
        }
        std::thread::scope(|scope| {
            let (to_writer, from_fetcher) = std::sync::mpsc::sync_channel(WRITER_QUEUE);
            scope.spawn(move || {
                self.guard(|| {
                    let mut writer = WriterState::default();
                    from_fetcher
                        .into_iter()
                        .try_for_each(|m| self.write(&mut writer, m))
                })
            });
            // A closed channel means the writer failed; its error is the
            // one recorded, so this side just stops.
            let mut deliver = |message| to_writer.send(message).is_ok();
            self.take_units(tr, resume, &mut deliver)
        })
    }

    fn take_units(
        &self,
        tr: &Transaction<'_>,
        resume: &mut Option<Unit>,
        deliver: &mut dyn FnMut(ToWriter) -> bool,
    ) -> Result<(), ExecError> {
        while !self.should_stop() {
            let unit = match resume.take() {
                Some(unit) => unit,
                None => match self
                    .plan
                    .units
                    .get(self.next_unit.fetch_add(1, Ordering::SeqCst))
                {
                    Some(unit) => *unit,
                    None => break,
                },
            };
            if let Err(err) = self.read_unit(tr, &unit, deliver) {
                // The writer puts the unit's file back as it was.
                deliver(ToWriter::Abort);
                if err.is_connection_lost() {
                    *resume = Some(unit);
                }
                return Err(err);
            }
        }
        Ok(())
    }

    /// Fetches one unit and delivers it, batch by batch, to the writer.
    fn read_unit(
        &self,
        tr: &Transaction<'_>,
        unit: &Unit,
        deliver: &mut dyn FnMut(ToWriter) -> bool,
    ) -> Result<(), ExecError> {
        let table = &self.plan.tables[unit.table];
        let name = table.name.as_str();
        let mut stmt = tr
            .prepare(&table.unit_sql(unit))
            .map_err(|e| ExecError::from_client(name, e))?;
        if self.req.fetch_only {
            return self.fetch_and_drop(&mut stmt, unit);
        }
        if stmt.columns().len() != table.columns.len() {
            return Err(ExecError::table(
                name,
                "the table's columns changed while planning",
            ));
        }
        let columns = stmt
            .columns()
            .iter()
            .zip(&table.columns)
            .zip(&table.type_overrides)
            .map(|((desc, column), type_name)| {
                OutputColumn::new(column, desc, type_name.as_deref())
                    .map_err(|m| ExecError::table(name, format!("column {column}: {m}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut decoder = RowDecoder::new(columns, self.req.text, self.req.batch);
        if !deliver(ToWriter::Begin {
            unit: *unit,
            schema: decoder.schema(),
        }) {
            return Ok(());
        }
        stmt.execute()
            .map_err(|e| ExecError::from_client(name, e))?;
        loop {
            let more = stmt.fetch().map_err(|e| ExecError::from_client(name, e))?;
            if more {
                decoder
                    .append_row(&stmt.row())
                    .map_err(|e| ExecError::from_decode(name, e))?;
            }
            if decoder.is_full() || (!more && !decoder.is_empty()) {
                let batch = decoder
                    .take_batch()
                    .map_err(|e| ExecError::from_decode(name, e))?;
                if !deliver(ToWriter::Batch(batch)) || self.should_stop() {
                    return Ok(());
                }
            }
            if !more {
                break;
            }
        }
        deliver(ToWriter::End);
        Ok(())
    }

    /// Encodes and writes what a fetcher delivers, unit by unit.
    fn write(&self, state: &mut WriterState, message: ToWriter) -> Result<(), ExecError> {
        match message {
            ToWriter::Begin { unit, schema } => {
                let output = &self.outputs[unit.table];
                let sink = output
                    .begin_unit(unit.seq, &self.req.format.header(&schema))
                    .map_err(|source| self.output_error(unit.table, source))?;
                state.current = Some((unit, self.req.format.encoder(schema), sink));
                state.unit_rows = 0;
            }
            ToWriter::Batch(batch) => {
                let Some((unit, encoder, sink)) = state.current.as_mut() else {
                    return Ok(());
                };
                let name = &self.plan.tables[unit.table].name;
                state.encoded.clear();
                encoder
                    .encode(&batch, &mut state.encoded)
                    .map_err(|e| ExecError::from_sink(name, e))?;
                sink.write_all(&state.encoded).map_err(|source| {
                    let path = self.outputs[unit.table].final_path.clone();
                    self.output_error(unit.table, output::OutputError { path, source })
                })?;
                let rows = batch.num_rows() as u64;
                state.unit_rows += rows;
                self.rows[unit.table].fetch_add(rows, Ordering::Relaxed);
                self.progress.rows_written(rows, state.encoded.len() as u64);
            }
            ToWriter::Abort => {
                if let Some((unit, _, sink)) = state.current.take() {
                    // The unit will be read again; its rows count then.
                    self.rows[unit.table].fetch_sub(state.unit_rows, Ordering::Relaxed);
                    self.outputs[unit.table]
                        .abandon_unit(sink)
                        .map_err(|source| self.output_error(unit.table, source))?;
                }
            }
            ToWriter::End => {
                let Some((unit, mut encoder, mut sink)) = state.current.take() else {
                    return Ok(());
                };
                let name = &self.plan.tables[unit.table].name;
                state.encoded.clear();
                encoder
                    .finish(&mut state.encoded)
                    .map_err(|e| ExecError::from_sink(name, e))?;
                sink.write_all(&state.encoded).map_err(|source| {
                    let path = self.outputs[unit.table].final_path.clone();
                    self.output_error(unit.table, output::OutputError { path, source })
                })?;
                let output = &self.outputs[unit.table];
                if output
                    .finish_unit(unit.seq, sink)
                    .map_err(|source| self.output_error(unit.table, source))?
                {
                    self.progress.table_finished(&TableSummary {
                        name: self.plan.tables[unit.table].name.clone(),
                        path: output.final_path.clone(),
                        rows: self.rows[unit.table].load(Ordering::Relaxed),
                        bytes: output_size(&output.final_path),
                        units: self.plan.tables[unit.table].unit_count,
                    });
                }
            }
        }
        Ok(())
    }

    fn output_error(&self, table: usize, source: output::OutputError) -> ExecError {
        ExecError::Output {
            table: self.plan.tables[table].name.clone(),
            source,
        }
    }
}

/// Batches a fetcher may have queued for its writer: enough to smooth out
/// a slow write, few enough to keep memory bounded (each is at most
/// `BatchLimits` big).
const WRITER_QUEUE: usize = 4;

/// A writer's unit in progress and its reused encoding buffer.
#[derive(Default)]
struct WriterState {
    current: Option<(Unit, Box<dyn BatchEncoder>, UnitSink)>,
    /// Rows of `current` written so far.
    unit_rows: u64,
    encoded: Vec<u8>,
}

/// What a worker's fetcher tells its writer.
enum ToWriter {
    Begin {
        unit: Unit,
        schema: SchemaRef,
    },
    Batch(RecordBatch),
    End,
    /// The unit failed: undo what was written of it.
    Abort,
}

impl Run<'_> {
    fn fetch_and_drop(
        &self,
        stmt: &mut fbunload_client::Statement<'_>,
        unit: &Unit,
    ) -> Result<(), ExecError> {
        let name = &self.plan.tables[unit.table].name;
        stmt.execute()
            .map_err(|e| ExecError::from_client(name, e))?;
        let mut rows = 0u64;
        while stmt.fetch().map_err(|e| ExecError::from_client(name, e))? {
            rows += 1;
            if rows.is_multiple_of(self.req.batch.rows as u64) {
                self.progress.rows_written(self.req.batch.rows as u64, 0);
            }
        }
        self.progress
            .rows_written(rows % self.req.batch.rows as u64, 0);
        self.rows[unit.table].fetch_add(rows, Ordering::Relaxed);
        Ok(())
    }
}

/// The client library a request would use; re-exported for the CLI.
pub fn load_client(path: Option<&Path>) -> Result<Arc<Client>, ExecError> {
    Client::load(path).map_err(ExecError::Client)
}
