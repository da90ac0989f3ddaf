//! Output formats behind one small API.
//!
//! A table's file is the format's [`StreamFormat::header`] followed by the
//! bytes of every unit's encoder, concatenated in unit order. Units are
//! encoded in parallel, on the worker threads that read them, so an encoder
//! depends on nothing but its own batches: no state crosses from one unit
//! to the next, and nothing but the header is written once per file. That
//! is what lets formatting (the most expensive part of an unload after
//! fetching) scale with `--parallel` while the file stays byte-identical
//! for any number of workers.
//!
//! Encoders append to a caller-owned `Vec<u8>` rather than writing to an
//! `io::Write`: the executor decides whether a unit's bytes go straight to
//! the file or wait in memory for their turn, and a plain buffer serves
//! both without a second copy. The shape otherwise follows arrow-rs's
//! writers: build a format from options, feed its encoder `RecordBatch`es.
//!
//! [`text`] holds the value formatting (exact decimals, dates, times, hex)
//! so that later text formats such as JSON Lines render values exactly as
//! CSV does.

pub mod columnar;
pub mod compress;
pub mod csv;
pub mod jsonl;
pub mod text;
mod values;

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema, SchemaRef};

pub use crate::csv::{BinaryEncoding, CsvFormat, CsvOptions};

/// An output format whose units are byte streams (CSV, TSV, JSON Lines;
/// Parquet and Arrow via an intermediate, see [`columnar`]).
pub trait StreamFormat: Send + Sync {
    /// The file name extension, without the dot: `"csv"`, `"tsv"`.
    fn extension(&self) -> &str;
    /// The bytes that open a table's file; empty when there are none.
    fn header(&self, schema: &Schema) -> Vec<u8>;
    /// A fresh encoder for one unit of a table with this schema.
    fn encoder(&self, schema: SchemaRef) -> Box<dyn BatchEncoder>;

    /// Turns a table's complete temporary file into its final file. Byte
    /// formats are done already: sync and rename. Columnar formats convert
    /// their assembled intermediate.
    fn finish_file(&self, temp: &Path, final_path: &Path, _info: &FileInfo) -> io::Result<()> {
        File::open(temp)?.sync_all()?;
        fs::rename(temp, final_path)
    }

    /// The stream a table's bytes go through on their way to `out` when
    /// they are written as they are assembled (`-o -`), or `None` for
    /// formats whose file can only be made once the table is complete.
    fn open_stream(&self, out: Box<dyn ByteStream>) -> Option<Box<dyn ByteStream>> {
        Some(out)
    }
}

/// A destination that a table is streamed into, unit by unit.
pub trait ByteStream: Write + Send {
    /// Writes out what is still held back (a compressor's last frame) and
    /// flushes; the stream is complete only if this succeeds.
    fn finish(self: Box<Self>) -> io::Result<()>;
}

/// Any writer as a [`ByteStream`] that needs nothing but a flush at the end.
pub struct Plain<W: Write + Send>(pub W);

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

impl<W: Write + Send> ByteStream for Plain<W> {
    fn finish(mut self: Box<Self>) -> io::Result<()> {
        self.0.flush()
    }
}

/// What a finished file may record about where it came from.
#[derive(Debug, Clone, Default)]
pub struct FileInfo {
    pub table: String,
    pub snapshot_number: Option<u64>,
}

/// Encodes the batches of one unit.
pub trait BatchEncoder: Send {
    /// Appends the encoding of `batch` to `out`.
    fn encode(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), SinkError>;

    /// Appends whatever closes the unit (nothing, for most formats).
    fn finish(&mut self, _out: &mut Vec<u8>) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Why a batch could not be encoded.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// Encoding Arrow IPC failed.
    #[error("{0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The format has no rendering for this Arrow type.
    #[error("column {column}: type {data_type} cannot be written in this format")]
    UnsupportedType { column: String, data_type: DataType },
    /// The batch does not have the columns of the schema the encoder was made for.
    #[error("batch has {found} columns, the table's schema has {expected}")]
    SchemaMismatch { expected: usize, found: usize },
    /// A value has more digits than its Arrow decimal type holds: readers
    /// would reject the file, or worse, misread it.
    #[error(
        "column {column}: value {value} has more digits than Arrow's decimal128({precision}, \
         {scale}) holds; rerun with --decimal256 (pyarrow reads it; DuckDB reads Parquet \
         decimal256 as DOUBLE, polars not at all), or write csv or jsonl, which are exact"
    )]
    DecimalOverflow {
        column: String,
        value: String,
        precision: u8,
        scale: i8,
    },
}

/// Refuses a batch holding a Decimal128 value with more digits than its
/// column's precision. Firebird's INT128 has values of 39 digits, Arrow's
/// Decimal128 at most 38; writers of Arrow types (Parquet, Arrow IPC,
/// Arrow streams) check every batch, text formats write any value exactly.
pub fn check_decimal_precision(batch: &RecordBatch) -> Result<(), SinkError> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Decimal128Type, DecimalType};
    for (field, array) in batch.schema().fields().iter().zip(batch.columns()) {
        let DataType::Decimal128(precision, scale) = *field.data_type() else {
            continue;
        };
        let values = array.as_primitive::<Decimal128Type>();
        let bad = values
            .iter()
            .flatten()
            .find(|v| !Decimal128Type::is_valid_decimal_precision(*v, precision));
        if let Some(v) = bad {
            let mut value = Vec::new();
            text::decimal(&mut value, v, scale);
            return Err(SinkError::DecimalOverflow {
                column: field.name().clone(),
                value: String::from_utf8_lossy(&value).into_owned(),
                precision,
                scale,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Decimal128Array};
    use arrow_schema::Field;
    use std::sync::Arc;

    fn decimals(values: Vec<Option<i128>>) -> RecordBatch {
        let array = Decimal128Array::from(values)
            .with_precision_and_scale(38, 2)
            .unwrap();
        let schema = Schema::new(vec![Field::new("N", DataType::Decimal128(38, 2), true)]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(array) as ArrayRef]).unwrap()
    }

    #[test]
    fn decimals_beyond_their_precision_are_refused_by_name_and_value() {
        let max38 = 10i128.pow(38) - 1;
        assert!(check_decimal_precision(&decimals(vec![Some(max38), None, Some(-max38)])).is_ok());
        let err = check_decimal_precision(&decimals(vec![Some(1), None, Some(i128::MAX)]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("column N")
                && err.contains("1701411834604692317316873037158841057.27")
                && err.contains("--decimal256"),
            "{err}"
        );
    }
}
