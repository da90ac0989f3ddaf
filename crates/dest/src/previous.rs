//! An earlier run's files in an output directory.
//!
//! Two runs' tables in one directory would be two snapshots that look like
//! one. So a run into a directory that holds another run's `manifest.json`
//! or table files is refused before it attaches to anything, unless it was
//! asked to overwrite that run. Then it removes exactly what the old
//! manifest lists, and the old manifest, once its own snapshot is taken
//! and before it publishes anything; a file the manifest does not list (a
//! user's notes, another program's output) is left alone.
//!
//! Table files with no manifest are what an fbunload older than manifests
//! (or a failed run) left: nothing says which of them it wrote, so
//! overwriting removes none of them up front; the new run replaces the
//! names it writes, and its manifest lists only its own files.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::manifest::{is_plain_name, listed_path, ListedFiles, MANIFEST_NAME};

/// Extensions of the files a run writes (a `--split` Parquet table is a
/// directory named so); csv, tsv and jsonl may be compressed as a whole.
const TABLE_EXTENSIONS: &[&str] = &["csv", "tsv", "jsonl", "parquet", "arrow"];
const COMPRESSION_EXTENSIONS: &[&str] = &["gz", "zst"];

/// What an output directory holds of earlier runs.
#[derive(Debug, Default)]
pub(crate) struct PreviousRun {
    /// Whether there is a `manifest.json`.
    pub manifest: bool,
    /// Names of table files (or directories of parts) and `schema.sql`,
    /// sorted.
    pub table_files: Vec<String>,
}

impl PreviousRun {
    /// Looks at the entries of `dir` (not into them, nor through links).
    pub fn find(dir: &Path) -> io::Result<PreviousRun> {
        let mut found = PreviousRun::default();
        for entry in fs::read_dir(dir)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if name == MANIFEST_NAME {
                found.manifest = true;
            } else if name == crate::SCHEMA_FILE || is_table_file_name(&name) {
                found.table_files.push(name);
            }
        }
        found.table_files.sort();
        Ok(found)
    }

    pub fn is_empty(&self) -> bool {
        !self.manifest && self.table_files.is_empty()
    }

    /// The one line that refuses to mix runs, naming what is there and the
    /// way out.
    pub fn refusal(&self) -> String {
        let shown: Vec<&str> = self
            .table_files
            .iter()
            .take(3)
            .map(String::as_str)
            .collect();
        let more = match self.table_files.len().saturating_sub(shown.len()) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let what = match (self.manifest, shown.is_empty()) {
            (true, true) => format!("another run's {MANIFEST_NAME}"),
            (true, false) => format!(
                "another run's {MANIFEST_NAME} and table files ({}{more})",
                shown.join(", ")
            ),
            (false, _) => format!(
                "table files of another run ({}{more}) and no {MANIFEST_NAME}",
                shown.join(", ")
            ),
        };
        format!(
            "it holds {what}; two runs in one directory would mix snapshots: use --overwrite \
             to replace that run, or choose another -o"
        )
    }

    /// The files to remove when overwriting: what the manifest lists, each
    /// checked to be inside `dir`. An unreadable or hostile manifest is an
    /// error, and nothing is removed; a plain name that fbunload never
    /// gives a file ([`is_run_file_path`]: `notes.txt`, `.profile`) is not
    /// that run's, and stays.
    pub fn files_to_remove(&self, dir: &Path) -> Result<Vec<String>, String> {
        if !self.manifest {
            return Ok(Vec::new());
        }
        let listed = ListedFiles::read(dir)
            .map_err(|e| {
                format!(
                    "{MANIFEST_NAME} cannot be read ({e}), so --overwrite cannot tell which files \
                     are that run's; remove them by hand, or choose another -o"
                )
            })?
            .unwrap_or_else(|| unreachable!("found above"));
        listed
            .files()
            .filter(|file| is_run_file_path(&file.name) || listed_path(dir, &file.name).is_err())
            .map(|file| match listed_path(dir, &file.name) {
                Ok(_) => Ok(file.name.clone()),
                Err(why) => Err(format!(
                    "{MANIFEST_NAME} lists {:?}, {why}; --overwrite removes nothing: remove that \
                     run's files by hand, or choose another -o",
                    file.name
                )),
            })
            .collect()
    }
}

/// Whether `name` is one fbunload gives a table: `T.csv`, `T.csv.zst`,
/// `T.parquet`. Hidden names are never a table's (`file_name_for` escapes
/// a leading dot).
pub(crate) fn is_table_file_name(name: &str) -> bool {
    if name.starts_with('.') {
        return false;
    }
    let name = COMPRESSION_EXTENSIONS
        .iter()
        .find_map(|c| name.strip_suffix(&format!(".{c}")))
        .unwrap_or(name);
    TABLE_EXTENSIONS.iter().any(|extension| {
        name.strip_suffix(extension)
            .is_some_and(|stem| stem.len() > 1 && stem.ends_with('.'))
    })
}

/// Whether `name` (a `/`-separated path read back from the output
/// directory: a manifest, a switch's plan) names something a run writes
/// there: a table's file or directory of parts, `schema.sql`
/// ([`is_run_entry_name`]), or a part in a directory of parts
/// (`T.parquet/part-00000.parquet`). Nothing else is ever moved or
/// removed on a name read back.
pub(crate) fn is_run_file_path(name: &str) -> bool {
    match name.split_once('/') {
        None => is_run_entry_name(name),
        Some((parts, part)) => {
            is_run_entry_name(parts) && parts.ends_with(".parquet") && is_part_name(part)
        }
    }
}

/// Whether `name` is one plain name of an entry a run puts in the output
/// directory: a table's file (or directory of parts), or `schema.sql`.
pub(crate) fn is_run_entry_name(name: &str) -> bool {
    is_plain_name(name) && (name == crate::SCHEMA_FILE || is_table_file_name(name))
}

/// Whether `name` is a part's in a directory of parts: `part-00000.parquet`.
pub(crate) fn is_part_name(name: &str) -> bool {
    is_plain_name(name) && name.starts_with("part-") && name.ends_with(".parquet")
}

/// Removes `files` (names relative to `dir`, as [`PreviousRun::files_to_remove`]
/// gives them; one that leads out or through a link is skipped), then the
/// directories of parts they leave empty; where there is no `unlinkat`
/// (Windows). A link is removed, never followed; a directory where the
/// manifest listed a file is not what it listed, and is left alone.
#[cfg_attr(unix, allow(dead_code))]
pub(crate) fn remove(dir: &Path, files: &[String]) -> io::Result<()> {
    let files: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| listed_path(dir, f).ok())
        .collect();
    let mut parents = Vec::new();
    for file in &files {
        if fs::symlink_metadata(file).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        match fs::remove_file(file) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("removing {}: {e}", file.display()),
                ))
            }
            Ok(()) => {}
        }
        let mut parent = file.parent();
        while let Some(p) = parent.filter(|p| *p != dir && p.starts_with(dir)) {
            parents.push(p.to_path_buf());
            parent = p.parent();
        }
    }
    // Deepest first; a directory still holding something is kept.
    parents.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    parents.dedup();
    for p in parents {
        let _ = fs::remove_dir(p);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_files_are_known_by_their_extensions() {
        for name in [
            "T.csv",
            "T.tsv.gz",
            "My table.jsonl.zst",
            "T.parquet",
            "T.arrow",
        ] {
            assert!(is_table_file_name(name), "{name}");
        }
        for name in [
            "notes.txt",
            "csv",
            ".csv",
            ".fbunload-run-abc",
            "T.parquet.gz.bak",
            "Tcsv",
            "db.fdb",
            MANIFEST_NAME,
        ] {
            assert!(!is_table_file_name(name), "{name}");
        }
    }

    #[test]
    fn the_refusal_names_what_is_there_and_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        assert!(PreviousRun::find(dir.path()).unwrap().is_empty());
        for name in ["A.csv", "B.csv", "C.csv", "D.csv", "notes.txt"] {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        let found = PreviousRun::find(dir.path()).unwrap();
        assert_eq!(found.table_files, ["A.csv", "B.csv", "C.csv", "D.csv"]);
        assert_eq!(
            found.refusal(),
            "it holds table files of another run (A.csv, B.csv, C.csv and 1 more) and no \
             manifest.json; two runs in one directory would mix snapshots: use --overwrite to \
             replace that run, or choose another -o"
        );
        assert_eq!(found.files_to_remove(dir.path()), Ok(Vec::new()));
    }

    #[test]
    fn overwriting_removes_what_the_manifest_lists_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir(d.join("T.parquet")).unwrap();
        fs::create_dir(d.join("U.parquet")).unwrap();
        for name in [
            "A.csv",
            "mine.csv",
            "T.parquet/part-00000.parquet",
            "U.parquet/part-00000.parquet",
            "U.parquet/notes.txt",
        ] {
            fs::write(d.join(name), b"x").unwrap();
        }
        fs::write(
            d.join(MANIFEST_NAME),
            r#"{"tables": [
                {"files": [{"name": "A.csv", "bytes": 1, "sha256": ""}]},
                {"files": [{"name": "T.parquet/part-00000.parquet", "bytes": 1, "sha256": ""}]},
                {"files": [{"name": "U.parquet/part-00000.parquet", "bytes": 1, "sha256": ""},
                           {"name": "gone.csv", "bytes": 1, "sha256": ""}]}]}"#,
        )
        .unwrap();
        let found = PreviousRun::find(d).unwrap();
        assert!(found.manifest);
        let files = found.files_to_remove(d).unwrap();
        remove(d, &files).unwrap();
        let mut left: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        // The manifest is replaced by the new run's (the switch renames it
        // over the old one), not removed here.
        assert_eq!(left, ["U.parquet", "manifest.json", "mine.csv"]);
        assert!(d.join("U.parquet/notes.txt").exists());
    }

    #[test]
    fn only_names_a_run_writes_are_its_files() {
        for name in [
            "T.csv",
            "T.000001.csv.zst",
            "schema.sql",
            "T.parquet",
            "T.parquet/part-00000.parquet",
        ] {
            assert!(is_run_file_path(name), "{name}");
        }
        for name in [
            "",
            "..",
            "../victim.csv",
            "/etc/passwd.csv",
            "notes.txt",
            ".fbunload-switch",
            ".replaced.T.parquet",
            "manifest.json",
            "T.csv/part-00000.parquet",
            "T.parquet/notes.txt",
            "T.parquet/part-00000.parquet/x",
            "T.parquet/../part-00000.parquet",
            "a/T.csv",
        ] {
            assert!(!is_run_file_path(name), "{name}");
        }
    }

    #[test]
    fn a_manifest_listing_names_no_run_writes_removes_none_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for name in ["A.csv", "notes.txt"] {
            fs::write(d.join(name), b"x").unwrap();
        }
        fs::write(
            d.join(MANIFEST_NAME),
            r#"{"tables": [{"files": [{"name": "A.csv", "bytes": 1, "sha256": ""},
                {"name": "notes.txt", "bytes": 1, "sha256": ""}]}]}"#,
        )
        .unwrap();
        let files = PreviousRun::find(d).unwrap().files_to_remove(d).unwrap();
        assert_eq!(files, ["A.csv"]);
    }

    #[test]
    fn a_hostile_manifest_removes_nothing() {
        let outer = tempfile::tempdir().unwrap();
        let d = outer.path().join("out");
        fs::create_dir(&d).unwrap();
        fs::write(outer.path().join("victim.csv"), b"precious").unwrap();
        fs::write(d.join("A.csv"), b"x").unwrap();
        fs::write(
            d.join(MANIFEST_NAME),
            r#"{"tables": [{"files": [{"name": "A.csv", "bytes": 1, "sha256": ""},
                {"name": "../victim.csv", "bytes": 1, "sha256": ""}]}]}"#,
        )
        .unwrap();
        let err = PreviousRun::find(&d)
            .unwrap()
            .files_to_remove(&d)
            .unwrap_err();
        assert!(err.contains("\"../victim.csv\", refused"), "{err}");
        assert!(outer.path().join("victim.csv").exists());
        assert!(d.join("A.csv").exists());
    }
}
