//! Parquet and Arrow IPC files.
//!
//! Units are encoded in parallel like every other format, here as Arrow IPC
//! streams (a schema, the unit's batches, an end marker), which the
//! executor assembles in unit order exactly as it does CSV. When the table
//! is complete, [`StreamFormat::finish_file`] reads those streams back in
//! order and writes the final file with one Parquet `ArrowWriter` or Arrow
//! `FileWriter`. Before writing, rows are re-cut into batches of
//! [`CHUNK_ROWS`]: row groups and pages then fall at the same rows whatever
//! the units were, so the file is byte-identical for any `--parallel`.
//!
//! The cost of this shape is one more pass over the table's data at the
//! end, on one thread per table; encoding Parquet row groups in parallel
//! and appending them in order would remove it.
//!
//! Types are Arrow's, as the decoder made them: Parquet gets DECIMAL with
//! precision and scale for NUMERIC/DECIMAL/INT128, DATE, TIME and TIMESTAMP
//! (TIMESTAMP WITH TIME ZONE as UTC-adjusted), strings as UTF-8, BINARY for
//! OCTETS and binary BLOBs, column names and nullability as declared; the
//! Arrow schema (with each column's Firebird type in its field metadata) is
//! stored too. Both formats record the table name and the snapshot number
//! in their key-value metadata.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter};
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::{FileWriter, StreamWriter};
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use crate::{BatchEncoder, ByteStream, FileInfo, SinkError, StreamFormat};

/// Rows per batch handed to the final writer (see the module docs).
pub const CHUNK_ROWS: usize = 65_536;
/// Rows per Parquet row group.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// Parquet's column compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParquetCompression {
    #[default]
    Zstd,
    Snappy,
    Gzip,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnarFormat {
    /// With `split`, a directory `<TABLE>.parquet/` of part files of one
    /// row group each, for engines that read directories in parallel.
    Parquet {
        compression: ParquetCompression,
        split: bool,
    },
    /// The Arrow IPC file format (Feather v2).
    Arrow,
}

impl StreamFormat for ColumnarFormat {
    fn extension(&self) -> &str {
        match self {
            ColumnarFormat::Parquet { .. } => "parquet",
            ColumnarFormat::Arrow => "arrow",
        }
    }

    fn header(&self, _schema: &Schema) -> Vec<u8> {
        Vec::new()
    }

    fn encoder(&self, schema: SchemaRef) -> Box<dyn BatchEncoder> {
        Box::new(IpcUnitEncoder {
            schema,
            writer: None,
        })
    }

    fn open_stream(&self, _out: Box<dyn ByteStream>) -> Option<Box<dyn ByteStream>> {
        None
    }

    fn finish_file(&self, temp: &Path, final_path: &Path, info: &FileInfo) -> io::Result<()> {
        let staging = final_path.with_file_name(format!(
            "{}.converting",
            final_path.file_name().unwrap_or_default().to_string_lossy()
        ));
        let split = matches!(self, ColumnarFormat::Parquet { split: true, .. });
        let remove = |path: &Path| {
            if split {
                fs::remove_dir_all(path)
            } else {
                fs::remove_file(path)
            }
        };
        if split {
            fs::create_dir(&staging)?;
        }
        if let Err(e) = self.convert(temp, &staging, info) {
            let _ = remove(&staging);
            return Err(e);
        }
        if split && final_path.is_dir() {
            // The output of an earlier run: replaced, as files are.
            fs::remove_dir_all(final_path)?;
        }
        fs::rename(&staging, final_path)?;
        fs::remove_file(temp)
    }
}

impl ColumnarFormat {
    fn convert(&self, temp: &Path, out: &Path, info: &FileInfo) -> io::Result<()> {
        let mut input = BufReader::new(File::open(temp)?);
        let mut writer: Option<Box<dyn FinalWriter>> = None;
        let mut chunker = Rechunker::default();
        while !input.fill_buf()?.is_empty() {
            let stream = StreamReader::try_new(&mut input, None).map_err(io::Error::other)?;
            if writer.is_none() {
                writer = Some(self.final_writer(out, stream.schema(), info)?);
            }
            let writer = writer.as_mut().unwrap();
            for batch in stream {
                for chunk in chunker.push(batch.map_err(io::Error::other)?)? {
                    writer.write(&chunk)?;
                }
            }
        }
        let mut writer = writer.ok_or_else(|| io::Error::other("no unit was written"))?;
        if let Some(rest) = chunker.rest()? {
            writer.write(&rest)?;
        }
        writer.finish()
    }

    fn final_writer(
        &self,
        out: &Path,
        schema: SchemaRef,
        info: &FileInfo,
    ) -> io::Result<Box<dyn FinalWriter>> {
        let mut metadata = vec![("fbunload.table".to_string(), info.table.clone())];
        if let Some(n) = info.snapshot_number {
            metadata.push(("fbunload.snapshot_number".to_string(), n.to_string()));
        }
        Ok(match self {
            ColumnarFormat::Parquet { compression, split } => {
                let props = WriterProperties::builder()
                    .set_compression(match compression {
                        ParquetCompression::Zstd => Compression::ZSTD(ZstdLevel::default()),
                        ParquetCompression::Snappy => Compression::SNAPPY,
                        ParquetCompression::Gzip => Compression::GZIP(GzipLevel::default()),
                        ParquetCompression::None => Compression::UNCOMPRESSED,
                    })
                    .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
                    .set_key_value_metadata(Some(
                        metadata
                            .into_iter()
                            .map(|(k, v)| KeyValue::new(k, v))
                            .collect(),
                    ))
                    .build();
                if *split {
                    Box::new(SplitParquet {
                        dir: out.to_path_buf(),
                        schema,
                        props,
                        current: None,
                        rows: 0,
                        parts: 0,
                    })
                } else {
                    let writer = ArrowWriter::try_new(File::create(out)?, schema, Some(props))
                        .map_err(io::Error::other)?;
                    Box::new(ParquetFinal(writer))
                }
            }
            ColumnarFormat::Arrow => {
                let file = File::create(out)?;
                // In the schema, where every Arrow reader looks.
                let schema = Arc::new(
                    schema.as_ref().clone().with_metadata(
                        metadata
                            .into_iter()
                            .collect::<std::collections::HashMap<_, _>>(),
                    ),
                );
                let writer =
                    FileWriter::try_new(BufWriter::new(file), &schema).map_err(io::Error::other)?;
                Box::new(ArrowFinal(writer, schema))
            }
        })
    }
}

/// Encodes one unit as an Arrow IPC stream.
struct IpcUnitEncoder {
    schema: SchemaRef,
    writer: Option<StreamWriter<Vec<u8>>>,
}

impl IpcUnitEncoder {
    fn writer(&mut self) -> Result<&mut StreamWriter<Vec<u8>>, SinkError> {
        if self.writer.is_none() {
            self.writer = Some(StreamWriter::try_new(Vec::new(), &self.schema)?);
        }
        Ok(self.writer.as_mut().unwrap())
    }
}

impl BatchEncoder for IpcUnitEncoder {
    fn encode(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), SinkError> {
        crate::check_decimal_precision(batch)?;
        let writer = self.writer()?;
        writer.write(batch)?;
        out.append(writer.get_mut());
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), SinkError> {
        // An empty unit still writes its schema, so every unit is a stream.
        let writer = self.writer()?;
        writer.finish()?;
        out.append(writer.get_mut());
        Ok(())
    }
}

trait FinalWriter {
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()>;
    fn finish(self: Box<Self>) -> io::Result<()>;
}

struct ParquetFinal(ArrowWriter<File>);

impl FinalWriter for ParquetFinal {
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        self.0.write(batch).map_err(io::Error::other)
    }

    fn finish(self: Box<Self>) -> io::Result<()> {
        let file = self.0.into_inner().map_err(io::Error::other)?;
        file.sync_all()
    }
}

/// Parquet part files of one row group each: `part-00000.parquet`, ...
/// Batches arrive in CHUNK_ROWS pieces, which divide ROW_GROUP_ROWS, so
/// parts roll over between batches.
struct SplitParquet {
    dir: std::path::PathBuf,
    schema: SchemaRef,
    props: WriterProperties,
    current: Option<ArrowWriter<File>>,
    rows: usize,
    parts: usize,
}

impl SplitParquet {
    fn open_part(&mut self) -> io::Result<()> {
        let path = self.dir.join(format!("part-{:05}.parquet", self.parts));
        let file = File::create(path)?;
        let writer = ArrowWriter::try_new(file, self.schema.clone(), Some(self.props.clone()))
            .map_err(io::Error::other)?;
        self.current = Some(writer);
        self.parts += 1;
        self.rows = 0;
        Ok(())
    }
}

impl FinalWriter for SplitParquet {
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        if self.current.is_none() || self.rows >= ROW_GROUP_ROWS {
            if let Some(done) = self.current.take() {
                done.into_inner().map_err(io::Error::other)?.sync_all()?;
            }
            self.open_part()?;
        }
        self.rows += batch.num_rows();
        self.current
            .as_mut()
            .unwrap()
            .write(batch)
            .map_err(io::Error::other)
    }

    fn finish(mut self: Box<Self>) -> io::Result<()> {
        if self.current.is_none() {
            // An empty table is one part with its schema and no rows.
            self.open_part()?;
        }
        let file = self
            .current
            .take()
            .unwrap()
            .into_inner()
            .map_err(io::Error::other)?;
        file.sync_all()
    }
}

struct ArrowFinal(FileWriter<BufWriter<File>>, SchemaRef);

impl FinalWriter for ArrowFinal {
    fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        let batch = batch
            .clone()
            .with_schema(self.1.clone())
            .map_err(io::Error::other)?;
        self.0.write(&batch).map_err(io::Error::other)
    }

    fn finish(mut self: Box<Self>) -> io::Result<()> {
        self.0.finish().map_err(io::Error::other)?;
        let file = self.0.into_inner().map_err(io::Error::other)?;
        file.into_inner().map_err(|e| e.into_error())?.sync_all()
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

    #[test]
    fn units_as_streams_become_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("T.arrow.partial");
        let mut bytes = Vec::new();
        for (from, rows) in [(0, 10), (10, 0), (10, 5)] {
            let b = batch(from, rows);
            let mut encoder = ColumnarFormat::Arrow.encoder(b.schema());
            if rows > 0 {
                encoder.encode(&b, &mut bytes).unwrap();
            }
            encoder.finish(&mut bytes).unwrap();
        }
        fs::write(&temp, bytes).unwrap();
        let out = dir.path().join("T.arrow");
        ColumnarFormat::Arrow
            .finish_file(
                &temp,
                &out,
                &FileInfo {
                    table: "T".into(),
                    snapshot_number: Some(7),
                },
            )
            .unwrap();
        assert!(!temp.exists());
        let reader =
            arrow_ipc::reader::FileReader::try_new(File::open(&out).unwrap(), None).unwrap();
        assert_eq!(
            reader
                .schema()
                .metadata()
                .get("fbunload.snapshot_number")
                .map(String::as_str),
            Some("7")
        );
        let values: Vec<i32> = reader
            .flat_map(|b| {
                let b = b.unwrap();
                let a = b
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int32Array>()
                    .unwrap()
                    .clone();
                a.values().to_vec()
            })
            .collect();
        assert_eq!(values, (0..15).collect::<Vec<_>>());
    }
}
