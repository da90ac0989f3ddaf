//! `--plan`'s estimates of each table's rows and bytes, against tables of
//! known size on the embedded Firebird 5 engine.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// How far an estimate may be from the truth, as a fraction of it. The
/// tables here are filled evenly, as most tables are; their estimates
/// come within 2% (docs/command-line.md).
const TOLERANCE: f64 = 0.10;

/// 4 KiB pages (808 data pages a pointer page): tables of several pointer
/// pages from little data.
fn sized_db(dir: &Path) -> PathBuf {
    let db = create_db(dir, "sized.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE ROWS100K (ID INTEGER NOT NULL, A VARCHAR(60), B BIGINT)",
            "CREATE TABLE NOTHING (ID INTEGER)",
            "CREATE TABLE EMPTIED (ID INTEGER, A VARCHAR(60))",
            "CREATE TABLE LONG_ROWS (ID INTEGER, TXT VARCHAR(3000), DOC BLOB SUB_TYPE BINARY)",
            "CREATE TABLE FEW (ID INTEGER, NOTE BLOB SUB_TYPE TEXT)",
            // Rows of about 2.9 KB, one a 4 KiB page: 50 pages, within
            // the first slots a small table is counted on; 300, past them
            // (one pointer page either way).
            "CREATE TABLE PAGES50 (ID INTEGER, TXT VARCHAR(3000))",
            "CREATE TABLE PAGES300 (ID INTEGER, TXT VARCHAR(3000))",
            // Values vary row to row so records do not compress away;
            // text of 5 to 54 characters.
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN \
               WHILE (I < 100000) DO BEGIN \
                 INSERT INTO ROWS100K VALUES (:I, \
                   RIGHT('x' || (:I * 7919) || '-' || (:I * 104729) || \
                     RPAD('', MOD(:I * 31, 50), 'abcdefghij'), 5 + MOD(:I * 31, 50)), \
                   :I * 1000003); \
                 I = I + 1; END END",
            "INSERT INTO EMPTIED SELECT FIRST 30000 ID, A FROM ROWS100K",
            "DELETE FROM EMPTIED",
            // Rows of about 3 KB each (under a page, so one a page), and
            // BLOBs of 2,000 to 21,999 bytes, most on pages of their own.
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN \
               WHILE (I < 3000) DO BEGIN \
                 INSERT INTO LONG_ROWS VALUES (:I, \
                   RPAD(:I || '-', 2900 + MOD(:I * 7, 100), UUID_TO_CHAR(GEN_UUID())), \
                   CAST(RPAD(CAST('' AS VARCHAR(1) CHARACTER SET OCTETS), \
                     2000 + MOD(:I * 7919, 20000), \
                     CAST(UUID_TO_CHAR(GEN_UUID()) AS VARCHAR(36) CHARACTER SET OCTETS)) \
                     AS BLOB SUB_TYPE BINARY)); \
                 I = I + 1; END END",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN \
               WHILE (I < 300) DO BEGIN \
                 IF (I < 50) THEN INSERT INTO PAGES50 VALUES (:I, \
                   RPAD(:I || '-', 2900, UUID_TO_CHAR(GEN_UUID()))); \
                 INSERT INTO PAGES300 VALUES (:I, RPAD(:I || '-', 2900, UUID_TO_CHAR(GEN_UUID()))); \
                 I = I + 1; END END",
            "INSERT INTO FEW VALUES (1, 'one')",
            "INSERT INTO FEW VALUES (2, NULL)",
            "INSERT INTO FEW VALUES (3, 'three')",
        ],
    );
    db
}

fn plan_json(db: &Path) -> serde_json::Value {
    let out = fbunload(db, &["--plan", "--progress", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn estimate_of<'p>(plan: &'p serde_json::Value, table: &str) -> &'p serde_json::Value {
    let tables = plan["tables"].as_array().unwrap();
    let found = tables.iter().find(|t| t["name"] == table);
    &found.unwrap_or_else(|| panic!("{table} in {plan}"))["estimate"]
}

fn assert_near(what: &str, estimated: u64, actual: u64) {
    let error = (estimated as f64 - actual as f64).abs() / actual as f64;
    assert!(
        error <= TOLERANCE,
        "{what}: estimated {estimated}, actually {actual} ({:.1}% off)",
        error * 100.0
    );
}

#[test]
fn estimates_come_near_the_rows_and_blob_bytes_of_tables_of_known_size() {
    let dir = tempfile::tempdir().unwrap();
    let db = sized_db(dir.path());
    let plan = plan_json(&db);

    assert!(plan["estimate_seconds"].as_f64().is_some(), "{plan}");
    let rows = estimate_of(&plan, "ROWS100K");
    assert_eq!(rows["basis"], "sampled", "{rows}");
    assert_eq!(rows["sampled_pages"], 128, "{rows}");
    assert_near("ROWS100K rows", rows["rows"].as_u64().unwrap(), 100_000);
    assert_eq!(rows["page_size"], 4096);
    assert_eq!(rows["blob_bytes"], serde_json::Value::Null);
    // Its data pages lie in its pointer pages, the last one partly used.
    let data_pages = rows["data_pages"].as_u64().unwrap();
    let pointer_pages = plan["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ROWS100K")
        .unwrap()["pointer_pages"]
        .as_u64()
        .unwrap();
    assert!(pointer_pages > 1, "{plan}");
    assert!(
        data_pages > (pointer_pages - 1) * 808 && data_pages < pointer_pages * 808,
        "{rows}"
    );
    assert_eq!(rows["bytes"].as_u64(), Some(data_pages * 4096));

    let long = estimate_of(&plan, "LONG_ROWS");
    assert_near("LONG_ROWS rows", long["rows"].as_u64().unwrap(), 3000);
    let blob_bytes = bigint(
        &db,
        "SELECT CAST(SUM(OCTET_LENGTH(DOC)) AS BIGINT) FROM LONG_ROWS",
    ) as u64;
    assert_near(
        "LONG_ROWS blob bytes",
        long["blob_bytes"].as_u64().unwrap(),
        blob_bytes,
    );
    // Two rows of 3 KB never share a 4 KiB page; the smaller BLOBs lie
    // on data pages too.
    let bytes = long["bytes"].as_u64().unwrap();
    assert!((3000 * 4096..4000 * 4096).contains(&bytes), "{long}");

    // Small tables are counted whole, exactly.
    let few = estimate_of(&plan, "FEW");
    assert_eq!(few["basis"], "counted", "{few}");
    assert_eq!(few["rows"], 3);
    assert_eq!(few["blob_bytes"], 8);
    // Counted whole in one query, its pages read off the rows' DB_KEYs;
    // past the first 128 slots, searched and sampled.
    let pages50 = estimate_of(&plan, "PAGES50");
    assert_eq!(pages50["basis"], "counted", "{pages50}");
    assert_eq!(pages50["rows"], 50, "{pages50}");
    assert_eq!(pages50["data_pages"], 50, "{pages50}");
    let pages300 = estimate_of(&plan, "PAGES300");
    assert_eq!(pages300["basis"], "sampled", "{pages300}");
    assert_eq!(pages300["data_pages"], 300, "{pages300}");
    assert_near("PAGES300 rows", pages300["rows"].as_u64().unwrap(), 300);

    for empty in ["NOTHING", "EMPTIED"] {
        let estimate = estimate_of(&plan, empty);
        assert_eq!(estimate["rows"], 0, "{empty}: {estimate}");
        assert_eq!(estimate["blob_bytes"], serde_json::Value::Null);
    }
    assert_eq!(estimate_of(&plan, "NOTHING")["bytes"], 0);
}

/// The text plan shows them in two columns.
#[test]
fn the_text_plan_shows_the_estimates() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "text.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE T (ID INTEGER)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN \
               WHILE (I < 1234) DO BEGIN INSERT INTO T VALUES (:I); I = I + 1; END END",
        ],
    );
    let out = fbunload(&db, &["--plan"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let header = text.lines().next().unwrap();
    assert!(header.contains("~rows") && header.contains("~MB"), "{text}");
    let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    // table, pointer pages, units, ~rows, ~MB, columns
    assert_eq!(row[..4], ["T", "1", "1", "1234"], "{text}");
}
