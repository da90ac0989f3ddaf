//! Parquet and Arrow IPC files.
//!
//! A table's rows are cut into groups of fixed size counted from its first
//! row ([`crate::groups`]): a Parquet row group of
//! [`ParquetFormat::row_group_rows`], an Arrow record batch of
//! [`CHUNK_ROWS`]. Each group is encoded on whatever thread has it (for
//! Parquet: every column chunk's pages, encoded and compressed, with
//! arrow-rs's `ArrowColumnWriter`), and the table's writer only appends
//! finished groups in order. Inside a group, rows are fed to the encoder
//! in pieces of [`CHUNK_ROWS`] counted from the group's first row, so the
//! bytes do not depend on how the rows arrived: the file is
//! byte-identical for any `--parallel`.
//!
//! Types are Arrow's, as the decoder made them: Parquet gets DECIMAL with
//! precision and scale for NUMERIC/DECIMAL/INT128, DATE, TIME and TIMESTAMP
//! (TIMESTAMP WITH TIME ZONE as UTC-adjusted), strings as UTF-8, BINARY for
//! OCTETS and binary BLOBs, column names and nullability as declared; the
//! Arrow schema, with each column's declared Firebird type in its field
//! metadata, is stored too. The table name and the snapshot number are in
//! the Arrow schema's metadata (what `pyarrow.parquet.read_schema(f)
//! .metadata` shows) and, for Parquet, in the file's key-value metadata.
//! BLOB columns are written without min/max statistics, which would cost
//! two copies of every big value while it is encoded.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{Schema, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::column::page_store::{PageKey, PageStore, PageStoreArgs, PageStoreFactory};
use parquet::data_type::{ByteArray, FixedLenByteArray};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use crate::values::TYPE_METADATA_KEY;
use crate::{
    check_decimal_precision, BatchFormat, FileInfo, FormatError, GroupEncoder, NextPart, Setting,
    TableWriter,
};

/// Rows per Arrow record batch, and per piece fed to a Parquet column
/// writer (see the module docs).
pub const CHUNK_ROWS: usize = 65_536;
/// Rows per Parquet row group unless asked otherwise: DuckDB's and
/// polars' neighbourhood (122,880 and 262,144), small enough that a
/// table's groups keep many threads busy, big enough to compress well.
pub const DEFAULT_ROW_GROUP_ROWS: usize = 1 << 17;
/// Bytes of data that end a Parquet row group or an Arrow record batch
/// before its rows do, unless the rows were chosen: a group being
/// encoded holds its rows' Arrow data and its encoded pages at once, and
/// 131,072 wide rows (TPC-C's CUSTOMER: ~85 MB) made one worker's run
/// peak at 230 MB.
pub const DEFAULT_GROUP_BYTES: usize = 32 << 20;
/// With `split`, a part file is closed once it holds this many rows.
pub const PART_ROWS: usize = 1 << 20;

/// Keys of the metadata every file carries.
pub const TABLE_KEY: &str = "fbunload.table";
pub const SNAPSHOT_KEY: &str = "fbunload.snapshot_number";

/// Parquet's column compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParquetCompression {
    #[default]
    Zstd,
    Snappy,
    Gzip,
    None,
}

/// Parquet: one file per table, or with `split` a directory of part files
/// of about [`PART_ROWS`] rows each (whole row groups), for engines that
/// read directories in parallel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParquetFormat {
    pub compression: ParquetCompression,
    pub split: bool,
    pub row_group_rows: usize,
    /// Bytes of data that end a row group first ([`DEFAULT_GROUP_BYTES`]);
    /// `None` cuts groups by rows only.
    pub row_group_bytes: Option<usize>,
}

impl Default for ParquetFormat {
    fn default() -> Self {
        ParquetFormat {
            compression: ParquetCompression::default(),
            split: false,
            row_group_rows: DEFAULT_ROW_GROUP_ROWS,
            row_group_bytes: Some(DEFAULT_GROUP_BYTES),
        }
    }
}

/// The Arrow IPC file format (Feather v2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArrowFormat;

/// A group encoded and ready to be appended.
pub struct EncodedGroup(Encoded);

impl EncodedGroup {
    /// Bytes it holds in memory until it is appended: a Parquet group's
    /// encoded column chunks, an Arrow group's one batch.
    pub fn memory_size(&self) -> usize {
        match &self.0 {
            Encoded::Parquet { columns, .. } => columns
                .iter()
                .map(|c| c.close().bytes_written as usize)
                .sum(),
            Encoded::Arrow(batch) => batch.get_array_memory_size(),
        }
    }
}

enum Encoded {
    Parquet {
        columns: Vec<ArrowColumnChunk>,
        rows: usize,
    },
    Arrow(RecordBatch),
}

fn group_of_another_format() -> FormatError {
    FormatError::Io(io::Error::other(
        "a group encoded for another format was appended",
    ))
}

/// The schema with the file's metadata in it, where every Arrow reader
/// looks.
fn with_file_metadata(schema: &Schema, info: &FileInfo) -> SchemaRef {
    let mut metadata = HashMap::from([(TABLE_KEY.to_string(), info.table.clone())]);
    if let Some(n) = info.snapshot_number {
        metadata.insert(SNAPSHOT_KEY.to_string(), n.to_string());
    }
    Arc::new(schema.clone().with_metadata(metadata))
}

type ParquetFile = SerializedFileWriter<Box<dyn Write + Send>>;

impl ParquetFormat {
    fn properties(&self, schema: &Schema) -> WriterProperties {
        let mut metadata: Vec<KeyValue> = schema
            .metadata()
            .iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
            .collect();
        metadata.sort_by(|a, b| a.key.cmp(&b.key));
        let mut builder = WriterProperties::builder()
            .set_compression(match self.compression {
                ParquetCompression::Zstd => Compression::ZSTD(ZstdLevel::default()),
                ParquetCompression::Snappy => Compression::SNAPPY,
                ParquetCompression::Gzip => Compression::GZIP(GzipLevel::default()),
                ParquetCompression::None => Compression::UNCOMPRESSED,
            })
            .set_max_row_group_row_count(Some(self.row_group_rows))
            .set_key_value_metadata(Some(metadata));
        // arrow-rs copies a value whole for a column chunk's min and for its
        // max before cutting them to 64 bytes: two more copies of a 100 MB
        // blob. Blobs are not what readers prune row groups by, so their
        // columns go without statistics. (Without a dictionary too would
        // cost one copy more, not less: the plain page is copied into the
        // page buffer, where a dictionary page is not.)
        for field in schema.fields() {
            if field
                .metadata()
                .get(TYPE_METADATA_KEY)
                .is_some_and(|t| t.starts_with("BLOB"))
            {
                builder = builder.set_column_statistics_enabled(
                    ColumnPath::from(field.name().as_str()),
                    EnabledStatistics::None,
                );
            }
        }
        builder.build()
    }
}

/// Opens a Parquet file as arrow-rs's `ArrowWriter` would (the Arrow
/// schema goes into its metadata), ready for encoded row groups.
fn open_parquet(
    out: Box<dyn Write + Send>,
    schema: &SchemaRef,
    props: &WriterProperties,
) -> Result<(ParquetFile, ArrowRowGroupWriterFactory), FormatError> {
    Ok(ArrowWriter::try_new(out, schema.clone(), Some(props.clone()))?.into_serialized_writer()?)
}

impl BatchFormat for ParquetFormat {
    fn extension(&self) -> &str {
        "parquet"
    }

    fn writes_parts(&self) -> bool {
        self.split
    }

    fn writer(
        &self,
        schema: SchemaRef,
        info: &FileInfo,
        mut out: NextPart,
    ) -> Result<Box<dyn TableWriter>, FormatError> {
        let schema = with_file_metadata(&schema, info);
        let props = self.properties(&schema);
        // Column writers need only the Parquet schema and the properties;
        // a writer over nothing gives them before any part file exists.
        let (current, factory) = if self.split {
            (None, open_parquet(Box::new(io::sink()), &schema, &props)?.1)
        } else {
            let (file, factory) = open_parquet(out()?, &schema, &props)?;
            (Some(file), factory)
        };
        Ok(Box::new(ParquetTable {
            encoder: Arc::new(ParquetGroupEncoder::new(&schema, &props, factory)?),
            schema,
            props,
            // A library caller's 0 would be groups of no rows.
            group_rows: self.row_group_rows.max(1),
            group_bytes: self.row_group_bytes,
            next_part: self.split.then_some(out),
            current,
            part_rows: 0,
        }))
    }

    fn settings(&self) -> Vec<(&'static str, Setting)> {
        let compression = match self.compression {
            ParquetCompression::Zstd => "zstd",
            ParquetCompression::Snappy => "snappy",
            ParquetCompression::Gzip => "gzip",
            ParquetCompression::None => "none",
        };
        vec![
            ("compression", Setting::Text(compression.into())),
            ("split", Setting::Flag(self.split)),
            (
                "row_group_rows",
                Setting::Count(self.row_group_rows.max(1) as u64),
            ),
        ]
        .into_iter()
        .chain(
            self.row_group_bytes
                .map(|bytes| ("row_group_bytes", Setting::Count(bytes as u64))),
        )
        .collect()
    }
}

/// Encodes Parquet row groups: every column chunk, pages compressed.
///
/// A column's writers are made when its turn comes and closed before the
/// next column's are made: each holds its codec from its making (zstd's
/// decompression context alone is 96 KiB, measured with heaptrack), and
/// the whole row group's writers at once, as arrow-rs makes them, held
/// 48 MB over 500 columns whatever the group's rows.
struct ParquetGroupEncoder {
    schema: SchemaRef,
    /// Each column's writers, from a schema of that column alone: the same
    /// Parquet column (name, types, levels), so the same bytes, and
    /// accepted by the file's row group as its own. `None` with a single
    /// column: the file's factory makes the same writers.
    columns: Option<Vec<ArrowRowGroupWriterFactory>>,
    factory: ArrowRowGroupWriterFactory,
}

impl ParquetGroupEncoder {
    fn new(
        schema: &SchemaRef,
        props: &WriterProperties,
        factory: ArrowRowGroupWriterFactory,
    ) -> Result<Self, FormatError> {
        let pages: Arc<dyn PageStoreFactory> = Arc::new(ExactPages);
        let columns = (schema.fields().len() > 1)
            .then(|| {
                schema
                    .fields()
                    .iter()
                    .map(|field| {
                        let alone = Arc::new(Schema::new(vec![field.clone()]));
                        let factory = open_parquet(Box::new(io::sink()), &alone, props)?.1;
                        Ok(factory.with_page_store_factory(pages.clone()))
                    })
                    .collect::<Result<Vec<_>, FormatError>>()
            })
            .transpose()?;
        Ok(ParquetGroupEncoder {
            schema: schema.clone(),
            columns,
            factory: factory.with_page_store_factory(pages),
        })
    }

    /// Column `c`'s writers for row group `index`.
    fn column_writers(
        &self,
        c: usize,
        index: usize,
    ) -> Result<Vec<ArrowColumnWriter>, FormatError> {
        let factory = self.columns.as_ref().map_or(&self.factory, |f| &f[c]);
        Ok(factory.create_column_writers(index)?)
    }
}

impl GroupEncoder for ParquetGroupEncoder {
    fn encode(&self, index: usize, rows: Vec<RecordBatch>) -> Result<EncodedGroup, FormatError> {
        for batch in &rows {
            check_decimal_precision(batch)?;
        }
        let count: usize = rows.iter().map(|b| b.num_rows()).sum();
        // A column at a time, each in its pieces, each closed before the
        // next begins: every writer gets the same pieces as fed row-wise,
        // so the same bytes, but only one column's encoder state (its
        // codec, its dictionary, its keys, its page) is held at once, not
        // every column's, and only one column's piece is ever copied. With
        // 500 columns that state was four times the group's rows.
        let mut columns = Vec::new();
        for (c, field) in self.schema.fields().iter().enumerate() {
            let mut own = self.column_writers(c, index)?;
            let column: Vec<&dyn arrow_array::Array> =
                rows.iter().map(|b| b.column(c).as_ref()).collect();
            let mut start = 0;
            while start < count {
                let len = CHUNK_ROWS.min(count - start);
                let piece = rows_of(&column, start, len)?;
                let leaves = compute_leaves(field, &piece)?;
                if leaves.len() != own.len() {
                    return Err(FormatError::Io(io::Error::other(format!(
                        "column {}: {} Parquet leaves, {} writers",
                        field.name(),
                        leaves.len(),
                        own.len()
                    ))));
                }
                for (leaf, writer) in leaves.iter().zip(&mut own) {
                    writer.write(leaf)?;
                }
                start += len;
            }
            for writer in own {
                let mut chunk = writer.close()?;
                statistics_of_their_own(&mut chunk)?;
                columns.push(chunk);
            }
        }
        Ok(EncodedGroup(Encoded::Parquet {
            columns,
            rows: count,
        }))
    }

    fn working_bytes(&self, rows_bytes: usize) -> usize {
        // The pages it makes (at most about the rows; compressed pages
        // keep the buffers zstd asked for, the size of the page before
        // compression) and one column's writers.
        rows_bytes + COLUMN_WRITER_BYTES
    }
}

/// Gives a column chunk's min and max bytes of their own. arrow-rs
/// converts each piece of a DECIMAL column into one buffer of all its
/// values, and the chunk's min and max are views into it: kept for the
/// file's footer, they kept every piece's whole buffer until the file was
/// closed. WIDE (500 columns of nine types, 100,000 rows) held 40 MB of
/// them at the end (heaptrack), and it grows with the table's rows.
fn statistics_of_their_own(chunk: &mut ArrowColumnChunk) -> Result<(), FormatError> {
    fn owned<T>(
        s: &ValueStatistics<T>,
        deprecated: bool,
        copy: impl Fn(&T) -> T,
    ) -> ValueStatistics<T> {
        ValueStatistics::new(
            s.min_opt().map(&copy),
            s.max_opt().map(&copy),
            s.distinct_count(),
            s.null_count_opt(),
            deprecated,
        )
        .with_min_is_exact(s.min_is_exact())
        .with_max_is_exact(s.max_is_exact())
        .with_backwards_compatible_min_max(s.is_min_max_backwards_compatible())
        .with_nan_count(s.nan_count_opt())
    }
    let close = chunk.close_mut();
    let Some(statistics) = close.metadata.statistics() else {
        return Ok(());
    };
    let deprecated = statistics.is_min_max_deprecated();
    let statistics = match statistics {
        Statistics::FixedLenByteArray(s) => {
            Statistics::FixedLenByteArray(owned(s, deprecated, |v| {
                FixedLenByteArray::from(v.data().to_vec())
            }))
        }
        Statistics::ByteArray(s) => {
            Statistics::ByteArray(owned(s, deprecated, |v| ByteArray::from(v.data().to_vec())))
        }
        _ => return Ok(()),
    };
    close.metadata = close
        .metadata
        .clone()
        .into_builder()
        .set_statistics(statistics)
        .build()?;
    Ok(())
}

/// Keeps each encoded page of a row group in a buffer of its own size
/// until the group is appended. A compressed page comes in the buffer the
/// codec asked for, the size of the page before compression (zstd's
/// bound), and arrow-rs keeps that buffer: a group of 500 columns encoded
/// to 15 MB held 79 MB of pages until it was appended (heaptrack, WIDE).
#[derive(Debug)]
struct ExactPages;

impl PageStoreFactory for ExactPages {
    fn create(&self, _: &PageStoreArgs<'_>) -> parquet::errors::Result<Box<dyn PageStore>> {
        Ok(Box::new(ExactPageStore::default()))
    }
}

#[derive(Default)]
struct ExactPageStore {
    pages: Vec<Bytes>,
    resident: usize,
}

impl PageStore for ExactPageStore {
    fn put(&mut self, page: Bytes) -> parquet::errors::Result<PageKey> {
        let key = PageKey::new(self.pages.len() as u64);
        self.resident += page.len();
        // The copy is of compressed bytes; the codec's buffer goes now.
        self.pages.push(Bytes::copy_from_slice(&page));
        Ok(key)
    }

    fn take(&mut self, key: PageKey) -> parquet::errors::Result<Bytes> {
        let page = self
            .pages
            .get_mut(key.get() as usize)
            .map(std::mem::take)
            .ok_or_else(|| parquet::errors::ParquetError::General("no such page".into()))?;
        self.resident -= page.len();
        Ok(page)
    }

    fn memory_size(&self) -> usize {
        self.resident
    }
}

/// What one column's Parquet writer holds from its making to its closing,
/// whatever it writes: its codec's contexts (zstd's decompression context
/// alone is 96 KiB) and its buffers.
pub const COLUMN_WRITER_BYTES: usize = 1 << 20;

/// Rows `start..start + len` of a column held in consecutive arrays: a
/// slice where one array holds them all, else those rows concatenated.
fn rows_of(
    column: &[&dyn arrow_array::Array],
    start: usize,
    len: usize,
) -> Result<arrow_array::ArrayRef, FormatError> {
    let mut parts = Vec::new();
    let mut offset = 0;
    for array in column {
        let (lo, hi) = (offset, offset + array.len());
        offset = hi;
        if hi <= start || lo >= start + len {
            continue;
        }
        let from = start.max(lo) - lo;
        let to = (start + len).min(hi) - lo;
        parts.push(array.slice(from, to - from));
    }
    if parts.len() == 1 {
        return Ok(parts.pop().expect("one part"));
    }
    let refs: Vec<&dyn arrow_array::Array> = parts.iter().map(|a| a.as_ref()).collect();
    Ok(arrow_select::concat::concat(&refs)?)
}

/// A Parquet table being written: one file, or parts of whole row groups.
struct ParquetTable {
    encoder: Arc<ParquetGroupEncoder>,
    schema: SchemaRef,
    props: WriterProperties,
    group_rows: usize,
    group_bytes: Option<usize>,
    /// With `split`, where each part goes.
    next_part: Option<NextPart>,
    current: Option<ParquetFile>,
    /// Rows in the current part (with `split`).
    part_rows: usize,
}

impl ParquetTable {
    /// Closes the part being written, if any, and opens the next.
    fn open_next_part(&mut self) -> Result<(), FormatError> {
        if let Some(done) = self.current.take() {
            // close() writes the footer and flushes through to the part's
            // file; into_inner() would hide an I/O error in a string.
            done.close()?;
        }
        let next_part = self
            .next_part
            .as_mut()
            .expect("only split tables have parts");
        self.current = Some(open_parquet(next_part()?, &self.schema, &self.props)?.0);
        self.part_rows = 0;
        Ok(())
    }
}

impl TableWriter for ParquetTable {
    fn group_rows(&self) -> usize {
        self.group_rows
    }

    fn group_bytes(&self) -> Option<usize> {
        self.group_bytes
    }

    fn encoder(&self) -> Arc<dyn GroupEncoder> {
        self.encoder.clone()
    }

    fn append(&mut self, group: EncodedGroup) -> Result<(), FormatError> {
        let Encoded::Parquet { columns, rows } = group.0 else {
            return Err(group_of_another_format());
        };
        if self.next_part.is_some() && (self.current.is_none() || self.part_rows >= PART_ROWS) {
            self.open_next_part()?;
        }
        let file = self.current.as_mut().expect("a file is open");
        let mut row_group = file.next_row_group()?;
        for column in columns {
            column.append_to_row_group(&mut row_group)?;
        }
        row_group.close()?;
        self.part_rows += rows;
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.current
            .as_ref()
            .map_or(0, |f| f.bytes_written() as u64)
    }

    fn finish(mut self: Box<Self>) -> Result<(), FormatError> {
        if self.current.is_none() {
            // An empty table is one part with its schema and no rows.
            self.open_next_part()?;
        }
        self.current.take().expect("a file is open").close()?;
        Ok(())
    }
}

impl BatchFormat for ArrowFormat {
    fn extension(&self) -> &str {
        "arrow"
    }

    fn writer(
        &self,
        schema: SchemaRef,
        info: &FileInfo,
        mut out: NextPart,
    ) -> Result<Box<dyn TableWriter>, FormatError> {
        let schema = with_file_metadata(&schema, info);
        let out = CountedWrite {
            inner: out()?,
            bytes: 0,
        };
        Ok(Box::new(ArrowTable {
            writer: FileWriter::try_new(out, &schema)?,
            encoder: Arc::new(ArrowGroupEncoder { schema }),
        }))
    }
}

/// Makes each Arrow record batch: one array per column of [`CHUNK_ROWS`]
/// rows, concatenated from the pieces.
struct ArrowGroupEncoder {
    schema: SchemaRef,
}

impl GroupEncoder for ArrowGroupEncoder {
    fn encode(&self, _index: usize, rows: Vec<RecordBatch>) -> Result<EncodedGroup, FormatError> {
        for batch in &rows {
            check_decimal_precision(batch)?;
        }
        let batch = arrow_select::concat::concat_batches(&self.schema, &rows)?;
        Ok(EncodedGroup(Encoded::Arrow(batch)))
    }
}

/// Counts the bytes written through it: Arrow's file writer keeps its
/// count to itself.
struct CountedWrite {
    inner: Box<dyn Write + Send>,
    bytes: u64,
}

impl Write for CountedWrite {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

struct ArrowTable {
    writer: FileWriter<CountedWrite>,
    encoder: Arc<ArrowGroupEncoder>,
}

impl TableWriter for ArrowTable {
    fn group_rows(&self) -> usize {
        CHUNK_ROWS
    }

    fn group_bytes(&self) -> Option<usize> {
        Some(DEFAULT_GROUP_BYTES)
    }

    fn encoder(&self) -> Arc<dyn GroupEncoder> {
        self.encoder.clone()
    }

    fn append(&mut self, group: EncodedGroup) -> Result<(), FormatError> {
        let Encoded::Arrow(batch) = group.0 else {
            return Err(group_of_another_format());
        };
        self.writer.write(&batch)?;
        Ok(())
    }

    fn bytes_written(&self) -> u64 {
        self.writer.get_ref().bytes
    }

    fn finish(mut self: Box<Self>) -> Result<(), FormatError> {
        self.writer.finish()?;
        self.writer.into_inner()?.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int32Array};
    use arrow_schema::{DataType, Field};
    use std::sync::Mutex;

    fn batch(from: i32, rows: i32) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int32, false)]));
        let array: ArrayRef = Arc::new(Int32Array::from_iter_values(from..from + rows));
        RecordBatch::try_new(schema, vec![array]).unwrap()
    }

    #[test]
    fn a_group_fed_a_column_at_a_time_is_what_arrow_rs_writes_row_wise() {
        // Four columns, one nested (an ARRAY's list), one a DECIMAL whose
        // statistics are given bytes of their own, in batches cut anywhere:
        // each column's pieces of CHUNK_ROWS are the same as ArrowWriter's,
        // fed whole pieces of rows.
        use arrow_array::builder::{Int32Builder, ListBuilder};
        use arrow_array::StringArray;
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int32, false),
            Field::new("s", DataType::Utf8, true),
            Field::new(
                "l",
                DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
                true,
            ),
            Field::new("d", DataType::Decimal128(38, 4), true),
        ]));
        let rows = |from: usize, n: usize| {
            let i: ArrayRef = Arc::new(Int32Array::from_iter_values(
                (from..from + n).map(|r| r as i32),
            ));
            let s: ArrayRef = Arc::new(StringArray::from_iter(
                (from..from + n).map(|r| (r % 7 != 0).then(|| format!("v{}", r % 1000))),
            ));
            let mut l = ListBuilder::new(Int32Builder::new());
            for r in from..from + n {
                if r % 5 == 0 {
                    l.append_null();
                } else {
                    l.values().append_value(r as i32);
                    l.values().append_value(-(r as i32));
                    l.append(true);
                }
            }
            let l: ArrayRef = Arc::new(l.finish());
            let d = arrow_array::Decimal128Array::from_iter(
                (from..from + n).map(|r| (r % 3 != 0).then_some((r as i128 - 70_000) * 10_007)),
            )
            .with_precision_and_scale(38, 4)
            .unwrap();
            let d: ArrayRef = Arc::new(d);
            RecordBatch::try_new(schema.clone(), vec![i, s, l, d]).unwrap()
        };
        let total = 2 * CHUNK_ROWS + 1234;
        let format = ParquetFormat {
            row_group_rows: total,
            row_group_bytes: None,
            ..ParquetFormat::default()
        };
        let info = FileInfo {
            table: "T".into(),
            snapshot_number: None,
        };
        let out = Shared::default();
        let target = out.clone();
        let mut writer = format
            .writer(
                schema.clone(),
                &info,
                Box::new(move || Ok(Box::new(target.clone()) as Box<dyn Write + Send>)),
            )
            .unwrap();
        let cuts = [0, 1, 8192, 70_000, 70_001, total];
        let batches: Vec<RecordBatch> = cuts.windows(2).map(|w| rows(w[0], w[1] - w[0])).collect();
        let group = writer.encoder().encode(0, batches).unwrap();
        writer.append(group).unwrap();
        writer.finish().unwrap();
        let ours = out.0.lock().unwrap().clone();

        let with_metadata = with_file_metadata(&schema, &info);
        let mut reference = Vec::new();
        let mut arrow_writer = ArrowWriter::try_new(
            &mut reference,
            with_metadata.clone(),
            Some(format.properties(&with_metadata)),
        )
        .unwrap();
        for from in (0..total).step_by(CHUNK_ROWS) {
            let piece = rows(from, CHUNK_ROWS.min(total - from))
                .with_schema(with_metadata.clone())
                .unwrap();
            arrow_writer.write(&piece).unwrap();
        }
        arrow_writer.close().unwrap();
        assert_eq!(row_groups(ours.clone()), [total as i64]);
        assert_eq!(ours, reference);
    }

    /// A writer whose bytes can be read after it is gone.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn write_table(format: &dyn BatchFormat, pieces: &[(i32, i32)]) -> Vec<u8> {
        let out = Shared::default();
        let target = out.clone();
        let info = FileInfo {
            table: "T".into(),
            snapshot_number: Some(7),
        };
        let writer = format
            .writer(
                batch(0, 0).schema(),
                &info,
                Box::new(move || Ok(Box::new(target.clone()) as Box<dyn Write + Send>)),
            )
            .unwrap();
        let batches = pieces.iter().map(|&(from, rows)| batch(from, rows));
        crate::groups::write_in_order(writer, batches).unwrap();
        let bytes = out.0.lock().unwrap().clone();
        bytes
    }

    /// Writes a table as the file destination does with many workers:
    /// groups encoded on several threads, finishing in any order, and
    /// appended in order.
    fn write_table_in_parallel(format: &dyn BatchFormat, rows: i32) -> Vec<u8> {
        let out = Shared::default();
        let target = out.clone();
        let info = FileInfo {
            table: "T".into(),
            snapshot_number: Some(7),
        };
        let mut writer = format
            .writer(
                batch(0, 0).schema(),
                &info,
                Box::new(move || Ok(Box::new(target.clone()) as Box<dyn Write + Send>)),
            )
            .unwrap();
        let mut cutter =
            crate::GroupCutter::new(writer.group_rows()).with_group_bytes(writer.group_bytes());
        let mut groups: Vec<_> = (0..rows)
            .step_by(5000)
            .flat_map(|from| cutter.push(batch(from, 5000.min(rows - from))))
            .collect();
        groups.extend(cutter.finish());
        let encoder = writer.encoder();
        let mut encoded: Vec<_> = std::thread::scope(|scope| {
            let threads: Vec<_> = groups
                .into_iter()
                .rev()
                .map(|g| {
                    let encoder = encoder.clone();
                    scope.spawn(move || (g.index, encoder.encode(g.index, g.batches).unwrap()))
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        encoded.sort_by_key(|(index, _)| *index);
        for (_, group) in encoded {
            writer.append(group).unwrap();
        }
        writer.finish().unwrap();
        let bytes = out.0.lock().unwrap().clone();
        bytes
    }

    #[test]
    fn arrow_files_hold_the_rows_and_the_metadata_whatever_the_pieces() {
        let whole = write_table(&ArrowFormat, &[(0, 100_000)]);
        let pieces = write_table(&ArrowFormat, &[(0, 10), (10, 0), (10, 99_990)]);
        assert_eq!(whole, pieces);
        assert_eq!(whole, write_table_in_parallel(&ArrowFormat, 100_000));
        let reader =
            arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(whole), None).unwrap();
        assert_eq!(
            reader
                .schema()
                .metadata()
                .get(SNAPSHOT_KEY)
                .map(String::as_str),
            Some("7")
        );
        let values: Vec<i32> = reader
            .flat_map(|b| {
                let b = b.unwrap();
                let a = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
                a.values().to_vec()
            })
            .collect();
        assert_eq!(values, (0..100_000).collect::<Vec<_>>());
    }

    #[test]
    fn parquet_files_do_not_depend_on_the_pieces_or_the_threads() {
        let format = ParquetFormat {
            row_group_rows: 70_000,
            ..ParquetFormat::default()
        };
        let whole = write_table(&format, &[(0, 200_000)]);
        assert_eq!(
            whole,
            write_table(&format, &[(0, 1), (1, 8191), (8192, 191_808)])
        );
        assert_eq!(whole, write_table_in_parallel(&format, 200_000));
        assert_eq!(row_groups(whole), [70_000, 70_000, 60_000]);
    }

    /// Rows per row group of a Parquet file.
    fn row_groups(file: Vec<u8>) -> Vec<i64> {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let reader = SerializedFileReader::new(bytes::Bytes::from(file)).unwrap();
        reader
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect()
    }

    #[test]
    fn parquet_groups_are_what_arrow_rs_own_writer_makes() {
        // The same rows, fed to ArrowWriter in the same pieces: the files
        // must match byte for byte, metadata and all.
        let format = ParquetFormat {
            row_group_rows: 2 * CHUNK_ROWS,
            ..ParquetFormat::default()
        };
        let ours = write_table_in_parallel(&format, 300_000);
        let schema = with_file_metadata(
            &batch(0, 0).schema(),
            &FileInfo {
                table: "T".into(),
                snapshot_number: Some(7),
            },
        );
        let mut reference = Vec::new();
        let mut writer = ArrowWriter::try_new(
            &mut reference,
            schema.clone(),
            Some(format.properties(&schema)),
        )
        .unwrap();
        for from in (0..300_000).step_by(CHUNK_ROWS) {
            let rows = CHUNK_ROWS.min(300_000 - from) as i32;
            let piece = batch(from as i32, rows)
                .with_schema(schema.clone())
                .unwrap();
            writer.write(&piece).unwrap();
        }
        writer.close().unwrap();
        assert_eq!(ours, reference);
    }

    #[test]
    fn blob_columns_have_no_statistics_and_the_others_keep_theirs() {
        let typed = |name: &str, data_type, declared: &str| {
            Field::new(name, data_type, true).with_metadata(HashMap::from([(
                TYPE_METADATA_KEY.to_string(),
                declared.to_string(),
            )]))
        };
        let schema = Schema::new(vec![
            typed(
                "NOTE",
                DataType::Utf8,
                "BLOB SUB_TYPE TEXT CHARACTER SET UTF8",
            ),
            typed("IMAGE", DataType::Binary, "BLOB SUB_TYPE BINARY"),
            typed("NAME", DataType::Utf8, "VARCHAR(10) CHARACTER SET UTF8"),
        ]);
        let props = ParquetFormat::default().properties(&schema);
        let statistics = |name: &str| props.statistics_enabled(&ColumnPath::from(name));
        assert_eq!(statistics("NOTE"), EnabledStatistics::None);
        assert_eq!(statistics("IMAGE"), EnabledStatistics::None);
        assert_eq!(statistics("NAME"), EnabledStatistics::Page);
    }

    #[test]
    fn split_parquet_parts_hold_whole_row_groups() {
        let format = ParquetFormat {
            split: true,
            row_group_rows: PART_ROWS / 2 + 1,
            ..ParquetFormat::default()
        };
        let parts = Arc::new(Mutex::new(Vec::<Shared>::new()));
        let made = parts.clone();
        let writer = format
            .writer(
                batch(0, 0).schema(),
                &FileInfo::default(),
                Box::new(move || {
                    let part = Shared::default();
                    made.lock().unwrap().push(part.clone());
                    Ok(Box::new(part) as Box<dyn Write + Send>)
                }),
            )
            .unwrap();
        let rows = PART_ROWS as i32 * 2;
        let batches = (0..rows)
            .step_by(100_000)
            .map(|from| batch(from, 100_000.min(rows - from)));
        crate::groups::write_in_order(writer, batches).unwrap();
        let row_groups: Vec<Vec<i64>> = parts
            .lock()
            .unwrap()
            .iter()
            .map(|part| row_groups(part.0.lock().unwrap().clone()))
            .collect();
        let group = PART_ROWS as i64 / 2 + 1;
        let last = rows as i64 - 3 * group;
        assert_eq!(row_groups, vec![vec![group, group], vec![group, last]]);
    }
}
