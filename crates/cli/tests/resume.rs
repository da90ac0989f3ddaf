//! `--resumable` and `--resume`: a run killed (`kill -9`) half way and
//! resumed gives one snapshot, the resume's: while writers move money
//! between accounts (the SUM never changes), open accounts and close
//! them, the resumed files equal, byte for byte, a fresh unload of the
//! same data, whatever `-j` the resume runs with. What the killed run left
//! is read back as a stranger's.

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;

const ACCOUNTS: i64 = 120_000;
/// The writers' accounts, in the table's first units ([`bank::write_until`]).
const BUSY: i64 = ACCOUNTS / 10;

fn area(out: &Path) -> PathBuf {
    out.join(".fbunload-resume")
}

fn journal_lines(out: &Path) -> usize {
    std::fs::read_to_string(area(out).join("journal.jsonl"))
        .map(|j| j.lines().count())
        .unwrap_or(0)
}

fn planned_units(out: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(area(out).join("start.json")).ok()?;
    serde_json::from_str::<serde_json::Value>(&text).ok()?["units"].as_u64()
}

/// Starts a `--resumable` run into `out` and kills it (SIGKILL) once
/// `share` of its units are journaled; with `runtime`, in that engine.
fn kill_at(db: &Path, out: &Path, args: &[&str], share: f64, runtime: Option<&Path>) {
    let mut command = fbunload_command(db, &[&["--resumable", "-o", path(out)], args].concat());
    if let Some(runtime) = runtime {
        command.env("FIREBIRD", runtime);
    }
    kill_once_journaled(command, share, || {
        Some((journal_lines(out) as u64, planned_units(out)?))
    });
    assert!(!out.join("manifest.json").exists());
}

/// The kill helper reads a run's standard error while the run goes: a run
/// that writes more than a pipe holds and ends is told as ended at once,
/// not left blocked on its write until the helper gives up.
#[test]
#[should_panic(expected = "the run ended (exit status: 3) before it could be killed: xxxx")]
fn a_run_that_fills_its_stderr_pipe_and_ends_is_told_as_ended() {
    let mut run = Command::new("sh");
    run.args(["-c", "head -c 200000 /dev/zero | tr '\\0' x >&2; exit 3"]);
    kill_once_journaled(run, 0.5, || None);
}

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

fn run_alone(db: &Path, args: &[&str]) {
    let out = alone(db, args);
    assert!(out.status.success(), "fbunload {args:?}: {}", stderr(&out));
}

fn run_ok(db: &Path, args: &[&str]) {
    let out = fbunload(db, args);
    assert!(out.status.success(), "fbunload {args:?}: {}", stderr(&out));
}

/// The decoded columns of a Parquet file, batch by batch (the file's
/// metadata names its snapshot, which differs between two runs).
fn parquet_columns(file: &Path) -> Vec<Vec<arrow_array::ArrayRef>> {
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(file).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    reader.map(|b| b.unwrap().columns().to_vec()).collect()
}

fn sum_of_balances_csv(file: &Path) -> i64 {
    csv_records(file)
        .iter()
        .map(|r| r[1].parse::<i64>().unwrap())
        .sum()
}

fn resumed(out: &Path) -> serde_json::Value {
    // Snapshot numbers count from 1 in each lifetime of the engine.
    let manifest = read_manifest(out);
    assert!(
        manifest["resumed"]["first_snapshot_number"]
            .as_u64()
            .is_some()
            && manifest["resumed"]["first_transaction"].as_u64().unwrap() > 0,
        "{manifest}"
    );
    manifest["resumed"].clone()
}

/// The test: writers at work, the run killed at about half its
/// units, more writes, then resumed with -j1 and with -j4 from copies of
/// the killed directory, and a fresh unload once the writers stopped.
#[test]
fn a_killed_run_resumed_is_one_snapshot_the_same_for_any_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank::bank(dir.path(), "bank.fdb", ACCOUNTS, false);
    for format in ["csv", "parquet"] {
        let killed = dir.path().join(format!("killed-{format}"));
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for seed in 0..2 {
                let (db, stop) = (&db, &stop);
                scope.spawn(move || bank::write_until(db, stop, seed, BUSY, false));
            }
            // The writers stop also when this thread panics: else the
            // scope would wait for them for ever instead of failing.
            let _stop_writers = bank::StopOnDrop(&stop);
            kill_at(
                &db,
                &killed,
                &["-f", format, "--unit-pages", "8", "-j", "2"],
                0.5,
                None,
            );
            // Changes after the kill, into units it finished too.
            std::thread::sleep(Duration::from_millis(1500));
            stop.store(true, Ordering::SeqCst);
        });
        // Without --resume the directory is refused, and left as it was.
        let refused = fbunload(&db, &["-f", format, "-o", path(&killed)]);
        refused_in_one_line(&refused, "--resume");
        assert!(
            stderr(&refused).contains("--overwrite"),
            "{}",
            stderr(&refused)
        );
        assert!(area(&killed).join("start.json").exists());

        let (one, four) = (
            dir.path().join(format!("one-{format}")),
            dir.path().join(format!("four-{format}")),
        );
        copy_dir(&killed, &one);
        copy_dir(&killed, &four);
        run_ok(
            &db,
            &["--resume", "-f", format, "-j", "1", "-o", path(&one)],
        );
        run_ok(
            &db,
            &["--resume", "-f", format, "-j", "4", "-o", path(&four)],
        );
        let fresh = dir.path().join(format!("fresh-{format}"));
        run_ok(&db, &["-f", format, "-o", path(&fresh)]);
        for out in [&one, &four] {
            assert!(!area(out).exists(), "the area stays after the run");
            let resumed = resumed(out);
            assert!(resumed["units_kept"].as_u64().unwrap() > 0, "{resumed}");
            assert!(
                resumed["units_read_again"].as_u64().unwrap() > 0,
                "{resumed}"
            );
        }
        let rows = count(&db, "ACCOUNTS") as u64;
        for table in ["ACCOUNTS", "HISTORY"] {
            let file = format!("{table}.{format}");
            let entry = manifest_entry(&read_manifest(&one), table).clone();
            if format == "csv" {
                let bytes = |out: &Path| std::fs::read(out.join(&file)).unwrap();
                assert!(
                    bytes(&one) == bytes(&fresh),
                    "{file}: -j1 resume and fresh differ"
                );
                assert!(
                    bytes(&four) == bytes(&fresh),
                    "{file}: -j4 resume and fresh differ"
                );
            } else {
                let columns = |out: &Path| parquet_columns(&out.join(&file));
                assert!(
                    columns(&one) == columns(&fresh),
                    "{file}: -j1 resume and fresh differ"
                );
                assert!(
                    columns(&four) == columns(&fresh),
                    "{file}: -j4 resume and fresh differ"
                );
            }
            if table == "ACCOUNTS" {
                assert_eq!(entry["rows"].as_u64().unwrap(), rows);
            }
        }
        if format == "csv" {
            assert_eq!(
                sum_of_balances_csv(&one.join("ACCOUNTS.csv")),
                ACCOUNTS * bank::OPENING
            );
        }
    }
}

/// A killed run's directory, for the hostile tests to copy and spoil.
/// Its runs are each the only process of their engine (the embedded
/// default, SuperServer), as a run on a machine of its own: the kill ends
/// the engine too, and what it had not written down is gone.
fn killed_run(dir: &Path) -> (PathBuf, PathBuf) {
    let db = bank::bank(dir, "bank.fdb", ACCOUNTS, false);
    let killed = dir.join("killed");
    kill_at(
        &db,
        &killed,
        &["--unit-pages", "8", "-j", "1"],
        0.3,
        Some(&embedded_runtime()),
    );
    (db, killed)
}

/// fbunload alone in its engine ([`killed_run`]).
fn alone(db: &Path, args: &[&str]) -> std::process::Output {
    let runtime = embedded_runtime();
    fbunload_with_env(db, args, Some(("FIREBIRD", runtime.to_str().unwrap())))
}

fn journal(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(area(out).join("journal.jsonl"))
        .unwrap()
        .lines()
        // A line the kill cut short is no entry.
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn write_journal(out: &Path, lines: &[serde_json::Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(area(out).join("journal.jsonl"), text).unwrap();
}

#[test]
fn what_a_killed_run_left_is_read_as_a_strangers() {
    let dir = tempfile::tempdir().unwrap();
    let (db, killed) = killed_run(dir.path());
    let fresh = dir.path().join("fresh");
    run_alone(&db, &["-o", path(&fresh)]);
    let same_as_fresh = |out: &Path| {
        for file in ["ACCOUNTS.csv", "HISTORY.csv"] {
            assert!(
                std::fs::read(out.join(file)).unwrap() == std::fs::read(fresh.join(file)).unwrap(),
                "{file} differs from a fresh unload"
            );
        }
    };
    let case = |name: &str| {
        let out = dir.path().join(name);
        copy_dir(&killed, &out);
        out
    };
    let first_file = |out: &Path| area(out).join(journal(out)[0]["file"].as_str().unwrap());

    // Nothing changed: every unit is taken from the journal.
    let kept = case("kept");
    run_alone(&db, &["--resume", "-o", path(&kept)]);
    same_as_fresh(&kept);
    let journaled = journal(&killed).len() as u64;
    assert_eq!(resumed(&kept)["units_kept"], journaled);
    assert_eq!(resumed(&kept)["units_read_again"], 0);

    // A unit file truncated, one with a byte changed, one replaced by a
    // link to a copy outside: each read again.
    for spoil in ["truncated", "changed", "link"] {
        let out = case(spoil);
        let file = first_file(&out);
        match spoil {
            "truncated" => {
                let len = std::fs::metadata(&file).unwrap().len();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&file)
                    .unwrap()
                    .set_len(len / 2)
                    .unwrap();
            }
            "changed" => {
                let mut bytes = std::fs::read(&file).unwrap();
                let middle = bytes.len() / 2;
                bytes[middle] ^= 1;
                std::fs::write(&file, bytes).unwrap();
            }
            _ => {
                let outside = dir.path().join("outside.arrow");
                std::fs::copy(&file, &outside).unwrap();
                std::fs::remove_file(&file).unwrap();
                std::os::unix::fs::symlink(&outside, &file).unwrap();
            }
        }
        run_alone(&db, &["--resume", "-o", path(&out)]);
        same_as_fresh(&out);
        assert_eq!(resumed(&out)["units_read_again"], 1, "{spoil}");
    }

    // A journal that names a file outside the area: refused, untouched.
    for hostile in ["../../victim.arrow", "/etc/passwd", "u1.arrow/../../x"] {
        let out = case("outside");
        let mut lines = journal(&out);
        lines[0]["file"] = hostile.into();
        write_journal(&out, &lines);
        let refused = alone(&db, &["--resume", "-o", path(&out)]);
        refused_in_one_line(&refused, "journal.jsonl line 1");
        assert!(!out.join("ACCOUNTS.csv").exists());
        std::fs::remove_dir_all(&out).unwrap();
    }

    // The area a link: refused.
    let linked = case("linked");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::rename(area(&linked), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, area(&linked)).unwrap();
    let refused = alone(&db, &["--resume", "-o", path(&linked)]);
    refused_in_one_line(&refused, "not a directory fbunload made");

    // Other options than the killed run's: refused, naming the option.
    let other = case("other");
    let refused = alone(&db, &["--resume", "-f", "jsonl", "-o", path(&other)]);
    refused_in_one_line(&refused, "--format");
    let refused = alone(&db, &["--resume", "-t", "ACCOUNTS", "-o", path(&other)]);
    refused_in_one_line(&refused, "--tables");

    // Nothing to resume; and --overwrite starts again from zero.
    let refused = alone(&db, &["--resume", "-o", path(&fresh)]);
    refused_in_one_line(&refused, "holds no stopped --resumable run");
    run_alone(&db, &["--overwrite", "-o", path(&other)]);
    assert!(!area(&other).exists());
    same_as_fresh(&other);
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Stopped by a signal (SIGTERM, as Ctrl-C), a resumable run says that
/// what it finished is kept for `--resume`, not that nothing was kept, and
/// the resume then finishes the run.
#[test]
fn a_resumable_run_stopped_by_a_signal_says_what_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = bank::bank(dir.path(), "bank.fdb", ACCOUNTS, false);
    let out = dir.path().join("stopped");
    let options = ["--unit-pages", "8", "-j", "1"];
    let child = fbunload_command(
        &db,
        &[&["--resumable", "-o", path(&out)], &options[..]].concat(),
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let started = Instant::now();
    while journal_lines(&out) == 0 {
        assert!(started.elapsed() < Duration::from_secs(300), "no progress");
        std::thread::sleep(Duration::from_millis(1));
    }
    let signalled = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    let stopped = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&stopped.stderr);
    if stopped.status.code() == Some(0) {
        // It finished before the signal came: nothing to say of a stop.
        return;
    }
    assert_eq!(stopped.status.code(), Some(130), "{said}");
    assert!(
        said.contains("are kept in") && said.contains("--resume"),
        "the stop must say what it kept: {said}"
    );
    assert!(!said.contains("nothing of this run was kept"), "{said}");
    assert!(area(&out).join("journal.jsonl").exists());
    let mut resume = vec!["--resume", "-o", path(&out)];
    resume.extend(options);
    run_ok(&db, &resume);
    assert!(out.join("manifest.json").exists());
    assert!(!area(&out).exists(), "the area stays after the resume");
}
