//! Golden files: one batch with every type the CSV format supports, encoded
//! with the default options and as TSV with a header, `\N` for NULL and
//! base64. They pin the byte-exact output other tools will parse, so any
//! change to it shows up as a reviewed diff.
//!
//! `UPDATE_GOLDEN=1 cargo test -p fbunload-format --test golden` rewrites the
//! files; check the diff by hand before committing it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::*;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use fbunload_format::csv::{BinaryEncoding, CsvFormat, CsvOptions};
use fbunload_format::ByteFormat;

/// Row 0: typical or minimal values, row 1: maximal values, row 2: NULLs
/// (except where a column has no NULL, to exercise NaN and inf), row 3:
/// small and odd values.
fn all_types() -> RecordBatch {
    let time_tz = Field::new("TIME_TZ", DataType::Time64(TimeUnit::Microsecond), true)
        .with_metadata(HashMap::from([(
            "fbunload.type".to_string(),
            "TIME WITH TIME ZONE".to_string(),
        )]));
    let fields = vec![
        Field::new("SMALLINT", DataType::Int16, true),
        Field::new("INTEGER", DataType::Int32, true),
        Field::new("BIGINT", DataType::Int64, true),
        Field::new("INT128", DataType::Decimal128(38, 0), true),
        Field::new("NUMERIC_18_4", DataType::Decimal128(19, 4), true),
        Field::new("NUMERIC_38_10", DataType::Decimal128(38, 10), true),
        Field::new("FLOAT", DataType::Float32, true),
        Field::new("DOUBLE", DataType::Float64, false),
        Field::new("DATE", DataType::Date32, true),
        Field::new("TIME", DataType::Time64(TimeUnit::Microsecond), true),
        Field::new(
            "TIMESTAMP",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            true,
        ),
        time_tz,
        Field::new(
            "TIMESTAMP_TZ",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("BOOLEAN", DataType::Boolean, true),
        Field::new("My \"odd\" name", DataType::Utf8, true),
        Field::new("BLOB_TEXT", DataType::LargeUtf8, true),
        Field::new("OCTETS", DataType::Binary, true),
        Field::new("BLOB", DataType::LargeBinary, true),
        Field::new("CHAR_OCTETS_3", DataType::FixedSizeBinary(3), true),
    ];
    let decimal = |values: Vec<Option<i128>>, p: u8, s: i8| -> ArrayRef {
        Arc::new(
            Decimal128Array::from(values)
                .with_precision_and_scale(p, s)
                .unwrap(),
        )
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int16Array::from(vec![
            Some(i16::MIN),
            Some(i16::MAX),
            None,
            Some(0),
        ])),
        Arc::new(Int32Array::from(vec![
            Some(i32::MIN),
            Some(i32::MAX),
            None,
            Some(-1),
        ])),
        Arc::new(Int64Array::from(vec![
            Some(i64::MIN),
            Some(i64::MAX),
            None,
            Some(42),
        ])),
        decimal(
            vec![Some(i128::MIN), Some(i128::MAX), None, Some(-1)],
            38,
            0,
        ),
        decimal(
            vec![
                Some(i64::MIN as i128),
                Some(i64::MAX as i128),
                None,
                Some(5),
            ],
            19,
            4,
        ),
        decimal(vec![Some(-1), Some(i128::MAX), None, Some(0)], 38, 10),
        Arc::new(Float32Array::from(vec![
            Some(0.1),
            Some(f32::MAX),
            None,
            Some(f32::NEG_INFINITY),
        ])),
        Arc::new(Float64Array::from(vec![
            0.1,
            5e-324,
            f64::NAN,
            f64::INFINITY,
        ])),
        Arc::new(Date32Array::from(vec![
            Some(-719_162),
            Some(2_932_896),
            None,
            Some(-40_587),
        ])),
        Arc::new(Time64MicrosecondArray::from(vec![
            Some(0),
            Some(86_399_999_900),
            None,
            Some(100),
        ])),
        Arc::new(TimestampMicrosecondArray::from(vec![
            Some(-62_135_596_800_000_000),
            Some(253_402_300_799_999_900),
            None,
            Some(951_782_400_000_000),
        ])),
        Arc::new(Time64MicrosecondArray::from(vec![
            Some(37_800_000_000),
            Some(86_399_999_900),
            None,
            Some(0),
        ])),
        Arc::new(
            TimestampMicrosecondArray::from(vec![
                Some(1_711_845_000_000_000),
                Some(253_402_300_799_999_900),
                None,
                Some(0),
            ])
            .with_timezone("UTC"),
        ),
        Arc::new(BooleanArray::from(vec![
            Some(true),
            Some(false),
            None,
            Some(true),
        ])),
        Arc::new(StringArray::from(vec![
            Some("comma, \"quote\"\r\nand CRLF"),
            Some(""),
            None,
            Some(" lead\ttab, trail "),
        ])),
        Arc::new(LargeStringArray::from(vec![
            Some("日本語 😀"),
            Some("\\N"),
            None,
            Some("\""),
        ])),
        Arc::new(BinaryArray::from(vec![
            Some(&[0u8, 255, 16][..]),
            Some(b""),
            None,
            Some(b"\xfb\xff"),
        ])),
        Arc::new(LargeBinaryArray::from(vec![
            Some(&b"abcd"[..]),
            Some(b"\x00"),
            None,
            Some(b"ab"),
        ])),
        Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                vec![
                    Some([0xde, 0xad, 0xbe]),
                    Some([0, 0, 0]),
                    None,
                    Some([b' ', b' ', b' ']),
                ]
                .into_iter(),
                3,
            )
            .unwrap(),
        ),
    ];
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// Encodes the batch as a table file would hold it: header, then two
/// units (one encoder each) to show that units simply concatenate.
fn encode(format: &CsvFormat) -> Vec<u8> {
    let batch = all_types();
    let schema = batch.schema();
    let mut out = format.header(&schema);
    format
        .encoder(schema.clone())
        .encode(&batch.slice(0, 2), &mut out)
        .unwrap();
    format
        .encoder(schema)
        .encode(&batch.slice(2, 2), &mut out)
        .unwrap();
    out
}

fn check(format: &CsvFormat, golden: &str) {
    let got = encode(format);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(golden);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if got != expected {
        panic!(
            "{} differs from the encoder's output\n{}\n\
             (rerun with UPDATE_GOLDEN=1 to accept the new output, then review `git diff`)",
            path.display(),
            first_difference(&expected, &got)
        );
    }
}

/// The first differing line of each, with invisible bytes made visible,
/// instead of two multi-kilobyte strings to compare by eye.
fn first_difference(expected: &[u8], got: &[u8]) -> String {
    // Split after '\n' only, so a CR inside a quoted field stays visible.
    let lines = |b: &[u8]| -> Vec<String> {
        b.split_inclusive(|c| *c == b'\n')
            .map(|l| String::from_utf8_lossy(l).escape_debug().to_string())
            .collect()
    };
    let (expected, got) = (lines(expected), lines(got));
    let n = expected
        .iter()
        .zip(&got)
        .take_while(|(e, g)| e == g)
        .count();
    format!(
        "first difference at line {}:\n- expected: {}\n+ got:      {}",
        n + 1,
        expected.get(n).map_or("<end of file>", String::as_str),
        got.get(n).map_or("<end of file>", String::as_str),
    )
}

#[test]
fn csv_with_defaults() {
    check(&CsvFormat::new(CsvOptions::default()), "all_types.csv");
}

#[test]
fn tsv_with_null_marker_and_base64() {
    let format = CsvFormat::tsv(CsvOptions {
        null: "\\N".into(),
        binary: BinaryEncoding::Base64,
        ..Default::default()
    });
    check(&format, "all_types_header_null.tsv");
}

#[test]
fn first_difference_points_at_the_line() {
    let message = first_difference(b"a\nb\r\nc\n", b"a\nb\nc\n");
    assert!(message.contains("line 2"), "{message}");
    assert!(message.contains(r"b\r\n"), "{message}");
}
