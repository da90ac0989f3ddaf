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

/// A NULL in a one-column table was a blank line, which pyarrow and pandas
/// skip: rows vanished downstream.
#[test]
fn one_column_nulls_survive_common_csv_readers() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "one.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE ONE_INT (I INTEGER)",
            "CREATE TABLE ONE_TEXT (S VARCHAR(10))",
            "INSERT INTO ONE_INT VALUES (1)",
            "INSERT INTO ONE_INT VALUES (NULL)",
            "INSERT INTO ONE_INT VALUES (3)",
            "INSERT INTO ONE_TEXT VALUES ('a')",
            "INSERT INTO ONE_TEXT VALUES (NULL)",
            "INSERT INTO ONE_TEXT VALUES ('')",
            "INSERT INTO ONE_TEXT VALUES ('NULL')",
        ],
    );
    let out_dir = dir.path().join("out");
    let out = fbunload(&db, &["--header", "-o", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(out_dir.join("ONE_TEXT.csv")).unwrap(),
        "S\na\nNULL\n\"\"\n\"NULL\"\n"
    );
    let script = r#"
import sys, pandas, pyarrow.csv as pc
ints = sys.argv[1] + "/ONE_INT.csv"
texts = sys.argv[1] + "/ONE_TEXT.csv"
frame = pandas.read_csv(ints)
assert len(frame) == 3 and frame.I.isna().tolist() == [False, True, False], frame
assert len(pandas.read_csv(texts)) == 4
table = pc.read_csv(ints)
assert table.num_rows == 3 and table.column("I").to_pylist() == [1, None, 3], table
assert pc.read_csv(texts).num_rows == 4
"#;
    let run = std::process::Command::new("python3")
        .args(["-c", script, out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn a_null_text_that_would_break_records_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "nulls.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE T (A INTEGER, B INTEGER)",
            "INSERT INTO T VALUES (NULL, 1)",
        ],
    );
    for null in ["a,b", "\"", "x\ny", "\r"] {
        let out_dir = dir.path().join("out");
        let out = fbunload(&db, &["--null", null, "-o", out_dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "--null {null:?}");
        let err = stderr(&out);
        assert!(err.contains("--null") && err.lines().count() == 1, "{err}");
        assert!(!out_dir.exists(), "nothing written for --null {null:?}");
    }
    // The same text is fine where it is not the delimiter.
    let out_dir = dir.path().join("tsv");
    let out = fbunload(
        &db,
        &[
            "-f",
            "tsv",
            "--null",
            "a,b",
            "-o",
            out_dir.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(out_dir.join("T.tsv")).unwrap(),
        "a,b\t1\n"
    );
}
