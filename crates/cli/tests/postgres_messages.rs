//! What a PostgreSQL load says: `--progress json` stays JSON, the
//! summary counts the bytes sent, a reserved schema name is refused
//! before anything is read, a held lock names the session that holds it,
//! a missing password says where libpq looks. Against the private cluster
//! of scripts/pg-cluster.sh; skipped, saying so, without
//! `FBUNLOAD_TEST_PG_URI`.

mod common;

use common::*;

/// A database whose one table holds a few kilobytes.
fn some_rows(dir: &std::path::Path) -> std::path::PathBuf {
    let db = create_db(dir, "rows.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE ITEMS (ID INTEGER NOT NULL PRIMARY KEY, NAME VARCHAR(40))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 2000) DO BEGIN \
             INSERT INTO ITEMS VALUES (:I, 'item number ' || :I); I = I + 1; END END",
        ],
    );
    db
}

#[test]
fn json_progress_stays_json_and_counts_the_bytes_sent() {
    let Some(uri) = pg_database("messages_json") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = some_rows(dir.path());
    let out = fbunload(&db, &["-o", &uri, "--progress", "json"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let events: Vec<serde_json::Value> = err
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}\n{err}")))
        .collect();
    let postgres = events
        .iter()
        .find(|e| e["event"] == "postgres")
        .unwrap_or_else(|| panic!("no postgres event: {err}"));
    assert_eq!(postgres["schema"], "public", "{err}");
    assert!(
        !postgres["target"]
            .as_str()
            .unwrap()
            .contains("fbunload-test"),
        "{err}"
    );
    let summary = events.last().unwrap();
    assert_eq!(summary["event"], "summary", "{err}");
    // 2,000 rows of an int and ~16 characters: over 40 kB of COPY data.
    let bytes = summary["bytes"].as_u64().unwrap();
    assert!(bytes > 40_000, "{bytes}: {err}");

    // The text summary says the same, not 0.0 MB.
    let uri2 = pg_database("messages_text").unwrap();
    let out = fbunload(&db, &["-o", &uri2]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let totals = err.lines().find(|l| l.contains(" MB in ")).unwrap();
    assert!(!totals.contains(" 0.0 MB in "), "{err}");
    assert!(!totals.contains(" 0.0 MB/s"), "{err}");
}

#[test]
fn a_reserved_schema_name_is_refused_before_anything_is_read() {
    let Some(uri) = pg_database("messages_reserved") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = some_rows(dir.path());
    let out = fbunload(&db, &["-o", &uri, "--pg-schema", "pg_mine"]);
    assert_refused_in_one_line(
        &out,
        "--pg-schema pg_mine: names starting with pg_ are reserved",
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_held_lock_names_the_session_that_holds_it() {
    let Some(uri) = pg_database("messages_lock") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    // A session that holds the target's lock and idles, as the session of
    // a run whose machine died does until PostgreSQL notices.
    let mut orphan =
        postgres::Client::connect(&format!("{uri}?application_name=fbunload"), postgres::NoTls)
            .unwrap();
    let pid: i32 = orphan
        .query_one(
            "SELECT pg_advisory_lock(hashtext('fbunload ' || 'held')), pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(1);
    let out = fbunload(&db, &["-o", &uri, "--pg-schema", "held"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("the session with pid {pid} (fbunload")),
        "{err}"
    );
    assert!(
        err.contains(&format!("SELECT pg_terminate_backend({pid})")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    drop(orphan);
}

#[test]
fn a_missing_password_says_where_libpq_looks() {
    let Some(uri) = pg_database("messages_password") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    // The URI without its password, and none in the environment.
    let (scheme_user, rest) = uri.split_once('@').unwrap();
    let user = scheme_user.split(':').take(2).collect::<Vec<_>>().join(":");
    let bare = format!("{user}@{rest}");
    let out = fbunload_command(&db, &["-o", &bare])
        .env_remove("PGPASSWORD")
        .env("PGPASSFILE", dir.path().join("no-such-pgpass"))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("PGPASSWORD") && err.contains("~/.pgpass"),
        "{err}"
    );
}

#[test]
fn short_help_names_the_postgresql_output() {
    let out = fbunload_alone(&["-h"]);
    let text = String::from_utf8_lossy(&out.stdout);
    // The option's text, wrapped over its lines up to the next option.
    let from = text.find("-o, --output").unwrap();
    let until = text[from..].find("-f, --format").unwrap();
    assert!(text[from..from + until].contains("postgresql://"), "{text}");
}
