//! A bank, for tests of consistency under concurrent writers: ACCOUNTS,
//! and a LEDGER of every transfer between them. Writers move money in
//! committed transactions while a test reads; at any one snapshot each
//! account's balance is its start balance plus what the ledger moved in,
//! minus what it moved out. Read from two moments, they disagree.
//!
//! The same bank serves the embedded engine and a server over TCP: it
//! only needs an attachment.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use fbunload_client::{Attachment, Client, ClientError, ConnectOptions, TransactionMode};

pub const ACCOUNTS: i64 = 300;
pub const START_BALANCE: i64 = 1000;

/// LEDGER's filler rows: at 4 KiB pages they span several pointer pages,
/// so that a table read in units is read by several attachments.
const FILLER_ROWS: u32 = 60_000;

/// Creates the bank's tables in the database `att` is attached to.
pub fn create(att: &Attachment) -> Result<(), ClientError> {
    for sql in [
        "CREATE TABLE ACCOUNTS (ID INTEGER NOT NULL PRIMARY KEY, BALANCE BIGINT NOT NULL)".into(),
        "CREATE TABLE LEDGER (FROM_ID INTEGER, TO_ID INTEGER, AMOUNT BIGINT, NOTE VARCHAR(60))"
            .into(),
        format!(
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {ACCOUNTS}) DO BEGIN \
               INSERT INTO ACCOUNTS VALUES (:I, {START_BALANCE}); I = I + 1; END END"
        ),
        format!(
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {FILLER_ROWS}) DO BEGIN \
               INSERT INTO LEDGER VALUES (0, 0, 0, 'filler ' || (:I * 7919)); I = I + 1; END END"
        ),
    ] {
        let tr = att.start_transaction(TransactionMode::ReadWrite)?;
        tr.execute(&sql)?;
        tr.commit()?;
    }
    Ok(())
}

/// Transfer number `n` in a transaction of its own; `false` if it lost an
/// update conflict with another writer and was rolled back whole.
pub fn transfer(att: &Attachment, n: i64) -> Result<bool, ClientError> {
    let (from, to, amount) = ((n * 7919) % ACCOUNTS, (n * 104729) % ACCOUNTS, n % 97 + 1);
    let tr = att.start_transaction(TransactionMode::ReadWrite)?;
    let moved = tr.execute(&format!(
        "EXECUTE BLOCK AS BEGIN \
           UPDATE ACCOUNTS SET BALANCE = BALANCE - {amount} WHERE ID = {from}; \
           UPDATE ACCOUNTS SET BALANCE = BALANCE + {amount} WHERE ID = {to}; \
           INSERT INTO LEDGER VALUES ({from}, {to}, {amount}, 'transfer'); END"
    ));
    match moved {
        Ok(()) => {
            tr.commit()?;
            Ok(true)
        }
        Err(_) => Ok(false),
    }
}

/// Writers moving money on attachments of their own until dropped.
pub struct Writers {
    stop: Arc<AtomicBool>,
    committed: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Writers {
    /// Starts `count` writers and waits for their first 50 transfers.
    pub fn start(client: &Arc<Client>, connect: &ConnectOptions, count: i64) -> Writers {
        let stop = Arc::new(AtomicBool::new(false));
        let committed = Arc::new(AtomicU64::new(0));
        let threads = (0..count)
            .map(|seed| {
                let (client, connect) = (client.clone(), connect.clone());
                let (stop, committed) = (stop.clone(), committed.clone());
                std::thread::spawn(move || {
                    let att = Attachment::connect(&client, &connect).expect("a writer attaches");
                    let mut n = seed * 1_000_000;
                    while !stop.load(Ordering::SeqCst) {
                        n += 1;
                        if transfer(&att, n).expect("a transfer") {
                            committed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        let writers = Writers {
            stop,
            committed,
            threads,
        };
        writers.wait_for(50);
        writers
    }

    /// Transfers committed so far.
    pub fn committed(&self) -> u64 {
        self.committed.load(Ordering::Relaxed)
    }

    /// Waits until `transfers` more have committed.
    pub fn wait_for(&self, transfers: u64) {
        let target = self.committed() + transfers;
        while self.committed() < target {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Writers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            // A writer that panicked has said why; the test fails on that.
            let _ = thread.join();
        }
    }
}

/// Checks that `accounts` (id, balance) are what `ledger` (from, to,
/// amount) moved: one moment's books. The error names the first account
/// that disagrees.
pub fn check_books(
    ledger: impl IntoIterator<Item = (i64, i64, i64)>,
    accounts: impl IntoIterator<Item = (i64, i64)>,
) -> Result<(), String> {
    let mut balance = vec![START_BALANCE; ACCOUNTS as usize];
    for (from, to, amount) in ledger {
        balance[from as usize] -= amount;
        balance[to as usize] += amount;
    }
    let mut seen = 0;
    for (id, value) in accounts {
        if value != balance[id as usize] {
            return Err(format!(
                "account {id} holds {value} and the ledger says {}: the two tables are from \
                 different moments",
                balance[id as usize]
            ));
        }
        seen += 1;
    }
    match seen {
        ACCOUNTS => Ok(()),
        n => Err(format!("{n} accounts read, {ACCOUNTS} exist")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn books_agree_only_when_the_ledger_explains_every_balance() {
        let mut accounts: Vec<(i64, i64)> = (0..ACCOUNTS).map(|id| (id, START_BALANCE)).collect();
        accounts[1].1 -= 5;
        accounts[2].1 += 5;
        assert_eq!(check_books([(1, 2, 5)], accounts.clone()), Ok(()));
        assert!(check_books([], accounts.clone())
            .unwrap_err()
            .starts_with("account 1 holds 995 and the ledger says 1000"));
        assert!(check_books([(1, 2, 5)], accounts[..10].to_vec())
            .unwrap_err()
            .contains("10 accounts read"));
    }
}
