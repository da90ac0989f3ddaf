//! One batch column, downcast once, rendered value by value: the typed
//! heart shared by every text format (CSV, TSV, JSON Lines), so a value
//! reads the same in all of them.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Decimal256Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Time64MicrosecondType, TimestampMicrosecondType,
};
use arrow_array::{Array, PrimitiveArray, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use base64::Engine as _;

use crate::text;
use crate::FormatError;

/// The Firebird type recorded by the decoder in field metadata.
pub const TYPE_METADATA_KEY: &str = "fbunload.type";
pub(crate) const TIME_WITH_TIME_ZONE: &str = "TIME WITH TIME ZONE";
const UTC_SUFFIX: &[u8] = b"+00:00";

/// How binary values (OCTETS, binary BLOBs) become text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BinaryEncoding {
    /// Two lowercase hex digits per byte: `00ff10`.
    #[default]
    Hex,
    /// Standard base64 alphabet with `=` padding: `AP8Q`.
    Base64,
}

impl BinaryEncoding {
    /// As `--binary` spells it.
    pub fn name(self) -> &'static str {
        match self {
            BinaryEncoding::Hex => "hex",
            BinaryEncoding::Base64 => "base64",
        }
    }
}

/// One column of a batch, downcast once.
pub(crate) enum Column<'a> {
    Int16(&'a PrimitiveArray<Int16Type>),
    Int32(&'a PrimitiveArray<Int32Type>),
    Int64(&'a PrimitiveArray<Int64Type>),
    Decimal(&'a PrimitiveArray<Decimal128Type>, i8),
    Decimal256(&'a PrimitiveArray<Decimal256Type>, i8),
    Float32(&'a PrimitiveArray<Float32Type>),
    Float64(&'a PrimitiveArray<Float64Type>),
    Boolean(&'a arrow_array::BooleanArray),
    Date(&'a PrimitiveArray<Date32Type>),
    Time(&'a PrimitiveArray<Time64MicrosecondType>, bool),
    Timestamp(&'a PrimitiveArray<TimestampMicrosecondType>, bool),
    Utf8(&'a arrow_array::StringArray),
    LargeUtf8(&'a arrow_array::LargeStringArray),
    Binary(&'a arrow_array::BinaryArray),
    LargeBinary(&'a arrow_array::LargeBinaryArray),
    FixedBinary(&'a arrow_array::FixedSizeBinaryArray),
    /// An ARRAY column (one list level per dimension), rendered as a JSON
    /// array of its elements, each as JSON Lines writes a value.
    List(&'a arrow_array::ListArray, Box<Column<'a>>),
}

impl<'a> Column<'a> {
    pub(crate) fn new(field: &Field, array: &'a dyn Array) -> Result<Column<'a>, FormatError> {
        let time_zone_marked = field
            .metadata()
            .get(TYPE_METADATA_KEY)
            .is_some_and(|t| t == TIME_WITH_TIME_ZONE);
        Ok(match array.data_type() {
            DataType::Int16 => Column::Int16(array.as_primitive()),
            DataType::Int32 => Column::Int32(array.as_primitive()),
            DataType::Int64 => Column::Int64(array.as_primitive()),
            DataType::Decimal128(_, scale) => Column::Decimal(array.as_primitive(), *scale),
            DataType::Decimal256(_, scale) => Column::Decimal256(array.as_primitive(), *scale),
            DataType::Float32 => Column::Float32(array.as_primitive()),
            DataType::Float64 => Column::Float64(array.as_primitive()),
            DataType::Boolean => Column::Boolean(array.as_boolean()),
            DataType::Date32 => Column::Date(array.as_primitive()),
            DataType::Time64(TimeUnit::Microsecond) => {
                Column::Time(array.as_primitive(), time_zone_marked)
            }
            DataType::Timestamp(TimeUnit::Microsecond, tz) => {
                Column::Timestamp(array.as_primitive(), tz.is_some())
            }
            DataType::Utf8 => Column::Utf8(array.as_string()),
            DataType::LargeUtf8 => Column::LargeUtf8(array.as_string()),
            DataType::Binary => Column::Binary(array.as_binary()),
            DataType::LargeBinary => Column::LargeBinary(array.as_binary()),
            DataType::FixedSizeBinary(_) => Column::FixedBinary(array.as_fixed_size_binary()),
            DataType::List(item) => {
                let list = array.as_list::<i32>();
                Column::List(list, Box::new(Column::new(item, list.values().as_ref())?))
            }
            other => {
                return Err(FormatError::UnsupportedType {
                    column: field.name().clone(),
                    data_type: other.clone(),
                })
            }
        })
    }

    /// Whether every rendering of this column is made only of ASCII letters,
    /// digits and `-+.: ` (numbers, dates, times, booleans): such a value
    /// needs CSV quotes only if the delimiter is one of those characters.
    pub(crate) fn renders_plain(&self) -> bool {
        !matches!(
            self,
            Column::Utf8(_)
                | Column::LargeUtf8(_)
                | Column::Binary(_)
                | Column::LargeBinary(_)
                | Column::FixedBinary(_)
                | Column::List(..)
        )
    }

    /// Renders row `i` (known not NULL) into `out`.
    pub(crate) fn render(&self, i: usize, binary: BinaryEncoding, out: &mut Vec<u8>) {
        let mut ints = itoa::Buffer::new();
        match self {
            Column::Int16(a) => out.extend_from_slice(ints.format(a.value(i)).as_bytes()),
            Column::Int32(a) => out.extend_from_slice(ints.format(a.value(i)).as_bytes()),
            Column::Int64(a) => out.extend_from_slice(ints.format(a.value(i)).as_bytes()),
            Column::Decimal(a, scale) => text::decimal(out, a.value(i), *scale),
            Column::Decimal256(a, scale) => match a.value(i).to_i128() {
                // Always, for values from Firebird (INT128 at most).
                Some(v) => text::decimal(out, v, *scale),
                None => {
                    let v = a.value(i);
                    let digits = v.wrapping_abs().to_string();
                    text::decimal_digits(out, v.is_negative(), &digits, *scale)
                }
            },
            Column::Float32(a) => text::float32(out, a.value(i)),
            Column::Float64(a) => text::float64(out, a.value(i)),
            Column::Boolean(a) => {
                out.extend_from_slice(if a.value(i) { b"true" } else { b"false" })
            }
            Column::Date(a) => text::date(out, a.value(i) as i64),
            Column::Time(a, utc) => {
                text::time(out, a.value(i));
                if *utc {
                    out.extend_from_slice(UTC_SUFFIX);
                }
            }
            Column::Timestamp(a, utc) => {
                text::timestamp(out, a.value(i));
                if *utc {
                    out.extend_from_slice(UTC_SUFFIX);
                }
            }
            Column::Utf8(a) => out.extend_from_slice(a.value(i).as_bytes()),
            Column::LargeUtf8(a) => out.extend_from_slice(a.value(i).as_bytes()),
            Column::Binary(a) => encode_binary(out, a.value(i), binary),
            Column::LargeBinary(a) => encode_binary(out, a.value(i), binary),
            Column::FixedBinary(a) => encode_binary(out, a.value(i), binary),
            Column::List(list, items) => {
                let offsets = list.value_offsets();
                let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                out.push(b'[');
                let mut scratch = Vec::new();
                for j in start..end {
                    if j > start {
                        out.push(b',');
                    }
                    if list.values().is_null(j) {
                        out.extend_from_slice(b"null");
                    } else if items.is_json_literal(j) {
                        items.render(j, binary, out);
                    } else {
                        scratch.clear();
                        items.render(j, binary, &mut scratch);
                        json_string(out, &scratch);
                    }
                }
                out.push(b']');
            }
        }
    }
}

/// Writes `text` (UTF-8) as a JSON string.
pub(crate) fn json_string(out: &mut Vec<u8>, text: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in text {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

fn encode_binary(out: &mut Vec<u8>, bytes: &[u8], encoding: BinaryEncoding) {
    match encoding {
        BinaryEncoding::Hex => text::hex(out, bytes),
        BinaryEncoding::Base64 => {
            let start = out.len();
            let len = base64::encoded_len(bytes.len(), true).expect("blob sizes fit in usize");
            out.resize(start + len, 0);
            let written = base64::engine::general_purpose::STANDARD
                .encode_slice(bytes, &mut out[start..])
                .expect("buffer sized by encoded_len");
            out.truncate(start + written);
        }
    }
}

/// The columns of `batch`, each with its null bitmap, after checking the
/// batch against the schema its encoder was made for.
pub(crate) fn batch_columns<'a>(
    schema: &Schema,
    batch: &'a RecordBatch,
) -> Result<Vec<(Option<&'a NullBuffer>, Column<'a>)>, FormatError> {
    let fields = schema.fields();
    if fields.len() != batch.num_columns() {
        return Err(FormatError::SchemaMismatch {
            expected: fields.len(),
            found: batch.num_columns(),
        });
    }
    fields
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| Ok((array.nulls(), Column::new(field, array.as_ref())?)))
        .collect()
}

impl Column<'_> {
    /// The text of row `i` (known not NULL), for text columns: it renders
    /// as itself.
    pub(crate) fn text(&self, i: usize) -> Option<&[u8]> {
        match self {
            Column::Utf8(a) => Some(a.value(i).as_bytes()),
            Column::LargeUtf8(a) => Some(a.value(i).as_bytes()),
            _ => None,
        }
    }

    pub(crate) fn is_binary(&self) -> bool {
        matches!(
            self,
            Column::Binary(_) | Column::LargeBinary(_) | Column::FixedBinary(_)
        )
    }

    /// Whether the rendering of row `i` is a JSON literal as it stands
    /// (integers, finite floats, booleans); everything else is written as a
    /// JSON string. NUMERIC/DECIMAL and INT128 are strings on purpose: JSON
    /// readers parse numbers into doubles, which would round them.
    pub(crate) fn is_json_literal(&self, i: usize) -> bool {
        match self {
            Column::Int16(_)
            | Column::Int32(_)
            | Column::Int64(_)
            | Column::Boolean(_)
            | Column::List(..) => true,
            Column::Float32(a) => a.value(i).is_finite(),
            Column::Float64(a) => a.value(i).is_finite(),
            _ => false,
        }
    }
}
