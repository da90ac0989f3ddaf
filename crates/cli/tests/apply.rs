//! `fbunload apply` of a bigger table: stopped by a signal it leaves
//! nothing, and it writes the state compressed as the run was, reading a
//! batch at a time (issue 45, items 9 and 10).
// The signal test and its helpers are Unix's.
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]

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
    // A full disk (a file-size limit below the table's file; SIGXFSZ
    // ignored so the write fails with EFBIG): one line, nothing left.
    let size = |d: &Path| std::fs::metadata(d.join("W.parquet")).unwrap().len();
    let full = dir.path().join("full");
    let script = format!(
        "ulimit -f {}; trap '' XFSZ; exec '{}' apply '{}' '{}' -o '{}'",
        size(&base) / 2 / 512,
        env!("CARGO_BIN_EXE_fbunload"),
        base.display(),
        changes.display(),
        full.display()
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("File too large"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(!full.exists());
    let state = dir.path().join("state");
    let out = apply(&base, &changes, &state).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    common::oracle::check(&state);
    // The run's zstd, not plain pages: about the base's size.
    assert!(
        size(&state) < size(&base) * 3 / 2,
        "state {} bytes, base {}",
        size(&state),
        size(&base)
    );
}

/// W's rows in the one Parquet file of `dir`, sorted.
fn rows_of(dir: &Path) -> Vec<(i32, String)> {
    let mut rows = rows_in_order(dir);
    rows.sort();
    rows
}

/// W's rows in the one Parquet file of `dir`, in the file's order.
fn rows_in_order(dir: &Path) -> Vec<(i32, String)> {
    int_text_rows(&dir.join("W.parquet"))
        .into_iter()
        .map(|(id, pad)| (id, pad.expect("W.PAD is never NULL")))
        .collect()
}

/// A link too big for `--memory` is applied in several passes over the
/// old rows, each holding a share of its keys: the same state.
#[test]
fn a_link_over_the_memory_budget_is_applied_in_passes_to_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "p.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE W (ID INTEGER NOT NULL PRIMARY KEY, PAD VARCHAR(100))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 30000) DO BEGIN \
             INSERT INTO W VALUES (:I, 'v' || :I); I = I + 1; END END",
        ],
    );
    // Transactions after the insert's, so that the base's oldest
    // interesting one is past it and the link keeps old rows.
    for _ in 0..3 {
        execute(&db, &["UPDATE W SET PAD = PAD WHERE ID = -1"]);
    }
    let at = |name: &str| dir.path().join(name);
    run(
        &db,
        &["--keep-keys", "-f", "parquet", "-o", path(&at("base"))],
    );
    execute(
        &db,
        &[
            "UPDATE W SET PAD = 'u' || ID WHERE MOD(ID, 2) = 0",
            "UPDATE W SET ID = ID + 100000 WHERE MOD(ID, 11) = 1",
            "DELETE FROM W WHERE MOD(ID, 7) = 0",
        ],
    );
    run(
        &db,
        &[
            "--since",
            path(&at("base")),
            "-f",
            "parquet",
            "-o",
            path(&at("c1")),
        ],
    );
    run(&db, &["-f", "parquet", "-o", path(&at("now"))]);
    let upserts = read_manifest(&at("c1"))["tables"][0]["rows"]
        .as_u64()
        .unwrap();
    assert!(upserts < 25_000, "{upserts} upserts: no old row kept");
    for (state, memory) in [("one", "128"), ("passes", "1")] {
        let out = fbunload_alone(&[
            "apply",
            "--memory",
            memory,
            path(&at("base")),
            path(&at("c1")),
            "-o",
            path(&at(state)),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        common::oracle::check(&at(state));
    }
    let now = rows_of(&at("now"));
    assert_eq!(now.len() as i64, count(&db, "W"));
    assert_eq!(rows_of(&at("one")), now);
    assert_eq!(rows_of(&at("passes")), now);
    // Each pass keeps its share of the old rows: another order.
    assert_ne!(rows_in_order(&at("one")), rows_in_order(&at("passes")));
}
