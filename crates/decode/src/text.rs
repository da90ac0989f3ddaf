//! Text in Firebird's character sets, turned into UTF-8.
//!
//! Arrow strings are UTF-8. fbunload attaches with the connection
//! character set NONE, so the server converts nothing: every CHAR, VARCHAR
//! and text BLOB arrives as the bytes stored, in the character set the
//! column is declared with, and is decoded here, column by column. That
//! keeps text exact whatever the mix of character sets in a database
//! (a UTF8 connection would have the server convert everything and cap a
//! single-byte VARCHAR(32765) at 8,191 characters; a WIN1252 one would fail
//! on any character outside WIN1252), and it costs no more: UTF8 columns
//! are only validated. Columns declared CHARACTER SET NONE hold bytes of
//! unknown encoding: they are decoded as the user says (`--charset`,
//! UTF-8 by default, strictly).
//!
//! [`CHARACTER_SETS`] is Firebird's table (`RDB$CHARACTER_SETS`) with the
//! WHATWG encoding, as `encoding_rs` implements it, that decodes each. A
//! character set without one (the DOS code pages, CYRL, NEXT, CP943C) is
//! converted by the server instead: the planner casts such columns to UTF8.

use encoding_rs::Encoding;

/// Firebird's character set ids, names, and the `encoding_rs` label that
/// decodes each, if any. NONE and OCTETS are not text encodings: NONE is
/// decoded as the user says, OCTETS is binary.
pub const CHARACTER_SETS: &[(u8, &str, Option<&str>)] = &[
    (0, "NONE", None),
    (1, "OCTETS", None),
    (2, "ASCII", Some("utf-8")),
    (3, "UNICODE_FSS", Some("utf-8")),
    (4, "UTF8", Some("utf-8")),
    (5, "SJIS_0208", Some("shift_jis")),
    (6, "EUCJ_0208", Some("euc-jp")),
    (9, "DOS737", None),
    (10, "DOS437", None),
    (11, "DOS850", None),
    (12, "DOS865", None),
    (13, "DOS860", None),
    (14, "DOS863", None),
    (15, "DOS775", None),
    (16, "DOS858", None),
    (17, "DOS862", None),
    (18, "DOS864", None),
    (19, "NEXT", None),
    // WHATWG reads the label iso-8859-1 as windows-1252; Latin-1 proper
    // maps every byte to the code point of the same value (see `Kind`).
    (21, "ISO8859_1", Some(LATIN1)),
    (22, "ISO8859_2", Some("iso-8859-2")),
    (23, "ISO8859_3", Some("iso-8859-3")),
    (34, "ISO8859_4", Some("iso-8859-4")),
    (35, "ISO8859_5", Some("iso-8859-5")),
    (36, "ISO8859_6", Some("iso-8859-6")),
    (37, "ISO8859_7", Some("iso-8859-7")),
    (38, "ISO8859_8", Some("iso-8859-8")),
    (39, "ISO8859_9", Some("windows-1254")),
    (40, "ISO8859_13", Some("iso-8859-13")),
    (44, "KSC_5601", Some("euc-kr")),
    (45, "DOS852", None),
    (46, "DOS857", None),
    (47, "DOS861", None),
    (48, "DOS866", Some("ibm866")),
    (49, "DOS869", None),
    (50, "CYRL", None),
    (51, "WIN1250", Some("windows-1250")),
    (52, "WIN1251", Some("windows-1251")),
    (53, "WIN1252", Some("windows-1252")),
    (54, "WIN1253", Some("windows-1253")),
    (55, "WIN1254", Some("windows-1254")),
    (56, "BIG_5", Some("big5")),
    (57, "GB_2312", Some("gbk")),
    (58, "WIN1255", Some("windows-1255")),
    (59, "WIN1256", Some("windows-1256")),
    (60, "WIN1257", Some("windows-1257")),
    (63, "KOI8R", Some("koi8-r")),
    (64, "KOI8U", Some("koi8-u")),
    (65, "WIN1258", Some("windows-1258")),
    (66, "TIS620", Some("windows-874")),
    (67, "GBK", Some("gbk")),
    (68, "CP943C", None),
    (69, "GB18030", Some("gb18030")),
];

/// The character set id of CHARACTER SET NONE.
pub const CHARSET_NONE: u8 = 0;
/// The character set id of CHARACTER SET OCTETS (binary).
pub const CHARSET_OCTETS: u8 = 1;
pub const CHARSET_UTF8: u8 = 4;
const CHARSET_ASCII: u8 = 2;

/// Our own label for exact ISO 8859-1, which WHATWG has not.
const LATIN1: &str = "latin1-exact";

/// A character set's name, by id.
pub fn charset_name(id: u8) -> Option<&'static str> {
    CHARACTER_SETS
        .iter()
        .find(|(i, _, _)| *i == id)
        .map(|(_, name, _)| *name)
}

/// Decodes bytes of one character set to UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextDecoder {
    kind: Kind,
    /// The Firebird character set it decodes.
    charset: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Valid UTF-8 already; checked, not copied.
    Utf8,
    /// ISO 8859-1: byte value = code point.
    Latin1,
    Legacy(&'static Encoding),
}

impl TextDecoder {
    pub const UTF8: TextDecoder = TextDecoder {
        kind: Kind::Utf8,
        charset: CHARSET_UTF8,
    };

    /// The decoder for a Firebird character set name (`--charset`), or
    /// `None` if we cannot decode it. `NONE` means "as they are": UTF-8,
    /// checked.
    pub fn for_charset(name: &str) -> Option<TextDecoder> {
        let upper = name.to_ascii_uppercase();
        if upper == "NONE" {
            return Some(TextDecoder::UTF8);
        }
        let id = CHARACTER_SETS
            .iter()
            .find(|(_, n, _)| *n == upper)
            .map(|(id, _, _)| *id)?;
        Self::for_charset_id(id)
    }

    /// The decoder for a column's character set id; `None` for NONE and
    /// OCTETS (not encodings) and for those we cannot decode.
    pub fn for_charset_id(id: u8) -> Option<TextDecoder> {
        let label = CHARACTER_SETS.iter().find(|(i, _, _)| *i == id)?.2?;
        let kind = match label {
            "utf-8" => Kind::Utf8,
            LATIN1 => Kind::Latin1,
            label => Kind::Legacy(Encoding::for_label(label.as_bytes())?),
        };
        Some(TextDecoder { kind, charset: id })
    }

    /// The Firebird name of the character set it decodes (`NONE`'s
    /// decoder is UTF8's).
    pub fn charset_name(&self) -> &'static str {
        charset_name(self.charset).unwrap_or("UTF8")
    }

    /// `text` in this character set, or `None` if it holds a character the
    /// set has not; the reverse of [`Self::decode_into`].
    pub fn encode(&self, text: &str) -> Option<Vec<u8>> {
        match self.kind {
            Kind::Utf8 if self.charset == CHARSET_ASCII && !text.is_ascii() => None,
            Kind::Utf8 => Some(text.as_bytes().to_vec()),
            Kind::Latin1 => text.chars().map(|c| u8::try_from(c).ok()).collect(),
            Kind::Legacy(encoding) => {
                let (bytes, _, unmappable) = encoding.encode(text);
                (!unmappable).then(|| bytes.into_owned())
            }
        }
    }

    /// Whether text of this character set id reaches fbunload as it is
    /// stored (NONE, OCTETS, or one we decode): otherwise the server must
    /// convert it.
    pub fn client_reads(id: u8) -> bool {
        id == CHARSET_NONE || id == CHARSET_OCTETS || Self::for_charset_id(id).is_some()
    }

    /// Appends the UTF-8 form of `bytes` to `out`; `Err` with the byte
    /// offset when UTF-8 input is invalid.
    pub fn decode_into(&self, bytes: &[u8], out: &mut String) -> Result<(), usize> {
        match self.kind {
            Kind::Utf8 => {
                out.push_str(std::str::from_utf8(bytes).map_err(|e| e.valid_up_to())?);
            }
            Kind::Latin1 => out.extend(bytes.iter().map(|&b| b as char)),
            Kind::Legacy(encoding) => {
                let (text, _had_errors) = encoding.decode_without_bom_handling(bytes);
                out.push_str(&text);
            }
        }
        Ok(())
    }

    pub fn is_utf8(&self) -> bool {
        self.kind == Kind::Utf8
    }

    /// A decoder for text that arrives in pieces (a blob, segment by
    /// segment), which writes each piece's UTF-8 as it comes instead of
    /// holding the whole text: the output is what [`Self::decode_into`]
    /// gives for the pieces joined.
    pub fn stream(&self) -> TextStream {
        TextStream {
            kind: match self.kind {
                Kind::Utf8 => StreamKind::Utf8,
                Kind::Latin1 => StreamKind::Latin1,
                Kind::Legacy(encoding) => {
                    StreamKind::Legacy(encoding.new_decoder_without_bom_handling(), String::new())
                }
            },
            seen: 0,
            partial: [0; 4],
            partial_len: 0,
        }
    }
}

/// See [`TextDecoder::stream`].
pub struct TextStream {
    kind: StreamKind,
    /// Bytes pushed so far, for error offsets.
    seen: usize,
    /// UTF-8: the start of a character whose rest is in the next piece.
    partial: [u8; 4],
    partial_len: usize,
}

enum StreamKind {
    Utf8,
    Latin1,
    /// `encoding_rs` carries split characters itself; the string is its
    /// output for one piece.
    Legacy(encoding_rs::Decoder, String),
}

impl TextStream {
    /// Decodes the next piece, handing its UTF-8 to `out` (in one or more
    /// calls); `Err` with the offset, counted from the start of the whole
    /// text, of bytes that are not UTF-8.
    pub fn push(&mut self, bytes: &[u8], out: &mut impl FnMut(&str)) -> Result<(), usize> {
        let start = self.seen;
        self.seen += bytes.len();
        match &mut self.kind {
            StreamKind::Utf8 => self.push_utf8(start, bytes, out),
            StreamKind::Latin1 => {
                // ASCII runs as they are, the other bytes one character each.
                for run in bytes.split_inclusive(|b| !b.is_ascii()) {
                    let (last, ascii) = run.split_last().expect("split pieces are not empty");
                    if last.is_ascii() {
                        out(std::str::from_utf8(run).expect("ASCII is UTF-8"));
                    } else {
                        out(std::str::from_utf8(ascii).expect("ASCII is UTF-8"));
                        out((*last as char).encode_utf8(&mut [0; 4]));
                    }
                }
                Ok(())
            }
            StreamKind::Legacy(decoder, piece) => {
                decode_legacy(decoder, piece, bytes, false, out);
                Ok(())
            }
        }
    }

    /// Ends the text: `Err` with its offset if it stops inside a UTF-8
    /// character.
    pub fn finish(mut self, out: &mut impl FnMut(&str)) -> Result<(), usize> {
        match &mut self.kind {
            StreamKind::Utf8 if self.partial_len > 0 => Err(self.seen - self.partial_len),
            StreamKind::Legacy(decoder, piece) => {
                decode_legacy(decoder, piece, &[], true, out);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn push_utf8(
        &mut self,
        mut start: usize,
        mut bytes: &[u8],
        out: &mut impl FnMut(&str),
    ) -> Result<(), usize> {
        if self.partial_len > 0 {
            let char_start = start - self.partial_len;
            let width = match self.partial[0] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = (width - self.partial_len).min(bytes.len());
            self.partial[self.partial_len..self.partial_len + take].copy_from_slice(&bytes[..take]);
            self.partial_len += take;
            bytes = &bytes[take..];
            start += take;
            match std::str::from_utf8(&self.partial[..self.partial_len]) {
                Ok(c) => {
                    out(c);
                    self.partial_len = 0;
                }
                // Still short of its end: this piece was all of it.
                Err(e) if e.error_len().is_none() => return Ok(()),
                Err(_) => return Err(char_start),
            }
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => out(text),
            Err(e) => {
                let valid = e.valid_up_to();
                out(std::str::from_utf8(&bytes[..valid]).expect("checked just now"));
                if e.error_len().is_some() {
                    return Err(start + valid);
                }
                // A character cut by the end of the piece.
                self.partial_len = bytes.len() - valid;
                self.partial[..self.partial_len].copy_from_slice(&bytes[valid..]);
            }
        }
        Ok(())
    }
}

fn decode_legacy(
    decoder: &mut encoding_rs::Decoder,
    piece: &mut String,
    mut bytes: &[u8],
    last: bool,
    out: &mut impl FnMut(&str),
) {
    loop {
        piece.clear();
        if let Some(room) = decoder.max_utf8_buffer_length(bytes.len()) {
            piece.reserve(room);
        }
        let (result, read, _replaced) = decoder.decode_to_string(bytes, piece, last);
        out(piece);
        bytes = &bytes[read..];
        if result == encoding_rs::CoderResult::InputEmpty {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(dec: TextDecoder, bytes: &[u8]) -> String {
        let mut out = String::new();
        dec.decode_into(bytes, &mut out).unwrap();
        out
    }

    #[test]
    fn windows_code_pages_convert() {
        let dec = TextDecoder::for_charset("WIN1252").unwrap();
        assert_eq!(decode(dec, &[0x80, b'a', 0xe9]), "€aé");
        assert_eq!(TextDecoder::for_charset_id(53), Some(dec));
    }

    #[test]
    fn latin1_is_exact_where_windows_1252_differs() {
        let dec = TextDecoder::for_charset("ISO8859_1").unwrap();
        assert_eq!(decode(dec, &[0x80, 0xe9]), "\u{80}é");
    }

    #[test]
    fn invalid_utf8_reports_its_offset() {
        let dec = TextDecoder::for_charset("utf8").unwrap();
        let mut out = String::new();
        assert_eq!(dec.decode_into(b"ab\xff", &mut out), Err(2));
    }

    /// Every way of cutting `bytes` in two or three pieces.
    fn splits(bytes: &[u8]) -> Vec<Vec<&[u8]>> {
        let mut all = vec![vec![bytes]];
        for i in 0..=bytes.len() {
            all.push(vec![&bytes[..i], &bytes[i..]]);
            for j in i..=bytes.len() {
                all.push(vec![&bytes[..i], &bytes[i..j], &bytes[j..]]);
            }
        }
        all
    }

    fn stream(dec: TextDecoder, pieces: &[&[u8]]) -> Result<String, usize> {
        let mut out = String::new();
        let mut text = dec.stream();
        for piece in pieces {
            text.push(piece, &mut |s| out.push_str(s))?;
        }
        text.finish(&mut |s| out.push_str(s))?;
        Ok(out)
    }

    #[test]
    fn text_in_pieces_decodes_as_the_whole_does() {
        let cases: [(&str, &[u8]); 6] = [
            ("UTF8", "aé€😀b".as_bytes()),
            ("WIN1252", b"a\x80\xe9b"),
            ("ISO8859_1", b"a\x80\xe9b\xff"),
            ("SJIS_0208", b"a\x82\xa0\x93\xfab"),
            ("GB18030", b"a\x81\x30\x81\x30\xc4\xe3b"),
            // A lead byte with nothing after it: replaced, as when whole.
            ("SJIS_0208", b"ab\x82"),
        ];
        for (charset, bytes) in cases {
            let dec = TextDecoder::for_charset(charset).unwrap();
            let whole = decode(dec, bytes);
            for pieces in splits(bytes) {
                assert_eq!(
                    stream(dec, &pieces),
                    Ok(whole.clone()),
                    "{charset} {pieces:?}"
                );
            }
        }
    }

    #[test]
    fn bad_utf8_in_pieces_reports_its_offset_in_the_whole() {
        let dec = TextDecoder::UTF8;
        // A stray continuation byte, a character cut short by another, and
        // one cut short by the end.
        for (bytes, at) in [
            (&b"ab\x80cd"[..], 2),
            (&"é".as_bytes()[..1], 0),
            (b"x\xe2\x82A", 1),
            (b"xy\xf0\x9f\x98", 2),
        ] {
            let mut whole = String::new();
            assert_eq!(dec.decode_into(bytes, &mut whole), Err(at), "{bytes:?}");
            for pieces in splits(bytes) {
                assert_eq!(stream(dec, &pieces), Err(at), "{pieces:?}");
            }
        }
    }

    #[test]
    fn none_octets_and_unknown_sets() {
        assert_eq!(TextDecoder::for_charset("NONE"), Some(TextDecoder::UTF8));
        assert!(TextDecoder::for_charset("NO_SUCH").is_none());
        assert!(TextDecoder::for_charset_id(CHARSET_NONE).is_none());
        assert!(TextDecoder::for_charset_id(CHARSET_OCTETS).is_none());
        // DOS437: the server converts it.
        assert!(TextDecoder::for_charset_id(10).is_none());
        assert!(!TextDecoder::client_reads(10));
        assert!(TextDecoder::client_reads(CHARSET_NONE));
        assert!(TextDecoder::client_reads(4));
    }

    #[test]
    fn text_encodes_back_to_the_bytes_it_decodes_from_or_not_at_all() {
        let decoder = |name| TextDecoder::for_charset(name).unwrap();
        assert_eq!(
            decoder("WIN1252").encode("café €"),
            Some(b"caf\xe9 \x80".to_vec())
        );
        assert_eq!(decoder("WIN1252").charset_name(), "WIN1252");
        assert_eq!(decoder("WIN1252").encode("Ж"), None);
        assert_eq!(decoder("ISO8859_1").encode("ÿ"), Some(vec![0xff]));
        assert_eq!(decoder("ISO8859_1").encode("€"), None);
        assert_eq!(decoder("UTF8").encode("Ж"), Some("Ж".as_bytes().to_vec()));
        assert_eq!(decoder("ASCII").encode("Ж"), None);
        assert_eq!(decoder("NONE").charset_name(), "UTF8");
        for (id, name, label) in CHARACTER_SETS {
            if label.is_some() {
                let decoder = TextDecoder::for_charset_id(*id).unwrap();
                assert_eq!(decoder.charset_name(), *name);
                let mut text = String::new();
                decoder.decode_into(b"abc", &mut text).unwrap();
                assert_eq!(
                    decoder.encode(&text).as_deref(),
                    Some(&b"abc"[..]),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn every_label_in_the_table_is_known_to_encoding_rs() {
        for (id, name, label) in CHARACTER_SETS {
            if label.is_some() {
                assert!(
                    TextDecoder::for_charset_id(*id).is_some(),
                    "{name}: {label:?}"
                );
            }
            assert_eq!(charset_name(*id), Some(*name));
        }
    }

    #[test]
    fn every_decoder_names_a_charset_that_gives_it_back() {
        // How a reader process is told the run's --charset.
        for (id, _, _) in CHARACTER_SETS {
            if let Some(decoder) = TextDecoder::for_charset_id(*id) {
                assert_eq!(
                    TextDecoder::for_charset(decoder.charset_name()),
                    Some(decoder)
                );
            }
        }
        let none = TextDecoder::for_charset("NONE").unwrap();
        assert_eq!(TextDecoder::for_charset(none.charset_name()), Some(none));
        assert_eq!(TextDecoder::UTF8.charset_name(), "UTF8");
    }
}
