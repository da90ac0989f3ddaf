//! `fbunload sample`: the database a newcomer tries first, made by the
//! installed program, and the command it suggests, run as printed.

mod common;

use std::process::Command;

use common::*;

fn fbunload_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_sample_database_is_made_and_the_suggested_command_unloads_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = fbunload_in(dir.path(), &["sample", "try.fdb", "--items", "300"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("11 tables"), "{err}");
    // Each table by the name a user selects it with (-t takes it).
    assert!(err.contains("  Mixed Case \"Quoted\"  "), "{err}");
    assert!(!err.contains("MIXED"), "{err}");
    // The last line is the command to try, as a user would paste it.
    let suggested = err.lines().last().unwrap().trim();
    assert_eq!(suggested, "fbunload -d try.fdb -o out", "{err}");
    let args: Vec<&str> = suggested.split(' ').skip(1).collect();
    let unloaded = fbunload_in(dir.path(), &args);
    assert!(unloaded.status.success(), "{}", stderr(&unloaded));
    let out_dir = dir.path().join("out");
    for (table, rows) in [
        ("WAREHOUSE", 1),
        ("DISTRICT", 10),
        ("ITEM", 300),
        ("STOCK", 300),
        ("ALL_TYPES", 12),
        ("EMPTY_TABLE", 0),
        ("ARRAY_TYPES", 3),
    ] {
        let records = csv_records(&out_dir.join(format!("{table}.csv")));
        assert_eq!(records.len(), rows, "{table}");
    }
    assert!(out_dir.join("manifest.json").exists());
    // The sample's view is not unloaded unless --views asks (nor is its
    // procedure, nor the computed column).
    assert!(!out_dir.join("LOW_STOCK.csv").exists());
    let customer = csv_records(&out_dir.join("CUSTOMER.csv"));
    assert_eq!(customer[0].len(), 22, "CUSTOMER's columns without C_NAME");
    // check takes the manifest's path as well as its directory.
    let checked = fbunload_in(dir.path(), &["check", "out/manifest.json"]);
    assert!(checked.status.success(), "{}", stderr(&checked));
    // --fetch-only writes nothing, so it needs no -o.
    let fetched = fbunload_in(
        dir.path(),
        &["-d", "try.fdb", "-t", "ITEM", "--fetch-only", "-q"],
    );
    assert!(fetched.status.success(), "{}", stderr(&fetched));

    // Any password opens a file: the embedded engine checks none, and says
    // so once to a person (stderr a terminal: util-linux's script gives one).
    let any = Command::new("script")
        .current_dir(dir.path())
        .args(["-qec"])
        .arg(format!(
            "{} -d try.fdb -u SYSDBA -p wrong -t ITEM -o o2",
            env!("CARGO_BIN_EXE_fbunload")
        ))
        .arg("/dev/null")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&any.stdout);
    assert!(any.status.success(), "{shown}");
    assert_eq!(shown.matches("checks no password").count(), 1, "{shown}");
    let quiet = fbunload_in(dir.path(), &["-d", "try.fdb", "-t", "ITEM", "-o", "o3"]);
    assert!(!stderr(&quiet).contains("password"), "{}", stderr(&quiet));

    // The same sample again is kept, so that a tutorial runs twice.
    let again = fbunload_in(dir.path(), &["sample", "try.fdb", "--items", "300"]);
    let said = stderr(&again);
    assert!(again.status.success(), "{said}");
    assert!(
        said.contains("already this sample") && said.contains("kept"),
        "{said}"
    );
    assert!(std::fs::metadata(dir.path().join("out/ITEM.csv")).is_ok());
    // Another size, or another database, is refused.
    let other = fbunload_in(dir.path(), &["sample", "try.fdb", "--items", "200"]);
    let path = dir.path().canonicalize().unwrap().join("try.fdb");
    assert_refused_in_one_line(
        &other,
        &format!(
            "sample: {} already exists and is not the sample these options make",
            path.display()
        ),
    );
    std::fs::write(dir.path().join("mine.fdb"), b"not a database").unwrap();
    let mine = fbunload_in(dir.path(), &["sample", "mine.fdb", "--items", "300"]);
    assert!(!mine.status.success());
    assert_eq!(
        std::fs::read(dir.path().join("mine.fdb")).unwrap(),
        b"not a database"
    );
    let forced = fbunload_in(
        dir.path(),
        &["sample", "try.fdb", "--items", "300", "--force", "-q"],
    );
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(stderr(&forced), "", "-q says nothing");
}

/// `fbunload sample DB --changes N` changes rows so that an incremental
/// run (`--since`) has updates, deletes and inserts to write, with
/// fbunload alone.
#[test]
fn sample_changes_make_an_incremental_run_find_changes() {
    let dir = tempfile::tempdir().unwrap();
    let made = fbunload_in(dir.path(), &["sample", "try.fdb", "--items", "300", "-q"]);
    assert!(made.status.success(), "{}", stderr(&made));
    let tables = ["-t", "STOCK|CUSTOMER|ORDER_LINE|ITEM|ARRAY_TYPES"];
    let mut full = vec!["-d", "try.fdb", "-q", "--keep-keys", "-o", "night0"];
    full.extend(tables);
    let night0 = fbunload_in(dir.path(), &full);
    assert!(night0.status.success(), "{}", stderr(&night0));
    let changed = fbunload_in(dir.path(), &["sample", "try.fdb", "--changes", "20"]);
    let said = stderr(&changed);
    assert!(changed.status.success(), "{said}");
    assert!(said.contains("ORDER_LINE: rows deleted"), "{said}");
    let mut since = vec!["-d", "try.fdb", "-q", "--since", "night0", "-o", "night1"];
    since.extend(tables);
    let night1 = fbunload_in(dir.path(), &since);
    assert!(night1.status.success(), "{}", stderr(&night1));
    let rows = |name: &str| csv_records(&dir.path().join("night1").join(name)).len();
    // 20 % of 300 STOCK rows and of 300 ITEM rows, of 30,000 customers and
    // about 300,000 order lines: far from none, far from all.
    assert!(
        (20..150).contains(&rows("STOCK.upserts.csv")),
        "{}",
        rows("STOCK.upserts.csv")
    );
    assert!(
        (20..150).contains(&rows("ITEM.upserts.csv")),
        "{}",
        rows("ITEM.upserts.csv")
    );
    assert!(rows("CUSTOMER.upserts.csv") > 3000);
    assert!(rows("ORDER_LINE.deletes.csv") > 30_000);
    assert_eq!(rows("ORDER_LINE.upserts.csv"), 0);
    // ARRAY_TYPES' first row is copied every time, its arrays with it
    // (ARRAY_TYPES' columns but the key, ID, equal).
    let night = |run: &str, name: &str| csv_records(&dir.path().join(run).join(name));
    let first = night("night0", "ARRAY_TYPES.csv").remove(0);
    assert_eq!(first[0], "1");
    assert!(first[1].starts_with("[["), "{first:?}");
    let copies = night("night1", "ARRAY_TYPES.upserts.csv");
    assert!((1..=3).contains(&copies.len()), "{copies:?}");
    assert!(
        copies.iter().any(|copy| copy[1..] == first[1..]),
        "{copies:?}"
    );
    // A changed sample is no longer the sample: making it is refused.
    let again = fbunload_in(dir.path(), &["sample", "try.fdb", "--items", "300"]);
    assert!(!again.status.success());
}
