//! The small hand-written tables: ALL_TYPES (a column of every Firebird 5
//! type, filled with the values most likely to break a decoder or a CSV
//! writer), the quoted mixed-case table, and EMPTY_TABLE.
//!
//! These exist for correctness tests, not volume: an unloader that gets
//! these few rows right byte for byte handles the type system; the TPC-C
//! tables then test speed and scale.
//!
//! # ALL_TYPES rows
//!
//! Columns not mentioned for a row are NULL; `ID` is never NULL.
//!
//! | ID | what the row carries |
//! |----|----------------------|
//! | 1  | every column NULL |
//! | 2  | lower bounds: SMALLINT -32768, INTEGER -2147483648, BIGINT -9223372036854775808, INT128 -(10^38 - 1) (the most digits Arrow's decimal128, and every reader, holds: INT128's own -2^127 has 39, which only `--decimal256` writes; `hostile.rs` tests that); each NUMERIC/DECIMAL at minus its declared precision's largest value (-999.9, -999999.999, -99999999999999.9999, -(10^32 - 10^-6), -99999999.99); FLOAT -3.4e38, DOUBLE -1.7976931348623157e308, DECFLOAT -9.99..E+384 / -9.99..E+6144; DATE 0001-01-01, TIME 00:00, TIMESTAMP 0001-01-01 00:00, TIME/TIMESTAMP WITH TIME ZONE 00:00 / 0001-01-01 00:00 UTC; FALSE; empty string `''` in every string column, empty OCTETS, zero-length blobs |
//! | 3  | upper bounds: 32767, 2147483647, 9223372036854775807, INT128 10^38 - 1, the positive NUMERIC/DECIMAL maxima, FLOAT 3.4e38, DOUBLE 1.7976931348623157e308, DECFLOAT 9.99..E+384 / 9.99..E+6144; DATE 9999-12-31, TIME 23:59:59.9999, TIMESTAMP 9999-12-31 23:59:59.9999, with time zone the same in UTC; TRUE; strings filling their width: CHAR(10) `ABCDEFGHIJ`, VARCHAR(100) 25 × `€ß日😀` (100 characters, 300 bytes), WIN1252 10 × `€ÿ`, OCTETS 8 × FF and 00..FF in 16 bytes; blobs `Z` and FF |
//! | 4  | zeros: 0 in every integer and NUMERIC column, FLOAT 0, DOUBLE -0.0 (negative zero), DECFLOAT(16) -0, DECFLOAT(34) 0E+10 (zero with an exponent); DATE 1970-01-01, TIME 00:00:00.0001, TIMESTAMP 1970-01-01 00:00, TIME 12:00 +05:30, TIMESTAMP 1970-01-01 00:00 +00:00; CSV punctuation: CHAR `a,b` (padded), VARCHAR `comma, and "double quotes"`, WIN1252 `"quoted"`, OCTETS `,"` and `","` bytes, text blob `one, "two", three`, binary blob 00 |
//! | 5  | line breaks and whitespace: ±1 and the smallest step of each scale (-0.1, 0.001, -0.0001, 0.000001, -0.01); FLOAT 1.1, DOUBLE 0.1, DECFLOAT 0.1 and 1.000 (trailing zeros kept); DATE 2000-02-29, TIME 12:34:56.7890, TIMESTAMP 2000-02-29 12:34:56.7891; TIME 23:59:59.9999 -03:00; TIMESTAMP `2024-03-31 02:30:00 Europe/Prague` (inside the spring-forward gap: the engine stores 03:30); CHAR ` x` (leading space), VARCHAR with LF, CR, CRLF and TAB inside, WIN1252 `  padded  ` (leading and trailing spaces), OCTETS 0D0A and 0D0A09, text blob with CRLF, LF and a trailing CR, binary blob 0D0A |
//! | 6  | non-ASCII: ordinary mid-range numbers (42, 123456789, 1234567890123456789, a 38-digit INT128, 123.4, -123456.789, ...), FLOAT -1.5, DOUBLE 3.141592653589793; DATE 2024-02-29, TIME 02:30, TIMESTAMP 2024-10-27 02:30; TIME `02:30:00 Europe/Prague`, TIMESTAMP `2024-10-27 02:30:00 Europe/Prague` (the ambiguous autumn hour); CHAR `é` (one two-byte character, then padding), VARCHAR `é ß 日本語 😀`, WIN1252 `café €`, CHAR OCTETS 00FF10 (then zero padding), VARCHAR OCTETS 00FF1000, text blob `Grüße aus Köln, 日本語, 😀`, binary blob 00FF10000102 |
//! | 7  | null markers and tiny magnitudes: the literal text `\N` in CHAR, VARCHAR, OCTETS and both blobs, `NULL` in the WIN1252 column; FLOAT 1.17549435e-38 (smallest normal), DOUBLE 1e-300, DECFLOAT 1E-398 / 1E-6176 (smallest subnormals); DATE 1858-11-17 (Firebird's day zero), TIMESTAMP 1858-11-17 00:00, TIME 11:59:59; TIME `11:59:59 +14:00`, TIMESTAMP `1858-11-17 12:00:00 +14:00` |
//! | 8  | storage extremes beyond the declared precision (what the storage type can hold): NUMERIC(4,1) -3276.8, NUMERIC(9,3) 2147483.647, NUMERIC(18,4) -922337203685477.5808, DECIMAL(10,2) -92233720368547758.08 (not NUMERIC(38,6): its INT128 storage's extreme has 39 digits, which no Arrow decimal128 holds and Parquet and Arrow refuse in a NUMERIC; `hostile.rs` tests that); DECFLOAT(16) Infinity, DECFLOAT(34) NaN; DOUBLE 2.2250738585072014e-308 (smallest normal; the engine flushes subnormal doubles to zero); everything else NULL |
//! | 9  | big blobs: a text blob of about 10 kB (numbered lines with commas, quotes, tabs, CRLF, non-ASCII) and a 76,800-byte binary blob (00..FF repeated 300 times, bigger than one 64 kB segment); VARCHAR `it's; back\slash; semi;colon`, CHAR `'` ; DECFLOAT(16) -Infinity, DECFLOAT(34) 1.000000000000000000000000000000000 (34 digits); everything else NULL |
//! | 10 | most columns NULL, the rest ordinary values (SMALLINT 12, BIGINT 1234, 1.5, 2.5, 3.5, DECFLOAT 2.5, TIME 08:00, TIME `08:00:00 America/New_York`, TRUE, VARCHAR `ordinary`, OCTETS `A`, text blob `ordinary`) |
//! | 11 | whitespace only: CHAR, VARCHAR, OCTETS and blobs hold a single space, WIN1252 a single TAB; FLOAT -0.0, DOUBLE 0.30000000000000004; TIMESTAMP WITH TIME ZONE `2024-06-30 23:59:59.9999 -10:00` |
//! | 12 | lone quote characters: CHAR and VARCHAR `"`, WIN1252 `'`, OCTETS `"` and `'`, text blob `"""`; FLOAT 16777217 (not representable: stored as 16777216), DOUBLE 9007199254740993 (stored as ...992) |
//!
//! The quoted table is `"Mixed Case ""Quoted"""` (stored name
//! `Mixed Case "Quoted"`) with columns `"Id"`, `"Display Name"`,
//! `"lower_case"` and `PLAIN_UPPER`, and three rows. EMPTY_TABLE has a
//! primary key and no rows.

use crate::sql::{hex_literal, literal, quote_ident};

/// The stored name of the quoted, mixed-case table.
pub const MIXED_NAME: &str = "Mixed Case \"Quoted\"";

/// The columns of ALL_TYPES and their SQL types, in table order.
pub const ALL_TYPES_COLUMNS: [(&str, &str); 27] = [
    ("ID", "INTEGER NOT NULL"),
    ("C_SMALLINT", "SMALLINT"),
    ("C_INTEGER", "INTEGER"),
    ("C_BIGINT", "BIGINT"),
    ("C_INT128", "INT128"),
    ("C_NUMERIC_4_1", "NUMERIC(4,1)"),
    ("C_NUMERIC_9_3", "NUMERIC(9,3)"),
    ("C_NUMERIC_18_4", "NUMERIC(18,4)"),
    ("C_NUMERIC_38_6", "NUMERIC(38,6)"),
    ("C_DECIMAL_10_2", "DECIMAL(10,2)"),
    ("C_FLOAT", "FLOAT"),
    ("C_DOUBLE", "DOUBLE PRECISION"),
    ("C_DECFLOAT16", "DECFLOAT(16)"),
    ("C_DECFLOAT34", "DECFLOAT(34)"),
    ("C_DATE", "DATE"),
    ("C_TIME", "TIME"),
    ("C_TIMESTAMP", "TIMESTAMP"),
    ("C_TIME_TZ", "TIME WITH TIME ZONE"),
    ("C_TIMESTAMP_TZ", "TIMESTAMP WITH TIME ZONE"),
    ("C_BOOLEAN", "BOOLEAN"),
    ("C_CHAR", "CHAR(10)"),
    ("C_VARCHAR", "VARCHAR(100)"),
    ("C_VARCHAR_WIN1252", "VARCHAR(20) CHARACTER SET WIN1252"),
    ("C_CHAR_OCTETS", "CHAR(8) CHARACTER SET OCTETS"),
    ("C_VARCHAR_OCTETS", "VARCHAR(16) CHARACTER SET OCTETS"),
    ("C_BLOB_TEXT", "BLOB SUB_TYPE TEXT"),
    ("C_BLOB_BINARY", "BLOB SUB_TYPE BINARY"),
];

/// Number of ALL_TYPES rows.
pub const ALL_TYPES_ROWS: u64 = 12;

/// One ALL_TYPES row: its ID and the SQL expressions of its non-NULL columns.
struct TypesRow {
    id: i32,
    values: Vec<(&'static str, String)>,
}

pub fn all_types_create_sql() -> String {
    let columns: Vec<String> = ALL_TYPES_COLUMNS
        .iter()
        .map(|(name, ty)| format!("{name} {ty}"))
        .collect();
    format!(
        "CREATE TABLE ALL_TYPES (\n{},\nCONSTRAINT PK_ALL_TYPES PRIMARY KEY (ID))",
        columns.join(",\n")
    )
}

/// One `EXECUTE BLOCK` inserting every ALL_TYPES row. A block rather than
/// plain INSERTs because the 76,800-byte binary blob is built server-side
/// (its hex literal would not fit the 64 KiB statement limit).
pub fn all_types_fill_sql() -> String {
    let pattern: Vec<u8> = (0..=255).collect();
    let mut out = String::from(
        "EXECUTE BLOCK AS\n\
         DECLARE big_binary BLOB SUB_TYPE BINARY;\n\
         DECLARE k INTEGER = 1;\n\
         BEGIN\n",
    );
    out.push_str(&format!("big_binary = {};\n", hex_literal(&pattern)));
    out.push_str(&format!(
        "WHILE (k < 300) DO\nBEGIN\nbig_binary = big_binary || {};\nk = k + 1;\nEND\n",
        hex_literal(&pattern)
    ));
    for row in all_types_rows() {
        let mut names = vec!["ID"];
        let mut values = vec![row.id.to_string()];
        for (name, value) in &row.values {
            debug_assert!(ALL_TYPES_COLUMNS.iter().any(|(n, _)| n == name), "{name}");
            names.push(name);
            values.push(value.clone());
        }
        out.push_str(&format!(
            "INSERT INTO ALL_TYPES ({}) VALUES ({});\n",
            names.join(", "),
            values.join(", ")
        ));
    }
    out.push_str("END");
    out
}

/// About 10 kB of text with everything a CSV writer must quote.
pub fn big_text() -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 10_000 {
        text.push_str(&format!(
            "{i:04}: it's a line, with \"quotes\",\ttabs and Grüße €\r\n"
        ));
        i += 1;
    }
    text
}

fn s(text: &str) -> String {
    literal(text)
}

fn cast(text: &str, ty: &str) -> String {
    format!("CAST({} AS {ty})", literal(text))
}

fn chars(codes: &[u8]) -> String {
    codes
        .iter()
        .map(|c| format!("ASCII_CHAR({c})"))
        .collect::<Vec<_>>()
        .join(" || ")
}

fn all_types_rows() -> Vec<TypesRow> {
    let row = |id: i32, values: Vec<(&'static str, String)>| TypesRow { id, values };
    let v = |name: &'static str, sql: &str| (name, sql.to_string());
    vec![
        row(1, vec![]),
        row(
            2,
            vec![
                v("C_SMALLINT", "-32768"),
                v("C_INTEGER", "-2147483648"),
                v("C_BIGINT", &cast("-9223372036854775808", "BIGINT")),
                v(
                    "C_INT128",
                    &cast("-99999999999999999999999999999999999999", "INT128"),
                ),
                v("C_NUMERIC_4_1", "-999.9"),
                v("C_NUMERIC_9_3", "-999999.999"),
                v("C_NUMERIC_18_4", "-99999999999999.9999"),
                v(
                    "C_NUMERIC_38_6",
                    &cast("-99999999999999999999999999999999.999999", "NUMERIC(38,6)"),
                ),
                v("C_DECIMAL_10_2", "-99999999.99"),
                v("C_FLOAT", "-3.4e38"),
                v("C_DOUBLE", "-1.7976931348623157e308"),
                v(
                    "C_DECFLOAT16",
                    &cast("-9.999999999999999E+384", "DECFLOAT(16)"),
                ),
                v(
                    "C_DECFLOAT34",
                    &cast("-9.999999999999999999999999999999999E+6144", "DECFLOAT(34)"),
                ),
                v("C_DATE", "DATE '0001-01-01'"),
                v("C_TIME", "TIME '00:00:00'"),
                v("C_TIMESTAMP", "TIMESTAMP '0001-01-01 00:00:00'"),
                v("C_TIME_TZ", "TIME '00:00:00 UTC'"),
                v("C_TIMESTAMP_TZ", "TIMESTAMP '0001-01-01 00:00:00 UTC'"),
                v("C_BOOLEAN", "FALSE"),
                v("C_CHAR", "''"),
                v("C_VARCHAR", "''"),
                v("C_VARCHAR_WIN1252", "''"),
                v("C_CHAR_OCTETS", &hex_literal(&[])),
                v("C_VARCHAR_OCTETS", &hex_literal(&[])),
                v("C_BLOB_TEXT", "''"),
                v("C_BLOB_BINARY", &hex_literal(&[])),
            ],
        ),
        row(
            3,
            vec![
                v("C_SMALLINT", "32767"),
                v("C_INTEGER", "2147483647"),
                v("C_BIGINT", "9223372036854775807"),
                v(
                    "C_INT128",
                    &cast("99999999999999999999999999999999999999", "INT128"),
                ),
                v("C_NUMERIC_4_1", "999.9"),
                v("C_NUMERIC_9_3", "999999.999"),
                v("C_NUMERIC_18_4", "99999999999999.9999"),
                v(
                    "C_NUMERIC_38_6",
                    &cast("99999999999999999999999999999999.999999", "NUMERIC(38,6)"),
                ),
                v("C_DECIMAL_10_2", "99999999.99"),
                v("C_FLOAT", "3.4e38"),
                v("C_DOUBLE", "1.7976931348623157e308"),
                v(
                    "C_DECFLOAT16",
                    &cast("9.999999999999999E+384", "DECFLOAT(16)"),
                ),
                v(
                    "C_DECFLOAT34",
                    &cast("9.999999999999999999999999999999999E+6144", "DECFLOAT(34)"),
                ),
                v("C_DATE", "DATE '9999-12-31'"),
                v("C_TIME", "TIME '23:59:59.9999'"),
                v("C_TIMESTAMP", "TIMESTAMP '9999-12-31 23:59:59.9999'"),
                v("C_TIME_TZ", "TIME '23:59:59.9999 UTC'"),
                v("C_TIMESTAMP_TZ", "TIMESTAMP '9999-12-31 23:59:59.9999 UTC'"),
                v("C_BOOLEAN", "TRUE"),
                v("C_CHAR", &s("ABCDEFGHIJ")),
                v("C_VARCHAR", &s(&"€ß日😀".repeat(25))),
                v("C_VARCHAR_WIN1252", &s(&"€ÿ".repeat(10))),
                v("C_CHAR_OCTETS", &hex_literal(&[0xFF; 8])),
                v(
                    "C_VARCHAR_OCTETS",
                    &hex_literal(&(0..16).map(|i| i * 0x11).collect::<Vec<u8>>()),
                ),
                v("C_BLOB_TEXT", "'Z'"),
                v("C_BLOB_BINARY", &hex_literal(&[0xFF])),
            ],
        ),
        row(
            4,
            vec![
                v("C_SMALLINT", "0"),
                v("C_INTEGER", "0"),
                v("C_BIGINT", "0"),
                v("C_INT128", "CAST(0 AS INT128)"),
                v("C_NUMERIC_4_1", "0.0"),
                v("C_NUMERIC_9_3", "0.000"),
                v("C_NUMERIC_18_4", "0.0000"),
                v("C_NUMERIC_38_6", "0.000000"),
                v("C_DECIMAL_10_2", "0.00"),
                v("C_FLOAT", "0e0"),
                v("C_DOUBLE", "-0e0"),
                v("C_DECFLOAT16", &cast("-0", "DECFLOAT(16)")),
                v("C_DECFLOAT34", &cast("0E+10", "DECFLOAT(34)")),
                v("C_DATE", "DATE '1970-01-01'"),
                v("C_TIME", "TIME '00:00:00.0001'"),
                v("C_TIMESTAMP", "TIMESTAMP '1970-01-01 00:00:00'"),
                v("C_TIME_TZ", "TIME '12:00:00 +05:30'"),
                v("C_TIMESTAMP_TZ", "TIMESTAMP '1970-01-01 00:00:00 +00:00'"),
                v("C_BOOLEAN", "FALSE"),
                v("C_CHAR", &s("a,b")),
                v("C_VARCHAR", &s("comma, and \"double quotes\"")),
                v("C_VARCHAR_WIN1252", &s("\"quoted\"")),
                v("C_CHAR_OCTETS", &hex_literal(b",\"")),
                v("C_VARCHAR_OCTETS", &hex_literal(b"\",\"")),
                v("C_BLOB_TEXT", &s("one, \"two\", three")),
                v("C_BLOB_BINARY", &hex_literal(&[0])),
            ],
        ),
        row(
            5,
            vec![
                v("C_SMALLINT", "-1"),
                v("C_INTEGER", "1"),
                v("C_BIGINT", "-1"),
                v("C_INT128", "CAST(1 AS INT128)"),
                v("C_NUMERIC_4_1", "-0.1"),
                v("C_NUMERIC_9_3", "0.001"),
                v("C_NUMERIC_18_4", "-0.0001"),
                v("C_NUMERIC_38_6", "0.000001"),
                v("C_DECIMAL_10_2", "-0.01"),
                v("C_FLOAT", "1.1"),
                v("C_DOUBLE", "0.1"),
                v("C_DECFLOAT16", &cast("0.1", "DECFLOAT(16)")),
                v("C_DECFLOAT34", &cast("1.000", "DECFLOAT(34)")),
                v("C_DATE", "DATE '2000-02-29'"),
                v("C_TIME", "TIME '12:34:56.7890'"),
                v("C_TIMESTAMP", "TIMESTAMP '2000-02-29 12:34:56.7891'"),
                v("C_TIME_TZ", "TIME '23:59:59.9999 -03:00'"),
                v(
                    "C_TIMESTAMP_TZ",
                    "TIMESTAMP '2024-03-31 02:30:00 Europe/Prague'",
                ),
                v("C_BOOLEAN", "TRUE"),
                v("C_CHAR", &s(" x")),
                (
                    "C_VARCHAR",
                    format!(
                        "'LF' || {} || 'CR' || {} || 'CRLF' || {} || 'TAB' || {} || 'end'",
                        chars(&[10]),
                        chars(&[13]),
                        chars(&[13, 10]),
                        chars(&[9])
                    ),
                ),
                v("C_VARCHAR_WIN1252", &s("  padded  ")),
                v("C_CHAR_OCTETS", &hex_literal(b"\r\n")),
                v("C_VARCHAR_OCTETS", &hex_literal(b"\r\n\t")),
                (
                    "C_BLOB_TEXT",
                    format!(
                        "'first line' || {} || 'second line' || {} || 'third' || {}",
                        chars(&[13, 10]),
                        chars(&[10]),
                        chars(&[13])
                    ),
                ),
                v("C_BLOB_BINARY", &hex_literal(b"\r\n")),
            ],
        ),
        row(
            6,
            vec![
                v("C_SMALLINT", "42"),
                v("C_INTEGER", "123456789"),
                v("C_BIGINT", "1234567890123456789"),
                v(
                    "C_INT128",
                    &cast("12345678901234567890123456789012345678", "INT128"),
                ),
                v("C_NUMERIC_4_1", "123.4"),
                v("C_NUMERIC_9_3", "-123456.789"),
                v("C_NUMERIC_18_4", "12345678901234.5678"),
                v(
                    "C_NUMERIC_38_6",
                    &cast("-12345678901234567890123456789012.345678", "NUMERIC(38,6)"),
                ),
                v("C_DECIMAL_10_2", "12345678.90"),
                v("C_FLOAT", "-1.5"),
                v("C_DOUBLE", "3.141592653589793"),
                v("C_DECFLOAT16", &cast("1234567890.123456", "DECFLOAT(16)")),
                v(
                    "C_DECFLOAT34",
                    &cast("-1234567890123456789012345678901234", "DECFLOAT(34)"),
                ),
                v("C_DATE", "DATE '2024-02-29'"),
                v("C_TIME", "TIME '02:30:00'"),
                v("C_TIMESTAMP", "TIMESTAMP '2024-10-27 02:30:00'"),
                v("C_TIME_TZ", "TIME '02:30:00 Europe/Prague'"),
                v(
                    "C_TIMESTAMP_TZ",
                    "TIMESTAMP '2024-10-27 02:30:00 Europe/Prague'",
                ),
                v("C_BOOLEAN", "TRUE"),
                v("C_CHAR", &s("é")),
                v("C_VARCHAR", &s("é ß 日本語 😀")),
                v("C_VARCHAR_WIN1252", &s("café €")),
                v("C_CHAR_OCTETS", &hex_literal(&[0x00, 0xFF, 0x10])),
                v("C_VARCHAR_OCTETS", &hex_literal(&[0x00, 0xFF, 0x10, 0x00])),
                v("C_BLOB_TEXT", &s("Grüße aus Köln, 日本語, 😀")),
                v(
                    "C_BLOB_BINARY",
                    &hex_literal(&[0x00, 0xFF, 0x10, 0x00, 0x01, 0x02]),
                ),
            ],
        ),
        row(
            7,
            vec![
                v("C_SMALLINT", "1"),
                v("C_INTEGER", "-1"),
                v("C_BIGINT", "1"),
                v("C_INT128", "CAST(-1 AS INT128)"),
                v("C_NUMERIC_4_1", "0.1"),
                v("C_NUMERIC_9_3", "-0.001"),
                v("C_NUMERIC_18_4", "0.0001"),
                v("C_NUMERIC_38_6", "-0.000001"),
                v("C_DECIMAL_10_2", "0.01"),
                v("C_FLOAT", "1.17549435e-38"),
                v("C_DOUBLE", "1e-300"),
                v("C_DECFLOAT16", &cast("1E-398", "DECFLOAT(16)")),
                v("C_DECFLOAT34", &cast("1E-6176", "DECFLOAT(34)")),
                v("C_DATE", "DATE '1858-11-17'"),
                v("C_TIME", "TIME '11:59:59'"),
                v("C_TIMESTAMP", "TIMESTAMP '1858-11-17 00:00:00'"),
                v("C_TIME_TZ", "TIME '11:59:59 +14:00'"),
                v("C_TIMESTAMP_TZ", "TIMESTAMP '1858-11-17 12:00:00 +14:00'"),
                v("C_BOOLEAN", "FALSE"),
                v("C_CHAR", &s("\\N")),
                v("C_VARCHAR", &s("\\N")),
                v("C_VARCHAR_WIN1252", &s("NULL")),
                v("C_CHAR_OCTETS", &hex_literal(b"\\N")),
                v("C_VARCHAR_OCTETS", &hex_literal(b"\\N")),
                v("C_BLOB_TEXT", &s("\\N")),
                v("C_BLOB_BINARY", &hex_literal(b"\\N")),
            ],
        ),
        row(
            8,
            vec![
                v("C_NUMERIC_4_1", "-3276.8"),
                v("C_NUMERIC_9_3", "2147483.647"),
                v(
                    "C_NUMERIC_18_4",
                    &cast("-922337203685477.5808", "NUMERIC(18,4)"),
                ),
                v(
                    "C_DECIMAL_10_2",
                    &cast("-92233720368547758.08", "DECIMAL(10,2)"),
                ),
                v("C_DOUBLE", "2.2250738585072014e-308"),
                v("C_DECFLOAT16", &cast("Infinity", "DECFLOAT(16)")),
                v("C_DECFLOAT34", &cast("NaN", "DECFLOAT(34)")),
            ],
        ),
        row(
            9,
            vec![
                v("C_CHAR", &s("'")),
                v("C_VARCHAR", &s("it's; back\\slash; semi;colon")),
                v("C_DECFLOAT16", &cast("-Infinity", "DECFLOAT(16)")),
                v(
                    "C_DECFLOAT34",
                    &cast("1.000000000000000000000000000000000", "DECFLOAT(34)"),
                ),
                ("C_BLOB_TEXT", literal(&big_text())),
                v("C_BLOB_BINARY", ":big_binary"),
            ],
        ),
        row(
            10,
            vec![
                v("C_SMALLINT", "12"),
                v("C_BIGINT", "1234"),
                v("C_NUMERIC_4_1", "1.5"),
                v("C_NUMERIC_18_4", "2.5"),
                v("C_DECIMAL_10_2", "3.5"),
                v("C_DOUBLE", "2.5"),
                v("C_DECFLOAT34", &cast("2.5", "DECFLOAT(34)")),
                v("C_TIME", "TIME '08:00:00'"),
                v("C_TIME_TZ", "TIME '08:00:00 America/New_York'"),
                v("C_BOOLEAN", "TRUE"),
                v("C_VARCHAR", &s("ordinary")),
                v("C_CHAR_OCTETS", &hex_literal(b"A")),
                v("C_BLOB_TEXT", &s("ordinary")),
            ],
        ),
        row(
            11,
            vec![
                v("C_FLOAT", "-0e0"),
                v("C_DOUBLE", "0.30000000000000004e0"),
                v(
                    "C_TIMESTAMP_TZ",
                    "TIMESTAMP '2024-06-30 23:59:59.9999 -10:00'",
                ),
                v("C_CHAR", &s(" ")),
                v("C_VARCHAR", &s(" ")),
                v("C_VARCHAR_WIN1252", &chars(&[9])),
                v("C_CHAR_OCTETS", &hex_literal(b" ")),
                v("C_VARCHAR_OCTETS", &hex_literal(b" ")),
                v("C_BLOB_TEXT", &s(" ")),
                v("C_BLOB_BINARY", &hex_literal(b" ")),
            ],
        ),
        row(
            12,
            vec![
                v("C_FLOAT", "16777217e0"),
                v("C_DOUBLE", "9007199254740993e0"),
                v("C_CHAR", &s("\"")),
                v("C_VARCHAR", &s("\"")),
                v("C_VARCHAR_WIN1252", &s("'")),
                v("C_CHAR_OCTETS", &hex_literal(b"\"")),
                v("C_VARCHAR_OCTETS", &hex_literal(b"'")),
                v("C_BLOB_TEXT", &s("\"\"\"")),
            ],
        ),
    ]
}

/// `CREATE TABLE` for the quoted, mixed-case table.
pub fn mixed_create_sql() -> String {
    format!(
        "CREATE TABLE {} (\n\
         \"Id\" INTEGER NOT NULL PRIMARY KEY,\n\
         \"Display Name\" VARCHAR(30),\n\
         \"lower_case\" INTEGER,\n\
         PLAIN_UPPER VARCHAR(10))",
        quote_ident(MIXED_NAME)
    )
}

pub const MIXED_ROWS: u64 = 3;

pub fn mixed_fill_sql() -> Vec<String> {
    let table = quote_ident(MIXED_NAME);
    [
        "1, 'first', 10, 'A'",
        "2, 'second, with comma', NULL, 'B'",
        "3, NULL, -3, NULL",
    ]
    .iter()
    .map(|values| {
        format!(
            "INSERT INTO {table} (\"Id\", \"Display Name\", \"lower_case\", PLAIN_UPPER) VALUES ({values})"
        )
    })
    .collect()
}

pub fn empty_create_sql() -> &'static str {
    "CREATE TABLE EMPTY_TABLE (\n\
     ID INTEGER NOT NULL PRIMARY KEY,\n\
     NAME VARCHAR(20),\n\
     CREATED TIMESTAMP)"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_only_real_columns_once() {
        let rows = all_types_rows();
        assert_eq!(rows.len() as u64, ALL_TYPES_ROWS);
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row.id, i as i32 + 1);
            let mut seen = std::collections::HashSet::new();
            for (name, _) in &row.values {
                assert!(ALL_TYPES_COLUMNS.iter().any(|(n, _)| n == name), "{name}");
                assert!(seen.insert(*name), "row {} sets {name} twice", row.id);
            }
        }
    }

    #[test]
    fn every_column_has_a_value_somewhere() {
        let rows = all_types_rows();
        for (name, _) in &ALL_TYPES_COLUMNS[1..] {
            assert!(
                rows.iter().any(|r| r.values.iter().any(|(n, _)| n == name)),
                "{name} is NULL in every row"
            );
        }
    }

    #[test]
    fn the_fill_block_fits_one_statement() {
        let sql = all_types_fill_sql();
        assert!(sql.len() < u16::MAX as usize, "{} bytes", sql.len());
        assert_eq!(sql.matches("INSERT INTO ALL_TYPES").count(), 12);
        let text = big_text();
        assert!((10_000..10_100).contains(&text.len()));
        assert!(text.contains("it's"));
    }
}
