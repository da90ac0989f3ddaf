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
    pub const UTF8: TextDecoder = TextDecoder { kind: Kind::Utf8 };

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
        Some(TextDecoder { kind })
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
}
