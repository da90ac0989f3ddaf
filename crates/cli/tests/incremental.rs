//! Incremental unloads (`--since`), against the oracle: a chain of change
//! sets, each applied to the state before it, must give exactly what a
//! full unload at the same snapshot gives, table by table, row by row,
//! value by value, while writers insert, update (primary keys too),
//! delete, delete and insert the same key again, roll back, and keep a
//! transaction open across each run that commits after it. Tables are
//! added, dropped and altered on the way. In CSV (applied here, as text)
//! and Parquet (applied by `fbunload apply`).
//!
//! The writers commit between the runs, never during one: the change set
//! and the full unload it is compared with are two runs, and must see
//! the same data. What is in flight during the runs is the transactions
//! left open across them, which is the hard case.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use common::*;
use fbunload_client::{Attachment, TransactionMode};

/// A small deterministic generator (the seed is printed on failure).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE T (A INTEGER NOT NULL, B VARCHAR(8) NOT NULL, V VARCHAR(40), \
     N NUMERIC(12,2), TS TIMESTAMP, BL BLOB SUB_TYPE TEXT, PRIMARY KEY (A, B))",
    "CREATE TABLE S (ID BIGINT NOT NULL PRIMARY KEY, V DOUBLE PRECISION)",
    "CREATE TABLE NOPK (X INTEGER, Y VARCHAR(10))",
    "CREATE TABLE GONE (ID INTEGER NOT NULL PRIMARY KEY)",
];

fn seed(db: &Path) {
    execute(db, SCHEMA);
    execute(
        db,
        &[
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 3000) DO BEGIN \
             INSERT INTO T VALUES (:I, 'b' || MOD(:I, 5), 'v' || :I, :I / 7.0, \
             TIMESTAMP '2024-01-01 00:00:00' + :I, IIF(MOD(:I, 9) = 0, NULL, 'blob ' || :I)); \
             I = I + 1; END END",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 500) DO BEGIN \
             INSERT INTO S VALUES (:I, :I * 1.5); INSERT INTO GONE VALUES (:I); \
             IF (MOD(:I, 5) = 0) THEN INSERT INTO NOPK VALUES (:I, 'y' || :I); \
             I = I + 1; END END",
        ],
    );
}

/// One random statement of writer `owner` (of 4), touching only the rows
/// of T whose `MOD(A, 4)` is its own, so writers never wait on each other.
fn statement(rng: &mut Rng, owner: u64, next_id: &mut u64) -> Vec<String> {
    let r = rng.below(97);
    let mine = format!("MOD(A, 4) = {owner}");
    match rng.below(8) {
        0 | 1 => {
            *next_id += 4;
            let a = *next_id;
            vec![format!(
                "INSERT INTO T VALUES ({a}, 'b{}', 'new {a}', {}.25, CURRENT_TIMESTAMP, 'x{a}')",
                a % 5,
                rng.below(1000)
            )]
        }
        2 => vec![format!(
            "UPDATE T SET V = 'u{}', N = N + 1, BL = 'changed ' || A WHERE {mine} AND MOD(A, 97) = {r}",
            rng.next()
        )],
        3 => vec![format!(
            "UPDATE T SET A = A + 400000 WHERE {mine} AND MOD(A, 89) = {}",
            r % 89
        )],
        4 => vec![format!("DELETE FROM T WHERE {mine} AND MOD(A, 101) = {r}")],
        5 => {
            // Delete and insert the same key again.
            let a = (rng.below(3000) / 4) * 4 + owner;
            let b = format!("b{}", a % 5);
            vec![
                format!("DELETE FROM T WHERE A = {a} AND B = '{b}'"),
                format!("INSERT INTO T VALUES ({a}, '{b}', 'again', 1.5, NULL, NULL)"),
            ]
        }
        6 => vec![format!(
            "UPDATE S SET V = V + 1 WHERE MOD(ID, 4) = {owner} AND MOD(ID, 13) = {}",
            r % 13
        )],
        _ => vec![
            format!("DELETE FROM NOPK WHERE MOD(X, 4) = {owner} AND MOD(X, 7) = {}", r % 7),
            format!("INSERT INTO NOPK VALUES ({}, 'n')", rng.below(100_000) * 4 + owner),
            format!("UPDATE NOPK SET Y = 'w' WHERE MOD(X, 4) = {owner} AND MOD(X, 11) = {}", r % 11),
        ],
    }
}

/// Writers 0 to 2 at work, each on its own attachment, in transactions of
/// a few statements that commit or (one in five) roll back; a statement
/// that fails (a key taken) rolls its transaction back.
fn write_round(db: &Path, round: u64, seed: u64) {
    std::thread::scope(|scope| {
        for owner in 0..3u64 {
            scope.spawn(move || {
                let att = connect(db);
                let mut rng = Rng(seed ^ (round * 131 + owner + 1));
                let mut next_id = 10_000 + round * 100_000 + owner;
                for _ in 0..25 {
                    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
                    let mut ok = true;
                    for _ in 0..1 + rng.below(4) {
                        for sql in statement(&mut rng, owner, &mut next_id) {
                            ok &= tr.execute(&sql).is_ok();
                        }
                    }
                    if ok && rng.below(5) != 0 {
                        tr.commit().unwrap();
                    } // else dropped: rolled back
                }
            });
        }
    });
}

/// Writer 3's transaction, started and written before a run and left
/// open across it.
fn open_writer(att: &Attachment, round: u64, seed: u64) -> fbunload_client::Transaction {
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    let mut rng = Rng(seed ^ (round * 7 + 99));
    let mut next_id = 20_000 + round * 100_000 + 3;
    for _ in 0..6 {
        for sql in statement(&mut rng, 3, &mut next_id) {
            let _ = tr.execute(&sql);
        }
    }
    tr
}

/// A table's rows as text, sorted: every value, by table name.
type Rows = BTreeMap<String, Vec<Vec<String>>>;

fn data_files(manifest: &serde_json::Value, table: &serde_json::Value, role: Option<&str>) -> Vec<String> {
    let _ = manifest;
    table["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["role"].as_str() == role)
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect()
}

fn csv_of(dir: &Path, files: &[String]) -> Vec<Vec<String>> {
    files.iter().flat_map(|f| csv_records(&dir.join(f))).collect()
}

/// A full run's (or a state's) tables, as CSV records.
fn csv_tables(dir: &Path) -> Rows {
    let manifest = read_manifest(dir);
    let mut rows = Rows::new();
    for table in manifest["tables"].as_array().unwrap() {
        let mut records = csv_of(dir, &data_files(&manifest, table, None));
        records.sort();
        rows.insert(table["name"].as_str().unwrap().into(), records);
    }
    rows
}

/// Applies the CSV change set in `changes` to `state`, as text: the CSV
/// writer writes one value the same way every time.
fn apply_csv(state: &Rows, changes: &Path) -> Rows {
    let manifest = read_manifest(changes);
    let mut next = Rows::new();
    for table in manifest["tables"].as_array().unwrap() {
        let name = table["name"].as_str().unwrap().to_string();
        let change = &table["change"];
        let mut records = if change["mode"] == "changes" {
            let columns: Vec<&str> = table["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect();
            let key: Vec<usize> = change["primary_key"]
                .as_array()
                .unwrap()
                .iter()
                .map(|k| columns.iter().position(|c| c == k).unwrap())
                .collect();
            let upserts = csv_of(changes, &data_files(&manifest, table, Some("upserts")));
            let deletes = csv_of(changes, &data_files(&manifest, table, Some("deletes")));
            let key_of = |r: &Vec<String>| key.iter().map(|&i| r[i].clone()).collect::<Vec<_>>();
            let mut gone: std::collections::HashSet<Vec<String>> = deletes.into_iter().collect();
            gone.extend(upserts.iter().map(key_of));
            let mut kept: Vec<Vec<String>> = state[&name]
                .iter()
                .filter(|r| !gone.contains(&key_of(r)))
                .cloned()
                .collect();
            kept.extend(upserts);
            kept
        } else {
            csv_of(changes, &data_files(&manifest, table, None))
        };
        records.sort();
        next.insert(name, records);
    }
    next
}

/// Every value of a Parquet run's (or state's) tables as text, sorted.
fn parquet_tables(dir: &Path) -> Rows {
    let manifest = read_manifest(dir);
    let mut rows = Rows::new();
    for table in manifest["tables"].as_array().unwrap() {
        let mut records = Vec::new();
        for file in data_files(&manifest, table, None) {
            let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
                std::fs::File::open(dir.join(&file)).unwrap(),
            )
            .unwrap()
            .build()
            .unwrap();
            for batch in reader {
                let batch: RecordBatch = batch.unwrap();
                for row in 0..batch.num_rows() {
                    records.push(
                        batch
                            .columns()
                            .iter()
                            .map(|c| format!("{:?}", c.slice(row, 1)))
                            .collect(),
                    );
                }
            }
        }
        records.sort();
        rows.insert(table["name"].as_str().unwrap().into(), records);
    }
    rows
}

fn run(db: &Path, args: &[&str]) {
    let out = fbunload(db, args);
    assert!(out.status.success(), "fbunload {args:?}: {}", stderr(&out));
}

fn check(dir: &Path) {
    let out = fbunload_check(dir);
    assert!(
        out.status.success(),
        "check {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The writers of a test and the runs in their processes share a
/// database: the engine in SuperClassic mode, for this test binary and
/// the runs it starts.
fn superclassic() {
    static RUNTIME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let runtime = dir.join("runtime");
        runtime_in_mode(&embedded_runtime(), &runtime, "SuperClassic");
        std::env::set_var("FIREBIRD", &runtime);
        runtime
    });
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_chain_of_change_sets_applied_is_a_full_unload_at_the_same_snapshot() {
    let seed_value: u64 = std::env::var("FBUNLOAD_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_126);
    eprintln!("seed {seed_value} (FBUNLOAD_TEST_SEED)");
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "inc.fdb", 4096);
    seed(&db);
    let at = |name: String| -> PathBuf { dir.path().join(name) };
    let long_att = connect(&db);
    // Open before the first run, committed after it.
    let mut long = Some(open_writer(&long_att, 0, seed_value));
    let (csv0, pq0) = (at("csv0".into()), at("pq0".into()));
    run(&db, &["--keep-keys", "-j", "3", "-o", path(&csv0)]);
    run(&db, &["--keep-keys", "-j", "2", "-f", "parquet", "-o", path(&pq0)]);
    let mut csv_state = csv_tables(&csv0);
    let mut pq_state = pq0.clone();
    let mut previous = (csv0, pq0);
    for round in 1..=4u64 {
        long.take().unwrap().commit().unwrap();
        write_round(&db, round, seed_value);
        match round {
            2 => execute(&db, &["CREATE TABLE NEWT (ID INTEGER NOT NULL PRIMARY KEY)",
                                "INSERT INTO NEWT VALUES (1)"]),
            3 => execute(&db, &["DROP TABLE GONE", "ALTER TABLE S ADD X INTEGER"]),
            _ => {}
        }
        long = Some(open_writer(&long_att, round, seed_value));
        let (csv, pq) = (at(format!("csv{round}")), at(format!("pq{round}")));
        let (csv_full, pq_full) = (at(format!("csvfull{round}")), at(format!("pqfull{round}")));
        run(&db, &["--since", path(&previous.0), "-j", "3", "-o", path(&csv)]);
        run(&db, &["--since", path(&previous.1), "-j", "2", "-f", "parquet", "-o", path(&pq)]);
        run(&db, &["-o", path(&csv_full)]);
        run(&db, &["-f", "parquet", "-o", path(&pq_full)]);
        check(&csv);
        check(&pq);

        let manifest = read_manifest(&csv);
        let t = manifest_entry(&manifest, "T");
        assert_eq!(t["change"]["mode"], "changes", "{t}");
        assert_eq!(manifest_entry(&manifest, "NOPK")["change"]["mode"], "full");
        assert_eq!(
            manifest["incremental"]["since"]["snapshot_number"],
            read_manifest(&previous.0)["snapshot_number"]
        );
        if round == 2 {
            assert_eq!(manifest_entry(&manifest, "NEWT")["change"]["mode"], "full");
        }
        if round == 3 {
            assert_eq!(manifest["incremental"]["dropped"], serde_json::json!(["GONE"]));
            assert_eq!(manifest_entry(&manifest, "S")["change"]["mode"], "full");
        }
        // Far fewer rows than the table: the change, not a copy.
        let upserts = t["rows"].as_u64().unwrap();
        assert!(upserts < count(&db, "T") as u64 / 2, "{upserts} upserts");

        csv_state = apply_csv(&csv_state, &csv);
        let full = csv_tables(&csv_full);
        assert_eq!(csv_state.keys().collect::<Vec<_>>(), full.keys().collect::<Vec<_>>());
        for (name, rows) in &full {
            assert_eq!(&csv_state[name], rows, "CSV table {name}, round {round}, seed {seed_value}");
        }

        let state = at(format!("pqstate{round}"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
            .args(["apply", path(&pq_state), path(&pq), "-o", path(&state)])
            .output()
            .unwrap();
        assert!(out.status.success(), "apply: {}", stderr(&out));
        check(&state);
        let (applied, full) = (parquet_tables(&state), parquet_tables(&pq_full));
        assert_eq!(applied.keys().collect::<Vec<_>>(), full.keys().collect::<Vec<_>>());
        for (name, rows) in &full {
            assert_eq!(&applied[name], rows, "Parquet table {name}, round {round}, seed {seed_value}");
        }
        pq_state = state;
        previous = (csv, pq);
    }
    drop(long);
    let _ = Arc::new(());
}

/// A small database and a full run of it that keeps its keys.
fn base(dir: &Path) -> (PathBuf, PathBuf) {
    superclassic();
    let db = create_db(dir, "small.fdb", 4096);
    execute(&db, SCHEMA);
    execute(&db, &["INSERT INTO T VALUES (1, 'b', 'v', 1, NULL, NULL)", "INSERT INTO S VALUES (1, 2)"]);
    let old = dir.join("old");
    run(&db, &["--keep-keys", "-o", path(&old)]);
    (db, old)
}

fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut manifest = read_manifest(dir);
    edit(&mut manifest);
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec(&manifest).unwrap()).unwrap();
}

#[test]
fn a_previous_run_read_back_is_checked_before_it_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    let new = dir.path().join("new");
    let since = |old: &Path| fbunload(&db, &["--since", path(old), "-o", path(&new)]);
    let keys = old.join("T.keys.parquet");
    let original = std::fs::read(&keys).unwrap();

    // A keys file changed since its run: refused, nothing written.
    let mut changed = original.clone();
    let last = changed.len() - 20;
    changed[last] ^= 1;
    std::fs::write(&keys, &changed).unwrap();
    assert_refused_in_one_line(&since(&old), "--since");
    assert!(stderr(&since(&old)).contains("SHA-256"), "{}", stderr(&since(&old)));
    assert!(!new.exists());
    std::fs::write(&keys, &original).unwrap();

    // A link in its place, even to the same bytes: not followed.
    #[cfg(unix)]
    {
        let elsewhere = dir.path().join("elsewhere.parquet");
        std::fs::write(&elsewhere, &original).unwrap();
        std::fs::remove_file(&keys).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &keys).unwrap();
        let out = since(&old);
        assert_refused_in_one_line(&out, "--since");
        assert!(stderr(&out).contains("not a plain file"), "{}", stderr(&out));
        std::fs::remove_file(&keys).unwrap();
        std::fs::write(&keys, &original).unwrap();
    }

    // A manifest that names a file outside its directory.
    let outside = dir.path().join("outside.parquet");
    std::fs::write(&outside, &original).unwrap();
    let saved = std::fs::read(old.join("manifest.json")).unwrap();
    edit_manifest(&old, |m| {
        for t in m["tables"].as_array_mut().unwrap() {
            let is_t = t["name"] == "T";
            for f in t["files"].as_array_mut().unwrap() {
                if f["role"] == "keys" && is_t {
                    f["name"] = "../outside.parquet".into();
                }
            }
        }
    });
    let out = since(&old);
    assert_refused_in_one_line(&out, "--since");
    assert!(stderr(&out).contains("refused"), "{}", stderr(&out));
    std::fs::write(old.join("manifest.json"), &saved).unwrap();

    // A run that kept no keys cannot start a chain.
    let plain = dir.path().join("plain");
    run(&db, &["-o", path(&plain)]);
    let out = since(&plain);
    assert_refused_in_one_line(&out, "--since");
    assert!(stderr(&out).contains("--keep-keys"), "{}", stderr(&out));

    // As it was, it works; and apply refuses a change set of another run.
    run(&db, &["--since", path(&old), "-o", path(&new)]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(["apply", path(&plain), path(&new), "-o", path(&dir.path().join("state"))])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("another run"), "{}", stderr(&out));
}

#[test]
fn a_database_restored_or_replaced_since_is_unloaded_whole_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    for (field, value, why) in [
        ("database_guid", serde_json::json!("{00000000-0000-0000-0000-000000000000}"), "GUID"),
        ("transaction", serde_json::json!(1u64 << 40), "went back"),
    ] {
        let copy = dir.path().join(format!("old-{field}"));
        std::fs::create_dir(&copy).unwrap();
        for entry in std::fs::read_dir(&old).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
        edit_manifest(&copy, |m| m["incremental"][field] = value);
        let new = dir.path().join(format!("new-{field}"));
        run(&db, &["--since", path(&copy), "-o", path(&new)]);
        let manifest = read_manifest(&new);
        for name in ["T", "S", "NOPK", "GONE"] {
            let change = &manifest_entry(&manifest, name)["change"];
            assert_eq!(change["mode"], "full", "{name}: {change}");
            assert!(change["reason"].as_str().unwrap().contains(why), "{change}");
        }
        assert!(new.join("T.csv").exists() && !new.join("T.upserts.csv").exists());
        check(&new);
    }
}
