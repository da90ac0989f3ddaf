//! Cancelling: `AdbcStatementCancel` stops its statement's read,
//! `AdbcConnectionCancel` every read of the connection, its statements'
//! and its metadata calls' alike, from any thread.
//!
//! Each read has a flag that stops it: a run's own (its workers look at
//! it between batches), a partition's reader's, or one a metadata result
//! is wrapped with ([`Cancellable`]). The connection keeps the flags of
//! its reads for as long as the reads live; cancelling sets them all. A
//! read stopped so ends its stream with an error of status Cancelled
//! (`ECANCELED` through the C stream, see `crate::ffi`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use adbc_core::error::{Error, Result, Status};
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

use crate::ffi::stream_error;

/// The reads of one connection that a cancel stops.
#[derive(Clone, Default)]
pub(crate) struct Operations(Arc<Mutex<Vec<Weak<AtomicBool>>>>);

impl Operations {
    /// A new read's flag, kept for a cancel of the connection.
    pub fn start(&self) -> Arc<AtomicBool> {
        let flag = Arc::new(AtomicBool::new(false));
        self.add(&flag);
        flag
    }

    /// Keeps `flag` (a run's own) for a cancel of the connection.
    pub fn add(&self, flag: &Arc<AtomicBool>) {
        let mut flags = self.0.lock().unwrap();
        flags.retain(|f| f.strong_count() > 0);
        flags.push(Arc::downgrade(flag));
    }

    /// Stops every read of the connection that still lives.
    pub fn cancel(&self) {
        for flag in self.0.lock().unwrap().iter().filter_map(Weak::upgrade) {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

/// `AdbcConnectionCancel`'s handle.
pub(crate) struct ConnectionCanceller(pub Operations);

impl adbc_core::CancelHandle for ConnectionCanceller {
    fn try_cancel(&self) -> Result<()> {
        self.0.cancel();
        Ok(())
    }
}

/// The error a cancelled read ends with.
pub(crate) fn cancelled() -> Error {
    Error::with_message_and_status(
        "the read was cancelled (AdbcStatementCancel or AdbcConnectionCancel)",
        Status::Cancelled,
    )
}

/// A result that ends with [`cancelled`] at its next batch once its flag
/// is set: a metadata call's, already in memory.
pub(crate) struct Cancellable {
    pub inner: Box<dyn RecordBatchReader + Send>,
    pub flag: Arc<AtomicBool>,
}

impl Iterator for Cancellable {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.flag.swap(false, Ordering::SeqCst) {
            // Once: the stream ends after the error.
            self.inner = Box::new(arrow_array::RecordBatchIterator::new(
                [],
                self.inner.schema(),
            ));
            return Some(Err(stream_error(cancelled())));
        }
        self.inner.next()
    }
}

impl RecordBatchReader for Cancellable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }
}
