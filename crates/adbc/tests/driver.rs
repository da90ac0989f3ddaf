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
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use fbunload::Unload;
use fbunload_adbc::{FbConnection, FbDriver};
use fbunload_client::{Attachment, Client, TransactionMode};

fn client() -> Arc<Client> {
    Client::load(None).expect("the embedded engine (scripts/setup.sh)")
}

/// Table `ACCOUNTS` over several pointer pages (4 KiB pages), and a view.
fn database(dir: &Path) -> PathBuf {
    let db = dir.join("adbc.fdb");
    fbunload_gen::create_test_database(
        &client(),
        &db.to_string_lossy(),
        "masterkey",
        4096,
        &[
            "CREATE TABLE ACCOUNTS (ID INTEGER NOT NULL, BALANCE BIGINT, PAD VARCHAR(400))",
            "CREATE VIEW RICH AS SELECT ID FROM ACCOUNTS WHERE BALANCE > 1500",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 20000) DO BEGIN \
         INSERT INTO ACCOUNTS VALUES (:I, 1000 + MOD(:I, 1000), LPAD('', 400, 'x' || :I)); \
         I = I + 1; END END",
        ],
    );
    db
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
    let db = dir.path().join("big.fdb");
    drop(fbunload_gen::create_test_database(
        &client(),
        &db.to_string_lossy(),
        "masterkey",
        8192,
        &[
            "CREATE TABLE BIG (ID INTEGER, PAD VARCHAR(1000))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 250000) DO BEGIN \
             INSERT INTO BIG VALUES (:I, LPAD('', 1000, 'x' || :I)); I = I + 1; END END",
        ],
    ));
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
    let db = dir.path().join("text.fdb");
    fbunload_gen::create_test_database(
        &client(),
        &db.to_string_lossy(),
        "masterkey",
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
