//! Holding a unit's output until its turn comes.
//!
//! A unit that finishes before the units ahead of it in its table cannot be
//! written to the table's file yet. Its bytes wait in memory while a shared
//! [`MemoryBudget`] allows, and on disk (a part file beside the output)
//! after that, so memory stays bounded however the units interleave. Only
//! spilled bytes are copied a second time, with `std::io::copy`, which on
//! Linux is `copy_file_range`: an in-kernel copy, or a reflink on file
//! systems that share extents.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes that waiting units may hold in memory, shared by all workers.
#[derive(Debug)]
pub struct MemoryBudget {
    free: AtomicUsize,
}

impl MemoryBudget {
    pub fn new(bytes: usize) -> Arc<Self> {
        Arc::new(MemoryBudget {
            free: AtomicUsize::new(bytes),
        })
    }

    fn try_take(&self, bytes: usize) -> bool {
        // A compare-exchange loop: `fetch_update` is deprecated in newer
        // Rust and its successor missing in older.
        let mut free = self.free.load(Ordering::Acquire);
        loop {
            let Some(left) = free.checked_sub(bytes) else {
                return false;
            };
            match self
                .free
                .compare_exchange_weak(free, left, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => free = now,
            }
        }
    }

    fn give_back(&self, bytes: usize) {
        self.free.fetch_add(bytes, Ordering::AcqRel);
    }

    pub fn free(&self) -> usize {
        self.free.load(Ordering::Acquire)
    }
}

/// A unit's output: in memory until the budget runs out, then in a file.
pub struct Spool {
    budget: Arc<MemoryBudget>,
    memory: Vec<u8>,
    part_path: PathBuf,
    part: Option<File>,
}

impl Spool {
    pub fn new(budget: Arc<MemoryBudget>, part_path: PathBuf) -> Self {
        Spool {
            budget,
            memory: Vec::new(),
            part_path,
            part: None,
        }
    }

    pub fn is_spilled(&self) -> bool {
        self.part.is_some()
    }

    /// Writes the held bytes to the end of `out`; dropping `self` then
    /// releases the memory and removes the part file.
    pub fn drain_into(mut self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(&self.memory)?;
        if let Some(part) = &mut self.part {
            part.rewind()?;
            io::copy(part, out)?;
        }
        Ok(())
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(part) = &mut self.part {
            return part.write(buf);
        }
        if self.budget.try_take(buf.len()) {
            self.memory.extend_from_slice(buf);
            return Ok(buf.len());
        }
        let mut part = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&self.part_path)?;
        part.write_all(&self.memory)?;
        self.budget.give_back(self.memory.len());
        self.memory = Vec::new();
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
        self.budget.give_back(self.memory.len());
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
    fn a_dropped_spool_removes_its_part_file() {
        let dir = tempfile::tempdir().unwrap();
        let part = dir.path().join("u.part");
        let mut spool = Spool::new(MemoryBudget::new(0), part.clone());
        spool.write_all(b"x").unwrap();
        assert!(part.exists());
        drop(spool);
        assert!(!part.exists());
    }
}
