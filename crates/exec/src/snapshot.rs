//! Joining one snapshot from many attachments.
//!
//! `isc_tpb_at_snapshot_number` alone is not enough for identical views:
//! Firebird also treats every transaction below a transaction's "oldest
//! interesting" number as committed, so transactions that join the same
//! snapshot number at different moments can see different data. This
//! module starts them together and checks that they agree.

use fbunload_client::{Attachment, Transaction, TransactionMode};

use crate::ExecError;

/// The shared snapshot, joined by every worker.
pub(crate) struct Joined {
    pub number: u64,
    /// Keeps the snapshot alive for the whole run.
    _holder: Transaction,
    pub workers: Vec<Transaction>,
    /// At the snapshot too, on the main attachment, for `--verify`.
    pub reference: Transaction,
    pub oldest_interesting: u64,
}

/// Attempts at a snapshot whose transactions all agree (see below).
const JOIN_ATTEMPTS: usize = 20;

/// Starts the main transaction and, right after, every worker's
/// transaction at its snapshot number, all from this thread.
///
/// Firebird counts every transaction below a transaction's "oldest
/// interesting" number as committed, whatever its commit number; if that
/// number moves between two starts (a transaction that was running when
/// the snapshot was taken commits in between), the later one sees more.
/// So the starts are checked: all transactions must report the same
/// oldest interesting number, or all are dropped and started again.
pub(crate) fn join_snapshot(
    main: &Attachment,
    workers: &[Attachment],
) -> Result<Joined, ExecError> {
    for _ in 0..JOIN_ATTEMPTS {
        let holder = main
            .start_transaction(TransactionMode::HoldingSnapshot)
            .or_else(|_| main.start_transaction(TransactionMode::ReadOnlySnapshot))
            .map_err(ExecError::Client)?;
        let number = holder.snapshot_number().map_err(ExecError::Client)?;
        let at_snapshot = |att: &Attachment| {
            att.start_transaction(TransactionMode::ReadOnlyAtSnapshot(number))
                .map_err(|e| {
                    ExecError::Server(format!("a worker cannot join snapshot {number}: {e}"))
                })
        };
        let transactions = workers
            .iter()
            .map(at_snapshot)
            .collect::<Result<Vec<_>, _>>()?;
        let reference = at_snapshot(main)?;
        let oldest = reference.oldest_interesting().map_err(ExecError::Client)?;
        let mut agree = true;
        for tr in &transactions {
            agree &= tr.oldest_interesting().map_err(ExecError::Client)? == oldest;
        }
        if agree {
            return Ok(Joined {
                number,
                _holder: holder,
                workers: transactions,
                reference,
                oldest_interesting: oldest,
            });
        }
    }
    Err(ExecError::Server(format!(
        "could not start {} transactions that see the same snapshot in {JOIN_ATTEMPTS} attempts: \
         other transactions keep committing in between. Try again, or with fewer workers",
        workers.len() + 1
    )))
}
