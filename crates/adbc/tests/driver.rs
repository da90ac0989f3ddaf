//! The driver through ADBC's Rust traits, against the real embedded engine:
//! reads equal the facade's, writes are refused, partitions join their
//! statement's snapshot and fail once it is gone.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use adbc_core::error::Status;
use adbc_core::options::{
    ObjectDepth, OptionConnection, OptionDatabase, OptionStatement, OptionValue,
};
use adbc_core::{Connection, Database, Driver, Optionable, Statement};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, Float32Array, Float64Array, Int32Array, NullArray, RecordBatch,
    Time64MicrosecondArray, TimestampMicrosecondArray, TimestampNanosecondArray,
};
use fbunload::Unload;
use fbunload_adbc::{FbConnection, FbDriver};
use fbunload_client::{Attachment, Client, TransactionMode};

fn client() -> Arc<Client> {
    Client::load(None).expect("the embedded engine (scripts/setup.sh)")
}

/// A new database `name` in `dir` holding what `statements` make.
fn new_database(dir: &Path, name: &str, page_size: u32, statements: &[&str]) -> PathBuf {
    let db = dir.join(name);
    drop(fbunload_gen::create_test_database(
        &client(),
        &db.to_string_lossy(),
        "masterkey",
        page_size,
        statements,
    ));
    db
}

/// Table `ACCOUNTS` over several pointer pages (4 KiB pages), and a view.
fn database(dir: &Path) -> PathBuf {
    new_database(
        dir,
        "adbc.fdb",
        4096,
        &[
            "CREATE TABLE ACCOUNTS (ID INTEGER NOT NULL, BALANCE BIGINT, PAD VARCHAR(400))",
            "CREATE VIEW RICH AS SELECT ID FROM ACCOUNTS WHERE BALANCE > 1500",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 20000) DO BEGIN \
         INSERT INTO ACCOUNTS VALUES (:I, 1000 + MOD(:I, 1000), LPAD('', 400, 'x' || :I)); \
         I = I + 1; END END",
        ],
    )
}

/// Runs `sql` and commits it, on an attachment of its own.
fn commit(db: &Path, sql: &str) {
    let writer = Attachment::connect(
        &client(),
        &fbunload_client::ConnectOptions {
            database: db.to_string_lossy().into_owned(),
            user: Some("SYSDBA".into()),
            password: Some("masterkey".into()),
            charset: "UTF8".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let tr = writer
        .start_transaction(TransactionMode::ReadWrite)
        .unwrap();
    tr.execute(sql).unwrap();
    tr.commit().unwrap();
}

fn connect(db: &Path) -> FbConnection {
    let opts = [
        (OptionDatabase::Uri, db.display().to_string()),
        (OptionDatabase::Username, "SYSDBA".into()),
        (OptionDatabase::Password, "masterkey".into()),
        (
            OptionDatabase::Other("adbc.fbunload.parallel".into()),
            "3".into(),
        ),
    ];
    let database = FbDriver
        .new_database_with_opts(opts.map(|(k, v)| (k, OptionValue::String(v))))
        .unwrap();
    database.new_connection().unwrap()
}

fn run(conn: &mut FbConnection, sql: &str) -> Vec<RecordBatch> {
    let mut statement = conn.new_statement().unwrap();
    statement.set_sql_query(sql).unwrap();
    statement.execute().unwrap().map(Result::unwrap).collect()
}

fn sum(batches: &[RecordBatch], column: &str) -> i64 {
    batches
        .iter()
        .map(|b| {
            let values = b
                .column_by_name(column)
                .unwrap()
                .as_primitive::<Int64Type>();
            values.iter().flatten().sum::<i64>()
        })
        .sum()
}

fn rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

#[test]
fn a_table_and_a_query_read_what_the_facade_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let mut conn = connect(&db);
    let batches = run(&mut conn, "select * from accounts");
    let expected: Vec<RecordBatch> = Unload::new(db.to_string_lossy())
        .user("SYSDBA")
        .password("masterkey")
        .tables("ACCOUNTS")
        .record_batches()
        .unwrap()
        .map(|b| b.unwrap().batch)
        .collect();
    // Batch boundaries are the readers'; rows and values are the table's.
    let whole =
        |b: &[RecordBatch]| arrow_select::concat::concat_batches(&b[0].schema(), b).unwrap();
    assert_eq!(whole(&batches), whole(&expected));
    let total = run(
        &mut conn,
        "SELECT CAST(SUM(BALANCE) AS BIGINT) AS T FROM ACCOUNTS",
    );
    assert_eq!(sum(&total, "T"), sum(&batches, "BALANCE"));
    // A view through SELECT * is read as the query it is.
    assert_eq!(rows(&run(&mut conn, "SELECT * FROM RICH")), 20 * 499);
    // ExecuteSchema: the schema of what ExecuteQuery returns, no row read.
    let mut statement = conn.new_statement().unwrap();
    statement.set_sql_query("SELECT * FROM ACCOUNTS").unwrap();
    assert_eq!(statement.execute_schema().unwrap(), *batches[0].schema());
    statement
        .set_sql_query("SELECT ID, PAD || '!' AS LOUD FROM ACCOUNTS")
        .unwrap();
    let names: Vec<String> = (statement.execute_schema().unwrap().fields().iter())
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["ID", "LOUD"]);
}

#[test]
fn statements_that_change_data_are_refused_when_given() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = connect(&database(dir.path()));
    let mut statement = conn.new_statement().unwrap();
    for sql in ["DELETE FROM ACCOUNTS", "update ACCOUNTS set BALANCE = 0"] {
        let err = statement.set_sql_query(sql).unwrap_err();
        assert_eq!(err.status, Status::InvalidArguments);
        assert!(err.message.contains("read-only"), "{}", err.message);
        assert!(!err.message.contains('\n'));
    }
    // No query yet: the wrong order of calls; with one: not implemented.
    assert_eq!(
        statement.execute_update().unwrap_err().status,
        Status::InvalidState
    );
    assert_eq!(
        statement.execute().err().unwrap().status,
        Status::InvalidState
    );
    statement.set_sql_query("SELECT * FROM ACCOUNTS").unwrap();
    assert_eq!(
        statement.execute_update().unwrap_err().status,
        Status::NotImplemented
    );
    assert_eq!(
        sum(&run(&mut conn, "SELECT * FROM ACCOUNTS"), "BALANCE"),
        20 * 1000 * 1000 + 20 * 499500
    );
}

#[test]
fn partitions_join_the_statements_snapshot_until_it_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let mut conn = connect(&db);
    let mut statement = conn.new_statement().unwrap();
    statement
        .set_option(
            OptionStatement::Other("adbc.fbunload.partitions".into()),
            OptionValue::Int(3),
        )
        .unwrap();
    statement.set_sql_query("SELECT * FROM ACCOUNTS").unwrap();
    let result = statement.execute_partitions().unwrap();
    assert_eq!(result.partitions.len(), 3);
    // Committed after the snapshot: no partition sees it.
    commit(&db, "UPDATE ACCOUNTS SET BALANCE = 0 WHERE ID < 10000");
    let mut pieces = Vec::new();
    for partition in &result.partitions {
        let reader = connect(&db).read_partition(partition).unwrap();
        assert_eq!(*reader.schema(), result.schema);
        pieces.extend(reader.map(Result::unwrap));
    }
    assert_eq!(rows(&pieces), 20000);
    assert_eq!(sum(&pieces, "BALANCE"), 20 * 1000 * 1000 + 20 * 499500);
    drop(statement);
    let err = match conn.read_partition(&result.partitions[0]) {
        Ok(mut reader) => reader.next().unwrap().unwrap_err().to_string(),
        Err(e) => e.message,
    };
    assert!(err.contains("is closed"), "{err}");
}

/// Any SELECT is partitioned: split by its driving table into shares of
/// its units, else one partition; each reads at the statement's snapshot.
#[test]
fn any_select_is_partitioned_at_the_statements_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let mut conn = connect(&db);
    let partitions = |statement: &mut fbunload_adbc::FbStatement, sql: &str| {
        statement.set_sql_query(sql).unwrap();
        statement.execute_partitions().unwrap()
    };
    let read_all = |result: &adbc_core::PartitionedResult| {
        let mut pieces = Vec::new();
        for partition in &result.partitions {
            let reader = connect(&db).read_partition(partition).unwrap();
            assert_eq!(*reader.schema(), result.schema);
            pieces.extend(reader.map(Result::unwrap));
        }
        pieces
    };
    let mut split = conn.new_statement().unwrap();
    for (key, value) in [("split_by", "ACCOUNTS"), ("partitions", "3")] {
        let key = OptionStatement::Other(format!("adbc.fbunload.{key}"));
        split
            .set_option(key, OptionValue::String(value.into()))
            .unwrap();
    }
    let sql =
        "SELECT a.ID, CAST(a.BALANCE * 2 AS BIGINT) AS TWICE FROM ACCOUNTS a WHERE a.ID >= 100";
    let split_result = partitions(&mut split, sql);
    assert_eq!(split_result.partitions.len(), 3);
    let mut whole = conn.new_statement().unwrap();
    let whole_result = partitions(&mut whole, "SELECT 42 AS N FROM RDB$DATABASE");
    assert_eq!(whole_result.partitions.len(), 1);
    let mut view = conn.new_statement().unwrap();
    let view_result = partitions(&mut view, "SELECT * FROM RICH");
    assert_eq!(view_result.partitions.len(), 1);
    // Committed after the snapshots: no partition sees it.
    commit(&db, "UPDATE ACCOUNTS SET BALANCE = 0");
    let pieces = read_all(&split_result);
    assert_eq!(rows(&pieces), 19900);
    let expected: i64 = (100..20000).map(|i| 2 * (1000 + i % 1000)).sum();
    assert_eq!(sum(&pieces, "TWICE"), expected);
    let answer = read_all(&whole_result);
    assert_eq!(answer[0].column(0).as_primitive::<Int32Type>().value(0), 42);
    assert_eq!(rows(&read_all(&view_result)), 20 * 499);
    drop(split);
    let err = match conn.read_partition(&split_result.partitions[0]) {
        Ok(mut reader) => reader.next().unwrap().unwrap_err().to_string(),
        Err(e) => e.message,
    };
    assert!(err.contains("is closed"), "{err}");
    assert!(conn.read_partition(b"nonsense").is_err());
}

#[test]
fn metadata_from_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let conn = connect(&database(dir.path()));
    let schema = conn.get_table_schema(None, None, "ACCOUNTS").unwrap();
    let names: Vec<_> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["ID", "BALANCE", "PAD"]);
    assert_eq!(
        conn.get_table_schema(None, None, "RICH")
            .unwrap()
            .fields()
            .len(),
        1
    );
    let err = conn.get_table_schema(None, None, "NOPE").unwrap_err();
    assert_eq!(err.status, Status::NotFound);
    let objects: Vec<RecordBatch> = conn
        .get_objects(ObjectDepth::All, None, None, Some("%"), None, Some("B%"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let tables = objects[0].column(1).as_list::<i32>().value(0);
    let tables = tables.as_struct().column(1).as_list::<i32>().value(0);
    let tables = tables.as_struct();
    let names = tables.column(0).as_string::<i32>();
    let types = tables.column(1).as_string::<i32>();
    assert_eq!(
        (0..names.len())
            .map(|i| (names.value(i), types.value(i)))
            .collect::<Vec<_>>(),
        [("ACCOUNTS", "TABLE"), ("RICH", "VIEW")]
    );
    // The column filter leaves BALANCE alone in ACCOUNTS.
    let columns = tables.column(2).as_list::<i32>().value(0);
    assert_eq!(
        columns.as_struct().column(0).as_string::<i32>().value(0),
        "BALANCE"
    );
    assert_eq!(columns.len(), 1);
    let only_views = conn
        .get_objects(
            ObjectDepth::Tables,
            None,
            None,
            None,
            Some(vec!["VIEW"]),
            None,
        )
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let tables = only_views.column(1).as_list::<i32>().value(0);
    let tables = tables.as_struct().column(1).as_list::<i32>().value(0);
    assert_eq!(tables.len(), 1);
}

/// `AdbcStatementCancel` while the rows are read: the run stops and the
/// stream ends with an error of status Cancelled, long before the table's
/// end (more rows than the stream may hold ahead of its reader).
#[test]
fn a_statement_cancelled_while_its_rows_are_read_stops_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_database(
        dir.path(),
        "big.fdb",
        8192,
        &[
            "CREATE TABLE BIG (ID INTEGER, PAD VARCHAR(1000))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 250000) DO BEGIN \
             INSERT INTO BIG VALUES (:I, LPAD('', 1000, 'x' || :I)); I = I + 1; END END",
        ],
    );
    let mut conn = connect(&db);
    let mut statement = conn.new_statement().unwrap();
    statement.set_sql_query("SELECT * FROM BIG").unwrap();
    // The statement's cancel, then the connection's, which stops every
    // read of the connection: each after the first batch.
    let by_statement = statement.get_cancel_handle();
    let by_connection = conn.get_cancel_handle();
    for cancel in [by_statement, by_connection] {
        let mut reader = statement.execute().unwrap();
        let mut read = reader.next().unwrap().unwrap().num_rows();
        cancel.try_cancel().unwrap();
        let started = std::time::Instant::now();
        let mut ended = None;
        for item in reader {
            match item {
                Ok(batch) => read += batch.num_rows(),
                Err(e) => ended = Some(e.to_string()),
            }
        }
        let ended = ended.expect("the stream ends with an error");
        assert!(ended.contains("the read was cancelled"), "{ended}");
        assert!(read < 250_000, "{read} rows read after the cancel");
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }
}

/// A cancel while several bound rows are read (they are all read before
/// `execute` returns): the row being read stops at once, with an error
/// of status Cancelled, and no further row starts; by the statement's
/// cancel and by the connection's. Each row here takes the engine far
/// longer than the test waits.
#[test]
fn a_cancel_stops_several_bound_rows_inside_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = connect(&database(dir.path()));
    for statement_cancel in [true, false] {
        let mut statement = conn.new_statement().unwrap();
        statement
            .set_sql_query("SELECT COUNT(*) FROM ACCOUNTS a, ACCOUNTS b, ACCOUNTS c WHERE a.ID > ?")
            .unwrap();
        let ids = RecordBatch::try_from_iter([(
            "id",
            Arc::new(Int32Array::from(vec![1, 2, 3, 4])) as ArrayRef,
        )])
        .unwrap();
        statement.bind(ids).unwrap();
        let cancel = if statement_cancel {
            statement.get_cancel_handle()
        } else {
            conn.get_cancel_handle()
        };
        let (done, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(
                statement
                    .execute()
                    .map(drop)
                    .map_err(|e| (e.status, e.message)),
            );
        });
        std::thread::sleep(std::time::Duration::from_secs(1));
        let cancelled_at = std::time::Instant::now();
        cancel.try_cancel().unwrap();
        let result = result
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("execute ends soon after the cancel");
        let waited = cancelled_at.elapsed();
        let (status, message) = result.expect_err("a cancelled execute fails");
        assert_eq!(status, Status::Cancelled, "{message}");
        assert!(message.contains("the read was cancelled"), "{message}");
        assert!(
            waited < std::time::Duration::from_secs(5),
            "execute ended {waited:?} after the cancel"
        );
    }
}

#[test]
fn autocommit_is_on_and_commit_has_nothing_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = connect(&database(dir.path()));
    let autocommit = || OptionConnection::AutoCommit;
    assert_eq!(conn.commit().unwrap_err().status, Status::InvalidState);
    assert_eq!(conn.rollback().unwrap_err().status, Status::InvalidState);
    let err = conn
        .set_option(autocommit(), OptionValue::String("invalid".into()))
        .unwrap_err();
    assert_eq!(err.status, Status::InvalidArguments);
    assert_eq!(conn.get_option_string(autocommit()).unwrap(), "true");
    // Off (the DB-API's default): nothing to commit, and no error.
    conn.set_option(autocommit(), OptionValue::String("false".into()))
        .unwrap();
    conn.commit().unwrap();
    conn.rollback().unwrap();
    assert_eq!(conn.get_option_string(autocommit()).unwrap(), "false");
}

#[test]
fn a_query_ending_in_semicolons_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = connect(&database(dir.path()));
    let batches = run(&mut conn, "SELECT ID FROM ACCOUNTS WHERE ID < 3 ;;\n");
    assert_eq!(rows(&batches), 3);
}

/// Several bound rows: one read each, concatenated in the rows' order;
/// a column NULL in one row takes the others' type; two columns may
/// share a name (Firebird names both `CONSTANT`).
#[test]
fn several_bound_rows_give_one_result_each_concatenated() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = connect(&database(dir.path()));
    let mut statement = conn.new_statement().unwrap();
    statement
        .set_sql_query("SELECT ?, ? FROM RDB$DATABASE")
        .unwrap();
    let params = RecordBatch::try_from_iter([
        (
            "int64s",
            Arc::new(arrow_array::Int64Array::from(vec![
                Some(42),
                Some(-42),
                None,
            ])) as arrow_array::ArrayRef,
        ),
        (
            "strings",
            Arc::new(arrow_array::StringArray::from(vec![
                Some(""),
                None,
                Some("bar"),
            ])),
        ),
    ])
    .unwrap();
    statement.bind(params).unwrap();
    let batches: Vec<RecordBatch> = statement.execute().unwrap().map(Result::unwrap).collect();
    let all = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    let schema = all.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["CONSTANT", "CONSTANT"]);
    let numbers = all.column(0).as_primitive::<Int32Type>();
    assert_eq!(
        numbers.iter().collect::<Vec<_>>(),
        [Some(42), Some(-42), None]
    );
    let texts = all.column(1).as_string::<i32>();
    assert_eq!(
        texts.iter().collect::<Vec<_>>(),
        [Some(""), None, Some("bar")]
    );
    // A filter bound three times: each row's rows, in the rows' order.
    statement
        .set_sql_query("SELECT ID FROM ACCOUNTS WHERE ID = ?")
        .unwrap();
    let ids = RecordBatch::try_from_iter([(
        "id",
        Arc::new(arrow_array::Int32Array::from(vec![7, 1, 5])) as arrow_array::ArrayRef,
    )])
    .unwrap();
    statement.bind(ids).unwrap();
    let batches: Vec<RecordBatch> = statement.execute().unwrap().map(Result::unwrap).collect();
    let found: Vec<i32> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int32Type>().values().to_vec())
        .collect();
    assert_eq!(found, [7, 1, 5]);
}

/// GetObjects at depth ALL lists each table's constraints (an empty
/// list where none), FOREIGN KEYs with the columns they reference.
#[test]
fn constraints_are_listed_with_the_columns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("keys.fdb");
    drop(fbunload_gen::create_test_database(
        &client(),
        &db.to_string_lossy(),
        "masterkey",
        4096,
        &[
            "CREATE TABLE PARENT (A INTEGER NOT NULL, B INTEGER NOT NULL, C INTEGER, \
             CONSTRAINT PARENT_PK PRIMARY KEY (A, B), CONSTRAINT PARENT_C UNIQUE (C))",
            "CREATE TABLE CHILD (ID INTEGER NOT NULL PRIMARY KEY, PA INTEGER, PB INTEGER, \
             CONSTRAINT CHILD_FK FOREIGN KEY (PA, PB) REFERENCES PARENT (A, B), \
             CONSTRAINT CHILD_CHECK CHECK (ID > 0))",
            "CREATE TABLE LOOSE (X INTEGER)",
        ],
    ));
    let conn = connect(&db);
    let objects = conn
        .get_objects(ObjectDepth::All, None, None, None, None, None)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let tables = objects.column(1).as_list::<i32>().value(0);
    let tables = tables.as_struct().column(1).as_list::<i32>().value(0);
    let tables = tables.as_struct();
    let names = tables.column(0).as_string::<i32>();
    let constraints = tables.column(3).as_list::<i32>();
    let mut found = std::collections::BTreeMap::new();
    for i in 0..names.len() {
        assert!(constraints.is_valid(i), "a list, empty where none");
        let list = constraints.value(i);
        let list = list.as_struct();
        let texts = |c: usize| list.column(c).as_string::<i32>().clone();
        let (cnames, kinds) = (texts(0), texts(1));
        let columns = list.column(2).as_list::<i32>();
        let usage = list.column(3).as_list::<i32>();
        let described: Vec<String> = (0..list.len())
            .map(|j| {
                let cols = columns.value(j);
                let cols: Vec<&str> = cols.as_string::<i32>().iter().flatten().collect();
                let refs = usage.value(j);
                let refs = refs.as_struct();
                let (rt, rc) = (
                    refs.column(2).as_string::<i32>(),
                    refs.column(3).as_string::<i32>(),
                );
                let refs: Vec<String> = (0..refs.len())
                    .map(|k| format!("{}.{}", rt.value(k), rc.value(k)))
                    .collect();
                format!(
                    "{} {} {:?} {:?}",
                    kinds.value(j),
                    cnames.value(j),
                    cols,
                    refs
                )
            })
            .collect();
        found.insert(names.value(i).to_string(), described);
    }
    assert_eq!(found["LOOSE"], Vec::<String>::new());
    assert_eq!(
        found["PARENT"],
        [
            "UNIQUE PARENT_C [\"C\"] []",
            "PRIMARY KEY PARENT_PK [\"A\", \"B\"] []"
        ]
    );
    let child = &found["CHILD"];
    assert_eq!(child.len(), 3, "{child:?}");
    assert!(
        child.contains(&"CHECK CHILD_CHECK [] []".to_string()),
        "{child:?}"
    );
    assert!(
        child.contains(
            &"FOREIGN KEY CHILD_FK [\"PA\", \"PB\"] [\"PARENT.A\", \"PARENT.B\"]".to_string()
        ),
        "{child:?}"
    );
    assert!(child
        .iter()
        .any(|c| c.starts_with("PRIMARY KEY ") && c.contains("[\"ID\"]")));
    // Above the columns' depth, no constraints either.
    let tables_only = conn
        .get_objects(ObjectDepth::Tables, None, None, None, None, None)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let tables = tables_only.column(1).as_list::<i32>().value(0);
    let tables = tables.as_struct().column(1).as_list::<i32>().value(0);
    assert_eq!(tables.as_struct().column(3).null_count(), tables.len());
}

/// AdbcConnectionCancel stops the connection's metadata results: the
/// next batch is an error of status Cancelled.
#[test]
fn a_connection_cancel_stops_its_metadata_results() {
    let dir = tempfile::tempdir().unwrap();
    let conn = connect(&database(dir.path()));
    let mut reader = conn
        .get_objects(ObjectDepth::Catalogs, None, None, None, None, None)
        .unwrap();
    let other = conn.get_table_types().unwrap();
    conn.get_cancel_handle().try_cancel().unwrap();
    let err = reader.next().unwrap().unwrap_err().to_string();
    assert!(err.contains("the read was cancelled"), "{err}");
    assert!(reader.next().is_none());
    drop(other);
    // A later call is not cancelled.
    assert!(conn.get_table_types().unwrap().next().unwrap().is_ok());
}

/// A bound string with non-ASCII text found nothing in a WIN1252 column:
/// the driver sends it as a literal, which reached the engine in the
/// connection character set NONE, its UTF-8 bytes compared as they are
/// (issue 37).
#[test]
fn a_bound_string_with_non_ascii_text_finds_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_database(
        dir.path(),
        "text.fdb",
        4096,
        &[
            "CREATE TABLE T (ID INTEGER, W VARCHAR(20) CHARACTER SET WIN1252)",
            "INSERT INTO T VALUES (1, 'café')",
            "INSERT INTO T VALUES (2, 'cafe')",
        ],
    );
    let mut conn = connect(&db);
    let mut statement = conn.new_statement().unwrap();
    statement
        .set_sql_query("SELECT ID, W || ? AS WW FROM T WHERE W = ?")
        .unwrap();
    let params = RecordBatch::try_from_iter([
        (
            "suffix",
            Arc::new(arrow_array::StringArray::from(vec!["é"])) as arrow_array::ArrayRef,
        ),
        (
            "w",
            Arc::new(arrow_array::StringArray::from(vec!["café"])) as arrow_array::ArrayRef,
        ),
    ])
    .unwrap();
    statement.bind(params).unwrap();
    let batches: Vec<RecordBatch> = statement.execute().unwrap().map(Result::unwrap).collect();
    assert_eq!(rows(&batches), 1);
    let ww = batches[0].column_by_name("WW").unwrap().as_string::<i32>();
    assert_eq!(ww.value(0), "caféé");
}

/// `run` with one row of values bound to the query's markers; the error's
/// message where it is refused, when given or while read.
fn run_bound(
    conn: &mut FbConnection,
    sql: &str,
    values: Vec<(&str, ArrayRef)>,
) -> Result<Vec<RecordBatch>, String> {
    let mut statement = conn.new_statement().unwrap();
    statement.set_sql_query(sql).map_err(|e| e.message)?;
    statement
        .bind(RecordBatch::try_from_iter(values).unwrap())
        .unwrap();
    let reader = statement.execute().map_err(|e| e.message)?;
    reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

fn ids(batches: &[RecordBatch]) -> Vec<i32> {
    let mut ids: Vec<i32> = batches
        .iter()
        .flat_map(|b| {
            let ids = b.column_by_name("ID").unwrap().as_primitive::<Int32Type>();
            ids.iter().flatten().collect::<Vec<_>>()
        })
        .collect();
    ids.sort();
    ids
}

/// Firebird allows more decimals than digits: a bound 1E-36 is a literal
/// of 36 decimals, whose result reads back exactly (it panicked: "scale
/// 36 is greater than precision 19"), as do literals of 20 and 38.
#[test]
fn a_bound_decimal_with_more_decimals_than_digits_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = connect(&database(dir.path()));
    for (value, scale) in [(1i128, 36i8), (1, 20), (-7, 38), (123_456_789, 30)] {
        let bound = arrow_array::Decimal128Array::from(vec![value])
            .with_precision_and_scale(38, scale)
            .unwrap();
        let expected = bound.value_as_string(0);
        let batches = run_bound(
            &mut conn,
            "SELECT ? AS X FROM RDB$DATABASE",
            vec![("x", Arc::new(bound) as ArrayRef)],
        )
        .unwrap_or_else(|e| panic!("{expected}: {e}"));
        let column = batches[0].column(0);
        let read = match column.data_type() {
            arrow_schema::DataType::Decimal128(_, s) => {
                assert_eq!(*s, scale);
                column
                    .as_primitive::<arrow_array::types::Decimal128Type>()
                    .value_as_string(0)
            }
            arrow_schema::DataType::Decimal256(_, s) => {
                assert_eq!(*s, scale);
                column
                    .as_primitive::<arrow_array::types::Decimal256Type>()
                    .value_as_string(0)
            }
            other => panic!("{expected} read as {other}"),
        };
        assert_eq!(read, expected);
    }
}

/// `SELECT * FROM T` returns the columns the engine returns for it,
/// computed ones included, as `SELECT * FROM T WHERE 1=1` does; still
/// read in parallel, and partitioned as that query split by the table.
#[test]
fn select_star_of_a_table_with_computed_columns_returns_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_database(
        dir.path(),
        "computed.fdb",
        4096,
        &[
            "CREATE TABLE C (ID INTEGER, A INTEGER, TWICE COMPUTED BY (A * 2), \
             PAD VARCHAR(400), SHOUT COMPUTED BY (UPPER(SUBSTRING(PAD FROM 1 FOR 3))))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 20000) DO BEGIN \
             INSERT INTO C (ID, A, PAD) VALUES (:I, MOD(:I, 7), LPAD('', 400, 'ab' || :I)); \
             I = I + 1; END END",
        ],
    );
    let mut conn = connect(&db);
    let names = |batches: &[RecordBatch]| -> Vec<String> {
        let schema = batches[0].schema();
        schema.fields().iter().map(|f| f.name().clone()).collect()
    };
    let star = run(&mut conn, "SELECT * FROM C");
    let engine = run(&mut conn, "SELECT * FROM C WHERE 1=1");
    assert_eq!(names(&star), ["ID", "A", "TWICE", "PAD", "SHOUT"]);
    assert_eq!(names(&star), names(&engine));
    let whole =
        |b: &[RecordBatch]| arrow_select::concat::concat_batches(&b[0].schema(), b).unwrap();
    let (star, engine) = (whole(&star), whole(&engine));
    assert_eq!(star.num_rows(), 20000);
    // Row order may differ between the parallel read and the engine's.
    let sorted = |b: &RecordBatch| {
        let ids = b.column(0).as_primitive::<Int32Type>();
        let mut order: Vec<u32> = (0..b.num_rows() as u32).collect();
        order.sort_by_key(|&i| ids.value(i as usize));
        let order = arrow_array::UInt32Array::from(order);
        arrow_select::take::take_record_batch(b, &order).unwrap()
    };
    assert_eq!(sorted(&star), sorted(&engine));
    // A whole-table read (read_arrow, the command line) unloads the stored
    // columns: the rule README's "Which tables" states.
    let stored: Vec<RecordBatch> = Unload::new(db.to_string_lossy())
        .user("SYSDBA")
        .password("masterkey")
        .tables("C")
        .record_batches()
        .unwrap()
        .map(|b| b.unwrap().batch)
        .collect();
    assert_eq!(names(&stored), ["ID", "A", "PAD"]);
    let twice = star.column(2).as_primitive::<Int64Type>();
    let a = star.column(1).as_primitive::<Int32Type>();
    assert!((0..20000).all(|i| twice.value(i) == 2 * i64::from(a.value(i))));

    let mut statement = conn.new_statement().unwrap();
    statement.set_sql_query("select * from c").unwrap();
    assert_eq!(statement.execute_schema().unwrap(), *star.schema());
    assert_eq!(
        conn.get_table_schema(None, None, "C").unwrap(),
        *star.schema()
    );
    // GetObjects lists them too, a computed one with the type the server
    // describes.
    let objects = conn
        .get_objects(ObjectDepth::All, None, None, Some("C"), None, None)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let tables = objects.column(1).as_list::<i32>().value(0);
    let tables = tables.as_struct().column(1).as_list::<i32>().value(0);
    let columns = tables.as_struct().column(2).as_list::<i32>().value(0);
    let columns = columns.as_struct();
    let declared = columns.column_by_name("xdbc_type_name").unwrap();
    let listed: Vec<(&str, &str)> = (0..columns.len())
        .map(|i| {
            let name = columns.column(0).as_string::<i32>().value(i);
            (name, declared.as_string::<i32>().value(i))
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("ID", "INTEGER"),
            ("A", "INTEGER"),
            ("TWICE", "BIGINT"),
            ("PAD", "VARCHAR(400) CHARACTER SET UTF8"),
            ("SHOUT", "VARCHAR(12 bytes)")
        ]
    );
    // Its partitions are the query split by the table: the columns and
    // rows of SELECT *, computed ones included.
    statement
        .set_option(
            OptionStatement::Other("adbc.fbunload.partitions".into()),
            OptionValue::Int(3),
        )
        .unwrap();
    let result = statement.execute_partitions().unwrap();
    assert_eq!(result.partitions.len(), 3);
    assert_eq!(result.schema, *star.schema());
    let mut pieces = Vec::new();
    for partition in &result.partitions {
        let reader = connect(&db).read_partition(partition).unwrap();
        pieces.extend(reader.map(Result::unwrap));
    }
    assert_eq!(sorted(&whole(&pieces)), sorted(&star));
}

/// A bound double reaches the engine as exactly that double: what
/// `SELECT ?` returns has the same bits, subnormals, the extremes, -0.0
/// and 200 others included; NaN and infinities are refused.
#[test]
fn bound_floats_reach_the_engine_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_database(
        dir.path(),
        "floats.fdb",
        4096,
        &[
            "CREATE TABLE F (ID INTEGER, D DOUBLE PRECISION, R FLOAT)",
            "INSERT INTO F VALUES (1, 0, 0)",
            "INSERT INTO F VALUES (2, 1.5, 0.25)",
        ],
    );
    let mut conn = connect(&db);
    let bound = |conn: &mut FbConnection, sql: &str, value: f64| {
        run_bound(
            conn,
            sql,
            vec![("p", Arc::new(Float64Array::from(vec![value])))],
        )
    };
    // 1e-310 was sent as a literal that the engine read as 0.
    let found = bound(&mut conn, "SELECT ID FROM F WHERE D = ?", 1e-310).unwrap();
    assert_eq!(ids(&found), Vec::<i32>::new());
    let found = bound(&mut conn, "SELECT ID FROM F WHERE D = ?", 1.5).unwrap();
    assert_eq!(ids(&found), [2]);
    let real = Arc::new(Float32Array::from(vec![0.25f32]));
    let found = run_bound(&mut conn, "SELECT ID FROM F WHERE R = ?", vec![("p", real)]);
    assert_eq!(ids(&found.unwrap()), [2]);

    let mut values = vec![
        1e-310,
        f64::from_bits(1),
        f64::from_bits((1 << 52) - 1),
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        -0.0,
        0.0,
        0.1,
        1.0 / 3.0,
        0.1 + 0.2,
        123_456_789.123_456_79,
        9_007_199_254_740_993.0,
        -1.5e300,
        2.2250738585072014e-308 * 3.0,
    ];
    // Bit patterns from a fixed xorshift, every finite exponent likely.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    while values.len() < 216 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let value = f64::from_bits(state);
        if value.is_finite() {
            values.push(value);
        }
    }
    let columns: Vec<String> = (0..values.len()).map(|i| format!("? AS V{i}")).collect();
    let sql = format!("SELECT {} FROM RDB$DATABASE", columns.join(", "));
    let params: Vec<(String, ArrayRef)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            (
                format!("p{i}"),
                Arc::new(Float64Array::from(vec![*v])) as ArrayRef,
            )
        })
        .collect();
    let params = params
        .iter()
        .map(|(n, a)| (n.as_str(), a.clone()))
        .collect();
    let row = run_bound(&mut conn, &sql, params).unwrap();
    for (i, expected) in values.iter().enumerate() {
        let got = row[0].column(i).as_primitive::<Float64Type>().value(0);
        assert_eq!(
            got.to_bits(),
            expected.to_bits(),
            "{expected:e} came back as {got:e}"
        );
    }
    for refused in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let err = bound(&mut conn, "SELECT ID FROM F WHERE D = ?", refused).unwrap_err();
        assert!(err.contains("no NaN or infinity"), "{err}");
    }
}

/// Firebird keeps time to 100 µs: a value in it is bound exactly, one
/// with finer digits is refused rather than rounded to another instant.
/// Arrow's null type (Python's None) binds as NULL.
#[test]
fn timestamps_times_and_nulls_bind_as_firebird_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = new_database(
        dir.path(),
        "times.fdb",
        4096,
        &[
            "CREATE TABLE W (ID INTEGER, TS TIMESTAMP, TM TIME)",
            "INSERT INTO W VALUES (1, '2024-01-01 00:00:00.1234', '12:30:00.1234')",
            "INSERT INTO W VALUES (2, '2024-01-01 00:00:00.1235', '12:30:00.1235')",
        ],
    );
    let mut conn = connect(&db);
    // 2024-01-01 00:00:00.123400 (the microseconds Python's datetime has).
    let micros = 1_704_067_200_123_400i64;
    let at = |micros: i64| Arc::new(TimestampMicrosecondArray::from(vec![micros])) as ArrayRef;
    let found = run_bound(
        &mut conn,
        "SELECT ID FROM W WHERE TS = ?",
        vec![("p", at(micros))],
    );
    assert_eq!(ids(&found.unwrap()), [1]);
    let found = run_bound(
        &mut conn,
        "SELECT ID FROM W WHERE TS > ?",
        vec![("p", at(micros))],
    );
    assert_eq!(ids(&found.unwrap()), [2]);
    let nanos = Arc::new(TimestampNanosecondArray::from(vec![micros * 1000]));
    let found = run_bound(
        &mut conn,
        "SELECT ID FROM W WHERE TS = ?",
        vec![("p", nanos)],
    );
    assert_eq!(ids(&found.unwrap()), [1]);
    let err = run_bound(
        &mut conn,
        "SELECT ID FROM W WHERE TS > ?",
        vec![("p", at(micros + 50))],
    )
    .unwrap_err();
    assert!(err.contains("100 µs"), "{err}");
    let time = Arc::new(Time64MicrosecondArray::from(vec![45_000_123_500i64]));
    let found = run_bound(
        &mut conn,
        "SELECT ID FROM W WHERE TM = ?",
        vec![("p", time)],
    );
    assert_eq!(ids(&found.unwrap()), [2]);

    let null = Arc::new(NullArray::new(1)) as ArrayRef;
    let sql = "SELECT ID, COALESCE(?, 'none') AS V FROM W WHERE ID = 1";
    let found = run_bound(&mut conn, sql, vec![("p", null.clone())]).unwrap();
    assert_eq!(found[0].column(1).as_string::<i32>().value(0), "none");
    let found = run_bound(
        &mut conn,
        "SELECT ID FROM W WHERE TS = ?",
        vec![("p", null)],
    );
    assert_eq!(ids(&found.unwrap()), Vec::<i32>::new());
}

/// The markers are those Firebird's lexer sees: a `--` comment ended by a
/// carriage return and a `q'{...}'` string with a quote inside hide none,
/// and a value after a `-` is not read as the start of a comment.
#[test]
fn markers_are_found_as_the_engine_reads_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = connect(&database(dir.path()));
    let int = |v: i32| Arc::new(Int32Array::from(vec![v])) as ArrayRef;
    let sql = "SELECT ID FROM ACCOUNTS WHERE ID > ? -- the lower bound\r AND ID < ?";
    let found = run_bound(&mut conn, sql, vec![("a", int(2)), ("b", int(6))]);
    assert_eq!(ids(&found.unwrap()), [3, 4, 5]);
    let sql = "SELECT ID, q'{it's}' AS Q FROM ACCOUNTS WHERE ID = ?";
    let found = run_bound(&mut conn, sql, vec![("a", int(7))]).unwrap();
    assert_eq!(ids(&found), [7]);
    assert_eq!(found[0].column(1).as_string::<i32>().value(0), "it's");
    // Markers with nothing bound: refused when executed, in the driver's words.
    let mut statement = conn.new_statement().unwrap();
    statement
        .set_sql_query("SELECT ID FROM ACCOUNTS WHERE ID = ?")
        .unwrap();
    let err = statement.execute().err().unwrap();
    assert_eq!(err.status, Status::InvalidArguments);
    assert!(
        err.message.contains("no values are bound"),
        "{}",
        err.message
    );
    // `0 -?` bound to -1 is 0 - (-1), not `0 --1`, a comment to the line's end.
    let sql = "SELECT ID FROM ACCOUNTS WHERE ID > 0 -?\n AND ID < 5";
    let found = run_bound(&mut conn, sql, vec![("a", int(-1))]);
    assert_eq!(ids(&found.unwrap()), [2, 3, 4]);
}

/// A partition edited by hand is refused before it reads anything: a null
/// ticket (which once read the current state), other types, numbers out
/// of range, a query's partition holding anything but one SELECT; a name
/// that is no table at the snapshot fails in one line.
#[test]
fn an_edited_partition_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let mut conn = connect(&db);
    let mut statement = conn.new_statement().unwrap();
    statement.set_sql_query("SELECT * FROM ACCOUNTS").unwrap();
    let result = statement.execute_partitions().unwrap();
    let partition: serde_json::Value = serde_json::from_slice(&result.partitions[0]).unwrap();
    // A query's partitions: split by ACCOUNTS, and one read whole.
    let mut queries = conn.new_statement().unwrap();
    let query_partition = |statement: &mut fbunload_adbc::FbStatement, sql: &str| {
        statement.set_sql_query(sql).unwrap();
        let result = statement.execute_partitions().unwrap();
        serde_json::from_slice::<serde_json::Value>(&result.partitions[0]).unwrap()
    };
    let whole_query = query_partition(&mut queries, "SELECT COUNT(*) AS N FROM ACCOUNTS");
    let mut split = conn.new_statement().unwrap();
    split
        .set_option(
            OptionStatement::Other("adbc.fbunload.split_by".into()),
            OptionValue::String("ACCOUNTS".into()),
        )
        .unwrap();
    let split_query = query_partition(&mut split, "SELECT ID FROM ACCOUNTS WHERE ID < 500");
    let read = |edited: &serde_json::Value| -> Result<usize, (Status, String)> {
        let bytes = serde_json::to_vec(edited).unwrap();
        let reader = conn
            .read_partition(&bytes)
            .map_err(|e| (e.status, e.message))?;
        let batches = reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| (Status::IO, e.to_string()))?;
        Ok(rows(&batches))
    };
    assert!(read(&partition).unwrap() > 0);
    for (field, value) in [
        ("ticket", serde_json::Value::Null),
        ("ticket", serde_json::json!([1, 2])),
        ("ticket", serde_json::json!(["1", "2", "3"])),
        ("ticket", serde_json::json!([u64::MAX, u64::MAX, 0])),
        ("first_slot", serde_json::json!(u64::MAX)),
        ("end_slot", serde_json::json!(1e300)),
        ("table", serde_json::Value::Null),
        ("table", serde_json::json!("")),
    ] {
        let mut edited = partition.clone();
        edited[field] = value;
        let (status, message) = read(&edited).unwrap_err();
        assert_eq!(status, Status::InvalidArguments, "{edited}: {message}");
        assert!(
            message.starts_with("not a partition"),
            "{edited}: {message}"
        );
    }
    assert_eq!(read(&whole_query).unwrap(), 1);
    assert!(read(&split_query).unwrap() > 0);
    for query in [&whole_query, &split_query] {
        for (field, value) in [
            ("ticket", serde_json::Value::Null),
            ("query", serde_json::json!("DELETE FROM ACCOUNTS")),
            (
                "query",
                serde_json::json!("SELECT ID FROM ACCOUNTS; DELETE FROM ACCOUNTS"),
            ),
            (
                "query",
                serde_json::json!("UPDATE ACCOUNTS SET BALANCE = 0"),
            ),
            ("split_by", serde_json::json!("")),
            ("table", serde_json::json!("ACCOUNTS")),
        ] {
            let mut edited = query.clone();
            edited[field] = value;
            let (status, message) = read(&edited).unwrap_err();
            assert_eq!(status, Status::InvalidArguments, "{edited}: {message}");
            assert!(
                message.starts_with("not a partition"),
                "{edited}: {message}"
            );
            assert!(!message.contains('\n'), "{edited}: {message}");
        }
    }
    // Without its query, a partition of the table the facade calls QUERY.
    let mut edited = whole_query.clone();
    edited["query"] = serde_json::Value::Null;
    assert!(read(&edited).unwrap_err().1.contains("no such table"));
    // A query read whole is one partition: pages of it are no partition.
    let mut edited = whole_query.clone();
    edited["first_slot"] = 8.into();
    assert!(read(&edited).unwrap_err().1.starts_with("not a partition"));
    // A table's partition with a query's fields is no partition either.
    let mut edited = partition.clone();
    edited["split_by"] = "ACCOUNTS".into();
    assert!(read(&edited).unwrap_err().1.starts_with("not a partition"));
    // Not signed: another SELECT reads at the same snapshot.
    let mut edited = whole_query.clone();
    edited["query"] = "SELECT ID FROM ACCOUNTS WHERE ID < 5".into();
    assert_eq!(read(&edited).unwrap(), 5);
    for table in [
        "RICH",
        "RDB$RELATIONS",
        "MON$ATTACHMENTS",
        "NOPE",
        "ACC\"OUNTS",
        "accounts",
        // SIMILAR TO's own characters match only themselves.
        "ACCOUNT_",
        "ACC%",
        "NOPE|ACCOUNTS",
        "(ACCOUNTS)",
        "ACCOUNTS ",
    ] {
        let mut edited = partition.clone();
        edited["table"] = table.into();
        let (_, message) = read(&edited).unwrap_err();
        assert!(message.contains("no such table"), "{table}: {message}");
        assert!(!message.contains('\n'), "{table}: {message}");
    }
}
