//! fbunload: read Firebird tables in parallel from one consistent snapshot.
//!
//! The one crate applications need, and what the command line and the
//! Python package call. An [`Unload`] names a database and what to read
//! from it; then one of
//!
//! - [`Unload::prepare`]: attach and plan, reading no row (the plan:
//!   tables, units of DB_KEY ranges, Arrow schemas);
//! - [`Unload::to_directory`]: one file per table in any [`Format`], and
//!   a [`Manifest`] (`manifest.json`) of them last, which
//!   [`check_directory`] compares with the files later;
//! - [`Unload::to_stdout`]: one table to standard output;
//! - [`Unload::record_batches`]: Arrow record batches, in DB_KEY order
//!   and bounded memory, while workers read in parallel;
//! - [`sample::create_sample`]: a database to try all of this on;
//! - [`Unload::hold_snapshot`]: a snapshot held open, and its plan, for
//!   readers that join it later from other threads or processes and read
//!   the units they are given ([`Unload::join_snapshot`]): a dispatcher
//!   of your own, such as a Dask graph.
//!
//! ```no_run
//! use fbunload::format::csv::{CsvFormat, CsvOptions};
//! use fbunload::{Format, Unload};
//! let csv = Format::bytes(CsvFormat::new(CsvOptions::default()));
//! let summary = Unload::new("/data/shop.fdb")
//!     .user("SYSDBA")
//!     .tables("ORDER%")
//!     .parallel(8)
//!     .to_directory("out", csv, &fbunload::Silent)?;
//! println!("{} rows", summary.rows());
//! # Ok::<(), fbunload::Error>(())
//! ```
//!
//! Reading a table's units at one held snapshot, one thread per share:
//!
//! ```no_run
//! use fbunload::Unload;
//! let unload = Unload::new("/data/shop.fdb").tables("ORDERS");
//! let held = unload.hold_snapshot()?;
//! let shares = held.shares(0, Some(4))?;
//! let rows = std::thread::scope(|scope| {
//!     let readers: Vec<_> = shares
//!         .iter()
//!         .map(|unit| {
//!             let held = &held;
//!             scope.spawn(move || held.reader(0)?.read(unit, &mut |_batch| true))
//!         })
//!         .collect();
//!     readers.into_iter().map(|r| r.join().unwrap()).sum::<Result<u64, _>>()
//! })?;
//! // In another process: unload.join_snapshot(held.ticket().as_ref(), "ORDERS")
//! # Ok::<(), fbunload::Error>(())
//! ```
//!
//! Underneath, in the order data flows: `fbunload-client` (the Firebird
//! client library, loaded at run time), `fbunload-plan` (catalog → units),
//! `fbunload-exec` (snapshot, coordinator, workers), `fbunload-decode`
//! (rows → Arrow), `fbunload-format` (Arrow → bytes) and `fbunload-dest`
//! (files, standard output, streams).

pub mod apply;
mod describe;
pub mod follow;
mod incremental;
pub mod output;
pub mod pgresume;
mod pgsync;
pub mod postgres;
mod resume;
pub mod sample;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::SystemTime;

use arrow_schema::SchemaRef;
use fbunload_client::{Client, ConnectOptions};

/// Whether an embedded engine may have started in this process, so that
/// the client library's shutdown must run at exit.
pub use fbunload_client::embedded_engine_may_run;
/// Whether `-d` names a file, opened by the embedded engine (no server).
pub use fbunload_client::is_plain_path;
/// For a program that is itself Python: where its interpreter finds
/// `firebird-embedded`'s runtime, asked before starting a new `python3`.
pub use fbunload_client::set_embedded_runtime_lookup;
/// The prepare under way longest in this process, if one is. A prepare
/// that waits behind another user's DROP or ALTER of a table cannot be
/// cancelled and has no timeout (Firebird 5); an application that must
/// not wait without bound watches this and gives up (the command line's
/// `--lock-timeout` ends the process).
pub use fbunload_client::{longest_prepare, Preparing, WireCrypt, WireOptions};
/// Watches the calls of the threads that read units: how long the one
/// that has waited longest for the database's answer has waited. A run
/// bounds its own workers' calls ([`RunOptions::stall_timeout`]); this is
/// for a caller's own threads, and for the command line's last resort.
pub use fbunload_client::{ReadWatch, StalledRead};

pub use fbunload_decode::{BatchLimits, TextDecoder, TypeOptions};
pub use fbunload_dest::{
    check_directory, file_name_for, finish_interrupted_switch, part_file_name, CheckReport,
    Manifest, ManifestColumn, ManifestFile, ManifestTable, OutputDir, Reuse, StreamedBatch,
    MANIFEST_NAME, SWITCH_DIR,
};
/// Reader processes (see [`Processes`]): how this program starts one,
/// and what such a process runs. A program that lets its runs use them
/// sets the command at start and, when started with it, calls
/// [`serve_reader`] instead of doing anything else.
pub use fbunload_exec::{reader_command, serve_reader, set_reader_command, ReaderCommand};
pub use fbunload_exec::{
    stall_timeout_from_secs, stall_timeout_from_secs_f64, DEFAULT_STALL_TIMEOUT,
    MAX_STALL_TIMEOUT_SECS,
};
pub use fbunload_exec::{
    Consistency, ExecError as Error, HeldSnapshot, Prepared, Progress, RunOptions, RunStart,
    Silent, SnapshotReader, SnapshotTicket, Summary, TableChange, TableSummary,
    OLDER_TRANSACTIONS_WAIT,
};
pub use fbunload_format as format;
pub use fbunload_format::{Format, PartLimits};
pub use fbunload_plan::{
    counted, parameter_markers, printable, quote_identifier, Basis, CatalogError, Estimate, Kind,
    Plan, PlanOptions, QuerySpec, Role, TableFilter, TablePlan, Unit,
};
use fbunload_plan::{selection, SelectionError, TableChoice};
pub use output::{FormatName, OutputOptions, FORMAT_OPTIONS};

use fbunload_dest::{BatchStream, FileOutput, StreamReceiver};
use fbunload_exec::Database;

/// The run's memory budget in MB unless set (`--memory`, Python's
/// `memory_mb`): what a run holds of its rows beyond the batch each worker
/// is filling. For files: units finished ahead of their turn (beyond the
/// budget they spill to part files), and Parquet row groups and Arrow
/// record batches cut, being encoded and encoded ahead of their turn
/// (beyond it, workers wait). For streams: units ahead of their turn
/// (beyond it, their workers wait). Shared by all workers, so it does not
/// grow with `--parallel`.
pub const DEFAULT_MEMORY_MB: usize = 128;

/// The decoder of `CHARACTER SET NONE` text for the connection character
/// set `charset` (`--charset`, Python's `charset`, ADBC's
/// `adbc.fbunload.charset`), or why it is refused; each front end puts
/// its own name of the option before the message.
pub fn none_text_decoder(charset: &str) -> Result<TextDecoder, String> {
    TextDecoder::for_charset(charset).ok_or_else(|| {
        format!(
            "{charset}: not a character set fbunload can decode; use a Firebird name such as \
             UTF8, WIN1252 or ISO8859_1"
        )
    })
}

/// [`DEFAULT_MEMORY_MB`] in bytes ([`Unload::memory_budget`]).
pub const DEFAULT_MEMORY_BUDGET: usize = DEFAULT_MEMORY_MB << 20;

/// What `--memory` and `memory_mb` say in help: the budget and how to
/// raise it.
pub const MEMORY_HELP: &str =
    "Memory, in MB, for the rows a run holds beyond the batch each worker \
     is filling, shared by all workers whatever --parallel: pieces of tables finished ahead of \
     their turn (beyond it they wait in part files next to the output) and Parquet/Arrow row \
     groups being encoded or waiting to be appended (beyond it workers wait); Parquet and \
     Arrow keep a row group's rows and encoding (65 MB at most) of it for the group written \
     next, so pieces go to part files sooner. Raise it if \
     part files slow a run down. Not counted in it: per worker, the batch it is filling and up \
     to 16 MB of batches queued for its writer; the embedded engine's page cache (256 pages)";

#[cfg(test)]
mod memory_help_tests {
    /// The help's figure is the writer queue's bound.
    #[test]
    fn the_memory_help_names_the_writer_queue_bound() {
        let mb = fbunload_exec::WRITER_QUEUE_BYTES >> 20;
        assert!(
            super::MEMORY_HELP.contains(&format!("{mb} MB of batches queued")),
            "{}",
            super::MEMORY_HELP
        );
    }
}

/// The argument that makes the `fbunload` binary a reader process (see
/// [`serve_reader`]); not for people.
pub const READER_ARG: &str = "--fbunload-reader-process";

/// Where a run's workers live when it reads from a server: threads of
/// this process, or `K` reader processes (the same program) holding a
/// few attachments each, while this process plans, hands out units and
/// writes in DB_KEY order. Firebird's client library spends more CPU
/// per row the more threads of one process fetch over TCP, so past a few
/// workers processes go faster. The embedded engine cannot be shared by
/// processes: there the workers are always threads, as they are where no
/// [`ReaderCommand`] is set.
///
/// The command line's `--processes` and Python's `processes=` are this,
/// parsed by its [`FromStr`](std::str::FromStr): `auto` or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Processes {
    /// Threads up to [`Processes::THREADS_UP_TO`] workers; beyond, one
    /// reader process per [`Processes::WORKERS_EACH`] workers.
    #[default]
    Auto,
    /// This many reader processes (at most one per worker); 0: threads.
    Count(usize),
}

impl Processes {
    /// Workers that threads of one process serve as well as processes
    /// would (measured on 16 cores: -j4 over TCP scaled, -j8 did not).
    pub const THREADS_UP_TO: usize = 4;
    /// Workers per reader process when automatic: 8 processes of 2
    /// workers fetched 1.7 times as fast as 1 of 16.
    pub const WORKERS_EACH: usize = 2;
    /// What `--help` and Python's docs say of it.
    pub const HELP: &'static str = "Reader processes for a server: auto (threads up to 4 \
        workers, then one process per 2 workers), 0 (threads only) or a number. Firebird's \
        client library slows down when many threads of one process fetch over TCP; \
        processes do not. The embedded engine always uses threads";

    /// Reader processes for `workers` workers reading from a server.
    pub fn count_for(self, workers: usize) -> usize {
        match self {
            Processes::Auto if workers > Self::THREADS_UP_TO => {
                workers.div_ceil(Self::WORKERS_EACH)
            }
            Processes::Auto => 0,
            Processes::Count(n) => n.min(workers),
        }
    }
}

impl std::str::FromStr for Processes {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "auto" => Ok(Processes::Auto),
            n => n.parse().map(Processes::Count).map_err(|_| {
                format!("processes {text:?}: auto, 0 (threads only) or a number of processes")
            }),
        }
    }
}

impl std::fmt::Display for Processes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Processes::Auto => f.write_str("auto"),
            Processes::Count(n) => write!(f, "{n}"),
        }
    }
}

/// Checks a query's text as a run would before attaching: it must be one
/// SELECT (or WITH), its quotes, comments and parentheses must close, and
/// with `split_by` its FROM must begin with that table and nothing at its
/// top level may apply to the whole result. For callers that take a query
/// long before they read it (an ADBC statement's `SetSqlQuery`), so a
/// statement that would change data is refused when it is given.
pub fn check_query(spec: &QuerySpec) -> Result<(), Error> {
    fbunload_plan::query::check_query(spec)
        .map(drop)
        .map_err(|e| Error::Usage(e.to_string()))
}

/// A pattern ([`Unload::tables`], [`Unload::views`]) that matches exactly
/// `name`, as stored: the name double-quoted.
pub fn exact_pattern(name: &str) -> String {
    TableFilter::named(name).include.unwrap_or_default()
}

/// What to read, from where, and how: a builder.
#[derive(Clone)]
pub struct Unload {
    connect: ConnectOptions,
    client: Option<Arc<Client>>,
    client_library: Option<PathBuf>,
    filter: TableFilter,
    /// `columns` and `rows_where` arguments, parsed as given; an error is
    /// reported by `prepare`.
    choices: Vec<Result<TableChoice, SelectionError>>,
    options: RunOptions,
    memory_budget: usize,
    /// What to do with another run's files in the output directory.
    reuse: Reuse,
    /// Where [`Unload::to_directory`] ends each table's parts.
    part_limits: PartLimits,
    /// The run an incremental unload starts from.
    since: Option<PathBuf>,
    /// Whether a run into a directory keeps its tables' keys.
    keep_keys: bool,
    /// Whether a run into a directory can be resumed, and whether it
    /// resumes a stopped one ([`Unload::resumable`]).
    resumable: bool,
    resume: bool,
    /// Whether a load into PostgreSQL makes roles and grants.
    pg_grants: bool,
    /// The replication journal a `--keep-keys` load into PostgreSQL hands
    /// over to (`fbunload follow`): checked before the load.
    journal: Option<PathBuf>,
    processes: Processes,
    /// A PostgreSQL output's wait for other sessions' locks, and whether
    /// `--overwrite` may drop what fbunload did not make (`postgres`).
    pg_lock_wait: std::time::Duration,
    pg_drop_others: bool,
    /// The fillfactor of the tables a load into PostgreSQL makes, as
    /// given (`None`: [`postgres::KEPT_FILLFACTOR`] with `keep_keys`, else
    /// PostgreSQL's own).
    pg_fillfactor: Option<u8>,
}

impl Unload {
    /// `database`: a path (the embedded engine), `host:path` or
    /// `inet://host:port/path`. User and password default to the client
    /// library's own (`ISC_USER`, `ISC_PASSWORD`).
    pub fn new(database: impl Into<String>) -> Self {
        Unload {
            connect: ConnectOptions {
                database: database.into(),
                user: None,
                password: None,
                role: None,
                // fbunload-exec chooses the connection character set.
                charset: String::new(),
                no_garbage_collect: false,
                wire: WireOptions::default(),
            },
            client: None,
            client_library: None,
            filter: TableFilter::default(),
            choices: Vec::new(),
            options: RunOptions::default(),
            memory_budget: DEFAULT_MEMORY_BUDGET,
            reuse: Reuse::Refuse,
            part_limits: PartLimits::default(),
            since: None,
            keep_keys: false,
            resumable: false,
            resume: false,
            pg_grants: false,
            journal: None,
            processes: Processes::Auto,
            pg_lock_wait: fbunload_dest_postgres::DEFAULT_LOCK_WAIT,
            pg_drop_others: false,
            pg_fillfactor: None,
        }
    }

    /// An incremental unload (Firebird 4+): of each table, the rows
    /// inserted or updated since the snapshot of the run in `previous`
    /// (`T.upserts.<ext>`), and the primary keys of the rows deleted since
    /// (`T.deletes.<ext>`), read at one new snapshot. A table without a
    /// primary key, new, or whose columns changed is read whole, as is
    /// every table of a database restored from a backup since; the
    /// manifest says which and why. `previous` must have kept its keys
    /// (an incremental run, or one with [`Unload::keep_keys`]); this run
    /// keeps its own for the next. [`Unload::to_directory`] only.
    pub fn since(mut self, previous: impl Into<PathBuf>) -> Self {
        self.since = Some(previous.into());
        self
    }

    /// Makes [`Unload::to_directory`] keep the primary keys of every table
    /// (`T.keys.parquet`, listed in the manifest), so that a later run can
    /// start from this one with [`Unload::since`] (Firebird 4+).
    pub fn keep_keys(mut self, keep: bool) -> Self {
        self.keep_keys = keep;
        self
    }

    /// Makes [`Unload::to_directory`] resumable (Firebird 4+): each unit
    /// is also kept, as it finishes, in `DIR/.fbunload-resume` (an Arrow
    /// IPC file per unit, and a journal of them), so that a run that dies
    /// can be continued with [`Unload::resume`]. Costs a second write of
    /// every row while the run lasts; the area goes once the run is
    /// published.
    pub fn resumable(mut self, resumable: bool) -> Self {
        self.resumable = resumable;
        self
    }

    /// Continues the resumable run that stopped in the output directory,
    /// with its options: the units it finished that no row of changed
    /// since are taken from what it wrote, every other unit is read at a
    /// new snapshot, so the output is one snapshot, the new one. Implies
    /// [`Unload::resumable`].
    pub fn resume(mut self, resume: bool) -> Self {
        self.resume = resume;
        self
    }

    /// Makes [`Unload::to_postgres`] create Firebird's roles and its
    /// grants on the loaded tables (see
    /// [`postgres::PG_GRANTS_HELP`](crate::postgres::PG_GRANTS_HELP)).
    pub fn pg_grants(mut self, make: bool) -> Self {
        self.pg_grants = make;
        self
    }

    /// With [`Unload::keep_keys`], into PostgreSQL or a directory: the
    /// database's `journal_archive_directory`, from which `fbunload
    /// follow` goes on where this load's snapshot ends (its marks, kept
    /// with the state or in the directory's manifest, say which
    /// transactions it did not see). The load first checks that
    /// the database publishes its changes and that the directory holds
    /// this database's journal, so a follow set-up that cannot work fails
    /// before anything is loaded.
    pub fn journal(mut self, archive: impl Into<PathBuf>) -> Self {
        self.journal = Some(archive.into());
        self
    }

    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.connect.user = Some(user.into());
        self
    }

    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.connect.password = Some(password.into());
        self
    }

    /// [`Unload::user`] and [`Unload::password`] as the command line takes
    /// them: each one not given comes from `ISC_USER` or `ISC_PASSWORD`
    /// when set (what Python's and ADBC's front ends do too).
    pub fn login_or_environment(mut self, user: Option<String>, password: Option<String>) -> Self {
        if let Some(user) = user.or_else(|| std::env::var("ISC_USER").ok()) {
            self = self.user(user);
        }
        if let Some(password) = password.or_else(|| std::env::var("ISC_PASSWORD").ok()) {
            self = self.password(password);
        }
        self
    }

    /// Compression and encryption of a server's wire (see
    /// [`WireOptions`]); the embedded engine ignores them.
    pub fn wire(mut self, wire: WireOptions) -> Self {
        self.connect.wire = wire;
        self
    }

    pub fn role(mut self, role: impl Into<String>) -> Self {
        self.connect.role = Some(role.into());
        self
    }

    /// The Firebird client library to load (`libfbclient.so`,
    /// `fbclient.dll`), instead of the one found as
    /// [`fbunload_client::Client::load`] describes.
    pub fn client_library(mut self, path: impl Into<PathBuf>) -> Self {
        self.client_library = Some(path.into());
        self
    }

    /// A client library already loaded.
    pub fn client(mut self, client: Arc<Client>) -> Self {
        self.client = Some(client);
        self
    }

    /// Tables whose names match this SQL `SIMILAR TO` pattern (`'ORDER%'`,
    /// `'A|B'`; a comma lists alternatives too, `\,` is a comma in a name);
    /// all user tables if never called. Names in it follow SQL, as in every
    /// option that takes one: unquoted parts are upper-cased (`stock` is
    /// STOCK), double-quoted parts exact (`"stock"`, `"tmp_"%`).
    pub fn tables(mut self, pattern: impl Into<String>) -> Self {
        self.filter.include = Some(pattern.into());
        self
    }

    /// Leaves out the tables matching this pattern.
    pub fn exclude(mut self, pattern: impl Into<String>) -> Self {
        self.filter.exclude = Some(pattern.into());
        self
    }

    /// Unloads the views whose names match this pattern too (`"%"`: every
    /// user view), each as one unit. With views or queries and no
    /// [`Unload::tables`] or [`Unload::exclude`], no table is unloaded.
    pub fn views(mut self, pattern: impl Into<String>) -> Self {
        self.filter.views = Some(pattern.into());
        self
    }

    /// Unloads the result of a SELECT too, as `name` (its file is named as a
    /// table's would be), at the same snapshot, as one unit. See
    /// [`Unload::split_query`] to read it in parallel.
    pub fn query(self, name: impl Into<String>, sql: impl Into<String>) -> Self {
        self.query_spec(QuerySpec {
            name: name.into(),
            sql: sql.into(),
            split_by: None,
        })
    }

    /// A query read in parallel, by DB_KEY ranges of `table`, which its
    /// FROM must begin with; a query that groups, aggregates, sorts, limits
    /// or combines outside its subqueries is refused (see
    /// `fbunload_plan::query`). A query (split or not) that would move a
    /// sequence (`GEN_ID(S, 1)`, `NEXT VALUE FOR S`) is refused too.
    pub fn split_query(
        self,
        name: impl Into<String>,
        sql: impl Into<String>,
        table: impl Into<String>,
    ) -> Self {
        self.query_spec(QuerySpec {
            name: name.into(),
            sql: sql.into(),
            split_by: Some(table.into()),
        })
    }

    /// [`Unload::query`] or, with `split_by`, [`Unload::split_query`]: for
    /// callers that hold the query as a value (the command line's
    /// `--query`/`--name`/`--split-by`, Python's `queries=`).
    pub fn query_spec(mut self, spec: QuerySpec) -> Self {
        self.filter.queries.push(spec);
        self
    }

    /// Reads only these columns, in this order: `"COL,COL"` when one table
    /// is selected, `"TABLE:COL,COL"` for one of several (call once per
    /// table). Unquoted names are upper-cased as in SQL; `"Odd name"` is
    /// taken as written.
    pub fn columns(mut self, spec: &str) -> Self {
        self.choices.push(selection::parse_columns(spec));
        self
    }

    /// Reads only the rows meeting this SQL condition (`"S_W_ID = 7"`, or
    /// `"TABLE:condition"` for one of several tables). It is ANDed to
    /// every unit's DB_KEY range, so the read stays parallel, at one
    /// snapshot, and the same for any number of workers.
    pub fn rows_where(mut self, condition: &str) -> Self {
        self.choices.push(selection::parse_condition(condition));
        self
    }

    /// The tables, columns and rows to read; an error for a malformed
    /// `columns` or `rows_where`.
    fn table_filter(&self) -> Result<TableFilter, Error> {
        let mut filter = self.filter.clone();
        filter.selection = self
            .choices
            .iter()
            .cloned()
            .collect::<Result<_, _>>()
            .map_err(|e| Error::Usage(e.to_string()))?;
        Ok(filter)
    }

    /// Worker connections (default: the number of local cores).
    pub fn parallel(mut self, workers: usize) -> Self {
        self.options.parallel = workers.max(1);
        self
    }

    /// Whether the workers of a run from a server are threads or live in
    /// reader processes (see [`Processes`]; automatic by default).
    pub fn processes(mut self, processes: Processes) -> Self {
        self.processes = processes;
        self
    }

    /// Everything else about the run: types, batch sizes, verification,
    /// cancellation, Firebird 3 behaviour.
    pub fn options(mut self, options: RunOptions) -> Self {
        self.options = options;
        self
    }

    pub fn run_options(&self) -> &RunOptions {
        &self.options
    }

    /// The run's memory budget in bytes (see [`DEFAULT_MEMORY_MB`]).
    pub fn memory_budget(mut self, bytes: usize) -> Self {
        self.memory_budget = bytes;
        self
    }

    /// Lets [`Unload::to_directory`] write into a directory that holds
    /// another run: the files its manifest lists, and the manifest, are
    /// removed once the snapshot is taken (see [`Reuse::Overwrite`]).
    /// Without it such a directory is refused before anything is attached.
    pub fn overwrite(mut self, overwrite: bool) -> Self {
        self.reuse = if overwrite {
            Reuse::Overwrite
        } else {
            Reuse::Refuse
        };
        self
    }

    /// Makes [`Unload::to_directory`] cut every table into numbered
    /// parts, `<TABLE>.000001.csv`, `<TABLE>.000002.csv`, …, each a
    /// complete file (header, compressed stream, Parquet footer), ending
    /// after `limits.rows` rows or at the first row (Parquet, Arrow: row
    /// group) end past `limits.bytes` bytes; the same parts for any
    /// number of workers. See [`format::parts`].
    pub fn part_limits(mut self, limits: PartLimits) -> Self {
        self.part_limits = limits;
        self
    }

    /// The client library this unload uses, loaded on first need.
    pub fn load_client(&mut self) -> Result<Arc<Client>, Error> {
        if let Some(client) = &self.client {
            return Ok(client.clone());
        }
        let client = fbunload_exec::load_client(self.client_library.as_deref())?;
        // Signals are the application's (the CLI's handler, Python's
        // KeyboardInterrupt): left to itself the library would cut every
        // attachment mid-unit on Ctrl-C.
        client.leave_signals_to_the_application();
        self.client = Some(client.clone());
        Ok(client)
    }

    fn database(&self) -> Result<Database, Error> {
        let mut this = self.clone();
        Ok(Database {
            client: this.load_client()?,
            connect: this.connect.clone(),
        })
    }

    /// Attaches and plans: tables, units and schemas, no row read yet.
    pub fn prepare(&self) -> Result<Prepared, Error> {
        let filter = self.table_filter()?;
        Prepared::new(self.database()?, &filter, self.run_options_now())
    }

    /// The run's options, with the reader processes counted.
    fn run_options_now(&self) -> RunOptions {
        let mut options = self.options.clone();
        options.processes = self.processes.count_for(options.parallel);
        options
    }

    /// [`Self::prepare`] for writing `format`, whose columns must have
    /// distinct names. Text formats write every
    /// decimal exactly whatever its Arrow type, so INT128-backed NUMERIC
    /// and DECIMAL get the type that holds all their values
    /// ([`TypeOptions::decimal256`]): the value of 39 digits that a
    /// Decimal128 column refuses is written instead.
    fn prepare_for(&self, format: &Format) -> Result<Prepared, Error> {
        let mut options = self.run_options_now();
        if matches!(format, Format::Bytes { .. }) {
            options.types.decimal256 = true;
        }
        let prepared = Prepared::new(self.database()?, &self.table_filter()?, options)?;
        // Files need distinct column names; Arrow batches do not.
        fbunload_plan::query::unique_column_names(&prepared.plan)
            .map_err(|e| Error::Usage(e.to_string()))?;
        Ok(prepared)
    }

    /// Takes a snapshot and holds it open, with the plan of the selected
    /// tables in it, until the [`HeldSnapshot`] is dropped; readers join
    /// it with [`HeldSnapshot::reader`] or, in another process, with
    /// [`Unload::join_snapshot`] and its [`HeldSnapshot::ticket`]. On a
    /// server without shared snapshots (before Firebird 4) this fails
    /// unless [`RunOptions::allow_inconsistent`].
    ///
    /// A query (one, alone, as [`Unload::query_spec`] gives it) is planned
    /// there too: one unit, or its driving table's units if split; its
    /// readers join with [`Unload::join_snapshot_query`].
    pub fn hold_snapshot(&self) -> Result<HeldSnapshot, Error> {
        let one_query = self.filter.queries.len() == 1
            && !self.filter.wants_tables()
            && self.filter.views.is_none();
        if self.filter.views.is_some() || (!self.filter.queries.is_empty() && !one_query) {
            return Err(Error::Usage(
                "views, and queries beside other reads, are not read from a held snapshot yet; \
                 unload them with to_directory or record_batches"
                    .into(),
            ));
        }
        if !self.choices.is_empty() {
            // Readers that join later plan their table by name alone.
            return Err(Error::Usage(
                "columns and rows_where do not apply to a held snapshot yet; choose columns \
                 when reading from it"
                    .into(),
            ));
        }
        HeldSnapshot::open(self.database()?, &self.filter, &self.options)
    }

    /// A reader of table `table` at the snapshot of `ticket`, on a new
    /// attachment; with `None` (a server without shared snapshots), in a
    /// snapshot of its own. Fails with [`Error::SnapshotClosed`] once the
    /// snapshot's holder has dropped it.
    pub fn join_snapshot(
        &self,
        ticket: Option<&SnapshotTicket>,
        table: &str,
    ) -> Result<SnapshotReader, Error> {
        SnapshotReader::join(
            &self.database()?,
            table,
            ticket,
            self.options.types,
            self.options.batch,
            self.options.stall_timeout,
        )
    }

    /// A reader of this unload's one query (see [`Unload::hold_snapshot`])
    /// at the snapshot of `ticket`, on a new attachment, as
    /// [`Unload::join_snapshot`] reads a table.
    pub fn join_snapshot_query(
        &self,
        ticket: Option<&SnapshotTicket>,
    ) -> Result<SnapshotReader, Error> {
        if self.filter.queries.len() != 1 {
            return Err(Error::Usage(
                "join_snapshot_query reads one query: give it with query_spec".into(),
            ));
        }
        SnapshotReader::join_first(
            &self.database()?,
            &self.table_filter()?,
            ticket,
            self.options.types,
            self.options.batch,
            self.options.stall_timeout,
        )
    }

    /// Unloads every selected table into `dir`, one file (or directory of
    /// parts) per table, named by [`file_name_for`], then writes the
    /// run's [`Manifest`] there ([`MANIFEST_NAME`]). A directory holding
    /// another run's manifest or table files is refused unless
    /// [`Unload::overwrite`].
    pub fn to_directory(
        &self,
        dir: impl AsRef<Path>,
        format: Format,
        progress: &dyn Progress,
    ) -> Result<Summary, Error> {
        if self.options.fetch_only {
            self.table_filter()?;
            return self.prepare()?.run(&fbunload_exec::Discard, progress);
        }
        Ok(self
            .to_directory_with(dir.as_ref(), format, progress, None)?
            .0)
    }

    /// [`Self::to_directory`], and its manifest; with `pg`, the tables'
    /// rows go on to PostgreSQL as they are read (`pgsync`).
    fn to_directory_with(
        &self,
        dir: &Path,
        format: Format,
        progress: &dyn Progress,
        pg: Option<&fbunload_dest_postgres::PostgresDestination>,
    ) -> Result<(Summary, fbunload_dest::Manifest), Error> {
        let started = SystemTime::now();
        // The directory first: a second run into it, or one into another
        // run's files, fails before it attaches to anything. A malformed
        // choice fails before either.
        let filter = self.table_filter()?;
        if self.options.fetch_only {
            return Err(Error::Usage("--fetch-only writes nothing".into()));
        }
        // Into PostgreSQL, to_postgres checked it already.
        if let (Some(archive), None) = (&self.journal, pg) {
            if !self.keep_keys || self.since.is_some() {
                return Err(Error::Usage(
                    "--journal hands a --keep-keys run over to `fbunload follow` (change sets \
                     from the journal): add --keep-keys, without --since"
                        .into(),
                ));
            }
            self.check_journal(archive)?;
        }
        FileOutput::check_part_limits(&format, self.part_limits)?;
        let incremental = self.since.is_some() || self.keep_keys;
        if incremental {
            self.refuse_with_incremental()?;
        }
        if let Some(since) = &self.since {
            incremental::refuse_same_directory(since, dir)?;
        }
        let mut previous = match &self.since {
            Some(since) => Some(incremental::read_previous(since)?),
            None => None,
        };
        let request = describe::Request {
            database: &self.connect.database,
            filter: &filter,
            options: &self.options,
            format: &format,
            part_limits: self.part_limits,
            started,
        };
        match (&previous, pg) {
            (Some(previous), None) => {
                incremental::refuse_other_options(previous, &describe::requested(&request))?
            }
            // The base run is the target's, not a directory the user named.
            (Some(previous), Some(pg)) => {
                if let Some(differ) =
                    incremental::other_options(previous, &describe::requested(&request))
                {
                    return Err(Error::Usage(format!(
                        "schema {}: {}; a sync takes the same --tables, --exclude and \
                         --charset as the run the schema holds; nothing was changed: reload it \
                         whole with --overwrite --keep-keys to change them",
                        pg.schema(),
                        differ.replacen("that run", "the run it holds", 1)
                    )));
                }
            }
            (None, _) => {}
        }
        let resumable = self.resumable || self.resume;
        if resumable {
            self.refuse_with_resumable(pg.is_some())?;
        }
        // A resume may replace what the stopped run was to replace (it
        // was given --overwrite, or there was no run to replace).
        let reuse = match self.resume && resume::left_in(dir)? {
            true => Reuse::Overwrite,
            false => self.reuse,
        };
        if self.resume && reuse != Reuse::Overwrite {
            return Err(resume::nothing_to_resume(dir));
        }
        let output = OutputDir::open(dir, reuse)?;
        let mut this = self.clone();
        // Under the directory's lock: never a live run's area.
        let stopped = match (resume::left_in(output.path())?, self.resume) {
            (true, true) => Some(resume::read_stopped(
                output.path(),
                &describe::requested(&request),
            )?),
            (true, false) if self.reuse == Reuse::Overwrite => {
                resume::remove(output.path())?;
                None
            }
            (true, false) => {
                return Err(Error::Usage(format!(
                    "{}: a --resumable run that stopped left what it finished in {}: continue \
                     it with --resume, or start again with --overwrite",
                    dir.display(),
                    resume::RESUME_DIR
                )))
            }
            (false, true) => return Err(resume::nothing_to_resume(dir)),
            (false, false) => None,
        };
        if resumable {
            this.filter.resumable = Some(match &stopped {
                Some(stopped) => {
                    this.options.plan.unit_pages = stopped.unit_pages();
                    stopped.resumable()
                }
                None => fbunload_plan::incremental::Resumable::default(),
            });
        }
        if incremental {
            this.filter.incremental = Some(fbunload_plan::Incremental {
                since: previous.as_ref().map(|p| p.since.clone()),
            });
        }
        let prepared = this.prepare_for(&format)?;
        if incremental {
            incremental::refuse_names_of_role_files(&prepared.plan)?;
        }
        let (plan, schemas) = (prepared.plan.clone(), prepared.schemas.clone());
        let mut files =
            FileOutput::to_directory(output.clone(), format.clone(), self.memory_budget)
                .with_part_limits(self.part_limits)?
                .with_previous_keys(match previous.as_mut() {
                    Some(previous) => previous.keys()?,
                    None => std::collections::HashMap::new(),
                });
        // PostgreSQL takes the rows: the private directory keeps only the
        // keys and the deletes, not a copy of every table.
        if pg.is_some() {
            files = files.without_table_files();
        }
        let first_snapshot = stopped.as_ref().map(resume::Stopped::first_snapshot);
        let journaling = resumable.then(|| {
            resume::Journaling::new(
                &files,
                output.path(),
                stopped,
                describe::requested(&request),
            )
        });
        let mut summary = match (pg, &journaling) {
            (Some(pg), _) => prepared.run(&pgsync::Tee::new(&files, pg), progress)?,
            (None, Some(journaling)) => prepared.run(journaling, progress).map_err(|e| {
                let area = output.path().join(resume::RESUME_DIR);
                match e {
                    // Stopped, not failed: say that what it finished stays.
                    Error::Interrupted if area.is_dir() => Error::InterruptedResumable {
                        area: area.display().to_string(),
                    },
                    e => e,
                }
            })?,
            (None, None) => prepared.run(&files, progress)?,
        };
        let (mut plan, mut schemas) = (plan, schemas);
        if let Some(journaling) = &journaling {
            // The units taken from the journal were not read: their rows
            // are the journal's. The count entries are no tables.
            let kept = journaling.tally.kept_rows.lock().unwrap().clone();
            for (table, rows) in summary.tables.iter_mut().zip(kept) {
                table.rows += rows;
            }
            let listed = plan.listed_len();
            std::sync::Arc::make_mut(&mut plan).tables.truncate(listed);
            std::sync::Arc::make_mut(&mut schemas).truncate(listed);
            summary.tables.truncate(listed);
        }
        let mut manifest = describe::manifest(&request, &plan, &schemas, &summary);
        if let (Some(journaling), Some((number, transaction))) = (&journaling, first_snapshot) {
            manifest.resumed = Some(fbunload_dest::ManifestResumed {
                first_snapshot_number: number,
                first_transaction: transaction,
                units_kept: journaling
                    .tally
                    .kept_units
                    .load(std::sync::atomic::Ordering::SeqCst),
                units_read_again: journaling
                    .tally
                    .read_again
                    .load(std::sync::atomic::Ordering::SeqCst),
            });
        }
        manifest.files = files.run_files().into_iter().map(Into::into).collect();
        if incremental {
            let outcomes = files.key_outcomes();
            incremental::complete_manifest(
                &mut manifest,
                &plan,
                &summary,
                &outcomes,
                previous.as_ref(),
            )?;
            let mut index = 0;
            summary.tables.retain(|_| {
                index += 1;
                !plan.tables[index - 1].role.is_helper()
            });
            if previous.is_some() {
                incremental::describe_changes(&mut summary, &manifest);
            }
        }
        output.publish_manifest(&manifest)?;
        if resumable {
            // Published: nothing is left to resume. A kill right here
            // leaves an area the next run refuses until --overwrite.
            resume::remove(output.path())?;
        }
        Ok((summary, manifest))
    }

    /// What a resumable run cannot be combined with, refused before
    /// anything attaches.
    fn refuse_with_resumable(&self, into_postgres: bool) -> Result<(), Error> {
        let what = if into_postgres {
            Some("a --keep-keys load into PostgreSQL")
        } else if self.since.is_some() || self.keep_keys {
            Some("--since and --keep-keys")
        } else if self
            .choices
            .iter()
            .any(|c| matches!(c, Ok(c) if matches!(c.what, fbunload_plan::selection::Choice::Condition(_)))) {
            Some("--where")
        } else if self.options.allow_inconsistent {
            Some("--allow-inconsistent")
        } else if self.options.verify {
            Some("--verify")
        } else {
            None
        };
        match what {
            Some(what) => Err(Error::Usage(format!(
                "--resumable and --resume keep one snapshot across a stop; {what} cannot be \
                 combined with them"
            ))),
            None => Ok(()),
        }
    }

    /// What an incremental run (or one keeping its keys) cannot be
    /// combined with, refused before anything attaches.
    fn refuse_with_incremental(&self) -> Result<(), Error> {
        let what = if self.filter.views.is_some() || !self.filter.queries.is_empty() {
            Some("views and queries")
        } else if !self.choices.is_empty() {
            Some("--columns and --where")
        } else if self.options.allow_inconsistent {
            Some("--allow-inconsistent")
        } else {
            None
        };
        match what {
            Some(what) => Err(Error::Usage(format!(
                "--since and --keep-keys read whole tables at one snapshot; {what} cannot be \
                 combined with them"
            ))),
            None => Ok(()),
        }
    }

    /// Unloads the one selected table to standard output.
    pub fn to_stdout(&self, format: Format, progress: &dyn Progress) -> Result<Summary, Error> {
        if self.resumable || self.resume {
            return Err(Error::Usage(
                "--resumable and --resume keep what a run finished in its output directory; \
                 -o - has none"
                    .into(),
            ));
        }
        if self.since.is_some() || self.keep_keys {
            return Err(Error::Usage(
                "--since and --keep-keys write several files per table; give an output \
                 directory, not -o -"
                    .into(),
            ));
        }
        if self.options.fetch_only {
            return self.prepare()?.run(&fbunload_exec::Discard, progress);
        }
        // Refused before anything attaches.
        let output = FileOutput::to_stdout(format.clone(), self.memory_budget)?
            .with_part_limits(self.part_limits)?;
        self.prepare_for(&format)?.run(&output, progress)
    }

    /// Starts reading every selected table and returns their batches as
    /// they come, table after table, each in DB_KEY order.
    pub fn record_batches(&self) -> Result<RecordBatches, Error> {
        Ok(self.record_batches_of(self.prepare()?))
    }

    /// [`Self::record_batches`] of what [`Self::prepare`] planned, for a
    /// caller that looks at the plan before it reads.
    pub fn record_batches_of(&self, prepared: Prepared) -> RecordBatches {
        RecordBatches::spawn(prepared, self.memory_budget)
    }
}

/// Record batches read by a run in the background: an iterator of
/// [`StreamedBatch`]es (table index and batch) in the plan's order; if
/// the run fails, its error is the last item. Dropping it stops the run.
pub struct RecordBatches {
    plan: Arc<Plan>,
    schemas: Arc<Vec<SchemaRef>>,
    start: RunStart,
    receiver: Option<StreamReceiver>,
    cancel: Arc<AtomicBool>,
    run: Option<JoinHandle<Result<Summary, Error>>>,
    summary: Option<Summary>,
}

impl RecordBatches {
    fn spawn(prepared: Prepared, memory_budget: usize) -> Self {
        let (stream, receiver) = BatchStream::new(memory_budget);
        let plan = prepared.plan.clone();
        let schemas = prepared.schemas.clone();
        let start = prepared.start.clone();
        let cancel = prepared.cancel_flag();
        let run = std::thread::spawn(move || {
            let result = prepared.run(&stream, &Silent);
            stream.close();
            result
        });
        RecordBatches {
            plan,
            schemas,
            start,
            receiver: Some(receiver),
            cancel,
            run: Some(run),
            summary: None,
        }
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The Arrow schema of table `table` of the plan.
    pub fn schema(&self, table: usize) -> SchemaRef {
        self.schemas[table].clone()
    }

    /// What the main attachment found (the snapshot number is known once
    /// the first batch has arrived).
    pub fn start(&self) -> &RunStart {
        &self.start
    }

    /// Asks the run to stop; the iterator then ends with an error.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }

    /// What stops the run from another thread (an ADBC statement's
    /// cancel): setting it is [`Self::cancel`].
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    /// Reads what is left and returns the run's summary.
    pub fn finish(mut self) -> Result<Summary, Error> {
        for item in self.by_ref() {
            item?;
        }
        self.summary.take().ok_or(Error::Interrupted)
    }

    /// The next item, waiting at most `timeout` for it: `None` if none
    /// came in time (so a caller can look at signals in between), else
    /// what [`Iterator::next`] would have returned.
    #[allow(clippy::option_option)]
    pub fn next_within(
        &mut self,
        timeout: std::time::Duration,
    ) -> Option<Option<Result<StreamedBatch, Error>>> {
        if let Some(receiver) = self.receiver.as_mut() {
            match receiver.next_within(timeout) {
                Ok(batch) => return Some(Some(Ok(batch))),
                Err(true) => return None,
                Err(false) => self.receiver = None,
            }
        }
        Some(self.join())
    }

    /// The run has ended: its result.
    fn join(&mut self) -> Option<Result<StreamedBatch, Error>> {
        let run = self.run.take()?;
        match run.join().expect("the run thread panicked") {
            Ok(summary) => {
                self.summary = Some(summary);
                None
            }
            Err(e) => Some(Err(e)),
        }
    }
}

impl Iterator for RecordBatches {
    type Item = Result<StreamedBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(batch) = self.receiver.as_mut().and_then(|r| r.next()) {
            return Some(Ok(batch));
        }
        self.receiver = None;
        self.join()
    }
}

impl Drop for RecordBatches {
    fn drop(&mut self) {
        self.cancel();
        drop(self.receiver.take());
        if let Some(run) = self.run.take() {
            let _ = run.join();
        }
    }
}
