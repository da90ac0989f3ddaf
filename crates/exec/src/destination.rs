//! Where a run's rows go: the contract between the dispatcher and every
//! destination (files, standard output, Arrow streams, Python).
//!
//! The dispatcher reads units in whatever order workers finish them and
//! knows nothing of files. A destination receives each unit's record
//! batches on the worker thread that read them ([`UnitWriter`]), so
//! whatever it does per batch (encoding CSV, say) runs in parallel, and it
//! hands units on in each table's DB_KEY order, which is what makes the
//! output the same for any `--parallel`. A unit can fail half way (a lost
//! connection) and be read again: [`UnitWriter::abort`] must take back
//! everything it was given, so nothing of a failed attempt reaches the
//! output.
//!
//! The model is ConnectorX's `Destination` / `DestinationPartition` pair;
//! here a partition is a unit, and units arrive out of order.

use std::path::PathBuf;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use fbunload_plan::{Plan, Unit};

use crate::ExecError;

/// What a destination learns before the first unit is read.
#[derive(Debug, Clone, Copy)]
pub struct RunInfo<'a> {
    pub plan: &'a Plan,
    /// The Arrow schema of each table of the plan, in the plan's order.
    pub schemas: &'a [SchemaRef],
    /// The snapshot every unit is read at, where there is one to share.
    pub snapshot_number: Option<u64>,
    /// The marks of the snapshot's transaction, where the plan asked for
    /// them (an incremental or resumable run).
    pub snapshot_marks: Option<&'a crate::SnapshotMarks>,
    /// The DDL of the plan's tables, read at the snapshot, where the
    /// destination [keeps one](Destination::keeps_schema).
    pub schema_sql: Option<&'a str>,
    /// The catalog model `schema_sql` is written from: a database
    /// destination makes its own DDL of it.
    pub schema: Option<&'a fbunload_plan::schema::Schema>,
}

/// Receives the units of a run.
pub trait Destination: Sync {
    /// Whether it keeps the DDL of the tables (`schema.sql` of an output
    /// directory); then the run reads it for [`Destination::start`].
    fn keeps_schema(&self) -> bool {
        false
    }

    /// Called once, before any unit, when the snapshot is taken.
    fn start(&self, _run: &RunInfo<'_>) -> Result<(), ExecError> {
        Ok(())
    }

    /// Unit `unit` begins on the calling worker thread; its batches go to
    /// the returned writer, in the order they were read.
    fn begin_unit(&self, unit: &Unit) -> Result<Box<dyn UnitWriter + '_>, ExecError>;

    /// Every unit was written: complete the output and say what was
    /// written per table, in the plan's order. Not called after a failure;
    /// a destination dropped without `finish` removes what is unfinished.
    fn finish(&self) -> Result<Vec<Written>, ExecError>;

    /// Units to read once every planned one is written, on the same
    /// readers and snapshot, before [`Destination::finish`]: reads that
    /// depend on what the planned ones returned (an incremental run's
    /// unchanged keys where a row is gone). Asked once.
    fn follow_ups(&self) -> Result<Vec<Unit>, ExecError> {
        Ok(Vec::new())
    }

    /// The run is stopping (an error, a signal): a writer blocked waiting
    /// for room (a destination with bounded memory) must give up now.
    fn stop(&self) {}
}

/// Where one unit's batches go.
pub trait UnitWriter: Send {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError>;

    /// The unit is complete. Returns `true` when it completed its table
    /// (every unit before it had been handed on).
    fn finish(self: Box<Self>) -> Result<bool, ExecError>;

    /// The unit failed and will be read again (or the run is over): undo
    /// everything it wrote.
    fn abort(self: Box<Self>) -> Result<(), ExecError>;
}

/// What a destination made of one table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// The file or directory, if the table went to one.
    pub path: Option<PathBuf>,
    pub bytes: u64,
    /// Each file of an output directory, hashed as published (a table
    /// written as parts has one per part); empty for other destinations.
    pub files: Vec<FileDigest>,
}

/// One published file, as a manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDigest {
    /// Relative to the output directory, `/`-separated: `T.csv`,
    /// `T.parquet/part-00000.parquet`.
    pub name: String,
    pub bytes: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// Drops every batch: `--fetch-only`, and tests of the dispatcher.
pub struct Discard;

impl Destination for Discard {
    fn begin_unit(&self, _unit: &Unit) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        Ok(Box::new(Discard))
    }

    fn finish(&self) -> Result<Vec<Written>, ExecError> {
        Ok(Vec::new())
    }
}

impl UnitWriter for Discard {
    fn write(&mut self, _batch: RecordBatch) -> Result<(), ExecError> {
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        Ok(false)
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        Ok(())
    }
}
