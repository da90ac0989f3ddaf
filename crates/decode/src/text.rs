//! Text in the connection character set, turned into UTF-8.
//!
//! Arrow strings are UTF-8. With the default connection character set UTF8
//! the server already transliterates every declared character set, so the
//! common path is a validation only. With another `--charset` (typically to
//! read legacy CHARACTER SET NONE columns that hold WIN1252 or similar),
//! `encoding_rs` converts.

use encoding_rs::Encoding;

/// Decodes connection-charset bytes to UTF-8.
#[derive(Debug, Clone, Copy)]
pub struct TextDecoder {
    /// `None` means the bytes are UTF-8 already.
    encoding: Option<&'static Encoding>,
}

impl TextDecoder {
    /// The decoder for a Firebird character set name; `None` if we do not
    /// know how to convert it.
    pub fn for_charset(name: &str) -> Option<TextDecoder> {
        let upper = name.to_ascii_uppercase();
        let label = match upper.as_str() {
            "UTF8" | "UNICODE_FSS" => return Some(TextDecoder { encoding: None }),
            "NONE" | "ASCII" => "windows-1252",
            "DOS866" => "ibm866",
            "KOI8R" => "koi8-r",
            "KOI8U" => "koi8-u",
            "SJIS_0208" => "shift_jis",
            "EUCJ_0208" => "euc-jp",
            "BIG_5" => "big5",
            "GB_2312" | "GBK" => "gbk",
            "GB18030" => "gb18030",
            "KSC_5601" => "euc-kr",
            other => {
                if let Some(n) = other.strip_prefix("WIN") {
                    return Encoding::for_label(format!("windows-{n}").as_bytes()).map(Self::with);
                }
                if let Some(n) = other.strip_prefix("ISO8859_") {
                    return Encoding::for_label(format!("iso-8859-{n}").as_bytes()).map(Self::with);
                }
                return None;
            }
        };
        Encoding::for_label(label.as_bytes()).map(Self::with)
    }

    fn with(encoding: &'static Encoding) -> TextDecoder {
        TextDecoder {
            encoding: Some(encoding),
        }
    }

    /// Appends the UTF-8 form of `bytes` to `out`; `Err` with the byte
    /// offset when UTF-8 input is invalid.
    pub fn decode_into(&self, bytes: &[u8], out: &mut String) -> Result<(), usize> {
        match self.encoding {
            None => match std::str::from_utf8(bytes) {
                Ok(s) => {
                    out.push_str(s);
                    Ok(())
                }
                Err(e) => Err(e.valid_up_to()),
            },
            Some(encoding) => {
                let (text, _had_errors) = encoding.decode_without_bom_handling(bytes);
                out.push_str(&text);
                Ok(())
            }
        }
    }

    pub fn is_utf8(&self) -> bool {
        self.encoding.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_code_pages_convert() {
        let dec = TextDecoder::for_charset("WIN1252").unwrap();
        let mut out = String::new();
        dec.decode_into(&[0x80, b'a', 0xe9], &mut out).unwrap();
        assert_eq!(out, "€aé");
    }

    #[test]
    fn invalid_utf8_reports_its_offset() {
        let dec = TextDecoder::for_charset("utf8").unwrap();
        let mut out = String::new();
        assert_eq!(dec.decode_into(b"ab\xff", &mut out), Err(2));
    }

    #[test]
    fn unknown_charsets_are_refused() {
        assert!(TextDecoder::for_charset("NO_SUCH").is_none());
    }
}
