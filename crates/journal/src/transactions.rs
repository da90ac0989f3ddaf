//! Blocks of interleaved transactions put together, handed out as each
//! transaction ends: in commit order, which is the order of the blocks
//! that end them.
//!
//! A transaction's changes wait here until its end block: a rolled-back
//! transaction's changes are dropped, and so are those of a savepoint
//! rolled back (every statement runs in a savepoint of its own, so a
//! failed statement's changes are undone this way too). Sequences are not
//! transactional in Firebird: a rolled-back transaction still hands out
//! the values it set.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::protocol::{operations, BlobId, Operation};
use crate::{Block, JournalError, Position};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Insert,
    Update,
    Delete,
}

/// One row change, its record images still raw (decode them with the
/// table's [`crate::RecordFormat`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    pub table: String,
    /// The row before (update, delete).
    pub before: Option<Vec<u8>>,
    /// The row after (insert, update).
    pub after: Option<Vec<u8>>,
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    /// Rolled back (or cleaned up after its writer died): its changes are
    /// not handed out, its sequences are.
    RolledBack,
    /// Its first blocks came before where reading started: the caller
    /// knows whether it was applied before.
    BeganBeforeReading,
}

/// A transaction that ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub transaction: u64,
    pub outcome: Outcome,
    pub changes: Vec<Change>,
    pub blobs: HashMap<BlobId, Vec<u8>>,
    /// The values sequences were set to, in order.
    pub sequences: Vec<(String, i64)>,
    /// Statements (DDL) run, as written: (user, charset id, text).
    pub statements: Vec<(String, u8, Vec<u8>)>,
    /// Where its end block ends: the position to record once it is applied.
    pub end: Position,
}

#[derive(Debug, Default)]
struct Open {
    first: Position,
    changes: Vec<Change>,
    /// The number of changes when each open savepoint started.
    savepoints: Vec<usize>,
    blobs: HashMap<BlobId, Vec<u8>>,
    /// Blobs whose last entry ended with its block, not with the blob.
    unfinished_blobs: HashSet<BlobId>,
    sequences: Vec<(String, i64)>,
    statements: Vec<(String, u8, Vec<u8>)>,
    committed: bool,
}

/// The transactions that have begun and not yet ended.
#[derive(Debug, Default)]
pub struct Transactions {
    open: BTreeMap<u64, Open>,
    began_before_reading: HashSet<u64>,
}

impl Transactions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Where the first block of the oldest transaction not yet ended is:
    /// reading again from there finds every block of every transaction
    /// that ends later.
    pub fn oldest_open(&self) -> Option<Position> {
        self.open.values().map(|open| open.first).min()
    }

    /// How many transactions have begun and not ended.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    /// Takes in the next block; returns the transaction it ends, if any.
    pub fn feed(&mut self, block: &Block<'_>) -> Result<Option<Committed>, JournalError> {
        let number = block.transaction;
        let ops = operations(block)?;
        if number == 0 {
            // A cleanup of every transaction that has not ended: their
            // writer is gone and they never commit.
            if ops.contains(&Operation::CleanupTransaction) {
                self.open.clear();
                self.began_before_reading.clear();
            }
            return Ok(None);
        }
        if let std::collections::btree_map::Entry::Vacant(entry) = self.open.entry(number) {
            if block.begins_transaction() {
                entry.insert(Open {
                    first: block.at,
                    ..Open::default()
                });
            } else {
                self.began_before_reading.insert(number);
                if block.ends_transaction() {
                    self.began_before_reading.remove(&number);
                    return Ok(Some(Committed {
                        transaction: number,
                        outcome: Outcome::BeganBeforeReading,
                        changes: Vec::new(),
                        blobs: HashMap::new(),
                        sequences: Vec::new(),
                        statements: Vec::new(),
                        end: block.end,
                    }));
                }
                return Ok(None);
            }
        }
        let open = self.open.get_mut(&number).unwrap();
        for op in ops {
            match op {
                Operation::StartTransaction | Operation::PrepareTransaction => {}
                Operation::CommitTransaction => open.committed = true,
                Operation::RollbackTransaction | Operation::CleanupTransaction => {
                    open.committed = false;
                    open.changes.clear();
                }
                Operation::StartSavepoint => open.savepoints.push(open.changes.len()),
                Operation::ReleaseSavepoint => {
                    open.savepoints.pop();
                }
                Operation::RollbackSavepoint => {
                    let mark = open.savepoints.pop().ok_or_else(|| {
                        JournalError::damaged(
                            format!("transaction {number} block at {}", block.at),
                            "a savepoint rolled back that was never started",
                        )
                    })?;
                    open.changes.truncate(mark);
                }
                Operation::Insert { table, record } => open.changes.push(Change {
                    kind: ChangeKind::Insert,
                    table,
                    before: None,
                    after: Some(record),
                }),
                Operation::Update {
                    table,
                    before,
                    after,
                } => open.changes.push(Change {
                    kind: ChangeKind::Update,
                    table,
                    before: Some(before),
                    after: Some(after),
                }),
                Operation::Delete { table, record } => open.changes.push(Change {
                    kind: ChangeKind::Delete,
                    table,
                    before: Some(record),
                    after: None,
                }),
                Operation::StoreBlob { id, data, complete } => {
                    // The same blob is stored again with each change of
                    // its row: a blob starts anew unless its last entry
                    // was cut by the end of a block.
                    let continued = open.unfinished_blobs.remove(&id);
                    let bytes = open.blobs.entry(id).or_default();
                    if !continued {
                        bytes.clear();
                    }
                    bytes.extend_from_slice(&data);
                    if !complete {
                        open.unfinished_blobs.insert(id);
                    }
                }
                Operation::ExecuteSql { user, charset, sql } => {
                    open.statements.push((user, charset, sql))
                }
                Operation::SetSequence { name, value } => open.sequences.push((name, value)),
            }
        }
        if !block.ends_transaction() {
            return Ok(None);
        }
        let open = self.open.remove(&number).unwrap();
        let outcome = if open.committed {
            Outcome::Committed
        } else {
            Outcome::RolledBack
        };
        let keep = outcome == Outcome::Committed;
        Ok(Some(Committed {
            transaction: number,
            outcome,
            changes: if keep { open.changes } else { Vec::new() },
            blobs: if keep { open.blobs } else { HashMap::new() },
            sequences: open.sequences,
            statements: if keep { open.statements } else { Vec::new() },
            end: block.end,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::{BEGIN_TRANSACTION, END_TRANSACTION};

    fn block(transaction: u64, flags: u16, offset: u64, body: &[u8]) -> Block<'_> {
        Block {
            transaction,
            protocol: crate::protocol::VERSION,
            flags,
            at: Position {
                sequence: 1,
                offset,
            },
            end: Position {
                sequence: 1,
                offset: offset + 1,
            },
            body,
        }
    }

    fn store_blob(body: &mut Vec<u8>, text: &[u8], complete: bool) {
        body.push(12);
        body.extend(7u32.to_le_bytes());
        body.extend(9u32.to_le_bytes());
        body.extend((text.len() as u16).to_le_bytes());
        body.extend(text);
        if complete {
            body.extend(0u16.to_le_bytes());
        }
    }

    #[test]
    fn a_blob_stored_again_starts_anew_and_one_cut_by_its_block_goes_on() {
        let mut first = vec![1];
        store_blob(&mut first, b"ab", false);
        let mut second = Vec::new();
        store_blob(&mut second, b"cd", true);
        // The same blob again, with the row's next change.
        store_blob(&mut second, b"ab", false);
        let mut third = Vec::new();
        store_blob(&mut third, b"cd", true);
        third.push(3);
        let mut transactions = Transactions::new();
        assert!(transactions
            .feed(&block(5, BEGIN_TRANSACTION, 48, &first))
            .unwrap()
            .is_none());
        assert!(transactions
            .feed(&block(5, 0, 60, &second))
            .unwrap()
            .is_none());
        let done = transactions
            .feed(&block(5, END_TRANSACTION, 90, &third))
            .unwrap()
            .unwrap();
        assert_eq!(done.outcome, Outcome::Committed);
        assert_eq!(done.blobs[&BlobId(7, 9)], b"abcd");
    }

    #[test]
    fn blocks_of_interleaved_transactions_end_in_commit_order() {
        let mut transactions = Transactions::new();
        let insert = |table: u8| {
            let mut body = vec![1, 16, 1, table, 9];
            body.extend(0u32.to_le_bytes());
            body.extend(1u32.to_le_bytes());
            body.push(table);
            body
        };
        let (a, b) = (insert(b'A'), insert(b'B'));
        assert!(transactions
            .feed(&block(7, BEGIN_TRANSACTION, 48, &a))
            .unwrap()
            .is_none());
        assert!(transactions
            .feed(&block(8, BEGIN_TRANSACTION, 70, &b))
            .unwrap()
            .is_none());
        assert_eq!(transactions.oldest_open().unwrap().offset, 48);
        let first = transactions
            .feed(&block(8, END_TRANSACTION, 90, &[3]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (first.transaction, first.changes[0].table.as_str()),
            (8, "B")
        );
        // Transaction 7 still open: a restart reads again from its start.
        assert_eq!(transactions.oldest_open().unwrap().offset, 48);
        let rolled = transactions
            .feed(&block(7, END_TRANSACTION, 95, &[4]))
            .unwrap()
            .unwrap();
        assert_eq!(rolled.outcome, Outcome::RolledBack);
        assert!(rolled.changes.is_empty());
        assert_eq!(transactions.open_count(), 0);
        // A block of a transaction begun before reading started.
        let late = transactions
            .feed(&block(6, END_TRANSACTION, 99, &[3]))
            .unwrap()
            .unwrap();
        assert_eq!(late.outcome, Outcome::BeganBeforeReading);
    }
}
