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
