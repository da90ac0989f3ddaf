//! End to end: `--query` and `--views` against real databases on the
//! embedded Firebird 5 engine. What a query's file holds is compared with
//! what the engine returns for the same SQL, read here through the client
//! crate.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use fbunload_client::{sql_type, TransactionMode};

/// One test at a time. Run side by side (7 tests), a database one test
/// had just made was reported "in use by another process" in 3 runs of
/// 6; one at a time, in none of 6. Our reading: the engine names its lock
/// files by the database file's inode, which the file system hands out
/// again when another test deletes its database.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// BIG spans several pointer pages (4 KiB pages); CUST is small; V_*
/// are views over them.
fn shop_db(dir: &Path) -> PathBuf {
    let db = create_db(dir, "shop.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE BIG (ID INTEGER NOT NULL, A VARCHAR(40), CUST INTEGER)",
            "CREATE TABLE CUST (ID INTEGER NOT NULL PRIMARY KEY, NAME VARCHAR(20), \
             BALANCE DECFLOAT(34))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN \
               WHILE (I < 60000) DO BEGIN \
                 INSERT INTO BIG VALUES (:I, 'r' || (:I * 7919) || '-' || (:I * 104729), \
                   MOD(:I, 13)); \
                 I = I + 1; END END",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN \
               WHILE (I < 12) DO BEGIN \
                 INSERT INTO CUST VALUES (:I, 'customer ' || :I, :I / 3.0); \
                 I = I + 1; END END",
            "CREATE VIEW V_RICH AS SELECT ID, NAME, BALANCE FROM CUST WHERE ID > 5",
            "CREATE VIEW V_JOINED (BIG_ID, CUSTOMER) AS \
             SELECT b.ID, c.NAME FROM BIG b JOIN CUST c ON c.ID = b.CUST WHERE b.ID < 1000",
        ],
    );
    db
}

/// The rows the engine returns for `sql`, each value as fbunload's CSV
/// writes it (integers, text; NULL as empty).
fn engine_rows(db: &Path, sql: &str) -> Vec<Vec<String>> {
    let att = connect(db);
    let tr = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    let mut stmt = tr.prepare(sql).unwrap();
    let types: Vec<i16> = stmt.columns().iter().map(|c| c.sql_type).collect();
    stmt.execute().unwrap();
    let mut rows = Vec::new();
    while stmt.fetch().unwrap() {
        let row = stmt.row();
        rows.push(
            types
                .iter()
                .enumerate()
                .map(|(i, t)| match (row.value(i), *t) {
                    (None, _) => String::new(),
                    (Some(v), sql_type::LONG) => {
                        i32::from_ne_bytes(v.try_into().unwrap()).to_string()
                    }
                    (Some(v), sql_type::VARYING) => String::from_utf8(v.to_vec()).unwrap(),
                    (_, other) => panic!("the test reads no SQL type {other}"),
                })
                .collect(),
        );
    }
    rows
}

fn sorted(mut rows: Vec<Vec<String>>) -> Vec<Vec<String>> {
    rows.sort();
    rows
}

/// Files in `dir`, leaving out the staging directories of failed runs.
fn written(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with(".fbunload"))
                .collect()
        })
        .unwrap_or_default()
}

const JOIN: &str = "SELECT c.NAME, b.ID, b.A FROM CUST c JOIN BIG b ON b.CUST = c.ID \
                    WHERE b.ID < 5000 ORDER BY c.ID, b.ID";
const SPLIT: &str = "SELECT b.ID, b.A, c.NAME -- a note\nFROM BIG b \
                     LEFT JOIN CUST c ON c.ID = b.CUST WHERE MOD(b.ID, 7) = 3";

#[test]
fn a_query_holds_what_the_engine_returns_and_a_split_one_is_the_same_for_any_parallel() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = shop_db(dir.path());

    let plan = fbunload(
        &db,
        &[
            "--plan",
            "--query",
            JOIN,
            "--name",
            "JOINED",
            "--query",
            SPLIT,
            "--split-by",
            "BIG",
            "--name",
            "SPLIT",
            "--unit-pages",
            "40",
        ],
    );
    assert!(plan.status.success(), "{}", stderr(&plan));
    let text = String::from_utf8_lossy(&plan.stdout).into_owned();
    let split_line = text.lines().find(|l| l.starts_with("SPLIT ")).unwrap();
    assert!(split_line.ends_with("query, split by BIG"), "{text}");
    let units: usize = split_line
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert!(units > 3, "split into several units: {text}");
    assert!(text
        .lines()
        .any(|l| l.starts_with("JOINED ") && l.ends_with("  query")));
    assert!(
        text.contains("SPLIT: SELECT b.ID, b.A, c.NAME -- a note\\nFROM BIG b"),
        "{text}"
    );
    assert!(
        text.contains("0 tables, 2 queries, "),
        "only what was asked: {text}"
    );

    let mut outputs = Vec::new();
    for args in [vec!["-j", "1"], vec!["-j", "3", "--memory", "0"]] {
        let out_dir = dir.path().join(format!("out-{}", outputs.len()));
        let mut full = vec![
            "--query",
            JOIN,
            "--name",
            "JOINED",
            "--query",
            SPLIT,
            "--split-by",
            "big",
            "--name",
            "SPLIT",
            "--unit-pages",
            "40",
            "--verify",
            "-o",
        ];
        full.push(out_dir.to_str().unwrap());
        full.extend(args);
        let out = fbunload(&db, &full);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("0 tables, 2 queries"),
            "{}",
            stderr(&out)
        );
        outputs.push(files(&out_dir));
    }
    assert!(outputs[0] == outputs[1], "-j1 and -j3 differ");
    let names: Vec<&str> = outputs[0].iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["JOINED.csv", "SPLIT.csv"],
        "no schema.sql without tables"
    );

    let out_dir = dir.path().join("out-1");
    let joined = csv_records(&out_dir.join("JOINED.csv"));
    assert_eq!(
        joined,
        engine_rows(&db, JOIN),
        "values and order as the engine's"
    );
    assert!(joined.len() > 4000, "{}", joined.len());
    let split = csv_records(&out_dir.join("SPLIT.csv"));
    assert_eq!(sorted(split.clone()), sorted(engine_rows(&db, SPLIT)));
    let ids: Vec<i64> = split.iter().map(|r| r[0].parse().unwrap()).collect();
    let expected: Vec<i64> = (0..60_000).filter(|i| i % 7 == 3).collect();
    assert_eq!(
        ids, expected,
        "every row once, in the driving table's order"
    );

    let manifest = read_manifest(&out_dir);
    let split = manifest_entry(&manifest, "SPLIT");
    assert_eq!(split["kind"], "query");
    assert_eq!(split["query"], SPLIT);
    assert_eq!(split["split_by"], "BIG");
    assert_eq!(split["verified"], true);
    assert_eq!(split["rows"], expected.len());
    let names: Vec<&str> = split["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ID", "A", "NAME"]);
    assert_eq!(
        manifest_entry(&manifest, "JOINED")["split_by"],
        serde_json::Value::Null
    );
}

#[test]
fn views_are_unloaded_verified_and_listed_with_tables_when_asked() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = shop_db(dir.path());
    let out_dir = dir.path().join("views");
    let out = fbunload(
        &db,
        &[
            "--views",
            "--verify",
            "--header",
            "-j",
            "2",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("0 tables, 2 views"),
        "{}",
        stderr(&out)
    );
    let names: Vec<String> = files(&out_dir).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["V_JOINED.csv", "V_RICH.csv"]);
    let joined = csv_lines(&out_dir.join("V_JOINED.csv"));
    assert_eq!(joined[0], ["BIG_ID", "CUSTOMER"]);
    assert_eq!(
        joined[1..].to_vec(),
        engine_rows(&db, "SELECT BIG_ID, CUSTOMER FROM V_JOINED")
    );
    // DECFLOAT is cast to text by the server, as a table's column is.
    let rich = csv_lines(&out_dir.join("V_RICH.csv"));
    assert_eq!(rich.len(), 7, "{rich:?}");
    assert!(rich[1][2].starts_with("2"), "{rich:?}");
    let manifest = read_manifest(&out_dir);
    let view = manifest_entry(&manifest, "V_RICH");
    assert_eq!(view["kind"], "view");
    assert_eq!(view["verified"], true);
    assert_eq!(view["columns"][2]["firebird_type"], "DECFLOAT(34)");

    // A pattern, with a table: both, and schema.sql for the table only.
    let out_dir = dir.path().join("both");
    // Queries whose DECFLOAT the server casts around them: the order of
    // an ORDER BY is kept, a split one still splits.
    let out = fbunload(
        &db,
        &[
            "--views",
            "V\\_J%",
            "-t",
            "CUST",
            "--query",
            "SELECT ID, BALANCE FROM CUST ORDER BY ID DESC",
            "--name",
            "BY_ID_DESC",
            "--query",
            "SELECT c.BALANCE, b.ID FROM BIG b JOIN CUST c ON c.ID = b.CUST",
            "--split-by",
            "BIG",
            "--name",
            "BALANCES",
            "--unit-pages",
            "40",
            "-j",
            "2",
            "--verify",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let names: Vec<String> = files(&out_dir).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "BALANCES.csv",
            "BY_ID_DESC.csv",
            "CUST.csv",
            "V_JOINED.csv",
            "schema.sql"
        ]
    );
    let desc: Vec<String> = csv_records(&out_dir.join("BY_ID_DESC.csv"))
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    let expected: Vec<String> = (0..12).rev().map(|i: i32| i.to_string()).collect();
    assert_eq!(desc, expected);
    let balances = csv_records(&out_dir.join("BALANCES.csv"));
    assert_eq!(
        balances.len(),
        engine_rows(&db, "SELECT b.ID FROM BIG b JOIN CUST c ON c.ID = b.CUST").len()
    );
    // As the table's own file writes the same DECFLOAT (1 / 3.0 stored).
    let cust = csv_records(&out_dir.join("CUST.csv"));
    assert_eq!(balances[1], [cust[1][2].as_str(), "1"]);
    let schema = std::fs::read_to_string(out_dir.join("schema.sql")).unwrap();
    assert!(!schema.contains("V_JOINED"), "{schema}");
    assert_eq!(
        manifest_entry(&read_manifest(&out_dir), "CUST")["kind"],
        "table"
    );

    let plan = fbunload(&db, &["--plan", "--views", "V_R%"]);
    let text = String::from_utf8_lossy(&plan.stdout).into_owned();
    assert!(
        text.lines()
            .any(|l| l.starts_with("V_RICH ") && l.ends_with("  view")),
        "{text}"
    );
    assert!(text.contains("0 tables, 1 view, 1 unit"), "{text}");
    let out = fbunload(&db, &["--plan", "--views", "NOPE%"]);
    assert!(
        stderr(&out).contains("--views 'NOPE%' matches no view") && stderr(&out).contains("V_RICH"),
        "{}",
        stderr(&out)
    );
}

/// Rows committed while the run reads are not in a query's file: the
/// run's first batch has arrived (the snapshot is taken) before the test
/// changes the driving table, and the rest is read after.
#[test]
fn a_query_reads_the_runs_snapshot() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = shop_db(dir.path());
    let before = engine_rows(&db, SPLIT).len();
    let mut options = fbunload::RunOptions::default();
    options.batch.rows = 64;
    options.plan.unit_pages = Some(10);
    let unload = fbunload::Unload::new(db.to_string_lossy())
        .user("SYSDBA")
        .password("masterkey")
        .options(options)
        .parallel(1)
        .memory_budget(0)
        .split_query("SPLIT", SPLIT, "BIG");
    let mut batches = unload.record_batches().unwrap();
    let first = batches.next().unwrap().unwrap();
    // This process's engine: the run's attachments and the writer's share it.
    execute(
        &db,
        &[
            "INSERT INTO BIG SELECT ID + 100000, A, CUST FROM BIG",
            "UPDATE BIG SET A = 'changed' WHERE ID < 60000",
        ],
    );
    let mut rows = first.batch.num_rows();
    let mut changed = 0;
    for batch in batches.by_ref() {
        let batch = batch.unwrap().batch;
        let a = batch
            .column(1)
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .unwrap();
        changed += a.iter().filter(|v| *v == Some("changed")).count();
        rows += batch.num_rows();
    }
    assert_eq!(rows, before, "rows inserted during the run are not read");
    assert_eq!(
        changed, 0,
        "rows updated during the run are read as they were"
    );
    assert_eq!(batches.finish().unwrap().rows(), before as u64);
    assert!(
        engine_rows(&db, SPLIT).len() > before,
        "the writer did commit"
    );
}

#[test]
fn a_bad_query_names_what_is_wrong_in_one_line_and_writes_nothing() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = shop_db(dir.path());
    let out_dir = dir.path().join("never");
    let ok = "SELECT ID FROM BIG";
    for (args, expected) in [
        (
            vec!["--query", "DELETE FROM BIG", "--name", "Q"],
            "--query Q: only a SELECT can be unloaded, and this begins with DELETE",
        ),
        (
            vec![
                "--query",
                "SELECT 1 FROM BIG; DELETE FROM BIG",
                "--name",
                "Q",
            ],
            "--query Q: a ; ends the statement",
        ),
        (
            vec!["--query", "SELECT ID FROM BIG WHERE A = 'x", "--name", "Q"],
            "a quote is not closed",
        ),
        (
            vec!["--query", ok],
            "--query 'SELECT ID FROM BIG' has no --name",
        ),
        (
            vec!["--query", ok, "--name", "Q", "--query", ok, "--name", "Q"],
            "--name Q is given to two queries",
        ),
        (
            vec!["-t", "BIG", "--query", ok, "--name", "BIG"],
            "--name BIG: a table or view of that name is unloaded too",
        ),
        (
            vec![
                "--query",
                "SELECT c.ID FROM CUST c JOIN BIG b ON 1=1",
                "--name",
                "Q",
                "--split-by",
                "BIG",
            ],
            "--query Q: --split-by BIG: the query's FROM must begin with that table, and it \
             begins with CUST",
        ),
        (
            vec![
                "--query",
                "SELECT CUST, COUNT(*) FROM BIG GROUP BY CUST",
                "--name",
                "Q",
                "--split-by",
                "BIG",
            ],
            "COUNT at the query's top level (outside its subqueries) would apply to each unit apart",
        ),
        (
            vec![
                "--query",
                "SELECT * FROM V_RICH",
                "--name",
                "Q",
                "--split-by",
                "V_RICH",
            ],
            "--split-by V_RICH: a view; only a user table's DB_KEY ranges can split a query",
        ),
        (
            vec![
                "--query",
                "SELECT * FROM MON$ATTACHMENTS",
                "--name",
                "Q",
                "--split-by",
                "MON$ATTACHMENTS",
            ],
            "--split-by MON$ATTACHMENTS: a system table (a virtual one, of monitoring data); \
             only a user table's",
        ),
        (
            vec!["--query", "SELECT NOPE FROM BIG", "--name", "Q"],
            "--query Q: Firebird refuses it:",
        ),
        (
            vec!["--query", "SELECT ID, ID FROM BIG", "--name", "Q"],
            "two columns are named ID",
        ),
        (
            vec![
                "--query",
                "SELECT b.RDB$DB_KEY FROM BIG b",
                "--name",
                "Q",
                "--split-by",
                "BIG",
                "--unit-pages",
                "10",
            ],
            "--query Q: Firebird refuses it:",
        ),
    ] {
        assert_query_refused(&db, &out_dir, &args, expected);
    }
    // Semicolons that end the statement are dropped, split or not.
    let out_dir = dir.path().join("semicolons");
    let out = fbunload(
        &db,
        &[
            "--query",
            "SELECT ID FROM CUST WHERE ID < 3;; ",
            "--name",
            "Q",
            "--query",
            "SELECT b.ID FROM BIG b WHERE b.ID < 10 ;\n; -- end",
            "--name",
            "S",
            "--split-by",
            "BIG",
            "--verify",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(csv_records(&out_dir.join("Q.csv")).len(), 3);
    assert_eq!(csv_records(&out_dir.join("S.csv")).len(), 10);
}

#[test]
fn hostile_query_names_stay_inside_the_output_directory() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = shop_db(dir.path());
    let out_dir = dir.path().join("out");
    let names = ["../escaped", "a/b", ".hidden", "T\x1b[2J\nX", "/abs"];
    let mut args = Vec::new();
    for name in names {
        args.extend(["--query", "SELECT ID FROM CUST", "--name", name]);
    }
    args.extend(["-o", out_dir.to_str().unwrap()]);
    let out = fbunload(&db, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains('\x1b'), "names are shown escaped");
    let mut listed = written(&out_dir);
    listed.sort();
    let mut expected: Vec<String> = names
        .iter()
        .map(|n| fbunload::file_name_for(n, "csv"))
        .chain(["manifest.json".to_string()])
        .collect();
    expected.sort();
    assert_eq!(listed, expected);
    assert!(
        listed
            .iter()
            .all(|n| !n.contains('/') && !n.starts_with('.')),
        "{listed:?}"
    );
    assert!(!dir.path().join("escaped.csv").exists());
    let manifest = read_manifest(&out_dir);
    for name in names {
        assert_eq!(manifest_entry(&manifest, name)["rows"], 12, "{name:?}");
    }
}

/// Refused: status 1, one line saying `expected`, nothing written.
fn assert_query_refused(db: &Path, out_dir: &Path, args: &[&str], expected: &str) {
    let mut full = args.to_vec();
    full.extend(["-o", out_dir.to_str().unwrap()]);
    let out = fbunload(db, &full);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(expected), "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    assert_eq!(
        written(out_dir),
        Vec::<String>::new(),
        "{args:?}: nothing written"
    );
}

/// Aggregates and window functions inside an expression or parentheses
/// were let through, so each unit aggregated or numbered its own rows
/// (one row per unit); a comment ended by a CR hid a RIGHT JOIN, a ROWS
/// or the real FROM from the check (rows repeated per unit).
#[test]
fn a_split_query_that_each_unit_would_answer_apart_is_refused() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = shop_db(dir.path());
    let out_dir = dir.path().join("never");
    for (sql, word) in [
        ("SELECT COALESCE(MAX(ID), 0) FROM BIG", "MAX"),
        ("SELECT CAST(COUNT(*) AS BIGINT) FROM BIG", "COUNT"),
        ("SELECT (COUNT(*)) FROM BIG", "COUNT"),
        ("SELECT REGR_COUNT(ID, CUST) FROM BIG", "REGR_COUNT"),
        (
            "SELECT ID, (ROW_NUMBER() OVER (ORDER BY ID)) FROM BIG",
            "OVER",
        ),
        (
            "SELECT ID, COALESCE(LAG(ID) OVER (ORDER BY ID), -1) FROM BIG",
            "OVER",
        ),
        ("SELECT ID FROM BIG --\rROWS 3", "ROWS"),
        (
            "SELECT b.ID, c.NAME FROM BIG b --\rRIGHT JOIN CUST c ON c.ID = b.CUST",
            "RIGHT",
        ),
    ] {
        assert_query_refused(
            &db,
            &out_dir,
            &[
                "--query",
                sql,
                "--name",
                "Q",
                "--split-by",
                "BIG",
                "--unit-pages",
                "40",
                "--verify",
            ],
            &format!("--query Q: --split-by BIG: {word} at the query's top level"),
        );
    }
    assert_query_refused(
        &db,
        &out_dir,
        &[
            "--query",
            "SELECT c.ID, b.ID FROM --\rCUST c LEFT JOIN\nBIG b ON b.CUST = c.ID",
            "--name",
            "Q",
            "--split-by",
            "BIG",
        ],
        "the query's FROM must begin with that table, and it begins with CUST",
    );

    // An aggregate inside a subquery is the outer query's when its
    // argument is only the outer query's columns: the text does not show
    // it, the engine does (the query returns a row from no driving row).
    for sql in [
        "SELECT (SELECT MAX(b.ID) FROM RDB$DATABASE) M FROM BIG b",
        "SELECT (SELECT COUNT(ID) FROM RDB$DATABASE) N FROM BIG",
    ] {
        assert_query_refused(
            &db,
            &out_dir,
            &[
                "--query",
                sql,
                "--name",
                "Q",
                "--split-by",
                "BIG",
                "--unit-pages",
                "40",
            ],
            "--query Q: --split-by BIG: the query returns a row even from none of the table's rows",
        );
    }

    // What only looks like them is split, and reads what the engine reads.
    let out_dir = dir.path().join("out");
    let sql = "SELECT ID, RIGHT(A, 3) R -- a note\rFROM BIG WHERE CUST IS NOT DISTINCT FROM 3 \
               AND ID < (SELECT MAX(ID) FROM CUST) + 5000";
    let out = fbunload(
        &db,
        &[
            "--query",
            sql,
            "--name",
            "Q",
            "--split-by",
            "BIG",
            "--unit-pages",
            "40",
            "-j",
            "3",
            "--verify",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = csv_records(&out_dir.join("Q.csv"));
    assert_eq!(rows, engine_rows(&db, &format!("{sql}\nORDER BY ID")));
    assert!(rows.len() > 300, "{}", rows.len());
    assert_eq!(manifest_entry(&read_manifest(&out_dir), "Q")["query"], sql);
}

/// GEN_ID and NEXT VALUE FOR change a sequence even in the run's
/// read-only transaction: a query or condition calling them moved it by
/// one a row.
#[test]
fn a_query_or_condition_that_would_change_a_sequence_is_refused() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = shop_db(dir.path());
    execute(&db, &["CREATE SEQUENCE S"]);
    let out_dir = dir.path().join("never");
    for (args, expected) in [
        (
            vec![
                "--query",
                "SELECT ID, GEN_ID(S, 1) G FROM BIG",
                "--name",
                "Q",
            ],
            "--query Q: GEN_ID changes a sequence",
        ),
        (
            vec![
                "--query",
                "SELECT ID, gen_id /* */ (S,\r2) G FROM BIG",
                "--name",
                "Q",
                "--split-by",
                "BIG",
            ],
            "--query Q: GEN_ID changes a sequence",
        ),
        (
            vec![
                "--query",
                "SELECT NEXT VALUE FOR S FROM RDB$DATABASE",
                "--name",
                "Q",
            ],
            "--query Q: NEXT VALUE FOR changes a sequence",
        ),
        (
            vec!["-t", "BIG", "--where", "ID < NEXT VALUE FOR S"],
            "NEXT VALUE FOR changes a sequence",
        ),
        (
            vec!["-t", "BIG", "--where", "ID > GEN_ID(S, 1)"],
            "GEN_ID changes a sequence",
        ),
    ] {
        assert_query_refused(&db, &out_dir, &args, expected);
    }
    let sequence = "SELECT CAST(GEN_ID(S, 0) AS INTEGER) FROM RDB$DATABASE";
    assert_eq!(
        engine_rows(&db, sequence),
        [["0"]],
        "the sequence is unchanged"
    );
    // Reading it is fine.
    let out_dir = dir.path().join("out");
    let out = fbunload(
        &db,
        &[
            "--query",
            sequence,
            "--name",
            "Q",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(csv_records(&out_dir.join("Q.csv")), [["0"]]);
}

/// A view that calls GEN_ID, and a COMPUTED BY column that does, moved the
/// sequence once a row read (`--views`, `--where`, `--query`): the text
/// check cannot see into them, the catalog's dependencies can (issue 37).
#[test]
fn views_and_computed_columns_that_change_a_sequence_are_refused() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = shop_db(dir.path());
    execute(
        &db,
        &[
            "CREATE SEQUENCE S",
            "CREATE TABLE U (ID INTEGER, C COMPUTED BY (GEN_ID(S, 1)))",
            "INSERT INTO U (ID) VALUES (1)",
            "INSERT INTO U (ID) VALUES (2)",
            "CREATE VIEW V_SEQ AS SELECT ID, GEN_ID(S, 1) G FROM U",
            "CREATE VIEW V_COMPUTED AS SELECT ID, C FROM U",
            "CREATE VIEW V_OUTER AS SELECT ID, G FROM V_SEQ",
        ],
    );
    let out_dir = dir.path().join("never");
    for (args, expected) in [
        (
            vec!["--views", "V_SEQ"],
            "--views: view V_SEQ: reading it changes sequence S",
        ),
        (
            vec!["--views", "V_COMPUTED"],
            "--views: view V_COMPUTED: reading it changes sequence S",
        ),
        (
            vec!["--views", "V_OUTER"],
            "--views: view V_OUTER: reading it changes sequence S",
        ),
        (
            vec!["-t", "U", "--where", "C > 0"],
            "--where for table U: column C of U is COMPUTED BY an expression that changes \
             sequence S",
        ),
        (
            vec![
                "-t",
                "BIG",
                "--where",
                "ID IN (SELECT \"ID\" FROM \"V_SEQ\")",
            ],
            "--where for table BIG: V_SEQ changes sequence S",
        ),
        (
            vec!["--query", "SELECT u.ID, u.C FROM U u", "--name", "Q"],
            "--query Q: column C of U is COMPUTED BY",
        ),
        (
            vec!["--query", "SELECT * FROM v_outer", "--name", "Q"],
            "--query Q: V_OUTER changes sequence S",
        ),
    ] {
        assert_query_refused(&db, &out_dir, &args, expected);
    }
    // What moves no sequence still reads: the table's stored columns, a
    // view that calls none, a query of U's stored column.
    let out_dir = dir.path().join("out");
    let out = fbunload(
        &db,
        &[
            "-t",
            "U",
            "--where",
            "ID > 0",
            "--views",
            "V_RICH",
            "--query",
            "SELECT ID FROM U",
            "--name",
            "Q",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(csv_records(&out_dir.join("U.csv")).len(), 2);
    assert_eq!(
        engine_rows(
            &db,
            "SELECT CAST(GEN_ID(S, 0) AS INTEGER) FROM RDB$DATABASE"
        ),
        [["0"]],
        "the sequence is unchanged"
    );
}

/// fbunload attaches in character set NONE, where a literal's bytes are
/// taken as they are: `W = 'café'` compared UTF-8 bytes with a WIN1252
/// column's and found nothing, `W || 'é'` gave `caféÃ©`. Each literal now
/// reaches the engine in a character set that holds it: UTF8, or the
/// one `--charset` says NONE text is in (issue 37).
#[test]
fn non_ascii_literals_read_as_the_engine_reads_them() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "text.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE T (ID INTEGER, W VARCHAR(20) CHARACTER SET WIN1252, \
             U VARCHAR(20) CHARACTER SET UTF8)",
            "INSERT INTO T VALUES (1, 'café', 'café')",
            "INSERT INTO T VALUES (2, 'Müller', 'Müller')",
            "INSERT INTO T VALUES (3, 'plain', 'plain')",
            // Text of unknown encoding: WIN1252 bytes.
            "CREATE TABLE N (ID INTEGER, N VARCHAR(20) CHARACTER SET NONE)",
            "INSERT INTO N VALUES (1, x'636166E9')",
            "INSERT INTO N VALUES (2, 'plain')",
        ],
    );
    let run = |name: &str, args: &[&str]| {
        let out_dir = dir.path().join(name);
        let mut full = args.to_vec();
        full.extend(["--overwrite", "-o", out_dir.to_str().unwrap()]);
        let out = fbunload(&db, &full);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let file = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "csv"))
            .unwrap();
        csv_records(&file)
    };
    let row = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    for charset in ["UTF8", "WIN1252"] {
        let charset_arg = ["--charset", charset];
        let with = |args: &[&'static str]| [&charset_arg[..], args].concat();
        assert_eq!(
            run("w", &with(&["-t", "T", "--where", "W = 'café'"])),
            [row(&["1", "café", "café"])],
            "{charset}"
        );
        assert_eq!(
            run(
                "u",
                &with(&["-t", "T", "--where", "U = 'café' OR U = 'Müller'"])
            )
            .len(),
            2,
            "{charset}: UTF8 columns as before"
        );
        assert_eq!(
            run(
                "starting",
                &with(&[
                    "--query",
                    "SELECT ID, W || 'é' || q'{é}' FROM T WHERE W STARTING WITH 'Mü'",
                    "--name",
                    "Q"
                ])
            ),
            [row(&["2", "Mülleréé"])],
            "{charset}"
        );
        assert_eq!(
            run(
                "split",
                &with(&[
                    "--query",
                    "SELECT t.ID, t.W FROM T t WHERE t.W = 'caf' 'é'",
                    "--name",
                    "Q",
                    "--split-by",
                    "T"
                ])
            ),
            [row(&["1", "café"])],
            "{charset}"
        );
        assert_eq!(
            run(
                "literal",
                &with(&["--query", "SELECT 'é' E FROM RDB$DATABASE", "--name", "Q"])
            ),
            [row(&["é"])],
            "{charset}"
        );
    }
    // NONE text is what --charset says: its literals are compared in it.
    assert_eq!(
        run(
            "none",
            &["--charset", "WIN1252", "-t", "N", "--where", "N = 'café'"]
        ),
        [row(&["1", "café"])]
    );
}

/// Firebird allows more decimals than digits: a literal of 20 decimals
/// is a BIGINT of scale -20 (fbunload panicked: "scale 20 is greater
/// than precision 19"), one of 38 an INT128 of scale -38. Each is
/// written exactly, in every format.
#[test]
fn literals_with_more_decimals_than_digits_are_written_exactly() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "lit.fdb", 4096);
    let literals = [
        "0.00000000000000000001",
        "-0.000000000000000000000000000000000001",
        "0.00000000000000000000000000000000000012",
        "0.99999999999999999999",
    ];
    let sql = format!(
        "SELECT {} FROM RDB$DATABASE",
        literals
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{l} AS X{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for format in ["jsonl", "parquet", "csv"] {
        let out_dir = dir.path().join(format);
        let out = fbunload(
            &db,
            &[
                "--query",
                &sql,
                "--name",
                "Q",
                "-f",
                format,
                "--verify",
                "-o",
                out_dir.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{format}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
    let text = std::fs::read_to_string(dir.path().join("jsonl/Q.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{text}");
    for (i, literal) in literals.iter().enumerate() {
        assert_eq!(rows[0][format!("X{i}")], *literal, "X{i}: {text}");
    }
}
