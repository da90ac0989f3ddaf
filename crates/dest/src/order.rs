//! A table's output file, assembled from its units in order.
//!
//! The file is written under a temporary name (`<name>.partial`) and renamed
//! only once every unit is in it and it is synced, so a file under its
//! final name is always complete. Within a table, the unit whose turn it is
//! writes straight into the file (with one worker, every unit does: no byte
//! is copied twice); units that run ahead go to a [`Spool`] and are appended
//! when their turn comes.
//!
//! A table can instead be streamed (`-o -`): then every unit is spooled,
//! because a unit that fails must be redone and bytes already sent down a
//! pipe cannot be taken back, and each unit goes out whole, in order, once
//! it is done.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fbunload_sink::ByteStream;

use crate::spool::{MemoryBudget, Spool};

/// Where a unit writes its bytes.
pub enum UnitSink {
    /// Straight into the table's file (this unit is next in line), which
    /// was this long when the unit began.
    Direct(File, u64),
    Spooled(Spool),
}

impl Write for UnitSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            UnitSink::Direct(f, _) => f.write(buf),
            UnitSink::Spooled(s) => s.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            UnitSink::Direct(f, _) => f.write_all(buf),
            UnitSink::Spooled(s) => s.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The output of one table.
pub struct TableOutput {
    pub final_path: PathBuf,
    temp_path: PathBuf,
    part_prefix: PathBuf,
    units: usize,
    budget: Arc<MemoryBudget>,
    finisher: Finisher,
    streaming: bool,
    state: Mutex<State>,
}

struct State {
    file: Option<File>,
    /// Where a streamed table goes; taken when it is finished.
    stream: Option<Box<dyn ByteStream>>,
    header_written: bool,
    streamed_bytes: u64,
    next_seq: usize,
    direct_active: bool,
    waiting: BTreeMap<usize, Spool>,
    finished: bool,
}

/// An I/O failure, with the file it happened on.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct OutputError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

/// Turns the complete temporary file into the final one (sync and rename,
/// or a conversion: see `StreamFormat::finish_file`).
pub type Finisher = Box<dyn Fn(&Path, &Path) -> io::Result<()> + Send + Sync>;

impl TableOutput {
    pub fn new(
        dir: &Path,
        file_name: &str,
        units: usize,
        budget: Arc<MemoryBudget>,
        finisher: Finisher,
    ) -> Self {
        TableOutput {
            finisher,
            final_path: dir.join(file_name),
            temp_path: dir.join(format!("{file_name}.partial")),
            part_prefix: dir.join(format!(".{file_name}.unit")),
            units,
            budget,
            streaming: false,
            state: Mutex::new(State {
                file: None,
                stream: None,
                header_written: false,
                streamed_bytes: 0,
                next_seq: 0,
                direct_active: false,
                waiting: BTreeMap::new(),
                finished: false,
            }),
        }
    }

    /// A table written to `stream` as it is assembled instead of to a file;
    /// units that must wait spill into `dir` beyond the memory budget.
    pub fn streamed(
        dir: &Path,
        name: &str,
        units: usize,
        budget: Arc<MemoryBudget>,
        stream: Box<dyn ByteStream>,
    ) -> Self {
        let mut output = TableOutput::new(dir, name, units, budget, Box::new(|_, _| Ok(())));
        // Named in errors: "table T: writing standard output: Broken pipe".
        output.final_path = PathBuf::from("standard output");
        output.streaming = true;
        output.state.get_mut().unwrap().stream = Some(stream);
        output
    }

    /// Bytes written so far to a streamed table.
    pub fn streamed_bytes(&self) -> Option<u64> {
        self.streaming
            .then(|| self.state.lock().unwrap().streamed_bytes)
    }

    /// Bytes of the finished output: streamed, in the file, or in the
    /// directory of part files some formats write.
    pub fn size(&self) -> u64 {
        if let Some(bytes) = self.streamed_bytes() {
            return bytes;
        }
        match fs::read_dir(&self.final_path) {
            Ok(entries) => entries
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum(),
            Err(_) => fs::metadata(&self.final_path).map_or(0, |m| m.len()),
        }
    }

    /// Starts unit `seq`; `header` is written first if the file is new.
    pub fn begin_unit(&self, seq: usize, header: &[u8]) -> Result<UnitSink, OutputError> {
        let mut state = self.state.lock().unwrap();
        if self.streaming {
            if !state.header_written {
                state.header_written = true;
                state.streamed_bytes += header.len() as u64;
                let stream = state.stream.as_mut().unwrap();
                stream
                    .write_all(header)
                    .map_err(|e| self.error(&self.final_path, e))?;
            }
            return Ok(UnitSink::Spooled(Spool::new(
                self.budget.clone(),
                self.part_path(seq),
            )));
        }
        if state.file.is_none() {
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&self.temp_path)
                .map_err(|e| self.error(&self.temp_path, e))?;
            file.write_all(header)
                .map_err(|e| self.error(&self.temp_path, e))?;
            state.file = Some(file);
        }
        if seq == state.next_seq && !state.direct_active {
            state.direct_active = true;
            let file = state.file.as_mut().unwrap();
            let start = file
                .stream_position()
                .map_err(|e| self.error(&self.temp_path, e))?;
            let file = file
                .try_clone()
                .map_err(|e| self.error(&self.temp_path, e))?;
            return Ok(UnitSink::Direct(file, start));
        }
        Ok(UnitSink::Spooled(Spool::new(
            self.budget.clone(),
            self.part_path(seq),
        )))
    }

    fn part_path(&self, seq: usize) -> PathBuf {
        PathBuf::from(format!("{}{seq}.part", self.part_prefix.display()))
    }

    /// Hands in a finished unit. Returns `true` when this completed the
    /// table: its file is then synced and under its final name.
    pub fn finish_unit(&self, seq: usize, sink: UnitSink) -> Result<bool, OutputError> {
        let mut state = self.state.lock().unwrap();
        match sink {
            UnitSink::Direct(..) => {
                state.direct_active = false;
                state.next_seq = seq + 1;
            }
            UnitSink::Spooled(spool) => {
                state.waiting.insert(seq, spool);
            }
        }
        let state = &mut *state;
        while let Some(spool) = state.waiting.remove(&state.next_seq) {
            if let Some(stream) = state.stream.as_mut() {
                let mut counted = Counted(stream, 0);
                let drained = spool.drain_into(&mut counted);
                state.streamed_bytes += counted.1;
                drained.map_err(|e| self.error(&self.final_path, e))?;
            } else {
                let file = state.file.as_mut().unwrap();
                spool
                    .drain_into(file)
                    .map_err(|e| self.error(&self.temp_path, e))?;
            }
            state.next_seq += 1;
        }
        if state.next_seq < self.units {
            return Ok(false);
        }
        if let Some(stream) = state.stream.take() {
            stream
                .finish()
                .map_err(|e| self.error(&self.final_path, e))?;
            state.finished = true;
            return Ok(true);
        }
        drop(state.file.take());
        (self.finisher)(&self.temp_path, &self.final_path)
            .map_err(|e| self.error(&self.final_path, e))?;
        state.finished = true;
        Ok(true)
    }

    /// Takes back a unit that failed, so it can be done again: what it
    /// wrote into the file is cut off, what it spooled is dropped.
    pub fn abandon_unit(&self, sink: UnitSink) -> Result<(), OutputError> {
        let mut state = self.state.lock().unwrap();
        if let UnitSink::Direct(mut file, start) = sink {
            // The handle shares its offset with the table's: rewind both.
            file.set_len(start)
                .map_err(|e| self.error(&self.temp_path, e))?;
            file.seek(SeekFrom::Start(start))
                .map_err(|e| self.error(&self.temp_path, e))?;
            state.direct_active = false;
        }
        Ok(())
    }

    fn error(&self, path: &Path, source: io::Error) -> OutputError {
        OutputError {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A writer that counts what passes through it.
struct Counted<'a>(&'a mut Box<dyn ByteStream>, u64);

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.0.write(buf)?;
        self.1 += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Drop for TableOutput {
    /// An unfinished table leaves nothing behind: not its temporary file,
    /// and (through the spools' own Drop) not its part files.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        state.waiting.clear();
        if !state.finished && state.file.take().is_some() {
            let _ = fs::remove_file(&self.temp_path);
        }
    }
}

/// A table name as a file name: `/` and `%` are escaped (`%2F`, `%25`) so
/// every table gets its own file and none can point outside the directory.
pub fn file_name_for(table: &str, extension: &str) -> String {
    let mut name = String::with_capacity(table.len() + extension.len() + 1);
    for c in table.chars() {
        match c {
            '/' => name.push_str("%2F"),
            '%' => name.push_str("%25"),
            '\0' => name.push_str("%00"),
            c => name.push(c),
        }
    }
    if name.starts_with('.') {
        // Not hidden, and never "." or "..".
        name.insert_str(0, "%2E");
        name.remove(3);
    }
    name.push('.');
    name.push_str(extension);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(dir: &Path, units: usize, budget: usize) -> TableOutput {
        TableOutput::new(
            dir,
            "T.csv",
            units,
            MemoryBudget::new(budget),
            Box::new(|temp, final_path| fs::rename(temp, final_path)),
        )
    }

    #[test]
    fn units_land_in_order_whatever_order_they_finish_in() {
        for budget in [0, 1 << 20] {
            let dir = tempfile::tempdir().unwrap();
            let out = output(dir.path(), 3, budget);
            let mut u0 = out.begin_unit(0, b"H\n").unwrap();
            let mut u1 = out.begin_unit(1, b"H\n").unwrap();
            let mut u2 = out.begin_unit(2, b"H\n").unwrap();
            assert!(matches!(u0, UnitSink::Direct(..)));
            assert!(matches!(u1, UnitSink::Spooled(_)));
            u2.write_all(b"c\n").unwrap();
            u1.write_all(b"b\n").unwrap();
            u0.write_all(b"a\n").unwrap();
            assert!(!out.finish_unit(2, u2).unwrap());
            assert!(!out.finish_unit(1, u1).unwrap());
            assert!(
                !out.final_path.exists(),
                "incomplete table must not have its final name"
            );
            assert!(out.finish_unit(0, u0).unwrap());
            assert_eq!(fs::read(&out.final_path).unwrap(), b"H\na\nb\nc\n");
            assert!(!dir.path().join("T.csv.partial").exists());
            assert_eq!(
                fs::read_dir(dir.path()).unwrap().count(),
                1,
                "no part files left"
            );
        }
    }

    #[test]
    fn the_next_unit_writes_directly_once_its_predecessor_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let out = output(dir.path(), 2, 0);
        let u0 = out.begin_unit(0, b"").unwrap();
        out.finish_unit(0, u0).unwrap();
        assert!(matches!(
            out.begin_unit(1, b"").unwrap(),
            UnitSink::Direct(..)
        ));
    }

    #[test]
    fn an_abandoned_unit_can_be_done_again() {
        let dir = tempfile::tempdir().unwrap();
        let out = output(dir.path(), 2, 0);
        let mut u0 = out.begin_unit(0, b"H\n").unwrap();
        u0.write_all(b"half of a\n").unwrap();
        let mut u1 = out.begin_unit(1, b"H\n").unwrap();
        u1.write_all(b"b\n").unwrap();
        out.finish_unit(1, u1).unwrap();
        out.abandon_unit(u0).unwrap();
        let mut again = out.begin_unit(0, b"H\n").unwrap();
        assert!(matches!(again, UnitSink::Direct(..)));
        again.write_all(b"a\n").unwrap();
        assert!(out.finish_unit(0, again).unwrap());
        assert_eq!(fs::read(&out.final_path).unwrap(), b"H\na\nb\n");
    }

    #[test]
    fn an_abandoned_table_leaves_no_files() {
        let dir = tempfile::tempdir().unwrap();
        {
            let out = output(dir.path(), 3, 0);
            let _u0 = out.begin_unit(0, b"H\n").unwrap();
            let mut u1 = out.begin_unit(1, b"H\n").unwrap();
            u1.write_all(b"spilled").unwrap();
            out.finish_unit(1, u1).unwrap();
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// What a streamed table has written so far.
    #[derive(Clone, Default)]
    struct Pipe(Arc<Mutex<Vec<u8>>>, Arc<Mutex<bool>>);

    impl Write for Pipe {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl ByteStream for Pipe {
        fn finish(self: Box<Self>) -> io::Result<()> {
            *self.1.lock().unwrap() = true;
            Ok(())
        }
    }

    #[test]
    fn a_streamed_table_goes_out_unit_by_unit_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = Pipe::default();
        let sent = || pipe.0.lock().unwrap().clone();
        // No memory: every waiting unit spills to a part file.
        let out = TableOutput::streamed(
            dir.path(),
            "T.csv",
            3,
            MemoryBudget::new(0),
            Box::new(pipe.clone()),
        );
        let mut u0 = out.begin_unit(0, b"H\n").unwrap();
        let mut u1 = out.begin_unit(1, b"H\n").unwrap();
        assert_eq!(sent(), b"H\n", "the header goes out once, first");
        u1.write_all(b"b\n").unwrap();
        assert!(!out.finish_unit(1, u1).unwrap());
        assert_eq!(sent(), b"H\n", "unit 1 waits for unit 0");
        // Unit 0 fails half way and is redone: nothing of it went out.
        u0.write_all(b"half of a").unwrap();
        out.abandon_unit(u0).unwrap();
        let mut again = out.begin_unit(0, b"H\n").unwrap();
        again.write_all(b"a\n").unwrap();
        assert!(!out.finish_unit(0, again).unwrap());
        assert_eq!(
            sent(),
            b"H\na\nb\n",
            "units 0 and 1 out, before unit 2 ends"
        );
        assert!(!*pipe.1.lock().unwrap());
        let mut u2 = out.begin_unit(2, b"H\n").unwrap();
        u2.write_all(b"c\n").unwrap();
        assert!(out.finish_unit(2, u2).unwrap());
        assert_eq!(sent(), b"H\na\nb\nc\n");
        assert!(*pipe.1.lock().unwrap(), "the stream was finished");
        assert_eq!(out.streamed_bytes(), Some(8));
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no part files or other files left"
        );
    }

    #[test]
    fn file_names_cannot_escape_the_directory() {
        assert_eq!(file_name_for("ORDERS", "csv"), "ORDERS.csv");
        assert_eq!(file_name_for("a/b%c", "csv"), "a%2Fb%25c.csv");
        assert_eq!(file_name_for("..", "csv"), "%2E..csv");
        assert_eq!(
            file_name_for("My \"odd\" table", "csv"),
            "My \"odd\" table.csv"
        );
    }
}
