//! `schema.sql`'s reading of the catalog ([`fbunload_plan::read_schema`])
//! against the embedded engine: what it costs a table. A database of
//! 5,000 tables has 35,000 column rows; each query that walks them again
//! costs the whole run about 5% of its CPU (`perf`, docs/PERFORMANCE.md,
//! "Many tables"). The engine counts the rows each attachment reads of
//! each table (`MON$TABLE_STATS`), which is what these tests hold it to.

mod common;

use common::new_database;
use fbunload_client::{Attachment, Client, Transaction, TransactionMode};
use fbunload_plan::catalog::{int, query};
use fbunload_plan::inventory::read_inventory;
use fbunload_plan::read_schema;

fn one_number(tr: &Transaction, sql: &str) -> i64 {
    let mut found = None;
    query(tr, sql, |row| found = int(row, 0)).unwrap();
    found.unwrap_or(0)
}

/// The rows of `table` this attachment has read so far. Each call asks in
/// a transaction of its own: the monitoring tables are a snapshot taken
/// once a transaction.
fn rows_read(att: &Attachment, table: &str) -> i64 {
    let tr = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    one_number(
        &tr,
        &format!(
            "SELECT CAST(COALESCE(SUM(s.MON$RECORD_SEQ_READS + s.MON$RECORD_IDX_READS), 0) AS BIGINT) \
             FROM MON$ATTACHMENTS a JOIN MON$TABLE_STATS t ON t.MON$STAT_ID = a.MON$STAT_ID \
             JOIN MON$RECORD_STATS s ON s.MON$STAT_ID = t.MON$RECORD_STAT_ID \
             WHERE a.MON$ATTACHMENT_ID = CURRENT_CONNECTION AND t.MON$TABLE_NAME = '{table}'"
        ),
    )
}

#[test]
fn schema_sql_and_the_inventory_read_the_catalog_s_columns_once_between_them() {
    let client = Client::load(None).expect("the embedded Firebird engine");
    let dir = tempfile::tempdir().unwrap();
    let (_, att) = new_database(&client, dir.path(), "columns.fdb");
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    tr.execute("CREATE TABLE T00 (ID INTEGER)").unwrap();
    tr.execute("CREATE VIEW V AS SELECT ID FROM T00").unwrap();
    tr.commit().unwrap();
    let mut names = vec!["T00".to_string()];
    // The rows of RDB$RELATION_FIELDS there are, and the rows read_schema
    // reads of them, for all user tables.
    let read_for = |names: &[String]| {
        let tr = att
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .unwrap();
        let column_rows = one_number(&tr, "SELECT COUNT(*) FROM RDB$RELATION_FIELDS");
        let before = rows_read(&att, "RDB$RELATION_FIELDS");
        let checks_before = rows_read(&att, "RDB$CHECK_CONSTRAINTS");
        let schema = read_schema(&tr, names).unwrap();
        let read = rows_read(&att, "RDB$RELATION_FIELDS") - before;
        let checks = rows_read(&att, "RDB$CHECK_CONSTRAINTS") - checks_before;
        (column_rows, read, checks, schema, tr)
    };
    let (rows_before, read_before, checks_before, ..) = read_for(&names);
    for i in 1..=40 {
        let name = format!("T{i:02}");
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        tr.execute(&format!(
            "CREATE TABLE {name} (ID INTEGER NOT NULL PRIMARY KEY, A VARCHAR(10), \
             B NUMERIC(9,2) NOT NULL, C DATE, D BLOB SUB_TYPE TEXT, E BIGINT NOT NULL, \
             TWICE COMPUTED BY (ID * 2))"
        ))
        .unwrap();
        tr.commit().unwrap();
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        tr.execute(&format!("COMMENT ON COLUMN {name}.A IS 'note {i}'"))
            .unwrap();
        tr.commit().unwrap();
        names.push(name);
    }
    let (rows, read, checks, schema, tr) = read_for(&names);
    // Each column added is read once, by the one walk of the column rows
    // that schema.sql's tables, the views' columns and the inventory (its
    // columns, comments and the collations they use) share. Before, four
    // queries walked them: 1,632 rows read for these 280.
    let (added, read_more) = (rows - rows_before, read - read_before);
    assert_eq!(added, 280);
    assert!(
        read_more <= added + added / 10,
        "{read_more} more rows of RDB$RELATION_FIELDS read for {added} more columns"
    );

    // The 120 NOT NULL constraints added (three a table) are not looked
    // up for a check's trigger: the inventory lists them as part of their
    // columns. Before, each was (120 more rows of RDB$CHECK_CONSTRAINTS).
    assert_eq!(checks, checks_before, "NOT NULL constraints read");

    // What the inventory makes of the rows it shares is what it makes of
    // its own read of them.
    assert_eq!(schema.catalog, read_inventory(&tr).unwrap());
    let columns = |kind: &str| {
        let listed = schema.catalog.objects.iter().filter(|o| o.kind == kind);
        listed.filter(|o| o.table.as_deref() == Some("T07")).count()
    };
    assert_eq!((columns("column"), columns("computed column")), (6, 1));
    assert!(schema
        .catalog
        .objects
        .iter()
        .any(|o| o.kind == "comment" && o.name == "column T07.A" && o.source == "note 7"));
    assert!(!schema
        .catalog
        .objects
        .iter()
        .any(|o| o.table.as_deref().is_some_and(|t| t.starts_with("RDB$"))));
    assert_eq!(schema.tables[7].columns.len(), 7);
}
