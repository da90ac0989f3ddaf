//! Record images decoded through the table's format.
//!
//! The journal carries rows as the engine stores them, always in the
//! table's current format: a null bitmap (bit *i* for field id *i*) and
//! each field at the offset its descriptor in `RDB$FORMATS.RDB$DESCRIPTOR`
//! gives. That blob is a count, then one 12-byte descriptor per field id
//! (type, scale, length, sub-type, flags, offset), then default values
//! this reader does not need; a descriptor with offset 0 is a dropped
//! field. Blobs and arrays are ids here; a blob's bytes come from the
//! transaction's store-blob entries.

use std::collections::HashMap;

use crate::protocol::BlobId;
use crate::segment::{u16_at, u32_at, u64_at};

/// One field's place and type in a record image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldFormat {
    pub dtype: u8,
    pub scale: i8,
    pub length: u16,
    pub sub_type: i16,
    pub offset: u32,
}

/// A table's record layout, by field id (`RDB$FIELD_ID`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFormat {
    pub fields: Vec<Option<FieldFormat>>,
    /// The length of a record image of this format.
    pub length: usize,
}

/// A decoded field.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Boolean(bool),
    /// SMALLINT, INTEGER, BIGINT, INT128 and NUMERIC/DECIMAL: the
    /// unscaled integer and the number of decimals.
    Integer {
        value: i128,
        scale: u8,
    },
    Float(f32),
    Double(f64),
    /// A DECFLOAT as exact decimal text, as Firebird prints it (`1.25`,
    /// `-1.5E+300`, `NaN`, `-Infinity`).
    DecFloat(String),
    /// CHAR/VARCHAR bytes in the character set `charset` (Firebird's id;
    /// 1 is OCTETS, binary).
    Text {
        bytes: Vec<u8>,
        charset: u8,
    },
    /// Days since 1858-11-17 (Firebird's epoch).
    Date(i32),
    /// Ten-thousandths of a second since midnight.
    Time(u32),
    Timestamp {
        date: i32,
        time: u32,
    },
    /// The time in UTC and the zone id it was written in.
    TimeTz {
        time: u32,
        zone: u16,
    },
    TimestampTz {
        date: i32,
        time: u32,
        zone: u16,
    },
    /// A blob's bytes (from its store-blob entry) and its sub-type.
    Blob {
        bytes: Vec<u8>,
        sub_type: i16,
        charset: u8,
    },
    /// An array's id: arrays do not travel in the journal's rows.
    ArrayId(BlobId),
    /// A blob the transaction did not store: in a row's before image, its
    /// earlier value, whose bytes the journal does not carry.
    BlobNotCarried(BlobId),
}

/// Why a record image did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("record of {got} bytes, the table's format makes {expected}: the table changed since the format was read")]
    Length { expected: usize, got: usize },
    #[error("field {field} has type {dtype}, which a table cannot hold")]
    Type { field: usize, dtype: u8 },
    #[error("the format descriptor is cut short")]
    Descriptor,
}

const DESCRIPTOR_LENGTH: usize = 12;

impl RecordFormat {
    /// A format from the bytes of its `RDB$DESCRIPTOR` blob.
    pub fn parse(descriptor: &[u8]) -> Result<RecordFormat, RecordError> {
        if descriptor.len() < 2 {
            return Err(RecordError::Descriptor);
        }
        let count = u16_at(descriptor, 0) as usize;
        if descriptor.len() < 2 + count * DESCRIPTOR_LENGTH {
            return Err(RecordError::Descriptor);
        }
        let mut length = 0;
        let fields = (0..count)
            .map(|i| {
                let d = &descriptor[2 + i * DESCRIPTOR_LENGTH..2 + (i + 1) * DESCRIPTOR_LENGTH];
                let field = FieldFormat {
                    dtype: d[0],
                    scale: d[1] as i8,
                    length: u16_at(d, 2),
                    sub_type: u16_at(d, 4) as i16,
                    offset: u32_at(d, 8),
                };
                // The engine's own rule: the last placed field ends the record.
                (field.offset != 0 && field.dtype != 0).then(|| {
                    length = field.offset as usize + field.length as usize;
                    field
                })
            })
            .collect();
        Ok(RecordFormat { fields, length })
    }

    /// The fields of `record`, by field id (`None` for a dropped field).
    /// Blob ids are looked up in `blobs`; a null blob id is a null, one
    /// not there [`Value::BlobNotCarried`].
    pub fn decode(
        &self,
        record: &[u8],
        blobs: &HashMap<BlobId, Vec<u8>>,
    ) -> Result<Vec<Option<Value>>, RecordError> {
        if record.len() != self.length {
            return Err(RecordError::Length {
                expected: self.length,
                got: record.len(),
            });
        }
        self.fields
            .iter()
            .enumerate()
            .map(|(id, field)| {
                let Some(field) = field else { return Ok(None) };
                if record[id / 8] & (1 << (id % 8)) != 0 {
                    return Ok(Some(Value::Null));
                }
                decode_field(id, field, record, blobs).map(Some)
            })
            .collect()
    }

    /// As [`RecordFormat::decode`], only the fields in `wanted` (field
    /// ids) decoded, the others `None`: a before image is read for its
    /// key alone, and decoding the rest would be work thrown away.
    pub fn decode_fields(
        &self,
        record: &[u8],
        blobs: &HashMap<BlobId, Vec<u8>>,
        wanted: &[usize],
    ) -> Result<Vec<Option<Value>>, RecordError> {
        if record.len() != self.length {
            return Err(RecordError::Length {
                expected: self.length,
                got: record.len(),
            });
        }
        let mut values = vec![None; self.fields.len()];
        for &id in wanted {
            let Some(Some(field)) = self.fields.get(id) else {
                continue;
            };
            values[id] = Some(if record[id / 8] & (1 << (id % 8)) != 0 {
                Value::Null
            } else {
                decode_field(id, field, record, blobs)?
            });
        }
        Ok(values)
    }

    /// Which fields an update changed, by field id, from its before and
    /// after images as stored (null flag and the field's bytes), without
    /// decoding either; `None` if an image is not of this format's length.
    /// Equal bytes are an equal value; unequal bytes may still be one (a
    /// VARCHAR's unused tail, a blob stored again with the same content),
    /// which only makes a field count as changed.
    pub fn changed_fields(&self, before: &[u8], after: &[u8]) -> Option<Vec<bool>> {
        if before.len() != self.length || after.len() != self.length {
            return None;
        }
        let null = |record: &[u8], id: usize| record[id / 8] & (1 << (id % 8)) != 0;
        Some(
            self.fields
                .iter()
                .enumerate()
                .map(|(id, field)| {
                    let Some(field) = field else { return false };
                    let (b, a) = (null(before, id), null(after, id));
                    let at = field.offset as usize..field.offset as usize + field.length as usize;
                    b != a || (!a && before[at.clone()] != after[at])
                })
                .collect(),
        )
    }
}

fn decode_field(
    id: usize,
    f: &FieldFormat,
    record: &[u8],
    blobs: &HashMap<BlobId, Vec<u8>>,
) -> Result<Value, RecordError> {
    let at = f.offset as usize;
    let bytes = &record[at..at + f.length as usize];
    let scale = (-f.scale).max(0) as u8;
    let charset = (f.sub_type & 0xff) as u8;
    Ok(match f.dtype {
        1 => Value::Text {
            bytes: bytes.to_vec(),
            charset,
        },
        3 => {
            let length = (u16_at(bytes, 0) as usize).min(bytes.len() - 2);
            Value::Text {
                bytes: bytes[2..2 + length].to_vec(),
                charset,
            }
        }
        8 => Value::Integer {
            value: i16::from_le_bytes(bytes[..2].try_into().unwrap()).into(),
            scale,
        },
        9 => Value::Integer {
            value: (u32_at(bytes, 0) as i32).into(),
            scale,
        },
        19 => Value::Integer {
            value: (u64_at(bytes, 0) as i64).into(),
            scale,
        },
        24 => Value::Integer {
            value: i128::from_le_bytes(bytes[..16].try_into().unwrap()),
            scale,
        },
        11 => Value::Float(f32::from_le_bytes(bytes[..4].try_into().unwrap())),
        12 => Value::Double(f64::from_le_bytes(bytes[..8].try_into().unwrap())),
        14 => Value::Date(u32_at(bytes, 0) as i32),
        15 => Value::Time(u32_at(bytes, 0)),
        16 => Value::Timestamp {
            date: u32_at(bytes, 0) as i32,
            time: u32_at(bytes, 4),
        },
        25 => Value::TimeTz {
            time: u32_at(bytes, 0),
            zone: u16_at(bytes, 4),
        },
        26 => Value::TimestampTz {
            date: u32_at(bytes, 0) as i32,
            time: u32_at(bytes, 4),
            zone: u16_at(bytes, 8),
        },
        21 => Value::Boolean(bytes[0] != 0),
        22 => Value::DecFloat(decfloat_text(u64_at(bytes, 0) as u128, 64)),
        23 => Value::DecFloat(decfloat_text(
            u128::from_le_bytes(bytes[..16].try_into().unwrap()),
            128,
        )),
        17 | 18 => {
            let blob = BlobId(u32_at(bytes, 0), u32_at(bytes, 4));
            if blob == BlobId(0, 0) {
                Value::Null
            } else if f.dtype == 18 {
                Value::ArrayId(blob)
            } else {
                // A text blob's character set is in the scale byte.
                let charset = if f.sub_type == 1 { f.scale as u8 } else { 0 };
                match blobs.get(&blob) {
                    Some(bytes) => Value::Blob {
                        bytes: bytes.clone(),
                        sub_type: f.sub_type,
                        charset,
                    },
                    None => Value::BlobNotCarried(blob),
                }
            }
        }
        dtype => return Err(RecordError::Type { field: id, dtype }),
    })
}

/// The exact decimal text of an IEEE 754 decimal64/decimal128 in its
/// densely-packed-decimal encoding (the `decNumber` library's, which
/// Firebird's DECFLOAT uses).
pub fn decfloat_text(bits: u128, width: u32) -> String {
    let (exponent_bits, bias, declets) = if width == 64 {
        (8, 398, 5)
    } else {
        (12, 6176, 11)
    };
    let negative = bits >> (width - 1) & 1 == 1;
    let sign = if negative { "-" } else { "" };
    let combination = (bits >> (width - 6)) as u32 & 0x1f;
    if combination == 0x1e {
        return format!("{sign}Infinity");
    }
    if combination == 0x1f {
        return "NaN".into();
    }
    let (exponent_high, first_digit) = if combination >> 3 == 0b11 {
        ((combination >> 1) & 0b11, 8 + (combination & 1))
    } else {
        (combination >> 3, combination & 0b111)
    };
    let continuation = (bits >> (width - 6 - exponent_bits)) as u32 & ((1 << exponent_bits) - 1);
    let exponent = ((exponent_high << exponent_bits) | continuation) as i32 - bias;
    let mut digits = first_digit.to_string();
    for i in (0..declets).rev() {
        let declet = (bits >> (i * 10)) as u32 & 0x3ff;
        for d in dpd_digits(declet) {
            digits.push(char::from(b'0' + d));
        }
    }
    let digits = digits.trim_start_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    format!("{sign}{}", scientific(digits, exponent))
}

/// Coefficient digits and exponent as the decimal arithmetic
/// specification's to-scientific-string writes them (and Firebird prints
/// a DECFLOAT): plain while the exponent is not positive and the number
/// not below 1E-6, else one digit, a point, the rest and `E±n`.
fn scientific(digits: &str, exponent: i32) -> String {
    let adjusted = exponent as i64 + digits.len() as i64 - 1;
    if exponent <= 0 && adjusted >= -6 {
        if exponent == 0 {
            return digits.to_string();
        }
        let point = digits.len() as i64 + exponent as i64;
        return if point > 0 {
            let (whole, fraction) = digits.split_at(point as usize);
            format!("{whole}.{fraction}")
        } else {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        };
    }
    let (first, rest) = digits.split_at(1);
    let point = if rest.is_empty() { "" } else { "." };
    format!("{first}{point}{rest}E{adjusted:+}")
}

/// Three decimal digits from one 10-bit declet (IEEE 754-2008, 3.5.2).
fn dpd_digits(declet: u32) -> [u8; 3] {
    let bit = |n: u32| ((declet >> n) & 1) as u8;
    let (p, q, r, s, t, u, v, w, x, y) = (
        bit(9),
        bit(8),
        bit(7),
        bit(6),
        bit(5),
        bit(4),
        bit(3),
        bit(2),
        bit(1),
        bit(0),
    );
    let three = |a: u8, b: u8, c: u8| a << 2 | b << 1 | c;
    if v == 0 {
        return [three(p, q, r), three(s, t, u), three(w, x, y)];
    }
    match (w, x, s, t) {
        (0, 0, _, _) => [three(p, q, r), three(s, t, u), 8 + y],
        (0, 1, _, _) => [three(p, q, r), 8 + u, three(s, t, y)],
        (1, 0, _, _) => [8 + r, three(s, t, u), three(p, q, y)],
        (1, 1, 0, 0) => [8 + r, 8 + u, three(p, q, y)],
        (1, 1, 0, 1) => [8 + r, three(p, q, u), 8 + y],
        (1, 1, 1, 0) => [three(p, q, r), 8 + u, 8 + y],
        _ => [8 + r, 8 + u, 8 + y],
    }
}

/// Firebird's date (days since 1858-11-17) as year, month, day.
pub fn civil_date(days: i32) -> (i64, u32, u32) {
    // Days since 1970-01-01, then the civil calendar from there.
    let z = days as i64 - 40587 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl Value {
    /// The value as SQL literal text both Firebird and PostgreSQL read
    /// (numbers exact, dates ISO, times to the ten-thousandth, zoned
    /// values as their UTC instant); `None` for null, binary data and
    /// array ids, which have no such text.
    pub fn to_text(&self) -> Option<String> {
        Some(match self {
            Value::Null | Value::ArrayId(_) | Value::BlobNotCarried(_) => return None,
            Value::Boolean(b) => b.to_string(),
            Value::Integer { value, scale } => scaled_text(*value, *scale),
            Value::Float(f) => float_text(f64::from(*f), f.to_string()),
            Value::Double(d) => float_text(*d, d.to_string()),
            Value::DecFloat(text) => text.clone(),
            Value::Text { .. } | Value::Blob { .. } => return None,
            Value::Date(days) => date_text(*days),
            Value::Time(time) => time_text(*time),
            Value::Timestamp { date, time } => format!("{} {}", date_text(*date), time_text(*time)),
            Value::TimeTz { time, .. } => format!("{}+00", time_text(*time)),
            Value::TimestampTz { date, time, .. } => {
                format!("{} {}+00", date_text(*date), time_text(*time))
            }
        })
    }
}

fn float_text(value: f64, shortest: String) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        shortest
    }
}

fn scaled_text(value: i128, scale: u8) -> String {
    if scale == 0 {
        return value.to_string();
    }
    let digits = value.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    format!("{}{whole}.{fraction}", if value < 0 { "-" } else { "" })
}

fn date_text(days: i32) -> String {
    let (year, month, day) = civil_date(days);
    format!("{year:04}-{month:02}-{day:02}")
}

fn time_text(time: u32) -> String {
    let seconds = time / 10_000;
    format!(
        "{:02}:{:02}:{:02}.{:04}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        time % 10_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_fields_compare_null_flags_and_bytes() {
        // Two INTEGER fields after a one-byte null bitmap (padded to 4),
        // and a dropped field 2.
        let int = |offset| {
            Some(FieldFormat {
                dtype: 8,
                scale: 0,
                length: 4,
                sub_type: 0,
                offset,
            })
        };
        let format = RecordFormat {
            fields: vec![int(4), int(8), None],
            length: 12,
        };
        let record = |nulls: u8, a: i32, b: i32| {
            let mut r = vec![nulls, 0, 0, 0];
            r.extend_from_slice(&a.to_le_bytes());
            r.extend_from_slice(&b.to_le_bytes());
            r
        };
        let changed = |before: &[u8], after: &[u8]| format.changed_fields(before, after);
        assert_eq!(
            changed(&record(0, 1, 2), &record(0, 1, 3)),
            Some(vec![false, true, false])
        );
        assert_eq!(
            changed(&record(0, 1, 2), &record(0, 1, 2)),
            Some(vec![false, false, false])
        );
        // Null to a value whose bytes the null left behind, and back.
        assert_eq!(
            changed(&record(0b01, 1, 2), &record(0, 1, 2)),
            Some(vec![true, false, false])
        );
        assert_eq!(
            changed(&record(0, 1, 2), &record(0b10, 1, 2)),
            Some(vec![false, true, false])
        );
        // Both null: the bytes behind the flag do not count.
        assert_eq!(
            changed(&record(0b10, 1, 2), &record(0b10, 1, 9)),
            Some(vec![false, false, false])
        );
        assert_eq!(changed(&record(0, 1, 2)[..8], &record(0, 1, 2)), None);
    }

    #[test]
    fn decfloat_declets_decode_every_digit_pattern() {
        // Every declet of the canonical encoding, checked against the
        // inverse (encoding) rules for three digits.
        for a in 0u32..10 {
            for b in 0..10 {
                for c in 0..10 {
                    assert_eq!(
                        dpd_digits(encode_declet(a, b, c)),
                        [a as u8, b as u8, c as u8]
                    );
                }
            }
        }
    }

    /// The encoding side of IEEE 754-2008's table, for the test only.
    fn encode_declet(a: u32, b: u32, c: u32) -> u32 {
        let big = |d: u32| d >= 8;
        let (a2, a1, a0) = (a >> 2 & 1, a >> 1 & 1, a & 1);
        let (b2, b1, b0) = (b >> 2 & 1, b >> 1 & 1, b & 1);
        let (c2, c1, c0) = (c >> 2 & 1, c >> 1 & 1, c & 1);
        let _ = (a2, b2, c2);
        let bits = |v: [u32; 10]| v.iter().fold(0, |acc, b| acc << 1 | b);
        match (big(a), big(b), big(c)) {
            (false, false, false) => bits([a2, a1, a0, b2, b1, b0, 0, c2, c1, c0]),
            (false, false, true) => bits([a2, a1, a0, b2, b1, b0, 1, 0, 0, c0]),
            (false, true, false) => bits([a2, a1, a0, c2, c1, b0, 1, 0, 1, c0]),
            (true, false, false) => bits([c2, c1, a0, b2, b1, b0, 1, 1, 0, c0]),
            (true, true, false) => bits([c2, c1, a0, 0, 0, b0, 1, 1, 1, c0]),
            (true, false, true) => bits([b2, b1, a0, 0, 1, b0, 1, 1, 1, c0]),
            (false, true, true) => bits([a2, a1, a0, 1, 0, b0, 1, 1, 1, c0]),
            (true, true, true) => bits([0, 0, a0, 1, 1, b0, 1, 1, 1, c0]),
        }
    }

    #[test]
    fn decfloat_text_is_firebirds() {
        for (digits, exponent, text) in [
            ("125", -2, "1.25"),
            ("15", 299, "1.5E+300"),
            ("0", -2, "0.00"),
            ("1", -7, "1E-7"),
            ("123", -8, "0.00000123"),
            ("1", 0, "1"),
            ("1", 1, "1E+1"),
        ] {
            assert_eq!(scientific(digits, exponent), text);
        }
    }

    #[test]
    fn numbers_dates_and_times_as_text() {
        assert_eq!(scaled_text(-150, 2), "-1.50");
        assert_eq!(scaled_text(5, 3), "0.005");
        assert_eq!(scaled_text(i128::MIN, 0), i128::MIN.to_string());
        assert_eq!(date_text(0), "1858-11-17");
        assert_eq!(date_text(40587), "1970-01-01");
        assert_eq!(date_text(-678575), "0001-01-01");
        assert_eq!(time_text(863_999_999), "23:59:59.9999");
    }

    #[test]
    fn decode_fields_reads_only_the_fields_asked_for_and_as_decode_does() {
        // Field 0 INTEGER at 4, field 1 VARCHAR(8) at 8, field 2 INTEGER
        // at 20 (null); a null bitmap of one byte leads.
        let mut descriptor = 3u16.to_le_bytes().to_vec();
        for (dtype, length, offset) in [(9u8, 4u16, 4u32), (3, 10, 8), (9, 4, 20)] {
            descriptor.push(dtype);
            descriptor.push(0);
            descriptor.extend_from_slice(&length.to_le_bytes());
            descriptor.extend_from_slice(&0u16.to_le_bytes());
            descriptor.extend_from_slice(&[0, 0]);
            descriptor.extend_from_slice(&offset.to_le_bytes());
        }
        let format = RecordFormat::parse(&descriptor).unwrap();
        let mut record = vec![0u8; format.length];
        record[0] = 0b100;
        record[4..8].copy_from_slice(&42i32.to_le_bytes());
        record[8..10].copy_from_slice(&3u16.to_le_bytes());
        record[10..13].copy_from_slice(b"abc");
        let blobs = HashMap::new();
        let all = format.decode(&record, &blobs).unwrap();
        assert_eq!(
            format.decode_fields(&record, &blobs, &[1, 2]).unwrap(),
            vec![None, all[1].clone(), all[2].clone()]
        );
        assert_eq!(all[2], Some(Value::Null));
        assert_eq!(
            format.decode_fields(&record, &blobs, &[0]).unwrap(),
            vec![all[0].clone(), None, None]
        );
        assert!(format.decode_fields(&record[1..], &blobs, &[0]).is_err());
    }
}
