//! Builders for the byte-coded parameter blocks of the ISC API: the DPB of an
//! attachment and the TPB of a transaction.

use crate::ffi::item;

/// How a remote attachment's traffic travels: settings of the client
/// library's `firebird.conf` given for one attachment (`isc_dpb_config`),
/// so that no configuration file needs editing. The embedded engine has
/// no wire and ignores them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireOptions {
    /// `WireCompression`: zlib on the wire, when the server allows it.
    pub compression: bool,
    /// `WireCrypt`; `None` keeps the client library's setting (Enabled).
    pub crypt: Option<WireCrypt>,
}

/// The client's side of `WireCrypt`; the server's own setting must allow
/// it (a server that says Required refuses Disabled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireCrypt {
    Disabled,
    Enabled,
    Required,
}

impl WireOptions {
    /// The `firebird.conf` lines these options stand for, if any.
    fn config(self) -> Option<String> {
        let mut lines = Vec::new();
        if self.compression {
            lines.push("WireCompression = true".to_string());
        }
        if let Some(crypt) = self.crypt {
            lines.push(format!("WireCrypt = {crypt:?}"));
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

/// A clumplet buffer: `tag`, then for most items a length byte and a value.
#[derive(Debug, Clone)]
pub struct ParamBlock(Vec<u8>);

impl ParamBlock {
    pub fn new(version: u8) -> Self {
        ParamBlock(vec![version])
    }

    pub fn flag(&mut self, tag: u8) -> &mut Self {
        self.0.push(tag);
        self
    }

    /// A tag with a byte-string value; values over 255 bytes cannot be encoded
    /// in a version-1 block, so they are refused rather than cut.
    pub fn bytes(&mut self, tag: u8, value: &[u8]) -> Result<&mut Self, String> {
        let len = u8::try_from(value.len())
            .map_err(|_| format!("parameter {tag} is longer than 255 bytes"))?;
        self.0.push(tag);
        self.0.push(len);
        self.0.extend_from_slice(value);
        Ok(self)
    }

    /// A tag with a little-endian integer value of the given width.
    pub fn int(&mut self, tag: u8, value: u64, width: u8) -> &mut Self {
        self.0.push(tag);
        self.0.push(width);
        self.0
            .extend_from_slice(&value.to_le_bytes()[..width as usize]);
        self
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// What an attachment to the embedded engine tells it: keep no compiled
/// statements for reuse. Firebird 5 keeps up to 2 MB of them per
/// attachment (`MaxStatementCacheSize`), and fbunload's unit queries
/// differ by their DB_KEY range, so none would be reused: with 64 workers
/// that was 25 MB of the process's peak (`--fetch-only -j 64`: 175 to 150
/// MB). A server's memory is the server's to set.
///
/// Nor a page cache of 2,048 pages (32 MB on 16 KiB pages, 64 MB on 32
/// KiB): an unload reads each data and blob page once, so the cache only
/// keeps pages no one asks for again, and it filled as blob pages went
/// through it, memory that `--memory` does not count (a table of 1 GiB
/// of blobs in CSV at -j2 peaked over the bound docs/PERFORMANCE.md
/// gives). 256 pages, Classic's default, still hold every worker's data,
/// pointer and blob pages at -j64 (3 pages a cursor). The first
/// attachment to a database makes its cache, and every fbunload
/// attachment carries this.
const EMBEDDED_CONFIG: &str = "MaxStatementCacheSize = 0\nDefaultDbCachePages = 256";

/// Pages of the embedded engine's cache ([`EMBEDDED_CONFIG`]).
pub const EMBEDDED_CACHE_PAGES: i64 = 256;

pub fn dpb(
    user: Option<&str>,
    password: Option<&str>,
    role: Option<&str>,
    charset: &str,
    no_garbage_collect: bool,
    wire: WireOptions,
    embedded: bool,
) -> Result<ParamBlock, String> {
    let mut block = ParamBlock::new(item::DPB_VERSION1);
    let mut config: Vec<String> = wire.config().into_iter().collect();
    if embedded {
        config.push(EMBEDDED_CONFIG.to_string());
    }
    if !config.is_empty() {
        block.bytes(item::DPB_CONFIG, config.join("\n").as_bytes())?;
    }
    if let Some(user) = user {
        block.bytes(item::DPB_USER_NAME, user.as_bytes())?;
    }
    if let Some(password) = password {
        block.bytes(item::DPB_PASSWORD, password.as_bytes())?;
    }
    if let Some(role) = role {
        block.bytes(item::DPB_SQL_ROLE_NAME, role.as_bytes())?;
    }
    block.bytes(item::DPB_LC_CTYPE, charset.as_bytes())?;
    if no_garbage_collect {
        // A flag: the clumplet carries an empty value, as gbak sends it.
        block.bytes(item::DPB_NO_GARBAGE_COLLECT, &[])?;
    }
    Ok(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpb_encodes_length_prefixed_values() {
        let block = dpb(
            Some("SYSDBA"),
            None,
            None,
            "UTF8",
            false,
            WireOptions::default(),
            false,
        )
        .unwrap();
        assert_eq!(
            block.as_bytes(),
            &[1, 28, 6, b'S', b'Y', b'S', b'D', b'B', b'A', 48, 4, b'U', b'T', b'F', b'8']
        );
    }

    #[test]
    fn wire_options_travel_as_configuration_lines() {
        let wire = WireOptions {
            compression: true,
            crypt: Some(WireCrypt::Disabled),
        };
        let block = dpb(None, None, None, "NONE", false, wire, false).unwrap();
        let config = b"WireCompression = true\nWireCrypt = Disabled";
        assert_eq!(&block.as_bytes()[..3], &[1, 87, config.len() as u8]);
        assert_eq!(&block.as_bytes()[3..3 + config.len()], config);
        let bare = |embedded| {
            dpb(
                None,
                None,
                None,
                "NONE",
                false,
                WireOptions::default(),
                embedded,
            )
            .unwrap()
        };
        assert!(!bare(false).as_bytes().contains(&87));
        let embedded = bare(true);
        let config = EMBEDDED_CONFIG.as_bytes();
        assert_eq!(&embedded.as_bytes()[..3], &[1, 87, config.len() as u8]);
    }

    #[test]
    fn snapshot_number_is_little_endian() {
        let mut block = ParamBlock::new(item::TPB_VERSION3);
        block.int(item::TPB_AT_SNAPSHOT_NUMBER, 0x0102, 8);
        assert_eq!(block.as_bytes(), &[3, 23, 8, 2, 1, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn overlong_values_are_refused() {
        let long = "x".repeat(300);
        assert!(dpb(
            Some(&long),
            None,
            None,
            "UTF8",
            false,
            WireOptions::default(),
            false
        )
        .is_err());
    }
}
