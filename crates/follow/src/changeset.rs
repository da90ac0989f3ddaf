//! `fbunload follow -o DIR --since BASE --every INTERVAL`: the journal as
//! a chain of change sets in the incremental format, one directory a link
//! (`DIR/00000001`, `DIR/00000002`, …), each named by the next as the run
//! it holds the changes since, so `fbunload apply BASE 00000001`, then
//! the next link to that state, and so on, give each table as it was
//! after the link's last transaction.
//!
//! A link holds, per table changed, the rows as they were at its end
//! (`T.upserts.<ext>`, each key once) and the keys of the rows gone
//! (`T.deletes.<ext>`), in the base run's format, settings and Arrow
//! types (read from its files, or for a text format from its manifest,
//! and encoded by the same encoder a scan uses), folded from the
//! journal's row changes: a key changed
//! is a delete and an upsert. Its manifest records where it ends in the
//! journal (`incremental.journal`), which is where a follow started again
//! goes on: a link is made in a staging directory and renamed into place
//! whole, so a kill leaves either the link or nothing, and no change is
//! lost or held twice across links.
//!
//! `DIR` is read as a stranger's: only names of eight digits are links;
//! each must be a plain directory whose plain-file manifest names the one
//! before it (the base for the first) by SHA-256, with a journal position
//! past that one's; anything else there is refused or left alone, never
//! followed. Files are written only inside `DIR`.
//!
//! What a link's tables changed is held until the link is written (keys
//! and their last row): `--every` bounds it, and so does `--memory`, past
//! which the link is written at the end of the transaction that passed it
//! (a link ends only where a transaction does, so one transaction's rows
//! are held whole).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Decimal256Array,
    Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, RecordBatch, StringArray,
    Time64MicrosecondArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, SchemaRef};
use fbunload_dest::{
    file_name_for, open_verified_listed_file, read_run_manifest, Manifest, ManifestChange,
    ManifestFile, ManifestIncremental, ManifestJournal, ManifestTable, PreviousRunRef,
    MANIFEST_NAME, MANIFEST_VERSION,
};
use fbunload_format::compress::Compressor;
use fbunload_format::jsonl::JsonLinesFormat;
use fbunload_format::{
    BinaryEncoding, ByteFormat, Compression, CsvFormat, CsvOptions, TYPE_METADATA_KEY,
};
use fbunload_journal::{ChangeKind, Committed, Journal, Position, Value};
use sha2::{Digest, Sha256};

use crate::source::{Source, Table};
use crate::target::{Handoff, Resume};
use crate::{FollowError, FollowOptions, FollowProgress};

/// Digits of a link's name: links sort by name.
const LINK_DIGITS: usize = 8;
/// Where a link is made before it is renamed into place.
const STAGING_PREFIX: &str = ".follow-";
/// Rows a record batch of a link's file holds.
const BATCH_ROWS: usize = 65_536;
/// Firebird's day 0 (1858-11-17) in days since 1970-01-01.
const UNIX_EPOCH_DAY: i32 = 40_587;

/// A row of the link being gathered, by its key.
enum Folded {
    /// As it is at the link's end, by field id.
    Row(Vec<Option<Value>>),
    /// Gone: its key's values, in key order.
    Gone(Vec<Option<Value>>),
}

/// A table's changes in the link being gathered, by key.
type Rows = BTreeMap<String, Folded>;

/// The run a link names as its previous one.
#[derive(Debug, Clone)]
struct Previous {
    directory: String,
    snapshot_number: u64,
    sha256: String,
}

/// The chain of change sets in the output directory, and the link being
/// gathered.
pub struct ChangeSets {
    out: PathBuf,
    /// Held while the chain is written (see [`ChangeSets::open`]).
    _lock: fs::File,
    every: Duration,
    base: Manifest,
    base_dir: PathBuf,
    link_format: LinkFormat,
    previous: Previous,
    next_number: u64,
    /// Tables changed since the last link, by name.
    pending: BTreeMap<String, Rows>,
    /// Where the link being gathered ends.
    applied: Position,
    restart: Position,
    transactions: u64,
    last_transaction: u64,
    last_written: Instant,
    /// About how many bytes the rows gathered take, and how many they may.
    held: usize,
    memory_budget: usize,
    started: SystemTime,
    schemas: HashMap<String, SchemaRef>,
    /// Of each table found to be one a link can hold: its field ids by
    /// name.
    fields: HashMap<String, HashMap<String, usize>>,
}

fn usage(why: impl std::fmt::Display) -> FollowError {
    FollowError::Usage(why.to_string())
}

fn io(what: &Path, e: impl std::fmt::Display) -> FollowError {
    FollowError::Target(format!("{}: {e}", what.display()))
}

fn position(text: &str) -> Option<Position> {
    let (sequence, offset) = text.split_once(':')?;
    Some(Position {
        sequence: sequence.parse().ok()?,
        offset: offset.parse().ok()?,
    })
}

impl ChangeSets {
    /// The chain in `options.target` (made if missing), checked against
    /// the base run (`options.since`), and where to go on from: after its
    /// last link, or at the journal's start for the first.
    pub fn open(
        options: &FollowOptions,
        source: &Source,
        journal: &Journal,
    ) -> Result<(ChangeSets, Handoff, Resume), FollowError> {
        let base_dir = options.since.clone().ok_or_else(|| {
            usage(
                "follow -o DIR writes change sets since a --keep-keys --journal run into a \
                 directory: name that run with --since BASE",
            )
        })?;
        let every = options.every.ok_or_else(|| {
            usage("follow -o DIR writes a change set every INTERVAL: give --every (e.g. 10s)")
        })?;
        let refuse_base = |why: String| usage(format!("--since {}: {why}", base_dir.display()));
        let (base, base_sha256) = read_run_manifest(&base_dir).map_err(refuse_base)?;
        let marks = match &base.incremental {
            Some(m) if m.since.is_none() && m.journal.is_none() => m.clone(),
            _ => {
                return Err(refuse_base(
                    "not a run made with --keep-keys (a chain's base); unload with \
                     --keep-keys --journal DIR first"
                        .into(),
                ))
            }
        };
        let link_format = LinkFormat::of(&base.options).map_err(refuse_base)?;
        if marks.database_guid != source.guid {
            return Err(refuse_base(format!(
                "a run of database {}, not of {} ({})",
                marks.database_guid, options.database, source.guid
            )));
        }
        let oldest_unseen = marks.oldest_unseen.unwrap_or(marks.oldest_interesting);
        if oldest_unseen < marks.transaction {
            return Err(refuse_base(format!(
                "so many transactions were running at its snapshot that it kept only a bound \
                 ({oldest_unseen}), not the list the journal needs; run it again when fewer run"
            )));
        }
        let snapshot_number = base.snapshot_number.ok_or_else(|| {
            refuse_base("its manifest has no snapshot number; it was edited".into())
        })?;
        let handoff = Handoff {
            state: base_sha256.clone(),
            database_guid: marks.database_guid.clone(),
            oldest_unseen,
            unseen_below: marks.unseen_below.clone(),
            sequences: BTreeMap::new(),
        };
        let out = PathBuf::from(&options.target);
        fs::create_dir_all(&out).map_err(|e| io(&out, e))?;
        // One follow a chain: the directory itself is locked while it runs.
        let lock = fs::File::open(&out).map_err(|e| io(&out, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(usage(format!(
                    "-o {}: another fbunload follow writes change sets there; stop that one first",
                    out.display()
                )))
            }
            Err(fs::TryLockError::Error(e)) => return Err(io(&out, e)),
        }
        if fs::canonicalize(&out).ok() == fs::canonicalize(&base_dir).ok() {
            return Err(usage(format!(
                "-o {}: that is the base run; give the change sets a directory of their own",
                out.display()
            )));
        }
        let mut previous = Previous {
            directory: base_dir.display().to_string(),
            snapshot_number,
            sha256: base_sha256,
        };
        let mut resume = Resume {
            applied: Position::default(),
            restart: Position {
                sequence: journal.sequences()?.first().copied().unwrap_or(1),
                offset: 0,
            },
        };
        let links = links_in(&out)?;
        for (i, number) in links.iter().enumerate() {
            let name = link_name(*number);
            let dir = out.join(&name);
            let refuse = |why: String| {
                usage(format!(
                    "{}: {why}; it is not a change set this follow wrote (move it away, or \
                     start the chain in an empty directory)",
                    dir.display()
                ))
            };
            if *number != i as u64 + 1 {
                return Err(refuse(format!(
                    "link {} is missing before it",
                    link_name(i as u64 + 1)
                )));
            }
            let meta = fs::symlink_metadata(&dir).map_err(|e| io(&dir, e))?;
            if !meta.is_dir() {
                return Err(refuse("not a plain directory".into()));
            }
            let (manifest, sha256) = read_run_manifest(&dir).map_err(refuse)?;
            let marks = manifest.incremental.as_ref();
            let since = marks.and_then(|m| m.since.as_ref());
            let at = marks.and_then(|m| m.journal.as_ref());
            let (Some(since), Some(at)) = (since, at) else {
                return Err(refuse("its manifest records no journal position".into()));
            };
            if since.manifest_sha256 != previous.sha256
                || since.snapshot_number != previous.snapshot_number
            {
                return Err(refuse(format!(
                    "it names another run than {} as the one before it",
                    previous.directory
                )));
            }
            let (Some(applied), Some(restart)) = (position(&at.applied), position(&at.restart))
            else {
                return Err(refuse("its journal position cannot be read".into()));
            };
            if applied <= resume.applied || restart > applied {
                return Err(refuse(format!(
                    "its journal position {applied} does not come after the one before it ({})",
                    resume.applied
                )));
            }
            resume = Resume { applied, restart };
            previous = Previous {
                directory: dir.display().to_string(),
                snapshot_number: manifest.snapshot_number.unwrap_or_default(),
                sha256,
            };
        }
        remove_staging(&out);
        let sets = ChangeSets {
            out,
            _lock: lock,
            every,
            base,
            base_dir,
            link_format,
            previous,
            next_number: links.len() as u64 + 1,
            pending: BTreeMap::new(),
            applied: resume.applied,
            restart: resume.restart,
            transactions: 0,
            last_transaction: 0,
            last_written: Instant::now(),
            held: 0,
            memory_budget: options.memory_budget,
            started: SystemTime::now(),
            schemas: HashMap::new(),
            fields: HashMap::new(),
        };
        Ok((sets, handoff, resume))
    }

    /// Folds one committed transaction's row changes into the link being
    /// gathered; returns the row changes.
    pub fn add(
        &mut self,
        source: &mut Source,
        ended: &Committed,
        restart: Position,
        progress: &dyn FollowProgress,
    ) -> Result<u64, FollowError> {
        let mut count = 0;
        for change in ended.changes() {
            let change = change?;
            // A table the base run left out (-t, -x) is not followed.
            if self.base_table(&change.table).is_err() {
                continue;
            }
            let table = source.table(&change.table)?;
            let key = self.key_of(source, &table)?;
            let blobs = ended.blobs_of(&table.format, &change)?;
            let decode = |image: &Option<Vec<u8>>| -> Result<Vec<Option<Value>>, FollowError> {
                table
                    .format
                    .decode(image.as_deref().unwrap_or_default(), &blobs)
                    .map_err(|e| FollowError::Source(format!("table {}: {e}", table.name)))
            };
            let rows = self.pending.entry(table.name.clone()).or_default();
            match change.kind {
                ChangeKind::Insert => {
                    let after = decode(&change.after)?;
                    self.held += bytes_of(&after);
                    rows.insert(key_text(&key, &after), Folded::Row(after));
                }
                ChangeKind::Update => {
                    let (before, after) = (decode(&change.before)?, decode(&change.after)?);
                    let (old, new) = (key_text(&key, &before), key_text(&key, &after));
                    if old != new {
                        rows.insert(old, Folded::Gone(key_values(&key, &before)));
                    }
                    self.held += bytes_of(&after);
                    rows.insert(new, Folded::Row(after));
                }
                ChangeKind::Delete => {
                    let before = decode(&change.before)?;
                    rows.insert(
                        key_text(&key, &before),
                        Folded::Gone(key_values(&key, &before)),
                    );
                }
            }
            count += 1;
        }
        self.transactions += 1;
        self.last_transaction = ended.transaction;
        self.passed(ended.end, restart);
        if self.held > self.memory_budget {
            self.write(progress)?;
        }
        Ok(count)
    }

    /// A transaction passed over (the base saw it, or it rolled back):
    /// the link being gathered ends after it.
    pub fn passed(&mut self, end: Position, restart: Position) {
        self.applied = end;
        self.restart = restart;
    }

    /// Writes the link gathered if `--every` has passed since the last.
    pub fn write_if_due(&mut self, progress: &dyn FollowProgress) -> Result<(), FollowError> {
        if self.last_written.elapsed() >= self.every {
            self.write(progress)?;
        }
        Ok(())
    }

    /// The key columns' field ids of `table`, once it is found to be one
    /// a change set can hold: in the base, with a primary key, and no
    /// column the journal does not carry.
    fn key_of(&mut self, source: &mut Source, table: &Table) -> Result<Vec<usize>, FollowError> {
        if !self.fields.contains_key(&table.name) {
            let entry = self.base_table(&table.name)?;
            let key = entry
                .change
                .as_ref()
                .map(|c| c.primary_key.clone())
                .unwrap_or_default();
            if key.is_empty() || table.key.is_empty() {
                return Err(usage(format!(
                    "table {}: it has no primary key, so a change set cannot name its rows; \
                     leave it out of the base run (-x) or give it a primary key",
                    table.name
                )));
            }
            let computed = source.computed_columns(&table.name)?;
            for column in &entry.columns {
                if computed.contains(&column.name)
                    || !table
                        .fields
                        .iter()
                        .any(|f| f.as_deref() == Some(&column.name))
                {
                    return Err(usage(format!(
                        "table {} column {}: not stored in the table's records (computed), so \
                         the journal does not carry it; leave the table out of the base run (-x)",
                        table.name, column.name
                    )));
                }
            }
            let names = table
                .fields
                .iter()
                .enumerate()
                .filter_map(|(id, name)| Some((name.clone()?, id)))
                .collect();
            self.fields.insert(table.name.clone(), names);
        }
        Ok(table.key.clone())
    }

    fn base_table(&self, name: &str) -> Result<&ManifestTable, FollowError> {
        self.base
            .tables
            .iter()
            .find(|t| t.name == name && t.kind == "table")
            .ok_or_else(|| {
                usage(format!(
                    "table {name}: the base run {} does not have it",
                    self.base_dir.display()
                ))
            })
    }

    /// The Arrow schema the base run wrote `name` with (its first file's).
    fn schema_of(&mut self, name: &str) -> Result<SchemaRef, FollowError> {
        if let Some(schema) = self.schemas.get(name) {
            return Ok(schema.clone());
        }
        let entry = self.base_table(name)?;
        let file = entry
            .files
            .iter()
            .find(|f| f.role.is_none())
            .ok_or_else(|| usage(format!("table {name}: the base run lists no file of it")))?;
        let refuse = |e: String| usage(format!("--since {}: {e}", self.base_dir.display()));
        if let LinkFormat::Text { .. } = self.link_format {
            let schema = schema_from_columns(entry).map_err(refuse)?;
            self.schemas.insert(name.to_string(), schema.clone());
            return Ok(schema);
        }
        let handle = open_verified_listed_file(&self.base_dir, file).map_err(refuse)?;
        let schema = if file.name.ends_with(".parquet") {
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(handle)
                .map_err(|e| refuse(format!("{}: {e}", file.name)))?
                .schema()
                .clone()
        } else {
            arrow_ipc::reader::FileReader::try_new(std::io::BufReader::new(handle), None)
                .map_err(|e| refuse(format!("{}: {e}", file.name)))?
                .schema()
        };
        self.schemas.insert(name.to_string(), schema.clone());
        Ok(schema)
    }

    /// Writes the link gathered, if it holds a transaction: made in a
    /// staging directory, every file synced, then renamed into place.
    pub fn write(&mut self, progress: &dyn FollowProgress) -> Result<(), FollowError> {
        self.last_written = Instant::now();
        if self.transactions == 0 {
            return Ok(());
        }
        let started = self.started;
        let staging = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(&self.out)
            .map_err(|e| io(&self.out, e))?;
        let extension = self.link_format.extension().to_string();
        let pending = std::mem::take(&mut self.pending);
        let mut tables = Vec::new();
        for entry in self.base.tables.clone() {
            if entry.kind != "table" {
                continue;
            }
            let key = entry
                .change
                .as_ref()
                .map(|c| c.primary_key.clone())
                .unwrap_or_default();
            let mut table = ManifestTable {
                rows: 0,
                bytes: 0,
                verified: false,
                condition: None,
                files: Vec::new(),
                query: None,
                split_by: None,
                change: Some(ManifestChange {
                    mode: "changes".into(),
                    reason: None,
                    primary_key: key.clone(),
                    keys: None,
                    deletes: Some(0),
                    rechecked_units: None,
                    relation_id: None,
                    format: None,
                }),
                ..entry.clone()
            };
            if let Some(rows) = pending.get(&entry.name) {
                let schema = self.schema_of(&entry.name)?;
                let names = self.fields.get(&entry.name).cloned().unwrap_or_default();
                let upserts: Vec<&Vec<Option<Value>>> = rows
                    .values()
                    .filter_map(|row| match row {
                        Folded::Row(values) => Some(values),
                        Folded::Gone(_) => None,
                    })
                    .collect();
                let deletes: Vec<&Vec<Option<Value>>> = rows
                    .values()
                    .filter_map(|row| match row {
                        Folded::Gone(key) => Some(key),
                        Folded::Row(_) => None,
                    })
                    .collect();
                let key_schema = Arc::new(
                    schema
                        .project(
                            &key.iter()
                                .map(|k| schema.index_of(k))
                                .collect::<Result<Vec<_>, _>>()
                                .map_err(|e| usage(format!("table {}: {e}", entry.name)))?,
                        )
                        .map_err(|e| usage(format!("table {}: {e}", entry.name)))?,
                );
                let charsets = &entry.columns;
                let upsert_file = self.write_file(
                    staging.path(),
                    &file_name_for(&entry.name, &format!("upserts.{extension}")),
                    &schema,
                    &entry.name,
                    charsets,
                    upserts.iter().map(|r| RowRef::Fields(r, &names)),
                )?;
                let delete_file = self.write_file(
                    staging.path(),
                    &file_name_for(&entry.name, &format!("deletes.{extension}")),
                    &key_schema,
                    &entry.name,
                    charsets,
                    deletes.iter().map(|r| RowRef::Key(r)),
                )?;
                table.rows = upserts.len() as u64;
                table.bytes = upsert_file.bytes + delete_file.bytes;
                table.change.as_mut().expect("set above").deletes = Some(deletes.len() as u64);
                table.files = vec![
                    ManifestFile {
                        role: Some("upserts".into()),
                        ..upsert_file
                    },
                    ManifestFile {
                        role: Some("deletes".into()),
                        ..delete_file
                    },
                ];
            }
            tables.push(table);
        }
        let manifest = Manifest {
            manifest_version: MANIFEST_VERSION,
            fbunload_version: env!("CARGO_PKG_VERSION").into(),
            server_version: self.base.server_version.clone(),
            database: self.base.database.clone(),
            // The journal has no snapshots: a link is named by the last
            // transaction it holds.
            snapshot_number: Some(self.last_transaction),
            consistency: "journal".into(),
            started: rfc3339(started),
            finished: rfc3339(SystemTime::now()),
            options: self.base.options.clone(),
            tables,
            files: Vec::new(),
            incremental: Some(ManifestIncremental {
                since: Some(PreviousRunRef {
                    directory: self.previous.directory.clone(),
                    snapshot_number: self.previous.snapshot_number,
                    manifest_sha256: self.previous.sha256.clone(),
                }),
                journal: Some(ManifestJournal {
                    applied: self.applied.to_string(),
                    restart: self.restart.to_string(),
                    transactions: self.transactions,
                    last_transaction: self.last_transaction,
                }),
                ..self.base.incremental.clone().expect("checked at open")
            }),
            state_of: None,
            resumed: None,
        };
        let text = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| FollowError::Target(format!("manifest: {e}")))?;
        let manifest_path = staging.path().join(MANIFEST_NAME);
        write_synced(&manifest_path, &text)?;
        let name = link_name(self.next_number);
        let link = self.out.join(&name);
        if fs::symlink_metadata(&link).is_ok() {
            return Err(usage(format!(
                "{}: something put it there while this follow wrote the chain; move it away \
                 and start the follow again",
                link.display()
            )));
        }
        let staged = staging.keep();
        fs::rename(&staged, &link).map_err(|e| io(&link, e))?;
        // The rename itself made durable.
        if let Ok(dir) = fs::File::open(&self.out) {
            let _ = dir.sync_all();
        }
        self.previous = Previous {
            directory: link.display().to_string(),
            snapshot_number: self.last_transaction,
            sha256: Sha256::digest(&text)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        };
        progress.linked(&link, self.transactions, self.applied);
        self.next_number += 1;
        self.transactions = 0;
        self.held = 0;
        self.started = SystemTime::now();
        Ok(())
    }

    /// Writes one file of a link: `rows` in `schema`, as the base's
    /// format does; its size and SHA-256 for the manifest.
    fn write_file<'r>(
        &self,
        dir: &Path,
        name: &str,
        schema: &SchemaRef,
        table: &str,
        columns: &[fbunload_dest::ManifestColumn],
        rows: impl Iterator<Item = RowRef<'r>>,
    ) -> Result<ManifestFile, FollowError> {
        let path = dir.join(name);
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        let mut rows = rows.peekable();
        let failed = |e: String| FollowError::Target(format!("{}: {e}", path.display()));
        let mut batches = Vec::new();
        loop {
            let chunk: Vec<RowRef> = rows.by_ref().take(BATCH_ROWS).collect();
            if chunk.is_empty() && !batches.is_empty() {
                break;
            }
            batches.push(batch(schema, table, columns, &chunk)?);
            if rows.peek().is_none() {
                break;
            }
        }
        if let LinkFormat::Text {
            format,
            compression,
            ..
        } = &self.link_format
        {
            let mut text = format.header(schema);
            let mut encoder = format.encoder(schema.clone());
            for b in &batches {
                encoder
                    .encode(b, &mut text)
                    .map_err(|e| failed(e.to_string()))?;
            }
            let mut out = std::io::BufWriter::new(&file);
            match compression {
                None => out.write_all(&text).map_err(|e| io(&path, e))?,
                Some(c) => {
                    let mut compressed = Compressor::new(*c, &mut out).map_err(|e| io(&path, e))?;
                    compressed.write_all(&text).map_err(|e| io(&path, e))?;
                    compressed.finish().map_err(|e| io(&path, e))?;
                }
            }
            out.flush().map_err(|e| io(&path, e))?;
        } else if name.ends_with(".arrow") {
            let mut writer = arrow_ipc::writer::FileWriter::try_new(&file, schema)
                .map_err(|e| failed(e.to_string()))?;
            for b in &batches {
                writer.write(b).map_err(|e| failed(e.to_string()))?;
            }
            writer.finish().map_err(|e| failed(e.to_string()))?;
        } else {
            let properties = parquet::file::properties::WriterProperties::builder()
                .set_compression(compression(&self.base))
                .build();
            let mut writer =
                parquet::arrow::ArrowWriter::try_new(&file, schema.clone(), Some(properties))
                    .map_err(|e| failed(e.to_string()))?;
            for b in &batches {
                writer.write(b).map_err(|e| failed(e.to_string()))?;
            }
            writer.close().map_err(|e| failed(e.to_string()))?;
        }
        file.sync_all().map_err(|e| io(&path, e))?;
        let mut hasher = Sha256::new();
        let mut reader = fs::File::open(&path).map_err(|e| io(&path, e))?;
        let bytes = std::io::copy(&mut reader, &mut hasher).map_err(|e| io(&path, e))?;
        Ok(ManifestFile {
            name: name.to_string(),
            bytes,
            sha256: hasher
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
            role: None,
        })
    }
}

/// How a link's files are written: in the base run's format, with its
/// settings as its manifest records them.
enum LinkFormat {
    Parquet,
    Arrow,
    /// csv, tsv or jsonl, encoded as a scan encodes it.
    Text {
        format: Arc<dyn ByteFormat>,
        compression: Option<Compression>,
        extension: String,
    },
}

impl LinkFormat {
    /// The format of the run whose manifest records `options`, or why a
    /// link cannot be written in it.
    fn of(options: &BTreeMap<String, serde_json::Value>) -> Result<LinkFormat, String> {
        let text = |name: &str| options.get(name).and_then(|v| v.as_str());
        let flag = |name: &str| options.get(name).and_then(|v| v.as_bool());
        if options.contains_key("max_rows") || options.contains_key("max_bytes") {
            return Err(
                "a run cut into parts (--max-rows, --max-bytes); a change set from the \
                 journal holds one file a table: run the base without them"
                    .into(),
            );
        }
        let binary = match text("binary") {
            None | Some("hex") => BinaryEncoding::Hex,
            Some("base64") => BinaryEncoding::Base64,
            Some(other) => {
                return Err(format!(
                    "its binary encoding {other:?} is not one fbunload writes"
                ))
            }
        };
        let csv = |delimiter: u8| CsvOptions {
            delimiter,
            header: flag("header").unwrap_or(true),
            null: text("null").unwrap_or_default().to_string(),
            binary,
            crlf: flag("crlf").unwrap_or(false),
        };
        let format: Arc<dyn ByteFormat> = match text("format").unwrap_or("csv") {
            "parquet" => return Ok(LinkFormat::Parquet),
            "arrow" => return Ok(LinkFormat::Arrow),
            "csv" => {
                let delimiter = match text("delimiter") {
                    None => b',',
                    Some(d) if d.len() == 1 => d.as_bytes()[0],
                    Some(d) => return Err(format!("its delimiter {d:?} is not one byte")),
                };
                Arc::new(CsvFormat::new(csv(delimiter)))
            }
            "tsv" => Arc::new(CsvFormat::tsv(csv(b'\t'))),
            "jsonl" => Arc::new(JsonLinesFormat::new(binary)),
            other => return Err(format!("its format {other:?} is not one fbunload writes")),
        };
        let compression = match text("compress") {
            None => None,
            Some("gzip") => Some(Compression::Gzip),
            Some("zstd") => Some(Compression::Zstd),
            Some(other) => {
                return Err(format!(
                    "its compression {other:?} is not one fbunload writes"
                ))
            }
        };
        let extension = match compression {
            None => format.extension().to_string(),
            Some(c) => format!("{}.{}", format.extension(), c.extension()),
        };
        Ok(LinkFormat::Text {
            format,
            compression,
            extension,
        })
    }

    /// What ends a link file's name after its role (`upserts.csv.zst`).
    fn extension(&self) -> &str {
        match self {
            LinkFormat::Parquet => "parquet",
            LinkFormat::Arrow => "arrow",
            LinkFormat::Text { extension, .. } => extension,
        }
    }
}

/// The Arrow schema a scan encodes `table` with, from its manifest's
/// columns: their Arrow types and Firebird types (which the text formats
/// write some values by).
fn schema_from_columns(table: &ManifestTable) -> Result<SchemaRef, String> {
    let fields = table
        .columns
        .iter()
        .map(|c| {
            let data_type: DataType = c
                .arrow_type
                .parse()
                .map_err(|e| format!("table {} column {}: {e}", table.name, c.name))?;
            Ok(
                arrow_schema::Field::new(&c.name, data_type, true).with_metadata(HashMap::from([
                    (TYPE_METADATA_KEY.to_string(), c.firebird_type.clone()),
                ])),
            )
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Arc::new(arrow_schema::Schema::new(fields)))
}

/// A row of a link's file: a whole row by field id (with the fields'
/// names), or a key's values in key order.
enum RowRef<'r> {
    Fields(&'r Vec<Option<Value>>, &'r HashMap<String, usize>),
    Key(&'r Vec<Option<Value>>),
}

impl RowRef<'_> {
    fn value(&self, column: usize, name: &str) -> Option<&Value> {
        match self {
            RowRef::Fields(row, names) => row.get(*names.get(name)?)?.as_ref(),
            RowRef::Key(values) => values.get(column)?.as_ref(),
        }
    }
}

/// About the bytes a row takes in memory.
fn bytes_of(row: &[Option<Value>]) -> usize {
    row.iter()
        .map(|value| {
            32 + match value {
                Some(Value::Text { bytes, .. } | Value::Blob { bytes, .. }) => bytes.len(),
                Some(Value::DecFloat(text)) => text.len(),
                _ => 0,
            }
        })
        .sum()
}

fn key_values(key: &[usize], row: &[Option<Value>]) -> Vec<Option<Value>> {
    key.iter()
        .map(|id| row.get(*id).cloned().flatten())
        .collect()
}

fn key_text(key: &[usize], row: &[Option<Value>]) -> String {
    key.iter()
        .map(|id| format!("{:?}", row.get(*id)))
        .collect::<Vec<_>>()
        .join("\u{1}")
}

/// `rows` as a batch of `schema`: each value turned into the Arrow type
/// the base run read its column as (crates/decode's mapping).
fn batch(
    schema: &SchemaRef,
    table: &str,
    columns: &[fbunload_dest::ManifestColumn],
    rows: &[RowRef],
) -> Result<RecordBatch, FollowError> {
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (i, field) in schema.fields().iter().enumerate() {
        let name = field.name();
        let padded = columns
            .iter()
            .find(|c| c.name == *name)
            .is_some_and(|c| c.firebird_type.starts_with("CHAR("));
        let values = rows.iter().map(|row| row.value(i, name));
        arrays.push(array(table, name, field.data_type(), padded, values)?);
    }
    RecordBatch::try_new(schema.clone(), arrays)
        .map_err(|e| FollowError::Source(format!("table {table}: {e}")))
}

/// One column's values as an array of `data_type`.
fn array<'v>(
    table: &str,
    column: &str,
    data_type: &DataType,
    padded: bool,
    values: impl Iterator<Item = Option<&'v Value>>,
) -> Result<ArrayRef, FollowError> {
    let mismatch = |value: &Value| {
        if let Value::BlobNotCarried(_) = value {
            return FollowError::Source(format!(
                "table {table} column {column}: the journal holds a new row whose blob it does \
                 not carry; the journal is incomplete: start a new chain with --keep-keys"
            ));
        }
        let mut shown = format!("{value:?}");
        shown.truncate(shown.char_indices().nth(60).map_or(shown.len(), |(i, _)| i));
        FollowError::Source(format!(
            "table {table} column {column}: the journal holds {shown} where the base run has \
             {data_type}; the column changed since the base run: start a new chain with \
             --keep-keys"
        ))
    };
    let integer = |value: &Value| match value {
        Value::Integer { value, scale: 0 } => Ok(*value),
        other => Err(mismatch(other)),
    };
    // Each value, or the error of the first that does not fit.
    macro_rules! collect {
        ($array:ty, $convert:expr) => {{
            let converted = values
                .map(|v| {
                    v.filter(|v| !matches!(v, Value::Null))
                        .map($convert)
                        .transpose()
                })
                .collect::<Result<Vec<_>, FollowError>>()?;
            Arc::new(<$array>::from(converted).with_data_type(data_type.clone())) as ArrayRef
        }};
    }
    let text = |value: &Value| -> Result<String, FollowError> {
        let mut text = match value {
            Value::Text { bytes, charset } => {
                crate::source::text_of(table, column, bytes, *charset)?
            }
            Value::Blob { bytes, charset, .. } => {
                crate::source::text_of(table, column, bytes, *charset)?
            }
            Value::DecFloat(text) => text.clone(),
            other => return Err(mismatch(other)),
        };
        if padded {
            text.truncate(text.trim_end_matches(' ').len());
        }
        Ok(text)
    };
    let bytes = |value: &Value| -> Result<Vec<u8>, FollowError> {
        match value {
            Value::Text { bytes, .. } | Value::Blob { bytes, .. } => Ok(bytes.clone()),
            other => Err(mismatch(other)),
        }
    };
    let micros = |date: i32, time: u32| {
        i64::from(date - UNIX_EPOCH_DAY) * 86_400_000_000 + i64::from(time) * 100
    };
    Ok(match data_type {
        DataType::Boolean => {
            let converted = values
                .map(|v| match v {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::Boolean(b)) => Ok(Some(*b)),
                    Some(other) => Err(mismatch(other)),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(BooleanArray::from(converted))
        }
        DataType::Int16 => collect!(Int16Array, |v| integer(v)
            .and_then(|i| i16::try_from(i).map_err(|_| mismatch(v)))),
        DataType::Int32 => collect!(Int32Array, |v| integer(v)
            .and_then(|i| i32::try_from(i).map_err(|_| mismatch(v)))),
        DataType::Int64 => collect!(Int64Array, |v| integer(v)
            .and_then(|i| i64::try_from(i).map_err(|_| mismatch(v)))),
        DataType::Decimal128(precision, scale) => {
            let limit = 10i128.pow(u32::from(*precision).min(38));
            collect!(Decimal128Array, |v| match scaled(v, *scale) {
                Some(n) if n.unsigned_abs() < limit.unsigned_abs() => Ok(n),
                Some(n) => Err(FollowError::Usage(format!(
                    "table {table} column {column}: value {n} has more digits than the base \
                     run's {data_type} holds; start a new chain with --decimal256 (as a scan \
                     of it would be refused)"
                ))),
                None => Err(mismatch(v)),
            })
        }
        DataType::Decimal256(_, scale) => collect!(Decimal256Array, |v| scaled(v, *scale)
            .map(arrow_buffer::i256::from_i128)
            .ok_or_else(|| mismatch(v))),
        DataType::Float32 => collect!(Float32Array, |v| match v {
            Value::Float(f) => Ok(*f),
            other => Err(mismatch(other)),
        }),
        DataType::Float64 => collect!(Float64Array, |v| match v {
            Value::Double(d) => Ok(*d),
            Value::Float(f) => Ok(f64::from(*f)),
            other => Err(mismatch(other)),
        }),
        DataType::Date32 => collect!(Date32Array, |v| match v {
            Value::Date(d) => Ok(d - UNIX_EPOCH_DAY),
            other => Err(mismatch(other)),
        }),
        DataType::Time64(_) => collect!(Time64MicrosecondArray, |v| match v {
            Value::Time(t) | Value::TimeTz { time: t, .. } => Ok(i64::from(*t) * 100),
            other => Err(mismatch(other)),
        }),
        DataType::Timestamp(_, _) => collect!(TimestampMicrosecondArray, |v| match v {
            Value::Timestamp { date, time } | Value::TimestampTz { date, time, .. } => {
                Ok(micros(*date, *time))
            }
            other => Err(mismatch(other)),
        }),
        DataType::Utf8 => {
            let converted = values
                .map(|v| {
                    v.filter(|v| !matches!(v, Value::Null))
                        .map(text)
                        .transpose()
                })
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(StringArray::from(converted))
        }
        DataType::Binary => {
            let converted = values
                .map(|v| {
                    v.filter(|v| !matches!(v, Value::Null))
                        .map(bytes)
                        .transpose()
                })
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(BinaryArray::from_iter(converted))
        }
        other => {
            return Err(FollowError::Usage(format!(
                "table {table} column {column}: a change set from the journal cannot hold its \
                 type ({other}: arrays do not travel in Firebird's journal); leave the table \
                 out of the base run (-x)"
            )))
        }
    })
}

/// A NUMERIC's unscaled integer at `scale` decimals.
fn scaled(value: &Value, scale: i8) -> Option<i128> {
    let Value::Integer { value, scale: own } = value else {
        return None;
    };
    let wanted = u32::try_from(scale).ok()?;
    let own = u32::from(*own);
    if own > wanted {
        return None;
    }
    value.checked_mul(10i128.checked_pow(wanted - own)?)
}

fn compression(base: &Manifest) -> parquet::basic::Compression {
    use parquet::basic::{Compression, GzipLevel, ZstdLevel};
    match base.options.get("compression").and_then(|c| c.as_str()) {
        Some("snappy") => Compression::SNAPPY,
        Some("gzip") => Compression::GZIP(GzipLevel::default()),
        Some("none") => Compression::UNCOMPRESSED,
        _ => Compression::ZSTD(ZstdLevel::default()),
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), FollowError> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io(path, e))?;
    file.write_all(bytes).map_err(|e| io(path, e))?;
    file.sync_all().map_err(|e| io(path, e))
}

fn rfc3339(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn link_name(number: u64) -> String {
    format!("{number:0LINK_DIGITS$}")
}

/// The numbers of the links in `out`: its names of eight digits.
fn links_in(out: &Path) -> Result<Vec<u64>, FollowError> {
    let mut numbers = Vec::new();
    for entry in fs::read_dir(out).map_err(|e| io(out, e))? {
        let name = entry.map_err(|e| io(out, e))?.file_name();
        let name = name.to_string_lossy();
        if name.len() == LINK_DIGITS && name.bytes().all(|b| b.is_ascii_digit()) {
            numbers.push(name.parse().expect("digits"));
        }
    }
    numbers.sort_unstable();
    Ok(numbers)
}

/// Links a killed follow left half made: plain directories of ours, never
/// what a link points at.
fn remove_staging(out: &Path) {
    let Ok(entries) = fs::read_dir(out) else {
        return;
    };
    for entry in entries.flatten() {
        let ours = entry
            .file_name()
            .to_string_lossy()
            .starts_with(STAGING_PREFIX);
        if ours && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}
