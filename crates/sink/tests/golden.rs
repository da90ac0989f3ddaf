//! Golden files: one batch with every type the decoder produces, encoded
//! with default and with non-default options. `UPDATE_GOLDEN=1 cargo test`
//! rewrites the files; review the diff before committing it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::*;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use fbunload_sink::csv::{BinaryEncoding, CsvFormat, CsvOptions};
use fbunload_sink::StreamFormat;

fn all_types() -> RecordBatch {
    let tz_marked = |f: Field| {
        f.with_metadata(HashMap::from([(
            "fbunload.type".to_string(),
            "TIME WITH TIME ZONE".to_string(),
        )]))
    };
    let fields = vec![
        Field::new("SMALLINT", DataType::Int16, true),
        Field::new("INTEGER", DataType::Int32, true),
        Field::new("BIGINT", DataType::Int64, true),
        Field::new("INT128", DataType::Decimal128(38, 0), true),
        Field::new("NUMERIC_18_4", DataType::Decimal128(19, 4), true),
        Field::new("FLOAT", DataType::Float32, true),
        Field::new("DOUBLE", DataType::Float64, true),
        Field::new("DATE", DataType::Date32, true),
        Field::new("TIME", DataType::Time64(TimeUnit::Microsecond), true),
        Field::new("TIMESTAMP", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        tz_marked(Field::new("TIME_TZ", DataType::Time64(TimeUnit::Microsecond), true)),
        Field::new("TIMESTAMP_TZ", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true),
        Field::new("BOOLEAN", DataType::Boolean, true),
        Field::new("My \"odd\" name", DataType::Utf8, true),
        Field::new("BINARY", DataType::Binary, true),
    ];
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int16Array::from(vec![Some(-32768), Some(32767), None])),
        Arc::new(Int32Array::from(vec![Some(i32::MIN), Some(0), None])),
        Arc::new(Int64Array::from(vec![Some(i64::MIN), Some(i64::MAX), None])),
        Arc::new(
            Decimal128Array::from(vec![Some(i128::MAX), Some(-1), None])
                .with_precision_and_scale(38, 0)
                .unwrap(),
        ),
        Arc::new(
            Decimal128Array::from(vec![Some(-9_223_372_036_854_775_808), Some(5), None])
                .with_precision_and_scale(19, 4)
                .unwrap(),
        ),
        Arc::new(Float32Array::from(vec![Some(1.1), Some(f32::MAX), None])),
        Arc::new(Float64Array::from(vec![Some(0.1), Some(-0.0), Some(f64::NAN)])),
        Arc::new(Date32Array::from(vec![Some(-719_162), Some(2_932_896), None])),
        Arc::new(Time64MicrosecondArray::from(vec![Some(0), Some(86_399_999_900), None])),
        Arc::new(TimestampMicrosecondArray::from(vec![
            Some(951_782_400_000_000),
            Some(-62_135_596_800_000_000),
            None,
        ])),
        Arc::new(Time64MicrosecondArray::from(vec![Some(37_800_000_000), None, None])),
        Arc::new(
            TimestampMicrosecondArray::from(vec![Some(1_711_845_000_000_000), None, None])
                .with_timezone("UTC"),
        ),
        Arc::new(BooleanArray::from(vec![Some(true), Some(false), None])),
        Arc::new(StringArray::from(vec![
            Some("comma, \"quote\"\r\nand CRLF"),
            Some(""),
            Some("日本語 😀 \\N"),
        ])),
        Arc::new(BinaryArray::from(vec![Some(&[0u8, 255, 16][..]), Some(b""), None])),
    ];
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn check(format: &CsvFormat, golden: &str) {
    let batch = all_types();
    let mut out = format.header(&batch.schema());
    format.encoder(batch.schema()).encode(&batch, &mut out).unwrap();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(golden);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &out).unwrap();
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        out == expected,
        "{golden} differs.\n--- expected\n{}\n--- got\n{}",
        String::from_utf8_lossy(&expected),
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn csv_with_defaults() {
    check(&CsvFormat::new(CsvOptions::default()), "all_types.csv");
}

#[test]
fn tsv_with_header_null_marker_and_base64() {
    let format = CsvFormat::tsv(CsvOptions {
        header: true,
        null: "\\N".into(),
        binary: BinaryEncoding::Base64,
        ..Default::default()
    });
    check(&format, "all_types_header_null.tsv");
}
