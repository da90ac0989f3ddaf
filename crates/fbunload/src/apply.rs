//! Applying a change set (`--since`) to the run it was taken since: the
//! state of every table at the change set's snapshot, as Arrow batches
//! ([`apply_tables`]) or as a new directory in the same format
//! ([`apply_to_directory`], `fbunload apply OLD CHANGES -o STATE`).
//!
//! Per table: the old rows whose keys are neither deleted nor upserted,
//! then the upserts; a table the change set holds whole replaces the old
//! one, and a table it does not have is gone. Parquet and Arrow runs are
//! read back; text formats are for the DuckDB recipe of docs/command-line.md.
//!
//! A link is applied only to what it was taken from: OLD is the chain's
//! base (a run with `--keep-keys`) or the state an earlier apply made,
//! never a change set itself (its files hold only what changed), and the
//! change set must name OLD by its manifest's SHA-256 and snapshot.
//!
//! Both directories are read as untrusted: manifests must be plain files,
//! every file is read through its manifest entry, its size and SHA-256
//! checked, and the rows each file holds must be the manifest's count.
//!
//! A table is read and written a batch at a time: what is held is the
//! keys of the link's upserts and deletes (never the old rows), within
//! the memory budget (beyond it, one pass over the old rows per share of
//! the keys), and a row group being encoded. The state is written as a run's output is
//! (`fbunload_dest::OutputDir`): in a staging directory, each file synced,
//! then moved in with the manifest last; a failure or a signal leaves
//! nothing. Parquet keeps the change set's compression and row groups.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use fbunload_dest::{
    file_name_for, open_verified_listed_file, verified_listed_file, KeyEncoder, Manifest,
    ManifestFile, ManifestTable, OutputDir, Reuse, MANIFEST_NAME, SCHEMA_FILE,
};
use serde_json::Value;

use crate::format::columnar::{
    ArrowFormat, ParquetCompression, ParquetFormat, DEFAULT_ROW_GROUP_ROWS, SNAPSHOT_KEY, TABLE_KEY,
};
use crate::format::{BatchFormat, FileInfo, TYPE_METADATA_KEY};
use crate::Error;

/// A table's state after applying a change set.
pub struct AppliedTable {
    pub name: String,
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

fn fail(why: impl std::fmt::Display) -> Error {
    Error::Usage(format!("apply: {why}"))
}

/// A run's manifest, read as untrusted, and the SHA-256 of its text.
fn read_manifest(dir: &Path) -> Result<(Manifest, String), Error> {
    crate::incremental::read_manifest(dir).map_err(|e| fail(format!("{}: {e}", dir.display())))
}

/// The format of a run: `parquet` or `arrow`.
fn format_of(manifest: &Manifest) -> Result<String, Error> {
    let format = manifest
        .options
        .get("format")
        .and_then(|v| v.as_str())
        .unwrap_or("csv")
        .to_string();
    match format.as_str() {
        "parquet" | "arrow" => Ok(format),
        other => Err(fail(format!(
            "reads Parquet and Arrow runs; this one is {}: apply it with DuckDB \
             (docs/command-line.md, Incremental unloads), or unload with -f parquet",
            crate::printable(other)
        ))),
    }
}

/// A change set and the run (or state) it applies to, both checked.
struct Link<'a> {
    old: &'a Path,
    old_manifest: Manifest,
    changes: &'a Path,
    change_manifest: Manifest,
    change_digest: String,
    format: String,
    /// Bytes the keys of a link may take ([`passes_for`]).
    memory_budget: usize,
}

impl<'a> Link<'a> {
    /// Refuses, before anything is written, what would give a wrong
    /// state: a CHANGES that is no change set, an OLD that is one, or an
    /// OLD that is not the run the change set was taken since.
    fn open(old: &'a Path, changes: &'a Path) -> Result<Self, Error> {
        let (old_manifest, old_digest) = read_manifest(old)?;
        let (change_manifest, change_digest) = read_manifest(changes)?;
        let since = change_manifest
            .incremental
            .as_ref()
            .and_then(|i| i.since.as_ref())
            .ok_or_else(|| {
                fail(format!(
                    "{} holds no change set (--since)",
                    changes.display()
                ))
            })?;
        // A change set's files hold only what changed: a state made from
        // one would lose every row the next link did not touch.
        if old_manifest
            .incremental
            .as_ref()
            .is_some_and(|i| i.since.is_some())
        {
            return Err(fail(format!(
                "{} is a change set; apply it to its base's state first, then {} to that state",
                old.display(),
                changes.display()
            )));
        }
        let old_run = old_manifest.state_of.clone().unwrap_or(old_digest);
        if since.manifest_sha256 != old_run {
            return Err(fail(format!(
                "{} holds the changes since another run than {} (its manifest's SHA-256 is not \
                 the one the change set names)",
                changes.display(),
                old.display()
            )));
        }
        if old_manifest.snapshot_number != Some(since.snapshot_number) {
            return Err(fail(format!(
                "{} names a run at snapshot {}, and {} is at {:?}: its manifest was edited",
                changes.display(),
                since.snapshot_number,
                old.display(),
                old_manifest.snapshot_number
            )));
        }
        let format = format_of(&change_manifest)?;
        if format_of(&old_manifest)? != format {
            return Err(fail("the two runs are in different formats"));
        }
        Ok(Link {
            old,
            old_manifest,
            changes,
            change_manifest,
            change_digest,
            format,
            memory_budget: crate::DEFAULT_MEMORY_BUDGET,
        })
    }

    /// The tables of the state, in the change set's order.
    fn tables(&self) -> impl Iterator<Item = &ManifestTable> {
        self.change_manifest
            .tables
            .iter()
            .filter(|t| t.kind == "table")
    }

    /// Table `table`'s state: its schema and its batches, read as they
    /// are asked for.
    fn state_of(
        &self,
        table: &ManifestTable,
        cancel: &'a AtomicBool,
    ) -> Result<(SchemaRef, Batches<'a>), Error> {
        let change = table.change.as_ref();
        let (schema, batches): (Option<SchemaRef>, Batches<'a>) =
            match change.map(|c| c.mode.as_str()) {
                Some("changes") => {
                    let key = change.expect("matched").primary_key.clone();
                    let previous = self
                        .old_manifest
                        .tables
                        .iter()
                        .find(|t| t.name == table.name && t.kind == "table")
                        .ok_or_else(|| {
                            fail(format!(
                                "table {} is not in the old run",
                                crate::printable(&table.name)
                            ))
                        })?
                        .clone();
                    let deletes = change.and_then(|c| c.deletes);
                    // The keys that leave the old rows (every upsert's and
                    // every delete's) are what is held of a link: in as
                    // many passes over the old rows as the memory budget
                    // needs, each holding one share of the keys.
                    let passes = passes_for(
                        table.rows.saturating_add(deletes.unwrap_or(0)),
                        self.memory_budget,
                    );
                    let (changes, old) = (self.changes, self.old);
                    let this = table.clone();
                    let pass = move |pass: u64| -> Result<(Option<SchemaRef>, Batches<'a>), Error> {
                        let share = (pass, passes);
                        let mut gone: HashSet<Vec<u8>> = HashSet::new();
                        let (upsert_schema, upserts) = read_role(changes, &this, Some("upserts"))?;
                        let upserts = counted(upserts, this.rows, &this.name, "upserts");
                        add_keys(&mut gone, upserts, Some(&key), share, cancel)?;
                        let (_, removed) = read_role(changes, &this, Some("deletes"))?;
                        let removed = match deletes {
                            Some(count) => counted(removed, count, &this.name, "deletes"),
                            None => removed,
                        };
                        add_keys(&mut gone, removed, None, share, cancel)?;
                        let (old_schema, old_rows) = read_role(old, &previous, None)?;
                        let old_rows = counted(old_rows, previous.rows, &this.name, "rows");
                        let key = key.clone();
                        let mut encoded = Vec::new();
                        let kept = old_rows.map(move |batch| {
                            let batch = batch?;
                            let keys = key_columns(&batch, &key)?;
                            let encoder = KeyEncoder::new(&keys).map_err(fail)?;
                            let keep: BooleanArray = (0..batch.num_rows())
                                .map(|row| {
                                    encoder.key(row, &mut encoded);
                                    Some(in_share(&encoded, share) && !gone.contains(&encoded))
                                })
                                .collect();
                            arrow_select::filter::filter_record_batch(&batch, &keep).map_err(fail)
                        });
                        Ok((old_schema.or(upsert_schema), Box::new(kept)))
                    };
                    let pass = std::rc::Rc::new(pass);
                    let (schema, first) = pass(0)?;
                    let later = pass.clone();
                    let more = (1..passes).flat_map(move |n| -> Batches<'a> {
                        match later(n) {
                            Ok((_, kept)) => kept,
                            Err(e) => Box::new(std::iter::once(Err(e))),
                        }
                    });
                    // The upserts read again after the old rows, rather
                    // than held meanwhile.
                    let (_, upserts) = read_role(self.changes, table, Some("upserts"))?;
                    (schema, Box::new(first.chain(more).chain(upserts)))
                }
                Some("full") | None => {
                    // A table read whole has its one file (or parts), and
                    // no file of a change: a mode edited to `full` would
                    // otherwise replace the table with what is not it.
                    if table
                        .files
                        .iter()
                        .any(|f| f.role.is_some() && f.role.as_deref() != Some("keys"))
                    {
                        return Err(fail(format!(
                            "table {}: its manifest says it was read whole, and lists files of \
                             changes",
                            crate::printable(&table.name)
                        )));
                    }
                    let (schema, batches) = read_role(self.changes, table, None)?;
                    (schema, counted(batches, table.rows, &table.name, "rows"))
                }
                Some(other) => {
                    return Err(fail(format!(
                        "table {}: mode {} is not one fbunload writes",
                        crate::printable(&table.name),
                        crate::printable(other)
                    )))
                }
            };
        let schema = match schema {
            Some(schema) => schema,
            None => schema_from_manifest(table)?,
        };
        // The state's own table name and snapshot, as a run writes them.
        let mut metadata =
            std::collections::HashMap::from([(TABLE_KEY.to_string(), table.name.clone())]);
        if let Some(n) = self.change_manifest.snapshot_number {
            metadata.insert(SNAPSHOT_KEY.to_string(), n.to_string());
        }
        let schema = Arc::new(schema.as_ref().clone().with_metadata(metadata));
        let target = schema.clone();
        let name = table.name.clone();
        let batches = batches.filter_map(move |batch| {
            if cancel.load(Ordering::SeqCst) {
                return Some(Err(Error::Interrupted));
            }
            match batch {
                Ok(b) if b.num_rows() == 0 => None,
                Ok(b) => Some(
                    RecordBatch::try_new(target.clone(), b.columns().to_vec()).map_err(|e| {
                        fail(format!(
                            "table {}: its files differ in columns: {e}",
                            crate::printable(&name)
                        ))
                    }),
                ),
                Err(e) => Some(Err(e)),
            }
        });
        Ok((schema, Box::new(batches)))
    }

    /// How the state's files are written: the change set's format, and
    /// for Parquet its compression and row groups (one file per table).
    fn writer_format(&self) -> Result<Box<dyn BatchFormat>, Error> {
        if self.format == "arrow" {
            return Ok(Box::new(ArrowFormat));
        }
        let options = &self.change_manifest.options;
        let compression = match options.get("compression").and_then(Value::as_str) {
            None | Some("zstd") => ParquetCompression::Zstd,
            Some("snappy") => ParquetCompression::Snappy,
            Some("gzip") => ParquetCompression::Gzip,
            Some("none") => ParquetCompression::None,
            Some(other) => {
                return Err(fail(format!(
                    "{}: compression {} is not one fbunload writes",
                    self.changes.display(),
                    crate::printable(other)
                )))
            }
        };
        let count = |name: &str| options.get(name).and_then(Value::as_u64);
        Ok(Box::new(ParquetFormat {
            compression,
            split: false,
            // As the command line bounds them (--row-group-rows is a u32).
            row_group_rows: count("row_group_rows").map_or(DEFAULT_ROW_GROUP_ROWS, |n| {
                n.clamp(1, u32::MAX as u64) as usize
            }),
            row_group_bytes: count("row_group_bytes").map(|n| n.max(1) as usize),
        }))
    }
}

type Batches<'a> = Box<dyn Iterator<Item = Result<RecordBatch, Error>> + 'a>;

/// The batches of `table`'s files with role `role` in `dir`, one file
/// after the other, each checked against its manifest entry as it is
/// opened (the first now, for its schema).
fn read_role<'a>(
    dir: &'a Path,
    table: &ManifestTable,
    role: Option<&str>,
) -> Result<(Option<SchemaRef>, Batches<'a>), Error> {
    let mut files = table
        .files
        .iter()
        .filter(|f| f.role.as_deref() == role)
        .cloned()
        .collect::<Vec<_>>()
        .into_iter();
    let Some(first) = files.next() else {
        return Ok((None, Box::new(std::iter::empty())));
    };
    let (schema, batches) = open_file(dir, &first)?;
    let rest = files.flat_map(move |file| -> Batches<'a> {
        match open_file(dir, &file) {
            Ok((_, batches)) => batches,
            Err(e) => Box::new(std::iter::once(Err(e))),
        }
    });
    Ok((Some(schema), Box::new(batches.chain(rest))))
}

/// Bytes a key of the link takes in memory, about: its encoding (a few
/// bytes a column), the vector's allocation and the set's slot.
const KEY_BYTES: u64 = 100;

/// Passes over a table's old rows that keep the keys of `changed` rows
/// within `budget` bytes (one, for most links).
fn passes_for(changed: u64, budget: usize) -> u64 {
    let budget = (budget as u64).max(1 << 20);
    changed.saturating_mul(KEY_BYTES).div_ceil(budget).max(1)
}

/// Whether an encoded key falls in pass `share.0` of `share.1`: by an
/// FNV-1a hash of its bytes, the same in every pass.
fn in_share(key: &[u8], (pass, passes): (u64, u64)) -> bool {
    if passes <= 1 {
        return true;
    }
    let hash = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    hash % passes == pass
}

/// One Parquet or Arrow file of a run: its schema and batches.
pub(crate) fn open_file<'a>(
    dir: &'a Path,
    file: &ManifestFile,
) -> Result<(SchemaRef, Batches<'a>), Error> {
    let handle = open_verified_listed_file(dir, file).map_err(fail)?;
    let name = file.name.clone();
    let bad = move |e: ArrowError| fail(format!("{name}: {e}"));
    if file.name.ends_with(".parquet") {
        let builder =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(handle)
                .map_err(|e| bad(e.into()))?;
        let schema = builder.schema().clone();
        let reader = builder
            .with_batch_size(8192)
            .build()
            .map_err(|e| bad(e.into()))?;
        Ok((schema, Box::new(reader.map(move |b| b.map_err(&bad)))))
    } else if file.name.ends_with(".arrow") {
        let reader = arrow_ipc::reader::FileReader::try_new(std::io::BufReader::new(handle), None)
            .map_err(&bad)?;
        Ok((
            reader.schema(),
            Box::new(reader.map(move |b| b.map_err(&bad))),
        ))
    } else {
        Err(fail(format!("{}: not a Parquet or Arrow file", file.name)))
    }
}

/// `batches`, then an error if they did not hold `expected` rows, as the
/// manifest says they do.
fn counted<'a>(batches: Batches<'a>, expected: u64, table: &str, what: &'a str) -> Batches<'a> {
    Box::new(Counted {
        batches,
        rows: 0,
        expected,
        table: crate::printable(table).to_string(),
        what,
        done: false,
    })
}

struct Counted<'a> {
    batches: Batches<'a>,
    rows: u64,
    expected: u64,
    table: String,
    what: &'a str,
    done: bool,
}

impl Iterator for Counted<'_> {
    type Item = Result<RecordBatch, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.batches.next() {
            Some(Ok(batch)) => {
                self.rows += batch.num_rows() as u64;
                Some(Ok(batch))
            }
            Some(Err(e)) => {
                self.done = true;
                Some(Err(e))
            }
            None => {
                self.done = true;
                (self.rows != self.expected).then(|| {
                    Err(fail(format!(
                        "table {}: its files hold {} {}, its manifest says {}",
                        self.table, self.rows, self.what, self.expected
                    )))
                })
            }
        }
    }
}

/// Adds the keys of `batches` (their `key` columns, or all of them) to
/// `keys`.
fn add_keys(
    keys: &mut HashSet<Vec<u8>>,
    batches: Batches<'_>,
    key: Option<&[String]>,
    share: (u64, u64),
    cancel: &AtomicBool,
) -> Result<(), Error> {
    let mut encoded = Vec::new();
    for batch in batches {
        if cancel.load(Ordering::SeqCst) {
            return Err(Error::Interrupted);
        }
        let batch = batch?;
        let batch = match key {
            Some(key) => key_columns(&batch, key)?,
            None => batch,
        };
        let encoder = KeyEncoder::new(&batch).map_err(fail)?;
        for row in 0..batch.num_rows() {
            encoder.key(row, &mut encoded);
            if in_share(&encoded, share) {
                keys.insert(encoded.clone());
            }
        }
    }
    Ok(())
}

/// The key columns of `batch`, as a batch of its own.
fn key_columns(batch: &RecordBatch, key: &[String]) -> Result<RecordBatch, Error> {
    let indices: Vec<usize> = key
        .iter()
        .map(|k| {
            batch
                .schema()
                .index_of(k)
                .map_err(|_| fail(format!("no key column {} in a file", crate::printable(k))))
        })
        .collect::<Result<_, _>>()?;
    batch.project(&indices).map_err(fail)
}

/// A table's schema as its manifest lists its columns, for a table with
/// no file to take it from: each column's Arrow type, nullable, with its
/// declared Firebird type in the field metadata as a run writes it.
fn schema_from_manifest(table: &ManifestTable) -> Result<SchemaRef, Error> {
    let fields =
        table
            .columns
            .iter()
            .map(|c| {
                let data_type: DataType = c.arrow_type.parse().map_err(|e| {
                    fail(format!(
                        "table {}: column {}: {e}",
                        crate::printable(&table.name),
                        crate::printable(&c.name)
                    ))
                })?;
                Ok(Field::new(&c.name, data_type, true).with_metadata(
                    std::collections::HashMap::from([(
                        TYPE_METADATA_KEY.to_string(),
                        c.firebird_type.clone(),
                    )]),
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// Every table of the change set in `changes` applied to the run (or
/// state) in `old`, held in memory.
pub fn apply_tables(old: &Path, changes: &Path) -> Result<Vec<AppliedTable>, Error> {
    let link = Link::open(old, changes)?;
    let never = AtomicBool::new(false);
    let mut applied = Vec::new();
    for table in link.tables() {
        let (schema, batches) = link.state_of(table, &never)?;
        applied.push(AppliedTable {
            name: table.name.clone(),
            schema,
            batches: batches.collect::<Result<_, _>>()?,
        });
    }
    Ok(applied)
}

/// [`apply_tables`], written into `out` (a new or empty directory) as one
/// file per table in the runs' format, with the change set's schema.sql
/// and a manifest that `fbunload check` verifies and that a later apply
/// starts from. Staged and published as a run's output is; `cancel` set
/// (a signal) stops it, leaving nothing.
pub fn apply_to_directory(
    old: &Path,
    changes: &Path,
    out: &Path,
    memory_budget: usize,
    cancel: &AtomicBool,
) -> Result<Vec<(String, u64)>, Error> {
    let mut link = Link::open(old, changes)?;
    link.memory_budget = memory_budget;
    let format = link.writer_format()?;
    // A state never replaces a run (OLD and CHANGES among them): apply has
    // no --overwrite.
    if fs::symlink_metadata(out.join(MANIFEST_NAME)).is_ok() {
        return Err(fail(format!(
            "{} holds a run already; give a new directory",
            out.display()
        )));
    }
    let output = OutputDir::open(out, Reuse::Refuse).map_err(|e| match e {
        Error::OutputDir { path, reason } => fail(format!("{}: {reason}", path.display())),
        other => other,
    })?;
    let mut manifest = link.change_manifest.clone();
    manifest.tables.retain(|t| t.kind == "table");
    let mut rows = Vec::new();
    for entry in manifest.tables.iter_mut() {
        let (schema, batches) = link.state_of(entry, cancel)?;
        let name = file_name_for(&entry.name, &link.format);
        let count = write_table(&output, format.as_ref(), &name, schema, entry, batches)?;
        let (_, files) = output
            .publish(&name)
            .map_err(|e| fail(format!("{name}: {e}")))?;
        entry.files = files.into_iter().map(Into::into).collect();
        entry.bytes = entry.files.iter().map(|f| f.bytes).sum();
        entry.rows = count;
        entry.change = None;
        entry.verified = false;
        rows.push((entry.name.clone(), count));
    }
    // The tables' DDL at the change set's snapshot, as a run leaves it.
    manifest.files.clear();
    for file in link.change_manifest.files.iter() {
        if file.name != SCHEMA_FILE {
            continue;
        }
        let contents = verified_listed_file(link.changes, file).map_err(fail)?;
        let written = |e: std::io::Error| fail(format!("{SCHEMA_FILE}: {e}"));
        std::io::Write::write_all(&mut output.create(SCHEMA_FILE).map_err(written)?, &contents)
            .map_err(written)?;
        let (_, files) = output.publish(SCHEMA_FILE).map_err(written)?;
        manifest
            .files
            .extend(files.into_iter().map(ManifestFile::from));
    }
    if cancel.load(Ordering::SeqCst) {
        return Err(Error::Interrupted);
    }
    manifest.incremental = None;
    manifest.state_of = Some(link.change_digest.clone());
    output.publish_manifest(&manifest)?;
    Ok(rows)
}

/// Writes the state of `table` into the new file `name` of the staging
/// directory; returns its rows.
fn write_table(
    output: &OutputDir,
    format: &dyn BatchFormat,
    name: &str,
    schema: SchemaRef,
    table: &ManifestTable,
    batches: Batches<'_>,
) -> Result<u64, Error> {
    let written = |e: &dyn std::fmt::Display| fail(format!("{name}: {e}"));
    let file = output.create(name).map_err(|e| written(&e))?;
    let mut file: Option<Box<dyn std::io::Write + Send>> = Some(Box::new(file));
    let info = FileInfo {
        table: table.name.clone(),
        snapshot_number: schema
            .metadata()
            .get(SNAPSHOT_KEY)
            .and_then(|n| n.parse().ok()),
    };
    let writer = format
        .writer(
            schema,
            &info,
            Box::new(move || {
                file.take()
                    .ok_or_else(|| std::io::Error::other("one file per table"))
            }),
        )
        .map_err(|e| written(&e))?;
    let mut failure = None;
    let mut rows = 0u64;
    let batches = batches.map_while(|batch| match batch {
        Ok(batch) => {
            rows += batch.num_rows() as u64;
            Some(batch)
        }
        Err(e) => {
            failure = Some(e);
            None
        }
    });
    let done = crate::format::groups::write_in_order(writer, batches);
    if let Some(e) = failure {
        return Err(e);
    }
    done.map_err(|e| written(&e))?;
    Ok(rows)
}
