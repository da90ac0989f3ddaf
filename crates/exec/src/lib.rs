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
//! A unit flows one way: query → rows → [`fbunload_decode::RowDecoder`] → Arrow batch →
//! the format's encoder → the table's [`output::TableOutput`], which puts
//! units in order and renames the file when the table is complete.
//!
//! Servers before Firebird 4 cannot share a snapshot or address pointer
//! pages; there the run uses one worker on the main transaction itself,
//! which is still one consistent snapshot — or, if the user allows it,
//! one table per worker, each in a snapshot of its own.
//!
//! Here: the request, the run from attach to summary. `snapshot` joins
//! every worker to one snapshot; `worker` is a worker's loop (units,
//! retries, the writer thread); [`output`] assembles a table's units in
//! order, [`spool`] holds the ones that finish early; `verify` counts.

mod error;
pub mod output;
mod snapshot;
pub mod spool;
mod verify;
mod worker;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fbunload_client::{Attachment, Client, ConnectOptions, TransactionMode};
use fbunload_decode::{BatchLimits, TypeOptions};
use fbunload_plan::{read_catalog, Plan, PlanOptions, TableFilter};
use fbunload_sink::{FileInfo, Plain, StreamFormat};

use snapshot::join_snapshot;
use verify::verify;
use worker::{main_attachment_lost, Run};

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
    /// The user's choices in the type mapping: how CHARACTER SET NONE text
    /// is decoded (every other column is decoded from its own character
    /// set: see [`fbunload_decode::text`]), whether INT128 is Decimal256.
    pub types: TypeOptions,
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
/// (see the `snapshot` module). The main transaction is read-write (it writes
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
    let outputs = table_outputs(req, &planned.plan, &budget, &snapshot);
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
            bytes: out.size(),
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

/// Where each table's units are assembled: a file in the output directory,
/// or standard output (`-o -`) for a format that can be streamed.
/// `snapshot` is read when a file is finished, to record it in the file.
fn table_outputs(
    req: &UnloadRequest,
    plan: &Plan,
    budget: &Arc<MemoryBudget>,
    snapshot: &Arc<AtomicU64>,
) -> Vec<TableOutput> {
    plan.tables
        .iter()
        .map(|t| {
            let name = file_name_for(&t.name, req.format.extension());
            let stream = req
                .to_stdout
                .then(|| req.format.open_stream(Box::new(Plain(io::stdout()))))
                .flatten();
            if let Some(stream) = stream {
                return TableOutput::streamed(
                    &req.output_dir,
                    &name,
                    t.unit_count,
                    budget.clone(),
                    stream,
                );
            }
            let (format, snapshot, table) = (req.format.clone(), snapshot.clone(), t.name.clone());
            let finisher: output::Finisher = Box::new(move |temp, final_path| {
                let number = snapshot.load(Ordering::SeqCst);
                let info = FileInfo {
                    table: table.clone(),
                    snapshot_number: (number != 0).then_some(number),
                };
                format.finish_file(temp, final_path, &info)
            });
            TableOutput::new(
                &req.output_dir,
                &name,
                t.unit_count,
                budget.clone(),
                finisher,
            )
        })
        .collect()
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

fn attach_main(req: &UnloadRequest) -> Result<Attachment, ExecError> {
    let connect = connect_options(req, false);
    Attachment::connect(&req.client, &connect)
        .map_err(|e| ExecError::attach(&connect.database, connect.user.as_deref(), e))
}

/// The connection character set of every attachment: NONE, so that the
/// server converts no text and each column arrives in its own character
/// set, to be decoded exactly (see [`fbunload_decode::text`]).
const TRANSPORT_CHARSET: &str = "NONE";

/// How the run's attachments connect; workers skip garbage collection, as
/// gbak's do: an unload should not pay for cleaning up other transactions'
/// old versions.
pub(crate) fn connect_options(req: &UnloadRequest, worker: bool) -> ConnectOptions {
    ConnectOptions {
        charset: TRANSPORT_CHARSET.into(),
        no_garbage_collect: worker,
        ..req.connect.clone()
    }
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

/// The client library a request would use; re-exported for the CLI.
pub fn load_client(path: Option<&Path>) -> Result<Arc<Client>, ExecError> {
    Client::load(path).map_err(ExecError::Client)
}
