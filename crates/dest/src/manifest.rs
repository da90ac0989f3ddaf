//! `manifest.json`: what a run wrote into an output directory.
//!
//! A run publishes its manifest last, so one is there only when every
//! table is: its presence says the directory holds one complete run, of
//! one snapshot, and it lists every file with its size and SHA-256, so
//! the files can be checked later (`fbunload check`) and a later run with
//! `--overwrite` knows exactly which files to remove.
//!
//! Names in a manifest are read back from a file anyone may have edited:
//! [`listed_path`] lets through only plain names inside the directory,
//! never an absolute path, a `..` or a link on the way.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The manifest's file name in the output directory.
pub const MANIFEST_NAME: &str = "manifest.json";

/// Raised when the manifest's shape changes so that an older reader
/// would misread it.
pub const MANIFEST_VERSION: u32 = 1;

/// A complete run into a directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub manifest_version: u32,
    pub fbunload_version: String,
    /// The server's version string, as the main attachment read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The database as given (`-d`): a path or a connection string; never
    /// a user or password.
    pub database: String,
    /// The snapshot every table was read at; `null` where the server
    /// cannot share one (before Firebird 4).
    pub snapshot_number: Option<u64>,
    /// How the tables relate: `one snapshot`, `one transaction`, or
    /// `a snapshot per worker` (`--allow-inconsistent`).
    pub consistency: String,
    /// RFC 3339, UTC.
    pub started: String,
    pub finished: String,
    /// The options the run was given, named as on the command line.
    pub options: BTreeMap<String, serde_json::Value>,
    pub tables: Vec<ManifestTable>,
    /// The run's files that belong to no one table (`schema.sql`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<ManifestFile>,
    /// An incremental run (`--since`), or a full one that kept its keys
    /// (`--keep-keys`): what the next `--since` needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incremental: Option<ManifestIncremental>,
    /// A directory `fbunload apply` made: the SHA-256 of the manifest of
    /// the change set whose state it holds, which the next change set
    /// names as its previous run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_of: Option<String>,
    /// A run that continued a stopped one (`--resume`): that run's
    /// snapshot, and what became of the units it had finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<ManifestResumed>,
}

/// The two snapshots of a resumed run: every file holds the rows of
/// `snapshot_number` (the manifest's), the units the first run finished
/// brought forward to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestResumed {
    /// The snapshot of the run that was stopped.
    pub first_snapshot_number: Option<u64>,
    /// Its snapshot's transaction.
    pub first_transaction: u64,
    /// Units it had finished that no row of changed since: counted, and
    /// taken from what it wrote.
    pub units_kept: u64,
    /// Units it had finished that were read again (rows changed since,
    /// or what it wrote did not check).
    pub units_read_again: u64,
}

/// What an incremental run records of its snapshot, and of the run it
/// started from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestIncremental {
    /// The oldest interesting transaction the snapshot's transaction saw
    /// when it started: the next run reads every row written from it on.
    pub oldest_interesting: u64,
    /// The oldest transaction the snapshot may not have seen committed:
    /// the next run reads every row written from it on. Runs before it
    /// was kept have none (the next run then starts from
    /// `oldest_interesting`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest_unseen: Option<u64>,
    /// Transactions below `oldest_unseen` that the snapshot did not see
    /// committed either (running then): their rows are read too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unseen_below: Vec<u64>,
    /// The snapshot's transaction's number.
    pub transaction: u64,
    /// The database's GUID (a restore changes it).
    pub database_guid: String,
    /// The database file's id on its server (`DB_FILE_ID`: a copy of the
    /// file has another).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_file_id: Option<String>,
    /// A transaction of the run that committed, and its commit number:
    /// the same database asked later in the same engine lifetime gives
    /// the same number; a copy with another history, another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_mark: Option<CommitMark>,
    /// The run this one holds the changes since; none for a full run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<PreviousRunRef>,
    /// Tables of that run this one does not have (dropped since, or no
    /// longer selected): gone from the state the changes make.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
    /// A change set `fbunload follow` wrote from the replication journal
    /// rather than a scan: where it ends in the journal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<ManifestJournal>,
}

/// Where a change set written by `fbunload follow` ends in the journal:
/// a follow started again goes on from here, after this link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestJournal {
    /// Where the end block of the last transaction it holds ends
    /// (`SEQUENCE:OFFSET`): later transactions go to the next link.
    pub applied: String,
    /// Where to read the journal again from (`SEQUENCE:OFFSET`): the
    /// first block of the oldest transaction still open then.
    pub restart: String,
    /// The committed transactions whose changes it holds.
    pub transactions: u64,
    /// The last of them.
    pub last_transaction: u64,
}

/// A transaction and its commit number (`RDB$GET_TRANSACTION_CN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitMark {
    pub transaction: u64,
    pub commit_number: i64,
}

/// The run an incremental run started from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviousRunRef {
    /// Its directory, as given to `--since`.
    pub directory: String,
    pub snapshot_number: u64,
    /// The SHA-256 of its `manifest.json`.
    pub manifest_sha256: String,
}

/// A table of an incremental run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestChange {
    /// `changes` (its files: the rows inserted or updated since, and the
    /// keys of the rows deleted since) or `full` (the whole table).
    pub mode: String,
    /// Why a table of an incremental run is read whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its primary key's columns; empty for a table without one.
    pub primary_key: Vec<String>,
    /// Rows in its keys file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys: Option<u64>,
    /// Rows deleted since (`changes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletes: Option<u64>,
    /// Of the units it was read in (`changes`), how many lost a row of
    /// the previous run, by their counts, and had their unchanged keys
    /// read to tell which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rechecked_units: Option<u64>,
    /// Its relation id and format number (`RDB$FORMAT`) at the run: the
    /// next run reads it whole if either moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation_id: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<u32>,
}

/// One table of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestTable {
    /// The real name, as in the catalog (file names escape some
    /// characters; see `file_name_for`).
    pub name: String,
    /// `table`, `view` or `query` (`--views`, `--query`); manifests
    /// written before views and queries list tables only.
    #[serde(default = "table_kind")]
    pub kind: String,
    /// A query's SQL, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The table whose DB_KEY ranges split a query (`--split-by`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_by: Option<String>,
    pub rows: u64,
    pub bytes: u64,
    /// Whether `--verify` counted the table's rows at the same snapshot.
    pub verified: bool,
    /// The `--where` condition the rows met, if any.
    #[serde(rename = "where", default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    pub columns: Vec<ManifestColumn>,
    /// Its file, or each part of a table written as a directory of parts.
    pub files: Vec<ManifestFile>,
    /// Its part of an incremental run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ManifestChange>,
}

fn table_kind() -> String {
    "table".into()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestColumn {
    pub name: String,
    /// As declared: `NUMERIC(9,2)`, `VARCHAR(40) CHARACTER SET UTF8`.
    pub firebird_type: String,
    /// The Arrow type it was read as: `Decimal128(9, 2)`, `Utf8`.
    pub arrow_type: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Relative to the output directory, `/`-separated.
    pub name: String,
    pub bytes: u64,
    /// Lowercase hex.
    pub sha256: String,
    /// In an incremental run: `upserts`, `deletes` or `keys`; none for a
    /// whole table's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

impl From<fbunload_exec::FileDigest> for ManifestFile {
    fn from(d: fbunload_exec::FileDigest) -> Self {
        ManifestFile {
            name: d.name,
            bytes: d.bytes,
            sha256: d.sha256,
            role: None,
        }
    }
}

/// The contents of `file`, listed in the manifest of `dir`, once they are
/// found to be what the manifest says: a plain file inside `dir` (no `..`, no
/// link on the way or at the end) of its size and SHA-256. For a run that
/// reads another run's files back (`--since`, `apply`): an output
/// directory is not to be trusted.
pub fn verified_listed_file(dir: &Path, file: &ManifestFile) -> Result<Vec<u8>, String> {
    let path = listed_path(dir, &file.name).map_err(|r| format!("{}: {r}", file.name))?;
    let meta = fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", file.name))?;
    if !meta.is_file() {
        return Err(format!("{}: not a plain file", file.name));
    }
    // Hashed as read, so what is checked is what is used.
    let contents = fs::read(&path).map_err(|e| format!("{}: {e}", file.name))?;
    let sha256 = crate::digest::sha256_of(&contents);
    if contents.len() as u64 != file.bytes || sha256 != file.sha256 {
        return Err(format!(
            "{}: its size or SHA-256 differs from the manifest's (fbunload check names what \
             changed)",
            file.name
        ));
    }
    Ok(contents)
}

/// [`verified_listed_file`] for a file read more than once and too big to
/// hold in memory: the listed file opened once (as a plain file, never
/// through a link) and copied through to its end, hashed as it is copied,
/// to `into` (a file of the run's own: see [`crate::PrivateCopies`]);
/// its length once its size and SHA-256 are the manifest's. What was
/// checked is then what is read, however often: a writer into the listed
/// file meanwhile changes nothing of the copy.
pub fn private_copy_of_listed_file(
    dir: &Path,
    file: &ManifestFile,
    into: &mut impl io::Write,
) -> Result<u64, String> {
    let path = listed_path(dir, &file.name).map_err(|r| format!("{}: {r}", file.name))?;
    let fail = |e: io::Error| format!("{}: {e}", file.name);
    if !fs::symlink_metadata(&path).map_err(fail)?.is_file() {
        return Err(format!("{}: not a plain file", file.name));
    }
    // Opened so that a link put in its place meanwhile is not followed.
    let mut listed = open_plain_file(&path).map_err(fail)?;
    let mut writer = io::BufWriter::new(into);
    let (bytes, sha256) = crate::digest::sha256_copied(&mut listed, &mut writer).map_err(fail)?;
    writer.into_inner().map_err(|e| fail(e.into_error()))?;
    if bytes != file.bytes || sha256 != file.sha256 {
        return Err(format!(
            "{}: its size or SHA-256 differs from the manifest's (fbunload check names what \
             changed)",
            file.name
        ));
    }
    Ok(bytes)
}

/// [`verified_listed_file`] for a file too big to hold in memory: the file
/// opened once (as a plain file, never through a link), hashed through to
/// its end, and given back at its start once its size and SHA-256 are the
/// manifest's. The handle stays on what was hashed if the name is
/// replaced meanwhile; only a writer into that very file could change it.
pub fn open_verified_listed_file(dir: &Path, file: &ManifestFile) -> Result<fs::File, String> {
    let path = listed_path(dir, &file.name).map_err(|r| format!("{}: {r}", file.name))?;
    let mut handle = open_plain_file(&path).map_err(|e| format!("{}: {e}", file.name))?;
    let (bytes, sha256) =
        crate::digest::sha256(&mut handle).map_err(|e| format!("{}: {e}", file.name))?;
    if bytes != file.bytes || sha256 != file.sha256 {
        return Err(format!(
            "{}: its size or SHA-256 differs from the manifest's (fbunload check names what \
             changed)",
            file.name
        ));
    }
    io::Seek::seek(&mut handle, io::SeekFrom::Start(0))
        .map_err(|e| format!("{}: {e}", file.name))?;
    Ok(handle)
}

/// A manifest larger than this is not a run's.
const MANIFEST_LIMIT: u64 = 256 << 20;

/// The manifest of the run in `dir`, read as another's directory is (a
/// plain file of sane size, not a link), and the SHA-256 of its text, by
/// which the next link of a chain names it.
pub fn read_run_manifest(dir: &Path) -> Result<(Manifest, String), String> {
    use sha2::Digest;
    let path = dir.join(MANIFEST_NAME);
    let meta =
        fs::symlink_metadata(&path).map_err(|e| format!("no run there ({MANIFEST_NAME}: {e})"))?;
    if !meta.is_file() || meta.len() > MANIFEST_LIMIT {
        return Err(format!("{MANIFEST_NAME} is not a plain file of a run"));
    }
    let text = fs::read(&path).map_err(|e| format!("{MANIFEST_NAME}: {e}"))?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .map_err(|e| format!("{MANIFEST_NAME} cannot be read: {e}"))?;
    let digest = sha2::Sha256::digest(&text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((manifest, digest))
}

/// What a reader of a manifest needs of it: the files. Read on its own so
/// that a manifest of a later version, with fields this one does not know,
/// can still be checked and replaced.
#[derive(Debug, Deserialize)]
pub(crate) struct ListedFiles {
    tables: Vec<ListedTable>,
    #[serde(default)]
    files: Vec<ManifestFile>,
}

#[derive(Debug, Deserialize)]
struct ListedTable {
    files: Vec<ManifestFile>,
}

impl ListedFiles {
    /// The manifest of `dir`: `Ok(None)` if there is none. A manifest that
    /// is a link, a FIFO or a device is refused rather than read
    /// ([`open_plain_file`]).
    pub fn read(dir: &Path) -> io::Result<Option<ListedFiles>> {
        let mut file = match open_plain_file(&dir.join(MANIFEST_NAME)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return Err(io::Error::other(format!("{MANIFEST_NAME} is {e}")))
            }
            Err(e) => return Err(e),
            Ok(file) => file,
        };
        let mut text = Vec::new();
        io::Read::read_to_end(&mut file, &mut text)?;
        serde_json::from_slice(&text)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    pub fn files(&self) -> impl Iterator<Item = &ManifestFile> {
        self.tables.iter().flat_map(|t| &t.files).chain(&self.files)
    }
}

/// Why a listed name is not followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Absolute, empty, or with `..` or `.`: not a name fbunload writes.
    LeadsOut,
    /// A directory on the way is a link (or not a directory).
    ThroughLink(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::LeadsOut => {
                write!(f, "refused: not a plain name inside the directory")
            }
            Refusal::ThroughLink(dir) => {
                write!(f, "refused: {dir} on the way is a link or not a directory")
            }
        }
    }
}

/// `name`, a name read from a manifest, as a path inside `dir`: only
/// plain components, and every directory on the way a real directory of
/// `dir` (not a link). The last component is the caller's to look at
/// without following it.
pub(crate) fn listed_path(dir: &Path, name: &str) -> Result<PathBuf, Refusal> {
    // Each `/`-separated segment must be one plain component as written:
    // no empty segment (a leading `/`, `a//b`), no `.` or `..`, and no
    // drive prefix or backslash where the platform reads them.
    let segments: Vec<&str> = name.split('/').collect();
    if !segments.iter().all(|segment| is_plain_name(segment)) {
        return Err(Refusal::LeadsOut);
    }
    let mut path = dir.to_path_buf();
    let (last, on_the_way) = segments.split_last().expect("split gives one at least");
    for component in on_the_way {
        path.push(component);
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if !is_dir {
            let shown = path.strip_prefix(dir).unwrap_or(&path);
            return Err(Refusal::ThroughLink(shown.display().to_string()));
        }
    }
    path.push(last);
    Ok(path)
}

/// Opens the file at `path`, read back from an output directory, as the
/// plain file it must be: never through a link at its last component
/// (Unix: `O_NOFOLLOW`; Windows: the link itself is opened), never
/// waiting on a FIFO (`O_NONBLOCK`), and refused unless what was opened
/// is a regular file, so a name swapped for a link to `/dev/zero` or a
/// FIFO after it was looked at cannot make a reader read or wait for
/// ever. Refusals are `InvalidData`, saying what it is.
pub(crate) fn open_plain_file(path: &Path) -> io::Result<fs::File> {
    #[cfg(unix)]
    let file = {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => fs::File::from(fd),
            Err(e) if e == rustix::io::Errno::LOOP => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a link, not followed",
                ))
            }
            Err(e) => return Err(e.into()),
        }
    };
    #[cfg(windows)]
    let file = {
        use std::os::windows::fs::OpenOptionsExt;
        const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(path)?
    };
    #[cfg(not(any(unix, windows)))]
    let file = fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a plain file (a link, a directory, a FIFO or a device)",
        ));
    }
    Ok(file)
}

/// Whether `segment` is one plain component of a path as written: not
/// empty, no `/`, not `.` or `..`, and no drive prefix, backslash or other
/// character the platform would read as more than a name (on Windows
/// also those [`crate::file_name_for`] escapes there, `:` of a stream
/// among them).
pub fn is_plain_name(segment: &str) -> bool {
    let mut parts = Path::new(segment).components();
    let one_component = matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(part)), None) if part == std::ffi::OsStr::new(segment)
    );
    one_component
        && !segment.contains('/')
        && !(cfg!(windows) && segment.contains(crate::names::FORBIDDEN_ON_WINDOWS))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listed file is copied once, as it was checked; what a writer
    /// does to the listed file afterwards does not reach the copy. A
    /// file other than the manifest's, or a link, gives no copy.
    #[test]
    fn a_private_copy_is_the_file_as_checked_whatever_it_becomes() {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let listed_bytes = vec![7u8; 3 << 20];
        fs::write(d.join("T.keys.parquet"), &listed_bytes).unwrap();
        let listed = ManifestFile {
            name: "T.keys.parquet".into(),
            bytes: listed_bytes.len() as u64,
            sha256: crate::digest::sha256_of(&listed_bytes),
            role: Some("keys".into()),
        };
        let mut copy = tempfile::tempfile().unwrap();
        let len = private_copy_of_listed_file(d, &listed, &mut copy).unwrap();
        assert_eq!(len, listed.bytes);
        io::Seek::rewind(&mut copy).unwrap();
        // The same file written over in place, as a writer holding it would.
        let mut writer = fs::OpenOptions::new()
            .write(true)
            .open(d.join("T.keys.parquet"))
            .unwrap();
        writer.write_all(&[9u8; 1 << 20]).unwrap();
        drop(writer);
        let mut read = Vec::new();
        copy.read_to_end(&mut read).unwrap();
        assert!(
            read == listed_bytes,
            "the copy changed with the listed file"
        );
        let changed = private_copy_of_listed_file(d, &listed, &mut io::sink()).unwrap_err();
        assert!(changed.contains("differs from the manifest"), "{changed}");
        #[cfg(unix)]
        {
            fs::write(d.join("elsewhere"), &listed_bytes).unwrap();
            fs::remove_file(d.join("T.keys.parquet")).unwrap();
            std::os::unix::fs::symlink(d.join("elsewhere"), d.join("T.keys.parquet")).unwrap();
            let linked = private_copy_of_listed_file(d, &listed, &mut io::sink()).unwrap_err();
            assert!(linked.contains("not a plain file"), "{linked}");
        }
    }

    #[test]
    fn only_plain_names_inside_the_directory_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir(d.join("T.parquet")).unwrap();
        assert_eq!(listed_path(d, "T.csv"), Ok(d.join("T.csv")));
        assert_eq!(
            listed_path(d, "T.parquet/part-00000.parquet"),
            Ok(d.join("T.parquet/part-00000.parquet"))
        );
        for hostile in [
            "",
            "/etc/passwd",
            "../outside.csv",
            "T.parquet/../../outside.csv",
            "./T.csv",
            "T.parquet/./x",
            "T.parquet//x",
            "T.csv/",
            "..",
        ] {
            assert_eq!(listed_path(d, hostile), Err(Refusal::LeadsOut), "{hostile}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_link_on_the_way_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("T.parquet")).unwrap();
        assert_eq!(
            listed_path(dir.path(), "T.parquet/part-00000.parquet"),
            Err(Refusal::ThroughLink("T.parquet".into()))
        );
        assert_eq!(
            listed_path(dir.path(), "missing/x"),
            Err(Refusal::ThroughLink("missing".into()))
        );
    }

    #[test]
    fn a_manifest_of_a_later_version_still_lists_its_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ListedFiles::read(dir.path()).unwrap().is_none());
        fs::write(
            dir.path().join(MANIFEST_NAME),
            r#"{"manifest_version": 9, "something_new": [1],
                "tables": [{"name": "T", "files": [
                    {"name": "T.csv", "bytes": 3, "sha256": "ab", "more": true}]}]}"#,
        )
        .unwrap();
        let listed = ListedFiles::read(dir.path()).unwrap().unwrap();
        let names: Vec<_> = listed.files().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["T.csv"]);
        fs::write(dir.path().join(MANIFEST_NAME), "not json").unwrap();
        assert!(ListedFiles::read(dir.path()).is_err());
    }
}
