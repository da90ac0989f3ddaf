//! Against a real Firebird server over TCP (Debian's Firebird 3.0, started
//! by `scripts/fb3-server.sh`): authentication errors, the remote path, and
//! the one-transaction mode for servers without shared snapshots.
//!
//! These tests need `FBUNLOAD_TEST_SERVER*` in the environment (the test
//! script sets them). Without them they fail, saying how to get a server,
//! unless `FBUNLOAD_SKIP_SERVER_TESTS=1` says to skip them on purpose.

mod common;

use std::path::Path;

use common::*;
use fbunload_client::{Attachment, ConnectOptions, TransactionMode};

struct Server {
    address: String,
    dir: String,
    password: String,
}

fn server() -> Option<Server> {
    let var = |name: &str| std::env::var(name).ok();
    match (
        var("FBUNLOAD_TEST_SERVER"),
        var("FBUNLOAD_TEST_SERVER_DIR"),
        var("FBUNLOAD_TEST_SERVER_PASSWORD"),
    ) {
        (Some(address), Some(dir), Some(password)) => Some(Server {
            address,
            dir,
            password,
        }),
        _ if var("FBUNLOAD_SKIP_SERVER_TESTS").as_deref() == Some("1") => None,
        _ => panic!(
            "no test server: run `eval \"$(scripts/fb3-server.sh)\"` first \
             (or set FBUNLOAD_SKIP_SERVER_TESTS=1 to skip these tests)"
        ),
    }
}

impl Server {
    fn dsn(&self, file: &str) -> String {
        format!("{}:{}/{file}", self.address, self.dir)
    }

    /// A fresh database on the server, removed when the guard drops.
    fn create(&self, name: &str, statements: &[&str]) -> RemoteDb {
        let file = format!("{name}-{}.fdb", std::process::id());
        let local = Path::new(&self.dir).join(&file);
        let _ = std::fs::remove_file(&local);
        let dsn = self.dsn(&file);
        let sql = format!(
            "CREATE DATABASE '{dsn}' USER 'SYSDBA' PASSWORD '{}' SET NAMES 'UTF8' \
             DEFAULT CHARACTER SET UTF8",
            self.password
        );
        // Once in a CI run a connection broke mid-CREATE ("Error reading
        // data from the connection") while other tests went on: a setup
        // step, not what these tests check, so a broken connection is
        // tried again (said on stderr) before the test gives up.
        let mut attempt = 1;
        let att = loop {
            match Attachment::create_database(&client(), &sql) {
                Ok(att) => break att,
                Err(fbunload_client::ClientError::Firebird(e))
                    if e.is_connection_failure() && attempt < 4 =>
                {
                    eprintln!("creating {file} (attempt {attempt}): {e}; trying again");
                    let _ = std::fs::remove_file(&local);
                    std::thread::sleep(std::time::Duration::from_secs(attempt));
                    attempt += 1;
                }
                Err(e) => panic!("creating {file}: {e}"),
            }
        };
        for sql in statements {
            let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
            tr.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            tr.commit().unwrap();
        }
        RemoteDb { dsn, local }
    }

    fn fbunload(&self, dsn: &str, password: &str, args: &[&str]) -> std::process::Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
            .args(["-d", dsn, "-u", "SYSDBA"])
            .env("ISC_PASSWORD", password)
            .args(args)
            .output()
            .unwrap()
    }

    /// An attachment through the server, which then holds the file.
    fn attach(&self, dsn: &str) -> Attachment {
        Attachment::connect(
            &client(),
            &ConnectOptions {
                database: dsn.into(),
                user: Some("SYSDBA".into()),
                password: Some(self.password.clone()),
                charset: "UTF8".into(),
                ..Default::default()
            },
        )
        .unwrap()
    }
}

struct RemoteDb {
    dsn: String,
    local: std::path::PathBuf,
}

impl Drop for RemoteDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.local);
    }
}

#[test]
fn a_wrong_password_is_named_as_such_and_never_echoed() {
    let Some(server) = server() else { return };
    let db = server.create("auth", &["CREATE TABLE T (I INTEGER)"]);
    let out = server.fbunload(&db.dsn, "not-the-password", &["--plan"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("wrong user name or password"), "{err}");
    assert!(!err.contains("not-the-password"), "password leaked: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// With only a server's client library (Debian's libfbclient2, no engine
/// of its own), a plain path went to a server on this machine and the
/// message said to check that Firebird is running.
#[test]
fn a_plain_path_without_an_embedded_engine_says_how_to_get_one() {
    let Some(_server) = server() else { return };
    let system_client = Path::new("/usr/lib/x86_64-linux-gnu/libfbclient.so.2");
    assert!(
        system_client.exists(),
        "scripts/fb3-server.sh installs {system_client:?}"
    );
    // A client root that reaches no engine and no server (port 1 is closed).
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("firebird.conf"),
        "Providers = Remote, Loopback\nRemoteServicePort = 1\n",
    )
    .unwrap();
    let db = root.path().join("local.fdb");
    let out_dir = root.path().join("out");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .env("FIREBIRD", root.path())
        .arg("--client-lib")
        .arg(system_client)
        .arg("-d")
        .arg(&db)
        .args(["-u", "SYSDBA", "-p", "masterkey", "-o"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("no embedded Firebird engine was found")
            && err.contains("pip install firebird-embedded")
            && !err.contains("fbunload[embedded]")
            && err.contains("--client-lib")
            && err.contains(&format!("-d localhost:{}", db.display())),
        "{err}"
    );
    assert!(!err.contains("check the host"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!out_dir.exists());
}

/// Debian's Firebird 3.0 keeps the default WireCrypt = Required.
#[test]
fn a_server_that_requires_wire_encryption_says_so() {
    let Some(server) = server() else { return };
    let db = server.create("crypt", &["CREATE TABLE T (I INTEGER)"]);
    let out = server.fbunload(
        &db.dsn,
        &server.password,
        &["--wire-crypt", "disabled", "--plan"],
    );
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "the server requires wire encryption (its WireCrypt = Required): leave out \
             --wire-crypt disabled"
        ),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let compressed = server.fbunload(&db.dsn, &server.password, &["--wire-compression", "--plan"]);
    assert!(compressed.status.success(), "{}", stderr(&compressed));
}

#[test]
fn no_password_is_named_as_such() {
    let Some(server) = server() else { return };
    let db = server.create("nopass", &["CREATE TABLE T (I INTEGER)"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(["-d", &db.dsn, "-u", "SYSDBA", "--plan"])
        .env_remove("ISC_PASSWORD")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("no password given for SYSDBA: use -p/--password or ISC_PASSWORD"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A plain path opens the embedded engine, which cannot take a file the
/// server holds, nor one written by Firebird 3.0; both say what to do.
/// (With the server's own password the client library's Loopback provider
/// quietly goes through the server instead: the embedded engine ignores
/// passwords, so users often give it a wrong one.)
#[test]
fn a_plain_path_to_a_server_database_says_to_go_through_the_server() {
    let Some(server) = server() else { return };
    let db = server.create("plain", &["CREATE TABLE T (I INTEGER)"]);
    let path = db.local.to_str().unwrap();
    let through_server = format!("-d localhost:{path}");

    let not_the_servers = "masterkey-for-embedded";
    let held = server.attach(&db.dsn);
    let out = server.fbunload(path, not_the_servers, &["--plan"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("this database is in use by a Firebird server")
            && err.contains(&through_server),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    drop(held);

    // The server may take a moment to close the file after its last detach
    // (longer on a loaded machine; the loop ends as soon as it has).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (out, err) = loop {
        let out = server.fbunload(path, not_the_servers, &["--plan"]);
        let err = stderr(&out);
        if !err.contains("in use") || std::time::Instant::now() > deadline {
            break (out, err);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("written by Firebird 3.0 (on-disk structure 12.0)")
            && err.contains("connect through a Firebird 3.0 server")
            && err.contains(&through_server),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    // The advice works.
    let out = server.fbunload(&format!("localhost:{path}"), &server.password, &["--plan"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn firebird_3_is_unloaded_in_one_consistent_transaction() {
    let Some(server) = server() else { return };
    let db = server.create(
        "fb3",
        &[
            "CREATE TABLE A (ID INTEGER, NAME VARCHAR(20), AMOUNT NUMERIC(12,2))",
            "CREATE TABLE B (ID INTEGER)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 5000) DO BEGIN \
               INSERT INTO A VALUES (:I, 'n' || :I, :I * 0.01); I = I + 1; END END",
            "INSERT INTO B VALUES (7)",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = server.fbunload(
        &db.dsn,
        &server.password,
        &["-j", "4", "-o", out_dir.to_str().unwrap()],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("1 worker,") && err.contains("Firebird < 4"),
        "{err}"
    );
    // Said up front, once, and even with -q: the -j asked for is not used,
    // or (with --allow-inconsistent) the tables are not consistent.
    let warned = |args: &[&str], words: &str| {
        let out_dir = dir.path().join(args.join("_"));
        let mut all = args.to_vec();
        all.extend(["-o", out_dir.to_str().unwrap()]);
        let out = server.fbunload(&db.dsn, &server.password, &all);
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {err}");
        assert!(lines[0].contains(words), "{args:?}: {err}");
    };
    warned(&["-q", "-j", "3"], "-j 3 is not used");
    warned(
        &["-q", "-j", "2", "--allow-inconsistent"],
        "the tables are not mutually consistent",
    );
    let quiet = server.fbunload(
        &db.dsn,
        &server.password,
        &[
            "-q",
            "-j",
            "1",
            "-o",
            dir.path().join("j1").to_str().unwrap(),
        ],
    );
    assert_eq!(stderr(&quiet), "", "nothing to say at -j 1");
    let a = csv_records(&out_dir.join("A.csv"));
    assert_eq!(a.len(), 5000);
    assert_eq!(a[123], vec!["123", "n123", "1.23"]);
    assert_eq!(
        std::fs::read_to_string(out_dir.join("B.csv")).unwrap(),
        "ID\n7\n"
    );
}

#[test]
fn a_held_snapshot_needs_inconsistent_reads_allowed_on_firebird_3() {
    let Some(server) = server() else { return };
    let db = server.create(
        "held",
        &[
            "CREATE TABLE T (ID INTEGER)",
            "INSERT INTO T VALUES (1)",
            "INSERT INTO T VALUES (2)",
        ],
    );
    let unload = fbunload::Unload::new(db.dsn.clone())
        .user("SYSDBA")
        .password(server.password.clone())
        .client(client());
    let refused = unload
        .hold_snapshot()
        .err()
        .expect("Firebird 3 shares no snapshot");
    let message = refused.to_string();
    assert!(message.contains("cannot share a snapshot"), "{message}");
    assert!(!message.contains('\n'), "{message}");
    let allowed = unload.clone().options(fbunload::RunOptions {
        allow_inconsistent: true,
        ..fbunload::RunOptions::default()
    });
    let held = allowed.hold_snapshot().unwrap();
    assert_eq!(held.ticket(), None);
    // One unit: no MAKE_DBKEY before Firebird 4.
    let shares = held.shares(0, Some(4)).unwrap();
    assert_eq!(shares.len(), 1);
    let mut rows = 0;
    allowed
        .join_snapshot(None, "T")
        .unwrap()
        .read(&shares[0], &mut |batch| {
            rows += batch.num_rows();
            true
        })
        .unwrap();
    assert_eq!(rows, 2);
}

/// ARRAY columns of a Firebird 3 server (which has slices too, and none of
/// Firebird 4's types): the elements unload as the server reads them.
#[test]
fn firebird_3_arrays_unload_element_by_element() {
    use fbunload_client::{element, ArrayShape, ElementType};
    let Some(server) = server() else { return };
    let db = server.create(
        "arrays",
        &["CREATE TABLE A (ID INTEGER, N NUMERIC(9,2) [0:1, 1:2], W VARCHAR(5) [2])"],
    );
    let att = server.attach(&db.dsn);
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    let shape = |field: &str, element, bounds: Vec<(i32, i32)>| ArrayShape {
        relation: "A".into(),
        field: field.into(),
        element,
        bounds,
    };
    let numbers = shape(
        "N",
        ElementType {
            code: element::LONG,
            scale: -2,
            length: 0,
            charset: 0,
        },
        vec![(0, 1), (1, 2)],
    );
    let mut cents: Vec<u8> = [125i32, -1, 0, i32::MAX]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let words = shape(
        "W",
        ElementType {
            code: element::VARYING,
            scale: 0,
            length: 20,
            charset: 4,
        },
        vec![(1, 2)],
    );
    let mut text = vec![0u8; 44];
    text[..6].copy_from_slice("épée".as_bytes());
    text[22..24].copy_from_slice(b"ok");
    let n = tr.write_array(&numbers, &mut cents).unwrap();
    let w = tr.write_array(&words, &mut text).unwrap();
    tr.execute_with_arrays("INSERT INTO A VALUES (1, ?, ?)", &[Some(n), Some(w)])
        .unwrap();
    tr.execute_with_arrays("INSERT INTO A VALUES (2, ?, ?)", &[None, None])
        .unwrap();
    tr.commit().unwrap();
    drop(att);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = server.fbunload(
        &db.dsn,
        &server.password,
        &["-f", "jsonl", "-o", out.to_str().unwrap()],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let lines = std::fs::read_to_string(out.join("A.jsonl")).unwrap();
    assert_eq!(
        lines,
        "{\"ID\":1,\"N\":[[\"1.25\",\"-0.01\"],[\"0.00\",\"21474836.47\"]],\"W\":[\"épée\",\"ok\"]}\n\
         {\"ID\":2,\"N\":null,\"W\":null}\n"
    );
}

/// Firebird 3 has neither commit numbers nor shared snapshots: an
/// incremental run, or one that would start a chain, is refused in one
/// line, before anything is written.
#[test]
fn incremental_runs_are_refused_on_firebird_3() {
    let Some(server) = server() else { return };
    let db = server.create(
        "incremental",
        &[
            "CREATE TABLE T (ID INTEGER PRIMARY KEY)",
            "INSERT INTO T VALUES (1)",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = server.fbunload(
        &db.dsn,
        &server.password,
        &["--keep-keys", "-o", out.to_str().unwrap()],
    );
    assert_refused_in_one_line(&run, "--since and --keep-keys need Firebird 4 or later");
    assert!(!out.exists());
}
