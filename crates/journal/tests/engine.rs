//! The reader on segments the real engine wrote: a copy of the
//! firebird-embedded runtime with a `replication.conf`, a database that
//! publishes every table, and changes of every kind; the journal read
//! back must give, in commit order, exactly the committed changes, with
//! each value as Firebird itself prints it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use fbunload_client::{Attachment, Client, ConnectOptions, Row, Transaction, TransactionMode};
use fbunload_journal::transactions::Outcome;
use fbunload_journal::{
    ChangeKind, Committed, Journal, JournalError, RecordFormat, Transactions, Value,
};

/// A runtime copy whose engine journals the databases this test makes:
/// the engine reads `replication.conf` from its root, and a process has
/// one engine, so the whole test binary shares it.
fn runtime() -> &'static PathBuf {
    static RUNTIME: OnceLock<PathBuf> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let out = Command::new("python3")
            .args([
                "-c",
                "import firebird.embedded, os; \
                 print(os.path.join(os.path.dirname(firebird.embedded.__file__), 'runtime'))",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "firebird-embedded (scripts/setup.sh)");
        let source = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        let root = tempfile::tempdir().unwrap().keep().join("runtime");
        assert!(Command::new("cp")
            .arg("-a")
            .arg(&source)
            .arg(&root)
            .status()
            .unwrap()
            .success());
        let conf = root.join("firebird.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap();
        text.push_str("\nServerMode = SuperClassic\n");
        std::fs::write(conf, text).unwrap();
        std::fs::write(root.join("replication.conf"), "").unwrap();
        // SAFETY: set before the client library is loaded, by the first
        // test to get here; the library reads it on its first call.
        unsafe { std::env::set_var("FIREBIRD", &root) };
        root
    })
}

fn client() -> Arc<Client> {
    runtime();
    Client::load(None).unwrap()
}

/// A database at `dir/name` that publishes every table into
/// `dir/journal` (archived into `dir/archive`).
fn publishing_db(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let db = dir.join(name);
    let (live, archive) = (dir.join("journal"), dir.join("archive"));
    std::fs::create_dir_all(&live).unwrap();
    std::fs::create_dir_all(&archive).unwrap();
    // Tests run side by side: one at a time adds its section.
    static CONF: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = CONF.lock().unwrap_or_else(|e| e.into_inner());
    let conf = runtime().join("replication.conf");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str(&format!(
        "database = {}\n{{\n  journal_directory = {}\n  journal_archive_directory = {}\n  \
         journal_archive_timeout = 1\n}}\n",
        db.display(),
        live.display(),
        archive.display()
    ));
    // Renamed into place: an engine reading it meanwhile sees it whole.
    let fresh = conf.with_extension("conf.new");
    std::fs::write(&fresh, text).unwrap();
    std::fs::rename(fresh, conf).unwrap();
    let created = Attachment::create_database(
        &client(),
        &format!(
            "CREATE DATABASE '{}' USER 'SYSDBA' PASSWORD 'masterkey' DEFAULT CHARACTER SET UTF8",
            db.display()
        ),
    )
    .unwrap();
    drop(created);
    execute(
        &db,
        &[
            "ALTER DATABASE ENABLE PUBLICATION",
            "ALTER DATABASE INCLUDE ALL TO PUBLICATION",
        ],
    );
    (db, live, archive)
}

fn connect(db: &Path) -> Attachment {
    Attachment::connect(
        &client(),
        &ConnectOptions {
            database: db.display().to_string(),
            user: Some("SYSDBA".into()),
            password: Some("masterkey".into()),
            charset: "UTF8".into(),
            ..Default::default()
        },
    )
    .unwrap()
}

fn execute(db: &Path, statements: &[&str]) {
    let att = connect(db);
    for sql in statements {
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        tr.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        tr.commit().unwrap();
    }
}

fn rows(tr: &Transaction, sql: &str) -> Vec<Vec<Option<String>>> {
    let mut stmt = tr.prepare(sql).unwrap();
    stmt.execute().unwrap();
    let mut out = Vec::new();
    let columns = stmt.columns().len();
    while stmt.fetch().unwrap() {
        let row: Row<'_> = stmt.row();
        out.push(
            (0..columns)
                .map(|i| {
                    row.value(i)
                        .map(|v| String::from_utf8_lossy(v).trim_end().to_string())
                })
                .collect(),
        );
    }
    out
}

/// Every segment's blocks, in order, until the journal is archived up to
/// the end: the committed transactions in commit order.
fn read_all(db: &Path, archive: &Path, live: &Path) -> Vec<Committed> {
    // Archiving runs on a timer (journal_archive_timeout = 1 s).
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let journal = Journal::open(archive, Some(live), db).unwrap();
    let mut transactions = Transactions::new();
    let mut ended = Vec::new();
    for sequence in journal.sequences().unwrap() {
        let segment = journal.segment(sequence).unwrap().unwrap();
        assert_eq!(segment.header.sequence, sequence);
        for block in segment.blocks_from(0).unwrap() {
            if let Some(done) = transactions.feed(&block).unwrap() {
                ended.push(done);
            }
        }
    }
    ended
}

fn format_of(db: &Path, table: &str) -> (RecordFormat, HashMap<String, usize>) {
    let att = connect(db);
    let tr = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    let mut stmt = tr
        .prepare(&format!(
            "SELECT f.RDB$DESCRIPTOR FROM RDB$RELATIONS r JOIN RDB$FORMATS f \
             ON f.RDB$RELATION_ID = r.RDB$RELATION_ID AND f.RDB$FORMAT = r.RDB$FORMAT \
             WHERE r.RDB$RELATION_NAME = '{table}'"
        ))
        .unwrap();
    stmt.execute().unwrap();
    assert!(stmt.fetch().unwrap());
    let id: [u8; 8] = stmt.row().value(0).unwrap().try_into().unwrap();
    let mut descriptor = Vec::new();
    tr.read_blob(&id, &mut descriptor).unwrap();
    drop(stmt);
    let ids = rows(
        &tr,
        &format!(
            "SELECT RDB$FIELD_NAME, RDB$FIELD_ID FROM RDB$RELATION_FIELDS \
             WHERE RDB$RELATION_NAME = '{table}'"
        ),
    );
    let ids = ids
        .into_iter()
        .map(|r| {
            let id = r[1].as_ref().unwrap();
            let number = i16::from_ne_bytes(id.as_bytes()[..2].try_into().unwrap());
            (r[0].clone().unwrap(), number as usize)
        })
        .collect();
    (RecordFormat::parse(&descriptor).unwrap(), ids)
}

#[test]
fn every_type_decodes_as_firebird_prints_it_and_only_committed_work_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let (db, live, archive) = publishing_db(dir.path(), "types.fdb");
    execute(
        &db,
        &[
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, SM SMALLINT, BI BIGINT, \
             I128 INT128, N NUMERIC(18,4), N38 NUMERIC(38,6), D16 DECFLOAT(16), D34 DECFLOAT(34), \
             FL FLOAT, DP DOUBLE PRECISION, B BOOLEAN, DT DATE, TM TIME, TS TIMESTAMP, \
             TMZ TIME WITH TIME ZONE, TSZ TIMESTAMP WITH TIME ZONE, C CHAR(5), \
             V VARCHAR(30), O VARCHAR(4) CHARACTER SET OCTETS, L VARCHAR(10) CHARACTER SET WIN1252, \
             BT BLOB SUB_TYPE TEXT, BB BLOB SUB_TYPE BINARY)",
            "CREATE SEQUENCE G",
        ],
    );
    let att = connect(&db);
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    tr.execute(
        "INSERT INTO T VALUES (1, -32768, -9223372036854775808, \
         -170141183460469231731687303715884105728, -12345.6789, \
         12345678901234567890123456789012.123456, -1.234567890123456E+300, \
         1.234567890123456789012345678901234E-6000, 1.5, -0.375, TRUE, DATE '0001-01-01', \
         TIME '23:59:59.9999', TIMESTAMP '9999-12-31 23:59:59.9999', \
         TIME '10:11:12.1314 Europe/Prague', TIMESTAMP '2024-03-31 02:30:00 America/New_York', \
         'ab', 'it''s \u{20ac}', x'00FF10', 'caf\u{e9}', 'text blob \u{1F600}', x'000102')",
    )
    .unwrap();
    tr.execute("INSERT INTO T (ID) VALUES (2)").unwrap();
    // A statement undone by its savepoint, and one of an explicit savepoint.
    tr.execute("SAVEPOINT S1").unwrap();
    tr.execute("UPDATE T SET V = 'undone' WHERE ID = 2")
        .unwrap();
    tr.execute("ROLLBACK TO SAVEPOINT S1").unwrap();
    assert!(tr.execute("INSERT INTO T (ID) VALUES (1)").is_err());
    tr.execute("UPDATE T SET ID = 3, V = 'moved' WHERE ID = 2")
        .unwrap();
    tr.commit().unwrap();
    let rolled_back = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    rolled_back.execute("DELETE FROM T WHERE ID = 1").unwrap();
    rolled_back
        .execute("SELECT GEN_ID(G, 5) FROM RDB$DATABASE")
        .ok();
    rolled_back
        .execute("EXECUTE BLOCK AS DECLARE X BIGINT; BEGIN X = GEN_ID(G, 5); END")
        .unwrap();
    let rolled_back_number = rolled_back.number().unwrap();
    drop(rolled_back); // rolls back
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    tr.execute("DELETE FROM T WHERE ID = 3").unwrap();
    tr.commit().unwrap();
    drop(att);

    let ended = read_all(&db, &archive, &live);
    let committed: Vec<&Committed> = ended
        .iter()
        .filter(|t| t.outcome == Outcome::Committed && !t.changes.is_empty())
        .collect();
    // The DDL came as statements, in transactions of their own.
    assert!(ended.iter().any(|t| t
        .statements
        .iter()
        .any(|(_, _, sql)| sql.starts_with(b"CREATE TABLE T"))));
    // The rollback's delete never arrives; its sequence step does.
    let rollback = ended
        .iter()
        .find(|t| t.transaction == rolled_back_number)
        .expect("the rolled-back transaction's sequence step");
    assert_eq!(rollback.outcome, Outcome::RolledBack);
    assert!(rollback.changes.is_empty());
    assert_eq!(rollback.sequences, vec![("G".to_string(), 5)]);
    assert_eq!(committed.len(), 2, "{committed:#?}");
    let kinds: Vec<ChangeKind> = committed[0].changes.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [ChangeKind::Insert, ChangeKind::Insert, ChangeKind::Update],
        "the undone update and the failed insert are left out"
    );
    assert_eq!(committed[1].changes.len(), 1);
    assert_eq!(committed[1].changes[0].kind, ChangeKind::Delete);
    assert!(committed[0].end < committed[1].end);

    // Each value of row 1, decoded, is the text Firebird gives for it.
    let (format, ids) = format_of(&db, "T");
    let decoded = format
        .decode(
            committed[0].changes[0].after.as_ref().unwrap(),
            &committed[0]
                .blobs_of(&format, &committed[0].changes[0])
                .unwrap(),
        )
        .unwrap();
    let att = connect(&db);
    let tr = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    let columns = [
        "SM", "BI", "I128", "N", "N38", "D16", "D34", "B", "DT", "TM", "TS", "C", "V",
    ];
    for column in columns {
        let expected = rows(
            &tr,
            &format!("SELECT CAST({column} AS VARCHAR(200)) FROM T WHERE ID = 1"),
        );
        let value = decoded[ids[column]].as_ref().unwrap();
        let text = match value {
            Value::Text { bytes, .. } => String::from_utf8(bytes.clone()).unwrap(),
            other => other.to_text().unwrap(),
        };
        let expected = expected[0][0].clone().unwrap();
        let expected = match column {
            // Firebird prints a BOOLEAN in capitals.
            "B" => expected.to_lowercase(),
            _ => expected,
        };
        assert_eq!(text.trim_end(), expected, "column {column}");
    }
    // Zoned values are their UTC instants.
    for (column, utc) in [("TMZ", "TIME"), ("TSZ", "TIMESTAMP")] {
        let expected = rows(
            &tr,
            &format!(
                "SELECT CAST(CAST({column} AT TIME ZONE 'UTC' AS {utc}) AS VARCHAR(60)) \
                 FROM T WHERE ID = 1"
            ),
        );
        let text = decoded[ids[column]].as_ref().unwrap().to_text().unwrap();
        assert_eq!(
            text,
            format!("{}+00", expected[0][0].as_ref().unwrap()),
            "{column}"
        );
    }
    assert_eq!(decoded[ids["FL"]], Some(Value::Float(1.5)));
    assert_eq!(decoded[ids["DP"]], Some(Value::Double(-0.375)));
    assert_eq!(
        decoded[ids["O"]],
        Some(Value::Text {
            bytes: vec![0, 0xff, 0x10],
            charset: 1
        })
    );
    assert!(matches!(
        decoded[ids["L"]].as_ref().unwrap(),
        Value::Text { bytes, charset: 53 } if bytes == b"caf\xe9"
    ));
    assert!(matches!(
        decoded[ids["BT"]].as_ref().unwrap(),
        Value::Blob { bytes, sub_type: 1, .. } if bytes == "text blob \u{1F600}".as_bytes()
    ));
    assert!(matches!(
        decoded[ids["BB"]].as_ref().unwrap(),
        Value::Blob { bytes, sub_type: 0, .. } if bytes == &[0, 1, 2]
    ));
    // Row 2: every field but the key null.
    let row2 = format
        .decode(
            committed[0].changes[1].after.as_ref().unwrap(),
            &committed[0]
                .blobs_of(&format, &committed[0].changes[1])
                .unwrap(),
        )
        .unwrap();
    assert!(row2
        .iter()
        .enumerate()
        .filter(|(id, _)| *id != ids["ID"])
        .all(|(_, v)| v.as_ref().is_none_or(|v| *v == Value::Null)));
}

#[test]
fn a_blob_longer_than_a_block_is_put_together() {
    let dir = tempfile::tempdir().unwrap();
    let (db, live, archive) = publishing_db(dir.path(), "blob.fdb");
    execute(
        &db,
        &["CREATE TABLE B (ID INTEGER NOT NULL PRIMARY KEY, X BLOB)"],
    );
    // 3 MB of varied bytes: more than the 1 MB buffer a block is cut at.
    execute(
        &db,
        &[
            "EXECUTE BLOCK AS DECLARE S BLOB; DECLARE I INTEGER = 0; BEGIN S = ''; \
           WHILE (I < 30000) DO BEGIN S = BLOB_APPEND(S, LPAD(I, 100, '*')); I = I + 1; END \
           INSERT INTO B VALUES (1, :S); END",
        ],
    );
    let ended = read_all(&db, &archive, &live);
    let insert = ended
        .iter()
        .find(|t| !t.changes.is_empty())
        .expect("the insert");
    let (format, ids) = format_of(&db, "B");
    let decoded = format
        .decode(
            insert.changes[0].after.as_ref().unwrap(),
            &insert.blobs_of(&format, &insert.changes[0]).unwrap(),
        )
        .unwrap();
    let Some(Value::Blob { bytes, .. }) = &decoded[ids["X"]] else {
        panic!("{:?}", decoded[ids["X"]]);
    };
    assert_eq!(bytes.len(), 3_000_000);
    let expected: String = (0..30000).map(|i| format!("{i:*>100}")).collect();
    assert!(bytes == expected.as_bytes());
}

#[test]
fn a_journal_of_another_layout_is_refused_naming_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let (db, live, archive) = publishing_db(dir.path(), "version.fdb");
    execute(
        &db,
        &["CREATE TABLE V (ID INTEGER)", "INSERT INTO V VALUES (1)"],
    );
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let journal = Journal::open(&archive, Some(&live), &db).unwrap();
    let first = journal.sequences().unwrap()[0];
    let path = archive.join(format!("version.fdb.journal-{first:09}"));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[12] = 9;
    std::fs::write(&path, &bytes).unwrap();
    let err = journal.segment(first).unwrap_err();
    assert!(matches!(
        err,
        JournalError::SegmentVersion { version: 9, .. }
    ));
    assert!(
        err.to_string().contains("journal segment version 9"),
        "{err}"
    );
    assert!(Journal::open(&dir.path().join("nowhere"), None, &db)
        .unwrap_err()
        .to_string()
        .contains("journal_archive_directory"));
}
