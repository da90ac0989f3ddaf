//! A rerun never loses the last good unload: killed (`kill -9`) or
//! stopped (SIGTERM) while it reads, or in the middle of moving its
//! complete files in, the directory holds one complete run that `fbunload
//! check` accepts (the old one, or the new one once `check --finish` has
//! finished the interrupted move), and the next run proceeds. A rerun that
//! fails leaves the old run as it was.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn rows_db(dir: &Path) -> std::path::PathBuf {
    let db = create_db(dir, "rerun.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE WIDE (ID INTEGER, PAD VARCHAR(300))",
            "CREATE TABLE TINY (ID INTEGER)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 150000) DO BEGIN \
               INSERT INTO WIDE VALUES (:I, LPAD('', 250, 'x') || :I); I = I + 1; END END",
            "INSERT INTO TINY VALUES (1)",
        ],
    );
    db
}

fn spawn(db: &Path, out: &Path, env: Option<(&str, &str)>) -> Child {
    let mut command =
        fbunload_command(db, &["-j", "2", "--overwrite", "-o", out.to_str().unwrap()]);
    command.stderr(Stdio::piped());
    if let Some((name, value)) = env {
        command.env(name, value);
    }
    command.spawn().unwrap()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "never saw {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Sends SIG`signal` (KILL, TERM) and waits for the run to end; returns
/// what it said.
fn stop(child: Child, signal: &str) -> String {
    let sent = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    stderr(&child.wait_with_output().unwrap())
}

/// TINY's one value: which run the directory holds.
fn tiny(out: &Path) -> String {
    let text = std::fs::read_to_string(out.join("TINY.csv")).unwrap();
    let value = text
        .strip_prefix("ID\n")
        .expect("TINY.csv starts with its header");
    value.to_string()
}

/// `fbunload check` accepts the directory; returns what it said on stderr.
fn assert_one_complete_run(out: &Path, what: &str) -> String {
    let checked = fbunload_check(out);
    assert!(
        checked.status.success(),
        "{what}: check refused the directory: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        stderr(&checked)
    );
    stderr(&checked)
}

#[test]
fn a_rerun_killed_at_any_moment_leaves_one_complete_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = rows_db(dir.path());
    let out = dir.path().join("out");
    let first = spawn(&db, &out, None).wait_with_output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(tiny(&out), "1\n");

    // A failing rerun (a division by zero on the server) leaves the old
    // run whole: it used to have removed it by then.
    let failed = fbunload(
        &db,
        &[
            "--overwrite",
            "--where",
            "WIDE:ID / 0 = 1",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(!failed.status.success());
    assert_one_complete_run(&out, "after a failed rerun");
    assert_eq!(tiny(&out), "1\n");

    let mut value = 1;
    for signal in ["KILL", "TERM"] {
        // Killed while it reads: the old run stays.
        value += 1;
        execute(&db, &[&format!("UPDATE TINY SET ID = {value}")]);
        let child = spawn(&db, &out, None);
        wait_for("WIDE being written", || being_written(&out, "WIDE.csv"));
        let said = stop(child, signal);
        if signal == "TERM" {
            assert!(
                said.contains("interrupted; nothing of this run was kept")
                    && said.contains("run the same command again"),
                "{said}"
            );
        }
        assert_one_complete_run(&out, &format!("SIG{signal} while reading"));
        assert_eq!(
            tiny(&out),
            format!("{}\n", value - 1),
            "SIG{signal}: the old run"
        );

        // Killed in the middle of moving its files in: the next look at
        // the directory finishes the move, and it holds the new run.
        let child = spawn(
            &db,
            &out,
            Some(("FBUNLOAD_TEST_PAUSE_IN_SWITCH_MS", "2000")),
        );
        wait_for("the switch", || out.join(fbunload::SWITCH_DIR).exists());
        std::thread::sleep(Duration::from_millis(300));
        stop(child, signal);
        // SIGTERM lets the switch end; kill -9 leaves it, which a check
        // names (changing nothing) and `check --finish` finishes.
        let cut_short = out.join(fbunload::SWITCH_DIR).exists();
        assert!(cut_short || signal == "TERM");
        if cut_short {
            let checked = fbunload_check(&out);
            assert_eq!(checked.status.code(), Some(1));
            let said = String::from_utf8_lossy(&checked.stdout);
            assert!(said.contains("check --finish"), "{said}");
            assert!(
                out.join(fbunload::SWITCH_DIR).exists(),
                "check changed nothing"
            );
        }
        let finished = Command::new(env!("CARGO_BIN_EXE_fbunload"))
            .args(["check", "--finish"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(finished.status.success(), "{}", stderr(&finished));
        assert_eq!(
            stderr(&finished).contains("that move is now finished"),
            cut_short,
            "{}",
            stderr(&finished)
        );
        assert_eq!(tiny(&out), format!("{value}\n"), "SIG{signal}: the new run");
        assert!(!out.join(fbunload::SWITCH_DIR).exists());
    }

    // And the next run proceeds.
    let last = spawn(&db, &out, None).wait_with_output().unwrap();
    assert!(last.status.success(), "{}", stderr(&last));
    assert_one_complete_run(&out, "the last run");
}

/// Killed in the last step of a switch (its plan removed, the old
/// `--split` directory it moved aside still being removed), a run left a
/// `.fbunload-switch` without a plan: `check` said all was well, and every
/// later run read the whole database, then failed ("Directory not
/// empty"). The switch's directory now goes under a dead run's name
/// before it is removed; what an earlier version left is removed too.
#[test]
fn a_run_killed_in_the_last_step_of_its_switch_blocks_no_later_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "last-step.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE PARTS (ID INTEGER)",
            "INSERT INTO PARTS VALUES (1)",
        ],
    );
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let args = ["-f", "parquet", "--split", "--overwrite", "-o", o];
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with('.'))
            .collect()
    };
    let first = fbunload(&db, &args);
    assert!(first.status.success(), "{}", stderr(&first));

    let mut command = fbunload_command(&db, &args);
    command
        .env("FBUNLOAD_TEST_PAUSE_AFTER_SWITCH_MS", "10000")
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    wait_for("the switch's last step", || {
        leftovers()
            .iter()
            .any(|name| name.starts_with(".fbunload-run-switched-"))
    });
    stop(child, "KILL");
    assert!(!out.join(fbunload::SWITCH_DIR).exists());
    let said = assert_one_complete_run(&out, "killed in the switch's last step");
    assert!(said.contains("not part of the run here"), "{said}");
    let next = fbunload(&db, &args);
    assert!(next.status.success(), "{}", stderr(&next));
    assert!(leftovers().is_empty(), "{:?}", leftovers());

    // What an earlier fbunload left when killed there: no plan, the old
    // parts set aside.
    let aside = out
        .join(fbunload::SWITCH_DIR)
        .join(".replaced.PARTS.parquet");
    std::fs::create_dir_all(&aside).unwrap();
    std::fs::write(aside.join("part-00000.parquet"), b"old").unwrap();
    let said = assert_one_complete_run(&out, "with an earlier version's remains");
    assert!(said.contains("what is left of a finished switch"), "{said}");
    let next = fbunload(&db, &args);
    assert!(next.status.success(), "{}", stderr(&next));
    assert!(leftovers().is_empty(), "{:?}", leftovers());
    assert_one_complete_run(&out, "the last run");
}
