//! The run: one consistent, parallel read of a plan's units into a
//! destination.
//!
//! Three parts, in the shape of ConnectorX's source → dispatcher →
//! destination:
//!
//! - the **source** is the [`Plan`] (tables cut into units of DB_KEY
//!   ranges, from `fbunload-plan`), read by the [`firebird`] module inside
//!   one snapshot that every worker joins;
//! - the **dispatcher** (`dispatch`) hands units to workers, redoes the
//!   ones whose connection was lost, stops on the first error or signal,
//!   and verifies counts; it knows nothing of Firebird (it sees a
//!   `session`) nor of files (it sees a [`Destination`]), so it is tested
//!   with made-up rows;
//! - the **destination** receives each unit's Arrow batches on the worker
//!   that read them, in any order, and hands them on in DB_KEY order
//!   (`fbunload-dest` has files, standard output and Arrow streams).
//!
//! [`Prepared::new`] attaches and plans without reading a row (what
//! `--plan` prints); [`Prepared::run`] takes the snapshot and reads.
//! [`HeldSnapshot`] instead holds a snapshot open for readers that join it
//! later, each reading units it is given ([`SnapshotReader`]): the
//! dispatcher is then someone else's (Dask's).

pub mod destination;
mod dispatch;
pub use dispatch::WRITER_QUEUE_BYTES;
mod error;
mod estimate;
pub mod firebird;
mod held;
mod process;
mod session;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_schema::SchemaRef;
use fbunload_client::{Attachment, Client};
use fbunload_decode::{BatchLimits, TypeOptions};
use fbunload_plan::{Kind, Plan, PlanOptions, TableFilter, Unit};

pub use destination::{Destination, Discard, FileDigest, RunInfo, UnitWriter, Written};
pub use error::{ExecError, OutputError};
pub use firebird::{Consistency, Database, SnapshotMarks};
pub use held::{HeldSnapshot, SnapshotReader, SnapshotTicket, OLDER_TRANSACTIONS_WAIT};
pub use process::{reader_command, serve_reader, set_reader_command, ReaderCommand};

use dispatch::{dispatch, DispatchOptions};
use firebird::{FirebirdSession, ReadContext};
use process::ProcessSession;
use session::Session;

/// How a run goes: everything but what it reads and where it writes.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Worker connections (at least 1).
    pub parallel: usize,
    pub plan: PlanOptions,
    pub types: TypeOptions,
    pub batch: BatchLimits,
    /// Fetch every row and drop it: no decoding, no destination. The same
    /// attachments, snapshot and units as a real run, so it measures the
    /// engine's limit a real run is compared against.
    pub fetch_only: bool,
    /// After reading, count every table's rows at the same snapshot and
    /// fail on any difference.
    pub verify: bool,
    /// Set from outside (Ctrl-C, SIGTERM, Python's KeyboardInterrupt) to
    /// stop the run.
    pub cancel: Arc<AtomicBool>,
    /// Redos of a unit after lost connections, per worker, before the run
    /// fails.
    pub max_retries: u32,
    /// On servers without shared snapshots (before Firebird 4), read tables
    /// in parallel anyway, each worker in a snapshot of its own.
    pub allow_inconsistent: bool,
    /// Read the DDL of the tables at the snapshot for a destination that
    /// keeps it (`schema.sql` in an output directory).
    pub schema: bool,
    /// How long a worker's call (a prepare, a fetch, a blob segment) may
    /// wait for the database before the run closes its connections and
    /// fails: a server that stops answering without closing them would
    /// otherwise leave the run waiting for ever. `None`: no limit.
    pub stall_timeout: Option<Duration>,
    /// Reader processes to spread the workers over when reading from a
    /// server at a shared snapshot (see `process`); 0, or an embedded
    /// database, or no [`ReaderCommand`]: the workers are threads.
    pub processes: usize,
    /// How to start a reader process; `None`: the one
    /// [`set_reader_command`] set for this process, if any.
    pub reader_command: Option<ReaderCommand>,
    /// Estimate each table's rows before the run ([`Prepared::estimate`]),
    /// for progress that shows a total (`--progress json`): a few queries
    /// and at most 128 pages read a table.
    pub estimate: bool,
}

/// Long beside any one call of a unit's reads (a unit is a slice of one
/// table), short beside hours of waiting.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(1800);

/// Debug builds only: waits as many milliseconds as the environment
/// variable `name` says, so that the fault tests can stop, kill or block
/// a run at a point of a destination's own (a directory switch, a
/// PostgreSQL build, publish or sync); each caller names its variable.
pub fn pause_for_tests(name: &str) {
    if cfg!(debug_assertions) {
        if let Some(ms) = std::env::var(name).ok().and_then(|ms| ms.parse().ok()) {
            std::thread::sleep(Duration::from_millis(ms));
        }
    }
}

/// The longest stall timeout accepted, in seconds: a year. Watches add
/// their own margins to the limit, and no call should wait longer anyway.
pub const MAX_STALL_TIMEOUT_SECS: u64 = 366 * 24 * 3600;

/// [`RunOptions::stall_timeout`] from a number of seconds, as the command
/// line's `--stall-timeout` and other front ends take it: 0 is no limit,
/// more than [`MAX_STALL_TIMEOUT_SECS`] is refused.
pub fn stall_timeout_from_secs(seconds: u64) -> Result<Option<Duration>, String> {
    if seconds > MAX_STALL_TIMEOUT_SECS {
        return Err(longer_than_a_year(seconds));
    }
    Ok((seconds > 0).then(|| Duration::from_secs(seconds)))
}

/// [`stall_timeout_from_secs`] for a front end that takes fractions of a
/// second (Python's `stall_timeout`): the same bound, and a negative
/// number or NaN is refused.
pub fn stall_timeout_from_secs_f64(seconds: f64) -> Result<Option<Duration>, String> {
    if seconds.is_nan() || seconds < 0.0 {
        return Err(format!(
            "{seconds} is not a number of seconds; give 0 (no limit) to \
             {MAX_STALL_TIMEOUT_SECS}"
        ));
    }
    if seconds > MAX_STALL_TIMEOUT_SECS as f64 {
        return Err(longer_than_a_year(seconds));
    }
    Ok((seconds > 0.0).then(|| Duration::from_secs_f64(seconds)))
}

fn longer_than_a_year(seconds: impl std::fmt::Display) -> String {
    format!(
        "{seconds} seconds is longer than a year; give at most {MAX_STALL_TIMEOUT_SECS} \
         (or 0: no limit)"
    )
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            parallel: std::thread::available_parallelism().map_or(1, |n| n.get()),
            plan: PlanOptions::default(),
            types: TypeOptions::default(),
            batch: BatchLimits::default(),
            fetch_only: false,
            verify: false,
            cancel: Arc::new(AtomicBool::new(false)),
            max_retries: 3,
            allow_inconsistent: false,
            schema: true,
            stall_timeout: Some(DEFAULT_STALL_TIMEOUT),
            processes: 0,
            reader_command: None,
            estimate: false,
        }
    }
}

/// What the main attachment found before any row was read.
#[derive(Debug, Clone)]
pub struct RunStart {
    pub server_version: String,
    /// Known once the run has started; `None` where the server cannot
    /// share a snapshot (before Firebird 4).
    pub snapshot_number: Option<u64>,
    /// The snapshot's transaction, where one is shared.
    pub snapshot_marks: Option<SnapshotMarks>,
    pub workers: usize,
    /// Reader processes the workers live in; 0: threads of this process.
    pub processes: usize,
    pub consistency: Consistency,
}

/// Per-table (view, query) results.
#[derive(Debug, Clone)]
pub struct TableSummary {
    pub name: String,
    pub kind: Kind,
    /// The file or directory written, if any.
    pub path: Option<PathBuf>,
    pub rows: u64,
    pub bytes: u64,
    pub units: usize,
    /// The files written into an output directory, with their SHA-256.
    pub files: Vec<FileDigest>,
    /// What an incremental run (`--since`) did with it.
    pub change: Option<TableChange>,
}

/// What an incremental run did with a table: read its changes (its rows
/// are the upserts) or read it whole, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableChange {
    /// Why it was read whole; `None` when its changes were read.
    pub whole_because: Option<String>,
    /// Rows deleted since the previous run.
    pub deletes: u64,
    /// Units whose unchanged keys were read to find the deleted rows.
    pub rechecked_units: u64,
}

#[derive(Debug, Clone)]
pub struct Summary {
    pub start: RunStart,
    pub tables: Vec<TableSummary>,
    pub elapsed: Duration,
    /// Whether every table's rows were compared with COUNT(*).
    pub verified: bool,
    /// Units redone on a new connection after a lost one.
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

/// Hooks for a progress display; all but `started` are called from worker
/// threads.
pub trait Progress: Sync {
    fn started(&self, _plan: &Plan, _start: &RunStart) {}
    /// Rows read, as batches arrive (a redone unit counts again).
    fn rows_read(&self, _rows: u64) {}
    fn unit_finished(&self, _unit: &Unit, _rows: u64) {}
    /// Units the destination asked for once the planned ones were written
    /// ([`Destination::follow_ups`]): more work than `started` said.
    fn more_units(&self, _units: &[Unit]) {}
    fn table_finished(&self, _table: &str, _rows: u64) {}
    /// Something went wrong and was recovered from (a unit redone).
    fn warning(&self, _message: &str) {}
}

/// A progress display that shows nothing.
pub struct Silent;
impl Progress for Silent {}

/// A run attached and planned: no snapshot yet, no row read.
/// What a run without a shared snapshot gives up, said once as it starts
/// (and so even with `-q`): the parallelism asked for, or consistency.
fn consistency_warning(start: &RunStart, parallel: usize) -> Option<String> {
    // "LI-V3.0.11.33637 Firebird 3.0" → "Firebird 3.0 (LI-V3.0.11.33637)"
    let server = match start.server_version.split_once(' ') {
        Some((build, name)) => format!("{name} ({build})"),
        None => start.server_version.clone(),
    };
    match start.consistency {
        Consistency::OneTransaction if parallel > 1 => Some(format!(
            "{server} shares no snapshot between attachments, so one worker reads every table \
             in one consistent transaction (-j {parallel} is not used); --allow-inconsistent \
             reads tables in parallel, each at a moment of its own"
        )),
        Consistency::SnapshotPerReader => Some(format!(
            "--allow-inconsistent: {server} shares no snapshot, so each worker reads at a \
             moment of its own and the tables are not mutually consistent"
        )),
        _ => None,
    }
}

pub struct Prepared {
    pub plan: Arc<Plan>,
    /// The Arrow schema of each table of the plan.
    pub schemas: Arc<Vec<SchemaRef>>,
    pub start: RunStart,
    db: Database,
    main: Attachment,
    options: RunOptions,
}

impl Prepared {
    /// The catalog model of the plan's tables (what `schema.sql` and a
    /// database destination are made from), read in a snapshot of its
    /// own: for `--plan`, which reads no rows.
    pub fn schema_model(&self) -> Result<fbunload_plan::Schema, ExecError> {
        let names: Vec<String> = self
            .plan
            .tables
            .iter()
            .filter(|t| t.kind == Kind::Table && !t.role.is_helper())
            .map(|t| t.name.clone())
            .collect();
        let tr = self
            .main
            .start_transaction(fbunload_client::TransactionMode::ReadOnlySnapshot)
            .map_err(ExecError::Client)?;
        fbunload_plan::read_schema(&tr, &names).map_err(|e| {
            ExecError::Server(format!(
                "reading the tables' catalog for --plan failed ({e})"
            ))
        })
    }

    /// Attaches, reads the catalog of the tables `filter` selects, and
    /// plans their units.
    pub fn new(db: Database, filter: &TableFilter, options: RunOptions) -> Result<Self, ExecError> {
        let main = db.attach(false)?;
        let version = main.server_version().map_err(ExecError::Client)?;
        let consistency = if version.has_shared_snapshots() {
            Consistency::SharedSnapshot
        } else if options.allow_inconsistent && options.parallel > 1 {
            Consistency::SnapshotPerReader
        } else {
            Consistency::OneTransaction
        };
        if consistency == Consistency::SnapshotPerReader && options.verify {
            return Err(ExecError::Usage(
                "--verify needs one snapshot for all tables, which --allow-inconsistent gives up; \
                 use one or the other"
                    .into(),
            ));
        }
        let plan_options = PlanOptions {
            workers: options.parallel,
            ..options.plan
        };
        let split_tables = consistency == Consistency::SharedSnapshot;
        // A run that picks up units again (resume, --since) must cut its
        // tables as the run before did: by pages alone.
        let cut_as_before = filter.incremental.is_some() || filter.resumable.is_some();
        let blob_workers = (split_tables
            && options.parallel > 1
            && options.plan.unit_pages.is_none()
            && !cut_as_before)
            .then_some(options.parallel);
        let (plan, schemas) = firebird::plan(
            &main,
            filter,
            plan_options,
            split_tables,
            &options.types,
            blob_workers,
        )?;
        let workers = match consistency {
            Consistency::OneTransaction => 1,
            _ => options.parallel.clamp(1, plan.units.len().max(1)),
        };
        let mut options = options;
        if options.reader_command.is_none() {
            options.reader_command = process::reader_command();
        }
        // The embedded engine cannot be shared by processes.
        let processes = match consistency {
            Consistency::SharedSnapshot if main.is_remote() && options.reader_command.is_some() => {
                options.processes.min(workers)
            }
            _ => 0,
        };
        Ok(Prepared {
            plan: Arc::new(plan),
            schemas: Arc::new(schemas),
            start: RunStart {
                server_version: version.text,
                snapshot_number: None,
                snapshot_marks: None,
                workers,
                processes,
                consistency,
            },
            db,
            main,
            options,
        })
    }

    /// The flag that stops the run when set (the one of its options).
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.options.cancel.clone()
    }

    /// Takes the snapshot and reads every unit into `destination`.
    pub fn run(
        mut self,
        destination: &dyn Destination,
        progress: &dyn Progress,
    ) -> Result<Summary, ExecError> {
        let started = Instant::now();
        if self.options.estimate {
            // Only for progress: a table it fails on has none, and its
            // read says what is wrong.
            let _ = self.estimate();
        }
        let Prepared {
            plan,
            schemas,
            mut start,
            db,
            main,
            options,
        } = self;
        let session = FirebirdSession::new(
            db,
            main,
            start.consistency,
            ReadContext {
                plan: plan.clone(),
                schemas: schemas.clone(),
                types: options.types,
                // The workers' batches share one cap, so memory does not
                // grow with -j.
                batch: options.batch.shared_by(start.workers),
                read_group: fbunload_client::new_read_group(),
            },
        );
        let dispatch_options = DispatchOptions {
            workers: start.workers,
            fetch_only: options.fetch_only,
            verify: options.verify,
            max_retries: options.max_retries,
            pipelined: start.workers < std::thread::available_parallelism().map_or(1, |n| n.get()),
            cancel: options.cancel.clone(),
            stall_timeout: options.stall_timeout,
        };
        let read_schema = options.schema && !options.fetch_only && destination.keeps_schema();
        let run = Dispatching {
            plan: &plan,
            schemas: &schemas,
            destination,
            progress,
            options: &dispatch_options,
            read_schema,
            parallel: options.parallel,
        };
        let dispatched = match (start.processes, options.reader_command.clone()) {
            (processes @ 1.., Some(command)) => run.dispatch(
                &mut ProcessSession::new(session, command, processes),
                &mut start,
            )?,
            _ => run.dispatch(&mut { session }, &mut start)?,
        };
        let written = if options.fetch_only {
            Vec::new()
        } else {
            destination.finish()?
        };
        let tables = plan
            .tables
            .iter()
            .zip(&dispatched.rows)
            .enumerate()
            .map(|(i, (t, rows))| {
                let written = written.get(i).cloned().unwrap_or_default();
                TableSummary {
                    name: t.name.clone(),
                    kind: t.kind,
                    path: written.path,
                    rows: *rows,
                    bytes: written.bytes,
                    units: t.unit_count,
                    files: written.files,
                    change: None,
                }
            })
            .collect();
        Ok(Summary {
            start,
            tables,
            elapsed: started.elapsed(),
            verified: options.verify,
            retries: dispatched.retries,
        })
    }
}

/// What [`Prepared::run`] hands the dispatcher, whatever its session.
struct Dispatching<'a> {
    plan: &'a Arc<Plan>,
    schemas: &'a Arc<Vec<SchemaRef>>,
    destination: &'a dyn Destination,
    progress: &'a dyn Progress,
    options: &'a DispatchOptions,
    read_schema: bool,
    parallel: usize,
}

impl Dispatching<'_> {
    fn dispatch<S: Session>(
        &self,
        session: &mut S,
        start: &mut RunStart,
    ) -> Result<dispatch::Dispatched, ExecError> {
        let (plan, schemas, destination, progress) =
            (self.plan, self.schemas, self.destination, self.progress);
        let mut on_start = |session: &S| {
            let snapshot_number = session.snapshot_number();
            start.snapshot_number = snapshot_number;
            start.snapshot_marks = session.snapshot_marks();
            let schema = match self.read_schema {
                true => session.schema(plan)?,
                false => None,
            };
            let schema_sql = schema.as_ref().map(|s| s.to_sql());
            progress.started(plan, start);
            if let Some(warning) = consistency_warning(start, self.parallel) {
                progress.warning(&warning);
            }
            destination.start(&RunInfo {
                plan,
                schemas,
                snapshot_number,
                snapshot_marks: start.snapshot_marks.as_ref(),
                schema_sql: schema_sql.as_deref(),
                schema: schema.as_ref(),
            })
        };
        dispatch(
            session,
            plan,
            destination,
            self.options,
            progress,
            &mut on_start,
        )
    }
}

/// The client library a run would use: `explicit`, else found as
/// `fbunload_client::Client::load` describes.
pub fn load_client(explicit: Option<&std::path::Path>) -> Result<Arc<Client>, ExecError> {
    Client::load(explicit).map_err(ExecError::Client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_timeouts_in_seconds_and_fractions_have_one_bound() {
        let most = MAX_STALL_TIMEOUT_SECS;
        assert_eq!(stall_timeout_from_secs(0), Ok(None));
        assert_eq!(stall_timeout_from_secs_f64(0.0), Ok(None));
        assert_eq!(
            stall_timeout_from_secs_f64(2.5),
            Ok(Some(Duration::from_millis(2500)))
        );
        assert_eq!(
            stall_timeout_from_secs_f64(most as f64),
            stall_timeout_from_secs(most)
        );
        for refused in [
            stall_timeout_from_secs(most + 1),
            stall_timeout_from_secs(u64::MAX),
            stall_timeout_from_secs_f64(most as f64 + 0.5),
            stall_timeout_from_secs_f64(f64::INFINITY),
        ] {
            assert!(refused.unwrap_err().contains("longer than a year"));
        }
        for refused in [-1.0, f64::NAN, f64::NEG_INFINITY] {
            let said = stall_timeout_from_secs_f64(refused).unwrap_err();
            assert!(said.contains("not a number of seconds"), "{said}");
        }
    }
}
