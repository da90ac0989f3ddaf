//! The type mapping: every Firebird SQL type, the Arrow type it becomes,
//! and how its bytes are laid out in the fetch buffer.
//!
//! | Firebird                      | Arrow                          | note |
//! |-------------------------------|--------------------------------|------|
//! | SMALLINT / INTEGER / BIGINT   | Int16 / Int32 / Int64          | |
//! | INT128                        | Decimal128(38, 0)              | Decimal256(39, 0) with [`TypeOptions::decimal256`]: INT128 holds 39 digits |
//! | NUMERIC/DECIMAL(p, s)         | Decimal128(P, s)               | P = digits the storage type can hold (5, 10, 19), or 38 for INT128-backed (p > 18); Decimal256(39, s) with [`TypeOptions::decimal256`]; P = s where s is more (Decimal256 past 38), more than 76 decimals refused |
//!
//! The Arrow type follows the declared type, never the data, so every
//! unload of a table has one schema. Integers and NUMERIC/DECIMAL get the
//! widest Decimal128 their storage needs (Firebird does not enforce the
//! declared precision, so a NUMERIC(9,3) can hold 2147483.647), and
//! INT128, bare or scaled, Decimal128(38, s): every reader takes
//! Decimal128 of at most 38 digits (polars, Spark and DuckDB's DECIMAL stop
//! there; DuckDB reads a wider Parquet decimal as a DOUBLE, losing digits).
//! The only values it cannot hold are those of 39 digits that INT128
//! storage allows: the decoder refuses such a value as soon as it meets
//! it, naming `--decimal256`, which asks for Decimal256(39, s) instead.
//! | FLOAT / DOUBLE PRECISION      | Float32 / Float64              | |
//! | DECFLOAT(16) / DECFLOAT(34)   | Utf8                           | the planner has the server cast it to text, which is exact |
//! | DATE                          | Date32                         | |
//! | TIME                          | Time64(µs)                     | Firebird keeps 1/10 000 s |
//! | TIMESTAMP                     | Timestamp(µs)                  | |
//! | TIME WITH TIME ZONE           | Time64(µs), in UTC             | field metadata `fbunload.type` says so |
//! | TIMESTAMP WITH TIME ZONE      | Timestamp(µs, "UTC")           | the instant; the zone id is not kept |
//! | BOOLEAN                       | Boolean                        | |
//! | CHAR(n)                       | Utf8                           | trailing blanks removed (they are padding) |
//! | VARCHAR(n)                    | Utf8                           | decoded from the column's own character set (see [`crate::text`]) |
//! | CHAR/VARCHAR … OCTETS         | Binary                         | CHAR OCTETS keeps its full width |
//! | BLOB SUB_TYPE TEXT            | Utf8                           | decoded like VARCHAR |
//! | BLOB SUB_TYPE TEXT … OCTETS   | Binary                         | OCTETS text is bytes, not text |
//! | BLOB of any other subtype     | Binary                         | |
//! | ARRAY of any of the above     | List(List(…)), one per dimension | bounds in field metadata `fbunload.array_bounds`; elements are never NULL, a NULL array is a NULL list |
//!
//! ARRAY columns are read from tables (the catalog has their shape); a
//! view's or query's ARRAY column is refused, naming the column.

use std::collections::HashMap;

use std::sync::Arc;

use arrow_schema::{DataType, Field, TimeUnit};
use fbunload_client::{element, sql_type, ArrayShape, ColumnDesc, ElementType};

use crate::text::{charset_name, TextDecoder, CHARSET_NONE, CHARSET_OCTETS};

/// Field metadata key holding the Firebird type a column came from, so
/// sinks can render what Arrow alone cannot say (TIME WITH TIME ZONE).
pub const TYPE_METADATA_KEY: &str = "fbunload.type";
/// Field metadata key holding an ARRAY column's bounds as declared:
/// `[1:5]`, `[0:2, 1:3]`.
pub const ARRAY_BOUNDS_METADATA_KEY: &str = "fbunload.array_bounds";

/// Digits Arrow's Decimal128 holds.
pub const DECIMAL128_DIGITS: u8 = 38;
/// Decimals Arrow's Decimal256 holds.
pub const DECIMAL256_MAX_SCALE: u8 = arrow_schema::DECIMAL256_MAX_SCALE as u8;
/// Digits INT128 needs: its largest value,
/// 170141183460469231731687303715884105727, has 39.
pub const INT128_DIGITS: u8 = 39;

/// Choices in the mapping that are the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeOptions {
    /// Decodes text in columns declared CHARACTER SET NONE.
    pub none_text: TextDecoder,
    /// INT128-backed NUMERIC/DECIMAL as Decimal256(39, s), which holds
    /// every value their storage can, instead of Decimal128(38, s), which
    /// every Arrow reader takes (DuckDB, polars and Spark have no wider
    /// decimal) but which cannot hold a value of 39 digits. A bare INT128
    /// is Decimal256(39, 0) either way.
    pub decimal256: bool,
}

impl Default for TypeOptions {
    fn default() -> Self {
        TypeOptions {
            none_text: TextDecoder::UTF8,
            decimal256: false,
        }
    }
}

const BLOB_SUBTYPE_TEXT: i16 = 1;
/// The subtypes the server describes a scaled integer declared NUMERIC or
/// DECIMAL with; a bare INT128 (or an expression) has 0.
const SUBTYPE_NUMERIC: i16 = 1;
#[cfg(test)]
const SUBTYPE_DECIMAL: i16 = 2;

/// How to turn one column's bytes into an Arrow value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Int16,
    Int32,
    Int64,
    /// A scaled or 128-bit integer; `width` is the storage size in bytes.
    Decimal {
        width: u8,
        precision: u8,
        scale: i8,
    },
    Float32,
    Float64,
    Date,
    Time,
    Timestamp,
    TimeTz,
    TimestampTz,
    Boolean,
    /// CHAR (`padded`) or VARCHAR text in the connection character set.
    Text {
        padded: bool,
    },
    /// CHAR/VARCHAR CHARACTER SET OCTETS.
    Octets,
    TextBlob,
    BinaryBlob,
    /// An ARRAY column; [`OutputColumn::array`] says of what.
    Array,
}

/// What an ARRAY column holds: how a slice reads it, and each element as a
/// column of its own would be decoded.
#[derive(Debug)]
pub struct ArrayColumn {
    pub shape: ArrayShape,
    pub element: OutputColumn,
    /// The column's Arrow type: a List per dimension around the element's.
    pub data_type: DataType,
}

/// A column as it will be written: its catalog name, what the server
/// describes, the Firebird type name to record, and for text how its bytes
/// become UTF-8.
#[derive(Debug, Clone)]
pub struct OutputColumn {
    pub name: String,
    pub kind: ColumnKind,
    pub nullable: bool,
    pub type_name: String,
    /// For text kinds: the column's character set's decoder.
    pub text: TextDecoder,
    /// For ARRAY columns: their shape and element.
    pub array: Option<Arc<ArrayColumn>>,
}

impl OutputColumn {
    /// Maps a described column. `type_name` is the declared type when the
    /// catalog knows it (`NUMERIC(9,3)`, `DECFLOAT(34)` behind a cast), else
    /// one is made from the description.
    pub fn new(
        name: &str,
        desc: &ColumnDesc,
        type_name: Option<&str>,
        options: &TypeOptions,
    ) -> Result<Self, String> {
        Self::with_array(name, desc, type_name, None, options)
    }

    /// [`Self::new`] for a column that may be an ARRAY, read as `array`
    /// says (the catalog's [`ArrayShape`]).
    pub fn with_array(
        name: &str,
        desc: &ColumnDesc,
        type_name: Option<&str>,
        array: Option<&ArrayShape>,
        options: &TypeOptions,
    ) -> Result<Self, String> {
        if desc.sql_type == sql_type::ARRAY {
            let shape = array.ok_or(
                "ARRAY columns are read from tables only: unload the table, or leave the \
                 column out of the view or query",
            )?;
            return Self::array(name, desc, type_name, shape, options);
        }
        let kind = match kind_of(desc)? {
            ColumnKind::Decimal {
                width: 16, scale, ..
            } if options.decimal256 => ColumnKind::Decimal {
                width: 16,
                precision: INT128_DIGITS.max(scale.max(0) as u8),
                scale,
            },
            kind => kind,
        };
        let text = match kind {
            ColumnKind::Text { .. } | ColumnKind::TextBlob => match text_charset(desc) {
                CHARSET_NONE => options.none_text,
                id => TextDecoder::for_charset_id(id).ok_or_else(|| {
                    format!(
                        "character set {} cannot be converted here (the query should have \
                         the server convert it)",
                        charset_name(id).map_or_else(|| format!("id {id}"), str::to_string)
                    )
                })?,
            },
            _ => TextDecoder::UTF8,
        };
        Ok(OutputColumn {
            name: name.to_string(),
            kind,
            nullable: desc.nullable,
            type_name: type_name
                .map(str::to_string)
                .unwrap_or_else(|| type_name_of(desc)),
            text,
            array: None,
        })
    }

    fn array(
        name: &str,
        desc: &ColumnDesc,
        type_name: Option<&str>,
        shape: &ArrayShape,
        options: &TypeOptions,
    ) -> Result<Self, String> {
        // The slice call takes its length as a 32-bit number; bounds that
        // multiply past it are refused here, before a buffer is sized.
        if shape.slice_size() > i32::MAX as usize {
            let bounds: Vec<String> = shape
                .bounds
                .iter()
                .map(|(lower, upper)| format!("{lower}:{upper}"))
                .collect();
            return Err(format!(
                "ARRAY [{}] holds more than 2 GiB, more than one read of it can; leave the \
                 column out",
                bounds.join(", ")
            ));
        }
        let element_desc = element_desc(&shape.element).ok_or_else(|| {
            format!(
                "ARRAY of element type {} is not supported",
                shape.element.code
            )
        })?;
        // Sinks read the element's type name (TIME WITH TIME ZONE): the
        // declared type without its bounds, `CHAR(3) CHARACTER SET WIN1252`.
        let element_name = type_name
            .and_then(without_bounds)
            .unwrap_or_else(|| type_name_of(&element_desc));
        let mut element = Self::new(name, &element_desc, Some(&element_name), options)?;
        element.nullable = false;
        let mut data_type = element.arrow_field().data_type().clone();
        let mut item = element.arrow_field().with_name("item");
        for _ in &shape.bounds {
            data_type = DataType::List(Arc::new(item));
            item = Field::new("item", data_type.clone(), false);
        }
        let type_name = type_name
            .map(str::to_string)
            .unwrap_or_else(|| format!("ARRAY OF {element_name}"));
        Ok(OutputColumn {
            name: name.to_string(),
            kind: ColumnKind::Array,
            nullable: desc.nullable,
            type_name,
            text: TextDecoder::UTF8,
            array: Some(Arc::new(ArrayColumn {
                shape: shape.clone(),
                element,
                data_type,
            })),
        })
    }

    pub fn arrow_field(&self) -> Field {
        let mut metadata = HashMap::from([(TYPE_METADATA_KEY.to_string(), self.type_name.clone())]);
        let data_type = match &self.array {
            Some(array) => {
                let bounds: Vec<String> = array
                    .shape
                    .bounds
                    .iter()
                    .map(|(lower, upper)| format!("{lower}:{upper}"))
                    .collect();
                metadata.insert(
                    ARRAY_BOUNDS_METADATA_KEY.to_string(),
                    format!("[{}]", bounds.join(", ")),
                );
                array.data_type.clone()
            }
            None => arrow_type(self.kind),
        };
        Field::new(&self.name, data_type, self.nullable).with_metadata(metadata)
    }
}

/// `CHAR(3) CHARACTER SET WIN1252` of `CHAR(3) [1:2] CHARACTER SET
/// WIN1252`: an ARRAY column's declared type without its bounds.
fn without_bounds(declared: &str) -> Option<String> {
    let open = declared.find(" [")?;
    let close = open + declared[open..].find(']')?;
    Some(format!("{}{}", &declared[..open], &declared[close + 1..]))
}

/// An array element described as a column of its type would be.
fn element_desc(element: &ElementType) -> Option<ColumnDesc> {
    let (sql_type, length) = match element.code {
        element::TEXT => (sql_type::TEXT, element.length),
        element::VARYING => (sql_type::VARYING, element.length),
        element::SHORT => (sql_type::SHORT, 2),
        element::LONG => (sql_type::LONG, 4),
        element::INT64 => (sql_type::INT64, 8),
        element::INT128 => (sql_type::INT128, 16),
        element::FLOAT => (sql_type::FLOAT, 4),
        element::DOUBLE => (sql_type::DOUBLE, 8),
        element::DATE => (sql_type::TYPE_DATE, 4),
        element::TIME => (sql_type::TYPE_TIME, 4),
        element::TIMESTAMP => (sql_type::TIMESTAMP, 8),
        element::TIME_TZ => (sql_type::TIME_TZ, 8),
        element::TIMESTAMP_TZ => (sql_type::TIMESTAMP_TZ, 12),
        element::BOOLEAN => (sql_type::BOOLEAN, 1),
        _ => return None,
    };
    let text = matches!(element.code, element::TEXT | element::VARYING);
    Some(ColumnDesc {
        name: String::new(),
        sql_type,
        scale: element.scale as i16,
        // Scaled integers are NUMERIC; text carries its character set in
        // the subtype's low byte, as the server describes it.
        subtype: if text {
            element.charset as i16
        } else if element.scale < 0 {
            SUBTYPE_NUMERIC
        } else {
            0
        },
        length,
        nullable: false,
    })
}

pub fn arrow_type(kind: ColumnKind) -> DataType {
    match kind {
        ColumnKind::Int16 => DataType::Int16,
        ColumnKind::Int32 => DataType::Int32,
        ColumnKind::Int64 => DataType::Int64,
        ColumnKind::Decimal {
            precision, scale, ..
        } if precision > DECIMAL128_DIGITS => DataType::Decimal256(precision, scale),
        ColumnKind::Decimal {
            precision, scale, ..
        } => DataType::Decimal128(precision, scale),
        ColumnKind::Float32 => DataType::Float32,
        ColumnKind::Float64 => DataType::Float64,
        ColumnKind::Date => DataType::Date32,
        ColumnKind::Time | ColumnKind::TimeTz => DataType::Time64(TimeUnit::Microsecond),
        ColumnKind::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
        ColumnKind::TimestampTz => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        ColumnKind::Boolean => DataType::Boolean,
        ColumnKind::Text { .. } | ColumnKind::TextBlob => DataType::Utf8,
        ColumnKind::Octets | ColumnKind::BinaryBlob => DataType::Binary,
        ColumnKind::Array => unreachable!("an ARRAY column's type is its ArrayColumn's"),
    }
}

/// The character set a text value arrives in: for CHAR and VARCHAR the low
/// byte of the subtype, for text BLOBs the scale slot (as the server
/// describes them).
fn text_charset(desc: &ColumnDesc) -> u8 {
    if desc.sql_type == sql_type::BLOB {
        desc.scale as u8
    } else {
        desc.charset_id()
    }
}

fn kind_of(desc: &ColumnDesc) -> Result<ColumnKind, String> {
    let scale = desc.scale;
    let integer = matches!(
        desc.sql_type,
        sql_type::SHORT | sql_type::LONG | sql_type::INT64 | sql_type::INT128
    );
    if integer && scale > 0 {
        return Err(format!(
            "{}: a positive scale is not Firebird's; cast the column in the query",
            type_name_of(desc)
        ));
    }
    if integer && -i32::from(scale) > i32::from(DECIMAL256_MAX_SCALE) {
        return Err(format!(
            "{} has more decimals than Arrow's decimal holds ({DECIMAL256_MAX_SCALE}); cast it \
             to fewer decimals or to VARCHAR in the query",
            type_name_of(desc)
        ));
    }
    // Firebird allows more decimals than digits (a literal 0.000…001 of
    // 20 decimals is a BIGINT of scale -20); Arrow does not, so such a
    // decimal is as wide as its decimals: every value of the storage
    // still fits, all after the point.
    let decimal = |width: u8, precision: u8| {
        let scale = (-scale) as u8;
        ColumnKind::Decimal {
            width,
            precision: precision.max(scale),
            scale: scale as i8,
        }
    };
    Ok(match desc.sql_type {
        sql_type::SHORT if scale < 0 => decimal(2, 5),
        sql_type::LONG if scale < 0 => decimal(4, 10),
        sql_type::INT64 if scale < 0 => decimal(8, 19),
        sql_type::SHORT => ColumnKind::Int16,
        sql_type::LONG => ColumnKind::Int32,
        sql_type::INT64 => ColumnKind::Int64,
        sql_type::INT128 => decimal(16, DECIMAL128_DIGITS),
        sql_type::FLOAT => ColumnKind::Float32,
        sql_type::DOUBLE | sql_type::D_FLOAT => ColumnKind::Float64,
        sql_type::TYPE_DATE => ColumnKind::Date,
        sql_type::TYPE_TIME => ColumnKind::Time,
        sql_type::TIMESTAMP => ColumnKind::Timestamp,
        sql_type::TIME_TZ | sql_type::TIME_TZ_EX => ColumnKind::TimeTz,
        sql_type::TIMESTAMP_TZ | sql_type::TIMESTAMP_TZ_EX => ColumnKind::TimestampTz,
        sql_type::BOOLEAN => ColumnKind::Boolean,
        sql_type::TEXT | sql_type::VARYING if desc.charset_id() == CHARSET_OCTETS => {
            ColumnKind::Octets
        }
        sql_type::TEXT => ColumnKind::Text { padded: true },
        sql_type::VARYING => ColumnKind::Text { padded: false },
        sql_type::BLOB
            if desc.subtype == BLOB_SUBTYPE_TEXT && text_charset(desc) != CHARSET_OCTETS =>
        {
            ColumnKind::TextBlob
        }
        sql_type::BLOB => ColumnKind::BinaryBlob,
        sql_type::ARRAY => return Err("ARRAY columns need their shape".into()),
        sql_type::DEC16 | sql_type::DEC34 => {
            return Err("DECFLOAT must be cast to text by the query".into())
        }
        other => return Err(format!("SQL type {other} is not supported")),
    })
}

/// A readable Firebird type name for metadata and error messages, from
/// what the server describes (a query's columns have no declared type).
pub fn type_name_of(desc: &ColumnDesc) -> String {
    let scaled = |base: &str| {
        if desc.scale < 0 {
            format!("NUMERIC({base}, scale {})", -desc.scale)
        } else {
            base.to_string()
        }
    };
    match desc.sql_type {
        sql_type::SHORT => scaled("SMALLINT"),
        sql_type::LONG => scaled("INTEGER"),
        sql_type::INT64 => scaled("BIGINT"),
        sql_type::INT128 => scaled("INT128"),
        sql_type::FLOAT => "FLOAT".into(),
        sql_type::DOUBLE | sql_type::D_FLOAT => "DOUBLE PRECISION".into(),
        sql_type::TYPE_DATE => "DATE".into(),
        sql_type::TYPE_TIME => "TIME".into(),
        sql_type::TIMESTAMP => "TIMESTAMP".into(),
        sql_type::TIME_TZ | sql_type::TIME_TZ_EX => "TIME WITH TIME ZONE".into(),
        sql_type::TIMESTAMP_TZ | sql_type::TIMESTAMP_TZ_EX => "TIMESTAMP WITH TIME ZONE".into(),
        sql_type::BOOLEAN => "BOOLEAN".into(),
        sql_type::DEC16 => "DECFLOAT(16)".into(),
        sql_type::DEC34 => "DECFLOAT(34)".into(),
        sql_type::TEXT => format!("CHAR({} bytes)", desc.length),
        sql_type::VARYING => format!("VARCHAR({} bytes)", desc.length),
        sql_type::BLOB => format!("BLOB SUB_TYPE {}", desc.subtype),
        other => format!("SQL type {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UTF8: &TypeOptions = &TypeOptions {
        none_text: TextDecoder::UTF8,
        decimal256: false,
    };

    fn desc(sql_type: i16, scale: i16, subtype: i16) -> ColumnDesc {
        ColumnDesc {
            name: "C".into(),
            sql_type,
            scale,
            subtype,
            length: 8,
            nullable: true,
        }
    }

    #[test]
    fn scaled_integers_become_decimals_sized_by_storage() {
        let col = OutputColumn::new("N", &desc(sql_type::INT64, -4, 1), None, UTF8).unwrap();
        assert_eq!(col.arrow_field().data_type(), &DataType::Decimal128(19, 4));
        let col = OutputColumn::new("N", &desc(sql_type::SHORT, -1, 1), None, UTF8).unwrap();
        assert_eq!(
            col.kind,
            ColumnKind::Decimal {
                width: 2,
                precision: 5,
                scale: 1
            }
        );
    }

    #[test]
    fn octets_are_binary_and_other_text_is_utf8() {
        let octets = OutputColumn::new("O", &desc(sql_type::TEXT, 0, 1), None, UTF8).unwrap();
        assert_eq!(octets.arrow_field().data_type(), &DataType::Binary);
        let text = OutputColumn::new("T", &desc(sql_type::VARYING, 0, 4), None, UTF8).unwrap();
        assert_eq!(text.arrow_field().data_type(), &DataType::Utf8);
        // A text BLOB carries its character set in the scale slot.
        let octets_blob = OutputColumn::new("B", &desc(sql_type::BLOB, 1, 1), None, UTF8).unwrap();
        assert_eq!(octets_blob.kind, ColumnKind::BinaryBlob);
        let win_blob = OutputColumn::new("B", &desc(sql_type::BLOB, 53, 1), None, UTF8).unwrap();
        assert_eq!(win_blob.kind, ColumnKind::TextBlob);
        assert_eq!(win_blob.text, TextDecoder::for_charset("WIN1252").unwrap());
    }

    #[test]
    fn each_column_decodes_its_own_character_set() {
        let win1252 = TextDecoder::for_charset("WIN1252").unwrap();
        let options = &TypeOptions {
            none_text: win1252,
            ..TypeOptions::default()
        };
        let utf8 = OutputColumn::new("U", &desc(sql_type::VARYING, 0, 4), None, options).unwrap();
        assert_eq!(utf8.text, TextDecoder::UTF8);
        let none = OutputColumn::new("N", &desc(sql_type::VARYING, 0, 0), None, options).unwrap();
        assert_eq!(
            none.text, win1252,
            "NONE columns are decoded as the user says"
        );
        let dos437 = OutputColumn::new("D", &desc(sql_type::VARYING, 0, 10), None, UTF8);
        assert!(dos437.unwrap_err().contains("DOS437"));
    }

    #[test]
    fn type_name_goes_into_field_metadata() {
        let col = OutputColumn::new("T", &desc(sql_type::TIME_TZ, 0, 0), None, UTF8).unwrap();
        assert_eq!(
            col.arrow_field()
                .metadata()
                .get(TYPE_METADATA_KEY)
                .map(String::as_str),
            Some("TIME WITH TIME ZONE")
        );
        let col = OutputColumn::new(
            "D",
            &desc(sql_type::VARYING, 0, 4),
            Some("DECFLOAT(34)"),
            UTF8,
        )
        .unwrap();
        assert_eq!(col.type_name, "DECFLOAT(34)");
    }

    #[test]
    fn int128_follows_its_declared_type_never_its_values() {
        // Every INT128 is the Decimal128(38, s) every reader takes: a bare
        // one, NUMERIC(p > 18, s) and DECIMAL, and a scaled expression.
        let bare = OutputColumn::new("I", &desc(sql_type::INT128, 0, 0), None, UTF8).unwrap();
        assert_eq!(bare.arrow_field().data_type(), &DataType::Decimal128(38, 0));
        let numeric = desc(sql_type::INT128, -2, SUBTYPE_NUMERIC);
        let col = OutputColumn::new("N", &numeric, None, UTF8).unwrap();
        assert_eq!(col.arrow_field().data_type(), &DataType::Decimal128(38, 2));
        let decimal = desc(sql_type::INT128, 0, SUBTYPE_DECIMAL);
        let col = OutputColumn::new("D", &decimal, None, UTF8).unwrap();
        assert_eq!(col.arrow_field().data_type(), &DataType::Decimal128(38, 0));
        let scaled = desc(sql_type::INT128, -3, 0);
        let col = OutputColumn::new("E", &scaled, None, UTF8).unwrap();
        assert_eq!(col.arrow_field().data_type(), &DataType::Decimal128(38, 3));

        let wide = TypeOptions {
            decimal256: true,
            ..TypeOptions::default()
        };
        let col = OutputColumn::new("N", &numeric, None, &wide).unwrap();
        assert_eq!(col.arrow_field().data_type(), &DataType::Decimal256(39, 2));
        let col = OutputColumn::new("I", &desc(sql_type::INT128, 0, 0), None, &wide).unwrap();
        assert_eq!(col.arrow_field().data_type(), &DataType::Decimal256(39, 0));
        // Narrower storage stays Decimal128 either way.
        let bigint = OutputColumn::new("B", &desc(sql_type::INT64, -2, 1), None, &wide).unwrap();
        assert_eq!(
            bigint.arrow_field().data_type(),
            &DataType::Decimal128(19, 2)
        );
    }

    #[test]
    fn arrays_are_refused() {
        assert!(OutputColumn::new("A", &desc(sql_type::ARRAY, 0, 0), None, UTF8).is_err());
    }
}
