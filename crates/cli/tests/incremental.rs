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

use common::oracle::{self, check, path, SCHEMA};
use common::*;
use fbunload_client::TransactionMode;

fn run(db: &Path, args: &[&str]) {
    let out = fbunload(db, args);
    assert!(out.status.success(), "fbunload {args:?}: {}", stderr(&out));
}

/// The writers of a test and the runs in their processes share a
/// database: the engine in SuperClassic mode, for this test binary and
/// the runs it starts.
fn superclassic() {
    static RUNTIME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let runtime = dir.join("runtime");
        runtime_in_mode(&embedded_runtime(), &runtime, "SuperClassic");
        std::env::set_var("FIREBIRD", &runtime);
        runtime
    });
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
    let out = fbunload(
        &db,
        &[
            "--since",
            path(&old),
            "--progress",
            "json",
            "-o",
            path(&new),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<serde_json::Value> = stderr(&out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let of = |kind: &'static str| events.iter().filter(move |e| e["event"] == kind);
    let planned = of("started").next().unwrap()["units"].as_u64().unwrap();
    let more: u64 = of("more_units").map(|e| e["units"].as_u64().unwrap()).sum();
    assert!(more >= 1, "no unit rechecked: {}", stderr(&out));
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

/// `apply` reads two directories it did not write: a table name from a
/// manifest never leads its file out of the new directory, and a file
/// listed outside its run's directory is refused.
#[test]
fn apply_keeps_names_from_manifests_inside_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _) = base(dir.path());
    let old = dir.path().join("pq0");
    let new = dir.path().join("pq1");
    run(&db, &["--keep-keys", "-f", "parquet", "-o", path(&old)]);
    execute(&db, &["UPDATE S SET V = 3"]);
    run(
        &db,
        &["--since", path(&old), "-f", "parquet", "-o", path(&new)],
    );
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
    use arrow_array::{Array, Int32Array, StringArray};
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let ids = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        let texts = batch
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        for i in 0..batch.num_rows() {
            rows.push((
                ids.value(i),
                texts.is_valid(i).then(|| texts.value(i).to_string()),
            ));
        }
    }
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
    let (db, _) = base(dir.path());
    let old = dir.path().join("pq0");
    let new = dir.path().join("pq1");
    run(&db, &["--keep-keys", "-f", "parquet", "-o", path(&old)]);
    execute(&db, &["UPDATE S SET V = 3"]);
    run(
        &db,
        &["--since", path(&old), "-f", "parquet", "-o", path(&new)],
    );
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
            "T.keys",
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
