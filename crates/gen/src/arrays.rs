//! ARRAY columns in test databases: Firebird's own EMPLOYEE example, built
//! from the `employee.sql` script Firebird ships (Debian:
//! `firebird3.0-examples`), with its two ARRAY columns filled; and
//! ARRAY_TYPES, an array of each element type fbunload maps, with odd
//! bounds.
//!
//! SQL cannot write an array: only the client's slice calls can. So values
//! are stored with `Transaction::write_array` and bound by id into an
//! UPDATE, as a C program would.

use fbunload_client::{element, ArrayShape, Attachment, BlobId, ClientError, ElementType};
use fbunload_client::{Transaction, TransactionMode};

/// Firebird's TIME ZONE id of UTC.
const UTC_ZONE: u16 = 65535;
/// Days from 1858-11-17 (Firebird's day zero) to 1970-01-01.
const UNIX_EPOCH_DAY: i32 = 40_587;

/// The statements of an isql script such as `employee.sql`, in order, to
/// run one by one: `SET TERM` is followed, and what only isql understands
/// (CREATE DATABASE, CONNECT, SET SQL DIALECT/NAMES/AUTODDL, COMMIT) is
/// left out. A procedure with SUSPEND but no RETURNS gets EXIT instead, as
/// Firebird 5 requires (Firebird's own 3.0 script has three).
pub fn script_statements(script: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut terminator = ";".to_string();
    let mut current = String::new();
    let mut chars = script.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '\'' || c == '"' {
            current.push(c);
            for (_, d) in chars.by_ref() {
                current.push(d);
                if d == c {
                    break;
                }
            }
        } else if script[at..].starts_with("/*") {
            chars.next();
            while let Some((i, _)) = chars.next() {
                if script[i..].starts_with("*/") {
                    chars.next();
                    break;
                }
            }
            current.push(' ');
        } else if script[at..].starts_with("--") {
            for (_, d) in chars.by_ref() {
                if d == '\n' {
                    break;
                }
            }
            current.push('\n');
        } else if script[at..].starts_with(terminator.as_str()) {
            for _ in 1..terminator.chars().count() {
                chars.next();
            }
            let statement = current.trim().to_string();
            current.clear();
            let upper = statement.to_ascii_uppercase();
            let words: Vec<&str> = upper.split_whitespace().collect();
            match words.as_slice() {
                ["SET", "TERM", new, ..] => terminator = new.to_string(),
                [] | ["COMMIT", ..] | ["CONNECT", ..] | ["CREATE", "DATABASE", ..] => {}
                ["SET", next, ..] if !matches!(*next, "GENERATOR" | "STATISTICS") => {}
                ["CREATE", "PROCEDURE", ..] if !header_returns(&upper) => {
                    statements.push(suspend_to_exit(&statement))
                }
                _ => statements.push(statement),
            }
        } else {
            current.push(c);
        }
    }
    statements
}

/// Whether a CREATE PROCEDURE declares output parameters (before its AS).
fn header_returns(upper: &str) -> bool {
    let words: Vec<&str> = upper
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let header = words.iter().take_while(|w| **w != "AS");
    header.into_iter().any(|w| *w == "RETURNS")
}

fn suspend_to_exit(statement: &str) -> String {
    let mut out = String::with_capacity(statement.len());
    let mut rest = statement;
    while let Some(at) = rest.to_ascii_uppercase().find("SUSPEND") {
        out.push_str(&rest[..at]);
        out.push_str("EXIT");
        rest = &rest[at + "SUSPEND".len()..];
    }
    out.push_str(rest);
    out
}

fn shape(relation: &str, field: &str, element: ElementType, bounds: &[(i32, i32)]) -> ArrayShape {
    ArrayShape {
        relation: relation.into(),
        field: field.into(),
        element,
        bounds: bounds.to_vec(),
    }
}

fn fixed(code: u8) -> ElementType {
    ElementType {
        code,
        scale: 0,
        length: 0,
        charset: 0,
    }
}

fn text(code: u8, length: u16, charset: u8) -> ElementType {
    ElementType {
        code,
        length,
        charset,
        ..fixed(code)
    }
}

/// A slice's bytes, element by element.
#[derive(Default)]
struct Slice(Vec<u8>);

impl Slice {
    fn put(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.extend_from_slice(bytes);
        self
    }

    /// A VARCHAR element: NUL-terminated in `length + 2` bytes.
    fn varying(&mut self, value: &str, length: u16) -> &mut Self {
        let start = self.0.len();
        self.0.extend_from_slice(value.as_bytes());
        self.0.resize(start + length as usize + 2, 0);
        self
    }

    /// A CHAR element: blank-padded to `length` bytes.
    fn char(&mut self, value: &[u8], length: u16) -> &mut Self {
        let start = self.0.len();
        self.0.extend_from_slice(value);
        self.0.resize(start + length as usize, b' ');
        self
    }
}

fn store(
    tr: &Transaction,
    shape: &ArrayShape,
    mut slice: Slice,
    update: &str,
) -> Result<(), ClientError> {
    let id: BlobId = tr.write_array(shape, &mut slice.0)?;
    tr.execute_with_arrays(update, &[Some(id)])
}

/// The languages of EMPLOYEE's JOB rows, by country: up to five, with
/// text that CSV must quote and characters beyond ASCII.
fn languages(country: &str) -> &'static [&'static str] {
    match country {
        "USA" => &["English"],
        "England" => &["English", "Welsh"],
        "Canada" => &["English", "Français"],
        "Switzerland" => &["German", "French", "Italian", "Romansh"],
        "Japan" => &["日本語", "English"],
        "Italy" => &["Italiano", "Eng, \"basic\""],
        "France" => &["Français", "English", "O'Brien's"],
        _ => &[],
    }
}

/// Fills EMPLOYEE's two arrays: JOB.LANGUAGE_REQ (VARCHAR(15) [5]) from
/// each job's country, NULL where none is known, and
/// PROJ_DEPT_BUDGET.QUART_HEAD_CNT (INTEGER [4]) from each row's year and
/// department, NULL for one row.
pub fn fill_employee(att: &Attachment) -> Result<(), ClientError> {
    let tr = att.start_transaction(TransactionMode::ReadWrite)?;
    let language = shape(
        "JOB",
        "LANGUAGE_REQ",
        text(element::VARYING, 60, 4),
        &[(1, 5)],
    );
    let mut jobs = Vec::new();
    let mut stmt = tr.prepare("SELECT JOB_CODE, JOB_GRADE, JOB_COUNTRY FROM JOB")?;
    stmt.execute()?;
    while stmt.fetch()? {
        let row = stmt.row();
        let text = |i| String::from_utf8_lossy(row.value(i).unwrap_or_default()).into_owned();
        let grade = i16::from_ne_bytes(row.value(1).unwrap_or(&[0, 0]).try_into().unwrap());
        jobs.push((text(0).trim_end().to_string(), grade, text(2)));
    }
    drop(stmt);
    for (code, grade, country) in jobs {
        let names = languages(&country);
        if names.is_empty() {
            continue;
        }
        let mut slice = Slice::default();
        for n in 0..5 {
            slice.varying(names.get(n).copied().unwrap_or(""), 60);
        }
        let update = format!(
            "UPDATE JOB SET LANGUAGE_REQ = ? WHERE JOB_CODE = {} AND JOB_GRADE = {grade} \
             AND JOB_COUNTRY = {}",
            crate::sql::literal(&code),
            crate::sql::literal(&country)
        );
        store(&tr, &language, slice, &update)?;
    }

    let head_count = shape(
        "PROJ_DEPT_BUDGET",
        "QUART_HEAD_CNT",
        fixed(element::LONG),
        &[(1, 4)],
    );
    let mut budgets = Vec::new();
    let mut stmt = tr.prepare(
        "SELECT FISCAL_YEAR, PROJ_ID, DEPT_NO FROM PROJ_DEPT_BUDGET \
         ORDER BY FISCAL_YEAR, PROJ_ID, DEPT_NO",
    )?;
    stmt.execute()?;
    while stmt.fetch()? {
        let row = stmt.row();
        let year = i32::from_ne_bytes(row.value(0).unwrap_or(&[0; 4]).try_into().unwrap());
        let text = |i| String::from_utf8_lossy(row.value(i).unwrap_or_default()).into_owned();
        budgets.push((year, text(1), text(2)));
    }
    drop(stmt);
    // The first row keeps its NULL.
    for (n, (year, project, department)) in budgets.into_iter().enumerate().skip(1) {
        let mut slice = Slice::default();
        let base = department.trim().parse::<i32>().unwrap_or(0) % 7 + (year % 10);
        for quarter in 0..4 {
            slice.put(&(base + quarter * (n as i32 % 3) - 1).to_ne_bytes());
        }
        let update = format!(
            "UPDATE PROJ_DEPT_BUDGET SET QUART_HEAD_CNT = ? WHERE FISCAL_YEAR = {year} \
             AND PROJ_ID = {} AND DEPT_NO = {}",
            crate::sql::literal(&project),
            crate::sql::literal(&department)
        );
        store(&tr, &head_count, slice, &update)?;
    }
    tr.commit()
}

/// Rows of ARRAY_TYPES: 1 at the edges, 2 ordinary, 3 every array NULL.
pub const ARRAY_TYPES_ROWS: u64 = 3;

/// The ARRAY columns of ARRAY_TYPES (after its key, ID), in table order.
pub const ARRAY_TYPES_COLUMNS: [&str; 13] = [
    "GRID", "AMOUNTS", "DAYS", "MOMENTS", "FLAGS", "RATIOS", "CODES", "RAW", "EXACT", "HUGE",
    "ALARMS", "COUNTS", "NAMES",
];

/// ARRAY_TYPES: an array of each element type, with bounds that do not
/// start at 1, one dimension or two, and a row of NULLs.
pub fn array_types_create_sql() -> &'static str {
    "CREATE TABLE ARRAY_TYPES (ID INTEGER NOT NULL PRIMARY KEY, \
     GRID INTEGER [0:1, -1:1], \
     AMOUNTS NUMERIC(9,2) [3], \
     DAYS DATE [2], \
     MOMENTS TIMESTAMP [2], \
     FLAGS BOOLEAN [2], \
     RATIOS DOUBLE PRECISION [2], \
     CODES CHAR(3) [2] CHARACTER SET WIN1252, \
     RAW VARCHAR(4) [2] CHARACTER SET OCTETS, \
     EXACT DECFLOAT(34) [2], \
     HUGE INT128 [2], \
     ALARMS TIME WITH TIME ZONE [2], \
     COUNTS BIGINT [-1:1], \
     NAMES VARCHAR(5) [2, 0:1] CHARACTER SET UTF8)"
}

/// A column of ARRAY_TYPES: its name, element and bounds.
type ArrayColumn = (&'static str, ElementType, &'static [(i32, i32)]);

/// Fills ARRAY_TYPES with rows 1 (values at the edges: the extremes of
/// each type, text that fills its width, needs CSV quoting or holds a
/// line break), 2 (ordinary values) and 3 (every array NULL).
pub fn fill_array_types(att: &Attachment) -> Result<(), ClientError> {
    let tr = att.start_transaction(TransactionMode::ReadWrite)?;
    for id in 1..=3 {
        tr.execute(&format!("INSERT INTO ARRAY_TYPES (ID) VALUES ({id})"))?;
    }
    let columns: [ArrayColumn; 13] = [
        ("GRID", fixed(element::LONG), &[(0, 1), (-1, 1)]),
        (
            "AMOUNTS",
            ElementType {
                scale: -2,
                ..fixed(element::LONG)
            },
            &[(1, 3)],
        ),
        ("DAYS", fixed(element::DATE), &[(1, 2)]),
        ("MOMENTS", fixed(element::TIMESTAMP), &[(1, 2)]),
        ("FLAGS", fixed(element::BOOLEAN), &[(1, 2)]),
        ("RATIOS", fixed(element::DOUBLE), &[(1, 2)]),
        ("CODES", text(element::TEXT, 3, 53), &[(1, 2)]),
        ("RAW", text(element::VARYING, 4, 1), &[(1, 2)]),
        ("EXACT", text(element::VARYING, 42, 0), &[(1, 2)]),
        ("HUGE", fixed(element::INT128), &[(1, 2)]),
        ("ALARMS", fixed(element::TIME_TZ), &[(1, 2)]),
        ("COUNTS", fixed(element::INT64), &[(-1, 1)]),
        // Five UTF8 characters of up to 4 bytes each.
        ("NAMES", text(element::VARYING, 20, 4), &[(1, 2), (0, 1)]),
    ];
    debug_assert!(columns.iter().map(|c| c.0).eq(ARRAY_TYPES_COLUMNS));
    for id in 1..=2 {
        let edge = id == 1;
        for (column, element, bounds) in &columns {
            let mut s = Slice::default();
            match *column {
                "GRID" => {
                    for v in [1, -2, 3, i32::MIN, 0, i32::MAX] {
                        s.put(&(if edge { v } else { v / 1000 }).to_ne_bytes());
                    }
                }
                "NAMES" => {
                    let names = if edge {
                        ["😀😀😀😀😀", "a,\"b\"", "", "x\ny"]
                    } else {
                        ["Ann", "Bob", "日本", "naïve"]
                    };
                    for name in names {
                        s.varying(name, 20);
                    }
                }
                "AMOUNTS" => {
                    for v in [12345i32, -1, if edge { i32::MAX } else { 0 }] {
                        s.put(&v.to_ne_bytes());
                    }
                }
                "DAYS" => {
                    // 0001-01-01 and 9999-12-31, or 1970-01-01 and 2000-02-29.
                    let days = if edge {
                        [-678_575, 2_973_483]
                    } else {
                        [UNIX_EPOCH_DAY, UNIX_EPOCH_DAY + 11_016]
                    };
                    for d in days {
                        s.put(&d.to_ne_bytes());
                    }
                }
                "MOMENTS" => {
                    // 0001-01-01 00:00 and 9999-12-31 23:59:59.9999, or
                    // just after 1970-01-01 00:00 and a day later.
                    let moments = if edge {
                        [(-678_575, 0u32), (2_973_483, 863_999_999)]
                    } else {
                        [(UNIX_EPOCH_DAY, 1), (UNIX_EPOCH_DAY + 1, 863_999_999)]
                    };
                    for (day, ticks) in moments {
                        s.put(&day.to_ne_bytes()).put(&ticks.to_ne_bytes());
                    }
                }
                "FLAGS" => {
                    s.put(&[1, 0]);
                }
                "RATIOS" => {
                    for v in [if edge { f64::MAX } else { 0.1 }, -2.5e-300] {
                        s.put(&v.to_ne_bytes());
                    }
                }
                "CODES" => {
                    // WIN1252: "é€" and "a,b".
                    s.char(if edge { b"\xe9\x80" } else { b"abc" }, 3)
                        .char(b"a,b", 3);
                }
                "RAW" => {
                    s.varying(if edge { "\u{1}\u{7f}" } else { "ab" }, 4)
                        .varying("", 4);
                }
                "EXACT" => {
                    let big = "1.234567890123456789012345678901234E+6144";
                    s.varying(if edge { big } else { "0.1" }, 42)
                        .varying("-7", 42);
                }
                "HUGE" => {
                    // The largest INT128 values of 38 digits, the most that
                    // decimal128 (fbunload's default for INT128) holds.
                    let largest = 10i128.pow(38) - 1;
                    for v in [if edge { -largest } else { 1 }, largest] {
                        s.put(&v.to_ne_bytes());
                    }
                }
                "ALARMS" => {
                    // 23:59:59.9999 and 00:00:00.0001 UTC, each with 2
                    // bytes of padding.
                    for ticks in [863_999_999u32, 1] {
                        s.put(&ticks.to_ne_bytes())
                            .put(&UTC_ZONE.to_ne_bytes())
                            .put(&[0, 0]);
                    }
                }
                "COUNTS" => {
                    for v in [i64::MIN, 0, i64::MAX] {
                        s.put(&v.to_ne_bytes());
                    }
                }
                other => unreachable!("{other}"),
            }
            let array = shape("ARRAY_TYPES", column, *element, bounds);
            let update = format!("UPDATE ARRAY_TYPES SET {column} = ? WHERE ID = {id}");
            store(&tr, &array, s, &update)?;
        }
    }
    tr.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_types_declares_its_columns_in_order() {
        let sql = array_types_create_sql();
        let declared: Vec<&str> = sql
            .split(", ")
            .skip(1) // CREATE TABLE ARRAY_TYPES (ID ...
            .filter_map(|part| part.split_whitespace().next())
            .filter(|name| name.chars().all(|c| c.is_ascii_uppercase()))
            .collect();
        assert_eq!(declared, ARRAY_TYPES_COLUMNS, "{sql}");
    }

    #[test]
    fn scripts_are_split_as_isql_splits_them() {
        let script = "set sql dialect 3;\ncreate database 'x.fdb';\n\
            /* a; comment */ CREATE TABLE T (A VARCHAR(5) DEFAULT ';');\nCOMMIT;\n\
            SET GENERATOR G TO 5;\n\
            SET TERM !! ;\n\
            CREATE PROCEDURE P (X INTEGER) AS BEGIN INSERT INTO T VALUES ('a'); SUSPEND; END !!\n\
            CREATE PROCEDURE Q RETURNS (Y INTEGER) AS BEGIN Y = 1; SUSPEND; END !!\n\
            SET TERM ; !!\n-- done; really\nSELECT 1 FROM RDB$DATABASE;";
        assert_eq!(
            script_statements(script),
            vec![
                "CREATE TABLE T (A VARCHAR(5) DEFAULT ';')",
                "SET GENERATOR G TO 5",
                "CREATE PROCEDURE P (X INTEGER) AS BEGIN INSERT INTO T VALUES ('a'); EXIT; END",
                "CREATE PROCEDURE Q RETURNS (Y INTEGER) AS BEGIN Y = 1; SUSPEND; END",
                "SELECT 1 FROM RDB$DATABASE",
            ]
        );
    }
}
