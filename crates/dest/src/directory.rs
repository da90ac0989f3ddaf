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
//! to overwrite them (`previous`). Then the old run stays whole until the
//! new one is: every file of the run, `manifest.json` last, waits in the
//! staging directory, and only a complete run replaces the old one, by a
//! *switch*. The staging directory, with a plan of what to move and what
//! to remove, is renamed to `.fbunload-switch` (the moment the new run
//! counts as complete), its files are renamed into place, the manifest
//! last, and the old run's files the new one does not replace are removed.
//! A switch cut short (`kill -9`, a power cut) is finished by the next
//! fbunload that opens the directory, a run or `fbunload check --finish`:
//! at every moment the directory holds one complete run, the old one or
//! the new. A run that fails or is stopped before the switch leaves
//! nothing. The switch's directory, done with, goes under a dead run's
//! staging name before it is removed, so no kill leaves one in the way.
//!
//! Durable: no file is synced as it completes; before the switch, every
//! file of the run, the manifest and the plan are synced at once (on Linux
//! one `syncfs` of their file system, elsewhere one `fsync` a file), so
//! the directory the switch renames holds complete files after a power
//! cut too. A table's file is not durable before that: a run that dies
//! leaves only the staging directory, which the next run removes.
//!
//! The output directory is untrusted: a `.fbunload-switch` and its plan
//! are read back from it, so before anything is moved or removed the plan
//! is checked whole ([`switch_state`]): opened as a plain file, never
//! through a link, and naming only what a run writes, one plain name each
//! (`previous::is_run_file_path`). One that fails is refused, untouched.
//!
//! Old files are removed through a handle of the output directory opened
//! once, each directory below it opened without following links
//! (`openat`/`unlinkat` with `O_NOFOLLOW`), so a link planted after the
//! old manifest was read cannot lead a removal outside the directory.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fbunload_exec::{ExecError, FileDigest};

use crate::digest::{digest_tree, RunningDigest};
use crate::manifest::{open_plain_file, Manifest, MANIFEST_NAME};
#[cfg(not(unix))]
use crate::previous;
use crate::previous::{is_part_name, is_run_entry_name, is_run_file_path, PreviousRun};

/// Names of staging directories begin so.
pub const STAGING_PREFIX: &str = ".fbunload-run-";

/// A complete run's files, while they replace the old run's (module docs).
pub const SWITCH_DIR: &str = ".fbunload-switch";

/// In [`SWITCH_DIR`]: what the switch moves and removes.
const SWITCH_PLAN: &str = ".switch.json";

/// What a switch does, written before it starts so that the next run can
/// finish it: names relative to the output directory.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct SwitchPlan {
    /// The new run's files and directories of parts, moved in this order;
    /// `manifest.json` follows them.
    moves: Vec<String>,
    /// The old run's files that no move replaces.
    removes: Vec<String>,
}

/// What to do with another run's files found in the output directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reuse {
    /// Refuse the run (`manifest.json` or table files are there).
    #[default]
    Refuse,
    /// Replace the old run once the new one is complete: what the old
    /// manifest lists goes; with no manifest, the names this run writes
    /// are replaced and other files stay.
    Overwrite,
}

/// A locked output directory with the run's staging directory in it.
#[derive(Debug)]
pub struct OutputDir {
    path: PathBuf,
    staging: tempfile::TempDir,
    /// The old run's files (what its manifest lists), replaced or removed
    /// by the switch.
    old_files: Vec<String>,
    /// Files and directories of parts complete in the staging directory,
    /// in the order they were published: what the switch moves.
    published: Mutex<Vec<String>>,
    /// Whether the file system ignores case, so that two tables' names
    /// that differ only in case would be one file.
    ignores_case: bool,
    /// Set once the run is complete and switched in.
    switched: std::sync::atomic::AtomicBool,
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
        let resolved = resolve(path).map_err(fail)?;
        let path = resolved.as_path();
        let lock = lock(path).map_err(|e| match e.kind() {
            io::ErrorKind::WouldBlock => fail(
                "another fbunload run is writing into it; wait for that run to end, or choose \
                 another -o"
                    .into(),
            ),
            _ => fail(format!("cannot lock it: {e}")),
        })?;
        finish_switch(path).map_err(|e| match e.kind() {
            // Refused before anything was touched, or something in the
            // way: the message says what.
            io::ErrorKind::InvalidData | io::ErrorKind::AlreadyExists => fail(e.to_string()),
            _ => fail(format!(
                "finishing the switch to the complete run an interrupted fbunload left in \
                 {SWITCH_DIR}: {e}"
            )),
        })?;
        let previous = PreviousRun::find(path).map_err(|e| fail(format!("cannot list it: {e}")))?;
        if !previous.is_empty() && reuse == Reuse::Refuse {
            return Err(fail(previous.refusal()));
        }
        let old_files = previous.files_to_remove(path).map_err(fail)?;
        remove_dead_runs(path);
        let staging = tempfile::Builder::new()
            .prefix(STAGING_PREFIX)
            .tempdir_in(path)
            .map_err(|e| fail(format!("cannot write in it: {e}")))?;
        let ignores_case = ignores_case(staging.path());
        Ok(Arc::new(OutputDir {
            path: path.to_path_buf(),
            staging,
            old_files,
            published: Mutex::new(Vec::new()),
            ignores_case,
            switched: Default::default(),
            created,
            lock: Some(lock),
        }))
    }

    /// Writes `manifest` as `manifest.json` and switches the complete run
    /// in (module docs); returns the manifest's final path.
    pub fn publish_manifest(&self, manifest: &Manifest) -> Result<PathBuf, ExecError> {
        // Written as it is serialized: a manifest of 5,000 tables is 16.8
        // MB of JSON, which a run held whole beside the manifest itself.
        let write_and_switch = || -> io::Result<()> {
            self.switch_writing(|out| {
                serde_json::to_writer_pretty(&mut *out, manifest)?;
                out.write_all(b"\n")
            })
        };
        write_and_switch().map_err(|e| ExecError::OutputDir {
            path: self.path.clone(),
            reason: format!("writing {MANIFEST_NAME} and moving the run's files in: {e}"),
        })?;
        Ok(self.path.join(MANIFEST_NAME))
    }

    /// [`OutputDir::switch_writing`] of a manifest of these bytes.
    #[cfg(test)]
    fn switch(&self, manifest: &[u8]) -> io::Result<()> {
        self.switch_writing(|out| out.write_all(manifest))
    }

    /// Puts the manifest `write_manifest` writes beside the run's files in
    /// the staging directory, with the plan of the switch, renames the
    /// staging directory to [`SWITCH_DIR`] and finishes the switch.
    fn switch_writing(
        &self,
        write_manifest: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        // Each file is closed before the directory is renamed: Windows
        // renames no directory with a file open in it, and removes no
        // open file at once.
        {
            let mut out = io::BufWriter::new(self.create(MANIFEST_NAME)?);
            write_manifest(&mut out)?;
            out.into_inner().map_err(io::IntoInnerError::into_error)?;
        }
        let moves = self.published.lock().unwrap().clone();
        let mut staged = moves.clone();
        staged.extend([MANIFEST_NAME.to_string(), SWITCH_PLAN.to_string()]);
        let replaced = |old: &str| {
            let top = old.split('/').next().unwrap_or(old);
            moves.iter().any(|m| m == top) || old == MANIFEST_NAME
        };
        let plan = SwitchPlan {
            removes: self
                .old_files
                .iter()
                .filter(|old| !replaced(old))
                .cloned()
                .collect(),
            moves,
        };
        debug_assert_eq!(
            plan.check(),
            Ok(()),
            "a run's plan passes the check of a read one"
        );
        self.write_new(SWITCH_PLAN, &serde_json::to_vec(&plan)?)?;
        sync_staged(self.staging(), &staged)?;
        // The moment the new run is complete: from here on, whoever opens
        // the directory finishes the switch rather than losing the run.
        fs::rename(self.staging(), self.path.join(SWITCH_DIR))?;
        self.switched
            .store(true, std::sync::atomic::Ordering::SeqCst);
        sync_dir(&self.path);
        finish_switch(&self.path)?;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where unfinished files and spilled units are.
    pub(crate) fn staging(&self) -> &Path {
        self.staging.path()
    }

    /// A new file `name` in the staging directory.
    pub fn create(&self, name: &str) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(self.staging().join(name))
    }

    /// A new file `name` in the staging directory holding `bytes`, closed;
    /// synced with the rest before the switch.
    fn write_new(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.create(name)?.write_all(bytes)
    }

    /// A new directory `name` in the staging directory, for a table
    /// written as parts.
    pub(crate) fn create_dir(&self, name: &str) -> io::Result<PathBuf> {
        let dir = self.staging().join(name);
        fs::create_dir(&dir)?;
        Ok(dir)
    }

    /// Hashes the complete file (or directory of parts) `name`; it stays
    /// in the staging directory until the whole run is complete, synced
    /// and switched in (module docs). Refuses now, before the
    /// directory is touched, a name that could not replace what is there.
    /// Returns its final path and its files.
    pub fn publish(&self, name: &str) -> io::Result<(PathBuf, Vec<FileDigest>)> {
        self.publish_hashed(name, None)
    }

    /// [`OutputDir::publish`] of a file whose digest was taken as it was
    /// written, if `hashed`; it is read back otherwise.
    pub(crate) fn publish_hashed(
        &self,
        name: &str,
        hashed: Option<RunningDigest>,
    ) -> io::Result<(PathBuf, Vec<FileDigest>)> {
        if !is_run_entry_name(name) {
            // The switch's plan is read back under this rule: a name
            // outside it would make the run's own plan refused.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a name fbunload gives a run's file"),
            ));
        }
        let from = self.staging().join(name);
        let to = self.path.join(name);
        let files = match hashed {
            Some(digest) => {
                let files = vec![digest.finish(name)];
                debug_assert_eq!(files, digest_tree(&from, name)?, "digest taken as written");
                files
            }
            None => digest_tree(&from, name)?,
        };
        let mut published = self.published.lock().unwrap();
        // Where case tells names apart, no earlier name can be this file:
        // the search, a pass over every name published, is skipped (with
        // 5,000 tables it was 12 million names folded to lower case).
        let earlier = match self.ignores_case {
            true => published_under_another_case(&published, name, |_| true),
            false => None,
        };
        if let Some(earlier) = earlier {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "this file system does not tell {name:?} from {earlier:?}, which this run \
                     wrote for another table (names that differ only in case); unload one of \
                     the two tables into another directory (--tables, --exclude)"
                ),
            ));
        }
        if fs::symlink_metadata(&to).is_ok_and(|old| old.is_dir()) && !holds_only_parts(&to)? {
            // A directory of parts of an earlier `--split` run is replaced
            // whole; one holding anything else is not ours to remove.
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a directory of that name is in the way and holds files fbunload did not \
                 write; move it, or choose another -o",
            ));
        }
        published.push(name.to_string());
        Ok((to, files))
    }
}

/// Names in [`SWITCH_DIR`] of what a switch moved aside: `.replaced.T.parquet`.
const REPLACED_PREFIX: &str = ".replaced.";

impl SwitchPlan {
    /// Refuses a plan naming anything a run does not write: each move is
    /// one plain name of a table's file (or directory of parts) or
    /// `schema.sql`, each removal such a name or a part in such a
    /// directory. The names come from a file in the output directory that
    /// anyone who can write there may have planted or edited.
    fn check(&self) -> Result<(), String> {
        if let Some(name) = self.moves.iter().find(|name| !is_run_entry_name(name)) {
            return Err(format!("its plan moves {name:?}, which no run writes"));
        }
        if let Some(name) = self.removes.iter().find(|name| !is_run_file_path(name)) {
            return Err(format!("its plan removes {name:?}, which no run writes"));
        }
        Ok(())
    }
}

/// What [`SWITCH_DIR`] in an output directory is; read, never changed.
#[derive(Debug)]
pub(crate) enum SwitchState {
    /// There is none.
    None,
    /// A complete run whose switch was cut short, with its checked plan.
    Pending(SwitchPlan),
    /// No plan and nothing but old files moved aside: what an earlier
    /// fbunload left when stopped while it removed a finished switch's
    /// directory (now renamed first, see [`retire_switch_dir`]). The run
    /// in place is complete.
    Remains,
    /// Not what a run leaves, or a plan no run wrote (why); never acted on.
    Foreign(String),
}

/// Looks at `dir`'s [`SWITCH_DIR`]: never through a link, the plan
/// opened as a plain file (not a link, not a FIFO) and checked
/// ([`SwitchPlan::check`]); on Unix the directory and its plan must also
/// belong to the user running fbunload, as a run leaves them.
pub(crate) fn switch_state(dir: &Path) -> io::Result<SwitchState> {
    let switch = dir.join(SWITCH_DIR);
    let foreign = |why: String| Ok(SwitchState::Foreign(why));
    let meta = match fs::symlink_metadata(&switch) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(SwitchState::None),
        Err(e) => return Err(e),
        Ok(meta) => meta,
    };
    if !meta.is_dir() {
        return foreign("it is a file or a link, not a directory".into());
    }
    let dir_meta = fs::metadata(dir)?;
    if let Some(why) = foreign_owner(&meta, &dir_meta) {
        return foreign(why);
    }
    let mut file = match open_plain_file(&switch.join(SWITCH_PLAN)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            for entry in fs::read_dir(&switch)? {
                if !entry?
                    .file_name()
                    .to_string_lossy()
                    .starts_with(REPLACED_PREFIX)
                {
                    return foreign(format!("it holds no plan ({SWITCH_PLAN}) of a switch"));
                }
            }
            return Ok(SwitchState::Remains);
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            return foreign(format!("its {SWITCH_PLAN} is {e}"))
        }
        Err(e) => return Err(e),
        Ok(file) => file,
    };
    if let Some(why) = foreign_owner(&file.metadata()?, &dir_meta) {
        return foreign(format!("its {SWITCH_PLAN} is {why}"));
    }
    let mut text = Vec::new();
    io::Read::read_to_end(&mut file, &mut text)?;
    let plan: SwitchPlan = match serde_json::from_slice(&text) {
        Ok(plan) => plan,
        Err(e) => return foreign(format!("its {SWITCH_PLAN} is not a switch's plan ({e})")),
    };
    match plan.check() {
        Ok(()) => Ok(SwitchState::Pending(plan)),
        Err(why) => foreign(why),
    }
}

/// Why a directory or file read back is not one this user's run left:
/// on Unix, a run leaves them owned by the user it ran as, which is the
/// output directory's owner (`dir_meta`) where a mount maps every owner to
/// one (a CIFS or FAT mount's `uid=`). Someone else can make neither.
fn foreign_owner(meta: &fs::Metadata, dir_meta: &fs::Metadata) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me && meta.uid() != dir_meta.uid() {
            return Some(format!(
                "owned by another user (uid {}), not by the user running fbunload (uid {me}) \
                 or the directory's owner",
                meta.uid()
            ));
        }
    }
    let _ = (meta, dir_meta);
    None
}

/// Finishes a switch (module docs) that `dir`'s [`SWITCH_DIR`] holds, if
/// any, once its plan is checked ([`switch_state`]): moves each planned
/// entry still there into place, replacing what has its name, then
/// `manifest.json`, removes the old files the plan lists, and the switch
/// directory. Doing it twice is doing it once. A [`SWITCH_DIR`] that is
/// not a run's is an error, before anything is touched. Returns whether
/// there was a switch to finish.
fn finish_switch(dir: &Path) -> io::Result<bool> {
    let plan = match switch_state(dir)? {
        SwitchState::None => return Ok(false),
        SwitchState::Remains => {
            retire_switch_dir(dir)?;
            return Ok(false);
        }
        SwitchState::Foreign(why) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                foreign_switch_message(&why),
            ))
        }
        SwitchState::Pending(plan) => plan,
    };
    let switch = dir.join(SWITCH_DIR);
    for name in plan.moves.iter().map(String::as_str).chain([MANIFEST_NAME]) {
        let from = switch.join(name);
        if fs::symlink_metadata(&from).is_err() {
            continue; // moved before the interruption
        }
        let to = dir.join(name);
        match fs::symlink_metadata(&to) {
            // A directory of parts (or a link) in the way goes aside into
            // the switch directory, which goes whole at the end; `rename`
            // replaces a file or a link itself, never writing through it.
            // Windows renames nothing over a directory, so a directory
            // always goes aside first.
            Ok(old) if old.is_dir() || from.is_dir() => {
                if old.is_dir() && !holds_only_parts(&to)? {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!(
                            "finishing the switch to the complete run in {SWITCH_DIR}: the \
                             directory {name:?} is in the way and holds files fbunload did not \
                             write; move it, and run again"
                        ),
                    ));
                }
                let aside = switch.join(format!("{REPLACED_PREFIX}{name}"));
                fs::rename(&to, &aside)?;
                fs::rename(&from, &to)?;
            }
            _ => fs::rename(&from, &to)?,
        }
        // A fault test kills a run here.
        fbunload_exec::pause_for_tests("FBUNLOAD_TEST_PAUSE_IN_SWITCH_MS");
    }
    sync_dir(dir);
    remove_old_files(dir, &plan.removes)?;
    retire_switch_dir(dir)?;
    Ok(true)
}

/// The one line that refuses a [`SWITCH_DIR`] that is not a run's.
fn foreign_switch_message(why: &str) -> String {
    format!(
        "{SWITCH_DIR} in it is not what an fbunload run leaves ({why}); nothing in it was \
         followed, moved or removed: remove {SWITCH_DIR} if no run of yours was stopped there, \
         or choose another -o"
    )
}

/// The last step of a switch: [`SWITCH_DIR`], now holding only the plan
/// and what was moved aside, is renamed to a dead run's staging name in
/// one step, then removed. Cut short there, what is left is a staging
/// directory that the next run removes, never a [`SWITCH_DIR`] that
/// would be in the next switch's way.
fn retire_switch_dir(dir: &Path) -> io::Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let retired = dir.join(format!(
        "{STAGING_PREFIX}switched-{}-{nanos:09}",
        std::process::id()
    ));
    fs::rename(dir.join(SWITCH_DIR), &retired)?;
    sync_dir(dir);
    // A fault test kills a run here, before the renamed directory is removed.
    fbunload_exec::pause_for_tests("FBUNLOAD_TEST_PAUSE_AFTER_SWITCH_MS");
    fs::remove_dir_all(&retired)
}

/// Finishes a switch an interrupted run left in `dir`, under the
/// directory's lock (none while a run writes there), once its plan is
/// checked; returns whether there was one. For `fbunload check --finish`:
/// a plain check changes nothing ([`crate::check_directory`]).
pub fn finish_interrupted_switch(dir: &Path) -> Result<bool, ExecError> {
    let fail = |reason: String| ExecError::OutputDir {
        path: dir.to_path_buf(),
        reason,
    };
    let resolved = resolve(dir).map_err(fail)?;
    let dir = resolved.as_path();
    if fs::symlink_metadata(dir.join(SWITCH_DIR)).is_err() {
        return Ok(false);
    }
    let _lock = lock(dir).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock => {
            fail("an fbunload run is writing into it now; check it when that run ends".into())
        }
        _ => fail(format!("cannot lock it: {e}")),
    })?;
    finish_switch(dir).map_err(|e| fail(format!("finishing an interrupted switch: {e}")))
}

/// Whether a run holds `dir`'s lock now; never creates or changes
/// anything (on Windows a missing lock file means no run ever held it).
pub(crate) fn run_under_way(dir: &Path) -> bool {
    #[cfg(unix)]
    let handle = File::open(dir);
    #[cfg(not(unix))]
    let handle = OpenOptions::new()
        .write(true)
        .open(dir.join(".fbunload.lock"));
    handle.is_ok_and(
        |handle| matches!(try_lock(handle), Err(e) if e.kind() == io::ErrorKind::WouldBlock),
    )
}

/// The output directory named by `path`, resolved once: where its last
/// component is a link, the directory the link names (every later step
/// works on that path, and never reads the link again); otherwise `path`
/// as given, whose earlier components the system resolves as usual.
pub(crate) fn resolve(path: &Path) -> Result<PathBuf, String> {
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(path.to_path_buf());
    }
    let target = fs::canonicalize(path)
        .map_err(|e| format!("it is a link, and what it names cannot be reached: {e}"))?;
    if !fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
        return Err(format!(
            "it is a link to {}, which is not a directory",
            target.display()
        ));
    }
    Ok(target)
}

/// Removes the old run's `files` (names relative to `dir`) that the new
/// run did not replace, then the directories of parts they leave empty.
/// Each directory is opened relative to the one above it, never through
/// a link; a listed name that is now a directory, or gone, is left.
#[cfg(unix)]
fn remove_old_files(dir: &Path, files: &[String]) -> io::Result<()> {
    use rustix::fs::{openat, unlinkat, AtFlags, Mode, OFlags, CWD};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let root = openat(CWD, dir, flags, Mode::empty())?;
    let mut emptied = Vec::new();
    for file in files {
        let mut parts: Vec<&str> = file.split('/').collect();
        let Some(leaf) = parts.pop() else { continue };
        let mut at = root.try_clone()?;
        let mut reached = true;
        for part in &parts {
            match openat(&at, *part, flags, Mode::empty()) {
                Ok(next) => at = next,
                // A link (ELOOP), no longer a directory, or gone.
                Err(_) => {
                    reached = false;
                    break;
                }
            }
        }
        if !reached {
            continue;
        }
        match unlinkat(&at, leaf, AtFlags::empty()) {
            Ok(()) => {
                if !parts.is_empty() {
                    emptied.push(parts.join("/"));
                }
            }
            Err(e) if e == rustix::io::Errno::NOENT || e == rustix::io::Errno::ISDIR => {}
            Err(e) => return Err(io::Error::from(e)),
        }
    }
    // Deepest first; a directory still holding something is kept.
    emptied.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    emptied.dedup();
    for directory in emptied {
        let _ = unlinkat(&root, directory.as_str(), AtFlags::REMOVEDIR);
    }
    Ok(())
}

/// Windows has no `unlinkat`: paths, each checked not to pass a link.
#[cfg(not(unix))]
fn remove_old_files(dir: &Path, files: &[String]) -> io::Result<()> {
    previous::remove(dir, files)
}

impl Drop for OutputDir {
    /// A directory this run made goes again when the run published nothing
    /// in it (a wrong password, a missing table), so that a failed run
    /// leaves nothing behind. `remove_dir` removes only an empty directory,
    /// so nothing someone else put there meanwhile is lost.
    fn drop(&mut self) {
        let switched = *self.switched.get_mut();
        if self.created && !switched {
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

/// Makes the staging directory's files `names` (and the directories of
/// parts among them) durable, with the directory's entries, before the
/// switch: on Linux by one `syncfs` of the file system they are on (one
/// call, 2 ms, where syncing each of 5,000 small tables' files took 1.8 s
/// in `fsync`; module docs, "Durable"), elsewhere file by file.
fn sync_staged(staging: &Path, names: &[String]) -> io::Result<()> {
    #[cfg(test)]
    tests::count_sync();
    #[cfg(target_os = "linux")]
    {
        let _ = names;
        rustix::fs::syncfs(File::open(staging)?)?;
    }
    #[cfg(not(target_os = "linux"))]
    {
        for name in names {
            sync_tree(&staging.join(name))?;
        }
        sync_dir(staging);
    }
    Ok(())
}

/// Syncs a file, or every file of a directory.
#[cfg(not(target_os = "linux"))]
fn sync_tree(path: &Path) -> io::Result<()> {
    #[cfg(test)]
    tests::count_sync();
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

/// Whether the file system under `dir` (the staging directory, so on
/// the output directory's) ignores case.
fn ignores_case(dir: &Path) -> bool {
    let probe = dir.join(".case-probe");
    let ignores = fs::write(&probe, b"").is_ok() && dir.join(".CASE-PROBE").exists();
    let _ = fs::remove_file(probe);
    ignores
}

/// Whether `dir` holds only Parquet part files (and nothing else).
fn holds_only_parts(dir: &Path) -> io::Result<bool> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let is_part = is_part_name(&entry.file_name().to_string_lossy());
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

    thread_local! {
        /// Syncs this test's thread asked for (`sync_staged`, `sync_tree`).
        static SYNCS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    pub(super) fn count_sync() {
        SYNCS.with(|syncs| syncs.set(syncs.get() + 1));
    }

    /// The manifest is written as it is serialized, not made whole first:
    /// the same bytes as `serde_json`'s pretty text and a newline.
    #[test]
    fn a_streamed_manifest_is_the_pretty_json_of_the_manifest() {
        let manifest: Manifest = serde_json::from_str(
            r#"{"manifest_version": 1, "fbunload_version": "0", "database": "d.fdb",
                "snapshot_number": 7, "consistency": "one snapshot", "started": "s",
                "finished": "f", "options": {"format": "csv", "j": 2},
                "tables": [{"name": "T", "kind": "table", "rows": 1, "bytes": 2,
                            "verified": false, "columns": [{"name": "A",
                            "firebird_type": "INTEGER", "arrow_type": "Int32"}],
                            "files": [{"name": "T.csv", "bytes": 2, "sha256": "00"}]}]}"#,
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let out = OutputDir::open(dir.path(), Reuse::Refuse).unwrap();
        write(&out, "T.csv", b"1\n");
        let path = out.publish_manifest(&manifest).unwrap();
        let mut expected = serde_json::to_vec_pretty(&manifest).unwrap();
        expected.push(b'\n');
        assert_eq!(fs::read(path).unwrap(), expected);
        assert_eq!(fs::read(dir.path().join("T.csv")).unwrap(), b"1\n");
    }

    /// Thousands of small tables' files each synced as they were published
    /// cost a `fsync` (about 0.2 ms) a table; they are synced together
    /// before the switch instead, on Linux in one call, and are all there
    /// after it.
    #[test]
    fn a_runs_files_are_synced_together_before_the_switch() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutputDir::open(dir.path(), Reuse::Refuse).unwrap();
        SYNCS.with(|syncs| syncs.set(0));
        for table in 0..50 {
            write(&out, &format!("T{table}.csv"), b"1\n");
        }
        assert_eq!(SYNCS.with(|syncs| syncs.get()), 0, "none while publishing");
        out.switch(b"{}").unwrap();
        let expected = if cfg!(target_os = "linux") {
            1
        } else {
            50 + 2 + 1
        };
        assert_eq!(SYNCS.with(|syncs| syncs.get()), expected);
        for table in 0..50 {
            assert_eq!(
                fs::read(dir.path().join(format!("T{table}.csv"))).unwrap(),
                b"1\n"
            );
        }
    }

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
        out.switch(b"{}").unwrap();
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
        out.switch(b"{}").unwrap();
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
    /// emulated: the directory is told it ignores case.
    #[test]
    fn a_name_that_would_open_a_file_this_run_wrote_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = OutputDir::open(dir.path(), Reuse::Refuse).unwrap();
        if !ignores_case(dir.path()) {
            Arc::get_mut(&mut out).unwrap().ignores_case = true;
        }
        use std::io::Write;
        out.create("Orders.csv")
            .unwrap()
            .write_all(b"first")
            .unwrap();
        out.publish("Orders.csv").unwrap();
        if let Ok(mut second) = out.create("ORDERS.csv") {
            second.write_all(b"second").unwrap();
        }
        let err = out.publish("ORDERS.csv").unwrap_err().to_string();
        assert!(err.contains("does not tell"), "{err}");
        out.switch(b"{}").unwrap();
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
        out.switch(b"{}").unwrap();
        assert_eq!(fs::read(dir.path().join("ORDERS.csv")).unwrap(), b"second");
    }

    /// An old run: `A.csv`, parts in `P.parquet/`, and a manifest listing
    /// them.
    fn old_run(d: &Path) {
        fs::write(d.join("A.csv"), b"old A").unwrap();
        fs::create_dir(d.join("P.parquet")).unwrap();
        fs::write(d.join("P.parquet/part-00000.parquet"), b"old part").unwrap();
        fs::write(
            d.join(MANIFEST_NAME),
            r#"{"tables": [{"files": [{"name": "A.csv", "bytes": 5, "sha256": ""},
                {"name": "P.parquet/part-00000.parquet", "bytes": 8, "sha256": ""}]}]}"#,
        )
        .unwrap();
    }

    fn write(out: &OutputDir, name: &str, text: &[u8]) {
        use std::io::Write;
        out.create(name).unwrap().write_all(text).unwrap();
        out.publish(name).unwrap();
    }

    /// Until the new run is complete, the old one is whole; a run that
    /// fails (dropped unswitched) leaves it so, and nothing of its own.
    #[test]
    fn the_old_run_stays_whole_until_the_new_one_is_switched_in() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        old_run(d);
        let out = OutputDir::open(d, Reuse::Overwrite).unwrap();
        write(&out, "A.csv", b"new A");
        write(&out, "B.csv", b"new B");
        assert_eq!(fs::read(d.join("A.csv")).unwrap(), b"old A");
        assert!(!d.join("B.csv").exists());
        drop(out);
        assert_eq!(fs::read(d.join("A.csv")).unwrap(), b"old A");
        assert!(d.join("P.parquet/part-00000.parquet").exists());
        assert!(!d.join("B.csv").exists());

        let out = OutputDir::open(d, Reuse::Overwrite).unwrap();
        write(&out, "A.csv", b"new A");
        write(&out, "B.csv", b"new B");
        out.switch(b"{\"new\": true}").unwrap();
        assert_eq!(fs::read(d.join("A.csv")).unwrap(), b"new A");
        assert_eq!(fs::read(d.join("B.csv")).unwrap(), b"new B");
        assert!(!d.join("P.parquet").exists(), "the old run's parts go");
        assert_eq!(fs::read(d.join(MANIFEST_NAME)).unwrap(), b"{\"new\": true}");
        assert!(!d.join(SWITCH_DIR).exists());
    }

    /// A switch cut short after its first move is finished by whoever
    /// opens the directory next: the new run, whole.
    #[test]
    fn an_interrupted_switch_is_finished_by_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        old_run(d);
        let switch = d.join(SWITCH_DIR);
        fs::create_dir(&switch).unwrap();
        fs::write(switch.join("B.csv"), b"new B").unwrap();
        fs::write(switch.join(MANIFEST_NAME), b"{}").unwrap();
        let plan = r#"{"moves": ["A.csv", "B.csv"], "removes": ["P.parquet/part-00000.parquet"]}"#;
        fs::write(switch.join(SWITCH_PLAN), plan).unwrap();
        fs::write(d.join("A.csv"), b"new A").unwrap(); // moved before the cut
        assert!(finish_interrupted_switch(d).unwrap());
        assert_eq!(fs::read(d.join("A.csv")).unwrap(), b"new A");
        assert_eq!(fs::read(d.join("B.csv")).unwrap(), b"new B");
        assert_eq!(fs::read(d.join(MANIFEST_NAME)).unwrap(), b"{}");
        assert!(!d.join("P.parquet").exists());
        assert!(!switch.exists());
        assert!(!finish_interrupted_switch(d).unwrap(), "done once");
    }

    /// The old manifest's names are checked when the directory is opened,
    /// and removed at the switch; a directory of parts swapped for a link
    /// in between must not lead the removal outside (it did: by path).
    #[cfg(unix)]
    #[test]
    fn a_link_swapped_in_after_opening_leads_no_removal_outside() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        old_run(d);
        let victim = tempfile::tempdir().unwrap();
        fs::write(victim.path().join("part-00000.parquet"), b"precious").unwrap();
        let out = OutputDir::open(d, Reuse::Overwrite).unwrap();
        fs::remove_dir_all(d.join("P.parquet")).unwrap();
        std::os::unix::fs::symlink(victim.path(), d.join("P.parquet")).unwrap();
        write(&out, "A.csv", b"new A");
        out.switch(b"{}").unwrap();
        assert_eq!(
            fs::read(victim.path().join("part-00000.parquet")).unwrap(),
            b"precious"
        );
    }

    /// A planted switch: `.fbunload-switch` with `plan` as its plan and
    /// a manifest, in `d`.
    fn planted_switch(d: &Path, plan: &str) -> PathBuf {
        let switch = d.join(SWITCH_DIR);
        fs::create_dir_all(&switch).unwrap();
        fs::write(switch.join(MANIFEST_NAME), b"{\"tables\": []}").unwrap();
        fs::write(switch.join(SWITCH_PLAN), plan).unwrap();
        switch
    }

    /// A plan's names were trusted: `../victim.txt` was removed, a
    /// directory outside moved in and emptied, an absolute path moved in,
    /// by the next run or `check` (issue 37). Every such plan is refused
    /// whole, before anything is touched.
    #[test]
    fn a_plan_naming_anything_a_run_does_not_write_is_refused_untouched() {
        let outer = tempfile::tempdir().unwrap();
        let victim = outer.path().join("victim.txt");
        let victim_dir = outer.path().join("victimdir");
        fs::create_dir(&victim_dir).unwrap();
        fs::write(victim_dir.join("precious"), b"x").unwrap();
        let d = outer.path().join("out");
        fs::create_dir(&d).unwrap();
        let absolute = serde_json::to_string(victim_dir.to_str().unwrap()).unwrap();
        for plan in [
            r#"{"moves": [], "removes": ["../victim.txt"]}"#.to_string(),
            r#"{"moves": ["../victimdir"], "removes": []}"#.to_string(),
            format!(r#"{{"moves": [{absolute}], "removes": []}}"#),
            r#"{"moves": [], "removes": ["T.parquet/../../victim.txt"]}"#.to_string(),
            r#"{"moves": ["notes.txt"], "removes": []}"#.to_string(),
            r#"{"moves": [], "removes": [".fbunload.lock"]}"#.to_string(),
            "not json".to_string(),
        ] {
            fs::write(&victim, b"precious").unwrap();
            let switch = planted_switch(&d, &plan);
            fs::create_dir_all(switch.join(".replaced..")).unwrap();
            fs::create_dir_all(d.join("victimdir")).unwrap();
            fs::write(d.join("notes.txt"), b"mine").unwrap();
            let err = OutputDir::open(&d, Reuse::Overwrite)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("not what an fbunload run leaves"),
                "{plan}: {err}"
            );
            let err = finish_interrupted_switch(&d).unwrap_err().to_string();
            assert!(
                err.contains("not what an fbunload run leaves"),
                "{plan}: {err}"
            );
            assert_eq!(fs::read(&victim).unwrap(), b"precious", "{plan}");
            assert!(victim_dir.join("precious").exists(), "{plan}");
            assert!(switch.join(MANIFEST_NAME).exists(), "{plan}: touched");
            assert!(!d.join(MANIFEST_NAME).exists(), "{plan}: moved");
            assert_eq!(fs::read(d.join("notes.txt")).unwrap(), b"mine", "{plan}");
            fs::remove_dir_all(&switch).unwrap();
        }
    }

    /// A `.fbunload-switch` that is a file or a link made every later run
    /// read the whole database, then fail at its own switch; it is
    /// refused when the directory is opened, and never followed.
    #[cfg(unix)]
    #[test]
    fn a_switch_directory_no_run_left_is_refused_before_the_run() {
        let outer = tempfile::tempdir().unwrap();
        let elsewhere = outer.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(
            elsewhere.join(SWITCH_PLAN),
            r#"{"moves": [], "removes": []}"#,
        )
        .unwrap();
        let d = outer.path().join("out");
        fs::create_dir(&d).unwrap();
        std::os::unix::fs::symlink(&elsewhere, d.join(SWITCH_DIR)).unwrap();
        let err = OutputDir::open(&d, Reuse::Refuse).unwrap_err().to_string();
        assert!(err.contains("a file or a link"), "{err}");
        fs::remove_file(d.join(SWITCH_DIR)).unwrap();
        fs::write(d.join(SWITCH_DIR), b"").unwrap();
        let err = OutputDir::open(&d, Reuse::Refuse).unwrap_err().to_string();
        assert!(err.contains("a file or a link"), "{err}");
        fs::remove_file(d.join(SWITCH_DIR)).unwrap();
        // A plan that is a link is not read through.
        let switch = d.join(SWITCH_DIR);
        fs::create_dir(&switch).unwrap();
        std::os::unix::fs::symlink(elsewhere.join(SWITCH_PLAN), switch.join(SWITCH_PLAN)).unwrap();
        let err = OutputDir::open(&d, Reuse::Refuse).unwrap_err().to_string();
        assert!(err.contains("a link, not followed"), "{err}");
        // Nor one holding anything but a plan and what a switch set aside.
        fs::remove_file(switch.join(SWITCH_PLAN)).unwrap();
        fs::write(switch.join("T.csv"), b"x").unwrap();
        let err = OutputDir::open(&d, Reuse::Refuse).unwrap_err().to_string();
        assert!(err.contains("holds no plan"), "{err}");
        assert!(switch.join("T.csv").exists());
    }

    /// A switch is only followed where the user running fbunload made it,
    /// as a run does: another user's plan, valid or not, is refused.
    /// Needs root to give the planted one away.
    #[cfg(unix)]
    #[test]
    fn another_users_switch_is_not_followed() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        if fs::metadata(d).unwrap().uid() != 0 {
            return; // only root can make a directory someone else's
        }
        fs::write(d.join("A.csv"), b"old").unwrap();
        let switch = planted_switch(d, r#"{"moves": [], "removes": ["A.csv"]}"#);
        std::os::unix::fs::chown(&switch, Some(65534), None).unwrap();
        let err = OutputDir::open(d, Reuse::Overwrite)
            .unwrap_err()
            .to_string();
        assert!(err.contains("owned by another user (uid 65534)"), "{err}");
        std::os::unix::fs::chown(&switch, Some(0), None).unwrap();
        std::os::unix::fs::chown(switch.join(SWITCH_PLAN), Some(65534), None).unwrap();
        let err = OutputDir::open(d, Reuse::Overwrite)
            .unwrap_err()
            .to_string();
        assert!(err.contains("owned by another user"), "{err}");
        assert!(d.join("A.csv").exists());
        std::os::unix::fs::chown(switch.join(SWITCH_PLAN), Some(0), None).unwrap();
        drop(OutputDir::open(d, Reuse::Overwrite).unwrap());
        assert!(!d.join("A.csv").exists(), "its own plan is followed");
    }

    /// Killed while the finished switch's directory was removed (its plan
    /// gone first, old parts still in it), a run left a `.fbunload-switch`
    /// without a plan, and every later run failed at its own switch
    /// ("Directory not empty"). What an earlier version left so is removed;
    /// a switch now goes under a dead run's name before it is removed.
    #[test]
    fn the_remains_of_a_finished_switch_block_no_later_run() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let aside = d.join(SWITCH_DIR).join(".replaced.P.parquet");
        fs::create_dir_all(&aside).unwrap();
        fs::write(aside.join("part-00000.parquet"), b"old").unwrap();
        fs::write(d.join(MANIFEST_NAME), r#"{"tables": []}"#).unwrap();
        let out = OutputDir::open(d, Reuse::Overwrite).unwrap();
        assert!(!d.join(SWITCH_DIR).exists());
        write(&out, "P.parquet", b"new");
        out.switch(br#"{"tables": []}"#).unwrap();
        assert_eq!(fs::read(d.join("P.parquet")).unwrap(), b"new");
        let left: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2 + usize::from(cfg!(not(unix))), "{left:?}");
        drop(out);

        // Cut short after the rename: a dead run's staging directory.
        let tail = d.join(format!("{STAGING_PREFIX}switched-1-000000001"));
        fs::create_dir_all(tail.join(".replaced.P.parquet")).unwrap();
        drop(OutputDir::open(d, Reuse::Overwrite).unwrap());
        assert!(!tail.exists());
    }

    /// `-o` naming a link to a directory published the run into the
    /// directory, then failed (`openat` with `O_NOFOLLOW` on the link),
    /// leaving `.fbunload-switch` for every later run to fail on. The link
    /// is resolved once, when the directory is opened.
    #[cfg(unix)]
    #[test]
    fn a_link_to_the_output_directory_is_resolved_once() {
        let outer = tempfile::tempdir().unwrap();
        let real = outer.path().join("real");
        fs::create_dir(&real).unwrap();
        old_run(&real);
        let link = outer.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let out = OutputDir::open(&link, Reuse::Overwrite).unwrap();
        write(&out, "A.csv", b"new A");
        out.switch(b"{}").unwrap();
        assert_eq!(fs::read(real.join("A.csv")).unwrap(), b"new A");
        assert!(!real.join("P.parquet").exists());
        assert!(!real.join(SWITCH_DIR).exists());
        drop(out);
        let dangling = outer.path().join("dangling");
        std::os::unix::fs::symlink(outer.path().join("gone"), &dangling).unwrap();
        let err = OutputDir::open(&dangling, Reuse::Refuse)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot create it") || err.contains("a link"),
            "{err}"
        );
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
