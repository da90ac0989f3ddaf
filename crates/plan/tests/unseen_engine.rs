//! The bound a `--keep-keys` run keeps for the next run and for a
//! follow's hand-off ([`fbunload_plan::incremental::oldest_unseen_sql`]),
//! asked of the embedded engine: a transaction the engine reports with
//! commit number 1 (`CN_PREHISTORIC`) committed before the probe, so the
//! snapshot saw it, and a follow must not apply it again.
//!
//! The engine gives 1 below its oldest kept state, which a probe's oldest
//! active can meet only in a race with transactions ending during a
//! load's start, and to every transaction that committed before the
//! database was last opened. The test takes the second, reproducible
//! case, with marks (probe, oldest active, oldest snapshot) set by hand
//! so that the committed transactions lie where the race puts them:
//! from the oldest snapshot up, below the oldest active.

mod common;

use common::{connect, new_database};
use fbunload_client::{Attachment, Client, Transaction, TransactionMode};
use fbunload_plan::incremental::{read_commit_number, read_unseen, Around};

fn committed_write(att: &Attachment, sql: &str) -> u64 {
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    tr.execute(sql).unwrap();
    let number = tr.number().unwrap();
    tr.commit().unwrap();
    number
}

fn commit_number(tr: &Transaction, number: u64) -> i64 {
    read_commit_number(tr, number).unwrap().unwrap()
}

#[test]
fn a_transaction_with_commit_number_1_is_seen_and_an_active_one_unseen() {
    let client = Client::load(None).expect("the embedded Firebird engine");
    let dir = tempfile::tempdir().unwrap();
    let (path, att) = new_database(&client, dir.path(), "unseen.fdb");
    committed_write(&att, "CREATE TABLE T (N INTEGER)");
    let first = committed_write(&att, "INSERT INTO T VALUES (1)");
    let last = committed_write(&att, "INSERT INTO T VALUES (2)");
    // The last attachment gone: the engine closes the database, and
    // opened again it knows these only as committed before.
    drop(att);
    let att = connect(&client, &path);
    let active = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    active.execute("INSERT INTO T VALUES (3)").unwrap();
    let holder = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    assert_eq!(commit_number(&holder, last), 1, "committed before the open");
    assert_eq!(commit_number(&holder, active.number().unwrap()), 0);
    let transaction = holder.number().unwrap();
    let around = Around {
        probe: transaction,
        probe_oldest_active: transaction,
        probe_oldest_snapshot: first,
        transaction,
        snapshot_number: holder.snapshot_number().unwrap(),
    };
    let (oldest_unseen, unseen_below) = read_unseen(&holder, &around).unwrap();
    assert_eq!(oldest_unseen, transaction);
    assert_eq!(
        unseen_below,
        vec![active.number().unwrap()],
        "{first}..={last} committed before the snapshot"
    );
}
