//! The bank the resume tests (tests/resume.rs into files,
//! tests/postgres_resume.rs into PostgreSQL) write to while a run is
//! killed and resumed: accounts whose balances keep one SUM, a history
//! of every transaction, and with `ledger` a table without a key; the
//! writers and the runs share the engine in SuperClassic mode.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use fbunload_client::TransactionMode;

use super::{connect, create_db, execute, runtime_of_this_process};

/// Each account's opening balance.
pub const OPENING: i64 = 1_000;

/// The engine in SuperClassic mode, for this test binary and the runs it
/// starts (they inherit `FIREBIRD`).
pub fn superclassic() {
    static RUNTIME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        let runtime = runtime_of_this_process("SuperClassic");
        std::env::set_var("FIREBIRD", &runtime);
        runtime
    });
}

/// `dir/name`: `accounts` accounts of [`OPENING`] each, an empty HISTORY
/// and, with `ledger`, LEDGER (no key) with a row for every 4th account.
pub fn bank(dir: &Path, name: &str, accounts: i64, ledger: bool) -> PathBuf {
    superclassic();
    let db = create_db(dir, name, 4096);
    let mut tables = vec![
        "CREATE TABLE ACCOUNTS (ID INTEGER NOT NULL PRIMARY KEY, BALANCE BIGINT NOT NULL, \
         NOTE VARCHAR(40))",
        "CREATE TABLE HISTORY (ID INTEGER NOT NULL PRIMARY KEY, NOTE VARCHAR(40))",
    ];
    if ledger {
        tables.push("CREATE TABLE LEDGER (N INTEGER, NOTE VARCHAR(40))");
    }
    execute(&db, &tables);
    let ledger_row = if ledger {
        "IF (MOD(I, 4) = 0) THEN INSERT INTO LEDGER VALUES (:I, 'entry ' || :I); "
    } else {
        ""
    };
    execute(
        &db,
        &[&format!(
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= {accounts}) DO BEGIN \
             INSERT INTO ACCOUNTS VALUES (:I, {OPENING}, 'account ' || :I); \
             {ledger_row}I = I + 1; END END"
        )],
    );
    db
}

/// Sets its flag when dropped, by a panic's unwinding too.
pub struct StopOnDrop<'a>(pub &'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// One writer until `stop`: transfers between accounts, accounts opened
/// with money from another and closed into another (with `ledger`, the
/// closed account's LEDGER rows deleted too), each in one transaction
/// with its HISTORY row; the SUM of the balances stays `accounts *
/// OPENING`. A transaction that fails (a conflict with another writer)
/// is rolled back.
///
/// Only accounts `1..=busy` are written (and new ones opened): the units
/// holding the others stay unchanged, so a resume keeps some units
/// however many transactions the writers get through meanwhile.
pub fn write_until(db: &Path, stop: &AtomicBool, seed: i64, busy: i64, ledger: bool) {
    let att = connect(db);
    let mut r = seed;
    let mut next_id = 1_000_000 * (seed + 1);
    let mut next = |n: i64| {
        r = (r * 1_103_515_245 + 12_345) % 2_147_483_648;
        1 + r % n
    };
    while !stop.load(Ordering::SeqCst) {
        let (a, b) = (next(busy), next(busy));
        next_id += 1;
        let statements = match next(4) {
            1 | 2 => vec![format!(
                "UPDATE ACCOUNTS SET BALANCE = BALANCE + IIF(ID = {a}, -7, 7) \
                 WHERE ID IN ({a}, {b}) AND {a} <> {b} \
                 AND (SELECT COUNT(*) FROM ACCOUNTS WHERE ID IN ({a}, {b})) = 2"
            )],
            3 => vec![
                format!(
                    "INSERT INTO ACCOUNTS SELECT {next_id}, 5, 'new' FROM ACCOUNTS WHERE ID = {a}"
                ),
                format!("UPDATE ACCOUNTS SET BALANCE = BALANCE - 5 WHERE ID = {a}"),
            ],
            _ => {
                let mut close = vec![
                    format!(
                        "UPDATE ACCOUNTS SET BALANCE = BALANCE + \
                         (SELECT BALANCE FROM ACCOUNTS WHERE ID = {b}) \
                         WHERE ID = {a} AND {a} <> {b} AND EXISTS (SELECT 1 FROM ACCOUNTS WHERE ID = {b})"
                    ),
                    format!(
                        "DELETE FROM ACCOUNTS WHERE ID = {b} AND {a} <> {b} \
                         AND EXISTS (SELECT 1 FROM ACCOUNTS WHERE ID = {a})"
                    ),
                ];
                if ledger {
                    close.push(format!("DELETE FROM LEDGER WHERE N = {b}"));
                }
                close
            }
        };
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        let mut ok = tr
            .execute(&format!(
                "INSERT INTO HISTORY VALUES ({next_id}, 'w{seed}')"
            ))
            .is_ok();
        for sql in &statements {
            ok = ok && tr.execute(sql).is_ok();
        }
        if ok {
            let _ = tr.commit();
        }
    }
}
