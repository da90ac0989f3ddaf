//! What a load would do, before it does anything: `--plan -o
//! postgresql://...` connects, looks at the target schema and says
//! whether the run would be a full load, a sync or refused, what
//! `--overwrite` would replace, and which catalog objects would be made
//! and which reported. Nothing is changed: only catalog queries run, and
//! the DDL is planned by the very function a load runs it from
//! ([`whole_ddl`]), so the plan cannot say other than the load does.

use std::collections::HashSet;

use arrow_schema::SchemaRef;
use fbunload_exec::ExecError;
use fbunload_plan::schema::Schema;
use fbunload_plan::{Kind, Plan};
use postgres::Client;

use crate::catalog_report::{self, Created, Tally};
use crate::ddl::{self, SequenceNames, Statement, Untranslated};
use crate::sync::STATE_TABLE;
use crate::{
    domains, grants, ident, own_name, pg_error, pg_name, types, PostgresOptions, Target,
    REPORT_TABLE, RUNS_TABLE,
};

/// A table of the run as PostgreSQL gets it.
#[derive(Debug, Clone)]
pub struct LoadedTable {
    /// Its Firebird name.
    pub name: String,
    /// Its PostgreSQL name.
    pub pg: String,
    /// A table of the catalog model (not a view or query loaded as one).
    pub from_table: bool,
    /// Its columns' Firebird names and PostgreSQL types.
    pub columns: Vec<(String, String)>,
}

/// Every statement a load runs once the rows are in, in order, and
/// what it reports and counts.
#[derive(Debug, Default)]
pub struct Ddl {
    pub statements: Vec<Statement>,
    /// What these statements leave out, before the accounting.
    pub report: Vec<Untranslated>,
    pub sequences: SequenceNames,
    /// What these statements make, for the accounting.
    pub created: Created,
    /// The Firebird names of the tables loaded.
    pub loaded: HashSet<String>,
}

impl Ddl {
    /// Every catalog object accounted for, once the PSQL translation's
    /// outcome is known (`made` by it, or `reported` with why): the
    /// whole report, and the counts by kind.
    pub fn account(
        self,
        catalog: &fbunload_plan::inventory::Inventory,
        made: &[crate::translate::Planned],
        reported: Vec<Untranslated>,
    ) -> (Vec<Untranslated>, Vec<Tally>) {
        let mut created = self.created;
        for object in made {
            created.add(&object.kind, object.table.as_deref(), &object.name);
        }
        let mut report = self.report;
        report.extend(reported);
        let loaded = self.loaded;
        let tallies =
            catalog_report::account(catalog, &created, &|t| loaded.contains(t), &mut report);
        (report, tallies)
    }
}

/// What the server can do that the DDL depends on: nondeterministic ICU
/// collations (PostgreSQL 12+, built with ICU), and, where `grants`, the
/// roles the cluster has.
pub fn server_abilities(
    client: &mut Client,
    grants: bool,
) -> Result<(bool, Option<HashSet<String>>), ExecError> {
    let icu: bool = client
        .query_one(
            "SELECT current_setting('server_version_num')::int >= 120000 \
             AND EXISTS (SELECT 1 FROM pg_collation WHERE collprovider = 'i')",
            &[],
        )
        .map_err(|e| pg_error("looking for ICU collations", e))?
        .get(0);
    let roles = if grants {
        Some(
            client
                .query("SELECT rolname::text FROM pg_roles", &[])
                .map_err(|e| pg_error("reading the cluster's roles", e))?
                .iter()
                .map(|r| r.get(0))
                .collect(),
        )
    } else {
        None
    };
    Ok((icu, roles))
}

/// The DDL of a full load into `staging` (see the crate's docs): the
/// domains and collations, the keys, indices, foreign keys, sequences
/// and comments, then the roles and grants where `roles` (the cluster's)
/// is given; and the accounting of every catalog object.
pub fn whole_ddl(
    schema: &Schema,
    staging: &str,
    tables: &[LoadedTable],
    icu: bool,
    roles: Option<&HashSet<String>>,
) -> Ddl {
    let find = |name: &str| tables.iter().find(|t| t.from_table && t.name == name);
    let loaded = |name: &str| -> Option<Vec<String>> {
        find(name).map(|t| t.columns.iter().map(|(c, _)| c.clone()).collect())
    };
    let relations: Vec<String> = tables
        .iter()
        .map(|t| t.pg.clone())
        .chain([RUNS_TABLE.to_string(), REPORT_TABLE.to_string()])
        .collect();
    let mut created = Created::default();
    for t in tables.iter().filter(|t| t.from_table) {
        created.add("table", None, &t.name);
    }
    let (statements, mut report, sequences) =
        ddl::after_load(schema, staging, &loaded, &relations, &mut created);
    let columns = |name: &str| find(name).map(|t| t.columns.clone());
    let steps = domains::domains_and_collations(
        schema,
        staging,
        &columns,
        icu,
        &relations,
        &mut created,
        &mut report,
    );
    let is_loaded = |name: &str| find(name).is_some();
    let grants = match roles {
        Some(roles) => grants::roles_and_grants(
            schema,
            staging,
            &is_loaded,
            &mut |role| roles.contains(role),
            &mut created,
            &mut report,
        ),
        None => Vec::new(),
    };
    let mut all = steps.before_keys;
    all.extend(statements);
    all.extend(steps.after);
    all.extend(grants);
    Ddl {
        statements: all,
        report,
        sequences,
        created,
        loaded: tables
            .iter()
            .filter(|t| t.from_table)
            .map(|t| t.name.clone())
            .collect(),
    }
}

/// What a run into the target would do.
#[derive(Debug, Clone, Default)]
pub struct TargetPlan {
    /// The run as a whole: a full load, a sync, or refused and why.
    pub run: String,
    /// The same in one word: `full load`, `sync`, `existing tables`
    /// (`--no-schema`) or `refused`.
    pub kind: &'static str,
    /// Each table of the run and what would happen to it.
    pub tables: Vec<(String, String)>,
    /// What `--overwrite` replaces (or would): the schema's tables and
    /// views, each with its estimated rows.
    pub replaced: Vec<(String, i64)>,
    /// The catalog objects a full load would make and report.
    pub tallies: Vec<Tally>,
    pub untranslated: Vec<Untranslated>,
}

/// Looks at the target and plans the run (see the module's docs);
/// `model` is the catalog model of the plan's tables.
pub fn plan_target(
    target: &Target,
    options: &PostgresOptions,
    plan: &Plan,
    arrow: &[SchemaRef],
    model: Option<&Schema>,
) -> Result<TargetPlan, ExecError> {
    let schema = &options.schema;
    let mut client = target.connect().map_err(ExecError::Server)?;
    let fail = |e| pg_error("looking at the target", e);
    let relations: Vec<(String, i64)> = client
        .query(
            "SELECT c.relname::text, greatest(c.reltuples, 0)::bigint FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 \
             AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1",
            &[schema],
        )
        .map_err(fail)?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let has = |name: &str| relations.iter().any(|(r, _)| r == name);
    let kept_state = has(RUNS_TABLE) && has(STATE_TABLE) && {
        let runs = format!("{}.{}", ident(schema), ident(RUNS_TABLE));
        let state = format!("{}.{}", ident(schema), ident(STATE_TABLE));
        client
            .query_one(
                &format!(
                    "SELECT EXISTS (SELECT 1 FROM {state} WHERE state = (SELECT options->>'state' \
                     FROM {runs} ORDER BY finished DESC, started DESC LIMIT 1))"
                ),
                &[],
            )
            .map_err(fail)?
            .get(0)
    };
    let mut out = TargetPlan::default();
    let mut loads = Vec::new();
    for (i, table) in plan.tables.iter().enumerate() {
        let mut columns = Vec::new();
        for field in arrow[i].fields() {
            match types::pg_column(field) {
                Ok(c) => columns.push((c.name, c.sql_type)),
                Err(e) => {
                    out.tables.push((
                        table.name.clone(),
                        format!("refused: column {}: {e}", field.name()),
                    ));
                }
            }
        }
        loads.push(LoadedTable {
            name: table.name.clone(),
            pg: pg_name(&table.name),
            from_table: table.kind == Kind::Table
                && model.is_some_and(|m| m.tables.iter().any(|t| t.name == table.name)),
            columns,
        });
    }
    let user_relations: Vec<(String, i64)> = relations
        .iter()
        .filter(|(r, _)| !r.starts_with("_fbunload_"))
        .cloned()
        .collect();
    let discards = "discarding every write made there since, the application's too";
    let full_load;
    if !options.create_tables {
        full_load = false;
        out.kind = "existing tables";
        out.run = if options.overwrite {
            "rows replaced in the existing tables (--no-schema --overwrite)".into()
        } else {
            "loaded into the existing tables, which must be empty (--no-schema)".into()
        };
        for load in &loads {
            let what = if has(&load.pg) {
                format!("into {schema}.{}", load.pg)
            } else {
                format!("refused: {schema} has no table {}", load.pg)
            };
            out.tables.push((load.name.clone(), what));
        }
    } else if kept_state && !options.overwrite {
        full_load = false;
        out.kind = "sync";
        out.run = "a sync: only what changed since the run that kept its state is applied, in \
                   one transaction"
            .into();
        for load in &loads {
            let what = if has(&load.pg) {
                "synced".to_string()
            } else {
                format!(
                    "refused: not in the kept load; --overwrite --keep-keys loads the schema \
                     whole again, {discards}"
                )
            };
            out.tables.push((load.name.clone(), what));
        }
    } else if !relations.is_empty() && !options.overwrite {
        full_load = false;
        out.kind = "refused";
        out.run = format!(
            "refused: schema {schema} holds {} tables or views and no state to sync from; \
             --overwrite would replace them whole, {discards}",
            relations.len()
        );
        out.replaced = user_relations;
    } else {
        full_load = true;
        out.kind = "full load";
        out.run = if relations.is_empty() {
            format!("a full load into schema {schema} (absent or empty)")
        } else {
            format!("a full load replacing schema {schema} whole (--overwrite), {discards}")
        };
        out.replaced = user_relations;
        for load in &loads {
            if !out.tables.iter().any(|(t, _)| *t == load.name) {
                out.tables.push((load.name.clone(), "full load".into()));
            }
        }
    }
    if let (true, Some(model)) = (full_load, model) {
        let (icu, roles) = server_abilities(&mut client, options.grants)?;
        let staging = own_name("_fbunload_staging_", schema);
        let ddl = whole_ddl(model, &staging, &loads, icu, roles.as_ref());
        let loaded = |name: &str| -> Option<Vec<String>> {
            loads
                .iter()
                .find(|t| t.from_table && t.name == name)
                .map(|t| t.columns.iter().map(|(c, _)| c.clone()).collect())
        };
        let (made, reported) = crate::translate::plan(model, &ddl.sequences, schema, &loaded);
        let (report, tallies) = ddl.account(&model.catalog, &made, reported);
        out.tallies = tallies;
        out.untranslated = report;
    }
    Ok(out)
}
