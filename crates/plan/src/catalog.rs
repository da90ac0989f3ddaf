//! Reading the catalog: user tables, their stored columns, and how many
//! pointer pages each has.
//!
//! Only persistent user tables are unloaded (`RDB$SYSTEM_FLAG = 0`,
//! `RDB$RELATION_TYPE = 0`): views, external tables, virtual (MON$) and
//! temporary tables hold no data of their own. Computed columns are left
//! out for the same reason — they are derived from the stored ones, and
//! computing them can fail or be slow. Table filters use SQL `SIMILAR TO`,
//! evaluated by the server, so they mean exactly what they mean in
//! Firebird.

use std::collections::HashMap;

use fbunload_client::{ClientError, Row, Transaction};

use crate::identifier::quote_literal;

/// Field types of `RDB$FIELDS.RDB$FIELD_TYPE` that need special handling.
const BLR_DEC64: i16 = 24;
const BLR_DEC128: i16 = 25;

/// Which tables to unload: SIMILAR TO patterns on the table name.
#[derive(Debug, Clone, Default)]
pub struct TableFilter {
    pub include: Option<String>,
    pub exclude: Option<String>,
}

/// A stored column as the catalog declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// `RDB$FIELD_TYPE` (a BLR type code).
    pub field_type: i16,
    pub precision: Option<i16>,
    pub scale: i16,
}

impl Column {
    pub fn is_decfloat(&self) -> bool {
        matches!(self.field_type, BLR_DEC64 | BLR_DEC128)
    }

    pub fn decfloat_digits(&self) -> Option<u8> {
        match self.field_type {
            BLR_DEC64 => Some(16),
            BLR_DEC128 => Some(34),
            _ => None,
        }
    }
}

/// A user table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub relation_id: u16,
    pub name: String,
    pub columns: Vec<Column>,
    /// Pointer pages allocated to the table (0 for a never-filled table).
    pub pointer_pages: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("{option} '{pattern}' is not a valid SIMILAR TO pattern: {message}")]
    BadPattern {
        option: &'static str,
        pattern: String,
        message: String,
    },
    #[error("{0}")]
    NoTables(String),
    #[error("reading the catalog failed: {0}")]
    Client(#[from] ClientError),
}

/// Reads the tables the filter selects, in name order.
pub fn read_catalog(
    tr: &Transaction<'_>,
    filter: &TableFilter,
) -> Result<Vec<Table>, CatalogError> {
    for (option, pattern) in [
        ("--tables", &filter.include),
        ("--exclude", &filter.exclude),
    ] {
        if let Some(pattern) = pattern {
            check_pattern(tr, option, pattern)?;
        }
    }
    let mut sql = String::from(
        "SELECT r.RDB$RELATION_ID, r.RDB$RELATION_NAME FROM RDB$RELATIONS r \
         WHERE COALESCE(r.RDB$SYSTEM_FLAG, 0) = 0 AND COALESCE(r.RDB$RELATION_TYPE, 0) = 0 \
         AND r.RDB$VIEW_BLR IS NULL",
    );
    if let Some(p) = &filter.include {
        sql += &format!(
            " AND {} SIMILAR TO {}",
            name_without_padding("r.RDB$RELATION_NAME"),
            pattern_literal(p)
        );
    }
    if let Some(p) = &filter.exclude {
        sql += &format!(
            " AND {} NOT SIMILAR TO {}",
            name_without_padding("r.RDB$RELATION_NAME"),
            pattern_literal(p)
        );
    }
    sql += " ORDER BY r.RDB$RELATION_NAME";
    let mut tables = Vec::new();
    query(tr, &sql, |row| {
        tables.push(Table {
            relation_id: int(row, 0).unwrap_or(0) as u16,
            name: text(row, 1),
            columns: Vec::new(),
            pointer_pages: 0,
        });
    })?;
    if tables.is_empty() {
        return Err(CatalogError::NoTables(no_tables_message(tr, filter)?));
    }

    let mut by_name: HashMap<String, usize> = tables
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), i))
        .collect();
    query(
        tr,
        "SELECT rf.RDB$RELATION_NAME, rf.RDB$FIELD_NAME, f.RDB$FIELD_TYPE, \
         f.RDB$FIELD_PRECISION, COALESCE(f.RDB$FIELD_SCALE, 0) \
         FROM RDB$RELATION_FIELDS rf JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = rf.RDB$FIELD_SOURCE \
         WHERE f.RDB$COMPUTED_BLR IS NULL \
         ORDER BY rf.RDB$RELATION_NAME, rf.RDB$FIELD_POSITION",
        |row| {
            if let Some(&i) = by_name.get(&text(row, 0)) {
                tables[i].columns.push(Column {
                    name: text(row, 1),
                    field_type: int(row, 2).unwrap_or(0) as i16,
                    precision: int(row, 3).map(|p| p as i16),
                    scale: int(row, 4).unwrap_or(0) as i16,
                });
            }
        },
    )?;

    by_name.clear();
    let by_id: HashMap<u16, usize> = tables
        .iter()
        .enumerate()
        .map(|(i, t)| (t.relation_id, i))
        .collect();
    query(
        tr,
        "SELECT RDB$RELATION_ID, MAX(RDB$PAGE_SEQUENCE) + 1 FROM RDB$PAGES \
         WHERE RDB$PAGE_TYPE = 4 GROUP BY RDB$RELATION_ID",
        |row| {
            let id = int(row, 0).unwrap_or(-1) as u16;
            if let Some(&i) = by_id.get(&id) {
                tables[i].pointer_pages = int(row, 1).unwrap_or(0) as u32;
            }
        },
    )?;
    Ok(tables)
}

/// Lets the server judge the pattern alone, so a bad pattern is reported as
/// such and not as a failed catalog query.
fn check_pattern(
    tr: &Transaction<'_>,
    option: &'static str,
    pattern: &str,
) -> Result<(), CatalogError> {
    let sql = format!(
        "SELECT COUNT(*) FROM RDB$RELATIONS WHERE {} SIMILAR TO {}",
        name_without_padding("RDB$RELATION_NAME"),
        pattern_literal(pattern)
    );
    match query(tr, &sql, |_| {}) {
        Ok(()) => Ok(()),
        Err(ClientError::Firebird(e)) => Err(CatalogError::BadPattern {
            option,
            pattern: pattern.to_string(),
            message: e.message,
        }),
        Err(e) => Err(e.into()),
    }
}

fn no_tables_message(tr: &Transaction<'_>, filter: &TableFilter) -> Result<String, CatalogError> {
    let mut names = Vec::new();
    query(
        tr,
        "SELECT RDB$RELATION_NAME FROM RDB$RELATIONS \
         WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 AND COALESCE(RDB$RELATION_TYPE, 0) = 0 \
         AND RDB$VIEW_BLR IS NULL ORDER BY RDB$RELATION_NAME",
        |row| names.push(text(row, 0)),
    )?;
    if names.is_empty() {
        return Ok("the database has no user tables".into());
    }
    let shown: Vec<_> = names.iter().take(20).map(String::as_str).collect();
    let more = if names.len() > 20 {
        format!(" and {} more", names.len() - 20)
    } else {
        String::new()
    };
    let what = match (&filter.include, &filter.exclude) {
        (Some(i), Some(e)) => format!("--tables '{i}' with --exclude '{e}'"),
        (Some(i), None) => format!("--tables '{i}'"),
        (None, Some(e)) => format!("--exclude '{e}'"),
        (None, None) => "the filter".into(),
    };
    Ok(format!(
        "{what} matches no table (patterns are SQL SIMILAR TO, matched against the whole, \
         case-sensitive name; unquoted names are upper case). Tables: {}{more}",
        shown.join(", ")
    ))
}

/// A user's pattern as an SQL literal, in a group: Firebird 5 matches
/// `'STOCK'` against `'ALL%|STOCK'` as false but against `'(ALL%|STOCK)'`
/// as true, and the group changes nothing else.
fn pattern_literal(pattern: &str) -> String {
    quote_literal(&format!("({pattern})"))
}

fn query(
    tr: &Transaction<'_>,
    sql: &str,
    mut each: impl FnMut(&Row<'_>),
) -> Result<(), ClientError> {
    let mut stmt = tr.prepare(sql)?;
    stmt.execute()?;
    while stmt.fetch()? {
        each(&stmt.row());
    }
    Ok(())
}

/// An integer column of a catalog query (SMALLINT, INTEGER or BIGINT).
fn int(row: &Row<'_>, i: usize) -> Option<i64> {
    let v = row.value(i)?;
    Some(match v.len() {
        2 => i16::from_ne_bytes(v.try_into().ok()?) as i64,
        4 => i32::from_ne_bytes(v.try_into().ok()?) as i64,
        8 => i64::from_ne_bytes(v.try_into().ok()?),
        _ => return None,
    })
}

/// A catalog name column (a CHAR) in SQL without its padding. Firebird
/// pads names on the right only; a name may begin with blanks (`" C"`),
/// which plain `TRIM` would also strip.
fn name_without_padding(column: &str) -> String {
    format!("TRIM(TRAILING FROM {column})")
}

/// A name column of a catalog query, without CHAR padding (right only, see
/// [`name_without_padding`]).
fn text(row: &Row<'_>, i: usize) -> String {
    let v = row.value(i).unwrap_or(b"");
    String::from_utf8_lossy(v).trim_end_matches(' ').to_string()
}
