//! Every user object of the Firebird catalog, one entry each, for a
//! database destination to account for: each is either made there or
//! reported with its source and why (`_fbunload_untranslated` in
//! PostgreSQL). The walk is its own module, apart from `schema.sql`'s
//! model, because it must not depend on what that model happens to
//! carry: an object kind the destination forgets is then still listed,
//! reported as not made, instead of lost unnoticed.
//!
//! Kinds, as [`CatalogObject::kind`] spells them: `table`, `column`,
//! `computed column`, `view`, `global temporary table`, `external table`,
//! `domain`, `domain check`, `primary key`, `unique`, `foreign key`,
//! `check constraint`, `index`, `sequence`, `trigger`, `procedure`,
//! `function`, `package`, `exception`, `collation`, `role`, `grant`,
//! `comment`. NOT NULL constraints are part of their column, an
//! identity's sequence part of its column, a constraint's index part of
//! its constraint, and a package's procedures and functions part of it.

use std::collections::{BTreeMap, HashSet};

use fbunload_client::{ClientError, Row, Transaction};

use crate::catalog::{int, text};
use crate::schema::{blob_text, each_row, has_catalog_column, is_engine_constraint_name};

/// One object of the catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogObject {
    pub kind: String,
    /// The table (or view) it belongs to: a column's, a constraint's, an
    /// index's, a table trigger's, a comment on one of those.
    pub table: Option<String>,
    /// Its name; a constraint the engine named (`INTEG_12`) by its
    /// columns instead (see [`constraint_label`]); a comment by what it
    /// is on (`sequence EMP_NO_GEN`); a grant by what it gives.
    pub name: String,
    /// Its Firebird source: the SQL, a comment's text, an exception's
    /// message.
    pub source: String,
    /// The engine's name of a constraint named by its columns.
    pub engine_name: Option<String>,
}

/// A domain (`CREATE DOMAIN`) a column is declared with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Domain {
    pub name: String,
    pub default: Option<String>,
    pub not_null: bool,
    /// `CHECK (VALUE > 0)`, as Firebird keeps it.
    pub check: Option<String>,
    pub comment: Option<String>,
}

/// A collation's case and accent rules, where it ignores either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Insensitive {
    pub case: bool,
    pub accent: bool,
}

/// One privilege granted (`RDB$USER_PRIVILEGES`), as a destination that
/// makes grants needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant {
    /// `SELECT`, `INSERT`, `UPDATE`, `DELETE`, `REFERENCES`, `EXECUTE`,
    /// `USAGE`, `MEMBERSHIP` (of role `on`), ...
    pub privilege: String,
    /// What it is on: a table's, a procedure's, a role's name.
    pub on: String,
    /// A table or view (`RDB$OBJECT_TYPE` 0).
    pub on_relation: bool,
    pub column: Option<String>,
    /// Who gets it: a user, a role, `PUBLIC`, or a trigger, procedure, ...
    pub grantee: String,
    /// A user, a role or PUBLIC (not a trigger, procedure, view, ...).
    pub grantee_is_person: bool,
    pub grant_option: bool,
    /// Its name in [`Inventory::objects`] (kind `grant`).
    pub label: String,
}

/// The whole catalog walk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    pub objects: Vec<CatalogObject>,
    /// Every user domain, by name.
    pub domains: BTreeMap<String, Domain>,
    /// The collations user columns use that ignore case or accents
    /// (`UNICODE_CI`, `UNICODE_CI_AI`, `PT_BR`, a user's `..._CI`), by name.
    pub insensitive_collations: BTreeMap<String, Insensitive>,
    /// Every grant of [`Inventory::objects`], spelled out.
    pub grants: Vec<Grant>,
}

/// How a primary, unique or foreign key is named in the inventory and in
/// a destination's report: its own name, or, where the engine named it
/// (`INTEG_12`: another database gives another number), its columns.
pub fn constraint_label(name: Option<&str>, columns: &[String]) -> String {
    match name.filter(|n| !is_engine_constraint_name(n)) {
        Some(name) => name.to_string(),
        None => format!("({})", columns.join(", ")),
    }
}

/// A row of the catalog's columns as the inventory lists it. `schema.sql`
/// reads the same rows for its tables' columns, and at 5,000 tables the
/// query is 35,000 rows: [`crate::read_schema`] reads them once for both.
#[derive(Debug, Clone)]
pub(crate) struct ColumnRow {
    pub relation: String,
    pub name: String,
    pub computed_source: Option<String>,
    pub comment: Option<String>,
    pub computed: bool,
    /// Its character set, where it is text, and its collation's number
    /// in it (its own, else its domain's; 0 the set's default).
    pub charset_id: Option<i64>,
    pub collation_id: i64,
}

/// Every relation's columns, the inventory's way: relation by relation,
/// in their order. [`read_inventory`] keeps only user relations' columns.
pub(crate) const COLUMN_ROWS_ORDER: &str = "ORDER BY rf.RDB$RELATION_NAME, rf.RDB$FIELD_POSITION";

/// [`ColumnRow::collation_id`] in a query of `RDB$RELATION_FIELDS rf`
/// joined with its domain, `RDB$FIELDS f`.
pub(crate) const COLUMN_COLLATION_ID: &str = "COALESCE(rf.RDB$COLLATION_ID, f.RDB$COLLATION_ID, 0)";

/// Reads every user object of the catalog (see the module's docs).
pub fn read_inventory(tr: &Transaction) -> Result<Inventory, ClientError> {
    let mut columns = Vec::new();
    each_row(
        tr,
        &format!(
            "SELECT rf.RDB$RELATION_NAME, rf.RDB$FIELD_NAME, f.RDB$COMPUTED_SOURCE, \
             rf.RDB$DESCRIPTION, IIF(f.RDB$COMPUTED_BLR IS NULL, 0, 1), \
             f.RDB$CHARACTER_SET_ID, {COLUMN_COLLATION_ID} \
             FROM RDB$RELATION_FIELDS rf JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = rf.RDB$FIELD_SOURCE \
             {COLUMN_ROWS_ORDER}"
        ),
        |row| {
            columns.push(ColumnRow {
                relation: text(row, 0),
                name: text(row, 1),
                computed_source: blob_text(row, 2)?,
                comment: blob_text(row, 3)?,
                computed: int(row, 4) == Some(1),
                charset_id: int(row, 5),
                collation_id: int(row, 6).unwrap_or(0),
            });
            Ok(())
        },
    )?;
    read_inventory_with(tr, columns)
}

/// [`read_inventory`] of the catalog's columns read already, `columns`
/// (every relation's, system ones too, in [`COLUMN_ROWS_ORDER`]).
pub(crate) fn read_inventory_with(
    tr: &Transaction,
    columns: Vec<ColumnRow>,
) -> Result<Inventory, ClientError> {
    let mut inv = Inventory::default();
    let mut objects = Vec::new();
    let comment = |objects: &mut Vec<CatalogObject>,
                   on: String,
                   table: Option<String>,
                   text: Option<String>| {
        if let Some(text) = text {
            objects.push(CatalogObject {
                kind: "comment".into(),
                table,
                name: on,
                source: text,
                engine_name: None,
            });
        }
    };
    let object = |kind: &str, table: Option<String>, name: String, source: String| CatalogObject {
        kind: kind.into(),
        table,
        name,
        source,
        engine_name: None,
    };
    // The object named in `row`'s first column, and the comment on it
    // (its column `description`), which names it `{kind} {name}`.
    let described = |objects: &mut Vec<CatalogObject>,
                     row: &Row<'_>,
                     kind: &str,
                     table: Option<String>,
                     source: String,
                     description: usize| {
        let name = text(row, 0);
        let on = format!("{kind} {name}");
        objects.push(object(kind, table.clone(), name, source));
        comment(objects, on, table, blob_text(row, description)?);
        Ok(())
    };

    if let Some(description) = {
        let mut found = None;
        each_row(tr, "SELECT RDB$DESCRIPTION FROM RDB$DATABASE", |row| {
            found = blob_text(row, 0)?;
            Ok(())
        })?;
        found
    } {
        comment(&mut objects, "database".into(), None, Some(description));
    }

    // Relations: 0 a table (external where it names a file), 1 a view,
    // 2 an external table, 3 virtual, 4 and 5 global temporary tables.
    let mut relations = HashSet::new();
    each_row(
        tr,
        "SELECT RDB$RELATION_NAME, COALESCE(RDB$RELATION_TYPE, 0), RDB$VIEW_SOURCE, \
         RDB$EXTERNAL_FILE, RDB$DESCRIPTION, \
         CASE WHEN RDB$VIEW_BLR IS NULL THEN 0 ELSE 1 END \
         FROM RDB$RELATIONS WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 \
         ORDER BY RDB$RELATION_NAME",
        |row| {
            let name = text(row, 0);
            relations.insert(name.clone());
            let relation_type = int(row, 1).unwrap_or(0);
            let external = row.value(3).map(|_| text(row, 3));
            let (kind, source) = if int(row, 5) == Some(1) || relation_type == 1 {
                ("view", blob_text(row, 2)?.unwrap_or_default())
            } else if let Some(file) = external.filter(|f| !f.is_empty()) {
                ("external table", format!("EXTERNAL FILE '{file}'"))
            } else if relation_type == 4 {
                (
                    "global temporary table",
                    "ON COMMIT PRESERVE ROWS".to_string(),
                )
            } else if relation_type == 5 {
                (
                    "global temporary table",
                    "ON COMMIT DELETE ROWS".to_string(),
                )
            } else if relation_type == 0 {
                ("table", String::new())
            } else {
                ("table", format!("RDB$RELATION_TYPE {relation_type}"))
            };
            objects.push(object(kind, None, name.clone(), source));
            comment(
                &mut objects,
                format!("{kind} {name}"),
                Some(name),
                blob_text(row, 4)?,
            );
            Ok(())
        },
    )?;
    let tables: HashSet<String> = objects
        .iter()
        .filter(|o| o.kind == "table")
        .map(|o| o.name.clone())
        .collect();

    // Columns of tables (a view's, a temporary or external table's go
    // with their relation), and comments on any user relation's columns;
    // the (character set, collation) pairs user columns use, for the
    // collations below.
    let mut used_collations = HashSet::new();
    for column in columns {
        if !relations.contains(&column.relation) {
            continue;
        }
        if column.charset_id.is_some() {
            used_collations.insert((column.charset_id, Some(column.collation_id)));
        }
        if tables.contains(&column.relation) {
            objects.push(object(
                if column.computed {
                    "computed column"
                } else {
                    "column"
                },
                Some(column.relation.clone()),
                column.name.clone(),
                column.computed_source.unwrap_or_default(),
            ));
        }
        comment(
            &mut objects,
            format!("column {}.{}", column.relation, column.name),
            Some(column.relation),
            column.comment,
        );
    }

    // Domains: user fields not named by the engine (RDB$n are the
    // implicit domains of columns declared with a type).
    each_row(
        tr,
        "SELECT RDB$FIELD_NAME, RDB$DEFAULT_SOURCE, COALESCE(RDB$NULL_FLAG, 0), \
         RDB$VALIDATION_SOURCE, RDB$DESCRIPTION FROM RDB$FIELDS \
         WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 AND RDB$FIELD_NAME NOT STARTING WITH 'RDB$' \
         ORDER BY RDB$FIELD_NAME",
        |row| {
            let domain = Domain {
                name: text(row, 0),
                default: blob_text(row, 1)?,
                not_null: int(row, 2).unwrap_or(0) > 0,
                check: blob_text(row, 3)?,
                comment: blob_text(row, 4)?,
            };
            let name = domain.name.clone();
            objects.push(object("domain", None, name.clone(), String::new()));
            if let Some(check) = &domain.check {
                objects.push(object("domain check", None, name.clone(), check.clone()));
            }
            comment(
                &mut objects,
                format!("domain {name}"),
                None,
                domain.comment.clone(),
            );
            inv.domains.insert(name, domain);
            Ok(())
        },
    )?;

    // Constraints: keys with their columns, CHECKs with their source
    // (the first of the pair of triggers that enforce it holds it).
    let mut segments: BTreeMap<String, Vec<String>> = BTreeMap::new();
    each_row(
        tr,
        "SELECT RDB$INDEX_NAME, RDB$FIELD_NAME FROM RDB$INDEX_SEGMENTS \
         ORDER BY RDB$INDEX_NAME, RDB$FIELD_POSITION",
        |row| {
            segments.entry(text(row, 0)).or_default().push(text(row, 1));
            Ok(())
        },
    )?;
    each_row(
        tr,
        "SELECT rc.RDB$CONSTRAINT_NAME, rc.RDB$RELATION_NAME, rc.RDB$CONSTRAINT_TYPE, \
         rc.RDB$INDEX_NAME, \
         (SELECT FIRST 1 t.RDB$TRIGGER_SOURCE FROM RDB$CHECK_CONSTRAINTS cc \
          JOIN RDB$TRIGGERS t ON t.RDB$TRIGGER_NAME = cc.RDB$TRIGGER_NAME \
          WHERE cc.RDB$CONSTRAINT_NAME = rc.RDB$CONSTRAINT_NAME AND t.RDB$TRIGGER_TYPE = 1) \
         FROM RDB$RELATION_CONSTRAINTS rc JOIN RDB$RELATIONS r \
         ON r.RDB$RELATION_NAME = rc.RDB$RELATION_NAME \
         WHERE COALESCE(r.RDB$SYSTEM_FLAG, 0) = 0 AND rc.RDB$CONSTRAINT_TYPE <> 'NOT NULL' \
         ORDER BY rc.RDB$RELATION_NAME, rc.RDB$CONSTRAINT_NAME",
        |row| {
            let name = text(row, 0);
            let table = text(row, 1);
            let columns = segments.get(&text(row, 3)).cloned().unwrap_or_default();
            let kind = match text(row, 2).as_str() {
                "PRIMARY KEY" => "primary key",
                "UNIQUE" => "unique",
                "FOREIGN KEY" => "foreign key",
                "CHECK" => {
                    let source = blob_text(row, 4)?.unwrap_or_default();
                    objects.push(object("check constraint", Some(table), name, source));
                    return Ok(());
                }
                // NOT NULL is part of its column, and not asked for: one a
                // NOT NULL column, each looked for a check's trigger (10,000
                // of 15,030 constraints at 5,000 tables).
                _ => return Ok(()),
            };
            let label = constraint_label(Some(&name), &columns);
            objects.push(CatalogObject {
                kind: kind.into(),
                table: Some(table),
                source: format!("{} ({})", kind.to_uppercase(), columns.join(", ")),
                engine_name: (label != name).then_some(name),
                name: label,
            });
            Ok(())
        },
    )?;

    // Indices a constraint does not own, and comments on any index.
    each_row(
        tr,
        "SELECT i.RDB$INDEX_NAME, i.RDB$RELATION_NAME, i.RDB$EXPRESSION_SOURCE, \
         i.RDB$DESCRIPTION, (SELECT COUNT(*) FROM RDB$RELATION_CONSTRAINTS rc \
         WHERE rc.RDB$INDEX_NAME = i.RDB$INDEX_NAME) \
         FROM RDB$INDICES i WHERE COALESCE(i.RDB$SYSTEM_FLAG, 0) = 0 \
         ORDER BY i.RDB$RELATION_NAME, i.RDB$INDEX_NAME",
        |row| {
            let name = text(row, 0);
            let table = text(row, 1);
            if int(row, 4).unwrap_or(0) == 0 {
                let source = match blob_text(row, 2)? {
                    Some(expression) => format!("COMPUTED BY {expression}"),
                    None => segments.get(&name).cloned().unwrap_or_default().join(", "),
                };
                objects.push(object("index", Some(table.clone()), name.clone(), source));
            }
            comment(
                &mut objects,
                format!("index {name}"),
                Some(table),
                blob_text(row, 3)?,
            );
            Ok(())
        },
    )?;

    // Sequences (not an identity column's: system flag 6).
    each_row(
        tr,
        "SELECT RDB$GENERATOR_NAME, RDB$DESCRIPTION FROM RDB$GENERATORS \
         WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 ORDER BY RDB$GENERATOR_NAME",
        |row| described(&mut objects, row, "sequence", None, String::new(), 1),
    )?;

    // Triggers: a table's, the database's, DDL ones (CHECK constraints'
    // triggers are the engine's: system flag 3).
    each_row(
        tr,
        "SELECT RDB$TRIGGER_NAME, RDB$RELATION_NAME, RDB$TRIGGER_SOURCE, RDB$DESCRIPTION \
         FROM RDB$TRIGGERS WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 ORDER BY RDB$TRIGGER_NAME",
        |row| {
            let table = row.value(1).map(|_| text(row, 1)).filter(|t| !t.is_empty());
            let source = blob_text(row, 2)?.unwrap_or_default();
            described(&mut objects, row, "trigger", table, source, 3)
        },
    )?;

    let packages = has_catalog_column(tr, "RDB$PROCEDURES", "RDB$PACKAGE_NAME")?;
    let outside_packages = if packages {
        "AND RDB$PACKAGE_NAME IS NULL"
    } else {
        ""
    };
    each_row(
        tr,
        &format!(
            "SELECT RDB$PROCEDURE_NAME, RDB$PROCEDURE_SOURCE, RDB$DESCRIPTION FROM RDB$PROCEDURES \
             WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 {outside_packages} \
             ORDER BY RDB$PROCEDURE_NAME"
        ),
        |row| {
            let source = blob_text(row, 1)?.unwrap_or_default();
            described(&mut objects, row, "procedure", None, source, 2)
        },
    )?;
    each_row(
        tr,
        "SELECT p.RDB$PROCEDURE_NAME, p.RDB$PARAMETER_NAME, p.RDB$DESCRIPTION \
         FROM RDB$PROCEDURE_PARAMETERS p WHERE p.RDB$DESCRIPTION IS NOT NULL \
         AND COALESCE(p.RDB$SYSTEM_FLAG, 0) = 0",
        |row| {
            comment(
                &mut objects,
                format!("parameter {}.{}", text(row, 0), text(row, 1)),
                None,
                blob_text(row, 2)?,
            );
            Ok(())
        },
    )?;

    // Functions: PSQL ones (Firebird 3+) and external ones (UDFs).
    let function_source = if packages {
        "RDB$FUNCTION_SOURCE"
    } else {
        "NULL"
    };
    each_row(
        tr,
        &format!(
            "SELECT RDB$FUNCTION_NAME, {function_source}, RDB$MODULE_NAME, RDB$ENTRYPOINT, \
             RDB$DESCRIPTION FROM RDB$FUNCTIONS WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 \
             {outside_packages} ORDER BY RDB$FUNCTION_NAME"
        ),
        |row| {
            let source = match blob_text(row, 1)? {
                Some(source) => source,
                None => format!(
                    "EXTERNAL FUNCTION ENTRY_POINT '{}' MODULE_NAME '{}'",
                    text(row, 3),
                    text(row, 2)
                ),
            };
            described(&mut objects, row, "function", None, source, 4)
        },
    )?;
    if packages {
        each_row(
            tr,
            "SELECT RDB$PACKAGE_NAME, RDB$PACKAGE_HEADER_SOURCE, RDB$PACKAGE_BODY_SOURCE, \
             RDB$DESCRIPTION FROM RDB$PACKAGES WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 \
             ORDER BY RDB$PACKAGE_NAME",
            |row| {
                let header = blob_text(row, 1)?.unwrap_or_default();
                let body = blob_text(row, 2)?.unwrap_or_default();
                let source = format!("{header}\n\n{body}").trim().to_string();
                described(&mut objects, row, "package", None, source, 3)
            },
        )?;
    }

    each_row(
        tr,
        "SELECT RDB$EXCEPTION_NAME, RDB$MESSAGE, RDB$DESCRIPTION FROM RDB$EXCEPTIONS \
         WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 ORDER BY RDB$EXCEPTION_NAME",
        |row| described(&mut objects, row, "exception", None, text(row, 1), 2),
    )?;

    // Collations: the user's, and the engine's that a user column uses
    // and that ignore case or accents (PostgreSQL's default would not).
    // The (character set, collation) pairs user columns use, above, from
    // the column rows: counted for each of the engine's ~150 collations in
    // a subquery, they joined every column of every table again for each
    // (12 CPU s at 5,000 tables; docs/PERFORMANCE.md, "Many tables").
    each_row(
        tr,
        "SELECT c.RDB$COLLATION_NAME, COALESCE(c.RDB$SYSTEM_FLAG, 0), \
         COALESCE(c.RDB$COLLATION_ATTRIBUTES, 0), c.RDB$DESCRIPTION, \
         c.RDB$CHARACTER_SET_ID, c.RDB$COLLATION_ID \
         FROM RDB$COLLATIONS c ORDER BY c.RDB$COLLATION_NAME",
        |row| {
            let name = text(row, 0);
            let user = int(row, 1) == Some(0);
            let attributes = int(row, 2).unwrap_or(0);
            let insensitive = Insensitive {
                case: attributes & 2 != 0 || name.ends_with("_CI") || name.ends_with("_CI_AI"),
                accent: attributes & 4 != 0 || name.ends_with("_AI"),
            };
            let used = used_collations.contains(&(int(row, 4), int(row, 5)));
            if used && (insensitive.case || insensitive.accent) {
                inv.insensitive_collations
                    .entry(name.clone())
                    .or_insert(insensitive);
            }
            if user || (used && (insensitive.case || insensitive.accent)) {
                // One entry per name: a user collation may be made for
                // several character sets under one name.
                if !objects
                    .iter()
                    .any(|o| o.kind == "collation" && o.name == name)
                {
                    objects.push(object(
                        "collation",
                        None,
                        name.clone(),
                        format!(
                            "{}{}",
                            if insensitive.case {
                                "CASE INSENSITIVE "
                            } else {
                                ""
                            },
                            if insensitive.accent {
                                "ACCENT INSENSITIVE"
                            } else {
                                ""
                            }
                        )
                        .trim()
                        .to_string(),
                    ));
                }
                if user {
                    comment(
                        &mut objects,
                        format!("collation {name}"),
                        None,
                        blob_text(row, 3)?,
                    );
                }
            }
            Ok(())
        },
    )?;

    each_row(
        tr,
        "SELECT RDB$ROLE_NAME, RDB$DESCRIPTION FROM RDB$ROLES \
         WHERE COALESCE(RDB$SYSTEM_FLAG, 0) = 0 ORDER BY RDB$ROLE_NAME",
        |row| described(&mut objects, row, "role", None, String::new(), 1),
    )?;

    read_grants(tr, &mut objects, &mut inv.grants)?;
    inv.objects = objects;
    Ok(inv)
}

/// Grants on user objects to users, roles and PUBLIC, one entry per
/// privilege (an owner's own privileges are implied, not granted).
fn read_grants(
    tr: &Transaction,
    objects: &mut Vec<CatalogObject>,
    grants: &mut Vec<Grant>,
) -> Result<(), ClientError> {
    // RDB$OBJECT_TYPE of what is granted on: 0 a table or view, 5 a
    // procedure, 7 an exception, 14 a generator, 15 a function, 18 a
    // package, 9 a domain, 13 a role (membership); 11 a character set
    // and 17 a collation, whose USAGE the engine grants to everyone on
    // its own (a user collation's grants are kept), as it grants USAGE
    // on SQL$DEFAULT.
    each_row(
        tr,
        "SELECT p.RDB$USER, p.RDB$PRIVILEGE, COALESCE(p.RDB$GRANT_OPTION, 0), \
         p.RDB$RELATION_NAME, p.RDB$FIELD_NAME, p.RDB$OBJECT_TYPE, p.RDB$USER_TYPE \
         FROM RDB$USER_PRIVILEGES p \
         WHERE p.RDB$RELATION_NAME NOT STARTING WITH 'RDB$' \
         AND p.RDB$RELATION_NAME NOT STARTING WITH 'MON$' \
         AND p.RDB$RELATION_NAME NOT STARTING WITH 'SEC$' \
         AND p.RDB$RELATION_NAME <> 'SQL$DEFAULT' \
         AND p.RDB$USER IS DISTINCT FROM p.RDB$GRANTOR \
         AND NOT (p.RDB$OBJECT_TYPE IN (11, 17) AND NOT EXISTS (SELECT 1 FROM RDB$COLLATIONS c \
           WHERE c.RDB$COLLATION_NAME = p.RDB$RELATION_NAME \
           AND COALESCE(c.RDB$SYSTEM_FLAG, 0) = 0)) \
         AND NOT (p.RDB$OBJECT_TYPE = 0 AND EXISTS (SELECT 1 FROM RDB$RELATIONS r \
           WHERE r.RDB$RELATION_NAME = p.RDB$RELATION_NAME \
           AND r.RDB$OWNER_NAME = p.RDB$USER)) \
         ORDER BY p.RDB$RELATION_NAME, p.RDB$USER, p.RDB$PRIVILEGE, p.RDB$FIELD_NAME",
        |row| {
            // RDB$USER_TYPE: who is given it; a view, trigger, procedure,
            // function or package is named as such.
            let grantee = match int(row, 6) {
                Some(1) => "VIEW ",
                Some(2) => "TRIGGER ",
                Some(5) => "PROCEDURE ",
                Some(13) => "ROLE ",
                Some(15) => "FUNCTION ",
                Some(18) => "PACKAGE ",
                _ => "",
            };
            let user = format!("{grantee}{}", text(row, 0));
            let privilege = match text(row, 1).as_str() {
                "S" => "SELECT",
                "I" => "INSERT",
                "U" => "UPDATE",
                "D" => "DELETE",
                "R" => "REFERENCES",
                "X" => "EXECUTE",
                "G" => "USAGE",
                "M" => "MEMBERSHIP",
                "C" => "CREATE",
                "L" => "ALTER",
                "O" => "DROP",
                other => other,
            }
            .to_string();
            let on = text(row, 3);
            let column = row.value(4).map(|_| text(row, 4)).filter(|c| !c.is_empty());
            let with = match int(row, 2).unwrap_or(0) {
                0 => "",
                _ if privilege == "MEMBERSHIP" => " WITH ADMIN OPTION",
                _ => " WITH GRANT OPTION",
            };
            let what = match &column {
                Some(column) => format!("{privilege} ({column}) ON {on}"),
                None => format!("{privilege} ON {on}"),
            };
            let source = match privilege.as_str() {
                "MEMBERSHIP" => format!("GRANT {on} TO {user}{with}"),
                _ => format!("GRANT {what} TO {user}{with}"),
            };
            let table = (int(row, 5) == Some(0)).then(|| on.clone());
            let label = format!("{what} TO {user}");
            grants.push(Grant {
                on_relation: table.is_some(),
                grantee_is_person: grantee.is_empty() || grantee == "ROLE ",
                grantee: text(row, 0),
                grant_option: !with.is_empty(),
                privilege,
                on,
                column,
                label: label.clone(),
            });
            objects.push(CatalogObject {
                kind: "grant".into(),
                table,
                name: label,
                source,
                engine_name: None,
            });
            Ok(())
        },
    )
}
