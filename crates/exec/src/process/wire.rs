//! What a run and its reader processes say to each other over the
//! child's standard input and output: length-prefixed frames, each a tag,
//! the worker slot it concerns, and a payload (JSON for the few control
//! messages, Arrow IPC for schemas and batches).

use std::io::{self, Read, Write};

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, Schema, SchemaRef};
use fbunload_plan::{Plan, Unit};
use serde::{Deserialize, Serialize};

/// Refuses a reader process of another build (a `python` whose
/// `fbunload` is another version, say) before it reads anything.
pub(crate) const PROTOCOL: &str = concat!("fbunload-reader/1 ", env!("CARGO_PKG_VERSION"));

/// Frames above this are refused as corrupt, not allocated.
const MAX_FRAME: usize = 1 << 31;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Tag {
    // Run → reader process.
    /// JSON [`Setup`], then one [`Tag::Schema`] per table of its plan.
    Setup = 1,
    Schema = 2,
    /// Start every slot's transaction at this snapshot number (u64).
    Join = 3,
    /// JSON [`ReadUnit`] for a slot.
    Read = 4,
    /// The run took one batch of the slot: it may send one more.
    Ack = 5,
    // Reader process → run.
    /// Every slot is attached.
    Attached = 10,
    /// JSON `Vec<u64>`: each slot's oldest interesting transaction.
    Joined = 11,
    /// A slot's batch, as an Arrow IPC stream.
    Batch = 12,
    /// A slot's unit is complete: its rows (u64).
    Done = 13,
    /// JSON [`Failure`]; slot `u32::MAX` for the process as a whole.
    Failed = 14,
}

impl Tag {
    fn from_u8(byte: u8) -> Option<Tag> {
        Some(match byte {
            1 => Tag::Setup,
            2 => Tag::Schema,
            3 => Tag::Join,
            4 => Tag::Read,
            5 => Tag::Ack,
            10 => Tag::Attached,
            11 => Tag::Joined,
            12 => Tag::Batch,
            13 => Tag::Done,
            14 => Tag::Failed,
            _ => return None,
        })
    }
}

/// The slot of a message about the whole process.
pub(crate) const WHOLE: u32 = u32::MAX;

pub(crate) struct Frame {
    pub tag: Tag,
    pub slot: u32,
    pub payload: Vec<u8>,
}

pub(crate) fn write_frame(
    out: &mut impl Write,
    tag: Tag,
    slot: u32,
    payload: &[u8],
) -> io::Result<()> {
    let len = u32::try_from(payload.len() + 5)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too big"))?;
    let mut head = [0u8; 9];
    head[..4].copy_from_slice(&len.to_le_bytes());
    head[4] = tag as u8;
    head[5..].copy_from_slice(&slot.to_le_bytes());
    out.write_all(&head)?;
    out.write_all(payload)?;
    out.flush()
}

/// The next frame; `None` at the end of the stream.
pub(crate) fn read_frame(input: &mut impl Read) -> io::Result<Option<Frame>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if !(5..=MAX_FRAME).contains(&len) {
        return Err(corrupt("a frame of impossible length"));
    }
    let mut head = [0u8; 5];
    input.read_exact(&mut head)?;
    let tag = Tag::from_u8(head[0]).ok_or_else(|| corrupt("an unknown message"))?;
    let slot = u32::from_le_bytes(head[1..].try_into().expect("4 bytes"));
    let mut payload = vec![0u8; len - 5];
    input.read_exact(&mut payload)?;
    Ok(Some(Frame { tag, slot, payload }))
}

pub(crate) fn corrupt(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("reader process protocol: {what}"),
    )
}

/// What a reader process needs to attach and read units like a worker
/// thread of the run: the password travels here, over the pipe, never on
/// its command line or in its environment.
#[derive(Serialize, Deserialize)]
pub(crate) struct Setup {
    pub protocol: String,
    /// The client library the run loaded, when it was loaded from a path.
    pub client_library: Option<std::path::PathBuf>,
    pub database: String,
    pub user: Option<String>,
    pub password: Option<String>,
    pub role: Option<String>,
    pub wire_compression: bool,
    /// `Disabled`, `Enabled` or `Required`.
    pub wire_crypt: Option<String>,
    /// Attachments (worker slots) it opens.
    pub slots: usize,
    pub plan: Plan,
    /// [`fbunload_decode::TypeOptions`]: its NONE text's character set.
    pub none_text: String,
    pub decimal256: bool,
    pub batch_rows: usize,
    pub batch_bytes: usize,
    /// Batches a slot may send ahead of the run's taking them.
    pub credit: usize,
}

/// A unit for a slot to read.
#[derive(Serialize, Deserialize)]
pub(crate) struct ReadUnit {
    pub unit: Unit,
    pub fetch_only: bool,
}

/// Why a slot's unit, or the whole process, failed.
#[derive(Serialize, Deserialize)]
pub(crate) struct Failure {
    /// The connection to the database was lost: the run may redo the unit.
    pub lost: bool,
    /// The table, for a lost connection.
    pub table: String,
    /// The error as the run would show it.
    pub text: String,
}

pub(crate) fn to_json(value: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("plain data serializes")
}

pub(crate) fn from_json<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> io::Result<T> {
    serde_json::from_slice(bytes).map_err(|e| corrupt(&e.to_string()))
}

pub(crate) fn u64_payload(value: u64) -> [u8; 8] {
    value.to_le_bytes()
}

pub(crate) fn payload_u64(bytes: &[u8]) -> io::Result<u64> {
    Ok(u64::from_le_bytes(
        bytes
            .try_into()
            .map_err(|_| corrupt("a number of the wrong size"))?,
    ))
}

/// A schema as an Arrow IPC stream of no batches.
pub(crate) fn schema_bytes(schema: &Schema) -> Result<Vec<u8>, ArrowError> {
    let mut writer = StreamWriter::try_new(Vec::new(), schema)?;
    writer.finish()?;
    writer.into_inner()
}

pub(crate) fn schema_from(bytes: &[u8]) -> Result<SchemaRef, ArrowError> {
    Ok(StreamReader::try_new(bytes, None)?.schema())
}

/// One batch as an Arrow IPC stream.
pub(crate) fn batch_bytes(batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
    let mut writer = StreamWriter::try_new(Vec::new(), &batch.schema())?;
    writer.write(batch)?;
    writer.finish()?;
    writer.into_inner()
}

pub(crate) fn batch_from(bytes: &[u8]) -> Result<RecordBatch, ArrowError> {
    StreamReader::try_new(bytes, None)?
        .next()
        .unwrap_or_else(|| Err(ArrowError::IpcError("a batch frame without a batch".into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_back_as_written() {
        let mut bytes = Vec::new();
        write_frame(&mut bytes, Tag::Read, 3, b"{}").unwrap();
        write_frame(&mut bytes, Tag::Ack, WHOLE, b"").unwrap();
        let mut input = bytes.as_slice();
        let first = read_frame(&mut input).unwrap().unwrap();
        assert_eq!(
            (first.tag, first.slot, first.payload.as_slice()),
            (Tag::Read, 3, &b"{}"[..])
        );
        let second = read_frame(&mut input).unwrap().unwrap();
        assert_eq!((second.tag, second.slot), (Tag::Ack, WHOLE));
        assert!(read_frame(&mut input).unwrap().is_none());
    }

    #[test]
    fn a_corrupt_frame_is_an_error_not_an_allocation() {
        let mut input: &[u8] = &[0xff, 0xff, 0xff, 0xff, 1];
        assert!(read_frame(&mut input).is_err());
        let mut input: &[u8] = &[6, 0, 0, 0, 99, 0, 0, 0, 0, 0];
        assert!(read_frame(&mut input).is_err());
    }
}
