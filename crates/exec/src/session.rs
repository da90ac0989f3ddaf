//! The database as the dispatcher sees it: a snapshot that readers can
//! read units in.
//!
//! Two small traits rather than Firebird calls in the dispatcher, so that
//! the coordination (handing out units, redoing lost ones, stopping on
//! errors and signals, verifying counts) is tested without a database:
//! the dispatcher's tests implement them with made-up rows, the
//! [`crate::firebird`] module with attachments and transactions.

use std::time::Duration;

use arrow_array::RecordBatch;
use fbunload_plan::{Plan, Unit};

use crate::ExecError;

/// The run's hold on the database: its snapshot and how to join it.
pub(crate) trait Session: Sync {
    type Reader: Reader;

    /// `count` readers, each on a connection of its own, all seeing the
    /// run's data (one shared snapshot where the server has them).
    /// Its calls to the database are seen by [`Session::longest_read`].
    fn readers(&self, count: usize) -> Result<Vec<Self::Reader>, ExecError>;

    /// The snapshot the readers share, once they have joined it.
    fn snapshot_number(&self) -> Option<u64> {
        None
    }

    /// The shared snapshot's transaction's marks, once it is taken.
    fn snapshot_marks(&self) -> Option<crate::SnapshotMarks> {
        None
    }

    /// A reader on a new connection, to redo a unit whose reader's
    /// connection was lost; an error if it cannot be sure to see the same
    /// data as the others.
    fn rejoin(&self) -> Result<Self::Reader, ExecError>;

    /// The catalog model of `plan`'s tables at the run's snapshot (what
    /// `schema.sql` and a database destination's DDL are written from).
    fn schema(&self, _plan: &Plan) -> Result<Option<fbunload_plan::schema::Schema>, ExecError> {
        Ok(None)
    }

    /// Fails once the run's snapshot is gone (its holder's connection).
    fn check(&self) -> Result<(), ExecError>;

    /// `COUNT(*)` of table `table` of the plan, at the run's snapshot.
    fn count(&self, table: usize) -> Result<u64, ExecError>;

    /// The run is stopping: make every connection's blocked call (a lock
    /// wait, a long fetch) return now, with an error.
    fn interrupt(&self) {}

    /// What the readers' call that has waited longest for the database
    /// reads, and how long it has waited, if one is under way. Asked from
    /// a thread of its own: a call to the database could block it.
    fn longest_read(&self) -> Option<(String, Duration)> {
        None
    }

    /// Closes every connection of the run, so that calls the database will
    /// never answer fail now. The run cannot go on after it.
    fn abort(&self) {}

    /// The error of a run whose `subject` waited `seconds` (the stall
    /// limit) for an answer; asked before [`Self::abort`].
    fn stalled(&self, subject: String, seconds: u64) -> ExecError {
        ExecError::Stalled { subject, seconds }
    }
}

/// One worker's connection.
pub(crate) trait Reader: Send {
    /// Reads `unit`, handing its batches to `deliver` in order, and
    /// returns its rows. `deliver` returns `false` to stop early (the
    /// run is stopping): the unit is then incomplete and `Ok` is returned.
    /// With `fetch_only`, rows are fetched and counted but not decoded,
    /// and `deliver` is never called.
    fn read(
        &mut self,
        unit: &Unit,
        fetch_only: bool,
        deliver: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<u64, ExecError>;
}
