//! The client layer against the real embedded Firebird 5 engine.

use fbunload_client::{sql_type, Attachment, Client, ConnectOptions, TransactionMode};

fn options(path: &str, no_gc: bool) -> ConnectOptions {
    ConnectOptions {
        database: path.to_string(),
        user: Some("SYSDBA".into()),
        password: Some("masterkey".into()),
        charset: "UTF8".into(),
        no_garbage_collect: no_gc,
        ..Default::default()
    }
}

#[test]
fn create_query_and_share_a_snapshot() {
    let client = Client::load(None).expect("libfbclient");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.fdb").to_string_lossy().into_owned();
    let create = format!(
        "CREATE DATABASE '{path}' USER 'SYSDBA' PASSWORD 'masterkey' PAGE_SIZE 8192 DEFAULT CHARACTER SET UTF8"
    );
    let db = Attachment::create_database(&client, &create).unwrap();
    assert!(db.server_version().unwrap().major >= 4);
    assert_eq!(db.page_size().unwrap(), 8192);
    {
        let tr = db.start_transaction(TransactionMode::ReadWrite).unwrap();
        tr.execute("CREATE TABLE T (ID INTEGER NOT NULL, NAME VARCHAR(20), B BLOB SUB_TYPE TEXT)")
            .unwrap();
        tr.commit().unwrap();
        let tr = db.start_transaction(TransactionMode::ReadWrite).unwrap();
        tr.execute("INSERT INTO T VALUES (1, 'één', 'blob text')")
            .unwrap();
        tr.execute("INSERT INTO T VALUES (2, NULL, NULL)").unwrap();
        tr.commit().unwrap();
    }

    let main = db
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    let snapshot = main.snapshot_number().unwrap();

    // A row committed after the snapshot must be invisible to a worker at it.
    let writer = Attachment::connect(&client, &options(&path, false)).unwrap();
    let tr = writer
        .start_transaction(TransactionMode::ReadWrite)
        .unwrap();
    tr.execute("INSERT INTO T VALUES (3, 'late', NULL)")
        .unwrap();
    tr.commit().unwrap();

    let worker = Attachment::connect(&client, &options(&path, true)).unwrap();
    let wtr = worker
        .start_transaction(TransactionMode::ReadOnlyAtSnapshot(snapshot))
        .unwrap();
    assert_eq!(wtr.snapshot_number().unwrap(), snapshot);
    let mut stmt = wtr
        .prepare(
            "SELECT ID, NAME, B FROM T WHERE RDB$DB_KEY >= MAKE_DBKEY('T', 0, 0, 0) ORDER BY ID",
        )
        .unwrap();
    let cols = stmt.columns().to_vec();
    assert_eq!(cols[0].sql_type, sql_type::LONG);
    assert_eq!(cols[1].sql_type, sql_type::VARYING);
    assert_eq!(cols[2].sql_type, sql_type::BLOB);
    // Twice: a statement's cursor can be opened again after the end.
    let mut rows = Vec::new();
    let mut blob = Vec::new();
    for _ in 0..2 {
        rows.clear();
        stmt.execute().unwrap();
        assert!(
            stmt.fetches_messages(),
            "a Firebird 5 client library fetches OO API messages"
        );
        while stmt.fetch().unwrap() {
            let row = stmt.row();
            let id = i32::from_ne_bytes(row.value(0).unwrap().try_into().unwrap());
            let name = row.value(1).map(|v| String::from_utf8(v.to_vec()).unwrap());
            let text = row.value(2).map(|id| {
                row.transaction()
                    .read_blob(id.try_into().unwrap(), &mut blob)
                    .unwrap();
                String::from_utf8(blob.clone()).unwrap()
            });
            rows.push((id, name, text));
        }
    }
    assert_eq!(
        rows,
        vec![
            (1, Some("één".to_string()), Some("blob text".to_string())),
            (2, None, None)
        ]
    );
}

#[test]
fn errors_carry_firebird_text_and_codes() {
    let client = Client::load(None).unwrap();
    let err = match Attachment::connect(&client, &options("/nonexistent/dir/x.fdb", false)) {
        Err(e) => e,
        Ok(_) => panic!("attached to a missing file"),
    };
    let fb = err.firebird().expect("a Firebird error");
    assert!(fb.is_database_missing(), "{fb:?}");
    assert!(
        fb.message.contains("/nonexistent/dir/x.fdb"),
        "{}",
        fb.message
    );
}

#[test]
fn an_embedded_attachment_keeps_a_small_page_cache() {
    let client = Client::load(None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.fdb").to_string_lossy().into_owned();
    let create =
        format!("CREATE DATABASE '{path}' USER 'SYSDBA' PASSWORD 'masterkey' PAGE_SIZE 16384");
    // Closed before the attachment below, which then makes the cache.
    drop(Attachment::create_database(&client, &create).unwrap());
    let db = Attachment::connect(&client, &options(&path, true)).unwrap();
    let tr = db
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    let mut stmt = tr
        .prepare("SELECT CAST(MON$PAGE_BUFFERS AS BIGINT) FROM MON$DATABASE")
        .unwrap();
    stmt.execute().unwrap();
    assert!(stmt.fetch().unwrap());
    let pages = i64::from_ne_bytes(stmt.row().value(0).unwrap().try_into().unwrap());
    // Firebird's own default is 2,048 pages: 32 MB at this page size.
    assert_eq!(pages, fbunload_client::EMBEDDED_CACHE_PAGES);
}
