//! The oracle of incremental unloads (tests/incremental.rs, and over TCP
//! tests/server_fb5.rs): a chain of change sets, each applied to the state
//! before it, against a full unload at the same snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use arrow_array::{Array, RecordBatch};
use fbunload_client::{Attachment, TransactionMode};

use super::{csv_records, fbunload_check, manifest_entry, read_manifest, stderr};

/// Where the chain runs: writers' attachments, and fbunload against the
/// database (`-d` and credentials given).
pub struct Target<'a> {
    pub connect: &'a (dyn Fn() -> Attachment + Sync),
    pub fbunload: &'a (dyn Fn(&[&str]) -> Output + Sync),
    /// Where the runs go.
    pub scratch: &'a Path,
}

impl Target<'_> {
    fn execute(&self, statements: &[&str]) {
        let att = (self.connect)();
        for sql in statements {
            let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
            tr.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            tr.commit().unwrap();
        }
    }

    fn count(&self, table: &str) -> u64 {
        let att = (self.connect)();
        let tr = att
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .unwrap();
        let mut stmt = tr
            .prepare(&format!("SELECT COUNT(*) FROM {table}"))
            .unwrap();
        stmt.execute().unwrap();
        assert!(stmt.fetch().unwrap());
        i64::from_ne_bytes(stmt.row().value(0).unwrap().try_into().unwrap()) as u64
    }

    pub fn run(&self, args: &[&str]) {
        let out = (self.fbunload)(args);
        assert!(out.status.success(), "fbunload {args:?}: {}", stderr(&out));
    }
}

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

pub const SCHEMA: &[&str] = &[
    "CREATE TABLE T (A INTEGER NOT NULL, B VARCHAR(8) NOT NULL, V VARCHAR(40), \
     N NUMERIC(12,2), TS TIMESTAMP, BL BLOB SUB_TYPE TEXT, PRIMARY KEY (A, B))",
    "CREATE TABLE S (ID BIGINT NOT NULL PRIMARY KEY, V DOUBLE PRECISION)",
    "CREATE TABLE NOPK (X INTEGER, Y VARCHAR(10))",
    "CREATE TABLE GONE (ID INTEGER NOT NULL PRIMARY KEY)",
    // Over two pointer pages at 4 KiB pages: read in several units, whose
    // counts find the rows deleted from them.
    "CREATE TABLE WIDE (ID INTEGER NOT NULL PRIMARY KEY, PAD VARCHAR(400))",
];

pub fn seed(t: &Target) {
    t.execute(SCHEMA);
    t.execute(&[
        "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 3000) DO BEGIN \
             INSERT INTO T VALUES (:I, 'b' || MOD(:I, 5), 'v' || :I, :I / 7.0, \
             TIMESTAMP '2024-01-01 00:00:00' + :I, IIF(MOD(:I, 9) = 0, NULL, 'blob ' || :I)); \
             I = I + 1; END END",
        "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 500) DO BEGIN \
             INSERT INTO S VALUES (:I, :I * 1.5); INSERT INTO GONE VALUES (:I); \
             IF (MOD(:I, 5) = 0) THEN INSERT INTO NOPK VALUES (:I, 'y' || :I); \
             I = I + 1; END END",
        // Padding the engine's run-length compression cannot shrink.
        "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 9000) DO BEGIN \
             INSERT INTO WIDE VALUES (:I, RPAD('', 400, 'w' || :I)); \
             I = I + 1; END END",
    ]);
}

/// One random statement of writer `owner` (of 4), touching only the rows
/// of T whose `MOD(A, 4)` is its own, so writers never wait on each other.
fn statement(rng: &mut Rng, owner: u64, next_id: &mut u64) -> Vec<String> {
    let r = rng.below(97);
    let mine = format!("MOD(A, 4) = {owner}");
    let wide = format!("MOD(ID, 4) = {owner}");
    match rng.below(11) {
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
        8 => vec![
            // A few rows here and there: most units of WIDE lose one.
            format!("DELETE FROM WIDE WHERE {wide} AND MOD(ID, 389) = {}", r % 97),
            format!("UPDATE WIDE SET PAD = 'u' || ID WHERE {wide} AND MOD(ID, 211) = {r}"),
        ],
        9 => {
            let id = (rng.below(9000) / 4) * 4 + owner;
            vec![
                format!("UPDATE WIDE SET ID = ID + 1000000 WHERE {wide} AND MOD(ID, 307) = {r}"),
                format!("DELETE FROM WIDE WHERE ID = {id}"),
                format!("INSERT INTO WIDE VALUES ({id}, 'again')"),
            ]
        }
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
fn write_round(t: &Target, round: u64, seed: u64) {
    std::thread::scope(|scope| {
        for owner in 0..3u64 {
            scope.spawn(move || {
                let att = (t.connect)();
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

fn data_files(
    manifest: &serde_json::Value,
    table: &serde_json::Value,
    role: Option<&str>,
) -> Vec<String> {
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
    files
        .iter()
        .flat_map(|f| csv_records(&dir.join(f)))
        .collect()
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

pub fn check(dir: &Path) {
    let out = fbunload_check(dir);
    assert!(
        out.status.success(),
        "check {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout)
    );
}

pub fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs the chain (module docs) on a new database `t` reaches.
pub fn chain(t: &Target) {
    let seed_value: u64 = std::env::var("FBUNLOAD_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_126);
    eprintln!("seed {seed_value} (FBUNLOAD_TEST_SEED)");
    seed(t);
    let at = |name: String| -> PathBuf { t.scratch.join(name) };
    let long_att = (t.connect)();
    // Open before the first run, committed after it.
    let mut long = Some(open_writer(&long_att, 0, seed_value));
    let (csv0, pq0) = (at("csv0".into()), at("pq0".into()));
    t.run(&["--keep-keys", "-j", "3", "-o", path(&csv0)]);
    t.run(&["--keep-keys", "-j", "2", "-f", "parquet", "-o", path(&pq0)]);
    let mut csv_state = csv_tables(&csv0);
    let mut pq_state = pq0.clone();
    let mut previous = (csv0, pq0);
    let mut rechecked = 0;
    for round in 1..=4u64 {
        long.take().unwrap().commit().unwrap();
        write_round(t, round, seed_value);
        match round {
            2 => t.execute(&[
                "CREATE TABLE NEWT (ID INTEGER NOT NULL PRIMARY KEY)",
                "INSERT INTO NEWT VALUES (1)",
            ]),
            3 => t.execute(&["DROP TABLE GONE", "ALTER TABLE S ADD X INTEGER"]),
            _ => {}
        }
        long = Some(open_writer(&long_att, round, seed_value));
        let (csv, pq) = (at(format!("csv{round}")), at(format!("pq{round}")));
        let (csv_full, pq_full) = (at(format!("csvfull{round}")), at(format!("pqfull{round}")));
        t.run(&["--since", path(&previous.0), "-j", "3", "-o", path(&csv)]);
        t.run(&[
            "--since",
            path(&previous.1),
            "-j",
            "2",
            "-f",
            "parquet",
            "-o",
            path(&pq),
        ]);
        t.run(&["-o", path(&csv_full)]);
        t.run(&["-f", "parquet", "-o", path(&pq_full)]);
        check(&csv);
        check(&pq);

        let manifest = read_manifest(&csv);
        let entry = manifest_entry(&manifest, "T");
        assert_eq!(entry["change"]["mode"], "changes", "{entry}");
        assert_eq!(manifest_entry(&manifest, "NOPK")["change"]["mode"], "full");
        assert_eq!(
            manifest["incremental"]["since"]["snapshot_number"],
            read_manifest(&previous.0)["snapshot_number"]
        );
        if round == 2 {
            assert_eq!(manifest_entry(&manifest, "NEWT")["change"]["mode"], "full");
        }
        if round == 3 {
            assert_eq!(
                manifest["incremental"]["dropped"],
                serde_json::json!(["GONE"])
            );
            assert_eq!(manifest_entry(&manifest, "S")["change"]["mode"], "full");
        }
        // WIDE is read in units, and its counts found some that lost a row.
        let wide = manifest_entry(&manifest, "WIDE");
        assert_eq!(wide["change"]["mode"], "changes", "{wide}");
        rechecked += wide["change"]["rechecked_units"].as_u64().unwrap();
        // Far fewer rows than the table: the change, not a copy.
        let upserts = entry["rows"].as_u64().unwrap();
        assert!(upserts < Target::count(t, "T") / 2, "{upserts} upserts");

        csv_state = apply_csv(&csv_state, &csv);
        let full = csv_tables(&csv_full);
        assert_eq!(
            csv_state.keys().collect::<Vec<_>>(),
            full.keys().collect::<Vec<_>>()
        );
        for (name, rows) in &full {
            assert_eq!(
                &csv_state[name], rows,
                "CSV table {name}, round {round}, seed {seed_value}"
            );
        }

        let state = at(format!("pqstate{round}"));
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
            .args(["apply", path(&pq_state), path(&pq), "-o", path(&state)])
            .output()
            .unwrap();
        assert!(out.status.success(), "apply: {}", stderr(&out));
        check(&state);
        let (applied, full) = (parquet_tables(&state), parquet_tables(&pq_full));
        assert_eq!(
            applied.keys().collect::<Vec<_>>(),
            full.keys().collect::<Vec<_>>()
        );
        for (name, rows) in &full {
            assert_eq!(
                &applied[name], rows,
                "Parquet table {name}, round {round}, seed {seed_value}"
            );
        }
        pq_state = state;
        previous = (csv, pq);
    }
    assert!(rechecked > 0, "no unit of WIDE was rechecked");
    drop(long);
}
