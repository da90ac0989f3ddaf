//! PostgreSQL DDL from the catalog model that `schema.sql` is written
//! from ([`Schema`]): what is added once the rows are in (NOT NULL,
//! constant defaults, primary and unique keys, indices, foreign keys,
//! sequences and identity columns at Firebird's values), and what does
//! not translate, with its Firebird source, for the report.

use fbunload_plan::inventory::{constraint_label, Inventory};
use fbunload_plan::schema::{ConstraintKind, Schema, SequenceValues, TableSchema};

use crate::catalog_report::Created;
use crate::{ident, pg_name};

/// One statement to run on the staging schema, and what it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub what: String,
    pub sql: String,
}

/// What was not carried over, with its Firebird source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untranslated {
    /// `view`, `trigger`, `procedure`, `check constraint`, `computed
    /// column`, `index`, `default`, `foreign key`.
    pub kind: String,
    pub table: Option<String>,
    pub name: String,
    pub source: String,
    pub why: String,
}

/// The DDL in the order it runs (each step after the one it needs):
/// column clauses, keys, indices, foreign keys, sequences; `loaded`
/// says which columns of each table were loaded (a `--columns` run),
/// so that nothing names a column that is not there. Also returns each
/// sequence's PostgreSQL name, by its Firebird one (a name taken by a
/// table or index gets a suffix: a sync must set the same). What it
/// makes it records in `created`, by the catalog walk's kinds and names
/// ([`crate::catalog_report`]).
pub fn after_load(
    schema: &Schema,
    staging: &str,
    loaded: &dyn Fn(&str) -> Option<Vec<String>>,
    tables: &[String],
    created: &mut Created,
) -> (Vec<Statement>, Vec<Untranslated>, SequenceNames) {
    // Tables, indices (a key's too) and sequences share one namespace in
    // PostgreSQL, not in Firebird: a name taken gets a suffix.
    let mut names = Names::default();
    for table in tables {
        names.take(table);
    }
    // The names PostgreSQL would choose itself (`t_pkey`, `t_a_key`,
    // `t_id_seq`) are given first, explicitly: an index or sequence that
    // Firebird named so gets the suffix, never the load an "already
    // exists".
    let mut generated = std::collections::HashMap::new();
    for table in &schema.tables {
        let Some(columns) = loaded(&table.name) else {
            continue;
        };
        let pg_table = pg_name(&table.name);
        for (i, constraint) in table.constraints.iter().enumerate() {
            let suffix = match constraint.kind {
                _ if constraint.name.is_some() => continue,
                _ if !constraint.columns.iter().all(|c| columns.contains(c)) => continue,
                ConstraintKind::PrimaryKey => "pkey".to_string(),
                ConstraintKind::Unique => {
                    let columns: Vec<String> =
                        constraint.columns.iter().map(|c| pg_name(c)).collect();
                    format!("{}_key", columns.join("_"))
                }
                ConstraintKind::ForeignKey { .. } => continue,
            };
            let name = names.take(&format!("{pg_table}_{suffix}"));
            generated.insert((table.name.clone(), format!("constraint {i}")), name);
        }
        for column in &table.columns {
            if column.identity.is_some() && columns.contains(&column.name) {
                let name = names.take(&format!("{pg_table}_{}_seq", pg_name(&column.name)));
                generated.insert((table.name.clone(), column.name.clone()), name);
            }
        }
    }
    let mut statements = Vec::new();
    let mut foreign = Vec::new();
    let mut report = Vec::new();
    let qualified = |table: &str| format!("{}.{}", ident(staging), ident(&pg_name(table)));
    for table in &schema.tables {
        let Some(columns) = loaded(&table.name) else {
            continue;
        };
        let has = |c: &String| columns.contains(c);
        let name = qualified(&table.name);
        // One ALTER TABLE for every column clause: one scan of the table.
        let mut clauses = Vec::new();
        for column in table.columns.iter().filter(|c| has(&c.name)) {
            let col = ident(&pg_name(&column.name));
            if column.not_null {
                clauses.push(format!("ALTER COLUMN {col} SET NOT NULL"));
            }
            if let Some(default) = &column.default {
                match crate::defaults::typed_default(default, &column.data_type) {
                    Ok(value) => clauses.push(format!("ALTER COLUMN {col} SET DEFAULT {value}")),
                    Err(why) => report.push(Untranslated {
                        kind: "default".into(),
                        table: Some(table.name.clone()),
                        name: column.name.clone(),
                        source: default.clone(),
                        why,
                    }),
                }
            }
        }
        if !clauses.is_empty() {
            statements.push(Statement {
                what: format!("NOT NULL and defaults of {}", table.name),
                sql: format!("ALTER TABLE {name} {}", clauses.join(", ")),
            });
        }
        for (i, constraint) in table.constraints.iter().enumerate() {
            let label = constraint_label(constraint.name.as_deref(), &constraint.columns);
            let kind = match constraint.kind {
                ConstraintKind::PrimaryKey => "primary key",
                ConstraintKind::Unique => "unique",
                ConstraintKind::ForeignKey { .. } => "foreign key",
            };
            if !constraint.columns.iter().all(has) {
                report.push(Untranslated {
                    kind: kind.into(),
                    table: Some(table.name.clone()),
                    name: label,
                    source: constraint.columns.join(", "),
                    why: "uses columns not loaded (--columns)".into(),
                });
                continue;
            }
            let named = match &constraint.name {
                Some(n) if !matches!(constraint.kind, ConstraintKind::ForeignKey { .. }) => {
                    format!("CONSTRAINT {} ", ident(&names.take(&pg_name(n))))
                }
                Some(n) => format!("CONSTRAINT {} ", ident(&pg_name(n))),
                None => match generated.get(&(table.name.clone(), format!("constraint {i}"))) {
                    Some(n) => format!("CONSTRAINT {} ", ident(n)),
                    None => String::new(),
                },
            };
            let columns = column_list(&constraint.columns);
            let (sql, is_foreign) = match &constraint.kind {
                ConstraintKind::PrimaryKey => (format!("PRIMARY KEY ({columns})"), false),
                ConstraintKind::Unique => (format!("UNIQUE ({columns})"), false),
                ConstraintKind::ForeignKey {
                    table: parent,
                    columns: referenced,
                    on_update,
                    on_delete,
                } => {
                    if loaded(parent).is_none_or(|c| !referenced.iter().all(|r| c.contains(r))) {
                        report.push(Untranslated {
                            kind: "foreign key".into(),
                            table: Some(table.name.clone()),
                            name: label,
                            source: format!("REFERENCES {parent}"),
                            why: "its table or columns were not loaded".into(),
                        });
                        continue;
                    }
                    let mut sql = format!(
                        "FOREIGN KEY ({columns}) REFERENCES {} ({})",
                        qualified(parent),
                        column_list(referenced)
                    );
                    for (on, rule) in [("UPDATE", on_update), ("DELETE", on_delete)] {
                        if let Some(rule) = rule {
                            sql += &format!(" ON {on} {rule}");
                        }
                    }
                    // Checked at once, as in Firebird, but a sync may check
                    // at its commit: rows that reference each other (a
                    // cycle, a key updated) arrive in one transaction.
                    sql += " DEFERRABLE INITIALLY IMMEDIATE";
                    (sql, true)
                }
            };
            let statement = Statement {
                what: format!("{kind} {label} of {}", table.name),
                sql: format!("ALTER TABLE {name} ADD {named}{sql}"),
            };
            created.add(kind, Some(&table.name), &label);
            if is_foreign {
                foreign.push(statement);
            } else {
                statements.push(statement);
            }
        }
        let mut comments = Vec::new();
        if let Some(comment) = &table.comment {
            comments.push(format!(
                "COMMENT ON TABLE {name} IS {}",
                sql_literal(comment)
            ));
            created.add(
                "comment",
                Some(&table.name),
                &format!("table {}", table.name),
            );
        }
        for column in table.columns.iter().filter(|c| has(&c.name)) {
            created.add("column", Some(&table.name), &column.name);
            if let Some(comment) = &column.comment {
                created.add(
                    "comment",
                    Some(&table.name),
                    &format!("column {}.{}", table.name, column.name),
                );
                comments.push(format!(
                    "COMMENT ON COLUMN {name}.{} IS {}",
                    ident(&pg_name(&column.name)),
                    sql_literal(comment)
                ));
            }
        }
        if !comments.is_empty() {
            statements.push(Statement {
                what: format!("comments of {}", table.name),
                sql: comments.join("; "),
            });
        }
        indices(
            table,
            &name,
            &has,
            &mut names,
            (&mut statements, &mut report, created),
            (&schema.catalog, staging),
        );
        let sequence_of = |column: &str| {
            generated
                .get(&(table.name.clone(), column.to_string()))
                .cloned()
        };
        identities(table, staging, &has, &sequence_of, &mut statements);
    }
    statements.extend(foreign);
    for (table, constraint) in &schema.skipped_foreign_keys {
        report.push(Untranslated {
            kind: "foreign key".into(),
            table: Some(table.clone()),
            name: constraint.clone(),
            source: String::new(),
            why: "references a table not loaded".into(),
        });
    }
    let mut sequences = SequenceNames::new();
    for sequence in &schema.sequences {
        let pg = names.take(&pg_name(&sequence.name));
        let name = format!("{}.{}", ident(staging), ident(&pg));
        sequences.insert(sequence.name.clone(), pg);
        let on = format!("sequence {}", sequence.name);
        let comment = comment_of(&schema.catalog, &on)
            .map(|text| format!("; COMMENT ON SEQUENCE {name} IS {}", sql_literal(text)))
            .unwrap_or_default();
        statements.push(Statement {
            what: format!("sequence {}", sequence.name),
            sql: format!(
                "CREATE SEQUENCE {name} AS bigint {}; {}{comment}",
                sequence_clauses(sequence.values),
                set_value(&sql_literal(&name), sequence.values)
            ),
        });
        created.add("sequence", None, &sequence.name);
        if !comment.is_empty() {
            created.add("comment", None, &on);
        }
    }
    (statements, report, sequences)
}

/// The PostgreSQL name of each sequence, by its Firebird name.
pub type SequenceNames = std::collections::BTreeMap<String, String>;

/// Relation names given out in the schema.
#[derive(Default)]
pub(crate) struct Names(std::collections::HashSet<String>);

impl Names {
    /// Names already taken (a synced target's relations).
    pub(crate) fn taken(names: impl IntoIterator<Item = String>) -> Names {
        Names(names.into_iter().collect())
    }

    /// `name`, or `name_2`, `name_3`, ... where it is taken; cut to the
    /// 63 bytes PostgreSQL keeps first (it would cut it itself, and two
    /// names cut alike would meet).
    pub(crate) fn take(&mut self, name: &str) -> String {
        let mut candidate = name.to_string();
        while candidate.len() > crate::PG_NAME_MAX {
            candidate.pop();
        }
        let mut n = 1;
        while !self.0.insert(candidate.clone()) {
            n += 1;
            let suffix = format!("_{n}");
            let mut stem = name.to_string();
            // PostgreSQL cuts names at 63 bytes.
            while stem.len() + suffix.len() > 63 {
                stem.pop();
            }
            candidate = format!("{stem}{suffix}");
        }
        candidate
    }
}

/// The catalog's comment on `on` (`sequence G`, `index I`), if any.
pub(crate) fn comment_of<'c>(catalog: &'c Inventory, on: &str) -> Option<&'c str> {
    catalog
        .objects
        .iter()
        .find(|o| o.kind == "comment" && o.name == on)
        .map(|o| o.source.as_str())
}

fn indices(
    table: &TableSchema,
    name: &str,
    has: &dyn Fn(&String) -> bool,
    names: &mut Names,
    (statements, report, created): (&mut Vec<Statement>, &mut Vec<Untranslated>, &mut Created),
    (catalog, staging): (&Inventory, &str),
) {
    for index in &table.indices {
        let untranslated = |why: &str, source: String| Untranslated {
            kind: "index".into(),
            table: Some(table.name.clone()),
            name: index.name.clone(),
            source,
            why: why.into(),
        };
        if index.inactive {
            report.push(untranslated(
                "inactive in Firebird",
                index.columns.join(", "),
            ));
            continue;
        }
        if !index.columns.iter().all(has) {
            report.push(untranslated(
                "uses columns not loaded (--columns)",
                index.columns.join(", "),
            ));
            continue;
        }
        if translated_index(index) {
            // Made by `translate`, by this name, once the computed
            // columns its expression may read are made. Taken here so
            // that no later name takes it; where it is taken already,
            // `translate` makes it under the name with a suffix that is
            // reserved here, and says so.
            names.take(&pg_name(&index.name));
            continue;
        }
        let order = if index.descending { " DESC" } else { "" };
        let columns: Vec<String> = index
            .columns
            .iter()
            .map(|c| format!("{}{order}", ident(&pg_name(c))))
            .collect();
        let pg = ident(&names.take(&pg_name(&index.name)));
        let on = format!("index {}", index.name);
        let comment = comment_of(catalog, &on);
        statements.push(Statement {
            what: format!("index {} of {}", index.name, table.name),
            sql: format!(
                "CREATE {}INDEX {pg} ON {name} ({}){}",
                if index.unique { "UNIQUE " } else { "" },
                columns.join(", "),
                comment
                    .map(|text| format!(
                        "; COMMENT ON INDEX {}.{pg} IS {}",
                        ident(staging),
                        sql_literal(text)
                    ))
                    .unwrap_or_default()
            ),
        });
        created.add("index", Some(&table.name), &index.name);
        if comment.is_some() {
            created.add("comment", Some(&table.name), &on);
        }
    }
}

/// An active index whose expression (`COMPUTED BY`) or condition (a
/// partial index's `WHERE`) is Firebird's SQL: `translate` makes it
/// through the PSQL translator, or reports why not.
pub(crate) fn translated_index(index: &fbunload_plan::schema::Index) -> bool {
    !index.inactive && (index.expression.is_some() || index.condition.is_some())
}

/// Identity columns, their sequence at Firebird's value.
fn identities(
    table: &TableSchema,
    staging: &str,
    has: &dyn Fn(&String) -> bool,
    sequence_of: &dyn Fn(&str) -> Option<String>,
    statements: &mut Vec<Statement>,
) {
    for column in table.columns.iter().filter(|c| has(&c.name)) {
        let Some(identity) = column.identity else {
            continue;
        };
        let name = format!("{}.{}", ident(staging), ident(&pg_name(&table.name)));
        let sequence = format!(
            "pg_catalog.pg_get_serial_sequence({}, {})",
            sql_literal(&name),
            sql_literal(&pg_name(&column.name))
        );
        statements.push(Statement {
            what: format!("identity column {} of {}", column.name, table.name),
            sql: format!(
                "ALTER TABLE {name} ALTER COLUMN {} ADD GENERATED {} AS IDENTITY ({}{}); {}",
                ident(&pg_name(&column.name)),
                if identity.always {
                    "ALWAYS"
                } else {
                    "BY DEFAULT"
                },
                match sequence_of(&column.name) {
                    Some(n) => format!("SEQUENCE NAME {}.{} ", ident(staging), ident(&n)),
                    None => String::new(),
                },
                sequence_clauses(identity.sequence),
                set_value(&sequence, identity.sequence)
            ),
        });
    }
}

/// START, INCREMENT and a bound that lets the current value be set.
pub(crate) fn sequence_clauses(v: SequenceValues) -> String {
    let increment = if v.increment == 0 { 1 } else { v.increment };
    let bound = if increment > 0 {
        format!("MINVALUE {}", v.start.min(v.current))
    } else {
        format!("MAXVALUE {}", v.start.max(v.current))
    };
    format!("START WITH {} INCREMENT BY {increment} {bound}", v.start)
}

/// `setval(seq, current, true)`: the next value is current + increment,
/// what Firebird 4+ gives next.
fn set_value(sequence: &str, v: SequenceValues) -> String {
    format!("SELECT pg_catalog.setval({sequence}, {}, true)", v.current)
}

fn column_list(columns: &[String]) -> String {
    columns
        .iter()
        .map(|c| ident(&pg_name(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `text` as a PostgreSQL string literal that means `text` whatever
/// `standard_conforming_strings` says: an escape string (`E'...'`), where
/// a backslash always escapes, with each backslash and quote doubled. A
/// plain `'...'` with only its quotes doubled would, with the setting off,
/// let `\'` end the literal early (SQL injection from a comment).
pub(crate) fn sql_literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// A Firebird default that means the same in PostgreSQL: a number, a
/// plain string, NULL, TRUE/FALSE, or the current date or time (a date
/// or time column's strings: [`crate::defaults::typed_default`]).
pub fn constant_default(default: &str) -> Option<String> {
    let text = default.trim();
    let value = match text.get(..7) {
        Some(k) if k.eq_ignore_ascii_case("DEFAULT") => text[7..].trim(),
        _ => text,
    };
    let upper = value.to_ascii_uppercase();
    match upper.as_str() {
        "NULL" | "TRUE" | "FALSE" | "CURRENT_DATE" | "CURRENT_TIMESTAMP" | "CURRENT_TIME"
        | "LOCALTIMESTAMP" | "LOCALTIME" | "CURRENT_USER" => return Some(upper),
        _ => {}
    }
    let number = value.strip_prefix('-').unwrap_or(value);
    if !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && number.bytes().filter(|b| *b == b'.').count() <= 1
        && number != "."
    {
        return Some(value.to_string());
    }
    // One plain string literal: quotes doubled inside, nothing after.
    let inner = value.strip_prefix('\'')?.strip_suffix('\'')?;
    if inner.replace("''", "").contains('\'') || inner.contains('\0') {
        return None;
    }
    // Firebird's text, written again as a literal safe for any setting.
    Some(sql_literal(&inner.replace("''", "'")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fbunload_plan::schema::{ColumnSchema, Constraint, Index, Sequence};

    #[test]
    fn only_constant_defaults_translate() {
        assert_eq!(constant_default("DEFAULT 0").as_deref(), Some("0"));
        assert_eq!(constant_default("default -1.50").as_deref(), Some("-1.50"));
        assert_eq!(
            constant_default("DEFAULT 'it''s'").as_deref(),
            Some("E'it''s'")
        );
        // A backslash is a backslash, whatever standard_conforming_strings.
        assert_eq!(
            constant_default(r"DEFAULT 'a\b'").as_deref(),
            Some(r"E'a\\b'")
        );
        assert_eq!(
            sql_literal(r"x\'; CREATE TABLE p (i int); --"),
            r"E'x\\''; CREATE TABLE p (i int); --'"
        );
        assert_eq!(
            constant_default("DEFAULT current_timestamp").as_deref(),
            Some("CURRENT_TIMESTAMP")
        );
        // A string: its meaning by the column's type is `defaults`'.
        assert_eq!(constant_default("DEFAULT 'NOW'").as_deref(), Some("E'NOW'"));
        assert_eq!(constant_default("DEFAULT GEN_ID(G, 1)"), None);
        assert_eq!(constant_default("DEFAULT 'a' || 'b'"), None);
        assert_eq!(constant_default("DEFAULT _UTF8 'x'"), None);
    }

    #[test]
    fn postgresqls_own_names_are_given_first() {
        let schema = Schema {
            tables: vec![TableSchema {
                name: "T".into(),
                columns: vec![
                    ColumnSchema {
                        name: "ID".into(),
                        identity: Some(Default::default()),
                        ..ColumnSchema::default()
                    },
                    ColumnSchema {
                        name: "B".into(),
                        ..ColumnSchema::default()
                    },
                ],
                constraints: vec![
                    Constraint {
                        name: None,
                        kind: ConstraintKind::PrimaryKey,
                        columns: vec!["ID".into()],
                        index: None,
                    },
                    Constraint {
                        name: None,
                        kind: ConstraintKind::Unique,
                        columns: vec!["B".into()],
                        index: None,
                    },
                ],
                indices: vec![Index {
                    name: "T_PKEY".into(),
                    columns: vec!["B".into()],
                    ..Index::default()
                }],
                comment: None,
            }],
            sequences: ["T_ID_SEQ", "T_B_KEY"]
                .iter()
                .map(|n| Sequence {
                    name: n.to_string(),
                    values: SequenceValues::default(),
                })
                .collect(),
            ..Schema::default()
        };
        let loaded = |_: &str| Some(vec!["ID".to_string(), "B".to_string()]);
        let (statements, _, sequences) = after_load(
            &schema,
            "s",
            &loaded,
            &["t".into()],
            &mut Created::default(),
        );
        let sql: Vec<&str> = statements.iter().map(|s| s.sql.as_str()).collect();
        assert!(sql.contains(&r#"ALTER TABLE "s"."t" ADD CONSTRAINT "t_pkey" PRIMARY KEY ("id")"#));
        assert!(sql.contains(&r#"ALTER TABLE "s"."t" ADD CONSTRAINT "t_b_key" UNIQUE ("b")"#));
        assert!(sql.contains(&r#"CREATE INDEX "t_pkey_2" ON "s"."t" ("b")"#));
        assert!(
            sql.iter()
                .any(|s| s.contains(r#"AS IDENTITY (SEQUENCE NAME "s"."t_id_seq" START"#)),
            "{sql:?}"
        );
        assert_eq!(sequences["T_ID_SEQ"], "t_id_seq_2");
        assert_eq!(sequences["T_B_KEY"], "t_b_key_2");
    }

    #[test]
    fn names_given_out_fit_postgresql_and_do_not_meet() {
        let mut names = Names::default();
        let long = format!("{}é", "i".repeat(62));
        assert_eq!(names.take(&format!("{long}_a")), "i".repeat(62));
        assert_eq!(
            names.take(&format!("{long}_b")),
            format!("{}_2", "i".repeat(61))
        );
        assert_eq!(names.take("x"), "x");
        assert_eq!(names.take("x"), "x_2");
    }

    #[test]
    fn keys_indices_sequences_and_what_is_reported() {
        let column = |name: &str, not_null: bool| ColumnSchema {
            name: name.into(),
            data_type: "INTEGER".into(),
            not_null,
            ..ColumnSchema::default()
        };
        let schema = Schema {
            tables: vec![
                TableSchema {
                    name: "ORDERS".into(),
                    columns: vec![
                        column("ID", true),
                        column("CUST", false),
                        ColumnSchema {
                            computed_by: Some("(ID * 2)".into()),
                            ..column("TWICE", false)
                        },
                    ],
                    constraints: vec![
                        Constraint {
                            name: Some("PK_ORDERS".into()),
                            kind: ConstraintKind::PrimaryKey,
                            columns: vec!["ID".into()],
                            index: None,
                        },
                        Constraint {
                            name: None,
                            kind: ConstraintKind::ForeignKey {
                                table: "CUSTOMERS".into(),
                                columns: vec!["ID".into()],
                                on_update: None,
                                on_delete: Some("CASCADE".into()),
                            },
                            columns: vec!["CUST".into()],
                            index: None,
                        },
                    ],
                    indices: vec![
                        Index {
                            name: "BY_CUST".into(),
                            descending: true,
                            columns: vec!["CUST".into()],
                            ..Index::default()
                        },
                        Index {
                            name: "UP".into(),
                            expression: Some("(UPPER(CUST))".into()),
                            ..Index::default()
                        },
                    ],
                    comment: Some("it's orders".into()),
                },
                TableSchema {
                    name: "CUSTOMERS".into(),
                    columns: vec![column("ID", true)],
                    ..TableSchema::default()
                },
            ],
            sequences: vec![Sequence {
                name: "GEN_ORDERS".into(),
                values: SequenceValues {
                    start: 1,
                    increment: 1,
                    current: 41,
                },
            }],
            ..Schema::default()
        };
        let loaded = |t: &str| -> Option<Vec<String>> {
            match t {
                "ORDERS" => Some(vec!["ID".into(), "CUST".into()]),
                "CUSTOMERS" => Some(vec!["ID".into()]),
                _ => None,
            }
        };
        let tables = [
            "orders".to_string(),
            "customers".to_string(),
            "by_cust".to_string(),
        ];
        let (statements, report, sequences) =
            after_load(&schema, "stage", &loaded, &tables, &mut Created::default());
        assert_eq!(
            sequences.into_iter().collect::<Vec<_>>(),
            [("GEN_ORDERS".to_string(), "gen_orders".to_string())]
        );
        let sql: Vec<&str> = statements.iter().map(|s| s.sql.as_str()).collect();
        assert_eq!(
            sql[0],
            r#"ALTER TABLE "stage"."orders" ALTER COLUMN "id" SET NOT NULL"#
        );
        assert_eq!(
            sql[1],
            r#"ALTER TABLE "stage"."orders" ADD CONSTRAINT "pk_orders" PRIMARY KEY ("id")"#
        );
        assert_eq!(
            sql[2],
            r#"COMMENT ON TABLE "stage"."orders" IS E'it''s orders'"#
        );
        assert_eq!(
            sql[3],
            r#"CREATE INDEX "by_cust_2" ON "stage"."orders" ("cust" DESC)"#
        );
        // Foreign keys after every table's keys, sequences last.
        assert!(
            sql[5].contains(
                r#"FOREIGN KEY ("cust") REFERENCES "stage"."customers" ("id") ON DELETE CASCADE"#
            ),
            "{}",
            sql[5]
        );
        assert!(
            sql[6].contains("MINVALUE 1") && sql[6].ends_with("41, true)"),
            "{}",
            sql[6]
        );
        // Computed columns, CHECKs, views, PSQL and expression
        // indices: `translate`.
        assert_eq!(report, []);
        assert!(!sql.iter().any(|s| s.contains("\"up\"")), "{sql:?}");
    }
}
