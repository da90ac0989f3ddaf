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
//!
//! Bounded: once the row images and blobs a transaction holds pass the
//! budget ([`Transactions::with_memory_budget`]), its changes go to a
//! temporary file of their own (unlinked, so nothing is left behind),
//! which a savepoint's rollback truncates, and its blobs to another
//! ([`Blobs`]); the ended transaction's changes are then read back one by
//! one ([`Committed::changes`]), and each change's blobs with it
//! ([`Committed::blobs_of`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::blobs::Blobs;
use crate::protocol::{operations, BlobId, Operation};
use crate::{Block, JournalError, Position, RecordFormat};

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
#[derive(Debug)]
pub struct Committed {
    pub transaction: u64,
    pub outcome: Outcome,
    /// Its changes held in memory; with [`Committed::spilled`], those in
    /// its file come first. Read them all with [`Committed::changes`].
    pub changes: Vec<Change>,
    /// Changes that went to a file, in order before `changes`.
    pub spilled: Option<Spill>,
    /// The blobs it stored, by id: read them for a change with
    /// [`Committed::blobs_of`].
    pub blobs: Blobs,
    /// The values sequences were set to, in order.
    pub sequences: Vec<(String, i64)>,
    /// Statements (DDL) run, as written: (user, charset id, text).
    pub statements: Vec<(String, u8, Vec<u8>)>,
    /// Where its end block ends: the position to record once it is applied.
    pub end: Position,
}

impl Committed {
    /// Every change, in order: from its file first, if it spilled.
    pub fn changes(&self) -> impl Iterator<Item = Result<Change, JournalError>> + '_ {
        let spilled: Box<dyn Iterator<Item = Result<Change, JournalError>>> = match &self.spilled {
            Some(spill) => Box::new(spill.read()),
            None => Box::new(std::iter::empty()),
        };
        spilled.chain(self.changes.iter().cloned().map(Ok))
    }

    /// The blobs `change`'s images name, as [`RecordFormat::decode`]
    /// takes them (read back from their file if they went there).
    pub fn blobs_of(
        &self,
        format: &RecordFormat,
        change: &Change,
    ) -> Result<std::borrow::Cow<'_, HashMap<BlobId, Vec<u8>>>, JournalError> {
        self.blobs
            .for_images(format, &[change.before.as_deref(), change.after.as_deref()])
    }

    /// How many changes it holds.
    pub fn change_count(&self) -> usize {
        self.spilled.as_ref().map_or(0, |s| s.offsets.len()) + self.changes.len()
    }
}

/// Changes kept in a temporary file: each a kind byte, the table's name
/// (u16 length), and the before and after images (u32 length, or
/// `u32::MAX` for none).
#[derive(Debug)]
pub struct Spill {
    file: std::fs::File,
    /// Where each change starts.
    offsets: Vec<u64>,
    length: u64,
}

fn spill_error(e: std::io::Error) -> JournalError {
    JournalError::Io(format!(
        "the temporary file of a big transaction's changes: {e}"
    ))
}

impl Spill {
    fn new() -> Result<Spill, JournalError> {
        Ok(Spill {
            file: tempfile::tempfile().map_err(spill_error)?,
            offsets: Vec::new(),
            length: 0,
        })
    }

    fn push(&mut self, change: &Change) -> Result<(), JournalError> {
        use std::io::{Seek, SeekFrom, Write};
        let mut bytes = vec![match change.kind {
            ChangeKind::Insert => 0u8,
            ChangeKind::Update => 1,
            ChangeKind::Delete => 2,
        }];
        bytes.extend((change.table.len() as u16).to_le_bytes());
        bytes.extend(change.table.as_bytes());
        for image in [&change.before, &change.after] {
            match image {
                Some(image) => {
                    bytes.extend((image.len() as u32).to_le_bytes());
                    bytes.extend(image);
                }
                None => bytes.extend(u32::MAX.to_le_bytes()),
            }
        }
        self.file
            .seek(SeekFrom::Start(self.length))
            .map_err(spill_error)?;
        self.file.write_all(&bytes).map_err(spill_error)?;
        self.offsets.push(self.length);
        self.length += bytes.len() as u64;
        Ok(())
    }

    /// Keeps the first `count` changes.
    fn truncate(&mut self, count: usize) -> Result<(), JournalError> {
        if count < self.offsets.len() {
            self.length = self.offsets[count];
            self.offsets.truncate(count);
            self.file.set_len(self.length).map_err(spill_error)?;
        }
        Ok(())
    }

    fn read(&self) -> impl Iterator<Item = Result<Change, JournalError>> + '_ {
        use std::io::{Read, Seek, SeekFrom};
        let mut reader = std::io::BufReader::new(&self.file);
        let mut started = false;
        (0..self.offsets.len()).map(move |_| {
            if !started {
                reader.seek(SeekFrom::Start(0)).map_err(spill_error)?;
                started = true;
            }
            let mut kind = [0u8; 1];
            reader.read_exact(&mut kind).map_err(spill_error)?;
            let mut length = [0u8; 2];
            reader.read_exact(&mut length).map_err(spill_error)?;
            let mut table = vec![0u8; u16::from_le_bytes(length) as usize];
            reader.read_exact(&mut table).map_err(spill_error)?;
            let mut images = [None, None];
            for image in &mut images {
                let mut length = [0u8; 4];
                reader.read_exact(&mut length).map_err(spill_error)?;
                let length = u32::from_le_bytes(length);
                if length != u32::MAX {
                    let mut bytes = vec![0u8; length as usize];
                    reader.read_exact(&mut bytes).map_err(spill_error)?;
                    *image = Some(bytes);
                }
            }
            let [before, after] = images;
            Ok(Change {
                kind: match kind[0] {
                    0 => ChangeKind::Insert,
                    1 => ChangeKind::Update,
                    _ => ChangeKind::Delete,
                },
                table: String::from_utf8_lossy(&table).into_owned(),
                before,
                after,
            })
        })
    }
}

#[derive(Debug, Default)]
struct Open {
    first: Position,
    changes: Vec<Change>,
    /// Its changes' file, once they passed the budget: every change
    /// since goes there.
    spill: Option<Spill>,
    /// Bytes of row images held in `changes`.
    held: usize,
    /// The number of changes when each open savepoint started.
    savepoints: Vec<usize>,
    blobs: Blobs,
    /// Blobs whose last entry ended with its block, not with the blob.
    unfinished_blobs: HashSet<BlobId>,
    sequences: Vec<(String, i64)>,
    statements: Vec<(String, u8, Vec<u8>)>,
    committed: bool,
}

/// The transactions that have begun and not yet ended.
#[derive(Debug)]
pub struct Transactions {
    open: BTreeMap<u64, Open>,
    began_before_reading: HashSet<u64>,
    /// Bytes of row images one transaction may hold in memory.
    memory_budget: usize,
}

impl Default for Transactions {
    fn default() -> Self {
        Transactions {
            open: BTreeMap::new(),
            began_before_reading: HashSet::new(),
            memory_budget: usize::MAX,
        }
    }
}

impl Open {
    fn count(&self) -> usize {
        self.spill.as_ref().map_or(0, |s| s.offsets.len()) + self.changes.len()
    }

    fn push(&mut self, change: Change, budget: usize) -> Result<(), JournalError> {
        if let Some(spill) = &mut self.spill {
            return spill.push(&change);
        }
        self.held += change.table.len()
            + change.before.as_ref().map_or(0, Vec::len)
            + change.after.as_ref().map_or(0, Vec::len);
        self.changes.push(change);
        self.bound(budget)
    }

    /// Past the budget, row images and blobs alike: both go on in files.
    fn bound(&mut self, budget: usize) -> Result<(), JournalError> {
        if self.held + self.blobs.held() <= budget {
            return Ok(());
        }
        if self.spill.is_none() {
            let mut spill = Spill::new()?;
            for change in self.changes.drain(..) {
                spill.push(&change)?;
            }
            self.held = 0;
            self.spill = Some(spill);
        }
        self.blobs.spill()
    }

    /// Keeps the first `count` changes (a savepoint rolled back).
    fn truncate(&mut self, count: usize) -> Result<(), JournalError> {
        match &mut self.spill {
            Some(spill) => spill.truncate(count),
            None => {
                self.changes.truncate(count);
                Ok(())
            }
        }
    }
}

impl Transactions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Transactions whose row images pass `bytes` go on in a file.
    pub fn with_memory_budget(bytes: usize) -> Self {
        Transactions {
            memory_budget: bytes,
            ..Self::default()
        }
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
                        spilled: None,
                        blobs: Blobs::default(),
                        sequences: Vec::new(),
                        statements: Vec::new(),
                        end: block.end,
                    }));
                }
                return Ok(None);
            }
        }
        let budget = self.memory_budget;
        let open = self.open.get_mut(&number).unwrap();
        for op in ops {
            match op {
                Operation::StartTransaction | Operation::PrepareTransaction => {}
                Operation::CommitTransaction => open.committed = true,
                Operation::RollbackTransaction | Operation::CleanupTransaction => {
                    open.committed = false;
                    open.truncate(0)?;
                }
                Operation::StartSavepoint => open.savepoints.push(open.count()),
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
                    open.truncate(mark)?;
                }
                Operation::Insert { table, record } => open.push(
                    Change {
                        kind: ChangeKind::Insert,
                        table,
                        before: None,
                        after: Some(record),
                    },
                    budget,
                )?,
                Operation::Update {
                    table,
                    before,
                    after,
                } => open.push(
                    Change {
                        kind: ChangeKind::Update,
                        table,
                        before: Some(before),
                        after: Some(after),
                    },
                    budget,
                )?,
                Operation::Delete { table, record } => open.push(
                    Change {
                        kind: ChangeKind::Delete,
                        table,
                        before: Some(record),
                        after: None,
                    },
                    budget,
                )?,
                Operation::StoreBlob { id, data, complete } => {
                    // The same blob is stored again with each change of
                    // its row: a blob starts anew unless its last entry
                    // was cut by the end of a block.
                    let continued = open.unfinished_blobs.remove(&id);
                    open.blobs.store(id, &data, continued)?;
                    if !complete {
                        open.unfinished_blobs.insert(id);
                    }
                    open.bound(budget)?;
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
            spilled: if keep { open.spill } else { None },
            blobs: if keep { open.blobs } else { Blobs::default() },
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
        assert_eq!(
            done.blobs.get(BlobId(7, 9)).unwrap().unwrap().as_ref(),
            b"abcd"
        );
    }

    #[test]
    fn blobs_past_the_budget_go_on_in_a_file_and_read_back_whole() {
        let mut body = vec![1];
        let big = vec![b'x'; 1000];
        store_blob(&mut body, &big, true);
        body.push(3);
        let ended = |budget: usize| {
            Transactions::with_memory_budget(budget)
                .feed(&block(5, BEGIN_TRANSACTION | END_TRANSACTION, 48, &body))
                .unwrap()
                .unwrap()
        };
        let (kept, spilled) = (ended(usize::MAX), ended(100));
        assert!(!kept.blobs.spilled());
        assert!(spilled.blobs.spilled());
        for done in [kept, spilled] {
            assert_eq!(
                done.blobs.get(BlobId(7, 9)).unwrap().unwrap().as_ref(),
                &big[..]
            );
        }
    }

    #[test]
    fn a_transaction_past_its_budget_goes_on_in_a_file_and_savepoints_still_undo() {
        let insert = |body: &mut Vec<u8>, value: u8| {
            body.push(9);
            body.extend(0u32.to_le_bytes());
            body.extend(3u32.to_le_bytes());
            body.extend([value; 3]);
        };
        // 50 inserts, a savepoint whose 30 inserts are undone, 20 more.
        let mut body = vec![1, 16, 1, b'T'];
        (0..50).for_each(|i| insert(&mut body, i));
        body.push(6);
        (50..80).for_each(|i| insert(&mut body, i));
        body.push(8);
        (80..100).for_each(|i| insert(&mut body, i));
        body.push(3);
        let ended = |budget: usize| {
            Transactions::with_memory_budget(budget)
                .feed(&block(5, BEGIN_TRANSACTION | END_TRANSACTION, 48, &body))
                .unwrap()
                .unwrap()
        };
        let in_memory = ended(usize::MAX);
        let spilled = ended(40);
        assert!(in_memory.spilled.is_none());
        assert!(spilled.spilled.is_some() && spilled.changes.is_empty());
        let values = |t: &Committed| -> Vec<u8> {
            t.changes().map(|c| c.unwrap().after.unwrap()[0]).collect()
        };
        let expected: Vec<u8> = (0..50).chain(80..100).collect();
        assert_eq!(values(&in_memory), expected);
        assert_eq!(values(&spilled), expected);
        assert_eq!(spilled.change_count(), 70);
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
