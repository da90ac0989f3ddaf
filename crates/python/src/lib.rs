//! `fbunload._fbunload`: the Python extension over the `fbunload` crate.
//!
//! Kept small: the Python package (`python/fbunload`) holds the public API
//! and its documentation; this module opens runs, hands record batches to
//! pyarrow through the Arrow C data and stream interfaces (no copy), and
//! turns errors into the `fbunload.Error` hierarchy. Every wait happens
//! with the GIL released, and looks at Python's signals every
//! [`SIGNAL_CHECK`], so Ctrl-C stops a run within moments.
//!
//! The same library is the ADBC driver of `fbunload.adbc`: it exports
//! `fbunload_adbc`'s entry points (`AdbcDriverFbunloadInit`,
//! `AdbcDriverInit`), so the ADBC driver manager loads this file (already
//! loaded by Python; `dlopen` hands back the same copy) instead of a
//! second library the wheel would have to carry. The driver needs no
//! Python: it runs with or without the GIL, on the driver manager's calls.

mod names;
mod words;

/// Links the driver's entry points into this library (module docs): an
/// rlib's exported functions reach a cdylib only if something uses them.
#[used]
static ADBC_ENTRY_POINTS: [unsafe extern "C" fn(
    std::os::raw::c_int,
    *mut std::os::raw::c_void,
    *mut fbunload_adbc::FFI_AdbcError,
) -> u8; 2] = [
    fbunload_adbc::AdbcDriverFbunloadInit,
    fbunload_adbc::AdbcDriverInit,
];

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_pyarrow::{IntoPyArrow, ToPyArrow};
use arrow_schema::{ArrowError, SchemaRef};
use fbunload::format::columnar::ParquetCompression;
use fbunload::format::csv::BinaryEncoding;
use fbunload::format::Compression;
use fbunload::{
    Error as RunError, FormatName, OutputOptions, PartLimits, Plan, PlanOptions, Processes,
    QuerySpec, RecordBatches, RunOptions, SnapshotTicket, Summary, TypeOptions, Unit, Unload,
};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

create_exception!(fbunload, Error, PyException, "Every error of fbunload.");
create_exception!(
    fbunload,
    UsageError,
    Error,
    "Arguments that do not fit together or this database."
);
create_exception!(
    fbunload,
    DatabaseError,
    Error,
    "Attaching, reading the catalog or reading rows failed."
);
create_exception!(fbunload, OutputError, Error, "Writing output failed.");
create_exception!(
    fbunload,
    VerifyError,
    Error,
    "verify=True found a table whose rows differ from COUNT(*)."
);
create_exception!(fbunload, Interrupted, Error, "The run was cancelled.");
create_exception!(
    fbunload,
    SnapshotClosed,
    Error,
    "A read was to join a snapshot that is closed (fbunload.Snapshot.close)."
);

/// How often a wait looks at Python's signals (Ctrl-C).
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// The run's error as the exception of its kind, with the CLI's message
/// in Python's words.
fn to_py(err: RunError) -> PyErr {
    let message = words::in_python_words(&err.to_string());
    // The kinds the command line's `--progress json` names too.
    match err.kind() {
        "usage" => UsageError::new_err(message),
        "output" => OutputError::new_err(message),
        "verify" => VerifyError::new_err(message),
        "interrupted" => Interrupted::new_err(message),
        "snapshot_closed" => SnapshotClosed::new_err(message),
        _ => DatabaseError::new_err(message),
    }
}

/// What the entry points take in common: where, who, what, how. Each
/// names the keywords it has; the rest are the facade's defaults.
struct Common {
    database: String,
    tables: Option<String>,
    exclude: Option<String>,
    user: Option<String>,
    password: Option<String>,
    role: Option<String>,
    charset: String,
    parallel: Option<usize>,
    client_lib: Option<PathBuf>,
    decimal256: bool,
    verify: bool,
    memory_mb: usize,
    processes: Processes,
}

impl Default for Common {
    fn default() -> Self {
        Common {
            database: String::new(),
            tables: None,
            exclude: None,
            user: None,
            password: None,
            role: None,
            charset: "UTF8".into(),
            parallel: None,
            client_lib: None,
            decimal256: false,
            verify: false,
            memory_mb: fbunload::DEFAULT_MEMORY_MB,
            processes: Processes::default(),
        }
    }
}

impl Common {
    fn unload(self) -> PyResult<Unload> {
        let Common {
            database,
            tables,
            exclude,
            user,
            password,
            role,
            charset,
            parallel,
            client_lib,
            decimal256,
            verify,
            memory_mb,
            processes,
        } = self;
        let none_text = fbunload::none_text_decoder(&charset)
            .map_err(|e| UsageError::new_err(format!("charset {e}")))?;
        if parallel == Some(0) {
            return Err(UsageError::new_err("parallel must be at least 1"));
        }
        let defaults = RunOptions::default();
        let mut unload = Unload::new(database)
            .options(RunOptions {
                parallel: parallel.unwrap_or(defaults.parallel),
                plan: PlanOptions::default(),
                types: TypeOptions {
                    none_text,
                    decimal256,
                },
                verify,
                ..defaults
            })
            .memory_budget(memory_mb.saturating_mul(1 << 20))
            .processes(processes);
        unload = unload.login_or_environment(user, password);
        if let Some(role) = role {
            unload = unload.role(role);
        }
        if let Some(tables) = tables {
            unload = unload.tables(tables);
        }
        if let Some(exclude) = exclude {
            unload = unload.exclude(exclude);
        }
        if let Some(path) = client_lib {
            unload = unload.client_library(path);
        }
        Ok(unload)
    }
}

/// `processes=`: `"auto"` (or `None`), or a number, as the command
/// line's `--processes` (see `fbunload::Processes`).
fn processes_arg(value: Option<Bound<'_, PyAny>>) -> PyResult<Processes> {
    match value {
        None => Ok(Processes::Auto),
        Some(value) => value
            .str()?
            .to_string()
            .parse()
            .map_err(UsageError::new_err),
    }
}

/// Pushes a column list (of the one table read, names exactly as written)
/// and a row condition (`[TABLE:]condition`, as `--where` takes it) down
/// into the queries.
fn choose(mut unload: Unload, columns: Option<Vec<String>>, condition: Option<String>) -> Unload {
    if let Some(columns) = columns {
        let quoted: Vec<String> = columns
            .iter()
            .map(|c| fbunload::quote_identifier(c))
            .collect();
        unload = unload.columns(&quoted.join(","));
    }
    if let Some(condition) = condition {
        unload = unload.rows_where(&condition);
    }
    unload
}

/// A query as Python passes it: its name, its SQL and the table whose
/// DB_KEY ranges split it (None: read as one unit).
type QueryArg = (String, String, Option<String>);

/// Adds the views `views` matches and the queries to what `unload` reads.
fn with_reads(mut unload: Unload, views: Option<String>, queries: Vec<QueryArg>) -> Unload {
    if let Some(pattern) = views {
        unload = unload.views(pattern);
    }
    for (name, sql, split_by) in queries {
        unload = unload.query_spec(QuerySpec {
            name,
            sql,
            split_by,
        });
    }
    unload
}

/// Positions of `columns` in `schema`, or a UsageError naming the table,
/// the unknown column and the columns there are.
fn projection(
    table: &str,
    schema: &SchemaRef,
    columns: Option<&[String]>,
) -> PyResult<Option<Vec<usize>>> {
    let Some(columns) = columns else {
        return Ok(None);
    };
    columns
        .iter()
        .map(|c| {
            schema.index_of(c).map_err(|_| {
                let there: Vec<_> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                UsageError::new_err(format!(
                    "table {}: no column {c:?}; its columns are {}",
                    fbunload::printable(table),
                    there.join(", ")
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}

fn project(batch: RecordBatch, columns: &Option<Vec<usize>>) -> Result<RecordBatch, ArrowError> {
    match columns {
        Some(indices) => batch.project(indices),
        None => Ok(batch),
    }
}

/// A run's record batches, for the Python side to take one by one.
#[pyclass(module = "fbunload._fbunload")]
struct Stream {
    batches: Mutex<Option<RecordBatches>>,
    names: Vec<String>,
    schemas: Vec<SchemaRef>,
    /// Per table, the columns kept (None: all).
    columns: Vec<Option<Vec<usize>>>,
    summary: Mutex<Option<Summary>>,
}

#[pymethods]
impl Stream {
    /// The tables of the run, in the plan's order.
    fn table_names(&self) -> Vec<String> {
        self.names.clone()
    }

    /// The pyarrow schema of table `table` (after column selection).
    fn schema<'py>(&self, py: Python<'py>, table: usize) -> PyResult<Bound<'py, PyAny>> {
        let schema = match &self.columns[table] {
            Some(indices) => Arc::new(self.schemas[table].project(indices).map_err(arrow_err)?),
            None => self.schemas[table].clone(),
        };
        schema.to_pyarrow(py)
    }

    /// The next `(table, pyarrow.RecordBatch)`, or None at the end.
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Option<(usize, Bound<'py, PyAny>)>> {
        let mut slot = self.batches.lock().unwrap();
        let Some(mut batches) = slot.take() else {
            return Ok(None);
        };
        loop {
            let (back, item) = py.detach(move || {
                let item = batches.next_within(SIGNAL_CHECK);
                (batches, item)
            });
            batches = back;
            match item {
                None => {
                    if let Err(e) = py.check_signals() {
                        stop_within_grace(py, batches);
                        return Err(e);
                    }
                }
                Some(None) => {
                    *self.summary.lock().unwrap() = batches.finish().ok();
                    return Ok(None);
                }
                Some(Some(Err(e))) => return Err(to_py(e)),
                Some(Some(Ok(item))) => {
                    let batch =
                        project(item.batch, &self.columns[item.table]).map_err(arrow_err)?;
                    *slot = Some(batches);
                    return Ok(Some((item.table, batch.to_pyarrow(py)?)));
                }
            }
        }
    }

    /// Table `table`'s batches as a pyarrow.RecordBatchReader, through the
    /// Arrow C stream interface; the run must read that table only.
    fn take_reader<'py>(&self, py: Python<'py>, table: usize) -> PyResult<Bound<'py, PyAny>> {
        let batches = self
            .batches
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| UsageError::new_err("this stream was already read"))?;
        let schema = match &self.columns[table] {
            Some(indices) => Arc::new(self.schemas[table].project(indices).map_err(arrow_err)?),
            None => self.schemas[table].clone(),
        };
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(TableReader {
            batches,
            table,
            schema,
            columns: self.columns[table].clone(),
        });
        reader.into_pyarrow(py)
    }

    /// Stops the run; what is read so far stays valid.
    fn cancel(&self, py: Python<'_>) {
        if let Some(batches) = self.batches.lock().unwrap().take() {
            stop_within_grace(py, batches);
        }
    }

    /// Rows per table and the snapshot, once every batch was taken.
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let summary = self.summary.lock().unwrap();
        summary.as_ref().map(|s| summary_dict(py, s)).transpose()
    }
}

/// Stops a run and waits for it with the GIL released (so that other
/// signals are seen), at most the command line's grace: not every wait
/// ends when cancelled (see `fbunload_cli::STOP_GRACE`), and such a run
/// is left to end on its own.
fn stop_within_grace(py: Python<'_>, batches: RecordBatches) {
    batches.cancel();
    let stopping = std::thread::spawn(move || drop(batches));
    let deadline = std::time::Instant::now() + fbunload_cli::STOP_GRACE;
    py.detach(|| {
        while !stopping.is_finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    });
}

fn arrow_err(e: ArrowError) -> PyErr {
    Error::new_err(e.to_string())
}

/// One table of a run, as an Arrow RecordBatchReader for pyarrow.
struct TableReader {
    batches: RecordBatches,
    table: usize,
    schema: SchemaRef,
    columns: Option<Vec<usize>>,
}

impl Iterator for TableReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.batches.next_within(SIGNAL_CHECK) {
                None => {
                    // pyarrow reads with the GIL released: take it to look
                    // at signals, and leave Ctrl-C pending for Python.
                    let interrupted = Python::attach(|py| py.check_signals().is_err());
                    if interrupted {
                        self.batches.cancel();
                        // SAFETY: callable from any thread, with or without the GIL.
                        unsafe { pyo3::ffi::PyErr_SetInterrupt() };
                        return Some(Err(ArrowError::ExternalError(
                            "interrupted (Ctrl-C)".into(),
                        )));
                    }
                }
                Some(None) => return None,
                Some(Some(Err(e))) => {
                    let message = words::in_python_words(&e.to_string());
                    return Some(Err(ArrowError::ExternalError(message.into())));
                }
                Some(Some(Ok(item))) if item.table == self.table => {
                    return Some(project(item.batch, &self.columns));
                }
                Some(Some(Ok(_))) => {}
            }
        }
    }
}

impl RecordBatchReader for TableReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Starts a run that reads the tables `tables` selects (a SIMILAR TO
/// pattern) and returns its stream of batches.
#[pyfunction]
#[pyo3(signature = (database, *, tables=None, exclude=None, user=None, password=None, role=None,
    charset="UTF8", parallel=None, columns=None, client_lib=None, decimal256=false,
    verify=false, memory_mb=fbunload::DEFAULT_MEMORY_MB, select_columns=None, condition=None, views=None,
    queries=Vec::new(), processes=None))]
#[allow(clippy::too_many_arguments)]
fn open(
    py: Python<'_>,
    database: String,
    tables: Option<String>,
    exclude: Option<String>,
    user: Option<String>,
    password: Option<String>,
    role: Option<String>,
    charset: &str,
    parallel: Option<usize>,
    columns: Option<Vec<String>>,
    client_lib: Option<PathBuf>,
    decimal256: bool,
    verify: bool,
    memory_mb: usize,
    select_columns: Option<Vec<String>>,
    condition: Option<String>,
    views: Option<String>,
    queries: Vec<QueryArg>,
    processes: Option<Bound<'_, PyAny>>,
) -> PyResult<Stream> {
    let unload = Common {
        database,
        tables,
        exclude,
        user,
        password,
        role,
        charset: charset.into(),
        parallel,
        client_lib,
        decimal256,
        verify,
        memory_mb,
        processes: processes_arg(processes)?,
    }
    .unload()?;
    let unload = with_reads(choose(unload, select_columns, condition), views, queries);
    let batches = py.detach(move || unload.record_batches()).map_err(to_py)?;
    let plan = batches.plan();
    let names: Vec<String> = plan.tables.iter().map(|t| t.name.clone()).collect();
    let schemas: Vec<SchemaRef> = (0..names.len()).map(|i| batches.schema(i)).collect();
    let columns = names
        .iter()
        .zip(&schemas)
        .map(|(name, schema)| projection(name, schema, columns.as_deref()))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Stream {
        batches: Mutex::new(Some(batches)),
        names,
        schemas,
        columns,
        summary: Mutex::new(None),
    })
}

fn summary_dict<'py>(py: Python<'py>, summary: &Summary) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let tables = PyList::empty(py);
    for t in &summary.tables {
        let table = PyDict::new(py);
        table.set_item("name", &t.name)?;
        table.set_item("rows", t.rows)?;
        table.set_item("bytes", t.bytes)?;
        table.set_item("units", t.units)?;
        table.set_item(
            "path",
            t.path.as_ref().map(|p| p.to_string_lossy().into_owned()),
        )?;
        tables.append(table)?;
    }
    dict.set_item("tables", tables)?;
    dict.set_item("rows", summary.rows())?;
    dict.set_item("bytes", summary.bytes())?;
    dict.set_item("seconds", summary.elapsed.as_secs_f64())?;
    dict.set_item("workers", summary.start.workers)?;
    dict.set_item("snapshot_number", summary.start.snapshot_number)?;
    dict.set_item("verified", summary.verified)?;
    dict.set_item("retries", summary.retries)?;
    Ok(dict)
}

/// The output options as Python passes them, as the library checks them
/// for every front end. `compression` is Python's one word for the
/// command line's two: a whole csv, tsv or jsonl file's (`--compress`), a
/// Parquet file's columns (`--compression`).
#[allow(clippy::too_many_arguments)]
fn output_options(
    format: &str,
    compression: Option<&str>,
    header: bool,
    delimiter: Option<String>,
    null: Option<String>,
    binary: Option<&str>,
    crlf: bool,
    split: bool,
    row_group_rows: Option<usize>,
    decimal256: bool,
) -> PyResult<OutputOptions> {
    let bad = |what: String| UsageError::new_err(words::in_python_words(&what));
    // The name the package used before `split=True`.
    let (name, split) = match format {
        "parquet-split" => ("parquet", true),
        name => (name, split),
    };
    let format = FormatName::parse(name).map_err(bad)?;
    let mut options = OutputOptions {
        format,
        // `header=True` is the default, so only `False` is an option given.
        header: (!header).then_some(false),
        delimiter,
        null,
        crlf,
        binary: match binary {
            None => None,
            Some("hex") => Some(BinaryEncoding::Hex),
            Some("base64") => Some(BinaryEncoding::Base64),
            Some(other) => return Err(bad(format!("--binary {other:?}: use hex or base64"))),
        },
        split,
        row_group_rows,
        decimal256,
        ..OutputOptions::default()
    };
    match (format, compression) {
        (_, None) => {}
        (FormatName::Parquet, Some(c)) => {
            options.compression = Some(match c {
                "zstd" => ParquetCompression::Zstd,
                "snappy" => ParquetCompression::Snappy,
                "gzip" => ParquetCompression::Gzip,
                "none" => ParquetCompression::None,
                other => {
                    return Err(bad(format!(
                        "compression {other:?}: parquet takes zstd, snappy, gzip or none"
                    )))
                }
            })
        }
        (FormatName::Arrow, Some(c)) => {
            return Err(bad(format!(
                "compression {c:?}: arrow files are written uncompressed"
            )))
        }
        (_, Some("none")) => {}
        (_, Some(c)) => {
            options.compress = Some(match c {
                "gzip" => Compression::Gzip,
                "zstd" => Compression::Zstd,
                other => {
                    return Err(bad(format!(
                        "compression {other:?}: csv, tsv and jsonl take gzip, zstd or none"
                    )))
                }
            })
        }
    }
    Ok(options)
}

/// A load's notes (a wait on locks, what `pg_drop_others` drops) on
/// standard error, as the command line prints them; nothing else.
struct SaidOnStderr;

impl fbunload::Progress for SaidOnStderr {
    fn warning(&self, message: &str) {
        eprintln!("fbunload: warning: {message}");
    }
}

/// What the command line does: every selected table to a file in `output`.
#[pyfunction]
#[pyo3(signature = (database, output, *, format="csv", compression=None, header=true,
    delimiter=None, null=None, binary=None, crlf=false, split=false, row_group_rows=None,
    tables=None, exclude=None, columns=Vec::new(), rows_where=Vec::new(), user=None,
    password=None, role=None, charset="UTF8", parallel=None, unit_pages=None, client_lib=None,
    decimal256=false, verify=false, memory_mb=fbunload::DEFAULT_MEMORY_MB, overwrite=false, views=None,
    queries=Vec::new(), max_rows=None, max_bytes=None, schema=true, allow_inconsistent=false,
    stall_timeout=None, wire_crypt=None, wire_compression=false, since=None, keep_keys=false,
    resumable=false, resume=false, processes=None, pg_schema=None, pg_lock_wait=None,
    pg_drop_others=false, pg_grants=false, journal=None, pg_verify_only=false,
    pg_fillfactor=None))]
#[allow(clippy::too_many_arguments)]
fn unload<'py>(
    py: Python<'py>,
    database: String,
    output: PathBuf,
    format: &str,
    compression: Option<&str>,
    header: bool,
    delimiter: Option<String>,
    null: Option<String>,
    binary: Option<&str>,
    crlf: bool,
    split: bool,
    row_group_rows: Option<usize>,
    tables: Option<String>,
    exclude: Option<String>,
    columns: Vec<String>,
    rows_where: Vec<String>,
    user: Option<String>,
    password: Option<String>,
    role: Option<String>,
    charset: &str,
    parallel: Option<usize>,
    unit_pages: Option<u64>,
    client_lib: Option<PathBuf>,
    decimal256: bool,
    verify: bool,
    memory_mb: usize,
    overwrite: bool,
    views: Option<String>,
    queries: Vec<QueryArg>,
    max_rows: Option<u64>,
    max_bytes: Option<u64>,
    schema: bool,
    allow_inconsistent: bool,
    stall_timeout: Option<f64>,
    wire_crypt: Option<&str>,
    wire_compression: bool,
    since: Option<PathBuf>,
    keep_keys: bool,
    resumable: bool,
    resume: bool,
    processes: Option<Bound<'py, PyAny>>,
    pg_schema: Option<String>,
    pg_lock_wait: Option<f64>,
    pg_drop_others: bool,
    pg_grants: bool,
    journal: Option<PathBuf>,
    pg_verify_only: bool,
    pg_fillfactor: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    // `output` may be a PostgreSQL database rather than a directory.
    let pg_uri = output
        .to_str()
        .filter(|o| fbunload::postgres::is_postgres_uri(o))
        .map(str::to_string);
    if pg_uri.is_none() {
        let given = [
            ("pg_schema", pg_schema.is_some()),
            ("pg_lock_wait", pg_lock_wait.is_some()),
            ("pg_drop_others", pg_drop_others),
            ("pg_grants", pg_grants),
            ("pg_fillfactor", pg_fillfactor.is_some()),
            ("pg_verify_only", pg_verify_only),
        ];
        if let Some((keyword, _)) = given.iter().find(|(_, given)| *given) {
            return Err(UsageError::new_err(format!(
                "{keyword} is for a PostgreSQL output: 'postgresql://USER@HOST:PORT/DBNAME'"
            )));
        }
    }
    let pg_lock_wait = match pg_lock_wait {
        Some(s) if !(s.is_finite() && s >= 0.0) => {
            return Err(UsageError::new_err("pg_lock_wait: seconds, 0 or more"));
        }
        Some(s) => Some(std::time::Duration::from_secs_f64(s)),
        None => None,
    };
    if max_rows == Some(0) || max_bytes == Some(0) {
        return Err(UsageError::new_err(
            "max_rows and max_bytes must be at least 1",
        ));
    }
    if unit_pages == Some(0) {
        return Err(UsageError::new_err("unit_pages must be at least 1"));
    }
    let output_options = output_options(
        format,
        compression,
        header,
        delimiter,
        null,
        binary,
        crlf,
        split,
        row_group_rows,
        decimal256,
    )?;
    if pg_uri.is_some() {
        fbunload::postgres::refuse_file_options(&output_options)
            .map_err(|e| UsageError::new_err(words::in_python_words(&e)))?;
    }
    let format = output_options
        .to_format()
        .map_err(|e| UsageError::new_err(words::in_python_words(&e)))?;
    // The command line's bound, so a huge value cannot overflow the watch.
    let stall_timeout = stall_timeout
        .map(fbunload::stall_timeout_from_secs_f64)
        .transpose()
        .map_err(|e| UsageError::new_err(format!("stall_timeout: {e}")))?;
    let wire = fbunload::WireOptions {
        compression: wire_compression,
        crypt: match wire_crypt {
            None => None,
            Some("disabled") => Some(fbunload::WireCrypt::Disabled),
            Some("enabled") => Some(fbunload::WireCrypt::Enabled),
            Some("required") => Some(fbunload::WireCrypt::Required),
            Some(other) => {
                return Err(UsageError::new_err(format!(
                    "wire_crypt={other:?}: use 'disabled', 'enabled' or 'required'"
                )))
            }
        },
    };
    let mut unload = Common {
        database,
        tables,
        exclude,
        user,
        password,
        role,
        charset: charset.into(),
        parallel,
        client_lib,
        decimal256,
        verify,
        memory_mb,
        processes: processes_arg(processes)?,
    }
    .unload()?;
    for spec in &columns {
        unload = unload.columns(spec);
    }
    for condition in &rows_where {
        unload = unload.rows_where(condition);
    }
    let defaults = unload.run_options().clone();
    let options = RunOptions {
        schema,
        allow_inconsistent,
        stall_timeout: stall_timeout.unwrap_or(defaults.stall_timeout),
        plan: PlanOptions {
            unit_pages,
            ..defaults.plan
        },
        ..defaults
    };
    let mut unload = with_reads(unload, views, queries);
    if let Some(since) = since {
        unload = unload.since(since);
    }
    if let Some(journal) = journal {
        unload = unload.journal(journal);
    }
    if let Some(wait) = pg_lock_wait {
        unload = unload.pg_lock_wait(wait);
    }
    if let Some(percent) = pg_fillfactor {
        let percent = u8::try_from(percent)
            .ok()
            .filter(|p| (10..=100).contains(p))
            .ok_or_else(|| {
                UsageError::new_err(format!(
                    "pg_fillfactor={percent}: PostgreSQL takes 10 to 100 (percent of a page)"
                ))
            })?;
        unload = unload.pg_fillfactor(percent);
    }
    let unload = unload
        .keep_keys(keep_keys)
        .resumable(resumable)
        .resume(resume)
        .pg_drop_others(pg_drop_others)
        .pg_grants(pg_grants)
        .options(options)
        .wire(wire)
        .overwrite(overwrite)
        .part_limits(PartLimits {
            rows: max_rows,
            bytes: max_bytes,
        });
    let cancel: Arc<AtomicBool> = unload.run_options().cancel.clone();
    let run = std::thread::spawn(move || match pg_uri {
        Some(uri) if pg_verify_only => unload
            .verify_postgres(&uri, pg_schema.as_deref(), &SaidOnStderr)
            .map(|summary| (summary, None)),
        Some(uri) => unload
            .to_postgres(&uri, pg_schema.as_deref(), &SaidOnStderr)
            .map(|loaded| {
                (
                    loaded.summary,
                    Some((
                        loaded.target,
                        loaded.schema,
                        loaded.untranslated,
                        loaded.catalog,
                    )),
                )
            }),
        None => unload
            .to_directory(output, format, &fbunload::Silent)
            .map(|summary| (summary, None)),
    });
    loop {
        py.detach(|| std::thread::sleep(SIGNAL_CHECK));
        if run.is_finished() {
            break;
        }
        if let Err(e) = py.check_signals() {
            cancel.store(true, Ordering::SeqCst);
            // Not every wait ends when cancelled (a prepare queued behind
            // another user's DROP; see fbunload::longest_prepare): after the
            // command line's grace the run is left to end on its own.
            let deadline = std::time::Instant::now() + fbunload_cli::STOP_GRACE;
            py.detach(|| {
                while !run.is_finished() && std::time::Instant::now() < deadline {
                    std::thread::sleep(SIGNAL_CHECK);
                }
            });
            return Err(e);
        }
    }
    let (summary, postgres) = run
        .join()
        .map_err(|_| Error::new_err("the run panicked"))?
        .map_err(to_py)?;
    let dict = summary_dict(py, &summary)?;
    if let Some((target, schema, untranslated, catalog)) = postgres {
        // What a load into PostgreSQL adds: where, and what did not translate.
        dict.set_item("target", target)?;
        dict.set_item("pg_schema", schema)?;
        let report = PyList::empty(py);
        for u in untranslated {
            let item = PyDict::new(py);
            item.set_item("kind", u.kind)?;
            item.set_item("table", u.table)?;
            item.set_item("name", u.name)?;
            item.set_item("firebird_source", u.source)?;
            item.set_item("why", u.why)?;
            report.append(item)?;
        }
        dict.set_item("untranslated", report)?;
        // Every object of Firebird's catalog, by kind: made or reported.
        let kinds = PyDict::new(py);
        for t in catalog {
            let counts = PyDict::new(py);
            counts.set_item("made", t.created)?;
            counts.set_item("reported", t.reported)?;
            kinds.set_item(t.kind, counts)?;
        }
        dict.set_item("catalog", kinds)?;
    }
    Ok(dict)
}

/// A change set applied to the run it was taken since (`fbunload
/// apply`): each table's schema and batches, by name, in table order.
/// A table of `apply`'s result: its name, its schema and its batches.
type AppliedTable<'py> = (String, Bound<'py, PyAny>, Vec<Bound<'py, PyAny>>);

#[pyfunction]
fn apply<'py>(py: Python<'py>, old: PathBuf, changes: PathBuf) -> PyResult<Vec<AppliedTable<'py>>> {
    let tables = py
        .detach(|| fbunload::apply::apply_tables(&old, &changes))
        .map_err(to_py)?;
    tables
        .into_iter()
        .map(|table| {
            let batches = table
                .batches
                .iter()
                .map(|b| b.to_pyarrow(py))
                .collect::<PyResult<Vec<_>>>()?;
            Ok((table.name, table.schema.to_pyarrow(py)?, batches))
        })
        .collect()
}

/// `fbunload follow` into PostgreSQL or as change sets into a directory,
/// until idle (`until_idle`) or Ctrl-C (a clean stop, as SIGINT is for
/// the command line), returning what it applied; or, with `output` `-`,
/// the change stream from the journal's first segment or after `from_`
/// (an event's `resume`), as [`FollowEvents`]. One list of keywords for
/// both: python/fbunload's `follow` says which go with which output.
#[pyfunction]
#[pyo3(signature = (database, *, journal, output, journal_live=None, pg_schema=None,
    until_idle=None, memory_mb=fbunload::DEFAULT_MEMORY_MB, from_=None, since=None, every=None,
    user=None, password=None, client_lib=None))]
#[allow(clippy::too_many_arguments)]
fn follow<'py>(
    py: Python<'py>,
    database: String,
    journal: PathBuf,
    output: String,
    journal_live: Option<PathBuf>,
    pg_schema: Option<String>,
    until_idle: Option<f64>,
    memory_mb: usize,
    from_: Option<String>,
    since: Option<PathBuf>,
    every: Option<f64>,
    user: Option<String>,
    password: Option<String>,
    client_lib: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let seconds = |keyword: &str, value: Option<f64>| match value {
        Some(s) if !(s.is_finite() && s > 0.0) => {
            Err(UsageError::new_err(format!("{keyword}: seconds, above 0")))
        }
        Some(s) => Ok(Some(Duration::from_secs_f64(s))),
        None => Ok(None),
    };
    let options = fbunload::follow::FollowOptions {
        database,
        user,
        password,
        client_library: client_lib,
        archive: journal,
        live: journal_live,
        target: output,
        schema: pg_schema,
        until_idle: seconds("until_idle", until_idle)?,
        memory_budget: memory_mb.saturating_mul(1 << 20),
        from: from_,
        since,
        every: seconds("every", every)?,
    };
    if options.target == "-" {
        return Ok(Bound::new(py, follow_events(options))?.into_any());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let run = {
        let stop = stop.clone();
        std::thread::spawn(move || fbunload::follow::follow(&options, &stop, &()))
    };
    let mut interrupted = None;
    while !run.is_finished() {
        py.detach(|| std::thread::sleep(SIGNAL_CHECK));
        if interrupted.is_none() {
            if let Err(e) = py.check_signals() {
                // A clean stop: the follow ends its transaction or link.
                stop.store(true, Ordering::SeqCst);
                interrupted = Some(e);
            }
        }
    }
    let summary = run
        .join()
        .map_err(|_| Error::new_err("the follow panicked"))?
        .map_err(to_py)?;
    if let Some(e) = interrupted {
        return Err(e);
    }
    let dict = PyDict::new(py);
    dict.set_item("transactions", summary.transactions)?;
    dict.set_item("changes", summary.changes)?;
    dict.set_item("position", summary.position.to_string())?;
    Ok(dict.into_any())
}

/// Lines of the change stream, handed from the follow's thread.
struct LineSender {
    line: Vec<u8>,
    lines: std::sync::mpsc::SyncSender<Vec<u8>>,
}

impl std::io::Write for LineSender {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        for part in bytes.split_inclusive(|b| *b == b'\n') {
            self.line.extend_from_slice(part);
            if part.ends_with(b"\n") {
                let line = std::mem::take(&mut self.line);
                // The iterator is gone: the follow stops.
                self.lines
                    .send(line)
                    .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Events of the change stream waiting for the iterator, at most.
const EVENTS_AHEAD: usize = 1024;

/// The change stream as an iterator of JSON lines (`fbunload follow -o -
/// --format jsonl`): the follow runs on a thread of its own, at most
/// [`EVENTS_AHEAD`] events ahead; closing the iterator stops it.
#[pyclass(module = "fbunload._fbunload")]
struct FollowEvents {
    /// Taken while the GIL is released to wait on it.
    lines: Mutex<Option<std::sync::mpsc::Receiver<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    run: Mutex<Option<std::thread::JoinHandle<Result<(), RunError>>>>,
}

#[pymethods]
impl FollowEvents {
    fn __iter__(this: PyRef<'_, Self>) -> PyRef<'_, Self> {
        this
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<String>> {
        loop {
            let Some(lines) = self.lines.lock().unwrap_or_else(|e| e.into_inner()).take() else {
                return Ok(None);
            };
            let (lines, next) = py.detach(move || {
                let next = lines.recv_timeout(SIGNAL_CHECK);
                (lines, next)
            });
            *self.lines.lock().unwrap_or_else(|e| e.into_inner()) = Some(lines);
            match next {
                Ok(line) => return Ok(Some(String::from_utf8_lossy(&line).into_owned())),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        self.stop.store(true, Ordering::SeqCst);
                        return Err(e);
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    let run = self.run.lock().unwrap_or_else(|e| e.into_inner()).take();
                    return match run.map(|r| py.detach(|| r.join())) {
                        Some(Ok(Err(e))) => Err(to_py(e)),
                        Some(Err(_)) => Err(Error::new_err("the follow panicked")),
                        _ => Ok(None),
                    };
                }
            }
        }
    }

    /// Stops the follow; the iterator ends.
    fn close(&self, py: Python<'_>) {
        self.stop.store(true, Ordering::SeqCst);
        let run = self.run.lock().unwrap_or_else(|e| e.into_inner()).take();
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(run) = run {
            py.detach(move || {
                // Dropping the receiver unblocks a follow waiting to hand
                // on an event.
                drop(lines);
                let _ = run.join();
            });
        }
    }
}

impl Drop for FollowEvents {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The change stream of `fbunload follow -o - --format jsonl` that
/// `options` ask for, read on a thread of its own.
fn follow_events(options: fbunload::follow::FollowOptions) -> FollowEvents {
    let (sender, lines) = std::sync::mpsc::sync_channel(EVENTS_AHEAD);
    let stop = Arc::new(AtomicBool::new(false));
    let run = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let events = Box::new(LineSender {
                line: Vec::new(),
                lines: sender,
            });
            match fbunload::follow::follow_into(&options, &stop, &(), events) {
                // Closed by the caller: the end it asked for.
                Err(_) if stop.load(Ordering::SeqCst) => Ok(()),
                other => other.map(|_| ()),
            }
        })
    };
    FollowEvents {
        lines: Mutex::new(Some(lines)),
        stop,
        run: Mutex::new(Some(run)),
    }
}

/// The `fbunload` command line in this process: `argv` is the program's
/// name and its arguments, the result the exit status. It runs with the
/// GIL released; Ctrl-C (or any exception a signal handler raises) stops
/// it as Ctrl-C stops the binary, removing unfinished files (status 130),
/// and a second one while it stops ends the process at once, as the
/// binary's does.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> PyResult<i32> {
    let cancel = Arc::new(AtomicBool::new(false));
    let run = {
        let cancel = cancel.clone();
        std::thread::spawn(move || fbunload_cli::run_cancellable(argv, cancel))
    };
    while !run.is_finished() {
        py.detach(|| std::thread::sleep(SIGNAL_CHECK));
        if py.check_signals().is_err() && cancel.swap(true, Ordering::SeqCst) {
            fbunload_cli::exit_without_cleanup(fbunload_cli::EXIT_INTERRUPTED);
        }
    }
    run.join()
        .map_err(|_| Error::new_err("the command line panicked"))
}

/// The cut-over (`--pg-end-sync`): ends keeping `pg_schema` of the
/// PostgreSQL database at `uri` in sync; returns how many runs it
/// recorded and how many objects were still listed as not translated.
#[pyfunction]
#[pyo3(signature = (uri, *, pg_schema=None))]
fn pg_end_sync<'py>(
    py: Python<'py>,
    uri: String,
    pg_schema: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let ended = py
        .detach(|| fbunload::postgres::end_sync(&uri, pg_schema.as_deref()))
        .map_err(to_py)?;
    let dict = PyDict::new(py);
    dict.set_item("runs", ended.runs)?;
    dict.set_item("untranslated", ended.untranslated)?;
    Ok(dict)
}

/// Serves a run as its reader process (`python -I .../fbunload/_reader.py`,
/// started by the run); returns the exit status.
#[pyfunction]
fn serve_reader(py: Python<'_>) -> i32 {
    py.detach(fbunload::serve_reader)
}

/// Creates the sample database (`fbunload sample`); returns its path.
#[pyfunction]
#[pyo3(signature = (path, *, warehouses=1, items=10_000, force=false, client_lib=None))]
fn sample(
    py: Python<'_>,
    path: PathBuf,
    warehouses: u32,
    items: u32,
    force: bool,
    client_lib: Option<PathBuf>,
) -> PyResult<PathBuf> {
    let mut unload = Unload::new(path.display().to_string());
    if let Some(lib) = client_lib {
        unload = unload.client_library(lib);
    }
    let client = unload.load_client().map_err(to_py)?;
    let options = fbunload::sample::SampleOptions {
        database: path,
        warehouses,
        items,
        force,
    };
    let report = py
        .detach(|| fbunload::sample::create_sample(&client, &options, |_| {}))
        .map_err(|e| match e {
            fbunload::sample::SampleError::Exists(path) => UsageError::new_err(format!(
                "{} already exists and is not the sample these options make (another database, \
                 or other warehouses= or items=); pass force=True to replace it",
                path.display()
            )),
            other => DatabaseError::new_err(other.to_string()),
        })?;
    Ok(report.report.database)
}

/// Attaches and plans without reading a row.
#[pyfunction]
#[pyo3(signature = (database, *, tables=None, exclude=None, user=None, password=None,
    role=None, parallel=None, client_lib=None))]
#[allow(clippy::too_many_arguments)]
fn plan<'py>(
    py: Python<'py>,
    database: String,
    tables: Option<String>,
    exclude: Option<String>,
    user: Option<String>,
    password: Option<String>,
    role: Option<String>,
    parallel: Option<usize>,
    client_lib: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let unload = Common {
        database,
        tables,
        exclude,
        user,
        password,
        role,
        parallel,
        client_lib,
        ..Common::default()
    }
    .unload()?;
    let prepared = py
        .detach(move || {
            let mut prepared = unload.prepare()?;
            prepared.estimate()?;
            Ok(prepared)
        })
        .map_err(to_py)?;
    let dict = PyDict::new(py);
    let tables = PyList::empty(py);
    for (t, schema) in prepared.plan.tables.iter().zip(prepared.schemas.iter()) {
        let table = PyDict::new(py);
        table.set_item("name", &t.name)?;
        table.set_item("pointer_pages", t.pointer_pages)?;
        table.set_item("units", t.unit_count)?;
        table.set_item("schema", schema.to_pyarrow(py)?)?;
        let estimate = match &t.estimate {
            Some(e) => {
                // As `--plan --progress json` gives it (docs/command-line.md).
                let estimate = PyDict::new(py);
                estimate.set_item("rows", e.rows)?;
                estimate.set_item("bytes", e.bytes())?;
                estimate.set_item("blob_bytes", e.blob_bytes)?;
                estimate.set_item("data_pages", e.data_pages)?;
                estimate.set_item("page_size", e.page_size)?;
                estimate.set_item("sampled_pages", e.sampled_pages)?;
                estimate.set_item("basis", e.basis.as_str())?;
                Some(estimate)
            }
            None => None,
        };
        table.set_item("estimate", estimate)?;
        tables.append(table)?;
    }
    let units = PyList::empty(py);
    for u in &prepared.plan.units {
        let unit = PyDict::new(py);
        unit.set_item("table", &prepared.plan.tables[u.table].name)?;
        unit.set_item("seq", u.seq)?;
        unit.set_item("first_page", u.first_slot)?;
        unit.set_item("end_page", u.end_slot)?;
        units.append(unit)?;
    }
    dict.set_item("tables", tables)?;
    dict.set_item("units", units)?;
    dict.set_item("pages_per_unit", prepared.plan.unit_pages)?;
    dict.set_item("server_version", &prepared.start.server_version)?;
    dict.set_item("workers", prepared.start.workers)?;
    Ok(dict)
}

/// A snapshot held open for readers that join it later (what
/// `fbunload.Snapshot` wraps); closed by `close` or when dropped.
#[pyclass(module = "fbunload._fbunload")]
struct HeldSnapshot {
    held: Mutex<Option<fbunload::HeldSnapshot>>,
    plan: Arc<Plan>,
    schemas: Arc<Vec<SchemaRef>>,
    ticket: Option<SnapshotTicket>,
    server_version: String,
}

#[pymethods]
impl HeldSnapshot {
    /// The tables planned in it, in the plan's order.
    fn table_names(&self) -> Vec<String> {
        self.plan.tables.iter().map(|t| t.name.clone()).collect()
    }

    /// The pyarrow schema of table `table`.
    fn schema<'py>(&self, py: Python<'py>, table: usize) -> PyResult<Bound<'py, PyAny>> {
        self.schemas[table].to_pyarrow(py)
    }

    /// The snapshot number; None where the server cannot share snapshots.
    #[getter]
    fn number(&self) -> Option<u64> {
        self.ticket.map(|t| t.number)
    }

    /// `(number, holder_transaction, oldest_active)`: what `read_units` joins
    /// the snapshot with, from any process; None without shared snapshots.
    fn ticket(&self) -> Option<(u64, u64, u64)> {
        self.ticket
            .map(|t| (t.number, t.holder_transaction, t.oldest_active))
    }

    #[getter]
    fn server_version(&self) -> String {
        self.server_version.clone()
    }

    /// Table `table` cut into at most `shares` units (by default as many
    /// as the plan has) over the pages its rows occupy, as
    /// `(first_slot, end_slot)` DB_KEY ranges in order.
    #[pyo3(signature = (table, shares=None))]
    fn units(
        &self,
        py: Python<'_>,
        table: usize,
        shares: Option<usize>,
    ) -> PyResult<Vec<(u64, Option<u64>)>> {
        let units = py.detach(|| match self.held.lock().unwrap().as_ref() {
            Some(held) => held.shares(table, shares).map_err(to_py),
            None => Err(self.closed_error()),
        })?;
        Ok(units.iter().map(|u| (u.first_slot, u.end_slot)).collect())
    }

    #[getter]
    fn closed(&self) -> bool {
        self.held.lock().unwrap().is_none()
    }

    /// Raises SnapshotClosed once closed.
    fn check_open(&self) -> PyResult<()> {
        if self.closed() {
            return Err(self.closed_error());
        }
        Ok(())
    }

    /// Ends the snapshot: reads that join it afterwards fail.
    fn close(&self, py: Python<'_>) {
        let held = self.held.lock().unwrap().take();
        // Rolling back and detaching are round trips to the server.
        py.detach(move || drop(held));
    }
}

impl HeldSnapshot {
    fn closed_error(&self) -> PyErr {
        match self.ticket {
            Some(t) => to_py(RunError::SnapshotClosed { number: t.number }),
            None => SnapshotClosed::new_err(
                "the snapshot is closed, so nothing can be read at it any more; read again \
                 at a new snapshot",
            ),
        }
    }
}

/// Takes a snapshot, plans the tables `tables` selects in it, and holds
/// it open.
#[pyfunction]
#[pyo3(signature = (database, *, tables=None, exclude=None, user=None, password=None, role=None,
    charset="UTF8", parallel=None, client_lib=None, decimal256=false, allow_inconsistent=false,
    query=None))]
#[allow(clippy::too_many_arguments)]
fn hold(
    py: Python<'_>,
    database: String,
    tables: Option<String>,
    exclude: Option<String>,
    user: Option<String>,
    password: Option<String>,
    role: Option<String>,
    charset: &str,
    parallel: Option<usize>,
    client_lib: Option<PathBuf>,
    decimal256: bool,
    allow_inconsistent: bool,
    query: Option<QueryArg>,
) -> PyResult<HeldSnapshot> {
    let unload = Common {
        database,
        tables,
        exclude,
        user,
        password,
        role,
        charset: charset.into(),
        parallel,
        client_lib,
        decimal256,
        ..Common::default()
    }
    .unload()?;
    let unload = unload.clone().options(RunOptions {
        allow_inconsistent,
        ..unload.run_options().clone()
    });
    // A query is planned alone: its one unit, or its driving table's units.
    let unload = with_reads(unload, None, query.into_iter().collect());
    let held = py.detach(move || unload.hold_snapshot()).map_err(to_py)?;
    Ok(HeldSnapshot {
        plan: held.plan.clone(),
        schemas: held.schemas.clone(),
        ticket: held.ticket(),
        server_version: held.server_version.clone(),
        held: Mutex::new(Some(held)),
    })
}

/// Reads `units` (`(first_slot, end_slot)` ranges) of table `table` in
/// order, on one new attachment that joins the snapshot of `ticket` (or,
/// with None, takes a snapshot of its own), and returns them as one
/// pyarrow.Table of `columns` (all if None). With `query` (its SQL and
/// the table that splits it), `table` names that query, as `hold` planned
/// it, and the units are its driving table's.
#[pyfunction]
#[pyo3(signature = (database, table, units, *, ticket, user=None, password=None, role=None,
    charset="UTF8", client_lib=None, decimal256=false, columns=None, query=None))]
#[allow(clippy::too_many_arguments)]
fn read_units<'py>(
    py: Python<'py>,
    database: String,
    table: String,
    units: Vec<(u64, Option<u64>)>,
    ticket: Option<(u64, u64, u64)>,
    user: Option<String>,
    password: Option<String>,
    role: Option<String>,
    charset: &str,
    client_lib: Option<PathBuf>,
    decimal256: bool,
    columns: Option<Vec<String>>,
    query: Option<(String, Option<String>)>,
) -> PyResult<Bound<'py, PyAny>> {
    let unload = Common {
        database,
        user,
        password,
        role,
        charset: charset.into(),
        parallel: Some(1),
        client_lib,
        decimal256,
        ..Common::default()
    }
    .unload()?;
    let ticket = ticket.map(
        |(number, holder_transaction, oldest_active)| SnapshotTicket {
            number,
            holder_transaction,
            oldest_active,
        },
    );
    let mut reader = py
        .detach(|| match query {
            Some((sql, split_by)) => unload
                .query_spec(QuerySpec {
                    name: table.clone(),
                    sql,
                    split_by,
                })
                .join_snapshot_query(ticket.as_ref()),
            None => unload.join_snapshot(ticket.as_ref(), &table),
        })
        .map_err(to_py)?;
    let schema = reader.schema();
    let columns = projection(&table, &schema, columns.as_deref())?;
    let mut batches = Vec::new();
    let mut interrupted = None;
    let read = py.detach(|| {
        for (seq, (first_slot, end_slot)) in units.into_iter().enumerate() {
            let unit = Unit {
                table: 0,
                seq,
                first_slot,
                end_slot,
            };
            reader.read(&unit, &mut |batch| {
                batches.push(batch);
                // Ctrl-C, where this runs on Python's main thread.
                match Python::attach(|py| py.check_signals()) {
                    Ok(()) => true,
                    Err(e) => {
                        interrupted = Some(e);
                        false
                    }
                }
            })?;
            if interrupted.is_some() {
                break;
            }
        }
        Ok::<_, RunError>(())
    });
    if let Some(e) = interrupted {
        return Err(e);
    }
    read.map_err(to_py)?;
    let batches = batches
        .into_iter()
        .map(|b| project(b, &columns))
        .collect::<Result<Vec<_>, _>>()
        .map_err(arrow_err)?;
    let schema = match &columns {
        Some(indices) => Arc::new(schema.project(indices).map_err(arrow_err)?),
        None => schema,
    };
    arrow_pyarrow::Table::try_new(batches, schema)
        .map_err(arrow_err)?
        .into_pyarrow(py)
}

/// `firebird.embedded.provider.FirebirdProvider().root`, asked of this
/// interpreter: the client library's search would otherwise start another
/// Python to ask it (0.04-0.1 s of every command line run and first read).
fn embedded_runtime_of_this_python() -> Option<PathBuf> {
    Python::attach(|py| {
        let provider = py.import("firebird.embedded.provider").ok()?;
        let root = provider
            .getattr("FirebirdProvider")
            .and_then(|class| class.call0())
            .and_then(|instance| instance.getattr("root"))
            .ok()?;
        root.extract::<PathBuf>().ok()
    })
}

#[pymodule]
fn _fbunload(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    fbunload::set_embedded_runtime_lookup(embedded_runtime_of_this_python);
    m.add("Error", py.get_type::<Error>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("DatabaseError", py.get_type::<DatabaseError>())?;
    m.add("OutputError", py.get_type::<OutputError>())?;
    m.add("VerifyError", py.get_type::<VerifyError>())?;
    m.add("Interrupted", py.get_type::<Interrupted>())?;
    m.add("SnapshotClosed", py.get_type::<SnapshotClosed>())?;
    // The facade's defaults, for the Python signatures and their help.
    m.add("DEFAULT_MEMORY_MB", fbunload::DEFAULT_MEMORY_MB)?;
    // The version the command line's --version prints: one workspace version.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "DEFAULT_STALL_TIMEOUT_SECS",
        fbunload::DEFAULT_STALL_TIMEOUT.as_secs(),
    )?;
    m.add_class::<Stream>()?;
    m.add_class::<HeldSnapshot>()?;
    m.add_function(wrap_pyfunction!(hold, m)?)?;
    m.add_function(wrap_pyfunction!(read_units, m)?)?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(unload, m)?)?;
    m.add_function(wrap_pyfunction!(apply, m)?)?;
    m.add_function(wrap_pyfunction!(follow, m)?)?;
    m.add_class::<FollowEvents>()?;
    m.add_function(wrap_pyfunction!(pg_end_sync, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(sample, m)?)?;
    m.add_function(wrap_pyfunction!(serve_reader, m)?)?;
    m.add_function(wrap_pyfunction!(names::stored_name, m)?)?;
    m.add_function(wrap_pyfunction!(names::stored_names, m)?)?;
    m.add_function(wrap_pyfunction!(names::sql_name, m)?)?;
    m.add_function(wrap_pyfunction!(names::name_hint, m)?)?;
    m.add_function(wrap_pyfunction!(names::is_plain_path, m)?)?;
    // A run's reader processes are this interpreter running this
    // package's _reader.py, whatever started the run (a script, the
    // console script, Dask): isolated, by path, so that nothing in the
    // working directory is imported by a process that gets the password
    // (fbunload._reader.command).
    let executable: Option<PathBuf> = py.import("sys")?.getattr("executable")?.extract()?;
    if let Some(program) = executable.filter(|p| !p.as_os_str().is_empty()) {
        let args: Vec<std::ffi::OsString> = py
            .import("fbunload._reader")?
            .call_method0("command")?
            .extract()?;
        fbunload::set_reader_command(Some(fbunload::ReaderCommand::this_program(program, args)));
    }
    Ok(())
}
