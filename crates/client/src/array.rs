//! ARRAY columns. A row holds only an array id (8 bytes, like a blob id);
//! the elements come in one call, `isc_get_slice`, laid out as an SDL
//! (slice description language) string asks.
//!
//! Why we write the SDL ourselves instead of calling
//! `isc_array_lookup_bounds` + `isc_array_get_slice`: their descriptor
//! keeps relation and field names in 32 bytes (Firebird 4 and later allow
//! 63 characters), they ask the catalog again on every call, and they
//! request text in the connection character set, which can be longer than
//! the element and fail. The planner already read the catalog; an
//! [`ArrayShape`] says what it found, and asks for text in the element's
//! own character set, byte for byte.

use std::os::raw::c_char;

use crate::attachment::Transaction;
use crate::ffi::{self, StatusVector};
use crate::{BlobId, ClientError};

/// How an element arrives in a slice: a BLR type code, as the SDL asks.
pub mod element {
    /// CHAR of the element's character set, `length` bytes, blank-padded.
    pub const TEXT: u8 = 15; // blr_text2
    /// VARCHAR of the element's character set: the engine hands it over as
    /// a NUL-terminated string in `length + 2` bytes.
    pub const VARYING: u8 = 38; // blr_varying2
    pub const SHORT: u8 = 7;
    pub const LONG: u8 = 8;
    pub const FLOAT: u8 = 10;
    pub const DATE: u8 = 12;
    pub const TIME: u8 = 13;
    pub const INT64: u8 = 16;
    pub const BOOLEAN: u8 = 23;
    pub const INT128: u8 = 26;
    pub const DOUBLE: u8 = 27;
    pub const TIME_TZ: u8 = 28;
    pub const TIMESTAMP_TZ: u8 = 29;
    pub const TIMESTAMP: u8 = 35;
}

/// One element's type in a slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ElementType {
    /// One of [`element`].
    pub code: u8,
    /// Scale of SHORT, LONG, INT64 and INT128 (≤ 0).
    pub scale: i8,
    /// Bytes of TEXT and VARYING.
    pub length: u16,
    /// Character set of TEXT and VARYING.
    pub charset: u8,
}

impl ElementType {
    /// Bytes one element takes in a slice (the engine's `sdl_desc`).
    pub fn size(&self) -> usize {
        match self.code {
            element::TEXT => self.length as usize,
            element::VARYING => self.length as usize + 2,
            element::BOOLEAN => 1,
            element::SHORT => 2,
            element::LONG | element::FLOAT | element::DATE | element::TIME => 4,
            element::INT64 | element::DOUBLE | element::TIMESTAMP | element::TIME_TZ => 8,
            element::TIMESTAMP_TZ => 12,
            element::INT128 => 16,
            _ => 0,
        }
    }
}

/// An ARRAY column as a slice reads it whole: its table and column (which
/// the engine needs to store one), its element type and each dimension's
/// bounds, outermost first.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ArrayShape {
    pub relation: String,
    pub field: String,
    pub element: ElementType,
    pub bounds: Vec<(i32, i32)>,
}

/// SDL verbs, from `consts_pub.h`.
mod sdl {
    pub const VERSION1: u8 = 1;
    pub const RELATION: u8 = 2;
    pub const FIELD: u8 = 4;
    pub const STRUCT: u8 = 6;
    pub const VARIABLE: u8 = 7;
    pub const SCALAR: u8 = 8;
    pub const TINY_INTEGER: u8 = 9;
    pub const SHORT_INTEGER: u8 = 10;
    pub const LONG_INTEGER: u8 = 11;
    pub const DO2: u8 = 34;
    pub const ELEMENT: u8 = 36;
    pub const EOC: u8 = 255;
}

impl ArrayShape {
    /// Elements in a whole array.
    /// Saturates: the catalog's bounds may multiply past `usize`.
    pub fn len(&self) -> usize {
        self.dimension_lengths().fold(1, usize::saturating_mul)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements along each dimension, outermost first.
    pub fn dimension_lengths(&self) -> impl Iterator<Item = usize> + '_ {
        self.bounds
            .iter()
            .map(|&(lower, upper)| (upper as i64 - lower as i64 + 1).max(0) as usize)
    }

    /// Bytes of a whole array's slice.
    pub fn slice_size(&self) -> usize {
        self.len().saturating_mul(self.element.size())
    }

    /// The SDL that reads or writes the whole array, elements in row-major
    /// order (the last subscript varies fastest).
    pub fn sdl(&self) -> Vec<u8> {
        let mut out = vec![sdl::VERSION1, sdl::STRUCT, 1, self.element.code];
        match self.element.code {
            element::TEXT | element::VARYING => {
                out.extend_from_slice(&(self.element.charset as u16).to_le_bytes());
                out.extend_from_slice(&self.element.length.to_le_bytes());
            }
            element::SHORT | element::LONG | element::INT64 | element::INT128 => {
                out.push(self.element.scale as u8)
            }
            _ => {}
        }
        for (verb, name) in [(sdl::RELATION, &self.relation), (sdl::FIELD, &self.field)] {
            out.push(verb);
            // Names are at most 63 characters of up to 4 bytes: 252.
            let bytes = &name.as_bytes()[..name.len().min(255)];
            out.push(bytes.len() as u8);
            out.extend_from_slice(bytes);
        }
        for (n, &(lower, upper)) in self.bounds.iter().enumerate() {
            out.extend_from_slice(&[sdl::DO2, n as u8]);
            literal(&mut out, lower);
            literal(&mut out, upper);
        }
        out.extend_from_slice(&[sdl::ELEMENT, 1, sdl::SCALAR, 0, self.bounds.len() as u8]);
        for n in 0..self.bounds.len() {
            out.extend_from_slice(&[sdl::VARIABLE, n as u8]);
        }
        out.push(sdl::EOC);
        out
    }
}

/// An SDL integer literal in the fewest bytes.
fn literal(out: &mut Vec<u8>, value: i32) {
    if let Ok(v) = i8::try_from(value) {
        out.extend_from_slice(&[sdl::TINY_INTEGER, v as u8]);
    } else if let Ok(v) = i16::try_from(value) {
        out.push(sdl::SHORT_INTEGER);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        out.push(sdl::LONG_INTEGER);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

impl Transaction {
    /// Reads the whole array `id` into `out`, [`ArrayShape::slice_size`]
    /// bytes; elements never stored read as zeros.
    pub fn read_array(
        &self,
        id: &BlobId,
        shape: &ArrayShape,
        out: &mut [u8],
    ) -> Result<(), ClientError> {
        let sdl = shape.sdl();
        if out.len() != shape.slice_size() || out.len() > i32::MAX as usize {
            return Err(ClientError::Invalid(format!(
                "an array slice of {} bytes does not fit a buffer of {}",
                shape.slice_size(),
                out.len()
            )));
        }
        out.fill(0);
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let mut db = self.attachment().handle();
        let mut tr = self.handle;
        let mut quad = *id;
        let mut returned: i32 = 0;
        let _read = crate::waits::reading(None);
        // SAFETY: handles, SDL and buffer are valid for the call, and the
        // buffer is as long as the length we pass.
        unsafe {
            (self.client().api.isc_get_slice)(
                status.as_mut_ptr(),
                &mut db,
                &mut tr,
                &mut quad,
                sdl.len() as u16,
                sdl.as_ptr(),
                0,
                std::ptr::null(),
                out.len() as i32,
                out.as_mut_ptr().cast(),
                &mut returned,
            );
        }
        self.check(&status)
    }

    /// Stores `data` (a whole slice, [`ArrayShape::slice_size`] bytes) as a
    /// new array and returns its id, for [`Self::execute_with_arrays`]. For
    /// writing test data: fbunload itself never writes.
    pub fn write_array(&self, shape: &ArrayShape, data: &mut [u8]) -> Result<BlobId, ClientError> {
        let sdl = shape.sdl();
        if data.len() != shape.slice_size() {
            return Err(ClientError::Invalid(format!(
                "an array slice is {} bytes, not {}",
                shape.slice_size(),
                data.len()
            )));
        }
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let mut db = self.attachment().handle();
        let mut tr = self.handle;
        let mut quad: BlobId = [0; 8];
        // SAFETY: as for `read_array`; a zero id asks for a new array.
        unsafe {
            (self.client().api.isc_put_slice)(
                status.as_mut_ptr(),
                &mut db,
                &mut tr,
                &mut quad,
                sdl.len() as u16,
                sdl.as_ptr() as *const c_char,
                0,
                std::ptr::null(),
                data.len() as i32,
                data.as_mut_ptr().cast(),
            );
        }
        self.check(&status)?;
        Ok(quad)
    }

    /// Executes a statement whose `?` parameters are all array ids (from
    /// [`Self::write_array`]), in order; `None` binds NULL.
    pub fn execute_with_arrays(
        &self,
        sql: &str,
        ids: &[Option<BlobId>],
    ) -> Result<(), ClientError> {
        let mut values: Vec<BlobId> = ids.iter().map(|id| id.unwrap_or([0; 8])).collect();
        let mut nulls: Vec<i16> = ids.iter().map(|id| -(id.is_none() as i16)).collect();
        let mut sqlda = crate::statement::new_sqlda(ids.len().max(1));
        // SAFETY: the buffer holds an XSQLDA of `ids.len()` entries; each
        // points into `values` and `nulls`, which outlive the call.
        unsafe {
            let header = &mut *(sqlda.as_mut_ptr() as *mut ffi::Xsqlda);
            header.sqld = ids.len() as i16;
            let vars = std::slice::from_raw_parts_mut(header.sqlvar.as_mut_ptr(), ids.len());
            for (i, var) in vars.iter_mut().enumerate() {
                var.sqltype = ffi::sql_type::ARRAY + 1;
                var.sqllen = 8;
                var.sqldata = values[i].as_mut_ptr().cast();
                var.sqlind = &mut nulls[i];
            }
            self.execute_immediate(sql, sqlda.as_ptr() as *const ffi::Xsqlda)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(element: ElementType, bounds: Vec<(i32, i32)>) -> ArrayShape {
        ArrayShape {
            relation: "JOB".into(),
            field: "LANGUAGE_REQ".into(),
            element,
            bounds,
        }
    }

    #[test]
    fn the_sdl_reads_the_whole_array_in_the_elements_own_character_set() {
        let varchar = ElementType {
            code: element::VARYING,
            scale: 0,
            length: 15,
            charset: 53,
        };
        let s = shape(varchar, vec![(1, 5)]);
        let mut expected = vec![1, 6, 1, 38, 53, 0, 15, 0, 2, 3];
        expected.extend_from_slice(b"JOB");
        expected.extend_from_slice(&[4, 12]);
        expected.extend_from_slice(b"LANGUAGE_REQ");
        expected.extend_from_slice(&[34, 0, 9, 1, 9, 5, 36, 1, 8, 0, 1, 7, 0, 255]);
        assert_eq!(s.sdl(), expected);
        assert_eq!((s.len(), s.slice_size()), (5, 85));
    }

    #[test]
    fn bounds_of_any_size_and_scales_are_written() {
        let numeric = ElementType {
            code: element::LONG,
            scale: -2,
            length: 4,
            charset: 0,
        };
        let s = shape(numeric, vec![(-200, 40_000), (0, 2)]);
        let sdl = s.sdl();
        assert_eq!(&sdl[..5], &[1, 6, 1, 8, (-2i8) as u8]);
        let dims = sdl.iter().position(|&b| b == 34).unwrap();
        assert_eq!(
            &sdl[dims..dims + 16],
            &[34, 0, 10, 0x38, 0xff, 11, 0x40, 0x9c, 0, 0, 34, 1, 9, 0, 9, 2]
        );
        assert_eq!(s.len(), 40_201 * 3);
        assert_eq!(&sdl[sdl.len() - 10..], &[36, 1, 8, 0, 2, 7, 0, 7, 1, 255]);
    }
}
