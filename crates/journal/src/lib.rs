//! Firebird's replication journal, read: the segments a database with
//! `ENABLE PUBLICATION` writes into its `journal_directory` (and archives
//! into `journal_archive_directory`), turned into typed change events.
//!
//! The layers follow the journal's own: a [`segment`] is a file with a
//! header (signature, version, state, the database's GUID, a sequence
//! number) and blocks; a [`protocol`] block belongs to one transaction and
//! holds operations; [`transactions`] puts the blocks of interleaved
//! transactions together and hands out the committed ones in commit order,
//! with rolled-back work and undone savepoints left out; [`record`] decodes
//! a record image through the table's `RDB$FORMATS` descriptor.
//!
//! Nothing here talks to a database or a destination: the follow command
//! (crates/follow) reads formats from Firebird and applies the events, so
//! this crate can be tested on segments alone and reused by other sinks.
//! Every layout is version-checked: a segment or block of a version this
//! reader does not know is refused, naming it, never guessed at.

pub mod blobs;
pub mod protocol;
pub mod record;
pub mod segment;
pub mod transactions;

pub use blobs::Blobs;
pub use protocol::{BlobId, Operation};
pub use record::{RecordFormat, Value};
pub use segment::{Block, Journal, Position, Segment, SegmentHeader, SegmentState};
pub use transactions::{Change, ChangeKind, Committed, Transactions};

/// What reading a journal can fail with; each message names the file or
/// the part of the journal and what to do.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{0}")]
    Io(String),
    #[error("{file}: not a Firebird replication journal segment (no FBCHANGELOG signature)")]
    NotASegment { file: String },
    #[error(
        "{file}: journal segment version {version} is not one this fbunload reads (it reads \
         version {}); use an fbunload that knows it",
        segment::VERSION
    )]
    SegmentVersion { file: String, version: u16 },
    #[error(
        "{file}: block at offset {offset} has replication protocol version {version}, not one \
         this fbunload reads (it reads version {}); use an fbunload that knows it",
        protocol::VERSION
    )]
    ProtocolVersion {
        file: String,
        offset: u64,
        version: u16,
    },
    #[error("{what}: the journal is damaged ({detail})")]
    Damaged { what: String, detail: String },
}

impl JournalError {
    pub(crate) fn damaged(what: impl Into<String>, detail: impl Into<String>) -> Self {
        JournalError::Damaged {
            what: what.into(),
            detail: detail.into(),
        }
    }
}
