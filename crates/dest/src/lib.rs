//! Where a run's rows go: the destinations of `fbunload-exec`.
//!
//! The dispatcher hands each destination a unit's record batches on the
//! worker that read them, in any order; a destination puts them back in
//! DB_KEY order, which is what makes every output the same for any
//! `--parallel`:
//!
//! - [`FileOutput`] writes one file per table in an output directory
//!   ([`OutputDir`]: locked, written through a private staging directory,
//!   complete files renamed in) or one table to standard output, in any
//!   [`Format`] (formats only ever see a `Write`), or as numbered parts
//!   of so many rows or bytes ([`FileOutput::with_part_limits`], `parts`);
//! - [`BatchStream`] hands the batches on in memory, through a bounded
//!   queue, to an application (the Python package reads it).
//!
//! What the run holds of its rows, beyond the batches being read, is
//! counted in one memory budget shared by every worker (`budget`): units
//! that finish before their turn wait in it and spill to the staging
//! directory beyond it (`spool`), and Parquet and Arrow groups wait for
//! room in it; `order` assembles a table from its units.
//!
//! A run into a directory ends with its [`Manifest`] (`manifest.json`:
//! every file with its SHA-256), which [`check_directory`] compares with
//! the files later, and which a run that overwrites the directory reads to
//! know what to remove (`previous`).

mod budget;
mod check;
mod digest;
mod directory;
mod keyruns;
mod keys;
mod manifest;
mod names;
mod order;
mod parts;
mod previous;
mod spool;
mod stream;
mod writeback;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use fbunload_plan::{Role, RowPlaces};

use fbunload_exec::{Destination, ExecError, FileDigest, RunInfo, UnitWriter, Written};
use fbunload_format::{Format, PartLimits};
use fbunload_plan::Unit;

pub use budget::MemoryBudget;
pub use check::{check_directory, CheckReport};
pub use directory::{finish_interrupted_switch, OutputDir, Reuse, STAGING_PREFIX, SWITCH_DIR};
pub use keys::{key_set, KeyEncoder, KeyOutcome, PreviousKeys, PrivateCopies, PrivateKeysFile};
pub use manifest::{
    is_plain_name, open_verified_listed_file, private_copy_of_listed_file, read_run_manifest,
    verified_listed_file, CommitMark, Manifest, ManifestChange, ManifestColumn, ManifestFile,
    ManifestIncremental, ManifestJournal, ManifestResumed, ManifestTable, PreviousRunRef,
    MANIFEST_NAME, MANIFEST_VERSION,
};
pub use names::{file_name_for, part_file_name};
pub use stream::{BatchStream, StreamReceiver, StreamedBatch};

use order::{BatchTable, ByteTable, Place, Table, TableContext};
use parts::PartFiles;

/// Files, one per table: in an output directory, or on standard output.
pub struct FileOutput {
    target: Target,
    format: Format,
    /// Where each table's parts end; none: a file per table.
    part_limits: PartLimits,
    budget: Arc<MemoryBudget>,
    tables: OnceLock<Vec<Box<dyn Table>>>,
    /// The DDL of the run's tables, published as `schema.sql` with them.
    schema_sql: OnceLock<String>,
    /// `schema.sql` as published, for the manifest.
    schema_file: OnceLock<Vec<FileDigest>>,
    /// An incremental run's previous keys, by table name.
    previous_keys: HashMap<String, Arc<PreviousKeys>>,
    /// The keys entries of the plan (index, name, its table's role, keys).
    key_tables: OnceLock<Vec<KeyEntry>>,
    /// What became of each table's keys, once finished.
    key_outcomes: OnceLock<Vec<KeyOutcome>>,
    snapshot_number: OnceLock<Option<u64>>,
    /// Where rows lie, for a run that keeps keys.
    row_places: OnceLock<Option<RowPlaces>>,
    /// The tables' rows are dropped, not written (see
    /// [`FileOutput::without_table_files`]).
    drop_rows: bool,
}

/// A table that keeps its keys (see `keys`).
struct KeyEntry {
    of: usize,
    name: String,
    /// The key's columns and the DB_KEY of each row its reads returned.
    read: Arc<keys::KeyReads>,
    /// For a table read for its changes (then its deletes are written).
    changes: Option<ChangeReads>,
}

/// What a table read for its changes reads besides.
struct ChangeReads {
    /// The units counted (the table's own when it reads its changes by
    /// key, else its count entry's), the ranges of slots counted apart in
    /// each, and what each counted (a count per range).
    units: Vec<Unit>,
    buckets: fbunload_plan::CountBuckets,
    counts: Arc<keys::KeyTable>,
    /// Its unchanged-keys entry, and what it read.
    recheck_entry: usize,
    rechecks: Arc<keys::KeyReads>,
    /// The ranges of DB_KEY numbers whose unchanged keys were asked for.
    rechecked: Mutex<Vec<(u64, u64)>>,
    /// The places of the rows changed since, sorted, once read.
    taken: OnceLock<Vec<u64>>,
}

impl<T: order::Table> order::Table for Arc<T> {
    fn begin_unit(&self, seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        self.as_ref().begin_unit(seq)
    }

    fn finish(&self) -> Result<Written, ExecError> {
        self.as_ref().finish()
    }
}

/// The least memory a table's keys hold before they spill (see
/// `keyruns`): a 32nd of the run's budget, or this.
const KEY_MEMORY_MIN: usize = 64 << 10;

/// The file of an output directory that holds the DDL of its tables; no
/// table's file can have this name (their extensions are formats').
pub const SCHEMA_FILE: &str = "schema.sql";

enum Target {
    Directory(Arc<OutputDir>),
    /// The one table goes to standard output; spilled units go to a
    /// private temporary directory.
    Stdout(tempfile::TempDir),
}

impl FileOutput {
    /// Each table to `<dir>/<TABLE>.<extension>`; units waiting for their
    /// turn may hold `memory_budget` bytes before they spill to disk.
    pub fn to_directory(dir: Arc<OutputDir>, format: Format, memory_budget: usize) -> Self {
        Self::to_target(Target::Directory(dir), format, memory_budget)
    }

    /// An output to `target` as a run starts it: no parts, no keys yet.
    fn to_target(target: Target, format: Format, memory_budget: usize) -> Self {
        FileOutput {
            target,
            format,
            part_limits: PartLimits::default(),
            budget: MemoryBudget::new(memory_budget),
            tables: OnceLock::new(),
            schema_sql: OnceLock::new(),
            schema_file: OnceLock::new(),
            previous_keys: HashMap::new(),
            key_tables: OnceLock::new(),
            key_outcomes: OnceLock::new(),
            snapshot_number: OnceLock::new(),
            row_places: OnceLock::new(),
            drop_rows: false,
        }
    }

    /// The run's one table to standard output, as it is assembled.
    pub fn to_stdout(format: Format, memory_budget: usize) -> Result<Self, ExecError> {
        if let Format::Batches(f) = &format {
            if f.writes_parts() {
                return Err(ExecError::Usage(
                    "-o - writes one stream; --split writes a directory of parts: use one or \
                     the other"
                        .into(),
                ));
            }
        }
        let spill = tempfile::Builder::new()
            .prefix(".fbunload-stdout")
            .tempdir()
            .map_err(|e| {
                ExecError::Usage(format!("cannot make a temporary directory for -o -: {e}"))
            })?;
        Ok(Self::to_target(
            Target::Stdout(spill),
            format,
            memory_budget,
        ))
    }

    /// Cuts every table into numbered parts, `<TABLE>.000001.<ext>`, …,
    /// each a complete file, ending where `limits` say (see
    /// [`fbunload_format::parts`]). Refused for standard output, which is
    /// one stream, and with Parquet's `split`, which makes parts of its own.
    pub fn with_part_limits(mut self, limits: PartLimits) -> Result<Self, ExecError> {
        if !limits.splits() {
            return Ok(self);
        }
        if let Target::Stdout(_) = self.target {
            return Err(ExecError::Usage(
                "--max-rows and --max-bytes cut tables into files; -o - writes one stream: use \
                 an output directory"
                    .into(),
            ));
        }
        Self::check_part_limits(&self.format, limits)?;
        self.part_limits = limits;
        Ok(self)
    }

    /// Refuses part limits with a format that makes parts of its own
    /// (Parquet's `split`), before anything runs.
    pub fn check_part_limits(format: &Format, limits: PartLimits) -> Result<(), ExecError> {
        match format {
            Format::Batches(f) if f.writes_parts() && limits.splits() => Err(ExecError::Usage(
                "--split writes a directory of parts of its own; --max-rows and --max-bytes \
                 write numbered files beside each other: use one or the other"
                    .into(),
            )),
            _ => Ok(()),
        }
    }

    /// Writes no table's rows (no `T.<ext>`, no `T.upserts.<ext>`, nothing
    /// spilled of them), only what a run keeping its keys needs beside
    /// them: the keys files, the deletes, `schema.sql`. For a PostgreSQL
    /// target, which takes the rows itself: its private directory then
    /// needs room for the keys, not for a copy of the database.
    pub fn without_table_files(mut self) -> Self {
        self.drop_rows = true;
        self
    }

    /// The files the run published that belong to no one table
    /// (`schema.sql`), once it has finished.
    pub fn run_files(&self) -> Vec<FileDigest> {
        self.schema_file.get().cloned().unwrap_or_default()
    }

    /// The output directory, for a run into one.
    pub fn directory(&self) -> Option<&Path> {
        match &self.target {
            Target::Directory(dir) => Some(dir.path()),
            Target::Stdout(_) => None,
        }
    }

    /// The previous run's keys of each table read for its changes, by
    /// name: the deletes are those the new snapshot lacks.
    pub fn with_previous_keys(mut self, keys: HashMap<String, Arc<PreviousKeys>>) -> Self {
        self.previous_keys = keys;
        self
    }

    /// What became of each table's keys (an incremental run, or one
    /// keeping its keys), once the run has finished.
    pub fn key_outcomes(&self) -> Vec<KeyOutcome> {
        self.key_outcomes.get().cloned().unwrap_or_default()
    }

    /// A table's rows: [`Self::table`], or dropped where the output
    /// writes no table files.
    fn rows_table(
        &self,
        stem: &str,
        name: &str,
        index: usize,
        units: usize,
        schema: &arrow_schema::SchemaRef,
        snapshot_number: Option<u64>,
    ) -> Box<dyn Table> {
        if self.drop_rows {
            return Box::new(Dropped {
                units,
                done: std::sync::atomic::AtomicUsize::new(0),
            });
        }
        self.table(stem, name, index, units, schema, snapshot_number)
    }

    /// A table's output, its files named by `stem` (`T`, `T.upserts`).
    fn table(
        &self,
        stem: &str,
        name: &str,
        index: usize,
        units: usize,
        schema: &arrow_schema::SchemaRef,
        snapshot_number: Option<u64>,
    ) -> Box<dyn Table> {
        let extension = self.format.extension();
        let place = match &self.target {
            Target::Directory(dir) if self.part_limits.splits() => Place::Parts(Arc::new(
                PartFiles::new(dir.clone(), stem, &extension, self.part_limits),
            )),
            Target::Directory(dir) => Place::File {
                dir: dir.clone(),
                file_name: file_name_for(stem, &extension),
            },
            Target::Stdout(spill) => Place::Stdout {
                spill: PathBuf::from(spill.path()),
            },
        };
        let context = TableContext {
            name: name.to_string(),
            index,
            units,
            schema: schema.clone(),
            place,
            budget: self.budget.clone(),
            stdout_bytes: Arc::default(),
        };
        match &self.format {
            Format::Bytes {
                format,
                compression,
            } => Box::new(ByteTable::new(context, format.clone(), *compression)),
            Format::Batches(format) => {
                Box::new(BatchTable::new(context, format.clone(), snapshot_number))
            }
        }
    }

    fn row_places(&self) -> Result<RowPlaces, ExecError> {
        self.row_places
            .get()
            .copied()
            .flatten()
            .ok_or_else(|| ExecError::Internal("a run keeping keys without row places".into()))
    }

    /// The units of a table read for its changes whose unchanged keys must
    /// be read (see `keys::units_to_recheck`).
    fn rechecks_of(
        &self,
        entry: &KeyEntry,
        changes: &ChangeReads,
        places: RowPlaces,
    ) -> Result<Vec<Unit>, String> {
        let old = self
            .previous_keys
            .get(&entry.name)
            .ok_or("the previous run's keys were not given")?;
        let taken = changes.taken.get_or_init(|| entry.read.sink.numbers());
        let counts = changes.counts.units();
        let mut counted = Vec::with_capacity(changes.units.len());
        for unit in &changes.units {
            let buckets = changes.buckets.of(unit);
            let unit_counts = counts
                .get(&unit.seq)
                .and_then(|c| c.as_deref())
                .filter(|c| c.len() == buckets.len())
                .ok_or_else(|| format!("unit {} counted no rows", unit.seq))?;
            for (i, (&count, &(first, end))) in unit_counts.iter().zip(&buckets).enumerate() {
                if end == Some(first) {
                    continue;
                }
                let lo = match first {
                    0 => 0,
                    slot => places.first_number_at(slot),
                };
                let hi = end.map_or(u64::MAX, |s| places.first_number_at(s));
                // A range of the unit, read on its own if it lost rows.
                let range = Unit {
                    seq: unit.seq * buckets.len() + i,
                    first_slot: first,
                    end_slot: end,
                    ..*unit
                };
                counted.push((range, (lo, hi), count as u64));
            }
        }
        let units = keys::units_to_recheck(old, &entry.read.sink, taken, &counted)?;
        // Ranges side by side in a unit are read as one: the same pages,
        // one query. Not across units: a unit's keys are held until it is
        // read whole (a --since run of 5,000,000 rows that read them all
        // in one peaked at 374 MB).
        let per_unit = changes
            .units
            .first()
            .map_or(1, |unit| changes.buckets.of(unit).len().max(1));
        let parent = |unit: &Unit| unit.seq / per_unit;
        let mut joined: Vec<keys::UnitRange> = Vec::with_capacity(units.len());
        for (unit, range) in units {
            match joined.last_mut() {
                Some((last, last_range))
                    if last.end_slot == Some(unit.first_slot) && parent(last) == parent(&unit) =>
                {
                    last.end_slot = unit.end_slot;
                    last_range.1 = range.1;
                }
                _ => joined.push((unit, range)),
            }
        }
        let mut rechecked = changes.rechecked.lock().unwrap();
        Ok(joined
            .into_iter()
            .map(|(unit, range)| {
                rechecked.push(range);
                Unit {
                    table: changes.recheck_entry,
                    ..unit
                }
            })
            .collect())
    }

    /// Publishes each table's keys and, for a table read for its changes,
    /// its deletes (see `keys`).
    fn finish_keys(&self, dir: &Arc<OutputDir>) -> Result<Vec<KeyOutcome>, ExecError> {
        let entries = self.key_tables.get().map_or(&[][..], Vec::as_slice);
        let plan_len = self.tables().len();
        let snapshot_number = self.snapshot_number.get().copied().flatten();
        let mut outcomes = Vec::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            let fail = |reason: String| ExecError::OutputDir {
                path: dir.path().to_path_buf(),
                reason: format!("the keys of table {}: {reason}", entry.name),
            };
            let rechecked_units = entry
                .changes
                .as_ref()
                .map(|c| c.rechecked.lock().unwrap().len() as u64);
            let keys_name = file_name_for(&entry.name, "keys.parquet");
            let mut outcome = KeyOutcome {
                of: entry.of,
                rechecked_units,
                ..KeyOutcome::default()
            };
            let file = dir.create(&keys_name).map_err(|e| fail(e.to_string()))?;
            let mut keys_file = keys::KeysFileWriter::new(file, &entry.read.sink.schema)
                .map_err(|e| fail(e.to_string()))?;
            let mut keys_written = 0;
            let mut to_keys_file = |batch: arrow_array::RecordBatch| {
                keys_written += batch.num_rows() as u64;
                keys_file.write(batch)
            };
            match &entry.changes {
                None => keys::sorted_keys(&entry.read.sink, &mut to_keys_file).map_err(fail)?,
                Some(changes) => {
                    let old = self
                        .previous_keys
                        .get(&entry.name)
                        .ok_or_else(|| fail("the previous run's keys were not given".into()))?;
                    let taken = changes
                        .taken
                        .get()
                        .ok_or_else(|| fail("its changed rows were not compared".into()))?;
                    let ranges = changes.rechecked.lock().unwrap().clone();
                    let table = self.table(
                        &format!("{}.deletes", entry.name),
                        &entry.name,
                        plan_len + i,
                        1,
                        &old.key_schema(),
                        snapshot_number,
                    );
                    let mut unit = table.begin_unit(0)?;
                    let mut failed = None;
                    let mut write = |batch: arrow_array::RecordBatch| {
                        unit.write(batch).map_err(|e| {
                            let shown = e.to_string();
                            failed = Some(e);
                            shown
                        })
                    };
                    let done = keys::changes_since(
                        old,
                        &entry.read.sink,
                        taken,
                        &changes.rechecks.sink,
                        &ranges,
                        &mut to_keys_file,
                        &mut write,
                    );
                    let deletes = match done {
                        Ok(deletes) => deletes,
                        Err(reason) => {
                            let _ = unit.abort();
                            return Err(failed.unwrap_or_else(|| fail(reason)));
                        }
                    };
                    changes.rechecks.sink.clear();
                    unit.finish()?;
                    outcome.deletes = Some(deletes);
                    outcome.deletes_written = table.finish()?;
                }
            };
            keys_file.finish().map_err(|e| fail(e.to_string()))?;
            let (_, keys_files) = dir.publish(&keys_name).map_err(|e| fail(e.to_string()))?;
            entry.read.sink.clear();
            outcome.keys = keys_written;
            outcome.keys_files = keys_files;
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    fn tables(&self) -> &[Box<dyn Table>] {
        self.tables.get().map_or(&[], |t| t.as_slice())
    }
}

/// A table whose rows go nowhere ([`FileOutput::without_table_files`]);
/// it says it is complete once all its units are.
struct Dropped {
    units: usize,
    done: std::sync::atomic::AtomicUsize,
}

impl Table for Dropped {
    fn begin_unit(&self, _seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        Ok(Box::new(DroppedUnit(self)))
    }

    fn finish(&self) -> Result<Written, ExecError> {
        Ok(Written::default())
    }
}

struct DroppedUnit<'a>(&'a Dropped);

impl UnitWriter for DroppedUnit<'_> {
    fn write(&mut self, _batch: arrow_array::RecordBatch) -> Result<(), ExecError> {
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        let done = self
            .0
            .done
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        Ok(done == self.0.units)
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        Ok(())
    }
}

impl Destination for FileOutput {
    fn keeps_schema(&self) -> bool {
        matches!(self.target, Target::Directory(_))
    }

    fn start(&self, run: &RunInfo<'_>) -> Result<(), ExecError> {
        if let Some(sql) = run.schema_sql {
            let _ = self.schema_sql.set(sql.to_string());
        }
        if let Target::Stdout(_) = self.target {
            if run.plan.tables.len() != 1 {
                return Err(ExecError::Usage(format!(
                    "-o - writes one table to standard output, but the filter selects {}; \
                     narrow it with --tables",
                    run.plan.tables.len()
                )));
            }
        }
        let _ = self.snapshot_number.set(run.snapshot_number);
        let _ = self.row_places.set(run.plan.row_places);
        let mut key_entries = Vec::new();
        let mut helpers = HashMap::new();
        let mut key_helpers = HashMap::new();
        // Keys gathered beyond this spill in sorted runs (see `keyruns`).
        let spill_dir = match &self.target {
            Target::Directory(dir) => dir.staging().to_path_buf(),
            Target::Stdout(spill) => spill.path().to_path_buf(),
        };
        // Sorting a run holds about four times its keys for a while.
        let key_memory = (self.budget.total() / 32).max(KEY_MEMORY_MIN);
        let layout = run.plan.row_places.map(|p| p.layout);
        let key_reads = |index: usize, schema: &arrow_schema::SchemaRef, keep_numbers: bool| {
            let layout = layout.ok_or_else(|| {
                ExecError::Internal("a run keeping keys without row places".into())
            })?;
            Ok::<_, ExecError>(Arc::new(keys::KeyReads {
                sink: keyruns::KeySink::new(
                    keys::KeyReads::sink_schema(schema),
                    keyruns::SpillDir::new(&spill_dir, &format!("table{index}")),
                    key_memory,
                    keep_numbers,
                ),
                layout,
            }))
        };
        let internal = |e: arrow_schema::ArrowError| ExecError::Internal(e.to_string());
        let mut tables: Vec<Box<dyn Table>> = Vec::with_capacity(run.plan.tables.len());
        // Made first: a table read for its changes writes its counts into
        // its count entry's, which comes after it.
        for (index, table) in run.plan.tables.iter().enumerate() {
            if table.role.is_helper() && !matches!(table.role, Role::UnchangedKeys { .. }) {
                helpers.insert(index, Arc::new(keys::KeyTable::new()));
            }
        }
        for (index, (table, schema)) in run.plan.tables.iter().zip(run.schemas).enumerate() {
            if let Role::UnchangedKeys { .. } = table.role {
                let reads = key_reads(index, schema, false)?;
                key_helpers.insert(index, reads.clone());
                tables.push(Box::new(reads));
                continue;
            }
            if let Some(kept) = helpers.get(&index) {
                tables.push(Box::new(kept.clone()));
                continue;
            }
            let stem = match table.role {
                Role::Upserts => format!("{}.upserts", table.name),
                _ => table.name.clone(),
            };
            if table.key_columns.is_empty() {
                tables.push(self.rows_table(
                    &stem,
                    &table.name,
                    index,
                    table.unit_count,
                    schema,
                    run.snapshot_number,
                ));
                continue;
            }
            // The DB_KEY is the read's last column.
            let db_key = schema.fields().len() - 1;
            let file_columns: Vec<usize> = (0..db_key).collect();
            let mut key_columns = table.key_columns.clone();
            key_columns.push(db_key);
            let read_schema = Arc::new(schema.project(&key_columns).map_err(internal)?);
            let read = key_reads(index, &read_schema, table.role == Role::Upserts)?;
            key_entries.push(KeyEntry {
                of: index,
                name: table.name.clone(),
                read: read.clone(),
                changes: None,
            });
            let file_schema = Arc::new(schema.project(&file_columns).map_err(internal)?);
            tables.push(Box::new(keys::KeptKeys {
                file: self.rows_table(
                    &stem,
                    &table.name,
                    index,
                    table.unit_count,
                    &file_schema,
                    run.snapshot_number,
                ),
                keys: read,
                key_columns,
                file_columns,
                counts: table
                    .changes_by_key
                    .as_ref()
                    .and_then(|by_key| helpers.get(&by_key.counts).cloned()),
            }));
        }
        for entry in &mut key_entries {
            let entry_of = |role: Role| run.plan.tables.iter().position(|t| t.role == role);
            let of = entry.of;
            let count = entry_of(Role::UnchangedCount { of });
            let recheck = entry_of(Role::UnchangedKeys { of });
            if let (Some(count), Some(recheck)) = (count, recheck) {
                // Counted with the table's own units, or by units of the
                // count entry's.
                let counted = match run.plan.tables[of].changes_by_key {
                    Some(_) => of,
                    None => count,
                };
                entry.changes = Some(ChangeReads {
                    units: run.plan.units_of(counted).copied().collect(),
                    buckets: run.plan.tables[count].bucket_layout(),
                    counts: helpers[&count].clone(),
                    recheck_entry: recheck,
                    rechecks: key_helpers[&recheck].clone(),
                    rechecked: Mutex::default(),
                    taken: OnceLock::new(),
                });
            }
        }
        let _ = self.key_tables.set(key_entries);
        self.tables
            .set(tables)
            .map_err(|_| ExecError::Usage("a file output serves one run".into()))
    }

    fn begin_unit(&self, unit: &Unit) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        self.tables()[unit.table].begin_unit(unit.seq)
    }

    fn stop(&self) {
        // Workers waiting for room give up.
        self.budget.stop();
    }

    fn follow_ups(&self) -> Result<Vec<Unit>, ExecError> {
        let mut units = Vec::new();
        for entry in self.key_tables.get().map_or(&[][..], Vec::as_slice) {
            let Some(changes) = &entry.changes else {
                continue;
            };
            let places = self.row_places()?;
            units.extend(
                self.rechecks_of(entry, changes, places).map_err(|reason| {
                    ExecError::table(&entry.name, format!("its keys: {reason}"))
                })?,
            );
        }
        Ok(units)
    }

    fn finish(&self) -> Result<Vec<Written>, ExecError> {
        let written = self
            .tables()
            .iter()
            .map(|t| t.finish())
            .collect::<Result<_, _>>()?;
        if let Target::Directory(dir) = &self.target {
            let outcomes = self.finish_keys(dir)?;
            let _ = self.key_outcomes.set(outcomes);
        }
        if let (Target::Directory(dir), Some(sql)) = (&self.target, self.schema_sql.get()) {
            // After the tables, so that it is there only when they all are.
            let publish = || {
                dir.create(SCHEMA_FILE)?.write_all(sql.as_bytes())?;
                dir.publish(SCHEMA_FILE)
            };
            let (_, digests) = publish().map_err(|e| ExecError::OutputDir {
                path: dir.path().join(SCHEMA_FILE),
                reason: format!("cannot write it: {e}"),
            })?;
            let _ = self.schema_file.set(digests);
        }
        Ok(written)
    }
}
