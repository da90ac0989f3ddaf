//! CSV and TSV.
//!
//! Quoting is RFC 4180, decided by `csv-core` (the engine of the `csv`
//! crate) with `QuoteStyle::Necessary`: a field is quoted when it holds the
//! delimiter, a quote, CR or LF, and quotes inside are doubled; a leading
//! or trailing space does not need quotes. NULL is the `null` text,
//! unquoted; a non-NULL value that renders to exactly the `null` text is
//! quoted, so NULL and the empty string stay distinguishable (by default
//! `,,` is NULL and `,"",` the empty string; with `--null '\N'` a string
//! `\N` is written `"\N"`). In a one-column table an empty string is always `""`, and a
//! NULL under the default (empty) null text is written [`SOLE_COLUMN_NULL`]
//! instead of a blank line: pandas, pyarrow and most CSV readers skip blank
//! lines, so the row would vanish. The null text may not hold the
//! delimiter, a quote, CR or LF ([`CsvOptions::validate`]): records would
//! no longer have their fields.
//!
//! Records end with LF, or CRLF with `crlf`. The header line is the field
//! names, quoted by the same rules.
//!
//! Rendering per Arrow type. This is the contract with the decoder
//! (`fbunload-decode` maps every Firebird type onto these):
//!
//! | Arrow type | written as | example |
//! |---|---|---|
//! | Int16, Int32, Int64 | decimal | `-32768` |
//! | Decimal128(p, s) | exact, never through a float; `s` digits after the point | `-0.05`, `1.00`, `12` (s = 0) |
//! | Float32, Float64 | shortest text that reads back as the same value, in the value's own width | `0.1`, `3.4e38`, `5e-324`, `-0.0`, `NaN`, `Infinity`, `-Infinity` |
//! | Boolean | `true` / `false` | |
//! | Date32 | `YYYY-MM-DD`, proleptic Gregorian | `0001-01-01` |
//! | Time64(µs) | `HH:MM:SS.ffff`, Firebird's 1/10 000 s | `23:59:59.9999` |
//! | Time64(µs), field metadata `fbunload.type` = `TIME WITH TIME ZONE` | the UTC time, `HH:MM:SS.ffff+00:00` | `10:30:00.0000+00:00` |
//! | Timestamp(µs, None) | `YYYY-MM-DD HH:MM:SS.ffff` | `2000-02-29 00:00:00.0000` |
//! | Timestamp(µs, Some(_)) | the instant in UTC, then `+00:00` | `2024-03-31 00:30:00.0000+00:00` |
//! | Utf8, LargeUtf8 | the text as it is | |
//! | Binary, LargeBinary, FixedSizeBinary | lowercase hex, or standard padded base64 | `00ff10`, `AP8Q` |
//!
//! Any other type is refused with [`FormatError::UnsupportedType`] naming the
//! column, before anything of the batch is written. Digits below 1/10 000 s
//! are dropped (Firebird cannot hold them). Dates outside years 1..=9999
//! cannot come from Firebird; they are still written (astronomical years
//! `0000`, `-0001`; five digits after 9999) rather than failing an unload.
//!
//! Speed: each column is downcast once per batch into a typed column
//! formatter (an enum over typed array references, plus its null bitmap),
//! then rows × columns are rendered straight into the output buffer, so
//! there is no allocation and no dynamic dispatch per value; the few values
//! that need quotes (csv-core decides, on the whole rendered field) are
//! quoted where they lie.

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use csv_core::{QuoteStyle, Terminator, Writer, WriterBuilder};

use crate::values::batch_columns;
pub use crate::values::BinaryEncoding;
use crate::{BatchEncoder, ByteFormat, FormatError, RecordScanner, Setting};

/// The command line's CSV flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// Field separator, one byte (default `,`).
    pub delimiter: u8,
    /// Write a first line with the column names (default yes: readers
    /// take a first line as the names).
    pub header: bool,
    /// The text written for NULL, unquoted (default empty).
    pub null: String,
    /// How binary values are written (default hex).
    pub binary: BinaryEncoding,
    /// End records with CRLF instead of LF (default no).
    pub crlf: bool,
}

/// What a NULL is written as in a table of one column when the null text
/// is empty (see the module docs); a value that reads the same is quoted.
pub const SOLE_COLUMN_NULL: &str = "NULL";

impl CsvOptions {
    /// Refuses a null text that would change the shape of records: one
    /// holding the delimiter, a quote, CR or LF.
    pub fn validate(&self) -> Result<(), String> {
        let delimiter = self.delimiter as char;
        let Some(bad) = self
            .null
            .chars()
            .find(|&c| c == delimiter || matches!(c, '"' | '\r' | '\n'))
        else {
            return Ok(());
        };
        let what = match bad {
            '"' => "a quote".to_string(),
            '\r' | '\n' => "a line break".to_string(),
            '\t' => "the delimiter (tab)".to_string(),
            c => format!("the delimiter ({c})"),
        };
        Err(format!(
            "--null {:?}: the text for NULL may not contain {what}, or records would not read \
             back with their fields; choose another, e.g. '\\N' or 'NULL'",
            self.null
        ))
    }
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: b',',
            header: true,
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
    /// CSV with these options; the extension is `tsv` if the delimiter is a tab.
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

impl ByteFormat for CsvFormat {
    fn extension(&self) -> &str {
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
                let start = out.len();
                out.extend_from_slice(field.name().as_bytes());
                let sole = schema.fields().len() == 1;
                fields.quote_if_needed(&mut out, start, sole);
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
        })
    }

    fn records(&self) -> RecordScanner {
        RecordScanner::csv()
    }

    fn settings(&self) -> Vec<(&'static str, Setting)> {
        let o = &self.options;
        let mut settings = Vec::new();
        if o.delimiter != b'\t' {
            let delimiter = char::from(o.delimiter).to_string();
            settings.push(("delimiter", Setting::Text(delimiter)));
        }
        settings.extend([
            ("header", Setting::Flag(o.header)),
            ("null", Setting::Text(o.null.clone())),
            ("binary", Setting::Text(o.binary.name().into())),
            ("crlf", Setting::Flag(o.crlf)),
        ]);
        settings
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
    /// The null text of a table of one column (see the module docs).
    sole_null: Vec<u8>,
    delimiter: u8,
    terminator: &'static [u8],
    /// Whether plain renderings (see `Column::renders_plain`) can never
    /// need quotes: the delimiter is none of their characters and the NULL
    /// marker is empty (which no plain rendering is).
    plain_never_quoted: bool,
}

impl FieldWriter {
    fn new(options: &CsvOptions) -> Self {
        FieldWriter {
            rules: WriterBuilder::new()
                .delimiter(options.delimiter)
                .terminator(if options.crlf {
                    Terminator::CRLF
                } else {
                    Terminator::Any(b'\n')
                })
                .quote_style(QuoteStyle::Necessary)
                .build(),
            null: options.null.as_bytes().to_vec(),
            sole_null: if options.null.is_empty() {
                SOLE_COLUMN_NULL.as_bytes().to_vec()
            } else {
                options.null.as_bytes().to_vec()
            },
            delimiter: options.delimiter,
            plain_never_quoted: options.null.is_empty()
                && !options.delimiter.is_ascii_alphanumeric()
                && !b"-+.: ".contains(&options.delimiter),
            terminator: if options.crlf { b"\r\n" } else { b"\n" },
        }
    }

    fn null(&self, out: &mut Vec<u8>, sole: bool) {
        out.extend_from_slice(if sole { &self.sole_null } else { &self.null });
    }

    /// Quotes, in place, the non-NULL field written at `out[start..]` if
    /// it needs it; `sole` says it is the record's only field. Values are
    /// rendered straight into `out` because most need no quotes; those
    /// that do are moved towards the end, from the back, to make room for
    /// the quotes, so a value (a blob of hundreds of MB) is never copied
    /// anywhere else.
    fn quote_if_needed(&self, out: &mut Vec<u8>, start: usize, sole: bool) {
        let value = &out[start..];
        // A value that would read back as NULL is quoted, whatever it holds.
        let null = if sole { &self.sole_null } else { &self.null };
        if value == null.as_slice() || (sole && value.is_empty()) || self.rules.should_quote(value)
        {
            let quotes = memchr::memchr_iter(b'"', value).count();
            let mut end = out.len();
            out.resize(end + quotes + 2, 0);
            // `to`: where the part of the value left to move ends, once moved.
            let mut to = out.len() - 1;
            out[to] = b'"';
            while let Some(quote) = memchr::memrchr(b'"', &out[start..end]).map(|q| start + q) {
                let tail = end - (quote + 1);
                out.copy_within(quote + 1..end, to - tail);
                to -= tail + 2;
                out[to..to + 2].copy_from_slice(b"\"\"");
                end = quote;
            }
            out.copy_within(start..end, to - (end - start));
            out[start] = b'"';
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
}

impl BatchEncoder for CsvEncoder {
    fn encode(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), FormatError> {
        let columns = batch_columns(&self.schema, batch)?;
        // A record of one empty field would be a blank line, which many
        // readers skip: neither NULL nor "" may be written as one.
        let sole = columns.len() == 1;
        let checked: Vec<bool> = columns
            .iter()
            .map(|(_, c)| !(self.fields.plain_never_quoted && c.renders_plain()))
            .collect();
        for row in 0..batch.num_rows() {
            for (c, (nulls, column)) in columns.iter().enumerate() {
                if c > 0 {
                    self.fields.delimiter(out);
                }
                if nulls.is_some_and(|n| n.is_null(row)) {
                    self.fields.null(out, sole);
                } else {
                    let start = out.len();
                    column.render(row, self.binary, out);
                    if checked[c] {
                        self.fields.quote_if_needed(out, start, sole);
                    }
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
    use crate::values::{TIME_WITH_TIME_ZONE, TYPE_METADATA_KEY};
    use arrow_array::{
        ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
        Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, LargeBinaryArray,
        LargeStringArray, StringArray, Time64MicrosecondArray, TimestampMicrosecondArray,
    };
    use arrow_schema::{DataType, Field, TimeUnit};
    use std::collections::HashMap;
    use std::sync::Arc;

    /// CSV without the header line, so that a test sees only the values.
    fn csv() -> CsvFormat {
        CsvFormat::new(CsvOptions {
            header: false,
            ..CsvOptions::default()
        })
    }

    /// Header (if any) plus the encoding of one batch of these columns.
    fn encode(format: &CsvFormat, columns: Vec<(&str, ArrayRef)>) -> String {
        let fields: Vec<Field> = columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        encode_fields(
            format,
            fields,
            columns.into_iter().map(|(_, a)| a).collect(),
        )
    }

    fn encode_fields(format: &CsvFormat, fields: Vec<Field>, columns: Vec<ArrayRef>) -> String {
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let mut out = format.header(&schema);
        format.encoder(schema).encode(&batch, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// One column, one line per value.
    fn one(array: ArrayRef) -> String {
        encode(&csv(), vec![("c", array)])
    }

    fn strings(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(values.to_vec()))
    }

    #[test]
    fn integers() {
        assert_eq!(
            one(Arc::new(Int16Array::from(vec![i16::MIN, 0, i16::MAX]))),
            "-32768\n0\n32767\n"
        );
        assert_eq!(
            one(Arc::new(Int32Array::from(vec![i32::MIN, i32::MAX]))),
            "-2147483648\n2147483647\n"
        );
        assert_eq!(
            one(Arc::new(Int64Array::from(vec![i64::MIN, -1, i64::MAX]))),
            "-9223372036854775808\n-1\n9223372036854775807\n"
        );
    }

    #[test]
    fn decimals_keep_their_scale() {
        let dec = |values: Vec<i128>, p: u8, s: i8| -> ArrayRef {
            Arc::new(
                Decimal128Array::from(values)
                    .with_precision_and_scale(p, s)
                    .unwrap(),
            )
        };
        assert_eq!(
            one(dec(vec![1, -5, 100, 0, -100], 18, 2)),
            "0.01\n-0.05\n1.00\n0.00\n-1.00\n"
        );
        assert_eq!(
            one(dec(vec![i128::MAX, i128::MIN + 1], 38, 10)),
            "17014118346046923173168730371.5884105727\n\
             -17014118346046923173168730371.5884105727\n"
        );
        assert_eq!(
            one(dec(vec![i128::MAX, -7], 38, 0)),
            "170141183460469231731687303715884105727\n-7\n"
        );
    }

    #[test]
    fn floats() {
        assert_eq!(
            one(Arc::new(Float32Array::from(vec![
                0.1f32,
                1.1,
                f32::MAX,
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY
            ]))),
            "0.1\n1.1\n3.4028235e38\nNaN\nInfinity\n-Infinity\n"
        );
        assert_eq!(
            one(Arc::new(Float64Array::from(vec![
                0.1,
                -0.0,
                5e-324,
                2.2250738585072014e-308,
                1e300,
                f64::NAN,
                f64::NEG_INFINITY
            ]))),
            "0.1\n-0.0\n5e-324\n2.2250738585072014e-308\n1e300\nNaN\n-Infinity\n"
        );
    }

    #[test]
    fn booleans() {
        assert_eq!(
            one(Arc::new(BooleanArray::from(vec![
                Some(true),
                Some(false),
                None
            ]))),
            "true\nfalse\nNULL\n"
        );
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(
            one(Arc::new(Date32Array::from(vec![
                -40_587, 0, 11_016, -719_162, 2_932_896
            ]))),
            "1858-11-17\n1970-01-01\n2000-02-29\n0001-01-01\n9999-12-31\n"
        );
        // Below 1/10 000 s is dropped, not rounded: Firebird cannot hold it.
        assert_eq!(
            one(Arc::new(Time64MicrosecondArray::from(vec![
                0,
                45_296_789_999,
                86_399_999_900
            ]))),
            "00:00:00.0000\n12:34:56.7899\n23:59:59.9999\n"
        );
        assert_eq!(
            one(Arc::new(TimestampMicrosecondArray::from(vec![
                951_782_400_000_000,
                -62_135_596_800_000_000,
                253_402_300_799_999_900,
                -1
            ]))),
            "2000-02-29 00:00:00.0000\n0001-01-01 00:00:00.0000\n\
             9999-12-31 23:59:59.9999\n1969-12-31 23:59:59.9999\n"
        );
    }

    #[test]
    fn time_zones_are_written_as_utc() {
        let stamps = TimestampMicrosecondArray::from(vec![1_711_845_000_000_000]);
        assert_eq!(
            one(Arc::new(stamps.clone().with_timezone("UTC"))),
            "2024-03-31 00:30:00.0000+00:00\n"
        );
        // Arrow timestamps with a zone are UTC instants whatever the zone.
        assert_eq!(
            one(Arc::new(stamps.with_timezone("Europe/Paris"))),
            "2024-03-31 00:30:00.0000+00:00\n"
        );

        let times = || Arc::new(Time64MicrosecondArray::from(vec![37_800_000_000])) as ArrayRef;
        let marked = Field::new("t", DataType::Time64(TimeUnit::Microsecond), true).with_metadata(
            HashMap::from([(
                TYPE_METADATA_KEY.to_string(),
                TIME_WITH_TIME_ZONE.to_string(),
            )]),
        );
        assert_eq!(
            encode_fields(&csv(), vec![marked], vec![times()]),
            "10:30:00.0000+00:00\n"
        );
        let plain = Field::new("t", DataType::Time64(TimeUnit::Microsecond), true).with_metadata(
            HashMap::from([(TYPE_METADATA_KEY.to_string(), "TIME".to_string())]),
        );
        assert_eq!(
            encode_fields(&csv(), vec![plain], vec![times()]),
            "10:30:00.0000\n"
        );
    }

    #[test]
    fn arrays_are_json_arrays_in_one_quoted_field() {
        use arrow_array::builder::{ListBuilder, StringBuilder};
        let mut lists = ListBuilder::new(StringBuilder::new());
        lists.values().append_value("a,\"b\"");
        lists.values().append_value("é");
        lists.append(true);
        lists.append(false);
        lists.append(true);
        let text = one(Arc::new(lists.finish()));
        assert_eq!(text, "\"[\"\"a,\\\"\"b\\\"\"\"\",\"\"é\"\"]\"\nNULL\n[]\n");
    }

    #[test]
    fn quoting_follows_rfc_4180() {
        assert_eq!(
            encode(
                &csv(),
                vec![
                    ("a", strings(&[Some("a,b"), Some("say \"hi\""), Some("\"")])),
                    (
                        "b",
                        strings(&[Some("line\nbreak"), Some("cr\rhere"), Some("\r\n")])
                    ),
                    (
                        "c",
                        strings(&[Some(" lead"), Some("trail "), Some("a;b\tc")])
                    ),
                ]
            ),
            "\"a,b\",\"line\nbreak\", lead\n\
             \"say \"\"hi\"\"\",\"cr\rhere\",trail \n\
             \"\"\"\",\"\r\n\",a;b\tc\n"
        );
    }

    #[test]
    fn quotes_are_doubled_in_place_wherever_they_fall() {
        let values = [
            "\"\"\"",
            "\"a",
            "a\"",
            "a\"\"b",
            "\"a,\"b\"",
            ",",
            "x,\"\"\"y\"",
        ];
        for value in values {
            let expected = format!("\"{}\"\n", value.replace('"', "\"\""));
            assert_eq!(one(strings(&[Some(value)])), expected, "{value}");
        }
        // After other fields of the record, and after a record before it.
        assert_eq!(
            encode(
                &csv(),
                vec![
                    ("a", strings(&[Some("x"), Some("1")])),
                    ("b", strings(&[Some("p\"q"), Some("r,\"")]))
                ]
            ),
            "x,\"p\"\"q\"\n1,\"r,\"\"\"\n"
        );
    }

    #[test]
    fn a_null_text_that_breaks_records_is_refused() {
        for null in ["a,b", "\"", "x\ny", "\r"] {
            let options = CsvOptions {
                null: null.into(),
                ..CsvOptions::default()
            };
            assert!(options.validate().is_err(), "{null:?}");
        }
        let tsv = CsvOptions {
            delimiter: b'\t',
            null: "a,b".into(),
            ..CsvOptions::default()
        };
        assert_eq!(tsv.validate(), Ok(()));
        let tab_in_tsv = CsvOptions {
            null: "\t".into(),
            ..tsv
        };
        assert!(tab_in_tsv.validate().unwrap_err().contains("tab"));
        assert_eq!(CsvOptions::default().validate(), Ok(()));
    }

    #[test]
    fn null_and_empty_string_are_distinguishable() {
        assert_eq!(
            encode(
                &csv(),
                vec![
                    ("a", strings(&[Some(""), None, Some("x")])),
                    ("b", strings(&[None, Some(""), Some("")])),
                ]
            ),
            "\"\",\n,\"\"\nx,\"\"\n"
        );
        // One column: no record is a blank line, which readers skip.
        assert_eq!(
            one(strings(&[Some(""), None, Some(" "), Some("NULL")])),
            "\"\"\nNULL\n \n\"NULL\"\n"
        );
        assert_eq!(
            one(Arc::new(BinaryArray::from(vec![Some(&b""[..]), None]))),
            "\"\"\nNULL\n"
        );
        assert_eq!(
            one(Arc::new(Int32Array::from(vec![Some(1), None]))),
            "1\nNULL\n"
        );
        // An explicit null text holds for one column too.
        let marked = CsvFormat::new(CsvOptions {
            null: "\\N".into(),
            header: false,
            ..CsvOptions::default()
        });
        assert_eq!(
            encode(&marked, vec![("c", strings(&[None, Some("")]))]),
            "\\N\n\"\"\n"
        );
    }

    #[test]
    fn numbers_and_dates_are_quoted_when_the_delimiter_is_one_of_their_characters() {
        let columns = || {
            vec![
                (
                    "d",
                    Arc::new(
                        Decimal128Array::from(vec![Some(-12345)])
                            .with_precision_and_scale(9, 2)
                            .unwrap(),
                    ) as ArrayRef,
                ),
                (
                    "day",
                    Arc::new(Date32Array::from(vec![Some(0)])) as ArrayRef,
                ),
            ]
        };
        assert_eq!(encode(&csv(), columns()), "-123.45,1970-01-01\n");
        for (delimiter, expected) in [
            (b'.', "\"-123.45\".1970-01-01\n"),
            (b'-', "\"-123.45\"-\"1970-01-01\"\n"),
            (b'1', "\"-123.45\"1\"1970-01-01\"\n"),
        ] {
            let format = CsvFormat::new(CsvOptions {
                delimiter,
                header: false,
                ..Default::default()
            });
            assert_eq!(
                encode(&format, columns()),
                expected,
                "{}",
                delimiter as char
            );
        }
    }

    #[test]
    fn a_value_equal_to_the_null_text_is_quoted() {
        let format = CsvFormat::new(CsvOptions {
            null: "\\N".into(),
            header: false,
            ..Default::default()
        });
        assert_eq!(
            encode(
                &format,
                vec![
                    ("a", strings(&[Some("\\N"), None, Some("")])),
                    ("b", strings(&[Some("\\N\\N"), Some("N"), None])),
                ]
            ),
            "\"\\N\",\\N\\N\n\\N,N\n,\\N\n"
        );
        // Sole empty field: quoted so the line is not blank.
        assert_eq!(encode(&format, vec![("s", strings(&[Some("")]))]), "\"\"\n");
        // A NULL text that is a number makes that number quoted.
        let format = CsvFormat::new(CsvOptions {
            null: "0".into(),
            header: false,
            ..Default::default()
        });
        assert_eq!(
            encode(
                &format,
                vec![(
                    "i",
                    Arc::new(Int32Array::from(vec![Some(0), None, Some(10)])) as ArrayRef
                )]
            ),
            "\"0\"\n0\n10\n"
        );
    }

    #[test]
    fn tsv_quotes_tabs_not_commas() {
        let format = CsvFormat::tsv(CsvOptions::default());
        assert_eq!(format.extension(), "tsv");
        assert_eq!(csv().extension(), "csv");
        assert_eq!(
            encode(
                &format,
                vec![
                    ("a", strings(&[Some("a\tb"), Some("x,y")])),
                    ("b", strings(&[Some("1"), None])),
                ]
            ),
            // The default: a header line of the column names.
            "a\tb\n\"a\tb\"\t1\nx,y\t\n"
        );
        // Options spelled out with a tab delimiter are the same format.
        let spelled = CsvFormat::new(CsvOptions {
            delimiter: b'\t',
            header: false,
            ..Default::default()
        });
        assert_eq!(spelled.extension(), "tsv");
    }

    #[test]
    fn crlf_terminates_records() {
        let format = CsvFormat::new(CsvOptions {
            crlf: true,
            header: true,
            ..Default::default()
        });
        assert_eq!(
            encode(
                &format,
                vec![
                    (
                        "n",
                        Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef
                    ),
                    ("t", strings(&[Some("a\r\nb"), Some("c")])),
                ]
            ),
            "n,t\r\n1,\"a\r\nb\"\r\n,c\r\n"
        );
    }

    #[test]
    fn header_quotes_odd_names() {
        let format = CsvFormat::new(CsvOptions {
            header: true,
            ..Default::default()
        });
        let schema = Schema::new(vec![
            Field::new("ID", DataType::Int32, false),
            Field::new("My \"odd\" col", DataType::Utf8, true),
            Field::new("a,b", DataType::Utf8, true),
        ]);
        assert_eq!(
            format.header(&schema),
            b"ID,\"My \"\"odd\"\" col\",\"a,b\"\n"
        );
        // Without --header there is no header at all.
        assert_eq!(csv().header(&schema), b"");
    }

    #[test]
    fn binary_as_hex_or_base64() {
        let base64 = CsvFormat::new(CsvOptions {
            binary: BinaryEncoding::Base64,
            header: false,
            ..Default::default()
        });
        let columns = || -> Vec<(&str, ArrayRef)> {
            vec![
                (
                    "b",
                    Arc::new(BinaryArray::from(vec![
                        Some(&[0u8, 0xff, 0x10][..]),
                        Some(b""),
                        None,
                    ])),
                ),
                (
                    "l",
                    Arc::new(LargeBinaryArray::from(vec![
                        Some(&b"\xfb\xff"[..]),
                        Some(b"ab"),
                        Some(b"abcd"),
                    ])),
                ),
                (
                    "f",
                    Arc::new(
                        FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                            vec![Some([0xde, 0xad]), Some([0, 0]), None].into_iter(),
                            2,
                        )
                        .unwrap(),
                    ),
                ),
            ]
        };
        assert_eq!(
            encode(&csv(), columns()),
            "00ff10,fbff,dead\n\"\",6162,0000\n,61626364,\n"
        );
        // `+` and `/` need no quotes; `=` padding is kept.
        assert_eq!(
            encode(&base64, columns()),
            "AP8Q,+/8=,3q0=\n\"\",YWI=,AAA=\n,YWJjZA==,\n"
        );
    }

    #[test]
    fn large_utf8_is_text() {
        assert_eq!(
            one(Arc::new(LargeStringArray::from(vec![
                Some("日本語"),
                Some("a\"b"),
                None
            ]))),
            "日本語\n\"a\"\"b\"\nNULL\n"
        );
    }

    #[test]
    fn batches_of_a_unit_are_independent_and_appended() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = |i: i64, s: &str| {
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(vec![i])) as ArrayRef,
                    Arc::new(StringArray::from(vec![s])),
                ],
            )
            .unwrap()
        };
        let format = csv();
        let mut encoder = format.encoder(schema.clone());
        let mut out = b"kept:".to_vec();
        encoder.encode(&batch(1, "a,b"), &mut out).unwrap();
        encoder.encode(&batch(2, "x"), &mut out).unwrap();
        let empty = RecordBatch::new_empty(schema.clone());
        encoder.encode(&empty, &mut out).unwrap();
        assert_eq!(out, b"kept:1,\"a,b\"\n2,x\n");
    }

    #[test]
    fn unsupported_types_name_the_column() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("ok", DataType::Int32, true),
            Field::new("F16", DataType::Float16, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int32Array::from(vec![1])) as ArrayRef,
                Arc::new(arrow_array::Float16Array::from(vec![None])),
            ],
        )
        .unwrap();
        let mut out = Vec::new();
        let err = csv().encoder(schema).encode(&batch, &mut out).unwrap_err();
        assert!(
            matches!(&err, FormatError::UnsupportedType { column, data_type }
                if column == "F16" && *data_type == DataType::Float16),
            "{err:?}"
        );
        assert!(err.to_string().contains("column F16"), "{err}");
        assert!(out.is_empty(), "nothing of a refused batch is written");

        let nanos = Arc::new(Schema::new(vec![Field::new(
            "t",
            DataType::Time64(TimeUnit::Nanosecond),
            true,
        )]));
        let batch = RecordBatch::try_new(
            nanos.clone(),
            vec![Arc::new(arrow_array::Time64NanosecondArray::from(vec![1])) as ArrayRef],
        )
        .unwrap();
        assert!(matches!(
            csv().encoder(nanos).encode(&batch, &mut Vec::new()),
            Err(FormatError::UnsupportedType { .. })
        ));
    }

    #[test]
    fn a_batch_with_other_columns_is_refused() {
        let two = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Int32, true),
        ]));
        let one = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        let batch =
            RecordBatch::try_new(one, vec![Arc::new(Int32Array::from(vec![1])) as ArrayRef])
                .unwrap();
        assert!(matches!(
            csv().encoder(two).encode(&batch, &mut Vec::new()),
            Err(FormatError::SchemaMismatch {
                expected: 2,
                found: 1
            })
        ));
    }

    #[test]
    fn formats_and_encoders_cross_threads() {
        fn sendable<T: Send>(_: &T) {}
        let format: Arc<dyn ByteFormat> = Arc::new(csv());
        let encoder = format.encoder(Arc::new(Schema::empty()));
        sendable(&encoder);
        std::thread::spawn(move || format.extension().to_string())
            .join()
            .unwrap();
    }
}
