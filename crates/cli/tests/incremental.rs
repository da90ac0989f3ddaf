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
    // Keys read again only in the ranges of pages that lost rows: many
    // small ranges (about 30 units of 64 pages here).
    assert!(
        w["change"]["rechecked_units"].as_u64().unwrap() > 100,
        "{w}"
    );
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
