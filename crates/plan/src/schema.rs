//! `schema.sql`: the DDL that recreates the unloaded tables in another
//! Firebird database, read from the catalog at the run's snapshot so that
//! it describes exactly the data written.
//!
//! Reading ([`read_schema`]) and writing ([`Schema::to_sql`]) are apart, so
//! the DDL text is unit-tested on made-up tables and the reading is
//! tested by running the text into a new database and comparing catalogs
//! (`crates/cli/tests/schema.rs`).
//!
//! Choices, and why:
//!
//! - **Domains are resolved** to the column's real type, character set,
//!   collation, NOT NULL and default: the file then needs nothing but
//!   itself. A domain's CHECK is lost with it.
//! - **Whole tables**, whatever `--columns` chose: the DDL describes the
//!   table as it is (its keys may use columns that were not unloaded);
//!   load a projection by naming its columns.
//! - **Computed columns stay computed** (`COMPUTED BY`), with their type.
//! - **Names the engine made up are not kept** (`INTEG_n` constraints,
//!   `RDB$…` indices): the new database makes its own, and a kept one
//!   could collide with them. Every other name is kept, quoted.
//! - **Statements in an order isql can run, whatever reads what**: the
//!   user-defined collations the columns use, then sequences, then the
//!   tables without their computed columns, which are added once every
//!   table exists (`ALTER TABLE ... ADD`, then `ALTER COLUMN ... POSITION`
//!   to put each back in its place): a computed column may read a
//!   sequence or another table, which a dependency order of tables could
//!   not always satisfy (two tables may read each other). Then primary and
//!   unique keys, foreign keys (only to tables in the file), other indices
//!   (an expression index may read other tables too), and the identity
//!   columns' values; loading data after the tables and before the keys
//!   is fastest.
//! - **User-defined collations** are written from `RDB$COLLATIONS` (base
//!   collation, pad, case and accent attributes, specific attributes)
//!   without the ICU and collation versions the engine records: the new
//!   database's engine uses its own ICU.
//! - **BLOB segment sizes** are kept (`SEGMENT SIZE 400`) where they are
//!   not the default 80.
//! - **Sequences**: all user sequences when every user table is
//!   unloaded; otherwise those that the unloaded tables' triggers,
//!   computed columns or expression indices use (`RDB$DEPENDENCIES`, where
//!   a computed column is named by its field source). Sequences are outside
//!   transactions, so their value is the one read right after the
//!   snapshot was taken: at least what any unloaded row used.
//! - Not written, as the file's first lines say: views, triggers,
//!   procedures, functions, packages, exceptions, domains (resolved to
//!   types; a domain's CHECK is lost), CHECK constraints, grants, roles and
//!   comments: they can name objects outside the unloaded tables.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write;

use fbunload_client::{ClientError, Row, Transaction};

use crate::catalog::{blr, int, query, read_array_bounds, text};
use crate::identifier::quote_identifier;
use crate::inventory::{ColumnRow, COLUMN_COLLATION_ID, COLUMN_ROWS_ORDER};
use crate::Column;

/// The tables of a run, their keys and indices, and the sequences they use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schema {
    /// The catalog's triggers, procedures and functions as DDL, its
    /// exceptions and its views' columns, for a destination that
    /// translates PSQL.
    pub routines: crate::routines::Routines,
    /// User-defined collations the tables' columns use.
    pub collations: Vec<Collation>,
    pub tables: Vec<TableSchema>,
    pub sequences: Vec<Sequence>,
    /// Foreign keys that reference tables not in the schema, as
    /// `(table, constraint)`: noted in the file instead.
    pub skipped_foreign_keys: Vec<(String, String)>,
    /// What reads or guards the tables and is Firebird's own SQL: their
    /// triggers and CHECK constraints, and the views and procedures that
    /// read them. Not in `schema.sql`; a database destination reports it.
    pub sources: Vec<SourceObject>,
    /// Every user object of the catalog, for a database destination to
    /// account for each (made or reported).
    pub catalog: crate::inventory::Inventory,
}

/// A trigger, CHECK constraint, view or procedure and its source text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceObject {
    /// `trigger`, `check constraint`, `view`, `procedure`.
    pub kind: String,
    /// The table it belongs to (triggers, CHECK constraints).
    pub table: Option<String>,
    pub name: String,
    /// As the catalog keeps it; empty where it keeps none.
    pub source: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableSchema {
    pub name: String,
    pub columns: Vec<ColumnSchema>,
    /// Primary key first, then unique keys, then foreign keys.
    pub constraints: Vec<Constraint>,
    /// Indices that belong to no constraint.
    pub indices: Vec<Index>,
    /// `COMMENT ON TABLE` (RDB$DESCRIPTION).
    pub comment: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ColumnSchema {
    pub name: String,
    /// The type with its character set: `VARCHAR(10) CHARACTER SET WIN1252`.
    pub data_type: String,
    /// As the catalog keeps it, keyword included: `DEFAULT 0`.
    pub default: Option<String>,
    pub not_null: bool,
    /// A collation other than the character set's default.
    pub collation: Option<String>,
    /// The expression, in its parentheses: `(A * 2)`.
    pub computed_by: Option<String>,
    pub identity: Option<Identity>,
    /// The user domain it is declared with (its type, default and NOT
    /// NULL are resolved into this column's all the same).
    pub domain: Option<String>,
    /// `COMMENT ON COLUMN` (RDB$DESCRIPTION).
    pub comment: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Identity {
    /// `GENERATED ALWAYS` rather than `BY DEFAULT`.
    pub always: bool,
    pub sequence: SequenceValues,
}

/// A sequence's declaration and where it stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SequenceValues {
    pub start: i64,
    pub increment: i64,
    /// `GEN_ID(sequence, 0)`.
    pub current: i64,
}

impl SequenceValues {
    /// The n of `RESTART WITH n` that leaves the sequence at `current`.
    /// Since Firebird 4 the next value after `RESTART WITH n` is n (the
    /// current value becomes n − increment), so n = current + increment.
    /// Firebird 3 would leave it one increment higher: a gap, never a
    /// value used twice. `None` where that overflows.
    pub fn restart_with(&self) -> Option<i64> {
        self.current.checked_add(self.increment)
    }
}

/// A collation made with `CREATE COLLATION`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collation {
    pub name: String,
    pub charset: String,
    /// The collation it is made from: one of its character set's
    /// (`FROM UNICODE`), or else a name of the engine's collation library
    /// (`FROM EXTERNAL ('...')`).
    pub base: String,
    pub base_is_collation: bool,
    pub pad_space: bool,
    pub case_insensitive: bool,
    pub accent_insensitive: bool,
    /// `NUMERIC-SORT=1;LOCALE=sv_SE`, without the versions the engine
    /// records for itself.
    pub specific_attributes: Option<String>,
}

/// `RDB$COLLATION_ATTRIBUTES` bits.
const COLLATION_PAD_SPACE: i64 = 1;
const COLLATION_CASE_INSENSITIVE: i64 = 2;
const COLLATION_ACCENT_INSENSITIVE: i64 = 4;

/// Specific attributes the engine records about the ICU it runs with;
/// written, they would tie the new database to that ICU.
const ENGINE_RECORDED_ATTRIBUTES: [&str; 2] = ["COLL-VERSION", "ICU-VERSION"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequence {
    pub name: String,
    pub values: SequenceValues,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    /// `None` where the engine named it (`INTEG_n`).
    pub name: Option<String>,
    pub kind: ConstraintKind,
    pub columns: Vec<String>,
    /// The index to create for it, where its name or order is not the one
    /// the engine would choose (`USING DESC INDEX ...`).
    pub index: Option<ConstraintIndex>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConstraintKind {
    PrimaryKey,
    Unique,
    ForeignKey {
        table: String,
        columns: Vec<String>,
        /// `CASCADE`, `SET NULL`, `SET DEFAULT`, `NO ACTION`; `None` for
        /// the default (`RESTRICT`).
        on_update: Option<String>,
        on_delete: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintIndex {
    pub name: String,
    pub descending: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    pub name: String,
    pub unique: bool,
    pub descending: bool,
    /// Empty for an expression index.
    pub columns: Vec<String>,
    /// `(UPPER(NAME))`, for `COMPUTED BY`.
    pub expression: Option<String>,
    /// A partial index's `WHERE ...` (Firebird 5).
    pub condition: Option<String>,
    pub inactive: bool,
}

/// Reads the schema of `tables` (names as in the catalog) in `tr`, which
/// should be the run's snapshot.
pub fn read_schema(tr: &Transaction, tables: &[String]) -> Result<Schema, ClientError> {
    let wanted: HashSet<&str> = tables.iter().map(String::as_str).collect();
    let mut schema = Schema {
        tables: tables
            .iter()
            .map(|name| TableSchema {
                name: name.clone(),
                ..TableSchema::default()
            })
            .collect(),
        ..Schema::default()
    };
    let position: HashMap<String, usize> = tables
        .iter()
        .enumerate()
        .map(|(i, name)| (name.clone(), i))
        .collect();
    let generators = read_generators(tr)?;
    let column_rows = read_columns(tr, &position, &generators, &mut schema)?;
    schema.routines = crate::routines::read_routines(tr, &column_rows)?;
    read_keys_and_indices(tr, &position, &mut schema)?;
    read_sources(tr, &position, &mut schema)?;
    schema.catalog = crate::inventory::read_inventory_with(tr, column_rows)?;
    let collations: HashSet<&str> = schema
        .tables
        .iter()
        .flat_map(|t| t.columns.iter().filter_map(|c| c.collation.as_deref()))
        .collect();
    schema.collations = read_user_collations(tr)?
        .into_iter()
        .filter(|c| collations.contains(c.name.as_str()))
        .collect();

    let mut used = BTreeSet::new();
    if every_user_table(tr, &wanted)? {
        used.extend(
            generators
                .iter()
                .filter(|(_, g)| g.user)
                .map(|(name, _)| name.clone()),
        );
    } else {
        // The table of what uses a sequence: a trigger's, a computed
        // column's (its dependency names the column's field source) or an
        // expression index's.
        each_row(
            tr,
            "SELECT d.RDB$DEPENDED_ON_NAME, \
             COALESCE(t.RDB$RELATION_NAME, rf.RDB$RELATION_NAME, i.RDB$RELATION_NAME, \
             d.RDB$DEPENDENT_NAME) \
             FROM RDB$DEPENDENCIES d LEFT JOIN RDB$TRIGGERS t \
             ON d.RDB$DEPENDENT_TYPE = 2 AND t.RDB$TRIGGER_NAME = d.RDB$DEPENDENT_NAME \
             LEFT JOIN RDB$RELATION_FIELDS rf \
             ON d.RDB$DEPENDENT_TYPE = 3 AND rf.RDB$FIELD_SOURCE = d.RDB$DEPENDENT_NAME \
             LEFT JOIN RDB$INDICES i \
             ON d.RDB$DEPENDENT_TYPE = 6 AND i.RDB$INDEX_NAME = d.RDB$DEPENDENT_NAME \
             WHERE d.RDB$DEPENDED_ON_TYPE = 14 AND d.RDB$DEPENDENT_TYPE IN (0, 2, 3, 6)",
            |row| {
                if wanted.contains(text(row, 1).as_str()) {
                    used.insert(text(row, 0));
                }
                Ok(())
            },
        )?;
    }
    for name in used {
        if let Some(g) = generators.get(&name).filter(|g| g.user) {
            schema.sequences.push(Sequence {
                name,
                values: g.values,
            });
        }
    }
    Ok(schema)
}

/// Table comments, the tables' triggers and CHECK constraints, and the
/// views and procedures that read them (`RDB$DEPENDENCIES`).
fn read_sources(
    tr: &Transaction,
    position: &HashMap<String, usize>,
    schema: &mut Schema,
) -> Result<(), ClientError> {
    each_row(
        tr,
        "SELECT RDB$RELATION_NAME, RDB$DESCRIPTION FROM RDB$RELATIONS \
         WHERE RDB$DESCRIPTION IS NOT NULL",
        |row| {
            if let Some(&table) = position.get(&text(row, 0)) {
                schema.tables[table].comment = blob_text(row, 1)?;
            }
            Ok(())
        },
    )?;
    let mut found = Vec::new();
    // Firebird's CHECK constraints are pairs of system triggers (before
    // insert, type 1, and before update): the first holds the source.
    each_row(
        tr,
        "SELECT 'trigger', t.RDB$RELATION_NAME, t.RDB$TRIGGER_NAME, t.RDB$TRIGGER_SOURCE \
         FROM RDB$TRIGGERS t WHERE COALESCE(t.RDB$SYSTEM_FLAG, 0) = 0 \
         AND t.RDB$RELATION_NAME IS NOT NULL \
         UNION ALL SELECT 'check constraint', rc.RDB$RELATION_NAME, rc.RDB$CONSTRAINT_NAME, \
         t.RDB$TRIGGER_SOURCE FROM RDB$RELATION_CONSTRAINTS rc \
         JOIN RDB$CHECK_CONSTRAINTS cc ON cc.RDB$CONSTRAINT_NAME = rc.RDB$CONSTRAINT_NAME \
         JOIN RDB$TRIGGERS t ON t.RDB$TRIGGER_NAME = cc.RDB$TRIGGER_NAME \
         AND t.RDB$TRIGGER_TYPE = 1 WHERE rc.RDB$CONSTRAINT_TYPE = 'CHECK'",
        |row| {
            let table = text(row, 1);
            if position.contains_key(&table) {
                found.push(SourceObject {
                    kind: text(row, 0),
                    table: Some(table),
                    name: text(row, 2),
                    source: blob_text(row, 3)?.unwrap_or_default(),
                });
            }
            Ok(())
        },
    )?;
    // Views (dependent type 1) and procedures (5) that read a table here.
    let mut readers = BTreeSet::new();
    each_row(
        tr,
        "SELECT DISTINCT RDB$DEPENDENT_TYPE, RDB$DEPENDENT_NAME, RDB$DEPENDED_ON_NAME \
         FROM RDB$DEPENDENCIES WHERE RDB$DEPENDED_ON_TYPE = 0 AND RDB$DEPENDENT_TYPE IN (1, 5)",
        |row| {
            if position.contains_key(&text(row, 2)) {
                readers.insert((int(row, 0).unwrap_or(0), text(row, 1)));
            }
            Ok(())
        },
    )?;
    if !readers.is_empty() {
        each_row(
            tr,
            "SELECT 1, RDB$RELATION_NAME, RDB$VIEW_SOURCE FROM RDB$RELATIONS \
             WHERE RDB$VIEW_BLR IS NOT NULL \
             UNION ALL SELECT 5, RDB$PROCEDURE_NAME, RDB$PROCEDURE_SOURCE FROM RDB$PROCEDURES",
            |row| {
                let kind = int(row, 0).unwrap_or(0);
                let name = text(row, 1);
                if readers.contains(&(kind, name.clone())) {
                    found.push(SourceObject {
                        kind: if kind == 1 { "view" } else { "procedure" }.into(),
                        table: None,
                        name,
                        source: blob_text(row, 2)?.unwrap_or_default(),
                    });
                }
                Ok(())
            },
        )?;
    }
    schema.sources = found;
    Ok(())
}

/// A generator of the catalog, with its value now.
struct Generator {
    /// A user's sequence (not a system one, not an identity column's).
    user: bool,
    values: SequenceValues,
}

fn read_generators(tr: &Transaction) -> Result<HashMap<String, Generator>, ClientError> {
    let mut generators = HashMap::new();
    each_row(
        tr,
        "SELECT RDB$GENERATOR_NAME, COALESCE(RDB$SYSTEM_FLAG, 0), \
         COALESCE(RDB$INITIAL_VALUE, 0), COALESCE(RDB$GENERATOR_INCREMENT, 1) \
         FROM RDB$GENERATORS WHERE COALESCE(RDB$SYSTEM_FLAG, 0) IN (0, 6)",
        |row| {
            generators.insert(
                text(row, 0),
                Generator {
                    // 6: the sequence of an identity column.
                    user: int(row, 1) == Some(0),
                    values: SequenceValues {
                        start: int(row, 2).unwrap_or(0),
                        increment: int(row, 3).unwrap_or(1),
                        current: 0,
                    },
                },
            );
            Ok(())
        },
    )?;
    // One query per batch of generators: GEN_ID takes a name, not a value.
    let names: Vec<String> = generators.keys().cloned().collect();
    for batch in names.chunks(100) {
        let reads: Vec<String> = batch
            .iter()
            .map(|name| format!("GEN_ID({}, 0)", quote_identifier(name)))
            .collect();
        let sql = format!("SELECT {} FROM RDB$DATABASE", reads.join(", "));
        each_row(tr, &sql, |row| {
            for (i, name) in batch.iter().enumerate() {
                if let Some(g) = generators.get_mut(name) {
                    g.values.current = int(row, i).unwrap_or(0);
                }
            }
            Ok(())
        })?;
    }
    Ok(generators)
}

/// Every collation made with `CREATE COLLATION`, in the order they were
/// made (the engine counts their ids down).
fn read_user_collations(tr: &Transaction) -> Result<Vec<Collation>, ClientError> {
    let mut collations = Vec::new();
    each_row(
        tr,
        "SELECT c.RDB$COLLATION_NAME, cs.RDB$CHARACTER_SET_NAME, c.RDB$BASE_COLLATION_NAME, \
         COALESCE(c.RDB$COLLATION_ATTRIBUTES, 0), c.RDB$SPECIFIC_ATTRIBUTES, \
         (SELECT COUNT(*) FROM RDB$COLLATIONS b \
          WHERE b.RDB$COLLATION_NAME = c.RDB$BASE_COLLATION_NAME \
          AND b.RDB$CHARACTER_SET_ID = c.RDB$CHARACTER_SET_ID) \
         FROM RDB$COLLATIONS c \
         JOIN RDB$CHARACTER_SETS cs ON cs.RDB$CHARACTER_SET_ID = c.RDB$CHARACTER_SET_ID \
         WHERE COALESCE(c.RDB$SYSTEM_FLAG, 0) = 0 \
         ORDER BY c.RDB$CHARACTER_SET_ID, c.RDB$COLLATION_ID DESC",
        |row| {
            let attributes = int(row, 3).unwrap_or(0);
            let specific = blob_text(row, 4)?.map(|text| {
                text.split(';')
                    .filter(|a| {
                        let key = a.split('=').next().unwrap_or("").trim();
                        !a.trim().is_empty()
                            && !ENGINE_RECORDED_ATTRIBUTES
                                .iter()
                                .any(|k| k.eq_ignore_ascii_case(key))
                    })
                    .collect::<Vec<_>>()
                    .join(";")
            });
            collations.push(Collation {
                name: text(row, 0),
                charset: text(row, 1),
                base: text(row, 2),
                base_is_collation: int(row, 5).unwrap_or(0) > 0,
                pad_space: attributes & COLLATION_PAD_SPACE != 0,
                case_insensitive: attributes & COLLATION_CASE_INSENSITIVE != 0,
                accent_insensitive: attributes & COLLATION_ACCENT_INSENSITIVE != 0,
                specific_attributes: specific.filter(|s| !s.is_empty()),
            });
            Ok(())
        },
    )?;
    Ok(collations)
}

/// Whether `tables` are all the user tables there are (then every user
/// sequence belongs in the schema).
fn every_user_table(tr: &Transaction, tables: &HashSet<&str>) -> Result<bool, ClientError> {
    let mut every = true;
    each_row(
        tr,
        "SELECT RDB$RELATION_NAME FROM RDB$RELATIONS \
         WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 AND COALESCE(RDB$RELATION_TYPE, 0) = 0 \
         AND RDB$VIEW_BLR IS NULL",
        |row| {
            every &= tables.contains(text(row, 0).as_str());
            Ok(())
        },
    )?;
    Ok(every)
}

/// Whether the catalog has this column: identity columns, packages and
/// PSQL functions arrived in Firebird 3, partial indices in 5.
pub(crate) fn has_catalog_column(
    tr: &Transaction,
    table: &str,
    column: &str,
) -> Result<bool, ClientError> {
    let mut found = false;
    each_row(
        tr,
        &format!(
            "SELECT 1 FROM RDB$RELATION_FIELDS WHERE RDB$RELATION_NAME = '{table}' \
             AND RDB$FIELD_NAME = '{column}'"
        ),
        |_| {
            found = true;
            Ok(())
        },
    )?;
    Ok(found)
}

/// Reads the columns of `position`'s tables into `schema`, and returns
/// every relation's column rows for the inventory
/// ([`crate::inventory::read_inventory_with`]): one read of the catalog's
/// columns for both.
fn read_columns(
    tr: &Transaction,
    position: &HashMap<String, usize>,
    generators: &HashMap<String, Generator>,
    schema: &mut Schema,
) -> Result<Vec<ColumnRow>, ClientError> {
    let identity = if has_catalog_column(tr, "RDB$RELATION_FIELDS", "RDB$IDENTITY_TYPE")? {
        "rf.RDB$IDENTITY_TYPE, rf.RDB$GENERATOR_NAME"
    } else {
        "NULL, NULL"
    };
    // The collation is the column's own, else its domain's; 0 is the
    // character set's default, which needs no COLLATE.
    let sql = format!(
        "SELECT rf.RDB$RELATION_NAME, rf.RDB$FIELD_NAME, f.RDB$FIELD_TYPE, \
         f.RDB$FIELD_PRECISION, COALESCE(f.RDB$FIELD_SCALE, 0), \
         COALESCE(f.RDB$FIELD_SUB_TYPE, 0), f.RDB$CHARACTER_LENGTH, f.RDB$CHARACTER_SET_ID, \
         COALESCE(rf.RDB$NULL_FLAG, 0) + COALESCE(f.RDB$NULL_FLAG, 0), \
         COALESCE(rf.RDB$DEFAULT_SOURCE, f.RDB$DEFAULT_SOURCE), f.RDB$COMPUTED_SOURCE, \
         c.RDB$COLLATION_NAME, {identity}, f.RDB$SEGMENT_LENGTH, \
         COALESCE(f.RDB$DIMENSIONS, 0), f.RDB$FIELD_LENGTH, rf.RDB$FIELD_SOURCE, \
         rf.RDB$DESCRIPTION, IIF(f.RDB$COMPUTED_BLR IS NULL, 0, 1), {COLUMN_COLLATION_ID} \
         FROM RDB$RELATION_FIELDS rf JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = rf.RDB$FIELD_SOURCE \
         LEFT JOIN RDB$COLLATIONS c ON c.RDB$CHARACTER_SET_ID = f.RDB$CHARACTER_SET_ID \
         AND c.RDB$COLLATION_ID = COALESCE(rf.RDB$COLLATION_ID, f.RDB$COLLATION_ID, 0) \
         AND COALESCE(rf.RDB$COLLATION_ID, f.RDB$COLLATION_ID, 0) <> 0 \
         {COLUMN_ROWS_ORDER}"
    );
    let mut array_bounds = None;
    let mut rows = Vec::new();
    each_row(tr, &sql, |row| {
        let (relation, name) = (text(row, 0), text(row, 1));
        let computed_by = blob_text(row, 10)?;
        let comment = blob_text(row, 18)?;
        let table = position.get(&relation).copied();
        rows.push(ColumnRow {
            relation,
            name: name.clone(),
            computed_source: computed_by.clone(),
            comment: comment.clone(),
            computed: int(row, 19) == Some(1),
            charset_id: int(row, 7),
            collation_id: int(row, 20).unwrap_or(0),
        });
        let Some(table) = table else {
            return Ok(());
        };
        let dimensions = if int(row, 15).unwrap_or(0) > 0 {
            if array_bounds.is_none() {
                array_bounds = Some(read_array_bounds(tr)?);
            }
            let bounds = array_bounds.as_ref().and_then(|b| b.get(&text(row, 17)));
            bounds.cloned().unwrap_or_default()
        } else {
            Vec::new()
        };
        let field_type = int(row, 2).unwrap_or(0) as i16;
        let sub_type = int(row, 5).unwrap_or(0) as i16;
        let is_text = matches!(field_type, blr::CHAR | blr::VARCHAR | blr::CSTRING)
            || (field_type == blr::BLOB && sub_type == 1);
        let column = Column {
            name,
            field_type,
            sub_type,
            precision: int(row, 3).map(|p| p as i16),
            scale: int(row, 4).unwrap_or(0) as i16,
            char_length: int(row, 6).map(|n| n as i16),
            charset_id: is_text.then(|| int(row, 7).unwrap_or(0) as u8),
            field_length: int(row, 16).unwrap_or(0) as i16,
            dimensions,
            // Only its declared type is asked for; the column's NOT NULL
            // is read apart.
            ..Column::default()
        };
        let identity = int(row, 12).and_then(|kind| {
            let values = generators.get(&text(row, 13))?.values;
            Some(Identity {
                always: kind == 0,
                sequence: values,
            })
        });
        let data_type = with_segment_size(column.declared_type(), int(row, 14));
        schema.tables[table].columns.push(ColumnSchema {
            data_type,
            name: column.name,
            not_null: int(row, 8).unwrap_or(0) > 0,
            default: blob_text(row, 9)?,
            computed_by,
            collation: row.value(11).map(|_| text(row, 11)),
            identity,
            comment,
            domain: Some(text(row, 17)).filter(|d| !d.starts_with("RDB$")),
        });
        Ok(())
    })?;
    Ok(rows)
}

/// The BLOB segment size every BLOB gets unless told otherwise.
const DEFAULT_SEGMENT_SIZE: i64 = 80;

/// `BLOB SUB_TYPE TEXT SEGMENT SIZE 400 CHARACTER SET UTF8`: a BLOB's type
/// with its segment size, where that is not the default; the grammar
/// takes it before the character set.
fn with_segment_size(data_type: String, segment_size: Option<i64>) -> String {
    match segment_size {
        Some(size) if size != DEFAULT_SEGMENT_SIZE && data_type.starts_with("BLOB ") => {
            let clause = format!(" SEGMENT SIZE {size}");
            match data_type.find(" CHARACTER SET ") {
                Some(at) => format!("{}{clause}{}", &data_type[..at], &data_type[at..]),
                None => data_type + &clause,
            }
        }
        _ => data_type,
    }
}

fn read_keys_and_indices(
    tr: &Transaction,
    position: &HashMap<String, usize>,
    schema: &mut Schema,
) -> Result<(), ClientError> {
    let mut segments: HashMap<String, Vec<String>> = HashMap::new();
    each_row(
        tr,
        "SELECT s.RDB$INDEX_NAME, s.RDB$FIELD_NAME FROM RDB$INDEX_SEGMENTS s \
         JOIN RDB$INDICES i ON i.RDB$INDEX_NAME = s.RDB$INDEX_NAME \
         WHERE COALESCE(i.RDB$SYSTEM_FLAG, 0) = 0 \
         ORDER BY s.RDB$INDEX_NAME, s.RDB$FIELD_POSITION",
        |row| {
            segments.entry(text(row, 0)).or_default().push(text(row, 1));
            Ok(())
        },
    )?;
    let condition = if has_catalog_column(tr, "RDB$INDICES", "RDB$CONDITION_SOURCE")? {
        "i.RDB$CONDITION_SOURCE"
    } else {
        "NULL"
    };
    let mut indices: Vec<(String, Index)> = Vec::new();
    let mut relation_of_index: HashMap<String, String> = HashMap::new();
    let mut foreign_key_target: HashMap<String, String> = HashMap::new();
    each_row(
        tr,
        &format!(
            "SELECT i.RDB$RELATION_NAME, i.RDB$INDEX_NAME, COALESCE(i.RDB$UNIQUE_FLAG, 0), \
             COALESCE(i.RDB$INDEX_TYPE, 0), COALESCE(i.RDB$INDEX_INACTIVE, 0), \
             i.RDB$EXPRESSION_SOURCE, {condition}, i.RDB$FOREIGN_KEY \
             FROM RDB$INDICES i WHERE COALESCE(i.RDB$SYSTEM_FLAG, 0) = 0 \
             ORDER BY i.RDB$RELATION_NAME, i.RDB$INDEX_NAME"
        ),
        |row| {
            let name = text(row, 1);
            relation_of_index.insert(name.clone(), text(row, 0));
            if row.value(7).is_some() {
                foreign_key_target.insert(name.clone(), text(row, 7));
            }
            indices.push((
                text(row, 0),
                Index {
                    columns: segments.get(&name).cloned().unwrap_or_default(),
                    name,
                    unique: int(row, 2) == Some(1),
                    descending: int(row, 3) == Some(1),
                    inactive: int(row, 4) == Some(1),
                    expression: blob_text(row, 5)?,
                    condition: blob_text(row, 6)?,
                },
            ));
            Ok(())
        },
    )?;

    let mut constraint_indices = HashSet::new();
    let by_name: HashMap<&str, &Index> =
        indices.iter().map(|(_, i)| (i.name.as_str(), i)).collect();
    each_row(
        tr,
        "SELECT rc.RDB$RELATION_NAME, rc.RDB$CONSTRAINT_NAME, rc.RDB$CONSTRAINT_TYPE, \
         rc.RDB$INDEX_NAME, ref.RDB$UPDATE_RULE, ref.RDB$DELETE_RULE \
         FROM RDB$RELATION_CONSTRAINTS rc \
         LEFT JOIN RDB$REF_CONSTRAINTS ref ON ref.RDB$CONSTRAINT_NAME = rc.RDB$CONSTRAINT_NAME \
         WHERE rc.RDB$CONSTRAINT_TYPE IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY') \
         ORDER BY rc.RDB$RELATION_NAME, rc.RDB$CONSTRAINT_NAME",
        |row| {
            let index_name = text(row, 3);
            constraint_indices.insert(index_name.clone());
            let Some(&table) = position.get(&text(row, 0)) else {
                return Ok(());
            };
            let Some(index) = by_name.get(index_name.as_str()) else {
                return Ok(());
            };
            let name = Some(text(row, 1)).filter(|n| !is_engine_constraint_name(n));
            let kind = match text(row, 2).as_str() {
                "PRIMARY KEY" => ConstraintKind::PrimaryKey,
                "UNIQUE" => ConstraintKind::Unique,
                _ => {
                    let target = foreign_key_target.get(&index_name);
                    let referenced = target.and_then(|t| relation_of_index.get(t));
                    let (Some(target), Some(referenced)) = (target, referenced) else {
                        return Ok(());
                    };
                    if !position.contains_key(referenced) {
                        let table = &schema.tables[table].name;
                        schema
                            .skipped_foreign_keys
                            .push((table.clone(), text(row, 1)));
                        return Ok(());
                    }
                    let rule = |i| Some(text(row, i)).filter(|r| r != "RESTRICT" && !r.is_empty());
                    ConstraintKind::ForeignKey {
                        table: referenced.clone(),
                        columns: segments.get(target).cloned().unwrap_or_default(),
                        on_update: rule(4),
                        on_delete: rule(5),
                    }
                }
            };
            let index = constraint_index(name.as_deref(), index);
            schema.tables[table].constraints.push(Constraint {
                name,
                kind,
                columns: segments.get(&index_name).cloned().unwrap_or_default(),
                index,
            });
            Ok(())
        },
    )?;
    for table in &mut schema.tables {
        // Keys before the foreign keys that may reference them.
        table.constraints.sort_by_key(|c| match c.kind {
            ConstraintKind::PrimaryKey => 0,
            ConstraintKind::Unique => 1,
            ConstraintKind::ForeignKey { .. } => 2,
        });
    }
    for (relation, index) in indices {
        if constraint_indices.contains(&index.name) {
            continue;
        }
        if let Some(&table) = position.get(&relation) {
            schema.tables[table].indices.push(index);
        }
    }
    Ok(())
}

/// The `USING` index of a constraint, where the default would differ:
/// the engine names a constraint's index after the constraint (or
/// `RDB$…` if unnamed) and makes it ascending.
fn constraint_index(constraint: Option<&str>, index: &Index) -> Option<ConstraintIndex> {
    let kept_name = Some(index.name.as_str()).filter(|n| !is_engine_index_name(n));
    let name = match (kept_name, constraint) {
        (Some(name), Some(constraint)) if name == constraint && !index.descending => return None,
        (Some(name), _) => name,
        // An engine-named index in descending order: named after its
        // constraint, where there is a name to take.
        (None, Some(constraint)) if index.descending => constraint,
        (None, _) => return None,
    };
    Some(ConstraintIndex {
        name: name.to_string(),
        descending: index.descending,
    })
}

/// `INTEG_12`: the name the engine gives an unnamed constraint.
pub(crate) fn is_engine_constraint_name(name: &str) -> bool {
    name.strip_prefix("INTEG_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `RDB$PRIMARY3`, `RDB$FOREIGN7`, `RDB$12`: the engine's names.
fn is_engine_index_name(name: &str) -> bool {
    name.starts_with("RDB$")
}

/// Runs a catalog query; `each` may fail (reading a blob).
pub(crate) fn each_row(
    tr: &Transaction,
    sql: &str,
    mut each: impl FnMut(&Row<'_>) -> Result<(), ClientError>,
) -> Result<(), ClientError> {
    let mut failed = None;
    query(tr, sql, |row| {
        if failed.is_none() {
            failed = each(row).err();
        }
    })?;
    failed.map_or(Ok(()), Err)
}

/// A text BLOB of the catalog (the source of a default, a computed
/// column, an index expression), trimmed. Metadata is UTF-8 and the
/// connection converts nothing.
pub(crate) fn blob_text(row: &Row<'_>, i: usize) -> Result<Option<String>, ClientError> {
    let Some(id) = row.value(i) else {
        return Ok(None);
    };
    let id: fbunload_client::BlobId = id
        .try_into()
        .map_err(|_| ClientError::Invalid("a catalog BLOB id of the wrong size".into()))?;
    let mut bytes = Vec::new();
    row.transaction().read_blob(&id, &mut bytes)?;
    let source = String::from_utf8_lossy(&bytes).trim().to_string();
    Ok(Some(source).filter(|s| !s.is_empty()))
}

/// The first word of `text`, in upper case, is `keyword`.
fn starts_with_keyword(text: &str, keyword: &str) -> bool {
    text.get(..keyword.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(keyword))
        && !text[keyword.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$')
}

/// `(expression)`: the catalog keeps the parentheses, but say so anyway.
fn parenthesized(expression: &str) -> String {
    if expression.starts_with('(') && expression.ends_with(')') {
        expression.to_string()
    } else {
        format!("({expression})")
    }
}

fn column_list(columns: &[String]) -> String {
    columns
        .iter()
        .map(|c| quote_identifier(c))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Schema {
    /// The whole file: statements ending in `;`, each on lines of its own,
    /// comments on lines of their own.
    pub fn to_sql(&self) -> String {
        let mut sql = String::from(
            "-- The tables unloaded by fbunload, as they were at the run's snapshot.\n\
             -- Run it into an empty database: isql -ch UTF8 -i schema.sql DATABASE\n\
             -- Load the data after the tables and before the keys for speed.\n\
             -- Written: the user-defined collations the columns use, sequences (at\n\
             -- their values), tables (columns with types, defaults, NOT NULL,\n\
             -- collations, identity, computed columns, BLOB segment sizes, ARRAY\n\
             -- dimensions), primary, unique and foreign keys, indices (expression\n\
             -- and partial ones too).\n\
             -- Not written: views, triggers, procedures, functions, packages,\n\
             -- exceptions, domains (resolved to types: a domain's CHECK is lost),\n\
             -- CHECK constraints, grants, roles and comments.\n",
        );
        section(
            &mut sql,
            "Collations",
            self.collations.iter().map(Collation::create).collect(),
        );
        section(
            &mut sql,
            "Sequences, at their values at the snapshot",
            self.sequences.iter().map(Sequence::create).collect(),
        );
        for table in &self.tables {
            sql += "\n";
            sql += &table.create_table();
        }
        section(
            &mut sql,
            "Computed columns, once every table they may read exists",
            self.tables
                .iter()
                .flat_map(TableSchema::add_computed_columns)
                .collect(),
        );
        let constraints = |foreign: bool| {
            self.tables
                .iter()
                .flat_map(|t| {
                    t.constraints
                        .iter()
                        .filter(move |c| {
                            matches!(c.kind, ConstraintKind::ForeignKey { .. }) == foreign
                        })
                        .map(move |c| c.add_to(&t.name))
                })
                .collect()
        };
        section(&mut sql, "Primary and unique keys", constraints(false));
        let mut foreign_keys: Vec<String> = constraints(true);
        for (table, constraint) in &self.skipped_foreign_keys {
            foreign_keys.push(format!(
                "-- not written: foreign key {} of {}, to a table not unloaded\n",
                quote_identifier(constraint),
                quote_identifier(table)
            ));
        }
        section(&mut sql, "Foreign keys", foreign_keys);
        section(
            &mut sql,
            "Indices",
            self.tables
                .iter()
                .flat_map(|t| t.indices.iter().map(|i| i.create_on(&t.name)))
                .collect(),
        );
        let mut values = Vec::new();
        for table in &self.tables {
            for column in &table.columns {
                if let Some(identity) = column.identity {
                    values.push(restart(
                        &format!(
                            "ALTER TABLE {} ALTER COLUMN {}",
                            quote_identifier(&table.name),
                            quote_identifier(&column.name)
                        ),
                        "",
                        identity.sequence,
                    ));
                }
            }
        }
        section(
            &mut sql,
            "Identity columns, at their values at the snapshot",
            values,
        );
        sql += "\nCOMMIT;\n";
        sql
    }
}

/// Appends `statements` under a `-- title` line, if there are any.
fn section(sql: &mut String, title: &str, statements: Vec<String>) {
    if !statements.is_empty() {
        let _ = write!(sql, "\n-- {title}\n");
        for statement in statements {
            *sql += &statement;
        }
    }
}

/// `<alter> RESTART WITH n;` that leaves the sequence at its current
/// value. `SET GENERATOR` does the same in every Firebird but is
/// deprecated: only where n would overflow, for a sequence.
fn restart(alter: &str, sequence: &str, values: SequenceValues) -> String {
    match values.restart_with() {
        Some(n) => format!("{alter} RESTART WITH {n};\n"),
        None if !sequence.is_empty() => {
            format!("SET GENERATOR {sequence} TO {};\n", values.current)
        }
        None => format!(
            "-- {alter}: its current value {} is the last one; the next insert fails\n",
            values.current
        ),
    }
}

impl Collation {
    fn create(&self) -> String {
        let mut text = format!(
            "CREATE COLLATION {} FOR {} FROM ",
            quote_identifier(&self.name),
            self.charset
        );
        if self.base_is_collation {
            text += &quote_identifier(&self.base);
        } else {
            let _ = write!(text, "EXTERNAL ({})", sql_string(&self.base));
        }
        text += if self.pad_space {
            " PAD SPACE"
        } else {
            " NO PAD"
        };
        if self.case_insensitive {
            text += " CASE INSENSITIVE";
        }
        if self.accent_insensitive {
            text += " ACCENT INSENSITIVE";
        }
        if let Some(attributes) = &self.specific_attributes {
            let _ = write!(text, " {}", sql_string(attributes));
        }
        text + ";\n"
    }
}

/// `'it''s'`: an SQL string literal.
fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

impl Sequence {
    fn create(&self) -> String {
        let name = quote_identifier(&self.name);
        let v = self.values;
        format!(
            "CREATE SEQUENCE {name} START WITH {} INCREMENT BY {};\n{}",
            v.start,
            v.increment,
            restart(&format!("ALTER SEQUENCE {name}"), &name, v)
        )
    }
}

impl TableSchema {
    /// The table with its stored columns; [`Self::add_computed_columns`]
    /// adds the others.
    fn create_table(&self) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .filter(|c| c.computed_by.is_none())
            .map(|c| format!("    {}", c.definition()))
            .collect();
        format!(
            "CREATE TABLE {} (\n{}\n);\n",
            quote_identifier(&self.name),
            columns.join(",\n")
        )
    }
}

impl TableSchema {
    /// Each computed column added to the table, then moved to its place
    /// among the columns (positions count from 1, in the order the
    /// columns are listed); each move leaves the columns before it where
    /// they belong.
    fn add_computed_columns(&self) -> Vec<String> {
        let table = quote_identifier(&self.name);
        let mut statements = Vec::new();
        for (i, column) in self.columns.iter().enumerate() {
            if column.computed_by.is_none() {
                continue;
            }
            statements.push(format!(
                "ALTER TABLE {table} ADD {};\n",
                column.definition()
            ));
            // Added last: in its place already unless a stored column follows.
            if self.columns[i + 1..]
                .iter()
                .any(|c| c.computed_by.is_none())
            {
                statements.push(format!(
                    "ALTER TABLE {table} ALTER COLUMN {} POSITION {};\n",
                    quote_identifier(&column.name),
                    i + 1
                ));
            }
        }
        statements
    }
}

impl ColumnSchema {
    /// `"NAME" type [GENERATED ... | COMPUTED BY ...] [DEFAULT ...] [NOT NULL] [COLLATE ...]`,
    /// in the order Firebird's grammar takes them.
    pub fn definition(&self) -> String {
        if let Some(computed) = &self.computed_by {
            // A computed column takes no COLLATE: one of a collation other
            // than its character set's default got it, and its type, from
            // its expression, which gives them again.
            let data_type = match self.collation {
                Some(_) => String::new(),
                None => format!(" {}", self.data_type),
            };
            return format!(
                "{}{data_type} COMPUTED BY {}",
                quote_identifier(&self.name),
                parenthesized(computed)
            );
        }
        let mut text = format!("{} {}", quote_identifier(&self.name), self.data_type);
        if let Some(identity) = &self.identity {
            let _ = write!(
                text,
                " GENERATED {} AS IDENTITY (START WITH {} INCREMENT BY {})",
                if identity.always {
                    "ALWAYS"
                } else {
                    "BY DEFAULT"
                },
                identity.sequence.start,
                identity.sequence.increment
            );
        }
        if let Some(default) = &self.default {
            if starts_with_keyword(default, "DEFAULT") {
                let _ = write!(text, " {default}");
            } else {
                let _ = write!(text, " DEFAULT {default}");
            }
        }
        if self.not_null {
            text += " NOT NULL";
        }
        if let Some(collation) = &self.collation {
            let _ = write!(text, " COLLATE {}", quote_identifier(collation));
        }
        text
    }
}

impl Constraint {
    fn add_to(&self, table: &str) -> String {
        let mut text = format!("ALTER TABLE {} ADD ", quote_identifier(table));
        if let Some(name) = &self.name {
            let _ = write!(text, "CONSTRAINT {} ", quote_identifier(name));
        }
        let columns = column_list(&self.columns);
        match &self.kind {
            ConstraintKind::PrimaryKey => {
                let _ = write!(text, "PRIMARY KEY ({columns})");
            }
            ConstraintKind::Unique => {
                let _ = write!(text, "UNIQUE ({columns})");
            }
            ConstraintKind::ForeignKey {
                table,
                columns: referenced,
                on_update,
                on_delete,
            } => {
                let _ = write!(
                    text,
                    "FOREIGN KEY ({columns}) REFERENCES {} ({})",
                    quote_identifier(table),
                    column_list(referenced)
                );
                if let Some(rule) = on_update {
                    let _ = write!(text, " ON UPDATE {rule}");
                }
                if let Some(rule) = on_delete {
                    let _ = write!(text, " ON DELETE {rule}");
                }
            }
        }
        if let Some(index) = &self.index {
            let order = if index.descending { "DESC " } else { "" };
            let _ = write!(
                text,
                " USING {order}INDEX {}",
                quote_identifier(&index.name)
            );
        }
        text + ";\n"
    }
}

impl Index {
    fn create_on(&self, table: &str) -> String {
        let mut text = format!(
            "CREATE {}{}INDEX {} ON {}",
            if self.unique { "UNIQUE " } else { "" },
            if self.descending { "DESCENDING " } else { "" },
            quote_identifier(&self.name),
            quote_identifier(table)
        );
        match &self.expression {
            Some(expression) => {
                let _ = write!(text, " COMPUTED BY {}", parenthesized(expression));
            }
            None => {
                let _ = write!(text, " ({})", column_list(&self.columns));
            }
        }
        if let Some(condition) = &self.condition {
            if starts_with_keyword(condition, "WHERE") {
                let _ = write!(text, " {condition}");
            } else {
                let _ = write!(text, " WHERE {condition}");
            }
        }
        text += ";\n";
        if self.inactive {
            let _ = writeln!(
                text,
                "ALTER INDEX {} INACTIVE;",
                quote_identifier(&self.name)
            );
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_lists_array_dimensions_as_written() {
        // They are (`VARCHAR(15) [1:5]`); the header said they were not.
        let sql = Schema::default().to_sql();
        let (written, not_written) = sql.split_once("-- Not written:").unwrap();
        assert!(written.contains("ARRAY\n-- dimensions"), "{written}");
        assert!(!not_written.contains("ARRAY"), "{not_written}");
    }

    fn column(name: &str, data_type: &str) -> ColumnSchema {
        ColumnSchema {
            name: name.into(),
            data_type: data_type.into(),
            ..ColumnSchema::default()
        }
    }

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn column_clauses_come_in_the_order_firebird_parses_them() {
        let text = ColumnSchema {
            default: Some("default 'a;b'".into()),
            not_null: true,
            collation: Some("PXW_SWEDFIN".into()),
            ..column(" odd \"name\"", "VARCHAR(10) CHARACTER SET WIN1252")
        };
        assert_eq!(
            text.definition(),
            "\" odd \"\"name\"\"\" VARCHAR(10) CHARACTER SET WIN1252 default 'a;b' NOT NULL \
             COLLATE \"PXW_SWEDFIN\""
        );
        let identity = ColumnSchema {
            not_null: true,
            identity: Some(Identity {
                always: true,
                sequence: SequenceValues {
                    start: 5,
                    increment: 3,
                    current: 11,
                },
            }),
            ..column("ID", "BIGINT")
        };
        assert_eq!(
            identity.definition(),
            "\"ID\" BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 5 INCREMENT BY 3) NOT NULL"
        );
        let computed = ColumnSchema {
            computed_by: Some("A * 2".into()),
            ..column("C", "NUMERIC(18,2)")
        };
        assert_eq!(
            computed.definition(),
            "\"C\" NUMERIC(18,2) COMPUTED BY (A * 2)"
        );
        let collated = ColumnSchema {
            computed_by: Some("(UPPER(NAME))".into()),
            collation: Some("PXW_SWEDFIN".into()),
            ..column("U", "VARCHAR(20) CHARACTER SET WIN1252")
        };
        assert_eq!(collated.definition(), "\"U\" COMPUTED BY (UPPER(NAME))");
        // A default kept without its keyword (older catalogs) gets one.
        let bare = ColumnSchema {
            default: Some("0".into()),
            ..column("N", "INTEGER")
        };
        assert_eq!(bare.definition(), "\"N\" INTEGER DEFAULT 0");
    }

    #[test]
    fn blob_segment_sizes_other_than_80_are_kept_before_the_character_set() {
        let text = "BLOB SUB_TYPE TEXT CHARACTER SET UTF8".to_string();
        assert_eq!(
            with_segment_size(text.clone(), Some(400)),
            "BLOB SUB_TYPE TEXT SEGMENT SIZE 400 CHARACTER SET UTF8"
        );
        assert_eq!(with_segment_size(text.clone(), Some(80)), text);
        assert_eq!(
            with_segment_size("BLOB SUB_TYPE BINARY".into(), Some(1)),
            "BLOB SUB_TYPE BINARY SEGMENT SIZE 1"
        );
        assert_eq!(with_segment_size("INTEGER".into(), Some(4)), "INTEGER");
    }

    #[test]
    fn sequences_restart_one_increment_past_their_value() {
        let values = SequenceValues {
            start: 10,
            increment: 5,
            current: 95,
        };
        // Firebird 4+: RESTART WITH 100 leaves GEN_ID(s, 0) = 95.
        assert_eq!(values.restart_with(), Some(100));
        let at_end = SequenceValues {
            current: i64::MAX,
            ..values
        };
        assert_eq!(at_end.restart_with(), None);
        assert_eq!(
            restart("ALTER SEQUENCE \"S\"", "\"S\"", at_end),
            format!("SET GENERATOR \"S\" TO {};\n", i64::MAX)
        );
    }

    #[test]
    fn engine_names_are_not_kept() {
        assert!(is_engine_constraint_name("INTEG_12"));
        assert!(!is_engine_constraint_name("INTEG_"));
        assert!(!is_engine_constraint_name("INTEG_X"));
        assert!(!is_engine_constraint_name("PK_T"));
        let index = |name: &str, descending| Index {
            name: name.into(),
            descending,
            ..Index::default()
        };
        // The index the engine would make anyway needs no USING.
        assert_eq!(constraint_index(Some("PK_T"), &index("PK_T", false)), None);
        assert_eq!(constraint_index(None, &index("RDB$PRIMARY3", false)), None);
        assert_eq!(
            constraint_index(Some("PK_T"), &index("IX_T", false)),
            Some(ConstraintIndex {
                name: "IX_T".into(),
                descending: false
            })
        );
        assert_eq!(
            constraint_index(Some("PK_T"), &index("RDB$PRIMARY3", true)),
            Some(ConstraintIndex {
                name: "PK_T".into(),
                descending: true
            })
        );
    }

    #[test]
    fn statements_come_in_an_order_that_runs_whatever_reads_what() {
        let parent = TableSchema {
            name: "P".into(),
            columns: vec![ColumnSchema {
                not_null: true,
                ..column("ID", "INTEGER")
            }],
            constraints: vec![Constraint {
                name: None,
                kind: ConstraintKind::PrimaryKey,
                columns: names(&["ID"]),
                index: None,
            }],
            indices: vec![],
            comment: None,
        };
        let child = TableSchema {
            name: "c".into(),
            columns: vec![
                column("P_ID", "INTEGER"),
                ColumnSchema {
                    computed_by: Some("(NEXT VALUE FOR GEN)".into()),
                    ..column("TICKET", "BIGINT")
                },
                ColumnSchema {
                    collation: Some("CI".into()),
                    ..column("NAME", "VARCHAR(5) CHARACTER SET UTF8")
                },
                ColumnSchema {
                    computed_by: Some("((SELECT 1 FROM P))".into()),
                    ..column("LAST", "INTEGER")
                },
            ],
            constraints: vec![Constraint {
                name: Some("FK_C".into()),
                kind: ConstraintKind::ForeignKey {
                    table: "P".into(),
                    columns: names(&["ID"]),
                    on_update: None,
                    on_delete: Some("CASCADE".into()),
                },
                columns: names(&["P_ID"]),
                index: Some(ConstraintIndex {
                    name: "IX_FK".into(),
                    descending: true,
                }),
            }],
            indices: vec![
                Index {
                    name: "BY_NAME".into(),
                    unique: true,
                    descending: true,
                    columns: names(&["NAME", "P_ID"]),
                    condition: Some("where P_ID > 0".into()),
                    inactive: true,
                    ..Index::default()
                },
                Index {
                    name: "BY_UPPER".into(),
                    expression: Some("(UPPER(NAME))".into()),
                    ..Index::default()
                },
            ],
            comment: None,
        };
        let schema = Schema {
            collations: vec![Collation {
                name: "CI".into(),
                charset: "UTF8".into(),
                base: "UNICODE".into(),
                base_is_collation: true,
                case_insensitive: true,
                specific_attributes: Some("LOCALE=sv_SE;NUMERIC-SORT=1".into()),
                ..Collation::default()
            }],
            tables: vec![parent, child],
            sequences: vec![Sequence {
                name: "GEN".into(),
                values: SequenceValues {
                    start: 1,
                    increment: 1,
                    current: 41,
                },
            }],
            skipped_foreign_keys: vec![("c".into(), "FK_GONE".into())],
            sources: Vec::new(),
            ..Schema::default()
        };
        let sql = schema.to_sql();
        let body: String = sql
            .lines()
            .skip_while(|l| l.starts_with("--"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            body,
            "
-- Collations
CREATE COLLATION \"CI\" FOR UTF8 FROM \"UNICODE\" NO PAD CASE INSENSITIVE 'LOCALE=sv_SE;NUMERIC-SORT=1';

-- Sequences, at their values at the snapshot
CREATE SEQUENCE \"GEN\" START WITH 1 INCREMENT BY 1;
ALTER SEQUENCE \"GEN\" RESTART WITH 42;

CREATE TABLE \"P\" (
    \"ID\" INTEGER NOT NULL
);

CREATE TABLE \"c\" (
    \"P_ID\" INTEGER,
    \"NAME\" VARCHAR(5) CHARACTER SET UTF8 COLLATE \"CI\"
);

-- Computed columns, once every table they may read exists
ALTER TABLE \"c\" ADD \"TICKET\" BIGINT COMPUTED BY (NEXT VALUE FOR GEN);
ALTER TABLE \"c\" ALTER COLUMN \"TICKET\" POSITION 2;
ALTER TABLE \"c\" ADD \"LAST\" INTEGER COMPUTED BY ((SELECT 1 FROM P));

-- Primary and unique keys
ALTER TABLE \"P\" ADD PRIMARY KEY (\"ID\");

-- Foreign keys
ALTER TABLE \"c\" ADD CONSTRAINT \"FK_C\" FOREIGN KEY (\"P_ID\") REFERENCES \"P\" (\"ID\") ON DELETE CASCADE USING DESC INDEX \"IX_FK\";
-- not written: foreign key \"FK_GONE\" of \"c\", to a table not unloaded

-- Indices
CREATE UNIQUE DESCENDING INDEX \"BY_NAME\" ON \"c\" (\"NAME\", \"P_ID\") where P_ID > 0;
ALTER INDEX \"BY_NAME\" INACTIVE;
CREATE INDEX \"BY_UPPER\" ON \"c\" COMPUTED BY (UPPER(NAME));

COMMIT;
"
        );
    }
}
