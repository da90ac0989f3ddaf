//! `--resumable` and `--resume` into PostgreSQL: a load killed (`kill -9`)
//! half way keeps the units it committed in its staging schema; resumed,
//! the published schema holds one snapshot, the resume's, whatever the
//! writers did meanwhile; what the kill left is read as a stranger's.

#![cfg(unix)]

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;

const ACCOUNTS: i64 = 60_000;
/// The writers' accounts, in the table's first units ([`bank::write_until`]).
const BUSY: i64 = ACCOUNTS / 10;
/// The staging schema of a load into `public`, if there is one.
fn staging(client: &mut postgres::Client) -> Option<String> {
    client
        .query_opt(
            "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE '\\_fbunload\\_staging\\_%'",
            &[],
        )
        .unwrap()
        .map(|r| r.get(0))
}

/// (units journaled, units planned) of a resumable load in progress.
fn progress(client: &mut postgres::Client) -> Option<(i64, i64)> {
    let staging = staging(client)?;
    let sql = format!(
        "SELECT (SELECT count(*) FROM \"{staging}\"._fbunload_resume_units), \
         (SELECT (start->>'units')::bigint FROM \"{staging}\"._fbunload_resume)"
    );
    client
        .query_opt(&sql, &[])
        .ok()?
        .map(|r| (r.get(0), r.get(1)))
}

/// Starts a `--resumable` load into `uri` and kills it (SIGKILL) once
/// `share` of its units are journaled.
fn kill_at(db: &Path, uri: &str, args: &[&str], share: f64) {
    let mut client = pg(uri);
    let command = fbunload_command(db, &[&["--resumable", "-o", uri], args].concat());
    kill_once_journaled(command, share, || {
        progress(&mut client).map(|(done, units)| (done as u64, units as u64))
    });
    let published: bool = client
        .query_one("SELECT to_regclass('public.accounts') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(!published, "the killed load published");
}

fn load(db: &Path, uri: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["-o", uri];
    all.extend_from_slice(args);
    fbunload(db, &all)
}

fn load_ok(db: &Path, uri: &str, args: &[&str]) -> String {
    let out = load(db, uri, args);
    assert!(out.status.success(), "fbunload {args:?}: {}", stderr(&out));
    // --progress json's events go to stderr.
    stderr(&out)
}

/// The `resumed` member of a load's `postgres` event (`--progress json`).
fn resumed_event(events: &str) -> serde_json::Value {
    events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "postgres")
        .map(|e| e["resumed"].clone())
        .unwrap_or_else(|| panic!("no postgres event: {events}"))
}

/// Every row of `schema.table`, as text, in order.
fn rows(client: &mut postgres::Client, schema: &str, table: &str) -> Vec<String> {
    client
        .query(
            &format!("SELECT t::text FROM {schema}.{table} t ORDER BY t::text"),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn assert_equals_fresh(client: &mut postgres::Client) {
    for table in ["accounts", "history", "ledger"] {
        let (resumed, fresh) = (rows(client, "public", table), rows(client, "fresh", table));
        assert!(table == "history" || !fresh.is_empty(), "{table}: empty");
        assert!(
            resumed == fresh,
            "{table}: the resumed load ({} rows) and a fresh one ({} rows) differ",
            resumed.len(),
            fresh.len()
        );
    }
}

/// The test: writers at work, the load killed at about half its
/// units, more writes, a resume refused for another database and other
/// options, then resumed; PostgreSQL equals a fresh load once the writers
/// stopped, and Firebird (`--pg-verify-only`).
#[test]
fn a_killed_load_resumed_is_one_snapshot() {
    let Some(uri) = pg_database("fbu_resume") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = bank::bank(dir.path(), "bank.fdb", ACCOUNTS, true);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for seed in 0..2 {
            let (db, stop) = (&db, &stop);
            scope.spawn(move || bank::write_until(db, stop, seed, BUSY, true));
        }
        let _stop_writers = bank::StopOnDrop(&stop);
        kill_at(&db, &uri, &["--unit-pages", "8", "-j", "2"], 0.5);
        // Changes after the kill, into units it finished too.
        std::thread::sleep(Duration::from_millis(1500));
        stop.store(true, Ordering::SeqCst);
    });
    let mut client = pg(&uri);
    let journaled = progress(&mut client).unwrap().0;

    // Without --resume: refused, the staging schema kept.
    let refused = load(&db, &uri, &["--unit-pages", "8"]);
    refused_in_one_line(&refused, "--resume");
    // Other options, another database: refused naming them, nothing used.
    let refused = load(&db, &uri, &["--resume", "-x", "LEDGER"]);
    refused_in_one_line(&refused, "--exclude");
    let other = bank::bank(dir.path(), "other.fdb", ACCOUNTS, true);
    let refused = load(&other, &uri, &["--resume"]);
    refused_in_one_line(&refused, "another database");
    assert_eq!(progress(&mut client).unwrap().0, journaled);

    let events = load_ok(&db, &uri, &["--resume", "-j", "3", "--progress", "json"]);
    let resumed = resumed_event(&events);
    assert!(resumed["units_kept"].as_u64().unwrap() > 0, "{resumed}");
    assert!(
        resumed["units_read_again"].as_u64().unwrap() > 0,
        "{resumed}"
    );
    assert!(staging(&mut client).is_none(), "the staging schema stays");
    // Both snapshots recorded with the run.
    let recorded: serde_json::Value = serde_json::from_str(
        &client
            .query_one(
                "SELECT (options->'resumed')::text FROM public._fbunload_runs",
                &[],
            )
            .unwrap()
            .get::<_, String>(0),
    )
    .unwrap();
    assert_eq!(recorded["units_kept"], resumed["units_kept"], "{recorded}");
    assert!(
        recorded["first_snapshot_number"].as_u64().is_some(),
        "{recorded}"
    );
    assert!(recorded["snapshot_number"].as_u64().is_some(), "{recorded}");

    load_ok(&db, &uri, &["--pg-schema", "fresh"]);
    assert_equals_fresh(&mut client);
    let sum: i64 = client
        .query_one("SELECT sum(balance)::bigint FROM public.accounts", &[])
        .unwrap()
        .get(0);
    assert_eq!(sum, ACCOUNTS * bank::OPENING);
    let out = load(&db, &uri, &["--pg-verify-only"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// What a killed load left is read as a stranger's: a table someone
/// made in the staging schema, a row someone added to a staging table,
/// or a unit's rows someone deleted, refuses the resume, and nothing is
/// dropped; once they are gone the resume keeps every journaled unit
/// (nothing changed in Firebird).
#[test]
fn what_a_killed_load_left_is_read_as_a_strangers() {
    let Some(uri) = pg_database("fbu_resume_stranger") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = bank::bank(dir.path(), "bank.fdb", ACCOUNTS, true);
    kill_at(&db, &uri, &["--unit-pages", "8", "-j", "2"], 0.5);
    let mut client = pg(&uri);
    let staging = staging(&mut client).unwrap();
    let journaled = progress(&mut client).unwrap().0;

    client
        .batch_execute(&format!("CREATE TABLE \"{staging}\".evil (x int)"))
        .unwrap();
    let refused = load(&db, &uri, &["--resume"]);
    refused_in_one_line(&refused, "\"evil\"");
    let kept: bool = client
        .query_one(
            &format!("SELECT to_regclass('\"{staging}\".evil') IS NOT NULL"),
            &[],
        )
        .unwrap()
        .get(0);
    assert!(kept, "the stranger's table was dropped");
    client
        .batch_execute(&format!("DROP TABLE \"{staging}\".evil"))
        .unwrap();

    client
        .batch_execute(&format!(
            "INSERT INTO \"{staging}\".accounts VALUES (-1, 1000000, 'planted')"
        ))
        .unwrap();
    let refused = load(&db, &uri, &["--resume"]);
    refused_in_one_line(&refused, "no journaled unit's");
    client
        .batch_execute(&format!("DELETE FROM \"{staging}\".accounts WHERE id = -1"))
        .unwrap();

    // A unit's rows all deleted by someone: refused; with its journal
    // row gone too, the unit is one the load did not finish.
    let unit = format!(
        "(SELECT xmin::text FROM \"{staging}\"._fbunload_resume_units WHERE tbl = 'ACCOUNTS' \
         AND rows > 0 LIMIT 1)"
    );
    client
        .batch_execute(&format!(
            "DELETE FROM \"{staging}\".accounts WHERE xmin::text = {unit}"
        ))
        .unwrap();
    let refused = load(&db, &uri, &["--resume"]);
    refused_in_one_line(&refused, "are gone");
    client
        .batch_execute(&format!(
            "DELETE FROM \"{staging}\"._fbunload_resume_units WHERE xmin::text = {unit}"
        ))
        .unwrap();

    let events = load_ok(&db, &uri, &["--resume", "--progress", "json"]);
    let resumed = resumed_event(&events);
    assert_eq!(
        resumed["units_kept"].as_i64().unwrap(),
        journaled - 1,
        "{resumed}"
    );
    assert_eq!(resumed["units_read_again"], 0, "{resumed}");
    load_ok(&db, &uri, &["--pg-schema", "fresh"]);
    assert_equals_fresh(&mut client);
}
