//! End to end: the fbunload binary against real databases on the embedded
//! Firebird 5 engine.

mod common;

use std::path::Path;

use common::*;

/// A table spread over several pointer pages (4 KiB pages), plus small ones.
fn multi_page_db(dir: &Path) -> std::path::PathBuf {
    let db = create_db(dir, "multi.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE BIG (ID INTEGER NOT NULL, A VARCHAR(40), B BIGINT, C DOUBLE PRECISION)",
            "CREATE TABLE MID (ID INTEGER NOT NULL, A VARCHAR(40), B BIGINT, C DOUBLE PRECISION)",
            "CREATE TABLE SMALL (K SMALLINT, V VARCHAR(10))",
            "CREATE TABLE \"lower case\" (\"x y\" INTEGER)",
            "CREATE TABLE \"My \"\"odd\"\" table\" (\"it's\" VARCHAR(5))",
            // Values vary row to row so records do not compress away.
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN \
               WHILE (I < 120000) DO BEGIN \
                 INSERT INTO BIG VALUES (:I, 'r' || (:I * 7919) || '-' || (:I * 104729), \
                   :I * 1000003, :I / 7.0); \
                 I = I + 1; END END",
            "INSERT INTO MID SELECT FIRST 45000 * FROM BIG",
            "INSERT INTO SMALL VALUES (1, 'one')",
            "INSERT INTO SMALL VALUES (2, NULL)",
            "INSERT INTO \"lower case\" VALUES (42)",
            "INSERT INTO \"My \"\"odd\"\" table\" VALUES ('odd')",
        ],
    );
    db
}

#[test]
fn output_is_complete_and_byte_identical_for_any_parallelism() {
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());

    let plan = fbunload(&db, &["--plan"]);
    assert!(plan.status.success(), "{}", stderr(&plan));
    let plan_text = String::from_utf8_lossy(&plan.stdout);
    let pointer_pages = |table: &str| -> u32 {
        plan_text
            .lines()
            .find(|l| l.starts_with(&format!("{table} ")))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {table} line in plan:\n{plan_text}"))
    };
    assert!(
        pointer_pages("BIG") >= 3,
        "BIG spans many pointer pages:\n{plan_text}"
    );
    assert_eq!(pointer_pages("MID"), 2, "MID spans two:\n{plan_text}");
    assert_eq!(pointer_pages("SMALL"), 1, "{plan_text}");

    // Alternation, as in FBCSVExport's --table-filter, with a wildcard.
    let plan = fbunload(
        &db,
        &["--plan", "--tables", "B_G|SMALL", "--exclude", "NONE%"],
    );
    let listed = String::from_utf8_lossy(&plan.stdout);
    assert!(
        listed.contains("BIG ") && listed.contains("SMALL ") && !listed.contains("MID "),
        "{listed}"
    );

    let mut outputs = Vec::new();
    for (label, args) in [
        (
            "serial, whole tables",
            vec!["-j", "1", "--unit-pages", "1000000"],
        ),
        ("serial, automatic units", vec!["-j", "1"]),
        ("2 workers", vec!["-j", "2", "--verify"]),
        (
            "2 workers, one page per unit",
            vec!["-j", "2", "--unit-pages", "1"],
        ),
        (
            "3 workers, 100 pages, tiny memory",
            vec!["-j", "3", "--unit-pages", "100", "--memory", "0"],
        ),
        (
            "2 workers, a pointer page per unit",
            vec!["-j", "2", "--unit-pages", "808"],
        ),
    ] {
        let out_dir = dir.path().join(label.replace([' ', ','], "_"));
        let mut full = args.clone();
        let out_str = out_dir.to_string_lossy().into_owned();
        full.extend(["--header", "-o", &out_str]);
        let out = fbunload(&db, &full);
        assert!(out.status.success(), "{label}: {}", stderr(&out));
        for table in ["BIG", "MID", "SMALL", "lower case", "My \"odd\" table"] {
            let records = csv_records(&out_dir.join(format!("{table}.csv")));
            assert_eq!(
                records.len() as i64,
                count(&db, table),
                "{label}, {table}: rows vs COUNT(*)"
            );
        }
        outputs.push((label, files(&out_dir)));
    }
    let (first_label, first) = &outputs[0];
    let names: Vec<_> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "BIG.csv",
            "MID.csv",
            "My \"odd\" table.csv",
            "SMALL.csv",
            "lower case.csv",
            "schema.sql"
        ]
    );
    for (label, files) in &outputs[1..] {
        assert!(files == first, "{label} differs from {first_label}");
    }

    let out_dir = dir.path().join("2_workers");
    let ids: std::collections::BTreeSet<i64> = csv_records(&out_dir.join("BIG.csv"))
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 120000, "every BIG row exactly once");
}

#[test]
fn compressed_files_and_standard_output_carry_the_same_bytes() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());
    let plain = dir.path().join("plain");
    let out = fbunload(&db, &["-j", "2", "-o", plain.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = std::fs::read(plain.join("BIG.csv")).unwrap();

    let decompress = |compress: &str, bytes: &[u8]| {
        let mut back = Vec::new();
        match compress {
            "gzip" => flate2::read::GzDecoder::new(bytes)
                .read_to_end(&mut back)
                .unwrap(),
            _ => zstd::Decoder::new(bytes)
                .unwrap()
                .read_to_end(&mut back)
                .unwrap(),
        };
        back
    };
    for (compress, extension) in [("gzip", "gz"), ("zstd", "zst")] {
        let target = dir.path().join(compress);
        let out = fbunload(
            &db,
            &[
                "-j",
                "2",
                "--compress",
                compress,
                "-o",
                target.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let file = std::fs::read(target.join(format!("BIG.csv.{extension}"))).unwrap();
        assert!(
            decompress(compress, &file) == expected,
            "{compress}: decompressed bytes differ"
        );
        assert!(
            files(&target)
                .iter()
                .all(|(n, _)| n.ends_with(extension) || n == "schema.sql"),
            "only final files"
        );

        let out = fbunload(
            &db,
            &[
                "-j",
                "2",
                "--tables",
                "BIG",
                "--compress",
                compress,
                "-o",
                "-",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            decompress(compress, &out.stdout) == expected,
            "{compress}: standard output differs from BIG.csv"
        );
    }

    // Streamed unit by unit; with no memory for waiting units they spill
    // to disk first.
    for memory in ["256", "0"] {
        let out = fbunload(
            &db,
            &[
                "-j",
                "3",
                "--unit-pages",
                "16",
                "--memory",
                memory,
                "--tables",
                "BIG",
                "-o",
                "-",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            out.stdout == expected,
            "--memory {memory}: standard output differs from BIG.csv"
        );
    }
    let out = fbunload(&db, &["--tables", "B%|SMALL", "-o", "-"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("one table"), "{}", stderr(&out));
}

/// `fbunload -o - | head -1` stops quietly once head has gone, as `cat`
/// does: no message, exit status 141 (128 + SIGPIPE), no worker left
/// waiting, no spilled units left behind.
#[test]
fn a_closed_pipe_on_standard_output_stops_the_run_quietly() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());
    for format in ["csv", "jsonl", "parquet"] {
        // Small units, few bytes of memory: units wait their turn on disk.
        let spill = dir.path().join(format!("tmp-{format}"));
        std::fs::create_dir(&spill).unwrap();
        let mut unload = Command::new(env!("CARGO_BIN_EXE_fbunload"))
            .arg("-d")
            .arg(&db)
            .args(["-u", "SYSDBA", "-p", "masterkey", "-t", "BIG", "-f", format])
            .args(["-j", "3", "--unit-pages", "8", "--memory", "0", "-o", "-"])
            .env("TMPDIR", &spill)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let head = Command::new("head")
            .arg("-1")
            .stdin(Stdio::from(unload.stdout.take().unwrap()))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let first_line = head.wait_with_output().unwrap().stdout;
        assert_eq!(
            first_line.iter().filter(|&&b| b == b'\n').count(),
            1,
            "{format}: head read one line"
        );
        let deadline = Instant::now() + Duration::from_secs(60);
        while unload.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = unload.kill();
                panic!("{format}: fbunload still runs a minute after its reader left");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = unload.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(141), "{format}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{format}: nothing to say");
        assert_eq!(
            std::fs::read_dir(&spill).unwrap().count(),
            0,
            "{format}: spilled units removed"
        );
    }

    // --plan is small: a pipe closed before it is written.
    let mut plan = Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .arg("-d")
        .arg(&db)
        .args(["-u", "SYSDBA", "-p", "masterkey", "--plan"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(plan.stdout.take());
    let out = plan.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_table_failing_mid_way_leaves_no_file_under_any_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "bad.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE LEGACY (ID INTEGER, T VARCHAR(60) CHARACTER SET NONE)",
            "CREATE TABLE FINE (ID INTEGER)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 60000) DO BEGIN \
               INSERT INTO LEGACY VALUES (:I, 'row ' || (:I * 7919) || ' of plain ascii text'); \
               I = I + 1; END END",
            // Not UTF-8: the last row of the table.
            "INSERT INTO LEGACY VALUES (-1, x'636166E9')",
            "INSERT INTO FINE VALUES (1)",
        ],
    );
    let out_dir = dir.path().join("out");
    let out = fbunload(&db, &["-j", "2", "-o", out_dir.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("table LEGACY") && err.contains("column T"),
        "{err}"
    );
    assert!(
        err.contains("--charset"),
        "the message says what to do: {err}"
    );
    let left: Vec<String> = files(&out_dir).into_iter().map(|(n, _)| n).collect();
    assert!(
        left.iter().all(|n| n == "FINE.csv"),
        "only complete tables may be left: {left:?}"
    );

    // With the right character set the same table unloads; the failed
    // run's complete tables (no manifest) are replaced with --overwrite.
    let out = fbunload(
        &db,
        &[
            "--charset",
            "WIN1252",
            "--overwrite",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(out_dir.join("LEGACY.csv")).unwrap();
    assert!(text.contains("-1,café\n"), "WIN1252 bytes decoded");
}

/// The embedded engine refuses a file another engine instance holds; the
/// message says how to get in, not to check the path.
#[test]
fn a_database_another_process_holds_says_to_connect_through_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "held.fdb", 8192);
    execute(&db, &["CREATE TABLE T (I INTEGER)"]);
    // This test process holds it with its own embedded engine.
    let held = connect(&db);
    let out = fbunload(&db, &["--plan"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "this database is in use by a Firebird server (or another process): connect \
             through it, e.g. -d localhost:{}",
            db.display()
        )),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    drop(held);
    let out = fbunload(&db, &["--plan"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn bad_input_gives_one_clear_line_and_a_failure_code() {
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());
    let out_dir = dir.path().join("out");
    let out_arg = out_dir.to_str().unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, b"").unwrap();
    let under_file = not_a_dir.join("sub");

    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "bad pattern",
            vec!["--tables", "BIG(", "-o", out_arg],
            "not a valid SIMILAR TO pattern",
        ),
        (
            "no match",
            vec!["--tables", "\"big\"", "-o", out_arg],
            "big is not the name of a table (a quoted name is exact: did you mean BIG? \
             --tables BIG)",
        ),
        (
            "output under a file",
            vec!["-o", under_file.to_str().unwrap()],
            "output directory",
        ),
        (
            "unknown charset",
            vec!["--charset", "KLINGON", "-o", out_arg],
            "--charset KLINGON: not a character set fbunload can decode",
        ),
        // Without -o the files went into the current directory, unasked.
        ("no -o", vec!["-t", "BIG"], "say where the files go: -o DIR"),
    ];
    for (label, args, expected) in cases {
        let out = fbunload_in(&db, &args, dir.path());
        let err = stderr(&out);
        assert!(!out.status.success(), "{label}: should fail");
        assert!(err.contains(expected), "{label}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{label}: one line: {err}");
        assert!(
            !err.contains("masterkey"),
            "{label}: password leaked: {err}"
        );
    }
    assert!(!out_dir.exists(), "a failed run left the directory it made");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| !name.to_string_lossy().starts_with("multi") && name != "file")
        .collect();
    assert!(
        left.is_empty(),
        "files written into the current directory: {left:?}"
    );

    let missing = dir.path().join("missing.fdb");
    let new_dir = dir.path().join("made-by-the-run");
    let out = fbunload(&missing, &["-o", new_dir.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("missing.fdb") && err.contains("check the path"),
        "{err}"
    );
    assert!(!new_dir.exists(), "a failed run left the directory it made");

    let garbage = dir.path().join("garbage.fdb");
    std::fs::write(&garbage, vec![0x5a; 64 * 1024]).unwrap();
    let out = fbunload(&garbage, &["-o", out_arg]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("garbage.fdb") && err.contains("not a valid database"),
        "{err}"
    );

    let bad_dsn = Path::new("inet://[no-such-host/x.fdb");
    let out = fbunload(bad_dsn, &["-o", out_arg]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot attach to inet://[no-such-host/x.fdb"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");

    for (unreachable, named) in [
        ("inet://127.0.0.1:9/nothing.fdb", "127.0.0.1"),
        ("no-such-host.invalid:/nothing.fdb", "Failed to locate host"),
    ] {
        let out = fbunload(Path::new(unreachable), &["-o", out_arg]);
        let err = stderr(&out);
        assert!(!out.status.success());
        assert!(
            err.contains("cannot be reached") && err.contains(named),
            "{err}"
        );
        assert!(err.contains("check the host"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!err.contains("masterkey"), "password leaked: {err}");
    }

    if let Some(read_only) = ReadOnlyDir::new(dir.path()) {
        let out = fbunload(&db, &["-o", read_only.path.to_str().unwrap()]);
        let err = stderr(&out);
        assert!(!out.status.success());
        assert!(
            err.contains("output directory") && err.contains("cannot write in it"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }

    let out = fbunload(&db, &["--parallel", "0"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--parallel"), "{}", stderr(&out));
    // Near u64::MAX the watch's arithmetic overflowed: its thread
    // panicked and the run went on without it, exit 0 (issue 37).
    for seconds in ["18446744073709551615", "31622401"] {
        let out = fbunload(&db, &["--stall-timeout", seconds, "-o", out_arg]);
        let err = stderr(&out);
        assert!(!out.status.success(), "--stall-timeout {seconds}: {err}");
        assert!(
            err.contains("--stall-timeout") && err.contains("longer than a year"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(
        !out_dir.exists() || files(&out_dir).is_empty(),
        "failed runs write nothing"
    );
}

/// A directory nobody may write in: a read-only tmpfs when the tests run as
/// root (who ignores permission bits), mode 555 otherwise.
struct ReadOnlyDir {
    path: std::path::PathBuf,
    mounted: bool,
}

impl ReadOnlyDir {
    fn new(parent: &Path) -> Option<Self> {
        let path = parent.join("read-only");
        std::fs::create_dir(&path).unwrap();
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
        if !root {
            #[cfg(unix)]
            {
                let mode = std::os::unix::fs::PermissionsExt::from_mode(0o555);
                std::fs::set_permissions(&path, mode).unwrap();
                return Some(ReadOnlyDir {
                    path,
                    mounted: false,
                });
            }
            #[cfg(not(unix))]
            {
                eprintln!("skipped the read-only directory case: no Unix permission bits here");
                return None;
            }
        }
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("skipped the read-only directory case: root, and mount was refused");
            return None;
        }
        Some(ReadOnlyDir { path, mounted })
    }
}

impl Drop for ReadOnlyDir {
    fn drop(&mut self) {
        if self.mounted {
            let _ = std::process::Command::new("umount")
                .arg(&self.path)
                .status();
        }
    }
}

#[test]
fn columns_and_where_keep_the_units_parallel_and_the_output_identical() {
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());
    let chosen = [
        "--where",
        "BIG: MOD(ID, 7) = 3 -- a note",
        "--columns",
        "BIG:c,ID",
    ];
    let mut outputs = Vec::new();
    for args in [
        vec!["-j", "1", "--unit-pages", "1000000"],
        vec!["-j", "3", "--unit-pages", "5", "--verify"],
    ] {
        let out_dir = dir.path().join(format!("chosen-{}", outputs.len()));
        let mut full = vec!["-t", "BIG|MID", "--header", "-o", out_dir.to_str().unwrap()];
        full.extend(chosen);
        full.extend(["--where", "MID:ID < 10", "--columns", "MID:ID"]);
        full.extend(args);
        let out = fbunload(&db, &full);
        assert!(out.status.success(), "{}", stderr(&out));
        outputs.push(files(&out_dir));
    }
    assert!(
        outputs[0] == outputs[1],
        "--where must not depend on the units"
    );
    let big = csv_lines(&dir.path().join("chosen-0/BIG.csv"));
    assert_eq!(big[0], ["C", "ID"]);
    let ids: Vec<i64> = big[1..].iter().map(|r| r[1].parse().unwrap()).collect();
    let expected: Vec<i64> = (0..120_000).filter(|i| i % 7 == 3).collect();
    assert_eq!(ids, expected, "every chosen row once, in DB_KEY order");
    let mid = csv_lines(&dir.path().join("chosen-0/MID.csv"));
    assert_eq!(mid.len(), 11, "header and rows with ID < 10: {mid:?}");
    assert!(mid.iter().all(|r| r.len() == 1));

    let plan = fbunload(&db, &["--plan", "-t", "BIG", "--where", "ID < 5"]);
    assert!(
        String::from_utf8_lossy(&plan.stdout).contains("BIG: only rows where ID < 5"),
        "{}",
        String::from_utf8_lossy(&plan.stdout)
    );
}

#[test]
fn a_bad_choice_names_the_option_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());
    let out_dir = dir.path().join("never");
    for (args, expected) in [
        // Escaping its parentheses would make every unit read every row.
        (
            vec!["-t", "BIG", "--where", "ID < 0) OR (1=1"],
            "--where 'ID < 0) OR (1=1': a ) closes more than the condition opened",
        ),
        (
            vec!["-t", "BIG", "--where", "NOPE = 1"],
            "--where for table BIG: \"NOPE = 1\" is not a condition Firebird accepts: Dynamic \
             SQL Error; SQL error code = -206; Column unknown; NOPE; At line 1, column 1",
        ),
        // Cut short: Firebird meets the query around it, which is not shown.
        (
            vec!["-t", "BIG", "--where", "ID <"],
            "--where for table BIG: \"ID <\" is not a condition Firebird accepts: it ends \
             before it is complete",
        ),
        (
            vec!["-t", "BIG", "--columns", "ID,NOPE"],
            "--columns: table BIG has no column NOPE; its columns are ID, A, B, C",
        ),
        (
            vec!["-t", "BIG|MID", "--columns", "ID"],
            "--columns without a table name needs exactly one table, and 2 are selected",
        ),
    ] {
        let mut full = args.clone();
        full.extend(["-o", out_dir.to_str().unwrap()]);
        let out = fbunload(&db, &full);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
        let written = std::fs::read_dir(&out_dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| !e.file_name().to_string_lossy().starts_with(".fbunload"))
                    .count()
            })
            .unwrap_or(0);
        assert_eq!(written, 0, "{args:?}: no table file");
    }
}

#[test]
fn an_empty_database_is_an_error_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "empty.fdb", 8192);
    execute(&db, &["CREATE VIEW V AS SELECT 1 AS X FROM RDB$DATABASE"]);
    let out_dir = dir.path().join("out");
    let out = fbunload(&db, &["-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("the database has no user tables") && err.contains("nothing to unload"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let written = std::fs::read_dir(&out_dir)
        .map(|d| d.filter_map(Result::ok).count())
        .unwrap_or(0);
    assert_eq!(written, 0, "nothing in the output directory");
}

#[test]
fn progress_json_is_one_event_per_line_and_the_summary_last() {
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());
    let out_dir = dir.path().join("json");
    let out = fbunload(
        &db,
        &[
            "-j",
            "2",
            "--unit-pages",
            "50",
            "--progress",
            "json",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<serde_json::Value> = stderr(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kind = |e: &serde_json::Value| e["event"].as_str().unwrap().to_string();
    assert_eq!(kind(&events[0]), "started");
    let units = events[0]["units"].as_u64().unwrap();
    // 120,000 + 45,000 + 3 rows, estimated (docs/command-line.md).
    let estimated = events[0]["estimated_rows"].as_u64().unwrap();
    assert!((150_000..=180_000).contains(&estimated), "{}", events[0]);
    let unit_events: Vec<_> = events.iter().filter(|e| kind(e) == "unit").collect();
    assert_eq!(unit_events.len() as u64, units);
    assert_eq!(
        unit_events.last().unwrap()["units_done"].as_u64(),
        Some(units)
    );
    let tables = events.iter().filter(|e| kind(e) == "table").count();
    assert_eq!(tables, 5);
    let summary = events.last().unwrap();
    assert_eq!(kind(summary), "summary");
    let big = summary["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "BIG")
        .unwrap();
    assert_eq!(big["rows"].as_i64(), Some(count(&db, "BIG")));
    let unit_rows: u64 = unit_events
        .iter()
        .map(|e| e["rows"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(unit_rows), summary["rows"].as_u64());
    // Every event's seconds are on one clock: the summary's is the last.
    let seconds: Vec<f64> = events
        .iter()
        .map(|e| e["seconds"].as_f64().unwrap())
        .collect();
    assert!(seconds.windows(2).all(|w| w[0] <= w[1]), "{seconds:?}");
}

/// `--plan --progress json`: the plan as one JSON object on stdout.
#[test]
fn plan_with_progress_json_is_one_json_object() {
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());
    let out = fbunload(
        &db,
        &[
            "--plan",
            "--progress",
            "json",
            "-j",
            "2",
            "--unit-pages",
            "8",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(plan["event"], "plan");
    let tables = plan["tables"].as_array().unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["BIG", "MID", "My \"odd\" table", "SMALL", "lower case"]
    );
    let big = &tables[0];
    assert!(big["pointer_pages"].as_u64().unwrap() > 1, "{big}");
    assert_eq!(big["columns"][0], "ID");
    let units: u64 = tables.iter().map(|t| t["units"].as_u64().unwrap()).sum();
    assert_eq!(plan["units"].as_u64(), Some(units));
    assert!(big["units"].as_u64().unwrap() > 1, "{big}");
}

/// A failed run under `--progress json` ends with an error event, not a
/// line of plain text, and keeps its exit status: a table that is not
/// there, a bad condition, an output directory that cannot be made.
#[test]
fn progress_json_ends_a_failed_run_with_an_error_event() {
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());
    let out_dir = dir.path().join("out");
    let blocked = dir.path().join("a-file");
    std::fs::write(&blocked, b"").unwrap();
    let inside = blocked.join("out");
    for (args, kind, says) in [
        (
            vec!["-t", "NOPE"],
            "usage",
            "NOPE is not the name of a table",
        ),
        (
            vec!["-t", "BIG", "--where", "ID < (1"],
            "usage",
            "is not closed",
        ),
        (
            vec!["-t", "BIG", "-o", inside.to_str().unwrap()],
            "output",
            "a-file",
        ),
    ] {
        let mut all = args.clone();
        if !all.contains(&"-o") {
            all.extend(["-o", out_dir.to_str().unwrap()]);
        }
        all.extend(["--progress", "json"]);
        let run = fbunload(&db, &all);
        assert_eq!(run.status.code(), Some(1), "{args:?}");
        let err = stderr(&run);
        let last = err.lines().last().unwrap_or_default();
        let event: serde_json::Value =
            serde_json::from_str(last).unwrap_or_else(|e| panic!("{args:?}: {e}: {err}"));
        assert_eq!(event["event"], "error", "{err}");
        assert_eq!(event["kind"], kind, "{args:?}: {err}");
        assert_eq!(event["exit_code"], 1);
        let message = event["message"].as_str().unwrap();
        assert!(message.contains(says), "{args:?}: {message}");
        // Every line of stderr is JSON.
        for line in err.lines() {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("{e}: {line}"));
        }
    }
}

/// Tests run side by side and start child processes; a database this
/// process has just closed can then be locked for a moment by a child
/// that is starting (common::connect says why). The helpers that make and
/// fill test databases wait that moment out; without that, this failed
/// within a few dozen databases.
#[test]
fn test_databases_can_be_made_while_children_start_beside_them() {
    let dir = tempfile::tempdir().unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
                        .arg("--version")
                        .stdout(std::process::Stdio::null())
                        .status();
                    // As often as the tests beside each other start them.
                    std::thread::sleep(std::time::Duration::from_millis(30));
                }
            });
        }
        // Stops the children's threads however this ends (a failure too).
        struct Stop<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let _stop = Stop(&stop);
        for i in 0..60 {
            let db = create_db(dir.path(), &format!("beside-{i}.fdb"), 4096);
            execute(&db, &["CREATE TABLE T (I INTEGER)"]);
            std::fs::remove_file(&db).unwrap();
        }
    });
}

/// The embedded engine cannot be shared by processes: asked for reader
/// processes, a run on a plain path reads with threads, and says so by
/// naming none.
#[test]
fn the_embedded_engine_reads_with_threads_whatever_processes_asks() {
    let dir = tempfile::tempdir().unwrap();
    let db = multi_page_db(dir.path());
    let out = dir.path().join("out");
    let run = fbunload(
        &db,
        &[
            "-t",
            "BIG",
            "-j",
            "2",
            "--processes",
            "2",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let said = stderr(&run);
    assert!(run.status.success(), "{said}");
    assert!(
        said.contains("2 workers,") && !said.contains("process"),
        "{said}"
    );
    assert_eq!(csv_records(&out.join("BIG.csv")).len(), 120_000);
    let refused = fbunload(&db, &["--processes", "many", "--plan"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("auto, 0 (threads only) or a number"),
        "{}",
        stderr(&refused)
    );
}
