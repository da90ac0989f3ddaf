//! Reading the catalog: user tables, their stored columns, and how many
//! pointer pages each has.
//!
//! Only persistent user tables are unloaded (`RDB$SYSTEM_FLAG = 0`,
//! `RDB$RELATION_TYPE = 0`): views, external tables, virtual (MON$) and
//! temporary tables hold no data of their own. Computed columns are left
//! out for the same reason — they are derived from the stored ones, and
//! computing them can fail or be slow. Table filters use SQL `SIMILAR TO`,
//! evaluated by the server, so they mean exactly what they mean in
//! Firebird, plus two things: names in them follow SQL's rule, as every
//! option's do (unquoted parts upper-cased, "quoted" parts exact), and a
//! comma lists alternatives, as `|` does (see `similar_to`).

use std::collections::HashMap;

use fbunload_client::{element, ArrayShape, ClientError, ElementType, Row, Transaction};
use fbunload_decode::text::{charset_name, TextDecoder, CHARSET_NONE, CHARSET_UTF8};

use crate::identifier::{case_hint, quote_identifier, quote_literal, shell_word, unquoted};

/// Field types of `RDB$FIELDS.RDB$FIELD_TYPE` (BLR type codes).
pub(crate) mod blr {
    pub const SMALLINT: i16 = 7;
    pub const INTEGER: i16 = 8;
    pub const FLOAT: i16 = 10;
    pub const D_FLOAT: i16 = 11;
    pub const DATE: i16 = 12;
    pub const TIME: i16 = 13;
    pub const CHAR: i16 = 14;
    pub const BIGINT: i16 = 16;
    pub const BOOLEAN: i16 = 23;
    pub const DEC64: i16 = 24;
    pub const DEC128: i16 = 25;
    pub const INT128: i16 = 26;
    pub const DOUBLE: i16 = 27;
    pub const TIME_TZ: i16 = 28;
    pub const TIMESTAMP_TZ: i16 = 29;
    pub const TIMESTAMP: i16 = 35;
    pub const VARCHAR: i16 = 37;
    pub const CSTRING: i16 = 40;
    pub const BLOB: i16 = 261;
}

/// Which tables to unload: SIMILAR TO patterns on the table name, in
/// which unquoted parts are upper-cased and commas also separate
/// alternatives (see `similar_to`).
#[derive(Debug, Clone, Default)]
pub struct TableFilter {
    pub include: Option<String>,
    pub exclude: Option<String>,
    /// Of the tables selected, which columns and rows (`--columns`,
    /// `--where`).
    pub selection: Vec<crate::TableChoice>,
    /// Views to unload too (`--views`): a pattern as for tables.
    pub views: Option<String>,
    /// Queries to unload too (`--query`).
    pub queries: Vec<crate::QuerySpec>,
    /// An incremental run (`--since`), or a full one keeping its keys.
    pub incremental: Option<crate::Incremental>,
    /// A run that can be resumed, or resumes one (`--resumable`,
    /// `--resume`).
    pub resumable: Option<crate::incremental::Resumable>,
}

impl TableFilter {
    /// Whether tables are to be unloaded: when a pattern names them, or
    /// when neither views nor queries are asked for (then all are). A run
    /// asked for a query alone unloads that query.
    pub fn wants_tables(&self) -> bool {
        self.include.is_some()
            || self.exclude.is_some()
            || (self.views.is_none() && self.queries.is_empty())
    }

    /// The one table named `name` as stored, exactly: the name quoted,
    /// which a pattern takes as written, whatever characters SIMILAR TO
    /// gives a meaning to.
    pub fn named(name: &str) -> TableFilter {
        TableFilter {
            include: Some(quote_identifier(name)),
            ..TableFilter::default()
        }
    }
}

/// A stored column as the catalog declares it (`RDB$FIELDS` of its domain).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Column {
    pub name: String,
    /// `RDB$FIELD_TYPE` (a BLR type code).
    pub field_type: i16,
    /// `RDB$FIELD_SUB_TYPE`: NUMERIC (1) or DECIMAL (2) for scaled integers,
    /// the subtype of a BLOB.
    pub sub_type: i16,
    pub precision: Option<i16>,
    pub scale: i16,
    /// Characters of a CHAR or VARCHAR.
    pub char_length: Option<i16>,
    /// Character set of text (CHAR, VARCHAR, text BLOB).
    pub charset_id: Option<u8>,
    /// `RDB$FIELD_LENGTH`: bytes of one value (of one element of an array).
    pub field_length: i16,
    /// An ARRAY column's bounds (`RDB$FIELD_DIMENSIONS`), outermost first;
    /// empty for every other column.
    pub dimensions: Vec<(i32, i32)>,
    /// Declared NOT NULL, on the column or on its domain (`RDB$NULL_FLAG`
    /// of either): the server describes it as not nullable.
    pub not_null: bool,
}

impl Column {
    pub fn is_decfloat(&self) -> bool {
        matches!(self.field_type, blr::DEC64 | blr::DEC128)
    }

    pub fn decfloat_digits(&self) -> Option<u8> {
        match self.field_type {
            blr::DEC64 => Some(16),
            blr::DEC128 => Some(34),
            _ => None,
        }
    }

    /// CHAR (`Some(true)`), VARCHAR (`Some(false)`) or neither.
    pub fn is_fixed_text(&self) -> Option<bool> {
        match self.field_type {
            blr::CHAR => Some(true),
            blr::VARCHAR | blr::CSTRING => Some(false),
            _ => None,
        }
    }

    pub fn is_text_blob(&self) -> bool {
        self.field_type == blr::BLOB && self.sub_type == 1
    }

    /// The type as it was declared, for readers of the output (Arrow field
    /// metadata) and error messages: `NUMERIC(9,3)`, `CHAR(10) CHARACTER SET
    /// WIN1252`, `BLOB SUB_TYPE TEXT CHARACTER SET UTF8`, and for an ARRAY
    /// column its element's type then its bounds: `INTEGER [1:4]`.
    pub fn declared_type(&self) -> String {
        let element = self.element_type();
        if self.dimensions.is_empty() {
            return element;
        }
        // The grammar takes the bounds before a character set.
        match element.find(" CHARACTER SET ") {
            Some(at) => format!("{} {}{}", &element[..at], self.bounds(), &element[at..]),
            None => format!("{element} {}", self.bounds()),
        }
    }

    /// An ARRAY column's bounds as SQL declares them: `[1:4]`, `[0:2, 1:3]`.
    pub fn bounds(&self) -> String {
        let each: Vec<String> = self
            .dimensions
            .iter()
            .map(|(lower, upper)| format!("{lower}:{upper}"))
            .collect();
        format!("[{}]", each.join(", "))
    }

    /// How a slice reads an ARRAY column of `relation`: each element as it
    /// is stored, text in its own character set (or UTF8 where fbunload
    /// cannot decode that one), DECFLOAT as text, which is exact. `None`
    /// for every other column, or an element type no slice can carry.
    pub fn array_shape(&self, relation: &str) -> Option<ArrayShape> {
        if self.dimensions.is_empty() {
            return None;
        }
        let fixed = |code| ElementType {
            code,
            scale: 0,
            length: 0,
            charset: 0,
        };
        let scaled = |code| ElementType {
            scale: self.scale as i8,
            ..fixed(code)
        };
        let text = |code| {
            let charset = self.charset_id.unwrap_or(0);
            if TextDecoder::client_reads(charset) {
                ElementType {
                    code,
                    scale: 0,
                    length: self.field_length as u16,
                    charset,
                }
            } else {
                let chars = self.char_length.unwrap_or(self.field_length) as u16;
                ElementType {
                    code,
                    scale: 0,
                    length: chars.saturating_mul(4),
                    charset: CHARSET_UTF8,
                }
            }
        };
        let element = match self.field_type {
            blr::SMALLINT => scaled(element::SHORT),
            blr::INTEGER => scaled(element::LONG),
            blr::BIGINT => scaled(element::INT64),
            blr::INT128 => scaled(element::INT128),
            blr::FLOAT => fixed(element::FLOAT),
            blr::DOUBLE | blr::D_FLOAT => fixed(element::DOUBLE),
            blr::DATE => fixed(element::DATE),
            blr::TIME => fixed(element::TIME),
            blr::TIMESTAMP => fixed(element::TIMESTAMP),
            blr::TIME_TZ => fixed(element::TIME_TZ),
            blr::TIMESTAMP_TZ => fixed(element::TIMESTAMP_TZ),
            blr::BOOLEAN => fixed(element::BOOLEAN),
            blr::CHAR => text(element::TEXT),
            blr::VARCHAR | blr::CSTRING => text(element::VARYING),
            // The longest DECFLOAT(34) text: sign, 34 digits, point, E,
            // sign, 4 digits; ASCII, so NONE (one byte each) holds it.
            blr::DEC64 | blr::DEC128 => ElementType {
                code: element::VARYING,
                scale: 0,
                length: 42,
                charset: CHARSET_NONE,
            },
            _ => return None,
        };
        Some(ArrayShape {
            relation: relation.to_string(),
            field: self.name.clone(),
            element,
            bounds: self.dimensions.clone(),
        })
    }

    /// The type as declared, without an ARRAY column's bounds.
    pub fn element_type(&self) -> String {
        let scaled = |base: &str, storage_digits: i16| {
            let kind = match self.sub_type {
                2 => "DECIMAL",
                1 => "NUMERIC",
                _ if self.scale < 0 => "NUMERIC",
                _ => return base.to_string(),
            };
            let precision = self.precision.filter(|p| *p > 0).unwrap_or(storage_digits);
            format!("{kind}({precision},{})", -self.scale)
        };
        let charset = || {
            self.charset_id
                .and_then(charset_name)
                .map(|name| format!(" CHARACTER SET {name}"))
                .unwrap_or_default()
        };
        let length = self.char_length.unwrap_or(0);
        match self.field_type {
            blr::SMALLINT => scaled("SMALLINT", 4),
            blr::INTEGER => scaled("INTEGER", 9),
            blr::BIGINT => scaled("BIGINT", 18),
            blr::INT128 => scaled("INT128", 38),
            blr::FLOAT => "FLOAT".into(),
            blr::DOUBLE | blr::D_FLOAT => "DOUBLE PRECISION".into(),
            blr::DEC64 => "DECFLOAT(16)".into(),
            blr::DEC128 => "DECFLOAT(34)".into(),
            blr::DATE => "DATE".into(),
            blr::TIME => "TIME".into(),
            blr::TIMESTAMP => "TIMESTAMP".into(),
            blr::TIME_TZ => "TIME WITH TIME ZONE".into(),
            blr::TIMESTAMP_TZ => "TIMESTAMP WITH TIME ZONE".into(),
            blr::BOOLEAN => "BOOLEAN".into(),
            blr::CHAR => format!("CHAR({length}){}", charset()),
            blr::VARCHAR | blr::CSTRING => format!("VARCHAR({length}){}", charset()),
            blr::BLOB => match self.sub_type {
                0 => "BLOB SUB_TYPE BINARY".into(),
                1 => format!("BLOB SUB_TYPE TEXT{}", charset()),
                n => format!("BLOB SUB_TYPE {n}"),
            },
            other => format!("field type {other}"),
        }
    }
}

/// A user table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub relation_id: u16,
    pub name: String,
    pub columns: Vec<Column>,
    /// The names of its computed (`COMPUTED BY`) columns, which are not
    /// read (module docs), in position order.
    pub computed: Vec<String>,
    /// Pointer pages allocated to the table (0 for a never-filled table).
    pub pointer_pages: u32,
    /// Whether this attachment's user reads it whatever was granted: the
    /// table's owner, SYSDBA, or in role RDB$ADMIN. Only then may a plan
    /// take its columns' descriptions from the catalog without preparing
    /// its read, for a prepare is where a missing SELECT privilege is
    /// refused, before anything is written.
    pub readable_by_user: bool,
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

/// A user view: its name and its columns' names, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub name: String,
    pub columns: Vec<String>,
}

/// Reads the user views whose names match `pattern` (as for tables), in
/// name order; none matching is an error that lists those there are.
pub fn read_views(tr: &Transaction, written: &str) -> Result<Vec<View>, CatalogError> {
    let pattern = &check_pattern(tr, "--views", written)?;
    let user_views = "SELECT r.RDB$RELATION_NAME FROM RDB$RELATIONS r \
         WHERE COALESCE(r.RDB$SYSTEM_FLAG, 0) = 0 AND r.RDB$VIEW_BLR IS NOT NULL";
    let sql = format!(
        "{user_views} AND {} SIMILAR TO {} ORDER BY r.RDB$RELATION_NAME",
        name_without_padding("r.RDB$RELATION_NAME"),
        pattern_literal(pattern)
    );
    let mut names = Vec::new();
    query(tr, &format!("{user_views} ORDER BY 1"), |row| {
        names.push(text(row, 0))
    })?;
    if names.is_empty() {
        return Err(CatalogError::NoTables(
            "--views: the database has no user views".into(),
        ));
    }
    check_exact_names("--views", written, pattern, &names, "view")
        .map_err(CatalogError::NoTables)?;
    let mut views = Vec::new();
    query(tr, &sql, |row| {
        views.push(View {
            name: text(row, 0),
            columns: Vec::new(),
        })
    })?;
    if views.is_empty() {
        return Err(CatalogError::NoTables(format!(
            "--views '{written}' matches no view (a SIMILAR TO pattern, as for --tables). \
             Views: {}",
            shown_names(&names)
        )));
    }
    let by_name: HashMap<String, usize> = views
        .iter()
        .enumerate()
        .map(|(i, v)| (v.name.clone(), i))
        .collect();
    query(
        tr,
        "SELECT RDB$RELATION_NAME, RDB$FIELD_NAME FROM RDB$RELATION_FIELDS \
         ORDER BY RDB$RELATION_NAME, RDB$FIELD_POSITION",
        |row| {
            if let Some(&i) = by_name.get(&text(row, 0)) {
                views[i].columns.push(text(row, 1));
            }
        },
    )?;
    Ok(views)
}

/// What the relation named exactly `name` is, when it is not a user
/// table that could be read (a view, a system or temporary table), as a
/// noun phrase for a message; `None` if there is no relation of that name.
pub fn relation_kind(tr: &Transaction, name: &str) -> Result<Option<&'static str>, CatalogError> {
    let mut found = None;
    query(
        tr,
        &format!(
            "SELECT COALESCE(RDB$SYSTEM_FLAG, 0), COALESCE(RDB$RELATION_TYPE, 0), \
             IIF(RDB$VIEW_BLR IS NULL, 0, 1) FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = {}",
            quote_literal(name)
        ),
        |row| {
            found = Some(match (int(row, 0), int(row, 1), int(row, 2)) {
                (_, _, Some(1)) => "a view",
                (_, Some(3), _) => "a system table (a virtual one, of monitoring data)",
                (Some(s), _, _) if s != 0 => "a system table",
                (_, Some(4 | 5), _) => "a global temporary table",
                (_, Some(2), _) => "an external table",
                _ => "a table",
            })
        },
    )?;
    Ok(found)
}

/// The user table named exactly `name`, without its columns (what a split
/// query needs of its driving table); `None` if there is none.
pub fn read_table(tr: &Transaction, name: &str) -> Result<Option<Table>, CatalogError> {
    let mut found = None;
    query(
        tr,
        &format!(
            "SELECT r.RDB$RELATION_ID, \
             (SELECT MAX(p.RDB$PAGE_SEQUENCE) + 1 FROM RDB$PAGES p \
              WHERE p.RDB$RELATION_ID = r.RDB$RELATION_ID AND p.RDB$PAGE_TYPE = 4) \
             FROM RDB$RELATIONS r WHERE r.RDB$RELATION_NAME = {} \
             AND COALESCE(r.RDB$SYSTEM_FLAG, 0) = 0 AND COALESCE(r.RDB$RELATION_TYPE, 0) = 0 \
             AND r.RDB$VIEW_BLR IS NULL",
            quote_literal(name)
        ),
        |row| {
            found = Some(Table {
                relation_id: int(row, 0).unwrap_or(0) as u16,
                name: name.to_string(),
                columns: Vec::new(),
                computed: Vec::new(),
                pointer_pages: int(row, 1).unwrap_or(0) as u32,
                readable_by_user: false,
            })
        },
    )?;
    Ok(found)
}

/// Reads the tables the filter selects, in name order; none when the
/// filter wants none ([`TableFilter::wants_tables`]).
pub fn read_catalog(tr: &Transaction, filter: &TableFilter) -> Result<Vec<Table>, CatalogError> {
    if !filter.wants_tables() {
        return Ok(Vec::new());
    }
    let mut user_tables = None;
    let mut patterns = [None, None];
    for ((option, written), sql) in [
        ("--tables", &filter.include),
        ("--exclude", &filter.exclude),
    ]
    .into_iter()
    .zip(&mut patterns)
    {
        if let Some(written) = written {
            let pattern = check_pattern(tr, option, written)?;
            if user_tables.is_none() {
                user_tables = Some(user_table_names(tr)?);
            }
            let existing = user_tables.as_deref().unwrap_or_default();
            check_exact_names(option, written, &pattern, existing, "table")
                .map_err(CatalogError::NoTables)?;
            *sql = Some(pattern);
        }
    }
    let [include, exclude] = patterns;
    let mut sql = String::from(
        "SELECT r.RDB$RELATION_ID, r.RDB$RELATION_NAME, \
         IIF(CURRENT_USER IN ('SYSDBA', r.RDB$OWNER_NAME) OR CURRENT_ROLE = 'RDB$ADMIN', 1, 0) \
         FROM RDB$RELATIONS r WHERE COALESCE(r.RDB$SYSTEM_FLAG, 0) = 0 AND COALESCE(r.RDB$RELATION_TYPE, 0) = 0 \
         AND r.RDB$VIEW_BLR IS NULL",
    );
    if let Some(p) = &include {
        sql += &format!(
            " AND {} SIMILAR TO {}",
            name_without_padding("r.RDB$RELATION_NAME"),
            pattern_literal(p)
        );
    }
    if let Some(p) = &exclude {
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
            computed: Vec::new(),
            pointer_pages: 0,
            readable_by_user: int(row, 2) == Some(1),
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
    // (table, column, domain) of each ARRAY column.
    let mut array_domains = Vec::new();
    query(
        tr,
        "SELECT rf.RDB$RELATION_NAME, rf.RDB$FIELD_NAME, f.RDB$FIELD_TYPE, \
         f.RDB$FIELD_PRECISION, COALESCE(f.RDB$FIELD_SCALE, 0), \
         COALESCE(f.RDB$FIELD_SUB_TYPE, 0), f.RDB$CHARACTER_LENGTH, f.RDB$CHARACTER_SET_ID, \
         COALESCE(f.RDB$FIELD_LENGTH, 0), COALESCE(f.RDB$DIMENSIONS, 0), rf.RDB$FIELD_SOURCE, \
         IIF(f.RDB$COMPUTED_BLR IS NULL, 0, 1), \
         IIF(COALESCE(rf.RDB$NULL_FLAG, 0) = 1 OR COALESCE(f.RDB$NULL_FLAG, 0) = 1, 1, 0) \
         FROM RDB$RELATION_FIELDS rf JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = rf.RDB$FIELD_SOURCE \
         ORDER BY rf.RDB$RELATION_NAME, rf.RDB$FIELD_POSITION",
        |row| {
            let Some(&i) = by_name.get(&text(row, 0)) else {
                return;
            };
            if int(row, 11) == Some(1) {
                tables[i].computed.push(text(row, 1));
                return;
            }
            let field_type = int(row, 2).unwrap_or(0) as i16;
            let sub_type = int(row, 5).unwrap_or(0) as i16;
            let is_text = matches!(field_type, blr::CHAR | blr::VARCHAR | blr::CSTRING)
                || (field_type == blr::BLOB && sub_type == 1);
            tables[i].columns.push(Column {
                name: text(row, 1),
                field_type,
                sub_type,
                precision: int(row, 3).map(|p| p as i16),
                scale: int(row, 4).unwrap_or(0) as i16,
                char_length: int(row, 6).map(|n| n as i16),
                // Text with no character set recorded is NONE.
                charset_id: is_text.then(|| int(row, 7).unwrap_or(0) as u8),
                field_length: int(row, 8).unwrap_or(0) as i16,
                dimensions: Vec::new(),
                not_null: int(row, 12) == Some(1),
            });
            if int(row, 9).unwrap_or(0) > 0 {
                array_domains.push((i, tables[i].columns.len() - 1, text(row, 10)));
            }
        },
    )?;
    if !array_domains.is_empty() {
        let bounds = read_array_bounds(tr)?;
        for (table, column, domain) in array_domains {
            tables[table].columns[column].dimensions =
                bounds.get(&domain).cloned().unwrap_or_default();
        }
    }

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

/// Every array domain's bounds, outermost dimension first.
pub(crate) fn read_array_bounds(
    tr: &Transaction,
) -> Result<HashMap<String, Vec<(i32, i32)>>, ClientError> {
    let mut bounds: HashMap<String, Vec<(i32, i32)>> = HashMap::new();
    query(
        tr,
        "SELECT RDB$FIELD_NAME, RDB$LOWER_BOUND, RDB$UPPER_BOUND FROM RDB$FIELD_DIMENSIONS \
         ORDER BY RDB$FIELD_NAME, RDB$DIMENSION",
        |row| {
            bounds.entry(text(row, 0)).or_default().push((
                int(row, 1).unwrap_or(1) as i32,
                int(row, 2).unwrap_or(0) as i32,
            ))
        },
    )?;
    Ok(bounds)
}

/// The user's pattern as SIMILAR TO (see `similar_to`), judged by the
/// server alone, so a bad pattern is reported as such and not as a failed
/// catalog query.
fn check_pattern(
    tr: &Transaction,
    option: &'static str,
    written: &str,
) -> Result<String, CatalogError> {
    let bad = |message| CatalogError::BadPattern {
        option,
        pattern: written.to_string(),
        message,
    };
    let pattern = similar_to(written).map_err(bad)?;
    let sql = format!(
        "SELECT COUNT(*) FROM RDB$RELATIONS WHERE {} SIMILAR TO {}",
        name_without_padding("RDB$RELATION_NAME"),
        pattern_literal(&pattern)
    );
    match query(tr, &sql, |_| {}) {
        Ok(()) => Ok(pattern),
        Err(ClientError::Firebird(e)) => Err(bad(e.message)),
        Err(e) => Err(e.into()),
    }
}

/// The names of all user tables (not views, system or temporary tables),
/// sorted.
fn user_table_names(tr: &Transaction) -> Result<Vec<String>, ClientError> {
    let mut names = Vec::new();
    query(
        tr,
        "SELECT RDB$RELATION_NAME FROM RDB$RELATIONS \
         WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 AND COALESCE(RDB$RELATION_TYPE, 0) = 0 \
         AND RDB$VIEW_BLR IS NULL ORDER BY RDB$RELATION_NAME",
        |row| names.push(text(row, 0)),
    )?;
    Ok(names)
}

/// Refuses a pattern one of whose alternatives names a single `kind`
/// (no wildcard but `_`) that does not exist: `-t 'STOCK|ORDRES'` would
/// otherwise unload STOCK alone and exit 0, hiding the typo (as pg_dump's
/// `--strict-names` does). Alternatives with other wildcards may match
/// nothing. `written` is the user's pattern, `pattern` it as SIMILAR TO.
fn check_exact_names(
    option: &str,
    written: &str,
    pattern: &str,
    existing: &[String],
    kind: &str,
) -> Result<(), String> {
    let missing: Vec<SingleName> = single_names(pattern)
        .into_iter()
        .filter(|name| !existing.iter().any(|e| name.matches(e)))
        .collect();
    let Some(first) = missing.first() else {
        return Ok(());
    };
    let names: Vec<String> = missing
        .iter()
        .map(|n| crate::printable(&n.shown()).into_owned())
        .collect();
    let is_not = match missing.len() {
        1 => format!("is not the name of a {kind}"),
        _ => format!("are not names of {kind}s"),
    };
    let hint = match existing.iter().find(|e| first.matches_ignoring_case(e)) {
        // Upper case is what unquoted names become; anything else was quoted.
        Some(other) => case_hint(other, first.shown() != unquoted(&first.shown()), |name| {
            format!("{option} {}", shell_word(name))
        }),
        _ => format!(
            "; check the spelling. {}s: {}",
            capitalized(kind),
            shown_names(existing)
        ),
    };
    Err(format!(
        "{option} '{}': {} {is_not}{hint}",
        crate::printable(written),
        names.join(", ")
    ))
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Up to 20 names, then how many more.
fn shown_names(names: &[String]) -> String {
    let shown: Vec<_> = names.iter().take(20).map(String::as_str).collect();
    match names.len() {
        n if n > 20 => format!("{} and {} more", shown.join(", "), n - 20),
        _ => shown.join(", "),
    }
}

/// An alternative of a pattern that stands for one name: its characters,
/// where `_` (unescaped) may be any one, as in SIMILAR TO. `ORDER_LINE`
/// is meant as a name far more often than as a pattern.
#[derive(Debug, PartialEq)]
struct SingleName {
    /// As the user wrote it (commas already turned into alternatives).
    written: String,
    /// `None` for a `_`.
    chars: Vec<Option<char>>,
}

impl SingleName {
    fn matches(&self, name: &str) -> bool {
        name.chars().count() == self.chars.len()
            && name
                .chars()
                .zip(&self.chars)
                .all(|(c, want)| want.is_none_or(|w| w == c))
    }

    /// The name it stands for, or as written if it holds a `_` wildcard
    /// (`NO\_SUCH` is `NO_SUCH`; `NO_SUCH` stays so).
    fn shown(&self) -> String {
        match self.chars.iter().copied().collect::<Option<String>>() {
            Some(name) => name,
            None => self.written.clone(),
        }
    }

    /// Whether it matches `name` but for case.
    fn matches_ignoring_case(&self, name: &str) -> bool {
        let folded = |c: char| c.to_lowercase().collect::<String>();
        name.chars().count() == self.chars.len()
            && name
                .chars()
                .zip(&self.chars)
                .all(|(c, want)| want.is_none_or(|w| folded(w) == folded(c)))
    }
}

/// The alternatives of a pattern as SIMILAR TO (`|` outside groups,
/// classes and counts) that stand for one name each (no SIMILAR TO
/// wildcard but `_`): `'STOCK|TMP\_%|A,B|C_D'` gives STOCK, `A,B` and
/// `C_D`.
fn single_names(sql: &str) -> Vec<SingleName> {
    const WILDCARDS: &[char] = &['%', '[', ']', '(', ')', '*', '+', '?', '{', '}', '^'];
    let mut names = Vec::new();
    let mut start = 0;
    let mut name = Some(Vec::new());
    let mut depth = 0usize;
    let mut chars = sql.char_indices();
    let mut finish = |name: Option<Vec<Option<char>>>, end: usize, start: usize| {
        if let Some(chars) = name.filter(|n| !n.is_empty()) {
            names.push(SingleName {
                written: sql[start..end].to_string(),
                chars,
            });
        }
    };
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let (Some(n), Some((_, escaped))) = (name.as_mut(), chars.next()) {
                    n.push(Some(escaped));
                }
            }
            '|' if depth == 0 => {
                finish(name.take(), i, start);
                name = Some(Vec::new());
                start = i + 1;
            }
            _ => {
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                if WILDCARDS.contains(&c) {
                    name = None;
                } else if let Some(n) = name.as_mut() {
                    n.push((c != '_').then_some(c));
                }
            }
        }
    }
    finish(name, sql.len(), start);
    names
}

fn no_tables_message(tr: &Transaction, filter: &TableFilter) -> Result<String, CatalogError> {
    let names = user_table_names(tr)?;
    if names.is_empty() {
        // An error, not an empty success: a script unloading a database
        // that turned out empty (a wrong path, a restore not done yet)
        // must notice.
        return Ok(
            "the database has no user tables (views, system and temporary tables are \
                   not unloaded): nothing to unload; check that -d names the right database"
                .into(),
        );
    }
    let what = match (&filter.include, &filter.exclude) {
        (Some(i), Some(e)) => format!("--tables '{i}' with --exclude '{e}'"),
        (Some(i), None) => format!("--tables '{i}'"),
        (None, Some(e)) => format!("--exclude '{e}'"),
        (None, None) => "the filter".into(),
    };
    Ok(format!(
        "{what} matches no table (patterns are SQL SIMILAR TO, matched against the whole \
         name; unquoted parts are upper-cased as in SQL, \"quoted\" parts exact; list \
         several with | or commas, e.g. 'A|B'). Tables: {}",
        shown_names(&names)
    ))
}

/// A user's pattern as an SQL literal, in a group: Firebird 5 matches
/// `'STOCK'` against `'ALL%|STOCK'` as false but against `'(ALL%|STOCK)'`
/// as true, and the group changes nothing else.
/// The pattern as SQL, with `\` as its escape character: Firebird's
/// SIMILAR TO has none unless one is named, so `'TMP\_%'` would not match
/// `TMP_A` without it.
fn pattern_literal(pattern: &str) -> String {
    format!("{} ESCAPE '\\'", quote_literal(&format!("({pattern})")))
}

/// A user's name pattern as Firebird's SIMILAR TO. Names in it follow
/// SQL's rule, as every option's do: an unquoted part is upper-cased
/// (`order%` is `ORDER%`), a double-quoted part is exact, each of its
/// characters literal (`"Mixed Case"`, `"tmp_"%`; `""` is a quote in a
/// name). A comma lists alternatives, as `|` does, because `-t
/// ORDERS,CUSTOMERS` is what people type, and spaces around it are
/// dropped. A comma inside `[...]` or a `{m,n}` count keeps its SIMILAR TO
/// meaning, and `\,` is a comma in a name (Firebird itself refuses to
/// escape a comma, so the SQL holds it bare).
/// Whether two `--tables`/`--exclude` patterns say the same under the SQL
/// name rule (`stock, item` and `STOCK|ITEM` do): a chain's links compare
/// what was asked, not how it was spelled.
pub fn same_pattern(a: &str, b: &str) -> bool {
    match (similar_to(a), similar_to(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn similar_to(pattern: &str) -> Result<String, String> {
    let mut sql = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let (mut in_class, mut in_count) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                loop {
                    match chars.next() {
                        None => {
                            return Err(
                                "a quoted name is not closed (\"\" is a quote inside one)".into()
                            );
                        }
                        Some('"') if chars.next_if_eq(&'"').is_some() => sql.push('"'),
                        Some('"') => break,
                        Some(c) => {
                            if "\\%_[]()|*+?{}^-".contains(c) {
                                sql.push('\\');
                            }
                            sql.push(c);
                        }
                    }
                }
                continue;
            }
            '\\' => {
                match chars.next() {
                    Some(',') => sql.push(','),
                    Some(escaped) => {
                        sql.push('\\');
                        sql.extend(escaped.to_uppercase());
                    }
                    None => sql.push('\\'),
                }
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '{' if !in_class => in_count = true,
            '}' if in_count => in_count = false,
            ',' if !in_class && !in_count => {
                sql.truncate(sql.trim_end_matches(' ').len());
                while chars.next_if_eq(&' ').is_some() {}
                sql.push('|');
                continue;
            }
            _ => {}
        }
        sql.extend(c.to_uppercase());
    }
    Ok(sql)
}

/// Runs a catalog query, handing each row to `each`.
pub fn query(
    tr: &Transaction,
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
pub fn int(row: &Row<'_>, i: usize) -> Option<i64> {
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
pub fn text(row: &Row<'_>, i: usize) -> String {
    let v = row.value(i).unwrap_or(b"");
    String::from_utf8_lossy(v).trim_end_matches(' ').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(pattern: &str) -> String {
        similar_to(pattern).unwrap()
    }

    #[test]
    fn commas_list_alternatives_outside_classes_and_counts() {
        assert_eq!(sql("ORDERS,CUSTOMERS"), "ORDERS|CUSTOMERS");
        assert_eq!(sql("A , B,C%"), "A|B|C%");
        assert_eq!(sql("TMP\\_%"), "TMP\\_%");
        assert_eq!(sql("A\\,B"), "A,B");
        assert_eq!(sql("A[,;]B"), "A[,;]B");
        assert_eq!(sql("A{1,3},B"), "A{1,3}|B");
        assert_eq!(sql(" T"), " T");
        assert_eq!(sql("A\\\\,B"), "A\\\\|B");
    }

    #[test]
    fn unquoted_parts_are_upper_cased_and_quoted_parts_exact() {
        assert_eq!(sql("stock"), "STOCK");
        assert_eq!(sql("order%|s_i_id"), "ORDER%|S_I_ID");
        assert_eq!(sql("[a-c]x?"), "[A-C]X?");
        assert_eq!(sql("tmp\\_%"), "TMP\\_%");
        assert_eq!(sql("\"stock\""), "stock");
        // Every character of a quoted part is literal, a comma and a bar too.
        assert_eq!(sql("\"Mixed Case\",stock"), "Mixed Case|STOCK");
        assert_eq!(sql("\"a_b|c,d%\""), "a\\_b\\|c,d\\%");
        assert_eq!(sql("\"tmp_\"%"), "tmp\\_%");
        assert_eq!(sql("\"say \"\"hi\"\"\""), "say \"hi\"");
        assert_eq!(sql("\"\""), "");
        assert_eq!(sql("\"a\\b\""), "a\\\\b");
        for bad in ["\"stock", "a|\"b\"\"", "\""] {
            assert!(similar_to(bad).unwrap_err().contains("not closed"), "{bad}");
        }
        // An exact name (what a manifest or ADBC names) is its quoted form.
        let named = TableFilter::named("odd_\"name\"%").include.unwrap();
        assert_eq!(sql(&named), "odd\\_\"name\"\\%");
    }

    #[test]
    fn patterns_spelled_otherwise_are_the_same_pattern() {
        assert!(same_pattern("stock, item", "STOCK|ITEM"));
        assert!(same_pattern("ord%", "ORD%"));
        assert!(!same_pattern("\"stock\"", "STOCK"));
        assert!(!same_pattern("STOCK", "STOCK,ITEM"));
        assert!(!same_pattern("\"open", "OPEN"));
    }

    #[test]
    fn alternatives_without_wildcards_but_underscores_are_names() {
        let written = |pattern| -> Vec<String> {
            single_names(&sql(pattern))
                .into_iter()
                .map(|n| n.written)
                .collect()
        };
        assert_eq!(written("STOCK|ORDRES"), ["STOCK", "ORDRES"]);
        assert_eq!(written("STOCK, FOO"), ["STOCK", "FOO"]);
        assert_eq!(written("TMP\\_%|A\\,B|C\\_D|E_F"), ["A,B", "C\\_D", "E_F"]);
        assert_eq!(written("\"a%\"|b"), ["a\\%", "B"]);
        assert!(written("ORDER%|(A|B)|[AB]X|X{2}").is_empty());
        let names = single_names("C\\_D|E_F");
        assert!(names[0].matches("C_D") && !names[0].matches("CXD"));
        assert!(names[1].matches("E_F") && names[1].matches("EXF") && !names[1].matches("EF"));
        assert_eq!(single_names("a\\%")[0].shown(), "a%");
    }

    #[test]
    fn an_exact_name_that_names_nothing_is_refused_with_a_hint() {
        let tables = [
            "CUSTOMER".to_string(),
            "Mixed Case".to_string(),
            "Orders".to_string(),
            "STOCK".to_string(),
        ];
        let check =
            |option, pattern| check_exact_names(option, pattern, &sql(pattern), &tables, "table");
        assert_eq!(check("--tables", "STOCK|S%|CUST_MER"), Ok(()));
        assert_eq!(check("--tables", "stock|\"Orders\",\"Mixed Case\""), Ok(()));
        assert_eq!(
            check("--tables", "STOCK|ORDRES").unwrap_err(),
            "--tables 'STOCK|ORDRES': ORDRES is not the name of a table; check the \
             spelling. Tables: CUSTOMER, Mixed Case, Orders, STOCK"
        );
        // Quoted is exact: "stock" is not STOCK.
        assert_eq!(
            check("--exclude", "\"stock\"").unwrap_err(),
            "--exclude '\"stock\"': stock is not the name of a table (a quoted name is \
             exact: did you mean STOCK? --exclude STOCK)"
        );
        // Unquoted is upper case: a table created quoted must be named so.
        assert_eq!(
            check("--tables", "orders").unwrap_err(),
            "--tables 'orders': ORDERS is not the name of a table (unquoted names are \
             upper-cased, as in SQL: did you mean \"Orders\"? --tables '\"Orders\"')"
        );
        assert!(check("--tables", "stock,mixed_case")
            .unwrap_err()
            .ends_with("did you mean \"Mixed Case\"? --tables '\"Mixed Case\"')"));
        assert!(check("--tables", "A,B")
            .unwrap_err()
            .contains("A, B are not names of tables"));
    }

    fn column(field_type: i16, sub_type: i16, precision: Option<i16>, scale: i16) -> Column {
        Column {
            name: "C".into(),
            field_type,
            sub_type,
            precision,
            scale,
            ..Column::default()
        }
    }

    #[test]
    fn arrays_declare_their_bounds_before_the_character_set() {
        let ints = Column {
            dimensions: vec![(1, 4)],
            ..column(blr::INTEGER, 0, None, 0)
        };
        assert_eq!(ints.declared_type(), "INTEGER [1:4]");
        let text = Column {
            name: "LANGUAGE_REQ".into(),
            field_type: blr::VARCHAR,
            char_length: Some(15),
            charset_id: Some(4),
            field_length: 60,
            dimensions: vec![(0, 2), (-1, 1)],
            ..Column::default()
        };
        assert_eq!(
            text.declared_type(),
            "VARCHAR(15) [0:2, -1:1] CHARACTER SET UTF8"
        );
        let shape = text.array_shape("JOB").unwrap();
        assert_eq!(shape.element.code, element::VARYING);
        assert_eq!((shape.element.length, shape.element.charset), (60, 4));
        assert_eq!(shape.len(), 9);
        // A character set fbunload cannot decode comes as UTF8.
        let dos = Column {
            charset_id: Some(10),
            field_length: 15,
            ..text.clone()
        };
        let element = dos.array_shape("JOB").unwrap().element;
        assert_eq!((element.length, element.charset), (60, 4));
        assert!(column(blr::INTEGER, 0, None, 0).array_shape("T").is_none());
    }

    #[test]
    fn declared_types_read_as_they_were_written() {
        assert_eq!(
            column(blr::INTEGER, 1, Some(9), -3).declared_type(),
            "NUMERIC(9,3)"
        );
        assert_eq!(
            column(blr::BIGINT, 2, Some(18), -2).declared_type(),
            "DECIMAL(18,2)"
        );
        assert_eq!(
            column(blr::INT128, 1, Some(38), -4).declared_type(),
            "NUMERIC(38,4)"
        );
        assert_eq!(column(blr::INT128, 0, None, 0).declared_type(), "INT128");
        assert_eq!(
            column(blr::SMALLINT, 0, None, 0).declared_type(),
            "SMALLINT"
        );
        let text = |field_type, length, charset| Column {
            char_length: Some(length),
            charset_id: Some(charset),
            ..column(field_type, 0, None, 0)
        };
        assert_eq!(
            text(blr::CHAR, 10, 4).declared_type(),
            "CHAR(10) CHARACTER SET UTF8"
        );
        assert_eq!(
            text(blr::VARCHAR, 32765, 53).declared_type(),
            "VARCHAR(32765) CHARACTER SET WIN1252"
        );
        let blob = Column {
            charset_id: Some(1),
            ..column(blr::BLOB, 1, None, 0)
        };
        assert_eq!(
            blob.declared_type(),
            "BLOB SUB_TYPE TEXT CHARACTER SET OCTETS"
        );
        assert_eq!(
            column(blr::BLOB, 0, None, 0).declared_type(),
            "BLOB SUB_TYPE BINARY"
        );
        assert_eq!(
            column(blr::DEC128, 0, None, 0).declared_type(),
            "DECFLOAT(34)"
        );
    }
}
