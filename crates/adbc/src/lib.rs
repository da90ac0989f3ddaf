//! An ADBC driver for Firebird over the `fbunload` facade.
//!
//! ADBC (Arrow Database Connectivity) is how the Arrow ecosystem loads
//! database drivers: pandas' `read_sql`, polars' `read_database`, DuckDB, R,
//! Go and Java all go through a driver manager that finds a shared library
//! and calls its `AdbcDriverInit`. This crate is that library. It adds no
//! reading of its own: every read is one the facade already does, so a
//! driver user gets what `fbunload.read_arrow` and `fbunload.read_sql` get,
//! in parallel and at one snapshot, refusals included.
//!
//! - [`FbDatabase`]: where and who (`uri` is what `fbunload -d` takes, a
//!   path for the embedded engine, `host:path` or `inet://host:port/path`;
//!   `username`, `password`, and the `adbc.fbunload.*` options below).
//! - [`FbConnection`]: metadata (GetObjects, GetTableSchema,
//!   GetTableTypes, GetInfo) and `ReadPartition`. It holds no attachment:
//!   each read attaches for itself, as the facade's runs do.
//! - [`FbStatement`]: `SetSqlQuery` checks the text at once (one SELECT, or
//!   an error: the driver is read-only); `ExecuteQuery` reads it at one
//!   snapshot; `ExecutePartitions` holds a snapshot and cuts a table into
//!   partitions that any process with the driver reads at it; `Bind` takes
//!   one row of values for the query's `?`s, written in as literals.
//!
//! What a statement reads, by its SQL (see [`read::Read`]):
//! `SELECT * FROM T` of a table reads the table as `read_arrow` does,
//! its units in parallel; any other SELECT is read as `read_sql` reads
//! it, in one piece or, with the statement option `adbc.fbunload.split_by`,
//! split by the DB_KEY ranges of the table its FROM begins with.
//!
//! Options (database): `adbc.fbunload.role`, `adbc.fbunload.charset` (of
//! `CHARACTER SET NONE` columns, UTF8 by default),
//! `adbc.fbunload.client_library` (the `libfbclient` to load),
//! `adbc.fbunload.parallel` (worker attachments per read),
//! `adbc.fbunload.decimal256` (`true`: INT128 and NUMERIC of more than 18
//! digits as decimal256, for values of 39 digits). Statement: `adbc.fbunload.split_by`,
//! `adbc.fbunload.partitions` (at most this many partitions).
//!
//! Panics never cross the C boundary: `adbc_ffi`'s exporter catches them
//! and returns an `Internal` error.

mod cancel;
mod ffi;
mod metadata;
mod params;
mod partition;
mod read;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use adbc_core::error::{Error, Result, Status};
use adbc_core::options::{
    InfoCode, ObjectDepth, OptionConnection, OptionDatabase, OptionStatement, OptionValue,
};
use adbc_core::{Optionable, PartitionedResult};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::Schema;
use fbunload::{HeldSnapshot, RunOptions, TypeOptions, Unload};

/// The C type of the entry points' error argument, for libraries that
/// export them again (the Python extension).
pub use adbc_ffi::FFI_AdbcError;
pub use ffi::{AdbcDriverFbunloadInit, AdbcDriverInit};
pub use partition::Partition;
pub use read::Read;

/// Option keys of this driver, beside ADBC's own (`uri`, `username`,
/// `password`).
pub mod option {
    pub const ROLE: &str = "adbc.fbunload.role";
    pub const CHARSET: &str = "adbc.fbunload.charset";
    pub const CLIENT_LIBRARY: &str = "adbc.fbunload.client_library";
    pub const PARALLEL: &str = "adbc.fbunload.parallel";
    pub const DECIMAL256: &str = "adbc.fbunload.decimal256";
    pub const SPLIT_BY: &str = "adbc.fbunload.split_by";
    pub const PARTITIONS: &str = "adbc.fbunload.partitions";
}

/// The driver: what `AdbcDriverFbunloadInit` hands a driver manager.
#[derive(Default)]
pub struct FbDriver;

impl adbc_core::Driver for FbDriver {
    type DatabaseType = FbDatabase;

    fn new_database(&mut self) -> Result<FbDatabase> {
        Ok(FbDatabase::default())
    }

    fn new_database_with_opts(
        &mut self,
        opts: impl IntoIterator<Item = (OptionDatabase, OptionValue)>,
    ) -> Result<FbDatabase> {
        let mut database = FbDatabase::default();
        for (key, value) in opts {
            database.set_option(key, value)?;
        }
        Ok(database)
    }
}

/// Where to read and as whom: every connection reads with these. No
/// `Debug`: it holds the password.
#[derive(Clone)]
pub struct Settings {
    pub database: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub role: Option<String>,
    pub charset: String,
    pub client_library: Option<PathBuf>,
    pub parallel: Option<usize>,
    pub decimal256: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            database: None,
            user: None,
            password: None,
            role: None,
            charset: "UTF8".into(),
            client_library: None,
            parallel: None,
            decimal256: false,
        }
    }
}

impl Settings {
    /// A facade read of this database with these settings; user and
    /// password default to `ISC_USER` and `ISC_PASSWORD`, as everywhere
    /// in fbunload.
    pub fn unload(&self) -> Result<Unload> {
        let database = self.database.clone().ok_or_else(|| {
            Error::with_message_and_status(
                "no database: set uri to a path, host:path or inet://host:port/path",
                Status::InvalidState,
            )
        })?;
        let none_text = fbunload::none_text_decoder(&self.charset)
            .map_err(|e| invalid(format!("{} {e}", option::CHARSET)))?;
        let defaults = RunOptions::default();
        let mut unload = Unload::new(database).options(RunOptions {
            parallel: self.parallel.unwrap_or(defaults.parallel),
            types: TypeOptions {
                none_text,
                decimal256: self.decimal256,
            },
            ..defaults
        });
        unload = unload.login_or_environment(self.user.clone(), self.password.clone());
        if let Some(role) = &self.role {
            unload = unload.role(role.clone());
        }
        if let Some(path) = &self.client_library {
            unload = unload.client_library(path.clone());
        }
        Ok(unload)
    }
}

/// An ADBC database: the settings its connections share.
#[derive(Default)]
pub struct FbDatabase {
    settings: Settings,
}

impl FbDatabase {
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}

impl Optionable for FbDatabase {
    type Option = OptionDatabase;

    fn set_option(&mut self, key: OptionDatabase, value: OptionValue) -> Result<()> {
        let s = &mut self.settings;
        match key.as_ref() {
            "uri" => s.database = Some(text(&key, value)?),
            "username" => s.user = Some(text(&key, value)?),
            "password" => s.password = Some(text(&key, value)?),
            option::ROLE => s.role = Some(text(&key, value)?),
            option::CHARSET => s.charset = text(&key, value)?,
            option::CLIENT_LIBRARY => s.client_library = Some(text(&key, value)?.into()),
            option::PARALLEL => s.parallel = Some(positive(&key, value)?),
            option::DECIMAL256 => s.decimal256 = flag(&key, value)?,
            _ => return Err(unknown_option(key.as_ref())),
        }
        Ok(())
    }

    fn get_option_string(&self, key: OptionDatabase) -> Result<String> {
        let s = &self.settings;
        let value = match key.as_ref() {
            "uri" => s.database.clone(),
            "username" => s.user.clone(),
            option::ROLE => s.role.clone(),
            option::CHARSET => Some(s.charset.clone()),
            option::CLIENT_LIBRARY => s.client_library.as_ref().map(|p| p.display().to_string()),
            option::PARALLEL => s.parallel.map(|n| n.to_string()),
            option::DECIMAL256 => Some(s.decimal256.to_string()),
            _ => None,
        };
        value.ok_or_else(|| not_set(key.as_ref()))
    }

    fn get_option_bytes(&self, key: OptionDatabase) -> Result<Vec<u8>> {
        Err(not_set(key.as_ref()))
    }

    fn get_option_int(&self, key: OptionDatabase) -> Result<i64> {
        match (key.as_ref(), self.settings.parallel) {
            (option::PARALLEL, Some(n)) => Ok(n as i64),
            _ => Err(not_set(key.as_ref())),
        }
    }

    fn get_option_double(&self, key: OptionDatabase) -> Result<f64> {
        Err(not_set(key.as_ref()))
    }
}

impl adbc_core::Database for FbDatabase {
    type ConnectionType = FbConnection;

    fn new_connection(&self) -> Result<FbConnection> {
        // Refused here rather than at the first read.
        self.settings.unload()?;
        Ok(FbConnection {
            settings: Arc::new(self.settings.clone()),
            autocommit: true,
            operations: cancel::Operations::default(),
        })
    }

    fn new_connection_with_opts(
        &self,
        opts: impl IntoIterator<Item = (OptionConnection, OptionValue)>,
    ) -> Result<FbConnection> {
        let mut connection = self.new_connection()?;
        for (key, value) in opts {
            connection.set_option(key, value)?;
        }
        Ok(connection)
    }
}

/// An ADBC connection. Reads attach for themselves, so a connection is
/// only settings: each read is a read-only snapshot of its own, which is
/// autocommit (on by default). With autocommit off (the DB-API's
/// default), commit and rollback have nothing to do, as the driver never
/// writes; with it on, they are INVALID_STATE, as ADBC asks.
pub struct FbConnection {
    settings: Arc<Settings>,
    autocommit: bool,
    /// What `AdbcConnectionCancel` stops: the reads of this connection's
    /// statements and metadata calls.
    operations: cancel::Operations,
}

impl FbConnection {
    /// A metadata call's result, made by `make` (which may look at the
    /// flag), as a reader that a cancel of the connection stops.
    fn metadata(
        &self,
        make: impl FnOnce(&Arc<AtomicBool>) -> Result<RecordBatch>,
    ) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        let flag = self.operations.start();
        let batch = make(&flag)?;
        if flag.load(Ordering::SeqCst) {
            return Err(cancel::cancelled());
        }
        Ok(Box::new(cancel::Cancellable {
            inner: one_batch(batch),
            flag,
        }))
    }

    /// Commit and rollback: nothing to do, but only outside autocommit.
    fn no_autocommit(&self, what: &str) -> Result<()> {
        if self.autocommit {
            return Err(Error::with_message_and_status(
                format!(
                    "autocommit is on: there is no transaction to {what} (every read is a                      read-only snapshot of its own)"
                ),
                Status::InvalidState,
            ));
        }
        Ok(())
    }
}

impl Optionable for FbConnection {
    type Option = OptionConnection;

    fn set_option(&mut self, key: OptionConnection, value: OptionValue) -> Result<()> {
        match (key.as_ref(), &value) {
            // Every read is a read-only transaction at a snapshot of its
            // own; there is nothing to commit, so either mode reads the same.
            ("adbc.connection.autocommit", OptionValue::String(v)) if v == "true" => {
                self.autocommit = true;
                Ok(())
            }
            ("adbc.connection.autocommit", OptionValue::String(v)) if v == "false" => {
                self.autocommit = false;
                Ok(())
            }
            ("adbc.connection.autocommit", _) => Err(invalid(
                "option adbc.connection.autocommit: give true or false".into(),
            )),
            ("adbc.connection.readonly", OptionValue::String(v)) if v == "true" => Ok(()),
            ("adbc.connection.transaction.isolation_level", OptionValue::String(v))
                if v == "adbc.connection.transaction.isolation.snapshot" =>
            {
                Ok(())
            }
            _ => Err(Error::with_message_and_status(
                format!(
                    "connection option {}: not supported; the driver reads at a read-only \
                     snapshot",
                    key.as_ref()
                ),
                Status::NotImplemented,
            )),
        }
    }

    fn get_option_string(&self, key: OptionConnection) -> Result<String> {
        match key.as_ref() {
            "adbc.connection.autocommit" => Ok(self.autocommit.to_string()),
            "adbc.connection.readonly" => Ok("true".into()),
            "adbc.connection.transaction.isolation_level" => {
                Ok("adbc.connection.transaction.isolation.snapshot".into())
            }
            other => Err(not_set(other)),
        }
    }

    fn get_option_bytes(&self, key: OptionConnection) -> Result<Vec<u8>> {
        Err(not_set(key.as_ref()))
    }

    fn get_option_int(&self, key: OptionConnection) -> Result<i64> {
        Err(not_set(key.as_ref()))
    }

    fn get_option_double(&self, key: OptionConnection) -> Result<f64> {
        Err(not_set(key.as_ref()))
    }
}

impl adbc_core::Connection for FbConnection {
    type StatementType = FbStatement;

    fn new_statement(&mut self) -> Result<FbStatement> {
        Ok(FbStatement {
            settings: self.settings.clone(),
            operations: self.operations.clone(),
            sql: None,
            split_by: None,
            partitions: None,
            params: None,
            held: None,
            running: Arc::default(),
        })
    }

    fn get_info(
        &self,
        codes: Option<HashSet<InfoCode>>,
    ) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        self.metadata(|_| metadata::info(codes))
    }

    fn get_objects(
        &self,
        depth: ObjectDepth,
        catalog: Option<&str>,
        db_schema: Option<&str>,
        table_name: Option<&str>,
        table_type: Option<Vec<&str>>,
        column_name: Option<&str>,
    ) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        let filter = metadata::ObjectFilter {
            catalog,
            db_schema,
            table_name,
            table_type,
            column_name,
        };
        self.metadata(|flag| metadata::objects(&self.settings, depth, &filter, flag))
    }

    fn get_table_schema(
        &self,
        _catalog: Option<&str>,
        _db_schema: Option<&str>,
        table_name: &str,
    ) -> Result<Schema> {
        metadata::table_schema(&self.settings, table_name)
    }

    fn get_table_types(&self) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        self.metadata(|_| metadata::table_types())
    }

    fn get_cancel_handle(&self) -> Box<dyn adbc_core::CancelHandle> {
        Box::new(cancel::ConnectionCanceller(self.operations.clone()))
    }

    fn get_statistic_names(&self) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        Err(not_implemented("GetStatisticNames"))
    }

    fn get_statistics(
        &self,
        _catalog: Option<&str>,
        _db_schema: Option<&str>,
        _table_name: Option<&str>,
        _approximate: bool,
    ) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        Err(not_implemented("GetStatistics"))
    }

    fn commit(&mut self) -> Result<()> {
        self.no_autocommit("commit")
    }

    fn rollback(&mut self) -> Result<()> {
        self.no_autocommit("roll back")
    }

    fn read_partition(
        &self,
        partition: impl AsRef<[u8]>,
    ) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        let partition = Partition::decode(partition.as_ref())?;
        partition.read(&self.settings, self.operations.start())
    }
}

/// An ADBC statement: a SELECT and how to read it. A statement that ran
/// `ExecutePartitions` holds that snapshot until it executes again
/// (`ExecuteQuery` or `ExecutePartitions`) or is released: its partitions
/// can be read, here or in other processes, until then, and fail with
/// "snapshot N is closed" afterwards.
pub struct FbStatement {
    settings: Arc<Settings>,
    /// Its connection's reads, which a cancel of the connection stops.
    operations: cancel::Operations,
    sql: Option<String>,
    split_by: Option<String>,
    partitions: Option<usize>,
    /// One row of values for the query's `?`s (module `params`).
    params: Option<RecordBatch>,
    held: Option<HeldSnapshot>,
    /// The cancel flag of the run `execute` started last, shared with the
    /// handles `get_cancel_handle` gave out.
    running: Arc<Mutex<Option<Arc<AtomicBool>>>>,
}

/// Cancels whatever its statement is reading now (ADBC's
/// `AdbcStatementCancel`): the run stops its workers, and the stream ends
/// with an error of status Cancelled.
struct RunCanceller(Arc<Mutex<Option<Arc<AtomicBool>>>>);

impl adbc_core::CancelHandle for RunCanceller {
    fn try_cancel(&self) -> Result<()> {
        if let Some(flag) = self.0.lock().unwrap().as_ref() {
            flag.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}

impl FbStatement {
    /// What the statement reads: its query, or the query with each bound
    /// row's values, one read per row.
    fn reads(&self) -> Result<Vec<Read>> {
        let sql = self.sql.as_deref().ok_or_else(|| {
            Error::with_message_and_status("no query: call SetSqlQuery first", Status::InvalidState)
        })?;
        let split_by = self.split_by.as_deref();
        match &self.params {
            Some(params) if params.num_rows() > 1 => (0..params.num_rows())
                .map(|row| Read::new(&params::inline(sql, &params.slice(row, 1))?, split_by))
                .collect(),
            Some(params) => Ok(vec![Read::new(&params::inline(sql, params)?, split_by)?]),
            None => Ok(vec![Read::new(sql, split_by)?]),
        }
    }

    /// Refuses a query with markers when nothing is bound, before it is
    /// run ([`params::none_bound`]); `Prepare` and `ExecuteSchema` take
    /// it, since values may be bound after them.
    fn none_bound(&self) -> Result<()> {
        match (&self.sql, &self.params) {
            (Some(sql), None) => params::none_bound(sql),
            _ => Ok(()),
        }
    }

    /// The one read of the statement (of its first bound row, if several).
    fn read(&self) -> Result<Read> {
        Ok(self.reads()?.swap_remove(0))
    }

    /// The snapshot this statement's partitions are read at, if it holds one.
    pub fn held_snapshot(&self) -> Option<&HeldSnapshot> {
        self.held.as_ref()
    }
}

impl Optionable for FbStatement {
    type Option = OptionStatement;

    fn set_option(&mut self, key: OptionStatement, value: OptionValue) -> Result<()> {
        match key.as_ref() {
            option::SPLIT_BY => {
                let table = text(&key, value)?;
                self.split_by = (!table.is_empty()).then_some(table);
                if let Some(sql) = &self.sql {
                    Read::new(sql, self.split_by.as_deref())?;
                }
            }
            option::PARTITIONS => self.partitions = Some(positive(&key, value)?),
            other => return Err(unknown_option(other)),
        }
        Ok(())
    }

    fn get_option_string(&self, key: OptionStatement) -> Result<String> {
        match key.as_ref() {
            option::SPLIT_BY => self.split_by.clone(),
            option::PARTITIONS => self.partitions.map(|n| n.to_string()),
            _ => None,
        }
        .ok_or_else(|| not_set(key.as_ref()))
    }

    fn get_option_bytes(&self, key: OptionStatement) -> Result<Vec<u8>> {
        Err(not_set(key.as_ref()))
    }

    fn get_option_int(&self, key: OptionStatement) -> Result<i64> {
        match (key.as_ref(), self.partitions) {
            (option::PARTITIONS, Some(n)) => Ok(n as i64),
            _ => Err(not_set(key.as_ref())),
        }
    }

    fn get_option_double(&self, key: OptionStatement) -> Result<f64> {
        Err(not_set(key.as_ref()))
    }
}

impl adbc_core::Statement for FbStatement {
    fn bind(&mut self, batch: RecordBatch) -> Result<()> {
        self.params = Some(batch);
        Ok(())
    }

    fn bind_stream(&mut self, reader: Box<dyn RecordBatchReader + Send>) -> Result<()> {
        let schema = reader.schema();
        let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
        self.params = Some(arrow_select::concat::concat_batches(&schema, &batches)?);
        Ok(())
    }

    fn execute(&mut self) -> Result<Box<dyn RecordBatchReader + Send + 'static>> {
        // Executing invalidates earlier results, partitions included.
        self.held = None;
        self.none_bound()?;
        let reads = self.reads()?;
        if let [read] = reads.as_slice() {
            let (reader, cancel) = read.execute(&self.settings)?;
            self.operations.add(&cancel);
            *self.running.lock().unwrap() = Some(cancel);
            return Ok(reader);
        }
        // Several rows are read before execute returns: their cancel flag
        // is given out first, so a cancel from another thread stops them.
        let cancel = self.operations.start();
        *self.running.lock().unwrap() = Some(cancel.clone());
        read::execute_rows(&reads, &self.settings, cancel)
    }

    fn get_cancel_handle(&self) -> Box<dyn adbc_core::CancelHandle> {
        Box::new(RunCanceller(self.running.clone()))
    }

    fn execute_update(&mut self) -> Result<Option<i64>> {
        // No query is a wrong order of calls, whatever the driver can do.
        self.read()?;
        Err(Error::with_message_and_status(
            "ExecuteUpdate: not implemented by the fbunload driver, which is read-only: it \
             runs SELECTs with ExecuteQuery and a result stream",
            Status::NotImplemented,
        ))
    }

    fn execute_schema(&mut self) -> Result<Schema> {
        self.read()?.schema(&self.settings)
    }

    fn execute_partitions(&mut self) -> Result<PartitionedResult> {
        self.none_bound()?;
        let mut reads = self.reads()?;
        if reads.len() > 1 {
            return Err(invalid(format!(
                "ExecutePartitions reads one query: bind one row of parameters ({} given)",
                reads.len()
            )));
        }
        let read = reads.swap_remove(0);
        // The snapshot of an earlier run ends here: its partitions fail.
        self.held = None;
        let (held, result) = partition::execute(&self.settings, &read, self.partitions)?;
        self.held = Some(held);
        Ok(result)
    }

    fn get_parameter_schema(&self) -> Result<Schema> {
        Err(not_implemented("bound parameters"))
    }

    fn prepare(&mut self) -> Result<()> {
        self.reads().map(drop)
    }

    fn set_sql_query(&mut self, query: impl AsRef<str>) -> Result<()> {
        Read::new(query.as_ref(), self.split_by.as_deref())?;
        // Values bound for another query do not carry over.
        self.params = None;
        self.sql = Some(query.as_ref().to_string());
        Ok(())
    }

    fn set_substrait_plan(&mut self, _plan: impl AsRef<[u8]>) -> Result<()> {
        Err(not_implemented("Substrait plans"))
    }
}

/// A record batch as the reader ADBC's metadata calls return.
fn one_batch(batch: RecordBatch) -> Box<dyn RecordBatchReader + Send + 'static> {
    let schema = batch.schema();
    Box::new(arrow_array::RecordBatchIterator::new([Ok(batch)], schema))
}

/// The facade's error as an ADBC error of the matching status, in one
/// line, in the driver's words (its option names, not the command line's).
pub(crate) fn from_run(err: fbunload::Error) -> Error {
    use fbunload::{CatalogError, Error as Run};
    let status = match &err {
        Run::Usage(_) => Status::InvalidArguments,
        Run::Catalog(CatalogError::NoTables(_)) => Status::NotFound,
        Run::SnapshotClosed { .. } => Status::InvalidState,
        Run::Interrupted => return cancel::cancelled(),
        _ => Status::IO,
    };
    Error::with_message_and_status(in_driver_words(&err.to_string()), status)
}

/// A message of the facade, which speaks of the command line's flags, as
/// the driver's user knows the same things.
pub(crate) fn in_driver_words(message: &str) -> String {
    message
        .replace(
            &format!("--query {}: Firebird refuses it", read::QUERY_NAME),
            "Firebird refuses the query",
        )
        .replace(&format!("--query {}: ", read::QUERY_NAME), "")
        .replace(
            "only a SELECT can be unloaded",
            "the fbunload driver is read-only: only a SELECT can be run",
        )
        .replace("--split-by", option::SPLIT_BY)
        .replace(['\n', '\r'], " ")
}

fn invalid(message: String) -> Error {
    Error::with_message_and_status(message, Status::InvalidArguments)
}

fn not_implemented(what: &str) -> Error {
    Error::with_message_and_status(
        format!("{what}: not implemented by the fbunload driver"),
        Status::NotImplemented,
    )
}

fn unknown_option(key: &str) -> Error {
    Error::with_message_and_status(
        format!("option {key}: not an option of the fbunload driver"),
        Status::NotImplemented,
    )
}

fn not_set(key: &str) -> Error {
    Error::with_message_and_status(format!("option {key}: not set"), Status::NotFound)
}

fn text(key: &impl AsRef<str>, value: OptionValue) -> Result<String> {
    match value {
        OptionValue::String(s) => Ok(s),
        _ => Err(invalid(format!("option {}: give a string", key.as_ref()))),
    }
}

fn positive(key: &impl AsRef<str>, value: OptionValue) -> Result<usize> {
    let number = match &value {
        OptionValue::Int(n) => usize::try_from(*n).ok(),
        OptionValue::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    number.filter(|n| *n >= 1).ok_or_else(|| {
        invalid(format!(
            "option {}: give a number, at least 1",
            key.as_ref()
        ))
    })
}

fn flag(key: &impl AsRef<str>, value: OptionValue) -> Result<bool> {
    match &value {
        OptionValue::String(s) if s == "true" => Ok(true),
        OptionValue::String(s) if s == "false" => Ok(false),
        OptionValue::Int(n) => Ok(*n != 0),
        _ => Err(invalid(format!(
            "option {}: give true or false",
            key.as_ref()
        ))),
    }
}
