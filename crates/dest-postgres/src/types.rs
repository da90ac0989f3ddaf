//! The type mapping: the PostgreSQL type of each column, chosen from its
//! Arrow type and the Firebird type it was declared with (field metadata
//! `fbunload.type`), and the binary COPY encoding of its values.
//!
//! This table is the one in docs/postgresql.md:
//!
//! | Firebird                          | PostgreSQL                  | note |
//! |-----------------------------------|-----------------------------|------|
//! | SMALLINT / INTEGER / BIGINT       | smallint / integer / bigint | |
//! | NUMERIC/DECIMAL(p, s)             | numeric(P, s)               | P = the digits its storage holds (5, 10, 19, 39): Firebird does not enforce p |
//! | INT128                            | numeric(39, 0)              | |
//! | DECFLOAT(16) / DECFLOAT(34)       | numeric                     | exact; NaN, sNaN → NaN, ±Infinity kept; -0 → 0 |
//! | FLOAT / DOUBLE PRECISION          | real / double precision     | |
//! | DATE / TIME / TIMESTAMP           | date / time / timestamp     | |
//! | TIME WITH TIME ZONE               | time with time zone         | the instant, at offset +00 (the zone name is not kept) |
//! | TIMESTAMP WITH TIME ZONE          | timestamp with time zone    | the instant (PostgreSQL keeps no zone) |
//! | BOOLEAN                           | boolean                     | |
//! | CHAR(n) / VARCHAR(n)              | char(n) / varchar(n)        | any character set, as UTF8; NUL refused |
//! | BLOB SUB_TYPE TEXT                | text                        | NUL refused |
//! | CHAR/VARCHAR OCTETS, other BLOBs  | bytea                       | |
//! | ARRAY [l:u, ...] of any above     | element type [], same bounds| |
//! | a view's or query's other text    | text                        | |

use std::error::Error;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Decimal256Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Time64MicrosecondType, TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef, ListArray};
use arrow_schema::{DataType, Field};
use bytes::{BufMut, BytesMut};
use postgres::types::Type;

/// Field metadata key of the Firebird type (fbunload-decode's).
const TYPE_KEY: &str = "fbunload.type";
/// Field metadata key of an ARRAY column's bounds: `[1:5, 0:2]`.
const BOUNDS_KEY: &str = "fbunload.array_bounds";

/// Microseconds from 1970-01-01 (Arrow's epoch) to 2000-01-01
/// (PostgreSQL's).
const EPOCH_MICROS: i64 = 946_684_800_000_000;
const EPOCH_DAYS: i32 = 10_957;

/// How a column's values are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Encoding {
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    Bool,
    Date,
    Time,
    /// Arrow's time in UTC: written with offset 0.
    TimeTz,
    Timestamp,
    TimestampTz,
    Decimal,
    /// DECFLOAT, read as the server's exact text.
    DecimalText,
    Text,
    Bytes,
    /// One dimension per bound pair, elements encoded as `element`.
    Array {
        element: Box<Encoding>,
        element_oid: u32,
        bounds: Vec<(i32, i32)>,
    },
}

/// A column as PostgreSQL gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgColumn {
    /// The Firebird name (the PostgreSQL one is [`crate::pg_name`] of it).
    pub name: String,
    /// `numeric(10,3)`, `varchar(20)`, `integer[]`.
    pub sql_type: String,
    pub encoding: Encoding,
}

/// The PostgreSQL column for an Arrow field of a run, or why there is none.
pub fn pg_column(field: &Field) -> Result<PgColumn, String> {
    let declared = field
        .metadata()
        .get(TYPE_KEY)
        .map(String::as_str)
        .unwrap_or("");
    let (sql_type, encoding) = match field.data_type() {
        DataType::List(_) => array_type(field, declared)?,
        data_type => scalar_type(data_type, declared)?,
    };
    Ok(PgColumn {
        name: field.name().clone(),
        sql_type,
        encoding,
    })
}

fn scalar_type(data_type: &DataType, declared: &str) -> Result<(String, Encoding), String> {
    let upper = declared.to_ascii_uppercase();
    let with_tz = upper.contains("WITH TIME ZONE");
    Ok(match data_type {
        DataType::Int16 => ("smallint".into(), Encoding::Int16),
        DataType::Int32 => ("integer".into(), Encoding::Int32),
        DataType::Int64 => ("bigint".into(), Encoding::Int64),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => {
            (format!("numeric({p},{s})"), Encoding::Decimal)
        }
        DataType::Float32 => ("real".into(), Encoding::Float32),
        DataType::Float64 => ("double precision".into(), Encoding::Float64),
        DataType::Boolean => ("boolean".into(), Encoding::Bool),
        DataType::Date32 => ("date".into(), Encoding::Date),
        DataType::Time64(_) if with_tz => ("time with time zone".into(), Encoding::TimeTz),
        DataType::Time64(_) => ("time".into(), Encoding::Time),
        DataType::Timestamp(_, Some(_)) => {
            ("timestamp with time zone".into(), Encoding::TimestampTz)
        }
        DataType::Timestamp(_, None) => ("timestamp".into(), Encoding::Timestamp),
        DataType::Utf8 if upper.starts_with("DECFLOAT") => {
            ("numeric".into(), Encoding::DecimalText)
        }
        DataType::Utf8 => (text_type(&upper), Encoding::Text),
        DataType::Binary => ("bytea".into(), Encoding::Bytes),
        other => return Err(format!("Arrow type {other} has no PostgreSQL type here")),
    })
}

/// `char(n)` and `varchar(n)` where the catalog declares the length in
/// characters; `text` for BLOB SUB_TYPE TEXT and for what a query
/// describes in bytes.
fn text_type(declared: &str) -> String {
    let length = |prefix: &str| {
        declared
            .strip_prefix(prefix)
            .and_then(|rest| rest.split_once(')'))
            .and_then(|(n, _)| n.trim().parse::<u32>().ok())
            .filter(|n| *n >= 1)
    };
    if let Some(n) = length("CHAR(") {
        format!("char({n})")
    } else if let Some(n) = length("VARCHAR(") {
        format!("varchar({n})")
    } else {
        "text".into()
    }
}

fn array_type(field: &Field, declared: &str) -> Result<(String, Encoding), String> {
    let bounds = field
        .metadata()
        .get(BOUNDS_KEY)
        .ok_or("an ARRAY column without its bounds")?;
    let bounds: Vec<(i32, i32)> = bounds
        .trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|pair| {
            let (l, u) = pair.trim().split_once(':')?;
            Some((l.trim().parse().ok()?, u.trim().parse().ok()?))
        })
        .collect::<Option<_>>()
        .ok_or_else(|| format!("ARRAY bounds {bounds} not understood"))?;
    let mut inner = field.data_type();
    while let DataType::List(item) = inner {
        inner = item.data_type();
    }
    // The declared element type: `CHAR(3) [1:2] CHARACTER SET X` less its bounds.
    let element_declared = match declared.find(" [") {
        Some(open) => match declared[open..].find(']') {
            Some(close) => format!("{}{}", &declared[..open], &declared[open + close + 1..]),
            None => declared.to_string(),
        },
        None => declared.trim_start_matches("ARRAY OF ").to_string(),
    };
    let (element_type, element) = scalar_type(inner, &element_declared)?;
    let element_oid = element_oid(&element, &element_type);
    Ok((
        format!("{element_type}[]"),
        Encoding::Array {
            element: Box::new(element),
            element_oid,
            bounds,
        },
    ))
}

/// The element type's OID, which an array's binary form names.
fn element_oid(encoding: &Encoding, sql_type: &str) -> u32 {
    let t = match encoding {
        Encoding::Int16 => Type::INT2,
        Encoding::Int32 => Type::INT4,
        Encoding::Int64 => Type::INT8,
        Encoding::Float32 => Type::FLOAT4,
        Encoding::Float64 => Type::FLOAT8,
        Encoding::Bool => Type::BOOL,
        Encoding::Date => Type::DATE,
        Encoding::Time => Type::TIME,
        Encoding::TimeTz => Type::TIMETZ,
        Encoding::Timestamp => Type::TIMESTAMP,
        Encoding::TimestampTz => Type::TIMESTAMPTZ,
        Encoding::Decimal | Encoding::DecimalText => Type::NUMERIC,
        Encoding::Text if sql_type.starts_with("char(") => Type::BPCHAR,
        Encoding::Text if sql_type.starts_with("varchar(") => Type::VARCHAR,
        Encoding::Text => Type::TEXT,
        Encoding::Bytes => Type::BYTEA,
        Encoding::Array { .. } => Type::ANYARRAY,
    };
    t.oid()
}

/// Writes value `row` of `array` (not NULL) into `out`.
fn encode(
    array: &dyn Array,
    encoding: &Encoding,
    row: usize,
    out: &mut BytesMut,
) -> Result<(), Box<dyn Error + Sync + Send>> {
    match encoding {
        Encoding::Int16 => out.put_i16(array.as_primitive::<Int16Type>().value(row)),
        Encoding::Int32 => out.put_i32(array.as_primitive::<Int32Type>().value(row)),
        Encoding::Int64 => out.put_i64(array.as_primitive::<Int64Type>().value(row)),
        Encoding::Float32 => out.put_f32(array.as_primitive::<Float32Type>().value(row)),
        Encoding::Float64 => out.put_f64(array.as_primitive::<Float64Type>().value(row)),
        Encoding::Bool => out.put_u8(array.as_boolean().value(row) as u8),
        Encoding::Date => out.put_i32(array.as_primitive::<Date32Type>().value(row) - EPOCH_DAYS),
        Encoding::Time => out.put_i64(array.as_primitive::<Time64MicrosecondType>().value(row)),
        Encoding::TimeTz => {
            out.put_i64(array.as_primitive::<Time64MicrosecondType>().value(row));
            out.put_i32(0);
        }
        Encoding::Timestamp | Encoding::TimestampTz => {
            out.put_i64(array.as_primitive::<TimestampMicrosecondType>().value(row) - EPOCH_MICROS)
        }
        Encoding::Decimal => match array.data_type() {
            DataType::Decimal128(_, scale) => {
                let v = array.as_primitive::<Decimal128Type>().value(row);
                let digits = v.unsigned_abs().to_string();
                put_numeric(out, v < 0, &digits, *scale as i32)?;
            }
            DataType::Decimal256(_, scale) => {
                let v = array
                    .as_primitive::<Decimal256Type>()
                    .value(row)
                    .to_string();
                let (negative, digits) = match v.strip_prefix('-') {
                    Some(digits) => (true, digits),
                    None => (false, v.as_str()),
                };
                put_numeric(out, negative, digits, *scale as i32)?;
            }
            other => return Err(format!("{other} is not a decimal").into()),
        },
        Encoding::DecimalText => {
            let text = array.as_string::<i32>().value(row);
            put_decfloat(out, text)?;
        }
        Encoding::Text => out.put_slice(array.as_string::<i32>().value(row).as_bytes()),
        Encoding::Bytes => out.put_slice(array.as_binary::<i32>().value(row)),
        Encoding::Array {
            element,
            element_oid,
            bounds,
        } => {
            let list = array
                .as_any()
                .downcast_ref::<ListArray>()
                .ok_or("an ARRAY column that is not a list")?;
            out.put_i32(bounds.len() as i32);
            out.put_i32(0); // no NULL elements: Firebird has none
            out.put_u32(*element_oid);
            for (lower, upper) in bounds {
                out.put_i32(upper - lower + 1);
                out.put_i32(*lower);
            }
            put_elements(&list.value(row), element, bounds.len(), out)?;
        }
    }
    Ok(())
}

/// The signature, flags and header extension that open a binary COPY
/// stream (PostgreSQL's "Binary Format" of COPY).
pub const COPY_HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// The field count -1 that ends one.
pub const COPY_TRAILER: &[u8] = &[0xff, 0xff];

/// One column of a batch, downcast once for all its rows.
enum Values<'a> {
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
    Bool(&'a arrow_array::BooleanArray),
    Date(&'a [i32]),
    Time(&'a [i64]),
    TimeTz(&'a [i64]),
    Timestamp(&'a [i64]),
    Decimal(&'a [i128], i8),
    /// Text or bytes: offsets and the bytes they index.
    Bytes(&'a [i32], &'a [u8]),
    /// DECFLOAT, Decimal256 and ARRAY values, written one by one.
    Other(&'a dyn Array, &'a Encoding),
}

struct Column<'a> {
    nulls: Option<&'a arrow_buffer::NullBuffer>,
    values: Values<'a>,
}

fn column<'a>(array: &'a ArrayRef, encoding: &'a Encoding) -> Column<'a> {
    let values = match (encoding, array.data_type()) {
        (Encoding::Int16, DataType::Int16) => {
            Values::I16(array.as_primitive::<Int16Type>().values())
        }
        (Encoding::Int32, DataType::Int32) => {
            Values::I32(array.as_primitive::<Int32Type>().values())
        }
        (Encoding::Int64, DataType::Int64) => {
            Values::I64(array.as_primitive::<Int64Type>().values())
        }
        (Encoding::Float32, DataType::Float32) => {
            Values::F32(array.as_primitive::<Float32Type>().values())
        }
        (Encoding::Float64, DataType::Float64) => {
            Values::F64(array.as_primitive::<Float64Type>().values())
        }
        (Encoding::Bool, DataType::Boolean) => Values::Bool(array.as_boolean()),
        (Encoding::Date, DataType::Date32) => {
            Values::Date(array.as_primitive::<Date32Type>().values())
        }
        (Encoding::Time, DataType::Time64(_)) => {
            Values::Time(array.as_primitive::<Time64MicrosecondType>().values())
        }
        (Encoding::TimeTz, DataType::Time64(_)) => {
            Values::TimeTz(array.as_primitive::<Time64MicrosecondType>().values())
        }
        (Encoding::Timestamp | Encoding::TimestampTz, DataType::Timestamp(_, _)) => {
            Values::Timestamp(array.as_primitive::<TimestampMicrosecondType>().values())
        }
        (Encoding::Decimal, DataType::Decimal128(_, scale)) if *scale >= 0 => {
            Values::Decimal(array.as_primitive::<Decimal128Type>().values(), *scale)
        }
        (Encoding::Text, DataType::Utf8) => {
            let strings = array.as_string::<i32>();
            Values::Bytes(strings.value_offsets(), strings.values().as_slice())
        }
        (Encoding::Bytes, DataType::Binary) => {
            let bytes = array.as_binary::<i32>();
            Values::Bytes(bytes.value_offsets(), bytes.values().as_slice())
        }
        _ => Values::Other(array.as_ref(), encoding),
    };
    Column {
        nulls: array.nulls(),
        values,
    }
}

/// The binary COPY rows of a batch from row `from` on (without the
/// stream's header and trailer), written straight from its Arrow arrays:
/// each column is downcast once and each value written in place, with no
/// per-value calls through rust-postgres's `ToSql`. Stops after the row
/// that takes `out` to `limit` bytes; returns the next row to write.
pub fn put_rows(
    arrays: &[ArrayRef],
    columns: &[PgColumn],
    from: usize,
    limit: usize,
    out: &mut BytesMut,
) -> Result<usize, Box<dyn Error + Sync + Send>> {
    if arrays.len() != columns.len() {
        return Err(format!(
            "{} columns for {} in the table",
            arrays.len(),
            columns.len()
        )
        .into());
    }
    let rows = arrays.first().map_or(0, |a| a.len());
    let prepared: Vec<Column> = arrays
        .iter()
        .zip(columns)
        .map(|(array, c)| column(array, &c.encoding))
        .collect();
    let count = prepared.len() as i16;
    for row in from..rows {
        if out.len() >= limit {
            return Ok(row);
        }
        out.put_i16(count);
        for c in &prepared {
            if c.nulls.is_some_and(|n| n.is_null(row)) {
                out.put_i32(-1);
                continue;
            }
            match c.values {
                Values::I16(v) => {
                    out.put_i32(2);
                    out.put_i16(v[row]);
                }
                Values::I32(v) => {
                    out.put_i32(4);
                    out.put_i32(v[row]);
                }
                Values::I64(v) => {
                    out.put_i32(8);
                    out.put_i64(v[row]);
                }
                Values::F32(v) => {
                    out.put_i32(4);
                    out.put_f32(v[row]);
                }
                Values::F64(v) => {
                    out.put_i32(8);
                    out.put_f64(v[row]);
                }
                Values::Bool(v) => {
                    out.put_i32(1);
                    out.put_u8(v.value(row) as u8);
                }
                Values::Date(v) => {
                    out.put_i32(4);
                    out.put_i32(v[row] - EPOCH_DAYS);
                }
                Values::Time(v) => {
                    out.put_i32(8);
                    out.put_i64(v[row]);
                }
                Values::TimeTz(v) => {
                    out.put_i32(12);
                    out.put_i64(v[row]);
                    out.put_i32(0);
                }
                Values::Timestamp(v) => {
                    out.put_i32(8);
                    out.put_i64(v[row] - EPOCH_MICROS);
                }
                Values::Bytes(offsets, bytes) => {
                    let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
                    out.put_i32((end - start) as i32);
                    out.put_slice(&bytes[start..end]);
                }
                Values::Decimal(v, scale) => {
                    let at = out.len();
                    out.put_i32(0);
                    put_decimal128(out, v[row], scale)?;
                    let len = (out.len() - at - 4) as i32;
                    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
                }
                Values::Other(array, encoding) => {
                    let at = out.len();
                    out.put_i32(0);
                    encode(array, encoding, row, out)?;
                    let len = (out.len() - at - 4) as i32;
                    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
                }
            }
        }
    }
    Ok(rows)
}

/// A Decimal128 of scale >= 0 as numeric, computed in base 10000 with no
/// text in between; the same bytes as [`put_numeric`] of its digits.
fn put_decimal128(
    out: &mut BytesMut,
    value: i128,
    scale: i8,
) -> Result<(), Box<dyn Error + Sync + Send>> {
    let scale = scale as u32;
    // The fraction padded to whole groups of 4 digits.
    let pad = (4 - scale % 4) % 4;
    let Some(mut rest) = value.unsigned_abs().checked_mul(10u128.pow(pad)) else {
        // Too many digits to pad within 128 bits: by way of text.
        return put_numeric(
            out,
            value < 0,
            &value.unsigned_abs().to_string(),
            scale as i32,
        );
    };
    let fraction_groups = ((scale + pad) / 4) as i32;
    // At most 41 digits: 11 groups, least significant first.
    let mut groups = [0i16; 11];
    let mut n = 0;
    while rest != 0 {
        groups[n] = (rest % 10_000) as i16;
        rest /= 10_000;
        n += 1;
    }
    let weight = if n == 0 {
        0
    } else {
        n as i32 - fraction_groups - 1
    };
    let trailing = groups[..n].iter().take_while(|g| **g == 0).count();
    out.put_i16((n - trailing) as i16);
    out.put_i16(weight as i16);
    out.put_u16(if value < 0 { NUMERIC_NEG } else { NUMERIC_POS });
    out.put_u16(scale as u16);
    for g in groups[trailing..n].iter().rev() {
        out.put_i16(*g);
    }
    Ok(())
}

/// The elements of one array value, innermost dimension fastest, as
/// PostgreSQL lays them out.
fn put_elements(
    values: &ArrayRef,
    element: &Encoding,
    depth: usize,
    out: &mut BytesMut,
) -> Result<(), Box<dyn Error + Sync + Send>> {
    if depth > 1 {
        let list = values
            .as_any()
            .downcast_ref::<ListArray>()
            .ok_or("an ARRAY dimension that is not a list")?;
        for i in 0..list.len() {
            put_elements(&list.value(i), element, depth - 1, out)?;
        }
        return Ok(());
    }
    for i in 0..values.len() {
        if values.is_null(i) {
            out.put_i32(-1);
            continue;
        }
        // The length goes before the value: written once it is known.
        let at = out.len();
        out.put_i32(0);
        encode(values.as_ref(), element, i, out)?;
        let len = (out.len() - at - 4) as i32;
        out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
    Ok(())
}

const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;
const NUMERIC_PINF: u16 = 0xD000;
const NUMERIC_NINF: u16 = 0xF000;
/// The largest display scale numeric's binary form carries.
const NUMERIC_MAX_DSCALE: i32 = 0x3FFF;

/// PostgreSQL's binary numeric of `digits` (ASCII, the unscaled absolute
/// value) × 10^-`scale`: base-10000 digit groups aligned on the decimal
/// point, a weight (the first group's power of 10000) and the display
/// scale, exactly as given. A negative `scale` appends zeros.
pub fn put_numeric(
    out: &mut BytesMut,
    negative: bool,
    digits: &str,
    scale: i32,
) -> Result<(), Box<dyn Error + Sync + Send>> {
    let mut digits = digits.trim_start_matches('0').to_string();
    let mut scale = scale;
    if scale < 0 {
        digits.extend(std::iter::repeat_n('0', (-scale) as usize));
        scale = 0;
    }
    if scale > NUMERIC_MAX_DSCALE {
        return Err(
            format!("a value with {scale} decimal places: numeric keeps at most 16383").into(),
        );
    }
    let scale_u = scale as usize;
    // Integer part and fraction, the integer part padded on the left and
    // the fraction on the right to whole groups of 4 digits.
    let (int_part, frac_part) = if digits.len() > scale_u {
        let (i, f) = digits.split_at(digits.len() - scale_u);
        (i.to_string(), f.to_string())
    } else {
        (
            String::new(),
            format!("{}{digits}", "0".repeat(scale_u - digits.len())),
        )
    };
    let int_pad = (4 - int_part.len() % 4) % 4;
    let int_part = format!("{}{int_part}", "0".repeat(int_pad));
    let frac_pad = (4 - frac_part.len() % 4) % 4;
    let frac_part = format!("{frac_part}{}", "0".repeat(frac_pad));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| c.iter().fold(0i16, |a, d| a * 10 + (d - b'0') as i16))
            .collect()
    };
    let int_groups = group(&int_part);
    let mut groups = int_groups.clone();
    groups.extend(group(&frac_part));
    let mut weight = int_groups.len() as i32 - 1;
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i32;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    if weight > i16::MAX as i32 || weight < i16::MIN as i32 {
        return Err("a value too large for numeric".into());
    }
    let sign = if negative && !groups.is_empty() {
        NUMERIC_NEG
    } else {
        NUMERIC_POS
    };
    out.put_i16(groups.len() as i16);
    out.put_i16(weight as i16);
    out.put_u16(sign);
    out.put_u16(scale as u16);
    for g in groups {
        out.put_i16(g);
    }
    Ok(())
}

/// A DECFLOAT's text as the server writes it (`-1.50E+7`, `1E-6176`,
/// `NaN`, `sNaN`, `Infinity`, `-Infinity`) as numeric: exact, its
/// exponent turned into the scale; NaN and sNaN are numeric's NaN.
pub fn put_decfloat(out: &mut BytesMut, text: &str) -> Result<(), Box<dyn Error + Sync + Send>> {
    let text = text.trim();
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let special = |sign: u16, out: &mut BytesMut| {
        out.put_i16(0);
        out.put_i16(0);
        out.put_u16(sign);
        out.put_u16(0);
    };
    match body.to_ascii_lowercase().as_str() {
        "nan" | "snan" => {
            special(NUMERIC_NAN, out);
            return Ok(());
        }
        "inf" | "infinity" => {
            special(if negative { NUMERIC_NINF } else { NUMERIC_PINF }, out);
            return Ok(());
        }
        _ => {}
    }
    let bad = || -> Box<dyn Error + Sync + Send> {
        format!("DECFLOAT text {text:?} not understood").into()
    };
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (
            &body[..at],
            body[at + 1..].parse::<i32>().map_err(|_| bad())?,
        ),
        None => (body, 0),
    };
    let (int_digits, frac_digits) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_digits.is_empty() && frac_digits.is_empty()
        || !int_digits
            .bytes()
            .chain(frac_digits.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return Err(bad());
    }
    let digits = format!("{int_digits}{frac_digits}");
    put_numeric(out, negative, &digits, frac_digits.len() as i32 - exponent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(negative: bool, digits: &str, scale: i32) -> Vec<i32> {
        let mut out = BytesMut::new();
        put_numeric(&mut out, negative, digits, scale).unwrap();
        out.chunks(2)
            .map(|c| i16::from_be_bytes([c[0], c[1]]) as i32)
            .collect()
    }

    #[test]
    fn numerics_are_groups_of_four_digits_around_the_point() {
        // ndigits, weight, sign, dscale, digits...
        assert_eq!(
            numeric(false, "1234567", 2),
            vec![3, 1, 0, 2, 1, 2345, 6700]
        );
        assert_eq!(numeric(true, "5", 3), vec![1, -1, 0x4000, 3, 50]);
        assert_eq!(numeric(false, "0", 2), vec![0, 0, 0, 2]);
        assert_eq!(numeric(true, "0", 0), vec![0, 0, 0, 0]);
        assert_eq!(numeric(false, "10000", 0), vec![1, 1, 0, 0, 1]);
        assert_eq!(numeric(false, "12", -5), vec![1, 1, 0, 0, 120]);
        // INT128's largest value: 39 digits.
        let max = numeric(false, "170141183460469231731687303715884105727", 0);
        assert_eq!(max[..4], [10, 9, 0, 0]);
        assert_eq!(max[4..6], [170, 1411]);
    }

    #[test]
    fn rows_are_written_as_binary_copy_takes_them_in_any_pieces() {
        use arrow_array::{Date32Array, Decimal128Array, Int32Array, StringArray};
        use std::sync::Arc;
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![Some(7), None, Some(-1)])),
            Arc::new(StringArray::from(vec![Some("ab"), Some(""), None])),
            Arc::new(
                Decimal128Array::from(vec![Some(-12345), Some(0), Some(5)])
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
            Arc::new(Date32Array::from(vec![Some(EPOCH_DAYS + 1), None, None])),
        ];
        let column = |sql: &str, encoding| PgColumn {
            name: "C".into(),
            sql_type: sql.into(),
            encoding,
        };
        let columns = [
            column("integer", Encoding::Int32),
            column("text", Encoding::Text),
            column("numeric(10,2)", Encoding::Decimal),
            column("date", Encoding::Date),
        ];
        let mut whole = BytesMut::new();
        assert_eq!(
            put_rows(&arrays, &columns, 0, usize::MAX, &mut whole).unwrap(),
            3
        );
        let mut expected = BytesMut::new();
        let numeric = |v: i128| {
            let mut b = BytesMut::new();
            put_numeric(&mut b, v < 0, &v.unsigned_abs().to_string(), 2).unwrap();
            b
        };
        for (int, text, decimal, date) in [
            (Some(7), Some("ab"), -12345, Some(1)),
            (None, Some(""), 0, None),
            (Some(-1), None, 5, None),
        ] {
            expected.put_i16(4);
            match int {
                Some(v) => {
                    expected.put_i32(4);
                    expected.put_i32(v);
                }
                None => expected.put_i32(-1),
            }
            match text {
                Some(t) => {
                    expected.put_i32(t.len() as i32);
                    expected.put_slice(t.as_bytes());
                }
                None => expected.put_i32(-1),
            }
            let n = numeric(decimal);
            expected.put_i32(n.len() as i32);
            expected.put_slice(&n);
            match date {
                Some(d) => {
                    expected.put_i32(4);
                    expected.put_i32(d);
                }
                None => expected.put_i32(-1),
            }
        }
        assert_eq!(whole, expected);
        // A limit stops after the row that reaches it; the pieces add up.
        let mut pieces = BytesMut::new();
        let mut row = 0;
        let mut calls = 0;
        while row < 3 {
            let before = pieces.len();
            row = put_rows(&arrays, &columns, row, before + 1, &mut pieces).unwrap();
            calls += 1;
        }
        assert_eq!(calls, 3);
        assert_eq!(pieces, whole);
        assert_eq!(COPY_HEADER.len(), 19);
    }

    #[test]
    fn decimals_in_base_10000_equal_the_text_way() {
        let mut values: Vec<i128> = vec![
            0,
            1,
            -1,
            5,
            9999,
            10_000,
            -10_000,
            12_345_678,
            i128::MAX,
            i128::MIN + 1,
        ];
        let mut x: i128 = 1;
        for _ in 0..38 {
            values.extend([x, -x, x - 1, x + 7, 3 * x + 1]);
            x = x.saturating_mul(10);
        }
        // A simple deterministic spread of others.
        let mut r: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..2000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            values.push(
                (r as i128)
                    * if r.is_multiple_of(3) { 1_000_003 } else { 1 }
                    * if r.is_multiple_of(2) { -1 } else { 1 },
            );
        }
        for &v in &values {
            for scale in [0i8, 1, 2, 3, 4, 5, 7, 8, 9, 18, 30, 37, 38] {
                let mut fast = BytesMut::new();
                put_decimal128(&mut fast, v, scale).unwrap();
                let mut text = BytesMut::new();
                put_numeric(
                    &mut text,
                    v < 0,
                    &v.unsigned_abs().to_string(),
                    scale as i32,
                )
                .unwrap();
                assert_eq!(fast, text, "{v} scale {scale}");
            }
        }
    }

    #[test]
    fn decfloat_text_becomes_the_same_number() {
        let f = |text: &str| {
            let mut out = BytesMut::new();
            put_decfloat(&mut out, text).unwrap();
            out.to_vec()
        };
        let n = |negative, digits, scale| {
            let mut out = BytesMut::new();
            put_numeric(&mut out, negative, digits, scale).unwrap();
            out.to_vec()
        };
        assert_eq!(f("-1.50E+7"), n(true, "150", -5));
        assert_eq!(f("1E-6176"), n(false, "1", 6176));
        assert_eq!(f("123.456"), n(false, "123456", 3));
        assert_eq!(f("NaN")[4..6], [0xC0, 0]);
        assert_eq!(f("sNaN")[4..6], [0xC0, 0]);
        assert_eq!(f("-Infinity")[4..6], [0xF0, 0]);
        assert_eq!(f("Infinity")[4..6], [0xD0, 0]);
        let mut out = BytesMut::new();
        assert!(put_decfloat(&mut out, "1.2.3").is_err());
        assert!(put_decfloat(&mut out, "E5").is_err());
    }

    fn field(data_type: DataType, declared: &str) -> Field {
        Field::new("C", data_type, true).with_metadata(
            [(TYPE_KEY.to_string(), declared.to_string())]
                .into_iter()
                .collect::<std::collections::HashMap<String, String>>(),
        )
    }

    #[test]
    fn types_follow_the_declared_firebird_type() {
        let t = |d: DataType, declared: &str| pg_column(&field(d, declared)).unwrap().sql_type;
        assert_eq!(
            t(DataType::Decimal128(10, 3), "NUMERIC(9,3)"),
            "numeric(10,3)"
        );
        assert_eq!(t(DataType::Utf8, "DECFLOAT(34)"), "numeric");
        assert_eq!(
            t(DataType::Utf8, "VARCHAR(20) CHARACTER SET WIN1252"),
            "varchar(20)"
        );
        assert_eq!(t(DataType::Utf8, "CHAR(3)"), "char(3)");
        assert_eq!(t(DataType::Utf8, "VARCHAR(12 bytes)"), "text");
        assert_eq!(t(DataType::Utf8, "BLOB SUB_TYPE TEXT"), "text");
        use arrow_schema::TimeUnit::Microsecond;
        assert_eq!(
            t(DataType::Time64(Microsecond), "TIME WITH TIME ZONE"),
            "time with time zone"
        );
        assert_eq!(t(DataType::Time64(Microsecond), "TIME"), "time");
        let list = DataType::List(std::sync::Arc::new(Field::new(
            "item",
            DataType::List(std::sync::Arc::new(Field::new(
                "item",
                DataType::Utf8,
                false,
            ))),
            false,
        )));
        let f = field(list, "CHAR(3) [1:2, 0:4] CHARACTER SET WIN1252").with_metadata(
            [
                (
                    TYPE_KEY.to_string(),
                    "CHAR(3) [1:2, 0:4] CHARACTER SET WIN1252".to_string(),
                ),
                (BOUNDS_KEY.to_string(), "[1:2, 0:4]".to_string()),
            ]
            .into_iter()
            .collect::<std::collections::HashMap<String, String>>(),
        );
        let c = pg_column(&f).unwrap();
        assert_eq!(c.sql_type, "char(3)[]");
        assert_eq!(
            c.encoding,
            Encoding::Array {
                element: Box::new(Encoding::Text),
                element_oid: Type::BPCHAR.oid(),
                bounds: vec![(1, 2), (0, 4)]
            }
        );
    }
}
