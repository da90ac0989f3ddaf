//! The cut-over (`--pg-end-sync`): the application moves to PostgreSQL
//! for good, so the schema stops being a copy fbunload keeps in sync.
//! fbunload's own tables go (`_fbunload_state`, `_fbunload_runs`,
//! `_fbunload_untranslated`), and with them the state a sync would start
//! from: a later fbunload run into the schema is then refused as into
//! any schema that holds tables, never applied over the application's
//! writes. One transaction, under the same advisory lock a load takes,
//! so it never meets a sync half done. Nothing of the application's is
//! held back by a load today; what a later load holds back (translated
//! triggers disabled while a sync applies changes) is enabled here.

use crate::sync::STATE_TABLE;
use crate::{ident, own_name, pg_error, Target, REPORT_TABLE, RUNS_TABLE};
use fbunload_exec::ExecError;

/// What ending the sync removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedSync {
    /// The runs `_fbunload_runs` recorded (the load and its syncs).
    pub runs: i64,
    /// The objects `_fbunload_untranslated` still listed: work left to do
    /// by hand, now that the list is gone.
    pub untranslated: i64,
}

/// Ends keeping `schema` of `target` in sync (see the module's docs).
pub fn end_sync(target: &Target, schema: &str) -> Result<EndedSync, ExecError> {
    let mut client = target.connect().map_err(ExecError::Server)?;
    let locked: bool = client
        .query_one(
            "SELECT pg_try_advisory_lock(hashtext('fbunload ' || $1))",
            &[&schema],
        )
        .map_err(|e| pg_error("taking the target's lock", e))?
        .get(0);
    if !locked {
        return Err(ExecError::Usage(format!(
            "--pg-end-sync: another fbunload run is loading schema {schema} of {}; wait for it \
             to end",
            target.shown()
        )));
    }
    let table = |name: &str| format!("{}.{}", ident(schema), ident(name));
    let (runs_table, state_table, report_table) =
        (table(RUNS_TABLE), table(STATE_TABLE), table(REPORT_TABLE));
    let mut tx = client
        .transaction()
        .map_err(|e| pg_error("ending the sync", e))?;
    let present: bool = tx
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&runs_table])
        .map_err(|e| pg_error("ending the sync", e))?
        .get(0);
    if !present {
        return Err(ExecError::Usage(format!(
            "--pg-end-sync: schema {schema} of {} holds no fbunload run ({RUNS_TABLE}): nothing \
             to end (--pg-schema names another schema)",
            target.shown()
        )));
    }
    let runs: i64 = tx
        .query_one(&format!("SELECT count(*) FROM {runs_table}"), &[])
        .map_err(|e| pg_error("ending the sync", e))?
        .get(0);
    let has_report: bool = tx
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&report_table])
        .map_err(|e| pg_error("ending the sync", e))?
        .get(0);
    let untranslated: i64 = if has_report {
        tx.query_one(&format!("SELECT count(*) FROM {report_table}"), &[])
            .map_err(|e| pg_error("ending the sync", e))?
            .get(0)
    } else {
        0
    };
    // A staging schema a killed run left goes too: nothing will use it.
    let staging = ident(&own_name("_fbunload_staging_", schema));
    tx.batch_execute(&format!(
        "DROP TABLE IF EXISTS {state_table}; DROP TABLE IF EXISTS {report_table}; \
         DROP TABLE {runs_table}; DROP SCHEMA IF EXISTS {staging} CASCADE"
    ))
    .map_err(|e| pg_error("ending the sync", e))?;
    tx.commit().map_err(|e| pg_error("ending the sync", e))?;
    Ok(EndedSync { runs, untranslated })
}
