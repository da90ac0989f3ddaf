//! `fbunload follow`: the committed transactions of a Firebird database's
//! replication journal applied to the PostgreSQL schema a `--keep-keys`
//! load made, in commit order, many to one PostgreSQL transaction (a
//! group: what is read within 100 ms, at most 20,000 row changes, or
//! until the journal has no more) that also records how far the journal
//! is applied, so a kill loses or keeps a whole group.
//!
//! The hand-off is the load's own snapshot marks (kept with its state in
//! `_fbunload_state`): a journal transaction is applied when that snapshot
//! did not see it committed, that is when its number is at or above the
//! snapshot's bound or in the list of those running at the snapshot.
//! The position (`_fbunload_journal`) is where the last applied
//! transaction's end block ends, and where to read again from (the first
//! block of the oldest transaction still open then), so a restart after
//! any kill applies each transaction once.
//!
//! The Firebird side ([`source`]) gives each table's record format and
//! key; the PostgreSQL side ([`target`]) applies decoded rows, a keyed
//! table's as their net effect per key ([`net`]), set-based. Data flows
//! one way: journal → events → PostgreSQL.

pub mod changeset;
pub mod jsonl;
pub mod net;
pub mod phases;
pub mod source;
pub mod target;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use fbunload_journal::transactions::Outcome;
use fbunload_journal::{Committed, Journal, JournalError, Transactions};

/// A place in the journal: a segment's sequence and an offset in it.
pub use fbunload_journal::Position;

/// What a follow is told (the command line's `follow` options).
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// The Firebird database, as for an unload.
    pub database: String,
    pub user: Option<String>,
    pub password: Option<String>,
    pub client_library: Option<PathBuf>,
    /// `journal_archive_directory` of the database's replication.conf.
    pub archive: PathBuf,
    /// `journal_directory`, read for the segments not archived yet.
    pub live: Option<PathBuf>,
    /// `postgresql://…`, or `-`: JSON lines on standard output ([`jsonl`]).
    pub target: String,
    /// The PostgreSQL schema (`--pg-schema`; `public` if not given), only
    /// for a PostgreSQL target: given with another it is refused.
    pub schema: Option<String>,
    /// Stop once no change arrived for this long.
    pub until_idle: Option<Duration>,
    /// Bytes of row images a transaction may hold in memory before its
    /// changes go on in a temporary file (`--memory`).
    pub memory_budget: usize,
    /// With `target` `-` (JSON lines on standard output): go on after
    /// this `resume` of an earlier event ([`jsonl`]).
    pub from: Option<String>,
    /// With `target` a directory: the `--keep-keys --journal` run the
    /// chain of change sets starts from ([`changeset`]).
    pub since: Option<PathBuf>,
    /// With `target` a directory: a change set this often.
    pub every: Option<Duration>,
}

impl FollowOptions {
    /// The PostgreSQL schema followed into.
    pub fn pg_schema(&self) -> &str {
        self.schema.as_deref().unwrap_or("public")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error("{0}")]
    Journal(#[from] JournalError),
    #[error("{0}")]
    Source(String),
    #[error("{0}")]
    Target(String),
    #[error("{0}")]
    Usage(String),
}

/// What a follow did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FollowSummary {
    pub transactions: u64,
    pub changes: u64,
    pub position: Position,
}

/// When a transaction's commit block was written to the journal, as
/// closely as the follow can tell (the journal holds no commit times):
/// not after the segment's modification time or the read that found it,
/// and after the last read of the same segment that did not find it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub not_after: SystemTime,
    /// `None`: it was there at the first read of its segment (a follow
    /// catching up, or a segment begun between two reads), or only the
    /// archived segments are read.
    pub after: Option<SystemTime>,
}

/// Seconds from the oldest applied commit's journal write to its commit
/// in the target: at least `at_least`; at most `at_most` where known
/// (then within the poll interval of it while the follow keeps up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lag {
    pub at_least: Duration,
    pub at_most: Option<Duration>,
}

impl Written {
    /// The lag of a commit written then and applied now.
    pub fn lag(&self) -> Lag {
        let now = SystemTime::now();
        let since = |t: SystemTime| now.duration_since(t).unwrap_or_default();
        Lag {
            at_least: since(self.not_after),
            at_most: self.after.map(since),
        }
    }
}

/// Progress as a follow goes: after each group of applied transactions,
/// and each change set written.
pub trait FollowProgress {
    fn applied(&self, _summary: &FollowSummary, _lag: Option<Lag>) {}
    /// A change set moved into place at `link`, holding `transactions`,
    /// ending at `position` in the journal.
    fn linked(&self, _link: &std::path::Path, _transactions: u64, _position: Position) {}
}

impl FollowProgress for () {}

/// What a load with `--journal` checks first: the database publishes, and
/// the archive directory is there and holds only its journal.
pub fn check_setup(options: &FollowOptions) -> Result<(), FollowError> {
    let source = source::Source::open(options)?;
    let journal = Journal::open(
        &options.archive,
        options.live.as_deref(),
        std::path::Path::new(&source.file_name),
    )?;
    if let Some(first) = journal.sequences()?.first() {
        if let Some(segment) = journal.segment(*first)? {
            check_guid(&segment, &source, options)?;
        }
    }
    Ok(())
}

fn check_guid(
    segment: &fbunload_journal::Segment,
    source: &source::Source,
    options: &FollowOptions,
) -> Result<(), FollowError> {
    if segment.header.guid_text() == source.guid {
        return Ok(());
    }
    Err(FollowError::Usage(format!(
        "{}: a journal of database {}, not of {} ({}): give --journal the \
         journal_archive_directory of this database's replication.conf",
        segment.path.display(),
        segment.header.guid_text(),
        options.database,
        source.guid
    )))
}

/// How often an idle follow looks for new journal blocks.
const POLL: Duration = Duration::from_millis(100);

/// Applies the journal until `stop` is set (SIGINT/SIGTERM) or, with
/// `until_idle`, until nothing new arrived for that long.
pub fn follow(
    options: &FollowOptions,
    stop: &AtomicBool,
    progress: &dyn FollowProgress,
) -> Result<FollowSummary, FollowError> {
    let stdout = Box::new(std::io::BufWriter::new(std::io::stdout()));
    follow_into(options, stop, progress, stdout)
}

/// [`follow`], its events (with `target` `-`) written to `events` rather
/// than standard output: for a caller that hands them on (Python's
/// iterator of events).
pub fn follow_into(
    options: &FollowOptions,
    stop: &AtomicBool,
    progress: &dyn FollowProgress,
    events: Box<dyn std::io::Write>,
) -> Result<FollowSummary, FollowError> {
    phases::begin();
    let followed = follow_phases(options, stop, progress, events);
    phases::report();
    followed
}

fn follow_phases(
    options: &FollowOptions,
    stop: &AtomicBool,
    progress: &dyn FollowProgress,
    events: Box<dyn std::io::Write>,
) -> Result<FollowSummary, FollowError> {
    let postgres =
        options.target != "-" && fbunload_dest_postgres::is_postgres_uri(&options.target);
    if postgres && (options.from.is_some() || options.since.is_some() || options.every.is_some()) {
        return Err(FollowError::Usage(
            "--from is for -o -, --since and --every for -o DIR: a PostgreSQL target keeps \
             its own position"
                .into(),
        ));
    }
    if let (Some(schema), false) = (&options.schema, postgres) {
        return Err(FollowError::Usage(format!(
            "--pg-schema {schema}: it is for a PostgreSQL target (-o postgresql://...); change \
             sets (-o DIR) and the change stream (-o -) have no schema: leave it out"
        )));
    }
    // PostgreSQL is connected to (and its hand-off read) while Firebird
    // attaches: neither needs the other, and both mostly wait (the
    // embedded engine's start, the server's authentication), so a
    // follow's start costs the longer of the two, not their sum.
    let (source, connected) = std::thread::scope(|scope| {
        let connecting = postgres.then(|| {
            scope.spawn(|| {
                let _timed = phases::timed("postgresql connect, hand-off (beside firebird)");
                let mut target = target::Target::open(options)?;
                let handoff = target.handoff()?;
                Ok::<_, FollowError>((target, handoff))
            })
        });
        let source = source::Source::open(options);
        let connected =
            connecting.map(|c| c.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        (source, connected)
    });
    let mut source = source?;
    let timed = phases::timed("journal open");
    let journal = Journal::open(
        &options.archive,
        options.live.as_deref(),
        std::path::Path::new(&source.file_name),
    )?;
    drop(timed);
    let to_postgres = postgres;
    let (mut sink, state) = if options.target == "-" {
        let state = match &options.from {
            Some(text) => {
                let (restart, applied) = jsonl::parse_resume(text).map_err(FollowError::Usage)?;
                target::Resume { applied, restart }
            }
            None => target::Resume {
                applied: Position::default(),
                restart: Position {
                    sequence: journal.sequences()?.first().copied().unwrap_or(1),
                    offset: 0,
                },
            },
        };
        (Sink::JsonLines(jsonl::JsonLines::new(events)), state)
    } else if !to_postgres {
        if options.from.is_some() {
            return Err(FollowError::Usage(
                "--from is for -o -: a chain of change sets keeps its own position".into(),
            ));
        }
        let (sets, handoff, state) = changeset::ChangeSets::open(options, &source, &journal)?;
        (
            Sink::ChangeSets {
                sets: Box::new(sets),
                handoff,
            },
            state,
        )
    } else {
        let (mut target, handoff) = connected.expect("connected to a PostgreSQL target")?;
        let timed = phases::timed("postgresql position, foreign keys");
        if handoff.database_guid != source.guid {
            return Err(FollowError::Usage(format!(
                "schema {} was loaded from database {}, not from {} ({}): follow the database \
                 it was loaded from, or load this one with --keep-keys",
                options.pg_schema(),
                handoff.database_guid,
                options.database,
                source.guid
            )));
        }
        let state = target.position(&handoff, &journal)?;
        target.defer_foreign_keys()?;
        drop(timed);
        (
            Sink::Postgres {
                target: Box::new(target),
                handoff,
            },
            state,
        )
    };
    let mut transactions = Transactions::with_memory_budget(options.memory_budget);
    let mut cursor = state.restart;
    let mut applied = state.applied;
    let mut summary = FollowSummary {
        position: applied,
        ..FollowSummary::default()
    };
    let mut last_change = Instant::now();
    // The last look for a segment, and when it started.
    let mut last_look: Option<(u64, SystemTime)> = None;
    loop {
        if stop.load(Ordering::SeqCst) {
            commit(&mut sink, &mut summary, progress)?;
            return finish(&mut sink, summary, progress);
        }
        if let Sink::ChangeSets { sets, .. } = &mut sink {
            sets.write_if_due(progress)?;
        }
        let looked = SystemTime::now();
        let timed = phases::timed("journal segment read");
        let segment = journal.segment(cursor.sequence)?;
        drop(timed);
        let Some(segment) = segment else {
            last_look = Some((cursor.sequence, looked));
            // Not written yet, unless a later one is: then it is lost.
            let later = if journal.is_being_written(cursor.sequence) {
                None
            } else {
                journal
                    .sequences()?
                    .into_iter()
                    .find(|s| *s > cursor.sequence)
            };
            if let Some(later) = later {
                return Err(FollowError::Usage(format!(
                    "journal segment {} of {} is missing ({} is there): a segment was removed \
                     before it was applied; load the schema again with --keep-keys",
                    cursor.sequence, journal.database_file, later
                )));
            }
            commit(&mut sink, &mut summary, progress)?;
            if idle(options, &last_change) {
                return finish(&mut sink, summary, progress);
            }
            let _timed = phases::timed("idle wait");
            std::thread::sleep(POLL);
            continue;
        };
        check_guid(&segment, &source, options)?;
        let timed = phases::timed("journal blocks");
        let blocks = segment.blocks_from(cursor.offset)?;
        drop(timed);
        // Read whole, then its time asked: both are after every block read.
        let read = SystemTime::now();
        let modified = std::fs::metadata(&segment.path)
            .and_then(|m| m.modified())
            .unwrap_or(read);
        // A block the last look did not find was written after it only
        // where that look saw the file the engine writes: an archived
        // copy shows blocks written long before it appeared.
        let written = Written {
            not_after: modified.min(read),
            after: last_look
                .filter(|(sequence, _)| *sequence == cursor.sequence && options.live.is_some())
                .map(|(_, at)| at),
        };
        last_look = Some((cursor.sequence, looked));
        let read_to = blocks.last().map(|b| b.end);
        for block in &blocks {
            let timed = phases::timed("journal transactions");
            let ended = transactions.feed(block)?;
            drop(timed);
            let Some(ended) = ended else {
                continue;
            };
            if ended.end <= applied {
                continue;
            }
            let wanted = match &sink {
                Sink::Postgres { handoff, .. } | Sink::ChangeSets { handoff, .. } => {
                    handoff.unseen(ended.transaction)
                }
                Sink::JsonLines(_) => true,
            };
            // A stream from the journal's first segment starts there: a
            // transaction begun before it is before its start.
            let beginning_needed = match &sink {
                Sink::Postgres { .. } | Sink::ChangeSets { .. } => wanted,
                Sink::JsonLines(_) => options.from.is_some(),
            };
            match ended.outcome {
                Outcome::BeganBeforeReading if beginning_needed => {
                    return Err(FollowError::Usage(format!(
                        "transaction {} began in a journal segment before {}, which is gone: \
                         keep journal_archive_directory's segments until they are applied, and \
                         load the schema again with --keep-keys (or, for -o -, start without \
                         --from)",
                        ended.transaction, state.restart.sequence
                    )));
                }
                Outcome::BeganBeforeReading => continue,
                _ => {}
            }
            let restart = transactions.oldest_open().unwrap_or(ended.end);
            let anything = ended.change_count() > 0
                || !ended.sequences.is_empty()
                || !ended.statements.is_empty();
            let counted = wanted && anything && ended.outcome == Outcome::Committed;
            match &mut sink {
                Sink::Postgres { target, .. } => {
                    if wanted && anything {
                        if let Err(e) = refuse_ddl(&ended) {
                            // What came before it stays applied.
                            commit(&mut sink, &mut summary, progress)?;
                            return Err(e);
                        }
                        target.add(&mut source, &ended, counted)?;
                    }
                    target.reached(ended.end, restart, written);
                    if target.due() {
                        commit(&mut sink, &mut summary, progress)?;
                    }
                }
                Sink::JsonLines(out) => {
                    if anything {
                        summary.changes += out.write(&mut source, &ended, restart)?;
                    }
                    summary.transactions += u64::from(counted);
                    summary.position = ended.end;
                    progress.applied(&summary, Some(written.lag()));
                }
                Sink::ChangeSets { sets, .. } => {
                    if wanted {
                        refuse_ddl(&ended)?;
                    }
                    if wanted && ended.outcome == Outcome::Committed && ended.change_count() > 0 {
                        summary.changes += sets.add(&mut source, &ended, restart, progress)?;
                    } else {
                        sets.passed(ended.end, restart);
                    }
                    summary.transactions += u64::from(counted);
                    summary.position = ended.end;
                    progress.applied(&summary, Some(written.lag()));
                }
            }
            applied = ended.end;
            last_change = Instant::now();
            if stop.load(Ordering::SeqCst) {
                commit(&mut sink, &mut summary, progress)?;
                return finish(&mut sink, summary, progress);
            }
        }
        if let Some(end) = read_to {
            cursor = end;
        }
        let finished = segment.complete
            && matches!(
                segment.header.state,
                fbunload_journal::SegmentState::Full | fbunload_journal::SegmentState::Archived
            )
            && cursor
                .offset
                .max(fbunload_journal::segment::HEADER_LENGTH as u64)
                >= segment.len();
        if finished {
            cursor = Position {
                sequence: cursor.sequence + 1,
                offset: 0,
            };
        } else if blocks.is_empty() {
            commit(&mut sink, &mut summary, progress)?;
            if idle(options, &last_change) {
                return finish(&mut sink, summary, progress);
            }
            let _timed = phases::timed("idle wait");
            std::thread::sleep(POLL);
        }
    }
}

/// A follow that stops cleanly: a chain of change sets gets the link it
/// was gathering.
fn finish(
    sink: &mut Sink,
    summary: FollowSummary,
    progress: &dyn FollowProgress,
) -> Result<FollowSummary, FollowError> {
    if let Sink::ChangeSets { sets, .. } = sink {
        sets.write(progress)?;
    }
    Ok(summary)
}

fn idle(options: &FollowOptions, last_change: &Instant) -> bool {
    options
        .until_idle
        .is_some_and(|idle| last_change.elapsed() >= idle)
}

/// Commits the group a PostgreSQL target gathered (transactions go
/// to PostgreSQL many at a time, with the position of the last).
fn commit(
    sink: &mut Sink,
    summary: &mut FollowSummary,
    progress: &dyn FollowProgress,
) -> Result<(), FollowError> {
    let Sink::Postgres { target, .. } = sink else {
        return Ok(());
    };
    if let Some(applied) = target.commit()? {
        summary.transactions += applied.transactions;
        summary.changes += applied.changes;
        summary.position = applied.end;
        progress.applied(summary, applied.first_written.map(|w| w.lag()));
    }
    Ok(())
}

/// Where the changes go.
enum Sink {
    Postgres {
        target: Box<target::Target>,
        handoff: target::Handoff,
    },
    JsonLines(jsonl::JsonLines<Box<dyn std::io::Write>>),
    ChangeSets {
        sets: Box<changeset::ChangeSets>,
        handoff: target::Handoff,
    },
}

/// DDL in the journal stops the follow, naming the statement.
fn refuse_ddl(ended: &Committed) -> Result<(), FollowError> {
    if let Some((_, _, sql)) = ended.statements.first() {
        let text = String::from_utf8_lossy(sql);
        let first_line = text.lines().next().unwrap_or("").trim();
        return Err(FollowError::Usage(format!(
            "transaction {} ran DDL, which follow does not translate: \"{first_line}\"; make the \
             same change in PostgreSQL by hand and load again with --keep-keys (docs/postgresql.md, \
             \"Live\")",
            ended.transaction
        )));
    }
    Ok(())
}
