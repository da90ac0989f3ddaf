//! The output directory: locked for the run, written through a private
//! staging directory, and changed only by renames of complete files.
//!
//! Every file a run writes is created with `create_new` inside a staging
//! directory that the run itself made (`.fbunload-run-XXXXXX`, random name,
//! mode 0700 on Unix; on Windows it takes the output directory's ACL), so a link planted in the output directory is never followed
//! and no two runs share a temporary file. A table's file is synced and
//! renamed into the output directory only when it is complete; whatever is
//! unfinished goes with the staging directory when the run ends, and a run
//! killed outright (`kill -9`) leaves a staging directory that the next run
//! into the directory removes. The lock (an advisory `flock` on the
//! directory; on Windows, which cannot lock a directory, `LockFileEx` on a
//! file `.fbunload.lock` in it) makes a second concurrent run into the same
//! directory fail at once instead of mixing files.
//!
//! A directory holding another run's files is refused unless the run is
//! to overwrite them (`previous`); the run's `manifest.json` goes in last,
//! through the staging directory like every table.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fbunload_exec::{ExecError, FileDigest};

use crate::digest::digest_tree;
use crate::manifest::{Manifest, MANIFEST_NAME};
use crate::previous::{self, PreviousRun};

/// Names of staging directories begin so.
pub const STAGING_PREFIX: &str = ".fbunload-run-";

/// What to do with another run's files found in the output directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reuse {
    /// Refuse the run (`manifest.json` or table files are there).
    #[default]
    Refuse,
    /// Remove what the old manifest lists, and the old manifest, before
    /// publishing; with no manifest, replace the names this run writes.
    Overwrite,
}

/// A locked output directory with the run's staging directory in it.
#[derive(Debug)]
pub struct OutputDir {
    path: PathBuf,
    staging: tempfile::TempDir,
    /// The old run's files to remove before the first table is published.
    to_remove: Mutex<Option<Vec<PathBuf>>>,
    /// Names this run has published, to never replace one of them.
    published: Mutex<Vec<String>>,
    /// The run made the directory: it goes again if the run leaves it
    /// empty (see `Drop`).
    created: bool,
    /// Held for the life of the run (taken only to let go of it in `Drop`).
    lock: Option<File>,
}

impl OutputDir {
    /// Makes `path` if needed, locks it, refuses it if it holds another
    /// run's files (unless `reuse` says to overwrite them), removes what
    /// dead runs left and makes this run's staging directory, which also
    /// proves that files can be written there before any work starts.
    pub fn open(path: &Path, reuse: Reuse) -> Result<Arc<OutputDir>, ExecError> {
        let fail = |reason: String| ExecError::OutputDir {
            path: path.to_path_buf(),
            reason,
        };
        if path.exists() && !path.is_dir() {
            return Err(fail("exists and is not a directory".into()));
        }
        let created = fs::symlink_metadata(path).is_err();
        fs::create_dir_all(path).map_err(|e| fail(format!("cannot create it: {e}")))?;
        let lock = lock(path).map_err(|e| match e.kind() {
            io::ErrorKind::WouldBlock => fail(
                "another fbunload run is writing into it; wait for that run to end, or choose \
                 another -o"
                    .into(),
            ),
            _ => fail(format!("cannot lock it: {e}")),
        })?;
        let previous = PreviousRun::find(path).map_err(|e| fail(format!("cannot list it: {e}")))?;
        if !previous.is_empty() && reuse == Reuse::Refuse {
            return Err(fail(previous.refusal()));
        }
        let to_remove = previous.files_to_remove(path).map_err(fail)?;
        remove_dead_runs(path);
        let staging = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(path)
            .map_err(|e| fail(format!("cannot write in it: {e}")))?;
        Ok(Arc::new(OutputDir {
            path: path.to_path_buf(),
            staging,
            to_remove: Mutex::new(previous.manifest.then_some(to_remove)),
            published: Mutex::new(Vec::new()),
            created,
            lock: Some(lock),
        }))
    }

    /// Removes the overwritten run's files (see [`Reuse::Overwrite`]), once:
    /// called when the snapshot is taken, so a run that fails before (a bad
    /// `--where`, a wrong password) leaves the old run as it was.
    pub fn remove_previous_run(&self) -> Result<(), ExecError> {
        let Some(files) = self.to_remove.lock().unwrap().take() else {
            return Ok(());
        };
        previous::remove(&self.path, &files).map_err(|e| ExecError::OutputDir {
            path: self.path.clone(),
            reason: format!("removing the overwritten run's files: {e}"),
        })?;
        sync_dir(&self.path);
        Ok(())
    }

    /// Writes `manifest` as `manifest.json`, the run's last file: created
    /// new in the staging directory, synced, and renamed in.
    pub fn publish_manifest(&self, manifest: &Manifest) -> Result<PathBuf, ExecError> {
        let to = self.path.join(MANIFEST_NAME);
        let write = || -> io::Result<()> {
            let mut file = self.create(MANIFEST_NAME)?;
            let mut text = serde_json::to_vec_pretty(manifest)?;
            text.push(b'\n');
            file.write_all(&text)?;
            file.sync_all()?;
            fs::rename(self.staging().join(MANIFEST_NAME), &to)?;
            self.published.lock().unwrap().push(MANIFEST_NAME.into());
            sync_dir(&self.path);
            Ok(())
        };
        write().map_err(|e| ExecError::OutputDir {
            path: self.path.clone(),
            reason: format!("writing {MANIFEST_NAME}: {e}"),
        })?;
        Ok(to)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where unfinished files and spilled units are.
    pub(crate) fn staging(&self) -> &Path {
        self.staging.path()
    }

    /// A new file `name` in the staging directory.
    pub(crate) fn create(&self, name: &str) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.staging().join(name))
    }

    /// A new directory `name` in the staging directory, for a table
    /// written as parts.
    pub(crate) fn create_dir(&self, name: &str) -> io::Result<PathBuf> {
        let dir = self.staging().join(name);
        fs::create_dir(&dir)?;
        Ok(dir)
    }

    /// Syncs the complete file (or directory of parts) `name`, hashes its
    /// files, and moves it into the output directory, replacing what a
    /// previous run left under that name. Returns its final path and its
    /// files.
    pub(crate) fn publish(&self, name: &str) -> io::Result<(PathBuf, Vec<FileDigest>)> {
        let from = self.staging().join(name);
        let to = self.path.join(name);
        sync_tree(&from)?;
        let files = digest_tree(&from, name)?;
        let mut published = self.published.lock().unwrap();
        let is_that_file =
            |earlier: &str| same_file::is_same_file(&to, self.path.join(earlier)).unwrap_or(false);
        if let Some(earlier) = published_under_another_case(&published, name, is_that_file) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "this file system does not tell {name:?} from {earlier:?}, which this run \
                     wrote for another table (names that differ only in case); unload one of \
                     the two tables into another directory (--tables, --exclude)"
                ),
            ));
        }
        published.push(name.to_string());
        drop(published);
        match fs::symlink_metadata(&to) {
            Ok(old) if old.is_dir() => {
                // A directory of parts of an earlier `--split` run (or one
                // this run replaces by one): moved aside, then removed. A
                // directory holding anything else is not ours to remove.
                if !holds_only_parts(&to)? {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        "a directory of that name is in the way and holds files fbunload did not \
                         write; move it, or choose another -o",
                    ));
                }
                let aside = self.staging().join(format!(".replaced.{name}"));
                fs::rename(&to, &aside)?;
                fs::rename(&from, &to)?;
                let _ = fs::remove_dir_all(&aside);
            }
            // A file or a link: `rename` replaces the entry itself and
            // never writes through a link.
            _ if from.is_dir() && to.symlink_metadata().is_ok() => {
                let aside = self.staging().join(format!(".replaced.{name}"));
                fs::rename(&to, &aside)?;
                fs::rename(&from, &to)?;
            }
            _ => fs::rename(&from, &to)?,
        }
        sync_dir(&self.path);
        Ok((to, files))
    }
}

impl Drop for OutputDir {
    /// A directory this run made goes again when the run published nothing
    /// in it (a wrong password, a missing table), so that a failed run
    /// leaves nothing behind. `remove_dir` removes only an empty directory,
    /// so nothing someone else put there meanwhile is lost.
    fn drop(&mut self) {
        let published = self.published.get_mut().map_or(true, |p| !p.is_empty());
        if self.created && !published {
            let _ = fs::remove_dir_all(self.staging.path());
            // Windows' lock file is in the directory, and open files there
            // cannot be removed: let go of it first.
            drop(self.lock.take());
            #[cfg(not(unix))]
            let _ = fs::remove_file(self.path.join(".fbunload.lock"));
            let _ = fs::remove_dir(&self.path);
        }
    }
}

/// The name this run published that `name` would replace: on a file
/// system that ignores case (Windows, macOS, some mounts), tables
/// `"Orders"` and `ORDERS` get one file, and the second would silently
/// take the first's place. `is_that_file` tells whether `name` now opens
/// an earlier name's file; a file of an older run that merely differs in
/// case is no conflict.
fn published_under_another_case<'p>(
    published: &'p [String],
    name: &str,
    is_that_file: impl Fn(&str) -> bool,
) -> Option<&'p String> {
    let folded = name.to_lowercase();
    published.iter().find(|earlier| {
        *earlier != name && earlier.to_lowercase() == folded && is_that_file(earlier)
    })
}

/// Syncs a file, or every file of a directory.
fn sync_tree(path: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    if meta.is_dir() {
        for entry in fs::read_dir(path)? {
            sync_tree(&entry?.path())?;
        }
        sync_dir(path);
        return Ok(());
    }
    OpenOptions::new().write(true).open(path)?.sync_all()
}

/// Makes renames in `dir` durable, where the platform can.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Whether `dir` holds only Parquet part files (and nothing else).
fn holds_only_parts(dir: &Path) -> io::Result<bool> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_part = name.starts_with("part-") && name.ends_with(".parquet");
        if !is_part || !entry.file_type()?.is_file() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Staging directories of runs that are over: the lock is ours, so no
/// live run is writing here. Links are never followed.
fn remove_dead_runs(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let is_staging = entry
            .file_name()
            .to_string_lossy()
            .starts_with(STAGING_PREFIX);
        if is_staging && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// An exclusive advisory lock on the directory, held while the file lives.
#[cfg(unix)]
fn lock(dir: &Path) -> io::Result<File> {
    let handle = File::open(dir)?;
    try_lock(handle)
}

/// Windows cannot lock a directory handle: a lock file stands for it.
#[cfg(not(unix))]
fn lock(dir: &Path) -> io::Result<File> {
    let handle = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(".fbunload.lock"))?;
    try_lock(handle)
}

fn try_lock(handle: File) -> io::Result<File> {
    match handle.try_lock() {
        Ok(()) => Ok(handle),
        Err(fs::TryLockError::WouldBlock) => Err(io::ErrorKind::WouldBlock.into()),
        Err(fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_into_the_same_directory_is_refused_while_the_first_lasts() {
        let dir = tempfile::tempdir().unwrap();
        let first = OutputDir::open(dir.path(), Reuse::Refuse).unwrap();
        let err = OutputDir::open(dir.path(), Reuse::Refuse)
            .unwrap_err()
            .to_string();
        assert!(err.contains("another fbunload run"), "{err}");
        drop(first);
        OutputDir::open(dir.path(), Reuse::Refuse).unwrap();
    }

    #[test]
    fn what_a_dead_run_left_is_removed_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        fs::write(victim.path().join("keep"), b"x").unwrap();
        let dead = dir.path().join(format!("{STAGING_PREFIX}dead"));
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join("table0.unit3.part"), b"old").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            victim.path(),
            dir.path().join(format!("{STAGING_PREFIX}link")),
        )
        .unwrap();
        let out = OutputDir::open(dir.path(), Reuse::Refuse).unwrap();
        assert!(!dead.exists());
        assert!(victim.path().join("keep").exists());
        drop(out);
    }

    #[test]
    fn a_directory_the_run_made_goes_again_if_nothing_was_published_in_it() {
        let parent = tempfile::tempdir().unwrap();
        let made = parent.path().join("out");
        drop(OutputDir::open(&made, Reuse::Refuse).unwrap());
        assert!(!made.exists(), "a failed run left {made:?}");

        let out = OutputDir::open(&made, Reuse::Refuse).unwrap();
        out.create("T.csv").unwrap();
        out.publish("T.csv").unwrap();
        drop(out);
        assert!(made.join("T.csv").exists());

        // One that was there before stays, even empty.
        let there = parent.path().join("there");
        fs::create_dir(&there).unwrap();
        drop(OutputDir::open(&there, Reuse::Refuse).unwrap());
        assert!(there.is_dir());
    }

    #[test]
    fn a_planted_link_at_the_final_name_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = tempfile::NamedTempFile::new().unwrap();
        fs::write(victim.path(), b"precious").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(victim.path(), dir.path().join("T.csv")).unwrap();
        let out = OutputDir::open(dir.path(), Reuse::Overwrite).unwrap();
        use std::io::Write;
        out.create("T.csv").unwrap().write_all(b"rows").unwrap();
        let (path, files) = out.publish("T.csv").unwrap();
        assert_eq!(files[0].bytes, 4);
        assert_eq!(fs::read(path).unwrap(), b"rows");
        assert_eq!(fs::read(victim.path()).unwrap(), b"precious");
    }

    #[test]
    fn a_foreign_directory_at_the_final_name_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("T.parquet")).unwrap();
        fs::write(dir.path().join("T.parquet/notes.txt"), b"mine").unwrap();
        let out = OutputDir::open(dir.path(), Reuse::Overwrite).unwrap();
        out.create("T.parquet").unwrap();
        let err = out.publish("T.parquet").unwrap_err().to_string();
        assert!(err.contains("in the way"), "{err}");
        assert!(dir.path().join("T.parquet/notes.txt").exists());
    }

    /// Whether the file system under `dir` ignores case (Windows, Wine's
    /// view of any file system, macOS by default).
    fn ignores_case(dir: &Path) -> bool {
        fs::write(dir.join("case-probe"), b"").unwrap();
        let ignores = dir.join("CASE-PROBE").exists();
        fs::remove_file(dir.join("case-probe")).unwrap();
        ignores
    }

    /// On a file system that tells case apart, one that ignores it is
    /// emulated: the second table's name is a hard link to the first's file.
    #[test]
    fn a_name_that_opens_a_file_this_run_wrote_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutputDir::open(dir.path(), Reuse::Refuse).unwrap();
        use std::io::Write;
        out.create("Orders.csv")
            .unwrap()
            .write_all(b"first")
            .unwrap();
        out.publish("Orders.csv").unwrap();
        if !ignores_case(dir.path()) {
            fs::hard_link(dir.path().join("Orders.csv"), dir.path().join("ORDERS.csv")).unwrap();
        }
        out.create("ORDERS.csv")
            .unwrap()
            .write_all(b"second")
            .unwrap();
        let err = out.publish("ORDERS.csv").unwrap_err().to_string();
        assert!(err.contains("does not tell"), "{err}");
        assert_eq!(fs::read(dir.path().join("Orders.csv")).unwrap(), b"first");
    }

    /// On a file system that tells case apart, an older file whose name
    /// differs only in case is replaced as any other.
    #[test]
    fn an_older_file_differing_only_in_case_is_no_conflict() {
        let dir = tempfile::tempdir().unwrap();
        if ignores_case(dir.path()) {
            return; // the test above covers such a file system
        }
        fs::write(dir.path().join("ORDERS.csv"), b"old").unwrap();
        let out = OutputDir::open(dir.path(), Reuse::Overwrite).unwrap();
        use std::io::Write;
        out.create("Orders.csv")
            .unwrap()
            .write_all(b"first")
            .unwrap();
        out.publish("Orders.csv").unwrap();
        out.create("ORDERS.csv")
            .unwrap()
            .write_all(b"second")
            .unwrap();
        out.publish("ORDERS.csv").unwrap();
        assert_eq!(fs::read(dir.path().join("ORDERS.csv")).unwrap(), b"second");
    }

    #[test]
    fn only_names_differing_in_case_that_open_the_same_file_conflict() {
        let published = ["Orders.csv".to_string(), "ITEMS.csv".to_string()];
        let same = |_: &str| true;
        let other = |_: &str| false;
        assert_eq!(
            published_under_another_case(&published, "ORDERS.csv", same),
            Some(&published[0])
        );
        assert_eq!(
            published_under_another_case(&published, "ORDERS.csv", other),
            None
        );
        assert_eq!(
            published_under_another_case(&published, "STOCK.csv", same),
            None
        );
    }
}
