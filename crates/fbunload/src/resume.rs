//! Resumable runs (`--resumable`, `--resume`): a run into a directory that
//! dies (kill -9, power loss, a server restart) is continued from the
//! units it finished, and still gives one snapshot.
//!
//! While it runs, a resumable run keeps in `DIR/.fbunload-resume` (mode
//! 0700): `start.json`, its snapshot's marks and options, written and
//! synced before any unit is read; one Arrow IPC file per finished unit,
//! synced, then named in `journal.jsonl` (one line per unit: table, DB_KEY
//! range, rows, file, size, SHA-256), synced. Its ordinary staging
//! directory goes with it as with any run; this area stays until the run
//! is published.
//!
//! `--resume` takes a new snapshot and plans again with the first run's
//! unit size, so a table's units are the same DB_KEY ranges. Each unit the
//! journal names is counted at the new snapshot, not read
//! ([`fbunload_plan::incremental::Resumable`]): when none of its rows
//! changed since the first snapshot and it has as many rows, what the
//! first run wrote of it is its rows now, and goes to the output from the
//! journal's file; any other unit is read again, after the others. So
//! every file holds the new snapshot's rows, byte for byte what a fresh
//! run would write. The resumed run journals what it reads in the same
//! area against the same first snapshot (a unit read later and unchanged
//! since the first snapshot is the same at both), so it can be resumed
//! in turn.
//!
//! The area is read back as a stranger's: a file the journal names must
//! be a plain name of ours in the area, a plain file (no link) of the
//! size and SHA-256 listed, holding the table's schema and the rows
//! listed; a unit that fails any of this is read again. A journal line
//! that is not one a run writes refuses the resume.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use arrow_array::{Array, Int64Array, RecordBatch};
use arrow_schema::SchemaRef;
use fbunload_dest::ManifestFile;
use fbunload_exec::{Destination, ExecError, RunInfo, UnitWriter, Written};
use fbunload_plan::incremental::Resumable;
use fbunload_plan::{Plan, Role, Since, Unit};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Error;

/// The area a resumable run keeps what it finished in, inside `-o`.
pub const RESUME_DIR: &str = ".fbunload-resume";
const START: &str = "start.json";
const JOURNAL: &str = "journal.jsonl";
/// A start file or journal larger than this is not a run's.
const READ_LIMIT: u64 = 256 << 20;
/// Options that may differ between a run and its resume: they change how
/// fast, not what is written.
const FREE_OPTIONS: [&str; 2] = ["parallel", "verify"];

/// What a stopped run left: its first snapshot and finished units.
pub(crate) struct Stopped {
    start: Value,
    /// The last journal entry of each unit: (table, first slot, end slot).
    entries: HashMap<(String, u64, Option<u64>), Entry>,
    /// The next unit file's number.
    next_file: u64,
}

#[derive(Clone, Debug)]
struct Entry {
    rows: u64,
    file: String,
    bytes: u64,
    sha256: String,
}

fn refuse(area: &Path, why: impl std::fmt::Display) -> Error {
    Error::Usage(format!(
        "--resume: {}: {why}; start again with --overwrite",
        area.display()
    ))
}

/// Reads `name` in `area` as a stranger's: a plain file of sane size.
fn read_plain(area: &Path, name: &str) -> Result<Vec<u8>, Error> {
    let path = area.join(name);
    let meta = fs::symlink_metadata(&path).map_err(|e| refuse(area, format!("{name}: {e}")))?;
    if !meta.is_file() || meta.len() > READ_LIMIT {
        return Err(refuse(
            area,
            format!("{name} is not a plain file a run writes"),
        ));
    }
    fs::read(&path).map_err(|e| refuse(area, format!("{name}: {e}")))
}

/// Whether `dir` holds what a stopped resumable run left; a link or a
/// file in its place is refused.
pub(crate) fn left_in(dir: &Path) -> Result<bool, Error> {
    let area = dir.join(RESUME_DIR);
    match fs::symlink_metadata(&area) {
        Ok(meta) if meta.is_dir() && same_owner(dir, &meta) => Ok(true),
        Ok(_) => Err(Error::Usage(format!(
            "{}: not a directory fbunload made (a link, a file, or another owner's); remove it",
            area.display()
        ))),
        Err(_) => Ok(false),
    }
}

/// Whether the area belongs to whoever owns the output directory, as a
/// run leaves it (on Unix).
fn same_owner(dir: &Path, area: &fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(dir).is_ok_and(|d| d.uid() == area.uid())
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, area);
        true
    }
}

/// `--resume` where no stopped run is.
pub(crate) fn nothing_to_resume(dir: &Path) -> Error {
    Error::Usage(format!(
        "--resume: {} holds no stopped --resumable run ({RESUME_DIR} is not there); run without \
         --resume",
        dir.display()
    ))
}

/// What the stopped run in `dir` left, read and checked; refused when its
/// options other than `--parallel` differ from `mine`.
pub(crate) fn read_stopped(dir: &Path, mine: &BTreeMap<String, Value>) -> Result<Stopped, Error> {
    let area = dir.join(RESUME_DIR);
    let start: Value = serde_json::from_slice(&read_plain(&area, START)?)
        .map_err(|e| refuse(&area, format!("{START} cannot be read: {e}")))?;
    let theirs: BTreeMap<String, Value> = start
        .get("options")
        .cloned()
        .and_then(|o| serde_json::from_value(o).ok())
        .ok_or_else(|| refuse(&area, format!("{START} has no options")))?;
    refuse_other_options(&dir.display().to_string(), &theirs, mine)?;
    since_of(&start).ok_or_else(|| refuse(&area, format!("{START} was edited")))?;
    read_journal(&area, start)
}

/// Refuses a resume whose options other than `--parallel` differ from
/// the stopped run's (`theirs`), naming the first that does; `place` is
/// where the stopped run is.
pub(crate) fn refuse_other_options(
    place: &str,
    theirs: &BTreeMap<String, Value>,
    mine: &BTreeMap<String, Value>,
) -> Result<(), Error> {
    // The format first: the options that go with it differ with it.
    let format = "format".to_string();
    let names = std::iter::once(&format).chain(
        theirs
            .keys()
            .chain(mine.keys())
            .collect::<std::collections::BTreeSet<_>>(),
    );
    for name in names {
        if FREE_OPTIONS.contains(&name.as_str()) || theirs.get(name) == mine.get(name) {
            continue;
        }
        let shown = |v: Option<&Value>| match v {
            Some(Value::String(s)) => format!("--{name} {}", crate::printable(s)),
            Some(Value::Bool(true)) => format!("--{name}"),
            Some(Value::Bool(false)) | None => format!("without --{name}"),
            Some(v) => format!("--{name} {v}"),
        };
        return Err(Error::Usage(format!(
            "--resume: the stopped run in {place} was made with {}, this one with {}; a resume \
             takes the first run's options (or start again with --overwrite)",
            shown(theirs.get(name)),
            shown(mine.get(name))
        )));
    }
    Ok(())
}

fn read_journal(area: &Path, start: Value) -> Result<Stopped, Error> {
    let journal = match fs::symlink_metadata(area.join(JOURNAL)) {
        Err(_) => Vec::new(),
        Ok(_) => read_plain(area, JOURNAL)?,
    };
    let mut entries = HashMap::new();
    let mut next_file = 0;
    let complete = journal.ends_with(b"\n");
    let lines: Vec<&[u8]> = journal.split(|b| *b == b'\n').collect();
    for (number, line) in lines.iter().enumerate() {
        // The last line, cut short by the kill, is no entry.
        if number + 1 == lines.len() && (!complete || line.is_empty()) {
            break;
        }
        let entry = parse_entry(line).ok_or_else(|| {
            refuse(
                area,
                format!(
                    "{JOURNAL} line {} is not one a run writes (a file outside the area, or an \
                     edited line)",
                    number + 1
                ),
            )
        })?;
        let (key, entry, n) = entry;
        next_file = next_file.max(n + 1);
        entries.insert(key, entry);
    }
    Ok(Stopped {
        start,
        entries,
        next_file,
    })
}

/// `u<N>.arrow`: the only names a journal gives.
fn file_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix('u')?.strip_suffix(".arrow")?;
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

type Parsed = ((String, u64, Option<u64>), Entry, u64);

fn parse_entry(line: &[u8]) -> Option<Parsed> {
    let v: Value = serde_json::from_slice(line).ok()?;
    let file = v.get("file")?.as_str()?.to_string();
    let n = file_number(&file)?;
    let sha256 = v.get("sha256")?.as_str()?.to_string();
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let end = match v.get("end_slot")? {
        Value::Null => None,
        end => Some(end.as_u64()?),
    };
    Some((
        (
            v.get("table")?.as_str()?.to_string(),
            v.get("first_slot")?.as_u64()?,
            end,
        ),
        Entry {
            rows: v.get("rows")?.as_u64()?,
            file,
            bytes: v.get("bytes")?.as_u64()?,
            sha256,
        },
        n,
    ))
}

/// The first run's snapshot, as `--since` takes one.
pub(crate) fn since_of(start: &Value) -> Option<Since> {
    let marks = start.get("marks")?;
    let u = |name: &str| marks.get(name).and_then(Value::as_u64);
    let transaction = u("transaction")?;
    let oldest_interesting = u("oldest_interesting")?;
    let oldest_unseen = u("oldest_unseen")?;
    let unseen_below: Vec<u64> = marks
        .get("unseen_below")?
        .as_array()?
        .iter()
        .map(Value::as_u64)
        .collect::<Option<_>>()?;
    // Numbers no run writes would make changed rows look unchanged.
    let sane = transaction > 0
        && transaction < (1 << 48)
        && oldest_interesting <= oldest_unseen
        && oldest_unseen <= transaction
        && unseen_below.len() <= fbunload_plan::incremental::UNSEEN_LISTED
        && unseen_below.iter().all(|t| *t < oldest_unseen);
    if !sane {
        return None;
    }
    Some(Since {
        snapshot_number: start.get("snapshot_number")?.as_u64().unwrap_or(0),
        oldest_interesting,
        oldest_unseen,
        unseen_below,
        transaction,
        database_guid: start.get("database_guid")?.as_str()?.to_string(),
        database_file_id: start
            .get("database_file_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        // The first run's commit mark tells a copy of the database from
        // the database; but the run was killed, and the engine killed with
        // it (embedded) may never have written that read-only commit
        // down: the next engine finds it rolled back. The GUID, the file's
        // id and the transaction numbers still tell a copy or a restore.
        commit_mark: None,
        tables: Vec::new(),
    })
}

impl Stopped {
    /// What the plan of the resumed run needs.
    pub(crate) fn resumable(&self) -> Resumable {
        Resumable {
            first: since_of(&self.start),
            finished: self.entries.keys().cloned().collect(),
        }
    }

    /// The first run's unit size.
    pub(crate) fn unit_pages(&self) -> Option<u64> {
        self.start.get("unit_pages").and_then(Value::as_u64)
    }

    pub(crate) fn first_snapshot(&self) -> (Option<u64>, u64) {
        (
            self.start.get("snapshot_number").and_then(Value::as_u64),
            since_of(&self.start).map_or(0, |s| s.transaction),
        )
    }
}

/// What a resumable run records before any unit is read: its snapshot's
/// marks (the first snapshot of a resume), the database it reads, its
/// unit size and its options.
pub(crate) fn start_record(
    run: &RunInfo<'_>,
    options: &BTreeMap<String, Value>,
) -> Result<Value, ExecError> {
    let marks = run.snapshot_marks.ok_or_else(|| {
        ExecError::Internal("a resumable run without its snapshot's marks".into())
    })?;
    Ok(serde_json::json!({
        "snapshot_number": run.snapshot_number,
        "marks": {
            "oldest_interesting": marks.oldest_interesting,
            "oldest_unseen": marks.oldest_unseen,
            "unseen_below": marks.unseen_below,
            "transaction": marks.transaction,
            "probe": marks.probe,
            "probe_commit_number": marks.probe_commit_number,
        },
        "database_guid": run.plan.database_guid,
        "database_file_id": run.plan.database_file_id,
        "unit_pages": run.plan.unit_pages,
        "units": run.plan.units.len(),
        "options": options,
    }))
}

/// The checks' entries of a resumed plan: per entry, the table a
/// [`Role::ResumeCheck`] counts for; and the plan as the destination
/// behind sees it, as if every unit were read.
fn plan_without_checks(plan: &Plan) -> (Vec<Option<usize>>, Plan) {
    let checks: Vec<Option<usize>> = plan
        .tables
        .iter()
        .map(|t| match t.role {
            Role::ResumeCheck { of } => Some(of),
            _ => None,
        })
        .collect();
    let listed = checks.iter().take_while(|c| c.is_none()).count();
    let mut plan = plan.clone();
    plan.tables.truncate(listed);
    for unit in &mut plan.units {
        if let Some(of) = checks[unit.table] {
            unit.table = of;
        }
    }
    (checks, plan)
}

/// The two counts of a [`Role::ResumeCheck`] entry's batch: the unit's
/// rows now and those changed since the first snapshot.
pub(crate) fn check_counts(batch: &RecordBatch) -> Option<(i64, i64)> {
    let count = |i: usize| {
        batch
            .column(i)
            .as_any()
            .downcast_ref::<Int64Array>()
            .filter(|c| c.len() == 1 && !c.is_null(0))
            .map(|c| c.value(0))
    };
    (batch.num_rows() == 1)
        .then(|| count(0).zip(count(1)))
        .flatten()
}

/// What a resumed run's destination keeps and reads again, the same for
/// a file resume ([`Journaling`]) and a PostgreSQL one
/// (`pgresume::PgResume`): which plan entries count a stopped run's unit,
/// the units to read again after the planned ones, and the tallies the
/// run reports.
#[derive(Default)]
pub(crate) struct UnitTally {
    /// Per entry of the plan: the table a resume check entry counts for.
    checks: OnceLock<Vec<Option<usize>>>,
    names: OnceLock<Vec<String>>,
    redo: Mutex<Vec<Unit>>,
    /// Rows of each table kept from the stopped run (the run's counts
    /// are of rows read).
    pub kept_rows: Mutex<Vec<u64>>,
    pub kept_units: AtomicU64,
    pub read_again: AtomicU64,
}

impl UnitTally {
    /// Notes the plan's check entries; returns the plan as the
    /// destination behind sees it, as if every unit were read.
    pub(crate) fn start(&self, plan: &Plan) -> Plan {
        let (checks, plan) = plan_without_checks(plan);
        let _ = self
            .names
            .set(plan.tables.iter().map(|t| t.name.clone()).collect());
        let _ = self.checks.set(checks);
        *self.kept_rows.lock().unwrap() = vec![0; plan.tables.len()];
        plan
    }

    /// For a unit of a check entry, the table's own unit it counts.
    pub(crate) fn counted(&self, unit: &Unit) -> Result<Option<Unit>, ExecError> {
        let checks = self
            .checks
            .get()
            .ok_or_else(|| ExecError::Internal("a unit before the run started".into()))?;
        Ok(checks[unit.table].map(|of| Unit { table: of, ..*unit }))
    }

    /// The name of the plan's table `table`, once the run started.
    pub(crate) fn name(&self, table: usize) -> Option<&str> {
        self.names.get().map(|names| names[table].as_str())
    }

    /// A stopped run's unit kept, with its `rows`.
    pub(crate) fn keep(&self, unit: &Unit, rows: u64) {
        self.kept_rows.lock().unwrap()[unit.table] += rows;
        self.kept_units.fetch_add(1, Ordering::SeqCst);
    }

    /// A stopped run's unit to read again after the planned units.
    pub(crate) fn redo(&self, unit: Unit) {
        self.read_again.fetch_add(1, Ordering::SeqCst);
        self.redo.lock().unwrap().push(unit);
    }

    /// The units to read again, in plan order, then `behind`'s own.
    pub(crate) fn follow_ups(&self, behind: Vec<Unit>) -> Vec<Unit> {
        let mut units = std::mem::take(&mut *self.redo.lock().unwrap());
        units.sort_by_key(|u| (u.table, u.seq));
        units.extend(behind);
        units
    }

    /// For a unit of a check entry, the writer that counts it, then has
    /// `dest` keep the stopped run's unit or read it again; `None` for a
    /// unit to read.
    pub(crate) fn check_writer<'d, D: KeepOrReadAgain>(
        &self,
        dest: &'d D,
        unit: &Unit,
    ) -> Result<Option<Box<dyn UnitWriter + 'd>>, ExecError> {
        Ok(self.counted(unit)?.map(|unit| {
            Box::new(Check {
                dest,
                unit,
                counts: None,
            }) as Box<dyn UnitWriter + 'd>
        }))
    }

    /// Notes the run's check entries ([`UnitTally::start`]) and starts
    /// `behind` on the plan as it sees it, with the schemas of its tables.
    pub(crate) fn start_behind(
        &self,
        run: &RunInfo<'_>,
        behind: &dyn Destination,
    ) -> Result<(), ExecError> {
        let plan = self.start(run.plan);
        let listed = plan.tables.len();
        behind.start(&RunInfo {
            plan: &plan,
            schemas: &run.schemas[..listed],
            ..*run
        })
    }
}

/// A resuming destination (a file resume, a PostgreSQL one): what it does
/// with a stopped run's unit once the unit is counted at the new snapshot.
pub(crate) trait KeepOrReadAgain: Sync {
    /// Keeps the stopped run's `unit` (the table's own) when `counts`
    /// (rows, rows changed since the first snapshot) say it is unchanged,
    /// else notes it to read again ([`UnitTally::redo`]); returns what
    /// [`UnitWriter::finish`] returns.
    fn keep_or_read_again(&self, unit: Unit, counts: Option<(i64, i64)>)
        -> Result<bool, ExecError>;
}

/// A unit of a check entry: its counts are gathered, then the destination
/// keeps the table's own unit or reads it again.
struct Check<'d, D> {
    dest: &'d D,
    /// The table's own unit.
    unit: Unit,
    counts: Option<(i64, i64)>,
}

impl<D: KeepOrReadAgain> UnitWriter for Check<'_, D> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        if let Some(counts) = check_counts(&batch) {
            self.counts = Some(counts);
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        self.dest.keep_or_read_again(self.unit, self.counts)
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        Ok(())
    }
}

/// Removes the area once the run it served is published (or `--overwrite`
/// starts again).
pub(crate) fn remove(dir: &Path) -> Result<(), Error> {
    if left_in(dir)? {
        // remove_dir_all follows no link below the area.
        fs::remove_dir_all(dir.join(RESUME_DIR)).map_err(in_area(&dir.join(RESUME_DIR)))?;
    }
    Ok(())
}

/// A destination that journals each finished unit before handing it on
/// to `inner`, and, resuming, hands on the units the count found
/// unchanged from the journal (module docs).
pub(crate) struct Journaling<'a> {
    inner: &'a dyn Destination,
    area: PathBuf,
    stopped: Option<Stopped>,
    options: BTreeMap<String, Value>,
    journal: Mutex<Option<File>>,
    next_file: AtomicU64,
    schemas: OnceLock<Vec<SchemaRef>>,
    /// What is handed on from the journal and what is read again.
    pub tally: UnitTally,
}

impl<'a> Journaling<'a> {
    pub(crate) fn new(
        inner: &'a dyn Destination,
        dir: &Path,
        stopped: Option<Stopped>,
        options: BTreeMap<String, Value>,
    ) -> Self {
        let next_file = stopped.as_ref().map_or(0, |s| s.next_file);
        Journaling {
            inner,
            area: dir.join(RESUME_DIR),
            stopped,
            options,
            journal: Mutex::new(None),
            next_file: AtomicU64::new(next_file),
            schemas: OnceLock::new(),
            tally: UnitTally::default(),
        }
    }

    /// Writes `start.json` (first run) and opens the journal.
    fn open_area(&self, run: &RunInfo<'_>) -> Result<(), ExecError> {
        let io = in_area(&self.area);
        if self.stopped.is_none() {
            let _ = fs::remove_dir_all(&self.area);
            make_private_dir(&self.area).map_err(&io)?;
            let start = start_record(run, &self.options)?;
            let temp = self.area.join("start.json.partial");
            let mut file = new_file(&temp).map_err(&io)?;
            file.write_all(&serde_json::to_vec_pretty(&start).expect("JSON"))
                .map_err(&io)?;
            file.sync_all().map_err(&io)?;
            fs::rename(&temp, self.area.join(START)).map_err(&io)?;
            sync_dir(&self.area);
        } else {
            // Unit files a kill left unnamed.
            for entry in fs::read_dir(&self.area).map_err(&io)?.flatten() {
                let name = entry.file_name();
                if name.to_string_lossy().starts_with("partial-") {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        let path = self.area.join(JOURNAL);
        if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            return Err(ExecError::Usage(format!(
                "{}: not a plain file; start again with --overwrite",
                path.display()
            )));
        }
        let mut journal = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(&io)?;
        // A line a kill cut short ends here, so the next starts clean.
        if journal.metadata().map_err(&io)?.len() > 0 {
            let mut last = [0u8; 1];
            let mut reader = File::open(&path).map_err(&io)?;
            let len = reader.metadata().map_err(&io)?.len();
            std::io::Seek::seek(&mut reader, std::io::SeekFrom::Start(len - 1)).map_err(&io)?;
            reader.read_exact(&mut last).map_err(&io)?;
            if last[0] != b'\n' {
                journal.write_all(b"\n").map_err(&io)?;
            }
        }
        *self.journal.lock().unwrap() = Some(journal);
        Ok(())
    }

    /// A reader of the rows of a finished unit of table `of`, as the
    /// journal's file holds them, and how many it holds, if that file is
    /// what the journal says (its schema the table's). The file is read a
    /// batch at a time, as it is handed on.
    fn kept(
        &self,
        of: usize,
        unit: &Unit,
        rows_now: i64,
    ) -> Option<(arrow_ipc::reader::FileReader<File>, u64)> {
        let stopped = self.stopped.as_ref()?;
        let name = self.tally.name(of)?;
        let entry = stopped
            .entries
            .get(&(name.to_string(), unit.first_slot, unit.end_slot))?;
        if rows_now < 0 || rows_now as u64 != entry.rows {
            return None;
        }
        let listed = ManifestFile {
            name: entry.file.clone(),
            bytes: entry.bytes,
            sha256: entry.sha256.clone(),
            role: None,
        };
        // Hashed through a handle that stays on what was hashed.
        let file = fbunload_dest::open_verified_listed_file(&self.area, &listed).ok()?;
        let reader = arrow_ipc::reader::FileReader::try_new(file, None).ok()?;
        (reader.schema() == self.schemas.get()?[of]).then_some((reader, entry.rows))
    }

    fn append(&self, line: Value) -> Result<(), ExecError> {
        let mut journal = self.journal.lock().unwrap();
        let file = journal
            .as_mut()
            .ok_or_else(|| ExecError::Internal("the journal is not open".into()))?;
        let mut text = serde_json::to_vec(&line).expect("JSON");
        text.push(b'\n');
        let io = in_area(&self.area);
        file.write_all(&text).map_err(&io)?;
        file.sync_data().map_err(io)
    }
}

/// An error of the area's files, naming the area.
fn in_area(area: &Path) -> impl Fn(std::io::Error) -> ExecError + '_ {
    move |e| ExecError::OutputDir {
        path: area.to_path_buf(),
        reason: e.to_string(),
    }
}

fn make_private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// A new file, never through a link (`O_EXCL`).
fn new_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

fn sync_dir(dir: &Path) {
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
    }
}

impl Destination for Journaling<'_> {
    fn keeps_schema(&self) -> bool {
        self.inner.keeps_schema()
    }

    fn start(&self, run: &RunInfo<'_>) -> Result<(), ExecError> {
        let _ = self.schemas.set(run.schemas.to_vec());
        self.open_area(run)?;
        self.tally.start_behind(run, self.inner)
    }

    fn begin_unit(&self, unit: &Unit) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        if let Some(check) = self.tally.check_writer(self, unit)? {
            return Ok(check);
        }
        let inner = self.inner.begin_unit(unit)?;
        let number = self.next_file.fetch_add(1, Ordering::SeqCst);
        let partial = self.area.join(format!("partial-{number}.arrow"));
        let file = new_file(&partial).map_err(in_area(&self.area))?;
        let schema = &self.schemas.get().expect("set at start")[unit.table];
        let ipc = arrow_ipc::writer::FileWriter::try_new(
            Hashing {
                out: BufWriter::new(file),
                hash: Sha256::new(),
                bytes: 0,
            },
            schema,
        )
        .map_err(|e| ExecError::Internal(e.to_string()))?;
        Ok(Box::new(Tee {
            dest: self,
            unit: *unit,
            inner,
            ipc: Some(ipc),
            partial,
            number,
            rows: 0,
        }))
    }

    fn finish(&self) -> Result<Vec<Written>, ExecError> {
        self.inner.finish()
    }

    fn follow_ups(&self) -> Result<Vec<Unit>, ExecError> {
        Ok(self.tally.follow_ups(self.inner.follow_ups()?))
    }

    fn stop(&self) {
        self.inner.stop()
    }
}

/// Counts bytes and hashes them on their way to the file.
struct Hashing {
    out: BufWriter<File>,
    hash: Sha256,
    bytes: u64,
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// A unit read: to the output and to its journal file.
struct Tee<'d, 'a> {
    dest: &'d Journaling<'a>,
    unit: Unit,
    inner: Box<dyn UnitWriter + 'd>,
    ipc: Option<arrow_ipc::writer::FileWriter<Hashing>>,
    partial: PathBuf,
    number: u64,
    rows: u64,
}

impl UnitWriter for Tee<'_, '_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        self.rows += batch.num_rows() as u64;
        if let Some(ipc) = self.ipc.as_mut() {
            ipc.write(&batch)
                .map_err(|e| ExecError::Internal(e.to_string()))?;
        }
        self.inner.write(batch)
    }

    fn finish(mut self: Box<Self>) -> Result<bool, ExecError> {
        let mut ipc = self.ipc.take().expect("finished once");
        ipc.finish()
            .map_err(|e| ExecError::Internal(e.to_string()))?;
        let mut hashing = ipc
            .into_inner()
            .map_err(|e| ExecError::Internal(e.to_string()))?;
        let io = in_area(&self.dest.area);
        hashing.flush().map_err(&io)?;
        let Hashing { out, hash, bytes } = hashing;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(&io)?;
        let name = format!("u{}.arrow", self.number);
        fs::rename(&self.partial, self.dest.area.join(&name)).map_err(&io)?;
        let table = self.dest.tally.name(self.unit.table).expect("set at start");
        self.dest.append(serde_json::json!({
            "table": table,
            "seq": self.unit.seq,
            "first_slot": self.unit.first_slot,
            "end_slot": self.unit.end_slot,
            "rows": self.rows,
            "file": name,
            "bytes": bytes,
            "sha256": crate::incremental::hex(&hash.finalize()),
        }))?;
        self.inner.finish()
    }

    fn abort(mut self: Box<Self>) -> Result<(), ExecError> {
        drop(self.ipc.take());
        let _ = fs::remove_file(&self.partial);
        self.inner.abort()
    }
}

/// A finished unit counted at the new snapshot: handed on from the
/// journal when unchanged, else read again after the planned units.
impl KeepOrReadAgain for Journaling<'_> {
    fn keep_or_read_again(
        &self,
        unit: Unit,
        counts: Option<(i64, i64)>,
    ) -> Result<bool, ExecError> {
        let read_again = || {
            self.tally.redo(unit);
            Ok(false)
        };
        let kept = match counts {
            Some((rows, 0)) => self.kept(unit.table, &unit, rows),
            _ => None,
        };
        let Some((reader, listed)) = kept else {
            return read_again();
        };
        let mut writer = self.inner.begin_unit(&unit)?;
        let mut rows = 0u64;
        for batch in reader {
            let Ok(batch) = batch else {
                // A file that does not read to its end: taken back, and
                // the unit read again.
                writer.abort()?;
                return read_again();
            };
            rows += batch.num_rows() as u64;
            if let Err(e) = writer.write(batch) {
                let _ = writer.abort();
                return Err(e);
            }
        }
        if rows != listed {
            writer.abort()?;
            return read_again();
        }
        let done = writer.finish()?;
        self.tally.keep(&unit, rows);
        Ok(done)
    }
}
