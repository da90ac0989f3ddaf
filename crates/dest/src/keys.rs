//! Primary keys of an incremental run (`--since`, `--keep-keys`): the
//! keys entries' rows (the key's columns and each row's DB_KEY) are
//! gathered by a [`KeySink`], which holds them within a memory limit and
//! spills them beyond it in sorted runs (`keyruns`); once the run is
//! complete each table's keys are merged in key order into
//! `<TABLE>.keys.parquet` (Parquet whatever the format), and the keys the
//! previous run had that the new snapshot has not are the table's
//! deletes, found in one pass over the sorted sets, each read a batch at
//! a time: memory does not grow with the table's rows.
//!
//! Keys compare by an exact, order-preserving byte encoding of their
//! values ([`KeyEncoder`]), per Arrow type. A keys file read back is not
//! trusted: it must hold each key once, in ascending order, none null, as
//! many as its manifest says.

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::sync::Mutex;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use fbunload_exec::{ExecError, FileDigest, UnitWriter, Written};
use fbunload_plan::{DbKeyLayout, Unit};

use crate::keyruns::{Cursor, KeySink, Merged, Rows, BATCH_ROWS};
use crate::order::Table;

/// A count entry of the plan: its units' counts, kept until the run ends
/// as bare numbers. A unit's count is one row of 64 BIGINTs: kept as the
/// record batch it was read as, each of its 64 arrays with allocations
/// and bookkeeping of its own; as numbers, 512 bytes. A table has as many
/// units as its pages (117 at 4,000,000 rows of STOCK, and 955 at
/// --unit-pages 200).
pub(crate) struct KeyTable {
    units: Mutex<BTreeMap<usize, UnitCounts>>,
}

/// A unit's counts, in its first batch's column order; `None` when that
/// batch was not one row of BIGINTs, none null.
pub(crate) type UnitCounts = Option<Box<[i64]>>;

impl KeyTable {
    pub fn new() -> Self {
        KeyTable {
            units: Mutex::default(),
        }
    }

    /// The counts of each unit that returned a batch, by its sequence
    /// number.
    pub fn units(&self) -> BTreeMap<usize, UnitCounts> {
        self.units.lock().unwrap().clone()
    }

    /// Unit `seq`'s counts, as its reader listed them in an empty batch's
    /// metadata ([`fbunload_plan::UNCHANGED_COUNTS_METADATA`]): the
    /// numbers a count entry's unit reads as one row of BIGINTs.
    fn insert_listed(&self, seq: usize, listed: &str) -> Result<(), String> {
        let counts: Box<[i64]> = listed
            .split(' ')
            .map(|n| {
                n.parse()
                    .map_err(|_| format!("unit {seq}'s counts are unreadable"))
            })
            .collect::<Result<_, _>>()?;
        self.units.lock().unwrap().insert(seq, Some(counts));
        Ok(())
    }
}

/// The one row of BIGINTs of `batch`, if that is what it holds.
fn counts_of(batch: &RecordBatch) -> UnitCounts {
    if batch.num_rows() != 1 {
        return None;
    }
    batch
        .columns()
        .iter()
        .map(|column| {
            column
                .as_primitive_opt::<Int64Type>()
                .filter(|c| !c.is_null(0))
                .map(|c| c.value(0))
        })
        .collect()
}

/// A table that keeps its keys: of each batch its reads return, the key's
/// columns and the DB_KEY go to `keys`, the table's columns to `file`.
pub(crate) struct KeptKeys {
    pub file: Box<dyn Table>,
    pub keys: Arc<KeyReads>,
    /// The key's columns, then the DB_KEY, in the batches read.
    pub key_columns: Vec<usize>,
    /// The table's own columns.
    pub file_columns: Vec<usize>,
    /// For a table read for its changes, where each unit's unchanged
    /// counts go, which its reader sends ahead of its rows.
    pub counts: Option<Arc<KeyTable>>,
}

impl Table for KeptKeys {
    fn begin_unit(&self, seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        Ok(Box::new(KeptKeysUnit {
            file: self.file.begin_unit(seq)?,
            keys: self.keys.begin_unit(seq)?,
            table: self,
            seq,
            counts: None,
        }))
    }

    fn finish(&self) -> Result<Written, ExecError> {
        self.file.finish()
    }
}

struct KeptKeysUnit<'a> {
    file: Box<dyn UnitWriter + 'a>,
    keys: Box<dyn UnitWriter + 'a>,
    table: &'a KeptKeys,
    seq: usize,
    /// The unit's unchanged counts, as listed, until it is complete.
    counts: Option<String>,
}

impl UnitWriter for KeptKeysUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        let listed = batch
            .schema_ref()
            .metadata()
            .get(fbunload_plan::UNCHANGED_COUNTS_METADATA);
        if let (Some(listed), 0) = (listed, batch.num_rows()) {
            self.counts = Some(listed.clone());
            return Ok(());
        }
        let project = |columns: &[usize]| {
            batch
                .project(columns)
                .map_err(|e| ExecError::Internal(e.to_string()))
        };
        self.keys.write(project(&self.table.key_columns)?)?;
        self.file.write(project(&self.table.file_columns)?)
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        // The counts count only once the unit is whole.
        if let (Some(table), Some(listed)) = (&self.table.counts, &self.counts) {
            table
                .insert_listed(self.seq, listed)
                .map_err(ExecError::Internal)?;
        }
        self.keys.finish()?;
        self.file.finish()
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        self.keys.abort()?;
        self.file.abort()
    }
}

/// `batch` in buffers of its own, sized to its rows. A count is one row,
/// but the reader's buffers are sized for a full batch (64 KiB a BIGINT
/// column of 8,192 rows): kept until the run ends, one unit's 64 counts
/// held 4 MiB, and the units of a 30,000,000-row table several hundred
/// MB.
pub(crate) fn compact(batch: &RecordBatch) -> Result<RecordBatch, String> {
    let all = UInt64Array::from_iter_values(0..batch.num_rows() as u64);
    arrow_select::take::take_record_batch(batch, &all).map_err(|e| e.to_string())
}

impl Table for KeyTable {
    fn begin_unit(&self, seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        Ok(Box::new(KeyUnit {
            table: self,
            seq,
            counts: None,
        }))
    }

    fn finish(&self) -> Result<Written, ExecError> {
        Ok(Written::default())
    }
}

struct KeyUnit<'a> {
    table: &'a KeyTable,
    seq: usize,
    /// Its first batch's counts; a count returns one batch.
    counts: Option<UnitCounts>,
}

impl UnitWriter for KeyUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        if self.counts.is_none() {
            self.counts = Some(counts_of(&batch));
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        if let Some(counts) = self.counts {
            self.table.units.lock().unwrap().insert(self.seq, counts);
        }
        Ok(false)
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        Ok(())
    }
}

/// Encodes one row's key as bytes whose order is the keys' order (by
/// column, then by value) and which are equal exactly when the values
/// are: a marker byte (a null first), then integers big-endian with the
/// sign bit flipped, floats by their total order, fixed-width bytes as
/// they are, variable-width ones with each 0 byte escaped (0, 255) and
/// ended by (0, 0), so that no key is a prefix of another.
pub struct KeyEncoder {
    columns: Vec<ArrayRef>,
}

impl KeyEncoder {
    /// An encoder of the rows of `batch`; fails on a type it cannot encode.
    pub fn new(batch: &RecordBatch) -> Result<Self, String> {
        for column in batch.columns() {
            if !encodable(column.data_type()) {
                return Err(format!(
                    "a key of type {} is not compared",
                    column.data_type()
                ));
            }
        }
        Ok(KeyEncoder {
            columns: batch.columns().to_vec(),
        })
    }

    /// Row `row`'s key, in place of `out`'s contents.
    pub fn key(&self, row: usize, out: &mut Vec<u8>) {
        out.clear();
        self.append(row, out);
    }

    /// Row `row`'s key, after `out`'s contents.
    pub(crate) fn append(&self, row: usize, out: &mut Vec<u8>) {
        for column in &self.columns {
            encode(column, row, out);
        }
    }
}

fn encodable(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float32
            | Float64
            | Date32
            | Date64
            | Time32(TimeUnit::Second | TimeUnit::Millisecond)
            | Time64(TimeUnit::Microsecond | TimeUnit::Nanosecond)
            | Timestamp(_, _)
            | Decimal128(_, _)
            | Decimal256(_, _)
            | Utf8
            | LargeUtf8
            | Binary
            | LargeBinary
            | FixedSizeBinary(_)
    )
}

fn encode(column: &ArrayRef, row: usize, out: &mut Vec<u8>) {
    use DataType::*;
    if column.is_null(row) {
        out.push(0);
        return;
    }
    out.push(1);
    // Two's complement, big-endian, top bit flipped: orders as the values.
    let signed = |out: &mut Vec<u8>, mut bytes: Vec<u8>| {
        bytes[0] ^= 0x80;
        out.extend_from_slice(&bytes);
    };
    macro_rules! int {
        ($t:ty) => {
            signed(
                out,
                column
                    .as_primitive::<$t>()
                    .value(row)
                    .to_be_bytes()
                    .to_vec(),
            )
        };
    }
    macro_rules! uint {
        ($t:ty) => {
            out.extend_from_slice(&column.as_primitive::<$t>().value(row).to_be_bytes())
        };
    }
    // IEEE bits, big-endian: a negative's all flipped, a positive's sign
    // bit set, so they order as the values.
    macro_rules! float {
        ($t:ty, $sign_bit:literal) => {{
            let bits = column.as_primitive::<$t>().value(row).to_bits();
            let bits = if bits >> $sign_bit == 1 {
                !bits
            } else {
                bits | 1 << $sign_bit
            };
            out.extend_from_slice(&bits.to_be_bytes());
        }};
    }
    let var = |out: &mut Vec<u8>, bytes: &[u8]| {
        for &b in bytes {
            out.push(b);
            if b == 0 {
                out.push(255);
            }
        }
        out.extend_from_slice(&[0, 0]);
    };
    match column.data_type() {
        Boolean => out.push(column.as_boolean().value(row) as u8),
        Int8 => int!(Int8Type),
        Int16 => int!(Int16Type),
        Int32 => int!(Int32Type),
        Int64 => int!(Int64Type),
        Date32 => int!(Date32Type),
        Date64 => int!(Date64Type),
        Time32(TimeUnit::Second) => int!(Time32SecondType),
        Time32(_) => int!(Time32MillisecondType),
        Time64(TimeUnit::Microsecond) => int!(Time64MicrosecondType),
        Time64(_) => int!(Time64NanosecondType),
        Timestamp(TimeUnit::Second, _) => int!(TimestampSecondType),
        Timestamp(TimeUnit::Millisecond, _) => int!(TimestampMillisecondType),
        Timestamp(TimeUnit::Microsecond, _) => int!(TimestampMicrosecondType),
        Timestamp(TimeUnit::Nanosecond, _) => int!(TimestampNanosecondType),
        UInt8 => uint!(UInt8Type),
        UInt16 => uint!(UInt16Type),
        UInt32 => uint!(UInt32Type),
        UInt64 => uint!(UInt64Type),
        Float32 => float!(Float32Type, 31),
        Float64 => float!(Float64Type, 63),
        Decimal128(_, _) => int!(Decimal128Type),
        Decimal256(_, _) => {
            let mut bytes = column
                .as_primitive::<Decimal256Type>()
                .value(row)
                .to_le_bytes();
            bytes.reverse();
            signed(out, bytes.to_vec());
        }
        Utf8 => var(out, column.as_string::<i32>().value(row).as_bytes()),
        LargeUtf8 => var(out, column.as_string::<i64>().value(row).as_bytes()),
        Binary => var(out, column.as_binary::<i32>().value(row)),
        LargeBinary => var(out, column.as_binary::<i64>().value(row)),
        FixedSizeBinary(_) => out.extend_from_slice(column.as_fixed_size_binary().value(row)),
        other => unreachable!("{other} is refused by KeyEncoder::new"),
    }
}

/// The keys of `batches`, as a set.
pub fn key_set(batches: &[RecordBatch]) -> Result<HashSet<Vec<u8>>, String> {
    let mut set = HashSet::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
    let mut key = Vec::new();
    for batch in batches {
        let encoder = KeyEncoder::new(batch)?;
        for row in 0..batch.num_rows() {
            encoder.key(row, &mut key);
            set.insert(key.clone());
        }
    }
    Ok(set)
}

/// A keys entry's reads: of each batch, the key's columns, and the DB_KEY
/// as its row's number, gathered by a [`KeySink`] (spilled in sorted runs
/// beyond its memory).
pub(crate) struct KeyReads {
    pub sink: KeySink,
    pub layout: DbKeyLayout,
}

impl KeyReads {
    /// The schema of the batches a sink of `read` (the key's columns,
    /// then the DB_KEY) holds: the key's columns, then the numbers.
    pub fn sink_schema(read: &Schema) -> SchemaRef {
        let mut fields: Vec<_> = read.fields().iter().cloned().collect();
        fields.pop();
        fields.push(Arc::new(Field::new(NUMBER_COLUMN, DataType::UInt64, false)));
        Arc::new(Schema::new(fields))
    }
}

impl Table for KeyReads {
    fn begin_unit(&self, _seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        Ok(Box::new(KeyReadsUnit {
            reads: self,
            batches: Vec::new(),
        }))
    }

    fn finish(&self) -> Result<Written, ExecError> {
        Ok(Written::default())
    }
}

struct KeyReadsUnit<'a> {
    reads: &'a KeyReads,
    batches: Vec<RecordBatch>,
}

impl UnitWriter for KeyReadsUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        let batch = numbered_batch(&self.reads.sink.schema, &batch, self.reads.layout)
            .map_err(ExecError::Internal)?;
        // A few keys in the reader's buffers, sized for 8,192 rows, are
        // copied out of them: a --keep-keys run of 5,000 small tables
        // held one such batch a table (32 KiB for an INTEGER key), 165
        // MB in all; copying at most SMALL_PIECE_ROWS keys costs little.
        let batch = if batch.num_rows() <= fbunload_format::groups::SMALL_PIECE_ROWS {
            compact(&batch).map_err(ExecError::Internal)?
        } else {
            batch
        };
        self.batches.push(batch);
        Ok(())
    }

    /// A unit's keys count once it is complete (a unit read again after a
    /// failure gives them again).
    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        self.reads
            .sink
            .add(self.batches)
            .map_err(ExecError::Internal)?;
        Ok(false)
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        Ok(())
    }
}

/// A batch as a read returns it (the key's columns, then the DB_KEY) as
/// `schema`'s: the DB_KEY as its row's number.
fn numbered_batch(
    schema: &SchemaRef,
    batch: &RecordBatch,
    layout: DbKeyLayout,
) -> Result<RecordBatch, String> {
    let last = batch
        .num_columns()
        .checked_sub(1)
        .ok_or("no DB_KEY column")?;
    let db_keys = batch
        .column(last)
        .as_binary_opt::<i32>()
        .ok_or("the DB_KEY column is not bytes")?;
    let numbers = db_keys
        .iter()
        .map(|db_key| {
            db_key
                .and_then(|k| layout.number(k))
                .ok_or("a DB_KEY is not 8 bytes")
        })
        .collect::<Result<UInt64Array, _>>()?;
    let mut columns = batch.columns()[..last].to_vec();
    columns.push(Arc::new(numbers));
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())
}

/// The number of a key whose row's place is not known (one a change set
/// from the journal upserted, see [`PreviousKeys::folded`]): in no unit's
/// range, so its row is there only if a run reads it again.
pub(crate) const UNPLACED: u64 = u64::MAX;

/// The column of a keys file that holds each row's DB_KEY number.
const NUMBER_COLUMN: &str = fbunload_plan::DB_KEY_COLUMN;

/// The previous run's keys file of a table, checked: each key once, in
/// ascending order, none null, as many as its manifest says, each with
/// its row's DB_KEY number (see [`fbunload_plan::DbKeyLayout`]). It stays
/// on disk, in the private copy it was checked in (see
/// [`crate::private_copy_of_listed_file`]), and is read a batch at a time
/// (the writer's row groups and pages bound what one read holds): memory
/// does not grow with the table.
pub struct PreviousKeys {
    file: PrivateKeysFile,
    /// The file's columns: the key's, then the numbers.
    schema: SchemaRef,
    len: u64,
}

/// The run's own copies of the previous run's keys files: one file,
/// unnamed (`tempfile::tempfile`: in `$TMPDIR`, owner-only, gone when the
/// process ends, killed or not), made with the first copy, each keys file
/// after the one before. One descriptor for the run, not one a table (a
/// run over 5,000 tables would pass the usual limit of 1,024).
#[derive(Default)]
pub struct PrivateCopies {
    file: Option<Arc<std::fs::File>>,
    end: u64,
}

impl PrivateCopies {
    /// A copy of `file`, listed in the manifest of `dir`, as
    /// [`crate::private_copy_of_listed_file`] takes it.
    pub fn copy(
        &mut self,
        dir: &std::path::Path,
        file: &crate::ManifestFile,
    ) -> Result<PrivateKeysFile, String> {
        let copies = match &self.file {
            Some(copies) => copies.clone(),
            None => {
                let made = tempfile::tempfile()
                    .map_err(|e| format!("cannot make a private file for its keys: {e}"))?;
                self.file.insert(Arc::new(made)).clone()
            }
        };
        let mut end = &*copies;
        io::Seek::seek(&mut end, io::SeekFrom::Start(self.end))
            .map_err(|e| format!("{}: {e}", file.name))?;
        let len = crate::private_copy_of_listed_file(dir, file, &mut end)?;
        let copy = PrivateKeysFile {
            file: copies,
            start: self.end,
            len,
        };
        self.end += len;
        Ok(copy)
    }
}

/// One keys file in [`PrivateCopies`]: `len` bytes from `start`.
#[derive(Clone)]
pub struct PrivateKeysFile {
    file: Arc<std::fs::File>,
    start: u64,
    len: u64,
}

/// A [`PrivateKeysFile`] as parquet reads it, at given offsets: parquet's
/// reader over a `std::fs::File` seeks the one offset its clones share, so
/// two streams of the same keys (one per worker) would move each other's
/// reads.
#[derive(Clone)]
struct KeysFile(PrivateKeysFile);

impl parquet::file::reader::Length for KeysFile {
    fn len(&self) -> u64 {
        self.0.len
    }
}

impl parquet::file::reader::ChunkReader for KeysFile {
    type T = io::BufReader<KeysFileAt>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(io::BufReader::new(KeysFileAt {
            file: self.0.clone(),
            at: start,
        }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        let mut buffer = vec![0u8; length];
        let mut done = 0;
        let mut at = KeysFileAt {
            file: self.0.clone(),
            at: start,
        };
        while done < length {
            match io::Read::read(&mut at, &mut buffer[done..]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(buffer.into())
    }
}

/// Reads at `offset`, whatever other readers of the file read meanwhile.
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buf, offset);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buf, offset);
}

/// A [`KeysFile`] read onwards from an offset of its own (within its
/// keys file: nothing before or past it is read).
struct KeysFileAt {
    file: PrivateKeysFile,
    at: u64,
}

impl io::Read for KeysFileAt {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.file.len.saturating_sub(self.at);
        let take = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = read_at(&self.file.file, &mut buf[..take], self.file.start + self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl PreviousKeys {
    /// Reads a keys file back, as untrusted: its columns must be `columns`
    /// (name, Arrow type as the manifest writes it), in order, then the
    /// rows' numbers; its keys not null, each once, in ascending order,
    /// and (where the manifest says) `count` of them. Anything else is
    /// refused, never compared.
    /// `file` is read again later, so it is the run's own copy.
    pub fn read(
        file: PrivateKeysFile,
        columns: &[(String, String)],
        count: Option<u64>,
    ) -> Result<Self, String> {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let builder = ParquetRecordBatchReaderBuilder::try_new(KeysFile(file.clone()))
            .map_err(|e| e.to_string())?;
        let schema = builder.schema().clone();
        let fields = schema.fields();
        let same = fields.len() == columns.len() + 1
            && fields.iter().zip(columns).all(|(f, (name, arrow_type))| {
                f.name() == name && f.data_type().to_string() == *arrow_type
            });
        if !same {
            let names: Vec<_> = columns.iter().map(|(n, t)| format!("{n} {t}")).collect();
            return Err(format!(
                "its columns are not the primary key ({}) and the rows' {NUMBER_COLUMN}",
                names.join(", ")
            ));
        }
        let last = fields.len() - 1;
        if fields[last].name() != NUMBER_COLUMN || fields[last].data_type() != &DataType::UInt64 {
            return Err(format!(
                "it does not say where each row lies ({NUMBER_COLUMN} UInt64), as keys files \
                 kept by earlier fbunload versions do not: start the chain again with \
                 --keep-keys"
            ));
        }
        let mut keys = PreviousKeys {
            file,
            schema,
            len: 0,
        };
        let mut stream = keys.stream()?;
        while stream.key().is_some() {
            stream.advance().map_err(|e| {
                format!(
                    "{e}: keys files hold each key once, in ascending order (start the chain \
                     again with --keep-keys)"
                )
            })?;
        }
        keys.len = stream.passed();
        if let Some(count) = count.filter(|&c| c != keys.len) {
            return Err(format!(
                "it holds {} keys, where its manifest says {count}",
                keys.len
            ));
        }
        Ok(keys)
    }

    /// These keys with a chain of change sets from the journal folded in
    /// (`changes`, in the chain's order: each a batch of the key's
    /// columns and whether its keys were upserted or deleted; a later
    /// one wins): a key deleted is dropped, a key upserted is there with
    /// the number [`UNPLACED`], since the journal does not say where a
    /// row lies. A run reads every row written since these keys were
    /// read, so a key upserted since and not read again is gone (see
    /// [`changes_since`]).
    pub fn folded(&self, changes: &[(RecordBatch, bool)]) -> Result<PreviousKeys, String> {
        let key_schema = self.key_schema();
        let mut touched: BTreeMap<Vec<u8>, Option<(usize, usize)>> = BTreeMap::new();
        for (i, (batch, upserted)) in changes.iter().enumerate() {
            let same = batch.num_columns() == key_schema.fields().len()
                && batch
                    .schema()
                    .fields()
                    .iter()
                    .zip(key_schema.fields())
                    .all(|(a, b)| a.data_type() == b.data_type());
            if !same {
                return Err(format!(
                    "a change set's key columns are not the keys file's ({key_schema:?})"
                ));
            }
            if batch.columns().iter().any(|c| c.null_count() > 0) {
                return Err("a change set holds a null key".into());
            }
            let encoder = KeyEncoder::new(batch)?;
            for row in 0..batch.num_rows() {
                let mut key = Vec::new();
                encoder.key(row, &mut key);
                touched.insert(key, upserted.then_some((i, row)));
            }
        }
        // The keys upserted, in key order (the map's).
        let at: Vec<(usize, usize)> = touched.values().flatten().copied().collect();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(key_schema.fields().len() + 1);
        for c in 0..key_schema.fields().len() {
            let arrays: Vec<&dyn Array> =
                changes.iter().map(|(b, _)| b.column(c).as_ref()).collect();
            columns.push(if at.is_empty() {
                arrow_array::new_empty_array(key_schema.field(c).data_type())
            } else {
                arrow_select::interleave::interleave(&arrays, &at).map_err(|e| e.to_string())?
            });
        }
        columns.push(Arc::new(UInt64Array::from(vec![UNPLACED; at.len()])));
        let upserted =
            RecordBatch::try_new(self.schema.clone(), columns).map_err(|e| e.to_string())?;
        // The keys kept: those no change set touched.
        let touched: HashSet<Vec<u8>> = touched.into_keys().collect();
        let key_count = key_schema.fields().len();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            KeysFile(self.file.clone()),
        )
        .and_then(|b| b.with_batch_size(BATCH_ROWS).build())
        .map_err(|e| e.to_string())?;
        let kept = reader.map(move |batch| {
            let batch = batch.map_err(|e| e.to_string())?;
            let keys = batch
                .project(&(0..key_count).collect::<Vec<_>>())
                .map_err(|e| e.to_string())?;
            let encoder = KeyEncoder::new(&keys)?;
            let mut key = Vec::new();
            let keep: arrow_array::BooleanArray = (0..batch.num_rows())
                .map(|row| {
                    encoder.key(row, &mut key);
                    Some(!touched.contains(&key))
                })
                .collect();
            arrow_select::filter::filter_record_batch(&batch, &keep).map_err(|e| e.to_string())
        });
        let mut merged = Merged::new(vec![
            Cursor::new(Box::new(kept))?,
            Cursor::new(Box::new(std::iter::once(Ok(upserted))))?,
        ])?;
        // Folded keys stay on disk as a copied keys file does, in a file of
        // the run's own (unnamed, owner-only).
        let private = tempfile::tempfile()
            .map_err(|e| format!("cannot make a private file for its keys: {e}"))?;
        let mut writer = KeysFileWriter::new(private, &self.schema).map_err(|e| e.to_string())?;
        let mut rows = Rows::new(self.schema.clone());
        while merged.key().is_some() {
            merged.push_to(&mut rows);
            merged.advance()?;
            if rows.len() == BATCH_ROWS {
                writer.write(rows.take()?)?;
            }
        }
        if rows.len() > 0 {
            writer.write(rows.take()?)?;
        }
        let private = writer.finish().map_err(|e| e.to_string())?;
        let len = private.metadata().map_err(|e| e.to_string())?.len();
        let columns: Vec<(String, String)> = key_schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().to_string()))
            .collect();
        let file = PrivateKeysFile {
            file: Arc::new(private),
            start: 0,
            len,
        };
        PreviousKeys::read(file, &columns, None)
    }

    /// How many keys there are.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The key's columns.
    pub(crate) fn key_schema(&self) -> SchemaRef {
        let keys: Vec<usize> = (0..self.schema.fields().len() - 1).collect();
        Arc::new(self.schema.project(&keys).expect("the key's columns"))
    }

    /// The keys in order, a batch at a time.
    fn stream(&self) -> Result<Merged, String> {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let reader = ParquetRecordBatchReaderBuilder::try_new(KeysFile(self.file.clone()))
            .and_then(|b| b.with_batch_size(BATCH_ROWS).build())
            .map_err(|e| e.to_string())?;
        let batches = reader.map(|batch| {
            let batch = batch.map_err(|e| e.to_string())?;
            if batch.columns().iter().any(|c| c.null_count() > 0) {
                return Err("it holds a null key".to_string());
            }
            Ok(batch)
        });
        Merged::new(vec![Cursor::new(Box::new(batches))?])
    }
}

/// Writes a keys file, a batch at a time.
pub(crate) struct KeysFileWriter<W: io::Write + Send> {
    schema: SchemaRef,
    writer: parquet::arrow::ArrowWriter<W>,
}

impl<W: io::Write + Send> KeysFileWriter<W> {
    /// A keys file of the key's columns of `schema` (its last column, the
    /// numbers, is written as [`NUMBER_COLUMN`]) to `out`.
    pub fn new(out: W, schema: &SchemaRef) -> io::Result<Self> {
        let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
        fields.pop();
        fields.push(Arc::new(Field::new(NUMBER_COLUMN, DataType::UInt64, false)));
        let schema = Arc::new(Schema::new(fields));
        let properties = keys_file_properties(&schema);
        let writer = parquet::arrow::ArrowWriter::try_new(out, schema.clone(), Some(properties))
            .map_err(io::Error::other)?;
        Ok(KeysFileWriter { schema, writer })
    }

    pub fn write(&mut self, batch: RecordBatch) -> Result<(), String> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let batch = RecordBatch::try_new(self.schema.clone(), batch.columns().to_vec())
            .map_err(|e| e.to_string())?;
        self.writer.write(&batch).map_err(|e| e.to_string())
    }

    pub fn finish(self) -> io::Result<W> {
        self.writer.into_inner().map_err(io::Error::other)
    }
}

/// Hands the keys a run read of a table (`reads`, any order) to `out` in
/// key order, in batches of [`BATCH_ROWS`]; a key read twice is refused.
pub(crate) fn sorted_keys(
    reads: &KeySink,
    out: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
) -> Result<(), String> {
    let mut stream = reads.stream()?;
    let mut rows = Rows::new(reads.schema.clone());
    while stream.key().is_some() {
        stream.push_to(&mut rows);
        stream.advance()?;
        if rows.len() == BATCH_ROWS {
            out(rows.take()?)?;
        }
    }
    if rows.len() > 0 {
        out(rows.take()?)?;
    }
    Ok(())
}

/// A table's ranges of DB_KEY numbers, sorted and apart, to tell which
/// holds a row.
struct Ranges {
    ranges: Vec<(u64, u64)>,
    /// Where the number asked last was: keys in order mostly lie in
    /// order too, so the next is most often in the same range.
    near: usize,
}

impl Ranges {
    fn new(ranges: &[(u64, u64)]) -> Self {
        let mut ranges = ranges.to_vec();
        ranges.sort_unstable();
        Ranges { ranges, near: 0 }
    }

    /// The index of the range that holds `number`, if one does.
    fn find(&mut self, number: u64) -> Option<usize> {
        if let Some(&(lo, hi)) = self.ranges.get(self.near) {
            if lo <= number && number < hi {
                return Some(self.near);
            }
        }
        let after = self.ranges.partition_point(|&(lo, _)| lo <= number);
        let found = after.checked_sub(1).filter(|&i| number < self.ranges[i].1);
        if let Some(i) = found {
            self.near = i;
        }
        found
    }
}

/// Sorted numbers, asked whether they hold one: the numbers asked one
/// after another are mostly near each other, so each answer starts from
/// where the last one ended (two comparisons) before a binary search.
struct SortedNumbers<'a> {
    numbers: &'a [u64],
    /// The number of those below the number asked last.
    below: usize,
}

impl<'a> SortedNumbers<'a> {
    fn new(numbers: &'a [u64]) -> Self {
        SortedNumbers { numbers, below: 0 }
    }

    fn contains(&mut self, number: u64) -> bool {
        let numbers = self.numbers;
        let still = (self.below == 0 || numbers[self.below - 1] < number)
            && numbers.get(self.below).is_none_or(|&n| number <= n);
        if !still {
            self.below = numbers.partition_point(|&n| n < number);
        }
        numbers.get(self.below) == Some(&number)
    }
}

/// Which of the previous run's rows are still there, unchanged, and which
/// are gone, from what a run read of a table: hands the new set of keys
/// (with their numbers) to `keys` and the deletes (the key's columns) to
/// `deletes`, in key order, a batch at a time. Returns how many deletes.
///
/// A row of the previous run whose key was read again (`upserts`, whose
/// rows are at the places `taken`, sorted) is there, as read. Else, where
/// its row lay: a unit whose unchanged keys were read (`rechecked`, over
/// `ranges` of DB_KEY numbers) has it if they hold its key; elsewhere a
/// row changed since is the only one at its place, and the counts said
/// that every other row of the previous run in the unit is still there.
/// A key whose place is not known ([`UNPLACED`]) and that was not read
/// again is gone.
///
/// One pass over the three sorted sets, each read a batch at a time.
pub(crate) fn changes_since(
    old: &PreviousKeys,
    upserts: &KeySink,
    taken: &[u64],
    rechecked: &KeySink,
    ranges: &[(u64, u64)],
    keys: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    deletes: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
) -> Result<u64, String> {
    let mut ranges = Ranges::new(ranges);
    let mut taken = SortedNumbers::new(taken);
    let (mut o, mut u, mut r) = (old.stream()?, upserts.stream()?, rechecked.stream()?);
    let mut kept = Rows::new(old.schema.clone());
    let mut gone = Rows::new(old.schema.clone());
    let key_columns: Vec<usize> = (0..old.schema.fields().len() - 1).collect();
    let mut gone_count = 0;
    let mut flush_gone = |gone: &mut Rows, at_least: usize| -> Result<(), String> {
        if gone.len() >= at_least.max(1) {
            gone_count += gone.len() as u64;
            let batch = gone
                .take()?
                .project(&key_columns)
                .map_err(|e| e.to_string())?;
            deletes(batch)?;
        }
        Ok(())
    };
    let not_read = || {
        "a row unchanged since the previous run was not in it: start the chain again with \
         --keep-keys"
            .to_string()
    };
    while let Some(key) = o.key() {
        // An unchanged row is one the previous run read.
        if r.key().is_some_and(|k| k < key) {
            return Err(not_read());
        }
        let found = r.key() == Some(key);
        while let Some(upsert) = u.key().filter(|k| *k < key) {
            let _ = upsert;
            u.push_to(&mut kept);
            u.advance()?;
        }
        let number = o.number();
        if u.key() == Some(key) {
            // Read again: the upsert stands for it.
            u.push_to(&mut kept);
            u.advance()?;
        } else if found {
            o.push_numbered(&mut kept, r.number());
        } else if number == UNPLACED || ranges.find(number).is_some() || taken.contains(number) {
            o.push_to(&mut gone);
        } else {
            o.push_to(&mut kept);
        }
        if found {
            r.advance()?;
        }
        o.advance()?;
        if kept.len() >= BATCH_ROWS {
            keys(kept.take()?)?;
        }
        flush_gone(&mut gone, BATCH_ROWS)?;
    }
    if r.key().is_some() {
        return Err(not_read());
    }
    while u.key().is_some() {
        u.push_to(&mut kept);
        u.advance()?;
        if kept.len() >= BATCH_ROWS {
            keys(kept.take()?)?;
        }
    }
    if kept.len() > 0 {
        keys(kept.take()?)?;
    }
    flush_gone(&mut gone, 1)?;
    Ok(gone_count)
}

/// A unit, and the range of DB_KEY numbers it covers.
pub(crate) type UnitRange = (Unit, (u64, u64));

/// The units of a table to read the unchanged keys of, with their ranges:
/// those where fewer (or more) rows are unchanged (`counted`, per unit and
/// its range of DB_KEY numbers) than rows of the previous run lie there
/// and are neither read again (by key, `upserts`) nor in a place a
/// changed row took (`taken`, sorted).
pub(crate) fn units_to_recheck(
    old: &PreviousKeys,
    upserts: &KeySink,
    taken: &[u64],
    counted: &[(Unit, (u64, u64), u64)],
) -> Result<Vec<UnitRange>, String> {
    let mut by_range: Vec<usize> = (0..counted.len()).collect();
    by_range.sort_by_key(|&i| counted[i].1);
    let mut ranges = Ranges::new(&counted.iter().map(|c| c.1).collect::<Vec<_>>());
    let mut taken = SortedNumbers::new(taken);
    let mut there = vec![0u64; counted.len()];
    let (mut o, mut u) = (old.stream()?, upserts.stream()?);
    while let Some(key) = o.key() {
        while u.key().is_some_and(|k| k < key) {
            u.advance()?;
        }
        let number = o.number();
        if u.key() != Some(key) && !taken.contains(number) {
            if let Some(i) = ranges.find(number) {
                there[i] += 1;
            }
        }
        o.advance()?;
    }
    while u.key().is_some() {
        u.advance()?;
    }
    Ok(by_range
        .iter()
        .enumerate()
        .filter(|&(i, &c)| there[i] != counted[c].2)
        .map(|(_, &c)| (counted[c].0, counted[c].1))
        .collect())
}

/// How a keys file is written: in key order, a column's values are best
/// kept as differences (integers) or shared prefixes (strings); a
/// dictionary would only add to them. Parquet's own bounds on row groups
/// (1,048,576 rows) and pages (1 MiB) bound what a [`PreviousKeys`] read
/// holds: its reader fetches a page at a time from the file.
fn keys_file_properties(schema: &SchemaRef) -> parquet::file::properties::WriterProperties {
    use parquet::basic::{Compression, Encoding, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    use parquet::schema::types::ColumnPath;
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_dictionary_enabled(false);
    for field in schema.fields() {
        use DataType::*;
        let encoding = match field.data_type() {
            Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _) => Encoding::DELTA_BINARY_PACKED,
            // Stored as 32- or 64-bit integers.
            Decimal128(precision, _) if *precision <= 18 => Encoding::DELTA_BINARY_PACKED,
            Utf8 | LargeUtf8 | Binary | LargeBinary => Encoding::DELTA_BYTE_ARRAY,
            _ => continue,
        };
        builder =
            builder.set_column_encoding(ColumnPath::new(vec![field.name().clone()]), encoding);
    }
    builder.build()
}

/// What the run made of one table's keys.
#[derive(Debug, Clone, Default)]
pub struct KeyOutcome {
    /// The table's index in the plan.
    pub of: usize,
    pub keys: u64,
    pub keys_files: Vec<FileDigest>,
    /// Rows deleted since the previous run, where it was compared with.
    pub deletes: Option<u64>,
    /// Units whose unchanged keys were read, where it was compared with.
    pub rechecked_units: Option<u64>,
    pub deletes_written: Written,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyruns::SpillDir;

    #[test]
    fn a_few_keys_are_kept_in_buffers_of_their_size() {
        // Five keys and DB_KEYs as the reader returns them: in buffers
        // sized for 8,192 rows.
        let mut ids = arrow_array::builder::Int32Builder::with_capacity(8192);
        ids.append_slice(&[1, 2, 3, 4, 5]);
        let db_keys: Vec<[u8; 8]> = (1..=5u8).map(|n| [128, 0, 0, 0, n, 0, 0, 0]).collect();
        let db_keys = arrow_array::BinaryArray::from_iter_values(db_keys.iter());
        let read_schema = Arc::new(Schema::new(vec![
            Field::new("ID", DataType::Int32, false),
            Field::new("DB_KEY", DataType::Binary, false),
        ]));
        let read = RecordBatch::try_new(
            read_schema.clone(),
            vec![Arc::new(ids.finish()), Arc::new(db_keys)],
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let reads = KeyReads {
            sink: KeySink::new(
                KeyReads::sink_schema(&read_schema),
                SpillDir::new(dir.path(), "k"),
                usize::MAX,
                false,
            ),
            layout: DbKeyLayout::LittleEndian,
        };
        let mut unit = reads.begin_unit(0).unwrap();
        unit.write(read).unwrap();
        unit.finish().unwrap();
        assert!(
            reads.sink.held_bytes() < 4096,
            "{} bytes held for 5 keys",
            reads.sink.held_bytes()
        );
    }

    #[test]
    fn a_units_counts_are_kept_as_numbers() {
        // A count as the reader returns it: one row in buffers sized for
        // 8,192, in 64 columns, with a schema of its own.
        let columns: Vec<ArrayRef> = (0..64)
            .map(|i| {
                let mut builder = arrow_array::builder::Int64Builder::with_capacity(8192);
                builder.append_value(i * 1000);
                Arc::new(builder.finish()) as ArrayRef
            })
            .collect();
        let fields: Vec<Field> = (0..64)
            .map(|i| Field::new(format!("C{i}"), DataType::Int64, true))
            .collect();
        let read = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
        let table = KeyTable::new();
        let mut unit = table.begin_unit(3).unwrap();
        unit.write(read.clone()).unwrap();
        unit.finish().unwrap();
        // A null count, two rows, another type: not counts.
        let null = arrow_array::Int64Array::from(vec![None::<i64>]);
        let two = arrow_array::Int64Array::from(vec![1, 2]);
        let int = arrow_array::Int32Array::from(vec![1]);
        for (seq, column) in [
            (4, Arc::new(null) as ArrayRef),
            (5, Arc::new(two)),
            (6, Arc::new(int)),
        ] {
            let batch = RecordBatch::try_from_iter([("C0", column)]).unwrap();
            let mut unit = table.begin_unit(seq).unwrap();
            unit.write(batch).unwrap();
            unit.finish().unwrap();
        }
        // A unit that returned nothing has no counts at all.
        table.begin_unit(7).unwrap().finish().unwrap();
        let units = table.units();
        let expected: Vec<i64> = (0..64).map(|i| i * 1000).collect();
        assert_eq!(units[&3].as_deref(), Some(&expected[..]));
        assert_eq!(
            (units[&4].as_ref(), units[&5].as_ref(), units[&6].as_ref()),
            (None, None, None)
        );
        assert!(!units.contains_key(&7));
        // Only the first batch counts, as a count returns one.
        let mut unit = table.begin_unit(8).unwrap();
        unit.write(read.slice(0, 1)).unwrap();
        unit.write(
            RecordBatch::try_from_iter([(
                "C0",
                Arc::new(arrow_array::Int64Array::from(vec![5])) as ArrayRef,
            )])
            .unwrap(),
        )
        .unwrap();
        unit.finish().unwrap();
        assert_eq!(table.units()[&8].as_deref(), Some(&expected[..]));
    }

    use arrow_array::{Float32Array, Float64Array, Int32Array, Int64Array, StringArray};
    use arrow_schema::{Field, Schema};
    use std::sync::Arc;

    fn batch(ids: &[i32], names: &[&str]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("A", DataType::Int32, false),
            Field::new("B", DataType::Utf8, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(ids.to_vec())),
                Arc::new(StringArray::from(names.to_vec())),
            ],
        )
        .unwrap()
    }

    fn columns(b: &RecordBatch) -> Vec<(String, String)> {
        b.schema()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().to_string()))
            .collect()
    }

    /// `b` as a Parquet file, in its order, as anyone could write it.
    /// `bytes` in a file of the test's own, as a run's private copy is.
    fn on_disk(bytes: Vec<u8>) -> PrivateKeysFile {
        use std::io::Write;
        // After other bytes, as a second table's copy is.
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"another table's keys").unwrap();
        file.write_all(&bytes).unwrap();
        file.write_all(b"the next table's keys").unwrap();
        PrivateKeysFile {
            file: Arc::new(file),
            start: 20,
            len: bytes.len() as u64,
        }
    }

    fn parquet_of(b: &RecordBatch) -> Vec<u8> {
        let mut out = Vec::new();
        let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, b.schema(), None).unwrap();
        writer.write(b).unwrap();
        writer.close().unwrap();
        out
    }

    fn ids(b: &RecordBatch) -> Vec<i32> {
        b.column(0).as_primitive::<Int32Type>().values().to_vec()
    }

    /// `b` with a number column after its own, as keys sinks and files
    /// have: `numbers`, or its rows numbered from 1.
    fn numbered_with(b: &RecordBatch, numbers: Option<&[u64]>) -> RecordBatch {
        let mut fields: Vec<_> = b.schema().fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(NUMBER_COLUMN, DataType::UInt64, false)));
        let mut columns = b.columns().to_vec();
        let numbers = match numbers {
            Some(n) => n.to_vec(),
            None => (1..=b.num_rows() as u64).collect(),
        };
        columns.push(Arc::new(UInt64Array::from(numbers)));
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    fn numbered(b: &RecordBatch) -> RecordBatch {
        numbered_with(b, None)
    }

    /// A sink of `b`'s keys at `numbers`, added `per_unit` rows a unit,
    /// holding `limit` bytes before it spills into `dir`.
    fn sink_of(
        b: &RecordBatch,
        numbers: &[u64],
        dir: &std::path::Path,
        limit: usize,
        per_unit: usize,
    ) -> KeySink {
        static SINKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let b = numbered_with(b, Some(numbers));
        let prefix = format!(
            "t{}",
            SINKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let sink = KeySink::new(b.schema(), SpillDir::new(dir, &prefix), limit, true);
        let mut at = 0;
        while at < b.num_rows() {
            let n = per_unit.min(b.num_rows() - at);
            sink.add(vec![b.slice(at, n)]).unwrap();
            at += n;
        }
        sink
    }

    fn ids_batch(ids: &[i32]) -> RecordBatch {
        RecordBatch::try_from_iter([("ID", Arc::new(Int32Array::from(ids.to_vec())) as ArrayRef)])
            .unwrap()
    }

    /// Keys `ids` (one INTEGER column) at DB_KEY numbers `numbers`, in
    /// memory.
    fn at(ids: &[i32], numbers: &[u64]) -> (KeySink, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        (
            sink_of(&ids_batch(ids), numbers, dir.path(), usize::MAX, usize::MAX),
            dir,
        )
    }

    /// The sorted keys of `sink`, as one batch.
    fn sorted(sink: &KeySink) -> Result<RecordBatch, String> {
        let mut out = Vec::new();
        sorted_keys(sink, &mut |b| {
            out.push(b);
            Ok(())
        })?;
        Ok(arrow_select::concat::concat_batches(&sink.schema, &out).unwrap())
    }

    /// The keys file of `sink`'s keys.
    fn file_of(sink: &KeySink) -> Vec<u8> {
        let mut writer = KeysFileWriter::new(Vec::new(), &sink.schema).unwrap();
        sorted_keys(sink, &mut |b| writer.write(b)).unwrap();
        writer.finish().unwrap()
    }

    /// The previous run's keys: `ids` at `numbers`.
    fn previous(ids: &[i32], numbers: &[u64]) -> PreviousKeys {
        let (sink, _dir) = at(ids, numbers);
        PreviousKeys::read(on_disk(file_of(&sink)), &columns(&ids_batch(ids)), None).unwrap()
    }

    fn unit(seq: usize) -> Unit {
        Unit {
            table: 0,
            seq,
            first_slot: 0,
            end_slot: None,
        }
    }

    type Changed = (Vec<i32>, Vec<u64>, Vec<i32>);

    /// The new keys (ids, numbers) and deletes' ids of a table.
    fn changes(
        old: &PreviousKeys,
        upserts: &KeySink,
        rechecked: &KeySink,
        ranges: &[(u64, u64)],
    ) -> Result<Changed, String> {
        let (mut keys, mut deletes) = (Vec::new(), Vec::new());
        let count = changes_since(
            old,
            upserts,
            &upserts.numbers(),
            rechecked,
            ranges,
            &mut |b| {
                keys.push(b);
                Ok(())
            },
            &mut |b| {
                deletes.push(b);
                Ok(())
            },
        )?;
        let numbers = keys
            .iter()
            .flat_map(|b| crate::keyruns::numbers_of(b).to_vec())
            .collect();
        let keys = keys.iter().flat_map(ids).collect();
        let deletes: Vec<i32> = deletes.iter().flat_map(ids).collect();
        assert_eq!(count, deletes.len() as u64);
        Ok((keys, numbers, deletes))
    }

    #[test]
    fn counts_find_the_units_a_row_left_and_their_keys_tell_which() {
        // Rows 1..=10 at numbers 1..=10. Since: 3 updated in place, 5's
        // key changed to 20 in place, 21 inserted at 11, 8 deleted.
        let old = previous(
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        );
        let (upserts, _d) = at(&[3, 20, 21], &[3, 5, 11]);
        // Unit 0 holds numbers 1..6: 1, 2 and 4 unchanged, as many as the
        // previous run's rows there that nothing took; unit 1 one short.
        let counted = [(unit(0), (0, 6), 3), (unit(1), (6, u64::MAX), 4)];
        let rechecks = units_to_recheck(&old, &upserts, &upserts.numbers(), &counted).unwrap();
        assert_eq!(rechecks, [(unit(1), (6, u64::MAX))]);
        let (rechecked, _d) = at(&[6, 7, 9, 10], &[6, 7, 9, 10]);
        let (keys, numbers, deletes) =
            changes(&old, &upserts, &rechecked, &[(6, u64::MAX)]).unwrap();
        assert_eq!(deletes, [5, 8]);
        assert_eq!(keys, [1, 2, 3, 4, 6, 7, 9, 10, 20, 21]);
        assert_eq!(numbers, [1, 2, 3, 4, 6, 7, 9, 10, 5, 11]);
        // Without the recheck, 8 would be taken for there: the counts must
        // be compared.
        let (none, _d) = at(&[], &[]);
        let (_, _, unchecked) = changes(&old, &upserts, &none, &[]).unwrap();
        assert_eq!(unchecked, [5]);
    }

    #[test]
    fn an_unchanged_row_the_previous_run_lacked_is_refused() {
        let old = previous(&[1, 2], &[1, 2]);
        let (nothing, _d) = at(&[], &[]);
        for lacked in [&[1, 2, 7][..], &[0, 1, 2]] {
            let (rechecked, _d) = at(lacked, &[1, 2, 3]);
            let refused = changes(&old, &nothing, &rechecked, &[(0, u64::MAX)])
                .err()
                .unwrap();
            assert!(refused.contains("start the chain again"), "{refused}");
        }
    }

    #[test]
    fn searches_from_the_last_answer_give_a_binary_search_s_answers() {
        // Numbers asked in order, backwards, and jumping about.
        let taken: Vec<u64> = (0..200).map(|i| i * 7 + i % 3).collect();
        let ranges: Vec<(u64, u64)> = (0..50).map(|i| (i * 30 + 5, i * 30 + 20)).collect();
        let mut asked: Vec<u64> = (0..1600).collect();
        asked.extend((0..1600).rev());
        asked.extend((0..1600).map(|i| (i * 7919) % 1600));
        let (mut near, mut search) = (SortedNumbers::new(&taken), Ranges::new(&ranges));
        for n in asked {
            assert_eq!(near.contains(n), taken.binary_search(&n).is_ok(), "{n}");
            let expected = ranges.iter().position(|&(lo, hi)| lo <= n && n < hi);
            assert_eq!(search.find(n), expected, "{n}");
        }
        assert!(!SortedNumbers::new(&[]).contains(3));
    }

    #[test]
    fn db_keys_read_become_numbers() {
        let db_key = |n: u64| {
            let mut k = vec![0x80, 0, 0, (n >> 32) as u8];
            k.extend_from_slice(&(n as u32).to_le_bytes());
            k
        };
        let b = RecordBatch::try_from_iter([
            ("ID", Arc::new(Int32Array::from(vec![2, 1])) as ArrayRef),
            (
                NUMBER_COLUMN,
                Arc::new(arrow_array::BinaryArray::from_iter_values([
                    db_key(7),
                    db_key(5 << 32 | 9),
                ])) as ArrayRef,
            ),
        ])
        .unwrap();
        let schema = KeyReads::sink_schema(&b.schema());
        let numbered = numbered_batch(&schema, &b, DbKeyLayout::LittleEndian).unwrap();
        assert_eq!(ids(&numbered), [2, 1]);
        assert_eq!(crate::keyruns::numbers_of(&numbered), [7, 5 << 32 | 9]);
    }

    #[test]
    fn deletes_are_the_old_keys_the_new_set_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let old = batch(&[12, 2, 3, 1], &["", "y", "z", "x"]);
        let old_sink = sink_of(&old, &[1, 2, 3, 4], dir.path(), usize::MAX, 9);
        let old = PreviousKeys::read(on_disk(file_of(&old_sink)), &columns(&old), Some(4)).unwrap();
        // The new set: (1, "2") new, at a place of its own; the rest
        // unchanged where they were, every place rechecked.
        let keys = |ids: &[i32], names: &[&str], numbers: &[u64]| {
            sink_of(&batch(ids, names), numbers, dir.path(), usize::MAX, 9)
        };
        let upserts = keys(&[1], &["2"], &[9]);
        let unchanged = keys(&[3, 1], &["z", "x"], &[3, 4]);
        let (new, _, deletes) = changes(&old, &upserts, &unchanged, &[(0, u64::MAX)]).unwrap();
        assert_eq!(deletes, [2, 12]);
        assert_eq!(new, [1, 1, 3]);
    }

    #[test]
    fn a_key_read_twice_is_refused_in_memory_and_across_spilled_runs() {
        let dir = tempfile::tempdir().unwrap();
        let b = batch(&[1, 2, 1], &["x", "y", "x"]);
        let once = sink_of(&b, &[1, 2, 3], dir.path(), usize::MAX, 9);
        assert!(sorted(&once).unwrap_err().contains("twice"));
        // A unit a run, the two alike in two runs.
        let spilled = sink_of(&b, &[1, 2, 3], dir.path(), 1, 1);
        assert!(spilled.runs_on_disk() >= 2);
        assert!(sorted(&spilled).unwrap_err().contains("twice"));
    }

    /// Keys spilled in many runs (more than one merge takes) come out as
    /// those held in memory: the same keys file, byte for byte, and the
    /// same change set; the runs are gone once cleared.
    #[test]
    fn keys_spilled_in_runs_give_the_same_files_as_keys_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        // Keys out of order (units of rows in reverse, rows within in order),
        // with strings, so that runs interleave.
        let n = 60_000;
        let order: Vec<i32> = (0..n)
            .map(|i| (n - 1 - i / 1000 * 1000) - (999 - i % 1000))
            .collect();
        let names: Vec<String> = order.iter().map(|i| format!("k{}", i % 7)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let b = batch(&order, &names);
        let numbers: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
        let memory = sink_of(&b, &numbers, dir.path(), usize::MAX, 1000);
        let spilled = sink_of(&b, &numbers, dir.path(), 20_000, 1000);
        assert!(
            spilled.runs_on_disk() > 16,
            "{} runs",
            spilled.runs_on_disk()
        );
        let file = file_of(&memory);
        assert_eq!(file, file_of(&spilled));
        let back = PreviousKeys::read(on_disk(file.clone()), &columns(&b), Some(n as u64)).unwrap();
        assert_eq!(back.len(), n as u64);

        // Since: every 7th row changed in place, every 11th gone; units of
        // 3,000 numbers, those that lost rows rechecked.
        let changed: Vec<usize> = (0..n as usize).filter(|i| i % 7 == 0).collect();
        let gone = |i: usize| i % 11 == 5;
        let unchanged: Vec<usize> = (0..n as usize)
            .filter(|&i| i % 7 != 0 && !gone(i))
            .collect();
        let pick = |rows: &[usize]| {
            let ids: Vec<i32> = rows.iter().map(|&i| order[i] + 1_000_000).collect();
            let idx = UInt64Array::from(rows.iter().map(|&i| i as u64).collect::<Vec<_>>());
            (
                arrow_select::take::take_record_batch(&b, &idx).unwrap(),
                ids,
            )
        };
        let (upsert_rows, _) = pick(&changed);
        let upsert_numbers: Vec<u64> = changed.iter().map(|&i| numbers[i]).collect();
        let unchanged_numbers: Vec<u64> = unchanged.iter().map(|&i| numbers[i]).collect();
        let ranges: Vec<(u64, u64)> = (0..)
            .map(|u| (u * 3000, (u + 1) * 3000))
            .take_while(|r| r.0 < numbers[n as usize - 1] + 1)
            .collect();
        let change_set = |limit: usize| {
            let upserts = sink_of(&upsert_rows, &upsert_numbers, dir.path(), limit, 1000);
            let counted: Vec<_> = ranges
                .iter()
                .enumerate()
                .map(|(u, &(lo, hi))| {
                    let there = unchanged_numbers
                        .iter()
                        .filter(|&&x| lo <= x && x < hi)
                        .count();
                    (unit(u), (lo, hi), there as u64)
                })
                .collect();
            let rechecks = units_to_recheck(&back, &upserts, &upserts.numbers(), &counted).unwrap();
            let rechecked_ranges: Vec<(u64, u64)> = rechecks.iter().map(|r| r.1).collect();
            let in_rechecked: Vec<usize> = unchanged
                .iter()
                .copied()
                .filter(|&i| {
                    rechecked_ranges
                        .iter()
                        .any(|&(lo, hi)| lo <= numbers[i] && numbers[i] < hi)
                })
                .collect();
            let (rows, _) = pick(&in_rechecked);
            let rows_numbers: Vec<u64> = in_rechecked.iter().map(|&i| numbers[i]).collect();
            let rechecked = sink_of(&rows, &rows_numbers, dir.path(), limit, 1000);
            let (mut keys, mut deletes) = (
                KeysFileWriter::new(Vec::new(), &upserts.schema).unwrap(),
                Vec::new(),
            );
            changes_since(
                &back,
                &upserts,
                &upserts.numbers(),
                &rechecked,
                &rechecked_ranges,
                &mut |b| keys.write(b),
                &mut |b| {
                    deletes.push(b);
                    Ok(())
                },
            )
            .unwrap();
            (
                rechecks.len(),
                keys.finish().unwrap(),
                deletes.iter().flat_map(ids).collect::<Vec<_>>(),
            )
        };
        let (rechecks, keys, deletes) = change_set(usize::MAX);
        assert!(rechecks > 1);
        let mut expected: Vec<i32> = (0..n as usize)
            .filter(|&i| gone(i) && i % 7 != 0)
            .map(|i| order[i])
            .collect();
        expected.sort_unstable();
        // The deletes' ids come in key order: by id, then name.
        let mut got = deletes.clone();
        got.sort_unstable();
        assert_eq!(got, expected);
        assert_eq!(change_set(20_000), (rechecks, keys, deletes));
        let files = || std::fs::read_dir(dir.path()).unwrap().count();
        assert!(files() > 0);
        spilled.clear();
        drop(memory);
        assert_eq!(files(), 0, "the runs are removed");
    }

    #[test]
    fn the_encoding_orders_as_the_values() {
        let encoded = |column: ArrayRef| {
            let b = RecordBatch::try_from_iter([("K", column)]).unwrap();
            let encoder = KeyEncoder::new(&b).unwrap();
            (0..b.num_rows())
                .map(|row| {
                    let mut out = Vec::new();
                    encoder.key(row, &mut out);
                    out
                })
                .collect::<Vec<_>>()
        };
        let ascending = |keys: Vec<Vec<u8>>| keys.windows(2).all(|w| w[0] < w[1]);
        assert!(ascending(encoded(Arc::new(Int64Array::from(vec![
            i64::MIN,
            -256,
            -1,
            0,
            1,
            255,
            i64::MAX
        ])))));
        assert!(ascending(encoded(Arc::new(Float64Array::from(vec![
            f64::NEG_INFINITY,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY
        ])))));
        assert!(ascending(encoded(Arc::new(Float32Array::from(vec![
            f32::NEG_INFINITY,
            -2.5,
            -0.0,
            0.0,
            1e-30,
            3.0,
            f32::INFINITY
        ])))));
        assert!(ascending(encoded(Arc::new(StringArray::from(vec![
            "", "\0", "\0\0", "\u{1}", "a", "a\0", "a\0b", "ab", "b"
        ])))));
    }

    #[test]
    fn lengths_keep_variable_width_keys_apart() {
        // ("ab", "c") and ("a", "bc") must not encode alike.
        let schema = Arc::new(Schema::new(vec![
            Field::new("A", DataType::Utf8, false),
            Field::new("B", DataType::Utf8, false),
        ]));
        let b = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec!["ab", "a"])),
                Arc::new(StringArray::from(vec!["c", "bc"])),
            ],
        )
        .unwrap();
        assert_eq!(key_set(&[b]).unwrap().len(), 2);
    }

    #[test]
    fn a_keys_file_reads_back_as_written_and_is_small() {
        // 400,000 keys of two integers, as a TPC-C STOCK's, out of order.
        let (w, i): (Vec<i32>, Vec<i32>) = (0..400_000)
            .map(|n| (20 - n / 20_000, n % 20_000 + 1))
            .unzip();
        let schema = Arc::new(Schema::new(vec![
            Field::new("W", DataType::Int32, false),
            Field::new("I", DataType::Int32, false),
        ]));
        let b = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int32Array::from(w)), Arc::new(Int32Array::from(i))],
        )
        .unwrap();
        // Rows lie in the order they came, one page of them after another.
        let numbers: Vec<u64> = (0..400_000u64)
            .map(|n| n / 200 * 480 + n % 200 + 1)
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let sink = sink_of(&b, &numbers, dir.path(), usize::MAX, 100_000);
        let file = file_of(&sink);
        assert!(file.len() < 20_000, "{} bytes", file.len());
        let back = PreviousKeys::read(on_disk(file), &columns(&b), Some(400_000)).unwrap();
        assert_eq!(back.len(), 400_000);
        let mut stream = back.stream().unwrap();
        let mut rows = Rows::new(back.schema.clone());
        while stream.key().is_some() {
            stream.push_to(&mut rows);
            stream.advance().unwrap();
        }
        assert_eq!(rows.take().unwrap(), sorted(&sink).unwrap());
    }

    /// Checked keys are read again from their file, not held: a keys file
    /// cut short after it was checked fails the delete check (which is why
    /// the file a run checks is its own private copy).
    #[test]
    fn checked_keys_are_read_again_from_their_file_not_held() {
        let ids: Vec<i32> = (0..300_000).collect();
        let numbers: Vec<u64> = (0..300_000).collect();
        let (sink, _dir) = at(&ids, &numbers);
        let bytes = file_of(&sink);
        let file = on_disk(bytes.clone());
        let old = PreviousKeys::read(file.clone(), &columns(&ids_batch(&ids)), None).unwrap();
        assert_eq!(old.len(), 300_000);
        assert!(old.stream().is_ok());
        file.file.set_len(file.start + file.len / 2).unwrap();
        let mut stream = old.stream();
        let read_back = match &mut stream {
            Ok(merged) => {
                let mut failed = None;
                while merged.key().is_some() {
                    if let Err(e) = merged.advance() {
                        failed = Some(e);
                        break;
                    }
                }
                failed
            }
            Err(e) => Some(e.clone()),
        };
        assert!(read_back.is_some(), "the keys were held, not read again");
    }

    #[test]
    fn a_keys_file_out_of_order_repeated_null_or_miscounted_is_refused() {
        let ok = batch(&[1, 2], &["a", "a"]);
        let cols = columns(&ok);
        assert!(PreviousKeys::read(on_disk(parquet_of(&numbered(&ok))), &cols, Some(2)).is_ok());
        let refused = |b: &RecordBatch, count: Option<u64>| {
            PreviousKeys::read(on_disk(parquet_of(&numbered(b))), &columns(b), count)
                .err()
                .expect("refused")
        };
        assert!(refused(&ok, Some(3)).contains("manifest says 3"));
        assert!(refused(&batch(&[2, 1], &["a", "a"]), None).contains("out of order"));
        assert!(refused(&batch(&[1, 1], &["a", "a"]), None).contains("twice"));
        let schema = Arc::new(Schema::new(vec![Field::new("A", DataType::Int32, true)]));
        let nulls = RecordBatch::try_new(
            schema,
            vec![Arc::new(Int32Array::from(vec![None, Some(1)]))],
        )
        .unwrap();
        assert!(refused(&nulls, None).contains("null"));
        let other = PreviousKeys::read(on_disk(parquet_of(&numbered(&ok))), &cols[..1], None)
            .err()
            .unwrap();
        assert!(other.contains("not the primary key"), "{other}");
        // As earlier versions kept them: keys without their rows' places.
        let old = PreviousKeys::read(on_disk(parquet_of(&ok)), &cols[..1], None)
            .err()
            .unwrap();
        assert!(old.contains("start the chain again"), "{old}");
    }
}
