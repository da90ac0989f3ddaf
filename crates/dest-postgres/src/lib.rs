//! The PostgreSQL destination: every selected table loaded into a
//! PostgreSQL schema at the run's one snapshot, all or nothing.
//!
//! - Each worker's units go over a PostgreSQL connection of their own
//!   (a *lane*: a thread holding the connection), as binary COPY through
//!   rust-postgres's `copy_in`, the rows encoded straight from the Arrow
//!   batches ([`types::put_rows`]). A unit is one COPY: one that fails or
//!   is read again is aborted, and nothing of it stays.
//! - The rows go into a staging schema. Once every unit is in, the keys,
//!   indices, foreign keys (validated), NOT NULL, defaults and sequences
//!   are added there ([`ddl`], from the catalog model `schema.sql` is
//!   written from), with domains and case-insensitive collations
//!   ([`domains`]) and, asked, roles and grants ([`grants`]); every other
//!   object of the Firebird catalog is listed in `_fbunload_untranslated`
//!   ([`catalog_report`]); the run is recorded in `_fbunload_runs`, and one
//!   transaction swaps the staging schema in for the target. Readers of
//!   the target see the old tables or the new ones, never a mix.
//! - A run that fails or is interrupted drops its staging schema; one
//!   killed outright leaves it, and the next run into the same schema
//!   drops it first. Runs into one schema take turns (an advisory lock).
//! - With `--no-schema` the tables must exist: their columns are matched
//!   by name before any row moves, the rows are loaded into staging
//!   copies, and one transaction replaces the tables' rows.

mod casts;
pub mod catalog_report;
pub mod content;
pub mod cut_over;
pub mod ddl;
mod defaults;
pub mod domains;
pub mod grants;
pub mod plan_target;
pub mod resume;
mod safety;
pub mod sync;
mod target;
mod tls;
mod translate;
pub mod types;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use bytes::BytesMut;
use fbunload_exec::{Destination, ExecError, RunInfo, UnitWriter, Written};
use fbunload_plan::schema::{ConstraintKind, Schema};
use fbunload_plan::{Kind, Plan, Unit};
use postgres::{Client, CopyInWriter, GenericClient};

pub use catalog_report::Tally;
pub use ddl::Untranslated;
pub use target::{is_postgres_uri, Target};
pub use translate::{hold_triggers, plan as translation_plan, Planned};
use types::{Encoding, PgColumn};

/// The schema a run loads into unless told otherwise.
pub const DEFAULT_SCHEMA: &str = "public";
/// The table of fbunload's own in the target that records each run.
pub const RUNS_TABLE: &str = "_fbunload_runs";
/// The table of what did not translate, with its Firebird source.
pub const REPORT_TABLE: &str = "_fbunload_untranslated";

/// How a run loads into PostgreSQL (the command line's `--pg-schema`,
/// `--overwrite`, `--no-schema`, `--verify`; Python's keywords).
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    pub schema: String,
    /// Replace a target schema that holds tables (or, with
    /// `create_tables` false, tables that hold rows).
    pub overwrite: bool,
    /// Create the tables, keys and sequences (`false`: `--no-schema`,
    /// load into the tables that exist).
    pub create_tables: bool,
    /// Count every loaded table in PostgreSQL against the rows read, and
    /// compare the content of the published tables with the rows read,
    /// range by range ([`content`]).
    pub verify: bool,
    /// Load nothing: compare the tables the target holds with the rows
    /// read, as `verify` does after a load (`--pg-verify-only`).
    pub verify_only: bool,
    /// What the run records of itself in `_fbunload_runs`: the source
    /// database (as given, without password) and its options.
    pub source: String,
    pub options_json: serde_json::Value,
    /// Keep the state a later run syncs from (`--keep-keys`; [`sync`]):
    /// the run publishes only once [`PostgresDestination::publish_with_state`]
    /// is given it.
    pub keep_state: bool,
    /// With `overwrite`: also drop what fbunload did not make (objects in
    /// the target schema that no run of fbunload created, and objects
    /// elsewhere that depend on the schema's), each said as it goes.
    pub drop_others: bool,
    /// How long the publish waits, in all, for the locks on the target's
    /// tables that other sessions hold ([`DEFAULT_LOCK_WAIT`]).
    pub lock_wait: Duration,
    /// Set when the run is to stop (a signal): the statement in progress
    /// is cancelled and nothing more is changed.
    pub cancel: Arc<AtomicBool>,
    /// Where the destination's notes go (a wait on locks, what it drops).
    pub say: Say,
    /// Make Firebird's roles and its grants on the loaded tables
    /// (`--pg-grants`; [`grants`]).
    pub grants: bool,
    /// Keep what the load finished in its staging schema across a kill,
    /// journaled per unit (`--resumable`; [`resume`]).
    pub resumable: bool,
    /// Go on from what a stopped resumable load left (`--resume`).
    pub resume: bool,
    /// The fillfactor of the tables it makes (`--pg-fillfactor`); `None`:
    /// PostgreSQL's own.
    pub fillfactor: Option<u8>,
}

/// How long one try of the publish waits for the target's locks, how
/// long it gives way between tries, and how often it says so.
const LOCK_ATTEMPT: Duration = Duration::from_secs(2);
const LOCK_PAUSE: Duration = Duration::from_millis(500);
const LOCK_SAY_EVERY: Duration = Duration::from_secs(10);

/// How long a publish waits for other sessions' locks unless told.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(300);

/// A sink for the destination's notes, one line each.
#[derive(Clone)]
pub struct Say(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for Say {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Say")
    }
}

impl Default for Say {
    fn default() -> Self {
        Say(Arc::new(|line| eprintln!("fbunload: {line}")))
    }
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            schema: DEFAULT_SCHEMA.into(),
            overwrite: false,
            create_tables: true,
            verify: false,
            verify_only: false,
            source: String::new(),
            options_json: serde_json::Value::Null,
            keep_state: false,
            drop_others: false,
            lock_wait: DEFAULT_LOCK_WAIT,
            cancel: Arc::new(AtomicBool::new(false)),
            say: Say::default(),
            grants: false,
            resumable: false,
            resume: false,
            fillfactor: None,
        }
    }
}

/// The PostgreSQL name of a Firebird name (the PSQL translator's rule, so
/// that translated routines name the tables the load made).
pub use fbunload_psql::pg_name;

/// The longest name PostgreSQL keeps, in bytes (`NAMEDATALEN` - 1); a
/// longer one it cuts without a word.
pub const PG_NAME_MAX: usize = 63;

/// A Firebird name as `-t`/`-x` take it: a regular name as it is, any
/// other double-quoted (and quoted again for the shell).
fn option_name(name: &str) -> String {
    if pg_name(name) != name || name.is_empty() {
        name.to_string()
    } else {
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        format!("'{}'", quoted.replace('\'', "'\\''"))
    }
}

/// Refuses, before any row moves, Firebird names that PostgreSQL would
/// not keep apart: two tables (or two columns of a table) that become
/// the same PostgreSQL name (`STOCK` and `"stock"`), a table named as
/// fbunload's own, and a name longer than PostgreSQL keeps (it would be
/// cut, silently, and could meet another). `tables`: each table's
/// Firebird name and its columns'.
fn check_names(tables: &[(&str, Vec<&str>)]) -> Result<(), String> {
    let too_long = |what: &str, name: &str| {
        format!(
            "{what} {name}: its PostgreSQL name {} is {} bytes, longer than the {PG_NAME_MAX} \
             PostgreSQL keeps; rename it in Firebird, or leave it out",
            ident(&pg_name(name)),
            pg_name(name).len()
        )
    };
    use std::collections::HashMap;
    let mut seen: HashMap<String, &str> = HashMap::new();
    for (table, columns) in tables {
        let pg = pg_name(table);
        if pg.len() > PG_NAME_MAX {
            return Err(format!(
                "{} (-x {})",
                too_long("table", table),
                option_name(table)
            ));
        }
        if [RUNS_TABLE, REPORT_TABLE, sync::STATE_TABLE].contains(&pg.as_str()) {
            return Err(format!(
                "table {table} would be PostgreSQL's {pg}, a table of fbunload's own; leave it \
                 out (-x {})",
                option_name(table)
            ));
        }
        if let Some(other) = seen.insert(pg.clone(), table) {
            return Err(format!(
                "tables {other} and {table} would both be PostgreSQL's {} (an unquoted name \
                 becomes lower case); load them apart, leaving one out (-x {})",
                ident(&pg),
                option_name(table)
            ));
        }
        let mut seen_columns: HashMap<String, &str> = HashMap::new();
        for column in columns {
            let pg_column = pg_name(column);
            if pg_column.len() > PG_NAME_MAX {
                return Err(format!("table {table}: {}", too_long("column", column)));
            }
            if let Some(other) = seen_columns.insert(pg_column.clone(), column) {
                return Err(format!(
                    "table {table}: columns {other} and {column} would both be PostgreSQL's {} \
                     (an unquoted name becomes lower case); rename one in Firebird, or leave \
                     the table out (-x {})",
                    ident(&pg_column),
                    option_name(table)
                ));
            }
        }
    }
    Ok(())
}

/// A quoted PostgreSQL identifier.
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn pg_error(context: &str, e: postgres::Error) -> ExecError {
    let reason = match e.as_db_error() {
        Some(db) => server_reason(db.message(), db.detail(), db.hint()),
        None => e.to_string(),
    };
    ExecError::Server(format!("PostgreSQL: {context}: {reason}"))
}

/// A server's error in one line: its message, detail and hint, which is
/// where PostgreSQL names the fix ("out of shared memory" when one
/// transaction locks more objects than its lock table holds, as a load of
/// thousands of tables does: "You might need to increase
/// max_locks_per_transaction.").
fn server_reason(message: &str, detail: Option<&str>, hint: Option<&str>) -> String {
    let mut reason = message.to_string();
    if let Some(detail) = detail {
        reason.push_str(&format!(" ({detail})"));
    }
    if let Some(hint) = hint {
        reason.push_str(&format!("; {hint}"));
    }
    reason.replace('\n', " ")
}

/// One table's load.
struct TableLoad {
    name: String,
    pg: String,
    columns: Arc<Vec<PgColumn>>,
    /// Indices of the primary key's columns in the batch, to name a row.
    key: Vec<usize>,
    units_left: usize,
    rows: u64,
    /// COPY bytes sent for the units that completed: the summary's MB.
    bytes: u64,
    /// Whether the catalog model describes it (a table, not a view or
    /// query), so keys and indices can follow.
    from_table: bool,
    /// The rows read, digested for `--verify` ([`content`]).
    digest: Option<content::Digests>,
}

/// What a lane is asked to do.
enum ToLane {
    Begin(Arc<UnitCopy>),
    Batch(RecordBatch),
    End,
    Abort,
}

/// One unit's COPY.
struct UnitCopy {
    sql: String,
    table: String,
    columns: Arc<Vec<PgColumn>>,
    key: Vec<usize>,
    /// Digest the rows sent, for `--verify` ([`content`]).
    digest: bool,
    /// A resumable load's journal row, added in the unit's COPY
    /// transaction ([`resume`]).
    journal: Option<JournalRow>,
}

/// A unit's row in [`resume::UNITS_TABLE`]: its insert and the unit.
struct JournalRow {
    sql: String,
    seq: i64,
    first_slot: i64,
    end_slot: Option<i64>,
}

/// What a lane's COPY of one unit took: rows, bytes sent, and the rows
/// digested where asked.
#[derive(Debug, Default)]
struct Copied {
    rows: u64,
    bytes: u64,
    digest: Option<content::Digests>,
}

/// A PostgreSQL connection on a thread of its own, taking units.
struct Lane {
    to: SyncSender<ToLane>,
    done: Receiver<Result<Copied, String>>,
    /// The lane's first error in this unit, so the worker stops early.
    failed: Arc<Mutex<Option<String>>>,
}

impl Lane {
    fn open(client: Client) -> Lane {
        // A few batches ahead: the worker fetches while the lane encodes.
        let (to, from) = sync_channel(2);
        let (done_tx, done) = sync_channel(1);
        let failed = Arc::new(Mutex::new(None));
        let failed_in = failed.clone();
        std::thread::spawn(move || lane(client, from, done_tx, failed_in));
        Lane { to, done, failed }
    }
}

fn lane(
    mut client: Client,
    from: Receiver<ToLane>,
    done: SyncSender<Result<Copied, String>>,
    failed: Arc<Mutex<Option<String>>>,
) {
    while let Ok(message) = from.recv() {
        let ToLane::Begin(copy) = message else {
            continue;
        };
        *failed.lock().unwrap() = None;
        let journaled = copy.journal.is_some();
        if journaled {
            if let Err(e) = client.batch_execute("BEGIN") {
                let _ = done.send(Err(self::message(&copy.table, &e)));
                return;
            }
        }
        let outcome = copy_unit(&mut client, &copy, &from, &failed);
        // A resumable load's unit is committed with its journal row, or
        // not at all.
        let outcome = match (&copy.journal, outcome) {
            (Some(row), Some(Ok(copied))) => Some(commit_unit(&mut client, &copy, row, copied)),
            (Some(_), outcome) => {
                let _ = client.batch_execute("ROLLBACK");
                outcome
            }
            (None, outcome) => outcome,
        };
        let Some(result) = outcome else {
            // Aborted: the COPY was dropped, which cancels it.
            if done.send(Ok(Copied::default())).is_err() || client.is_closed() {
                return;
            }
            continue;
        };
        if done.send(result).is_err() || client.is_closed() {
            return;
        }
    }
}

/// Adds a unit's journal row in its COPY's transaction and commits both.
fn commit_unit(
    client: &mut Client,
    copy: &UnitCopy,
    row: &JournalRow,
    copied: Copied,
) -> Result<Copied, String> {
    let journaled = client
        .execute(
            &row.sql,
            &[
                &copy.table,
                &row.seq,
                &row.first_slot,
                &row.end_slot,
                &(copied.rows as i64),
            ],
        )
        .and_then(|_| client.batch_execute("COMMIT"));
    match journaled {
        Ok(()) => Ok(copied),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK");
            Err(message(&copy.table, &e))
        }
    }
}

/// Copies one unit's batches until its end (`Some`: rows or error) or
/// an abort (`None`).
fn copy_unit(
    client: &mut Client,
    copy: &UnitCopy,
    from: &Receiver<ToLane>,
    failed: &Mutex<Option<String>>,
) -> Option<Result<Copied, String>> {
    let mut error = None;
    let mut rows = 0u64;
    let mut sent = 0u64;
    // The encoded rows, sent in large CopyData messages: few round trips
    // through the client's runtime, and PostgreSQL reads whole buffers.
    let mut buf = BytesMut::with_capacity(SEND_BYTES + SEND_BYTES / 4);
    buf.extend_from_slice(types::COPY_HEADER);
    let mut digest = copy
        .digest
        .then(|| content::Digests::new(&copy.columns, &copy.key));
    let mut writer = match client.copy_in(&copy.sql) {
        Ok(sink) => Some(sink),
        Err(e) => {
            error = Some(message(&copy.table, &e));
            None
        }
    };
    let fail = |e: String, error: &mut Option<String>| {
        *failed.lock().unwrap() = Some(e.clone());
        *error = Some(e);
    };
    if let Some(e) = error.take() {
        fail(e, &mut error);
    }
    loop {
        match from.recv() {
            Ok(ToLane::Batch(batch)) => {
                if let Some(w) = writer.as_mut() {
                    rows += batch.num_rows() as u64;
                    if let Err(e) =
                        write_batch(w, &mut buf, &batch, copy, &mut sent, digest.as_mut())
                    {
                        // Dropping the writer cancels the COPY.
                        writer = None;
                        fail(e, &mut error);
                    }
                }
            }
            Ok(ToLane::End) => {
                return Some(match (error, writer) {
                    (Some(e), _) => Err(e),
                    (None, Some(mut w)) => {
                        buf.extend_from_slice(types::COPY_TRAILER);
                        sent += buf.len() as u64;
                        send(&mut w, &mut buf, &copy.table)
                            .and_then(|()| w.finish().map_err(|e| message(&copy.table, &e)))
                            .and_then(|n| {
                                (n == rows)
                                    .then_some(Copied {
                                        rows,
                                        bytes: sent,
                                        digest,
                                    })
                                    .ok_or_else(|| {
                                        format!(
                                            "table {}: PostgreSQL took {n} rows of {rows}",
                                            copy.table
                                        )
                                    })
                            })
                    }
                    (None, None) => Err(format!("table {}: the COPY was lost", copy.table)),
                });
            }
            Ok(ToLane::Abort) | Err(_) => return None,
            Ok(ToLane::Begin(_)) => return Some(Err("a unit began inside another".into())),
        }
    }
}

/// How many encoded bytes a lane gathers before it sends them.
const SEND_BYTES: usize = 256 << 10;

fn send(writer: &mut CopyInWriter<'_>, buf: &mut BytesMut, table: &str) -> Result<(), String> {
    let lost = |e: std::io::Error| match e
        .get_ref()
        .and_then(|e| e.downcast_ref::<postgres::Error>())
    {
        Some(pg) => message(table, pg),
        None => format!("table {table}: PostgreSQL COPY failed: {e}"),
    };
    writer.write_all(buf).map_err(lost)?;
    writer.flush().map_err(lost)?;
    buf.clear();
    Ok(())
}

fn message(table: &str, e: &postgres::Error) -> String {
    let reason = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => std::error::Error::source(e).map_or_else(|| e.to_string(), |s| format!("{e}: {s}")),
    };
    format!("table {table}: PostgreSQL COPY failed: {reason}")
}

fn write_batch(
    writer: &mut CopyInWriter<'_>,
    buf: &mut BytesMut,
    batch: &RecordBatch,
    copy: &UnitCopy,
    sent: &mut u64,
    mut digest: Option<&mut content::Digests>,
) -> Result<(), String> {
    refuse_nul(batch, copy)?;
    let mut row = 0;
    while row < batch.num_rows() {
        let start = buf.len();
        row = types::put_rows(batch.columns(), &copy.columns, row, SEND_BYTES, buf)
            .map_err(|e| format!("table {}: PostgreSQL COPY failed: {e}", copy.table))?;
        // The very bytes that go out, digested.
        if let Some(digest) = digest.as_deref_mut() {
            digest
                .add_rows(&buf[start..], &copy.columns)
                .map_err(|e| format!("table {}: --verify: {e}", copy.table))?;
        }
        if buf.len() >= SEND_BYTES {
            *sent += buf.len() as u64;
            send(writer, buf, &copy.table)?;
        }
    }
    Ok(())
}

/// PostgreSQL text cannot hold a NUL character: the first row with one
/// is named by its key, before anything of it is sent.
fn refuse_nul(batch: &RecordBatch, copy: &UnitCopy) -> Result<(), String> {
    for (i, column) in copy.columns.iter().enumerate() {
        if column.encoding != Encoding::Text {
            continue;
        }
        let strings = batch.column(i).as_string::<i32>();
        if memchr::memchr(0, strings.values().as_slice()).is_none() {
            continue;
        }
        for row in 0..strings.len() {
            if strings.is_valid(row) && strings.value(row).contains('\0') {
                return Err(format!(
                    "table {}, column {}, row {}: the text holds a NUL character (U+0000), \
                     which PostgreSQL text cannot hold; leave the column out (--columns) or \
                     its rows (--where)",
                    copy.table,
                    column.name,
                    row_key(batch, &copy.key, row)
                ));
            }
        }
    }
    Ok(())
}

/// `ID = 7` of the row's primary key, or its position in the batch.
fn row_key(batch: &RecordBatch, key: &[usize], row: usize) -> String {
    let schema = batch.schema();
    let parts: Vec<String> = key
        .iter()
        .map(|&i| {
            let array = batch.column(i);
            let value = if array.is_null(row) {
                "NULL".to_string()
            } else {
                match array.data_type() {
                    DataType::Int16 => array
                        .as_primitive::<arrow_array::types::Int16Type>()
                        .value(row)
                        .to_string(),
                    DataType::Int32 => array
                        .as_primitive::<arrow_array::types::Int32Type>()
                        .value(row)
                        .to_string(),
                    DataType::Int64 => array
                        .as_primitive::<arrow_array::types::Int64Type>()
                        .value(row)
                        .to_string(),
                    DataType::Utf8 => format!("{:?}", array.as_string::<i32>().value(row)),
                    _ => "…".to_string(),
                }
            };
            format!("{} = {value}", schema.field(i).name())
        })
        .collect();
    if parts.is_empty() {
        format!("{} of its batch (the table has no primary key)", row + 1)
    } else {
        parts.join(", ")
    }
}

/// Loads a run's tables into a PostgreSQL schema (see the crate's docs).
pub struct PostgresDestination {
    target: Target,
    options: PostgresOptions,
    staging: String,
    /// Holds the run's advisory lock; runs the DDL and the publish.
    control: Mutex<Client>,
    tables: Mutex<Vec<TableLoad>>,
    schema: Mutex<Option<Schema>>,
    snapshot: Mutex<Option<u64>>,
    idle: Mutex<Vec<Lane>>,
    published: AtomicBool,
    started: AtomicBool,
    report: Mutex<Vec<Untranslated>>,
    /// How many catalog objects of each kind were made and reported.
    tallies: Mutex<Vec<Tally>>,
    started_at: std::time::SystemTime,
    /// The state of the run the target holds, where this run syncs from
    /// it ([`sync`]).
    base: Option<sync::BaseState>,
    /// Cancels the control connection's statement when the run stops.
    watch: safety::CancelWatch,
    /// The state this run leaves, written with its `_fbunload_runs` row.
    state: Mutex<Option<sync::NewState>>,
    /// Each sequence's PostgreSQL name, by its Firebird name: given out
    /// by a full load, read back from the base run's row by a sync (see
    /// `ddl::after_load`); recorded with each run in `_fbunload_runs`.
    sequence_names: Mutex<ddl::SequenceNames>,
    /// The keys' checksums this run leaves ([`sync::KeyChecksums`]).
    checksums: Mutex<sync::KeyChecksums>,
    /// What a stopped resumable load left, where this run resumes it.
    stopped: Option<resume::Stopped>,
    /// What a resumable load records of its start ([`resume`]), given
    /// before [`Destination::start`].
    resume_start: Mutex<Option<serde_json::Value>>,
    /// The stopped load's units kept (table, first slot, end slot).
    kept: Mutex<std::collections::HashSet<(String, u64, Option<u64>)>>,
    /// What a resume kept and read again, recorded with the run.
    resumed: Mutex<Option<serde_json::Value>>,
}

/// Names of fbunload's own in the target database, at most 63 bytes:
/// the prefix, the schema's name (cut where it must be) and a hash of the
/// whole name, so that two long names that share their first bytes never
/// share a staging schema (each run holds the lock of its full name only).
fn own_name(prefix: &str, schema: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(schema.as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let mut stem = format!("{prefix}{schema}");
    while stem.len() + 1 + hash.len() > PG_NAME_MAX {
        stem.pop();
    }
    format!("{stem}_{hash}")
}

impl PostgresDestination {
    /// Connects, takes the target's turn and checks that it may be loaded
    /// into: all before Firebird is attached, so a wrong URI, password,
    /// host or an existing schema fails at once, in one line.
    pub fn open(target: Target, options: PostgresOptions) -> Result<Self, ExecError> {
        if options.schema.is_empty() || options.schema.len() > 63 {
            return Err(ExecError::Usage(
                "--pg-schema: a PostgreSQL schema name of 1 to 63 bytes".into(),
            ));
        }
        // PostgreSQL reserves these: refused here, not after the load.
        if options.schema.starts_with("pg_") {
            return Err(ExecError::Usage(format!(
                "--pg-schema {}: names starting with pg_ are reserved by PostgreSQL; choose \
                 another name",
                options.schema
            )));
        }
        let mut control = target.connect().map_err(ExecError::Server)?;
        let schema = &options.schema;
        let locked: bool = control
            .query_one(
                "SELECT pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext('fbunload ' || $1))",
                &[schema],
            )
            .map_err(|e| pg_error("taking the target's lock", e))?
            .get(0);
        if !locked {
            return Err(ExecError::Usage(lock_holder_text(
                &mut control,
                schema,
                &target,
            )));
        }
        let staging = own_name("_fbunload_staging_", schema);
        let stopped = if options.resume {
            Some(resume::read_stopped(
                &mut control,
                &target,
                schema,
                &staging,
            )?)
        } else {
            if !options.overwrite && resume::left_in(&mut control, &staging)? {
                return Err(ExecError::Usage(format!(
                    "schema {schema} of {}: a --resumable load that stopped left what it                      finished in staging schema {staging}: continue it with --resume, or start                      again with --overwrite",
                    target.shown()
                )));
            }
            // A staging schema left by a run that was killed outright.
            control
                .batch_execute(&format!(
                    "DROP SCHEMA IF EXISTS {} CASCADE",
                    ident(&staging)
                ))
                .map_err(|e| pg_error("removing an earlier run's staging schema", e))?;
            None
        };
        if options.verify_only {
            let present: bool = control
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)",
                    &[schema],
                )
                .map_err(|e| pg_error("looking at the target schema", e))?
                .get(0);
            if !present {
                return Err(ExecError::Usage(format!(
                    "--pg-verify-only: {} has no schema {schema} to verify; --pg-schema names \
                     the one that was loaded",
                    target.shown()
                )));
            }
        }
        // A target that holds a run with its state is synced from it.
        let base = if options.create_tables && !options.overwrite && !options.verify_only {
            sync::read_base(&mut control, schema)?
        } else {
            None
        };
        if options.create_tables && base.is_none() && !options.verify_only {
            Self::check_replaceable(&mut control, &target, &options)?;
        }
        let watch = safety::CancelWatch::start(options.cancel.clone(), control.cancel_token());
        Ok(PostgresDestination {
            target,
            options,
            staging,
            watch,
            control: Mutex::new(control),
            tables: Mutex::new(Vec::new()),
            schema: Mutex::new(None),
            snapshot: Mutex::new(None),
            idle: Mutex::new(Vec::new()),
            published: AtomicBool::new(false),
            started: AtomicBool::new(false),
            report: Mutex::new(Vec::new()),
            tallies: Mutex::new(Vec::new()),
            started_at: std::time::SystemTime::now(),
            sequence_names: Mutex::new(
                base.as_ref()
                    .map(|b| b.sequences.clone())
                    .unwrap_or_default(),
            ),
            base,
            state: Mutex::new(None),
            checksums: Mutex::new(Default::default()),
            stopped,
            resume_start: Mutex::new(None),
            kept: Mutex::new(Default::default()),
            resumed: Mutex::new(None),
        })
    }

    /// A full load replaces the target schema whole: refused where it
    /// holds anything but with `--overwrite`, and then where it holds
    /// objects fbunload did not make or objects elsewhere depend on it,
    /// unless `--pg-drop-others` (see [`safety`]).
    fn check_replaceable(
        client: &mut Client,
        target: &Target,
        options: &PostgresOptions,
    ) -> Result<(), ExecError> {
        let schema = &options.schema;
        let looking = |e| pg_error("looking at the target schema", e);
        let held = safety::schema_contents(client, schema).map_err(looking)?;
        if held.is_empty() {
            return Ok(());
        }
        if !options.overwrite {
            let all: Vec<String> = held.iter().map(|h| h.description.clone()).collect();
            return Err(ExecError::Usage(format!(
                "schema {schema} of {} already holds {} object{}: {}; --overwrite replaces it \
                 whole (in one transaction, once the new tables are complete), discarding every \
                 write made there since, the application's too; --pg-schema NAME loads into \
                 another",
                target.shown(),
                all.len(),
                if all.len() == 1 { "" } else { "s" },
                safety::listed(&all, 5)
            )));
        }
        let others = Self::others(client, schema).map_err(looking)?;
        if !others.is_empty() && !options.drop_others {
            return Err(ExecError::Usage(format!(
                "schema {schema} of {}: --overwrite would also drop what fbunload did not make: \
                 {}; move or drop them first, or add --pg-drop-others to drop them too",
                target.shown(),
                safety::listed(&others, 5)
            )));
        }
        Ok(())
    }

    /// What replacing `schema` would drop that fbunload did not make:
    /// objects in it, and objects elsewhere that depend on it.
    fn others(
        client: &mut impl GenericClient,
        schema: &str,
    ) -> Result<Vec<String>, postgres::Error> {
        let mut others: Vec<String> = safety::schema_contents(client, schema)?
            .into_iter()
            .filter(|h| !h.made_by_fbunload)
            .map(|h| h.description)
            .collect();
        others.extend(
            safety::dependents_outside(client, schema)?
                .into_iter()
                .map(|d| format!("{d} (outside the schema)")),
        );
        Ok(others)
    }

    /// Whether the run was told to stop.
    fn stopped(&self) -> bool {
        self.options.cancel.load(Ordering::SeqCst)
    }

    /// Fails with [`ExecError::Interrupted`] once the run was told to stop.
    fn check_stopped(&self) -> Result<(), ExecError> {
        if self.stopped() {
            Err(ExecError::Interrupted)
        } else {
            Ok(())
        }
    }

    /// Runs `step` (a sync's transaction, which writes the target's
    /// tables) as a phase of the destination's own: a stop cancels its
    /// statement in progress ([`Self::phase`]). It first waits, as the
    /// publish does, until other sessions' locks would let it write the
    /// tables (naming them, for `--pg-lock-wait` at most), and runs with
    /// `lock_timeout` at what is left of that wait, so it never waits on a
    /// lock for longer.
    pub fn stoppable<T>(
        &self,
        step: impl FnOnce() -> Result<T, ExecError>,
    ) -> Result<T, ExecError> {
        self.phase(|| {
            let started = Instant::now();
            {
                let mut client = self.control.lock().unwrap();
                // Rolled back at once: the locks were only asked for.
                self.with_locks(&mut client, "ROW EXCLUSIVE", |_| Ok(()))?;
                let left = self
                    .options
                    .lock_wait
                    .saturating_sub(started.elapsed())
                    .max(LOCK_ATTEMPT);
                self.run_sql(
                    &mut *client,
                    "setting lock_timeout",
                    &format!("SET lock_timeout = '{}ms'", left.as_millis()),
                )?;
            }
            let result = step();
            let mut client = self.control.lock().unwrap();
            let _ = client.batch_execute("RESET lock_timeout");
            result
        })
    }

    /// Runs `phase` on the control connection with the cancel watch armed:
    /// a stop cancels the statement in progress, and whatever error that
    /// gives is the run's interruption.
    fn phase<T>(&self, phase: impl FnOnce() -> Result<T, ExecError>) -> Result<T, ExecError> {
        self.check_stopped()?;
        self.watch.busy.store(true, Ordering::SeqCst);
        let result = phase();
        self.watch.busy.store(false, Ordering::SeqCst);
        match result {
            Err(_) if self.stopped() => Err(ExecError::Interrupted),
            result => result,
        }
    }

    /// What did not translate (after a run): also in the target's
    /// `_fbunload_untranslated`.
    pub fn untranslated(&self) -> Vec<Untranslated> {
        self.report.lock().unwrap().clone()
    }

    /// How many objects of each kind of the Firebird catalog the run made
    /// in PostgreSQL and how many it reported (after a full load; a sync
    /// makes none).
    pub fn catalog_tallies(&self) -> Vec<Tally> {
        self.tallies.lock().unwrap().clone()
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The schema loaded (`--pg-schema`).
    pub fn schema(&self) -> &str {
        &self.options.schema
    }

    fn run_sql(
        &self,
        client: &mut impl GenericClient,
        context: &str,
        sql: &str,
    ) -> Result<(), ExecError> {
        client.batch_execute(sql).map_err(|e| pg_error(context, e))
    }

    /// The plan's tables as PostgreSQL columns; refuses before any row
    /// moves a column that has no PostgreSQL type, or (`--no-schema`) a
    /// table or column the target lacks.
    fn prepare_tables(&self, plan: &Plan, run: &RunInfo<'_>) -> Result<Vec<TableLoad>, ExecError> {
        let mut loads = Vec::new();
        for (i, table) in plan.tables.iter().enumerate() {
            let schema = &run.schemas[i];
            let columns = schema
                .fields()
                .iter()
                .map(|f| {
                    types::pg_column(f).map_err(|e| ExecError::Table {
                        table: table.name.clone(),
                        message: format!("column {}: {e}", f.name()),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let model = run
                .schema
                .and_then(|s| s.tables.iter().find(|t| t.name == table.name));
            let key = model
                .and_then(|t| {
                    t.constraints
                        .iter()
                        .find(|c| c.kind == ConstraintKind::PrimaryKey)
                })
                .map(|pk| {
                    pk.columns
                        .iter()
                        .filter_map(|c| schema.index_of(c).ok())
                        .collect()
                })
                .unwrap_or_default();
            loads.push(TableLoad {
                name: table.name.clone(),
                pg: pg_name(&table.name),
                columns: Arc::new(columns),
                key,
                units_left: table.unit_count,
                rows: 0,
                bytes: 0,
                digest: None,
                from_table: table.kind == Kind::Table && model.is_some(),
            });
        }
        let tables: Vec<(&str, Vec<&str>)> = loads
            .iter()
            .map(|l| {
                let columns = l.columns.iter().map(|c| c.name.as_str()).collect();
                (l.name.as_str(), columns)
            })
            .collect();
        check_names(&tables).map_err(ExecError::Usage)?;
        Ok(loads)
    }

    /// `--no-schema`: every table and column must be in the target.
    fn check_existing(&self, client: &mut Client, loads: &[TableLoad]) -> Result<(), ExecError> {
        for load in loads {
            let rows = client
                .query(
                    "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
                     JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 \
                     AND c.relname = $2 AND c.relkind IN ('r', 'p') AND a.attnum > 0 \
                     AND NOT a.attisdropped",
                    &[&self.options.schema, &load.pg],
                )
                .map_err(|e| pg_error("reading the target's columns", e))?;
            if rows.is_empty() {
                return Err(ExecError::Usage(format!(
                    "--no-schema: table {} has no table {}.{} to load into in {}; create it, or \
                     leave out --no-schema",
                    load.name,
                    self.options.schema,
                    load.pg,
                    self.target.shown()
                )));
            }
            let existing: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            let missing: Vec<String> = load
                .columns
                .iter()
                .map(|c| pg_name(&c.name))
                .filter(|c| !existing.contains(c))
                .collect();
            if !missing.is_empty() {
                return Err(ExecError::Usage(format!(
                    "--no-schema: table {}.{} has no column {} (columns are matched by name); \
                     nothing was loaded",
                    self.options.schema,
                    load.pg,
                    missing.join(", ")
                )));
            }
            if !self.options.overwrite {
                let any: bool = client
                    .query_one(
                        &format!(
                            "SELECT EXISTS (SELECT 1 FROM {}.{})",
                            ident(&self.options.schema),
                            ident(&load.pg)
                        ),
                        &[],
                    )
                    .map_err(|e| pg_error("looking at the target's rows", e))?
                    .get(0);
                if any {
                    return Err(ExecError::Usage(format!(
                        "--no-schema: table {}.{} already holds rows: --overwrite replaces \
                         them (in one transaction, once every table is loaded)",
                        self.options.schema, load.pg
                    )));
                }
            }
        }
        Ok(())
    }

    /// Whether the units digest the rows they send: a load's `--verify`
    /// (a sync's reads only what changed: its check reads Firebird again,
    /// `--pg-verify-only`).
    fn digesting(&self) -> bool {
        self.options.verify && self.base.is_none()
    }

    /// Counts a unit of table `table` that completed; `true` once it was
    /// the table's last.
    pub(crate) fn unit_done(
        &self,
        table: usize,
        rows: u64,
        bytes: u64,
        digest: Option<content::Digests>,
    ) -> bool {
        let mut tables = self.tables.lock().unwrap();
        let t = &mut tables[table];
        t.rows += rows;
        t.bytes += bytes;
        if let Some(digest) = digest {
            match &mut t.digest {
                Some(all) => all.append(digest),
                None => t.digest = Some(digest),
            }
        }
        t.units_left = t.units_left.saturating_sub(1);
        t.units_left == 0
    }

    fn lane(&self) -> Result<Lane, ExecError> {
        if let Some(lane) = self.idle.lock().unwrap().pop() {
            return Ok(lane);
        }
        let client = self.target.connect().map_err(ExecError::Server)?;
        Ok(Lane::open(client))
    }

    /// Whether the load journals its units ([`resume`]).
    fn resumable(&self) -> bool {
        self.options.resumable || self.options.resume
    }

    /// What the stopped load left, where this run resumes one.
    pub fn stopped_load(&self) -> Option<&resume::Stopped> {
        self.stopped.as_ref()
    }

    /// The staging schema, as messages name it.
    pub fn staging(&self) -> &str {
        &self.staging
    }

    /// What a resumable load records of its start (the facade's first
    /// snapshot, database and options), before [`Destination::start`].
    pub fn set_resume_start(&self, start: serde_json::Value) {
        *self.resume_start.lock().unwrap() = Some(start);
    }

    /// What a resume kept and read again, recorded with the run in
    /// `_fbunload_runs` (its `options.resumed`).
    pub fn set_resumed(&self, resumed: serde_json::Value) {
        *self.resumed.lock().unwrap() = Some(resumed);
    }

    /// A unit the stopped load finished, unchanged since: its rows stay
    /// where they are, counted as read. `true` once it completed its
    /// table.
    pub fn keep_unit(&self, table: usize, unit: &Unit, rows: u64) -> bool {
        let name = self.tables.lock().unwrap()[table].name.clone();
        self.kept
            .lock()
            .unwrap()
            .insert((name, unit.first_slot, unit.end_slot));
        self.unit_done(table, rows, 0, None)
    }

    /// The stopped load's units not kept: their rows go (module
    /// [`resume`]); the units were read again at this run's snapshot.
    fn forget_unkept(&self, client: &mut Client) -> Result<(), ExecError> {
        let Some(stopped) = &self.stopped else {
            return Ok(());
        };
        let kept = self.kept.lock().unwrap();
        let gone: Vec<&resume::JournaledUnit> = stopped
            .units
            .iter()
            .filter(|u| !kept.contains(&(u.table.clone(), u.first_slot, u.end_slot)))
            .collect();
        let names: std::collections::HashMap<String, String> = stopped
            .start
            .get("table_names")
            .and_then(|t| serde_json::from_value(t.clone()).ok())
            .unwrap_or_default();
        resume::forget(client, &self.staging, &names, &gone)
    }

    /// A resume's tables must be the stopped load's, as it made them.
    fn check_stopped_tables(
        &self,
        client: &mut Client,
        loads: &[TableLoad],
    ) -> Result<(), ExecError> {
        for load in loads {
            let found = resume::columns_of(client, &self.staging, &load.pg)?;
            let names: Vec<String> = found.into_iter().map(|(name, _)| name).collect();
            let wanted: Vec<String> = load.columns.iter().map(|c| pg_name(&c.name)).collect();
            if names != wanted {
                return Err(ExecError::Usage(format!(
                    "--resume: table {} is not in staging schema {} as the stopped load made it                      (its columns changed in Firebird since, or it was not selected then); start                      again with --overwrite",
                    load.name, self.staging
                )));
            }
        }
        Ok(())
    }

    /// Keys, indices, foreign keys, NOT NULL, defaults, sequences.
    fn build_schema(&self, client: &mut Client) -> Result<(), ExecError> {
        let schema = self.schema.lock().unwrap().clone();
        let Some(schema) = schema else {
            return Ok(());
        };
        let tables = self.tables.lock().unwrap();
        let loads: Vec<plan_target::LoadedTable> = tables
            .iter()
            .map(|t| plan_target::LoadedTable {
                name: t.name.clone(),
                pg: t.pg.clone(),
                from_table: t.from_table,
                columns: t
                    .columns
                    .iter()
                    .map(|c| (c.name.clone(), c.sql_type.clone()))
                    .collect(),
            })
            .collect();
        drop(tables);
        let (icu, roles) = plan_target::server_abilities(client, self.options.grants)?;
        let ddl = plan_target::whole_ddl(&schema, &self.staging, &loads, icu, roles.as_ref());
        for statement in &ddl.statements {
            self.check_stopped()?;
            self.run_sql(client, &statement.what, &statement.sql)?;
        }
        let tables = self.tables.lock().unwrap();
        let loaded = |name: &str| -> Option<Vec<String>> {
            tables
                .iter()
                .find(|t| t.from_table && t.name == name)
                .map(|t| t.columns.iter().map(|c| c.name.clone()).collect())
        };
        let (made, reported) = translate::create(
            client,
            &schema,
            &self.staging,
            &self.options.schema,
            &ddl.sequences,
            &loaded,
        );
        drop(tables);
        *self.sequence_names.lock().unwrap() = ddl.sequences.clone();
        let (report, tallies) = ddl.account(&schema.catalog, &made, reported);
        *self.report.lock().unwrap() = report;
        *self.tallies.lock().unwrap() = tallies;
        Ok(())
    }

    /// The names of what fbunload made in the target, for a later
    /// `--overwrite` to tell them from a user's (`safety`): a load's are
    /// all that its staging schema holds (fbunload made it whole: tables,
    /// views, sequences, domains, collations, functions); a sync keeps its
    /// base run's list.
    fn made_objects(
        &self,
        client: &mut impl GenericClient,
        schema: &str,
    ) -> Result<serde_json::Value, ExecError> {
        let fail = |e| pg_error("recording the run", e);
        if schema == self.staging {
            let rows = client
                .query(
                    "WITH ns AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) \
                     SELECT DISTINCT name FROM ( \
                       SELECT c.relname::text AS name FROM pg_catalog.pg_class c, ns \
                         WHERE c.relnamespace = ns.oid \
                       UNION ALL SELECT t.typname::text FROM pg_catalog.pg_type t, ns \
                         WHERE t.typnamespace = ns.oid \
                       UNION ALL SELECT p.proname::text FROM pg_catalog.pg_proc p, ns \
                         WHERE p.pronamespace = ns.oid \
                       UNION ALL SELECT o.collname::text FROM pg_catalog.pg_collation o, ns \
                         WHERE o.collnamespace = ns.oid) made ORDER BY 1",
                    &[&schema],
                )
                .map_err(fail)?;
            let names: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            return Ok(serde_json::json!(names));
        }
        let runs = format!("{}.{}", ident(schema), ident(RUNS_TABLE));
        let exists: bool = client
            .query_one("SELECT pg_catalog.to_regclass($1) IS NOT NULL", &[&runs])
            .map_err(fail)?
            .get(0);
        if !exists {
            return Ok(serde_json::json!([]));
        }
        let previous: Option<String> = client
            .query_opt(
                &format!(
                    "SELECT (options->'made')::text FROM {runs} ORDER BY finished DESC LIMIT 1"
                ),
                &[],
            )
            .map_err(fail)?
            .and_then(|r| r.get(0));
        Ok(previous
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_else(|| serde_json::json!([])))
    }

    /// `_fbunload_runs` and `_fbunload_untranslated`, in `schema`.
    fn record(&self, client: &mut impl GenericClient, schema: &str) -> Result<(), ExecError> {
        let runs = format!("{}.{}", ident(schema), ident(RUNS_TABLE));
        let tables = self.tables.lock().unwrap();
        let listed: Vec<serde_json::Value> = tables
            .iter()
            .map(|t| serde_json::json!({"firebird": t.name, "table": t.pg, "rows": t.rows}))
            .collect();
        drop(tables);
        let started = self
            .started_at
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let snapshot = self.snapshot.lock().unwrap().map(|n| n as i64);
        let mut options = self.run_options_json();
        options["made"] = self.made_objects(client, schema)?;
        if let Some(resumed) = self.resumed.lock().unwrap().clone() {
            options["resumed"] = resumed;
        }
        self.run_sql(
            client,
            "recording the run",
            &format!(
                "CREATE TABLE IF NOT EXISTS {runs} (started timestamptz NOT NULL, \
                 finished timestamptz NOT NULL, fbunload text NOT NULL, source text NOT NULL, \
                 snapshot bigint, tables jsonb NOT NULL, options jsonb NOT NULL)"
            ),
        )?;
        client
            .execute(
                &format!(
                    "INSERT INTO {runs} VALUES (pg_catalog.to_timestamp($1), pg_catalog.now(), $2, $3, $4, \
                     $5::text::jsonb, $6::text::jsonb)"
                ),
                &[
                    &started,
                    &env!("CARGO_PKG_VERSION"),
                    &self.options.source,
                    &snapshot,
                    &serde_json::Value::Array(listed).to_string(),
                    &options.to_string(),
                ],
            )
            .map_err(|e| pg_error("recording the run", e))?;
        if self.base.is_some() {
            // A sync keeps the report of the load it syncs.
            return Ok(());
        }
        let report_table = format!("{}.{}", ident(schema), ident(REPORT_TABLE));
        self.run_sql(
            client,
            "recording what did not translate",
            &format!(
                "DROP TABLE IF EXISTS {report_table}; CREATE TABLE {report_table} (kind text \
                 NOT NULL, firebird_table text, name text NOT NULL, firebird_source text NOT \
                 NULL, why text NOT NULL)"
            ),
        )?;
        for u in self.report.lock().unwrap().iter() {
            client
                .execute(
                    &format!("INSERT INTO {report_table} VALUES ($1, $2, $3, $4, $5)"),
                    &[&u.kind, &u.table, &u.name, &u.source, &u.why],
                )
                .map_err(|e| pg_error("recording what did not translate", e))?;
        }
        Ok(())
    }

    /// `--verify`: each loaded table counted in PostgreSQL.
    fn verify(&self, client: &mut Client) -> Result<(), ExecError> {
        let tables = self.tables.lock().unwrap();
        let mut differ = Vec::new();
        for t in tables.iter() {
            let n: i64 = client
                .query_one(
                    &format!(
                        "SELECT pg_catalog.count(*) FROM {}.{}",
                        ident(&self.staging),
                        ident(&t.pg)
                    ),
                    &[],
                )
                .map_err(|e| pg_error("counting for --verify", e))?
                .get(0);
            if n as u64 != t.rows {
                differ.push(format!(
                    "{}: {} rows read, {n} in PostgreSQL",
                    t.name, t.rows
                ));
            }
        }
        if differ.is_empty() {
            Ok(())
        } else {
            Err(ExecError::Verify(differ.join("; ")))
        }
    }

    /// `--verify`'s content check ([`content`]): each table of the run in
    /// `schema`, read back, against the rows read from Firebird. All
    /// tables are read, and every difference said in one line.
    fn verify_content(&self, client: &mut Client, schema: &str) -> Result<(), ExecError> {
        let mut differ: Vec<String> = Vec::new();
        let mut ranges = 0;
        let mut tables = self.tables.lock().unwrap();
        for t in tables.iter_mut() {
            self.check_stopped()?;
            // Each table's digests let go once it is checked.
            let firebird = t
                .digest
                .take()
                .unwrap_or_else(|| content::Digests::new(&t.columns, &t.key));
            let found = content::read_back(client, schema, &t.name, &t.columns, &t.key, &firebird)?;
            ranges += found.len();
            let key = if t.key.is_empty() {
                " (rows ordered by all their columns)"
            } else {
                ""
            };
            for (i, d) in found.iter().enumerate() {
                if i == 3 {
                    differ.push(format!("table {}: {} more ranges", t.name, found.len() - 3));
                    break;
                }
                differ.push(format!(
                    "table {} ({schema}.{}){key}, {d}",
                    t.name,
                    pg_name(&t.name)
                ));
            }
        }
        if differ.is_empty() {
            return Ok(());
        }
        let what = if self.options.verify_only {
            "load it again with --overwrite (which discards every write made there since), \
             or, where it is kept in sync (--keep-keys), with --overwrite --keep-keys"
        } else if self.options.keep_state {
            "the rows were changed in PostgreSQL after the publish (or on the way): load \
             again with --overwrite --keep-keys (which discards every write made there since)"
        } else {
            "the rows were changed in PostgreSQL after the publish (or on the way): load \
             again with --overwrite (which discards every write made there since)"
        };
        Err(ExecError::Verify(format!(
            "{ranges} range{} (of up to {} rows, in key order) of schema {schema} of {} \
             differ{} from Firebird: {}; {what}",
            if ranges == 1 { "" } else { "s" },
            content::RANGE_ROWS,
            self.target.shown(),
            if ranges == 1 { "s" } else { "" },
            differ.join("; ")
        )))
    }

    /// The one transaction that makes the run visible, once it holds the
    /// locks of the target's tables: each try waits a little
    /// ([`LOCK_ATTEMPT`]) and gives way, so sessions never queue behind it
    /// for long; between tries it names the sessions that hold them, until
    /// `--pg-lock-wait` has passed.
    fn publish(&self, client: &mut Client) -> Result<(), ExecError> {
        fbunload_exec::pause_for_tests("FBUNLOAD_TEST_PAUSE_BEFORE_PUBLISH_MS");
        self.with_locks(client, "ACCESS EXCLUSIVE", |tx| self.publish_locked(tx))
    }

    /// `locked` given a transaction that holds the target's tables in
    /// `mode`, once other sessions let it take them (see [`Self::publish`]).
    fn with_locks<T>(
        &self,
        client: &mut Client,
        mode: &str,
        locked: impl FnOnce(postgres::Transaction<'_>) -> Result<T, ExecError>,
    ) -> Result<T, ExecError> {
        let schema = &self.options.schema;
        let started = Instant::now();
        let mut said: Option<Instant> = None;
        loop {
            self.check_stopped()?;
            let left = self.options.lock_wait.saturating_sub(started.elapsed());
            let attempt = left.clamp(Duration::from_millis(100), LOCK_ATTEMPT);
            let mut tx = client
                .transaction()
                .map_err(|e| pg_error("publishing", e))?;
            if self.lock_target(&mut tx, attempt, mode)? {
                return locked(tx);
            }
            drop(tx);
            let holders = safety::lock_holders(client, schema)
                .map_err(|e| pg_error("looking for the sessions that hold locks", e))?;
            let holders = if holders.is_empty() {
                "sessions that have ended since".to_string()
            } else {
                safety::listed(&holders, 3)
            };
            let waited = started.elapsed().as_secs();
            if started.elapsed() >= self.options.lock_wait {
                return Err(ExecError::Server(format!(
                    "schema {schema} of {}: other sessions held locks on its tables for {waited} \
                     s (--pg-lock-wait {}): {holders}; let them finish or end them (SELECT \
                     pg_terminate_backend(PID)), or wait longer; nothing was changed",
                    self.target.shown(),
                    self.options.lock_wait.as_secs()
                )));
            }
            if said.is_none_or(|t| t.elapsed() >= LOCK_SAY_EVERY) {
                (self.options.say.0)(&format!(
                    "waiting for locks on schema {schema} of {} ({waited} s of --pg-lock-wait \
                     {}): held by {holders}",
                    self.target.shown(),
                    self.options.lock_wait.as_secs()
                ));
                said = Some(Instant::now());
            }
            // Sessions queued behind the lock request go first.
            let pause = Instant::now();
            while pause.elapsed() < LOCK_PAUSE && !self.stopped() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// Takes the locks the publish needs on the target's tables, waiting
    /// at most `wait`: `false` where another session held one that long.
    fn lock_target(
        &self,
        tx: &mut postgres::Transaction<'_>,
        wait: Duration,
        mode: &str,
    ) -> Result<bool, ExecError> {
        let fail = |e| pg_error("publishing", e);
        tx.batch_execute(&format!(
            "SET LOCAL lock_timeout = '{}ms'",
            wait.as_millis().max(1)
        ))
        .map_err(fail)?;
        let names: Vec<String> = if self.options.create_tables {
            // The whole schema is replaced: every table of it.
            tx.query(
                "SELECT c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n \
                 ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') \
                 ORDER BY 1",
                &[&self.options.schema],
            )
            .map_err(fail)?
            .iter()
            .map(|r| r.get(0))
            .collect()
        } else {
            self.tables
                .lock()
                .unwrap()
                .iter()
                .map(|t| t.pg.clone())
                .collect()
        };
        if names.is_empty() {
            return Ok(true);
        }
        let names: Vec<String> = names
            .iter()
            .map(|n| format!("{}.{}", ident(&self.options.schema), ident(n)))
            .collect();
        match tx.batch_execute(&format!("LOCK TABLE {} IN {mode} MODE", names.join(", "))) {
            Ok(()) => Ok(true),
            Err(e) if safety::lock_timed_out(&e) => Ok(false),
            Err(e) => Err(fail(e)),
        }
    }

    /// The publish itself, its locks held.
    fn publish_locked(&self, mut tx: postgres::Transaction<'_>) -> Result<(), ExecError> {
        let target = ident(&self.options.schema);
        let staging = ident(&self.staging);
        let exists: bool = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)",
                &[&self.options.schema],
            )
            .map_err(|e| pg_error("publishing", e))?
            .get(0);
        let had_runs: bool = tx
            .query_one(
                "SELECT pg_catalog.to_regclass($1) IS NOT NULL",
                &[&format!("{target}.{}", ident(RUNS_TABLE))],
            )
            .map_err(|e| pg_error("publishing", e))?
            .get(0);
        if self.options.create_tables {
            if self.resumable() {
                // Published, nothing is left to resume: the journal goes.
                tx.batch_execute(&format!(
                    "DROP TABLE {staging}.{}, {staging}.{}",
                    ident(resume::START_TABLE),
                    ident(resume::UNITS_TABLE)
                ))
                .map_err(|e| pg_error("publishing", e))?;
            }
            self.record(&mut tx, &self.staging)?;
            self.write_state(&mut tx, &self.staging)?;
            let runs = ident(RUNS_TABLE);
            let mut sql = String::new();
            if had_runs {
                // The target's history goes on.
                sql += &format!(
                    "INSERT INTO {staging}.{runs} SELECT * FROM {target}.{runs} \
                     ORDER BY started;"
                );
            }
            if exists {
                // Made since the run began: what replacing the schema drops.
                let others = Self::others(&mut tx, &self.options.schema)
                    .map_err(|e| pg_error("looking at the target schema", e))?;
                if !others.is_empty() {
                    if !self.options.drop_others {
                        return Err(ExecError::Usage(format!(
                            "schema {} of {}: --overwrite would also drop what fbunload did not \
                             make (made while this run loaded): {}; nothing was changed",
                            self.options.schema,
                            self.target.shown(),
                            safety::listed(&others, 5)
                        )));
                    }
                    for other in &others {
                        (self.options.say.0)(&format!(
                            "--pg-drop-others: dropping {other}, with schema {}",
                            self.options.schema
                        ));
                    }
                }
                let old = ident(&own_name("_fbunload_old_", &self.options.schema));
                sql += &format!(
                    "ALTER SCHEMA {target} RENAME TO {old}; ALTER SCHEMA {staging} RENAME TO \
                     {target}; DROP SCHEMA {old} CASCADE;"
                );
            } else {
                sql += &format!("ALTER SCHEMA {staging} RENAME TO {target};");
            }
            tx.batch_execute(&sql)
                .map_err(|e| pg_error("publishing", e))?;
        } else {
            let tables = self.tables.lock().unwrap();
            let names: Vec<String> = tables
                .iter()
                .map(|t| format!("{target}.{}", ident(&t.pg)))
                .collect();
            let mut sql = format!("TRUNCATE {};", names.join(", "));
            for t in tables.iter() {
                let columns: Vec<String> =
                    t.columns.iter().map(|c| ident(&pg_name(&c.name))).collect();
                let columns = columns.join(", ");
                // A GENERATED ALWAYS identity column takes Firebird's values too.
                sql += &format!(
                    "INSERT INTO {target}.{table} ({columns}) OVERRIDING SYSTEM VALUE SELECT \
                     {columns} FROM {staging}.{table};",
                    table = ident(&t.pg)
                );
            }
            drop(tables);
            // Foreign keys between the tables are checked at commit.
            tx.batch_execute("SET CONSTRAINTS ALL DEFERRED")
                .map_err(|e| pg_error("publishing", e))?;
            tx.batch_execute(&sql)
                .map_err(|e| pg_error("replacing the tables' rows", e))?;
            self.record(&mut tx, &self.options.schema)?;
            tx.batch_execute(&format!("DROP SCHEMA {staging} CASCADE"))
                .map_err(|e| pg_error("publishing", e))?;
        }
        // Stopped before the commit: the target stays as it was.
        self.check_stopped()?;
        tx.commit().map_err(|e| pg_error("publishing", e))?;
        self.published.store(true, Ordering::SeqCst);
        Ok(())
    }
}

impl Destination for PostgresDestination {
    fn keeps_schema(&self) -> bool {
        self.options.create_tables
    }

    fn start(&self, run: &RunInfo<'_>) -> Result<(), ExecError> {
        let loads = self.prepare_tables(run.plan, run)?;
        if self.options.verify_only {
            *self.snapshot.lock().unwrap() = run.snapshot_number;
            *self.tables.lock().unwrap() = loads;
            return Ok(());
        }
        let mut client = self.control.lock().unwrap();
        if !self.options.create_tables {
            self.check_existing(&mut client, &loads)?;
        }
        let mut sql = format!("CREATE SCHEMA {};", ident(&self.staging));
        for load in &loads {
            let columns: Vec<String> = load
                .columns
                .iter()
                .map(|c| format!("{} {}", ident(&pg_name(&c.name)), c.sql_type))
                .collect();
            // Room for HOT updates in a table a sync or follow updates.
            let storage = match self.options.fillfactor {
                Some(percent) => format!(" WITH (fillfactor = {percent})"),
                None => String::new(),
            };
            sql += &format!(
                "CREATE TABLE {}.{} ({}){storage};",
                ident(&self.staging),
                ident(&load.pg),
                columns.join(", ")
            );
        }
        self.started.store(true, Ordering::SeqCst);
        if self.stopped.is_some() {
            self.check_stopped_tables(&mut client, &loads)?;
        } else if self.resumable() {
            let mut start = self.resume_start.lock().unwrap().clone().ok_or_else(|| {
                ExecError::Internal("a resumable load without its start record".into())
            })?;
            let names: std::collections::HashMap<&str, &str> = loads
                .iter()
                .map(|l| (l.name.as_str(), l.pg.as_str()))
                .collect();
            start["pg_tables"] = serde_json::json!(names.values().collect::<Vec<_>>());
            start["table_names"] = serde_json::json!(names);
            resume::create_with(&mut client, &sql, &self.staging, &start)?;
        } else {
            self.run_sql(&mut *client, "creating the staging tables", &sql)?;
        }
        if !self.options.create_tables {
            for load in &loads {
                let columns: Vec<String> = load.columns.iter().map(|c| c.name.clone()).collect();
                casts::refuse_changing_casts(
                    &mut *client,
                    &self.staging,
                    &self.options.schema,
                    &load.name,
                    &load.pg,
                    &columns,
                )?;
            }
        }
        *self.schema.lock().unwrap() = run.schema.cloned();
        *self.snapshot.lock().unwrap() = run.snapshot_number;
        *self.tables.lock().unwrap() = loads;
        Ok(())
    }

    fn begin_unit(&self, unit: &Unit) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        if self.options.verify_only {
            let tables = self.tables.lock().unwrap();
            let t = &tables[unit.table];
            return Ok(Box::new(content::VerifyUnit::new(
                self,
                unit.table,
                &t.name,
                t.columns.clone(),
                &t.key,
            )));
        }
        let copy = {
            let tables = self.tables.lock().unwrap();
            let t = &tables[unit.table];
            let columns: Vec<String> = t.columns.iter().map(|c| ident(&pg_name(&c.name))).collect();
            Arc::new(UnitCopy {
                sql: format!(
                    "COPY {}.{} ({}) FROM STDIN (FORMAT binary)",
                    ident(&self.staging),
                    ident(&t.pg),
                    columns.join(", ")
                ),
                table: t.name.clone(),
                columns: t.columns.clone(),
                key: t.key.clone(),
                digest: self.digesting(),
                journal: self.resumable().then(|| JournalRow {
                    sql: resume::unit_sql(&self.staging),
                    seq: unit.seq as i64,
                    first_slot: unit.first_slot as i64,
                    end_slot: unit.end_slot.map(|e| e as i64),
                }),
            })
        };
        let lane = self.lane()?;
        let table = copy.table.clone();
        lane.to
            .send(ToLane::Begin(copy))
            .map_err(|_| lost(&table))?;
        Ok(Box::new(PgUnit {
            destination: self,
            lane: Some(lane),
            table: unit.table,
            name: table,
        }))
    }

    fn finish(&self) -> Result<Vec<Written>, ExecError> {
        // Idle lanes close their connections.
        self.idle.lock().unwrap().clear();
        let mut client = self.control.lock().unwrap();
        if self.options.verify_only {
            return self
                .phase(|| self.verify_content(&mut client, &self.options.schema))
                .map(|()| Vec::new());
        }
        self.phase(|| {
            self.forget_unkept(&mut client)?;
            if self.options.verify {
                self.verify(&mut client)?;
            }
            // A sync's rows wait in staging for the deletes, then
            // [`Self::apply_sync`]; a run that keeps its state is published
            // once the state is known ([`Self::publish_with_state`]).
            if self.base.is_none() {
                if self.options.create_tables {
                    // Index builds sort in memory rather than in temporary
                    // files (only ever raised, and only for this session).
                    self.run_sql(
                        &mut *client,
                        "setting maintenance_work_mem",
                        "SELECT pg_catalog.set_config('maintenance_work_mem', '524288', false) \
                         WHERE (SELECT setting::bigint FROM pg_catalog.pg_settings \
                                WHERE name = 'maintenance_work_mem') < 524288",
                    )?;
                    fbunload_exec::pause_for_tests("FBUNLOAD_TEST_PAUSE_BEFORE_BUILD_MS");
                    self.build_schema(&mut client)?;
                }
                if !self.options.keep_state {
                    self.publish(&mut client)?;
                    if self.digesting() {
                        self.verify_content(&mut client, &self.options.schema)?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(self
            .tables
            .lock()
            .unwrap()
            .iter()
            .map(|t| Written {
                bytes: t.bytes,
                ..Written::default()
            })
            .collect())
    }
}

/// Who holds the target's lock, for the refusal: a run still going, or
/// the session of one that was killed (PostgreSQL ends it only once it
/// notices the client is gone), with what to do about each.
fn lock_holder_text(control: &mut Client, schema: &str, target: &Target) -> String {
    let holder = control
        .query_opt(
            "SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.state, ''), \
                    coalesce(a.client_addr::text, 'local'), \
                    (extract(epoch FROM pg_catalog.now() - a.state_change))::bigint \
             FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
               AND ((l.classid::bigint << 32) | l.objid::bigint) \
                   = pg_catalog.hashtext('fbunload ' || $1)::bigint \
             LIMIT 1",
            &[&schema],
        )
        .ok()
        .flatten();
    match holder {
        Some(row) => {
            let (pid, app, state, client, idle): (i32, String, String, String, Option<i64>) =
                (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
            format!(
                "another fbunload run is loading schema {schema} of {}: the session with pid \
                 {pid} ({app}, from {client}, {state} for {} s) holds its lock; wait for that \
                 run to end, or, if no run is going (a killed run's session lingers until \
                 PostgreSQL notices), end it: SELECT pg_terminate_backend({pid})",
                target.shown(),
                idle.unwrap_or(0)
            )
        }
        None => format!(
            "another fbunload run is loading schema {schema} of {}; wait for it to end",
            target.shown()
        ),
    }
}

impl Drop for PostgresDestination {
    fn drop(&mut self) {
        // No cancel may hit the clean-up below.
        self.watch.busy.store(false, Ordering::SeqCst);
        self.idle.lock().unwrap().clear();
        // A resumable load keeps what it finished for --resume.
        if self.started.load(Ordering::SeqCst)
            && !self.published.load(Ordering::SeqCst)
            && !self.resumable()
        {
            if let Ok(mut client) = self.control.lock() {
                // A lane still cancelling its COPY holds a lock: wait a
                // little, else leave the schema for the next run to drop.
                let _ = safety::execute_after_cancel(
                    &mut *client,
                    &format!(
                        "SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS {} CASCADE",
                        ident(&self.staging)
                    ),
                );
            }
        }
    }
}

fn lost(table: &str) -> ExecError {
    ExecError::Server(format!(
        "table {table}: the connection to PostgreSQL was lost; nothing of this run was kept"
    ))
}

/// One unit on its lane.
struct PgUnit<'a> {
    destination: &'a PostgresDestination,
    lane: Option<Lane>,
    table: usize,
    name: String,
}

impl PgUnit<'_> {
    fn failed(&self) -> Option<String> {
        self.lane.as_ref()?.failed.lock().unwrap().clone()
    }
}

impl UnitWriter for PgUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        if let Some(e) = self.failed() {
            return Err(ExecError::Server(e));
        }
        let lane = self.lane.as_ref().ok_or_else(|| lost(&self.name))?;
        lane.to
            .send(ToLane::Batch(batch))
            .map_err(|_| lost(&self.name))
    }

    fn finish(mut self: Box<Self>) -> Result<bool, ExecError> {
        let lane = self.lane.take().ok_or_else(|| lost(&self.name))?;
        lane.to.send(ToLane::End).map_err(|_| lost(&self.name))?;
        let copied = lane
            .done
            .recv()
            .map_err(|_| lost(&self.name))?
            .map_err(ExecError::Server)?;
        self.destination.idle.lock().unwrap().push(lane);
        Ok(self
            .destination
            .unit_done(self.table, copied.rows, copied.bytes, copied.digest))
    }

    fn abort(mut self: Box<Self>) -> Result<(), ExecError> {
        if let Some(lane) = self.lane.take() {
            if lane.to.send(ToLane::Abort).is_ok() && lane.done.recv().is_ok() {
                self.destination.idle.lock().unwrap().push(lane);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// PostgreSQL's hint names the fix: a load of 5,000 tables failed with
    /// only "out of shared memory".
    #[test]
    fn a_servers_hint_is_part_of_the_one_line() {
        let reason = super::server_reason(
            "out of shared memory",
            None,
            Some("You might need to increase max_locks_per_transaction."),
        );
        assert_eq!(
            reason,
            "out of shared memory; You might need to increase max_locks_per_transaction."
        );
        assert_eq!(super::server_reason("a\nb", Some("c"), None), "a b (c)");
    }

    use super::*;

    #[test]
    fn unquoted_firebird_names_become_unquoted_postgresql_names() {
        assert_eq!(pg_name("EMPLOYEE"), "employee");
        assert_eq!(pg_name("EMP_NO$2"), "emp_no$2");
        assert_eq!(pg_name("Mixed"), "Mixed");
        assert_eq!(pg_name("WITH SPACE"), "WITH SPACE");
        assert_eq!(pg_name("9LIVES"), "9LIVES");
    }

    #[test]
    fn own_names_fit_and_differ_for_every_full_name() {
        let stem = "s".repeat(52);
        let a = own_name("_fbunload_staging_", &format!("{stem}_region_emea"));
        let b = own_name("_fbunload_staging_", &format!("{stem}_region_apac"));
        assert_ne!(a, b);
        assert!(a.len() <= PG_NAME_MAX && b.len() <= PG_NAME_MAX, "{a} {b}");
        let short = own_name("_fbunload_staging_", "public");
        assert!(short.starts_with("_fbunload_staging_public_"), "{short}");
        let wide = own_name("_fbunload_old_", &"É".repeat(31));
        assert!(wide.len() <= PG_NAME_MAX, "{wide}");
    }

    #[test]
    fn names_postgresql_would_not_keep_apart_are_refused() {
        let ok = check_names(&[("STOCK", vec!["ID", "Id"]), ("Stock", vec!["ID"])]);
        assert_eq!(ok, Ok(()));
        let err = check_names(&[("STOCK", vec!["ID"]), ("stock", vec!["ID"])]).unwrap_err();
        assert!(err.contains("tables STOCK and stock"), "{err}");
        assert!(err.contains("(-x '\"stock\"')"), "{err}");
        let err = check_names(&[("T", vec!["A", "a"])]).unwrap_err();
        assert!(err.contains("table T: columns A and a"), "{err}");
        let err = check_names(&[("_fbunload_runs", vec![])]).unwrap_err();
        assert!(err.contains("fbunload's own"), "{err}");
        let long = "É".repeat(32);
        let err = check_names(&[(long.as_str(), vec![])]).unwrap_err();
        assert!(err.contains("64 bytes"), "{err}");
        let fits = "X".repeat(63);
        assert_eq!(check_names(&[("T", vec![fits.as_str()])]), Ok(()));
        let over = "X".repeat(64);
        let err = check_names(&[("T", vec![over.as_str()])]).unwrap_err();
        assert!(err.starts_with("table T: column XXX"), "{err}");
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }
}
