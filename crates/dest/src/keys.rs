//! Primary keys of an incremental run (`--since`, `--keep-keys`): the
//! keys entries' batches are kept, not written in the run's format; once
//! the run is complete each table's keys go to `<TABLE>.keys.parquet`
//! (Parquet whatever the format: sorted runs of integers compress to a
//! few bytes a row), and the keys the previous run had that the new
//! snapshot has not are the table's deletes.
//!
//! Keys compare by an exact byte encoding of their values
//! ([`KeyEncoder`]), per Arrow type, so a key set is a hash set of
//! byte strings: memory grows with the table's rows (about 40 bytes a
//! row for a two-integer key).

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::sync::Mutex;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
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

/// Encodes one row's key as bytes that are equal exactly when the values
/// are: fixed-width values as their bytes, variable-width ones with their
/// length first, a null as a byte of its own.
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

    pub fn key(&self, row: usize, out: &mut Vec<u8>) {
        out.clear();
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
    macro_rules! fixed {
        ($t:ty) => {
            out.extend_from_slice(&column.as_primitive::<$t>().value(row).to_le_bytes())
        };
    }
    let var = |out: &mut Vec<u8>, bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    match column.data_type() {
        Boolean => out.push(column.as_boolean().value(row) as u8),
        Int8 => fixed!(Int8Type),
        Int16 => fixed!(Int16Type),
        Int32 => fixed!(Int32Type),
        Int64 => fixed!(Int64Type),
        Date32 => fixed!(Date32Type),
        Date64 => fixed!(Date64Type),
        Time32(TimeUnit::Second) => fixed!(Time32SecondType),
        Time32(_) => fixed!(Time32MillisecondType),
        Time64(TimeUnit::Microsecond) => fixed!(Time64MicrosecondType),
        Time64(_) => fixed!(Time64NanosecondType),
        Timestamp(TimeUnit::Second, _) => fixed!(TimestampSecondType),
        Timestamp(TimeUnit::Millisecond, _) => fixed!(TimestampMillisecondType),
        Timestamp(TimeUnit::Microsecond, _) => fixed!(TimestampMicrosecondType),
        Timestamp(TimeUnit::Nanosecond, _) => fixed!(TimestampNanosecondType),
        UInt8 => fixed!(UInt8Type),
        UInt16 => fixed!(UInt16Type),
        UInt32 => fixed!(UInt32Type),
        UInt64 => fixed!(UInt64Type),
        Float32 => fixed!(Float32Type),
        Float64 => fixed!(Float64Type),
        Decimal128(_, _) => fixed!(Decimal128Type),
        Decimal256(_, _) => fixed!(Decimal256Type),
        Utf8 => var(out, column.as_string::<i32>().value(row).as_bytes()),
        LargeUtf8 => var(out, column.as_string::<i64>().value(row).as_bytes()),
        Binary => var(out, column.as_binary::<i32>().value(row)),
        LargeBinary => var(out, column.as_binary::<i64>().value(row)),
        FixedSizeBinary(_) => var(out, column.as_fixed_size_binary().value(row)),
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

/// The rows of `old` whose keys are not in `new`: the deletes.
pub fn missing_from(
    old: &[RecordBatch],
    new: &HashSet<Vec<u8>>,
    schema: &SchemaRef,
) -> Result<RecordBatch, String> {
    let mut kept = Vec::new();
    let mut key = Vec::new();
    for batch in old {
        let encoder = KeyEncoder::new(batch)?;
        let rows: UInt32Array = (0..batch.num_rows())
            .filter(|&row| {
                encoder.key(row, &mut key);
                !new.contains(&key)
            })
            .map(|row| row as u32)
            .collect();
        if !rows.is_empty() {
            let columns = batch
                .columns()
                .iter()
                .map(|c| arrow_select::take::take(c, &rows, None))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            kept.push(RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())?);
        }
    }
    arrow_select::concat::concat_batches(schema, &kept).map_err(|e| e.to_string())
}

/// Writes `batches` as `name` (Parquet, zstd) in the run's staging
/// directory and publishes it.
pub(crate) fn publish_keys(
    dir: &OutputDir,
    name: &str,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> io::Result<Vec<FileDigest>> {
    use parquet::arrow::ArrowWriter;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    let file = dir.create(name)?;
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut writer =
        ArrowWriter::try_new(file, schema.clone(), Some(properties)).map_err(io::Error::other)?;
    for batch in batches {
        writer.write(batch).map_err(io::Error::other)?;
    }
    writer.close().map_err(io::Error::other)?;
    Ok(dir.publish(name)?.1)
}

/// Reads a keys file back: its batches, whose columns must be `columns`
/// (name, Arrow type as the manifest writes it), in order.
pub fn read_keys(
    contents: Vec<u8>,
    columns: &[(String, String)],
) -> Result<Vec<RecordBatch>, String> {
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
    reader
        .map(|batch| batch.map_err(|e| e.to_string()))
        .collect()
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
    use arrow_array::{Int32Array, StringArray};
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

    #[test]
    fn deletes_are_the_old_keys_the_new_set_lacks() {
        let old = batch(&[1, 2, 3, 12], &["x", "y", "z", ""]);
        let new = key_set(&[batch(&[1, 3, 1], &["x", "z", "2"])]).unwrap();
        let deletes = missing_from(&[old.clone()], &new, &old.schema()).unwrap();
        let ids = deletes
            .column(0)
            .as_primitive::<Int32Type>()
            .values()
            .to_vec();
        assert_eq!(ids, [2, 12]);
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
}
