//! CSV and TSV.
//!
//! Quoting is RFC 4180, decided by `csv-core` (the engine of the `csv`
//! crate) with `QuoteStyle::Necessary`: a field is quoted when it holds the
//! delimiter, a quote, CR or LF, and quotes inside are doubled. A NULL in a
//! one-column table is an empty line, as PostgreSQL's COPY writes it. NULL is the
//! `null` text, unquoted; a non-NULL value that renders to exactly the
//! `null` text is quoted, so NULL and (by default) the empty string stay
//! distinguishable.
//!
//! Rendering per Arrow type (the decoder's contract, see `fbunload-decode`):
//! integers in decimal; Decimal128 exactly with all `scale` digits; floats
//! as their shortest round-trip text (`NaN`, `Infinity`, `-Infinity`);
//! booleans `true`/`false`; Date32 `YYYY-MM-DD`; Time64(µs)
//! `HH:MM:SS.ffff`; Timestamp(µs) `YYYY-MM-DD HH:MM:SS.ffff`, with
//! `+00:00` appended when it has a time zone (the values are UTC), and the
//! same for a Time64 whose field is marked `TIME WITH TIME ZONE`; strings
//! as they are; binary as lowercase hex or base64.
//!
//! Speed: each column is downcast once per batch into a [`Column`], then
//! rows × columns are rendered into one reused scratch buffer: no
//! allocation and no dynamic dispatch per value.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Time64MicrosecondType, TimestampMicrosecondType,
};
use arrow_array::{Array, PrimitiveArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use base64::Engine as _;
use csv_core::{QuoteStyle, Terminator, Writer, WriterBuilder};

use crate::text;
use crate::{BatchEncoder, SinkError, StreamFormat};

/// The Firebird type recorded by the decoder in field metadata.
const TYPE_METADATA_KEY: &str = "fbunload.type";
const TIME_WITH_TIME_ZONE: &str = "TIME WITH TIME ZONE";
const UTC_SUFFIX: &[u8] = b"+00:00";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BinaryEncoding {
    #[default]
    Hex,
    Base64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    pub delimiter: u8,
    pub header: bool,
    pub null: String,
    pub binary: BinaryEncoding,
    pub crlf: bool,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: b',',
            header: false,
            null: String::new(),
            binary: BinaryEncoding::Hex,
            crlf: false,
        }
    }
}

/// CSV (or, with a tab delimiter, TSV) output.
#[derive(Debug, Clone)]
pub struct CsvFormat {
    options: CsvOptions,
}

impl CsvFormat {
    pub fn new(options: CsvOptions) -> Self {
        CsvFormat { options }
    }

    /// Tab-separated values: CSV rules with a tab delimiter.
    pub fn tsv(options: CsvOptions) -> Self {
        CsvFormat {
            options: CsvOptions {
                delimiter: b'\t',
                ..options
            },
        }
    }
}

impl StreamFormat for CsvFormat {
    fn extension(&self) -> &'static str {
        if self.options.delimiter == b'\t' {
            "tsv"
        } else {
            "csv"
        }
    }

    fn header(&self, schema: &Schema) -> Vec<u8> {
        let mut out = Vec::new();
        if self.options.header {
            let fields = FieldWriter::new(&self.options);
            for (i, field) in schema.fields().iter().enumerate() {
                if i > 0 {
                    fields.delimiter(&mut out);
                }
                fields.value(&mut out, field.name().as_bytes());
            }
            fields.terminator(&mut out);
        }
        out
    }

    fn encoder(&self, schema: SchemaRef) -> Box<dyn BatchEncoder> {
        Box::new(CsvEncoder {
            schema,
            fields: FieldWriter::new(&self.options),
            binary: self.options.binary,
            scratch: Vec::new(),
        })
    }
}

/// Writes fields with csv-core's quoting decision and the NULL rules.
///
/// Only `should_quote` is taken from csv-core: its streaming writer also
/// turns a record of one empty field into `""`, which would make a NULL in
/// a one-column table read back as an empty string.
struct FieldWriter {
    rules: Writer,
    null: Vec<u8>,
    delimiter: u8,
    terminator: &'static [u8],
}

impl FieldWriter {
    fn new(options: &CsvOptions) -> Self {
        FieldWriter {
            rules: WriterBuilder::new()
                .delimiter(options.delimiter)
                .terminator(if options.crlf { Terminator::CRLF } else { Terminator::Any(b'\n') })
                .quote_style(QuoteStyle::Necessary)
                .build(),
            null: options.null.as_bytes().to_vec(),
            delimiter: options.delimiter,
            terminator: if options.crlf { b"\r\n" } else { b"\n" },
        }
    }

    fn null(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.null);
    }

    fn value(&self, out: &mut Vec<u8>, value: &[u8]) {
        // A value that would read back as NULL is quoted, whatever it holds.
        if value == self.null.as_slice() || self.rules.should_quote(value) {
            out.reserve(value.len() + 2);
            out.push(b'"');
            for (i, part) in value.split(|b| *b == b'"').enumerate() {
                if i > 0 {
                    out.extend_from_slice(b"\"\"");
                }
                out.extend_from_slice(part);
            }
            out.push(b'"');
        } else {
            out.extend_from_slice(value);
        }
    }

    fn delimiter(&self, out: &mut Vec<u8>) {
        out.push(self.delimiter);
    }

    fn terminator(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.terminator);
    }
}

struct CsvEncoder {
    schema: SchemaRef,
    fields: FieldWriter,
    binary: BinaryEncoding,
    scratch: Vec<u8>,
}

/// One column of a batch, downcast once.
enum Column<'a> {
    Int16(&'a PrimitiveArray<Int16Type>),
    Int32(&'a PrimitiveArray<Int32Type>),
    Int64(&'a PrimitiveArray<Int64Type>),
    Decimal(&'a PrimitiveArray<Decimal128Type>, i8),
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
}

impl<'a> Column<'a> {
    fn new(field: &Field, array: &'a dyn Array) -> Result<Column<'a>, SinkError> {
        let time_zone_marked = field
            .metadata()
            .get(TYPE_METADATA_KEY)
            .is_some_and(|t| t == TIME_WITH_TIME_ZONE);
        Ok(match array.data_type() {
            DataType::Int16 => Column::Int16(array.as_primitive()),
            DataType::Int32 => Column::Int32(array.as_primitive()),
            DataType::Int64 => Column::Int64(array.as_primitive()),
            DataType::Decimal128(_, scale) => Column::Decimal(array.as_primitive(), *scale),
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
            other => {
                return Err(SinkError::UnsupportedType {
                    column: field.name().clone(),
                    data_type: other.clone(),
                })
            }
        })
    }

    /// Renders row `i` (known not NULL) into `out`.
    fn render(&self, i: usize, binary: BinaryEncoding, out: &mut Vec<u8>) {
        let mut ints = itoa::Buffer::new();
        match self {
            Column::Int16(a) => out.extend_from_slice(ints.format(a.value(i)).as_bytes()),
            Column::Int32(a) => out.extend_from_slice(ints.format(a.value(i)).as_bytes()),
            Column::Int64(a) => out.extend_from_slice(ints.format(a.value(i)).as_bytes()),
            Column::Decimal(a, scale) => text::decimal(out, a.value(i), *scale),
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
        }
    }
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

impl BatchEncoder for CsvEncoder {
    fn encode(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), SinkError> {
        let columns = self
            .schema
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(field, array)| Column::new(field, array.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        let arrays = batch.columns();
        for row in 0..batch.num_rows() {
            for (c, column) in columns.iter().enumerate() {
                if c > 0 {
                    self.fields.delimiter(out);
                }
                if arrays[c].is_null(row) {
                    self.fields.null(out);
                } else {
                    self.scratch.clear();
                    column.render(row, self.binary, &mut self.scratch);
                    self.fields.value(out, &self.scratch);
                }
            }
            self.fields.terminator(out);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, BinaryArray, Int32Array, StringArray};
    use std::collections::HashMap;
    use std::sync::Arc;

    fn encode(format: &CsvFormat, columns: Vec<(&str, ArrayRef)>) -> String {
        let fields: Vec<Field> = columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), columns.into_iter().map(|(_, a)| a).collect())
            .unwrap();
        let mut out = format.header(&schema);
        format.encoder(schema).encode(&batch, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn strings(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(values.to_vec()))
    }

    #[test]
    fn quoting_follows_rfc_4180_and_keeps_null_apart_from_empty() {
        let csv = encode(
            &CsvFormat::new(CsvOptions::default()),
            vec![(
                "s",
                strings(&[
                    Some("a,b"),
                    Some("say \"hi\""),
                    Some("line\nbreak"),
                    Some("cr\rhere"),
                    Some(" lead"),
                    Some(""),
                    None,
                ]),
            )],
        );
        assert_eq!(
            csv,
            "\"a,b\"\n\"say \"\"hi\"\"\"\n\"line\nbreak\"\n\"cr\rhere\"\n lead\n\"\"\n\n"
        );
    }

    #[test]
    fn a_value_equal_to_the_null_text_is_quoted() {
        let format = CsvFormat::new(CsvOptions {
            null: "\\N".into(),
            ..Default::default()
        });
        let csv = encode(&format, vec![("s", strings(&[Some("\\N"), None, Some("")]))]);
        assert_eq!(csv, "\"\\N\"\n\\N\n\n");
    }

    #[test]
    fn header_tsv_and_crlf() {
        let format = CsvFormat::tsv(CsvOptions {
            header: true,
            crlf: true,
            ..Default::default()
        });
        assert_eq!(format.extension(), "tsv");
        let csv = encode(
            &format,
            vec![
                ("My \"odd\" col", Arc::new(Int32Array::from(vec![1, -2])) as ArrayRef),
                ("t", strings(&[Some("a\tb"), Some("c")])),
            ],
        );
        assert_eq!(csv, "\"My \"\"odd\"\" col\"\tt\r\n1\t\"a\tb\"\r\n-2\tc\r\n");
    }

    #[test]
    fn binary_as_hex_or_base64() {
        let bin = || Arc::new(BinaryArray::from(vec![Some(&[0u8, 0xff, 0x10][..]), Some(b"")])) as ArrayRef;
        assert_eq!(
            encode(&CsvFormat::new(CsvOptions::default()), vec![("b", bin())]),
            "00ff10\n\"\"\n"
        );
        let base64 = CsvFormat::new(CsvOptions {
            binary: BinaryEncoding::Base64,
            ..Default::default()
        });
        assert_eq!(encode(&base64, vec![("b", bin())]), "AP8Q\n\"\"\n");
    }

    #[test]
    fn time_with_time_zone_is_marked_utc() {
        let field = Field::new("t", DataType::Time64(TimeUnit::Microsecond), true).with_metadata(
            HashMap::from([(TYPE_METADATA_KEY.to_string(), TIME_WITH_TIME_ZONE.to_string())]),
        );
        let schema = Arc::new(Schema::new(vec![field]));
        let array: ArrayRef = Arc::new(arrow_array::Time64MicrosecondArray::from(vec![37_800_000_000]));
        let batch = RecordBatch::try_new(schema.clone(), vec![array]).unwrap();
        let mut out = Vec::new();
        CsvFormat::new(CsvOptions::default())
            .encoder(schema)
            .encode(&batch, &mut out)
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "10:30:00.0000+00:00\n");
    }

    #[test]
    fn unsupported_types_name_the_column() {
        let schema = Arc::new(Schema::new(vec![Field::new("f", DataType::Float16, true)]));
        let array: ArrayRef = Arc::new(arrow_array::Float16Array::from(vec![None]));
        let batch = RecordBatch::try_new(schema.clone(), vec![array]).unwrap();
        let err = CsvFormat::new(CsvOptions::default())
            .encoder(schema)
            .encode(&batch, &mut Vec::new())
            .unwrap_err();
        assert!(err.to_string().contains("column f"), "{err}");
    }
}
