//! Incremental unloads: reading the run a `--since` starts from, and
//! writing what the next one needs into the manifest. Which rows count as
//! changed is `fbunload_plan::incremental`'s; the keys and deletes files
//! are `fbunload_dest`'s.
//!
//! The previous run's directory is not trusted: its manifest must be a
//! plain file of sane size, every file read from it must be listed there
//! under a plain name, and have the size and SHA-256 listed.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use fbunload_dest::{
    verified_listed_file, KeyOutcome, Manifest, ManifestChange, ManifestIncremental, PreviousKeys,
    PreviousRunRef, MANIFEST_NAME,
};
use fbunload_plan::{Plan, PreviousTable, Role, Since};
use sha2::{Digest, Sha256};

use crate::{Error, Summary};

/// A manifest larger than this is not a run's.
const MANIFEST_LIMIT: u64 = 256 << 20;

/// The run a `--since` starts from.
pub(crate) struct Previous {
    pub since: Since,
    /// Each table's keys, by name, being read meanwhile (see
    /// [`Previous::keys`]).
    keys: Option<std::thread::JoinHandle<Result<KeysByTable, Error>>>,
    pub reference: PreviousRunRef,
    /// Its tables' names.
    pub tables: Vec<String>,
}

type KeysByTable = HashMap<String, Arc<PreviousKeys>>;

impl Previous {
    /// Each table's keys, by name, once read and checked. They are read
    /// while the run attaches and plans (about 0.25 s for 2,000,000 keys);
    /// a keys file refused fails the run before any unit is read, and the
    /// output directory it made goes again.
    pub fn keys(&mut self) -> Result<KeysByTable, Error> {
        match self.keys.take() {
            Some(reading) => reading
                .join()
                .unwrap_or_else(|_| Err(Error::Usage("reading the previous keys failed".into()))),
            None => Err(Error::Usage("the previous keys were taken already".into())),
        }
    }
}

fn refuse(dir: &Path, why: impl std::fmt::Display) -> Error {
    Error::Usage(format!("--since {}: {why}", dir.display()))
}

/// The manifest of the run in `dir`, read as untrusted (a plain file of
/// sane size), and the SHA-256 of its text.
pub(crate) fn read_manifest(dir: &Path) -> Result<(Manifest, String), String> {
    let path = dir.join(MANIFEST_NAME);
    let meta =
        fs::symlink_metadata(&path).map_err(|e| format!("no run there ({MANIFEST_NAME}: {e})"))?;
    if !meta.is_file() || meta.len() > MANIFEST_LIMIT {
        return Err(format!("{MANIFEST_NAME} is not a plain file of a run"));
    }
    let text = fs::read(&path).map_err(|e| format!("{MANIFEST_NAME}: {e}"))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| format!("{MANIFEST_NAME} cannot be read: {e}"))?;
    Ok((manifest, hex(&Sha256::digest(&text))))
}

/// Reads and checks the manifest and keys files of the run in `dir`.
pub(crate) fn read_previous(dir: &Path) -> Result<Previous, Error> {
    let (manifest, digest) = read_manifest(dir).map_err(|e| refuse(dir, e))?;
    let (Some(snapshot_number), Some(marks)) = (manifest.snapshot_number, &manifest.incremental)
    else {
        return Err(refuse(
            dir,
            "that run kept no keys; unload once with --keep-keys (or --since) to start a chain \
             of incremental runs",
        ));
    };
    // (table, keys file contents, key columns, count), read below.
    let mut to_read = Vec::new();
    let mut tables = Vec::new();
    for table in manifest.tables.iter().filter(|t| t.kind == "table") {
        let change = table.change.as_ref();
        let primary_key = change.map(|c| c.primary_key.clone()).unwrap_or_default();
        let keys_file = table
            .files
            .iter()
            .find(|f| f.role.as_deref() == Some("keys"));
        let mut has_keys = false;
        if let Some(file) = keys_file.filter(|_| !primary_key.is_empty()) {
            let contents = verified_listed_file(dir, file).map_err(|e| refuse(dir, e))?;
            let columns: Option<Vec<(String, String)>> = primary_key
                .iter()
                .map(|k| {
                    table
                        .columns
                        .iter()
                        .find(|c| c.name == *k)
                        .map(|c| (c.name.clone(), c.arrow_type.clone()))
                })
                .collect();
            let columns = columns.ok_or_else(|| {
                refuse(
                    dir,
                    format!("table {}: its key is not among its columns", table.name),
                )
            })?;
            let count = change.and_then(|c| c.keys);
            to_read.push((
                table.name.clone(),
                file.name.clone(),
                contents,
                columns,
                count,
            ));
            has_keys = true;
        }
        tables.push(PreviousTable {
            name: table.name.clone(),
            columns: table
                .columns
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        c.firebird_type.clone(),
                        c.arrow_type.clone(),
                    )
                })
                .collect(),
            primary_key,
            keys: has_keys,
        });
    }
    let dir_shown = dir.to_path_buf();
    let reading = std::thread::spawn(move || {
        let mut keys = HashMap::new();
        for (table, file, contents, columns, count) in to_read {
            let sorted = PreviousKeys::read(contents, &columns, count)
                .map_err(|e| refuse(&dir_shown, format!("{file}: {e}")))?;
            keys.insert(table, Arc::new(sorted));
        }
        Ok(keys)
    });
    Ok(Previous {
        since: Since {
            snapshot_number,
            oldest_interesting: marks.oldest_interesting,
            transaction: marks.transaction,
            database_guid: marks.database_guid.clone(),
            tables: tables.clone(),
        },
        keys: Some(reading),
        reference: PreviousRunRef {
            directory: dir.display().to_string(),
            snapshot_number,
            manifest_sha256: digest,
        },
        tables: tables.into_iter().map(|t| t.name).collect(),
    })
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes the manifest of a run with keys: the keys entries' files go to
/// their tables, each table says how it was read, and the run says what
/// the next `--since` needs.
pub(crate) fn complete_manifest(
    manifest: &mut Manifest,
    plan: &Plan,
    summary: &Summary,
    outcomes: &[KeyOutcome],
    previous: Option<&Previous>,
) -> Result<(), Error> {
    let marks = summary.start.snapshot_marks.ok_or_else(|| {
        Error::Server("the run's snapshot has no transaction to record for --since".into())
    })?;
    for (table, entry) in manifest.tables.iter_mut().zip(&plan.tables) {
        let (mode, reason) = match &entry.role {
            Role::Upserts => ("changes", None),
            Role::WholeBecause(reason) => ("full", Some(reason.clone())),
            _ => ("full", None),
        };
        if entry.role == Role::Upserts {
            for file in &mut table.files {
                file.role = Some("upserts".into());
            }
        }
        table.change = Some(ManifestChange {
            mode: mode.into(),
            reason,
            primary_key: Vec::new(),
            keys: None,
            deletes: None,
            rechecked_units: None,
        });
    }
    for outcome in outcomes {
        let of = outcome.of;
        let entry = &plan.tables[of];
        let table = &mut manifest.tables[of];
        let change = table.change.as_mut().expect("set above");
        change.primary_key = entry
            .key_columns
            .iter()
            .map(|&i| entry.columns[i].clone())
            .collect();
        change.keys = Some(outcome.keys);
        change.deletes = outcome.deletes;
        change.rechecked_units = outcome.rechecked_units;
        for file in &outcome.deletes_written.files {
            let mut file: fbunload_dest::ManifestFile = file.clone().into();
            file.role = Some("deletes".into());
            table.files.push(file);
        }
        for file in &outcome.keys_files {
            let mut file: fbunload_dest::ManifestFile = file.clone().into();
            file.role = Some("keys".into());
            table.bytes += file.bytes;
            table.files.push(file);
        }
        table.bytes += outcome.deletes_written.bytes;
    }
    // The helper entries' reads are their tables'.
    let keep: Vec<bool> = plan.tables.iter().map(|t| !t.role.is_helper()).collect();
    let mut index = 0;
    manifest.tables.retain(|_| {
        index += 1;
        keep[index - 1]
    });
    let present: Vec<&str> = manifest.tables.iter().map(|t| t.name.as_str()).collect();
    manifest.incremental = Some(ManifestIncremental {
        oldest_interesting: marks.oldest_interesting,
        transaction: marks.transaction,
        database_guid: plan.database_guid.clone().unwrap_or_default(),
        since: previous.map(|p| p.reference.clone()),
        dropped: previous
            .map(|p| {
                p.tables
                    .iter()
                    .filter(|t| !present.contains(&t.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
    });
    Ok(())
}
