//! A PostgreSQL run that keeps its state (`--keep-keys`), and the syncs
//! that follow it: the file machinery of incremental runs does every
//! read (the keys, the places, the change set at a new snapshot, every
//! check of a chain), into a private directory, while the rows it reads
//! go on to PostgreSQL as they come ([`Tee`]) and only there: the file
//! machinery writes the keys and the deletes, not the tables' rows
//! (`FileOutput::without_table_files`). The state the next run
//! needs (the manifest and the keys files) is kept in the target
//! (`fbunload_dest_postgres::sync`); a sync writes it back to a private
//! directory and reads it there as it would read a stranger's `--since`
//! directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arrow_array::RecordBatch;
use arrow_schema::{Schema as ArrowSchema, SchemaRef};
use fbunload_dest::{
    is_plain_name, verified_listed_file, FileOutput, Manifest, ManifestFile, MANIFEST_NAME,
};
use fbunload_dest_postgres::sync::{Apply, NewState, TableLink};
use fbunload_dest_postgres::PostgresDestination;
use fbunload_exec::{Destination, ExecError, RunInfo, UnitWriter, Written};
use fbunload_plan::incremental::DB_KEY_COLUMN;
use fbunload_plan::{Plan, Unit};
use sha2::{Digest, Sha256};

use crate::Error;

/// Hands every unit to the file machinery and, of the tables' own reads
/// (not the helper reads of an incremental run), their columns without
/// the DB_KEY to PostgreSQL.
pub(crate) struct Tee<'a> {
    pub files: &'a FileOutput,
    pub pg: &'a PostgresDestination,
    /// Per entry of the plan: where it goes in PostgreSQL, if it does.
    map: OnceLock<Vec<Option<ToPg>>>,
}

impl<'a> Tee<'a> {
    pub fn new(files: &'a FileOutput, pg: &'a PostgresDestination) -> Self {
        Tee {
            files,
            pg,
            map: OnceLock::new(),
        }
    }
}

impl Destination for Tee<'_> {
    fn keeps_schema(&self) -> bool {
        true
    }

    fn start(&self, run: &RunInfo<'_>) -> Result<(), ExecError> {
        self.files.start(run)?;
        // Not a clone of the whole plan emptied: its tables' vector (three
        // entries a table in a link, 8.9 MB at 5,000 tables) would stay
        // allocated, unused, as long as PostgreSQL's side keeps the plan.
        let source = run.plan;
        let mut plan = Plan {
            tables: Vec::new(),
            units: Vec::new(),
            unit_pages: source.unit_pages,
            database_guid: source.database_guid.clone(),
            database_file_id: source.database_file_id.clone(),
            table_formats: source.table_formats.clone(),
            row_places: source.row_places,
        };
        let mut schemas: Vec<SchemaRef> = Vec::new();
        let mut map = Vec::new();
        for (table, schema) in run.plan.tables.iter().zip(run.schemas) {
            if table.role.is_helper() {
                map.push(None);
                continue;
            }
            let columns: Vec<usize> = (0..schema.fields().len())
                .filter(|&i| schema.field(i).name() != DB_KEY_COLUMN)
                .collect();
            let projected = schema
                .project(&columns)
                .map_err(|e| ExecError::Internal(e.to_string()))?;
            map.push(Some((plan.tables.len(), columns)));
            plan.tables.push(table.clone());
            schemas.push(std::sync::Arc::new(ArrowSchema::new_with_metadata(
                projected.fields().clone(),
                projected.metadata().clone(),
            )));
        }
        let _ = self.map.set(map);
        self.pg.start(&RunInfo {
            plan: &plan,
            schemas: &schemas,
            snapshot_number: run.snapshot_number,
            snapshot_marks: run.snapshot_marks,
            schema_sql: run.schema_sql,
            schema: run.schema,
        })
    }

    fn begin_unit(&self, unit: &Unit) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        let files = self.files.begin_unit(unit)?;
        let to_pg = self.map.get().and_then(|m| m[unit.table].clone());
        let pg = match &to_pg {
            Some((table, _)) => Some(self.pg.begin_unit(&Unit {
                table: *table,
                ..*unit
            })?),
            None => None,
        };
        Ok(Box::new(TeeUnit {
            files,
            pg,
            columns: to_pg.map(|(_, c)| c).unwrap_or_default(),
        }))
    }

    fn finish(&self) -> Result<Vec<Written>, ExecError> {
        let written = self.files.finish()?;
        // Keys and indices built; the publish waits for the state.
        self.pg.finish()?;
        Ok(written)
    }

    fn follow_ups(&self) -> Result<Vec<Unit>, ExecError> {
        self.files.follow_ups()
    }

    fn stop(&self) {
        self.files.stop();
        self.pg.stop();
    }
}

/// An entry's table in PostgreSQL's plan, and the columns it takes.
type ToPg = (usize, Vec<usize>);

struct TeeUnit<'a> {
    files: Box<dyn UnitWriter + 'a>,
    pg: Option<Box<dyn UnitWriter + 'a>>,
    columns: Vec<usize>,
}

impl UnitWriter for TeeUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        if let Some(pg) = self.pg.as_mut() {
            let projected = batch
                .project(&self.columns)
                .map_err(|e| ExecError::Internal(e.to_string()))?;
            pg.write(projected)?;
        }
        self.files.write(batch)
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        let this = *self;
        if let Some(pg) = this.pg {
            if let Err(e) = pg.finish() {
                let _ = this.files.abort();
                return Err(e);
            }
        }
        this.files.finish()
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        let this = *self;
        if let Some(pg) = this.pg {
            pg.abort()?;
        }
        this.files.abort()
    }
}

/// A directory of this process's own under the system's temporary one
/// (`TMPDIR`), readable by its user only, removed when dropped.
pub(crate) struct PrivateDir(PathBuf);

impl PrivateDir {
    pub fn new() -> Result<Self, Error> {
        remove_left_by_killed_runs();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path =
            std::env::temp_dir().join(format!("fbunload-pg-{}-{nanos:08x}", std::process::id()));
        let mut builder = fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&path).map_err(|e| {
            Error::Usage(format!(
                "cannot make a private directory {} for the run's keys: {e} (set TMPDIR)",
                path.display()
            ))
        })?;
        Ok(PrivateDir(path))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// Removes the private directories of runs killed outright (`SIGKILL`
/// skips [`Drop`]): those named for a process that is gone. Where
/// processes cannot be looked up (not Linux), they stay.
fn remove_left_by_killed_runs() {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("fbunload-pg-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn refuse(schema: &str, why: impl std::fmt::Display) -> Error {
    Error::Usage(format!(
        "schema {schema}: {why}; nothing was changed: reload it whole with --overwrite \
         --keep-keys"
    ))
}

/// Writes the state the target holds into `dir`, as a `--since`
/// directory, and returns its manifest. The state is read as a
/// stranger's: plain names only, the manifest the one the target's
/// latest run names (by SHA-256); the keys files are checked against it
/// as `--since` checks any directory.
pub(crate) fn write_base(
    dir: &Path,
    pg: &PostgresDestination,
    schema: &str,
) -> Result<Manifest, Error> {
    let digest = match pg.base_state() {
        Some(base) => base.digest.clone(),
        None => return Err(Error::Internal("write_base without a base state".into())),
    };
    fs::create_dir(dir).map_err(|e| Error::Usage(format!("{}: {e}", dir.display())))?;
    let mut manifest = None;
    // Each file written as it is fetched and dropped: the state of
    // thousands of tables is never held whole.
    pg.each_base_file(|name, bytes| -> Result<(), Error> {
        // As a manifest's names are judged, and stricter: no backslash
        // or NUL on any platform, no name longer than a file system takes.
        let plain = is_plain_name(&name) && !name.contains(['\\', '\0']) && name.len() <= 255;
        if !plain {
            return Err(refuse(
                schema,
                format!(
                    "its state names a file {} (not a plain name): it was edited",
                    crate::printable(&name)
                ),
            ));
        }
        if name == MANIFEST_NAME {
            let found = crate::incremental::hex(&Sha256::digest(&bytes));
            if found != digest {
                return Err(refuse(
                    schema,
                    format!(
                        "the manifest of its state has SHA-256 {found}, and its latest run \
                         names {digest}: it was edited"
                    ),
                ));
            }
            manifest = Some(
                serde_json::from_slice::<Manifest>(&bytes)
                    .map_err(|e| refuse(schema, format!("its state's manifest: {e}")))?,
            );
        }
        fs::write(dir.join(&name), &bytes)
            .map_err(|e| Error::Usage(format!("{}: {e}", dir.display())))
    })?;
    manifest.ok_or_else(|| refuse(schema, "its state has no manifest: it was edited"))
}

/// The state a run in `dir` leaves: its manifest and keys files, by name.
/// None is read here: each is read when it is written into the target,
/// checked then against the manifest (a keys file) or the digest taken
/// here (the manifest), so the state is never in memory whole.
pub(crate) fn new_state(dir: &Path, manifest: &Manifest) -> Result<NewState, Error> {
    let keys = manifest
        .tables
        .iter()
        .flat_map(|t| &t.files)
        .filter(|f| f.role.as_deref() == Some("keys"))
        .cloned()
        .collect();
    state_read_as_written(dir, keys)
}

/// [`new_state`] of the manifest in `dir` and its `keys` files.
fn state_read_as_written(dir: &Path, keys: Vec<ManifestFile>) -> Result<NewState, Error> {
    let digest = file_sha256(&dir.join(MANIFEST_NAME))?;
    let mut files = vec![MANIFEST_NAME.to_string()];
    files.extend(keys.iter().map(|f| f.name.clone()));
    let listed: std::collections::HashMap<String, ManifestFile> =
        keys.into_iter().map(|f| (f.name.clone(), f)).collect();
    let dir = dir.to_path_buf();
    let manifest_digest = digest.clone();
    let read = move |name: &str| -> Result<Vec<u8>, String> {
        if name == MANIFEST_NAME {
            let text = fs::read(dir.join(MANIFEST_NAME)).map_err(|e| format!("{name}: {e}"))?;
            if crate::incremental::hex(&Sha256::digest(&text)) != manifest_digest {
                return Err(format!("{name}: changed since the run wrote it"));
            }
            return Ok(text);
        }
        let file = listed
            .get(name)
            .ok_or_else(|| format!("{name}: not a keys file of the run"))?;
        verified_listed_file(&dir, file)
    };
    Ok(NewState {
        digest,
        files,
        read: std::sync::Arc::new(read),
    })
}

/// A file's SHA-256 in hex, read in pieces.
fn file_sha256(path: &Path) -> Result<String, Error> {
    let fail = |e: std::io::Error| Error::Usage(format!("{}: {e}", path.display()));
    let mut file = fs::File::open(path).map_err(fail)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(fail)?;
    Ok(crate::incremental::hex(&hasher.finalize()))
}

/// How each table of the link in `dir` (its `manifest`) applies to the
/// target left by `base`; the deletes' keys COPYed to staging.
pub(crate) fn links(
    dir: &Path,
    manifest: &Manifest,
    base: &Manifest,
    pg: &PostgresDestination,
    schema: &str,
) -> Result<Vec<TableLink>, Error> {
    if let Some(dropped) = manifest
        .incremental
        .as_ref()
        .and_then(|i| i.dropped.first())
    {
        return Err(refuse(
            schema,
            format!(
                "table {} was dropped in Firebird (or left out) since the run the target holds",
                crate::printable(dropped)
            ),
        ));
    }
    let mut links = Vec::new();
    for table in manifest.tables.iter().filter(|t| t.kind == "table") {
        let change = table.change.as_ref().ok_or_else(|| {
            Error::Server(format!("table {}: the link says nothing of it", table.name))
        })?;
        let old = base
            .tables
            .iter()
            .find(|t| t.name == table.name && t.kind == "table")
            .ok_or_else(|| {
                refuse(
                    schema,
                    format!(
                        "table {} is new since the run the target holds",
                        crate::printable(&table.name)
                    ),
                )
            })?;
        let columns = |t: &fbunload_dest::ManifestTable| -> Vec<(String, String)> {
            t.columns
                .iter()
                .map(|c| (c.name.clone(), c.firebird_type.clone()))
                .collect()
        };
        if columns(old) != columns(table) {
            return Err(refuse(
                schema,
                format!(
                    "table {}: its columns changed in Firebird since the run the target holds",
                    crate::printable(&table.name)
                ),
            ));
        }
        let count = |t: &fbunload_dest::ManifestTable| {
            t.change.as_ref().and_then(|c| c.keys).unwrap_or(t.rows)
        };
        let apply = if change.mode == "changes" {
            for file in table
                .files
                .iter()
                .filter(|f| f.role.as_deref() == Some("deletes"))
            {
                let handle =
                    fbunload_dest::open_verified_listed_file(dir, file).map_err(Error::Usage)?;
                let reader =
                    arrow_ipc::reader::FileReader::try_new(std::io::BufReader::new(handle), None)
                        .map_err(|e| Error::Usage(format!("{}: {e}", file.name)))?;
                let mut batches = reader.map(|b| b.map_err(|e| e.to_string()));
                pg.copy_deletes(&table.name, &mut batches)?;
            }
            Apply::Changes {
                key: change.primary_key.clone(),
            }
        } else {
            Apply::Whole {
                key: change.primary_key.clone(),
            }
        };
        links.push(TableLink {
            name: table.name.clone(),
            apply,
            before: count(old),
            after: count(table),
        });
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(dir: &Path, name: &str, bytes: &[u8]) -> ManifestFile {
        fs::write(dir.join(name), bytes).unwrap();
        ManifestFile {
            name: name.into(),
            bytes: bytes.len() as u64,
            sha256: crate::incremental::hex(&Sha256::digest(bytes)),
            role: Some("keys".into()),
        }
    }

    #[test]
    fn the_new_state_is_read_file_by_file_as_written_and_checked_then() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(MANIFEST_NAME), b"{\"manifest\": 1}").unwrap();
        let a = listed(dir.path(), "A.keys", b"keys of A");
        let b = listed(dir.path(), "B.keys", b"keys of B");
        let state = state_read_as_written(dir.path(), vec![a, b]).unwrap();
        assert_eq!(
            state.digest,
            crate::incremental::hex(&Sha256::digest(b"{\"manifest\": 1}"))
        );
        assert_eq!(state.files, [MANIFEST_NAME, "A.keys", "B.keys"]);
        // Nothing is held: each file is read when asked for.
        fs::write(dir.path().join("B.keys"), b"keys of b").unwrap();
        assert_eq!((state.read)(MANIFEST_NAME).unwrap(), b"{\"manifest\": 1}");
        assert_eq!((state.read)("A.keys").unwrap(), b"keys of A");
        // What changed since the run listed it is refused, not kept.
        let changed = (state.read)("B.keys").unwrap_err();
        assert!(
            changed.contains("B.keys") && changed.contains("SHA-256"),
            "{changed}"
        );
        fs::write(dir.path().join(MANIFEST_NAME), b"{\"manifest\": 2}").unwrap();
        assert!((state.read)(MANIFEST_NAME).unwrap_err().contains("changed"));
        assert!((state.read)("C.keys").is_err());
    }
}
