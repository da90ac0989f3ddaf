//! What formatting costs, per value and per type: one-column Arrow batches
//! of 8,192 rows, encoded to CSV over and over, timed. No Firebird here:
//! this isolates fbunload's own number, date and text formatting from the
//! engine's fetching (see benches/fetch-and-buffers.sh for the whole run).
//!
//!     cargo run --release -p fbunload-format --example encode_cost [MILLION_VALUES]

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use fbunload_format::csv::{CsvFormat, CsvOptions};
use fbunload_format::ByteFormat;

const ROWS: usize = 8192;

fn main() {
    let millions: usize = std::env::args()
        .nth(1)
        .map_or(4, |m| m.parse().expect("MILLION_VALUES"));
    let batches = millions * 1_000_000 / ROWS;
    // Values spread like real data: mixed magnitudes and signs.
    let n = |i: usize| (i as i64).wrapping_mul(7919) % 2_000_003 - 1_000_000;
    let columns: Vec<(&str, DataType, ArrayRef)> = vec![
        (
            "INTEGER",
            DataType::Int32,
            Arc::new(Int32Array::from_iter_values((0..ROWS).map(|i| n(i) as i32))),
        ),
        (
            "BIGINT",
            DataType::Int64,
            Arc::new(Int64Array::from_iter_values(
                (0..ROWS).map(|i| n(i) * 1_000_003),
            )),
        ),
        (
            "NUMERIC(18,2)",
            DataType::Decimal128(18, 2),
            Arc::new(
                Decimal128Array::from_iter_values((0..ROWS).map(|i| n(i) as i128 * 1013))
                    .with_precision_and_scale(18, 2)
                    .unwrap(),
            ),
        ),
        (
            "DOUBLE",
            DataType::Float64,
            Arc::new(Float64Array::from_iter_values(
                (0..ROWS).map(|i| n(i) as f64 / 7.0),
            )),
        ),
        (
            "DATE",
            DataType::Date32,
            Arc::new(Date32Array::from_iter_values(
                (0..ROWS).map(|i| (n(i) % 40_000) as i32),
            )),
        ),
        (
            "TIMESTAMP",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            Arc::new(TimestampMicrosecondArray::from_iter_values(
                (0..ROWS).map(|i| n(i) * 3_600_000_123),
            )),
        ),
        (
            "CHAR(24) text",
            DataType::Utf8,
            Arc::new(StringArray::from_iter_values(
                (0..ROWS).map(|i| format!("{:024}", n(i).unsigned_abs())),
            )),
        ),
    ];
    let format = CsvFormat::new(CsvOptions::default());
    println!("{millions} million values per type, CSV, one thread");
    println!(
        "{:<15} {:>9} {:>11} {:>9}",
        "type", "ns/value", "values/s", "out MB/s"
    );
    for (name, data_type, array) in columns {
        let schema = Arc::new(Schema::new(vec![Field::new("C", data_type, true)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![array]).unwrap();
        let mut encoder = format.encoder(schema);
        let mut out = Vec::with_capacity(1 << 20);
        let mut bytes = 0usize;
        let started = Instant::now();
        for _ in 0..batches {
            out.clear();
            encoder.encode(&batch, &mut out).unwrap();
            bytes += out.len();
        }
        let secs = started.elapsed().as_secs_f64();
        let values = (batches * ROWS) as f64;
        println!(
            "{name:<15} {:>9.1} {:>11.0} {:>9.0}",
            secs * 1e9 / values,
            values / secs,
            bytes as f64 / 1e6 / secs
        );
    }
}
