//! ARRAY columns end to end (issue #22): Firebird's own EMPLOYEE example
//! and ARRAY_TYPES (an array of each element type, odd bounds), unloaded
//! with defaults in every format, each element compared with what the
//! engine itself returns for `COLUMN[i, j]` in plain SQL, Parquet and
//! Arrow read back by pyarrow, and EMPLOYEE's schema.sql run into a new
//! database with the same array columns.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use fbunload_gen::arrays;
use serde_json::Value;

/// Firebird's own script of the EMPLOYEE example, as Debian's
/// `firebird3.0-examples` installs it (scripts/setup.sh does), or as
/// `FBUNLOAD_EMPLOYEE_SQL` names it.
fn employee_script() -> Option<String> {
    let path = std::env::var_os("FBUNLOAD_EMPLOYEE_SQL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from("/usr/share/doc/firebird3.0-common-doc/examples/employee.sql.gz")
        });
    if !path.is_file() {
        eprintln!(
            "SKIPPED: {} not found: install Debian's firebird3.0-examples (scripts/setup.sh \
             does) or set FBUNLOAD_EMPLOYEE_SQL",
            path.display()
        );
        return None;
    }
    let bytes = std::fs::read(&path).unwrap();
    if path.extension().is_some_and(|e| e == "gz") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .unwrap();
        Some(text)
    } else {
        Some(String::from_utf8(bytes).unwrap())
    }
}

fn employee(dir: &Path, script: &str) -> PathBuf {
    let db = create_db(dir, "employee.fdb", 8192);
    let statements = arrays::script_statements(script);
    assert!(statements.len() > 50, "{} statements", statements.len());
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    execute(&db, &statements);
    arrays::fill_employee(&connect(&db)).unwrap();
    db
}

/// ARRAY_TYPES as the sample database (`fbunload sample`) holds it.
fn array_types(dir: &Path) -> PathBuf {
    let db = dir.join("arrays.fdb");
    let options = fbunload_gen::GenOptions {
        tables: vec![fbunload_gen::Table::ArrayTypes],
        page_size: 4096,
        ..fbunload_gen::GenOptions::new(&db)
    };
    fbunload_gen::generate(&client(), &options).unwrap();
    db
}

/// Rows of a JSON Lines file.
fn json_lines(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| match serde_json::from_str(line).unwrap() {
            Value::Object(row) => row,
            other => panic!("not an object: {other}"),
        })
        .collect()
}

fn flatten(value: &Value, out: &mut Vec<Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| flatten(v, out)),
        other => out.push(other.clone()),
    }
}

/// Every subscript of an array of these bounds, in row-major order.
fn subscripts(bounds: &[(i32, i32)]) -> Vec<Vec<i32>> {
    let mut all = vec![Vec::new()];
    for &(lower, upper) in bounds {
        all = all
            .into_iter()
            .flat_map(|prefix| {
                (lower..=upper).map(move |i| {
                    let mut next = prefix.clone();
                    next.push(i);
                    next
                })
            })
            .collect();
    }
    all
}

/// Checks `table`'s array columns in `unloaded` (JSON Lines) against the
/// engine's own `COLUMN[i, j]` of every element, read in plain SQL by a
/// `--query` of the same run (`oracle`), row by row in `key` order; and
/// against the dimensions each array must have. Returns the elements
/// compared.
fn compare_with_engine(
    unloaded: &[serde_json::Map<String, Value>],
    oracle: &[serde_json::Map<String, Value>],
    columns: &[(&str, &[(i32, i32)])],
) -> usize {
    assert_eq!(unloaded.len(), oracle.len());
    let mut compared = 0;
    for (row, engine) in unloaded.iter().zip(oracle) {
        for (column, bounds) in columns {
            let value = &row[*column];
            let expected: Vec<Value> = subscripts(bounds)
                .iter()
                .map(|s| engine[&element_name(column, s)].clone())
                .collect();
            if value.is_null() {
                assert!(
                    expected.iter().all(Value::is_null),
                    "{column}: NULL, but the engine has {expected:?}"
                );
                continue;
            }
            // One list level per dimension, each as long as its bounds say.
            let mut level = value;
            for &(lower, upper) in *bounds {
                let items = level
                    .as_array()
                    .unwrap_or_else(|| panic!("{column}: {value}"));
                assert_eq!(items.len() as i32, upper - lower + 1, "{column}: {value}");
                level = &items[0];
            }
            let mut got = Vec::new();
            flatten(value, &mut got);
            assert_eq!(got, expected, "{column}");
            compared += got.len();
        }
    }
    compared
}

fn element_name(column: &str, subscript: &[i32]) -> String {
    let parts: Vec<String> = subscript
        .iter()
        .map(|i| i.to_string().replace('-', "M"))
        .collect();
    format!("{column}_{}", parts.join("_"))
}

/// `SELECT key..., COLUMN[i, j] AS COLUMN_i_j ... FROM table ORDER BY key`.
fn oracle_sql(table: &str, key: &[&str], columns: &[(&str, &[(i32, i32)])]) -> String {
    let mut select: Vec<String> = key.iter().map(|k| k.to_string()).collect();
    for (column, bounds) in columns {
        for s in subscripts(bounds) {
            let list: Vec<String> = s.iter().map(i32::to_string).collect();
            select.push(format!(
                "{column}[{}] AS {}",
                list.join(", "),
                element_name(column, &s)
            ));
        }
    }
    format!(
        "SELECT {} FROM {table} ORDER BY {}",
        select.join(", "),
        key.join(", ")
    )
}

const ARRAY_TYPES: &[(&str, &[(i32, i32)])] = &[
    ("GRID", &[(0, 1), (-1, 1)]),
    ("AMOUNTS", &[(1, 3)]),
    ("DAYS", &[(1, 2)]),
    ("MOMENTS", &[(1, 2)]),
    ("FLAGS", &[(1, 2)]),
    ("RATIOS", &[(1, 2)]),
    ("CODES", &[(1, 2)]),
    ("RAW", &[(1, 2)]),
    ("EXACT", &[(1, 2)]),
    ("HUGE", &[(1, 2)]),
    ("ALARMS", &[(1, 2)]),
    ("COUNTS", &[(-1, 1)]),
    ("NAMES", &[(1, 2), (0, 1)]),
];

fn unload(db: &Path, out: &Path, args: &[&str]) {
    let mut full = vec!["-q", "-o", out.to_str().unwrap()];
    full.extend_from_slice(args);
    let result = fbunload(db, &full);
    assert!(result.status.success(), "{args:?}: {}", stderr(&result));
}

#[test]
fn every_element_type_unloads_as_the_engine_reads_it_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let db = array_types(dir.path());
    let out = dir.path().join("out");
    let oracle = oracle_sql("ARRAY_TYPES", &["ID"], ARRAY_TYPES);
    for format in ["jsonl", "csv", "tsv", "parquet", "arrow"] {
        let target = out.join(format);
        let header = if format.ends_with("sv") {
            "--header"
        } else {
            "--verify"
        };
        unload(
            &db,
            &target,
            &[
                header,
                "-f",
                format,
                "-t",
                "ARRAY_TYPES",
                "--query",
                &oracle,
                "--name",
                "ORACLE",
            ],
        );
    }
    unload(
        &db,
        &out.join("parquet-split"),
        &["-f", "parquet", "--split", "-t", "ARRAY_TYPES"],
    );
    // The manifest and the element fields carry the types as declared.
    let manifest = read_manifest(&out.join("jsonl"));
    let columns = &manifest_entry(&manifest, "ARRAY_TYPES")["columns"];
    assert_eq!(
        columns[7]["firebird_type"],
        "CHAR(3) [1:2] CHARACTER SET WIN1252"
    );
    let arrow_type = columns[9]["arrow_type"].as_str().unwrap();
    assert!(arrow_type.contains("\"DECFLOAT(34)\""), "{arrow_type}");
    let unloaded = json_lines(&out.join("jsonl/ARRAY_TYPES.jsonl"));
    let engine = json_lines(&out.join("jsonl/ORACLE.jsonl"));
    let compared = compare_with_engine(&unloaded, &engine, ARRAY_TYPES);
    assert_eq!(compared, 2 * 34, "two rows of arrays, the third NULL");
    assert!(ARRAY_TYPES.iter().all(|(c, _)| unloaded[2][*c].is_null()));
    // What the edges must look like, whatever the engine says.
    assert_eq!(
        unloaded[0]["GRID"],
        serde_json::json!([[1, -2, 3], [i32::MIN, 0, i32::MAX]])
    );
    assert_eq!(unloaded[0]["CODES"], serde_json::json!(["é€", "a,b"]));
    assert_eq!(
        unloaded[0]["NAMES"],
        serde_json::json!([["😀😀😀😀😀", "a,\"b\""], ["", "x\ny"]])
    );
    assert_eq!(
        unloaded[0]["MOMENTS"],
        serde_json::json!(["0001-01-01 00:00:00.0000", "9999-12-31 23:59:59.9999"])
    );
    assert_eq!(
        unloaded[0]["AMOUNTS"],
        serde_json::json!(["123.45", "-0.01", "21474836.47"])
    );
    assert_eq!(
        unloaded[0]["ALARMS"],
        serde_json::json!(["23:59:59.9999+00:00", "00:00:00.0001+00:00"])
    );

    // CSV and TSV hold the same JSON array in one field.
    for (format, delimiter) in [("csv", b','), ("tsv", b'\t')] {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .from_path(out.join(format!("{format}/ARRAY_TYPES.{format}")))
            .unwrap();
        let header = reader.headers().unwrap().clone();
        for (record, row) in reader.records().zip(&unloaded) {
            let record = record.unwrap();
            for (name, field) in header.iter().zip(record.iter()) {
                if name == "ID" {
                    continue;
                }
                let value = if field.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(field)
                        .unwrap_or_else(|e| panic!("{format} {name}: {field}: {e}"))
                };
                assert_eq!(value, row[name], "{format} {name}");
            }
        }
    }
    assert!(pyarrow_roundtrip(&out, &["ARRAY_TYPES"]) > 0);
}

#[test]
fn employee_unloads_with_defaults_and_its_schema_sql_makes_the_same_arrays() {
    let Some(script) = employee_script() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = employee(dir.path(), &script);
    let out = dir.path().join("out");
    let job = [("LANGUAGE_REQ", &[(1, 5)][..])];
    let budget = [("QUART_HEAD_CNT", &[(1, 4)][..])];
    let job_oracle = oracle_sql("JOB", &["JOB_CODE", "JOB_GRADE", "JOB_COUNTRY"], &job);
    let budget_oracle = oracle_sql(
        "PROJ_DEPT_BUDGET",
        &["FISCAL_YEAR", "PROJ_ID", "DEPT_NO"],
        &budget,
    );
    // Every table, every format, no option but the format.
    for format in ["csv", "tsv", "jsonl", "parquet", "arrow"] {
        unload(&db, &out.join(format), &["-f", format, "-j", "2"]);
    }
    let oracle_out = out.join("oracle");
    unload(
        &db,
        &oracle_out,
        &[
            "-f",
            "jsonl",
            "-t",
            "JOB,PROJ_DEPT_BUDGET",
            "--query",
            &job_oracle,
            "--name",
            "JOB_ORACLE",
            "--query",
            &budget_oracle,
            "--name",
            "BUDGET_ORACLE",
        ],
    );
    // The table files are in storage order; the oracles in key order.
    let sorted = |table: &str, key: &[&str]| {
        let mut rows = json_lines(&out.join(format!("jsonl/{table}.jsonl")));
        let key_of = |r: &serde_json::Map<String, Value>| -> Vec<String> {
            key.iter().map(|k| r[*k].to_string()).collect()
        };
        rows.sort_by_key(key_of);
        rows
    };
    let sort_oracle = |name: &str, key: &[&str]| {
        let mut rows = json_lines(&oracle_out.join(format!("{name}.jsonl")));
        rows.sort_by_key(|r| key.iter().map(|k| r[*k].to_string()).collect::<Vec<_>>());
        rows
    };
    let job_key = ["JOB_CODE", "JOB_GRADE", "JOB_COUNTRY"];
    let budget_key = ["FISCAL_YEAR", "PROJ_ID", "DEPT_NO"];
    let jobs = sorted("JOB", &job_key);
    let mut compared = compare_with_engine(&jobs, &sort_oracle("JOB_ORACLE", &job_key), &job);
    compared += compare_with_engine(
        &sorted("PROJ_DEPT_BUDGET", &budget_key),
        &sort_oracle("BUDGET_ORACLE", &budget_key),
        &budget,
    );
    assert!(compared > 100, "{compared} elements compared");
    assert!(jobs
        .iter()
        .any(|r| r["LANGUAGE_REQ"] == serde_json::json!(["日本語", "English", "", "", ""])));
    assert!(pyarrow_roundtrip(&out, &["JOB", "PROJ_DEPT_BUDGET", "EMPLOYEE"]) > 100);

    // schema.sql makes the same array columns in a new database.
    let sql = std::fs::read_to_string(out.join("csv/schema.sql")).unwrap();
    assert!(
        sql.contains("VARCHAR(15) [1:5]") && sql.contains("INTEGER [1:4]"),
        "{sql}"
    );
    let copy = create_db(dir.path(), "copy.fdb", 8192);
    let statements = arrays::script_statements(&sql);
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    execute(&copy, &statements);
    let arrays_of = |db: &Path| {
        let target = dir.path().join(format!(
            "catalog-{}",
            db.file_stem().unwrap().to_string_lossy()
        ));
        unload(
            db,
            &target,
            &[
                "-f",
                "csv",
                "--query",
                "SELECT rf.RDB$RELATION_NAME, rf.RDB$FIELD_NAME, f.RDB$FIELD_TYPE, \
                 f.RDB$FIELD_LENGTH, f.RDB$CHARACTER_SET_ID, d.RDB$DIMENSION, \
                 d.RDB$LOWER_BOUND, d.RDB$UPPER_BOUND FROM RDB$RELATION_FIELDS rf \
                 JOIN RDB$FIELDS f ON f.RDB$FIELD_NAME = rf.RDB$FIELD_SOURCE \
                 JOIN RDB$FIELD_DIMENSIONS d ON d.RDB$FIELD_NAME = f.RDB$FIELD_NAME \
                 ORDER BY 1, 2, 6",
                "--name",
                "ARRAYS",
            ],
        );
        std::fs::read_to_string(target.join("ARRAYS.csv")).unwrap()
    };
    let source = arrays_of(&db);
    assert_eq!(
        source.lines().count(),
        3,
        "a header and two arrays: {source}"
    );
    assert_eq!(source, arrays_of(&copy));
}

#[test]
fn an_array_column_of_a_query_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = array_types(dir.path());
    let out = dir.path().join("out");
    let result = fbunload(
        &db,
        &[
            "-o",
            out.to_str().unwrap(),
            "--query",
            "SELECT ID, GRID FROM ARRAY_TYPES",
            "--name",
            "Q",
        ],
    );
    assert!(!result.status.success());
    let text = stderr(&result);
    assert!(
        text.contains("GRID") && text.contains("ARRAY columns are read from tables only"),
        "{text}"
    );
    assert!(!out.join("Q.csv").exists());
}

/// An array of a table and column whose names are as long as Firebird
/// allows (63 characters, here 4 bytes each: 252 bytes) and hold quotes:
/// the slice names them in full (the client's own `isc_array_*` calls
/// would cut them to 31 bytes and miss the column).
#[test]
fn arrays_of_the_longest_and_oddest_names_are_read() {
    use fbunload_client::{element, ArrayShape, ElementType, TransactionMode};
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "names.fdb", 4096);
    let table = format!("T \"q\" {}", "😀".repeat(57));
    let column = "𝄞".repeat(63);
    assert_eq!(table.chars().count(), 63);
    let quoted = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    execute(
        &db,
        &[&format!(
            "CREATE TABLE {} (ID INTEGER, {} SMALLINT [0:2])",
            quoted(&table),
            quoted(&column)
        )],
    );
    let att = connect(&db);
    let tr = att.start_transaction(TransactionMode::ReadWrite).unwrap();
    let shape = ArrayShape {
        relation: table.clone(),
        field: column.clone(),
        element: ElementType {
            code: element::SHORT,
            scale: 0,
            length: 0,
            charset: 0,
        },
        bounds: vec![(0, 2)],
    };
    let mut slice: Vec<u8> = [-1i16, 0, i16::MAX]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let id = tr.write_array(&shape, &mut slice).unwrap();
    tr.execute_with_arrays(
        &format!("INSERT INTO {} VALUES (1, ?)", quoted(&table)),
        &[Some(id)],
    )
    .unwrap();
    tr.commit().unwrap();
    drop(att);

    let out = dir.path().join("out");
    unload(&db, &out, &["-f", "jsonl"]);
    let file = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .expect("the table's file");
    let rows = json_lines(&file.path());
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][&column], serde_json::json!([-1, 0, 32767]));
}
