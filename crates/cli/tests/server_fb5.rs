//! Against a Firebird 5 server over TCP: the path most users take. No
//! package registry here ships a Firebird 4/5 server: one installed as
//! Firebird documents it is started by `scripts/fb5-server.sh`, which sets
//! `FBUNLOAD_TEST_FB5*` (scripts/test.sh does both where one is installed;
//! docs/server.md). Where no such server runs, every test
//! here says it is skipped, and passes.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::oracle;
use common::*;
use fbunload_client::{Attachment, ConnectOptions, TransactionMode, WireCrypt, WireOptions};
use fbunload_gen::bank::{self, Writers};

struct Fb5 {
    /// `host/port`.
    address: String,
    /// Where the server keeps the tests' databases (on this machine).
    dir: PathBuf,
    password: String,
}

/// The server, or `None` after saying why `test` is skipped.
fn fb5(test: &str) -> Option<Fb5> {
    let var = |name: &str| std::env::var(name).ok();
    match (
        var("FBUNLOAD_TEST_FB5"),
        var("FBUNLOAD_TEST_FB5_DIR"),
        var("FBUNLOAD_TEST_FB5_PASSWORD"),
    ) {
        (Some(address), Some(dir), Some(password)) => Some(Fb5 {
            address,
            dir: dir.into(),
            password,
        }),
        _ => {
            eprintln!(
                "{test}: skipped, no Firebird 5 server (start an installed one: \
                 scripts/fb5-server.sh, docs/server.md)"
            );
            None
        }
    }
}

impl Fb5 {
    /// The server's name for a database file in its directory.
    fn dsn(&self, file: &Path) -> String {
        format!("{}:{}", self.address, file.display())
    }

    /// A new file name in the server's directory, unique to this test.
    fn file(&self, name: &str) -> PathBuf {
        let path = self.dir.join(format!("{name}-{}.fdb", std::process::id()));
        let _ = std::fs::remove_file(&path);
        path
    }

    fn connect(&self, file: &Path, wire: WireOptions) -> ConnectOptions {
        ConnectOptions {
            database: self.dsn(file),
            user: Some("SYSDBA".into()),
            password: Some(self.password.clone()),
            charset: "UTF8".into(),
            wire,
            ..Default::default()
        }
    }

    /// A new database, created through the server, holding what
    /// `statements` make (each committed on its own).
    fn create(&self, file: &Path, statements: &[&str]) -> Attachment {
        let dsn = self.dsn(file);
        fbunload_gen::create_test_database(&client(), &dsn, &self.password, 4096, statements)
    }

    fn command(&self, file: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_fbunload"));
        command
            .args(["-d", &self.dsn(file), "-u", "SYSDBA"])
            .env("ISC_PASSWORD", &self.password)
            // As a user's: the password only in ISC_PASSWORD, which
            // reader processes must not inherit.
            .env_remove("FBUNLOAD_TEST_FB5_PASSWORD")
            .args(args);
        command
    }

    fn fbunload(&self, file: &Path, args: &[&str]) -> Output {
        self.command(file, args).output().unwrap()
    }
}

/// WIDE: 300,000 rows of about 400 bytes, a few seconds of reading.
fn create_wide(server: &Fb5, file: &Path) {
    drop(server.create(
        file,
        &[
            "CREATE TABLE WIDE (ID INTEGER, PAD VARCHAR(500))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 300000) DO BEGIN \
               INSERT INTO WIDE VALUES (:I, LPAD('', 400, 'x') || :I); I = I + 1; END END",
        ],
    ));
}

/// Waits until `child` writes `name` in its staging directory in `out`.
fn wait_until_writing(child: &mut std::process::Child, out: &Path, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !being_written(out, name) {
        assert!(
            Instant::now() < deadline,
            "the unload never started writing"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Removes a test database when the test ends, however it ends.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn ledger_rows(out: &Path) -> Vec<(i64, i64, i64)> {
    csv_records(&out.join("LEDGER.csv"))
        .iter()
        .map(|r| {
            (
                r[0].parse().unwrap(),
                r[1].parse().unwrap(),
                r[2].parse().unwrap(),
            )
        })
        .collect()
}

fn account_rows(out: &Path) -> Vec<(i64, i64)> {
    csv_records(&out.join("ACCOUNTS.csv"))
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap()))
        .collect()
}

/// Every worker attaches over TCP and joins the main attachment's
/// snapshot: the files are one moment's books while two writers move
/// money through the same server.
#[test]
fn remote_workers_read_one_snapshot_while_others_write() {
    let Some(server) = fb5("remote_workers_read_one_snapshot_while_others_write") else {
        return;
    };
    books_balance_while_two_writers_run(&server, "bank", &["-j", "3"], "");
}

/// Two rounds of `fbunload ARGS --unit-pages 64 --verify` of a bank made in
/// `name` while two writers move money: each round succeeds saying `said`,
/// its books balance, and the writers committed during it.
fn books_balance_while_two_writers_run(server: &Fb5, name: &str, args: &[&str], said: &str) {
    let file = server.file(name);
    let _removed = Removed(file.clone());
    bank::create(&server.create(&file, &[])).unwrap();
    let writers = Writers::start(&client(), &server.connect(&file, WireOptions::default()), 2);
    let dir = tempfile::tempdir().unwrap();
    for round in 0..2 {
        let before = writers.committed();
        let out = dir.path().join(format!("out{round}"));
        let out_arg = out.to_str().unwrap();
        let mut run_args = args.to_vec();
        run_args.extend(["--unit-pages", "64", "--verify", "-o", out_arg]);
        let run = server.fbunload(&file, &run_args);
        assert!(run.status.success(), "round {round}: {}", stderr(&run));
        assert!(
            stderr(&run).contains(said),
            "round {round}: {}",
            stderr(&run)
        );
        if let Err(why) = bank::check_books(ledger_rows(&out), account_rows(&out)) {
            panic!("round {round}: {why}");
        }
        assert!(
            writers.committed() > before,
            "round {round}: the writers must have committed during the unload"
        );
    }
}

/// CHARs, whose padding the server removes before rows go on the wire,
/// and ARRAY columns, which come through the wire's slice call, read as
/// they do from the embedded engine: the same tables, made on each,
/// unload to the same bytes, compressed wire or not.
#[test]
fn char_and_array_columns_read_over_tcp_as_on_the_embedded_engine() {
    let Some(server) = fb5("char_and_array_columns_read_over_tcp_as_on_the_embedded_engine") else {
        return;
    };
    let statements = [
        fbunload_gen::arrays::array_types_create_sql(),
        "CREATE TABLE CHARS (ID INTEGER, U CHAR(5), N CHAR(4) CHARACTER SET NONE, \
         W CHAR(4) CHARACTER SET WIN1252, O CHAR(4) CHARACTER SET OCTETS, \
         D CHAR(3) CHARACTER SET DOS437, S CHAR(3) CHARACTER SET SJIS_0208, \
         G CHAR(3) CHARACTER SET GB18030, F CHAR(3) CHARACTER SET UNICODE_FSS)",
        "INSERT INTO CHARS VALUES (1, ' é ', 'a  ', 'é ', x'41000020', 'ab', ' 日', ' 中', ' é')",
        "INSERT INTO CHARS VALUES (2, '', '', '', x'', '', '', '', '')",
        "INSERT INTO CHARS (ID) VALUES (3)",
        "INSERT INTO CHARS VALUES (4, 'ééééé', ' b d', 'abcd', x'20202020', 'abc', '日本語', \
         '中文字', 'é€é')",
    ];
    let file = server.file("arrays");
    let _removed = Removed(file.clone());
    let att = server.create(&file, &statements);
    fbunload_gen::arrays::fill_array_types(&att).unwrap();
    drop(att);
    let dir = tempfile::tempdir().unwrap();
    let local = create_db(dir.path(), "local.fdb", 4096);
    execute(&local, &statements);
    fbunload_gen::arrays::fill_array_types(&connect(&local)).unwrap();

    let read = |out: &Path| {
        ["ARRAY_TYPES", "CHARS"]
            .map(|t| std::fs::read_to_string(out.join(format!("{t}.jsonl"))).unwrap())
    };
    let embedded = dir.path().join("embedded");
    let run = fbunload(&local, &["-f", "jsonl", "-o", embedded.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    let [arrays, chars] = read(&embedded);
    assert!(arrays.contains("[[1,-2,3],[-2147483648,0,2147483647]]"));
    assert!(
        chars.starts_with(
            "{\"ID\":1,\"U\":\" é\",\"N\":\"a\",\"W\":\"é\",\"O\":\"41000020\",\"D\":\"ab\",\
             \"S\":\" 日\",\"G\":\" 中\",\"F\":\" é\"}"
        ),
        "{chars}"
    );
    for (name, extra) in [("tcp", None), ("compressed", Some("--wire-compression"))] {
        let out = dir.path().join(name);
        let mut args = vec!["-f", "jsonl", "-j", "2", "-o", out.to_str().unwrap()];
        args.extend(extra);
        let run = server.fbunload(&file, &args);
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        assert_eq!(read(&out), read(&embedded), "{name}");
    }
}

/// What the server sends is the same whatever the number of workers, and
/// whether the wire is compressed or encrypted; the options reach the
/// server (MON$ATTACHMENTS says so).
#[test]
fn output_is_the_same_at_any_parallelism_and_wire_setting() {
    let Some(server) = fb5("output_is_the_same_at_any_parallelism_and_wire_setting") else {
        return;
    };
    let file = server.file("wire");
    let _removed = Removed(file.clone());
    drop(server.create(
        &file,
        &[
            "CREATE TABLE T (ID INTEGER, NAME VARCHAR(30), AMOUNT NUMERIC(12,2), \
             STAMP TIMESTAMP, NOTE BLOB SUB_TYPE TEXT)",
            "CREATE TABLE SMALL (ID INTEGER)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 40000) DO BEGIN \
               INSERT INTO T VALUES (:I, 'name ' || :I, :I * 0.25, \
                 DATEADD(:I SECOND TO TIMESTAMP '2020-01-01 00:00:00'), \
                 IIF(MOD(:I, 100) = 0, 'note ' || :I, NULL)); \
               I = I + 1; END \
               INSERT INTO SMALL VALUES (7); END",
        ],
    ));

    let dir = tempfile::tempdir().unwrap();
    let unload = |name: &str, args: &[&str]| -> Vec<(String, Vec<u8>)> {
        let out = dir.path().join(name);
        let mut all = vec![
            "--verify",
            "--unit-pages",
            "16",
            "-o",
            out.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        let run = server.fbunload(&file, &all);
        assert!(run.status.success(), "{args:?}: {}", stderr(&run));
        files(&out)
            .into_iter()
            .filter(|(name, _)| name.ends_with(".csv"))
            .collect()
    };
    let one = unload("j1", &["-j", "1"]);
    assert_eq!(one.len(), 2);
    for (name, args) in [
        ("j3", &["-j", "3"][..]),
        ("compressed", &["-j", "3", "--wire-compression"]),
        ("plain", &["-j", "2", "--wire-crypt", "disabled"]),
    ] {
        assert!(unload(name, args) == one, "{name}: not the -j 1 files");
    }
    // To standard output, where the process ends without the client
    // library's exit handlers (only servers were attached): every byte
    // is still written before it ends.
    let piped = server.fbunload(&file, &["-t", "T", "-j", "2", "-o", "-"]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    let t_csv = &one.iter().find(|(name, _)| name == "T.csv").unwrap().1;
    assert!(piped.stdout == *t_csv, "standard output is not T.csv");

    // What the server says of each attachment's wire.
    let wire_of = |wire: WireOptions| -> (String, String) {
        let att = Attachment::connect(&client(), &server.connect(&file, wire)).unwrap();
        let tr = att
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .unwrap();
        let mut stmt = tr
            .prepare(
                "SELECT IIF(MON$WIRE_COMPRESSED, 'compressed', 'plain'), \
                 IIF(MON$WIRE_ENCRYPTED, 'encrypted', 'clear') \
                 FROM MON$ATTACHMENTS WHERE MON$ATTACHMENT_ID = CURRENT_CONNECTION",
            )
            .unwrap();
        stmt.execute().unwrap();
        assert!(stmt.fetch().unwrap());
        let row = stmt.row();
        let text = |i| {
            String::from_utf8_lossy(row.value(i).unwrap())
                .trim()
                .to_string()
        };
        (text(0), text(1))
    };
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(wire_of(WireOptions::default()), pair("plain", "encrypted"));
    let both = WireOptions {
        compression: true,
        crypt: Some(WireCrypt::Disabled),
    };
    assert_eq!(wire_of(both), pair("compressed", "clear"));
}

/// `--plan`'s estimates over TCP: a sample of WIDE's pages (300,000
/// rows on several pointer pages) scaled, as on the embedded engine.
#[test]
fn the_plan_estimates_rows_and_bytes_over_tcp() {
    let Some(server) = fb5("the_plan_estimates_rows_and_bytes_over_tcp") else {
        return;
    };
    let file = server.file("estimate");
    let _removed = Removed(file.clone());
    create_wide(&server, &file);
    let out = server.fbunload(&file, &["--plan", "--progress", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let wide = &plan["tables"][0];
    assert!(wide["pointer_pages"].as_u64().unwrap() > 1, "{wide}");
    let estimate = &wide["estimate"];
    assert_eq!(estimate["basis"], "sampled", "{estimate}");
    let rows = estimate["rows"].as_u64().unwrap();
    assert!((270_000..=330_000).contains(&rows), "{estimate}");
    // The data pages of its full pointer pages (808 each at 4 KiB) and
    // part of its last.
    let pointer_pages = wide["pointer_pages"].as_u64().unwrap();
    let data_pages = estimate["data_pages"].as_u64().unwrap();
    assert!(
        ((pointer_pages - 1) * 808..pointer_pages * 808).contains(&data_pages),
        "{wide}"
    );
    assert_eq!(estimate["bytes"].as_u64(), Some(data_pages * 4096));
}

#[test]
fn a_wrong_password_is_one_line_and_never_echoed() {
    let Some(server) = fb5("a_wrong_password_is_one_line_and_never_echoed") else {
        return;
    };
    let file = server.file("auth");
    let _removed = Removed(file.clone());
    drop(server.create(&file, &[]));
    let out = Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(["-d", &server.dsn(&file), "-u", "SYSDBA", "--plan"])
        .env("ISC_PASSWORD", "not-the-password")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(err.contains("wrong user name or password"), "{err}");
    assert!(!err.contains("not-the-password"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// SIGTERM while workers read over TCP: status 130, no manifest, and the
/// next run completes.
#[test]
fn sigterm_stops_a_remote_run_and_the_next_run_completes() {
    let Some(server) = fb5("sigterm_stops_a_remote_run_and_the_next_run_completes") else {
        return;
    };
    let file = server.file("stop");
    let _removed = Removed(file.clone());
    create_wide(&server, &file);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = server
        .command(
            &file,
            &["-j", "2", "--unit-pages", "64", "-o", out.to_str().unwrap()],
        )
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_writing(&mut child, &out, "WIDE.csv");
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let ended = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(130), "{err}");
    assert!(!out.join("manifest.json").exists(), "{err}");
    assert!(!out.join("WIDE.csv").exists(), "a half table was published");

    let again = server.fbunload(
        &file,
        &["-j", "2", "--overwrite", "-o", out.to_str().unwrap()],
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(csv_records(&out.join("WIDE.csv")).len(), 300_000);
}

/// A Firebird 5 server of its own, for a test to stop: started by
/// `scripts/fb5-server.sh private` from the installation the shared test
/// server runs from, killed and removed when dropped.
struct PrivateServer {
    address: String,
    dir: PathBuf,
    password: String,
    pid: u32,
    _root: tempfile::TempDir,
}

impl PrivateServer {
    fn start(test: &str) -> Option<PrivateServer> {
        PrivateServer::start_with(test, None)
    }

    /// A private server that writes the replication journal of every
    /// database that publishes to `journal`, archived into `archive`.
    fn start_journaling(test: &str, journal: &Path, archive: &Path) -> Option<PrivateServer> {
        PrivateServer::start_with(test, Some((journal, archive)))
    }

    fn start_with(test: &str, journaling: Option<(&Path, &Path)>) -> Option<PrivateServer> {
        let home = std::env::var("FBUNLOAD_FB5_HOME").unwrap_or("/opt/fbunload-fb5".into());
        if !Path::new(&home).join("bin/firebird").exists() {
            eprintln!(
                "{test}: skipped, no Firebird 5 server installed in {home} (FBUNLOAD_FB5_HOME; \
                 docs/server.md)"
            );
            return None;
        }
        let root = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fb5-server.sh");
        let mut command = Command::new("bash");
        if let Some((journal, archive)) = journaling {
            command.env(
                "FB5_PRIVATE_REPLICATION",
                format!("{} {}", journal.display(), archive.display()),
            );
        }
        let started = command
            .arg(script)
            .args([
                "private",
                root.path().to_str().unwrap(),
                &port.to_string(),
                &home,
            ])
            .output()
            .unwrap();
        assert!(
            started.status.success(),
            "{}",
            String::from_utf8_lossy(&started.stderr)
        );
        let text = String::from_utf8_lossy(&started.stdout).into_owned();
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("export FB5_PRIVATE_{name}=")))
                .unwrap_or_else(|| panic!("no {name} in {text}"))
                .to_string()
        };
        Some(PrivateServer {
            address: value("ADDRESS"),
            dir: value("DIR").into(),
            password: value("PASSWORD"),
            pid: value("PID").parse().unwrap(),
            _root: root,
        })
    }

    fn as_fb5(&self) -> Fb5 {
        Fb5 {
            address: self.address.clone(),
            dir: self.dir.clone(),
            password: self.password.clone(),
        }
    }

    fn kill(&self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }

    /// Sends the server `signal` (`-STOP`: it stops answering, its
    /// connections stay open; `-CONT`).
    fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([signal, &self.pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill {signal} {}", self.pid);
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A run to interrupt: a good unload of WIDE in `out`, whose files are
/// `before`, then a second run into the same directory (with `extra`
/// arguments), under way and writing when this returns.
struct SecondRun {
    server: Fb5,
    file: PathBuf,
    out: PathBuf,
    before: Vec<(String, Vec<u8>)>,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

fn second_run_under_way(private: &PrivateServer, name: &str, extra: &[&str]) -> SecondRun {
    let server = private.as_fb5();
    let file = server.file(name);
    create_wide(&server, &file);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let first = server.fbunload(&file, &["-q", "-j", "2", "-o", out.to_str().unwrap()]);
    assert!(first.status.success(), "{}", stderr(&first));
    let before = files(&out);
    let mut args = vec!["-j", "2", "--unit-pages", "64", "--overwrite"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", out.to_str().unwrap()]);
    let mut child = server
        .command(&file, &args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_writing(&mut child, &out, "WIDE.csv");
    SecondRun {
        server,
        file,
        out,
        before,
        child,
        _dir: dir,
    }
}

/// Waits for `child` to end, at most a minute from `since`, resuming the
/// (stopped) server before a failure so that it can be killed; returns
/// how long after `since` the child ended.
fn wait_for_end(
    child: &mut std::process::Child,
    private: &PrivateServer,
    since: Instant,
    what: &str,
) -> Duration {
    while child.try_wait().unwrap().is_none() {
        if since.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            // A killed server has no process left to resume.
            let _ = Command::new("kill")
                .args(["-CONT", &private.pid.to_string()])
                .stderr(Stdio::null())
                .status();
            panic!("fbunload still runs a minute after {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    since.elapsed()
}

/// The server dies while workers read: fbunload retries the units on new
/// connections, then ends by itself, soon, with one error line that says
/// the server cannot be reached; the previous run in the
/// output directory is whole, and `fbunload check` says so.
#[test]
fn a_server_stopped_mid_run_is_one_clear_error_and_the_last_run_stays() {
    let Some(private) =
        PrivateServer::start("a_server_stopped_mid_run_is_one_clear_error_and_the_last_run_stays")
    else {
        return;
    };
    // `_dir` holds the output directory for the rest of the test.
    let SecondRun {
        out,
        before,
        mut child,
        _dir,
        ..
    } = second_run_under_way(&private, "dies", &[]);
    private.kill();
    wait_for_end(&mut child, &private, Instant::now(), "its server died");
    let ended = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&ended.stderr);
    assert!(!ended.status.success(), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    assert!(
        errors[0].contains("the server cannot be reached")
            && errors[0].contains("that Firebird is running"),
        "the error says what was lost and what to check: {err}"
    );
    assert_eq!(
        files(&out),
        before,
        "the last good run must stay whole: {err}"
    );
    let check = fbunload_check(&out);
    assert!(check.status.success(), "{}", stderr(&check));
}

/// The server stops answering but keeps its connections open (stopped
/// here, as a stuck server or a connection a firewall silently dropped
/// would look): no call returns and no error comes, so without a bound the
/// run would wait for ever. With `--stall-timeout 2` the run closes its
/// connections a few seconds later and ends as any failed run does: one
/// error line that names the table and the option, nothing of it left in
/// the output directory, the previous run there whole. The next run, once
/// the server answers again, completes.
#[test]
fn a_server_that_stops_answering_ends_the_run_after_the_stall_timeout() {
    let Some(private) =
        PrivateServer::start("a_server_that_stops_answering_ends_the_run_after_the_stall_timeout")
    else {
        return;
    };
    let SecondRun {
        server,
        file,
        out,
        before,
        mut child,
        _dir,
    } = second_run_under_way(&private, "stalls", &["--stall-timeout", "2"]);
    private.signal("-STOP");
    let waited = wait_for_end(
        &mut child,
        &private,
        Instant::now(),
        "its server stopped answering",
    );
    private.signal("-CONT");
    let ended = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(1), "{err}");
    assert!(
        waited >= Duration::from_secs(2),
        "ended {waited:?} after the stop, before the timeout: {err}"
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    assert!(
        errors[0].starts_with("fbunload: error: table WIDE: no answer from the database for 2 s")
            && errors[0].contains("--stall-timeout SECONDS"),
        "the error names the table, what happened and the option: {err}"
    );
    // It cleaned up as it ended: no staging directory is left.
    let left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}: {err}");
    assert_eq!(
        files(&out),
        before,
        "the last good run must stay whole: {err}"
    );
    let check = fbunload_check(&out);
    assert!(check.status.success(), "{}", stderr(&check));
    let again = server.fbunload(
        &file,
        &["-q", "-j", "2", "--overwrite", "-o", out.to_str().unwrap()],
    );
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(files(&out), before);
}

/// A worker whose attachment another user kills (`DELETE FROM
/// MON$ATTACHMENTS`) rolls its transaction back before it redoes its unit
/// on a new one; a server that does not answer that rollback, or the new
/// attach, held the run for ever (seen without a stopped server too: > 60 s
/// with `--stall-timeout 5`, 31 min with the default), since only reads
/// were watched. Now every call that waits on the server is, and an attach
/// that cannot be closed is given up on: the run ends at the stall timeout
/// with one line of its own. The server is stopped while the worker pauses
/// just before the rollback (a debug-build pause).
#[test]
fn a_rollback_the_server_never_answers_ends_the_run_after_the_stall_timeout() {
    let Some(private) = PrivateServer::start(
        "a_rollback_the_server_never_answers_ends_the_run_after_the_stall_timeout",
    ) else {
        return;
    };
    let server = private.as_fb5();
    let file = server.file("rollback");
    create_wide(&server, &file);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut child = server
        .command(
            &file,
            &[
                "-q",
                // One worker: with another one reading, its read waits too,
                // and a watch of reads alone would end the run for it.
                "-j",
                "1",
                "--unit-pages",
                "64",
                "--stall-timeout",
                "2",
                "-o",
                out.to_str().unwrap(),
            ],
        )
        .env("FBUNLOAD_TEST_PAUSE_BEFORE_ROLLBACK_MS", "1500")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr_lines = {
        let pipe = child.stderr.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(pipe).lines() {
                if send.send(line.unwrap_or_default()).is_err() {
                    break;
                }
            }
        });
        lines
    };
    wait_until_writing(&mut child, &out, "WIDE.csv");
    // The newest attachment of the database is a worker's.
    let killer =
        Attachment::connect(&client(), &server.connect(&file, WireOptions::default())).unwrap();
    let tr = killer
        .start_transaction(TransactionMode::ReadWrite)
        .unwrap();
    tr.execute(
        "DELETE FROM MON$ATTACHMENTS WHERE MON$ATTACHMENT_ID <> CURRENT_CONNECTION \
         AND MON$SYSTEM_FLAG = 0 ORDER BY MON$ATTACHMENT_ID DESC ROWS 1",
    )
    .unwrap();
    tr.commit().unwrap();
    drop(killer);
    let mut err = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = stderr_lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no worker paused before a rollback: {err}"));
        err += &line;
        err.push('\n');
        if line.contains("pausing before a rollback") {
            break;
        }
    }
    private.signal("-STOP");
    let waited = wait_for_end(
        &mut child,
        &private,
        Instant::now(),
        "its server stopped answering a rollback",
    );
    private.signal("-CONT");
    let status = child.wait().unwrap();
    while let Ok(line) = stderr_lines.recv_timeout(Duration::from_secs(1)) {
        err += &line;
        err.push('\n');
    }
    assert_eq!(status.code(), Some(1), "{err}");
    // Well short of wait_for_end's minute: the run ended on its own. The
    // line below says it was the stall timeout.
    assert!(
        waited < Duration::from_secs(2) + SLOW_MACHINE,
        "ended {waited:?} after the stop: {err}"
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    // The rollback, the redo's attach or the coordinator's check of the
    // snapshot, whichever waited longest.
    assert!(
        errors[0].contains("no answer from the database for 2 s")
            && errors[0].contains("closed its connections"),
        "the run closes its connections itself, not the process's fallback: {err}"
    );
    let _ = std::fs::remove_file(&file);
}

/// Ctrl-C while the server answers nothing: the interrupt the run sends
/// to its connections cannot be answered either, so once its calls have
/// waited a few seconds more the run closes the connections and ends as
/// an interrupted run does, with nothing of it left (before: it waited 10
/// seconds, then ended without cleaning up).
#[test]
fn an_interrupt_ends_a_run_whose_server_stopped_answering() {
    let Some(private) =
        PrivateServer::start("an_interrupt_ends_a_run_whose_server_stopped_answering")
    else {
        return;
    };
    let SecondRun {
        out,
        before,
        mut child,
        _dir,
        ..
    } = second_run_under_way(&private, "interrupted", &[]);
    private.signal("-STOP");
    std::thread::sleep(Duration::from_millis(500));
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let took = wait_for_end(&mut child, &private, Instant::now(), "Ctrl-C");
    private.signal("-CONT");
    let ended = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(130), "{err}");
    // The run's own stop, not the process's fallback at STOP_GRACE, which
    // says that it ended without cleaning up: the message tells them apart,
    // so the time only has to show that it did not hang.
    assert!(
        err.contains("interrupted; nothing of this run was kept")
            && !err.contains("ended without it"),
        "{err}"
    );
    assert!(
        took < fbunload_cli::STOP_GRACE + SLOW_MACHINE,
        "took {took:?}: {err}"
    );
    assert_eq!(files(&out), before, "{err}");
}

/// A reader of a held snapshot (what a Dask partition or an ADBC partition
/// reads through) on a server that stops answering in the middle of its
/// unit: the read closes its connection once a call has waited the stall
/// timeout and fails with `Stalled`, instead of waiting for ever on the
/// caller's thread.
#[test]
fn a_held_snapshot_reader_fails_when_its_server_stops_answering() {
    let Some(private) =
        PrivateServer::start("a_held_snapshot_reader_fails_when_its_server_stops_answering")
    else {
        return;
    };
    let server = private.as_fb5();
    let file = server.file("held");
    create_wide(&server, &file);
    let unload = fbunload::Unload::new(server.dsn(&file))
        .user("SYSDBA")
        .password(server.password.clone())
        .client(client())
        .options(fbunload::RunOptions {
            stall_timeout: Some(Duration::from_secs(2)),
            ..fbunload::RunOptions::default()
        });
    let held = unload.hold_snapshot().unwrap();
    let whole = held.shares(0, Some(1)).unwrap();
    let mut reader = unload
        .join_snapshot(held.ticket().as_ref(), "WIDE")
        .unwrap();
    let mut stopped = None;
    let done = std::sync::atomic::AtomicBool::new(false);
    let read = std::thread::scope(|scope| {
        // Without the bound the read would wait for ever: kill the server
        // after a while, so that the test fails instead of hanging.
        scope.spawn(|| {
            let started = Instant::now();
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if started.elapsed() > Duration::from_secs(60) {
                    private.kill();
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let read = reader.read(&whole[0], &mut |_batch| {
            if stopped.is_none() {
                private.signal("-STOP");
                stopped = Some(Instant::now());
            }
            true
        });
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        read
    });
    let waited = stopped.expect("a first batch").elapsed();
    private.signal("-CONT");
    match read {
        Err(fbunload::Error::Stalled { subject, seconds }) => {
            assert_eq!((subject.as_str(), seconds), ("table WIDE", 2));
        }
        other => panic!("not a stall: {other:?}"),
    }
    assert!(waited >= Duration::from_secs(2), "{waited:?}");
    assert!(waited < Duration::from_secs(2) + SLOW_MACHINE, "{waited:?}");
}

/// Incremental unloads over TCP: the oracle of tests/incremental.rs (a
/// chain of change sets, each applied, against full unloads at the same
/// snapshots, with writers and a transaction open across every run).
#[test]
fn incremental_change_sets_applied_equal_full_unloads() {
    let Some(server) = fb5("incremental_change_sets_applied_equal_full_unloads") else {
        return;
    };
    let file = server.file("incremental");
    let _removed = Removed(file.clone());
    drop(server.create(&file, &[]));
    let scratch = tempfile::tempdir().unwrap();
    let options = server.connect(&file, WireOptions::default());
    oracle::chain(&oracle::Target {
        connect: &|| Attachment::connect(&client(), &options).unwrap(),
        fbunload: &|args| server.fbunload(&file, args),
        scratch: scratch.path(),
    });
}

/// The processes whose parent is `pid`, from /proc.
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
        let after = &stat[stat.rfind(')').unwrap_or(0) + 1..];
        if after.split_whitespace().nth(1) == Some(&pid.to_string()) {
            children.push(child);
        }
    }
    children
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat[stat.rfind(')').unwrap_or(0) + 1..]
            .trim_start()
            .starts_with('Z'),
    }
}

/// Waits until every process of `pids` has ended, at most 10 s.
fn all_end(pids: &[u32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pids.iter().all(|pid| ended(*pid)) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// fbunload reading `file` into `out` with 4 workers in 2 reader processes
/// (units of 64 pages, so there is time to act meanwhile), its stderr
/// piped.
fn spawn_in_two_reader_processes(server: &Fb5, file: &Path, out: &Path) -> std::process::Child {
    let args = ["-j", "4", "--processes", "2", "--unit-pages", "64", "-o"];
    let mut command = server.command(file, &args);
    command.arg(out).stderr(Stdio::piped()).spawn().unwrap()
}

/// The reader processes of a running fbunload, once it has started them.
fn reader_processes(child: &mut std::process::Child, count: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // Only those that have run the reader's program: between fork and
        // exec a child still shows the run's command line and environment.
        let readers: Vec<u32> = children_of(child.id())
            .into_iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                    String::from_utf8_lossy(&c).contains("--fbunload-reader-process")
                })
            })
            .collect();
        if readers.len() >= count {
            return readers;
        }
        assert!(Instant::now() < deadline, "no reader processes started");
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Workers in reader processes write the bytes one worker thread writes,
/// in every format, to files and to standard output, with parts (of rows
/// and of bytes), verified; the manifest lists the same tables, files and
/// checksums, and says where the workers were, as the run and its
/// `--progress json` do.
#[test]
fn reader_processes_write_what_one_thread_writes_in_every_format() {
    let Some(server) = fb5("reader_processes_write_what_one_thread_writes_in_every_format") else {
        return;
    };
    let file = server.file("procs");
    let _removed = Removed(file.clone());
    drop(server.create(
        &file,
        &[
            "CREATE TABLE T (ID INTEGER, NAME VARCHAR(30), AMOUNT NUMERIC(12,2), \
             STAMP TIMESTAMP, NOTE BLOB SUB_TYPE TEXT, W CHAR(4) CHARACTER SET WIN1252, \
             BIG INT128, F DOUBLE PRECISION, RAW VARCHAR(8) CHARACTER SET NONE)",
            "CREATE TABLE SMALL (ID INTEGER)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 30000) DO BEGIN \
               INSERT INTO T VALUES (:I, 'name ' || :I, :I * 0.25, \
                 DATEADD(:I SECOND TO TIMESTAMP '2020-01-01 00:00:00'), \
                 IIF(MOD(:I, 100) = 0, 'note ' || :I, NULL), 'é' || MOD(:I, 10), \
                 MOD(:I, 100) * 170141183460469231731687303715884105, :I / 7.0, \
                 'é' || MOD(:I, 10)); \
               I = I + 1; END \
               INSERT INTO SMALL VALUES (7); END",
        ],
    ));
    let dir = tempfile::tempdir().unwrap();
    let unload =
        |name: &str, args: &[&str]| -> (Vec<(String, Vec<u8>)>, serde_json::Value, String) {
            let out = dir.path().join(name);
            let mut all = vec![
                "--verify",
                "--unit-pages",
                "16",
                "-o",
                out.to_str().unwrap(),
            ];
            all.extend_from_slice(args);
            let run = server.fbunload(&file, &all);
            assert!(run.status.success(), "{args:?}: {}", stderr(&run));
            let manifest: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
            (files(&out), manifest, stderr(&run))
        };
    for format in [
        &["-f", "csv", "--header"][..],
        &["-f", "tsv", "--compress", "zstd"],
        &["-f", "jsonl"],
        &["-f", "parquet", "--row-group-rows", "7000"],
        &["-f", "arrow"],
        &["-f", "csv", "--max-rows", "9000"],
        &["-f", "jsonl", "--max-bytes", "1M"],
        &[
            "-f",
            "parquet",
            "--row-group-rows",
            "2000",
            "--max-bytes",
            "200K",
        ],
        // A column of CHARACTER SET NONE (é's UTF-8 bytes), decoded as
        // the run is told.
        &["-f", "csv", "--charset", "WIN1252"],
    ] {
        let threads = [&["-j", "1", "--processes", "0"][..], format].concat();
        let (one, one_manifest, said) = unload("one", &threads);
        assert!(said.contains("1 worker,"), "{said}");
        let processes = [&["-j", "3", "--processes", "2"][..], format].concat();
        let (three, manifest, said) = unload("processes", &processes);
        assert!(said.contains("3 workers in 2 reader processes"), "{said}");
        assert!(one.len() >= 3, "{format:?}: {one:?}");
        assert!(three == one, "{format:?}: not the -j 1 files");
        assert_eq!(manifest["tables"], one_manifest["tables"], "{format:?}");
        assert!(
            manifest["tables"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["verified"] == true),
            "{format:?}: {manifest}"
        );
        assert_eq!(manifest["options"]["workers"], 3);
        assert_eq!(manifest["options"]["processes"], 2);
        assert_eq!(one_manifest["options"]["processes"], 0);
        std::fs::remove_dir_all(dir.path().join("one")).unwrap();
        std::fs::remove_dir_all(dir.path().join("processes")).unwrap();
    }
    let piped = server.fbunload(&file, &["-t", "T", "-j", "1", "-o", "-"]);
    let from_processes = server.fbunload(
        &file,
        &[
            "-t",
            "T",
            "-j",
            "4",
            "--processes",
            "2",
            "--progress",
            "json",
            "-o",
            "-",
        ],
    );
    assert!(
        from_processes.status.success(),
        "{}",
        stderr(&from_processes)
    );
    assert!(
        from_processes.stdout == piped.stdout,
        "standard output differs"
    );
    let events: Vec<serde_json::Value> = stderr(&from_processes)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let started = &events[0];
    assert_eq!(
        (&started["event"], &started["processes"]),
        (&"started".into(), &2.into())
    );
    let units: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "unit").collect();
    assert_eq!(units.len() as u64, started["units"].as_u64().unwrap());
    let unit_rows: u64 = units.iter().map(|e| e["rows"].as_u64().unwrap()).sum();
    let summary = events.last().unwrap();
    assert_eq!(summary["event"], "summary");
    assert_eq!(
        (unit_rows, summary["rows"].as_u64()),
        (30_000, Some(30_000))
    );
    assert_eq!(
        (&summary["workers"], &summary["processes"]),
        (&4.into(), &2.into())
    );
}

/// An incremental run in reader processes writes the change set one
/// worker thread writes: the counts of unchanged rows, and the keys read
/// again in the units that lost rows, come from the children too.
#[test]
fn reader_processes_write_the_change_set_one_thread_writes() {
    let Some(server) = fb5("reader_processes_write_the_change_set_one_thread_writes") else {
        return;
    };
    let file = server.file("procsince");
    let _removed = Removed(file.clone());
    // Over two pointer pages at 4 KiB pages: several units.
    let att = server.create(
        &file,
        &[
            "CREATE TABLE K (ID INTEGER NOT NULL PRIMARY KEY, PAD VARCHAR(400))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 9000) DO BEGIN \
               INSERT INTO K VALUES (:I, RPAD('', 400, 'k' || :I)); I = I + 1; END END",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name);
    let unload = |name: &str, args: &[&str]| {
        // CSV: Parquet files name the run's snapshot, which differs.
        let mut all = vec!["-f", "csv", "--unit-pages", "64", "-o"];
        let target = out(name);
        all.push(target.to_str().unwrap());
        all.extend_from_slice(args);
        let run = server.fbunload(&file, &all);
        assert!(run.status.success(), "{args:?}: {}", stderr(&run));
    };
    unload("base", &["--keep-keys"]);
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    for sql in [
        // Deletes in the first rows only: some units lose rows, not all.
        "DELETE FROM K WHERE ID < 2000 AND MOD(ID, 97) = 3",
        "UPDATE K SET PAD = 'changed' WHERE MOD(ID, 501) = 1",
        "UPDATE K SET ID = ID + 100000 WHERE MOD(ID, 703) = 2",
        "INSERT INTO K VALUES (200000, 'new')",
    ] {
        tr.execute(sql).unwrap();
    }
    tr.commit().unwrap();
    let base = out("base");
    let since = ["--since", base.to_str().unwrap()];
    unload(
        "threads",
        &[&since[..], &["-j", "1", "--processes", "0"]].concat(),
    );
    unload(
        "processes",
        &[&since[..], &["-j", "3", "--processes", "2"]].concat(),
    );
    assert!(
        files(&out("processes")) == files(&out("threads")),
        "the change sets differ"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out("processes").join("manifest.json")).unwrap())
            .unwrap();
    let change = &manifest["tables"][0]["change"];
    assert_eq!(change["mode"], "changes", "{change}");
    // 21 rows deleted, and 13 whose key changed.
    assert_eq!(change["deletes"], 21 + 13, "{change}");
    let rechecked = change["rechecked_units"].as_u64().unwrap();
    let units = manifest["tables"][0]["units"].as_u64().unwrap_or(u64::MAX);
    assert!(
        rechecked > 0 && rechecked < units,
        "{rechecked} of {units} units: {change}"
    );
}

/// Reader processes join the run's one snapshot: the books balance while
/// two writers move money through the same server.
#[test]
fn reader_processes_read_one_snapshot_while_others_write() {
    let Some(server) = fb5("reader_processes_read_one_snapshot_while_others_write") else {
        return;
    };
    books_balance_while_two_writers_run(
        &server,
        "procbank",
        &["-j", "4", "--processes", "2"],
        "in 2 reader processes",
    );
}

/// A reader process killed mid-run: its units are redone on new
/// connections at the same snapshot and the table is whole, the same
/// bytes as a run of one worker; the password was never on a reader
/// process's command line or in its environment.
#[test]
fn a_killed_reader_process_has_its_units_redone() {
    let Some(server) = fb5("a_killed_reader_process_has_its_units_redone") else {
        return;
    };
    let file = server.file("prockill");
    let _removed = Removed(file.clone());
    create_wide(&server, &file);
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    let run = server.fbunload(&file, &["-q", "-j", "1", "-o", one.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));

    let out = dir.path().join("out");
    let mut child = spawn_in_two_reader_processes(&server, &file, &out);
    let readers = reader_processes(&mut child, 2);
    for reader in &readers {
        let cmdline = std::fs::read(format!("/proc/{reader}/cmdline")).unwrap();
        let environ = std::fs::read(format!("/proc/{reader}/environ")).unwrap();
        for (what, bytes) in [("command line", cmdline), ("environment", environ)] {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(&server.password),
                "the password is in a reader process's {what}: {:?}",
                String::from_utf8_lossy(&bytes)
                    .split('\0')
                    .filter(|v| v.contains(&server.password))
                    .map(|v| v.split('=').next().unwrap_or("").to_string())
                    .collect::<Vec<_>>()
            );
        }
    }
    wait_until_writing(&mut child, &out, "WIDE.csv");
    let killed = Command::new("kill")
        .args(["-KILL", &readers[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let ended = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&ended.stderr);
    assert!(ended.status.success(), "{err}");
    assert!(
        err.contains("reader process") && err.contains("SIGKILL"),
        "{err}"
    );
    assert!(err.contains("redoing the unit"), "{err}");
    assert!(
        files(&out).into_iter().find(|(n, _)| n == "WIDE.csv")
            == files(&one).into_iter().find(|(n, _)| n == "WIDE.csv"),
        "not the -j 1 table"
    );
    assert!(all_end(&readers), "a reader process outlived the run");
}

/// Ctrl-C (SIGINT) or SIGTERM to a run with reader processes: status 130,
/// nothing published, and no reader process left; a run killed outright
/// (SIGKILL) leaves none either.
#[test]
fn a_stopped_run_leaves_no_reader_process() {
    let Some(server) = fb5("a_stopped_run_leaves_no_reader_process") else {
        return;
    };
    let file = server.file("procstop");
    let _removed = Removed(file.clone());
    create_wide(&server, &file);
    let dir = tempfile::tempdir().unwrap();
    for signal in ["-INT", "-TERM", "-KILL"] {
        let out = dir.path().join(format!("out{signal}"));
        let mut child = spawn_in_two_reader_processes(&server, &file, &out);
        let readers = reader_processes(&mut child, 2);
        wait_until_writing(&mut child, &out, "WIDE.csv");
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let ended = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&ended.stderr);
        if signal != "-KILL" {
            assert_eq!(ended.status.code(), Some(130), "{signal}: {err}");
        }
        assert!(!out.join("manifest.json").exists(), "{signal}: {err}");
        assert!(
            !out.join("WIDE.csv").exists(),
            "{signal}: a half table was published"
        );
        assert!(
            all_end(&readers),
            "{signal}: a reader process outlived the run"
        );
    }
}

/// A server that stops answering while reader processes read: the run
/// sees their slots wait past `--stall-timeout`, ends with the one line a
/// run of threads ends with, keeps nothing, and leaves no reader process.
#[test]
fn a_stalled_server_ends_a_run_of_reader_processes_after_the_stall_timeout() {
    let Some(private) = PrivateServer::start(
        "a_stalled_server_ends_a_run_of_reader_processes_after_the_stall_timeout",
    ) else {
        return;
    };
    let SecondRun {
        out,
        before,
        mut child,
        _dir,
        ..
    } = second_run_under_way(
        &private,
        "procstalls",
        &["--stall-timeout", "2", "--processes", "2"],
    );
    let readers = reader_processes(&mut child, 2);
    private.signal("-STOP");
    let waited = wait_for_end(&mut child, &private, Instant::now(), "its server stopped");
    private.signal("-CONT");
    let ended = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(1), "{err}");
    assert!(waited >= Duration::from_secs(2), "{waited:?}: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    assert!(
        errors[0].starts_with("fbunload: error: table WIDE: no answer from the database for 2 s"),
        "{err}"
    );
    assert_eq!(files(&out), before, "{err}");
    assert!(all_end(&readers), "a reader process outlived the run");
}

/// The reader processes of `child` (the run), each stopped (SIGSTOP) as
/// soon as it runs the reader's program, before it can attach: looked for
/// every millisecond. Returns them once `count` are stopped.
fn stop_readers_at_birth(child: &mut std::process::Child, count: usize, arg: &str) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut stopped: Vec<u32> = Vec::new();
    while stopped.len() < count {
        for pid in children_of(child.id()) {
            let runs_reader = std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(arg));
            if runs_reader && !stopped.contains(&pid) {
                // SAFETY: kill(2) with a pid and a signal.
                assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
                stopped.push(pid);
            }
        }
        assert!(Instant::now() < deadline, "no reader processes started");
        assert!(child.try_wait().unwrap().is_none(), "the run ended first");
        std::thread::sleep(Duration::from_millis(1));
    }
    stopped
}

/// Reader processes stopped at birth (SIGSTOP) never attach: the run
/// ends at --stall-timeout with one error line naming the stopped reader
/// process (not "no answer from the database"), keeps nothing and leaves
/// no reader process; without a stall timeout, Ctrl-C ends it at once
/// (status 130), not after 10 s blaming the server. Both hung for ever.
#[test]
fn reader_processes_stopped_at_birth_end_at_the_stall_timeout_or_a_signal() {
    let Some(server) =
        fb5("reader_processes_stopped_at_birth_end_at_the_stall_timeout_or_a_signal")
    else {
        return;
    };
    let file = server.file("procbirth");
    let _removed = Removed(file.clone());
    create_wide(&server, &file);
    let dir = tempfile::tempdir().unwrap();
    for (name, stall) in [("stall", "3"), ("signal", "0")] {
        let out = dir.path().join(name);
        let args = [
            "-j",
            "4",
            "--processes",
            "2",
            "--stall-timeout",
            stall,
            "-o",
        ];
        let mut child = server
            .command(&file, &args)
            .arg(&out)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let readers = stop_readers_at_birth(&mut child, 2, "--fbunload-reader-process");
        let since = Instant::now();
        if stall == "0" {
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: kill(2) with a pid and a signal.
            assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        }
        let deadline = since + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                for pid in &readers {
                    // SAFETY: kill(2) with a pid and a signal.
                    unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
                }
                panic!("{name}: the run still runs 30 s after its readers were stopped");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let waited = since.elapsed();
        let ended = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&ended.stderr);
        let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
        if stall == "3" {
            assert_eq!(ended.status.code(), Some(1), "{err}");
            assert!(waited < Duration::from_secs(10), "{waited:?}: {err}");
            assert_eq!(errors.len(), 1, "one error line: {err}");
            assert!(
                errors[0].contains("reader process") && errors[0].contains("is stopped"),
                "{err}"
            );
            assert!(!err.contains("no answer from the database"), "{err}");
        } else {
            assert_eq!(ended.status.code(), Some(130), "{err}");
            assert!(waited < Duration::from_secs(3), "{waited:?}: {err}");
            // Not after the 10 s grace, blaming the server.
            assert!(
                !err.contains("did not end a wait") && !err.contains("no answer"),
                "{err}"
            );
        }
        assert!(!err.contains("Broken pipe"), "{err}");
        assert!(!out.join("manifest.json").exists(), "{err}");
        assert!(
            all_end(&readers),
            "{name}: a reader process outlived the run"
        );
    }
}

/// The server stops answering (SIGSTOP) as the reader processes start,
/// before they attach: the run ends at --stall-timeout, as a run of
/// threads does, instead of waiting for ever.
#[test]
fn a_server_stopped_as_reader_processes_start_ends_the_run_at_the_stall_timeout() {
    let Some(private) = PrivateServer::start(
        "a_server_stopped_as_reader_processes_start_ends_the_run_at_the_stall_timeout",
    ) else {
        return;
    };
    let server = private.as_fb5();
    let file = server.file("procsrvstop");
    create_wide(&server, &file);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let args = ["-j", "6", "--processes", "3", "--stall-timeout", "3", "-o"];
    let mut child = server
        .command(&file, &args)
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // As soon as the first reader process runs.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !children_of(child.id()).iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--fbunload-reader-process"))
    }) {
        assert!(Instant::now() < deadline, "no reader processes started");
        std::thread::sleep(Duration::from_millis(1));
    }
    private.signal("-STOP");
    let waited = wait_for_end(&mut child, &private, Instant::now(), "its server stopped");
    private.signal("-CONT");
    let ended = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(1), "{err}");
    assert!(waited < Duration::from_secs(15), "{waited:?}: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    assert!(
        errors[0].contains("no answer from the database for 3 s"),
        "{err}"
    );
    assert!(!out.join("manifest.json").exists(), "{err}");
}

/// The program's file replaced (an upgrade, `mv` over it) or deleted
/// while a run starts: its reader processes still run the program that
/// runs, never the new file, which would get the password.
#[test]
fn reader_processes_run_the_running_program_not_its_replaced_file() {
    let Some(server) = fb5("reader_processes_run_the_running_program_not_its_replaced_file") else {
        return;
    };
    let file = server.file("procexe");
    let _removed = Removed(file.clone());
    create_wide(&server, &file);
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    let run = server.fbunload(&file, &["-q", "-j", "1", "-o", one.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    let wide = |out: &Path| files(out).into_iter().find(|(n, _)| n == "WIDE.csv");
    for replace in [true, false] {
        let bin = dir.path().join(format!("bin-{replace}"));
        std::fs::create_dir(&bin).unwrap();
        let program = bin.join("fbunload");
        std::fs::copy(env!("CARGO_BIN_EXE_fbunload"), &program).unwrap();
        let marker = dir.path().join(format!("planted-ran-{replace}"));
        let out = dir.path().join(format!("out-{replace}"));
        // The test's command line, run from the copy.
        let command = server.command(&file, &["-j", "4", "--processes", "2", "-o"]);
        let child = Command::new(&program)
            .args(command.get_args())
            .arg(&out)
            .envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env_remove("FBUNLOAD_TEST_FB5_PASSWORD")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Held before it can start a reader process (it has yet to attach
        // and plan), while its file changes.
        // SAFETY: kill(2) with a pid and a signal.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) }, 0);
        if replace {
            let planted = bin.join("fbunload.new");
            std::fs::write(
                &planted,
                format!("#!/bin/sh\ncat > '{}'\n", marker.display()),
            )
            .unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::rename(&planted, &program).unwrap();
        } else {
            std::fs::remove_file(&program).unwrap();
        }
        // SAFETY: kill(2) with a pid and a signal.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGCONT) }, 0);
        let ended = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&ended.stderr);
        assert!(
            !marker.exists(),
            "the new file ran as a reader process and was sent the setup"
        );
        assert!(ended.status.success(), "replaced: {replace}: {err}");
        assert!(err.contains("in 2 reader processes"), "{err}");
        assert!(wide(&out) == wide(&one), "not the -j 1 table");
    }
}

/// `fbunload follow` of a database a Firebird 5 server serves: the
/// `--keep-keys --journal` load and the follow attach over TCP
/// (`host/port:path`) and read the journal the server writes from its
/// directories on this machine. Clerks write before, during and after
/// the load (transfers, rollbacks, savepoints, key updates, blob changes,
/// deletes in a table without a key; a transaction held open across the
/// load's snapshot); PostgreSQL equals Firebird value by value after the
/// follow, and again after follows killed with SIGKILL at random points
/// while clerks write.
#[test]
fn follow_over_tcp_equals_the_served_database_across_kills() {
    use common::clerks::{self, Dice};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let test = "follow_over_tcp_equals_the_served_database_across_kills";
    if fb5(test).is_none() {
        return;
    }
    let Some(uri) = pg_database("follow_fb5") else {
        return;
    };
    let journals = tempfile::tempdir().unwrap();
    let (live, archive) = (
        journals.path().join("journal"),
        journals.path().join("archive"),
    );
    let Some(private) = PrivateServer::start_journaling(test, &live, &archive) else {
        return;
    };
    let server = private.as_fb5();
    let file = server.file("follow");
    let _removed = Removed(file.clone());
    let mut statements = vec![
        "ALTER DATABASE ENABLE PUBLICATION".to_string(),
        "ALTER DATABASE INCLUDE ALL TO PUBLICATION".to_string(),
    ];
    statements.extend(clerks::bank_statements());
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    drop(server.create(&file, &statements));
    let options = server.connect(&file, WireOptions::default());
    let on: clerks::Connect = Arc::new(move || {
        Attachment::connect(&client(), &options).unwrap_or_else(|e| panic!("attach: {e}"))
    });
    let (live_arg, archive_arg) = (live.to_str().unwrap(), archive.to_str().unwrap());
    let follow = |more: &[&str]| -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_fbunload"));
        command
            .args(["follow", "-d", &server.dsn(&file), "-u", "SYSDBA"])
            .args(["--journal", archive_arg, "--journal-live", live_arg])
            .args(["-o", &uri, "--pg-schema", "live"])
            .args(more)
            .env("ISC_PASSWORD", &server.password)
            .env_remove("FBUNLOAD_TEST_FB5_PASSWORD");
        command
    };
    let follow_until_idle = |more: &[&str]| -> Output {
        let mut args = vec!["--until-idle", "3"];
        args.extend_from_slice(more);
        let out = follow(&args).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };

    clerks::clerks(&on, 1, 60);
    // Held open across the snapshot: the load does not see it, the
    // follow applies it once it commits.
    let held_att = on();
    let held = held_att
        .start_transaction(TransactionMode::ReadWrite)
        .unwrap();
    held.execute("UPDATE ACCOUNTS SET BALANCE = BALANCE - 500, NOTE = 'held' WHERE ID = 0")
        .unwrap();
    held.execute("INSERT INTO MOVES VALUES (0, -500)").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let during = clerks::clerks_until(&on, 2, stop.clone());
    std::thread::sleep(Duration::from_millis(300));
    let load = server.fbunload(
        &file,
        &[
            "-o",
            &uri,
            "--pg-schema",
            "live",
            "--keep-keys",
            "--journal",
            archive_arg,
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    let written = during.join().unwrap();
    assert!(load.status.success(), "{}", stderr(&load));
    assert!(written > 5, "clerks wrote during the load: {written}");
    held.commit().unwrap();
    clerks::clerks(&on, 3, 60);

    let out = follow_until_idle(&["--memory", "0"]);
    assert!(
        stderr(&out).contains("fbunload: follow applied"),
        "{}",
        stderr(&out)
    );
    clerks::assert_equal(&on(), &uri, "after the first follow");

    // Killed at random points while clerks write; then to the end.
    let stop = Arc::new(AtomicBool::new(false));
    let during = clerks::clerks_until(&on, 4, stop.clone());
    let mut dice = Dice(5);
    for _ in 0..4 {
        let mut child = follow(&[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(200 + dice.roll(1200) as u64));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    assert!(during.join().unwrap() > 5);
    follow_until_idle(&[]);
    clerks::assert_equal(&on(), &uri, "after follows killed with SIGKILL");
}
