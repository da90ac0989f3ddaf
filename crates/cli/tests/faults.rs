//! Faults seen from outside the process: Ctrl-C, SIGTERM, a full disk. In all
//! the run must fail visibly and leave no file that looks complete.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A database whose one table takes a good fraction of a second to unload.
fn slow_db(dir: &Path) -> std::path::PathBuf {
    let db = create_db(dir, "slow.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE WIDE (ID INTEGER, A VARCHAR(200), B VARCHAR(200))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 400000) DO BEGIN \
               INSERT INTO WIDE VALUES (:I, 'a' || (:I * 7919) || RPAD('', 180, 'x'), \
               'b' || (:I * 104729)); I = I + 1; END END",
            "CREATE TABLE TINY (ID INTEGER)",
            "INSERT INTO TINY VALUES (1)",
        ],
    );
    db
}

/// A password the tests look for where it must not be.
const PASSWORD: &str = "pw-that-must-not-show";

#[test]
fn ctrl_c_and_sigterm_stop_the_run_and_remove_unfinished_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = slow_db(dir.path());
    for signal in ["INT", "TERM"] {
        let out = dir.path().join(format!("out-{signal}"));
        let child = Command::new(env!("CARGO_BIN_EXE_fbunload"))
            .args(["-d", db.to_str().unwrap(), "-u", "SYSDBA", "-p", PASSWORD])
            .args(["-j", "2", "--unit-pages", "64", "-o", out.to_str().unwrap()])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the big table is being written, then signal.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !being_written(&out, "WIDE.csv") {
            assert!(
                Instant::now() < deadline,
                "the unload never started writing"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap();
        let shown = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(
            !shown.contains(PASSWORD) && shown.contains("-p xxx"),
            "ps shows the password: {shown}"
        );
        let status = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let output = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(130), "SIG{signal}: {err}");
        assert!(err.contains("interrupted"), "SIG{signal}: {err}");
        assert!(!err.contains(PASSWORD), "{err}");
        let left: Vec<String> = files(&out).into_iter().map(|(n, _)| n).collect();
        assert!(
            left.iter().all(|n| n == "TINY.csv"),
            "SIG{signal}: only complete tables may remain: {left:?}"
        );
    }
}

#[test]
fn a_full_disk_fails_the_table_and_leaves_no_half_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = slow_db(dir.path());
    let out = dir.path().join("out");
    // A 60 MiB file-size limit (512-byte blocks) stands in for a full disk:
    // above the database (about 40 MB), below WIDE.csv (about 84 MB).
    // Writes past it fail with EFBIG; SIGXFSZ is ignored so the write
    // error reaches fbunload.
    let script = format!(
        "ulimit -f 122880; trap '' XFSZ; exec '{}' -d '{}' -u SYSDBA -p masterkey -j 2 -o '{}'",
        env!("CARGO_BIN_EXE_fbunload"),
        db.display(),
        out.display()
    );
    let output = Command::new("sh").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{err}");
    assert!(
        err.contains("table WIDE") && err.contains("File too large"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let left: Vec<String> = files(&out).into_iter().map(|(n, _)| n).collect();
    assert!(left.iter().all(|n| n == "TINY.csv"), "{left:?}");
}
