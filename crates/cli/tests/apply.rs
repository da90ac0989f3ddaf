//! `fbunload apply` of a bigger table: stopped by a signal it leaves
//! nothing, and it writes the state compressed as the run was, reading a
//! batch at a time (issue 45, items 9 and 10).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::oracle::path;
use common::*;

fn run(db: &Path, args: &[&str]) {
    let out = fbunload(db, args);
    assert!(out.status.success(), "fbunload {args:?}: {}", stderr(&out));
}

/// A database with W of `rows` rows of ~100 bytes, a Parquet base of it
/// that keeps its keys, and a change set of one updated row.
fn chain(dir: &Path, rows: u32) -> (PathBuf, PathBuf) {
    let db = create_db(dir, "w.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE W (ID INTEGER NOT NULL PRIMARY KEY, PAD VARCHAR(100))",
            &format!(
                "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= {rows}) DO BEGIN \
                 INSERT INTO W VALUES (:I, LPAD(:I, 100, 'x')); I = I + 1; END END"
            ),
        ],
    );
    let base = dir.join("base");
    let changes = dir.join("c1");
    run(&db, &["--keep-keys", "-f", "parquet", "-o", path(&base)]);
    execute(&db, &["UPDATE W SET PAD = 'changed' WHERE ID = 7"]);
    run(
        &db,
        &[
            "--since",
            path(&base),
            "-f",
            "parquet",
            "-o",
            path(&changes),
        ],
    );
    (base, changes)
}

fn apply(base: &Path, changes: &Path, state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fbunload"));
    command
        .args(["apply", path(base), path(changes), "-o", path(state)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Whether `dir` holds a staging directory: the apply is writing.
fn staging_in(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".fbunload-run-")
        })
    })
}

#[cfg(unix)]
#[test]
fn apply_stopped_by_its_first_signal_leaves_nothing_and_a_whole_one_is_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let (base, changes) = chain(dir.path(), 200_000);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let state = dir.path().join(format!("state-{signal}"));
        let mut child = apply(&base, &changes, &state).spawn().unwrap();
        let started = Instant::now();
        while !staging_in(&state) {
            assert!(child.try_wait().unwrap().is_none(), "apply ended first");
            assert!(started.elapsed() < Duration::from_secs(60));
            std::thread::sleep(Duration::from_millis(2));
        }
        // SAFETY: a signal to the child this test started.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        assert!(!state.exists(), "signal {signal}: {}", stderr(&out));
    }
    let state = dir.path().join("state");
    let out = apply(&base, &changes, &state).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    common::oracle::check(&state);
    // The run's zstd, not plain pages: about the base's size.
    let size = |d: &Path| std::fs::metadata(d.join("W.parquet")).unwrap().len();
    assert!(
        size(&state) < size(&base) * 3 / 2,
        "state {} bytes, base {}",
        size(&state),
        size(&base)
    );
}
