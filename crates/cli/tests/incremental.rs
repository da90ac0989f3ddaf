//! Incremental unloads (`--since`), against the oracle: a chain of change
//! sets, each applied to the state before it, must give exactly what a
//! full unload at the same snapshot gives, table by table, row by row,
//! value by value, while writers insert, update (primary keys too),
//! delete, delete and insert the same key again, roll back, and keep a
//! transaction open across each run that commits after it. Tables are
//! added, dropped and altered on the way. In CSV (applied here, as text)
//! and Parquet (applied by `fbunload apply`).
//!
//! The writers commit between the runs, never during one: the change set
//! and the full unload it is compared with are two runs, and must see
//! the same data. What is in flight during the runs is the transactions
//! left open across them, which is the hard case.

mod common;

use std::path::{Path, PathBuf};

use common::bank::superclassic;
use common::oracle::{self, check, path, SCHEMA};
use common::*;
use fbunload_client::TransactionMode;

fn run(db: &Path, args: &[&str]) {
    let out = fbunload(db, args);
    assert!(out.status.success(), "fbunload {args:?}: {}", stderr(&out));
}

/// The `--progress json` events of a `--since OLD -o NEW` run that succeeds.
fn since_with_json_progress(db: &Path, old: &Path, new: &Path) -> Vec<serde_json::Value> {
    let out = fbunload(
        db,
        &["--since", path(old), "--progress", "json", "-o", path(new)],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    stderr(&out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_chain_of_change_sets_applied_is_a_full_unload_at_the_same_snapshot() {
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "inc.fdb", 4096);
    let scratch = dir.path().join("runs");
    std::fs::create_dir(&scratch).unwrap();
    oracle::chain(&oracle::Target {
        connect: &|| connect(&db),
        fbunload: &|args| fbunload(&db, args),
        scratch: &scratch,
    });
}

/// A small database and a full run of it that keeps its keys.
fn base(dir: &Path) -> (PathBuf, PathBuf) {
    superclassic();
    let db = create_db(dir, "small.fdb", 4096);
    execute(&db, SCHEMA);
    execute(
        &db,
        &[
            "INSERT INTO T VALUES (1, 'b', 'v', 1, NULL, NULL)",
            "INSERT INTO S VALUES (1, 2)",
        ],
    );
    let old = dir.join("old");
    run(&db, &["--keep-keys", "-o", path(&old)]);
    (db, old)
}

/// A unit whose count of unchanged rows falls short has its keys read
/// again: the progress says so, and counts those units in.
#[test]
fn a_unit_that_lost_a_row_is_rechecked_and_the_progress_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    execute(&db, &["DELETE FROM S WHERE ID = 1"]);
    let new = dir.path().join("new");
    let events = since_with_json_progress(&db, &old, &new);
    let of = |kind: &'static str| events.iter().filter(move |e| e["event"] == kind);
    let planned = of("started").next().unwrap()["units"].as_u64().unwrap();
    let more: u64 = of("more_units").map(|e| e["units"].as_u64().unwrap()).sum();
    assert!(more >= 1, "no unit rechecked: {events:?}");
    assert_eq!(of("unit").count() as u64, planned + more);
    let manifest = read_manifest(&new);
    let s = manifest["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "S")
        .unwrap();
    assert_eq!(s["change"]["deletes"], 1, "{s}");
    assert_eq!(s["change"]["rechecked_units"], 1, "{s}");
}

fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut manifest = read_manifest(dir);
    edit(&mut manifest);
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_vec(&manifest).unwrap(),
    )
    .unwrap();
}

#[test]
fn a_previous_run_read_back_is_checked_before_it_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    let new = dir.path().join("new");
    let since = |old: &Path| fbunload(&db, &["--since", path(old), "-o", path(&new)]);
    let keys = old.join("T.keys.parquet");
    let original = std::fs::read(&keys).unwrap();

    // A keys file changed since its run: refused, nothing written.
    let mut changed = original.clone();
    let last = changed.len() - 20;
    changed[last] ^= 1;
    std::fs::write(&keys, &changed).unwrap();
    assert_refused_in_one_line(&since(&old), "--since");
    assert!(
        stderr(&since(&old)).contains("SHA-256"),
        "{}",
        stderr(&since(&old))
    );
    assert!(!new.exists());
    std::fs::write(&keys, &original).unwrap();

    // A link in its place, even to the same bytes: not followed.
    #[cfg(unix)]
    {
        let elsewhere = dir.path().join("elsewhere.parquet");
        std::fs::write(&elsewhere, &original).unwrap();
        std::fs::remove_file(&keys).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &keys).unwrap();
        let out = since(&old);
        assert_refused_in_one_line(&out, "--since");
        assert!(
            stderr(&out).contains("not a plain file"),
            "{}",
            stderr(&out)
        );
        std::fs::remove_file(&keys).unwrap();
        std::fs::write(&keys, &original).unwrap();
    }

    // A manifest that names a file outside its directory.
    let outside = dir.path().join("outside.parquet");
    std::fs::write(&outside, &original).unwrap();
    let saved = std::fs::read(old.join("manifest.json")).unwrap();
    edit_manifest(&old, |m| {
        for t in m["tables"].as_array_mut().unwrap() {
            let is_t = t["name"] == "T";
            for f in t["files"].as_array_mut().unwrap() {
                if f["role"] == "keys" && is_t {
                    f["name"] = "../outside.parquet".into();
                }
            }
        }
    });
    let out = since(&old);
    assert_refused_in_one_line(&out, "--since");
    assert!(stderr(&out).contains("refused"), "{}", stderr(&out));
    std::fs::write(old.join("manifest.json"), &saved).unwrap();

    // A run that kept no keys cannot start a chain.
    let plain = dir.path().join("plain");
    run(&db, &["-o", path(&plain)]);
    let out = since(&plain);
    assert_refused_in_one_line(&out, "--since");
    assert!(stderr(&out).contains("--keep-keys"), "{}", stderr(&out));

    // As it was, it works; and apply refuses a change set of another run.
    run(&db, &["--since", path(&old), "-o", path(&new)]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args([
            "apply",
            path(&plain),
            path(&new),
            "-o",
            path(&dir.path().join("state")),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("another run"), "{}", stderr(&out));
}

/// Replaces `S.keys.parquet` of the run in `dir` by `ids`, in that order,
/// at made-up places, and lists it in the manifest with its size and
/// SHA-256, as one who meant it would.
fn forge_keys(dir: &Path, ids: &[i64]) {
    use sha2::{Digest, Sha256};
    use std::sync::Arc;
    let places = (1..=ids.len() as u64).map(|n| n * 7);
    let batch = arrow_array::RecordBatch::try_from_iter([
        (
            "ID",
            Arc::new(arrow_array::Int64Array::from(ids.to_vec())) as arrow_array::ArrayRef,
        ),
        (
            "RDB$DB_KEY",
            Arc::new(arrow_array::UInt64Array::from_iter_values(places)) as arrow_array::ArrayRef,
        ),
    ])
    .unwrap();
    let mut bytes = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    std::fs::write(dir.join("S.keys.parquet"), &bytes).unwrap();
    let sha256: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    edit_manifest(dir, |m| {
        for t in m["tables"].as_array_mut().unwrap() {
            for f in t["files"].as_array_mut().unwrap() {
                if f["name"] == "S.keys.parquet" {
                    f["bytes"] = bytes.len().into();
                    f["sha256"] = sha256.clone().into();
                }
            }
        }
    });
}

#[test]
fn a_keys_file_out_of_order_repeated_or_miscounted_is_refused_whatever_its_digest() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    execute(
        &db,
        &["INSERT INTO S VALUES (2, 3)", "INSERT INTO S VALUES (3, 4)"],
    );
    run(
        &db,
        &["--since", path(&old), "-o", path(&dir.path().join("mid"))],
    );
    let old = dir.path().join("mid");
    let new = dir.path().join("new");
    for (ids, why) in [
        (&[1, 3, 2][..], "out of order"),
        (&[1, 1, 2][..], "twice"),
        (&[1, 2][..], "manifest says 3"),
    ] {
        forge_keys(&old, ids);
        let out = fbunload(&db, &["--since", path(&old), "-o", path(&new)]);
        assert_refused_in_one_line(&out, "--since");
        assert!(stderr(&out).contains(why), "{ids:?}: {}", stderr(&out));
        assert!(!new.exists());
    }
    // In order, each once, as many as listed: read.
    forge_keys(&old, &[1, 2, 3]);
    run(&db, &["--since", path(&old), "-o", path(&new)]);
}

#[test]
fn a_database_restored_or_replaced_since_is_unloaded_whole_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    for (field, value, why) in [
        (
            "database_guid",
            serde_json::json!("{00000000-0000-0000-0000-000000000000}"),
            "GUID",
        ),
        ("transaction", serde_json::json!(1u64 << 40), "went back"),
    ] {
        let copy = dir.path().join(format!("old-{field}"));
        std::fs::create_dir(&copy).unwrap();
        for entry in std::fs::read_dir(&old).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
        edit_manifest(&copy, |m| m["incremental"][field] = value);
        let new = dir.path().join(format!("new-{field}"));
        run(&db, &["--since", path(&copy), "-o", path(&new)]);
        let manifest = read_manifest(&new);
        for name in ["T", "S", "NOPK", "GONE"] {
            let change = &manifest_entry(&manifest, name)["change"];
            assert_eq!(change["mode"], "full", "{name}: {change}");
            assert!(change["reason"].as_str().unwrap().contains(why), "{change}");
        }
        assert!(new.join("T.csv").exists() && !new.join("T.upserts.csv").exists());
        check(&new);
    }
}

/// Commit numbers live in the engine's memory and start again when the
/// database is next opened (by a restarted server, or after its last
/// attachment closed); transaction numbers are on disk. A change committed
/// after such a restart has a commit number below the previous run's
/// snapshot number, and must still be read.
#[test]
fn a_change_committed_after_the_engine_restarted_is_read() {
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "restart.fdb", 4096);
    execute(&db, SCHEMA);
    let old = dir.path().join("old");
    {
        // One engine lifetime: many commits, then the run, at a snapshot
        // number above them.
        let held = connect(&db);
        for i in 0..40 {
            let tr = held.start_transaction(TransactionMode::ReadWrite).unwrap();
            tr.execute(&format!("INSERT INTO S VALUES ({i}, {i})"))
                .unwrap();
            tr.commit().unwrap();
        }
        run(&db, &["--keep-keys", "-o", path(&old)]);
    }
    assert!(read_manifest(&old)["snapshot_number"].as_u64().unwrap() > 20);
    // The next lifetime: a commit numbered from the start again, kept
    // known across the run by a snapshot older than it (a report running).
    let writer = connect(&db);
    let pin = writer
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .unwrap();
    let tr = writer
        .start_transaction(TransactionMode::ReadWrite)
        .unwrap();
    tr.execute("UPDATE S SET V = -1 WHERE ID = 7").unwrap();
    tr.commit().unwrap();
    let new = dir.path().join("new");
    run(&db, &["--since", path(&old), "-o", path(&new)]);
    // The engine's commit numbers started again: the new snapshot's is
    // below the old one's.
    assert!(
        read_manifest(&new)["snapshot_number"].as_u64()
            < read_manifest(&old)["snapshot_number"].as_u64()
    );
    let upserts = csv_records(&new.join("S.upserts.csv"));
    assert!(
        upserts.contains(&vec!["7".to_string(), "-1.0".to_string()]),
        "{upserts:?}"
    );
    drop(pin);
}

/// A Parquet chain of one link over [`base`]: the `--keep-keys` run
/// `pq0` and the change set `pq1` (S updated).
fn parquet_link(dir: &Path) -> (PathBuf, PathBuf) {
    let (db, _) = base(dir);
    let old = dir.join("pq0");
    let new = dir.join("pq1");
    run(&db, &["--keep-keys", "-f", "parquet", "-o", path(&old)]);
    execute(&db, &["UPDATE S SET V = 3"]);
    run(
        &db,
        &["--since", path(&old), "-f", "parquet", "-o", path(&new)],
    );
    (old, new)
}

/// `apply` reads two directories it did not write: a table name from a
/// manifest never leads its file out of the new directory, and a file
/// listed outside its run's directory is refused.
#[test]
fn apply_keeps_names_from_manifests_inside_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = parquet_link(dir.path());
    let apply = |state: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
            .args(["apply", path(&old), path(&new), "-o", path(state)])
            .output()
            .unwrap()
    };
    let saved = std::fs::read(new.join("manifest.json")).unwrap();
    // A table read whole, renamed to climb out.
    edit_manifest(&new, |m| {
        for t in m["tables"].as_array_mut().unwrap() {
            if t["name"] == "NOPK" {
                t["name"] = "../../escaped".into();
            }
        }
    });
    let state = dir.path().join("state");
    let out = apply(&state);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!dir.path().join("escaped.parquet").exists());
    let inside: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(inside.iter().any(|n| n.contains("escaped")), "{inside:?}");
    check(&state);
    // A file listed outside the change set's directory.
    std::fs::write(new.join("manifest.json"), &saved).unwrap();
    edit_manifest(&new, |m| {
        for t in m["tables"].as_array_mut().unwrap() {
            if t["name"] == "S" {
                t["files"][0]["name"] = "../pq0/S.keys.parquet".into();
            }
        }
    });
    let out = apply(&dir.path().join("state2"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("refused"), "{}", stderr(&out));
}

#[test]
fn apply_refuses_a_text_change_set_in_one_line_naming_what_it_reads_and_the_recipe() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    let new = dir.path().join("new");
    run(&db, &["--since", path(&old), "-o", path(&new)]);
    let state = dir.path().join("state");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .args(["apply", path(&old), path(&new), "-o", path(&state)])
        .output()
        .unwrap();
    assert_refused_in_one_line(&out, "apply: reads Parquet and Arrow runs; this one is csv");
    assert!(
        stderr(&out).contains("docs/command-line.md"),
        "{}",
        stderr(&out)
    );
    assert!(!state.exists());
}

/// The schema (names, types, field metadata) of a table's one file.
fn file_schema(path: &Path) -> arrow_schema::Schema {
    let file = std::fs::File::open(path).unwrap();
    if path.extension().is_some_and(|e| e == "parquet") {
        let reader =
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        reader.schema().as_ref().clone()
    } else {
        let reader = arrow_ipc::reader::FileReader::try_new(file, None).unwrap();
        reader.schema().as_ref().clone()
    }
}

/// A table's rows from its one Parquet file, as (ID, V) sorted.
fn id_text_rows(path: &Path) -> Vec<(i32, Option<String>)> {
    let mut rows = int_text_rows(path);
    rows.sort();
    rows
}

fn apply_cmd(old: &Path, changes: &Path, state: &Path) -> std::process::Output {
    fbunload_alone(&["apply", path(old), path(changes), "-o", path(state)])
}

/// issue 41, 1: a table empty before and after a link kept no columns in
/// the state (its schema came from its first batch). It keeps the base's
/// columns and field metadata, link after link, and the state has the
/// change set's schema.sql as a run does.
#[test]
fn apply_keeps_the_columns_of_a_table_empty_before_and_after() {
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "empty.fdb", 4096);
    execute(
        &db,
        &["CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(10))"],
    );
    for format in ["parquet", "arrow"] {
        let at = |name: &str| dir.path().join(format!("{format}-{name}"));
        let file = format!("T.{format}");
        run(&db, &["--keep-keys", "-f", format, "-o", path(&at("r0"))]);
        run(
            &db,
            &[
                "--since",
                path(&at("r0")),
                "-f",
                format,
                "-o",
                path(&at("r1")),
            ],
        );
        run(
            &db,
            &[
                "--since",
                path(&at("r1")),
                "-f",
                format,
                "-o",
                path(&at("r2")),
            ],
        );
        let out = apply_cmd(&at("r0"), &at("r1"), &at("s1"));
        assert!(out.status.success(), "{}", stderr(&out));
        let out = apply_cmd(&at("s1"), &at("r2"), &at("s2"));
        assert!(out.status.success(), "{}", stderr(&out));
        let base = file_schema(&at("r0").join(&file));
        assert_eq!(base.fields().len(), 2);
        for state in [at("s1"), at("s2")] {
            let applied = file_schema(&state.join(&file));
            assert_eq!(
                applied.fields(),
                base.fields(),
                "{format}: {}",
                state.display()
            );
            check(&state);
            assert_eq!(
                std::fs::read(state.join("schema.sql")).unwrap(),
                std::fs::read(at("r1").join("schema.sql")).unwrap()
            );
        }
    }
}

/// issue 41, 2: a change set given as OLD made a state without every row
/// it did not change, and exit 0. Refused in one line; so is a state of
/// another chain and a base of another database.
#[test]
fn apply_refuses_a_change_set_as_old_and_a_base_of_another_chain() {
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "chain.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(10))",
            "INSERT INTO T VALUES (1, 'a')",
            "INSERT INTO T VALUES (2, 'b')",
            "INSERT INTO T VALUES (3, 'c')",
        ],
    );
    let at = |name: &str| dir.path().join(name);
    let pq = ["-f", "parquet"];
    let unload = |args: &[&str]| run(&db, &[args, &pq[..]].concat());
    unload(&["--keep-keys", "-o", path(&at("c0"))]);
    execute(&db, &["UPDATE T SET V = 'B' WHERE ID = 2"]);
    unload(&["--since", path(&at("c0")), "-o", path(&at("c1"))]);
    execute(&db, &["UPDATE T SET V = 'C' WHERE ID = 3"]);
    unload(&["--since", path(&at("c1")), "-o", path(&at("c2"))]);

    let out = apply_cmd(&at("c1"), &at("c2"), &at("cs"));
    assert_refused_in_one_line(&out, "apply: ");
    assert!(
        stderr(&out).contains("is a change set; apply it to its base's state first"),
        "{}",
        stderr(&out)
    );
    assert!(!at("cs").exists());

    // Nor into a run's directory (its own change set's, here).
    let before = std::fs::read(at("c1").join("manifest.json")).unwrap();
    let out = apply_cmd(&at("c0"), &at("c1"), &at("c1"));
    assert_refused_in_one_line(&out, "apply: ");
    assert!(
        stderr(&out).contains("holds a run already"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(at("c1").join("manifest.json")).unwrap(),
        before
    );

    // The way the message gives: state after state.
    let out = apply_cmd(&at("c0"), &at("c1"), &at("s1"));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = apply_cmd(&at("s1"), &at("c2"), &at("s2"));
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = vec![
        (1, Some("a".to_string())),
        (2, Some("B".to_string())),
        (3, Some("C".to_string())),
    ];
    assert_eq!(id_text_rows(&at("s2").join("T.parquet")), expected);
    // A state is not a link to take the next change set since.
    let out = fbunload(&db, &["--since", path(&at("s2")), "-o", path(&at("c3"))]);
    assert_refused_in_one_line(&out, "--since");
    assert!(
        stderr(&out).contains("the chain's last link"),
        "{}",
        stderr(&out)
    );

    // A state of the chain's other link, and a base of another database.
    let out = apply_cmd(&at("s2"), &at("c2"), &at("x1"));
    assert_refused_in_one_line(&out, "apply: ");
    let other = create_db(dir.path(), "other.fdb", 4096);
    execute(
        &other,
        &["CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(10))"],
    );
    run(
        &other,
        &["--keep-keys", "-f", "parquet", "-o", path(&at("o0"))],
    );
    let out = apply_cmd(&at("o0"), &at("c1"), &at("x2"));
    assert_refused_in_one_line(&out, "apply: ");
    assert!(!at("x1").exists() && !at("x2").exists());
}

/// issue 45, 3 and 12: a link whose options differ from its base's where
/// they change what is in its files is refused in one line: a narrower
/// --tables marked the tables it left out dropped (and apply removed
/// them), a --charset mixed decodings in one state. The charset is in
/// the manifest.
#[test]
fn a_link_with_another_selection_or_charset_than_its_base_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    assert_eq!(read_manifest(&old)["options"]["charset"], "UTF8");
    let new = dir.path().join("new");
    for (args, what) in [
        (&["-t", "S"][..], "--tables"),
        (&["-x", "GONE"][..], "--exclude"),
        (&["--charset", "WIN1252"][..], "--charset WIN1252"),
        (&["-f", "jsonl"][..], "--format"),
    ] {
        let out = fbunload(
            &db,
            &[&["--since", path(&old), "-o", path(&new)], args].concat(),
        );
        assert_refused_in_one_line(&out, "--since");
        assert!(stderr(&out).contains(what), "{args:?}: {}", stderr(&out));
        assert!(!new.exists());
    }
    // The base's own selection: a link.
    run(&db, &["--since", path(&old), "-o", path(&new)]);
    assert!(read_manifest(&new)["incremental"].get("dropped").is_none());
}

/// A link's --tables spelled otherwise than its base's (lower case, a
/// comma for |) asks for the same tables under the SQL name rule: a link,
/// not a refusal.
#[test]
fn a_link_with_its_base_selection_spelled_otherwise_is_a_link() {
    let dir = tempfile::tempdir().unwrap();
    superclassic();
    let db = create_db(dir.path(), "small.fdb", 4096);
    execute(&db, SCHEMA);
    let old = dir.path().join("old");
    run(&db, &["--keep-keys", "-t", "S|T", "-o", path(&old)]);
    let new = dir.path().join("new");
    run(
        &db,
        &["--since", path(&old), "-t", "s, t", "-o", path(&new)],
    );
    assert!(read_manifest(&new)["incremental"].get("dropped").is_none());
    let other = dir.path().join("other");
    let out = fbunload(
        &db,
        &["--since", path(&old), "-t", "\"s\"", "-o", path(&other)],
    );
    assert_refused_in_one_line(&out, "--since");
}

/// issue 45, 13: `--since DIR -o DIR --overwrite` replaced the chain's
/// base with its change set.
#[test]
fn a_change_set_into_its_own_base_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    let before = std::fs::read(old.join("manifest.json")).unwrap();
    for overwrite in [&["--overwrite"][..], &[]] {
        let out = fbunload(
            &db,
            &[&["--since", path(&old), "-o", path(&old)], overwrite].concat(),
        );
        assert_refused_in_one_line(&out, "--since");
        assert!(
            stderr(&out).contains("also the output directory"),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(std::fs::read(old.join("manifest.json")).unwrap(), before);
    check(&old);
}

/// issue 45, 14: numbers read back from a previous run's manifest are
/// checked for coherence before they decide what changed: an
/// oldest_interesting of 2^64-1 made every row "unchanged".
#[test]
fn numbers_of_a_previous_run_that_no_run_writes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    let new = dir.path().join("new");
    let saved = std::fs::read(old.join("manifest.json")).unwrap();
    type Edit<'e> = &'e dyn Fn(&mut serde_json::Value);
    let edits: [(Edit, &str); 4] = [
        (
            &|m| m["incremental"]["oldest_interesting"] = u64::MAX.into(),
            "oldest interesting transaction",
        ),
        (
            &|m| m["incremental"]["transaction"] = (1u64 << 60).into(),
            "not a Firebird transaction number",
        ),
        (
            &|m| {
                for t in m["tables"].as_array_mut().unwrap() {
                    if t["name"] == "S" {
                        t["change"]["keys"] = serde_json::Value::Null;
                    }
                }
            },
            "no count of its keys",
        ),
        (
            &|m| {
                for t in m["tables"].as_array_mut().unwrap() {
                    if t["name"] == "S" {
                        t["rows"] = 7.into();
                    }
                }
            },
            "has 7 rows and 1 keys",
        ),
    ];
    for (edit, why) in edits {
        edit_manifest(&old, edit);
        let out = fbunload(&db, &["--since", path(&old), "-o", path(&new)]);
        assert_refused_in_one_line(&out, "--since");
        assert!(stderr(&out).contains(why), "{why}: {}", stderr(&out));
        assert!(!new.exists());
        std::fs::write(old.join("manifest.json"), &saved).unwrap();
    }
}

/// issue 45, 14, in apply: a change set's manifest whose counts are not
/// its files' is refused, and the state left nothing behind.
#[test]
fn apply_refuses_counts_that_are_not_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = parquet_link(dir.path());
    let saved = std::fs::read(new.join("manifest.json")).unwrap();
    let state = dir.path().join("state");
    // A mode edited: a table of changes said to be read whole would be
    // replaced by nothing.
    for (mode, why) in [
        ("full", "read whole, and lists files of changes"),
        ("odd", "mode odd"),
    ] {
        edit_manifest(&new, |m| {
            for t in m["tables"].as_array_mut().unwrap() {
                if t["name"] == "S" {
                    t["change"]["mode"] = mode.into();
                }
            }
        });
        let out = apply_cmd(&old, &new, &state);
        assert_refused_in_one_line(&out, "apply: table S: ");
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
        assert!(!state.exists());
        std::fs::write(new.join("manifest.json"), &saved).unwrap();
    }
    edit_manifest(&new, |m| {
        for t in m["tables"].as_array_mut().unwrap() {
            if t["name"] == "S" {
                t["rows"] = 5.into();
            }
        }
    });
    let out = apply_cmd(&old, &new, &state);
    assert_refused_in_one_line(
        &out,
        "apply: table S: its files hold 1 upserts, its manifest says 5",
    );
    assert!(!state.exists());
}

/// issue 45, 11: tables T and "T.keys" (or "T.upserts", "T.deletes") in
/// one incremental run: their files would take one name. Refused up
/// front, naming both.
#[test]
fn a_table_named_like_another_tables_role_file_is_refused_up_front() {
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "roles.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY)",
            "CREATE TABLE \"T.keys\" (ID INTEGER NOT NULL PRIMARY KEY)",
            "CREATE TABLE \"T.upserts\" (ID INTEGER NOT NULL PRIMARY KEY)",
            "INSERT INTO T VALUES (1)",
        ],
    );
    let out_dir = dir.path().join("r0");
    let out = fbunload(&db, &["--keep-keys", "-f", "parquet", "-o", path(&out_dir)]);
    assert_refused_in_one_line(&out, "tables T and ");
    assert!(stderr(&out).contains("--exclude"), "{}", stderr(&out));
    assert!(!out_dir.exists());
    let out = fbunload(
        &db,
        &[
            "--keep-keys",
            "-x",
            "\"T.keys\"",
            "-f",
            "parquet",
            "-o",
            path(&out_dir),
        ],
    );
    assert_refused_in_one_line(&out, "tables T and T.upserts");
    // Without them, a chain.
    let only = ["-t", "T", "-f", "parquet"];
    run(
        &db,
        &[&["--keep-keys", "-o", path(&out_dir)], &only[..]].concat(),
    );
    let next = dir.path().join("r1");
    run(
        &db,
        &[&["--since", path(&out_dir), "-o", path(&next)], &only[..]].concat(),
    );
}

/// Rows of `table` in run `dir` (a change set's: its upserts), as its
/// manifest lists them.
fn listed_rows(dir: &Path, table: &str) -> u64 {
    manifest_entry(&read_manifest(dir), table)["rows"]
        .as_u64()
        .unwrap()
}

/// The first field of each record of a CSV file that is a number (a
/// header line, if any, is not).
fn csv_ids(file: &Path) -> Vec<i64> {
    let mut ids: Vec<i64> = csv_records(file)
        .iter()
        .filter_map(|r| r[0].parse().ok())
        .collect();
    ids.sort();
    ids
}

/// Run as a child process by the test below: attaches, starts a
/// transaction, writes, says so, and waits to be killed.
#[test]
#[ignore = "a child process of a_transaction_killed_with_its_process_does_not_widen_later_change_sets"]
fn child_writes_and_waits_to_be_killed() {
    let Some(db) = std::env::var_os("FBUNLOAD_TEST_CHILD_DB") else {
        return;
    };
    let att = connect(Path::new(&db));
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    tr.execute("UPDATE T SET V = 'dying' WHERE ID = 1").unwrap();
    println!("ready {}", tr.number().unwrap());
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(600));
}

/// A transaction that died with its process keeps the oldest interesting
/// transaction where it is until a sweep; the change sets after it hold
/// the rows changed since the previous run, not every row written since
/// that transaction.
#[test]
fn a_transaction_killed_with_its_process_does_not_widen_later_change_sets() {
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "stuck.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(20))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 3000) DO BEGIN \
             INSERT INTO T VALUES (:I, 'v'); I = I + 1; END END",
        ],
    );
    // A child starts a transaction, writes and is killed (SIGKILL).
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_writes_and_waits_to_be_killed",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("FBUNLOAD_TEST_CHILD_DB", &db)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let dead: u64 = loop {
        let mut line = String::new();
        use std::io::BufRead;
        assert!(out.read_line(&mut line).unwrap() > 0, "the child ended");
        // After the harness's "test NAME ... " on the same line.
        if let Some((_, n)) = line.trim().split_once("ready ") {
            break n.parse().unwrap();
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    // Thousands of commits after it, each updating a row of its own.
    {
        let att = connect(&db);
        for i in 2..=3000 {
            let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
            tr.execute(&format!("UPDATE T SET V = 'c{i}' WHERE ID = {i}"))
                .unwrap();
            tr.commit().unwrap();
        }
    }
    let r0 = dir.path().join("r0");
    run(&db, &["--keep-keys", "-o", path(&r0)]);
    let marks = &read_manifest(&r0)["incremental"];
    assert!(
        marks["oldest_interesting"].as_u64().unwrap() <= dead,
        "the dead transaction {dead} no longer holds the oldest interesting one: {marks}"
    );
    // 11 rows change; the change set holds them.
    let changed: Vec<i64> = (0..11).map(|i| 100 + i * 250).collect();
    execute(
        &db,
        &changed
            .iter()
            .map(|id| format!("UPDATE T SET V = 'new' WHERE ID = {id}"))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let r1 = dir.path().join("r1");
    run(&db, &["--since", path(&r0), "-o", path(&r1)]);
    assert_eq!(
        listed_rows(&r1, "T"),
        11,
        "{}",
        read_manifest(&r1)["incremental"]
    );
    assert_eq!(csv_ids(&r1.join("T.upserts.csv")), changed);
    // The dead transaction's write never shows: row 1 is as it was.
    let full = dir.path().join("full");
    run(&db, &["-o", path(&full)]);
    assert!(csv_records(&full.join("T.csv"))
        .iter()
        .any(|r| r[0] == "1" && r[1] == "v"));
}

/// A column dropped and added again with the same name and type, or
/// moved, changes what every row reads as without writing any: the
/// table is read whole, saying why.
#[test]
fn a_table_whose_format_changed_is_read_whole_saying_why() {
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "format.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(20), W VARCHAR(20))",
            "CREATE TABLE U (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(20))",
            "INSERT INTO T VALUES (1, 'kept', 'w')",
            "INSERT INTO U VALUES (1, 'kept')",
        ],
    );
    let mut previous = dir.path().join("y0");
    run(&db, &["--keep-keys", "-o", path(&previous)]);
    for (step, ddl) in [
        (
            "drop and add",
            &["ALTER TABLE T DROP W", "ALTER TABLE T ADD W VARCHAR(20)"][..],
        ),
        (
            "drop, add and move back",
            &[
                "ALTER TABLE T DROP V",
                "ALTER TABLE T ADD V VARCHAR(20)",
                "ALTER TABLE T ALTER COLUMN V POSITION 2",
            ][..],
        ),
        (
            "added again with a default that fills old rows",
            &[
                "ALTER TABLE T DROP W",
                "ALTER TABLE T ADD W VARCHAR(20) DEFAULT 'filled' NOT NULL",
            ][..],
        ),
    ] {
        execute(&db, ddl);
        let next = dir.path().join(format!("y-{}", step.replace(' ', "-")));
        run(&db, &["--since", path(&previous), "-o", path(&next)]);
        let manifest = read_manifest(&next);
        let change = &manifest_entry(&manifest, "T")["change"];
        assert_eq!(change["mode"], "full", "{step}: {change}");
        assert!(
            change["reason"].as_str().unwrap().contains("altered"),
            "{step}: {change}"
        );
        // The table beside it, untouched, is read as changes.
        assert_eq!(manifest_entry(&manifest, "U")["change"]["mode"], "changes");
        // What the database holds now.
        let rows = csv_records(&next.join("T.csv"));
        assert!(rows.iter().any(|r| r[0] == "1"), "{step}: {rows:?}");
        previous = next;
    }
    // Nothing altered since: changes again.
    let last = dir.path().join("y-last");
    run(&db, &["--since", path(&previous), "-o", path(&last)]);
    assert_eq!(
        manifest_entry(&read_manifest(&last), "T")["change"]["mode"],
        "changes"
    );
}

/// Two copies of one database go their own ways; a change set of one
/// taken against the other's run would keep the first's changes and miss
/// the second's. The second is read whole, saying why.
#[test]
fn a_copy_of_the_database_with_its_own_history_is_read_whole_saying_why() {
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let base = create_db(dir.path(), "base.fdb", 4096);
    execute(
        &base,
        &[
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(20))",
            "INSERT INTO T VALUES (1, 'base')",
            "INSERT INTO T VALUES (2, 'base')",
        ],
    );
    let a = dir.path().join("a.fdb");
    let b = dir.path().join("b.fdb");
    std::fs::copy(&base, &a).unwrap();
    std::fs::copy(&base, &b).unwrap();
    for i in 0..30 {
        execute(&a, &[&format!("UPDATE T SET V = 'a{i}' WHERE ID = 1")]);
    }
    let ra = dir.path().join("ra");
    run(&a, &["--keep-keys", "-o", path(&ra)]);
    execute(&b, &["UPDATE T SET V = 'b' WHERE ID = 2"]);
    for i in 0..60 {
        execute(&b, &[&format!("INSERT INTO T VALUES ({}, 'b')", 100 + i)]);
        execute(&b, &[&format!("DELETE FROM T WHERE ID = {}", 100 + i)]);
    }
    let rb = dir.path().join("rb");
    run(&b, &["--since", path(&ra), "-o", path(&rb)]);
    let manifest = read_manifest(&rb);
    let change = &manifest_entry(&manifest, "T")["change"];
    assert_eq!(change["mode"], "full", "{change}");
    let why = change["reason"].as_str().unwrap();
    assert!(why.contains("copy"), "{change}");
    let rows = csv_records(&rb.join("T.csv"));
    assert!(
        rows.iter().any(|r| r[0] == "2" && r[1] == "b")
            && rows.iter().any(|r| r[0] == "1" && r[1] == "base"),
        "{rows:?}"
    );
}

/// The summary of a `--since` run says per table what it did: its
/// upserts and deletes and the units rechecked, or that it read the
/// table whole and why; `--progress json` says the same.
#[test]
fn the_summary_says_what_a_link_did_with_each_table() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    execute(
        &db,
        &[
            "INSERT INTO S VALUES (2, 3)",
            "DELETE FROM S WHERE ID = 1",
            "ALTER TABLE GONE ADD X INTEGER",
        ],
    );
    let text = dir.path().join("text");
    let out = fbunload(&db, &["--since", path(&old), "-o", path(&text)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let line = |table: &str| {
        err.lines()
            .find(|l| l.split_whitespace().next() == Some(table))
            .unwrap_or_else(|| panic!("no line for {table}: {err}"))
            .to_string()
    };
    assert!(
        line("S").ends_with("changes: +1 -1, 1 unit rechecked"),
        "{err}"
    );
    assert!(line("T").ends_with("changes: +0 -0"), "{err}");
    assert!(
        line("GONE").contains("read whole: its columns changed"),
        "{err}"
    );
    assert!(
        line("NOPK").contains("read whole: it has no primary key"),
        "{err}"
    );

    let json = dir.path().join("json");
    let events = since_with_json_progress(&db, &old, &json);
    let table_event = |name: &str| {
        events
            .iter()
            .find(|e| e["event"] == "table" && e["table"] == name)
            .unwrap_or_else(|| panic!("no table event for {name}: {events:?}"))
            .clone()
    };
    assert_eq!(
        table_event("S")["change"],
        serde_json::json!({"mode": "changes", "upserts": 1})
    );
    assert_eq!(table_event("NOPK")["change"]["mode"], "full");
    let summary = events.iter().find(|e| e["event"] == "summary").unwrap();
    let of = |name: &str| {
        summary["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["change"]
            .clone()
    };
    assert_eq!(
        of("S"),
        serde_json::json!({"mode": "changes", "upserts": 1, "deletes": 1, "rechecked_units": 1})
    );
    assert!(
        of("GONE")["reason"]
            .as_str()
            .unwrap()
            .contains("columns changed"),
        "{summary}"
    );
}

/// A run kept by an fbunload before the bound and formats were recorded
/// still starts a link: from its oldest interesting transaction, its
/// tables read whole as their format cannot be compared. A bound no run
/// could have written is refused.
#[test]
fn a_run_without_the_bound_or_formats_is_read_as_before_and_a_forged_bound_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (db, old) = base(dir.path());
    let copy = |name: &str| {
        let copy = dir.path().join(name);
        std::fs::create_dir(&copy).unwrap();
        for entry in std::fs::read_dir(&old).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
        copy
    };
    let earlier = copy("earlier");
    edit_manifest(&earlier, |m| {
        let marks = m["incremental"].as_object_mut().unwrap();
        for field in ["oldest_unseen", "database_file_id", "commit_mark"] {
            assert!(marks.remove(field).is_some(), "{field}");
        }
        for t in m["tables"].as_array_mut().unwrap() {
            let change = t["change"].as_object_mut().unwrap();
            change.remove("format");
            change.remove("relation_id");
        }
    });
    let new = dir.path().join("new");
    run(&db, &["--since", path(&earlier), "-o", path(&new)]);
    let manifest = read_manifest(&new);
    let change = &manifest_entry(&manifest, "T")["change"];
    assert_eq!(change["mode"], "full", "{change}");
    assert!(
        change["reason"]
            .as_str()
            .unwrap()
            .contains("did not record its format"),
        "{change}"
    );
    // Its own run records both: the next link reads changes.
    let next = dir.path().join("next");
    run(&db, &["--since", path(&new), "-o", path(&next)]);
    assert_eq!(
        manifest_entry(&read_manifest(&next), "T")["change"]["mode"],
        "changes"
    );

    let forged = copy("forged");
    edit_manifest(&forged, |m| {
        m["incremental"]["oldest_unseen"] = serde_json::json!(u64::MAX);
    });
    let out = fbunload(
        &db,
        &["--since", path(&forged), "-o", path(&dir.path().join("f"))],
    );
    assert_refused_in_one_line(&out, "--since");
    assert!(stderr(&out).contains("oldest_unseen"), "{}", stderr(&out));
    // A transaction listed as unseen at or above the bound.
    let forged = copy("forged-list");
    edit_manifest(&forged, |m| {
        let at = m["incremental"]["oldest_unseen"].clone();
        m["incremental"]["unseen_below"] = serde_json::json!([at]);
    });
    let out = fbunload(
        &db,
        &["--since", path(&forged), "-o", path(&dir.path().join("g"))],
    );
    assert_refused_in_one_line(&out, "--since");
    assert!(stderr(&out).contains("unseen_below"), "{}", stderr(&out));
}

/// A transaction running when the previous snapshot was taken widens the
/// next change set by its own rows only: the transactions that started
/// after it and committed before that snapshot are not read again.
#[test]
fn a_transaction_running_at_the_previous_snapshot_adds_only_its_own_rows() {
    superclassic();
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "running.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(20))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 200) DO BEGIN \
             INSERT INTO T VALUES (:I, 'v'); I = I + 1; END END",
        ],
    );
    let att = connect(&db);
    let running = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    running
        .execute("UPDATE T SET V = 'late' WHERE ID = 1")
        .unwrap();
    for i in 2..=51 {
        let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
        tr.execute(&format!("UPDATE T SET V = 'c{i}' WHERE ID = {i}"))
            .unwrap();
        tr.commit().unwrap();
    }
    let r0 = dir.path().join("r0");
    run(&db, &["--keep-keys", "-o", path(&r0)]);
    running.commit().unwrap();
    execute(&db, &["UPDATE T SET V = 'new' WHERE ID = 100"]);
    let r1 = dir.path().join("r1");
    run(&db, &["--since", path(&r0), "-o", path(&r1)]);
    assert_eq!(
        csv_ids(&r1.join("T.upserts.csv")),
        vec![1, 100],
        "{}",
        read_manifest(&r0)["incremental"]
    );
}

/// A table over several pointer pages, for the keys' memory and the
/// rechecks: `rows` rows of 100 bytes or so.
fn many_pages(dir: &Path, rows: u32) -> PathBuf {
    superclassic();
    let db = create_db(dir, "many.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE W (ID INTEGER NOT NULL PRIMARY KEY, PAD VARCHAR(120))",
            &format!(
                "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= {rows}) DO BEGIN \
                 INSERT INTO W VALUES (:I, RPAD('', 100, 'p' || :I)); I = I + 1; END END"
            ),
        ],
    );
    db
}

/// The files of a run that say what it read of W: its keys, and (for a
/// change set) its upserts and deletes.
fn w_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files(dir)
        .into_iter()
        .filter(|(name, _)| name.starts_with("W."))
        .collect()
}

/// Keys held within a tiny --memory spill in sorted runs, merged at the
/// end: the keys files and the change set are those of a run that held
/// every key in memory, byte for byte, with deletes all over the table.
#[test]
fn keys_spilled_under_a_tiny_memory_give_the_same_keys_files_and_change_set() {
    let dir = tempfile::tempdir().unwrap();
    let db = many_pages(dir.path(), 60_000);
    let runs = dir.path();
    let with = |memory: &str, args: &[&str], out: &str| {
        let out = runs.join(out);
        let mut all = vec!["--memory", memory, "--unit-pages", "64", "-o", path(&out)];
        all.extend_from_slice(args);
        run(&db, &all);
        out
    };
    // 60,000 keys of 12 bytes held: several runs of 128 KiB at --memory 1.
    let small = with("1", &["--keep-keys"], "r0-small");
    let large = with("256", &["--keep-keys"], "r0-large");
    assert_eq!(w_files(&small), w_files(&large));
    execute(
        &db,
        &[
            "DELETE FROM W WHERE MOD(ID, 97) = 0",
            "UPDATE W SET PAD = 'changed' WHERE MOD(ID, 89) = 0",
            "UPDATE W SET ID = ID + 100000 WHERE MOD(ID, 1009) = 1",
            "INSERT INTO W VALUES (200000, 'new')",
        ],
    );
    let args = ["--since", path(&large), "--format", "csv"];
    let small = with("1", &args, "r1-small");
    let large = with("256", &args, "r1-large");
    let (small_files, large_files) = (w_files(&small), w_files(&large));
    let names: Vec<&str> = small_files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"W.deletes.csv"), "{names:?}");
    assert_eq!(small_files, large_files);
    let w = manifest_entry(&read_manifest(&small), "W").clone();
    // 618 deleted, 60 keys changed (one of them a deleted row's).
    let deleted = (1..=60_000).filter(|i| i % 97 == 0).count();
    let moved = (1..=60_000)
        .filter(|i| i % 1009 == 1 && i % 97 != 0)
        .count();
    assert_eq!(w["change"]["deletes"], (deleted + moved) as u64, "{w}");
    // Keys read again only in the ranges of pages that lost rows, a
    // sixteenth of a unit each, those side by side read as one: more
    // reads than units (about 30 of 64 pages here), though a row in 97
    // is gone from every unit.
    assert!(w["change"]["rechecked_units"].as_u64().unwrap() > 30, "{w}");
    // The keys the change set ends with are those a full run reads now.
    let now = with("256", &["--keep-keys"], "r1-full");
    let keys = |dir: &Path| std::fs::read(dir.join("W.keys.parquet")).unwrap();
    assert_eq!(keys(&small), keys(&now));
    // Nothing but the run's files is left in the directory.
    for name in std::fs::read_dir(&small).unwrap() {
        let name = name.unwrap().file_name().into_string().unwrap();
        assert!(!name.contains(".run"), "{name} left behind");
    }
}

/// A table read for its changes has each unit's pages read once (issue
/// 53): one query counts a unit's unchanged rows and lists its changed
/// rows' DB_KEYs, and the changed rows are fetched by those keys (a range
/// where most rows changed is scanned for them instead). The run reads as
/// many units as a full run of the table, none of them twice, and writes
/// the changed rows in the order of their pages, the same files at -j1
/// and -j4.
#[test]
fn a_unit_read_for_its_changes_is_read_once_its_changed_rows_fetched_by_key() {
    let dir = tempfile::tempdir().unwrap();
    // Over three pointer pages: split into units by DB_KEY ranges.
    let db = many_pages(dir.path(), 40_000);
    let units = |events: &[serde_json::Value]| {
        let started = events.iter().find(|e| e["event"] == "started").unwrap();
        started["units"].as_u64().unwrap()
    };
    let with_events = |args: &[&str]| {
        let mut all = vec!["--unit-pages", "16", "--progress", "json"];
        all.extend_from_slice(args);
        let out = fbunload(&db, &all);
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect::<Vec<serde_json::Value>>()
    };
    let base = dir.path().join("base");
    let full = with_events(&["--keep-keys", "-o", path(&base)]);
    assert!(units(&full) > 20, "{full:?}");
    execute(
        &db,
        &[
            // A row in 997, all over: fetched by key.
            "UPDATE W SET PAD = 'spread' WHERE MOD(ID, 997) = 5",
            // Every row of the first pages: scanned for in their ranges.
            "UPDATE W SET PAD = 'all' WHERE ID <= 300",
        ],
    );
    let changed: Vec<i64> = (1..=40_000).filter(|i| i % 997 == 5 || *i <= 300).collect();
    let mut files_at = Vec::new();
    for j in ["1", "4"] {
        let out = dir.path().join(format!("j{j}"));
        let args = [
            "-j",
            j,
            "--since",
            path(&base),
            "-f",
            "csv",
            "-o",
            path(&out),
        ];
        let events = with_events(&args);
        assert_eq!(units(&events), units(&full), "{events:?}");
        let mut read: Vec<u64> = events
            .iter()
            .filter(|e| e["event"] == "unit" && e["table"] == "W")
            .map(|e| e["seq"].as_u64().unwrap())
            .collect();
        read.sort();
        let once: Vec<u64> = (0..units(&full)).collect();
        assert_eq!(read, once, "{events:?}");
        let ids: Vec<i64> = csv_records(&out.join("W.upserts.csv"))
            .iter()
            .filter_map(|r| r[0].parse().ok())
            .collect();
        assert_eq!(ids, changed);
        let w = manifest_entry(&read_manifest(&out), "W").clone();
        assert_eq!(w["change"]["deletes"], 0, "{w}");
        assert_eq!(w["change"]["rechecked_units"], 0, "{w}");
        files_at.push(w_files(&out));
    }
    assert!(files_at[0] == files_at[1], "-j1 and -j4 wrote other files");
}
