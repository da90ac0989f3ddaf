//! A table's output, assembled from its units in DB_KEY order.
//!
//! Units finish in any order; [`InOrder`] hands them on in sequence. Two
//! kinds of table, by what a unit can write before its turn:
//!
//! - [`ByteTable`] (CSV, TSV, JSON Lines): the unit whose turn it is
//!   writes its encoded bytes straight into a plain file (with one worker,
//!   every unit does: no byte is copied twice) and is cut off again if it
//!   fails; the others [`Spool`] their bytes and are appended when their
//!   turn comes. A compressed file or standard output cannot take bytes
//!   back, so there every unit is spooled.
//! - [`BatchTable`] (Parquet, Arrow IPC): every unit holds its batches
//!   ([`HeldBatches`]) until it is complete and in turn; then its rows are
//!   cut into the format's fixed-size groups, which the workers encode in
//!   parallel and the table's one writer appends in order.
//!
//! Where a table ends up is its [`Place`]: a file of the output directory,
//! written in the run's staging directory and moved in whole, numbered
//! part files there ([`PartFiles`]), or standard output. Parts are cut
//! after the units are back in order, from the rows alone: text by
//! [`TextParts`] in the assembled stream, Parquet and Arrow by a writer
//! per part, its groups cut at part boundaries.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use fbunload_exec::{ExecError, UnitWriter, Written};
use fbunload_format::compress::Compressor;
use fbunload_format::groups::CutGroup;
use fbunload_format::parts::TextParts;
use fbunload_format::{
    encode_in_pieces, BatchEncoder, BatchFormat, ByteFormat, Compression, EncodedGroup, FileInfo,
    FormatError, GroupCutter, GroupEncoder, TableWriter,
};

use crate::budget::{Taken, WAIT_TICK};
use crate::digest::{Hashing, RunningDigest, SharedHashing};
use crate::directory::OutputDir;
use crate::parts::PartFiles;
use crate::spool::{HeldBatches, HeldSource, MemoryBudget, Spool};

/// Units of one table waiting for their turn.
pub(crate) struct InOrder<H> {
    next: usize,
    waiting: BTreeMap<usize, H>,
}

impl<H> InOrder<H> {
    pub fn new() -> Self {
        InOrder {
            next: 0,
            waiting: BTreeMap::new(),
        }
    }

    /// The unit whose turn it is.
    pub fn next(&self) -> usize {
        self.next
    }

    /// Unit `seq` is complete: `held` is what it holds, `None` if it was
    /// in turn and wrote straight to the output. Hands every unit now in
    /// turn to `append`, in order.
    pub fn arrive<E>(
        &mut self,
        seq: usize,
        held: Option<H>,
        append: &mut dyn FnMut(H) -> Result<(), E>,
    ) -> Result<(), E> {
        match held {
            Some(held) => {
                self.waiting.insert(seq, held);
            }
            None => {
                debug_assert_eq!(seq, self.next);
                self.next += 1;
            }
        }
        while let Some(held) = self.waiting.remove(&self.next) {
            append(held)?;
            self.next += 1;
        }
        Ok(())
    }
}

/// Where a table goes.
#[derive(Clone)]
pub(crate) enum Place {
    /// `file_name` in the output directory.
    File {
        dir: Arc<OutputDir>,
        file_name: String,
    },
    /// Numbered part files in the output directory.
    Parts(Arc<PartFiles>),
    /// Standard output; spilled units go to `spill`.
    Stdout { spill: PathBuf },
}

impl Place {
    /// The path named in messages.
    fn shown(&self) -> PathBuf {
        match self {
            Place::File { dir, file_name } => dir.path().join(file_name),
            Place::Parts(parts) => parts.dir().path().join(parts.name(1)),
            Place::Stdout { .. } => PathBuf::from("standard output"),
        }
    }

    fn part_path(&self, table_index: usize, seq: usize) -> PathBuf {
        let dir = match self {
            Place::File { dir, .. } => dir.staging(),
            Place::Parts(parts) => parts.dir().staging(),
            Place::Stdout { spill } => spill,
        };
        dir.join(format!("table{table_index}.unit{seq}.part"))
    }
}

/// What every table of a destination shares.
pub(crate) struct TableContext {
    pub name: String,
    /// Position in the plan: part files are named by it, never by the
    /// table's name.
    pub index: usize,
    pub units: usize,
    pub schema: SchemaRef,
    pub place: Place,
    pub budget: Arc<MemoryBudget>,
    /// Bytes sent to standard output, for the summary.
    pub stdout_bytes: Arc<AtomicU64>,
}

impl TableContext {
    fn output_error(&self, source: io::Error) -> ExecError {
        ExecError::output(&self.name, self.place.shown(), source)
    }

    /// A table not complete at the end is an error unless it has no units
    /// (then it is completed with what it holds of its own).
    fn check_no_units(&self) -> Result<(), ExecError> {
        if self.units > 0 {
            return Err(ExecError::table(
                &self.name,
                "incomplete: not every unit was written",
            ));
        }
        Ok(())
    }

    fn format_error(&self, err: FormatError) -> ExecError {
        match err.into_io() {
            Ok(e) => self.output_error(e),
            Err(other) => ExecError::table(&self.name, other),
        }
    }
}

/// A byte stream a table is written to, that knows how to end itself.
trait Finish: Write + Send {
    fn finish(self: Box<Self>) -> io::Result<()>;
}

impl<W: Write + Send> Finish for Compressor<W> {
    fn finish(self: Box<Self>) -> io::Result<()> {
        (*self).finish()?.flush()
    }
}

impl Finish for TextParts {
    fn finish(self: Box<Self>) -> io::Result<()> {
        (*self).finish().map(drop)
    }
}

/// Standard output, not compressed.
struct Plain<W: Write + Send>(W);

impl<W: Write + Send> Write for Plain<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<W: Write + Send> Finish for Plain<W> {
    fn finish(mut self: Box<Self>) -> io::Result<()> {
        self.0.flush()
    }
}

/// Counts what passes through to standard output, for the summary.
struct Counted<W> {
    inner: W,
    bytes: Arc<AtomicU64>,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Where a unit of a byte table writes.
enum UnitBytes {
    /// Straight into the table's file (this unit is in turn), which was
    /// this long when the unit began; hashing into a copy of the file's
    /// digest, which replaces the table's when the unit completes.
    Direct(File, u64, RunningDigest),
    Spooled(Spool),
}

/// The table's open output.
enum ByteOut {
    /// A plain file: in-turn units write into it directly.
    File(File),
    /// A compressor or standard output: every unit is spooled.
    Stream(Box<dyn Finish>),
}

struct ByteState {
    out: Option<ByteOut>,
    order: InOrder<Spool>,
    direct_active: bool,
    /// Of everything in the plain file so far but a direct unit's bytes.
    digest: Option<RunningDigest>,
    /// Set once the table is complete.
    written: Option<Written>,
}

/// A table of a byte format.
pub(crate) struct ByteTable {
    context: TableContext,
    format: Arc<dyn ByteFormat>,
    compression: Option<Compression>,
    state: Mutex<ByteState>,
}

impl ByteTable {
    pub fn new(
        context: TableContext,
        format: Arc<dyn ByteFormat>,
        compression: Option<Compression>,
    ) -> Self {
        ByteTable {
            context,
            format,
            compression,
            state: Mutex::new(ByteState {
                out: None,
                order: InOrder::new(),
                direct_active: false,
                digest: None,
                written: None,
            }),
        }
    }

    /// Opens the output and writes the header, at the first unit; for a
    /// plain file, the digest of the header.
    fn open(&self) -> io::Result<(ByteOut, Option<RunningDigest>)> {
        let header = self.format.header(&self.context.schema);
        let mut out = match (&self.context.place, self.compression) {
            // Each part gets the header.
            (Place::Parts(parts), compression) => {
                return Ok((
                    ByteOut::Stream(Box::new(TextParts::new(
                        parts.limits,
                        header,
                        self.format.records(),
                        compression,
                        parts.opener(),
                    ))),
                    None,
                ))
            }
            (Place::File { dir, file_name }, None) => ByteOut::File(dir.create(file_name)?),
            (Place::File { dir, file_name }, Some(c)) => ByteOut::Stream(Box::new(
                Compressor::new(c, BufWriter::new(dir.create(file_name)?))?,
            )),
            (Place::Stdout { .. }, compression) => {
                let stdout = Counted {
                    inner: io::stdout(),
                    bytes: self.context.stdout_bytes.clone(),
                };
                match compression {
                    None => ByteOut::Stream(Box::new(Plain(stdout))),
                    Some(c) => ByteOut::Stream(Box::new(Compressor::new(c, stdout)?)),
                }
            }
        };
        let mut digest = None;
        match &mut out {
            ByteOut::File(f) => {
                f.write_all(&header)?;
                digest
                    .get_or_insert_with(RunningDigest::default)
                    .update(&header);
            }
            ByteOut::Stream(s) => s.write_all(&header)?,
        }
        Ok((out, digest))
    }

    pub fn begin(&self, seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        let mut state = self.state.lock().unwrap();
        if state.out.is_none() {
            let (out, digest) = self.open().map_err(|e| self.context.output_error(e))?;
            state.out = Some(out);
            state.digest = digest;
        }
        let in_turn = seq == state.order.next() && !state.direct_active;
        let sink = match state.out.as_mut() {
            Some(ByteOut::File(file)) if in_turn => {
                let start = file
                    .stream_position()
                    .map_err(|e| self.context.output_error(e))?;
                let file = file.try_clone().map_err(|e| self.context.output_error(e))?;
                state.direct_active = true;
                let digest = state.digest.clone().expect("a plain file's digest");
                UnitBytes::Direct(file, start, digest)
            }
            _ => UnitBytes::Spooled(Spool::new(
                self.context.budget.clone(),
                self.context.place.part_path(self.context.index, seq),
            )),
        };
        Ok(Box::new(ByteUnit {
            table: self,
            seq,
            encoder: self.format.encoder(self.context.schema.clone()),
            buffer: Vec::new(),
            sink,
        }))
    }

    fn finish_unit(&self, seq: usize, sink: UnitBytes) -> Result<bool, ExecError> {
        let mut state = self.state.lock().unwrap();
        let state = &mut *state;
        let held = match sink {
            UnitBytes::Direct(_, _, digest) => {
                state.direct_active = false;
                state.digest = Some(digest);
                None
            }
            UnitBytes::Spooled(spool) => Some(spool),
        };
        let out = state.out.as_mut().expect("opened by the unit's begin");
        let digest = &mut state.digest;
        state
            .order
            .arrive(seq, held, &mut |spool: Spool| match out {
                ByteOut::File(f) => spool.drain_into(&mut Hashing {
                    inner: &mut *f,
                    digest: digest.as_mut().expect("a plain file's digest"),
                }),
                ByteOut::Stream(s) => spool.drain_into(s),
            })
            .map_err(|e| self.context.output_error(e))?;
        if state.order.next() < self.context.units {
            return Ok(false);
        }
        self.complete(state)?;
        Ok(true)
    }

    fn complete(&self, state: &mut ByteState) -> Result<(), ExecError> {
        let (out, digest) = match state.out.take() {
            Some(out) => (out, state.digest.take()),
            None => self.open().map_err(|e| self.context.output_error(e))?,
        };
        // A file is synced with the run's others before the switch.
        let done = match out {
            ByteOut::File(_) => Ok(()),
            ByteOut::Stream(stream) => stream.finish(),
        };
        done.map_err(|e| self.context.output_error(e))?;
        state.written = Some(publish(&self.context, digest)?);
        Ok(())
    }

    fn abandon(&self, sink: UnitBytes) -> Result<(), ExecError> {
        let mut state = self.state.lock().unwrap();
        if let UnitBytes::Direct(mut file, start, _) = sink {
            // The handle shares its offset with the table's: rewind both.
            file.set_len(start)
                .and_then(|_| file.seek(SeekFrom::Start(start)))
                .map_err(|e| self.context.output_error(e))?;
            state.direct_active = false;
        }
        Ok(())
    }
}

/// Moves a finished table into the output directory; what it wrote.
/// `hashed`: the digest of its one file, taken as it was written.
fn publish(context: &TableContext, hashed: Option<RunningDigest>) -> Result<Written, ExecError> {
    match &context.place {
        Place::File { dir, file_name } => {
            let (path, files) = dir
                .publish_hashed(file_name, hashed)
                .map_err(|e| context.output_error(e))?;
            Ok(Written {
                path: Some(path),
                bytes: files.iter().map(|f| f.bytes).sum(),
                files,
            })
        }
        Place::Parts(parts) => {
            let (first, files) = parts.publish().map_err(|e| context.output_error(e))?;
            Ok(Written {
                path: Some(first),
                bytes: files.iter().map(|f| f.bytes).sum(),
                files,
            })
        }
        Place::Stdout { .. } => Ok(Written {
            path: None,
            bytes: context.stdout_bytes.load(Ordering::Relaxed),
            files: Vec::new(),
        }),
    }
}

impl Table for ByteTable {
    fn begin_unit(&self, seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        self.begin(seq)
    }

    fn finish(&self) -> Result<Written, ExecError> {
        let mut state = self.state.lock().unwrap();
        if state.written.is_none() {
            self.context.check_no_units()?;
            self.complete(&mut state)?;
        }
        Ok(state.written.clone().expect("completed above"))
    }
}

struct ByteUnit<'t> {
    table: &'t ByteTable,
    seq: usize,
    encoder: Box<dyn BatchEncoder>,
    /// Reused for every piece of every batch of the unit.
    buffer: Vec<u8>,
    sink: UnitBytes,
}

impl UnitWriter for ByteUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        let context = &self.table.context;
        let sink = &mut self.sink;
        let mut write = |bytes: &[u8]| match sink {
            UnitBytes::Direct(file, _, digest) => {
                let written = file.write_all(bytes);
                digest.update_written(file, bytes);
                written
            }
            UnitBytes::Spooled(spool) => spool.write_all(bytes),
        };
        encode_in_pieces(self.encoder.as_mut(), &batch, &mut self.buffer, &mut write)
            .map_err(|e| context.format_error(e))
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        self.table.finish_unit(self.seq, self.sink)
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        self.table.abandon(self.sink)
    }
}

/// A table of a batch format.
///
/// Units hold their batches until they are complete and in turn; then
/// their rows are cut into the format's groups ([`GroupCutter`]). Every
/// worker that finishes a unit of the table takes the next cut group,
/// encodes it outside the lock (Parquet's column encoding and compression,
/// the costly part, so it runs on as many threads as there are workers),
/// and appends whatever groups are then in turn. Units in turn are read
/// back a batch at a time, as groups are taken, so a spilled unit is not
/// read back into memory at once. The worker whose unit completed the
/// table waits for the groups still being encoded, then writes the footer.
///
/// Groups cut, being encoded and encoded ahead of their turn are counted
/// in the run's budget; a worker whose group finds no room waits, unless
/// it is the group the writer needs next (see [`crate::budget`]).
pub(crate) struct BatchTable {
    context: TableContext,
    format: Arc<dyn BatchFormat>,
    /// What its file records about where it came from.
    info: FileInfo,
    state: Mutex<BatchState>,
    /// Signalled whenever a group's encoding ends.
    encoded: Condvar,
    /// Of the table's one file, as its writer writes it.
    digest: Arc<Mutex<RunningDigest>>,
    /// Whether `digest` is of the table's file (a plain file, not parts).
    hashed: AtomicBool,
}

struct BatchState {
    writer: Option<OpenWriter>,
    units: InOrder<HeldBatches>,
    /// Units in turn, not all cut into groups yet.
    in_turn: VecDeque<HeldSource>,
    /// Groups cut, waiting for a thread to encode them.
    cut: VecDeque<Cut>,
    /// Groups encoded ahead of their turn.
    groups: InOrder<Encoded>,
    /// Groups being encoded now.
    encoding: usize,
    /// Set when encoding or appending a group failed.
    failed: bool,
    /// Set once the table is complete.
    written: Option<Written>,
}

/// A group cut, with the budget its rows take.
struct Cut {
    group: CutGroup,
    rows: Taken,
}

/// A group encoded, with the budget it takes until it is appended.
struct Encoded {
    group: EncodedGroup,
    ends_part: bool,
    _held: Taken,
}

/// Bytes of the rows of `batches`, pieces of bigger batches counted by
/// their share of them.
fn rows_bytes(batches: &[RecordBatch]) -> usize {
    batches
        .iter()
        .flat_map(|b| b.columns())
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum()
}

struct OpenWriter {
    /// The file being written; between two parts, none.
    writer: Option<Box<dyn TableWriter>>,
    /// The first writer's: it encodes for every part.
    encoder: Arc<dyn GroupEncoder>,
    cutter: GroupCutter,
}

impl BatchTable {
    pub fn new(
        context: TableContext,
        format: Arc<dyn BatchFormat>,
        snapshot_number: Option<u64>,
    ) -> Self {
        let info = FileInfo {
            table: context.name.clone(),
            snapshot_number,
        };
        BatchTable {
            context,
            format,
            info,
            state: Mutex::new(BatchState {
                writer: None,
                units: InOrder::new(),
                in_turn: VecDeque::new(),
                cut: VecDeque::new(),
                groups: InOrder::new(),
                encoding: 0,
                failed: false,
                written: None,
            }),
            encoded: Condvar::new(),
            digest: Arc::default(),
            hashed: AtomicBool::new(false),
        }
    }

    fn open(&self) -> Result<OpenWriter, ExecError> {
        let writer = self.open_writer()?;
        let part_rows = match &self.context.place {
            Place::Parts(parts) => parts.limits.rows,
            _ => None,
        };
        let encoder = writer.encoder();
        // The group its writer needs next goes ahead whatever the budget:
        // its rows and what encoding them holds stay free for it.
        if let Some(bytes) = writer.group_bytes() {
            self.context
                .budget
                .keep_free(bytes + encoder.working_bytes(bytes));
        }
        Ok(OpenWriter {
            encoder,
            cutter: GroupCutter::new(writer.group_rows())
                .with_group_bytes(writer.group_bytes())
                .with_part_rows(part_rows),
            writer: Some(writer),
        })
    }

    /// A writer of the table's file, or of its next part.
    fn open_writer(&self) -> Result<Box<dyn TableWriter>, ExecError> {
        let next_part: fbunload_format::NextPart = match &self.context.place {
            Place::Parts(parts) => parts.opener(),
            Place::File { dir, file_name } if self.format.writes_parts() => {
                let parts = dir
                    .create_dir(file_name)
                    .map_err(|e| self.context.output_error(e))?;
                let mut count = 0usize;
                Box::new(move || {
                    let part = parts.join(format!("part-{count:05}.parquet"));
                    count += 1;
                    let file = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(part)?;
                    Ok(Box::new(BufWriter::new(file)) as Box<dyn Write + Send>)
                })
            }
            Place::File { dir, file_name } => {
                let file = dir
                    .create(file_name)
                    .map_err(|e| self.context.output_error(e))?;
                let mut file = Some(file);
                let digest = self.digest.clone();
                self.hashed.store(true, Ordering::Release);
                Box::new(move || {
                    let file = file
                        .take()
                        .ok_or_else(|| io::Error::other("one file only"))?;
                    let hashing = SharedHashing {
                        inner: file,
                        digest: digest.clone(),
                    };
                    Ok(Box::new(BufWriter::new(hashing)) as Box<dyn Write + Send>)
                })
            }
            Place::Stdout { .. } => {
                let bytes = self.context.stdout_bytes.clone();
                Box::new(move || {
                    Ok(Box::new(Counted {
                        inner: io::stdout(),
                        bytes: bytes.clone(),
                    }) as Box<dyn Write + Send>)
                })
            }
        };
        self.format
            .writer(self.context.schema.clone(), &self.info, next_part)
            .map_err(|e| self.context.format_error(e))
    }

    /// Appends the next group in order; ends the part if it is full.
    fn append(
        &self,
        open: &mut OpenWriter,
        group: EncodedGroup,
        ends_part: bool,
    ) -> Result<(), ExecError> {
        if open.writer.is_none() {
            open.writer = Some(self.open_writer()?);
        }
        let writer = open.writer.as_mut().expect("opened above");
        writer
            .append(group)
            .map_err(|e| self.context.format_error(e))?;
        let Place::Parts(parts) = &self.context.place else {
            return Ok(());
        };
        let full = ends_part
            || parts
                .limits
                .bytes
                .is_some_and(|max| writer.bytes_written() >= max);
        if full {
            // The next part opens with the next group, if there is one.
            let done = open.writer.take().expect("written above");
            done.finish().map_err(|e| self.context.format_error(e))?;
        }
        Ok(())
    }

    fn finish_unit(&self, seq: usize, held: HeldBatches) -> Result<bool, ExecError> {
        let mut state = self.state.lock().unwrap();
        if state.writer.is_none() {
            state.writer = Some(self.open()?);
        }
        let BatchState { units, in_turn, .. } = &mut *state;
        units.arrive(seq, Some(held), &mut |held| {
            let batches = held
                .into_batches()
                .map_err(|e| self.context.format_error(FormatError::Arrow(e)))?;
            in_turn.push_back(batches);
            Ok::<(), ExecError>(())
        })?;
        let completes_table = state.units.next() == self.context.units;
        let budget = &self.context.budget;
        loop {
            if state.failed {
                return Err(self.failed_elsewhere());
            }
            if budget.is_stopped() {
                return Err(ExecError::Interrupted);
            }
            // Enough groups are being encoded: the threads encoding them
            // take this unit's groups too as they finish theirs, since they
            // loop until nothing is left to cut.
            if !budget.try_start_encoding(state.encoding) {
                break;
            }
            let cut = match self.next_group(&mut state) {
                Ok(Some(cut)) => cut,
                Ok(None) => {
                    budget.end_encoding();
                    break;
                }
                Err(e) => {
                    budget.end_encoding();
                    // Rows are lost: no thread may complete the table now.
                    state.failed = true;
                    return Err(e);
                }
            };
            // While it is encoded, a group takes what its encoder says
            // beside its rows (copies, the pages it makes, and for Parquet
            // the one column writer it holds at a time). The group the
            // writer needs next always goes ahead; any other waits for
            // room, which groups ahead of it, being encoded, give back as
            // they are appended.
            let encoder = state.writer.as_ref().expect("opened above").encoder.clone();
            let rows = encoder.working_bytes(cut.rows.bytes());
            let work = if cut.group.index == state.groups.next() {
                Taken::over(budget, rows)
            } else if let Some(work) = Taken::within(budget, rows) {
                work
            } else {
                budget.end_encoding();
                debug_assert!(state.encoding > 0, "a group ahead is being encoded");
                state.cut.push_front(cut);
                state = self.encoded.wait_timeout(state, WAIT_TICK).unwrap().0;
                continue;
            };
            state.encoding += 1;
            drop(state);
            let Cut { group, rows } = cut;
            let (index, ends_part) = (group.index, group.ends_part);
            let encoded = encoder.encode(index, group.batches);
            drop(rows);
            drop(work);
            state = self.state.lock().unwrap();
            state.encoding -= 1;
            budget.end_encoding();
            let appended = encoded
                .map_err(|e| self.context.format_error(e))
                .and_then(|encoded| {
                    let held = Taken::over(budget, encoded.memory_size());
                    let BatchState { writer, groups, .. } = &mut *state;
                    let open = writer.as_mut().expect("opened above");
                    let encoded = Encoded {
                        group: encoded,
                        ends_part,
                        _held: held,
                    };
                    groups.arrive(index, Some(encoded), &mut |e| {
                        self.append(open, e.group, e.ends_part)
                    })
                });
            self.encoded.notify_all();
            if let Err(e) = appended {
                state.failed = true;
                return Err(e);
            }
        }
        if !completes_table {
            return Ok(false);
        }
        while state.encoding > 0 {
            state = self.encoded.wait(state).unwrap();
        }
        if state.failed {
            return Err(self.failed_elsewhere());
        }
        self.complete(&mut state)?;
        Ok(true)
    }

    /// The next group to encode: one already cut, or cut from the units
    /// in turn, or the table's last, shorter group once every unit is in.
    fn next_group(&self, state: &mut BatchState) -> Result<Option<Cut>, ExecError> {
        let budget = &self.context.budget;
        let counted = |group: CutGroup| Cut {
            rows: Taken::over(budget, rows_bytes(&group.batches)),
            group,
        };
        loop {
            if let Some(cut) = state.cut.pop_front() {
                return Ok(Some(cut));
            }
            let cutter = &mut state.writer.as_mut().expect("opened").cutter;
            match state.in_turn.front_mut() {
                Some(unit) => {
                    let batch = unit
                        .next_batch()
                        .map_err(|e| self.context.format_error(FormatError::Arrow(e)))?;
                    match batch {
                        Some(batch) => state
                            .cut
                            .extend(cutter.push(batch).into_iter().map(counted)),
                        None => drop(state.in_turn.pop_front()),
                    }
                }
                None if state.units.next() == self.context.units => {
                    return Ok(cutter.finish().map(counted));
                }
                None => return Ok(None),
            }
        }
    }

    fn failed_elsewhere(&self) -> ExecError {
        ExecError::table(&self.context.name, "incomplete: writing a row group failed")
    }

    fn complete(&self, state: &mut BatchState) -> Result<(), ExecError> {
        let open = match state.writer.take() {
            Some(open) => open,
            None => self.open()?,
        };
        if let Some(writer) = open.writer {
            writer.finish().map_err(|e| self.context.format_error(e))?;
        }
        // The writer is finished and gone, its buffer flushed.
        let hashed = self
            .hashed
            .load(Ordering::Acquire)
            .then(|| self.digest.lock().unwrap().clone());
        state.written = Some(publish(&self.context, hashed)?);
        Ok(())
    }
}

impl Table for BatchTable {
    fn begin_unit(&self, seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        Ok(Box::new(BatchUnit {
            table: self,
            seq,
            held: HeldBatches::new(
                self.context.budget.clone(),
                self.context.place.part_path(self.context.index, seq),
            ),
        }))
    }

    fn finish(&self) -> Result<Written, ExecError> {
        let mut state = self.state.lock().unwrap();
        if state.written.is_none() {
            self.context.check_no_units()?;
            self.complete(&mut state)?;
        }
        Ok(state.written.clone().expect("completed above"))
    }
}

struct BatchUnit<'t> {
    table: &'t BatchTable,
    seq: usize,
    held: HeldBatches,
}

impl UnitWriter for BatchUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        self.held
            .push(batch)
            .map_err(|e| self.table.context.format_error(FormatError::Arrow(e)))
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        self.table.finish_unit(self.seq, self.held)
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        Ok(())
    }
}

/// A table of either kind, as a destination drives it.
pub(crate) trait Table: Send + Sync {
    fn begin_unit(&self, seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError>;
    /// What the complete table wrote; a table of no units is completed
    /// here (with what it has of its own: a header, a schema).
    fn finish(&self) -> Result<Written, ExecError>;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use fbunload_format::columnar::ParquetFormat;

    use super::*;
    use crate::directory::Reuse;

    const UNITS: usize = 40;
    const UNIT_ROWS: i64 = 700;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("N", DataType::Int64, false),
            Field::new("S", DataType::Utf8, false),
        ]))
    }

    /// Unit `seq`'s rows, in batches of 128.
    fn unit_batches(seq: usize) -> Vec<RecordBatch> {
        let first = seq as i64 * UNIT_ROWS;
        (first..first + UNIT_ROWS)
            .collect::<Vec<_>>()
            .chunks(128)
            .map(|n| {
                let text: Vec<String> = n.iter().map(|v| format!("row {v:08}")).collect();
                RecordBatch::try_new(
                    schema(),
                    vec![
                        Arc::new(Int64Array::from(n.to_vec())) as ArrayRef,
                        Arc::new(StringArray::from(text)) as ArrayRef,
                    ],
                )
                .unwrap()
            })
            .collect()
    }

    /// Table T of `units` units, read into T.parquet in `out`.
    fn parquet_context(
        out: &Arc<OutputDir>,
        units: usize,
        budget: &Arc<MemoryBudget>,
    ) -> TableContext {
        TableContext {
            name: "T".into(),
            index: 0,
            units,
            schema: schema(),
            place: Place::File {
                dir: out.clone(),
                file_name: "T.parquet".into(),
            },
            budget: budget.clone(),
            stdout_bytes: Arc::default(),
        }
    }

    /// One Parquet table of row groups of 500 rows, its units finished by
    /// `threads` threads in a scrambled order, within `budget` bytes:
    /// the file, and the budget's peak.
    fn parquet_table(threads: usize, budget: usize) -> (Vec<u8>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let out = OutputDir::open(&dir.path().join("out"), Reuse::Refuse).unwrap();
        let budget = MemoryBudget::new(budget);
        let context = parquet_context(&out, UNITS, &budget);
        let format = ParquetFormat {
            row_group_rows: 500,
            ..ParquetFormat::default()
        };
        let table = BatchTable::new(context, Arc::new(format), None);
        let next = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for t in 0..threads {
                let (table, next) = (&table, &next);
                scope.spawn(move || loop {
                    let seq = next.fetch_add(1, Ordering::SeqCst);
                    if seq >= UNITS {
                        return;
                    }
                    let mut unit = table.begin_unit(seq).unwrap();
                    for batch in unit_batches(seq) {
                        unit.write(batch).unwrap();
                    }
                    // Later units of some threads finish first.
                    std::thread::sleep(Duration::from_millis(((seq * 7 + t) % 5) as u64));
                    unit.finish().unwrap();
                });
            }
        });
        let written = table.finish().unwrap();
        assert_eq!(budget.used(), 0, "everything taken is given back");
        assert!(written.path.is_some());
        // Published files wait in the staging directory for the run's end.
        let bytes = std::fs::read(out.staging().join("T.parquet")).unwrap();
        (bytes, budget.peak())
    }

    #[test]
    fn a_small_budget_makes_workers_wait_never_for_ever_and_the_same_file() {
        let (alone, _) = parquet_table(1, 64 << 20);
        // A budget smaller than one row group: every group but the one
        // the writer needs next waits for room.
        let group = rows_bytes(&unit_batches(0));
        let (sender, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || sender.send(parquet_table(8, group / 4)).unwrap());
        let (squeezed, peak) = done
            .recv_timeout(Duration::from_secs(120))
            .expect("8 threads within a tiny budget finish (no deadlock)");
        assert!(squeezed == alone, "the same file whatever the budget");
        // Over the budget by what must proceed: the group the writer needs
        // next, its encoding (with its column writer's fixed share, bigger
        // than these tiny groups), rows read back: a few groups, not the
        // table.
        let table = rows_bytes(&unit_batches(0)) * UNITS;
        let writers = fbunload_format::columnar::COLUMN_WRITER_BYTES;
        assert!(
            peak < table / 3 + writers,
            "peak {peak} of a table of {table}"
        );
    }

    #[test]
    fn a_parquet_table_keeps_its_next_group_s_bytes_free_and_units_spill_first() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutputDir::open(&dir.path().join("out"), Reuse::Refuse).unwrap();
        let group = 1 << 20;
        // Room for the group's rows and its encoding, and 64 KiB more.
        let kept = group + group + fbunload_format::columnar::COLUMN_WRITER_BYTES;
        let budget = MemoryBudget::new(kept + (64 << 10));
        let context = parquet_context(&out, 2, &budget);
        let format = ParquetFormat {
            row_group_bytes: Some(group),
            ..ParquetFormat::default()
        };
        let table = BatchTable::new(context, Arc::new(format), None);
        // Unit 1 finishes first and waits for unit 0: the table is open.
        let mut second = table.begin_unit(1).unwrap();
        for batch in unit_batches(1) {
            second.write(batch).unwrap();
        }
        assert!(!second.finish().unwrap());
        assert_eq!(budget.kept_free(), kept);
        // Unit 0's rows (more than the 64 KiB left) go to a part file.
        let mut first = table.begin_unit(0).unwrap();
        for _ in 0..8 {
            for batch in unit_batches(0) {
                first.write(batch).unwrap();
            }
        }
        assert!(
            budget.used() <= budget.total() - kept,
            "units hold {} of the {} not kept free",
            budget.used(),
            budget.total() - kept
        );
        drop(first);
    }

    #[test]
    fn taken_bytes_come_back_when_dropped_and_the_peak_is_kept() {
        let budget = MemoryBudget::new(100);
        let a = Taken::within(&budget, 60).expect("fits");
        assert!(Taken::within(&budget, 50).is_none(), "would not fit");
        let b = Taken::over(&budget, 50);
        assert_eq!((budget.used(), budget.free(), budget.peak()), (110, 0, 110));
        drop(a);
        assert_eq!((budget.used(), budget.free()), (50, 50));
        let c = Taken::within(&budget, 50).expect("fits again");
        drop((b, c));
        assert_eq!((budget.used(), budget.peak()), (0, 110));
    }
}
