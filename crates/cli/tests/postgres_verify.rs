//! `--verify` into PostgreSQL compares content, not only counts: values
//! changed by hand in the target after the publish (NULL for '', a
//! trailing space, -0 for 0, a numeric's scale, a row gone) are found and
//! named by table, key range and column, by `--pg-verify-only` and by a
//! sync's `--verify`. Against the private PostgreSQL cluster
//! (scripts/pg-cluster.sh) and the embedded Firebird engine; skipped,
//! saying so, without `FBUNLOAD_TEST_PG_URI`.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn run(db: &Path, uri: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["-o", uri];
    all.extend_from_slice(args);
    fbunload(db, &all)
}

fn assert_ok(out: &std::process::Output) {
    assert!(out.status.success(), "{}", stderr(out));
}

/// Fails, in one line, naming each of `expected`.
fn assert_found(out: &std::process::Output, expected: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--verify found differences"), "{err}");
    for e in expected {
        assert!(err.contains(e), "expected {e:?}: {err}");
    }
}

/// T: 2500 keyed rows of the edge values a hand change can hide in
/// (every 500th V is '', F 0, D 1.50 with its trailing zero); N: rows
/// without a primary key.
fn edge_db(dir: &Path) -> PathBuf {
    let db = create_db(dir, "verify.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(10), C CHAR(5), \
             F DOUBLE PRECISION, D DECFLOAT(34), I INT128, B BLOB SUB_TYPE TEXT, \
             Z TIMESTAMP WITH TIME ZONE)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 2500) DO BEGIN \
             INSERT INTO T VALUES (:I, IIF(MOD(:I, 500) = 0, '', 'v' || :I), 'ab', \
             IIF(MOD(:I, 500) = 0, 0e0, :I / 7e0), IIF(MOD(:I, 500) = 0, 1.50, :I * 1.25), \
             170141183460469231731687303715884105727 - :I, 'blob ' || :I, \
             TIMESTAMP '2024-03-31 01:30:00 Europe/Berlin'); I = I + 1; END END",
            "CREATE TABLE N (A INTEGER, S VARCHAR(5))",
            "INSERT INTO N VALUES (1, 'x')",
            "INSERT INTO N VALUES (1, 'x')",
            "INSERT INTO N VALUES (2, NULL)",
        ],
    );
    db
}

#[test]
fn hand_changes_after_the_publish_are_found_by_range_and_column() {
    let Some(uri) = pg_database("fbu_verify") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = edge_db(dir.path());
    // The load's own check passes, and so does one later.
    assert_ok(&run(&db, &uri, &["--verify"]));
    assert_ok(&run(&db, &uri, &["--pg-verify-only"]));
    let changes: [(&str, &str, &[&str]); 6] = [
        (
            "UPDATE t SET v = NULL WHERE id = 1500",
            "UPDATE t SET v = '' WHERE id = 1500",
            &["table T (public.t), from ID 1001 to ID 2000: column V differs"],
        ),
        (
            "UPDATE t SET v = v || ' ' WHERE id = 7",
            "UPDATE t SET v = 'v7' WHERE id = 7",
            &["from ID 1 to ID 1000: column V differs"],
        ),
        (
            "UPDATE t SET f = '-0' WHERE id = 2000",
            "UPDATE t SET f = 0 WHERE id = 2000",
            &["from ID 1001 to ID 2000: column F differs"],
        ),
        (
            "UPDATE t SET d = 1.5 WHERE id = 2500",
            "UPDATE t SET d = 1.50 WHERE id = 2500",
            &["from ID 2001 to ID 2500: column D differs"],
        ),
        (
            "UPDATE n SET s = 'y' WHERE a = 2",
            "UPDATE n SET s = NULL WHERE a = 2",
            &[
                "table N (public.n) (rows ordered by all their columns)",
                "column S differs",
            ],
        ),
        (
            "DELETE FROM t WHERE id = 1200",
            "INSERT INTO t (id, v, c, f, d, i, b, z) SELECT 1200, 'v1200', 'ab', 1200 / 7e0, \
             1500.00, 170141183460469231731687303715884104527, 'blob 1200', \
             '2024-03-31 00:30:00+00'",
            &["from ID 1001 to ID 2000: 1000 rows in Firebird, 999 in PostgreSQL"],
        ),
    ];
    let mut c = pg(&uri);
    for (change, undo, expected) in changes {
        c.batch_execute(change).unwrap();
        let out = run(&db, &uri, &["--pg-verify-only"]);
        assert_found(&out, expected);
        assert!(stderr(&out).contains("--overwrite"), "{}", stderr(&out));
        c.batch_execute(undo).unwrap();
        assert_ok(&run(&db, &uri, &["--pg-verify-only"]));
    }
    // Two columns of one row, and a range of its own each.
    c.batch_execute(
        "UPDATE t SET b = 'other', i = 0 WHERE id = 3; UPDATE t SET c = 'ba' WHERE id = 2400",
    )
    .unwrap();
    assert_found(
        &run(&db, &uri, &["--pg-verify-only"]),
        &[
            "2 ranges",
            "from ID 1 to ID 1000: columns I, B differ",
            "from ID 2001 to ID 2500: column C differs",
        ],
    );
    refused_in_one_line(
        &run(&db, &uri, &["--pg-verify-only", "--overwrite"]),
        "--pg-verify-only loads nothing: leave out --overwrite",
    );
    // No schema there: refused in one line.
    refused_in_one_line(
        &run(
            &db,
            &uri,
            &["--pg-verify-only", "--pg-schema", "nothing_here"],
        ),
        "has no schema nothing_here",
    );
}

#[test]
fn a_syncs_verify_reads_the_tables_whole_after_the_sync() {
    let Some(uri) = pg_database("fbu_verify_sync") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = edge_db(dir.path());
    assert_ok(&run(&db, &uri, &["--keep-keys", "--verify"]));
    execute(&db, &["UPDATE T SET V = 'new' WHERE ID = 10"]);
    assert_ok(&run(&db, &uri, &["--verify"]));
    // A value changed by hand keeps the rows and keys a sync checks; the
    // sync applies nothing, and its --verify finds the change.
    pg(&uri)
        .batch_execute("UPDATE t SET d = 1.5 WHERE id = 500")
        .unwrap();
    assert_found(
        &run(&db, &uri, &["--verify"]),
        &["table T (public.t), from ID 1 to ID 1000: column D differs"],
    );
}

#[test]
fn no_schema_tables_of_wider_types_are_compared_as_loaded() {
    let Some(uri) = pg_database("fbu_verify_existing") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "wide.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE W (ID INTEGER NOT NULL PRIMARY KEY, N NUMERIC(9,2), S VARCHAR(5))",
            "INSERT INTO W VALUES (1, 1.50, 'a')",
            "INSERT INTO W VALUES (2, NULL, '')",
        ],
    );
    // Types that keep every value, and a column of the table's own.
    pg(&uri)
        .batch_execute(
            "CREATE TABLE w (id bigint PRIMARY KEY, n numeric(12,3), s text, extra int DEFAULT 7)",
        )
        .unwrap();
    assert_ok(&run(&db, &uri, &["--no-schema", "--verify"]));
    pg(&uri)
        .batch_execute("UPDATE w SET n = 2.5 WHERE id = 1")
        .unwrap();
    assert_found(
        &run(&db, &uri, &["--no-schema", "--pg-verify-only"]),
        &[
            "table W (public.w) (rows ordered by all their columns), from (ID, N, S) = (1, ",
            "column N differs",
        ],
    );
}
