//! Resumable loads (`--resumable`, `--resume` into PostgreSQL): a load
//! killed outright (kill -9, power loss, a server restart) keeps what it
//! finished in its staging schema, and the next run goes on from it.
//!
//! A resumable load makes, in the transaction that makes its staging
//! tables, [`START_TABLE`] (one row: the first run's snapshot, database
//! and options, as the facade hands them over) and [`UNITS_TABLE`]; each
//! unit's COPY then runs in a transaction of its own that also adds the
//! unit's row there (table, DB_KEY range, rows). So a unit is journaled
//! exactly when its rows are in the staging table, and its rows are
//! those whose `xmin` is the journal row's own: a unit read again at the
//! resume's snapshot has its old rows removed by that, with its row, in
//! one transaction (no key is needed, and none is built yet).
//!
//! `--resume` reads the staging schema as a stranger's: it must belong to
//! the connected role and hold only the load's tables and the two above,
//! with no trigger, rule, function or type of anyone's; every row of a
//! table must be a journaled unit's (counted per `xmin`). Anything else
//! refuses the resume in one line, and nothing is dropped.

use std::collections::HashMap;

use postgres::{Client, GenericClient};

use crate::{ident, pg_error, ExecError, Target};

/// The first run's snapshot and options, one row.
pub const START_TABLE: &str = "_fbunload_resume";
/// One row per unit whose rows are in, written in the unit's COPY
/// transaction.
pub const UNITS_TABLE: &str = "_fbunload_resume_units";

/// A unit the stopped load finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournaledUnit {
    /// The table's Firebird name.
    pub table: String,
    pub first_slot: u64,
    pub end_slot: Option<u64>,
    pub rows: u64,
    /// The transaction that wrote its rows (their `xmin`), as text.
    pub(crate) xid: String,
}

/// What a stopped resumable load left in its staging schema.
#[derive(Debug, Clone)]
pub struct Stopped {
    /// What the facade recorded when the load began.
    pub start: serde_json::Value,
    pub units: Vec<JournaledUnit>,
}

impl Stopped {
    /// The journaled unit of `table` over these slots.
    pub fn unit(&self, table: &str, first: u64, end: Option<u64>) -> Option<&JournaledUnit> {
        self.units
            .iter()
            .find(|u| u.table == table && u.first_slot == first && u.end_slot == end)
    }
}

fn refuse(target: &Target, schema: &str, staging: &str, why: impl std::fmt::Display) -> ExecError {
    ExecError::Usage(format!(
        "--resume into schema {schema} of {}: staging schema {staging} {why}; it is neither \
         dropped nor used: remove what is not fbunload's, or start again without --resume \
         and with --overwrite",
        target.shown()
    ))
}

/// The SQL that makes the journal's tables in `staging`.
pub(crate) fn create_sql(staging: &str) -> String {
    format!(
        "CREATE TABLE {s}.{start} (start jsonb NOT NULL); \
         CREATE TABLE {s}.{units} (tbl text NOT NULL, seq bigint NOT NULL, first_slot bigint \
         NOT NULL, end_slot bigint, rows bigint NOT NULL);",
        s = ident(staging),
        start = ident(START_TABLE),
        units = ident(UNITS_TABLE)
    )
}

/// The journal row a unit's COPY transaction adds.
pub(crate) fn unit_sql(staging: &str) -> String {
    format!(
        "INSERT INTO {}.{} VALUES ($1, $2, $3, $4, $5)",
        ident(staging),
        ident(UNITS_TABLE)
    )
}

/// Whether `staging` holds a stopped resumable load's journal.
pub(crate) fn left_in(client: &mut Client, staging: &str) -> Result<bool, ExecError> {
    client
        .query_one(
            "SELECT pg_catalog.to_regclass($1) IS NOT NULL",
            &[&format!("{}.{}", ident(staging), ident(START_TABLE))],
        )
        .map_err(|e| pg_error("looking for a stopped load", e))
        .map(|r| r.get(0))
}

/// Reads and checks what a stopped load left in `staging` (module docs).
pub(crate) fn read_stopped(
    client: &mut Client,
    target: &Target,
    schema: &str,
    staging: &str,
) -> Result<Stopped, ExecError> {
    let fail = |e| pg_error("reading the stopped load's staging schema", e);
    let owner: Option<bool> = client
        .query_opt(
            "SELECT n.nspowner = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = \
             current_user) FROM pg_catalog.pg_namespace n WHERE n.nspname = $1",
            &[&staging],
        )
        .map_err(fail)?
        .map(|r| r.get(0));
    match owner {
        None => {
            return Err(ExecError::Usage(format!(
                "--resume: {} holds no stopped --resumable load into schema {schema} (no \
                 staging schema {staging}); run without --resume",
                target.shown()
            )))
        }
        Some(false) => return Err(refuse(target, schema, staging, "belongs to another role")),
        Some(true) => {}
    }
    // Every object there, with whether it may be one of a stopped load's.
    let objects = client
        .query(
            "WITH ns AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1), \
             me AS (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) \
             SELECT 'table', c.relname::text, c.relkind = 'r' AND c.relowner = me.oid \
               FROM pg_catalog.pg_class c, ns, me WHERE c.relnamespace = ns.oid \
             UNION ALL SELECT 'function', p.proname::text, false FROM pg_catalog.pg_proc p, ns \
               WHERE p.pronamespace = ns.oid \
             UNION ALL SELECT 'type', t.typname::text, false FROM pg_catalog.pg_type t, ns \
               WHERE t.typnamespace = ns.oid AND t.typrelid = 0 AND NOT EXISTS (SELECT 1 \
               FROM pg_catalog.pg_type e WHERE e.oid = t.typelem AND e.typrelid <> 0) \
             UNION ALL SELECT 'collation', o.collname::text, false \
               FROM pg_catalog.pg_collation o, ns WHERE o.collnamespace = ns.oid \
             UNION ALL SELECT 'trigger', g.tgname::text || ' on ' || c.relname::text, false \
               FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid, ns \
               WHERE c.relnamespace = ns.oid AND NOT g.tgisinternal \
             UNION ALL SELECT 'rule', r.rulename::text || ' on ' || c.relname::text, false \
               FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class c ON c.oid = r.ev_class, \
               ns WHERE c.relnamespace = ns.oid AND r.rulename <> '_RETURN' \
             UNION ALL SELECT 'policy', p.polname::text || ' on ' || c.relname::text, false \
               FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class c ON c.oid = p.polrelid, \
               ns WHERE c.relnamespace = ns.oid",
            &[&staging],
        )
        .map_err(fail)?;
    let ours = |name: &str| {
        objects
            .iter()
            .any(|r| r.get::<_, &str>(0) == "table" && r.get::<_, &str>(1) == name && r.get(2))
    };
    if !ours(START_TABLE) || !ours(UNITS_TABLE) {
        return Err(refuse(
            target,
            schema,
            staging,
            format!("has no journal of a stopped --resumable load ({START_TABLE})"),
        ));
    }
    let starts = client
        .query(
            &format!(
                "SELECT start::text FROM {}.{}",
                ident(staging),
                ident(START_TABLE)
            ),
            &[],
        )
        .map_err(fail)?;
    let start: Option<serde_json::Value> = match starts.as_slice() {
        [one] => serde_json::from_str(one.get(0)).ok(),
        _ => None,
    };
    let Some(start) = start else {
        return Err(refuse(
            target,
            schema,
            staging,
            format!("has a {START_TABLE} no run writes"),
        ));
    };
    let tables: Vec<String> = start
        .get("pg_tables")
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default();
    for row in &objects {
        let (kind, name, may): (&str, &str, bool) = (row.get(0), row.get(1), row.get(2));
        let known = kind == "table"
            && may
            && (name == START_TABLE || name == UNITS_TABLE || tables.iter().any(|t| t == name));
        if !known {
            return Err(refuse(
                target,
                schema,
                staging,
                format!(
                    "holds {kind} {}, which the stopped load's first phase does not make \
                     (another's object, or a load killed while its keys were built)",
                    ident(name)
                ),
            ));
        }
    }
    let rows = client
        .query(
            &format!(
                "SELECT tbl, seq, first_slot, end_slot, rows, xmin::text FROM {}.{}",
                ident(staging),
                ident(UNITS_TABLE)
            ),
            &[],
        )
        .map_err(fail)?;
    let mut units = Vec::new();
    for row in rows {
        let (table, _seq, first, end, count, xid): (String, i64, i64, Option<i64>, i64, String) = (
            row.get(0),
            row.get(1),
            row.get(2),
            row.get(3),
            row.get(4),
            row.get(5),
        );
        if first < 0 || end.is_some_and(|e| e < first) || count < 0 {
            return Err(refuse(
                target,
                schema,
                staging,
                format!("has a {UNITS_TABLE} row no run writes (table {table})"),
            ));
        }
        units.push(JournaledUnit {
            table,
            first_slot: first as u64,
            end_slot: end.map(|e| e as u64),
            rows: count as u64,
            xid,
        });
    }
    let names: HashMap<String, String> = start
        .get("table_names")
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default();
    // Every row of a table is a journaled unit's, as many as journaled.
    let mut by_table: HashMap<&str, HashMap<&str, u64>> = HashMap::new();
    for unit in &units {
        *by_table
            .entry(unit.table.as_str())
            .or_default()
            .entry(unit.xid.as_str())
            .or_default() += unit.rows;
    }
    for (firebird, pg) in &names {
        if !tables.contains(pg) || !ours(pg) {
            continue;
        }
        let found = client
            .query(
                &format!(
                    "SELECT xmin::text, pg_catalog.count(*) FROM {}.{} GROUP BY 1",
                    ident(staging),
                    ident(pg)
                ),
                &[],
            )
            .map_err(fail)?;
        let mut journaled = by_table.remove(firebird.as_str()).unwrap_or_default();
        for row in &found {
            let (xid, n): (&str, i64) = (row.get(0), row.get(1));
            if journaled.remove(xid) != Some(n as u64) {
                return Err(refuse(
                    target,
                    schema,
                    staging,
                    format!(
                        "table {}: {n} rows of transaction {xid} are no journaled unit's (rows \
                         written or changed by another session)",
                        ident(pg)
                    ),
                ));
            }
        }
        // A unit whose rows are all gone (deleted by another session).
        if let Some((xid, n)) = journaled.iter().find(|(_, n)| **n > 0) {
            return Err(refuse(
                target,
                schema,
                staging,
                format!(
                    "table {}: the {n} rows of the unit of transaction {xid} are gone (deleted \
                     by another session)",
                    ident(pg)
                ),
            ));
        }
    }
    if let Some(table) = by_table.keys().next() {
        return Err(refuse(
            target,
            schema,
            staging,
            format!("journals units of {table}, which the stopped load did not make"),
        ));
    }
    Ok(Stopped { start, units })
}

/// Removes, in one transaction per table, the rows and journal rows of
/// the stopped load's units that this run did not keep (read again, or
/// no longer units of the table).
pub(crate) fn forget(
    client: &mut Client,
    staging: &str,
    pg_names: &HashMap<String, String>,
    units: &[&JournaledUnit],
) -> Result<(), ExecError> {
    let mut by_table: HashMap<&str, Vec<String>> = HashMap::new();
    for unit in units {
        by_table
            .entry(unit.table.as_str())
            .or_default()
            .push(unit.xid.clone());
    }
    let fail = |e| pg_error("removing the rows of units read again", e);
    for (table, xids) in by_table {
        let mut tx = client.transaction().map_err(fail)?;
        if let Some(pg) = pg_names.get(table) {
            tx.execute(
                &format!(
                    "DELETE FROM {}.{} WHERE xmin::text = ANY($1)",
                    ident(staging),
                    ident(pg)
                ),
                &[&xids],
            )
            .map_err(fail)?;
        }
        tx.execute(
            &format!(
                "DELETE FROM {}.{} WHERE xmin::text = ANY($1)",
                ident(staging),
                ident(UNITS_TABLE)
            ),
            &[&xids],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
    }
    Ok(())
}

/// Writes the journal's tables and the start row, with the staging
/// tables' SQL, in one transaction.
pub(crate) fn create_with(
    client: &mut Client,
    tables_sql: &str,
    staging: &str,
    start: &serde_json::Value,
) -> Result<(), ExecError> {
    let fail = |e| pg_error("creating the staging tables", e);
    let mut tx = client.transaction().map_err(fail)?;
    tx.batch_execute(&format!("{tables_sql}{}", create_sql(staging)))
        .map_err(fail)?;
    tx.execute(
        &format!(
            "INSERT INTO {}.{} VALUES ($1::text::jsonb)",
            ident(staging),
            ident(START_TABLE)
        ),
        &[&start.to_string()],
    )
    .map_err(fail)?;
    tx.commit().map_err(fail)
}

/// The columns of `table` in `staging` as (name, type), in order.
pub(crate) fn columns_of(
    client: &mut impl GenericClient,
    staging: &str,
    table: &str,
) -> Result<Vec<(String, String)>, ExecError> {
    Ok(client
        .query(
            "SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod) \
             FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 \
             AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            &[&staging, &table],
        )
        .map_err(|e| pg_error("reading the stopped load's tables", e))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}
