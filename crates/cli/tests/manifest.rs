//! End to end: manifest.json, `fbunload check`, and runs into a directory
//! that holds another run, against real databases on the embedded engine.
//! Hashes are computed by `sha256sum`, not by fbunload's code.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

fn shop(dir: &Path) -> PathBuf {
    let db = create_db(dir, "shop.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE ITEMS (ID INTEGER NOT NULL, PRICE NUMERIC(9,2), NAME VARCHAR(20))",
            "CREATE TABLE OTHER (K SMALLINT)",
            "CREATE TABLE \"a/b\" (X INTEGER)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 20000) DO BEGIN \
               INSERT INTO ITEMS VALUES (:I, :I / 100.0, 'item ' || :I); I = I + 1; END END",
            "INSERT INTO OTHER VALUES (7)",
            "INSERT INTO \"a/b\" VALUES (1)",
        ],
    );
    db
}

fn unload_into(db: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["-q", "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    fbunload(db, &args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The SHA-256 of a file, by coreutils.
fn sha256sum(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(out.status.success());
    stdout(&out).split_whitespace().next().unwrap().to_string()
}

/// Every entry under `dir` with its bytes (directories as empty), sorted:
/// what "nothing changed" compares.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut entries = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let name = path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                pending.push(path);
                entries.push((name + "/", Vec::new()));
            } else {
                entries.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    entries.sort();
    entries
}

#[test]
fn the_manifest_lists_every_file_with_its_hash_rows_and_types() {
    let dir = tempfile::tempdir().unwrap();
    let db = shop(dir.path());
    let out = dir.path().join("out");
    let run = unload_into(
        &db,
        &out,
        &["-j", "2", "--unit-pages", "8", "--verify", "--header"],
    );
    assert!(run.status.success(), "{}", stderr(&run));

    let text = std::fs::read_to_string(out.join("manifest.json")).unwrap();
    assert!(!text.contains("masterkey"), "the password: {text}");
    assert!(!text.contains("SYSDBA"), "the user: {text}");
    let m: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(m["fbunload_version"], env!("CARGO_PKG_VERSION"));
    assert!(m["server_version"].as_str().unwrap().contains("Firebird"));
    assert!(m["snapshot_number"].as_u64().is_some(), "{m}");
    for time in ["started", "finished"] {
        let t = m[time].as_str().unwrap();
        assert!(
            t.len() == 24 && t.ends_with('Z') && &t[10..11] == "T",
            "{t}"
        );
    }
    assert!(m["started"].as_str() <= m["finished"].as_str());
    let options = &m["options"];
    assert_eq!(options["format"], "csv");
    assert_eq!(options["header"], true);
    assert_eq!(options["parallel"], 2);
    assert_eq!(options["unit_pages"], 8);
    assert_eq!(
        options["processes"], 0,
        "the embedded engine reads with threads"
    );
    assert_eq!(options["verify"], true);

    let mut listed = Vec::new();
    for (name, file) in [
        ("ITEMS", "ITEMS.csv"),
        ("OTHER", "OTHER.csv"),
        ("a/b", "a%2Fb.csv"),
    ] {
        let t = manifest_entry(&m, name);
        let files = t["files"].as_array().unwrap();
        assert_eq!(files.len(), 1, "{t}");
        assert_eq!(files[0]["name"], file, "the real name, its file's name");
        let path = out.join(file);
        assert_eq!(files[0]["sha256"], sha256sum(&path), "{file}");
        let bytes = std::fs::metadata(&path).unwrap().len();
        assert_eq!(files[0]["bytes"], bytes);
        assert_eq!(t["bytes"], bytes);
        let rows = csv_records(&path).len() as i64;
        assert_eq!(t["rows"].as_i64(), Some(rows), "{name}");
        assert_eq!(rows, count(&db, name), "{name}");
        assert_eq!(t["verified"], true);
        listed.push(file.to_string());
    }
    let price = &manifest_entry(&m, "ITEMS")["columns"][1];
    assert_eq!(price["name"], "PRICE");
    assert_eq!(price["firebird_type"], "NUMERIC(9,2)");
    assert_eq!(price["arrow_type"], "Decimal128(10, 2)");
    // schema.sql belongs to the run, not to one table.
    let run_files = m["files"].as_array().unwrap();
    assert_eq!(run_files.len(), 1, "{m}");
    assert_eq!(run_files[0]["name"], "schema.sql");
    assert_eq!(run_files[0]["sha256"], sha256sum(&out.join("schema.sql")));
    listed.push("schema.sql".to_string());
    // The manifest lists every file of the run and nothing else.
    let mut on_disk: Vec<String> = files(&out).into_iter().map(|(n, _)| n).collect();
    on_disk.sort();
    listed.sort();
    assert_eq!(on_disk, listed);

    let checked = fbunload_check(&out);
    assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
    assert_eq!(stdout(&checked), "4 files match the manifest\n");

    // Without --verify, nothing claims to be verified; a chosen subset
    // records its columns and condition.
    let plain = dir.path().join("plain");
    let run = unload_into(
        &db,
        &plain,
        &["-t", "ITEMS", "--columns", "ID,NAME", "--where", "ID < 10"],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let m = read_manifest(&plain);
    let items = manifest_entry(&m, "ITEMS");
    assert_eq!(items["verified"], false);
    assert_eq!(items["rows"], 10);
    assert_eq!(items["where"], "ID < 10");
    let columns: Vec<&str> = items["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["ID", "NAME"]);
    assert_eq!(m["options"]["tables"], "ITEMS");
}

#[test]
fn a_split_parquet_table_lists_each_part() {
    let dir = tempfile::tempdir().unwrap();
    let db = shop(dir.path());
    let out = dir.path().join("lake");
    let run = unload_into(
        &db,
        &out,
        &[
            "-t",
            "ITEMS",
            "-f",
            "parquet",
            "--split",
            "--compression",
            "snappy",
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
    let m = read_manifest(&out);
    assert_eq!(m["options"]["split"], true);
    assert_eq!(m["options"]["compression"], "snappy");
    let files = manifest_entry(&m, "ITEMS")["files"]
        .as_array()
        .unwrap()
        .clone();
    let parts: Vec<_> = std::fs::read_dir(out.join("ITEMS.parquet"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), parts.len());
    for file in &files {
        let name = file["name"].as_str().unwrap();
        assert!(name.starts_with("ITEMS.parquet/part-"), "{name}");
        assert_eq!(file["sha256"], sha256sum(&out.join(name)), "{name}");
    }
    let checked = fbunload_check(&out);
    assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
}

#[test]
fn check_names_every_file_that_changed_or_went() {
    let dir = tempfile::tempdir().unwrap();
    let db = shop(dir.path());
    let out = dir.path().join("out");
    assert!(unload_into(&db, &out, &[]).status.success());

    // One byte of ITEMS.csv changed, its size the same.
    let path = out.join("ITEMS.csv");
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    std::fs::remove_file(out.join("OTHER.csv")).unwrap();

    let checked = fbunload_check(&out);
    assert_eq!(checked.status.code(), Some(1));
    let lines: Vec<String> = stdout(&checked).lines().map(String::from).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with("ITEMS.csv: SHA-256 ") && lines[0].contains("differs"),
        "{lines:?}"
    );
    assert_eq!(lines[1], "OTHER.csv: missing");
    let err = stderr(&checked);
    assert!(
        err.contains("check failed: 2 differences from") && err.contains("(4 files checked)"),
        "{err}"
    );

    // No manifest at all.
    std::fs::remove_file(out.join("manifest.json")).unwrap();
    let checked = fbunload_check(&out);
    assert_eq!(checked.status.code(), Some(1));
    assert!(
        stderr(&checked).contains("no manifest.json"),
        "{}",
        stderr(&checked)
    );
}

#[test]
fn check_follows_no_name_out_of_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = shop(dir.path());
    let out = dir.path().join("out");
    assert!(unload_into(&db, &out, &["-t", "OTHER"]).status.success());
    // A copy outside, whose size and hash the edited manifest gives: a
    // check that followed these names would find them matching.
    let outside = dir.path().join("outside.csv");
    std::fs::copy(out.join("OTHER.csv"), &outside).unwrap();
    let mut m = read_manifest(&out);
    let real = m["tables"][0]["files"][0].clone();
    let files = m["tables"][0]["files"].as_array_mut().unwrap();
    for hostile in ["../outside.csv".to_string(), outside.display().to_string()] {
        let mut entry = real.clone();
        entry["name"] = hostile.into();
        files.push(entry);
    }
    std::fs::write(out.join("manifest.json"), m.to_string()).unwrap();

    let checked = fbunload_check(&out);
    assert_eq!(checked.status.code(), Some(1), "{}", stdout(&checked));
    let text = stdout(&checked);
    assert!(
        text.contains("../outside.csv: refused")
            && text.contains(&format!("{}: refused", outside.display())),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2, "the real file matches: {text}");

    // --overwrite will not remove by those names either.
    let run = unload_into(&db, &out, &["-t", "OTHER", "--overwrite"]);
    assert_eq!(run.status.code(), Some(1));
    assert!(
        stderr(&run).contains("--overwrite removes nothing"),
        "{}",
        stderr(&run)
    );
    assert!(outside.exists() && out.join("OTHER.csv").exists());
}

#[test]
fn a_directory_holding_another_run_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let db = shop(dir.path());
    let out = dir.path().join("out");
    assert!(unload_into(&db, &out, &["-t", "ITEMS|OTHER"])
        .status
        .success());
    let before = tree(&out);
    for extra in [vec![], vec!["-t", "\"a/b\"", "-f", "parquet"]] {
        let run = unload_into(&db, &out, &extra);
        assert_eq!(run.status.code(), Some(1), "{extra:?}");
        let err = stderr(&run);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("output directory {}", out.display()))
                && err.contains("another run's manifest.json")
                && err.contains("--overwrite")
                && err.contains("another -o"),
            "{err}"
        );
        assert!(
            tree(&out) == before,
            "{extra:?}: nothing written or removed"
        );
    }

    // Table files with no manifest (an older fbunload) are refused too;
    // a directory of other files is not.
    let legacy = dir.path().join("legacy");
    std::fs::create_dir(&legacy).unwrap();
    std::fs::write(legacy.join("OLD.csv.gz"), b"old").unwrap();
    let run = unload_into(&db, &legacy, &[]);
    assert_eq!(run.status.code(), Some(1));
    assert!(
        stderr(&run).contains("table files of another run (OLD.csv.gz) and no manifest.json"),
        "{}",
        stderr(&run)
    );
    let notes = dir.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("README.txt"), b"mine").unwrap();
    let run = unload_into(&db, &notes, &[]);
    assert!(run.status.success(), "{}", stderr(&run));
}

#[test]
fn overwrite_removes_only_what_the_old_manifest_lists() {
    let dir = tempfile::tempdir().unwrap();
    let db = shop(dir.path());
    let out = dir.path().join("out");
    assert!(unload_into(&db, &out, &["-t", "ITEMS|OTHER|\"a/b\""])
        .status
        .success());
    // The user's own files, one of them named like a table's.
    std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    std::fs::write(out.join("mine.csv"), b"also mine").unwrap();

    // A bad choice fails before the snapshot: the old run stays whole.
    let run = unload_into(
        &db,
        &out,
        &["--overwrite", "-t", "ITEMS", "--where", "NOPE = 1"],
    );
    assert_eq!(run.status.code(), Some(1));
    // The old run is intact: check's one complaint is the user's mine.csv,
    // named like a table's file and not in the manifest.
    let only_mine = |checked: &Output| {
        let said = stdout(checked);
        assert_eq!(checked.status.code(), Some(1), "{said}");
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(said.starts_with("mine.csv: not in the manifest"), "{said}");
    };
    only_mine(&fbunload_check(&out));

    execute(&db, &["INSERT INTO ITEMS VALUES (-1, 0, 'new')"]);
    let run = unload_into(&db, &out, &["--overwrite", "-t", "ITEMS", "-f", "jsonl"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let mut left: Vec<String> = files(&out).into_iter().map(|(n, _)| n).collect();
    left.sort();
    assert_eq!(left, ["ITEMS.jsonl", "mine.csv", "notes.txt", "schema.sql"]);
    assert_eq!(std::fs::read(out.join("mine.csv")).unwrap(), b"also mine");
    let m = read_manifest(&out);
    assert_eq!(m["tables"].as_array().unwrap().len(), 1);
    // The new run's rows (snapshot numbers restart with the engine, so
    // the row added in between tells the runs apart).
    assert_eq!(manifest_entry(&m, "ITEMS")["rows"], 20_001);
    only_mine(&fbunload_check(&out));
    std::fs::remove_file(out.join("mine.csv")).unwrap();
    let checked = fbunload_check(&out);
    assert_eq!(stdout(&checked), "2 files match the manifest\n");

    // Overwriting table files with no manifest replaces the names the run
    // writes and leaves the rest, which its manifest does not list.
    let legacy = dir.path().join("legacy");
    std::fs::create_dir(&legacy).unwrap();
    std::fs::write(legacy.join("OTHER.csv"), b"old\n").unwrap();
    std::fs::write(legacy.join("GONE.csv"), b"old\n").unwrap();
    let run = unload_into(&db, &legacy, &["--overwrite", "-t", "OTHER"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(std::fs::read(legacy.join("OTHER.csv")).unwrap(), b"K\n7\n");
    assert_eq!(std::fs::read(legacy.join("GONE.csv")).unwrap(), b"old\n");
    let m = read_manifest(&legacy);
    assert_eq!(m["tables"].as_array().unwrap().len(), 1);
}

#[test]
fn standard_output_writes_no_manifest_and_takes_no_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let db = shop(dir.path());
    let run = fbunload(&db, &["-t", "OTHER", "-o", "-"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(run.stdout, b"K\n7\n");
    let run = fbunload(&db, &["-t", "OTHER", "-o", "-", "--overwrite"]);
    assert_eq!(run.status.code(), Some(1));
    assert!(stderr(&run).contains("--overwrite is for an output directory"));
}
