//! Primary keys of an incremental run (`--since`, `--keep-keys`): the
//! keys entries' batches are kept, not written in the run's format; once
//! the run is complete each table's keys are sorted ([`SortedKeys`]) and
//! go to `<TABLE>.keys.parquet` (Parquet whatever the format), and the
//! keys the previous run had that the new snapshot has not are the
//! table's deletes, found in one pass over both sorted sets.
//!
//! Keys compare by an exact, order-preserving byte encoding of their
//! values ([`KeyEncoder`]), per Arrow type: memory grows with the table's
//! rows (about 40 bytes a row for a two-integer key, while the run ends).
//! A keys file read back is not trusted: it must hold each key once, in
//! ascending order, none null, as many as its manifest says.

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

use crate::directory::OutputDir;
use crate::order::Table;

/// A keys entry of the plan: its units' batches, kept until the run ends.
pub(crate) struct KeyTable {
    pub schema: SchemaRef,
    units: Mutex<BTreeMap<usize, Vec<RecordBatch>>>,
}

impl KeyTable {
    pub fn new(schema: SchemaRef) -> Self {
        KeyTable {
            schema,
            units: Mutex::default(),
        }
    }

    /// Every batch, in DB_KEY order.
    pub fn batches(&self) -> Vec<RecordBatch> {
        let units = self.units.lock().unwrap();
        units.values().flatten().cloned().collect()
    }

    /// The batches of each unit, by its sequence number.
    pub fn units(&self) -> BTreeMap<usize, Vec<RecordBatch>> {
        self.units.lock().unwrap().clone()
    }
}

/// A table that keeps its keys: of each batch its reads return, the key's
/// columns and the DB_KEY go to `keys`, the table's columns to `file`.
pub(crate) struct KeptKeys {
    pub file: Box<dyn Table>,
    pub keys: Arc<KeyTable>,
    /// The key's columns, then the DB_KEY, in the batches read.
    pub key_columns: Vec<usize>,
    /// The table's own columns.
    pub file_columns: Vec<usize>,
}

impl Table for KeptKeys {
    fn begin_unit(&self, seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        Ok(Box::new(KeptKeysUnit {
            file: self.file.begin_unit(seq)?,
            keys: self.keys.begin_unit(seq)?,
            table: self,
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
}

impl UnitWriter for KeptKeysUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        let project = |columns: &[usize]| {
            batch
                .project(columns)
                .map_err(|e| ExecError::Internal(e.to_string()))
        };
        self.keys.write(project(&self.table.key_columns)?)?;
        self.file.write(project(&self.table.file_columns)?)
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        self.keys.finish()?;
        self.file.finish()
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        self.keys.abort()?;
        self.file.abort()
    }
}

impl Table for KeyTable {
    fn begin_unit(&self, seq: usize) -> Result<Box<dyn UnitWriter + '_>, ExecError> {
        Ok(Box::new(KeyUnit {
            table: self,
            seq,
            batches: Vec::new(),
        }))
    }

    fn finish(&self) -> Result<Written, ExecError> {
        Ok(Written::default())
    }
}

struct KeyUnit<'a> {
    table: &'a KeyTable,
    seq: usize,
    batches: Vec<RecordBatch>,
}

impl UnitWriter for KeyUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        self.batches.push(batch);
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        let mut units = self.table.units.lock().unwrap();
        units.insert(self.seq, self.batches);
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
    fn append(&self, row: usize, out: &mut Vec<u8>) {
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

/// A table's primary keys, each once, in ascending order, each with the
/// DB_KEY number of its row: what a run writes to `<TABLE>.keys.parquet`,
/// and what the next run reads back and compares its own keys with.
///
/// In order, a key column of integers is a run of small differences,
/// which Parquet's delta encoding keeps in a few bits a row (strings
/// share their prefixes), where its dictionary would spend a value and
/// an index on each; so the keys file of a 2,000,000-row table with a
/// two-integer key is a few kilobytes, and its rows' numbers, where rows
/// lie in key order, as few.
pub struct SortedKeys {
    /// The keys, a row each, in order.
    batch: RecordBatch,
    /// Each row's DB_KEY number (see [`fbunload_plan::DbKeyLayout`]).
    numbers: Vec<u64>,
    /// Each row's key as [`KeyEncoder`] writes it, one after another.
    bytes: Vec<u8>,
    /// Where each row's key ends in `bytes`.
    ends: Vec<usize>,
}

/// The column of a keys file that holds each row's DB_KEY number.
const NUMBER_COLUMN: &str = fbunload_plan::DB_KEY_COLUMN;

impl SortedKeys {
    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn key(&self, row: usize) -> &[u8] {
        encoded(&self.bytes, &self.ends, row)
    }

    /// The row holding `key`, if one does.
    fn find(&self, key: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The keys a run read as its tables' reads return them: the key's
    /// columns, then the DB_KEY (laid out as `layout` says).
    pub fn from_reads(
        schema: &SchemaRef,
        batches: &[RecordBatch],
        layout: DbKeyLayout,
    ) -> Result<Self, String> {
        let last = schema
            .fields()
            .len()
            .checked_sub(1)
            .ok_or("no DB_KEY column")?;
        if batches.iter().all(|b| b.num_rows() == 0) {
            let keys = schema
                .project(&(0..last).collect::<Vec<_>>())
                .map_err(|e| e.to_string())?;
            return Ok(Self::empty(Arc::new(keys)));
        }
        let mut keys = Vec::with_capacity(batches.len());
        let mut numbers = Vec::new();
        for batch in batches {
            let last = batch
                .num_columns()
                .checked_sub(1)
                .ok_or("no DB_KEY column")?;
            let db_keys = batch
                .column(last)
                .as_binary_opt::<i32>()
                .ok_or("the DB_KEY column is not bytes")?;
            for db_key in db_keys.iter() {
                let number = db_key
                    .and_then(|k| layout.number(k))
                    .ok_or("a DB_KEY is not 8 bytes")?;
                numbers.push(number);
            }
            keys.push(
                batch
                    .project(&(0..last).collect::<Vec<_>>())
                    .map_err(|e| e.to_string())?,
            );
        }
        Self::sort(&keys, numbers)
    }

    /// The keys `batches` hold, `numbers` their rows' DB_KEY numbers in the
    /// same order, sorted; fails if a key is there twice.
    pub fn sort(batches: &[RecordBatch], numbers: Vec<u64>) -> Result<Self, String> {
        let (bytes, ends) = encode_all(batches)?;
        assert_eq!(ends.len(), numbers.len(), "a number per key");
        let key = |row: usize| encoded(&bytes, &ends, row);
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
        let Some(first) = batches.first() else {
            return Err("no keys were read".into());
        };
        let all = arrow_select::concat::concat_batches(&first.schema(), batches)
            .map_err(|e| e.to_string())?;
        let mut sorted_bytes = Vec::with_capacity(bytes.len());
        let mut sorted_ends = Vec::with_capacity(ends.len());
        for &row in &order {
            sorted_bytes.extend_from_slice(key(row as usize));
            sorted_ends.push(sorted_bytes.len());
        }
        let sorted_numbers = order.iter().map(|&row| numbers[row as usize]).collect();
        let batch = arrow_select::take::take_record_batch(&all, &UInt64Array::from(order))
            .map_err(|e| e.to_string())?;
        Ok(SortedKeys {
            batch,
            numbers: sorted_numbers,
            bytes: sorted_bytes,
            ends: sorted_ends,
        })
    }

    /// No keys, of `schema`.
    fn empty(schema: SchemaRef) -> Self {
        SortedKeys {
            batch: RecordBatch::new_empty(schema),
            numbers: Vec::new(),
            bytes: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Reads a keys file back, as untrusted: its columns must be `columns`
    /// (name, Arrow type as the manifest writes it), in order, then the
    /// rows' numbers; its keys not null, each once, in ascending order,
    /// and (where the manifest says) `count` of them. Anything else is
    /// refused, never compared.
    pub fn read(
        contents: Vec<u8>,
        columns: &[(String, String)],
        count: Option<u64>,
    ) -> Result<Self, String> {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let builder = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(contents))
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
        let reader = builder.build().map_err(|e| e.to_string())?;
        let batches: Vec<RecordBatch> = reader
            .map(|batch| batch.map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        let batch =
            arrow_select::concat::concat_batches(&schema, &batches).map_err(|e| e.to_string())?;
        if batch.columns().iter().any(|c| c.null_count() > 0) {
            return Err("it holds a null key".into());
        }
        if let Some(count) = count.filter(|&c| c != batch.num_rows() as u64) {
            return Err(format!(
                "it holds {} keys, where its manifest says {count}",
                batch.num_rows()
            ));
        }
        let numbers = batch
            .column(last)
            .as_primitive::<UInt64Type>()
            .values()
            .to_vec();
        let batch = batch
            .project(&(0..last).collect::<Vec<_>>())
            .map_err(|e| e.to_string())?;
        let (bytes, ends) = encode_all(std::slice::from_ref(&batch))?;
        for row in 1..ends.len() {
            let (before, this) = (encoded(&bytes, &ends, row - 1), encoded(&bytes, &ends, row));
            if before >= this {
                let what = if before == this {
                    "is there twice"
                } else {
                    "is out of order"
                };
                return Err(format!(
                    "its key at row {row} {what}: keys files hold each key once, in \
                     ascending order (start the chain again with --keep-keys)"
                ));
            }
        }
        Ok(SortedKeys {
            batch,
            numbers,
            bytes,
            ends,
        })
    }

    /// The keys as a keys file holds them.
    pub fn into_file(self) -> KeysFile {
        KeysFile {
            batch: self.batch,
            numbers: self.numbers,
        }
    }
}

/// What an incremental run makes of a table's keys: the new set, and the
/// previous run's keys that are gone.
pub struct Changes {
    pub keys: KeysFile,
    pub deletes: RecordBatch,
}

/// Keys in ascending order and their rows' DB_KEY numbers, as a keys file
/// holds them.
pub struct KeysFile {
    pub batch: RecordBatch,
    pub numbers: Vec<u64>,
}

impl KeysFile {
    pub fn len(&self) -> usize {
        self.numbers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }

    /// Writes the keys as `name` (Parquet: zstd, no dictionary, integers
    /// delta-encoded, strings by shared prefixes) in the run's staging
    /// directory and publishes it.
    pub(crate) fn publish(&self, dir: &OutputDir, name: &str) -> io::Result<Vec<FileDigest>> {
        self.write_to(dir.create(name)?)?;
        Ok(dir.publish(name)?.1)
    }

    fn write_to<W: io::Write + Send>(&self, out: W) -> io::Result<W> {
        use parquet::arrow::ArrowWriter;
        let mut fields: Vec<_> = self.batch.schema().fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(NUMBER_COLUMN, DataType::UInt64, false)));
        let schema = Arc::new(Schema::new(fields));
        let mut columns = self.batch.columns().to_vec();
        columns.push(Arc::new(UInt64Array::from(self.numbers.clone())));
        let batch = RecordBatch::try_new(schema.clone(), columns).map_err(io::Error::other)?;
        let properties = keys_file_properties(&schema);
        let mut writer =
            ArrowWriter::try_new(out, schema, Some(properties)).map_err(io::Error::other)?;
        writer.write(&batch).map_err(io::Error::other)?;
        writer.into_inner().map_err(io::Error::other)
    }
}

/// The keys a run read again (its changed rows') set against the previous
/// run's: which of those rows were read again, and the places the changed
/// rows are at.
pub struct Compared {
    pub upserts: SortedKeys,
    /// Per row of the previous run, whether its key was read again.
    upserted: Vec<bool>,
    /// The changed rows' DB_KEY numbers, sorted.
    taken: Vec<u64>,
}

impl Compared {
    /// One pass over both sorted sets.
    pub fn new(old: &SortedKeys, upserts: SortedKeys) -> Self {
        let mut upserted = vec![false; old.len()];
        let mut j = 0;
        for (row, again) in upserted.iter_mut().enumerate() {
            let key = old.key(row);
            while j < upserts.len() && upserts.key(j) < key {
                j += 1;
            }
            *again = j < upserts.len() && upserts.key(j) == key;
        }
        let mut taken = upserts.numbers.clone();
        taken.sort_unstable();
        Compared {
            upserts,
            upserted,
            taken,
        }
    }

    fn taken(&self, number: u64) -> bool {
        self.taken.binary_search(&number).is_ok()
    }
}

/// Which of the previous run's rows are still there, unchanged, and which
/// are gone, from what a run read of a table (see `TableKeys`).
///
/// A row of the previous run whose key was read again (`upserts`) is
/// there, as read. Else, where its row lay: a unit whose unchanged keys
/// were read (`rechecked`, over `ranges` of DB_KEY numbers) has it if
/// they hold its key; elsewhere a row changed since is the only one at
/// its place, and the counts said that every other row of the previous
/// run in the unit is still there.
pub fn changes_since(
    old: &SortedKeys,
    compared: &Compared,
    rechecked: &SortedKeys,
    ranges: &[(u64, u64)],
) -> Result<Changes, String> {
    let rechecked_place = |number: u64| ranges.iter().any(|&(lo, hi)| lo <= number && number < hi);
    let (mut kept, mut numbers, mut gone) = (Vec::new(), Vec::new(), Vec::new());
    let mut j = 0;
    for row in 0..old.len() {
        let key = old.key(row);
        while j < rechecked.len() && rechecked.key(j) < key {
            j += 1;
        }
        let found = (j < rechecked.len() && rechecked.key(j) == key).then_some(j);
        if compared.upserted[row] {
            continue;
        }
        let number = old.numbers[row];
        let now = match found {
            Some(at) => Some(rechecked.numbers[at]),
            None if rechecked_place(number) || compared.taken(number) => None,
            None => Some(number),
        };
        match now {
            Some(number) => {
                kept.push(row);
                numbers.push(number);
            }
            None => gone.push(row as u64),
        }
    }
    // An unchanged row is one the previous run read.
    if let Some(row) = (0..rechecked.len()).find(|&row| old.find(rechecked.key(row)).is_none()) {
        return Err(format!(
            "a row unchanged since the previous run (its key's row {row} in this run) was not \
             in it: start the chain again with --keep-keys"
        ));
    }
    let deletes = arrow_select::take::take_record_batch(&old.batch, &UInt64Array::from(gone))
        .map_err(|e| e.to_string())?;
    // The rows kept and the upserts, merged in key order.
    let upserts = &compared.upserts;
    let mut order = Vec::with_capacity(kept.len() + upserts.len());
    let mut merged_numbers = Vec::with_capacity(kept.len() + upserts.len());
    let (mut i, mut j) = (0, 0);
    while i < kept.len() || j < upserts.len() {
        if j == upserts.len() || (i < kept.len() && old.key(kept[i]) < upserts.key(j)) {
            order.push((0, kept[i]));
            merged_numbers.push(numbers[i]);
            i += 1;
        } else {
            order.push((1, j));
            merged_numbers.push(upserts.numbers[j]);
            j += 1;
        }
    }
    let batch =
        arrow_select::interleave::interleave_record_batch(&[&old.batch, &upserts.batch], &order)
            .map_err(|e| e.to_string())?;
    Ok(Changes {
        keys: KeysFile {
            batch,
            numbers: merged_numbers,
        },
        deletes,
    })
}

/// The units of a table to read the unchanged keys of, with their ranges:
/// those where fewer (or more) rows are unchanged (`counted`, per unit and
/// its range of DB_KEY numbers) than rows of the previous run lie there
/// and are neither read again (by key) nor in a place a changed row took.
pub fn units_to_recheck(
    old: &SortedKeys,
    compared: &Compared,
    counted: &[(Unit, (u64, u64), u64)],
) -> Vec<(Unit, (u64, u64))> {
    let mut places: Vec<u64> = (0..old.len())
        .filter(|&row| !compared.upserted[row] && !compared.taken(old.numbers[row]))
        .map(|row| old.numbers[row])
        .collect();
    places.sort_unstable();
    counted
        .iter()
        .filter(|(_, (lo, hi), count)| {
            let there = places.partition_point(|&n| n < *hi) - places.partition_point(|&n| n < *lo);
            there as u64 != *count
        })
        .map(|(unit, range, _)| (*unit, *range))
        .collect()
}

/// Row `row`'s key among keys encoded one after another.
fn encoded<'a>(bytes: &'a [u8], ends: &[usize], row: usize) -> &'a [u8] {
    let start = if row == 0 { 0 } else { ends[row - 1] };
    &bytes[start..ends[row]]
}

/// The keys of `batches`, encoded one after another, and where each ends.
fn encode_all(batches: &[RecordBatch]) -> Result<(Vec<u8>, Vec<usize>), String> {
    let rows = batches.iter().map(RecordBatch::num_rows).sum();
    let mut bytes = Vec::new();
    let mut ends = Vec::with_capacity(rows);
    for batch in batches {
        let encoder = KeyEncoder::new(batch)?;
        for row in 0..batch.num_rows() {
            encoder.append(row, &mut bytes);
            ends.push(bytes.len());
        }
    }
    Ok((bytes, ends))
}

/// How a keys file is written: in key order, a column's values are best
/// kept as differences (integers) or shared prefixes (strings); a
/// dictionary would only add to them.
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

    /// The keys file of `keys`.
    fn file_of(keys: &SortedKeys) -> Vec<u8> {
        let file = KeysFile {
            batch: keys.batch.clone(),
            numbers: keys.numbers.clone(),
        };
        file.write_to(Vec::new()).unwrap()
    }

    /// `b`'s keys, its rows numbered from 1 in its order.
    fn sorted_keys(b: &RecordBatch) -> SortedKeys {
        let numbers = (1..=b.num_rows() as u64).collect();
        SortedKeys::sort(std::slice::from_ref(b), numbers).unwrap()
    }

    /// `b` with a row number column after its own, as keys files have.
    fn numbered(b: &RecordBatch) -> RecordBatch {
        let mut fields: Vec<_> = b.schema().fields().iter().cloned().collect();
        fields.push(Arc::new(Field::new(NUMBER_COLUMN, DataType::UInt64, false)));
        let mut columns = b.columns().to_vec();
        columns.push(Arc::new(UInt64Array::from_iter_values(
            1..=b.num_rows() as u64,
        )));
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    /// Keys `ids` (one INTEGER column) at DB_KEY numbers `numbers`.
    fn at(ids: &[i32], numbers: &[u64]) -> SortedKeys {
        let b = RecordBatch::try_from_iter([(
            "ID",
            Arc::new(Int32Array::from(ids.to_vec())) as ArrayRef,
        )])
        .unwrap();
        SortedKeys::sort(&[b], numbers.to_vec()).unwrap()
    }

    fn unit(seq: usize) -> Unit {
        Unit {
            table: 0,
            seq,
            first_slot: 0,
            end_slot: None,
        }
    }

    #[test]
    fn counts_find_the_units_a_row_left_and_their_keys_tell_which() {
        // Rows 1..=10 at numbers 1..=10. Since: 3 updated in place, 5's
        // key changed to 20 in place, 21 inserted at 11, 8 deleted.
        let old = at(
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        );
        let upserts = at(&[3, 20, 21], &[3, 5, 11]);
        // Unit 0 holds numbers 1..6: 1, 2 and 4 unchanged, as many as the
        // previous run's rows there that nothing took; unit 1 one short.
        let counted = [(unit(0), (0, 6), 3), (unit(1), (6, u64::MAX), 4)];
        let compared = Compared::new(&old, upserts);
        let rechecks = units_to_recheck(&old, &compared, &counted);
        assert_eq!(rechecks, [(unit(1), (6, u64::MAX))]);
        let rechecked = at(&[6, 7, 9, 10], &[6, 7, 9, 10]);
        let changes = changes_since(&old, &compared, &rechecked, &[(6, u64::MAX)]).unwrap();
        assert_eq!(ids(&changes.deletes), [5, 8]);
        assert_eq!(ids(&changes.keys.batch), [1, 2, 3, 4, 6, 7, 9, 10, 20, 21]);
        assert_eq!(changes.keys.numbers, [1, 2, 3, 4, 6, 7, 9, 10, 5, 11]);
        // Without the recheck, 8 would be taken for there: the counts must
        // be compared.
        let unchecked = changes_since(&old, &compared, &at(&[], &[]), &[]).unwrap();
        assert_eq!(ids(&unchecked.deletes), [5]);
    }

    #[test]
    fn an_unchanged_row_the_previous_run_lacked_is_refused() {
        let old = at(&[1, 2], &[1, 2]);
        let compared = Compared::new(&old, at(&[], &[]));
        let rechecked = at(&[1, 2, 7], &[1, 2, 3]);
        let refused = changes_since(&old, &compared, &rechecked, &[(0, u64::MAX)])
            .err()
            .unwrap();
        assert!(refused.contains("start the chain again"), "{refused}");
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
        let keys = SortedKeys::from_reads(
            &b.schema(),
            std::slice::from_ref(&b),
            DbKeyLayout::LittleEndian,
        )
        .unwrap();
        assert_eq!(ids(&keys.batch), [1, 2]);
        assert_eq!(keys.numbers, [5 << 32 | 9, 7]);
        let none = SortedKeys::from_reads(&b.schema(), &[], DbKeyLayout::LittleEndian).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn deletes_are_the_old_keys_the_new_set_lacks() {
        let old = batch(&[12, 2, 3, 1], &["", "y", "z", "x"]);
        let old = sorted_keys(&old);
        assert_eq!(ids(&old.batch), [1, 2, 3, 12]);
        // The new set: (1, "2") new, at a place of its own; the rest
        // unchanged where they were, every place rechecked.
        let keys = |ids: &[i32], names: &[&str], numbers: &[u64]| {
            SortedKeys::sort(&[batch(ids, names)], numbers.to_vec()).unwrap()
        };
        let upserts = Compared::new(&old, keys(&[1], &["2"], &[9]));
        let unchanged = keys(&[3, 1], &["z", "x"], &[3, 4]);
        let everywhere = [(0, u64::MAX)];
        let changes = changes_since(&old, &upserts, &unchanged, &everywhere).unwrap();
        assert_eq!(ids(&changes.deletes), [2, 12]);
        let new = keys(&[3, 1, 1], &["z", "2", "x"], &[3, 9, 4]);
        let nothing = Compared::new(&new, keys(&[], &[], &[]));
        let same = changes_since(&new, &nothing, &new, &everywhere).unwrap();
        assert_eq!(same.deletes.num_rows(), 0);
    }

    #[test]
    fn a_key_read_twice_is_refused() {
        let b = batch(&[1, 2, 1], &["x", "y", "x"]);
        assert!(SortedKeys::sort(&[b], vec![1, 2, 3]).is_err());
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
        // 2,000,000 keys of two integers, as a TPC-C STOCK's, out of order.
        let (w, i): (Vec<i32>, Vec<i32>) = (0..2_000_000)
            .map(|n| (20 - n / 100_000, n % 100_000 + 1))
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
        let numbers = (0..2_000_000u64)
            .map(|n| n / 200 * 480 + n % 200 + 1)
            .collect();
        let sorted = SortedKeys::sort(std::slice::from_ref(&b), numbers).unwrap();
        let file = file_of(&sorted);
        assert!(file.len() < 100_000, "{} bytes", file.len());
        let back = SortedKeys::read(file, &columns(&b), Some(2_000_000)).unwrap();
        assert_eq!(back.batch, sorted.batch);
        assert_eq!(back.numbers, sorted.numbers);
        assert_eq!((&back.bytes, &back.ends), (&sorted.bytes, &sorted.ends));

        let strings = batch(&[5, 1, 3], &["\0b", "a", ""]);
        let sorted = sorted_keys(&strings);
        let back = SortedKeys::read(file_of(&sorted), &columns(&strings), None).unwrap();
        assert_eq!(ids(&back.batch), [1, 3, 5]);
    }

    #[test]
    fn a_keys_file_out_of_order_repeated_null_or_miscounted_is_refused() {
        let ok = batch(&[1, 2], &["a", "a"]);
        let cols = columns(&ok);
        assert!(SortedKeys::read(parquet_of(&numbered(&ok)), &cols, Some(2)).is_ok());
        let refused = |b: &RecordBatch, count: Option<u64>| {
            SortedKeys::read(parquet_of(&numbered(b)), &columns(b), count)
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
        let other = SortedKeys::read(parquet_of(&numbered(&ok)), &cols[..1], None)
            .err()
            .unwrap();
        assert!(other.contains("not the primary key"), "{other}");
        // As earlier versions kept them: keys without their rows' places.
        let old = SortedKeys::read(parquet_of(&ok), &cols[..1], None)
            .err()
            .unwrap();
        assert!(old.contains("start the chain again"), "{old}");
    }
}
