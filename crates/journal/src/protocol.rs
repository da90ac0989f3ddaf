//! The operations inside a block (Firebird's replication protocol,
//! version 1): one tag byte each, then its arguments, little-endian.
//!
//! Names (tables, sequences, users) are *atoms*: a block defines each
//! name once (`define atom`) and later operations refer to it by its
//! index; atoms belong to their block, so they are resolved here and an
//! [`Operation`] carries the name itself.

use crate::segment::{u16_at, u32_at, u64_at};
use crate::{Block, JournalError};

/// The protocol version this reader knows.
pub const VERSION: u16 = 1;

/// A blob's id as the record image carries it (high, low).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobId(pub u32, pub u32);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    StartTransaction,
    PrepareTransaction,
    CommitTransaction,
    RollbackTransaction,
    /// The transaction ended without committing (a cleanup after the
    /// writer died); in a block of transaction 0: every transaction that
    /// has not ended.
    CleanupTransaction,
    StartSavepoint,
    ReleaseSavepoint,
    RollbackSavepoint,
    Insert {
        table: String,
        record: Vec<u8>,
    },
    Update {
        table: String,
        before: Vec<u8>,
        after: Vec<u8>,
    },
    Delete {
        table: String,
        record: Vec<u8>,
    },
    /// Some of a blob's bytes; `complete` once the blob's last bytes are
    /// in (a blob longer than a block continues in the next one).
    StoreBlob {
        id: BlobId,
        data: Vec<u8>,
        complete: bool,
    },
    /// A statement (DDL) the writer ran; `charset` is Firebird's id of
    /// the statement's character set.
    ExecuteSql {
        user: String,
        charset: u8,
        sql: Vec<u8>,
    },
    SetSequence {
        name: String,
        value: i64,
    },
}

/// UTF8's character set id: what a statement without one is in.
const CS_UTF8: u8 = 4;

/// The operations of `block`, in order.
pub fn operations(block: &Block<'_>) -> Result<Vec<Operation>, JournalError> {
    let mut reader = Reader {
        bytes: block.body,
        at: 0,
        block,
    };
    let mut atoms: Vec<String> = Vec::new();
    let mut ops = Vec::new();
    while !reader.is_empty() {
        let tag = reader.byte()?;
        let op = match tag {
            1 => Operation::StartTransaction,
            2 => Operation::PrepareTransaction,
            3 => Operation::CommitTransaction,
            4 => Operation::RollbackTransaction,
            5 => Operation::CleanupTransaction,
            6 => Operation::StartSavepoint,
            7 => Operation::ReleaseSavepoint,
            8 => Operation::RollbackSavepoint,
            9 => Operation::Insert {
                table: reader.atom(&atoms)?,
                record: reader.counted()?,
            },
            10 => Operation::Update {
                table: reader.atom(&atoms)?,
                before: reader.counted()?,
                after: reader.counted()?,
            },
            11 => Operation::Delete {
                table: reader.atom(&atoms)?,
                record: reader.counted()?,
            },
            12 => {
                let id = BlobId(reader.u32()?, reader.u32()?);
                let mut data = Vec::new();
                let mut complete = false;
                while !reader.is_empty() {
                    let length = reader.u16()? as usize;
                    if length == 0 {
                        complete = true;
                        break;
                    }
                    data.extend_from_slice(reader.take(length)?);
                }
                Operation::StoreBlob { id, data, complete }
            }
            13 | 15 => {
                let user = reader.atom(&atoms)?;
                let charset = if tag == 15 { reader.byte()? } else { CS_UTF8 };
                Operation::ExecuteSql {
                    user,
                    charset,
                    sql: reader.counted()?,
                }
            }
            14 => Operation::SetSequence {
                name: reader.atom(&atoms)?,
                value: reader.u64()? as i64,
            },
            16 => {
                let length = reader.byte()? as usize;
                let name = reader.take(length)?;
                atoms.push(String::from_utf8_lossy(name).into_owned());
                continue;
            }
            other => {
                return Err(reader.damaged(format!("unknown operation {other}")));
            }
        };
        ops.push(op);
    }
    Ok(ops)
}

struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
    block: &'b Block<'b>,
}

impl<'b> Reader<'b> {
    fn is_empty(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn damaged(&self, detail: String) -> JournalError {
        JournalError::damaged(
            format!(
                "transaction {} block at {}",
                self.block.transaction, self.block.at
            ),
            detail,
        )
    }

    fn take(&mut self, length: usize) -> Result<&'b [u8], JournalError> {
        if self.bytes.len() - self.at < length {
            return Err(self.damaged(format!(
                "{length} bytes wanted at {} of a {}-byte block",
                self.at,
                self.bytes.len()
            )));
        }
        let taken = &self.bytes[self.at..self.at + length];
        self.at += length;
        Ok(taken)
    }

    fn byte(&mut self) -> Result<u8, JournalError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, JournalError> {
        Ok(u16_at(self.take(2)?, 0))
    }
    fn u32(&mut self) -> Result<u32, JournalError> {
        Ok(u32_at(self.take(4)?, 0))
    }
    fn u64(&mut self) -> Result<u64, JournalError> {
        Ok(u64_at(self.take(8)?, 0))
    }

    fn counted(&mut self) -> Result<Vec<u8>, JournalError> {
        let length = self.u32()? as usize;
        Ok(self.take(length)?.to_vec())
    }

    fn atom(&mut self, atoms: &[String]) -> Result<String, JournalError> {
        let index = self.u32()? as usize;
        atoms
            .get(index)
            .cloned()
            .ok_or_else(|| self.damaged(format!("name {index} used before it is defined")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Position;

    fn block(body: &[u8]) -> Block<'_> {
        Block {
            transaction: 5,
            protocol: VERSION,
            flags: 0,
            at: Position::default(),
            end: Position::default(),
            body,
        }
    }

    #[test]
    fn atoms_name_tables_and_sequences() {
        let mut body = vec![1, 16, 1, b'T', 9];
        body.extend(0u32.to_le_bytes());
        body.extend(2u32.to_le_bytes());
        body.extend([7, 8]);
        body.extend([16, 1, b'G', 14]);
        body.extend(1u32.to_le_bytes());
        body.extend((-3i64).to_le_bytes());
        body.push(3);
        assert_eq!(
            operations(&block(&body)).unwrap(),
            vec![
                Operation::StartTransaction,
                Operation::Insert {
                    table: "T".into(),
                    record: vec![7, 8]
                },
                Operation::SetSequence {
                    name: "G".into(),
                    value: -3
                },
                Operation::CommitTransaction,
            ]
        );
    }

    #[test]
    fn damage_is_refused_not_guessed_at() {
        let mut body = vec![9];
        body.extend(0u32.to_le_bytes());
        assert!(operations(&block(&body))
            .unwrap_err()
            .to_string()
            .contains("name 0 used before it is defined"));
        let mut body = vec![16, 1, b'T', 9];
        body.extend(0u32.to_le_bytes());
        body.extend(100u32.to_le_bytes());
        assert!(operations(&block(&body))
            .unwrap_err()
            .to_string()
            .contains("100 bytes wanted"));
        assert!(operations(&block(&[99]))
            .unwrap_err()
            .to_string()
            .contains("unknown operation 99"));
    }
}
