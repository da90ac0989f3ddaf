//! Another user's DDL during a run (issue #10.11): a `DROP TABLE` of a
//! table fbunload has already unloaded used to wait on fbunload's
//! attachments while `--verify`'s `COUNT(*)` of that table waited on the
//! DROP, for ever, and the first SIGTERM was not seen because the watch
//! thread queued behind the count. No wait may be unbounded: the run ends
//! on its own, and a signal ends it within seconds.
//!
//! Two processes share the database file through an embedded engine run as
//! SuperClassic (a copy of the runtime; see `server_modes.rs`); the DROP
//! is issued by Python's firebird-driver on that same runtime.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use fbunload_gen::{generate, GenOptions, Table};

/// Longer than any healthy run here; a run still going then has hung.
const HUNG: Duration = Duration::from_secs(120);

/// Drops `table` and commits, printing `executed` and then `committed` (or
/// `failed: ...`) with the seconds since it started.
const DROP_SCRIPT: &str = r#"
import os, sys, time
from firebird.driver import connect, driver_config
driver_config.fb_client_library.value = os.path.join(os.environ["FIREBIRD"], "libfbclient.so.2")
start = time.monotonic()
con = connect(sys.argv[1], user="SYSDBA", password="masterkey")
con.execute_immediate("DROP TABLE " + sys.argv[2])
print("executed", flush=True)
try:
    con.commit()
    print("committed %.1f" % (time.monotonic() - start), flush=True)
except Exception as e:
    print("failed: %s" % e, flush=True)
con.close()
"#;

struct Setup {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    runtime: std::path::PathBuf,
    out: std::path::PathBuf,
}

/// STOCK, the larger table, is read first, then ITEM.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("ddl.fdb"));
    options.tables = vec![Table::Stock, Table::Item];
    options.items = 150_000;
    options.page_size = 4096;
    generate(&client(), &options).unwrap();
    let runtime = dir.path().join("runtime");
    runtime_in_mode(&embedded_runtime(), &runtime, "SuperClassic");
    let out = dir.path().join("out");
    Setup {
        db: options.database.clone(),
        runtime,
        out,
        _dir: dir,
    }
}

/// fbunload with one worker, `--verify`, progress as JSON lines and
/// `options`; the lines arrive on the receiver as they are written.
fn start_unload(s: &Setup, options: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .arg("-d")
        .arg(&s.db)
        .args(["-u", "SYSDBA", "-p", "masterkey", "-j", "1", "--verify"])
        .args(options)
        .args(["--progress", "json", "-o"])
        .arg(&s.out)
        .env("FIREBIRD", &s.runtime)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (send, lines) = mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

/// Waits for a progress line containing `text`; panics if the run ends or
/// hangs first.
fn wait_for_line(lines: &mpsc::Receiver<String>, text: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        match lines.recv_timeout(HUNG) {
            Ok(line) => {
                let found = line.contains(text);
                seen.push(line);
                if found {
                    return seen;
                }
            }
            Err(e) => panic!("no line with {text:?} ({e:?}): {seen:#?}"),
        }
    }
}

/// The DROP, in a process of its own.
fn start_drop(s: &Setup, db: &Path, table: &str) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new("python3")
        .args(["-c", DROP_SCRIPT])
        .arg(db)
        .arg(table)
        .env("FIREBIRD", &s.runtime)
        .env("LD_LIBRARY_PATH", &s.runtime)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let (send, lines) = mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    (child, lines)
}

/// The process's status, or a failed test if it is still running after
/// `limit` (it is killed then, so that a hang fails the test and not CI).
fn wait_at_most(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}: it hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends SIGTERM; returns how the process ended and how long that took.
fn terminate(child: &mut Child) -> (ExitStatus, Duration) {
    let signalled = Instant::now();
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = wait_at_most(child, HUNG, "fbunload after SIGTERM");
    (status, signalled.elapsed())
}

fn rest(lines: &mpsc::Receiver<String>) -> String {
    lines.try_iter().collect::<Vec<_>>().join("\n")
}

#[test]
fn a_drop_of_an_unloaded_table_during_verify_never_hangs_the_run() {
    let s = setup();
    let (mut unload, progress) = start_unload(&s, &[]);
    // STOCK is complete; ITEM is being read. The DROP of STOCK now waits
    // only for the worker that read it, which leaves when ITEM is done.
    wait_for_line(&progress, r#""event":"table""#);
    let (mut drop_table, dropped) = start_drop(&s, &s.db, "STOCK");
    assert_eq!(dropped.recv_timeout(HUNG).as_deref(), Ok("executed"));
    assert!(
        unload.try_wait().unwrap().is_none(),
        "the run ended before the DROP came: the test tests nothing"
    );

    let status = wait_at_most(&mut unload, HUNG, "fbunload");
    let report = rest(&progress);
    let drop_status = wait_at_most(&mut drop_table, HUNG, "the DROP");
    assert!(drop_status.success());
    let drop_report = rest(&dropped);
    assert!(drop_report.contains("committed"), "{drop_report}");
    if status.success() {
        // The DROP came after the count: every row of the snapshot.
        assert!(report.contains(r#""event":"summary""#), "{report}");
        let stock = csv_records(&s.out.join("STOCK.csv"));
        assert_eq!(stock.len(), 150_000);
    } else {
        // It came before: the count names the table that went.
        assert_eq!(status.code(), Some(1), "{report}");
        assert!(report.contains("STOCK"), "{report}");
        assert!(
            !s.out.join("manifest.json").exists(),
            "a failed run has no manifest"
        );
    }
}

#[test]
fn the_first_sigterm_ends_a_run_that_another_users_drop_waits_on() {
    let s = setup();
    let (mut unload, progress) = start_unload(&s, &[]);
    wait_for_line(&progress, r#""event":"table""#);
    let (mut drop_table, dropped) = start_drop(&s, &s.db, "STOCK");
    // The DROP is in; its commit waits on fbunload.
    assert_eq!(
        dropped.recv_timeout(HUNG).as_deref(),
        Ok("executed"),
        "the DROP did not start"
    );
    let (status, took) = terminate(&mut unload);
    let report = rest(&progress);
    // Ended by the signal, within the grace a stop has (or, just before,
    // by itself). The grace is the bound: a cancelled wait ends sooner,
    // one the engine ignores ends at the grace, and exit takes a moment
    // more (asserting less than the grace failed on a loaded machine).
    if !status.success() {
        assert_eq!(status.code(), Some(130), "{report}");
        assert!(!s.out.join("manifest.json").exists());
    }
    assert!(
        took < fbunload_cli::STOP_GRACE + SLOW_MACHINE,
        "took {took:?}"
    );
    // fbunload gone, the DROP goes through.
    assert!(wait_at_most(&mut drop_table, HUNG, "the DROP").success());
    assert!(rest(&dropped).contains("committed"));
}

/// Holds STOCK with an open cursor on one attachment and drops it on
/// another, whose commit then waits on the first: any new prepare of
/// STOCK waits behind the DROP, in a wait the engine does not cancel.
/// Prints `waiting` once the DROP is committing; ends when stdin closes.
const BLOCK_SCRIPT: &str = r#"
import os, sys, threading, time
from firebird.driver import connect, driver_config
driver_config.fb_client_library.value = os.path.join(os.environ["FIREBIRD"], "libfbclient.so.2")
holder = connect(sys.argv[1], user="SYSDBA", password="masterkey")
cursor = holder.cursor()
cursor.execute("SELECT * FROM STOCK")
cursor.fetchone()
dropper = connect(sys.argv[1], user="SYSDBA", password="masterkey")
dropper.execute_immediate("DROP TABLE STOCK")
threading.Thread(target=dropper.commit, daemon=True).start()
time.sleep(1)
print("waiting", flush=True)
sys.stdin.read()
os._exit(0)
"#;

/// The process of [`BLOCK_SCRIPT`], once STOCK is blocked; closing its
/// stdin ends it.
fn block_stock(s: &Setup) -> Child {
    let mut blocker = Command::new("python3")
        .args(["-c", BLOCK_SCRIPT])
        .arg(&s.db)
        .env("FIREBIRD", &s.runtime)
        .env("LD_LIBRARY_PATH", &s.runtime)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(blocker.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready.trim(), "waiting");
    blocker
}

fn unblock(mut blocker: Child) {
    drop(blocker.stdin.take());
    let _ = wait_at_most(&mut blocker, HUNG, "the blocking process");
}

#[test]
fn the_first_sigterm_ends_a_run_stuck_in_a_wait_the_server_does_not_cancel() {
    let s = setup();
    let blocker = block_stock(&s);
    let (mut unload, progress) = start_unload(&s, &[]);
    // fbunload prepares STOCK's select while planning, behind the DROP.
    std::thread::sleep(Duration::from_secs(3));
    assert!(unload.try_wait().unwrap().is_none(), "{}", rest(&progress));
    let (status, took) = terminate(&mut unload);
    unblock(blocker);
    let report = rest(&progress);
    assert_eq!(status.code(), Some(130), "{report}");
    assert!(report.contains("interrupted"), "{report}");
    assert!(
        took < fbunload_cli::STOP_GRACE + SLOW_MACHINE,
        "took {took:?}"
    );
    assert!(!s.out.join("manifest.json").exists());
}

#[test]
fn a_prepare_stuck_behind_another_users_drop_ends_after_the_lock_timeout() {
    let s = setup();
    let blocker = block_stock(&s);
    let started = Instant::now();
    let (mut unload, progress) = start_unload(&s, &["--lock-timeout", "3"]);
    let status = wait_at_most(&mut unload, HUNG, "fbunload");
    let took = started.elapsed();
    eprintln!("fbunload ended after {took:?}");
    unblock(blocker);
    // Every line, up to the end of its stderr.
    let report = progress.iter().collect::<Vec<_>>().join("\n");
    assert_eq!(status.code(), Some(1), "{report}");
    let errors: Vec<&str> = report.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{report}");
    assert!(
        errors[0].starts_with("fbunload: error: table STOCK: its query waited 3 s")
            && errors[0].contains("--lock-timeout"),
        "{report}"
    );
    // The message names the 3 s; the time only has to be short of the
    // default lock timeout (60 s), with room for a slow start.
    assert!(took >= Duration::from_secs(3), "took {took:?}");
    assert!(
        took < Duration::from_secs(3) + SLOW_MACHINE,
        "took {took:?}"
    );
    assert!(!s.out.join("manifest.json").exists());
}
