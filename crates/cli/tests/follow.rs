//! `fbunload follow` end to end, on the embedded engine in SuperClassic
//! mode with a `replication.conf` (a copy of the runtime this test binary
//! alone uses), against the private PostgreSQL cluster: writers before,
//! during and after a `--keep-keys --journal` load (transfers that keep a
//! SUM, rollbacks, savepoints, a transaction held open across the
//! snapshot, key updates, blob changes, a table without a primary key),
//! then the follow; PostgreSQL must equal Firebird value by value, also
//! after follows killed with SIGKILL at random points. Needs
//! `FBUNLOAD_TEST_PG_URI`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use common::clerks::{self, Dice};
use common::*;
use fbunload_client::{Attachment, TransactionMode};

/// The runtime copy every database of this binary runs on: the engine
/// reads `replication.conf` from its root, and a process has one engine.
fn runtime() -> &'static PathBuf {
    static RUNTIME: OnceLock<PathBuf> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let root = runtime_of_this_process("SuperClassic");
        std::fs::write(root.join("replication.conf"), "").unwrap();
        // SAFETY: set before the client library is loaded (every test
        // calls this first); the library reads it on its first call, and
        // the fbunload processes the tests start inherit it.
        unsafe { std::env::set_var("FIREBIRD", &root) };
        root
    })
}

struct Published {
    db: PathBuf,
    archive: PathBuf,
    live: PathBuf,
}

/// A database `dir/name` whose changes go to `dir/journal` (archived into
/// `dir/archive`), publishing every table if `publish`.
fn journaled_db(dir: &Path, name: &str, publish: bool) -> Published {
    // Tests run side by side: one at a time adds its section.
    static CONF: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = CONF.lock().unwrap_or_else(|e| e.into_inner());
    let conf = runtime().join("replication.conf");
    let db = dir.join(name);
    let (live, archive) = (dir.join("journal"), dir.join("archive"));
    std::fs::create_dir_all(&live).unwrap();
    std::fs::create_dir_all(&archive).unwrap();
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str(&format!(
        "database = {}\n{{\n  journal_directory = {}\n  journal_archive_directory = {}\n  \
         journal_archive_timeout = 1\n}}\n",
        db.display(),
        live.display(),
        archive.display()
    ));
    // Renamed into place: an engine reading it meanwhile sees it whole.
    let fresh = conf.with_extension("conf.new");
    std::fs::write(&fresh, text).unwrap();
    std::fs::rename(fresh, conf).unwrap();
    create_db(dir, name, 8192);
    if publish {
        execute(
            &db,
            &[
                "ALTER DATABASE ENABLE PUBLICATION",
                "ALTER DATABASE INCLUDE ALL TO PUBLICATION",
            ],
        );
    }
    Published { db, archive, live }
}

/// A published database `name` in a directory of its own (kept while the
/// directory is).
fn journaled(name: &str) -> (tempfile::TempDir, Published) {
    let dir = tempfile::tempdir().unwrap();
    let p = journaled_db(dir.path(), name, true);
    (dir, p)
}

fn bank(p: &Published) {
    let statements = clerks::bank_statements();
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    execute(&p.db, &statements);
}

/// Attachments to `db`, for the clerks.
fn on(db: &Path) -> clerks::Connect {
    let db = db.to_path_buf();
    Arc::new(move || connect(&db))
}

/// A transaction on `att` that changed account 0 and is left open (to be
/// held across a snapshot).
fn held_account(att: &Attachment) -> fbunload_client::Transaction {
    let held = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    held.execute("UPDATE ACCOUNTS SET BALANCE = BALANCE - 500, NOTE = 'held' WHERE ID = 0")
        .unwrap();
    held
}

fn clerks(db: &Path, seed: u64, transactions: usize) {
    clerks::clerks(&on(db), seed, transactions);
}

fn clerks_until(db: &Path, seed: u64, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    clerks::clerks_until(&on(db), seed, stop)
}

/// `follow` of `p`'s database and journal (archive and live segments).
fn follow_of(p: &Published) -> Vec<&str> {
    vec![
        "follow",
        "-d",
        p.db.to_str().unwrap(),
        "-u",
        "SYSDBA",
        "-p",
        "masterkey",
        "--journal",
        p.archive.to_str().unwrap(),
        "--journal-live",
        p.live.to_str().unwrap(),
    ]
}

/// fbunload `args` started and killed with SIGKILL four times, each
/// after `least` ms and up to `spread` more (chosen by `seed`), while
/// clerks write.
fn killed_while_clerks_write(p: &Published, seed: u64, args: &[&str], (least, spread): (u64, i64)) {
    let stop = Arc::new(AtomicBool::new(false));
    let during = clerks_until(&p.db, seed, stop.clone());
    let mut dice = Dice(seed + 1);
    for _ in 0..4 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fbunload"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(least + dice.roll(spread) as u64));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    during.join().unwrap();
}

fn follow_args<'a>(p: &'a Published, uri: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = follow_of(p);
    args.extend_from_slice(&["-o", uri, "--pg-schema", "live"]);
    args.extend_from_slice(more);
    args
}

fn follow_until_idle(p: &Published, uri: &str) -> Output {
    follow_until_idle_with(p, uri, &[])
}

fn follow_until_idle_with(p: &Published, uri: &str, more: &[&str]) -> Output {
    let mut args = vec!["--until-idle", "3"];
    args.extend_from_slice(more);
    let out = fbunload_alone(&follow_args(p, uri, &args));
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

fn assert_equal(p: &Published, uri: &str, when: &str) {
    clerks::assert_equal(&connect(&p.db), uri, when);
}

#[test]
fn follow_after_a_keep_keys_load_equals_firebird_across_kills() {
    let Some(uri) = pg_database("follow_bank") else {
        return;
    };
    let (_dir, p) = journaled("bank.fdb");
    bank(&p);
    clerks(&p.db, 1, 60);

    // Held open across the snapshot: the load does not see it, the
    // follow applies it once it commits.
    let held_att = connect(&p.db);
    let held = held_account(&held_att);
    held.execute("INSERT INTO MOVES VALUES (0, -500)").unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let during = clerks_until(&p.db, 2, stop.clone());
    std::thread::sleep(Duration::from_millis(300));
    let load = live_load(&p, &uri);
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    let written = during.join().unwrap();
    assert!(load.status.success(), "{}", stderr(&load));
    assert!(written > 5, "clerks wrote during the load: {written}");
    held.commit().unwrap();
    clerks(&p.db, 3, 60);

    // --memory 0: every transaction's changes go on in a file.
    let out = follow_until_idle_with(&p, &uri, &["--memory", "0"]);
    assert!(
        stderr(&out).contains("fbunload: follow applied"),
        "{}",
        stderr(&out)
    );
    assert_equal(&p, &uri, "after the first follow");

    // Killed at random points while clerks write; then to the end.
    killed_while_clerks_write(&p, 4, &follow_args(&p, &uri, &[]), (200, 1200));
    follow_until_idle(&p, &uri);
    assert_equal(&p, &uri, "after follows killed with SIGKILL");

    // SIGTERM: a clean stop, status 0.
    let child = Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(follow_args(&p, &uri, &[]))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let stopped = child.wait_with_output().unwrap();
    assert_eq!(stopped.status.code(), Some(0), "{}", stderr(&stopped));

    // DDL stops the follow, naming the statement.
    execute(&p.db, &["ALTER TABLE MOVES ADD NOTE VARCHAR(10)"]);
    let out = fbunload_alone(&follow_args(&p, &uri, &["--until-idle", "3"]));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("ran DDL") && err.contains("\"ALTER TABLE MOVES ADD NOTE VARCHAR(10)\""),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    // A segment lost before it was applied is refused, never skipped.
    clerks(&p.db, 6, 5);
    std::thread::sleep(Duration::from_millis(2500));
    clerks(&p.db, 7, 5);
    std::thread::sleep(Duration::from_millis(2500));
    let position: i64 = postgres::Client::connect(&uri, postgres::NoTls)
        .unwrap()
        .query_one("SELECT applied_sequence FROM live._fbunload_journal", &[])
        .unwrap()
        .get(0);
    let next = p
        .archive
        .join(format!("bank.fdb.journal-{:09}", position + 1));
    let later = std::fs::read_dir(&p.archive).unwrap().count();
    assert!(
        next.exists() && later as i64 > position + 1,
        "segments: {later}"
    );
    std::fs::remove_file(&next).unwrap();
    let mut args = follow_args(&p, &uri, &["--until-idle", "1"]);
    args.retain(|a| *a != "--journal-live" && *a != p.live.to_str().unwrap());
    let out = fbunload_alone(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "journal segment {} of bank.fdb is missing",
            position + 1
        )),
        "{err}"
    );
}

#[test]
fn a_database_that_does_not_publish_or_another_databases_journal_is_refused() {
    let Some(uri) = pg_database("follow_refusals") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let silent = journaled_db(&dir.path().join("silent"), "quiet.fdb", false);
    let out = fbunload_alone(&follow_args(&silent, &uri, &["--until-idle", "1"]));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("publishes no changes") && err.contains("ALTER DATABASE ENABLE PUBLICATION"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    let one = journaled_db(&dir.path().join("one"), "same.fdb", true);
    let other = journaled_db(&dir.path().join("other"), "same.fdb", true);
    for p in [&one, &other] {
        execute(
            &p.db,
            &[
                "CREATE TABLE T (ID INTEGER PRIMARY KEY)",
                "INSERT INTO T VALUES (1)",
            ],
        );
    }
    let load = fbunload(&one.db, &["-o", &uri, "--pg-schema", "live", "--keep-keys"]);
    assert!(load.status.success(), "{}", stderr(&load));
    std::thread::sleep(Duration::from_millis(2500));
    // The other database's journal, under this one's file name.
    let crossed = Published {
        db: one.db.clone(),
        archive: other.archive.clone(),
        live: other.live.clone(),
    };
    let out = fbunload_alone(&follow_args(&crossed, &uri, &["--until-idle", "1"]));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("a journal of database {"), "{err}");
    assert!(err.contains("journal_archive_directory"), "{err}");

    let nowhere = Published {
        db: one.db.clone(),
        archive: dir.path().join("nowhere"),
        live: one.live.clone(),
    };
    let out = fbunload_alone(&follow_args(&nowhere, &uri, &["--until-idle", "1"]));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("does not exist") && err.contains("journal_archive_directory"),
        "{err}"
    );
}

/// A table of every column type the journal carries, with a hostile
/// name.
const EVERY_TYPE_TABLE: &str =
    "CREATE TABLE \"Odd 'Name\"\"\" (ID INTEGER NOT NULL PRIMARY KEY, SM SMALLINT, \
             BI BIGINT, I128 INT128, N NUMERIC(18,4), N38 NUMERIC(38,6), D16 DECFLOAT(16), \
             D34 DECFLOAT(34), FL FLOAT, DP DOUBLE PRECISION, B BOOLEAN, DT DATE, TM TIME, \
             TS TIMESTAMP, TMZ TIME WITH TIME ZONE, TSZ TIMESTAMP WITH TIME ZONE, C CHAR(5), \
             \"o'clock\" VARCHAR(60), O VARCHAR(4) CHARACTER SET OCTETS, \
             L VARCHAR(10) CHARACTER SET WIN1252, BT BLOB SUB_TYPE TEXT, BB BLOB SUB_TYPE BINARY)";

/// A row of [`EVERY_TYPE_TABLE`] after its ID: extreme values and hostile
/// text.
const EVERY_TYPE_VALUES: &str =
    "-32768, -9223372036854775808, -170141183460469231731687303715884105727, \
         -12345.6789, 12345678901234567890123456789012.123456, -1.234567890123456E+300, \
         1.234567890123456789012345678901234E-6000, 1.5, -0.375, TRUE, DATE '0001-01-01', \
         TIME '23:59:59.9999', TIMESTAMP '9999-12-31 23:59:59.9999', \
         TIME '10:11:12.1314 Europe/Prague', TIMESTAMP '2024-03-31 02:30:00 America/New_York', \
         'ab', 'it''s \\'' ); DROP TABLE \"Odd ''Name\"\"\"; --', x'00FF10', 'caf\u{e9}', \
         'text blob \u{1F600}' || ASCII_CHAR(9) || ASCII_CHAR(10) || ASCII_CHAR(13) || '\\N \\.', \
         x'000102'";

/// The same values, once loaded by COPY and once applied by the follow,
/// are the same in PostgreSQL: every column type, and hostile names and
/// text (quotes, backslashes, SQL) that reach it as they are.
#[test]
fn every_type_and_hostile_text_arrive_as_the_load_writes_them() {
    let Some(uri) = pg_database("follow_types") else {
        return;
    };
    let (_dir, p) = journaled("types.fdb");
    let values = EVERY_TYPE_VALUES;
    execute(
        &p.db,
        &[
            EVERY_TYPE_TABLE,
            &format!("INSERT INTO \"Odd 'Name\"\"\" VALUES (1, {values})"),
            "INSERT INTO \"Odd 'Name\"\"\" (ID) VALUES (3)",
        ],
    );
    let load = live_load(&p, &uri);
    assert!(load.status.success(), "{}", stderr(&load));
    execute(
        &p.db,
        &[
            &format!("INSERT INTO \"Odd 'Name\"\"\" VALUES (2, {values})"),
            "INSERT INTO \"Odd 'Name\"\"\" (ID) VALUES (4)",
        ],
    );
    follow_until_idle(&p, &uri);
    let mut pg = postgres::Client::connect(&uri, postgres::NoTls).unwrap();
    let rows: Vec<String> = pg
        .query(
            "SELECT (to_jsonb(t) - 'id')::text FROM live.\"Odd 'Name\"\"\" t ORDER BY id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0], rows[1], "loaded, then followed");
    assert_eq!(rows[2], rows[3], "nulls");
    assert!(
        rows[1].contains(r#""o'clock": "it's \\' ); DROP TABLE \"Odd 'Name\"\"\"; --""#),
        "{}",
        rows[1]
    );
    // One follow to a schema at a time.
    let first = Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(follow_args(&p, &uri, &[]))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let second = fbunload_alone(&follow_args(&p, &uri, &["--until-idle", "1"]));
    Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status()
        .unwrap();
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "SIGINT: {}", stderr(&first));
    refused_in_one_line(&second, "another fbunload follow applies the journal to it");

    // A row changed by hand in the target: the follow stops, naming it.
    pg.batch_execute("DELETE FROM live.\"Odd 'Name\"\"\" WHERE id = 4")
        .unwrap();
    execute(&p.db, &["UPDATE \"Odd 'Name\"\"\" SET SM = 1 WHERE ID = 4"]);
    let out = fbunload_alone(&follow_args(&p, &uri, &["--until-idle", "2"]));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("update of table Odd 'Name\" row ID='4'")
            && err.contains("is not in PostgreSQL"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `-o - --format jsonl`: one event per row change, only committed work,
/// and `--from` an event's `resume` goes on after it, nothing twice.
#[test]
fn json_lines_stream_committed_changes_and_resume_after_the_last() {
    let (_dir, p) = journaled("stream.fdb");
    execute(
        &p.db,
        &[
            "CREATE TABLE ITEMS (ID INTEGER NOT NULL PRIMARY KEY, NAME VARCHAR(20), \
             PRICE NUMERIC(9,2), PHOTO BLOB SUB_TYPE BINARY)",
            "INSERT INTO ITEMS VALUES (1, 'one', 1.50, x'0102')",
            "UPDATE ITEMS SET ID = 2, NAME = 'two' WHERE ID = 1",
        ],
    );
    let att = connect(&p.db);
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    tr.execute("INSERT INTO ITEMS VALUES (9, 'never', 0, NULL)")
        .unwrap();
    drop(tr);
    execute(&p.db, &["DELETE FROM ITEMS WHERE ID = 2"]);
    let stream = |from: Option<&str>| -> Vec<serde_json::Value> {
        let mut args = follow_of(&p);
        args.extend([
            "-o",
            "-",
            "--format",
            "jsonl",
            "--until-idle",
            "2",
            "--progress",
            "json",
        ]);
        if let Some(from) = from {
            args.extend(["--from", from]);
        }
        let out = fbunload_alone(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        // --progress json: an event per transaction handed on, then the summary.
        let err = stderr(&out);
        let progress: Vec<serde_json::Value> = err
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!progress.is_empty(), "{err}");
        assert!(progress
            .iter()
            .all(|e| e["event"] == "applied" && e["position"].is_string()));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|e: &serde_json::Value| e["table"] == "ITEMS")
            .collect()
    };
    let events = stream(None);
    let all = fbunload_alone(&[
        "follow",
        "-d",
        p.db.to_str().unwrap(),
        "--journal",
        p.archive.to_str().unwrap(),
        "-o",
        "-",
        "--format",
        "jsonl",
        "--until-idle",
        "1",
    ]);
    assert!(
        String::from_utf8_lossy(&all.stdout).contains(r#""op":"sql","#),
        "DDL goes out as an sql event"
    );
    let ops: Vec<&str> = events.iter().map(|e| e["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["insert", "update", "delete"], "{events:#?}");
    assert_eq!(
        events[0]["after"],
        serde_json::json!({"ID": 1, "NAME": "one", "PRICE": "1.50", "PHOTO": "AQI="})
    );
    assert_eq!(events[1]["key"], serde_json::json!({"ID": 1}));
    assert_eq!(events[1]["after"]["ID"], 2);
    assert_eq!(events[2]["key"], serde_json::json!({"ID": 2}));
    assert!(events[2]["after"].is_null());
    let resume = events[2]["resume"].as_str().unwrap().to_string();

    execute(&p.db, &["INSERT INTO ITEMS VALUES (3, 'three', 3, NULL)"]);
    let later = stream(Some(&resume));
    assert_eq!(later.len(), 1, "{later:#?}");
    assert_eq!(later[0]["op"], "insert");
    assert_eq!(later[0]["key"], serde_json::json!({"ID": 3}));
}

/// `fbunload follow -o DIR` after a `--keep-keys --journal` run into
/// `base`: change sets every `every`.
fn chain_args<'a>(p: &'a Published, base: &'a str, out: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = follow_of(p);
    args.extend_from_slice(&["--since", base, "-o", out]);
    args.extend_from_slice(more);
    args
}

/// The links of a chain in `out`, in order.
fn links(out: &Path) -> Vec<PathBuf> {
    let mut links: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.len() == 8 && name.bytes().all(|b| b.is_ascii_digit())
        })
        .collect();
    links.sort();
    links
}

/// Every row of the Parquet files of `table` in `dir` (as its manifest
/// lists them), each value with its Arrow type, sorted.
fn parquet_table(dir: &Path, table: &str) -> Vec<String> {
    table_rows(dir, table, |file| {
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap())
            .collect()
    })
}

/// [`parquet_table`] of Arrow files.
fn arrow_table(dir: &Path, table: &str) -> Vec<String> {
    table_rows(dir, table, |file| {
        arrow_ipc::reader::FileReader::try_new(file, None)
            .unwrap()
            .map(|b| b.unwrap())
            .collect()
    })
}

fn table_rows(
    dir: &Path,
    table: &str,
    read: impl Fn(std::fs::File) -> Vec<arrow_array::RecordBatch>,
) -> Vec<String> {
    use arrow_array::Array;
    let manifest = read_manifest(dir);
    let mut rows = Vec::new();
    for file in manifest_entry(&manifest, table)["files"]
        .as_array()
        .unwrap()
    {
        if !file["role"].is_null() {
            continue;
        }
        let file = std::fs::File::open(dir.join(file["name"].as_str().unwrap())).unwrap();
        for batch in read(file) {
            for i in 0..batch.num_rows() {
                let row: Vec<String> = batch
                    .columns()
                    .iter()
                    .map(|c| {
                        let one = c.slice(i, 1);
                        format!("{:?} {}", one.data_type(), one.is_null(0))
                            + &format!("{one:?}").replace('\n', "")
                    })
                    .collect();
                rows.push(row.join(" | "));
            }
        }
    }
    rows.sort();
    rows
}

/// The keys in the deletes file of `table` in the change set `dir`.
fn parquet_deletes(dir: &Path, table: &str) -> Vec<String> {
    let manifest = read_manifest(dir);
    let mut keys = Vec::new();
    for file in manifest_entry(&manifest, table)["files"]
        .as_array()
        .unwrap()
    {
        if file["role"] != "deletes" {
            continue;
        }
        let file = std::fs::File::open(dir.join(file["name"].as_str().unwrap())).unwrap();
        for batch in parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap()
        {
            let batch = batch.unwrap();
            for i in 0..batch.num_rows() {
                keys.push(format!("{:?}", batch.slice(i, 1).columns()));
            }
        }
    }
    keys
}

/// A `--keep-keys` Parquet unload of the bank but MOVES (no primary key)
/// into `out`: what a chain's state is compared with.
fn fresh_unload(p: &Published, out: &Path) {
    let run = fbunload(
        &p.db,
        &[
            "-f",
            "parquet",
            "--keep-keys",
            "-x",
            "MOVES",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
}

/// `fbunload apply OLD CHANGES -o OUT`, which must succeed.
fn apply(old: &Path, changes: &Path, out: &Path) {
    let applied = fbunload_alone(&[
        "apply",
        old.to_str().unwrap(),
        changes.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(applied.status.success(), "{}", stderr(&applied));
}

/// ACCOUNTS of the run `fresh` and of the state `state`, equal value by
/// value: its rows.
fn same_accounts(fresh: &Path, state: &Path) -> Vec<String> {
    let (want, got) = (
        parquet_table(fresh, "ACCOUNTS"),
        parquet_table(state, "ACCOUNTS"),
    );
    assert_eq!(want.len(), got.len());
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(w, g);
    }
    want
}

/// The chain applied link by link to `base`: the last state.
fn apply_chain(base: &Path, out: &Path, states: &Path) -> PathBuf {
    let mut state = base.to_path_buf();
    for (i, link) in links(out).iter().enumerate() {
        let next = states.join(format!("s{i}"));
        apply(&state, link, &next);
        state = next;
    }
    state
}

/// Change sets written from the journal are links of the incremental
/// format: the base and its links applied in order equal a fresh
/// `--keep-keys` unload taken once the writers stopped, value by value
/// (writers before, during and after the base run, a transaction held
/// open across its snapshot, key updates, deletes, blob changes), also
/// when the follow is killed with SIGKILL between and while it writes
/// links; a stranger's link in the directory is refused, never followed.
#[test]
fn change_sets_from_the_journal_apply_to_what_a_fresh_unload_reads() {
    let (dir, p) = journaled("chain.fdb");
    bank(&p);
    clerks(&p.db, 11, 40);
    let held_att = connect(&p.db);
    let held = held_account(&held_att);

    let base = dir.path().join("base");
    let out = dir.path().join("chain");
    let (base_arg, out_arg) = (base.to_str().unwrap(), out.to_str().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let during = clerks_until(&p.db, 12, stop.clone());
    std::thread::sleep(Duration::from_millis(300));
    // MOVES has no primary key: a change set could not name its rows.
    let run = fbunload(
        &p.db,
        &[
            "-f",
            "parquet",
            "--keep-keys",
            "--journal",
            p.archive.to_str().unwrap(),
            "-x",
            "MOVES",
            "-o",
            base_arg,
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    assert!(during.join().unwrap() > 5);
    assert!(run.status.success(), "{}", stderr(&run));
    held.commit().unwrap();
    execute(
        &p.db,
        &[
            "DELETE FROM ACCOUNTS WHERE ID = 150",
            "INSERT INTO ACCOUNTS VALUES (5000, 1.5, 'new')",
        ],
    );
    // --memory 0: every transaction's row images and blobs in files.
    let first = fbunload_alone(&chain_args(
        &p,
        base_arg,
        out_arg,
        &["--every", "1", "--until-idle", "2", "--memory", "0"],
    ));
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(!links(&out).is_empty(), "{}", stderr(&first));

    // Killed at random points while clerks write and links are made.
    let args = chain_args(&p, base_arg, out_arg, &["--every", "0.2"]);
    killed_while_clerks_write(&p, 13, &args, (300, 1500));
    execute(
        &p.db,
        &[
            "INSERT INTO ACCOUNTS VALUES (5001, 2, 'gone again')",
            "DELETE FROM ACCOUNTS WHERE ID = 5001",
            "UPDATE ACCOUNTS SET ID = 7000, NOTE = 'moved' WHERE ID = 5000",
        ],
    );
    let last = fbunload_alone(&chain_args(
        &p,
        base_arg,
        out_arg,
        &["--every", "1", "--until-idle", "2"],
    ));
    assert!(last.status.success(), "{}", stderr(&last));
    let chain = links(&out);
    assert!(chain.len() >= 3, "links: {chain:?}");
    // What a killed follow left half made is gone; nothing else is there.
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), chain.len(), "{names:?}");
    // Each link goes on where the one before it ended.
    let mut applied = (0u64, 0u64);
    for link in &chain {
        let at = read_manifest(link)["incremental"]["journal"]["applied"]
            .as_str()
            .unwrap()
            .to_string();
        let (s, o) = at.split_once(':').unwrap();
        let at = (s.parse().unwrap(), o.parse().unwrap());
        assert!(at > applied, "{link:?}: {at:?} after {applied:?}");
        applied = at;
    }
    let check = fbunload_check(chain.last().unwrap());
    assert!(check.status.success(), "{}", stderr(&check));

    let fresh = dir.path().join("fresh");
    fresh_unload(&p, &fresh);
    let state = apply_chain(&base, &out, dir.path());
    let want = same_accounts(&fresh, &state);
    assert!(want.iter().any(|r| r.contains("\"moved\"")), "{want:?}");
    assert!(want.iter().any(|r| r.contains("\"held\"")), "{want:?}");

    // A scan goes on from the chain's last link: it holds what changed
    // since, and applied to the chain's state it gives what a fresh unload
    // reads (a row a link inserted, then deleted; a key a link deleted,
    // back; rows the base and the links hold, changed).
    execute(
        &p.db,
        &[
            "DELETE FROM ACCOUNTS WHERE ID = 7000",
            "INSERT INTO ACCOUNTS VALUES (5001, 3, 'back')",
            "DELETE FROM ACCOUNTS WHERE MOD(ID, 100000) = 7",
            "UPDATE ACCOUNTS SET NOTE = 'after the links' WHERE MOD(ID, 100000) = 9",
        ],
    );
    clerks(&p.db, 15, 20);
    let scan = dir.path().join("scan");
    let scan_from = |since: &Path, out: &Path| {
        fbunload(
            &p.db,
            &[
                "-f",
                "parquet",
                "-x",
                "MOVES",
                "--since",
                since.to_str().unwrap(),
                "-o",
                out.to_str().unwrap(),
            ],
        )
    };
    let run = scan_from(chain.last().unwrap(), &scan);
    assert!(run.status.success(), "{}", stderr(&run));
    let deleted = parquet_deletes(&scan, "ACCOUNTS");
    assert!(deleted.iter().any(|d| d.contains("7000")), "{deleted:?}");
    let after_scan = dir.path().join("after-scan");
    apply(&state, &scan, &after_scan);
    let fresh = dir.path().join("fresh-after-scan");
    fresh_unload(&p, &fresh);
    let want = same_accounts(&fresh, &after_scan);
    assert!(want.iter().any(|r| r.contains("\"back\"")), "{want:?}");
    // Its keys are the chain's: a scan since it holds nothing more.
    let again = dir.path().join("scan-again");
    let run = scan_from(&scan, &again);
    assert!(run.status.success(), "{}", stderr(&run));
    let manifest = read_manifest(&again);
    let entry = manifest_entry(&manifest, "ACCOUNTS");
    assert_eq!(entry["rows"], 0, "{entry}");
    assert_eq!(entry["change"]["deletes"], 0, "{entry}");
    // Without its base, a link cannot be gone on from: one line says so.
    let moved = dir.path().join("base-moved");
    std::fs::rename(&base, &moved).unwrap();
    let refused = scan_from(chain.last().unwrap(), &dir.path().join("refused"));
    std::fs::rename(&moved, &base).unwrap();
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("put that run back there"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // One follow a chain.
    let mut running = Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(chain_args(&p, base_arg, out_arg, &["--every", "1"]))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let second = fbunload_alone(&chain_args(
        &p,
        base_arg,
        out_arg,
        &["--every", "1", "--until-idle", "1"],
    ));
    running.kill().unwrap();
    running.wait().unwrap();
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(
        err.contains("another fbunload follow writes change sets there"),
        "{err}"
    );

    // A stranger's link: refused, not followed; other names are left alone.
    let refused = || {
        let refused = fbunload_alone(&chain_args(
            &p,
            base_arg,
            out_arg,
            &["--every", "1", "--until-idle", "1"],
        ));
        let err = stderr(&refused);
        assert_eq!(refused.status.code(), Some(1), "{err}");
        err
    };
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    // (The follow above wrote the changes made since the scan.)
    let chain = links(&out);
    let next = out.join(format!("{:08}", chain.len() + 1));
    std::os::unix::fs::symlink(chain.last().unwrap(), &next).unwrap();
    let err = refused();
    assert!(err.contains("not a plain directory"), "{err}");
    std::fs::remove_file(&next).unwrap();
    std::fs::create_dir(&next).unwrap();
    std::fs::copy(chain[0].join("manifest.json"), next.join("manifest.json")).unwrap();
    let err = refused();
    assert!(err.contains("names another run"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Every column type reaches a change set as a scan reads it: rows 1 and
/// 3 read by the base run, rows 2 and 4 (the same values) from the
/// journal, applied, equal a fresh unload value by value, in Parquet and
/// in Arrow; in CSV and JSON Lines its records are those a scan writes. A
/// base cut into parts, a follow without --every or with --pg-schema, is
/// refused in one line.
#[test]
fn every_type_in_a_change_set_is_what_a_scan_reads() {
    let (dir, p) = journaled("types.fdb");
    let table = "Odd 'Name\"";
    execute(
        &p.db,
        &[
            EVERY_TYPE_TABLE,
            &format!("INSERT INTO \"Odd 'Name\"\"\" VALUES (1, {EVERY_TYPE_VALUES})"),
            "INSERT INTO \"Odd 'Name\"\"\" (ID) VALUES (3)",
        ],
    );
    let at = |name: &str| dir.path().join(name);
    // A --keep-keys --journal run into `out` with `options`.
    let journal_base = |out: &Path, options: &[&str]| {
        let mut args = options.to_vec();
        args.extend(["--keep-keys", "--journal", p.archive.to_str().unwrap()]);
        args.extend(["-o", out.to_str().unwrap()]);
        let run = fbunload(&p.db, &args);
        assert!(run.status.success(), "{}", stderr(&run));
    };
    for format in ["parquet", "arrow", "csv", "jsonl"] {
        let more = if matches!(format, "csv" | "jsonl") {
            "-q"
        } else {
            "--decimal256"
        };
        journal_base(&at(&format!("base-{format}")), &["-f", format, more]);
    }
    execute(
        &p.db,
        &[
            &format!("INSERT INTO \"Odd 'Name\"\"\" VALUES (2, {EVERY_TYPE_VALUES})"),
            "INSERT INTO \"Odd 'Name\"\"\" (ID) VALUES (4)",
        ],
    );
    let fresh = at("fresh");
    let run = fbunload(
        &p.db,
        &[
            "-f",
            "parquet",
            "--decimal256",
            "-o",
            fresh.to_str().unwrap(),
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let want = parquet_table(&fresh, table);
    assert_eq!(want.len(), 4);
    // The chain of the base in `format`, followed to the end.
    let follow_chain = |format: &str, more: &[&str]| {
        let (base, chain) = (
            at(&format!("base-{format}")),
            at(&format!("chain-{format}")),
        );
        let mut args = vec!["--every", "10", "--until-idle", "2"];
        args.extend_from_slice(more);
        let out = fbunload_alone(&chain_args(
            &p,
            base.to_str().unwrap(),
            chain.to_str().unwrap(),
            &args,
        ));
        assert!(out.status.success(), "{}", stderr(&out));
        (base, chain, out)
    };
    for format in ["parquet", "arrow"] {
        // --memory 0: blobs in their file, and a link per transaction.
        let (base, chain, out) = follow_chain(format, &["--memory", "0", "--progress", "json"]);
        // A `link` event as each link is moved into place.
        let linked: Vec<serde_json::Value> = stderr(&out)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|e| e["event"] == "link")
            .collect();
        assert_eq!(linked.len(), 2, "{}", stderr(&out));
        assert_eq!(linked[1]["path"], links(&chain)[1].to_str().unwrap());
        assert_eq!(linked[1]["transactions"], 1);
        assert_eq!(links(&chain).len(), 2, "{format}");
        let state = apply_chain(&base, &chain, &at(&format!("states-{format}")));
        let got = match format {
            "parquet" => parquet_table(&state, table),
            _ => arrow_table(&state, table),
        };
        assert_eq!(want, got, "{format}");
    }
    // A text base's links hold the records a scan writes for their rows:
    // a fresh unload's records are the base's and the links' upserts.
    for (format, header) in [("csv", true), ("jsonl", false)] {
        let (base, chain, _) = follow_chain(format, &[]);
        let fresh = at(&format!("fresh-{format}"));
        let run = fbunload(&p.db, &["-f", format, "-q", "-o", fresh.to_str().unwrap()]);
        assert!(run.status.success(), "{}", stderr(&run));
        let records = |dir: &Path, role: Option<&str>| -> Vec<String> {
            let manifest = read_manifest(dir);
            let mut records = Vec::new();
            for file in manifest_entry(&manifest, table)["files"]
                .as_array()
                .unwrap()
            {
                if file["role"].as_str() != role {
                    continue;
                }
                let text =
                    std::fs::read_to_string(dir.join(file["name"].as_str().unwrap())).unwrap();
                records.extend(text.lines().skip(usize::from(header)).map(String::from));
            }
            records
        };
        let mut want = records(&fresh, None);
        let mut got = records(&base, None);
        for link in links(&chain) {
            got.extend(records(&link, Some("upserts")));
        }
        want.sort();
        got.sort();
        assert!(want.len() >= 4, "{format}: {want:?}");
        assert_eq!(want, got, "{format}");
    }
    // A base cut into parts: a link is one file a table.
    let parts = at("base-parts");
    journal_base(&parts, &["-f", "csv", "-q", "--max-rows", "1"]);
    let refused = fbunload_alone(&chain_args(
        &p,
        parts.to_str().unwrap(),
        at("chain-parts").to_str().unwrap(),
        &["--every", "1", "--until-idle", "1"],
    ));
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("cut into parts"), "{err}");
    let refused = fbunload_alone(&chain_args(
        &p,
        at("base-parquet").to_str().unwrap(),
        at("chain-x").to_str().unwrap(),
        &["--until-idle", "1"],
    ));
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("give --every"), "{err}");
    // A schema is for a PostgreSQL target only: not ignored.
    let refused = fbunload_alone(&chain_args(
        &p,
        at("base-parquet").to_str().unwrap(),
        at("chain-y").to_str().unwrap(),
        &[
            "--every",
            "1",
            "--until-idle",
            "1",
            "--pg-schema",
            "elsewhere",
        ],
    ));
    refused_in_one_line(
        &refused,
        "--pg-schema elsewhere: it is for a PostgreSQL target",
    );
}

/// ITEMS (keyed, set-based) and LINES (keyed, a foreign key to ITEMS),
/// `rows` of each, for the tests of many transactions in one group.
fn shop(p: &Published, rows: i64) {
    execute(
        &p.db,
        &[
            "CREATE TABLE ITEMS (ID INTEGER NOT NULL PRIMARY KEY, NAME VARCHAR(30), QTY INTEGER, \
             NOTE BLOB SUB_TYPE TEXT)",
            "CREATE TABLE LINES (ID INTEGER NOT NULL PRIMARY KEY, ITEM INTEGER REFERENCES ITEMS, \
             AMOUNT NUMERIC(9,2))",
            &format!(
                "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {rows}) DO BEGIN \
                 INSERT INTO ITEMS VALUES (:I, 'item ' || :I, :I, 'note ' || :I); \
                 INSERT INTO LINES VALUES (:I, :I, :I * 1.5); I = I + 1; END END"
            ),
        ],
    );
}

/// Both tables of [`shop`], Firebird's and PostgreSQL's, as sorted text.
fn shop_sides(p: &Published, uri: &str) -> (Vec<String>, Vec<String>) {
    let att = connect(&p.db);
    let tr = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    let mut firebird = Vec::new();
    for sql in [
        "SELECT 'I|' || ID || '|' || COALESCE(NAME, '<null>') || '|' || COALESCE(QTY, -1) || '|' \
         || COALESCE(CAST(NOTE AS VARCHAR(100)), '<null>') FROM ITEMS",
        "SELECT 'L|' || ID || '|' || COALESCE(ITEM, -1) || '|' || AMOUNT FROM LINES",
    ] {
        let mut stmt = tr.prepare(sql).unwrap();
        stmt.execute().unwrap();
        while stmt.fetch().unwrap() {
            firebird.push(String::from_utf8_lossy(stmt.row().value(0).unwrap()).into_owned());
        }
    }
    let mut postgres = Vec::new();
    for sql in [
        "SELECT 'I|' || id || '|' || coalesce(name, '<null>') || '|' || coalesce(qty, -1) || '|' \
         || coalesce(note, '<null>') FROM live.items",
        "SELECT 'L|' || id || '|' || coalesce(item, -1) || '|' || amount FROM live.lines",
    ] {
        for row in pg(uri).query(sql, &[]).unwrap() {
            postgres.push(row.get(0));
        }
    }
    firebird.sort();
    postgres.sort();
    (firebird, postgres)
}

/// A published database `name` with [`shop`]'s tables of `rows` rows,
/// loaded into schema `live` of a fresh PostgreSQL database `pg_name`,
/// if PostgreSQL is there to test with.
fn loaded_shop(
    pg_name: &str,
    name: &str,
    rows: i64,
) -> Option<(String, tempfile::TempDir, Published)> {
    let uri = pg_database(pg_name)?;
    let (dir, p) = journaled(name);
    shop(&p, rows);
    load_live(&p, &uri);
    Some((uri, dir, p))
}

/// A `--keep-keys --journal` load of `p` into schema `live`.
fn live_load(p: &Published, uri: &str) -> Output {
    fbunload(
        &p.db,
        &[
            "-o",
            uri,
            "--pg-schema",
            "live",
            "--keep-keys",
            "--journal",
            p.archive.to_str().unwrap(),
        ],
    )
}

fn load_live(p: &Published, uri: &str) {
    let load = live_load(p, uri);
    assert!(load.status.success(), "{}", stderr(&load));
}

/// A user trigger on the copy's ITEMS that notes each row it fires for
/// in `live.fired`: a follow applies rows Firebird's triggers already
/// acted on, so it must not fire.
fn user_trigger(pg: &mut postgres::Client) {
    pg.batch_execute(
        "CREATE TABLE live.fired (what text); \
         CREATE FUNCTION live.fire() RETURNS trigger LANGUAGE plpgsql AS \
         $$BEGIN INSERT INTO live.fired VALUES (TG_OP); RETURN NULL; END$$; \
         CREATE TRIGGER fire AFTER INSERT OR UPDATE OR DELETE ON live.items \
         FOR EACH ROW EXECUTE FUNCTION live.fire()",
    )
    .unwrap();
}

/// [`user_trigger`] never fired, and is enabled again.
fn assert_user_trigger_held(pg: &mut postgres::Client) {
    let fired: i64 = pg
        .query_one("SELECT count(*) FROM live.fired", &[])
        .unwrap()
        .get(0);
    assert_eq!(fired, 0, "the user trigger fired");
    let enabled: String = pg
        .query_one(
            "SELECT tgenabled::text FROM pg_trigger WHERE tgname = 'fire'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(enabled, "O", "the trigger is enabled again");
}

/// Many transactions on the same keys go to PostgreSQL as one group:
/// reduced per key (insert, update, key update, delete, a key inserted
/// again), the lines' foreign key checked at the group's commit, a
/// trigger made on the target by hand held: the copy equals Firebird.
#[test]
fn many_transactions_on_the_same_keys_in_one_group_end_as_in_firebird() {
    let Some((uri, _dir, p)) = loaded_shop("follow_group", "group.fdb", 80) else {
        return;
    };
    user_trigger(&mut pg(&uri));
    let mut statements = Vec::new();
    for r in 0..20 {
        let (new, moved) = (1000 + r, 2000 + r);
        statements.extend([
            format!("INSERT INTO ITEMS VALUES ({new}, 'new {r}', 1, 'fresh')"),
            format!("INSERT INTO LINES VALUES ({new}, {new}, 1)"),
            format!("UPDATE ITEMS SET NAME = 'renamed {r}', NOTE = NULL WHERE ID = {new}"),
            format!("DELETE FROM LINES WHERE ID = {new}"),
            format!("UPDATE ITEMS SET ID = {moved} WHERE ID = {new}"),
            format!("DELETE FROM ITEMS WHERE ID = {moved}"),
            // The key inserted again, after its row went.
            format!("INSERT INTO ITEMS VALUES ({new}, 'again {r}', 2, 'again')"),
            // A loaded row: updated twice, its key moved away and back.
            format!("UPDATE ITEMS SET QTY = QTY + 1 WHERE ID = {r}"),
            format!("UPDATE ITEMS SET QTY = QTY * 2, NOTE = 'twice' WHERE ID = {r}"),
            format!("UPDATE LINES SET ITEM = NULL WHERE ITEM = {r}"),
            format!("UPDATE ITEMS SET ID = {} WHERE ID = {r}", 5000 + r),
            format!("UPDATE ITEMS SET ID = {r} WHERE ID = {}", 5000 + r),
            format!("UPDATE LINES SET ITEM = {r}, AMOUNT = AMOUNT + 1 WHERE ID = {r}"),
            // A loaded row deleted and its key inserted again.
            format!("DELETE FROM LINES WHERE ID = {}", 25 + r),
            format!("DELETE FROM ITEMS WHERE ID = {}", 25 + r),
            format!("INSERT INTO ITEMS VALUES ({}, 'back', NULL, NULL)", 25 + r),
            // A line and its item deleted: ITEMS goes first, so its
            // row goes while the line is still in PostgreSQL: the
            // foreign key holds at the group's commit.
            format!("DELETE FROM LINES WHERE ID = {}", 50 + r),
            format!("DELETE FROM ITEMS WHERE ID = {}", 50 + r),
            // An item and its line.
            format!("INSERT INTO ITEMS VALUES ({}, 'parent', 0, NULL)", 3000 + r),
            format!(
                "INSERT INTO LINES VALUES ({}, {}, 9.99)",
                3000 + r,
                3000 + r
            ),
        ]);
    }
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    execute(&p.db, &statements);
    // The lag counts from the commits' journal writes, not from when the
    // follow read them.
    std::thread::sleep(Duration::from_millis(1500));
    let out = follow_until_idle_with(&p, &uri, &["--progress", "json"]);
    let (firebird, postgres) = shop_sides(&p, &uri);
    assert_eq!(firebird, postgres);
    // 400 transactions, in a few groups.
    let groups: Vec<serde_json::Value> = stderr(&out)
        .lines()
        .filter(|l| l.contains(r#""event":"applied""#))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        (1..=statements.len() / 10).contains(&groups.len()),
        "{} groups: {}",
        groups.len(),
        stderr(&out)
    );
    let first = &groups[0];
    let at_least = first["lag_seconds_at_least"].as_f64().unwrap();
    assert!(at_least > 0.3, "{first}");
    // Found at the first read of its segment: no upper bound.
    assert!(first["lag_seconds_at_most"].is_null(), "{first}");
    assert_user_trigger_held(&mut pg(&uri));
}

/// A user trigger made on the target while the follow runs, on a table
/// it met before, is held as one there at its start: it does not fire,
/// and is enabled again.
#[test]
fn a_trigger_made_while_the_follow_runs_is_held_too() {
    let Some((uri, _dir, p)) = loaded_shop("follow_trigger_later", "trigger_later.fdb", 10) else {
        return;
    };
    let follow = Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(follow_args(&p, &uri, &["--until-idle", "6"]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pg = pg(&uri);
    let arrived = |pg: &mut postgres::Client, sql: &str| {
        for _ in 0..100 {
            if pg.query_one(sql, &[]).unwrap().get::<_, i64>(0) == 1 {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("not applied: {sql}");
    };
    execute(&p.db, &["UPDATE ITEMS SET QTY = 100 WHERE ID = 1"]);
    arrived(
        &mut pg,
        "SELECT count(*) FROM live.items WHERE id = 1 AND qty = 100",
    );
    user_trigger(&mut pg);
    execute(
        &p.db,
        &[
            "UPDATE ITEMS SET QTY = 200 WHERE ID = 1",
            "INSERT INTO ITEMS VALUES (500, 'late', 1, NULL)",
        ],
    );
    arrived(&mut pg, "SELECT count(*) FROM live.items WHERE id = 500");
    let out = follow.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let (firebird, postgres) = shop_sides(&p, &uri);
    assert_eq!(firebird, postgres);
    assert_user_trigger_held(&mut pg);
}

/// A row changed by hand in the target stops a grouped follow, naming
/// the table and the key, whichever of the group's statements meets it;
/// nothing of the group is applied, and the follow goes on once the
/// row is back.
#[test]
fn a_row_changed_by_hand_stops_a_grouped_follow_naming_table_and_key() {
    let Some((uri, _dir, p)) = loaded_shop("follow_by_hand", "by_hand.fdb", 20) else {
        return;
    };
    let mut pg = pg(&uri);
    let follow = |expected: &str| {
        let out = fbunload_alone(&follow_args(&p, &uri, &["--until-idle", "1"]));
        refused_in_one_line(&out, expected);
    };
    let updates: Vec<String> = (1..6)
        .map(|i| format!("UPDATE ITEMS SET QTY = QTY + 10 WHERE ID = {i}"))
        .collect();
    let run = |more: &str| {
        let mut all: Vec<&str> = updates.iter().map(String::as_str).collect();
        all.push(more);
        execute(&p.db, &all);
    };

    // A delete meets no row.
    pg.batch_execute("DELETE FROM live.lines WHERE id = 7")
        .unwrap();
    run("DELETE FROM LINES WHERE ID = 7");
    follow("delete of table LINES row ID='7': the row is not in PostgreSQL as Firebird had it");
    let qty: i32 = pg
        .query_one("SELECT qty FROM live.items WHERE id = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(qty, 1, "nothing of the stopped group is applied");
    pg.batch_execute("INSERT INTO live.lines VALUES (7, 7, 0)")
        .unwrap();
    follow_until_idle(&p, &uri);

    // An update meets no row.
    pg.batch_execute("DELETE FROM live.lines WHERE id = 8")
        .unwrap();
    run("UPDATE LINES SET AMOUNT = 1 WHERE ID = 8");
    follow("update of table LINES row ID='8': the row is not in PostgreSQL as Firebird had it");
    pg.batch_execute("INSERT INTO live.lines VALUES (8, 8, 0)")
        .unwrap();
    follow_until_idle(&p, &uri);

    // An insert meets a row.
    pg.batch_execute("INSERT INTO live.lines VALUES (99, 9, 0)")
        .unwrap();
    run("INSERT INTO LINES VALUES (99, 9, 5)");
    follow("table LINES: a row Firebird inserted is in PostgreSQL already (Key (id)=(99)");
    pg.batch_execute("DELETE FROM live.lines WHERE id = 99")
        .unwrap();
    follow_until_idle(&p, &uri);
    let (firebird, postgres) = shop_sides(&p, &uri);
    assert_eq!(firebird, postgres);
}
