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
        "A\tB\na,b\t1\n"
    );
}

/// Every column is decoded from its own character set, whatever
/// `--charset` says (it names the encoding of CHARACTER SET NONE text):
/// `--charset NONE` turned UTF8 text into mojibake, `--charset WIN1252`
/// broke non-ASCII names, a single-byte VARCHAR(32765) failed under UTF8,
/// and an OCTETS text BLOB was written as text.
#[test]
fn text_is_decoded_from_each_columns_character_set() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "charsets.fdb", 8192);
    let long_win = "é".repeat(20_000);
    execute(
        &db,
        &[
            "CREATE TABLE \"日本表\" (\"Ü\" INTEGER, \
               U VARCHAR(10) CHARACTER SET UTF8, W VARCHAR(10) CHARACTER SET WIN1252, \
               L CHAR(4) CHARACTER SET ISO8859_1, D VARCHAR(10) CHARACTER SET DOS437, \
               N VARCHAR(10) CHARACTER SET NONE, \
               O BLOB SUB_TYPE TEXT CHARACTER SET OCTETS, \
               T BLOB SUB_TYPE TEXT CHARACTER SET WIN1252, \
               BIG VARCHAR(32765) CHARACTER SET WIN1252)",
            "INSERT INTO \"日本表\" VALUES (1, 'u日本', 'wé€', 'lé', 'd╬é', 'n', 'oct', 'tblobé€', 'big')",
            // Built in WIN1252 by the server: more characters than a UTF8
            // VARCHAR (8,191) or a UTF8 literal (16,383) can hold.
            "INSERT INTO \"日本表\" (\"Ü\", BIG) VALUES (2, LPAD(CAST('' AS VARCHAR(1) CHARACTER SET WIN1252), 20000, \
               CAST('é' AS VARCHAR(1) CHARACTER SET WIN1252)))",
        ],
    );
    let expected_first = "1,u日本,wé€,lé,d╬é,n,6f6374,tblobé€,big";
    for charset in [None, Some("NONE"), Some("UTF8"), Some("WIN1252")] {
        let out_dir = dir.path().join(format!("out-{charset:?}"));
        let mut args = vec!["--header", "-o", out_dir.to_str().unwrap()];
        if let Some(c) = charset {
            args.extend(["--charset", c]);
        }
        let out = fbunload(&db, &args);
        assert!(
            out.status.success(),
            "--charset {charset:?}: {}",
            stderr(&out)
        );
        let text = std::fs::read_to_string(out_dir.join("日本表.csv")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Ü,U,W,L,D,N,O,T,BIG", "--charset {charset:?}");
        assert_eq!(lines[1], expected_first, "--charset {charset:?}");
        assert_eq!(
            lines[2],
            format!("2,,,,,,,,{long_win}"),
            "--charset {charset:?}"
        );
    }
    // The declared types are what Arrow readers see.
    let out_dir = dir.path().join("arrow");
    let out = fbunload(&db, &["-f", "arrow", "-o", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let script = r#"
import sys, pyarrow.feather as f
t = f.read_table(sys.argv[1] + "/日本表.arrow")
types = {x.name: x.metadata[b"fbunload.type"].decode() for x in t.schema}
assert types["W"] == "VARCHAR(10) CHARACTER SET WIN1252", types
assert types["L"] == "CHAR(4) CHARACTER SET ISO8859_1", types
assert types["O"] == "BLOB SUB_TYPE TEXT CHARACTER SET OCTETS", types
assert str(t.schema.field("O").type) == "binary", t.schema
assert t.column("D").to_pylist()[0] == "d╬é"
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

/// CHAR columns in multi-byte character sets are read as their bytes
/// (CHARACTER SET NONE) and decoded here in their own character set: each
/// value comes out as the engine holds it, less its padding, leading blanks
/// and full-length values included.
#[test]
fn multi_byte_char_columns_decode_as_the_engine_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "multibyte.fdb", 8192);
    let columns = [
        ("U", "UTF8", [" é€", "éé€€"]),
        ("F", "UNICODE_FSS", [" é€", "éé€€"]),
        ("S", "SJIS_0208", [" 日本", "日本語字"]),
        ("E", "EUCJ_0208", [" 日本", "日本語字"]),
        ("K", "KSC_5601", [" 한국", "한국어글"]),
        ("B", "BIG_5", [" 中文", "中文中文"]),
        ("G", "GB_2312", [" 中文", "中文中文"]),
        ("K2", "GBK", [" 中文", "中文中文"]),
        ("G18", "GB18030", [" 中文", "中文中文"]),
    ];
    let create = format!(
        "CREATE TABLE MB (ID INTEGER, {})",
        columns
            .iter()
            .map(|(name, charset, _)| format!("{name} CHAR(4) CHARACTER SET {charset}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let row = |id: usize, i: usize| {
        let values: Vec<String> = columns
            .iter()
            .map(|(_, _, v)| format!("'{}'", v[i]))
            .collect();
        format!("INSERT INTO MB VALUES ({id}, {})", values.join(", "))
    };
    let empty = format!(
        "INSERT INTO MB VALUES (3, {})",
        vec!["''"; columns.len()].join(", ")
    );
    execute(
        &db,
        &[
            &create,
            &row(1, 0),
            &row(2, 1),
            &empty,
            "INSERT INTO MB (ID) VALUES (4)",
        ],
    );
    let out_dir = dir.path().join("out");
    let out = fbunload(&db, &["-f", "jsonl", "-o", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(out_dir.join("MB.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let expected = |id: usize, value: &dyn Fn(&[&str; 2]) -> String| {
        let fields: Vec<String> = columns
            .iter()
            .map(|(name, _, v)| format!("\"{name}\":{}", value(v)))
            .collect();
        format!("{{\"ID\":{id},{}}}", fields.join(","))
    };
    assert_eq!(lines[0], expected(1, &|v| format!("\"{}\"", v[0])));
    assert_eq!(lines[1], expected(2, &|v| format!("\"{}\"", v[1])));
    assert_eq!(lines[2], expected(3, &|_| "\"\"".into()));
    assert_eq!(lines[3], expected(4, &|_| "null".into()));
    assert_eq!(lines.len(), 4);
}

/// CHARACTER SET NONE text is decoded as `--charset` says; bytes that are
/// not UTF-8 under the default fail naming the column and the fix.
#[test]
fn none_text_is_decoded_as_the_user_says() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "none.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE LEGACY (N VARCHAR(10) CHARACTER SET NONE)",
            // The bytes of 'café' in WIN1252, stored as they are.
            "INSERT INTO LEGACY VALUES (x'636166e9')",
        ],
    );
    let out_dir = dir.path().join("default");
    let out = fbunload(&db, &["-o", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("LEGACY") && err.contains("column N") && err.contains("--charset"),
        "{err}"
    );
    let out_dir = dir.path().join("win");
    let out = fbunload(
        &db,
        &["--charset", "WIN1252", "-o", out_dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(out_dir.join("LEGACY.csv")).unwrap(),
        "N\ncafé\n"
    );
}

/// INT128 holds values of 39 digits, Arrow's decimal128 at most 38: such a
/// value in a decimal128(38) column made files that pyarrow's full
/// validation and DuckDB reject. Every INT128, bare or NUMERIC(38, s), is
/// decimal128(38, s) as every reader takes it, and a value of 39 digits is
/// refused by name, unless `--decimal256` asks for a type that holds it;
/// text formats are exact.
#[test]
fn int128_values_of_39_digits_are_refused_or_written_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "wide.fdb", 8192);
    // INT128's maximum, and the same digits at scale 2.
    let max = "CAST('170141183460469231731687303715884105727' AS INT128)";
    let max_scaled = "CAST('1701411834604692317316873037158841057.27' AS NUMERIC(38,2))";
    execute(
        &db,
        &[
            "CREATE TABLE WIDE (ID INTEGER, I INT128, N NUMERIC(38,2))",
            "CREATE TABLE NARROW (I NUMERIC(38,0), N NUMERIC(38,2))",
            &format!("INSERT INTO WIDE VALUES (1, {max}, {max_scaled})"),
            &format!("INSERT INTO WIDE VALUES (2, -{max}, 12.34)"),
            "INSERT INTO NARROW VALUES (99999999999999999999999999999999999999, -12.34)",
        ],
    );
    let max_text = "170141183460469231731687303715884105727";
    let csv_dir = dir.path().join("csv");
    let out = fbunload(&db, &["-t", "WIDE", "-o", csv_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(csv_dir.join("WIDE.csv")).unwrap(),
        format!(
            "ID,I,N\n1,{max_text},1701411834604692317316873037158841057.27\n2,-{max_text},12.34\n"
        )
    );
    for format in ["parquet", "arrow"] {
        let out_dir = dir.path().join(format!("{format}-refused"));
        let out = fbunload(&db, &["-f", format, "-o", out_dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{format}");
        let err = stderr(&out);
        assert!(
            err.contains("WIDE")
                && err.contains("column I: value 170141183460469231731687303715884105727 is an INT128 of 39 digits")
                && err.contains("--decimal256"),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!out_dir.join(format!("WIDE.{format}")).exists());
    }
    let script = r#"
import sys, decimal, duckdb, pyarrow.parquet as pq, pyarrow.feather as fe
root, max_text = sys.argv[1], sys.argv[2]
for fmt, read in [("parquet", pq.read_table), ("arrow", fe.read_table)]:
    wide = read(f"{root}/{fmt}-wide/WIDE.{fmt}")
    wide.validate(full=True)
    assert str(wide.schema.field("I").type) == "decimal256(39, 0)", wide.schema
    assert wide.column("I").to_pylist() == [decimal.Decimal(max_text), decimal.Decimal("-" + max_text)]
    assert str(wide.schema.field("N").type) == "decimal256(39, 2)", wide.schema
    assert str(wide.column("N").to_pylist()[0]) == max_text[:-2] + "." + max_text[-2:]
    narrow = read(f"{root}/{fmt}-narrow/NARROW.{fmt}")
    narrow.validate(full=True)
    assert str(narrow.schema.field("I").type) == "decimal128(38, 0)", narrow.schema
# DuckDB reads both: decimal128 exactly, decimal256 as DOUBLE.
row = duckdb.sql(f"select I, N from '{root}/parquet-narrow/NARROW.parquet'").fetchall()[0]
assert row == (decimal.Decimal("9" * 38), decimal.Decimal("-12.34")), row
row = duckdb.sql(f"select I from '{root}/parquet-wide/WIDE.parquet' order by 1 desc").fetchall()[0]
assert abs(row[0] - float(max_text)) < 1e24, row
"#;
    for format in ["parquet", "arrow"] {
        let wide_dir = dir.path().join(format!("{format}-wide"));
        let out = fbunload(
            &db,
            &[
                "-t",
                "WIDE",
                "-f",
                format,
                "--decimal256",
                "-o",
                wide_dir.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let narrow_dir = dir.path().join(format!("{format}-narrow"));
        let out = fbunload(
            &db,
            &[
                "-t",
                "NARROW",
                "-f",
                format,
                "-o",
                narrow_dir.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let run = std::process::Command::new("python3")
        .args(["-c", script, dir.path().to_str().unwrap(), max_text])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// Two runs into one directory shared a temporary file and one exited 0
/// with a file mixing both runs' rows. Now the directory is locked.
#[test]
fn a_second_run_into_the_same_directory_is_refused_not_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "busy.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE BIG (ID INTEGER, PAD VARCHAR(200))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 300000) DO BEGIN \
               INSERT INTO BIG VALUES (:I, RPAD('', 150, 'x')); I = I + 1; END END",
        ],
    );
    let out = dir.path().join("out");
    let first = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .arg("-d")
        .arg(&db)
        .args(["-u", "SYSDBA", "-p", "masterkey", "-j", "1", "-q", "-o"])
        .arg(&out)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !being_written(&out, "BIG.csv") {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let second = fbunload(&db, &["-o", out.to_str().unwrap()]);
    let err = stderr(&second);
    assert!(!second.status.success());
    assert!(
        err.contains("another fbunload run is writing into it") && err.lines().count() == 1,
        "{err}"
    );
    assert!(first.wait_with_output().unwrap().status.success());
    let text = std::fs::read_to_string(out.join("BIG.csv")).unwrap();
    assert_eq!(text.lines().count(), 1 + 300000, "a header and every row");
    assert_eq!(
        files(&out).into_iter().map(|(n, _)| n).collect::<Vec<_>>(),
        ["BIG.csv", "schema.sql"],
        "nothing else is left"
    );
}

/// Links planted in the output directory, at temporary names and at final
/// ones, were followed: a victim file outside was written or truncated.
#[cfg(unix)]
#[test]
fn links_planted_in_the_output_directory_are_never_followed() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let victim = dir.path().join("victim");
    for format in ["csv", "parquet", "arrow"] {
        std::fs::write(&victim, b"precious").unwrap();
        let out = dir.path().join(format!("out-{format}"));
        std::fs::create_dir(&out).unwrap();
        let names = [
            format!("TINY.{format}"),
            format!("TINY.{format}.partial"),
            format!("TINY.{format}.converting"),
            ".TINY.csv.unit0.part".to_string(),
        ];
        for name in &names {
            symlink(&victim, out.join(name)).unwrap();
        }
        for pid in 0..5 {
            let next_pid = std::process::id() + pid;
            symlink(&victim, out.join(format!(".fbunload-probe-{next_pid}"))).unwrap();
        }
        let args = [
            "--format",
            format,
            "--memory",
            "0",
            "-o",
            out.to_str().unwrap(),
        ];
        // A link at a table's name is another run's file: refused...
        let run = fbunload(&db, &args);
        assert_eq!(run.status.code(), Some(1), "{format}: {}", stderr(&run));
        assert!(stderr(&run).contains("--overwrite"), "{}", stderr(&run));
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "{format}");
        // ...and replaced, not written through, when overwriting.
        let run = fbunload(&db, &[&args[..], &["--overwrite"]].concat());
        assert!(run.status.success(), "{format}: {}", stderr(&run));
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "{format}");
        let table = out.join(format!("TINY.{format}"));
        assert!(
            table.symlink_metadata().unwrap().file_type().is_file(),
            "{format}: the link at the final name is replaced by the file"
        );
    }
}

/// After `kill -9`, hidden part files stayed for ever and every rerun
/// failed with "File exists". A dead run's staging directory is removed.
#[test]
fn what_a_killed_run_left_is_cleaned_up_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let out = dir.path().join("out");
    let dead = out.join(".fbunload-run-Ab12Cd");
    std::fs::create_dir_all(&dead).unwrap();
    std::fs::write(dead.join("TINY.csv"), b"half").unwrap();
    std::fs::write(dead.join("table0.unit0.part"), b"spilled").unwrap();
    let run = fbunload(&db, &["--memory", "0", "-o", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(!dead.exists());
    let left = files(&out);
    assert_eq!(left[0], ("TINY.csv".to_string(), b"ID\n1\n".to_vec()));
    assert_eq!(left.len(), 2, "TINY.csv and schema.sql only");
}

/// Switching between `--split` and one Parquet file in a directory failed
/// on the leftovers of the other ("File exists"); a directory of someone
/// else's files at the final name must be named, not removed.
#[test]
fn parquet_split_and_plain_take_turns_in_one_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = small_db(dir.path());
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let table = out.join("TINY.parquet");
    for split in [true, false, true, true, false, false] {
        let mut args = vec!["--format", "parquet", "--overwrite", "-o", o];
        if split {
            args.push("--split");
        }
        let run = fbunload(&db, &args);
        assert!(run.status.success(), "split {split}: {}", stderr(&run));
        assert_eq!(table.is_dir(), split);
        assert_eq!(
            std::fs::read_dir(&out).unwrap().count(),
            3,
            "only the table, schema.sql and the manifest"
        );
    }
    // The manifest lists the file TINY.parquet; a directory there now is
    // not what it listed.
    std::fs::remove_file(&table).unwrap();
    std::fs::create_dir(&table).unwrap();
    std::fs::write(table.join("notes.txt"), b"mine").unwrap();
    let run = fbunload(&db, &["--format", "parquet", "--overwrite", "-o", o]);
    let err = stderr(&run);
    assert!(!run.status.success());
    assert!(err.contains("TINY") && err.contains("in the way"), "{err}");
    assert!(table.join("notes.txt").exists());
    let mut left: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    // The failed rerun touched nothing: the old run's manifest and
    // schema.sql stay, the user's directory too, and nothing of the new
    // run is left.
    assert_eq!(
        left,
        ["TINY.parquet", "manifest.json", "schema.sql"],
        "no leftovers"
    );
}

/// Table names of 63 four-byte characters made file names too long.
#[test]
fn names_too_long_for_a_file_system_get_a_short_unique_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "long.fdb", 8192);
    let long_a = "𝄞".repeat(63);
    let long_b = format!("{}𝄢", "𝄞".repeat(62));
    execute(
        &db,
        &[
            &format!("CREATE TABLE \"{long_a}\" (V INTEGER)"),
            &format!("CREATE TABLE \"{long_b}\" (V INTEGER)"),
            &format!("INSERT INTO \"{long_a}\" VALUES (1)"),
            &format!("INSERT INTO \"{long_b}\" VALUES (2)"),
        ],
    );
    let out = dir.path().join("out");
    let run = fbunload(&db, &["-o", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    let mut contents: Vec<Vec<u8>> = files(&out)
        .into_iter()
        .filter(|(name, _)| name != "schema.sql")
        .map(|(name, bytes)| {
            assert!(name.len() <= 255 && name.contains('~'), "{name}");
            bytes
        })
        .collect();
    contents.sort();
    assert_eq!(contents, [b"V\n1\n".to_vec(), b"V\n2\n".to_vec()]);
}

/// Table names with ESC or newline reached the terminal raw in `--plan`,
/// the summary and errors.
#[test]
fn control_characters_in_names_are_escaped_when_shown() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "ctl.fdb", 8192);
    let name = "EVIL\x1b[2J\nFAKE";
    execute(
        &db,
        &[
            &format!("CREATE TABLE \"{name}\" (V INTEGER)"),
            &format!("INSERT INTO \"{name}\" VALUES (1)"),
        ],
    );
    let plan = fbunload(&db, &["--plan"]);
    let out = dir.path().join("out");
    let run = fbunload(&db, &["-o", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", stderr(&run));
    for shown in [
        String::from_utf8_lossy(&plan.stdout).into_owned(),
        stderr(&run),
    ] {
        assert!(!shown.contains('\x1b'), "{shown:?}");
        assert!(shown.contains("EVIL\\u{1b}[2J\\nFAKE"), "{shown:?}");
    }
    assert_eq!(
        files(&out).into_iter().map(|(n, _)| n).collect::<Vec<_>>(),
        ["EVIL%1B[2J%0AFAKE.csv", "schema.sql"]
    );
}

/// `--exclude 'TMP\_%'` (the --help example) did not exclude TMP_A: SIMILAR
/// TO has no escape character unless one is named.
#[test]
fn a_backslash_escapes_in_table_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "escape.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE TMP_A (V INTEGER)",
            "CREATE TABLE TMPXA (V INTEGER)",
            "CREATE TABLE KEEP (V INTEGER)",
        ],
    );
    let out = fbunload(&db, &["--plan", "--exclude", "TMP\\_%"]);
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    let tables: Vec<&str> = plan
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|t| ["TMP_A", "TMPXA", "KEEP"].contains(t))
        .collect();
    assert_eq!(tables, ["KEEP", "TMPXA"], "{plan}");
}

/// `-t 'A,B'` matched nothing (a comma is no separator in SIMILAR TO):
/// commas now list tables, and a name with a comma is still reachable.
#[test]
fn commas_list_tables_and_a_comma_in_a_name_can_be_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "commas.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE ORDERS (V INTEGER)",
            "CREATE TABLE CUSTOMERS (V INTEGER)",
            "CREATE TABLE \"ORDERS,CUSTOMERS\" (V INTEGER)",
            "CREATE TABLE OTHER (V INTEGER)",
        ],
    );
    let planned = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--plan"];
        all.extend_from_slice(args);
        let out = fbunload(&db, &all);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let plan = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut tables: Vec<String> = plan
            .lines()
            .skip(1)
            .take_while(|l| !l.contains(" of up to "))
            .map(|l| l.split("  ").next().unwrap().to_string())
            .collect();
        tables.sort();
        tables
    };
    assert_eq!(
        planned(&["-t", "ORDERS, CUSTOMERS"]),
        ["CUSTOMERS", "ORDERS"]
    );
    assert_eq!(planned(&["-t", "ORDERS\\,CUSTOMERS"]), ["ORDERS,CUSTOMERS"]);
    assert_eq!(planned(&["-t", "ORDERS[,]CUSTOMERS"]), ["ORDERS,CUSTOMERS"]);
    assert_eq!(
        planned(&["--exclude", "ORDERS,CUSTOMERS"]),
        ["ORDERS,CUSTOMERS", "OTHER"]
    );

    let out = fbunload(&db, &["--plan", "-t", "NOPE%|NADA[0-9]"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("--tables 'NOPE%|NADA[0-9]' matches no table")
            && err.contains("list several with | or commas, e.g. 'A|B'"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// A name in a list that names no table is a typo to report, not an
/// alternative to drop: `-t 'ORDERS|ORDRES'` must not unload ORDERS alone
/// and exit 0 (as pg_dump's --strict-names). A wildcard may match nothing.
#[test]
fn a_listed_name_that_names_no_table_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "strict.fdb", 8192);
    execute(
        &db,
        &[
            "CREATE TABLE ORDERS (ID INTEGER)",
            "CREATE TABLE CUSTOMERS (ID INTEGER)",
            "CREATE VIEW ORDER_VIEW AS SELECT ID FROM ORDERS",
        ],
    );
    for (args, message) in [
        (
            &["-t", "ORDERS|ORDRES"][..],
            "--tables 'ORDERS|ORDRES': ORDRES is not the name of a table; check the \
             spelling. Tables: CUSTOMERS, ORDERS",
        ),
        (
            &["-t", "ORDERS,FOO, BAR"],
            "--tables 'ORDERS,FOO, BAR': FOO, BAR are not names of tables",
        ),
        (
            &["-x", "NOPE"],
            "--exclude 'NOPE': NOPE is not the name of a table",
        ),
        (
            &["-t", "\"orders\""],
            "--tables '\"orders\"': orders is not the name of a table (a quoted name is \
             exact: did you mean ORDERS? --tables ORDERS)",
        ),
        (
            &["--views", "ORDER_VIEW|ORDER_VEIW"],
            "--views 'ORDER_VIEW|ORDER_VEIW': ORDER_VEIW is not the name of a view",
        ),
    ] {
        let out_dir = dir.path().join("out");
        let mut all = args.to_vec();
        all.extend(["-o", out_dir.to_str().unwrap()]);
        let out = fbunload(&db, &all);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} exit 0: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out_dir.exists(), "{args:?} left {out_dir:?}");
    }
    // Wildcards that match nothing beside a name that matches are fine.
    let out = fbunload(&db, &["--plan", "-t", "ORDERS|TMP\\_%", "-x", "OLD%"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Firebird ends a `--` comment at a carriage return as well as at a line
/// feed; fbunload's check ended it at a line feed only, so this condition
/// looked balanced to it and made every unit read every row (1,560,000
/// rows for 60,000). Now it is refused, and a comment that ends at a CR
/// in a sound condition reads what Firebird reads, every row once.
#[test]
fn a_comment_ended_by_a_carriage_return_cannot_widen_a_unit() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "cr.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE BIG (ID INTEGER NOT NULL, A VARCHAR(40))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN \
               WHILE (I < 60000) DO BEGIN \
                 INSERT INTO BIG VALUES (:I, 'r' || (:I * 7919) || '-' || (:I * 104729)); \
                 I = I + 1; END END",
        ],
    );
    let out_dir = dir.path().join("out");
    let out_arg = out_dir.to_str().unwrap();
    for condition in [
        "ID < 0 --\r) OR 1=1 OR (1=1",
        "ID < 0 --\r\n) OR 1=1 OR (1=1",
        "BIG: ID < 0 -- \r) OR (1=1",
    ] {
        let out = fbunload(
            &db,
            &[
                "-t",
                "BIG",
                "--where",
                condition,
                "--unit-pages",
                "40",
                "-o",
                out_arg,
            ],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{condition:?}: {err}");
        assert!(
            err.contains("a ) closes more than the condition opened"),
            "{condition:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{condition:?}: one line: {err}");
        assert!(!out_dir.join("BIG.csv").exists(), "{condition:?}");
    }

    let condition = "ID < 100 -- note\r AND MOD(ID, 2) = 0";
    let out = fbunload(
        &db,
        &[
            "-t",
            "BIG",
            "--where",
            condition,
            "--unit-pages",
            "40",
            "-j",
            "3",
            "--verify",
            "-o",
            out_arg,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let ids: Vec<i64> = csv_records(&out_dir.join("BIG.csv"))
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert_eq!(ids, (0..100).step_by(2).collect::<Vec<i64>>());
    let manifest = read_manifest(&out_dir);
    let big = manifest_entry(&manifest, "BIG");
    assert_eq!(big["rows"], 50);
    assert_eq!(big["where"], condition, "kept as given");
}

/// The client library is found by asking Python where `firebird-embedded`
/// keeps it, with `python3 -c`, which imports from its working directory
/// first: a `./firebird/embedded/provider.py` planted where fbunload runs
/// chose the library fbunload loaded (and gave the password). It is
/// asked from `/`: the planted code never runs and the run completes.
#[test]
fn the_client_library_lookup_imports_nothing_from_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "lookup.fdb", 4096);
    execute(
        &db,
        &["CREATE TABLE T (ID INTEGER)", "INSERT INTO T VALUES (1)"],
    );
    let planted = dir.path().join("planted");
    let package = planted.join("firebird").join("embedded");
    std::fs::create_dir_all(&package).unwrap();
    let marker = dir.path().join("planted-code-ran");
    let code = format!("open({:?}, 'a').write('ran')\n", marker.to_str().unwrap());
    std::fs::write(planted.join("firebird").join("__init__.py"), &code).unwrap();
    std::fs::write(package.join("__init__.py"), &code).unwrap();
    std::fs::write(package.join("provider.py"), &code).unwrap();
    let out_dir = dir.path().join("out");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .arg("-d")
        .arg(&db)
        .args([
            "-u",
            "SYSDBA",
            "-p",
            "masterkey",
            "-o",
            out_dir.to_str().unwrap(),
        ])
        // As a user's: no FIREBIRD (this test process set it when it
        // loaded the library), so the library is looked for.
        .env_remove("FIREBIRD")
        .current_dir(&planted)
        .output()
        .unwrap();
    assert!(!marker.exists(), "the planted firebird package ran");
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The fbunload binary started as a reader process, every stream piped.
fn reader_process() -> std::process::Child {
    use std::process::{Command, Stdio};
    Command::new(env!("CARGO_BIN_EXE_fbunload"))
        .arg("--fbunload-reader-process")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A reader process whose run is gone (its output pipe closed: the run
/// was interrupted or ended) says nothing on the terminal, where it
/// printed its failure ("Broken pipe" after a Ctrl-C), and ends with
/// status 1.
#[test]
fn a_reader_process_whose_run_is_gone_says_nothing() {
    use std::io::Write;
    let mut child = reader_process();
    // The run's end of the reader's output goes first.
    drop(child.stdout.take());
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&[0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0])
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "");
}

/// A reader process takes its orders only from its run, over its
/// standard input: started by hand, or fed anything else (a length of
/// 4 GiB, a setup of another build), it says so on standard error and
/// ends with status 1, allocating nothing it was told to.
#[test]
fn a_reader_process_refuses_what_its_run_did_not_send() {
    use std::io::Write;
    let setup_of_another_build = {
        let json = br#"{"protocol":"fbunload-reader/0 0.0.0"}"#;
        let mut frame = ((json.len() + 5) as u32).to_le_bytes().to_vec();
        frame.push(1);
        frame.extend_from_slice(&u32::MAX.to_le_bytes());
        frame.extend_from_slice(json);
        frame
    };
    for (what, input, expected) in [
        ("nothing", Vec::new(), "not run by hand"),
        (
            "a huge frame",
            vec![0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0],
            "impossible length",
        ),
        (
            "another build",
            setup_of_another_build,
            "another build of fbunload",
        ),
    ] {
        let mut child = reader_process();
        child.stdin.take().unwrap().write_all(&input).unwrap();
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(err.contains(expected), "{what}: {err}");
    }
}
