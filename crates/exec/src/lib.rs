//! The coordinator and its workers: one consistent, parallel unload.
//!
//! The main attachment starts a read-only SNAPSHOT transaction, reads its
//! snapshot number, reads the catalog and makes the [`Plan`]. Each worker
//! then opens its own attachment (without garbage collection, as gbak
//! does) and a read-only transaction *at that snapshot number*, so every
//! worker sees exactly the data the main transaction sees. Workers take
//! units one at a time from a shared counter — the only global scan state
//! — so a mix of one huge table and many small ones keeps everyone busy.
//!
//! A unit flows one way: query → rows → [`RowDecoder`] → Arrow batch →
//! the format's encoder → the table's [`output::TableOutput`], which puts
//! units in order and renames the file when the table is complete.
//!
//! Servers before Firebird 4 cannot share a snapshot or address pointer
//! pages; there the run uses one worker on the main transaction itself,
//! which is still one consistent snapshot.

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
use fbunload_sink::{BatchEncoder, StreamFormat};
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender};

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
    pub format: Arc<dyn StreamFormat>,
    pub text: TextDecoder,
    /// Bytes that units waiting for their turn may hold in memory.
    pub memory_budget: usize,
    pub batch: BatchLimits,
    /// Fetch every row and drop it: no decoding, no files. The same
    /// attachments, snapshot and units as a real run, so it measures the
    /// engine's limit that a real run is compared against.
    pub fetch_only: bool,
}

/// What the main attachment found before any row was read.
#[derive(Debug, Clone)]
pub struct RunStart {
    pub server_version: String,
    /// `None` on servers that cannot share a snapshot (before Firebird 4).
    pub snapshot_number: Option<u64>,
    pub workers: usize,
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
}

/// A progress sink that shows nothing.
pub struct Silent;
impl Progress for Silent {}

/// Attaches, plans and returns the plan without reading any row.
pub fn plan_only(req: &UnloadRequest) -> Result<(Plan, RunStart), ExecError> {
    let main = attach_main(req)?;
    let session = Session::begin(req, &main)?;
    Ok((session.plan, session.start))
}

/// Runs the whole unload.
pub fn unload(req: &UnloadRequest, progress: &dyn Progress) -> Result<Summary, ExecError> {
    let started = Instant::now();
    let main = attach_main(req)?;
    let session = Session::begin(req, &main)?;
    if !req.fetch_only {
        prepare_output_dir(&req.output_dir)?;
    }
    let budget = MemoryBudget::new(req.memory_budget);
    let outputs: Vec<TableOutput> = session
        .plan
        .tables
        .iter()
        .map(|t| {
            let name = file_name_for(&t.name, req.format.extension());
            TableOutput::new(&req.output_dir, &name, t.unit_count, budget.clone())
        })
        .collect();
    let run = Run {
        req,
        plan: &session.plan,
        outputs: &outputs,
        next_unit: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        first_error: Mutex::new(None),
        rows: session.plan.tables.iter().map(|_| AtomicU64::new(0)).collect(),
        progress,
    };
    progress.started(&session.plan, &session.start);

    match session.start.snapshot_number {
        Some(number) => std::thread::scope(|scope| {
            for _ in 0..session.start.workers {
                let run = &run;
                scope.spawn(move || run.guard(|| run.worker(number)));
            }
        }),
        None => run.guard(|| run.work(&session.transaction)),
    }

    if let Some(err) = run.first_error.into_inner().unwrap() {
        return Err(err);
    }
    let tables = session
        .plan
        .tables
        .iter()
        .zip(&outputs)
        .zip(&run.rows)
        .map(|((t, out), rows)| TableSummary {
            name: t.name.clone(),
            path: out.final_path.clone(),
            rows: rows.load(Ordering::Relaxed),
            bytes: std::fs::metadata(&out.final_path).map(|m| m.len()).unwrap_or(0),
            units: t.unit_count,
        })
        .collect();
    Ok(Summary {
        start: session.start.clone(),
        tables,
        elapsed: started.elapsed(),
    })
}

fn attach_main(req: &UnloadRequest) -> Result<Attachment, ExecError> {
    Attachment::connect(&req.client, &req.connect)
        .map_err(|e| ExecError::attach(&req.connect.database, req.connect.user.as_deref(), e))
}

/// The main attachment's snapshot and the plan made inside it.
struct Session<'a> {
    transaction: Transaction<'a>,
    plan: Plan,
    start: RunStart,
}

impl<'a> Session<'a> {
    fn begin(req: &UnloadRequest, main: &'a Attachment) -> Result<Session<'a>, ExecError> {
        let version = main.server_version().map_err(ExecError::Client)?;
        let transaction = main
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .map_err(ExecError::Client)?;
        let shared = version.has_shared_snapshots();
        let snapshot_number = if shared {
            Some(transaction.snapshot_number().map_err(ExecError::Client)?)
        } else {
            None
        };
        let catalog = read_catalog(&transaction, &req.filter)?;
        let plan = Plan::new(
            &catalog,
            PlanOptions {
                split_tables: shared && req.plan.split_tables,
                workers: req.parallel,
                page_size: main.page_size().map_err(ExecError::Client)?,
                ..req.plan
            },
        );
        let workers = if shared {
            req.parallel.clamp(1, plan.units.len().max(1))
        } else {
            1
        };
        Ok(Session {
            transaction,
            plan,
            start: RunStart {
                server_version: version.text,
                snapshot_number,
                workers,
            },
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
}

impl Run<'_> {
    /// Records the first failure and tells every worker to stop.
    fn guard(&self, body: impl FnOnce() -> Result<(), ExecError>) {
        if let Err(err) = body() {
            let mut first = self.first_error.lock().unwrap();
            if first.is_none() {
                *first = Some(err);
            }
            self.failed.store(true, Ordering::SeqCst);
        }
    }

    fn worker(&self, snapshot: u64) -> Result<(), ExecError> {
        let connect = ConnectOptions {
            no_garbage_collect: true,
            ..self.req.connect.clone()
        };
        let attachment = Attachment::connect(&self.req.client, &connect)
            .map_err(|e| ExecError::attach(&connect.database, connect.user.as_deref(), e))?;
        let tr = attachment
            .start_transaction(TransactionMode::ReadOnlyAtSnapshot(snapshot))
            .map_err(|e| {
                ExecError::Server(format!("a worker cannot join snapshot {snapshot}: {e}"))
            })?;
        self.work(&tr)
    }

    /// Takes units until there are none left or the run has failed.
    ///
    /// Each worker is two threads: this one fetches and decodes (it must,
    /// the rows live in its statement's buffer) and hands Arrow batches to
    /// a writer thread that encodes and writes them. Fetching then never
    /// waits for formatting or the disk, and a spare core does that work.
    fn work(&self, tr: &Transaction<'_>) -> Result<(), ExecError> {
        std::thread::scope(|scope| {
            let (to_writer, from_fetcher) = std::sync::mpsc::sync_channel(WRITER_QUEUE);
            scope.spawn(move || self.guard(|| self.write_units(from_fetcher)));
            while !self.failed.load(Ordering::SeqCst) {
                let next = self.next_unit.fetch_add(1, Ordering::SeqCst);
                let Some(unit) = self.plan.units.get(next) else {
                    break;
                };
                self.read_unit(tr, unit, &to_writer)?;
            }
            Ok(())
        })
    }

    /// Fetches one unit and sends it, batch by batch, to the writer.
    fn read_unit(&self, tr: &Transaction<'_>, unit: &Unit, to_writer: &SyncSender<ToWriter>) -> Result<(), ExecError> {
        let table = &self.plan.tables[unit.table];
        let name = table.name.as_str();
        let mut stmt = tr
            .prepare(&table.unit_sql(unit))
            .map_err(|e| ExecError::from_client(name, e))?;
        if self.req.fetch_only {
            return self.fetch_and_drop(&mut stmt, unit);
        }
        if stmt.columns().len() != table.columns.len() {
            return Err(ExecError::table(name, "the table's columns changed while planning"));
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
        // A closed channel means the writer failed; its error is the one
        // recorded, so this side just stops.
        let send = |message| to_writer.send(message).is_ok();
        if !send(ToWriter::Begin { unit: *unit, schema: decoder.schema() }) {
            return Ok(());
        }
        stmt.execute().map_err(|e| ExecError::from_client(name, e))?;
        loop {
            let more = stmt.fetch().map_err(|e| ExecError::from_client(name, e))?;
            if more {
                decoder
                    .append_row(&stmt.row())
                    .map_err(|e| ExecError::from_decode(name, e))?;
            }
            if decoder.is_full() || (!more && !decoder.is_empty()) {
                let batch = decoder.take_batch().map_err(|e| ExecError::from_decode(name, e))?;
                if !send(ToWriter::Batch(batch)) || self.failed.load(Ordering::SeqCst) {
                    return Ok(());
                }
            }
            if !more {
                break;
            }
        }
        send(ToWriter::End);
        Ok(())
    }

    /// The writer thread of a worker: encodes batches and puts them in
    /// their table's file, unit by unit, in the order the fetcher sends.
    fn write_units(&self, from_fetcher: Receiver<ToWriter>) -> Result<(), ExecError> {
        let mut current: Option<(Unit, Box<dyn BatchEncoder>, UnitSink)> = None;
        let mut encoded = Vec::new();
        for message in from_fetcher {
            match message {
                ToWriter::Begin { unit, schema } => {
                    let output = &self.outputs[unit.table];
                    let sink = output
                        .begin_unit(unit.seq, &self.req.format.header(&schema))
                        .map_err(|source| self.output_error(unit.table, source))?;
                    current = Some((unit, self.req.format.encoder(schema), sink));
                }
                ToWriter::Batch(batch) => {
                    let Some((unit, encoder, sink)) = current.as_mut() else {
                        continue;
                    };
                    let name = &self.plan.tables[unit.table].name;
                    encoded.clear();
                    encoder
                        .encode(&batch, &mut encoded)
                        .map_err(|e| ExecError::from_sink(name, e))?;
                    sink.write_all(&encoded).map_err(|source| {
                        let path = self.outputs[unit.table].final_path.clone();
                        self.output_error(unit.table, output::OutputError { path, source })
                    })?;
                    let rows = batch.num_rows() as u64;
                    self.rows[unit.table].fetch_add(rows, Ordering::Relaxed);
                    self.progress.rows_written(rows, encoded.len() as u64);
                }
                ToWriter::End => {
                    let Some((unit, _, sink)) = current.take() else {
                        continue;
                    };
                    let output = &self.outputs[unit.table];
                    if output
                        .finish_unit(unit.seq, sink)
                        .map_err(|source| self.output_error(unit.table, source))?
                    {
                        self.progress.table_finished(&TableSummary {
                            name: self.plan.tables[unit.table].name.clone(),
                            path: output.final_path.clone(),
                            rows: self.rows[unit.table].load(Ordering::Relaxed),
                            bytes: std::fs::metadata(&output.final_path).map(|m| m.len()).unwrap_or(0),
                            units: self.plan.tables[unit.table].unit_count,
                        });
                    }
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

/// What a worker's fetcher tells its writer.
enum ToWriter {
    Begin { unit: Unit, schema: SchemaRef },
    Batch(RecordBatch),
    End,
}

impl Run<'_> {
    fn fetch_and_drop(&self, stmt: &mut fbunload_client::Statement<'_>, unit: &Unit) -> Result<(), ExecError> {
        let name = &self.plan.tables[unit.table].name;
        stmt.execute().map_err(|e| ExecError::from_client(name, e))?;
        let mut rows = 0u64;
        while stmt.fetch().map_err(|e| ExecError::from_client(name, e))? {
            rows += 1;
            if rows % self.req.batch.rows as u64 == 0 {
                self.progress.rows_written(self.req.batch.rows as u64, 0);
            }
        }
        self.progress.rows_written(rows % self.req.batch.rows as u64, 0);
        self.rows[unit.table].fetch_add(rows, Ordering::Relaxed);
        Ok(())
    }
}

/// The client library a request would use; re-exported for the CLI.
pub fn load_client(path: Option<&Path>) -> Result<Arc<Client>, ExecError> {
    Client::load(path).map_err(ExecError::Client)
}
