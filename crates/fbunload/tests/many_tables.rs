//! A database of many tables: the plan describes their columns in a few
//! statements (not one prepare a table, which the server charges about a
//! millisecond each), and every table is then read as described.
//!
//! Alone in its binary: it counts the statements this process prepares.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use fbunload::Unload;
use fbunload_client::{statements_prepared, Client};
use fbunload_gen::create_test_database;

const TABLES: usize = 120;

#[test]
fn many_tables_are_described_in_a_few_statements_and_read_as_described() {
    let client: Arc<Client> = Client::load(None).expect("the embedded engine (scripts/setup.sh)");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("many.fdb");
    let mut sql = Vec::new();
    for i in 0..TABLES {
        // Shapes of their own: NOT NULL or not, text, decimals, BLOBs.
        sql.push(format!(
            "CREATE TABLE T{i} (ID INTEGER NOT NULL PRIMARY KEY, NAME VARCHAR({}), \
             AMOUNT NUMERIC(12, {}), NOTE BLOB SUB_TYPE TEXT, C{i} CHAR(3) NOT NULL)",
            10 + i,
            i % 5
        ));
    }
    for i in 0..TABLES {
        sql.push(format!(
            "INSERT INTO T{i} VALUES ({i}, 'n{i}', {i}.5, 'note {i}', 'c')"
        ));
    }
    let sql: Vec<&str> = sql.iter().map(String::as_str).collect();
    create_test_database(&client, &db.to_string_lossy(), "masterkey", 8192, &sql);

    let unload = Unload::new(db.to_string_lossy())
        .user("SYSDBA")
        .password("masterkey")
        .client(client);
    let before = statements_prepared();
    let prepared = unload.prepare().unwrap();
    let prepares = statements_prepared() - before;
    assert!(
        prepares < (TABLES / 2) as u64,
        "{prepares} statements prepared to plan {TABLES} tables"
    );
    assert_eq!(prepared.plan.tables.len(), TABLES);
    for (table, schema) in prepared.plan.tables.iter().zip(prepared.schemas.iter()) {
        let name = &table.name;
        assert!(!schema.field(0).is_nullable(), "{name}.ID: {schema:?}");
        assert!(schema.field(1).is_nullable(), "{name}.NAME: {schema:?}");
        assert!(!schema.field(4).is_nullable(), "{name}: {schema:?}");
        assert_eq!(schema.field(4).name(), &format!("C{}", &name[1..]));
    }
    let mut ids = Vec::new();
    for batch in unload.record_batches_of(prepared) {
        let batch = batch.unwrap();
        ids.extend(
            batch
                .batch
                .column(0)
                .as_primitive::<Int32Type>()
                .values()
                .iter()
                .copied(),
        );
    }
    ids.sort_unstable();
    assert_eq!(ids, (0..TABLES as i32).collect::<Vec<_>>());
}
