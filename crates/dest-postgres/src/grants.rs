//! `--pg-grants`: Firebird's roles and the privileges granted on the
//! loaded tables, made in PostgreSQL. Off by default: PostgreSQL roles
//! belong to the whole cluster, not to the database loaded, so making
//! them is a choice for whoever owns the cluster. Each Firebird user and
//! role becomes a role without LOGIN (passwords and logins are the
//! DBA's), made only where no role of that name exists; `PUBLIC` stays
//! `PUBLIC`. Privileges on a table or its columns (SELECT, INSERT,
//! UPDATE, DELETE, REFERENCES) given to a user, a role or PUBLIC are
//! granted on the loaded table; every other grant (EXECUTE on a
//! procedure, one given to a trigger or a procedure, one on a table not
//! loaded) is reported with why.
//!
//! Names reach PostgreSQL only as quoted identifiers ([`crate::ident`]),
//! whatever quotes or semicolons a Firebird role name holds.

use std::collections::BTreeSet;

use fbunload_plan::schema::Schema;

use crate::catalog_report::Created;
use crate::ddl::{Statement, Untranslated};
use crate::{ident, pg_name};

/// The roles to make and the grants, in that order; `loaded` says which
/// tables were loaded, `role_exists` whether the cluster has a role.
pub fn roles_and_grants(
    schema: &Schema,
    staging: &str,
    loaded: &dyn Fn(&str) -> bool,
    role_exists: &mut dyn FnMut(&str) -> bool,
    created: &mut Created,
    report: &mut Vec<Untranslated>,
) -> Vec<Statement> {
    let catalog = &schema.catalog;
    let mut statements = Vec::new();
    let mut made = BTreeSet::new();
    let mut make_role = |name: &str, statements: &mut Vec<Statement>| {
        let pg = pg_name(name);
        if made.insert(pg.clone()) && !role_exists(&pg) {
            statements.push(Statement {
                what: format!("role {name}"),
                sql: format!("CREATE ROLE {} NOLOGIN", ident(&pg)),
            });
        }
    };
    for role in catalog.objects.iter().filter(|o| o.kind == "role") {
        make_role(&role.name, &mut statements);
        created.add("role", None, &role.name);
    }
    for grant in &catalog.grants {
        let table = grant.on_relation.then_some(grant.on.as_str());
        let why = if !grant.on_relation {
            Some("only privileges on tables are made; grant it on the translated object")
        } else if !loaded(&grant.on) {
            Some("on a view or a table not loaded")
        } else if !grant.grantee_is_person {
            Some("given to a trigger, procedure or view: PostgreSQL's functions run with their caller's (or, SECURITY DEFINER, their owner's) rights")
        } else if !["SELECT", "INSERT", "UPDATE", "DELETE", "REFERENCES"]
            .contains(&grant.privilege.as_str())
        {
            Some("not a privilege on a table's rows")
        } else {
            None
        };
        if let Some(why) = why {
            report.push(Untranslated {
                kind: "grant".into(),
                table: table.map(str::to_string),
                name: grant.label.clone(),
                source: grant.label.clone(),
                why: why.into(),
            });
            continue;
        }
        let grantee = if grant.grantee == "PUBLIC" {
            "PUBLIC".to_string()
        } else {
            make_role(&grant.grantee, &mut statements);
            ident(&pg_name(&grant.grantee))
        };
        let column = grant
            .column
            .as_ref()
            .map(|c| format!(" ({})", ident(&pg_name(c))))
            .unwrap_or_default();
        statements.push(Statement {
            what: format!("grant {}", grant.label),
            sql: format!(
                "GRANT {}{column} ON {}.{} TO {grantee}{}",
                grant.privilege,
                ident(staging),
                ident(&pg_name(&grant.on)),
                if grant.grant_option {
                    " WITH GRANT OPTION"
                } else {
                    ""
                }
            ),
        });
        created.add("grant", table, &grant.label);
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::*;
    use fbunload_plan::inventory::{CatalogObject, Grant, Inventory};

    #[test]
    fn roles_and_table_grants_are_made_the_rest_reported() {
        let grant = |privilege: &str, on: &str, grantee: &str, person: bool| Grant {
            privilege: privilege.into(),
            on: on.into(),
            on_relation: on != "PROC",
            grantee: grantee.into(),
            grantee_is_person: person,
            label: format!("{privilege} ON {on} TO {grantee}"),
            ..Grant::default()
        };
        let schema = Schema {
            catalog: Inventory {
                objects: vec![CatalogObject {
                    kind: "role".into(),
                    name: "CLERK\"; DROP TABLE t; --".into(),
                    ..CatalogObject::default()
                }],
                grants: vec![
                    grant("SELECT", "ITEM", "CLERK\"; DROP TABLE t; --", true),
                    Grant {
                        grant_option: true,
                        ..grant("INSERT", "ITEM", "PUBLIC", true)
                    },
                    grant("EXECUTE", "PROC", "PUBLIC", true),
                    grant("INSERT", "ITEM", "ITEM_BI", false),
                ],
                ..Inventory::default()
            },
            ..Schema::default()
        };
        let mut created = Created::default();
        let mut report = Vec::new();
        let statements = roles_and_grants(
            &schema,
            "s",
            &|t| t == "ITEM",
            &mut |_| false,
            &mut created,
            &mut report,
        );
        let sql: Vec<&str> = statements.iter().map(|s| s.sql.as_str()).collect();
        assert_eq!(
            sql,
            [
                r#"CREATE ROLE "CLERK""; DROP TABLE t; --" NOLOGIN"#,
                r#"GRANT SELECT ON "s"."item" TO "CLERK""; DROP TABLE t; --""#,
                r#"GRANT INSERT ON "s"."item" TO PUBLIC WITH GRANT OPTION"#,
            ]
        );
        let why: Vec<&str> = report.iter().map(|u| u.why.as_str()).collect();
        assert_eq!(why.len(), 2);
        assert!(why[0].starts_with("only privileges on tables"));
        assert!(why[1].starts_with("given to a trigger"));
    }
}
