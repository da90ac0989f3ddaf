//! A held snapshot against the real embedded engine: readers that join it
//! late, one unit at a time, see one state of the data while others
//! write; a closed snapshot cannot be read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::RecordBatch;
use fbunload::{Error, HeldSnapshot, PlanOptions, RunOptions, Unit, Unload};
use fbunload_client::{Client, ConnectOptions};
use fbunload_gen::bank::{self, Writers};
use fbunload_gen::create_test_database;

fn client() -> Arc<Client> {
    Client::load(None).expect("the embedded engine (scripts/setup.sh)")
}

/// The bank ([`fbunload_gen::bank`]) at 4 KiB pages, LEDGER over several
/// pointer pages.
fn bank(dir: &Path) -> PathBuf {
    let db = dir.join("held.fdb");
    let att = create_test_database(&client(), &db.to_string_lossy(), "masterkey", 4096, &[]);
    bank::create(&att).unwrap();
    db
}

fn writers(db: &Path) -> Writers {
    let connect = ConnectOptions {
        database: db.to_string_lossy().into_owned(),
        user: Some("SYSDBA".into()),
        password: Some("masterkey".into()),
        charset: "UTF8".into(),
        ..Default::default()
    };
    Writers::start(&client(), &connect, 2)
}

fn unload(db: &Path) -> Unload {
    Unload::new(db.to_string_lossy())
        .user("SYSDBA")
        .password("masterkey")
        .client(client())
        .tables("ACCOUNTS|LEDGER")
        .options(RunOptions {
            plan: PlanOptions {
                unit_pages: Some(64),
                ..PlanOptions::default()
            },
            ..RunOptions::default()
        })
}

/// Every batch of `units` of table `table`, each unit on a reader that
/// joins the snapshot only when its turn comes, after the writers have
/// committed a few more transfers (waited for, not slept for: a loaded
/// machine can let a fixed pause pass without a single commit).
fn read_late(
    held: &HeldSnapshot,
    writers: &Writers,
    table: usize,
    units: &[Unit],
) -> Vec<RecordBatch> {
    let mut batches = Vec::new();
    for unit in units {
        writers.wait_for(3);
        let mut reader = held.reader(table).unwrap();
        reader
            .read(unit, &mut |batch| {
                batches.push(batch);
                true
            })
            .unwrap();
    }
    batches
}

fn table_index(held: &HeldSnapshot, name: &str) -> usize {
    held.plan
        .tables
        .iter()
        .position(|t| t.name == name)
        .unwrap()
}

/// Reads LEDGER in 4 shares and then ACCOUNTS, every unit on a reader
/// that joins late, and checks that each balance is what the ledger moved.
fn check_books(held: &HeldSnapshot, writers: &Writers, what: &str) {
    let at_start = writers.committed();
    let (ledger, accounts) = (table_index(held, "LEDGER"), table_index(held, "ACCOUNTS"));
    let shares = held.shares(ledger, Some(4)).unwrap();
    assert_eq!(shares.len(), 4, "LEDGER spans several pointer pages");
    // Accounts last: by then many transfers have committed.
    let ledger_batches = read_late(held, writers, ledger, &shares);
    let account_batches = read_late(
        held,
        writers,
        accounts,
        &held.plan.units_of(accounts).copied().collect::<Vec<_>>(),
    );
    assert!(
        writers.committed() > at_start + 10,
        "{what}: the writers must have committed while readers joined"
    );
    let ledger = ledger_batches.iter().flat_map(|batch| {
        let (from, to) = (
            batch.column(0).as_primitive::<Int32Type>(),
            batch.column(1).as_primitive::<Int32Type>(),
        );
        let amount = batch.column(2).as_primitive::<Int64Type>();
        (0..batch.num_rows())
            .map(move |i| (from.value(i) as i64, to.value(i) as i64, amount.value(i)))
    });
    let accounts = account_batches.iter().flat_map(|batch| {
        let (id, value) = (
            batch.column(0).as_primitive::<Int32Type>(),
            batch.column(1).as_primitive::<Int64Type>(),
        );
        (0..batch.num_rows()).map(move |i| (id.value(i) as i64, value.value(i)))
    });
    if let Err(why) = bank::check_books(ledger, accounts) {
        panic!("{what}: {why}");
    }
}

#[test]
fn readers_joining_late_see_the_snapshot_while_others_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let writers = writers(&db);
    for round in 0..3 {
        let held = unload(&db).hold_snapshot().unwrap();
        check_books(&held, &writers, &format!("round {round}"));
    }
}

#[test]
fn closing_one_snapshot_leaves_a_later_one_readable() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let writers = writers(&db);
    let first = unload(&db).hold_snapshot().unwrap();
    // The second finds the first's pin: it shares it instead of waiting.
    // With a pin of its own it would find the first's running, older, and
    // wait all of OLDER_TRANSACTIONS_WAIT: the bound is that wait (half of
    // it was tight for an attach on a loaded machine).
    let started = std::time::Instant::now();
    let second = unload(&db).hold_snapshot().unwrap();
    assert!(
        started.elapsed() < fbunload::OLDER_TRANSACTIONS_WAIT,
        "took {:?}",
        started.elapsed()
    );
    drop(first);
    writers.wait_for(20);
    check_books(&second, &writers, "the second snapshot");
}

#[test]
fn shares_read_at_a_snapshot_equal_one_full_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let unload = unload(&db);
    let held = unload.hold_snapshot().unwrap();
    let ledger = table_index(&held, "LEDGER");
    let whole: Vec<RecordBatch> = unload
        .clone()
        .tables("LEDGER")
        .record_batches()
        .unwrap()
        .map(|item| item.unwrap().batch)
        .collect();
    for count in [1, 3, 7] {
        let shares = held.shares(ledger, Some(count)).unwrap();
        assert_eq!(shares.len(), count);
        // Joined as another process would: by ticket and table name.
        let mut batches = Vec::new();
        for unit in &shares {
            let mut reader = unload
                .join_snapshot(held.ticket().as_ref(), "LEDGER")
                .unwrap();
            assert_eq!(reader.schema(), held.schemas[ledger]);
            let rows = reader
                .read(unit, &mut |batch| {
                    batches.push(batch);
                    true
                })
                .unwrap();
            assert!(rows > 0, "{count} shares: unit {unit:?} is empty");
        }
        assert_eq!(notes(&batches), notes(&whole), "{count} shares");
    }
}

fn notes(batches: &[RecordBatch]) -> Vec<String> {
    batches
        .iter()
        .flat_map(|b| {
            let note = b.column(3).as_string::<i32>();
            (0..b.num_rows()).map(move |i| note.value(i).to_string())
        })
        .collect()
}

#[test]
fn a_closed_snapshot_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let unload = unload(&db);
    let held = unload.hold_snapshot().unwrap();
    let ticket = held.ticket().expect("Firebird 5 shares snapshots");
    unload.join_snapshot(Some(&ticket), "ACCOUNTS").unwrap();
    drop(held);
    // Another snapshot at the same number keeps it joinable: still closed.
    let _other = unload.hold_snapshot().unwrap();
    match unload.join_snapshot(Some(&ticket), "ACCOUNTS") {
        Err(Error::SnapshotClosed { number }) => assert_eq!(number, ticket.number),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("joined a closed snapshot"),
    }
}

#[test]
fn an_unknown_table_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank(dir.path());
    let unload = unload(&db);
    let held = unload.hold_snapshot().unwrap();
    let error = unload
        .join_snapshot(held.ticket().as_ref(), "NO_SUCH")
        .err()
        .expect("no table NO_SUCH");
    assert!(
        error
            .to_string()
            .starts_with("table NO_SUCH: no such table"),
        "{error}"
    );
}
