//! Resumable loads into PostgreSQL (`--resumable`, `--resume` with
//! `-o postgresql://`): the units are journaled in the staging schema,
//! each in its COPY's transaction ([`fbunload_dest_postgres::resume`]).
//!
//! `--resume` plans again with the first run's unit size, so a table's
//! units are the same DB_KEY ranges, and counts each unit the stopped
//! load finished at the new snapshot, as a file resume does
//! ([`fbunload_plan::incremental::Resumable`]): one with no row changed
//! since the first snapshot and as many rows keeps its rows where they
//! are; any other is read again after the planned units, and its old rows
//! are removed before the publish. So the published schema holds the new
//! snapshot's rows only.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use fbunload_dest_postgres::PostgresDestination;
use fbunload_exec::{Destination, ExecError, RunInfo, UnitWriter, Written};
use fbunload_plan::Unit;
use serde_json::Value;

use crate::resume;

/// What a resumed load kept and read again (also recorded in the
/// target's `_fbunload_runs`, its `options.resumed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resumed {
    /// The stopped load's snapshot.
    pub first_snapshot_number: Option<u64>,
    pub first_transaction: u64,
    /// The resume's snapshot, which the published schema holds.
    pub snapshot_number: Option<u64>,
    /// Units of the stopped load kept, unchanged since its snapshot.
    pub units_kept: u64,
    /// Units of the stopped load read again (changed since).
    pub units_read_again: u64,
}

/// The load's destination, with the stopped load's units counted instead
/// of read (module docs).
pub(crate) struct PgResume<'a> {
    inner: &'a PostgresDestination,
    options: BTreeMap<String, Value>,
    snapshot: Mutex<Option<u64>>,
    /// What is kept where it is and what is read again.
    pub tally: resume::UnitTally,
}

impl<'a> PgResume<'a> {
    pub(crate) fn new(inner: &'a PostgresDestination, options: BTreeMap<String, Value>) -> Self {
        PgResume {
            inner,
            options,
            snapshot: Mutex::new(None),
            tally: resume::UnitTally::default(),
        }
    }

    /// What the resume did; `None` for a first run.
    pub(crate) fn resumed(&self) -> Option<Resumed> {
        let stopped = self.inner.stopped_load()?;
        let since = resume::since_of(&stopped.start);
        Some(Resumed {
            first_snapshot_number: stopped.start.get("snapshot_number").and_then(Value::as_u64),
            first_transaction: since.map_or(0, |s| s.transaction),
            snapshot_number: *self.snapshot.lock().unwrap(),
            units_kept: self.tally.kept_units.load(Ordering::SeqCst),
            units_read_again: self.tally.read_again.load(Ordering::SeqCst),
        })
    }

    /// Refuses a resume that reads another database than the stopped
    /// load did (another file, a restore), before any row is read.
    fn refuse_other_database(&self, run: &RunInfo<'_>) -> Result<(), ExecError> {
        let Some(stopped) = self.inner.stopped_load() else {
            return Ok(());
        };
        let theirs = |name: &str| {
            stopped
                .start
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let differs = theirs("database_guid") != run.plan.database_guid
            || theirs("database_file_id") != run.plan.database_file_id;
        if differs {
            return Err(ExecError::Usage(format!(
                "--resume: the stopped load in staging schema {} read the database with GUID \
                 {}, this run reads {} (another database, a copy or a restore); a resume reads \
                 the database the load began with (or start again with --overwrite)",
                self.inner.staging(),
                theirs("database_guid").unwrap_or_default(),
                run.plan.database_guid.as_deref().unwrap_or("")
            )));
        }
        Ok(())
    }
}

impl Destination for PgResume<'_> {
    fn keeps_schema(&self) -> bool {
        self.inner.keeps_schema()
    }

    fn start(&self, run: &RunInfo<'_>) -> Result<(), ExecError> {
        self.refuse_other_database(run)?;
        *self.snapshot.lock().unwrap() = run.snapshot_number;
        if self.inner.stopped_load().is_none() {
            self.inner
                .set_resume_start(resume::start_record(run, &self.options)?);
        }
        self.tally.start_behind(run, self.inner)
    }

    fn begin_unit(&self, unit: &Unit) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        if let Some(check) = self.tally.check_writer(self, unit)? {
            return Ok(check);
        }
        self.inner.begin_unit(unit)
    }

    fn finish(&self) -> Result<Vec<Written>, ExecError> {
        if let Some(resumed) = self.resumed() {
            self.inner.set_resumed(serde_json::json!({
                "first_snapshot_number": resumed.first_snapshot_number,
                "first_transaction": resumed.first_transaction,
                "snapshot_number": resumed.snapshot_number,
                "units_kept": resumed.units_kept,
                "units_read_again": resumed.units_read_again,
            }));
        }
        self.inner.finish()
    }

    fn follow_ups(&self) -> Result<Vec<Unit>, ExecError> {
        Ok(self.tally.follow_ups(self.inner.follow_ups()?))
    }

    fn stop(&self) {
        self.inner.stop()
    }
}

/// A unit the stopped load finished, counted at the new snapshot: kept
/// where it is when unchanged, else read again after the planned units.
impl resume::KeepOrReadAgain for PgResume<'_> {
    fn keep_or_read_again(
        &self,
        unit: Unit,
        counts: Option<(i64, i64)>,
    ) -> Result<bool, ExecError> {
        let name = self.tally.name(unit.table).expect("set at start");
        let journaled = self
            .inner
            .stopped_load()
            .and_then(|s| s.unit(name, unit.first_slot, unit.end_slot));
        match (counts, journaled) {
            (Some((rows, 0)), Some(stopped)) if rows >= 0 && rows as u64 == stopped.rows => {
                self.tally.keep(&unit, stopped.rows);
                Ok(self.inner.keep_unit(unit.table, &unit, stopped.rows))
            }
            _ => {
                self.tally.redo(unit);
                Ok(false)
            }
        }
    }
}
