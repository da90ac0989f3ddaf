//! The bank that the tests of `fbunload follow` write to (tests/follow.rs
//! on the embedded engine, and over TCP tests/server_fb5.rs): clerks'
//! random transactions (transfers that keep a SUM, rollbacks, savepoints,
//! key updates, blob changes, deletes in a table without a key), and the
//! value-by-value comparison of Firebird's rows with PostgreSQL's.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fbunload_client::{Attachment, Transaction, TransactionMode};

/// A new attachment to the bank's database, from any thread.
pub type Connect = Arc<dyn Fn() -> Attachment + Send + Sync>;

pub const ACCOUNTS: i64 = 200;

/// ACCOUNTS (a key, a blob), MOVES (no key) and the sequence MOVE_NO.
pub fn bank_statements() -> Vec<String> {
    vec![
        "CREATE TABLE ACCOUNTS (ID INTEGER NOT NULL PRIMARY KEY, BALANCE NUMERIC(18,2) NOT NULL, \
         NOTE BLOB SUB_TYPE TEXT)"
            .into(),
        "CREATE TABLE MOVES (ACCOUNT INTEGER, AMOUNT NUMERIC(18,2))".into(),
        "CREATE SEQUENCE MOVE_NO".into(),
        format!(
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {ACCOUNTS}) DO BEGIN \
             INSERT INTO ACCOUNTS VALUES (:I, 1000, 'start'); I = I + 1; END END"
        ),
    ]
}

/// A small random generator: the tests need variety, not quality.
pub struct Dice(pub u64);

impl Dice {
    pub fn roll(&mut self, below: i64) -> i64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % below as u64) as i64
    }
}

/// One random transaction of a bank's clerk. Account 0 is the held
/// transaction's; the others are chosen by `MOD(ID, 100000)`, which a key
/// update (ID + 100000) keeps.
pub fn clerk(att: &Attachment, dice: &mut Dice) {
    let a = 1 + dice.roll(ACCOUNTS - 1);
    let b = 1 + dice.roll(ACCOUNTS - 1);
    let amount = format!("{}.{:02}", dice.roll(50), dice.roll(100));
    let transfer = |tr: &Transaction| -> Result<(), fbunload_client::ClientError> {
        tr.execute(&format!(
            "UPDATE ACCOUNTS SET BALANCE = BALANCE - {amount} WHERE MOD(ID, 100000) = {a}"
        ))?;
        tr.execute(&format!(
            "UPDATE ACCOUNTS SET BALANCE = BALANCE + {amount} WHERE MOD(ID, 100000) = {b}"
        ))?;
        tr.execute(&format!("INSERT INTO MOVES VALUES ({a}, -{amount})"))?;
        tr.execute(&format!("INSERT INTO MOVES VALUES ({b}, {amount})"))?;
        tr.execute("EXECUTE BLOCK AS DECLARE N BIGINT; BEGIN N = NEXT VALUE FOR MOVE_NO; END")
    };
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    let done = match dice.roll(7) {
        // A transfer rolled back.
        0 => transfer(&tr).map(|_| false),
        // A transfer, then one undone by a savepoint.
        1 => transfer(&tr)
            .and_then(|_| tr.execute("SAVEPOINT S"))
            .and_then(|_| transfer(&tr))
            .and_then(|_| tr.execute("ROLLBACK TO SAVEPOINT S"))
            .map(|_| true),
        // A key update.
        2 => tr
            .execute(&format!(
                "UPDATE ACCOUNTS SET ID = ID + 100000 WHERE MOD(ID, 100000) = {a} AND ID < 900000"
            ))
            .map(|_| true),
        // A blob change.
        3 => tr
            .execute(&format!(
                "UPDATE ACCOUNTS SET NOTE = 'note ' || {} || ' ' || LPAD('', {}, 'x') \
                 WHERE MOD(ID, 100000) = {a}",
                dice.roll(1000),
                dice.roll(300)
            ))
            .map(|_| true),
        // One of equal rows of the table without a key.
        4 => tr
            .execute(&format!("DELETE FROM MOVES WHERE ACCOUNT = {a} ROWS 1"))
            .map(|_| true),
        _ => transfer(&tr).map(|_| true),
    };
    match done {
        Ok(true) => tr.commit().unwrap(),
        // A lock conflict with another clerk: that clerk's work counts.
        Ok(false) | Err(_) => drop(tr),
    }
}

pub fn clerks(connect: &Connect, seed: u64, transactions: usize) {
    let att = connect();
    let mut dice = Dice(seed);
    for _ in 0..transactions {
        clerk(&att, &mut dice);
    }
}

/// Clerks at work on another thread until the flag is set.
pub fn clerks_until(
    connect: &Connect,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    let connect = connect.clone();
    std::thread::spawn(move || {
        let att = connect();
        let mut dice = Dice(seed);
        let mut done = 0;
        while !stop.load(Ordering::SeqCst) {
            clerk(&att, &mut dice);
            done += 1;
        }
        done
    })
}

/// Firebird's rows and PostgreSQL's (schema `live`), as text, each sorted.
pub fn both_sides(att: &Attachment, uri: &str) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let tr = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    let mut firebird = Vec::new();
    for sql in [
        "SELECT CAST('A' AS VARCHAR(1)), CAST(ID AS VARCHAR(20)), CAST(BALANCE AS VARCHAR(30)), \
         CAST(NOTE AS VARCHAR(400)) FROM ACCOUNTS",
        "SELECT CAST('M' AS VARCHAR(1)), CAST(ACCOUNT AS VARCHAR(20)), CAST(AMOUNT AS VARCHAR(30)), CAST('' AS VARCHAR(1)) FROM MOVES",
        "SELECT CAST('S' AS VARCHAR(1)), CAST(GEN_ID(MOVE_NO, 0) AS VARCHAR(20)), CAST('' AS VARCHAR(1)), CAST('' AS VARCHAR(1)) FROM RDB$DATABASE",
    ] {
        let mut stmt = tr.prepare(sql).unwrap();
        stmt.execute().unwrap();
        while stmt.fetch().unwrap() {
            let row = stmt.row();
            firebird.push(
                (0..4)
                    .map(|i| String::from_utf8_lossy(row.value(i).unwrap_or(b"<null>")).into_owned())
                    .collect(),
            );
        }
    }
    let mut pg = postgres::Client::connect(uri, postgres::NoTls).unwrap();
    let mut postgres = Vec::new();
    for sql in [
        "SELECT 'A', id::text, balance::text, coalesce(note, '<null>') FROM live.accounts",
        "SELECT 'M', account::text, amount::text, '' FROM live.moves",
        "SELECT 'S', last_value::text, '', '' FROM live.move_no",
    ] {
        for row in pg.query(sql, &[]).unwrap() {
            postgres.push((0..4).map(|i| row.get::<_, String>(i)).collect());
        }
    }
    firebird.sort();
    postgres.sort();
    (firebird, postgres)
}

/// PostgreSQL's copy equals the bank, value by value.
pub fn assert_equal(att: &Attachment, uri: &str, when: &str) {
    let (firebird, postgres) = both_sides(att, uri);
    assert_eq!(firebird.len(), postgres.len(), "{when}: row counts");
    for (f, g) in firebird.iter().zip(&postgres) {
        assert_eq!(f, g, "{when}");
    }
}
