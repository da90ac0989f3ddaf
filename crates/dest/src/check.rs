//! `fbunload check DIR`: are the files of a run still what it wrote?
//!
//! Every file the manifest lists is read again and compared, by size and
//! SHA-256, with what the run recorded. Each difference is reported on its
//! own, naming the file, so a copy that lost one part of a split table says
//! which. Names come from a file anyone may have edited, so a name that
//! would lead out of the directory, or through a link, is reported and
//! never opened.
//!
//! A file the manifest does not list but that looks like a table's (an
//! added `A.000005.csv` part, a stray `schema.sql`) is reported too:
//! readers of `A.*.csv` would read it as part of the run. Files of other
//! names (a user's notes) are not the run's business.
//!
//! A check changes nothing. What runs leave beside their files is named:
//! a staging directory (`.fbunload-run-…`, a run under way or one killed,
//! which the next run removes) in a note, since the run in place is whole;
//! a switch to a new run that an interrupted fbunload left half done
//! (`.fbunload-switch` with its plan) as the one difference, since the
//! directory then holds part of each run (`fbunload check --finish`, or
//! the next run, finishes it; see `directory`); a `.fbunload-switch` that
//! no run left as a difference, since the next run refuses it.

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use fbunload_exec::ExecError;
use fbunload_plan::printable;

use crate::digest::sha256;
use crate::directory::{resolve, run_under_way, switch_state, SwitchState};
use crate::manifest::{listed_path, open_plain_file, ListedFiles, MANIFEST_NAME};
use crate::previous::is_table_file_name;
use crate::{STAGING_PREFIX, SWITCH_DIR};

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Files the manifest lists.
    pub files: usize,
    /// One line per file that differs: `T.csv: missing`.
    pub differences: Vec<String>,
    /// What the check did before checking, for the user to know.
    pub notes: Vec<String>,
}

impl CheckReport {
    pub fn matches(&self) -> bool {
        self.differences.is_empty()
    }
}

/// Compares every file `dir`'s manifest lists with the file there. An
/// error if there is no manifest or it cannot be read.
pub fn check_directory(dir: &Path) -> Result<CheckReport, ExecError> {
    let fail = |reason: String| ExecError::OutputDir {
        path: dir.to_path_buf(),
        reason,
    };
    let resolved = resolve(dir).map_err(fail)?;
    let dir = resolved.as_path();
    let mut report = CheckReport::default();
    let switch_state = switch_state(dir).map_err(|e| fail(format!("reading {SWITCH_DIR}: {e}")))?;
    match switch_state {
        SwitchState::None => {}
        SwitchState::Remains => report.notes.push(format!(
            "{SWITCH_DIR} holds what is left of a finished switch (a run was stopped while it \
             removed the old run's files); the run here is complete, and the next run into the \
             directory removes it"
        )),
        SwitchState::Foreign(why) => report.differences.push(format!(
            "{SWITCH_DIR}: not what an fbunload run leaves ({why}); the next run into the \
             directory refuses it: remove it"
        )),
        SwitchState::Pending(_) if run_under_way(dir) => {
            return Err(fail(
                "an fbunload run is moving its files in now; check it when that run ends".into(),
            ))
        }
        SwitchState::Pending(_) => {
            report.differences.push(format!(
                "{SWITCH_DIR}: an fbunload run was stopped while it moved its complete files in, \
                 so the directory holds part of the old run and part of the new: `fbunload check \
                 --finish` finishes the move and then checks (the next run into the directory \
                 finishes it too)"
            ));
            return Ok(report);
        }
    }
    let staging = staging_dirs(dir);
    if !staging.is_empty() {
        let whose = if run_under_way(dir) {
            "of a run writing into the directory now"
        } else {
            "left by a run that was killed; the next run into the directory removes it"
        };
        for name in staging {
            report.notes.push(format!(
                "{}: not part of the run here: the staging directory {whose}",
                printable(&name)
            ));
        }
    }
    let listed = match ListedFiles::read(dir) {
        Ok(Some(listed)) => listed,
        Ok(None) if !dir.is_dir() => return Err(fail("no such directory".into())),
        Ok(None) if !report.matches() => {
            // A `.fbunload-switch` no run left: named, with the rest.
            report.differences.push(format!(
                "{MANIFEST_NAME}: missing: only a complete fbunload run writes one"
            ));
            return Ok(report);
        }
        Ok(None) => {
            return Err(fail(format!(
                "no {MANIFEST_NAME} here: only a complete fbunload run writes one, so this is not \
                 the output of one"
            )))
        }
        Err(e) => return Err(fail(format!("{MANIFEST_NAME} cannot be read: {e}"))),
    };
    let names: HashSet<&str> = listed.files().map(|f| f.name.as_str()).collect();
    for stray in unlisted(dir, &names) {
        report.differences.push(format!(
            "{}: not in the manifest, yet named like a table's file; readers of the run's files \
             would take it for one: remove it, or unload again into an empty directory",
            printable(&stray)
        ));
    }
    for file in listed.files() {
        report.files += 1;
        let problem = match listed_path(dir, &file.name) {
            Err(refusal) => Some(refusal.to_string()),
            Ok(path) => compare(&path, file.bytes, &file.sha256),
        };
        if let Some(problem) = problem {
            report
                .differences
                .push(format!("{}: {problem}", printable(&file.name)));
        }
    }
    Ok(report)
}

/// Names of the staging directories in `dir` (entries named so, whatever
/// they are), sorted.
fn staging_dirs(dir: &Path) -> Vec<String> {
    let mut found: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(STAGING_PREFIX))
        .collect();
    found.sort();
    found
}

/// Entries of `dir`, and of the directories of parts the manifest lists
/// files in, that are named like a run's files and that `listed` does not
/// name; sorted.
fn unlisted(dir: &Path, listed: &HashSet<&str>) -> Vec<String> {
    let holds_listed = |name: &str| {
        let prefix = format!("{name}/");
        listed.iter().any(|l| l.starts_with(&prefix))
    };
    let mut strays = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return strays;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if listed.contains(name.as_str()) || name == MANIFEST_NAME {
            continue;
        }
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && holds_listed(&name) {
            for part in fs::read_dir(entry.path()).into_iter().flatten().flatten() {
                let inner = format!("{name}/{}", part.file_name().to_string_lossy());
                if !listed.contains(inner.as_str()) {
                    strays.push(inner);
                }
            }
        } else if name == crate::SCHEMA_FILE || is_table_file_name(&name) {
            strays.push(name);
        }
    }
    strays.sort();
    strays
}

/// What is wrong with the file at `path`, if anything.
fn compare(path: &PathBuf, bytes: u64, expected_sha256: &str) -> Option<String> {
    let before = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some("missing".into()),
        Err(e) => return Some(format!("cannot be read: {e}")),
        Ok(meta) if !meta.is_file() => {
            return Some("not a plain file (a link or a directory); refused".into())
        }
        Ok(meta) => meta,
    };
    if before.len() != bytes {
        return Some(format!("{} bytes, the manifest says {bytes}", before.len()));
    }
    let mut file = match open_plain_file(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Some(format!("replaced while being checked by {e}; refused"))
        }
        Err(e) => return Some(format!("cannot be read: {e}")),
    };
    if !same_file(&before, &file) {
        return Some("replaced while being checked; refused".into());
    }
    match sha256(&mut file) {
        Err(e) => Some(format!("cannot be read: {e}")),
        Ok((_, actual)) if actual != expected_sha256 => Some(format!(
            "SHA-256 {actual} differs from the manifest's {expected_sha256}"
        )),
        Ok(_) => None,
    }
}

/// Whether the file opened is the one looked at before (no link swapped
/// in between).
#[cfg(unix)]
fn same_file(before: &fs::Metadata, opened: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    opened
        .metadata()
        .is_ok_and(|now| now.dev() == before.dev() && now.ino() == before.ino())
}

#[cfg(not(unix))]
fn same_file(_before: &fs::Metadata, opened: &File) -> bool {
    opened.metadata().is_ok_and(|now| now.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    fn manifest(dir: &Path, names: &[&str]) {
        let files: Vec<String> = names
            .iter()
            .map(|n| format!(r#"{{"name": {n:?}, "bytes": 3, "sha256": "{ABC}"}}"#))
            .collect();
        fs::write(
            dir.join(MANIFEST_NAME),
            format!(r#"{{"tables": [{{"files": [{}]}}]}}"#, files.join(",")),
        )
        .unwrap();
    }

    #[test]
    fn every_difference_is_one_line_naming_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join("same.csv"), b"abc").unwrap();
        fs::write(d.join("changed.csv"), b"abd").unwrap();
        fs::write(d.join("longer.csv"), b"abcd").unwrap();
        manifest(
            d,
            &[
                "same.csv",
                "changed.csv",
                "longer.csv",
                "gone.csv",
                "../up.csv",
            ],
        );
        let report = check_directory(d).unwrap();
        assert_eq!(report.files, 5);
        assert_eq!(
            report.differences,
            [
                format!("changed.csv: SHA-256 a52d159f262b2c6ddb724a61840befc36eb30c88877a4030b65cbe86298449c9 differs from the manifest's {ABC}"),
                "longer.csv: 4 bytes, the manifest says 3".to_string(),
                "gone.csv: missing".to_string(),
                "../up.csv: refused: not a plain name inside the directory".to_string(),
            ]
        );
    }

    #[test]
    fn no_manifest_is_an_error_that_says_what_the_directory_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let err = check_directory(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no manifest.json here"), "{err}");
        manifest(dir.path(), &[]);
        assert!(check_directory(dir.path()).unwrap().matches());
    }

    #[test]
    fn files_named_like_the_runs_that_it_does_not_list_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for name in ["A.000001.csv", "A.000005.csv", "notes.txt", "schema.sql"] {
            fs::write(d.join(name), b"abc").unwrap();
        }
        fs::create_dir(d.join("T.parquet")).unwrap();
        fs::write(d.join("T.parquet/part-00000.parquet"), b"abc").unwrap();
        fs::write(d.join("T.parquet/part-00001.parquet"), b"abc").unwrap();
        fs::create_dir(d.join(".fbunload-run-x1")).unwrap();
        manifest(d, &["A.000001.csv", "T.parquet/part-00000.parquet"]);
        let report = check_directory(d).unwrap();
        let strays: Vec<&str> = report
            .differences
            .iter()
            .map(|line| line.split(':').next().unwrap())
            .collect();
        assert_eq!(
            strays,
            ["A.000005.csv", "T.parquet/part-00001.parquet", "schema.sql"]
        );
        assert!(report.differences[0].contains("not in the manifest"));
        assert!(!report.matches());
    }

    /// A staging directory was passed over in silence, though the README
    /// called it a difference; it is not one (a killed run leaves the run
    /// in place whole), and is named in a note.
    #[test]
    fn a_staging_directory_left_is_named_in_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join("T.csv"), b"abc").unwrap();
        manifest(d, &["T.csv"]);
        fs::create_dir(d.join(".fbunload-run-x1")).unwrap();
        fs::write(d.join(".fbunload-run-x1/T.csv"), b"half").unwrap();
        let report = check_directory(d).unwrap();
        assert!(report.matches(), "{report:?}");
        assert_eq!(report.notes.len(), 1, "{report:?}");
        assert!(
            report.notes[0].starts_with(".fbunload-run-x1: not part of the run here")
                && report.notes[0].contains("the next run into the directory removes it"),
            "{report:?}"
        );
    }

    /// A check finished an interrupted switch, following its plan
    /// (issue 37: a planted one removed files outside the directory). It
    /// changes nothing now: a switch cut short is the one difference, and
    /// one no run left is a difference besides the files' own.
    #[test]
    fn a_check_changes_nothing_and_names_a_switch_left_half_done() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join("T.csv"), b"abc").unwrap();
        manifest(d, &["T.csv"]);
        let switch = d.join(SWITCH_DIR);
        fs::create_dir(&switch).unwrap();
        fs::write(switch.join("U.csv"), b"new").unwrap();
        fs::write(
            switch.join(".switch.json"),
            r#"{"moves": ["U.csv"], "removes": ["T.csv"]}"#,
        )
        .unwrap();
        let report = check_directory(d).unwrap();
        assert_eq!(report.differences.len(), 1, "{report:?}");
        assert!(report.differences[0].contains("--finish"), "{report:?}");
        assert!(switch.join("U.csv").exists() && d.join("T.csv").exists());

        fs::write(
            switch.join(".switch.json"),
            r#"{"moves": [], "removes": ["../T.csv"]}"#,
        )
        .unwrap();
        let report = check_directory(d).unwrap();
        assert_eq!(report.files, 1);
        assert_eq!(report.differences.len(), 1, "{report:?}");
        assert!(
            report.differences[0].contains("its plan removes \"../T.csv\""),
            "{report:?}"
        );
        assert!(switch.join("U.csv").exists() && d.join("T.csv").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_listed_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        fs::write(outside.path(), b"abc").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("T.csv")).unwrap();
        manifest(dir.path(), &["T.csv"]);
        let report = check_directory(dir.path()).unwrap();
        assert_eq!(
            report.differences,
            ["T.csv: not a plain file (a link or a directory); refused"]
        );
    }
}
