//! The generator against the real embedded Firebird 5 engine: row counts,
//! known values, and that two runs with the same options give the same
//! bytes in every table.

use std::path::Path;

use fbunload_client::{sql_type, Attachment, Client, Transaction, TransactionMode};
use fbunload_gen::{connect_options, generate, sql, GenError, GenOptions, Table};

fn small(path: &Path) -> GenOptions {
    let mut opts = GenOptions::new(path);
    opts.warehouses = 1;
    opts.items = 1000;
    // Small chunks, so chunk boundaries are exercised too.
    opts.chunk_rows = 7_000;
    opts
}

fn count(tr: &Transaction, table: &str) -> i64 {
    let mut stmt = tr
        .prepare(&format!("SELECT COUNT(*) FROM {table}"))
        .unwrap();
    stmt.execute().unwrap();
    assert!(stmt.fetch().unwrap());
    i64::from_ne_bytes(stmt.row().value(0).unwrap().try_into().unwrap())
}

/// FNV-1a: stable, and order-sensitive, which is what we want here.
fn fnv(hash: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *hash ^= *b as u64;
        *hash = hash.wrapping_mul(0x100_0000_01b3);
    }
}

/// A digest of every value (blob contents included) of a query's rows, in
/// the order the query returns them.
fn digest(tr: &Transaction, query: &str) -> (u64, u64) {
    let mut stmt = tr.prepare(query).unwrap();
    let columns = stmt.columns().to_vec();
    stmt.execute().unwrap();
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut rows = 0;
    let mut blob = Vec::new();
    while stmt.fetch().unwrap() {
        rows += 1;
        let row = stmt.row();
        for (i, column) in columns.iter().enumerate() {
            match row.value(i) {
                None => fnv(&mut hash, b"\xffNULL"),
                Some(id) if column.sql_type == sql_type::BLOB => {
                    row.transaction()
                        .read_blob(id.try_into().unwrap(), &mut blob)
                        .unwrap();
                    fnv(&mut hash, &(blob.len() as u64).to_le_bytes());
                    fnv(&mut hash, &blob);
                }
                Some(bytes) => {
                    fnv(&mut hash, &(bytes.len() as u64).to_le_bytes());
                    fnv(&mut hash, bytes);
                }
            }
        }
    }
    (rows, hash)
}

/// Per table: (rows, digest) in key order, then with record addresses in
/// storage order.
type TableDigest = (Table, (u64, u64), (u64, u64));

fn digests(path: &Path, tables: &[Table]) -> Vec<TableDigest> {
    let client = Client::load(None).unwrap();
    let db = Attachment::connect(&client, &connect_options(path)).unwrap();
    let tr = db
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    tables
        .iter()
        .map(|&t| {
            let name = t.sql_name();
            // By primary key: the contents. In storage order, with the
            // record's address: the physical layout.
            // The first up-to-four columns hold every table's key; arrays
            // and blobs do not sort.
            let order = if matches!(
                t,
                Table::EmptyTable | Table::ArrayTypes | Table::BlobHeavy | Table::Wide
            ) {
                "1"
            } else {
                "1, 2, 3, 4"
            };
            let by_key = digest(&tr, &format!("SELECT * FROM {name} ORDER BY {order}"));
            let stored = digest(&tr, &format!("SELECT RDB$DB_KEY, {name}.* FROM {name}"));
            (t, by_key, stored)
        })
        .collect()
}

#[test]
fn generates_counts_values_and_the_same_bytes_twice() {
    let client = Client::load(None).expect("libfbclient");
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.fdb");
    let second = dir.path().join("second.fdb");

    let report = generate(&client, &small(&first)).unwrap();
    assert_eq!(report.tables.len(), Table::ALL.len());
    let expected = [
        (Table::Warehouse, 1),
        (Table::District, 10),
        (Table::Customer, 30_000),
        (Table::Item, 1000),
        (Table::Stock, 1000),
        (Table::Orders, 30_000),
        (Table::OrderLine, 299_960),
        (Table::AllTypes, 12),
        (Table::Mixed, 3),
        (Table::EmptyTable, 0),
        (Table::ArrayTypes, 3),
    ];
    for ((table, rows), reported) in expected.iter().zip(&report.tables) {
        assert_eq!((reported.table, reported.rows), (*table, *rows));
    }

    {
        let db = Attachment::connect(&client, &connect_options(&first)).unwrap();
        let tr = db
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .unwrap();
        for (table, rows) in expected {
            assert_eq!(count(&tr, &table.sql_name()), rows as i64, "{table}");
        }
        // Lines per order agree with the orders' O_OL_CNT.
        let mut stmt = tr
            .prepare(
                "SELECT COUNT(*) FROM ORDERS o WHERE o.O_OL_CNT <> (SELECT COUNT(*) FROM ORDER_LINE l \
                 WHERE l.OL_W_ID = o.O_W_ID AND l.OL_D_ID = o.O_D_ID AND l.OL_O_ID = o.O_ID)",
            )
            .unwrap();
        stmt.execute().unwrap();
        assert!(stmt.fetch().unwrap());
        assert_eq!(stmt.row().value(0).unwrap(), 0i64.to_ne_bytes());
        drop(stmt);

        // A value predicted from the row number alone: S_QUANTITY of STOCK
        // row r is 10 + h1 mod 91 with STOCK's salt 53.
        let mut stmt = tr
            .prepare("SELECT S_QUANTITY FROM STOCK WHERE S_W_ID = 1 AND S_I_ID = 777")
            .unwrap();
        stmt.execute().unwrap();
        assert!(stmt.fetch().unwrap());
        let quantity = i16::from_ne_bytes(stmt.row().value(0).unwrap().try_into().unwrap());
        assert_eq!(quantity as i64, 10 + sql::hash_values(776, 53, 1)[0] % 91);
        drop(stmt);

        // A few of the extremes, as the engine hands them out.
        let mut stmt = tr
            .prepare("SELECT C_BIGINT, C_INT128, C_NUMERIC_18_4, C_CHAR, C_VARCHAR FROM ALL_TYPES WHERE ID IN (2, 3) ORDER BY ID")
            .unwrap();
        stmt.execute().unwrap();
        assert!(stmt.fetch().unwrap());
        let row = stmt.row();
        assert_eq!(row.value(0).unwrap(), i64::MIN.to_ne_bytes());
        assert_eq!(row.value(1).unwrap(), (1 - 10i128.pow(38)).to_ne_bytes());
        assert_eq!(row.value(3).unwrap(), [b' '; 40]); // CHAR(10) UTF8: 40 bytes
        assert_eq!(row.value(4).unwrap(), b"");
        assert!(stmt.fetch().unwrap());
        let row = stmt.row();
        assert_eq!(row.value(1).unwrap(), (10i128.pow(38) - 1).to_ne_bytes());
        assert_eq!(
            row.value(2).unwrap(),
            999_999_999_999_999_999i64.to_ne_bytes()
        );
        assert_eq!(row.value(4).unwrap(), "€ß日😀".repeat(25).as_bytes());
        drop(stmt);

        let mut stmt = tr
            .prepare("SELECT \"Display Name\" FROM \"Mixed Case \"\"Quoted\"\"\" WHERE \"Id\" = 2")
            .unwrap();
        stmt.execute().unwrap();
        assert!(stmt.fetch().unwrap());
        assert_eq!(stmt.row().value(0).unwrap(), b"second, with comma");
    }

    // Same options, other chunking: the same bytes, laid out the same way.
    let mut opts = small(&second);
    opts.chunk_rows = 100_000;
    generate(&client, &opts).unwrap();
    let a = digests(&first, &Table::ALL);
    let b = digests(&second, &Table::ALL);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "{} differs between runs", x.0);
    }
}

#[test]
fn refuses_to_overwrite_unless_forced() {
    let client = Client::load(None).expect("libfbclient");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.fdb");
    std::fs::write(&path, b"not a database").unwrap();
    let mut opts = GenOptions::new(&path);
    opts.tables = vec![Table::EmptyTable, Table::Mixed];
    match generate(&client, &opts) {
        Err(GenError::Exists(p)) => assert_eq!(p, path),
        other => panic!("expected Exists, got {other:?}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"not a database");

    opts.force = true;
    let report = generate(&client, &opts).unwrap();
    assert_eq!(
        report
            .tables
            .iter()
            .map(|t| (t.table, t.rows))
            .collect::<Vec<_>>(),
        vec![(Table::Mixed, 3), (Table::EmptyTable, 0)]
    );
    let db = Attachment::connect(&client, &connect_options(&path)).unwrap();
    let tr = db
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    assert_eq!(count(&tr, "EMPTY_TABLE"), 0);
}

/// BLOB_HEAVY and WIDE, small: the rows, blob sizes and column count
/// asked for, incompressible binary, and the same bytes twice.
#[test]
fn blob_heavy_and_wide_have_the_shape_asked_for() {
    let client = Client::load(None).expect("libfbclient");
    let dir = tempfile::tempdir().unwrap();
    let options = |path: &Path| GenOptions {
        tables: vec![Table::BlobHeavy, Table::Wide],
        blob_rows: 30,
        blob_total_mb: 1, // 17,476 bytes of each blob a row
        wide_columns: 40,
        wide_rows: 300,
        chunk_rows: 70,
        page_size: 4096,
        ..GenOptions::new(path)
    };
    let first = dir.path().join("first.fdb");
    let second = dir.path().join("second.fdb");
    generate(&client, &options(&first)).unwrap();
    generate(&client, &options(&second)).unwrap();

    let db = Attachment::connect(&client, &connect_options(&first)).unwrap();
    let tr = db
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    assert_eq!(count(&tr, "BLOB_HEAVY"), 30);
    assert_eq!(count(&tr, "WIDE"), 300);
    let one = |sql: &str| {
        let mut stmt = tr.prepare(sql).unwrap();
        stmt.execute().unwrap();
        assert!(stmt.fetch().unwrap());
        i64::from_ne_bytes(stmt.row().value(0).unwrap().try_into().unwrap())
    };
    let bytes = fbunload_gen::heavy::blob_bytes_per_row(30, 1) as i64;
    assert_eq!(bytes, 17_476);
    assert_eq!(
        one("SELECT COUNT(*) FROM BLOB_HEAVY WHERE OCTET_LENGTH(TXT) = 17476 AND OCTET_LENGTH(BIN) = 17476"),
        30
    );
    assert_eq!(
        one("SELECT COUNT(*) FROM RDB$RELATION_FIELDS WHERE RDB$RELATION_NAME = 'WIDE'"),
        40
    );
    // Some NULLs, not many: one value in 13.
    let nulls = one("SELECT COUNT(*) FROM WIDE WHERE C0040 IS NULL");
    assert!((20..=26).contains(&nulls), "{nulls}");
    let mut binary = Vec::new();
    let mut stmt = tr
        .prepare("SELECT BIN FROM BLOB_HEAVY WHERE ID = 7")
        .unwrap();
    stmt.execute().unwrap();
    assert!(stmt.fetch().unwrap());
    let id = stmt.row().value(0).unwrap().try_into().unwrap();
    tr.read_blob(id, &mut binary).unwrap();
    // Cipher output: every byte value shows up, about evenly.
    let mut seen = [0u32; 256];
    for &b in &binary {
        seen[b as usize] += 1;
    }
    assert!(seen.iter().all(|&n| (30..=110).contains(&n)), "{seen:?}");
    drop(stmt);
    drop(tr);
    drop(db);

    let tables = [Table::BlobHeavy, Table::Wide];
    let a = digests(&first, &tables);
    let b = digests(&second, &tables);
    assert_eq!(a, b, "BLOB_HEAVY and WIDE differ between runs");
}
