//! Output formats, each a writer over any `io::Write`: formats know
//! nothing of files, names or directories (destinations do).
//!
//! Two families, by where the work can happen:
//!
//! - [`ByteFormat`]s (CSV, TSV, JSON Lines) encode each unit on the worker
//!   thread that read it. A table is the format's [`ByteFormat::header`]
//!   followed by every unit's bytes in unit order; no state crosses from
//!   one unit to the next, so encoding (the most expensive part of an
//!   unload after fetching) scales with `--parallel` while the output
//!   stays byte-identical for any number of workers. Encoders append to a
//!   caller-owned `Vec<u8>`: the destination decides whether a unit's
//!   bytes go straight out or wait for their turn, and a plain buffer
//!   serves both without a second copy. [`compress`] wraps the whole
//!   stream.
//! - [`BatchFormat`]s (Parquet, Arrow IPC, in [`columnar`]) cut a table's
//!   rows into groups of a fixed number of rows (a Parquet row group, an
//!   Arrow record batch) counted from the table's first row, so groups fall
//!   at the same rows whatever the units. A [`GroupEncoder`] encodes any
//!   group on any thread, several at once; the table's one [`TableWriter`]
//!   only appends encoded groups in order and writes the footer. That is
//!   what lets Parquet, whose encoding and compression cost more than the
//!   fetch, scale with `--parallel` and stay byte-identical.
//!
//! [`text`] holds the value formatting (exact decimals, dates, times, hex)
//! that every text format shares, so a value reads the same in all of them.

pub mod columnar;
pub mod compress;
pub mod csv;
pub mod groups;
pub mod jsonl;
pub mod parts;
pub mod text;
mod values;

use std::io::{self, Write};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema, SchemaRef};

pub use crate::columnar::EncodedGroup;
pub use crate::compress::Compression;
pub use crate::csv::{BinaryEncoding, CsvFormat, CsvOptions};
pub use crate::groups::GroupCutter;
pub use crate::parts::{PartLimits, RecordScanner};
pub use crate::values::TYPE_METADATA_KEY;

/// A text format whose units are encoded independently, in parallel.
pub trait ByteFormat: Send + Sync {
    /// The file name extension, without the dot: `"csv"`, `"tsv"`.
    fn extension(&self) -> &str;
    /// The bytes that open a table; empty when there are none.
    fn header(&self, schema: &Schema) -> Vec<u8>;
    /// A fresh encoder for one unit of a table with this schema.
    fn encoder(&self, schema: SchemaRef) -> Box<dyn BatchEncoder>;
    /// Finds where records end in the encoded bytes, so that a table can
    /// be cut into parts at record ends ([`parts`]).
    fn records(&self) -> RecordScanner;
    /// Its settings as the command line names them, for a run's
    /// manifest: `[("header", Flag(true)), ("null", Text(""))]`.
    fn settings(&self) -> Vec<(&'static str, Setting)> {
        Vec::new()
    }
}

/// The value of a format's setting, typed for a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    Flag(bool),
    Count(u64),
    Text(String),
}

/// Encodes the batches of one unit.
pub trait BatchEncoder: Send {
    /// Appends the encoding of `batch` to `out`.
    fn encode(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), FormatError>;
}

/// Rows of data a text encoder is given at once by [`encode_in_pieces`].
pub const ENCODE_PIECE_BYTES: usize = 1 << 20;

/// Encodes `batch` a piece of rows at a time, each of about
/// [`ENCODE_PIECE_BYTES`] of data (a bigger row alone), and hands each
/// piece's bytes to `write`; `buffer` holds one piece's bytes at a time.
/// Text formats encode row by row, so the bytes are those of the whole
/// batch. A batch is cut at 16 MB, and its text was held whole while it
/// was written (1.5 times the batch for blobs written in hex): on each
/// worker, beside the batch, and counted nowhere.
pub fn encode_in_pieces(
    encoder: &mut dyn BatchEncoder,
    batch: &RecordBatch,
    buffer: &mut Vec<u8>,
    write: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> Result<(), FormatError> {
    let sizes = groups::row_data_sizes(batch);
    let mut start = 0;
    while start < sizes.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < sizes.len() && (end == start || bytes + sizes[end] <= ENCODE_PIECE_BYTES) {
            bytes += sizes[end];
            end += 1;
        }
        buffer.clear();
        if start == 0 && end == sizes.len() {
            encoder.encode(batch, buffer)?;
        } else {
            encoder.encode(&batch.slice(start, end - start), buffer)?;
        }
        write(buffer)?;
        start = end;
    }
    Ok(())
}

/// Where a [`BatchFormat`] writes: asked once for a single file, once per
/// part for a format that writes a directory of parts.
pub type NextPart = Box<dyn FnMut() -> io::Result<Box<dyn Write + Send>> + Send>;

/// A format whose rows are encoded in groups, in parallel, and appended
/// in order by one writer per table.
pub trait BatchFormat: Send + Sync {
    fn extension(&self) -> &str;
    /// Whether a table is a directory of part files rather than one file.
    fn writes_parts(&self) -> bool {
        false
    }
    fn writer(
        &self,
        schema: SchemaRef,
        info: &FileInfo,
        out: NextPart,
    ) -> Result<Box<dyn TableWriter>, FormatError>;
    /// Its settings, as [`ByteFormat::settings`].
    fn settings(&self) -> Vec<(&'static str, Setting)> {
        Vec::new()
    }
}

/// Writes one table of a [`BatchFormat`]: the table's rows, cut into
/// groups of [`TableWriter::group_rows`] rows (the last one shorter), are
/// encoded by [`TableWriter::encoder`] on any thread and appended here in
/// order. [`groups::write_in_order`] does all of it on one thread.
pub trait TableWriter: Send {
    /// Rows per group; every group but the last has at most this many,
    /// and exactly this many unless [`Self::group_bytes`] ends it first.
    fn group_rows(&self) -> usize;
    /// Bytes of data that end a group before [`Self::group_rows`] do
    /// ([`GroupCutter::with_group_bytes`]), if any.
    fn group_bytes(&self) -> Option<usize> {
        None
    }
    /// Encodes this table's groups; shared by every thread that encodes.
    /// What it encodes may be appended to any writer of the same format
    /// and schema: the parts of a table share one encoder.
    fn encoder(&self) -> Arc<dyn GroupEncoder>;
    /// Appends the next group, in order.
    fn append(&mut self, group: EncodedGroup) -> Result<(), FormatError>;
    /// Bytes of the file so far, without what [`TableWriter::finish`]
    /// adds: where `--max-bytes` ends a part.
    fn bytes_written(&self) -> u64;
    /// Writes what closes the table (a footer) and flushes.
    fn finish(self: Box<Self>) -> Result<(), FormatError>;
}

/// Encodes one group of a table: the expensive part, run in parallel.
pub trait GroupEncoder: Send + Sync {
    /// `index` is the group's position in the table; `rows` its rows, in
    /// order, in pieces cut anywhere (the encoding must not depend on
    /// where).
    fn encode(&self, index: usize, rows: Vec<RecordBatch>) -> Result<EncodedGroup, FormatError>;

    /// Bytes encoding a group of `rows_bytes` of rows holds beside the
    /// rows while it works (its copies, its output, its fixed state): as
    /// much again unless the format knows better.
    fn working_bytes(&self, rows_bytes: usize) -> usize {
        rows_bytes
    }
}

/// A table's output format, as a destination sees it.
#[derive(Clone)]
pub enum Format {
    /// Units encoded in parallel into bytes, concatenated, and compressed
    /// as one stream if asked.
    Bytes {
        format: Arc<dyn ByteFormat>,
        compression: Option<Compression>,
    },
    /// Batches written in order by one writer per table.
    Batches(Arc<dyn BatchFormat>),
}

impl Format {
    pub fn bytes(format: impl ByteFormat + 'static) -> Format {
        Format::Bytes {
            format: Arc::new(format),
            compression: None,
        }
    }

    pub fn batches(format: impl BatchFormat + 'static) -> Format {
        Format::Batches(Arc::new(format))
    }

    /// The file name extension: `csv`, `csv.zst`, `parquet`.
    pub fn extension(&self) -> String {
        match self {
            Format::Bytes {
                format,
                compression: None,
            } => format.extension().to_string(),
            Format::Bytes {
                format,
                compression: Some(c),
            } => format!("{}.{}", format.extension(), c.extension()),
            Format::Batches(format) => format.extension().to_string(),
        }
    }

    /// The format's name and settings as the command line names them,
    /// for a run's manifest: `format=csv`, `header=true`, `compress=zstd`.
    pub fn settings(&self) -> Vec<(&'static str, Setting)> {
        let (name, mut settings, compression) = match self {
            Format::Bytes {
                format,
                compression,
            } => (format.extension(), format.settings(), *compression),
            Format::Batches(format) => (format.extension(), format.settings(), None),
        };
        settings.insert(0, ("format", Setting::Text(name.to_string())));
        if let Some(c) = compression {
            settings.push(("compress", Setting::Text(c.name().to_string())));
        }
        settings
    }
}

/// What a finished file may record about where it came from.
#[derive(Debug, Clone, Default)]
pub struct FileInfo {
    pub table: String,
    pub snapshot_number: Option<u64>,
}

/// Why a batch could not be encoded or written.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Encoding Arrow IPC or Parquet failed.
    #[error("{0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("{0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("{0}")]
    Io(#[from] io::Error),
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
         decimal256 as DOUBLE, polars has no decimal256), or write csv or jsonl, which are \
         exact"
    )]
    DecimalOverflow {
        column: String,
        value: String,
        precision: u8,
        scale: i8,
    },
}

impl FormatError {
    /// The I/O error underneath, when writing is what failed: Arrow and
    /// Parquet wrap their writer's errors, and a destination wants the
    /// error itself (a full disk, a closed pipe) to name the file.
    pub fn into_io(self) -> Result<io::Error, FormatError> {
        use arrow_schema::ArrowError;
        use parquet::errors::ParquetError;
        match self {
            FormatError::Io(e) | FormatError::Arrow(ArrowError::IoError(_, e)) => Ok(e),
            FormatError::Arrow(ArrowError::ExternalError(inner)) => inner
                .downcast::<io::Error>()
                .map(|e| *e)
                .map_err(|inner| FormatError::Arrow(ArrowError::ExternalError(inner))),
            FormatError::Parquet(ParquetError::External(inner)) => inner
                .downcast::<io::Error>()
                .map(|e| *e)
                .map_err(|inner| FormatError::Parquet(ParquetError::External(inner))),
            other => Err(other),
        }
    }
}

/// Refuses a batch holding a Decimal128 value with more digits than its
/// column's precision. Firebird's INT128 has values of 39 digits, Arrow's
/// Decimal128 at most 38; writers of Arrow types (Parquet, Arrow IPC,
/// Arrow streams) check every batch, text formats write any value exactly.
/// fbunload's decoder refuses such a value as soon as it reads one (and
/// maps INT128 itself to Decimal256): this guards batches made elsewhere.
pub fn check_decimal_precision(batch: &RecordBatch) -> Result<(), FormatError> {
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
            return Err(FormatError::DecimalOverflow {
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

    /// Standard output whose reader has gone.
    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }

        fn flush(&mut self) -> io::Result<()> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
    }

    #[test]
    fn settings_name_the_format_and_its_options_as_the_command_line_does() {
        use crate::columnar::ParquetFormat;
        let csv = Format::Bytes {
            format: Arc::new(CsvFormat::tsv(CsvOptions {
                header: true,
                ..CsvOptions::default()
            })),
            compression: Some(Compression::Zstd),
        };
        let text = |s: &str| Setting::Text(s.into());
        assert_eq!(
            csv.settings(),
            [
                ("format", text("tsv")),
                ("header", Setting::Flag(true)),
                ("null", text("")),
                ("binary", text("hex")),
                ("crlf", Setting::Flag(false)),
                ("compress", text("zstd")),
            ]
        );
        let parquet = Format::batches(ParquetFormat {
            split: true,
            ..ParquetFormat::default()
        });
        assert_eq!(
            parquet.settings(),
            [
                ("format", text("parquet")),
                ("compression", text("zstd")),
                ("split", Setting::Flag(true)),
                ("row_group_rows", Setting::Count(131_072)),
                ("row_group_bytes", Setting::Count(32 << 20)),
            ]
        );
    }

    #[test]
    fn a_columnar_writers_io_error_comes_out_as_itself() {
        let batch = decimals(vec![Some(1); 1000]);
        let formats: [Arc<dyn BatchFormat>; 2] = [
            Arc::new(columnar::ParquetFormat {
                compression: columnar::ParquetCompression::None,
                ..Default::default()
            }),
            Arc::new(columnar::ArrowFormat),
        ];
        for format in formats {
            let out: NextPart = Box::new(|| Ok(Box::new(ClosedPipe) as Box<dyn Write + Send>));
            let written = format
                .writer(batch.schema(), &FileInfo::default(), out)
                .and_then(|writer| groups::write_in_order(writer, [batch.clone()]));
            let err = written.expect_err("nothing can be written");
            let shown = err.to_string();
            let io = err
                .into_io()
                .unwrap_or_else(|e| panic!("{}: not an I/O error: {e:?}", format.extension()));
            assert_eq!(io.kind(), io::ErrorKind::BrokenPipe, "{shown}");
        }
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
