//! A table's output cut into parts (`--max-rows`, `--max-bytes`).
//!
//! Every part is a complete file that reads alone: a text part begins
//! with the format's header and, compressed, is a whole gzip or zstd
//! stream of its own; a Parquet or Arrow part has its schema and footer.
//!
//! A part must be the same for any `--parallel` and unit size, so where it
//! ends depends only on the table's rows in DB_KEY order, never on units:
//!
//! - `rows`: a part ends after exactly that many rows (Parquet and Arrow
//!   groups are cut at part boundaries too, see [`crate::GroupCutter`]);
//! - `bytes`: a part ends at the first row end (Parquet, Arrow: group end)
//!   where it holds at least that many bytes, so it passes the limit by
//!   less than one row (group, plus the footer). Text counts its bytes
//!   before compression, header included: a compressor emits output at
//!   moments that depend on how it was fed and on its threads, so the
//!   compressed size at a given row is not the same from run to run, while
//!   the encoded bytes are. Parquet and Arrow count the file's own bytes.
//!
//! Text rows are found in the encoded stream itself, by the format's
//! [`RecordScanner`], after the units are back in order: the workers keep
//! encoding units in parallel, unaware of parts.

use std::io::{self, Write};

use crate::compress::{Compression, Compressor};
use crate::NextPart;

/// Where a table's parts end; both `None` is one file per table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartLimits {
    /// Rows per part (the last one fewer).
    pub rows: Option<u64>,
    /// Bytes after which a part ends at the next row (group) end.
    pub bytes: Option<u64>,
}

impl PartLimits {
    /// Whether the table is written as parts at all.
    pub fn splits(&self) -> bool {
        self.rows.is_some() || self.bytes.is_some()
    }

    /// Whether a part of `rows` rows and `bytes` bytes, at a row end, is full.
    pub fn reached(&self, rows: u64, bytes: u64) -> bool {
        self.rows.is_some_and(|max| rows >= max) || self.bytes.is_some_and(|max| bytes >= max)
    }
}

/// Finds where records end in a text format's encoded bytes, fed in
/// pieces cut anywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordScanner {
    /// A record per line, no line break inside one (JSON Lines escapes
    /// them).
    Lines,
    /// CSV as fbunload writes it: a field holding a quote, CR or LF is
    /// quoted and its quotes doubled, so a LF outside quotes ends a record
    /// (CRLF included), and counting quotes tells inside from outside.
    Csv { in_quotes: bool },
}

impl RecordScanner {
    pub fn csv() -> Self {
        RecordScanner::Csv { in_quotes: false }
    }

    /// The position just after the first record end in `bytes`, having
    /// read up to it; `None` when no record ends there, having read all.
    pub fn next_end(&mut self, bytes: &[u8]) -> Option<usize> {
        match self {
            RecordScanner::Lines => memchr::memchr(b'\n', bytes).map(|i| i + 1),
            RecordScanner::Csv { in_quotes } => {
                let mut from = 0;
                while let Some(i) = memchr::memchr2(b'"', b'\n', &bytes[from..]) {
                    let at = from + i;
                    if bytes[at] == b'"' {
                        *in_quotes = !*in_quotes;
                    } else if !*in_quotes {
                        return Some(at + 1);
                    }
                    from = at + 1;
                }
                None
            }
        }
    }
}

/// A part being written: plain or compressed, over what the destination
/// gave for it.
enum PartOut {
    Plain(Box<dyn Write + Send>),
    Compressed(Compressor<Box<dyn Write + Send>>),
}

impl PartOut {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            PartOut::Plain(w) => w,
            PartOut::Compressed(c) => c,
        }
    }

    fn finish(self) -> io::Result<()> {
        match self {
            PartOut::Plain(mut w) => w.flush(),
            PartOut::Compressed(c) => c.finish()?.flush(),
        }
    }
}

/// A text table's byte stream (without its header), in table order, cut
/// into parts at record ends: each part opens with `header` and, with
/// `compression`, is compressed as a stream of its own.
pub struct TextParts {
    limits: PartLimits,
    header: Vec<u8>,
    scanner: RecordScanner,
    compression: Option<Compression>,
    next_part: NextPart,
    current: Option<PartOut>,
    /// Records in the current part.
    rows: u64,
    /// Bytes in the current part before compression, header included.
    bytes: u64,
    parts: usize,
}

impl TextParts {
    pub fn new(
        limits: PartLimits,
        header: Vec<u8>,
        scanner: RecordScanner,
        compression: Option<Compression>,
        next_part: NextPart,
    ) -> Self {
        TextParts {
            limits,
            header,
            scanner,
            compression,
            next_part,
            current: None,
            rows: 0,
            bytes: 0,
            parts: 0,
        }
    }

    fn open_part(&mut self) -> io::Result<&mut PartOut> {
        let out = (self.next_part)()?;
        let mut part = match self.compression {
            None => PartOut::Plain(out),
            Some(c) => PartOut::Compressed(Compressor::new(c, out)?),
        };
        part.writer().write_all(&self.header)?;
        self.parts += 1;
        self.rows = 0;
        self.bytes = self.header.len() as u64;
        Ok(self.current.insert(part))
    }

    fn close_part(&mut self) -> io::Result<()> {
        match self.current.take() {
            Some(part) => part.finish(),
            None => Ok(()),
        }
    }

    /// Closes the last part and returns how many there are: at least one,
    /// so an empty table is a part with its header.
    pub fn finish(mut self) -> io::Result<usize> {
        if self.parts == 0 {
            self.open_part()?;
        }
        self.close_part()?;
        Ok(self.parts)
    }
}

impl Write for TextParts {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            if self.current.is_none() {
                self.open_part()?;
            }
            // Records are counted up to the one that fills the part, and
            // written in one piece.
            let mut scanned = 0;
            let mut full = false;
            while let Some(end) = self.scanner.next_end(&buf[scanned..]) {
                scanned += end;
                self.rows += 1;
                if self.limits.reached(self.rows, self.bytes + scanned as u64) {
                    full = true;
                    break;
                }
            }
            let piece = if full { scanned } else { buf.len() };
            let part = self.current.as_mut().expect("opened above");
            part.writer().write_all(&buf[..piece])?;
            self.bytes += piece as u64;
            if full {
                self.close_part()?;
            }
            buf = &buf[piece..];
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.current {
            Some(part) => part.writer().flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::sync::{Arc, Mutex};

    type Buffer = Arc<Mutex<Vec<u8>>>;

    /// Parts written into memory, in order.
    #[derive(Clone, Default)]
    struct Parts(Arc<Mutex<Vec<Buffer>>>);

    struct Part(Buffer);

    impl Write for Part {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Parts {
        fn next_part(&self) -> NextPart {
            let parts = self.0.clone();
            Box::new(move || {
                let part = Arc::new(Mutex::new(Vec::new()));
                parts.lock().unwrap().push(part.clone());
                Ok(Box::new(Part(part)) as Box<dyn Write + Send>)
            })
        }

        fn bytes(&self) -> Vec<Vec<u8>> {
            let parts = self.0.lock().unwrap();
            parts.iter().map(|p| p.lock().unwrap().clone()).collect()
        }
    }

    /// Writes `body` in pieces of `piece` bytes; the parts as text.
    fn split(
        limits: PartLimits,
        scanner: RecordScanner,
        compression: Option<Compression>,
        body: &str,
        piece: usize,
    ) -> Vec<Vec<u8>> {
        let parts = Parts::default();
        let mut writer = TextParts::new(
            limits,
            b"h\n".to_vec(),
            scanner,
            compression,
            parts.next_part(),
        );
        for chunk in body.as_bytes().chunks(piece.max(1)) {
            writer.write_all(chunk).unwrap();
        }
        let count = writer.finish().unwrap();
        let bytes = parts.bytes();
        assert_eq!(count, bytes.len());
        bytes
    }

    fn text(parts: &[Vec<u8>]) -> Vec<String> {
        parts
            .iter()
            .map(|p| String::from_utf8(p.clone()).unwrap())
            .collect()
    }

    fn rows(n: usize) -> PartLimits {
        PartLimits {
            rows: Some(n as u64),
            bytes: None,
        }
    }

    #[test]
    fn csv_records_end_at_line_breaks_outside_quotes() {
        let mut scanner = RecordScanner::csv();
        let body = b"1,\"a\nb\"\r\n2,\"say \"\"hi\"\"\n\"\n3,x\n";
        let mut ends = Vec::new();
        let mut from = 0;
        while let Some(end) = scanner.next_end(&body[from..]) {
            from += end;
            ends.push(from);
        }
        assert_eq!(ends, [9, 25, 29]);
        // Cut in the middle of a quoted field, the state carries over.
        let mut scanner = RecordScanner::csv();
        assert_eq!(scanner.next_end(b"1,\"a"), None);
        assert_eq!(scanner.next_end(b"\n\"\n2"), Some(3));
        let mut lines = RecordScanner::Lines;
        assert_eq!(lines.next_end(b"{\"a\":\"\\n\"}\n{}"), Some(11));
    }

    #[test]
    fn parts_of_rows_each_begin_with_the_header_whatever_the_pieces() {
        let body = "1,\"a\nb\"\n2,x\n3,y\n4,z\n5,w\n";
        let expected = ["h\n1,\"a\nb\"\n2,x\n", "h\n3,y\n4,z\n", "h\n5,w\n"];
        for piece in [1, 2, 3, 7, 100] {
            let parts = split(rows(2), RecordScanner::csv(), None, body, piece);
            assert_eq!(text(&parts), expected, "pieces of {piece}");
        }
        // Exactly full: no empty part after the last.
        let parts = split(rows(5), RecordScanner::csv(), None, body, 4);
        assert_eq!(text(&parts), [format!("h\n{body}")]);
    }

    #[test]
    fn an_empty_table_is_one_part_with_its_header() {
        let parts = split(rows(2), RecordScanner::Lines, None, "", 1);
        assert_eq!(text(&parts), ["h\n"]);
    }

    #[test]
    fn parts_of_bytes_end_at_the_first_record_end_past_the_limit() {
        let body: String = (0..1000)
            .map(|i| format!("{i},{}\n", "x".repeat(i % 37)))
            .collect();
        let limit = 500;
        let parts = split(
            PartLimits {
                rows: None,
                bytes: Some(limit),
            },
            RecordScanner::csv(),
            None,
            &body,
            333,
        );
        assert!(parts.len() > 10, "{}", parts.len());
        let mut joined = String::new();
        for (i, part) in text(&parts).iter().enumerate() {
            let data = part.strip_prefix("h\n").unwrap();
            joined += data;
            let last_record = data.trim_end_matches('\n').rsplit('\n').next().unwrap();
            let len = part.len() as u64;
            if i + 1 < parts.len() {
                assert!(len >= limit, "part {i} ends early: {len}");
            }
            assert!(
                len - (last_record.len() as u64 + 1) < limit,
                "part {i} ends late: {len}"
            );
        }
        assert_eq!(joined, body);
    }

    #[test]
    fn both_limits_cut_at_whichever_comes_first() {
        let body = "aaaaaaaaaa\nb\nc\nd\ne\n";
        let limits = PartLimits {
            rows: Some(3),
            bytes: Some(10),
        };
        let parts = split(limits, RecordScanner::Lines, None, body, 5);
        assert_eq!(text(&parts), ["h\naaaaaaaaaa\n", "h\nb\nc\nd\n", "h\ne\n"]);
    }

    #[test]
    fn compressed_parts_are_whole_streams() {
        let body: String = (0..30_000).map(|i| format!("{{\"i\":{i}}}\n")).collect();
        for compression in [Compression::Gzip, Compression::Zstd] {
            let parts = split(
                rows(10_000),
                RecordScanner::Lines,
                Some(compression),
                &body,
                4096,
            );
            assert_eq!(parts.len(), 3);
            let mut joined = String::new();
            for part in parts {
                let mut back = String::new();
                match compression {
                    Compression::Gzip => flate2::read::GzDecoder::new(&part[..])
                        .read_to_string(&mut back)
                        .unwrap(),
                    Compression::Zstd => zstd::Decoder::new(&part[..])
                        .unwrap()
                        .read_to_string(&mut back)
                        .unwrap(),
                };
                joined += back.strip_prefix("h\n").unwrap();
            }
            assert_eq!(joined, body, "{compression:?}");
        }
    }
}
