//! Journal segments: the files Firebird's replication writes, each a
//! header and then blocks, and the directories that hold them.
//!
//! A segment is named `<database file name>.journal-<sequence, 9 digits>`.
//! The engine writes into segments in `journal_directory`, copies each
//! full one into `journal_archive_directory`, and then reuses the file for
//! a later sequence; so a sequence is looked for in the archive first and
//! in the live directory second, and a live segment is read only as far as
//! its header says is written.

use std::path::{Path, PathBuf};

use crate::JournalError;

/// The segment layout this reader knows (ChangeLog's `CHANGELOG_VERSION_1`).
pub const VERSION: u16 = 1;
pub const SIGNATURE: &[u8; 12] = b"FBCHANGELOG\0";
/// Signature, version, state, GUID, sequence, length.
pub const HEADER_LENGTH: usize = 12 + 2 + 2 + 16 + 8 + 8;
/// Transaction number, protocol, flags, length.
pub const BLOCK_HEADER_LENGTH: usize = 16;
/// A block's flag: the first block of its transaction.
pub const BEGIN_TRANSACTION: u16 = 0x0001;
/// A block's flag: the last block of its transaction.
pub const END_TRANSACTION: u16 = 0x0002;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentState {
    /// Not in use: the engine may reuse the file for a later sequence.
    Free,
    /// Being written.
    Used,
    /// Written, waiting to be archived.
    Full,
    /// Archived.
    Archived,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentHeader {
    pub version: u16,
    pub state: SegmentState,
    /// The GUID of the database that wrote the segment, as the engine
    /// stores it.
    pub guid: [u8; 16],
    pub sequence: u64,
    /// Bytes written, header included.
    pub length: u64,
}

impl SegmentHeader {
    /// Reads a header; `file` names the segment in errors.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<SegmentHeader, JournalError> {
        if bytes.len() < HEADER_LENGTH || &bytes[..12] != SIGNATURE {
            return Err(JournalError::NotASegment { file: file.into() });
        }
        let version = u16_at(bytes, 12);
        if version != VERSION {
            return Err(JournalError::SegmentVersion {
                file: file.into(),
                version,
            });
        }
        let state = match u16_at(bytes, 14) {
            0 => SegmentState::Free,
            1 => SegmentState::Used,
            2 => SegmentState::Full,
            3 => SegmentState::Archived,
            other => {
                return Err(JournalError::damaged(
                    file,
                    format!("segment state {other}"),
                ));
            }
        };
        Ok(SegmentHeader {
            version,
            state,
            guid: bytes[16..32].try_into().unwrap(),
            sequence: u64_at(bytes, 32),
            length: u64_at(bytes, 40),
        })
    }

    /// The GUID as Firebird prints it (`RDB$GET_CONTEXT('SYSTEM',
    /// 'DB_GUID')`): `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`, its first
    /// three fields stored little-endian.
    pub fn guid_text(&self) -> String {
        let g = &self.guid;
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02X}")).collect::<String>();
        let mut first: Vec<u8> = g[0..4].to_vec();
        first.reverse();
        let mut second: Vec<u8> = g[4..6].to_vec();
        second.reverse();
        let mut third: Vec<u8> = g[6..8].to_vec();
        third.reverse();
        format!(
            "{{{}-{}-{}-{}-{}}}",
            hex(&first),
            hex(&second),
            hex(&third),
            hex(&g[8..10]),
            hex(&g[10..16])
        )
    }
}

/// Where in the journal: a segment's sequence and a byte offset in it.
/// Positions order as the journal does (commit order for the ends of
/// transactions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    pub sequence: u64,
    pub offset: u64,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.sequence, self.offset)
    }
}

/// One block: a piece of one transaction's operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block<'s> {
    pub transaction: u64,
    pub protocol: u16,
    pub flags: u16,
    /// Where the block starts.
    pub at: Position,
    /// Where the next block starts.
    pub end: Position,
    pub body: &'s [u8],
}

impl Block<'_> {
    pub fn begins_transaction(&self) -> bool {
        self.flags & BEGIN_TRANSACTION != 0
    }
    pub fn ends_transaction(&self) -> bool {
        self.flags & END_TRANSACTION != 0
    }
}

/// A segment read from disk, as far as it is written.
#[derive(Debug, Clone)]
pub struct Segment {
    pub path: PathBuf,
    pub header: SegmentHeader,
    bytes: Vec<u8>,
    /// Whether the file holds every byte its header counts: the engine
    /// archives a segment by copying it in place, so a copy being made
    /// is shorter, and is read only as far as it is whole.
    pub complete: bool,
}

impl Segment {
    pub fn read(path: &Path) -> Result<Segment, JournalError> {
        let bytes = std::fs::read(path)
            .map_err(|e| JournalError::Io(format!("{}: {e}", path.display())))?;
        Segment::from_bytes(path.to_path_buf(), bytes)
    }

    pub fn from_bytes(path: PathBuf, mut bytes: Vec<u8>) -> Result<Segment, JournalError> {
        let header = SegmentHeader::parse(&path.display().to_string(), &bytes)?;
        // A live segment may be longer on disk than written (preallocated)
        // or written further than the header read says: only what the
        // header counts is the journal.
        let written = usize::try_from(header.length).unwrap_or(usize::MAX);
        let complete = bytes.len() >= written;
        bytes.truncate(written.max(HEADER_LENGTH));
        Ok(Segment {
            path,
            header,
            bytes,
            complete,
        })
    }

    /// Bytes of the segment, header included, that hold blocks.
    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.len() <= HEADER_LENGTH
    }

    /// The blocks that start at or after `from` (an offset a block starts
    /// at, or 0 for the first). A block cut short at the end is not
    /// returned: it is still being written.
    pub fn blocks_from(&self, from: u64) -> Result<Vec<Block<'_>>, JournalError> {
        let mut offset = (from as usize).max(HEADER_LENGTH);
        let mut blocks = Vec::new();
        while offset + BLOCK_HEADER_LENGTH <= self.bytes.len() {
            let head = &self.bytes[offset..offset + BLOCK_HEADER_LENGTH];
            let length = u32_at(head, 12) as usize;
            let body_start = offset + BLOCK_HEADER_LENGTH;
            if body_start + length > self.bytes.len() {
                if self.header.state == SegmentState::Used || !self.complete {
                    break;
                }
                return Err(JournalError::damaged(
                    self.path.display().to_string(),
                    format!("the block at offset {offset} runs past the segment's end"),
                ));
            }
            let protocol = u16_at(head, 8);
            if protocol != crate::protocol::VERSION {
                return Err(JournalError::ProtocolVersion {
                    file: self.path.display().to_string(),
                    offset: offset as u64,
                    version: protocol,
                });
            }
            let sequence = self.header.sequence;
            blocks.push(Block {
                transaction: u64_at(head, 0),
                protocol,
                flags: u16_at(head, 10),
                at: Position {
                    sequence,
                    offset: offset as u64,
                },
                end: Position {
                    sequence,
                    offset: (body_start + length) as u64,
                },
                body: &self.bytes[body_start..body_start + length],
            });
            offset = body_start + length;
        }
        Ok(blocks)
    }
}

/// The journal of one database: its archive directory and, optionally,
/// the live journal directory.
#[derive(Debug, Clone)]
pub struct Journal {
    pub archive: PathBuf,
    pub live: Option<PathBuf>,
    /// The database's file name, which starts every segment's name.
    pub database_file: String,
}

impl Journal {
    /// A journal in `archive` (and `live`) for the database at `database`.
    /// A missing directory is refused, naming it and the setting.
    pub fn open(
        archive: &Path,
        live: Option<&Path>,
        database: &Path,
    ) -> Result<Journal, JournalError> {
        for (dir, setting) in [
            (Some(archive), "journal_archive_directory"),
            (live, "journal_directory"),
        ] {
            if let Some(dir) = dir {
                if !dir.is_dir() {
                    return Err(JournalError::Io(format!(
                        "journal directory {} does not exist; give the directory replication.conf \
                         names as {setting} for this database (docs/postgresql.md, \"Live\")",
                        dir.display()
                    )));
                }
            }
        }
        let database_file = database
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Journal {
            archive: archive.to_path_buf(),
            live: live.map(Path::to_path_buf),
            database_file,
        })
    }

    fn name_of(&self, sequence: u64) -> String {
        format!("{}.journal-{sequence:09}", self.database_file)
    }

    /// The segment of `sequence`, from the archive or else the live
    /// directory, a whole copy before one being copied; `None` while no
    /// file holds it yet. [`Journal::is_being_written`] tells a file
    /// being created from none.
    pub fn segment(&self, sequence: u64) -> Result<Option<Segment>, JournalError> {
        let name = self.name_of(sequence);
        let mut partial = None;
        for dir in std::iter::once(&self.archive).chain(self.live.as_ref()) {
            let path = dir.join(&name);
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(JournalError::Io(format!("{}: {e}", path.display()))),
            };
            if bytes.len() < HEADER_LENGTH {
                // Being created (a copy into the archive starts empty).
                continue;
            }
            let segment = Segment::from_bytes(path, bytes)?;
            // A live file being recycled may still carry an older header.
            if segment.header.sequence != sequence || segment.header.state == SegmentState::Free {
                continue;
            }
            if segment.complete {
                return Ok(Some(segment));
            }
            partial.get_or_insert(segment);
        }
        Ok(partial)
    }

    /// Whether a file of `sequence` exists at all, whole or not.
    pub fn is_being_written(&self, sequence: u64) -> bool {
        let name = self.name_of(sequence);
        std::iter::once(&self.archive)
            .chain(self.live.as_ref())
            .any(|dir| dir.join(&name).exists())
    }

    /// The sequences of the segments on disk, lowest first.
    pub fn sequences(&self) -> Result<Vec<u64>, JournalError> {
        let prefix = format!("{}.journal-", self.database_file);
        let mut found = Vec::new();
        for dir in std::iter::once(&self.archive).chain(self.live.as_ref()) {
            let entries = std::fs::read_dir(dir)
                .map_err(|e| JournalError::Io(format!("{}: {e}", dir.display())))?;
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(number) = name.strip_prefix(&prefix) {
                    if number.len() == 9 && number.bytes().all(|b| b.is_ascii_digit()) {
                        found.push(number.parse::<u64>().unwrap());
                    }
                }
            }
        }
        found.sort_unstable();
        found.dedup();
        Ok(found)
    }
}

pub(crate) fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap())
}

pub(crate) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

pub(crate) fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(version: u16, state: u16, sequence: u64, length: u64) -> Vec<u8> {
        let mut bytes = SIGNATURE.to_vec();
        bytes.extend(version.to_le_bytes());
        bytes.extend(state.to_le_bytes());
        bytes.extend((0u8..16).collect::<Vec<_>>());
        bytes.extend(sequence.to_le_bytes());
        bytes.extend(length.to_le_bytes());
        bytes
    }

    #[test]
    fn an_unknown_segment_version_is_refused_naming_it() {
        let err = SegmentHeader::parse("db.journal-000000001", &header(2, 3, 1, 48)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "db.journal-000000001: journal segment version 2 is not one this fbunload reads (it \
             reads version 1); use an fbunload that knows it"
        );
    }

    #[test]
    fn a_file_without_the_signature_is_not_a_segment() {
        let mut bytes = header(1, 3, 1, 48);
        bytes[0] = b'X';
        assert!(matches!(
            SegmentHeader::parse("x", &bytes),
            Err(JournalError::NotASegment { .. })
        ));
        assert!(matches!(
            SegmentHeader::parse("x", b"FBCHANGELOG"),
            Err(JournalError::NotASegment { .. })
        ));
    }

    #[test]
    fn the_guid_prints_as_firebird_prints_it() {
        let parsed = SegmentHeader::parse("x", &header(1, 3, 7, 48)).unwrap();
        assert_eq!(parsed.sequence, 7);
        assert_eq!(parsed.state, SegmentState::Archived);
        assert_eq!(parsed.guid_text(), "{03020100-0504-0706-0809-0A0B0C0D0E0F}");
    }

    #[test]
    fn a_block_cut_short_is_damage_in_a_full_segment_and_unwritten_in_a_used_one() {
        for (state, complete) in [(1u16, true), (3, false)] {
            let mut bytes = header(1, state, 1, 0);
            bytes.extend(9u64.to_le_bytes());
            bytes.extend(1u16.to_le_bytes());
            bytes.extend(3u16.to_le_bytes());
            bytes.extend(10u32.to_le_bytes());
            bytes.extend([1, 3]);
            let length = bytes.len() as u64;
            bytes[40..48].copy_from_slice(&length.to_le_bytes());
            let segment = Segment::from_bytes("s".into(), bytes).unwrap();
            assert_eq!(
                segment.blocks_from(0).map(|b| b.len()).ok(),
                complete.then_some(0)
            );
        }
    }

    #[test]
    fn an_archive_copy_being_made_is_read_as_far_as_it_is_whole() {
        let mut bytes = header(1, 2, 1, 0);
        let block = |bytes: &mut Vec<u8>| {
            bytes.extend(9u64.to_le_bytes());
            bytes.extend(1u16.to_le_bytes());
            bytes.extend(3u16.to_le_bytes());
            bytes.extend(2u32.to_le_bytes());
            bytes.extend([1, 3]);
        };
        block(&mut bytes);
        block(&mut bytes);
        let length = bytes.len() as u64;
        bytes[40..48].copy_from_slice(&length.to_le_bytes());
        for cut in [length as usize, length as usize - 5] {
            let segment = Segment::from_bytes("s".into(), bytes[..cut].to_vec()).unwrap();
            assert_eq!(segment.complete, cut == length as usize);
            let expected = if segment.complete { 2 } else { 1 };
            assert_eq!(segment.blocks_from(0).unwrap().len(), expected);
        }
    }
}
