//! Holding a unit's output until its turn comes.
//!
//! A unit that finishes before the units ahead of it in its table cannot be
//! written to the table's file yet. Its bytes ([`Spool`]) or batches
//! ([`HeldBatches`]) wait in memory while the run's [`MemoryBudget`] allows,
//! and on disk (a part file in the run's private staging directory) after
//! that, so memory stays bounded however the units interleave. Only
//! spilled bytes are copied a second time, with `std::io::copy`, which on
//! Linux is `copy_file_range`: an in-kernel copy, or a reflink on file
//! systems that share extents.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Seek, Write};
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::ArrowError;

pub use crate::budget::MemoryBudget;

/// The most a spool's memory grows by at once. Chunks, not one buffer
/// that doubles: a doubling buffer copies its bytes again at each growth
/// and touches fresh pages again, and holds up to twice what it was
/// given. (STOCK to CSV at -j2 over TCP: fbunload's system time went
/// from 0.61 s to 0.36 s, the run from 3.17 s to 2.97 s.)
const SPOOL_CHUNK: usize = 1 << 20;

/// A unit's output: in memory until the budget runs out, then in a file.
pub struct Spool {
    budget: Arc<MemoryBudget>,
    /// Filled in order; each but the last is full.
    memory: Vec<Vec<u8>>,
    /// Bytes in `memory`, taken from the budget.
    held: usize,
    part_path: PathBuf,
    part: Option<File>,
}

impl Spool {
    pub fn new(budget: Arc<MemoryBudget>, part_path: PathBuf) -> Self {
        Spool {
            budget,
            memory: Vec::new(),
            held: 0,
            part_path,
            part: None,
        }
    }

    #[cfg(test)]
    pub fn is_spilled(&self) -> bool {
        self.part.is_some()
    }

    /// Writes the held bytes to the end of `out`; dropping `self` then
    /// releases the memory and removes the part file.
    pub fn drain_into(mut self, out: &mut dyn Write) -> io::Result<()> {
        for chunk in &self.memory {
            out.write_all(chunk)?;
        }
        if let Some(part) = &mut self.part {
            part.rewind()?;
            io::copy(part, out)?;
        }
        Ok(())
    }
}

impl Spool {
    /// Appends `bytes` to the chunks, starting a new one where the last
    /// is full; a chunk starts small, for units of a few rows.
    fn hold(&mut self, mut bytes: &[u8]) {
        self.held += bytes.len();
        while !bytes.is_empty() {
            let room = self.memory.last().map_or(0, |c| c.capacity() - c.len());
            if room == 0 {
                let size = (self.held.next_power_of_two()).clamp(4096, SPOOL_CHUNK);
                self.memory.push(Vec::with_capacity(size));
                continue;
            }
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.memory
                .last_mut()
                .expect("pushed above")
                .extend_from_slice(now);
            bytes = rest;
        }
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(part) = &mut self.part {
            return part.write(buf);
        }
        if self.budget.try_take(buf.len()) {
            self.hold(buf);
            return Ok(buf.len());
        }
        let mut part = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&self.part_path)?;
        for chunk in std::mem::take(&mut self.memory) {
            part.write_all(&chunk)?;
        }
        self.budget.give_back(std::mem::take(&mut self.held));
        part.write_all(buf)?;
        self.part = Some(part);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
        if self.part.take().is_some() {
            let _ = fs::remove_file(&self.part_path);
        }
    }
}

/// The most bytes of values a batch is written to a part file in, so the
/// most it is read back in: a row group is cut from batches read back, and
/// the rest of the last one waits for the next group, counted nowhere,
/// holding all of its batch's body. Written whole, those were the
/// decoder's batches of up to 16 MB, and a 500-column table's 32 MB group
/// in Parquet held 46 MB read back (heaptrack).
pub const SPILLED_PIECE_BYTES: usize = 4 << 20;

/// Writes `batch` to a part file in pieces of at most about
/// [`SPILLED_PIECE_BYTES`] of values. The IPC writer writes only a
/// slice's own values.
fn write_in_pieces(
    part: &mut StreamWriter<BufWriter<File>>,
    batch: &RecordBatch,
) -> Result<(), ArrowError> {
    let bytes: usize = batch
        .columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum();
    let rows = batch.num_rows();
    let pieces = bytes.div_ceil(SPILLED_PIECE_BYTES).clamp(1, rows.max(1));
    if pieces == 1 {
        return part.write(batch);
    }
    let piece_rows = rows.div_ceil(pieces);
    let mut offset = 0;
    while offset < rows {
        let len = piece_rows.min(rows - offset);
        part.write(&batch.slice(offset, len))?;
        offset += len;
    }
    Ok(())
}

/// A unit's record batches: in memory until the budget runs out, then in
/// an Arrow IPC part file. Batch formats (Parquet, Arrow) hold every unit,
/// even the one whose turn it is, because what a table writer was given
/// cannot be taken back if the unit fails and is read again.
pub struct HeldBatches {
    budget: Arc<MemoryBudget>,
    memory: Vec<RecordBatch>,
    held_bytes: usize,
    part_path: PathBuf,
    part: Option<StreamWriter<BufWriter<File>>>,
}

impl HeldBatches {
    pub fn new(budget: Arc<MemoryBudget>, part_path: PathBuf) -> Self {
        HeldBatches {
            budget,
            memory: Vec::new(),
            held_bytes: 0,
            part_path,
            part: None,
        }
    }

    pub fn push(&mut self, batch: RecordBatch) -> Result<(), ArrowError> {
        if let Some(part) = &mut self.part {
            return write_in_pieces(part, &batch);
        }
        let size = batch.get_array_memory_size();
        if self.budget.try_take(size) {
            self.held_bytes += size;
            self.memory.push(batch);
            return Ok(());
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.part_path)?;
        let mut part = StreamWriter::try_new(BufWriter::new(file), &batch.schema())?;
        for held in self.memory.drain(..) {
            write_in_pieces(&mut part, &held)?;
        }
        self.budget.give_back(std::mem::take(&mut self.held_bytes));
        write_in_pieces(&mut part, &batch)?;
        self.part = Some(part);
        Ok(())
    }

    /// The batches, to be read back one at a time in the order they were
    /// pushed: a spilled unit is not read back into memory at once.
    pub fn into_batches(mut self) -> Result<HeldSource, ArrowError> {
        let part = match self.part.take() {
            Some(mut part) => {
                part.finish()?;
                drop(part);
                let file = File::open(&self.part_path)?;
                Some(StreamReader::try_new(BufReader::new(file), None)?)
            }
            None => None,
        };
        Ok(HeldSource {
            budget: self.budget.clone(),
            memory: std::mem::take(&mut self.memory).into(),
            held_bytes: std::mem::take(&mut self.held_bytes),
            part_path: std::mem::take(&mut self.part_path),
            part,
        })
    }
}

/// A complete unit's batches, read back in order ([`HeldBatches::into_batches`]).
/// Each batch leaves the budget as it is read: whoever takes it counts it.
pub struct HeldSource {
    budget: Arc<MemoryBudget>,
    memory: VecDeque<RecordBatch>,
    held_bytes: usize,
    part_path: PathBuf,
    part: Option<StreamReader<BufReader<File>>>,
}

impl HeldSource {
    /// The next batch, or `None` after the last.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>, ArrowError> {
        if let Some(batch) = self.memory.pop_front() {
            let size = batch.get_array_memory_size().min(self.held_bytes);
            self.held_bytes -= size;
            self.budget.give_back(size);
            return Ok(Some(batch));
        }
        match self.part.as_mut().and_then(|part| part.next()) {
            Some(batch) => batch.map(Some),
            None => Ok(None),
        }
    }
}

impl Drop for HeldSource {
    fn drop(&mut self) {
        self.budget.give_back(self.held_bytes);
        if self.part.take().is_some() {
            let _ = fs::remove_file(&self.part_path);
        }
    }
}

impl Drop for HeldBatches {
    fn drop(&mut self) {
        self.budget.give_back(self.held_bytes);
        if self.part.take().is_some() {
            let _ = fs::remove_file(&self.part_path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spills_to_disk_when_the_budget_is_spent_and_gives_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let budget = MemoryBudget::new(10);
        let part = dir.path().join("u.part");
        let mut spool = Spool::new(budget.clone(), part.clone());
        spool.write_all(b"12345").unwrap();
        assert!(!spool.is_spilled());
        assert_eq!(budget.free(), 5);
        spool.write_all(b"6789012").unwrap();
        assert!(spool.is_spilled());
        assert_eq!(budget.free(), 10);
        assert!(part.exists());

        let out_path = dir.path().join("out");
        let mut out = File::create(&out_path).unwrap();
        out.write_all(b">").unwrap();
        spool.drain_into(&mut out).unwrap();
        drop(out);
        assert_eq!(fs::read(&out_path).unwrap(), b">123456789012");
        assert!(!part.exists(), "part file removed after draining");
    }

    #[test]
    fn held_bytes_come_back_in_order_from_chunks_of_bounded_size() {
        let dir = tempfile::tempdir().unwrap();
        let budget = MemoryBudget::new(64 << 20);
        let mut spool = Spool::new(budget.clone(), dir.path().join("u.part"));
        let mut expected = Vec::new();
        for (i, size) in [1, 4095, 3, 70_000, 1, 900_000, 2_500_000, 17]
            .iter()
            .enumerate()
        {
            let bytes: Vec<u8> = (0..*size).map(|b| (b * 7 + i) as u8).collect();
            spool.write_all(&bytes).unwrap();
            expected.extend_from_slice(&bytes);
        }
        assert!(!spool.is_spilled());
        assert_eq!(budget.free(), (64 << 20) - expected.len());
        assert!(spool.memory.iter().all(|c| c.capacity() <= SPOOL_CHUNK));
        let mut out = Vec::new();
        spool.drain_into(&mut out).unwrap();
        assert_eq!(out, expected);
        assert_eq!(budget.free(), 64 << 20, "the budget is given back");
    }

    #[test]
    fn a_dropped_spool_removes_its_part_file() {
        let dir = tempfile::tempdir().unwrap();
        let part = dir.path().join("u.part");
        let mut spool = Spool::new(MemoryBudget::new(0), part.clone());
        spool.write_all(b"x").unwrap();
        assert!(part.exists());
        drop(spool);
        assert!(!part.exists());
    }

    fn batch(values: &[i32]) -> RecordBatch {
        let array = arrow_array::Int32Array::from(values.to_vec());
        RecordBatch::try_from_iter([("N", Arc::new(array) as arrow_array::ArrayRef)]).unwrap()
    }

    #[test]
    fn held_batches_spill_in_order_and_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let budget = MemoryBudget::new(batch(&[1]).get_array_memory_size() + 8);
        let part = dir.path().join("u.arrows");
        let mut held = HeldBatches::new(budget.clone(), part.clone());
        held.push(batch(&[1])).unwrap();
        assert!(!part.exists());
        held.push(batch(&[2, 3])).unwrap();
        held.push(batch(&[4])).unwrap();
        assert!(part.exists(), "spilled once the budget ran out");
        let mut seen = Vec::new();
        let mut source = held.into_batches().unwrap();
        while let Some(b) = source.next_batch().unwrap() {
            let column = b
                .column(0)
                .as_any()
                .downcast_ref::<arrow_array::Int32Array>();
            seen.extend(column.unwrap().values().iter().copied());
        }
        assert_eq!(seen, [1, 2, 3, 4]);
        drop(source);
        assert!(!part.exists());
        assert_eq!(budget.free(), batch(&[1]).get_array_memory_size() + 8);
    }

    #[test]
    fn a_spilled_batch_is_read_back_in_pieces_of_bounded_size() {
        let dir = tempfile::tempdir().unwrap();
        let part = dir.path().join("u.arrows");
        let mut held = HeldBatches::new(MemoryBudget::new(0), part.clone());
        // 10 MiB of values: the decoder's batches reach 16 MB.
        let values: Vec<i32> = (0..(10 << 20) / 4).collect();
        held.push(batch(&values)).unwrap();
        assert!(part.exists());
        let mut source = held.into_batches().unwrap();
        let (mut seen, mut pieces) = (Vec::new(), 0);
        while let Some(b) = source.next_batch().unwrap() {
            // What a piece read back holds: its message's whole body.
            let holds = b.get_array_memory_size();
            assert!(holds <= SPILLED_PIECE_BYTES + (64 << 10), "{holds} bytes");
            let column = b
                .column(0)
                .as_any()
                .downcast_ref::<arrow_array::Int32Array>();
            seen.extend(column.unwrap().values().iter().copied());
            pieces += 1;
        }
        assert_eq!(pieces, 3);
        assert!(seen == values, "the rows come back whole and in order");
    }
}
