//! Parquet and Arrow IPC files.
//!
//! A table's batches arrive in DB_KEY order, cut wherever the units and
//! the decoder happened to cut them. Before writing, rows are re-cut into
//! batches of [`CHUNK_ROWS`]: row groups and record batches then fall at
//! the same rows whatever the units were, so the file is byte-identical
//! for any `--parallel`.
//!
//! Types are Arrow's, as the decoder made them: Parquet gets DECIMAL with
//! precision and scale for NUMERIC/DECIMAL/INT128, DATE, TIME and TIMESTAMP
//! (TIMESTAMP WITH TIME ZONE as UTC-adjusted), strings as UTF-8, BINARY for
//! OCTETS and binary BLOBs, column names and nullability as declared; the
//! Arrow schema, with each column's declared Firebird type in its field
//! metadata, is stored too. The table name and the snapshot number are in
//! the Arrow schema's metadata (what `pyarrow.parquet.read_schema(f)
//! .metadata` shows) and, for Parquet, in the file's key-value metadata.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use crate::{check_decimal_precision, BatchFormat, FileInfo, FormatError, NextPart, TableWriter};

/// Rows per batch handed to the final writer (see the module docs).
pub const CHUNK_ROWS: usize = 65_536;
/// Rows per Parquet row group, and per part with `split`.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

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
/// of one row group each, for engines that read directories in parallel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParquetFormat {
    pub compression: ParquetCompression,
    pub split: bool,
}

/// The Arrow IPC file format (Feather v2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArrowFormat;

/// The schema with the file's metadata in it, where every Arrow reader
/// looks.
fn with_file_metadata(schema: &Schema, info: &FileInfo) -> SchemaRef {
    let mut metadata = HashMap::from([(TABLE_KEY.to_string(), info.table.clone())]);
    if let Some(n) = info.snapshot_number {
        metadata.insert(SNAPSHOT_KEY.to_string(), n.to_string());
    }
    Arc::new(schema.clone().with_metadata(metadata))
}

impl ParquetFormat {
    fn properties(&self, schema: &Schema) -> WriterProperties {
        let mut metadata: Vec<KeyValue> = schema
            .metadata()
            .iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
            .collect();
        metadata.sort_by(|a, b| a.key.cmp(&b.key));
        WriterProperties::builder()
            .set_compression(match self.compression {
                ParquetCompression::Zstd => Compression::ZSTD(ZstdLevel::default()),
                ParquetCompression::Snappy => Compression::SNAPPY,
                ParquetCompression::Gzip => Compression::GZIP(GzipLevel::default()),
                ParquetCompression::None => Compression::UNCOMPRESSED,
            })
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_key_value_metadata(Some(metadata))
            .build()
    }
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
        let current = if self.split {
            None
        } else {
            Some(ArrowWriter::try_new(
                out()?,
                schema.clone(),
                Some(props.clone()),
            )?)
        };
        Ok(Box::new(ParquetTable {
            schema,
            props,
            next_part: self.split.then_some(out),
            current,
            part_rows: 0,
            chunker: Rechunker::default(),
        }))
    }
}

/// A Parquet table being written: one file, or parts of one row group each.
struct ParquetTable {
    schema: SchemaRef,
    props: WriterProperties,
    /// With `split`, where each part goes.
    next_part: Option<NextPart>,
    current: Option<ArrowWriter<Box<dyn Write + Send>>>,
    /// Rows in the current part (with `split`).
    part_rows: usize,
    chunker: Rechunker,
}

impl ParquetTable {
    fn write_chunk(&mut self, chunk: &RecordBatch) -> Result<(), FormatError> {
        if let Some(next_part) = &mut self.next_part {
            // Chunks divide ROW_GROUP_ROWS, so parts roll over between them.
            if self.current.is_none() || self.part_rows >= ROW_GROUP_ROWS {
                if let Some(done) = self.current.take() {
                    // close() writes the footer and flushes through to the
                    // part's file; into_inner() would hide an I/O error in
                    // a string.
                    done.close()?;
                }
                self.current = Some(ArrowWriter::try_new(
                    next_part()?,
                    self.schema.clone(),
                    Some(self.props.clone()),
                )?);
                self.part_rows = 0;
            }
            self.part_rows += chunk.num_rows();
        }
        let chunk = chunk.clone().with_schema(self.schema.clone())?;
        self.current
            .as_mut()
            .expect("a writer is open")
            .write(&chunk)?;
        Ok(())
    }
}

impl TableWriter for ParquetTable {
    fn write(&mut self, batch: &RecordBatch) -> Result<(), FormatError> {
        check_decimal_precision(batch)?;
        for chunk in self.chunker.push(batch.clone())? {
            self.write_chunk(&chunk)?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), FormatError> {
        if let Some(rest) = self.chunker.rest()? {
            self.write_chunk(&rest)?;
        }
        if let Some(next_part) = &mut self.next_part {
            if self.current.is_none() {
                // An empty table is one part with its schema and no rows.
                self.current = Some(ArrowWriter::try_new(
                    next_part()?,
                    self.schema.clone(),
                    Some(self.props.clone()),
                )?);
            }
        }
        let writer = self.current.take().expect("a writer is open");
        writer.close()?;
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
        Ok(Box::new(ArrowTable {
            writer: FileWriter::try_new(out()?, &schema)?,
            schema,
            chunker: Rechunker::default(),
        }))
    }
}

struct ArrowTable {
    writer: FileWriter<Box<dyn Write + Send>>,
    schema: SchemaRef,
    chunker: Rechunker,
}

impl ArrowTable {
    fn write_chunk(&mut self, chunk: RecordBatch) -> Result<(), FormatError> {
        self.writer
            .write(&chunk.with_schema(self.schema.clone())?)?;
        Ok(())
    }
}

impl TableWriter for ArrowTable {
    fn write(&mut self, batch: &RecordBatch) -> Result<(), FormatError> {
        check_decimal_precision(batch)?;
        for chunk in self.chunker.push(batch.clone())? {
            self.write_chunk(chunk)?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<(), FormatError> {
        if let Some(rest) = self.chunker.rest()? {
            self.write_chunk(rest)?;
        }
        self.writer.finish()?;
        self.writer.into_inner()?.flush()?;
        Ok(())
    }
}

/// Re-cuts a stream of batches into batches of exactly [`CHUNK_ROWS`] rows
/// (the last one shorter).
#[derive(Default)]
struct Rechunker {
    pending: Vec<RecordBatch>,
    rows: usize,
}

impl Rechunker {
    fn push(&mut self, batch: RecordBatch) -> io::Result<Vec<RecordBatch>> {
        self.rows += batch.num_rows();
        self.pending.push(batch);
        if self.rows < CHUNK_ROWS {
            return Ok(Vec::new());
        }
        let all = self.take()?.expect("rows are pending");
        let mut chunks = Vec::new();
        let mut offset = 0;
        while all.num_rows() - offset >= CHUNK_ROWS {
            chunks.push(all.slice(offset, CHUNK_ROWS));
            offset += CHUNK_ROWS;
        }
        if offset < all.num_rows() {
            let rest = all.slice(offset, all.num_rows() - offset);
            self.rows = rest.num_rows();
            self.pending.push(rest);
        }
        Ok(chunks)
    }

    fn rest(&mut self) -> io::Result<Option<RecordBatch>> {
        self.take()
    }

    fn take(&mut self) -> io::Result<Option<RecordBatch>> {
        let Some(first) = self.pending.first() else {
            return Ok(None);
        };
        let schema: Arc<Schema> = first.schema();
        let all = arrow_select::concat::concat_batches(&schema, &self.pending)
            .map_err(io::Error::other)?;
        self.pending.clear();
        self.rows = 0;
        Ok(Some(all))
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
    fn rechunking_cuts_at_the_same_rows_whatever_the_input() {
        let cut = |sizes: &[i32]| {
            let mut chunker = Rechunker::default();
            let mut out = Vec::new();
            let mut from = 0;
            for &n in sizes {
                out.extend(chunker.push(batch(from, n)).unwrap());
                from += n;
            }
            out.extend(chunker.rest().unwrap());
            out.iter().map(|b| b.num_rows()).collect::<Vec<_>>()
        };
        let total = CHUNK_ROWS as i32 * 2 + 100;
        let expected = vec![CHUNK_ROWS, CHUNK_ROWS, 100];
        assert_eq!(cut(&[total]), expected);
        assert_eq!(cut(&[1, total - 1]), expected);
        assert_eq!(
            cut(&[8192; 16].iter().copied().chain([100]).collect::<Vec<_>>()),
            expected
        );
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
        let mut writer = format
            .writer(
                batch(0, 0).schema(),
                &info,
                Box::new(move || Ok(Box::new(target.clone()) as Box<dyn Write + Send>)),
            )
            .unwrap();
        for &(from, rows) in pieces {
            writer.write(&batch(from, rows)).unwrap();
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
    fn parquet_files_do_not_depend_on_the_pieces() {
        let format = ParquetFormat::default();
        assert_eq!(
            write_table(&format, &[(0, 200_000)]),
            write_table(&format, &[(0, 1), (1, 8191), (8192, 191_808)])
        );
    }
}
