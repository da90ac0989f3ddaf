//! What a run may change in the target, asked of PostgreSQL's catalog
//! before anything is changed, and how it stops or waits:
//!
//! - what a schema holds, and which of it fbunload made (the tables,
//!   sequences and other objects the schema's latest `_fbunload_runs` row
//!   names (`made`: all its load's staging schema held), their indices and
//!   owned sequences, fbunload's own tables): a schema that
//!   holds anything is replaced only with `--overwrite`, and then never
//!   with objects fbunload did not make, nor under objects elsewhere that
//!   depend on it, unless `--pg-drop-others` says so;
//! - the sessions that hold locks on the target's tables, named while the
//!   publish waits for them;
//! - a watch that cancels the statement in progress when the run is
//!   stopped (a signal), so no phase runs on to its end after Ctrl-C.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::{CancelToken, GenericClient, NoTls};

use crate::{ident, sync::STATE_TABLE, REPORT_TABLE, RUNS_TABLE};

/// One object of the target schema, as PostgreSQL describes it
/// (`table erp.t`, `function erp.f(integer)`, `extension citext`).
#[derive(Debug, Clone)]
pub(crate) struct Held {
    pub description: String,
    /// Made by fbunload (see the module's docs).
    pub made_by_fbunload: bool,
}

/// The tables and sequences fbunload made in `schema`: those its latest
/// `_fbunload_runs` row names, and fbunload's own tables. Empty where no
/// run of fbunload was published there.
fn made_by_fbunload(
    client: &mut impl GenericClient,
    schema: &str,
) -> Result<Vec<String>, postgres::Error> {
    let runs = format!("{}.{}", ident(schema), ident(RUNS_TABLE));
    let exists: bool = client
        .query_one("SELECT pg_catalog.to_regclass($1) IS NOT NULL", &[&runs])?
        .get(0);
    if !exists {
        return Ok(Vec::new());
    }
    let row = client.query_opt(
        &format!("SELECT tables::text, options::text FROM {runs} ORDER BY finished DESC LIMIT 1"),
        &[],
    )?;
    let mut names: Vec<String> = [RUNS_TABLE, REPORT_TABLE, STATE_TABLE]
        .iter()
        .map(|s| s.to_string())
        .collect();
    if let Some(row) = row {
        let parse = |text: String| serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        let tables = parse(row.get(0));
        let options = parse(row.get(1));
        for table in tables.as_array().into_iter().flatten() {
            if let Some(name) = table.get("table").and_then(|n| n.as_str()) {
                names.push(name.to_string());
            }
        }
        // Everything a load made (its staging schema's objects by name).
        names.extend(
            options
                .get("made")
                .and_then(|m| m.as_array())
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(String::from)),
        );
        if let Some(sequences) = options.get("sequences").and_then(|s| s.as_object()) {
            names.extend(
                sequences
                    .values()
                    .filter_map(|n| n.as_str().map(String::from)),
            );
        }
    }
    Ok(names)
}

/// Everything `schema` holds that `DROP SCHEMA` would drop, but an
/// extension's member objects (the extension stands for them) and the
/// parts that come with a table (its row type, constraints).
pub(crate) fn schema_contents(
    client: &mut impl GenericClient,
    schema: &str,
) -> Result<Vec<Held>, postgres::Error> {
    let made = made_by_fbunload(client, schema)?;
    // Each catalog that holds objects by schema; types only where they are
    // not a relation's row type or the array type of a type listed.
    let rows = client.query(
        "WITH ns AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1), \
         made AS (SELECT pg_catalog.unnest($2::text[]) AS name), \
         made_tables AS (SELECT c.oid FROM pg_catalog.pg_class c, ns \
             WHERE c.relnamespace = ns.oid AND c.relkind IN ('r', 'p') \
             AND c.relname::text IN (SELECT name FROM made)), \
         objects AS ( \
           SELECT 'pg_catalog.pg_class'::pg_catalog.regclass AS classid, c.oid, \
             CASE WHEN c.relname::text IN (SELECT name FROM made) THEN true \
               WHEN c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_catalog.pg_depend d \
                 WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid \
                 AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass \
                 AND d.deptype IN ('a', 'i') AND d.refobjid IN (SELECT oid FROM made_tables)) \
                 THEN true \
               WHEN c.relkind IN ('i', 'I') AND EXISTS (SELECT 1 FROM pg_catalog.pg_index i \
                 WHERE i.indexrelid = c.oid AND i.indrelid IN (SELECT oid FROM made_tables)) \
                 THEN true \
               ELSE false END AS made \
           FROM pg_catalog.pg_class c, ns WHERE c.relnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, t.oid, \
             t.typname::text IN (SELECT name FROM made) \
             FROM pg_catalog.pg_type t, ns WHERE t.typnamespace = ns.oid AND t.typrelid = 0 \
             AND NOT (t.typcategory = 'A' AND EXISTS (SELECT 1 FROM pg_catalog.pg_type e \
               WHERE e.oid = t.typelem AND e.typnamespace = ns.oid)) \
           UNION ALL SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, o.oid, \
             o.proname::text IN (SELECT name FROM made) \
             FROM pg_catalog.pg_proc o, ns WHERE o.pronamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_extension'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_extension o, ns WHERE o.extnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_collation'::pg_catalog.regclass, o.oid, \
             o.collname::text IN (SELECT name FROM made) \
             FROM pg_catalog.pg_collation o, ns WHERE o.collnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_conversion'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_conversion o, ns WHERE o.connamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_operator'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_operator o, ns WHERE o.oprnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_opfamily'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_opfamily o, ns WHERE o.opfnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_opclass'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_opclass o, ns WHERE o.opcnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_ts_config'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_ts_config o, ns WHERE o.cfgnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_ts_dict'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_ts_dict o, ns WHERE o.dictnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_ts_parser'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_ts_parser o, ns WHERE o.prsnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_ts_template'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_ts_template o, ns WHERE o.tmplnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass, o.oid, false \
             FROM pg_catalog.pg_statistic_ext o, ns WHERE o.stxnamespace = ns.oid) \
         SELECT pg_catalog.pg_describe_object(o.classid, o.oid, 0), o.made FROM objects o \
         WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = o.classid \
             AND d.objid = o.oid AND d.deptype = 'e') \
         ORDER BY 2, 1",
        &[&schema, &made],
    )?;
    Ok(rows
        .iter()
        .map(|r| Held {
            description: r.get(0),
            made_by_fbunload: r.get(1),
        })
        .collect())
}

/// Objects outside `schema` that depend on one in it (a view over a
/// table, a column of its type, a foreign key to it, a default calling
/// its sequence): `DROP SCHEMA ... CASCADE` would drop them too.
pub(crate) fn dependents_outside(
    client: &mut impl GenericClient,
    schema: &str,
) -> Result<Vec<String>, postgres::Error> {
    // The schema an object belongs to: its own, or its table's (rules,
    // triggers, policies and defaults have none of their own); NULL for
    // objects that belong to no schema (a cast, a publication's table).
    let rows = client.query(
        "WITH ns AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1), \
         inside AS ( \
           SELECT 'pg_catalog.pg_class'::pg_catalog.regclass AS classid, c.oid \
             FROM pg_catalog.pg_class c, ns WHERE c.relnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, t.oid \
             FROM pg_catalog.pg_type t, ns WHERE t.typnamespace = ns.oid \
           UNION ALL SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, p.oid \
             FROM pg_catalog.pg_proc p, ns WHERE p.pronamespace = ns.oid) \
         SELECT DISTINCT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) \
         FROM pg_catalog.pg_depend d JOIN inside i ON d.refclassid = i.classid \
             AND d.refobjid = i.oid, ns \
         WHERE d.deptype IN ('n', 'a') AND (CASE d.classid \
           WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN (SELECT relnamespace \
             FROM pg_catalog.pg_class WHERE oid = d.objid) \
           WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN (SELECT typnamespace \
             FROM pg_catalog.pg_type WHERE oid = d.objid) \
           WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN (SELECT pronamespace \
             FROM pg_catalog.pg_proc WHERE oid = d.objid) \
           WHEN 'pg_catalog.pg_constraint'::pg_catalog.regclass THEN (SELECT connamespace \
             FROM pg_catalog.pg_constraint WHERE oid = d.objid) \
           WHEN 'pg_catalog.pg_rewrite'::pg_catalog.regclass THEN (SELECT c.relnamespace \
             FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class c ON c.oid = r.ev_class \
             WHERE r.oid = d.objid) \
           WHEN 'pg_catalog.pg_trigger'::pg_catalog.regclass THEN (SELECT c.relnamespace \
             FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid \
             WHERE t.oid = d.objid) \
           WHEN 'pg_catalog.pg_policy'::pg_catalog.regclass THEN (SELECT c.relnamespace \
             FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class c ON c.oid = p.polrelid \
             WHERE p.oid = d.objid) \
           WHEN 'pg_catalog.pg_attrdef'::pg_catalog.regclass THEN (SELECT c.relnamespace \
             FROM pg_catalog.pg_attrdef a JOIN pg_catalog.pg_class c ON c.oid = a.adrelid \
             WHERE a.oid = d.objid) \
           END) IS DISTINCT FROM ns.oid \
         ORDER BY 1",
        &[&schema],
    )?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// `a, b, c (and 7 more)`: at most `shown` of `items`.
pub(crate) fn listed(items: &[String], shown: usize) -> String {
    let mut text = items
        .iter()
        .take(shown)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > shown {
        text += &format!(" (and {} more)", items.len() - shown);
    }
    text
}

/// The other sessions that hold a lock on a relation of `schema`: pid,
/// application, user, state and for how long, one text each.
pub(crate) fn lock_holders(
    client: &mut impl GenericClient,
    schema: &str,
) -> Result<Vec<String>, postgres::Error> {
    let rows = client.query(
        "SELECT DISTINCT a.pid, COALESCE(a.application_name, ''), COALESCE(a.usename::text, ''), \
           COALESCE(a.state, ''), \
           COALESCE(pg_catalog.date_part('epoch', pg_catalog.now() - a.state_change), 0)::bigint \
         FROM pg_catalog.pg_locks l \
         JOIN pg_catalog.pg_class c ON c.oid = l.relation \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid \
         WHERE n.nspname = $1 AND l.granted AND l.pid <> pg_catalog.pg_backend_pid() \
           AND l.database = (SELECT oid FROM pg_catalog.pg_database \
                             WHERE datname = pg_catalog.current_database()) \
         ORDER BY 1",
        &[&schema],
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            let pid: i32 = r.get(0);
            let application: String = r.get(1);
            let user: String = r.get(2);
            let state: String = r.get(3);
            let seconds: i64 = r.get(4);
            let application = if application.is_empty() {
                "no application name".to_string()
            } else {
                format!("application {application:?}")
            };
            format!("pid {pid} ({application}, user {user}, {state} for {seconds} s)")
        })
        .collect())
}

/// Whether the statement failed because `lock_timeout` passed.
pub(crate) fn lock_timed_out(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE)
}

/// Runs a clean-up statement on a connection whose statement a stop just
/// cancelled. PostgreSQL delivers one cancel request as two SIGINTs (to
/// the backend and to its process group): the second can land on the
/// next statement, this one, which is then cancelled too. A statement
/// cancelled so is run again; a third try never meets that cancel.
pub(crate) fn execute_after_cancel(
    client: &mut impl GenericClient,
    sql: &str,
) -> Result<(), postgres::Error> {
    let mut tries = 1;
    loop {
        match client.batch_execute(sql) {
            Err(e) if e.code() == Some(&SqlState::QUERY_CANCELED) && tries < 3 => tries += 1,
            result => return result,
        }
    }
}

/// Cancels the statement the control connection runs when the run is
/// stopped, while `busy` (a phase of the destination's own) is set:
/// between phases the destination looks at the flag itself, and a
/// cancel then would hit its clean-up instead.
pub(crate) struct CancelWatch {
    pub busy: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
}

impl CancelWatch {
    pub fn start(cancel: Arc<AtomicBool>, token: CancelToken) -> CancelWatch {
        let busy = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (busy_in, done_in) = (busy.clone(), done.clone());
        std::thread::spawn(move || {
            while !done_in.load(Ordering::SeqCst) {
                if cancel.load(Ordering::SeqCst) && busy_in.load(Ordering::SeqCst) {
                    let _ = token.cancel_query(NoTls);
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        CancelWatch { busy, done }
    }
}

impl Drop for CancelWatch {
    fn drop(&mut self) {
        self.busy.store(false, Ordering::SeqCst);
        self.done.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The private cluster of scripts/pg-cluster.sh, which the test
    /// script starts.
    fn cluster() -> Option<postgres::Client> {
        let Ok(uri) = std::env::var("FBUNLOAD_TEST_PG_URI") else {
            eprintln!("SKIPPED: FBUNLOAD_TEST_PG_URI is not set (scripts/pg-cluster.sh)");
            return None;
        };
        Some(postgres::Client::connect(&uri, NoTls).unwrap())
    }

    /// A statement its own try cancels counts the tries in a sequence
    /// (which no rollback undoes); `cancelled_tries` of them are cancelled,
    /// as a cancel request's second signal cancels the statement after
    /// the one it was meant for.
    fn counting(cancelled_tries: i64) -> String {
        format!(
            "DO $$ BEGIN IF nextval('tries') <= {cancelled_tries} THEN \
             PERFORM pg_cancel_backend(pg_backend_pid()); PERFORM pg_sleep(5); END IF; END $$"
        )
    }

    #[test]
    fn a_clean_up_that_a_stray_cancel_hits_is_run_again() {
        let Some(mut client) = cluster() else { return };
        client
            .batch_execute("CREATE TEMPORARY SEQUENCE tries")
            .unwrap();
        execute_after_cancel(&mut client, &counting(1)).unwrap();
        let tries: i64 = client
            .query_one("SELECT last_value FROM tries", &[])
            .unwrap()
            .get(0);
        assert_eq!(tries, 2);
    }

    #[test]
    fn a_clean_up_cancelled_each_time_fails_after_three_tries() {
        let Some(mut client) = cluster() else { return };
        client
            .batch_execute("CREATE TEMPORARY SEQUENCE tries")
            .unwrap();
        let error = execute_after_cancel(&mut client, &counting(i64::MAX)).unwrap_err();
        assert_eq!(error.code(), Some(&SqlState::QUERY_CANCELED));
        let tries: i64 = client
            .query_one("SELECT last_value FROM tries", &[])
            .unwrap()
            .get(0);
        assert_eq!(tries, 3);
    }
}
