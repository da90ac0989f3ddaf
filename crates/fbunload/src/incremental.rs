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
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fbunload_dest::{
    KeyOutcome, Manifest, ManifestChange, ManifestIncremental, PreviousKeys, PreviousRunRef,
    PrivateCopies, MANIFEST_NAME,
};
use fbunload_plan::{Plan, PreviousTable, Role, Since};

use crate::{Error, Summary};

/// Digits of the name of a link that `fbunload follow` writes.
const LINK_DIGITS: usize = 8;

/// The run a `--since` starts from.
pub(crate) struct Previous {
    pub since: Since,
    /// Each table's keys, by name, being read meanwhile (see
    /// [`Previous::keys`]).
    keys: Option<std::thread::JoinHandle<Result<KeysByTable, Error>>>,
    pub reference: PreviousRunRef,
    /// Its tables' names.
    pub tables: Vec<String>,
    /// The options it was run with, as its manifest records them.
    pub options: std::collections::BTreeMap<String, serde_json::Value>,
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
    fbunload_dest::read_run_manifest(dir)
}

/// Reads and checks the manifest and keys files of the run in `dir`.
///
/// A link that `fbunload follow` wrote from the journal keeps no keys,
/// and records a journal position, not marks of its own: its marks are
/// its chain's base's, and no journal position can be turned into
/// transaction numbers (a transaction shows in the journal only once it
/// writes). So a run since such a link reads every row changed since the
/// chain's base (those marks), and takes as the previous keys the base's
/// with each link's deletes and upserts folded in (an upserted key's row
/// is read again, or it is gone): a superset of what changed since the
/// link, exact once applied to the link's state.
pub(crate) fn read_previous(dir: &Path) -> Result<Previous, Error> {
    let (manifest, digest) = read_manifest(dir).map_err(|e| refuse(dir, e))?;
    if manifest.state_of.is_some() {
        return Err(refuse(
            dir,
            "it holds a state that fbunload apply made; give --since the change set that state \
             was made from (the chain's last link)",
        ));
    }
    if !is_journal_link(&manifest) {
        return read_run(dir, manifest, digest, Vec::new());
    }
    let (base, links) = journal_chain(dir, &manifest, &digest)?;
    let (base_manifest, base_digest) = base;
    let mut previous = read_run(&links.base, base_manifest, base_digest, links.links)?;
    previous.reference = PreviousRunRef {
        directory: dir.display().to_string(),
        snapshot_number: manifest.snapshot_number.unwrap_or_default(),
        manifest_sha256: digest,
    };
    Ok(previous)
}

/// Whether `manifest` is a link `fbunload follow` wrote from the journal.
fn is_journal_link(manifest: &Manifest) -> bool {
    manifest
        .incremental
        .as_ref()
        .is_some_and(|i| i.journal.is_some())
}

/// The base of a chain of links from the journal and its links up to one.
struct JournalChain {
    base: PathBuf,
    /// Each link's directory and manifest, in the chain's order.
    links: Vec<(PathBuf, Manifest)>,
}

/// The chain the link in `dir` ends: the links before it are its
/// siblings (`00000001` … ), the base is the run the first names; each
/// must name the one before it by SHA-256, as `fbunload follow` wrote
/// them.
fn journal_chain(
    dir: &Path,
    manifest: &Manifest,
    digest: &str,
) -> Result<((Manifest, String), JournalChain), Error> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let number: u64 = match name.parse() {
        Ok(n) if n > 0 && name.len() == LINK_DIGITS && name.bytes().all(|b| b.is_ascii_digit()) => {
            n
        }
        _ => {
            return Err(refuse(
                dir,
                "it is a change set fbunload follow wrote from the journal, but not under the \
                 name it gave it in its chain (00000001, …): give --since the link in its \
                 chain's directory",
            ))
        }
    };
    let chain_dir = dir.parent().unwrap_or(Path::new("."));
    let mut links = Vec::new();
    for i in 1..=number {
        let link = chain_dir.join(format!("{i:0LINK_DIGITS$}"));
        let bad = |why: String| {
            refuse(
                dir,
                format!(
                    "{}: {why}; a scan goes on from a link whose chain is whole (move it back, \
                     or start a chain of scans with --keep-keys)",
                    link.display()
                ),
            )
        };
        if i == number {
            links.push((link, manifest.clone(), digest.to_string()));
            break;
        }
        if !fs::symlink_metadata(&link).is_ok_and(|m| m.is_dir()) {
            return Err(bad(
                "the chain's link before it is not there as a plain directory".into(),
            ));
        }
        let (m, d) = read_manifest(&link).map_err(&bad)?;
        if !is_journal_link(&m) {
            return Err(bad("not a link fbunload follow wrote".into()));
        }
        links.push((link, m, d));
    }
    let since_of = |m: &Manifest| m.incremental.as_ref().and_then(|i| i.since.clone());
    let first = since_of(&links[0].1).ok_or_else(|| {
        refuse(
            dir,
            "its chain's first link names no base run; it was edited",
        )
    })?;
    let base = PathBuf::from(&first.directory);
    let (base_manifest, base_digest) = match read_manifest(&base) {
        Ok((m, d)) if d == first.manifest_sha256 => (m, d),
        _ => {
            return Err(refuse(
                dir,
                format!(
                    "its chain's base {} (named by its first link) is not there as the follow \
                     read it; a scan since a link reads the base's keys: put that run back \
                     there, or start a chain of scans with --keep-keys",
                    base.display()
                ),
            ))
        }
    };
    // The links' keys are read back from their files.
    if !matches!(
        base_manifest.options.get("format").and_then(|f| f.as_str()),
        Some("parquet" | "arrow")
    ) {
        return Err(refuse(
            dir,
            "a scan goes on from the links of a Parquet or Arrow chain only (it reads their \
             keys back, and fbunload reads no text files): go on with fbunload follow, or start \
             a chain of scans with --keep-keys",
        ));
    }
    let mut before = (base_digest.clone(), base_manifest.snapshot_number);
    for (link, m, d) in &links {
        let since = since_of(m);
        if since
            .as_ref()
            .map(|s| (&s.manifest_sha256, Some(s.snapshot_number)))
            != Some((&before.0, before.1))
        {
            return Err(refuse(
                dir,
                format!(
                    "{} does not name the run before it in its chain; a scan goes on from a \
                     link whose chain is whole (start a chain of scans with --keep-keys)",
                    link.display()
                ),
            ));
        }
        before = (d.clone(), m.snapshot_number);
    }
    Ok((
        (base_manifest, base_digest),
        JournalChain {
            base,
            links: links.into_iter().map(|(l, m, _)| (l, m)).collect(),
        },
    ))
}

/// Reads and checks the manifest and keys files of the run in `dir` that
/// kept its keys, with `links` from the journal after it folded into
/// them.
fn read_run(
    dir: &Path,
    manifest: Manifest,
    digest: String,
    links: Vec<(PathBuf, Manifest)>,
) -> Result<Previous, Error> {
    if is_journal_link(&manifest) {
        return Err(refuse(
            dir,
            "the base of a chain of links is itself a link; start a chain of scans with \
             --keep-keys",
        ));
    }
    let (Some(snapshot_number), Some(marks)) = (manifest.snapshot_number, &manifest.incremental)
    else {
        return Err(refuse(
            dir,
            "that run kept no keys; unload once with --keep-keys (or --since) to start a chain \
             of incremental runs",
        ));
    };
    check_marks(&manifest).map_err(|e| refuse(dir, e))?;
    // (table, keys file contents, key columns, count), read below.
    let mut to_read = Vec::new();
    let mut private = PrivateCopies::default();
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
            // Read from the run's own copy, checked and again for the deletes.
            let contents = private.copy(dir, file).map_err(|e| refuse(dir, e))?;
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
            format: change.and_then(|c| c.relation_id.zip(c.format)),
        });
    }
    let dir_shown = dir.to_path_buf();
    let reading = std::thread::spawn(move || {
        let mut keys = HashMap::new();
        for (table, file, contents, columns, count) in to_read {
            let mut sorted = PreviousKeys::read(contents, &columns, count)
                .map_err(|e| refuse(&dir_shown, format!("{file}: {e}")))?;
            if !links.is_empty() {
                let key: Vec<&str> = columns.iter().map(|(name, _)| name.as_str()).collect();
                let changes = link_keys(&links, &table, &key)?;
                sorted = sorted
                    .folded(&changes)
                    .map_err(|e| refuse(&dir_shown, format!("table {table}: {e}")))?;
            }
            keys.insert(table, Arc::new(sorted));
        }
        Ok(keys)
    });
    // A bound above the snapshot's own transaction, or below the oldest
    // interesting one, is no run's (module docs of
    // fbunload_plan::incremental, "The bound").
    let oldest_unseen = marks.oldest_unseen.unwrap_or(marks.oldest_interesting);
    let listed = marks.unseen_below.iter().all(|t| *t < oldest_unseen)
        && marks.unseen_below.len() <= fbunload_plan::incremental::UNSEEN_LISTED;
    if !listed {
        return Err(refuse(
            dir,
            format!(
                "{MANIFEST_NAME}: unseen_below lists transactions at or above oldest_unseen \
                 {oldest_unseen}, or more than a run lists; it was edited"
            ),
        ));
    }
    if !(marks.oldest_interesting..=marks.transaction).contains(&oldest_unseen) {
        return Err(refuse(
            dir,
            format!(
                "{MANIFEST_NAME}: oldest_unseen {oldest_unseen} is not between oldest_interesting \
                 {} and transaction {}; it was edited",
                marks.oldest_interesting, marks.transaction
            ),
        ));
    }
    Ok(Previous {
        since: Since {
            snapshot_number,
            oldest_interesting: marks.oldest_interesting,
            oldest_unseen,
            unseen_below: marks.unseen_below.clone(),
            transaction: marks.transaction,
            database_guid: marks.database_guid.clone(),
            database_file_id: marks.database_file_id.clone(),
            commit_mark: marks.commit_mark.map(|m| (m.transaction, m.commit_number)),
            tables: tables.clone(),
        },
        keys: Some(reading),
        reference: PreviousRunRef {
            directory: dir.display().to_string(),
            snapshot_number,
            manifest_sha256: digest,
        },
        tables: tables.into_iter().map(|t| t.name).collect(),
        options: manifest.options.clone(),
    })
}

/// The keys each link of `links` upserted (`true`) or deleted of
/// `table`: its files' `key` columns, in the chain's order.
fn link_keys(
    links: &[(PathBuf, Manifest)],
    table: &str,
    key: &[&str],
) -> Result<Vec<(arrow_array::RecordBatch, bool)>, Error> {
    let mut changes = Vec::new();
    for (link, manifest) in links {
        let Some(entry) = manifest.tables.iter().find(|t| t.name == table) else {
            continue;
        };
        for file in &entry.files {
            let upserted = match file.role.as_deref() {
                Some("upserts") => true,
                Some("deletes") => false,
                _ => continue,
            };
            let (schema, batches) = crate::apply::open_file(link, file)?;
            let columns = key
                .iter()
                .map(|k| schema.index_of(k))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    refuse(
                        link,
                        format!("{}: it lacks a key column of table {table}", file.name),
                    )
                })?;
            for batch in batches {
                let batch = batch?
                    .project(&columns)
                    .map_err(|e| refuse(link, format!("{}: {e}", file.name)))?;
                changes.push((batch, upserted));
            }
        }
    }
    Ok(changes)
}

/// The highest transaction number Firebird gives (48 bits, since 3.0).
const MAX_TRANSACTION: u64 = (1 << 48) - 1;

/// Refuses numbers read back from a run's manifest that no run writes,
/// before they decide which rows count as changed: an oldest interesting
/// transaction above the snapshot's own transaction (2^64-1 would make
/// every row unchanged), a transaction number Firebird never gives, a
/// table with a keys file but no count of its keys.
fn check_marks(manifest: &Manifest) -> Result<(), String> {
    let Some(marks) = &manifest.incremental else {
        return Ok(());
    };
    let edited =
        |what: String| format!("{MANIFEST_NAME}: {what}; it was edited, not written by a run");
    if marks.transaction == 0 || marks.transaction > MAX_TRANSACTION {
        return Err(edited(format!(
            "transaction {} is not a Firebird transaction number",
            marks.transaction
        )));
    }
    if marks.oldest_interesting > marks.transaction {
        return Err(edited(format!(
            "its oldest interesting transaction {} is above its own transaction {}",
            marks.oldest_interesting, marks.transaction
        )));
    }
    for table in manifest.tables.iter().filter(|t| t.kind == "table") {
        let has_keys = table
            .files
            .iter()
            .any(|f| f.role.as_deref() == Some("keys"));
        let change = table.change.as_ref();
        if has_keys && change.and_then(|c| c.keys).is_none() {
            return Err(edited(format!(
                "table {} has a keys file and no count of its keys",
                crate::printable(&table.name)
            )));
        }
        if change.is_some_and(|c| c.mode == "full")
            && change.and_then(|c| c.keys).is_some_and(|k| k != table.rows)
        {
            return Err(edited(format!(
                "table {}, read whole, has {} rows and {} keys",
                crate::printable(&table.name),
                table.rows,
                change.and_then(|c| c.keys).unwrap_or_default()
            )));
        }
    }
    Ok(())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Says in each table of `summary` what a `--since` run did with it, as
/// its `manifest` (completed) records.
pub(crate) fn describe_changes(summary: &mut Summary, manifest: &Manifest) {
    for table in &mut summary.tables {
        let Some(change) = manifest
            .tables
            .iter()
            .find(|t| t.name == table.name)
            .and_then(|t| t.change.as_ref())
        else {
            continue;
        };
        table.change = Some(crate::TableChange {
            whole_because: (change.mode != "changes")
                .then(|| change.reason.clone().unwrap_or_default()),
            deletes: change.deletes.unwrap_or(0),
            rechecked_units: change.rechecked_units.unwrap_or(0),
        });
    }
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
    let marks = summary.start.snapshot_marks.clone().ok_or_else(|| {
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
            relation_id: None,
            format: None,
        });
        if let Some(&(id, format)) = plan.table_formats.get(&entry.name) {
            let change = table.change.as_mut().expect("set above");
            change.relation_id = Some(id);
            change.format = Some(format);
        }
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
        oldest_unseen: Some(marks.oldest_unseen),
        unseen_below: marks.unseen_below.clone(),
        transaction: marks.transaction,
        database_guid: plan.database_guid.clone().unwrap_or_default(),
        database_file_id: plan.database_file_id.clone(),
        commit_mark: marks
            .probe_commit_number
            .map(|commit_number| fbunload_dest::CommitMark {
                transaction: marks.probe,
                commit_number,
            }),
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
        journal: None,
    });
    Ok(())
}

/// `--since DIR -o DIR`: the change set would replace (with --overwrite)
/// the run it is taken since, or be refused for a reason that does not
/// say so.
pub(crate) fn refuse_same_directory(since: &Path, output: &Path) -> Result<(), Error> {
    let same = match (fs::canonicalize(since), fs::canonicalize(output)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(refuse(
            since,
            "it is also the output directory (-o): the change set would replace the run it is \
             taken since; give another -o",
        ));
    }
    Ok(())
}

/// Refuses a link whose options differ from its base's where they change
/// what is in the files ([`crate::describe::CHAIN_OPTIONS`]): a state
/// made of links decoded with two --charset, or a table that a narrower
/// --tables leaves out marked dropped, would be wrong without a word.
pub(crate) fn refuse_other_options(
    previous: &Previous,
    mine: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Result<(), Error> {
    match other_options(previous, mine) {
        Some(differ) => Err(refuse(
            &previous_dir(previous),
            format!(
                "{differ}; the links of a chain take the same --tables, --exclude, --format, \
                 --charset, --decimal256, --null and --binary (start a new chain with \
                 --keep-keys to change them)"
            ),
        )),
        None => Ok(()),
    }
}

/// How the options of the run `previous` and this one (`mine`) differ
/// where the links of a chain must agree (`that run was made with --charset
/// X, this one with --charset Y`), if they do.
pub(crate) fn other_options(
    previous: &Previous,
    mine: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Option<String> {
    for (name, default) in crate::describe::CHAIN_OPTIONS {
        let default: Option<serde_json::Value> =
            default.map(|d| serde_json::from_str(d).expect("a JSON default"));
        let theirs = previous.options.get(*name).cloned().or(default.clone());
        let ours = mine.get(*name).cloned().or(default);
        let same = match (&theirs, &ours) {
            (Some(serde_json::Value::String(a)), Some(serde_json::Value::String(b)))
                if matches!(*name, "tables" | "exclude") =>
            {
                fbunload_plan::same_pattern(a, b)
            }
            _ => theirs == ours,
        };
        if !same {
            let shown = |v: &Option<serde_json::Value>| match v {
                Some(serde_json::Value::String(v)) => {
                    format!("with --{name} {}", crate::printable(v))
                }
                Some(v) => format!("with --{name} {v}"),
                None => format!("without --{name}"),
            };
            return Some(format!(
                "that run was made {}, this one {}",
                shown(&theirs),
                shown(&ours)
            ));
        }
    }
    None
}

fn previous_dir(previous: &Previous) -> std::path::PathBuf {
    std::path::PathBuf::from(&previous.reference.directory)
}

/// The files of an incremental run's tables are named after them with a
/// role (`T.keys.parquet`, `T.upserts.csv`, `T.deletes.csv`): a table
/// named so would take another's file. Refused up front, naming both.
pub(crate) fn refuse_names_of_role_files(plan: &Plan) -> Result<(), Error> {
    let folded = |name: &str| name.to_lowercase();
    let names: HashMap<String, &str> = plan
        .tables
        .iter()
        .filter(|t| !t.role.is_helper())
        .map(|t| (folded(&t.name), t.name.as_str()))
        .collect();
    for table in plan.tables.iter().filter(|t| !t.role.is_helper()) {
        for role in ["keys", "upserts", "deletes"] {
            if let Some(other) = names.get(&folded(&format!("{}.{role}", table.name))) {
                return Err(Error::Usage(format!(
                    "tables {} and {}: an incremental run names {}'s {role} file after it, \
                     and {} would have the same file name; leave one out (--exclude)",
                    crate::printable(&table.name),
                    crate::printable(other),
                    crate::printable(&table.name),
                    crate::printable(other),
                )));
            }
        }
    }
    Ok(())
}
