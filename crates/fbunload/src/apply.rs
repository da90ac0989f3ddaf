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
//! Both directories are read as untrusted: manifests must be plain files,
//! and every file is read through its manifest entry, its size and SHA-256
//! checked. The change set must name the old run (or the state a previous
//! apply made of it) by its manifest's SHA-256.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::SchemaRef;
use fbunload_dest::{
    file_name_for, key_set, verified_listed_file, KeyEncoder, Manifest, ManifestFile,
    ManifestTable, MANIFEST_NAME,
};
use sha2::{Digest, Sha256};

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
            "reads Parquet and Arrow runs; this one is {other}: apply it with DuckDB \
             (docs/command-line.md, Incremental unloads), or unload with -f parquet"
        ))),
    }
}

/// The batches of `files` of `dir`, each checked against its manifest.
fn read_files(dir: &Path, files: &[&ManifestFile]) -> Result<Vec<RecordBatch>, Error> {
    let mut batches = Vec::new();
    for file in files {
        let contents = verified_listed_file(dir, file).map_err(fail)?;
        let bad = |e: &dyn std::fmt::Display| fail(format!("{}: {e}", file.name));
        if file.name.ends_with(".parquet") {
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                bytes::Bytes::from(contents),
            )
            .and_then(|b| b.build())
            .map_err(|e| bad(&e))?;
            for batch in reader {
                batches.push(batch.map_err(|e| bad(&e))?);
            }
        } else if file.name.ends_with(".arrow") {
            let reader =
                arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(contents), None)
                    .map_err(|e| bad(&e))?;
            for batch in reader {
                batches.push(batch.map_err(|e| bad(&e))?);
            }
        } else {
            return Err(bad(&"not a Parquet or Arrow file"));
        }
    }
    Ok(batches)
}

fn files_with_role<'a>(table: &'a ManifestTable, role: Option<&str>) -> Vec<&'a ManifestFile> {
    table
        .files
        .iter()
        .filter(|f| f.role.as_deref() == role)
        .collect()
}

/// The key columns of `batch`, as a batch of its own.
fn key_columns(batch: &RecordBatch, key: &[String]) -> Result<RecordBatch, Error> {
    let indices: Vec<usize> = key
        .iter()
        .map(|k| {
            batch
                .schema()
                .index_of(k)
                .map_err(|_| fail(format!("no key column {k} in a file")))
        })
        .collect::<Result<_, _>>()?;
    batch.project(&indices).map_err(|e| fail(e))
}

/// Every table of the change set in `changes` applied to the run (or
/// state) in `old`.
pub fn apply_tables(old: &Path, changes: &Path) -> Result<Vec<AppliedTable>, Error> {
    let (old_manifest, old_digest) = read_manifest(old)?;
    let (change_manifest, _) = read_manifest(changes)?;
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
    let old_run = old_manifest.state_of.clone().unwrap_or(old_digest);
    if since.manifest_sha256 != old_run {
        return Err(fail(format!(
            "{} holds the changes since another run than {} (its manifest's SHA-256 is not \
             the one the change set names)",
            changes.display(),
            old.display()
        )));
    }
    let format = format_of(&change_manifest)?;
    if format_of(&old_manifest)? != format {
        return Err(fail("the two runs are in different formats"));
    }
    let mut applied = Vec::new();
    for table in change_manifest.tables.iter().filter(|t| t.kind == "table") {
        let change = table.change.as_ref();
        let batches = match change.map(|c| c.mode.as_str()) {
            Some("changes") => {
                let key = &change.expect("matched").primary_key;
                let previous = old_manifest
                    .tables
                    .iter()
                    .find(|t| t.name == table.name && t.kind == "table")
                    .ok_or_else(|| fail(format!("table {} is not in the old run", table.name)))?;
                let old_rows = read_files(old, &files_with_role(previous, None))?;
                let upserts = read_files(changes, &files_with_role(table, Some("upserts")))?;
                let deletes = read_files(changes, &files_with_role(table, Some("deletes")))?;
                let mut gone: HashSet<Vec<u8>> = key_set(&deletes).map_err(fail)?;
                let upsert_keys: Vec<RecordBatch> = upserts
                    .iter()
                    .map(|b| key_columns(b, key))
                    .collect::<Result<_, _>>()?;
                gone.extend(key_set(&upsert_keys).map_err(fail)?);
                let mut state = Vec::new();
                let mut encoded = Vec::new();
                for batch in old_rows {
                    let keys = key_columns(&batch, key)?;
                    let encoder = KeyEncoder::new(&keys).map_err(fail)?;
                    let keep: BooleanArray = (0..batch.num_rows())
                        .map(|row| {
                            encoder.key(row, &mut encoded);
                            Some(!gone.contains(&encoded))
                        })
                        .collect();
                    state.push(
                        arrow_select::filter::filter_record_batch(&batch, &keep).map_err(fail)?,
                    );
                }
                state.extend(upserts);
                state
            }
            _ => read_files(changes, &files_with_role(table, None))?,
        };
        let Some(schema) = batches.first().map(|b| b.schema()) else {
            applied.push(AppliedTable {
                name: table.name.clone(),
                schema: Arc::new(arrow_schema::Schema::empty()),
                batches,
            });
            continue;
        };
        let batches = batches
            .into_iter()
            .filter(|b| b.num_rows() > 0)
            .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()).map_err(fail))
            .collect::<Result<_, _>>()?;
        applied.push(AppliedTable {
            name: table.name.clone(),
            schema,
            batches,
        });
    }
    Ok(applied)
}

/// [`apply_tables`], written into `out` (a new or empty directory) as one
/// file per table in the runs' format, with a manifest that `fbunload
/// check` verifies and that a later apply starts from.
pub fn apply_to_directory(
    old: &Path,
    changes: &Path,
    out: &Path,
) -> Result<Vec<(String, u64)>, Error> {
    if fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        return Err(fail(format!(
            "{} is not empty; give a new directory",
            out.display()
        )));
    }
    let tables = apply_tables(old, changes)?;
    let (mut manifest, change_digest) = read_manifest(changes)?;
    let format = format_of(&manifest)?;
    fs::create_dir_all(out).map_err(|e| fail(format!("{}: {e}", out.display())))?;
    let mut rows = Vec::new();
    manifest.tables.retain(|t| t.kind == "table");
    for (entry, table) in manifest.tables.iter_mut().zip(&tables) {
        let name = file_name_for(&table.name, &format);
        let path = out.join(&name);
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| fail(format!("{}: {e}", path.display())))?;
        let written = |e: &dyn std::fmt::Display| fail(format!("{}: {e}", path.display()));
        if format == "parquet" {
            let mut writer = parquet::arrow::ArrowWriter::try_new(file, table.schema.clone(), None)
                .map_err(|e| written(&e))?;
            for batch in &table.batches {
                writer.write(batch).map_err(|e| written(&e))?;
            }
            writer.close().map_err(|e| written(&e))?;
        } else {
            let mut writer = arrow_ipc::writer::FileWriter::try_new(file, &table.schema)
                .map_err(|e| written(&e))?;
            for batch in &table.batches {
                writer.write(batch).map_err(|e| written(&e))?;
            }
            writer.finish().map_err(|e| written(&e))?;
        }
        let contents = fs::read(&path).map_err(|e| written(&e))?;
        let count: u64 = table.batches.iter().map(|b| b.num_rows() as u64).sum();
        entry.files = vec![ManifestFile {
            name,
            bytes: contents.len() as u64,
            sha256: crate::incremental::hex(&Sha256::digest(&contents)),
            role: None,
        }];
        entry.bytes = contents.len() as u64;
        entry.rows = count;
        entry.change = None;
        entry.verified = false;
        rows.push((table.name.clone(), count));
    }
    manifest.files.clear();
    manifest.incremental = None;
    manifest.state_of = Some(change_digest);
    let mut text = serde_json::to_vec_pretty(&manifest).map_err(fail)?;
    text.push(b'\n');
    fs::write(out.join(MANIFEST_NAME), text)
        .map_err(|e| fail(format!("{}: {e}", out.display())))?;
    Ok(rows)
}
