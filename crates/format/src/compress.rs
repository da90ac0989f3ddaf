//! gzip or zstd around a byte format's stream (`--compress`).
//!
//! A table is compressed as one stream, fed the table's bytes in unit
//! order: compressing unit by unit would make the bytes depend on where
//! units begin, and so on `--parallel`. zstd compresses on threads of its
//! own (its multithreaded mode, whose output does not depend on the number
//! of threads), so a compressed table keeps up with the workers; gzip has
//! no such mode and compresses on the thread that writes the table.

use std::io::{self, Write};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
}

impl Compression {
    /// What is added to a file's extension: `gz`, `zst`.
    pub fn extension(self) -> &'static str {
        match self {
            Compression::Gzip => "gz",
            Compression::Zstd => "zst",
        }
    }

    /// As `--compress` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// zstd's own default: fast, and much smaller than gzip's default.
const ZSTD_LEVEL: i32 = 3;

/// Threads zstd compresses on. Any number from 1 up gives the same bytes;
/// 0 would be its single-threaded mode, whose bytes differ.
fn zstd_threads() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8) as u32)
}

/// `W`, behind a compressor.
pub enum Compressor<W: Write> {
    Gzip(flate2::write::GzEncoder<W>),
    Zstd(zstd::Encoder<'static, W>),
}

impl<W: Write> Compressor<W> {
    pub fn new(compression: Compression, out: W) -> io::Result<Self> {
        Ok(match compression {
            Compression::Gzip => Compressor::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::default(),
            )),
            Compression::Zstd => {
                let mut encoder = zstd::Encoder::new(out, ZSTD_LEVEL)?;
                encoder.multithread(zstd_threads())?;
                Compressor::Zstd(encoder)
            }
        })
    }

    /// Writes what is held back (the last frame) and returns `W`.
    pub fn finish(self) -> io::Result<W> {
        match self {
            Compressor::Gzip(encoder) => encoder.finish(),
            Compressor::Zstd(encoder) => encoder.finish(),
        }
    }
}

impl<W: Write> Write for Compressor<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Compressor::Gzip(encoder) => encoder.write(buf),
            Compressor::Zstd(encoder) => encoder.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Compressor::Gzip(encoder) => encoder.flush(),
            Compressor::Zstd(encoder) => encoder.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn decompress(compression: Compression, bytes: &[u8]) -> String {
        let mut back = String::new();
        match compression {
            Compression::Gzip => flate2::read::GzDecoder::new(bytes)
                .read_to_string(&mut back)
                .unwrap(),
            Compression::Zstd => zstd::Decoder::new(bytes)
                .unwrap()
                .read_to_string(&mut back)
                .unwrap(),
        };
        back
    }

    #[test]
    fn a_stream_fed_in_pieces_is_one_complete_stream() {
        let text = "a,b\n1,2\n".repeat(100_000);
        for compression in [Compression::Gzip, Compression::Zstd] {
            let mut compressor = Compressor::new(compression, Vec::new()).unwrap();
            // In pieces, as units arrive.
            for piece in text.as_bytes().chunks(7_777) {
                compressor.write_all(piece).unwrap();
            }
            let bytes = compressor.finish().unwrap();
            assert!(bytes.len() < text.len() / 10);
            assert_eq!(decompress(compression, &bytes), text, "{compression:?}");
        }
    }

    #[test]
    fn zstd_bytes_do_not_depend_on_how_they_were_fed() {
        let text = "row,value,1234567890\n".repeat(300_000);
        let compress = |piece: usize| {
            let mut compressor = Compressor::new(Compression::Zstd, Vec::new()).unwrap();
            for chunk in text.as_bytes().chunks(piece) {
                compressor.write_all(chunk).unwrap();
            }
            compressor.finish().unwrap()
        };
        assert_eq!(compress(1_000), compress(1 << 20));
        // Nor on zstd's threads, from one up: what makes `zstd_threads`
        // free to follow the machine.
        let with_threads = |threads| {
            let mut encoder = zstd::Encoder::new(Vec::new(), ZSTD_LEVEL).unwrap();
            encoder.multithread(threads).unwrap();
            encoder.write_all(text.as_bytes()).unwrap();
            encoder.finish().unwrap()
        };
        assert_eq!(with_threads(1), with_threads(4));
        assert_eq!(with_threads(1), compress(1 << 20));
    }
}
