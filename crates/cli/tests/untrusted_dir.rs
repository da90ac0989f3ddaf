//! The output directory is untrusted: anyone who can write into it may
//! plant or edit what fbunload reads back there (`.fbunload-switch` and its
//! plan, `manifest.json`, links in place of either). Nothing read back may
//! make a run or `fbunload check` act outside the directory, block the
//! next run, or make `check` change anything. Issue 37's attacks, each of
//! which worked before, and their siblings.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

const SWITCH: &str = ".fbunload-switch";

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `a/out/.fbunload-switch` holding a manifest and `plan`, with
/// `a/victim.txt` beside `a/out`; returns `a/out`.
fn planted(a: &Path, plan: &str) -> PathBuf {
    let out = a.join("out");
    let switch = out.join(SWITCH);
    fs::create_dir_all(&switch).unwrap();
    fs::write(switch.join("manifest.json"), r#"{"tables":[]}"#).unwrap();
    fs::write(switch.join(".switch.json"), plan).unwrap();
    fs::write(a.join("victim.txt"), "precious\n").unwrap();
    out
}

/// The issue's first attack, as it gave it: `check` removed the victim
/// outside the directory and said "0 files match", exit 0; a run removed
/// it before it even attached to the (missing) database. Both refuse the
/// plan now, and change nothing.
#[test]
fn a_planted_plan_removes_nothing_outside_the_directory() {
    let a = tempfile::tempdir().unwrap();
    let out = planted(a.path(), r#"{"moves":[],"removes":["../victim.txt"]}"#);
    let o = out.to_str().unwrap();
    let victim = a.path().join("victim.txt");

    let checked = fbunload_alone(&["check", o]);
    assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
    assert!(
        stdout(&checked).contains(".fbunload-switch: not what an fbunload run leaves")
            && stdout(&checked).contains("removes \"../victim.txt\""),
        "{}",
        stdout(&checked)
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");

    let finished = fbunload_alone(&["check", "--finish", o]);
    assert_eq!(finished.status.code(), Some(1));
    assert!(
        stderr(&finished).contains("not what an fbunload run leaves"),
        "{}",
        stderr(&finished)
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");

    let run = fbunload(Path::new("/nonexistent.fdb"), &["-o", o]);
    assert_eq!(run.status.code(), Some(1));
    let err = stderr(&run);
    assert!(
        err.contains(".fbunload-switch in it is not what an fbunload run leaves"),
        "{err}"
    );
    assert!(
        !err.contains("nonexistent"),
        "refused before attaching: {err}"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(
        out.join(SWITCH).join(".switch.json").exists(),
        "left as it was"
    );
}

/// `"moves":["../victimdir"]` with a planted `.replaced..` directory moved
/// a directory outside into the switch and emptied it; an absolute path
/// with a planted `.replaced./…` chain moved a directory elsewhere in.
#[test]
fn a_planted_plan_moves_nothing_in_or_out() {
    let a = tempfile::tempdir().unwrap();
    let victim_dir = a.path().join("victimdir");
    fs::create_dir(&victim_dir).unwrap();
    fs::write(victim_dir.join("precious.txt"), "precious\n").unwrap();
    let absolute = serde_json::to_string(victim_dir.to_str().unwrap()).unwrap();
    for plan in [
        r#"{"moves":["../victimdir"],"removes":[]}"#.to_string(),
        format!(r#"{{"moves":[{absolute}],"removes":[]}}"#),
    ] {
        let out = planted(a.path(), &plan);
        let switch = out.join(SWITCH);
        fs::create_dir_all(switch.join(".replaced..")).unwrap();
        let chain = switch
            .join(".replaced.")
            .join(victim_dir.parent().unwrap().strip_prefix("/").unwrap());
        fs::create_dir_all(chain).unwrap();
        fs::create_dir_all(out.join("victimdir")).unwrap();
        for args in [&["check"][..], &["check", "--finish"]] {
            let checked = fbunload_alone(&[args, &[out.to_str().unwrap()]].concat());
            assert_eq!(checked.status.code(), Some(1), "{plan} {args:?}");
            assert_eq!(
                fs::read_to_string(victim_dir.join("precious.txt")).unwrap(),
                "precious\n",
                "{plan} {args:?}"
            );
        }
        let run = fbunload(
            Path::new("/nonexistent.fdb"),
            &["-o", out.to_str().unwrap()],
        );
        assert!(
            stderr(&run).contains("not what an fbunload run leaves"),
            "{}",
            stderr(&run)
        );
        assert!(victim_dir.join("precious.txt").exists(), "{plan}");
        fs::remove_dir_all(&out).unwrap();
    }
}

/// A `.fbunload-switch` that no run left (a file, a link, a directory
/// without a plan) made every later run read the whole database and then
/// fail at its own switch; a plan that is a link to a FIFO made `check`
/// and every run wait for ever. Each is refused before the run attaches,
/// and `check` names it.
#[cfg(unix)]
#[test]
fn a_switch_no_run_left_is_refused_before_attaching_and_never_waited_on() {
    let a = tempfile::tempdir().unwrap();
    let out = a.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("manifest.json"), r#"{"tables":[]}"#).unwrap();
    let o = out.to_str().unwrap();
    let fifo = a.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let switch = out.join(SWITCH);
    let plants: [(&str, &dyn Fn()); 3] = [
        ("a file", &|| fs::write(&switch, b"").unwrap()),
        ("a link", &|| {
            std::os::unix::fs::symlink(a.path(), &switch).unwrap()
        }),
        ("a plan linked to a FIFO", &|| {
            fs::create_dir(&switch).unwrap();
            std::os::unix::fs::symlink(&fifo, switch.join(".switch.json")).unwrap();
        }),
    ];
    for (what, plant) in plants {
        plant();
        for args in [
            vec!["check", o],
            vec!["-d", "/nonexistent.fdb", "-u", "SYSDBA", "-p", "x", "-o", o],
        ] {
            let mut child = Command::new(env!("CARGO_BIN_EXE_fbunload"))
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            while child.try_wait().unwrap().is_none() {
                if Instant::now() > deadline {
                    child.kill().unwrap();
                    panic!("{what}: {args:?} still waits after 20 s");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let output = child.wait_with_output().unwrap();
            assert_eq!(output.status.code(), Some(1), "{what}: {args:?}");
            let said = format!("{}{}", stdout(&output), stderr(&output));
            assert!(
                said.contains("not what an fbunload run leaves") && !said.contains("nonexistent"),
                "{what}: {args:?}: {said}"
            );
        }
        if switch.is_dir() && !switch.is_symlink() {
            fs::remove_dir_all(&switch).unwrap();
        } else {
            fs::remove_file(&switch).unwrap();
        }
    }
}

/// `-o link` (a link to a directory) published the run into the
/// directory, then failed with "Not a directory", leaving
/// `.fbunload-switch` for `check` and every later run to fail on. The link
/// is resolved once, when the run starts.
#[cfg(unix)]
#[test]
fn an_output_directory_named_through_a_link_is_resolved_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let real = dir.path().join("real");
    fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let l = link.to_str().unwrap();
    for args in [&["-o", l][..], &["--overwrite", "-o", l]] {
        let run = fbunload(&db, args);
        assert!(run.status.success(), "{args:?}: {}", stderr(&run));
        assert_eq!(fs::read(real.join("TINY.csv")).unwrap(), b"ID\n1\n");
        assert!(!real.join(SWITCH).exists());
        let checked = fbunload_check(&link);
        assert!(
            checked.status.success(),
            "{}{}",
            stdout(&checked),
            stderr(&checked)
        );
    }
    assert!(link.is_symlink(), "the link stays a link");
}

/// A check left a leftover staging directory unmentioned while the README
/// called it a difference. It is named in a note; the run in place is
/// whole, so the check still passes.
#[test]
fn check_names_a_staging_directory_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let out = dir.path().join("out");
    let run = fbunload(&db, &["-o", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    let dead = out.join(".fbunload-run-Ab12Cd");
    fs::create_dir(&dead).unwrap();
    fs::write(dead.join("TINY.csv"), b"half").unwrap();
    let checked = fbunload_check(&out);
    assert!(checked.status.success(), "{}", stdout(&checked));
    assert!(
        stderr(&checked).contains(
            ".fbunload-run-Ab12Cd: not part of the run here: the staging directory left by a run \
             that was killed"
        ),
        "{}",
        stderr(&checked)
    );
    assert!(dead.exists(), "check changes nothing");
}
