//! Bound parameters, where simple: one row of values for the `?`s of a
//! SELECT, written into its text as SQL literals.
//!
//! The facade reads SQL text: a query is prepared by every worker and, to
//! be split, rewritten around its driving table, so values cannot travel
//! as Firebird parameters. A literal is exact for the types a filter
//! takes (integers, decimals, floats written to round-trip, text with its
//! quotes doubled, booleans, dates and timestamps), and the text is then
//! checked as any statement is (one SELECT). Several rows (`executemany`)
//! and other types are refused.

use adbc_core::error::{Error, Result, Status};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType, UInt16Type, UInt32Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, TimeUnit};

/// `sql` with its `?`s (outside strings, quoted names and comments)
/// replaced, in order, by the values of the one row of `params`.
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
    let places = placeholders(sql);
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
        text.push_str(value);
        from = at + 1;
    }
    text.push_str(&sql[from..]);
    Ok(text)
}

/// Byte offsets of the `?`s of `sql` that are parameter markers.
fn placeholders(sql: &str) -> Vec<usize> {
    let bytes = sql.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == quote {
                        // A doubled quote stays inside.
                        if bytes.get(i + 1) == Some(&quote) {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    i += 1;
                }
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            b'?' => found.push(i),
            _ => {}
        }
        i += 1;
    }
    found
}

/// The SQL literal of row 0 of `column`.
fn literal(column: &dyn Array, name: &str) -> Result<String> {
    if column.is_null(0) {
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
        DataType::Float32 => float(f64::from(column.as_primitive::<Float32Type>().value(0)))?,
        DataType::Float64 => float(column.as_primitive::<Float64Type>().value(0))?,
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
            format!("DATE '{}'", date.ok_or_else(|| unbindable(name, "date"))?)
        }
        DataType::Timestamp(TimeUnit::Microsecond, None) => {
            let at = column
                .as_primitive::<TimestampMicrosecondType>()
                .value_as_datetime(0)
                .ok_or_else(|| unbindable(name, "timestamp"))?;
            format!("TIMESTAMP '{}'", at.format("%Y-%m-%d %H:%M:%S%.f"))
        }
        other => return Err(unbindable(name, &other.to_string())),
    })
}

/// A float written so that it reads back the same (`1.5E300`), in a
/// DOUBLE PRECISION literal.
fn float(value: f64) -> Result<String> {
    if !value.is_finite() {
        return Err(invalid(format!(
            "{value} cannot be bound: Firebird has no literal for it"
        )));
    }
    Ok(format!("CAST({value:e} AS DOUBLE PRECISION)"))
}

fn text(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

fn unbindable(name: &str, what: &str) -> Error {
    Error::with_message_and_status(
        format!(
            "parameter {name}: {what} values cannot be bound; bind integers, decimals, floats, \
             text, booleans, dates or timestamps (microseconds, no time zone)"
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

    use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};

    use super::*;

    fn row(values: Vec<ArrayRef>) -> RecordBatch {
        let named = values
            .into_iter()
            .enumerate()
            .map(|(i, a)| (format!("p{i}"), a));
        RecordBatch::try_from_iter(named).unwrap()
    }

    #[test]
    fn markers_outside_text_and_comments_take_the_values() {
        let params = row(vec![
            Arc::new(Int64Array::from(vec![7])),
            Arc::new(StringArray::from(vec!["O'Brien"])),
            Arc::new(Float64Array::from(vec![0.1])),
            Arc::new(BooleanArray::from(vec![None])),
        ]);
        let sql = "SELECT '?' AS \"?\" FROM T -- ?\n WHERE A = ? /* ? */ AND B = ? AND C < ? \
                   AND D IS NOT DISTINCT FROM ?";
        assert_eq!(
            inline(sql, &params).unwrap(),
            "SELECT '?' AS \"?\" FROM T -- ?\n WHERE A = 7 /* ? */ AND B = 'O''Brien' AND C < \
             CAST(1e-1 AS DOUBLE PRECISION) AND D IS NOT DISTINCT FROM NULL"
        );
    }

    #[test]
    fn counts_must_agree_and_one_row_is_bound() {
        let one = row(vec![Arc::new(Int64Array::from(vec![1]))]);
        assert!(inline("SELECT ? , ? FROM T", &one).is_err());
        let two = row(vec![Arc::new(Int64Array::from(vec![1, 2]))]);
        assert!(inline("SELECT ? FROM T", &two).is_err());
    }
}
