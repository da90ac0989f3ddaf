//! Bound parameters, where simple: one row of values for the `?`s of a
//! SELECT, written into its text as SQL literals.
//!
//! The facade reads SQL text: a query is prepared by every worker and, to
//! be split, rewritten around its driving table, so values cannot travel
//! as Firebird parameters. So each value is written as SQL that the engine
//! reads back as exactly that value, or refused:
//!
//! - the markers are the `?`s Firebird's own lexer finds
//!   ([`fbunload::parameter_markers`]), and each value is written with a
//!   space on either side, so that it cannot join the text around it into
//!   another token (`A -?` bound to `-1` must not become the comment
//!   `--1`);
//! - integers and decimals as numbers, text with its quotes doubled,
//!   booleans, NULL (a null of any type, Arrow's null type included);
//! - a float as its binary value, `(CAST(m AS DOUBLE PRECISION) / 2^k ...)`
//!   with integers `m` and powers of two, every step exact: Firebird reads
//!   a decimal literal by multiplying and dividing by powers of ten, which
//!   is not exact in general and turns a subnormal (`1e-310`) into 0;
//!   NaN and infinities, which Firebird does not hold, are refused;
//! - dates, times and timestamps (no time zone) as `DATE '...'`, `TIME
//!   '...'`, `TIMESTAMP '...'`, in Firebird's 100 µs: a value with digits
//!   below them is refused rather than rounded, since the engine would
//!   then compare or return another instant; so is a year outside 1-9999.
//!
//! The text is then checked as any statement is (one SELECT). Several
//! bound rows are inlined one by one, each a read of its own
//! ([`crate::read::execute_rows`]); other types are refused.

use adbc_core::error::{Error, Result, Status};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use chrono::{Datelike, NaiveDateTime, NaiveTime, Timelike};

/// `sql` with its `?` markers replaced, in order, by the values of the
/// one row of `params`.
pub fn inline(sql: &str, params: &RecordBatch) -> Result<String> {
    if params.num_rows() != 1 {
        return Err(invalid(format!(
            "bind one row of parameters ({} given): a statement is one read",
            params.num_rows()
        )));
    }
    let literals = (0..params.num_columns())
        .map(|i| literal(params.column(i).as_ref(), params.schema().field(i).name()))
        .collect::<Result<Vec<_>>>()?;
    let places =
        fbunload::parameter_markers(sql).map_err(|e| invalid(format!("the query: {e}")))?;
    if places.len() != literals.len() {
        return Err(invalid(format!(
            "the query has {} parameter markers (?) and {} values are bound",
            places.len(),
            literals.len()
        )));
    }
    let mut text = String::with_capacity(sql.len() + 16 * literals.len());
    let mut from = 0;
    for (at, value) in places.iter().zip(&literals) {
        text.push_str(&sql[from..*at]);
        text.push(' ');
        text.push_str(value);
        text.push(' ');
        from = at + 1;
    }
    text.push_str(&sql[from..]);
    Ok(text)
}

/// Refuses `sql` if it has markers, when no values are bound: Firebird's
/// own error for it names neither the markers nor the binding.
pub fn none_bound(sql: &str) -> Result<()> {
    let markers = fbunload::parameter_markers(sql).unwrap_or_default();
    if markers.is_empty() {
        return Ok(());
    }
    Err(invalid(format!(
        "the query has {} parameter markers (?) and no values are bound; bind one row of \
         values (cursor.execute(sql, parameters))",
        markers.len()
    )))
}

/// The SQL of row 0 of `column`.
fn literal(column: &dyn Array, name: &str) -> Result<String> {
    // Arrow's null type has no validity buffer: its nulls are logical.
    if column.logical_nulls().is_some_and(|nulls| nulls.is_null(0)) {
        return Ok("NULL".into());
    }
    Ok(match column.data_type() {
        DataType::Int8 => column.as_primitive::<Int8Type>().value(0).to_string(),
        DataType::Int16 => column.as_primitive::<Int16Type>().value(0).to_string(),
        DataType::Int32 => column.as_primitive::<Int32Type>().value(0).to_string(),
        DataType::Int64 => column.as_primitive::<Int64Type>().value(0).to_string(),
        DataType::UInt8 => column.as_primitive::<UInt8Type>().value(0).to_string(),
        DataType::UInt16 => column.as_primitive::<UInt16Type>().value(0).to_string(),
        DataType::UInt32 => column.as_primitive::<UInt32Type>().value(0).to_string(),
        DataType::UInt64 => column.as_primitive::<UInt64Type>().value(0).to_string(),
        DataType::Float32 => {
            let value = column.as_primitive::<Float32Type>().value(0);
            float(f64::from(value), name)?
        }
        DataType::Float64 => float(column.as_primitive::<Float64Type>().value(0), name)?,
        DataType::Decimal128(_, _) => {
            let decimals = column.as_primitive::<Decimal128Type>();
            decimals.value_as_string(0)
        }
        DataType::Boolean => {
            let value = column.as_boolean().value(0);
            (if value { "TRUE" } else { "FALSE" }).into()
        }
        DataType::Utf8 => text(column.as_string::<i32>().value(0)),
        DataType::LargeUtf8 => text(column.as_string::<i64>().value(0)),
        DataType::Utf8View => text(column.as_string_view().value(0)),
        DataType::Date32 => {
            let date = column.as_primitive::<Date32Type>().value_as_date(0);
            let date = date.ok_or_else(|| unbindable(name, "date"))?;
            format!(
                "DATE '{}'",
                in_firebirds_years(date, name)?.format("%Y-%m-%d")
            )
        }
        DataType::Time32(_) | DataType::Time64(_) => {
            let time = match column.data_type() {
                DataType::Time32(TimeUnit::Second) => {
                    column.as_primitive::<Time32SecondType>().value_as_time(0)
                }
                DataType::Time32(_) => column
                    .as_primitive::<Time32MillisecondType>()
                    .value_as_time(0),
                DataType::Time64(TimeUnit::Microsecond) => column
                    .as_primitive::<Time64MicrosecondType>()
                    .value_as_time(0),
                _ => column
                    .as_primitive::<Time64NanosecondType>()
                    .value_as_time(0),
            }
            .ok_or_else(|| unbindable(name, "time"))?;
            format!("TIME '{}'", time_of_day(time, &time, name)?)
        }
        DataType::Timestamp(unit, None) => {
            let at = match unit {
                TimeUnit::Second => column
                    .as_primitive::<TimestampSecondType>()
                    .value_as_datetime(0),
                TimeUnit::Millisecond => column
                    .as_primitive::<TimestampMillisecondType>()
                    .value_as_datetime(0),
                TimeUnit::Microsecond => column
                    .as_primitive::<TimestampMicrosecondType>()
                    .value_as_datetime(0),
                TimeUnit::Nanosecond => column
                    .as_primitive::<TimestampNanosecondType>()
                    .value_as_datetime(0),
            }
            .ok_or_else(|| unbindable(name, "timestamp"))?;
            timestamp(at, name)?
        }
        other => return Err(unbindable(name, &other.to_string())),
    })
}

/// A float as SQL that the engine computes to exactly it (module docs):
/// its integer mantissa, multiplied or divided by powers of two of at most
/// 2^62 each, every step's result a double, so none rounds.
fn float(value: f64, name: &str) -> Result<String> {
    if !value.is_finite() {
        return Err(invalid(format!(
            "parameter {name}: {value} cannot be bound: Firebird's DOUBLE PRECISION holds \
             no NaN or infinity"
        )));
    }
    let bits = value.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    // value = mantissa * 2^power
    let (mut mantissa, mut power) = match exponent {
        0 => (fraction, -1074),
        _ => (fraction | 1 << 52, exponent - 1075),
    };
    if mantissa == 0 {
        power = 0;
    } else {
        let zeros = mantissa.trailing_zeros();
        mantissa >>= zeros;
        power += zeros as i32;
    }
    let mut sql = format!("CAST({mantissa} AS DOUBLE PRECISION)");
    while power != 0 {
        let step = power.clamp(-62, 62);
        let operator = if step > 0 { '*' } else { '/' };
        sql.push_str(&format!(" {operator} {}", 1u64 << step.unsigned_abs()));
        power -= step;
    }
    let sign = if value.is_sign_negative() { "-" } else { "" };
    Ok(format!("({sign}{sql})"))
}

/// `DATE`, `TIME` and `TIMESTAMP` hold years 1 to 9999.
fn in_firebirds_years<T: Datelike>(date: T, name: &str) -> Result<T> {
    if !(1..=9999).contains(&date.year()) {
        return Err(invalid(format!(
            "parameter {name}: year {} cannot be bound: Firebird's dates run from year 1 to \
             9999",
            date.year()
        )));
    }
    Ok(date)
}

/// `HH:MM:SS.ffff`: Firebird's four decimals of a second, refused if the
/// value has more (module docs); `shown` is the value, for the message.
fn time_of_day(time: NaiveTime, shown: &dyn std::fmt::Display, name: &str) -> Result<String> {
    let nanos = time.nanosecond();
    if !nanos.is_multiple_of(100_000) {
        return Err(invalid(format!(
            "parameter {name}: {shown} cannot be bound: Firebird keeps time to 100 µs (four \
             decimals of a second), and rounding it would compare or return another instant; \
             round the value to 100 µs first"
        )));
    }
    Ok(format!(
        "{}.{:04}",
        time.format("%H:%M:%S"),
        nanos / 100_000
    ))
}

fn timestamp(at: NaiveDateTime, name: &str) -> Result<String> {
    let at = in_firebirds_years(at, name)?;
    let time = time_of_day(at.time(), &at, name)?;
    Ok(format!("TIMESTAMP '{} {time}'", at.format("%Y-%m-%d")))
}

fn text(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

fn unbindable(name: &str, what: &str) -> Error {
    Error::with_message_and_status(
        format!(
            "parameter {name}: {what} values cannot be bound; bind integers, decimals, floats, \
             text, booleans, dates, times or timestamps (no time zone), or NULL"
        ),
        Status::NotImplemented,
    )
}

fn invalid(message: String) -> Error {
    Error::with_message_and_status(message, Status::InvalidArguments)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, BooleanArray, Float64Array, Int64Array, NullArray, StringArray,
        TimestampMicrosecondArray, TimestampNanosecondArray,
    };

    use super::*;

    fn row(values: Vec<ArrayRef>) -> RecordBatch {
        let named = values
            .into_iter()
            .enumerate()
            .map(|(i, a)| (format!("p{i}"), a));
        RecordBatch::try_from_iter(named).unwrap()
    }

    fn one(value: ArrayRef) -> Result<String> {
        inline("SELECT ? FROM T", &row(vec![value]))
    }

    #[test]
    fn markers_outside_text_and_comments_take_the_values() {
        let params = row(vec![
            Arc::new(Int64Array::from(vec![7])),
            Arc::new(StringArray::from(vec!["O'Brien"])),
            Arc::new(Float64Array::from(vec![0.5])),
            Arc::new(BooleanArray::from(vec![None])),
        ]);
        let sql = "SELECT '?' AS \"?\" FROM T -- ?\n WHERE A = ? /* ? */ AND B = ? AND C < ? \
                   AND D IS NOT DISTINCT FROM ?";
        assert_eq!(
            inline(sql, &params).unwrap(),
            "SELECT '?' AS \"?\" FROM T -- ?\n WHERE A =  7  /* ? */ AND B =  'O''Brien'  AND \
             C <  (CAST(1 AS DOUBLE PRECISION) / 2)  AND D IS NOT DISTINCT FROM  NULL "
        );
    }

    #[test]
    fn markers_are_found_as_firebirds_lexer_finds_them() {
        let two = row(vec![
            Arc::new(Int64Array::from(vec![1])),
            Arc::new(Int64Array::from(vec![-1])),
        ]);
        // The comment ends at the carriage return; `it's` is inside q'{}'.
        let sql = "SELECT q'{it's}' FROM T -- a comment\r WHERE A = ? AND B > 0 -?";
        assert_eq!(
            inline(sql, &two).unwrap(),
            "SELECT q'{it's}' FROM T -- a comment\r WHERE A =  1  AND B > 0 - -1 "
        );
    }

    #[test]
    fn counts_must_agree_and_one_row_is_bound() {
        let one = row(vec![Arc::new(Int64Array::from(vec![1]))]);
        assert!(inline("SELECT ? , ? FROM T", &one).is_err());
        let two = row(vec![Arc::new(Int64Array::from(vec![1, 2]))]);
        assert!(inline("SELECT ? FROM T", &two).is_err());
    }

    #[test]
    fn the_null_type_is_null() {
        assert_eq!(
            one(Arc::new(NullArray::new(1))).unwrap(),
            "SELECT  NULL  FROM T"
        );
    }

    #[test]
    fn floats_are_written_as_their_binary_value() {
        let float = |v: f64| one(Arc::new(Float64Array::from(vec![v])));
        assert_eq!(
            float(0.1).unwrap(),
            "SELECT  (CAST(3602879701896397 AS DOUBLE PRECISION) / 36028797018963968)  FROM T"
        );
        assert_eq!(
            float(-0.0).unwrap(),
            "SELECT  (-CAST(0 AS DOUBLE PRECISION))  FROM T"
        );
        assert_eq!(
            float(f64::from_bits(1)).unwrap(),
            format!(
                "SELECT  (CAST(1 AS DOUBLE PRECISION){})  FROM T",
                " / 4611686018427387904".repeat(17) + " / 1048576"
            )
        );
        for refused in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let err = float(refused).unwrap_err();
            assert!(
                err.message.contains("no NaN or infinity"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn timestamps_keep_firebirds_four_decimals_or_are_refused() {
        // 2024-01-01 00:00:00.1234
        let micros = 1_704_067_200_123_400;
        assert_eq!(
            one(Arc::new(TimestampMicrosecondArray::from(vec![micros]))).unwrap(),
            "SELECT  TIMESTAMP '2024-01-01 00:00:00.1234'  FROM T"
        );
        let nanos = TimestampNanosecondArray::from(vec![micros * 1000 + 1]);
        let err = one(Arc::new(nanos)).unwrap_err();
        assert!(err.message.contains("100 µs"), "{}", err.message);
        assert!(
            err.message.contains("00:00:00.123400001"),
            "{}",
            err.message
        );
        // Year 0, which Firebird has not.
        let year_zero = TimestampMicrosecondArray::from(vec![-62_167_219_200_000_000]);
        let err = one(Arc::new(year_zero)).unwrap_err();
        assert!(err.message.contains("year 0"), "{}", err.message);
    }
}
