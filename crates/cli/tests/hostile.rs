//! Hostile names, values and options (issue #10): each test here failed
//! before its fix. Names and values come from the database, so they are
//! input like any other.

mod common;

use common::*;

/// Firebird pads names on the right only: a leading blank is part of a
/// name, so `" C"`, `"C"` and `"  C"` are three columns, and `" T"` is not
/// `"T"`.
#[test]
fn names_keep_their_leading_blanks() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "names.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE COLS (\" C\" INTEGER, \"C\" INTEGER, \"  C\" VARCHAR(10))",
            "CREATE TABLE \" T\" (V VARCHAR(10))",
            "CREATE TABLE T (V VARCHAR(10))",
            "INSERT INTO COLS VALUES (1, 2, 'three')",
            "INSERT INTO \" T\" VALUES ('spaced')",
            "INSERT INTO T VALUES ('plain')",
        ],
    );
    let out_dir = dir.path().join("out");
    let out = fbunload(&db, &["--header", "-o", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(out_dir.join("COLS.csv")).unwrap(),
        " C,C,  C\n1,2,three\n"
    );
    assert_eq!(
        std::fs::read_to_string(out_dir.join(" T.csv")).unwrap(),
        "V\nspaced\n"
    );
    assert_eq!(
        std::fs::read_to_string(out_dir.join("T.csv")).unwrap(),
        "V\nplain\n"
    );
    // The filter sees the same names.
    let out = fbunload(&db, &["--plan", "--tables", " T"]);
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(plan.lines().any(|l| l.starts_with(" T ")), "{plan}");
    assert!(!plan.lines().any(|l| l.starts_with("T ")), "{plan}");
}
