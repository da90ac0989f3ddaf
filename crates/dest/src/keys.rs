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
use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{DataType, SchemaRef, TimeUnit};
use fbunload_exec::{ExecError, FileDigest, UnitWriter, Written};

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

    /// Every key, in DB_KEY order.
    pub fn batches(&self) -> Vec<RecordBatch> {
        let units = self.units.lock().unwrap();
        units.values().flatten().cloned().collect()
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

/// A table's primary keys, each once, in ascending order: what a run
/// writes to `<TABLE>.keys.parquet`, and what the next run reads back and
/// compares its own keys with, in one pass over both.
///
/// In order, a key column of integers is a run of small differences,
/// which Parquet's delta encoding keeps in a few bits a row (strings
/// share their prefixes), where its dictionary would spend a value and
/// an index on each; so the keys file of a 2,000,000-row table with a
/// two-integer key is a few kilobytes.
pub struct SortedKeys {
    /// The keys, a row each, in order.
    batch: RecordBatch,
    /// Each row's key as [`KeyEncoder`] writes it, one after another.
    bytes: Vec<u8>,
    /// Where each row's key ends in `bytes`.
    ends: Vec<usize>,
}

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

    /// The keys a run read (`batches`, of `schema`), sorted; fails if a
    /// key is there twice.
    pub fn sort(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<Self, String> {
        let (bytes, ends) = encode_all(batches)?;
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
        let all =
            arrow_select::concat::concat_batches(schema, batches).map_err(|e| e.to_string())?;
        let mut sorted_bytes = Vec::with_capacity(bytes.len());
        let mut sorted_ends = Vec::with_capacity(ends.len());
        for &row in &order {
            sorted_bytes.extend_from_slice(key(row as usize));
            sorted_ends.push(sorted_bytes.len());
        }
        let batch = arrow_select::take::take_record_batch(&all, &UInt64Array::from(order))
            .map_err(|e| e.to_string())?;
        Ok(SortedKeys {
            batch,
            bytes: sorted_bytes,
            ends: sorted_ends,
        })
    }

    /// Reads a keys file back, as untrusted: its columns must be `columns`
    /// (name, Arrow type as the manifest writes it), in order; its keys
    /// not null, each once, in ascending order, and (where the manifest
    /// says) `count` of them. Anything else is refused, never compared.
    pub fn read(
        contents: Vec<u8>,
        columns: &[(String, String)],
        count: Option<u64>,
    ) -> Result<Self, String> {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let builder = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(contents))
            .map_err(|e| e.to_string())?;
        let schema = builder.schema().clone();
        let same = schema.fields().len() == columns.len()
            && schema
                .fields()
                .iter()
                .zip(columns)
                .all(|(f, (name, arrow_type))| {
                    f.name() == name && f.data_type().to_string() == *arrow_type
                });
        if !same {
            let names: Vec<_> = columns.iter().map(|(n, t)| format!("{n} {t}")).collect();
            return Err(format!(
                "its columns are not the primary key ({})",
                names.join(", ")
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
        Ok(SortedKeys { batch, bytes, ends })
    }

    /// The keys of `self` that `new` has not, in order: the deletes.
    pub fn missing_from(&self, new: &SortedKeys) -> Result<RecordBatch, String> {
        let mut gone = Vec::new();
        let mut j = 0;
        for row in 0..self.len() {
            let key = self.key(row);
            while j < new.len() && new.key(j) < key {
                j += 1;
            }
            if j == new.len() || new.key(j) != key {
                gone.push(row as u64);
            }
        }
        arrow_select::take::take_record_batch(&self.batch, &UInt64Array::from(gone))
            .map_err(|e| e.to_string())
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
        let properties = keys_file_properties(&self.batch.schema());
        let mut writer = ArrowWriter::try_new(out, self.batch.schema(), Some(properties))
            .map_err(io::Error::other)?;
        writer.write(&self.batch).map_err(io::Error::other)?;
        writer.into_inner().map_err(io::Error::other)
    }
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

    #[test]
    fn deletes_are_the_old_keys_the_new_set_lacks() {
        let old = batch(&[12, 2, 3, 1], &["", "y", "z", "x"]);
        let old = SortedKeys::sort(&old.schema(), &[old]).unwrap();
        let new = batch(&[3, 1, 1], &["z", "2", "x"]);
        let new = SortedKeys::sort(&new.schema(), &[new]).unwrap();
        assert_eq!(ids(&old.batch), [1, 2, 3, 12]);
        assert_eq!(ids(&old.missing_from(&new).unwrap()), [2, 12]);
        assert_eq!(new.missing_from(&new).unwrap().num_rows(), 0);
    }

    #[test]
    fn a_key_read_twice_is_refused() {
        let b = batch(&[1, 2, 1], &["x", "y", "x"]);
        assert!(SortedKeys::sort(&b.schema(), &[b]).is_err());
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
        let sorted = SortedKeys::sort(&schema, std::slice::from_ref(&b)).unwrap();
        let file = sorted.write_to(Vec::new()).unwrap();
        assert!(file.len() < 20_000, "{} bytes", file.len());
        let back = SortedKeys::read(file, &columns(&b), Some(2_000_000)).unwrap();
        assert_eq!(back.batch, sorted.batch);
        assert_eq!(back.missing_from(&sorted).unwrap().num_rows(), 0);

        let strings = batch(&[5, 1, 3], &["\0b", "a", ""]);
        let sorted = SortedKeys::sort(&strings.schema(), std::slice::from_ref(&strings)).unwrap();
        let back = SortedKeys::read(
            sorted.write_to(Vec::new()).unwrap(),
            &columns(&strings),
            None,
        )
        .unwrap();
        assert_eq!(ids(&back.batch), [1, 3, 5]);
    }

    #[test]
    fn a_keys_file_out_of_order_repeated_null_or_miscounted_is_refused() {
        let ok = batch(&[1, 2], &["a", "a"]);
        let cols = columns(&ok);
        assert!(SortedKeys::read(parquet_of(&ok), &cols, Some(2)).is_ok());
        let refused = |b: &RecordBatch, count: Option<u64>| {
            SortedKeys::read(parquet_of(b), &columns(b), count)
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
        let other = SortedKeys::read(parquet_of(&ok), &cols[..1], None)
            .err()
            .unwrap();
        assert!(other.contains("not the primary key"), "{other}");
    }
}
