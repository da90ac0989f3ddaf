//! Domains and case-insensitive collations: the column types that carry
//! a rule of their own. A Firebird domain becomes a PostgreSQL domain
//! (`CREATE DOMAIN`, its constant default, NOT NULL, its CHECK where
//! [`translate_check`] translates it), and the columns declared with it
//! take it as their type. A collation that ignores case or accents
//! (`UNICODE_CI`, `UNICODE_CI_AI`, a user's `..._CI`) becomes an ICU
//! nondeterministic collation, so the column compares as it did.
//!
//! The columns change type before any key or index is built on them: a
//! domain with no constraint yet, or a new collation, is a catalog change
//! without a rewrite of the rows. The domain's NOT NULL and CHECK are
//! added after, each one scan.

use std::collections::BTreeMap;

use fbunload_plan::schema::Schema;

use crate::catalog_report::Created;
use crate::ddl::{constant_default, sql_literal, Statement, Untranslated};
use crate::{ident, pg_name};

/// The statements in the two places they run.
#[derive(Debug, Default)]
pub struct Steps {
    /// Domains, collations and the columns' new types: before the keys.
    pub before_keys: Vec<Statement>,
    /// The domains' NOT NULL, CHECKs and comments: after everything.
    pub after: Vec<Statement>,
}

/// A domain's CHECK in PostgreSQL's SQL, or why not, by the PSQL
/// translator (its expression language is Firebird's: `VALUE`,
/// `STARTING WITH`, `CONTAINING`, ...).
pub fn translate_check(source: &str) -> Result<String, String> {
    fbunload_psql::translate_expression(source, &fbunload_psql::ExprContext::new().for_domain())
        .map_err(|u| {
            format!(
                "not translated: line {}: {}: {}",
                u.line, u.construct, u.reason
            )
        })
}

/// The locale of an ICU collation that ignores what `insensitive` says.
fn icu_locale(case: bool, accent: bool) -> &'static str {
    match (case, accent) {
        // Strength 1 ignores accents and case; 2 only case.
        (true, true) => "und-u-ks-level1",
        (true, false) => "und-u-ks-level2",
        // Accents ignored, case kept: strength 1 with case as its own level.
        _ => "und-u-ks-level1-kc-true",
    }
}

/// Whether a PostgreSQL type takes a collation.
fn is_text(sql_type: &str) -> bool {
    let base = sql_type.trim_end_matches("[]");
    ["text", "varchar", "character", "char", "bpchar"]
        .iter()
        .any(|t| base.starts_with(t))
}

/// A loaded table's columns, each with its PostgreSQL type.
pub type ColumnTypes = Vec<(String, String)>;

/// The steps for `schema`'s domains and insensitive collations.
/// `columns` gives a loaded table's columns and their PostgreSQL types;
/// `icu`: the server makes nondeterministic ICU collations; `taken`:
/// relation names a domain must not take (a type shares their namespace).
pub fn domains_and_collations(
    schema: &Schema,
    staging: &str,
    columns: &dyn Fn(&str) -> Option<ColumnTypes>,
    icu: bool,
    taken: &[String],
    created: &mut Created,
    report: &mut Vec<Untranslated>,
) -> Steps {
    let mut steps = Steps::default();
    let catalog = &schema.catalog;
    let qualified = |name: &str| format!("{}.{}", ident(staging), ident(name));
    // Each domain's PostgreSQL name and type, taken from its first
    // loaded column.
    let mut domains: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut collations: BTreeMap<String, String> = BTreeMap::new();
    for table in &schema.tables {
        let Some(types) = columns(&table.name) else {
            continue;
        };
        for column in &table.columns {
            let Some((_, sql_type)) = types.iter().find(|(c, _)| *c == column.name) else {
                continue;
            };
            if let Some(domain) = column
                .domain
                .as_ref()
                .filter(|d| catalog.domains.contains_key(*d))
            {
                domains.entry(domain.clone()).or_insert_with(|| {
                    let mut pg = pg_name(domain);
                    while taken.contains(&pg) {
                        pg.push_str("_domain");
                    }
                    (pg, sql_type.clone())
                });
            }
            if let Some(collation) = &column.collation {
                if icu
                    && is_text(sql_type)
                    && catalog.insensitive_collations.contains_key(collation)
                {
                    collations
                        .entry(collation.clone())
                        .or_insert_with(|| pg_name(collation));
                }
            }
        }
    }
    for (name, pg) in &collations {
        let rule = catalog.insensitive_collations[name];
        steps.before_keys.push(Statement {
            what: format!("collation {name}"),
            sql: format!(
                "CREATE COLLATION {} (provider = icu, locale = {}, deterministic = false)",
                qualified(pg),
                sql_literal(icu_locale(rule.case, rule.accent))
            ),
        });
        created.add("collation", None, name);
    }
    for (name, (pg, sql_type)) in &domains {
        let domain = &catalog.domains[name];
        let mut sql = format!("CREATE DOMAIN {} AS {sql_type}", qualified(pg));
        if let Some(default) = &domain.default {
            match constant_default(default) {
                Some(value) => sql += &format!(" DEFAULT {value}"),
                None => report.push(Untranslated {
                    kind: "default".into(),
                    table: None,
                    name: name.clone(),
                    source: default.clone(),
                    why: "a domain's default that is not a constant".into(),
                }),
            }
        }
        steps.before_keys.push(Statement {
            what: format!("domain {name}"),
            sql,
        });
        created.add("domain", None, name);
        if domain.not_null {
            steps.after.push(Statement {
                what: format!("NOT NULL of domain {name}"),
                sql: format!("ALTER DOMAIN {} SET NOT NULL", qualified(pg)),
            });
        }
        if let Some(check) = &domain.check {
            match translate_check(check) {
                Ok(expression) => {
                    steps.after.push(Statement {
                        what: format!("CHECK of domain {name}"),
                        // NOT VALID: it holds for new and changed rows, as
                        // Firebird's, which never checks the rows it has.
                        sql: format!(
                            "ALTER DOMAIN {} ADD CHECK ({expression}) NOT VALID",
                            qualified(pg)
                        ),
                    });
                    created.add("domain check", None, name);
                }
                Err(why) => report.push(Untranslated {
                    kind: "domain check".into(),
                    table: None,
                    name: name.clone(),
                    source: check.clone(),
                    why,
                }),
            }
        }
        if let Some(comment) = &domain.comment {
            steps.after.push(Statement {
                what: format!("comment on domain {name}"),
                sql: format!(
                    "COMMENT ON DOMAIN {} IS {}",
                    qualified(pg),
                    sql_literal(comment)
                ),
            });
            created.add("comment", None, &format!("domain {name}"));
        }
    }
    for table in &schema.tables {
        let Some(types) = columns(&table.name) else {
            continue;
        };
        let mut clauses = Vec::new();
        for column in &table.columns {
            let Some((_, sql_type)) = types.iter().find(|(c, _)| *c == column.name) else {
                continue;
            };
            let domain = column
                .domain
                .as_ref()
                .and_then(|d| domains.get(d))
                .filter(|(_, domain_type)| domain_type == sql_type);
            let collation = column.collation.as_ref().and_then(|c| collations.get(c));
            if domain.is_none() && collation.is_none() {
                continue;
            }
            let new_type = match domain {
                Some((pg, _)) => qualified(pg),
                None => sql_type.clone(),
            };
            let collate = collation
                .map(|c| format!(" COLLATE {}", qualified(c)))
                .unwrap_or_default();
            clauses.push(format!(
                "ALTER COLUMN {} TYPE {new_type}{collate}",
                ident(&pg_name(&column.name))
            ));
        }
        if !clauses.is_empty() {
            steps.before_keys.push(Statement {
                what: format!("domains and collations of {}", table.name),
                sql: format!(
                    "ALTER TABLE {} {}",
                    qualified(&pg_name(&table.name)),
                    clauses.join(", ")
                ),
            });
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use fbunload_plan::inventory::{Domain, Insensitive, Inventory};
    use fbunload_plan::schema::{ColumnSchema, TableSchema};

    #[test]
    fn a_domain_and_a_case_insensitive_collation_become_column_types() {
        let mut catalog = Inventory::default();
        catalog.domains.insert(
            "SALARY".into(),
            Domain {
                name: "SALARY".into(),
                default: Some("DEFAULT 0".into()),
                not_null: true,
                check: Some("CHECK (VALUE > 0)".into()),
                comment: Some("pay".into()),
            },
        );
        catalog.insensitive_collations.insert(
            "UNICODE_CI".into(),
            Insensitive {
                case: true,
                accent: false,
            },
        );
        let schema = Schema {
            tables: vec![TableSchema {
                name: "EMP".into(),
                columns: vec![
                    ColumnSchema {
                        name: "PAY".into(),
                        domain: Some("SALARY".into()),
                        ..ColumnSchema::default()
                    },
                    ColumnSchema {
                        name: "NAME".into(),
                        collation: Some("UNICODE_CI".into()),
                        ..ColumnSchema::default()
                    },
                ],
                ..TableSchema::default()
            }],
            catalog,
            ..Schema::default()
        };
        let columns = |t: &str| {
            (t == "EMP").then(|| {
                vec![
                    ("PAY".to_string(), "numeric(10,2)".to_string()),
                    ("NAME".to_string(), "varchar(20)".to_string()),
                ]
            })
        };
        let mut created = Created::default();
        let mut report = Vec::new();
        let steps = domains_and_collations(
            &schema,
            "s",
            &columns,
            true,
            &["emp".to_string()],
            &mut created,
            &mut report,
        );
        let sql: Vec<&str> = steps.before_keys.iter().map(|s| s.sql.as_str()).collect();
        assert_eq!(
            sql,
            [
                r#"CREATE COLLATION "s"."unicode_ci" (provider = icu, locale = E'und-u-ks-level2', deterministic = false)"#,
                r#"CREATE DOMAIN "s"."salary" AS numeric(10,2) DEFAULT 0"#,
                r#"ALTER TABLE "s"."emp" ALTER COLUMN "pay" TYPE "s"."salary", ALTER COLUMN "name" TYPE varchar(20) COLLATE "s"."unicode_ci""#,
            ]
        );
        let after: Vec<&str> = steps.after.iter().map(|s| s.sql.as_str()).collect();
        assert_eq!(
            after,
            [
                r#"ALTER DOMAIN "s"."salary" SET NOT NULL"#,
                r#"ALTER DOMAIN "s"."salary" ADD CHECK (VALUE > 0) NOT VALID"#,
                r#"COMMENT ON DOMAIN "s"."salary" IS E'pay'"#,
            ]
        );
        // The CHECK, translated by fbunload-psql: nothing reported.
        assert!(report.is_empty(), "{report:?}");
    }
}
