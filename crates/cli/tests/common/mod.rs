//! Shared helpers for the end-to-end tests: real databases on the embedded
//! engine, and the real `fbunload` binary.

#![allow(dead_code)]

pub mod bank;
pub mod clerks;
pub mod oracle;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use fbunload_client::{Attachment, Client, ConnectOptions, TransactionMode};

/// How much longer than the bound it checks a timed step may take on a
/// slow, loaded machine (CI): a process's start, attaches, cleanup and
/// exit. The tests' time bounds tell a stop from a hang; what stopped a
/// run is told by its message, never by a tight bound.
pub const SLOW_MACHINE: std::time::Duration = std::time::Duration::from_secs(20);

pub fn client() -> Arc<Client> {
    Client::load(None).expect("the embedded Firebird engine (scripts/setup.sh installs it)")
}

pub fn connect(db: &Path) -> Attachment {
    retrying_while_a_child_starts(&db.display().to_string(), || {
        Attachment::connect(
            &client(),
            &ConnectOptions {
                database: db.to_string_lossy().into_owned(),
                user: Some("SYSDBA".into()),
                password: Some("masterkey".into()),
                charset: "UTF8".into(),
                ..Default::default()
            },
        )
    })
}

/// `attach()`, tried again while the engine finds the file locked.
///
/// Tests run side by side in one process, and each starts child processes.
/// A child holds a copy of every open file of this process from its fork
/// until its exec closes them, and the engine's lock on a database file
/// (SuperServer: exclusive) belongs to the open file, not to the process:
/// a database this process has just closed stays locked for that moment,
/// and opening it again at once (as the helpers here do: create, then
/// fill) is refused, "Database already opened with engine instance,
/// incompatible with current" (reproduced: one child started after
/// another beside a create-then-attach loop). That moment is short; a
/// database held for longer, as a server holds it, still fails the test.
fn retrying_while_a_child_starts<T>(
    what: &str,
    mut attach: impl FnMut() -> Result<T, fbunload_client::ClientError>,
) -> T {
    let started = std::time::Instant::now();
    loop {
        match attach() {
            Ok(done) => return done,
            Err(fbunload_client::ClientError::Firebird(e))
                if e.is_held_by_another_engine()
                    && started.elapsed() < std::time::Duration::from_secs(10) =>
            {
                eprintln!("{what}: {e}; trying again (a child process was starting)");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

/// An empty database; a small page size gives many pointer pages from
/// little data.
pub fn create_db(dir: &Path, name: &str, page_size: u32) -> PathBuf {
    let path = dir.join(name);
    let sql = format!(
        "CREATE DATABASE '{}' USER 'SYSDBA' PASSWORD 'masterkey' PAGE_SIZE {page_size} \
         DEFAULT CHARACTER SET UTF8",
        path.display()
    );
    let created = retrying_while_a_child_starts(&sql, || {
        // What a refused create left is this test's own.
        let _ = std::fs::remove_file(&path);
        Attachment::create_database(&client(), &sql)
    });
    drop(created);
    path
}

/// Runs statements, each in its own committed transaction.
pub fn execute(db: &Path, statements: &[&str]) {
    let att = connect(db);
    for sql in statements {
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        tr.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        tr.commit().unwrap();
    }
}

pub fn count(db: &Path, table: &str) -> i64 {
    bigint(
        db,
        &format!(
            "SELECT COUNT(*) FROM {}",
            fbunload_plan::quote_identifier(table)
        ),
    )
}

/// The one BIGINT a query returns, read in a snapshot of its own.
pub fn bigint(db: &Path, sql: &str) -> i64 {
    let att = connect(db);
    let tr = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    let mut stmt = tr.prepare(sql).unwrap();
    stmt.execute().unwrap();
    assert!(stmt.fetch().unwrap());
    i64::from_ne_bytes(stmt.row().value(0).unwrap().try_into().unwrap())
}

/// Runs the fbunload binary against `db` with SYSDBA credentials.
pub fn fbunload(db: &Path, args: &[&str]) -> Output {
    fbunload_with_env(db, args, None)
}

/// Runs fbunload as [`fbunload`] does, in the working directory `cwd`.
#[allow(dead_code)] // not every test binary uses it
pub fn fbunload_in(db: &Path, args: &[&str], cwd: &Path) -> Output {
    fbunload_command(db, args)
        .current_dir(cwd)
        .output()
        .expect("run fbunload")
}

/// Runs fbunload with one more environment variable set, if any.
#[allow(dead_code)] // not every test binary uses it
pub fn fbunload_with_env(db: &Path, args: &[&str], env: Option<(&str, &str)>) -> Output {
    let mut command = fbunload_command(db, args);
    if let Some((name, value)) = env {
        command.env(name, value);
    }
    command.output().expect("run fbunload")
}

/// The fbunload binary with `-d db`, SYSDBA's credentials and `args`.
pub fn fbunload_command(db: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fbunload"));
    command
        .arg("-d")
        .arg(db)
        .args(["-u", "SYSDBA", "-p", "masterkey"])
        .args(args);
    command
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The rows of a CSV file written with the default header line, parsed
/// properly (values may contain newlines); the header is not one of them.
pub fn csv_records(path: &Path) -> Vec<Vec<String>> {
    let mut records = csv_lines(path);
    assert!(!records.is_empty(), "{}: no header line", path.display());
    records.remove(0);
    records
}

/// Every record of a CSV file, its header line first.
#[allow(dead_code)] // not every test binary uses it
pub fn csv_lines(path: &Path) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    reader
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

/// Every table file in a directory, sorted, with its bytes: all but the
/// run's manifest.json, which records times (manifest.rs tests it). None
/// when the directory is not there: a run that made it and published
/// nothing in it removes it again.
pub fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        entries => entries.unwrap(),
    };
    let mut out: Vec<_> = entries
        .filter(|e| e.as_ref().unwrap().file_name() != "manifest.json")
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Whether `name` is being written in a run's staging directory in `out`.
#[allow(dead_code)] // not every test binary uses it
pub fn being_written(out: &Path, name: &str) -> bool {
    std::fs::read_dir(out).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".fbunload-run-")
                && e.path().join(name).exists()
        })
    })
}

/// The `firebird-embedded` runtime directory.
pub fn embedded_runtime() -> PathBuf {
    let out = Command::new("python3")
        .args([
            "-c",
            "import firebird.embedded, os; \
             print(os.path.join(os.path.dirname(firebird.embedded.__file__), 'runtime'))",
        ])
        .output()
        .expect("python3");
    assert!(out.status.success(), "firebird-embedded (scripts/setup.sh)");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// A copy of the embedded runtime in `mode` for this test process, to
/// point `FIREBIRD` at (and change: follow's `replication.conf`). It lives
/// in target/tmp, named by the process id: a static's copy is never
/// dropped, so each new one removes those whose process has ended.
#[allow(dead_code)] // not every test binary uses it
pub fn runtime_of_this_process(mode: &str) -> PathBuf {
    const PREFIX: &str = "firebird-runtime-";
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for entry in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix(PREFIX));
        if pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let root = tmp.join(format!("{PREFIX}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    runtime_in_mode(&embedded_runtime(), &root, mode);
    root
}

/// A copy of the runtime whose engine runs in `mode`.
pub fn runtime_in_mode(runtime: &Path, into: &Path, mode: &str) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(runtime)
        .arg(into)
        .status()
        .unwrap();
    assert!(status.success());
    let conf = into.join("firebird.conf");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str(&format!("\nServerMode = {mode}\n"));
    std::fs::write(conf, text).unwrap();
}

/// A run refused before it started: status 1 and one line on stderr,
/// `fbunload: error: ` and then `expected`.
#[allow(dead_code)] // not every test binary uses it
pub fn assert_refused_in_one_line(out: &Output, expected: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!("fbunload: error: {expected}")),
        "expected {expected:?}: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `fbunload check DIR`.
pub fn fbunload_check(dir: &Path) -> Output {
    fbunload_alone(&["check", dir.to_str().unwrap()])
}

/// Runs the fbunload binary with `args` alone (no database, no login).
pub fn fbunload_alone(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(args)
        .output()
        .unwrap()
}

/// A database with one table, TINY, of one row (1).
pub fn small_db(dir: &Path) -> PathBuf {
    let db = create_db(dir, "small.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE TINY (ID INTEGER)",
            "INSERT INTO TINY VALUES (1)",
        ],
    );
    db
}

/// The `manifest.json` a run left in `dir`.
pub fn read_manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// The manifest's entry (table, view or query) named `name`.
pub fn manifest_entry<'m>(manifest: &'m serde_json::Value, name: &str) -> &'m serde_json::Value {
    manifest["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {manifest}"))
}

/// Peak RSS in KiB of an fbunload run, which must succeed. Linux keeps a
/// process's high-water mark across exec, so it is at least this test's
/// own at the spawn (about 41 MiB, with the engine loaded): the baseline
/// reads a little high, the copies a little low (under 0.1 here).
#[cfg(target_os = "linux")]
#[allow(dead_code)] // the memory tests only
pub fn peak_kib(db: &Path, out: &Path, args: &[&str]) -> i64 {
    let _ = std::fs::remove_dir_all(out);
    let log = tempfile::NamedTempFile::new().unwrap();
    let pid = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .arg("-d")
        .arg(db)
        .args(["-u", "SYSDBA", "-p", "masterkey", "-q", "-o"])
        .arg(out)
        .args(args)
        // The binary's own malloc settings, whatever the test's are.
        .env_remove("MALLOC_ARENA_MAX")
        .stdout(std::process::Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap()
        .id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: plain out-parameters; rusage is a C struct of integers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // wait4, not Child::wait: it gives this child's own peak, where
    // getrusage(RUSAGE_CHILDREN) gives the largest of all children so far.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "fbunload {args:?}: {}",
        std::fs::read_to_string(log.path()).unwrap()
    );
    usage.ru_maxrss
}

/// Reads the Parquet and Arrow files of `tables` in `out` (with jsonl/,
/// parquet/, arrow/ and maybe parquet-split/ unloads of them) with
/// pyarrow, an independent reader, and checks every value against the
/// JSON Lines unload (`roundtrip.py`); returns how many it checked.
pub fn pyarrow_roundtrip(out: &Path, tables: &[&str]) -> usize {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/roundtrip.py");
    let result = Command::new("python3")
        .arg(script)
        .arg(out)
        .args(tables)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "pyarrow round trip failed (scripts/setup.sh installs pyarrow):\n{report}{}",
        String::from_utf8_lossy(&result.stderr)
    );
    report
        .trim()
        .strip_prefix("checked ")
        .and_then(|r| r.strip_suffix(" values"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The (integer, text) rows of the first two columns of a Parquet file, in
/// the file's order (NULL text as None).
pub fn int_text_rows(file: &Path) -> Vec<(i32, Option<String>)> {
    use arrow_array::{Array, Int32Array, StringArray};
    let file = std::fs::File::open(file).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let ints = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        let texts = batch
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        rows.extend((0..batch.num_rows()).map(|i| {
            (
                ints.value(i),
                texts.is_valid(i).then(|| texts.value(i).to_string()),
            )
        }));
    }
    rows
}

/// The private PostgreSQL cluster's URI (scripts/pg-cluster.sh, which
/// scripts/test.sh starts) for database `db`, made empty for the test;
/// `None`, the test saying it is skipped, without a cluster.
#[allow(dead_code)] // not every test binary uses it
pub fn pg_database(db: &str) -> Option<String> {
    let Ok(uri) = std::env::var("FBUNLOAD_TEST_PG_URI") else {
        eprintln!(
            "SKIPPED: FBUNLOAD_TEST_PG_URI is not set: start a private PostgreSQL with \
             eval \"$(bash scripts/pg-cluster.sh start)\" (scripts/test.sh does)"
        );
        return None;
    };
    let mut admin = pg(&uri);
    // Each its own statement: neither runs in a transaction block.
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .unwrap();
    let base = uri.rsplit_once('/').unwrap().0;
    Some(format!("{base}/{db}"))
}

/// A plain connection to the test cluster (its own tests use TLS).
#[allow(dead_code)] // not every test binary uses it
pub fn pg(uri: &str) -> postgres::Client {
    postgres::Client::connect(uri, postgres::NoTls).unwrap()
}

/// Failed (status 1) with one line on stderr, an error that says `expected`
/// somewhere in it ([`assert_refused_in_one_line`] wants it first).
#[allow(dead_code)] // not every test binary uses it
pub fn refused_in_one_line(out: &Output, expected: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("fbunload: error: ") && err.contains(expected),
        "expected {expected:?}: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Firebird's own EMPLOYEE example (arrays, foreign keys, sequences,
/// computed columns, triggers, procedures), built from Debian's
/// firebird3.0-examples script as arrays.rs builds it; `None`, the test
/// saying it is skipped, without the script.
#[allow(dead_code)] // not every test binary uses it
pub fn employee(dir: &Path) -> Option<PathBuf> {
    let path = PathBuf::from("/usr/share/doc/firebird3.0-common-doc/examples/employee.sql.gz");
    if !path.is_file() {
        eprintln!(
            "SKIPPED: {} not found (scripts/setup.sh installs it)",
            path.display()
        );
        return None;
    }
    let mut script = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(&std::fs::read(&path).unwrap()[..]),
        &mut script,
    )
    .unwrap();
    let db = create_db(dir, "employee.fdb", 8192);
    let statements = fbunload_gen::arrays::script_statements(&script);
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    execute(&db, &statements);
    fbunload_gen::arrays::fill_employee(&connect(&db)).unwrap();
    Some(db)
}

/// Starts `run` (a `--resumable` run of the `fbunload` binary) and kills
/// it (SIGKILL) once `progress` (units journaled, units planned) says
/// `share` of its units are journaled; asserts it was killed before its
/// last unit. Its standard error is read by a thread while it runs (a run
/// that wrote more than a pipe holds would block on it) and shown if the
/// run ends before it could be killed.
pub fn kill_once_journaled(
    mut run: Command,
    share: f64,
    mut progress: impl FnMut() -> Option<(u64, u64)>,
) {
    let mut child = run
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut text);
        String::from_utf8_lossy(&text).into_owned()
    });
    let started = std::time::Instant::now();
    loop {
        if let Some((done, units)) = progress() {
            if done as f64 >= units as f64 * share {
                break;
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            let err = stderr.join().unwrap();
            panic!("the run ended ({status}) before it could be killed: {err}");
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(300),
            "no progress"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Not joined: a reader process the run started may hold the pipe
    // open a while after the kill.
    drop(stderr);
    let (done, units) = progress().unwrap();
    assert!(done < units, "killed after every unit: {done} of {units}");
}
