//! Keys held within a memory limit: a table's keys (each with its row's
//! DB_KEY number) are gathered unit by unit, and whenever those held pass
//! the limit they are sorted and spilled as a run (an Arrow IPC file in
//! the run's private staging directory); at the end the runs are merged
//! ([`Merged`]), a row at a time in key order, so a table of any size
//! needs memory for one batch per run, not for its keys.
//!
//! Every batch here holds the key's columns, then the rows' numbers
//! (`UInt64`).

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::SchemaRef;

use crate::keys::KeyEncoder;

/// Rows of each batch a run or a merge writes: fixed, so that what is
/// written is the same whatever the memory limit.
pub(crate) const BATCH_ROWS: usize = 8192;

/// Runs merged at once; more are merged in rounds, so that a merge holds
/// a batch of this many runs at most.
const FAN_IN: usize = 16;

/// Where runs are spilled.
#[derive(Debug, Clone)]
pub(crate) struct SpillDir {
    dir: PathBuf,
    /// Names runs apart from anything else there.
    prefix: String,
    next: Arc<AtomicU64>,
}

impl SpillDir {
    pub fn new(dir: &Path, prefix: &str) -> Self {
        SpillDir {
            dir: dir.to_path_buf(),
            prefix: prefix.to_string(),
            next: Arc::default(),
        }
    }

    fn new_path(&self) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("{}.run{n}.keys", self.prefix))
    }
}

/// A table's keys, gathered in any order, spilled in sorted runs beyond
/// `limit` bytes.
pub(crate) struct KeySink {
    pub schema: SchemaRef,
    spill: SpillDir,
    limit: usize,
    /// Keep each row's number in `numbers` (the places a read took).
    keep_numbers: bool,
    state: Mutex<SinkState>,
}

#[derive(Default)]
struct SinkState {
    pending: Vec<RecordBatch>,
    pending_bytes: usize,
    /// Sorted runs: on disk, and the last one kept in memory.
    runs: Vec<PathBuf>,
    in_memory: Option<Arc<Vec<RecordBatch>>>,
    numbers: Vec<u64>,
}

impl Drop for SinkState {
    fn drop(&mut self) {
        for run in &self.runs {
            let _ = fs::remove_file(run);
        }
    }
}

impl KeySink {
    /// `schema`: the key's columns, then the numbers.
    pub fn new(schema: SchemaRef, spill: SpillDir, limit: usize, keep_numbers: bool) -> Self {
        KeySink {
            schema,
            spill,
            limit: limit.max(1),
            keep_numbers,
            state: Mutex::default(),
        }
    }

    /// Adds a unit's keys; beyond the limit, what is held is sorted and
    /// spilled.
    pub fn add(&self, batches: Vec<RecordBatch>) -> Result<(), String> {
        let spill = {
            let mut state = self.state.lock().unwrap();
            for batch in batches {
                if batch.num_rows() == 0 {
                    continue;
                }
                if self.keep_numbers {
                    state.numbers.extend(numbers_of(&batch).iter().copied());
                }
                state.pending_bytes += batch.get_array_memory_size();
                state.pending.push(batch);
            }
            if state.pending_bytes < self.limit {
                return Ok(());
            }
            state.pending_bytes = 0;
            std::mem::take(&mut state.pending)
        };
        // Sorted and written outside the lock: other units go on meanwhile.
        let sorted = sort(&self.schema, &spill)?;
        let path = self.spill.new_path();
        write_run(&path, &self.schema, &sorted)?;
        self.state.lock().unwrap().runs.push(path);
        Ok(())
    }

    /// What the batches held (not yet spilled) take.
    #[cfg(test)]
    pub fn held_bytes(&self) -> usize {
        self.state.lock().unwrap().pending_bytes
    }

    /// The numbers of every row added, sorted (for a sink that keeps them).
    pub fn numbers(&self) -> Vec<u64> {
        let mut numbers = self.state.lock().unwrap().numbers.clone();
        numbers.sort_unstable();
        numbers
    }

    /// Every key added, in order; a key added twice is refused as the
    /// stream reaches it. May be called again (nothing is added after).
    pub fn stream(&self) -> Result<Merged, String> {
        let mut state = self.state.lock().unwrap();
        if !state.pending.is_empty() {
            let pending = std::mem::take(&mut state.pending);
            state.pending_bytes = 0;
            let sorted = sort(&self.schema, &pending)?;
            if let Some(earlier) = state.in_memory.take() {
                // Keys added after a stream was taken.
                let path = self.spill.new_path();
                write_run(&path, &self.schema, &earlier)?;
                state.runs.push(path);
            }
            state.in_memory = Some(Arc::new(sorted));
        }
        // Rounds of merges until one merge can take every run.
        while state.runs.len() + usize::from(state.in_memory.is_some()) > FAN_IN {
            let group: Vec<PathBuf> = state.runs.drain(..FAN_IN).collect();
            let mut merged = Merged::new(
                group
                    .iter()
                    .map(|p| read_run(p))
                    .collect::<Result<_, _>>()?,
            )?;
            let path = self.spill.new_path();
            let mut writer = RunWriter::create(&path, &self.schema)?;
            let mut rows = Rows::new(self.schema.clone());
            while merged.key().is_some() {
                merged.push_to(&mut rows);
                merged.advance()?;
                if rows.len() == BATCH_ROWS {
                    writer.write(&rows.take()?)?;
                }
            }
            writer.write(&rows.take()?)?;
            writer.finish()?;
            for p in &group {
                let _ = fs::remove_file(p);
            }
            state.runs.push(path);
        }
        let mut cursors = Vec::new();
        for path in &state.runs {
            cursors.push(read_run(path)?);
        }
        if let Some(batches) = &state.in_memory {
            let batches = batches.clone();
            let mut i = 0;
            cursors.push(Cursor::new(Box::new(std::iter::from_fn(move || {
                i += 1;
                batches.get(i - 1).cloned().map(Ok)
            })))?);
        }
        Merged::new(cursors)
    }

    /// Lets go of every key, and removes the runs from the disk.
    pub fn clear(&self) {
        *self.state.lock().unwrap() = SinkState::default();
    }

    #[cfg(test)]
    pub fn runs_on_disk(&self) -> usize {
        self.state.lock().unwrap().runs.len()
    }
}

/// The numbers column of a batch of keys.
pub(crate) fn numbers_of(batch: &RecordBatch) -> &[u64] {
    batch
        .column(batch.num_columns() - 1)
        .as_primitive::<UInt64Type>()
        .values()
}

/// `batches` sorted by key, in batches of [`BATCH_ROWS`].
fn sort(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Vec<RecordBatch>, String> {
    let keys = schema.fields().len() - 1;
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for batch in batches {
        let encoder = KeyEncoder::new(
            &batch
                .project(&(0..keys).collect::<Vec<_>>())
                .map_err(|e| e.to_string())?,
        )?;
        for row in 0..batch.num_rows() {
            encoder.append(row, &mut bytes);
            ends.push(bytes.len());
        }
    }
    let key = |row: usize| {
        let start = if row == 0 { 0 } else { ends[row - 1] };
        &bytes[start..ends[row]]
    };
    let mut order: Vec<u64> = (0..ends.len() as u64).collect();
    // Stable: the keys come mostly in order already, in runs.
    order.sort_by(|&a, &b| key(a as usize).cmp(key(b as usize)));
    if let Some(pair) = order
        .windows(2)
        .find(|p| key(p[0] as usize) == key(p[1] as usize))
    {
        return Err(format!(
            "key {} is there twice: not a primary key's",
            pair[0]
        ));
    }
    drop(bytes);
    let all = arrow_select::concat::concat_batches(schema, batches).map_err(|e| e.to_string())?;
    order
        .chunks(BATCH_ROWS)
        .map(|rows| {
            arrow_select::take::take_record_batch(&all, &UInt64Array::from(rows.to_vec()))
                .map_err(|e| e.to_string())
        })
        .collect()
}

struct RunWriter {
    writer: arrow_ipc::writer::FileWriter<BufWriter<File>>,
}

impl RunWriter {
    fn create(path: &Path, schema: &SchemaRef) -> Result<Self, String> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| format!("cannot spill keys to {}: {e}", path.display()))?;
        let writer = arrow_ipc::writer::FileWriter::try_new(BufWriter::new(file), schema)
            .map_err(|e| e.to_string())?;
        Ok(RunWriter { writer })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), String> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.writer.write(batch).map_err(|e| e.to_string())
    }

    fn finish(mut self) -> Result<(), String> {
        self.writer.finish().map_err(|e| e.to_string())
    }
}

fn write_run(path: &Path, schema: &SchemaRef, batches: &[RecordBatch]) -> Result<(), String> {
    let mut writer = RunWriter::create(path, schema)?;
    for batch in batches {
        writer.write(batch)?;
    }
    writer.finish()
}

fn read_run(path: &Path) -> Result<Cursor, String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reader = arrow_ipc::reader::FileReader::try_new(BufReader::new(file), None)
        .map_err(|e| e.to_string())?;
    Cursor::new(Box::new(reader.map(|b| b.map_err(|e| e.to_string()))))
}

/// Batches of keys in key order, one after another.
pub(crate) type Batches = Box<dyn Iterator<Item = Result<RecordBatch, String>> + Send>;

/// Tells apart every batch a cursor has loaded (see [`Rows`]).
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// A row at a time through sorted batches.
pub(crate) struct Cursor {
    batches: Batches,
    batch: Option<RecordBatch>,
    generation: u64,
    /// The current batch's keys, encoded one after another.
    bytes: Vec<u8>,
    ends: Vec<usize>,
    row: usize,
}

impl Cursor {
    pub fn new(batches: Batches) -> Result<Self, String> {
        let mut cursor = Cursor {
            batches,
            batch: None,
            generation: 0,
            bytes: Vec::new(),
            ends: Vec::new(),
            row: 0,
        };
        cursor.load()?;
        Ok(cursor)
    }

    /// The next batch with rows, or none.
    fn load(&mut self) -> Result<(), String> {
        self.batch = None;
        for batch in self.batches.by_ref() {
            let batch = batch?;
            if batch.num_rows() == 0 {
                continue;
            }
            let keys = batch.num_columns() - 1;
            let encoder = KeyEncoder::new(
                &batch
                    .project(&(0..keys).collect::<Vec<_>>())
                    .map_err(|e| e.to_string())?,
            )?;
            self.bytes.clear();
            self.ends.clear();
            for row in 0..batch.num_rows() {
                encoder.append(row, &mut self.bytes);
                self.ends.push(self.bytes.len());
            }
            self.row = 0;
            self.generation = GENERATION.fetch_add(1, Ordering::Relaxed);
            self.batch = Some(batch);
            break;
        }
        Ok(())
    }

    pub fn key(&self) -> Option<&[u8]> {
        self.batch.as_ref()?;
        let start = if self.row == 0 {
            0
        } else {
            self.ends[self.row - 1]
        };
        Some(&self.bytes[start..self.ends[self.row]])
    }

    fn number(&self) -> u64 {
        numbers_of(self.batch.as_ref().expect("a row"))[self.row]
    }

    fn advance(&mut self) -> Result<(), String> {
        self.row += 1;
        if self.row == self.ends.len() {
            self.load()?;
        }
        Ok(())
    }
}

/// Sorted cursors merged into one stream in key order, which must be
/// strictly ascending: a key met twice is refused.
pub(crate) struct Merged {
    cursors: Vec<Cursor>,
    /// The cursor with the lowest key, if any has one.
    current: Option<usize>,
    /// The key last passed, to find one met twice.
    last: Vec<u8>,
    passed: u64,
}

impl Merged {
    pub fn new(cursors: Vec<Cursor>) -> Result<Self, String> {
        let mut merged = Merged {
            cursors,
            current: None,
            last: Vec::new(),
            passed: 0,
        };
        merged.current = merged.lowest();
        Ok(merged)
    }

    fn lowest(&self) -> Option<usize> {
        let mut best: Option<(usize, &[u8])> = None;
        for (i, cursor) in self.cursors.iter().enumerate() {
            if let Some(key) = cursor.key() {
                if best.is_none_or(|(_, b)| key < b) {
                    best = Some((i, key));
                }
            }
        }
        best.map(|(i, _)| i)
    }

    /// The current row's key; none once every row is passed.
    pub fn key(&self) -> Option<&[u8]> {
        self.cursors[self.current?].key()
    }

    /// The current row's number.
    pub fn number(&self) -> u64 {
        self.cursors[self.current.expect("a row")].number()
    }

    /// Rows passed so far.
    pub fn passed(&self) -> u64 {
        self.passed
    }

    /// Adds the current row to `rows`.
    pub fn push_to(&self, rows: &mut Rows) {
        let number = self.number();
        self.push_numbered(rows, number);
    }

    /// Adds the current row to `rows`, with `number` for its number.
    pub fn push_numbered(&self, rows: &mut Rows, number: u64) {
        let cursor = &self.cursors[self.current.expect("a row")];
        rows.push(
            cursor.generation,
            cursor.batch.as_ref().expect("a row"),
            cursor.row,
            number,
        );
    }

    pub fn advance(&mut self) -> Result<(), String> {
        let Some(i) = self.current else {
            return Ok(());
        };
        self.last.clear();
        self.last
            .extend_from_slice(self.cursors[i].key().expect("a row"));
        self.cursors[i].advance()?;
        self.passed += 1;
        self.current = self.lowest();
        if let Some(key) = self.key() {
            if key <= self.last.as_slice() {
                return Err(if key == self.last.as_slice() {
                    format!("key {} is there twice: not a primary key's", self.passed)
                } else {
                    format!("its key at row {} is out of order", self.passed)
                });
            }
        }
        Ok(())
    }
}

/// Rows taken from the batches of cursors, made into batches of `schema`
/// (the key's columns and the numbers given with each row).
pub(crate) struct Rows {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    /// Where each cursor batch is in `batches`, by its generation.
    index: std::collections::HashMap<u64, usize>,
    rows: Vec<(usize, usize)>,
    numbers: Vec<u64>,
    /// The generation pushed last and its place in `batches`: rows come
    /// mostly from the batch of the row before, found without hashing.
    last: Option<(u64, usize)>,
}

impl Rows {
    pub fn new(schema: SchemaRef) -> Self {
        Rows {
            schema,
            batches: Vec::new(),
            index: Default::default(),
            rows: Vec::new(),
            numbers: Vec::new(),
            last: None,
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    fn push(&mut self, generation: u64, batch: &RecordBatch, row: usize, number: u64) {
        let at = match self.last {
            Some((last, at)) if last == generation => at,
            _ => {
                let at = *self.index.entry(generation).or_insert_with(|| {
                    self.batches.push(batch.clone());
                    self.batches.len() - 1
                });
                self.last = Some((generation, at));
                at
            }
        };
        self.rows.push((at, row));
        self.numbers.push(number);
    }

    /// The rows pushed, as one batch; then none are held.
    pub fn take(&mut self) -> Result<RecordBatch, String> {
        let keys = self.schema.fields().len() - 1;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(keys + 1);
        for c in 0..keys {
            let arrays: Vec<&dyn arrow_array::Array> =
                self.batches.iter().map(|b| b.column(c).as_ref()).collect();
            let column = if arrays.is_empty() {
                arrow_array::new_empty_array(self.schema.field(c).data_type())
            } else {
                arrow_select::interleave::interleave(&arrays, &self.rows)
                    .map_err(|e| e.to_string())?
            };
            columns.push(column);
        }
        columns.push(Arc::new(UInt64Array::from(std::mem::take(
            &mut self.numbers,
        ))));
        self.batches.clear();
        self.index.clear();
        self.last = None;
        self.rows.clear();
        RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| e.to_string())
    }
}
