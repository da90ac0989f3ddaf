//! `SELECT COUNT(*)` per table, timed: the benchmark's yardstick for how
//! long the engine takes just to visit every row.
//!
//!     cargo run --release -p fbunload-client --example count -- DATABASE TABLE...
//!
//! Prints one line per table: name, rows, seconds.

use std::time::Instant;

use fbunload_client::{Attachment, Client, ConnectOptions, TransactionMode};

fn main() {
    let mut args = std::env::args().skip(1);
    let database = args.next().expect("usage: count DATABASE TABLE...");
    let client = Client::load(None).expect("libfbclient");
    let options = ConnectOptions {
        database,
        user: Some("SYSDBA".into()),
        password: Some(std::env::var("ISC_PASSWORD").unwrap_or_else(|_| "masterkey".into())),
        charset: "UTF8".into(),
        ..Default::default()
    };
    let att = Attachment::connect(&client, &options).expect("attach");
    let tr = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .expect("transaction");
    for table in args {
        let started = Instant::now();
        let sql = format!("SELECT COUNT(*) FROM \"{}\"", table.replace('"', "\"\""));
        let mut stmt = tr.prepare(&sql).expect("prepare");
        stmt.execute().expect("execute");
        assert!(stmt.fetch().expect("fetch"));
        let rows = i64::from_ne_bytes(stmt.row().value(0).unwrap().try_into().unwrap());
        println!("{table} {rows} {:.3}", started.elapsed().as_secs_f64());
    }
}
