//! gzip or zstd around a byte format (`--compress`).
//!
//! The table's file is assembled uncompressed, then compressed in one
//! stream when it is complete: compressing unit by unit would make the
//! bytes depend on where units begin, and so on `--parallel`. The price is
//! one more pass over the file; tables are compressed in parallel, each on
//! the thread that finished it. A table streamed to standard output is
//! compressed as it is assembled, in unit order: the same bytes.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_schema::{Schema, SchemaRef};

use crate::{BatchEncoder, ByteStream, FileInfo, StreamFormat};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
}

/// `inner`, compressed.
pub struct Compressed {
    inner: Arc<dyn StreamFormat>,
    compression: Compression,
    extension: String,
}

impl Compressed {
    pub fn new(inner: Arc<dyn StreamFormat>, compression: Compression) -> Self {
        let suffix = match compression {
            Compression::Gzip => "gz",
            Compression::Zstd => "zst",
        };
        let extension = format!("{}.{suffix}", inner.extension());
        Compressed {
            inner,
            compression,
            extension,
        }
    }
}

impl StreamFormat for Compressed {
    fn extension(&self) -> &str {
        &self.extension
    }

    fn header(&self, schema: &Schema) -> Vec<u8> {
        self.inner.header(schema)
    }

    fn encoder(&self, schema: SchemaRef) -> Box<dyn BatchEncoder> {
        self.inner.encoder(schema)
    }

    fn open_stream(&self, out: Box<dyn ByteStream>) -> Option<Box<dyn ByteStream>> {
        let compressor = match self.compression {
            Compression::Gzip => CompressingStream::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::default(),
            )),
            Compression::Zstd => CompressingStream::Zstd(zstd::Encoder::new(out, ZSTD_LEVEL).ok()?),
        };
        self.inner.open_stream(Box::new(compressor))
    }

    fn finish_file(&self, temp: &Path, final_path: &Path, _info: &FileInfo) -> io::Result<()> {
        let staging = final_path.with_file_name(format!(
            "{}.compressing",
            final_path.file_name().unwrap_or_default().to_string_lossy()
        ));
        let result = compress(temp, &staging, self.compression);
        if let Err(e) = result {
            let _ = fs::remove_file(&staging);
            return Err(e);
        }
        fs::rename(&staging, final_path)?;
        fs::remove_file(temp)
    }
}

fn compress(from: &Path, to: &Path, compression: Compression) -> io::Result<()> {
    let mut input = BufReader::new(File::open(from)?);
    let output = BufWriter::new(File::create(to)?);
    let file = match compression {
        Compression::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::default());
            io::copy(&mut input, &mut encoder)?;
            encoder.finish()?
        }
        Compression::Zstd => {
            let mut encoder = zstd::Encoder::new(output, ZSTD_LEVEL)?;
            io::copy(&mut input, &mut encoder)?;
            encoder.finish()?
        }
    };
    let mut file = file.into_inner().map_err(|e| e.into_error())?;
    file.flush()?;
    file.sync_all()
}

/// zstd's own default: fast, and much smaller than gzip's default.
const ZSTD_LEVEL: i32 = 3;

/// A compressor in front of the stream it writes to.
enum CompressingStream {
    Gzip(flate2::write::GzEncoder<Box<dyn ByteStream>>),
    Zstd(zstd::Encoder<'static, Box<dyn ByteStream>>),
}

impl Write for CompressingStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            CompressingStream::Gzip(encoder) => encoder.write(buf),
            CompressingStream::Zstd(encoder) => encoder.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            CompressingStream::Gzip(encoder) => encoder.flush(),
            CompressingStream::Zstd(encoder) => encoder.flush(),
        }
    }
}

impl ByteStream for CompressingStream {
    fn finish(self: Box<Self>) -> io::Result<()> {
        let out = match *self {
            CompressingStream::Gzip(encoder) => encoder.finish()?,
            CompressingStream::Zstd(encoder) => encoder.finish()?,
        };
        out.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csv::{CsvFormat, CsvOptions};
    use std::io::Read;

    #[test]
    fn files_are_compressed_whole_and_named_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let text = "a,b\n1,2\n".repeat(1000);
        for (compression, extension) in [
            (Compression::Gzip, "csv.gz"),
            (Compression::Zstd, "csv.zst"),
        ] {
            let format =
                Compressed::new(Arc::new(CsvFormat::new(CsvOptions::default())), compression);
            assert_eq!(format.extension(), extension);
            let temp = dir.path().join("T.partial");
            fs::write(&temp, &text).unwrap();
            let out = dir.path().join(format!("T.{extension}"));
            format
                .finish_file(&temp, &out, &FileInfo::default())
                .unwrap();
            assert!(!temp.exists());
            let mut back = String::new();
            match compression {
                Compression::Gzip => flate2::read::GzDecoder::new(File::open(&out).unwrap())
                    .read_to_string(&mut back)
                    .unwrap(),
                Compression::Zstd => zstd::Decoder::new(File::open(&out).unwrap())
                    .unwrap()
                    .read_to_string(&mut back)
                    .unwrap(),
            };
            assert_eq!(back, text);
        }
    }

    /// Collects what a stream writes, for reading after `finish`.
    #[derive(Clone, Default)]
    struct Collected(Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Collected {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn streams_are_compressed_into_one_complete_stream() {
        let text = "a,b\n1,2\n".repeat(1000);
        for compression in [Compression::Gzip, Compression::Zstd] {
            let format =
                Compressed::new(Arc::new(CsvFormat::new(CsvOptions::default())), compression);
            let collected = Collected::default();
            let mut stream = format
                .open_stream(Box::new(crate::Plain(collected.clone())))
                .unwrap();
            // In pieces, as units arrive.
            for piece in text.as_bytes().chunks(777) {
                stream.write_all(piece).unwrap();
            }
            stream.finish().unwrap();
            let bytes = collected.0.lock().unwrap().clone();
            let mut back = String::new();
            match compression {
                Compression::Gzip => flate2::read::GzDecoder::new(&bytes[..])
                    .read_to_string(&mut back)
                    .unwrap(),
                Compression::Zstd => zstd::Decoder::new(&bytes[..])
                    .unwrap()
                    .read_to_string(&mut back)
                    .unwrap(),
            };
            assert_eq!(back, text, "{compression:?}");
        }
    }
}
