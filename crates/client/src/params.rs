//! Builders for the byte-coded parameter blocks of the ISC API: the DPB of an
//! attachment and the TPB of a transaction.

use crate::ffi::item;

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

pub fn dpb(
    user: Option<&str>,
    password: Option<&str>,
    role: Option<&str>,
    charset: &str,
    no_garbage_collect: bool,
) -> Result<ParamBlock, String> {
    let mut block = ParamBlock::new(item::DPB_VERSION1);
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
        let block = dpb(Some("SYSDBA"), None, None, "UTF8", false).unwrap();
        assert_eq!(
            block.as_bytes(),
            &[1, 28, 6, b'S', b'Y', b'S', b'D', b'B', b'A', 48, 4, b'U', b'T', b'F', b'8']
        );
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
        assert!(dpb(Some(&long), None, None, "UTF8", false).is_err());
    }
}
