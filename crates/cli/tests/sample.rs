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
    assert!(err.contains("10 tables"), "{err}");
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
    ] {
        let records = csv_records(&out_dir.join(format!("{table}.csv")));
        assert_eq!(records.len(), rows, "{table}");
    }
    assert!(out_dir.join("manifest.json").exists());

    let again = fbunload_in(dir.path(), &["sample", "try.fdb", "--items", "300"]);
    let path = dir.path().canonicalize().unwrap().join("try.fdb");
    assert_refused_in_one_line(
        &again,
        &format!(
            "sample: {} already exists (use --force to replace it)",
            path.display()
        ),
    );
    let forced = fbunload_in(
        dir.path(),
        &["sample", "try.fdb", "--items", "300", "--force", "-q"],
    );
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(stderr(&forced), "", "-q says nothing");
}
