//! Reliability, in process against the real embedded engine (one process,
//! so that test connections and the unload share the embedded database):
//! one consistent snapshot under concurrent writers, killed worker
//! attachments, a lost main attachment; files and record batches alike.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use fbunload::format::csv::{CsvFormat, CsvOptions};
use fbunload::{BatchLimits, Error, Format, PlanOptions, Progress, RunOptions, Summary, Unload};
use fbunload_client::{Attachment, Client, ConnectOptions, TransactionMode};

fn client() -> Arc<Client> {
    Client::load(None).expect("the embedded engine (scripts/setup.sh)")
}

fn options(db: &Path) -> ConnectOptions {
    ConnectOptions {
        database: db.to_string_lossy().into_owned(),
        user: Some("SYSDBA".into()),
        password: Some("masterkey".into()),
        charset: "UTF8".into(),
        ..Default::default()
    }
}

fn create(dir: &Path, statements: &[&str]) -> PathBuf {
    let db = dir.join("r.fdb");
    let path = db.to_string_lossy();
    fbunload_gen::create_test_database(&client(), &path, "masterkey", 4096, statements);
    db
}

fn unload(db: &Path, parallel: usize) -> Unload {
    Unload::new(db.to_string_lossy())
        .user("SYSDBA")
        .password("masterkey")
        .client(client())
        .memory_budget(1 << 20)
        .options(RunOptions {
            parallel,
            plan: PlanOptions {
                unit_pages: Some(64),
                ..PlanOptions::default()
            },
            // Small batches: many chances for faults to land mid-unit.
            batch: BatchLimits {
                rows: 256,
                bytes: 1 << 20,
            },
            verify: true,
            ..RunOptions::default()
        })
}

/// CSV without its header line: every line is a row to these tests.
fn csv() -> Format {
    Format::bytes(CsvFormat::new(CsvOptions {
        header: false,
        ..CsvOptions::default()
    }))
}

fn to_directory(unload: &Unload, out: &Path, progress: &dyn Progress) -> Result<Summary, Error> {
    unload.to_directory(out, csv(), progress)
}

fn records(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// The table files in `dir` (not the run's manifest, which records times).
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n != fbunload::MANIFEST_NAME)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

const ACCOUNTS: i64 = 500;
const START_BALANCE: i64 = 1000;

/// ACCOUNTS and a LEDGER of every transfer: each account's balance is its
/// start balance plus what the ledger moved in, minus what it moved out.
/// LEDGER starts with enough filler rows to span several pointer pages.
fn bank(dir: &Path) -> PathBuf {
    create(
        dir,
        &[
            "CREATE TABLE ACCOUNTS (ID INTEGER NOT NULL PRIMARY KEY, BALANCE BIGINT NOT NULL)",
            "CREATE TABLE LEDGER (ID BIGINT NOT NULL, FROM_ID INTEGER, TO_ID INTEGER, AMOUNT BIGINT, \
               NOTE VARCHAR(40))",
            "CREATE TABLE CHURN (ID BIGINT NOT NULL, PAD VARCHAR(60))",
            "CREATE SEQUENCE LEDGER_SEQ",
            &format!(
                "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {ACCOUNTS}) DO BEGIN \
                   INSERT INTO ACCOUNTS VALUES (:I, {START_BALANCE}); I = I + 1; END END"
            ),
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 60000) DO BEGIN \
               INSERT INTO LEDGER VALUES (NEXT VALUE FOR LEDGER_SEQ, 0, 0, 0, 'filler ' || (:I * 7919)); \
               INSERT INTO CHURN VALUES (:I, 'churn ' || (:I * 104729)); \
               I = I + 1; END END",
        ],
    )
}

/// Moves money and churns rows in committed transactions until `stop`.
fn writer(db: PathBuf, seed: i64, stop: Arc<AtomicBool>, committed: Arc<AtomicU64>) {
    let att = Attachment::connect(&client(), &options(&db)).unwrap();
    let mut n = seed;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let (from, to, amount) = ((n * 7919) % ACCOUNTS, (n * 104729) % ACCOUNTS, n % 97 + 1);
        let block = format!(
            "EXECUTE BLOCK AS BEGIN \
               UPDATE ACCOUNTS SET BALANCE = BALANCE - {amount} WHERE ID = {from}; \
               UPDATE ACCOUNTS SET BALANCE = BALANCE + {amount} WHERE ID = {to}; \
               INSERT INTO LEDGER VALUES (NEXT VALUE FOR LEDGER_SEQ, {from}, {to}, {amount}, 'transfer'); \
               INSERT INTO CHURN VALUES ({}, 'new'); \
               DELETE FROM CHURN WHERE ID = {}; \
             END",
            1_000_000 + n,
            n % 60000
        );
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        match tr.execute(&block) {
            Ok(()) => {
                tr.commit().unwrap();
                committed.fetch_add(1, Ordering::Relaxed);
            }
            // Two writers may update the same account: an update conflict
            // rolls this transfer back, which keeps the invariant.
            Err(_) => drop(tr),
        }
    }
}

fn check_invariant(out: &Path) {
    let mut balance = vec![START_BALANCE; ACCOUNTS as usize];
    for r in records(&out.join("LEDGER.csv")) {
        let (from, to, amount): (usize, usize, i64) = (
            r[1].parse().unwrap(),
            r[2].parse().unwrap(),
            r[3].parse().unwrap(),
        );
        balance[from] -= amount;
        balance[to] += amount;
    }
    let accounts = records(&out.join("ACCOUNTS.csv"));
    assert_eq!(accounts.len(), ACCOUNTS as usize);
    for r in accounts {
        let id: usize = r[0].parse().unwrap();
        assert_eq!(
            r[1].parse::<i64>().unwrap(),
            balance[id],
            "account {id}: ACCOUNTS.csv and LEDGER.csv are from different moments"
        );
    }
}

#[test]
fn files_show_one_snapshot_while_others_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..2)
        .map(|seed| {
            let (db, stop, committed) = (db.clone(), stop.clone(), committed.clone());
            std::thread::spawn(move || writer(db, seed * 1_000_000, stop, committed))
        })
        .collect();
    while committed.load(Ordering::Relaxed) < 50 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for round in 0..3 {
        let before = committed.load(Ordering::Relaxed);
        let out = dir.path().join(format!("out{round}"));
        let summary = to_directory(&unload(&db, 3), &out, &fbunload::Silent)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert!(summary.verified);
        check_invariant(&out);
        assert!(
            committed.load(Ordering::Relaxed) > before,
            "round {round}: the writers must have committed during the unload"
        );
    }
    stop.store(true, Ordering::SeqCst);
    writers.into_iter().for_each(|w| w.join().unwrap());
}

/// Runs `action` once, on another thread, after `after_rows` rows were read.
struct FaultAfter {
    after_rows: u64,
    rows: AtomicU64,
    fired: AtomicBool,
    action: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    warnings: Mutex<Vec<String>>,
}

impl FaultAfter {
    fn new(after_rows: u64, action: impl FnOnce() + Send + 'static) -> Self {
        FaultAfter {
            after_rows,
            rows: AtomicU64::new(0),
            fired: AtomicBool::new(false),
            action: Mutex::new(Some(Box::new(action))),
            warnings: Mutex::new(Vec::new()),
        }
    }
}

impl Progress for FaultAfter {
    fn rows_read(&self, rows: u64) {
        let total = self.rows.fetch_add(rows, Ordering::SeqCst) + rows;
        if total >= self.after_rows && !self.fired.swap(true, Ordering::SeqCst) {
            let action = self.action.lock().unwrap().take().unwrap();
            // Not on the worker's own thread: the kill must hit it mid-unit.
            std::thread::spawn(action).join().unwrap();
        }
    }

    fn warning(&self, message: &str) {
        self.warnings.lock().unwrap().push(message.to_string());
    }
}

/// Deletes attachments from MON$ATTACHMENTS: workers run without garbage
/// collection (MON$GARBAGE_COLLECTION = 0), the main attachment with it.
/// The kill takes effect when the DELETE runs; rolling back afterwards
/// keeps the killer from committing anything after the snapshot.
fn kill(db: &Path, garbage_collection: i32) -> impl FnOnce() + Send + 'static {
    let db = db.to_path_buf();
    move || {
        let att = Attachment::connect(&client(), &options(&db)).unwrap();
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        tr.execute(&format!(
            "DELETE FROM MON$ATTACHMENTS WHERE MON$ATTACHMENT_ID <> CURRENT_CONNECTION \
             AND MON$GARBAGE_COLLECTION = {garbage_collection} AND MON$SYSTEM_FLAG = 0"
        ))
        .unwrap();
        drop(tr);
    }
}

fn undisturbed(db: &Path, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let out = dir.join("reference");
    to_directory(&unload(db, 2), &out, &fbunload::Silent).unwrap();
    file_names(&out)
        .into_iter()
        .map(|n| (n.clone(), std::fs::read(out.join(&n)).unwrap()))
        .collect()
}

#[test]
fn killed_worker_attachments_are_replaced_and_their_units_redone() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let reference = undisturbed(&db, dir.path());

    let out = dir.path().join("out");
    let fault = FaultAfter::new(5_000, kill(&db, 0));
    let summary: Summary = to_directory(&unload(&db, 2), &out, &fault).unwrap();
    assert!(fault.fired.load(Ordering::SeqCst));
    assert!(summary.retries >= 1, "no unit was redone");
    assert!(!fault.warnings.lock().unwrap().is_empty());
    let got: Vec<_> = file_names(&out)
        .into_iter()
        .map(|n| (n.clone(), std::fs::read(out.join(&n)).unwrap()))
        .collect();
    assert!(
        got == reference,
        "the redone units must give the same bytes"
    );
}

#[test]
fn without_retries_a_killed_worker_fails_the_run_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let out = dir.path().join("out");
    let base = unload(&db, 2);
    let no_retries = base.clone().options(RunOptions {
        max_retries: 0,
        ..base.run_options().clone()
    });
    let fault = FaultAfter::new(5_000, kill(&db, 0));
    let err = to_directory(&no_retries, &out, &fault).unwrap_err();
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err}");
    assert!(err.to_string().contains("connection was lost"), "{err}");
    let left = file_names(&out);
    assert!(
        left.iter()
            .all(|n| n.ends_with(".csv") && !n.contains("partial")),
        "only complete files may remain: {left:?}"
    );
    assert!(
        !left.contains(&"LEDGER.csv".to_string()),
        "LEDGER cannot be complete: {left:?}"
    );
}

#[test]
fn losing_the_main_attachment_stops_the_run_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let reference = undisturbed(&db, dir.path());
    let out = dir.path().join("out");
    let fault = FaultAfter::new(2_000, kill(&db, 1));
    let err = to_directory(&unload(&db, 2), &out, &fault).unwrap_err();
    assert!(
        err.to_string().contains("main attachment was lost"),
        "{err}"
    );
    // A table that finished before the loss was noticed was read at the
    // snapshot by the workers' own transactions and may stay; anything
    // else must be gone. So every file left equals the undisturbed one.
    for name in file_names(&out) {
        let expected = reference.iter().find(|(n, _)| *n == name);
        let got = std::fs::read(out.join(&name)).unwrap();
        assert!(
            expected.is_some_and(|(_, bytes)| *bytes == got),
            "{name} was left behind but is not the complete table"
        );
    }
}

/// LEDGER's IDs as the record batches bring them, with the summary.
fn streamed_ledger_ids(db: &Path, parallel: usize) -> (Vec<i64>, Summary) {
    let mut batches = unload(db, parallel)
        .memory_budget(64 << 10)
        .record_batches()
        .unwrap();
    let ledger = batches
        .plan()
        .tables
        .iter()
        .position(|t| t.name == "LEDGER")
        .unwrap();
    let mut ids = Vec::new();
    for item in batches.by_ref() {
        let item = item.unwrap();
        if item.table == ledger {
            ids.extend(
                item.batch
                    .column(0)
                    .as_primitive::<Int64Type>()
                    .values()
                    .iter(),
            );
        }
    }
    (ids, batches.finish().unwrap())
}

#[test]
fn record_batches_come_in_file_order_whatever_the_workers() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let reference = undisturbed(&db, dir.path());
    let (_, ledger_csv) = reference.iter().find(|(n, _)| n == "LEDGER.csv").unwrap();
    let expected: Vec<i64> = String::from_utf8_lossy(ledger_csv)
        .lines()
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    for parallel in [1, 3] {
        let (ids, summary) = streamed_ledger_ids(&db, parallel);
        assert_eq!(ids.len(), expected.len(), "parallel {parallel}");
        assert!(
            ids == expected,
            "parallel {parallel}: not in the files' order"
        );
        assert!(summary.verified);
    }
}

#[test]
fn dropping_record_batches_half_way_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let mut batches = unload(&db, 2)
        .memory_budget(64 << 10)
        .record_batches()
        .unwrap();
    batches.next().unwrap().unwrap();
    let started = std::time::Instant::now();
    drop(batches);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the run must stop promptly"
    );
}
