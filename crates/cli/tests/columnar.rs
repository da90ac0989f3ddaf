//! Parquet and Arrow IPC files, read back by an independent reader
//! (pyarrow, via `roundtrip.py`) and compared value by value with the
//! JSON Lines unload of the same tables; and byte-identical for any
//! `--parallel`.

mod common;

use std::process::Command;

use common::*;
use fbunload_gen::{generate, GenOptions, Table};

#[test]
fn parquet_and_arrow_hold_what_firebird_returned() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("col.fdb"));
    options.tables = vec![
        Table::AllTypes,
        Table::Mixed,
        Table::EmptyTable,
        Table::Stock,
    ];
    options.items = 20_000;
    options.page_size = 4096;
    generate(&client(), &options).unwrap();
    let db = &options.database;
    let out = dir.path().join("out");

    for (dir, args) in [
        ("jsonl", vec!["-f", "jsonl", "-j", "2"]),
        // ALL_TYPES holds the largest INT128 values decimal128(38, 0)
        // holds, as every reader takes them.
        ("parquet", vec!["-f", "parquet", "-j", "2"]),
        ("arrow", vec!["-f", "arrow", "-j", "2"]),
        ("parquet-serial", vec!["-f", "parquet", "-j", "1"]),
        (
            "parquet-split",
            vec!["-f", "parquet", "--split", "--compression", "snappy"],
        ),
    ] {
        let target = out.join(dir);
        let mut full = args.clone();
        full.extend(["--verify", "-o", target.to_str().unwrap()]);
        let result = fbunload(db, &full);
        assert!(result.status.success(), "{dir}: {}", stderr(&result));
    }
    assert!(
        files(&out.join("parquet")) == files(&out.join("parquet-serial")),
        "Parquet files must not depend on --parallel"
    );
    assert!(out
        .join("parquet-split/STOCK.parquet/part-00000.parquet")
        .is_file());
    // A Parquet file is complete only at its end: `-o -` sends it whole.
    let streamed = fbunload(
        db,
        &["-f", "parquet", "-j", "2", "--tables", "STOCK", "-o", "-"],
    );
    assert!(streamed.status.success(), "{}", stderr(&streamed));
    assert!(
        streamed.stdout == std::fs::read(out.join("parquet/STOCK.parquet")).unwrap(),
        "-o - must send the same Parquet file"
    );

    let checked = pyarrow_roundtrip(
        &out,
        &["ALL_TYPES", "Mixed Case \"Quoted\"", "EMPTY_TABLE", "STOCK"],
    );
    assert!(checked > 20_000 * 17, "too few values checked: {checked}");
}

/// INT128 was decimal256(39, 0), which polars and Spark cannot read and
/// DuckDB reads as a DOUBLE, losing digits. It is now decimal128(38, 0) as
/// every reader takes it; `--decimal256` keeps the wide form. The sample's
/// ALL_TYPES holds INT128 values of 38 digits: pyarrow reads every value
/// of either form as firebird-driver does, DuckDB the default exactly.
#[test]
fn int128_is_decimal128_by_default_and_decimal256_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("types.fdb"));
    options.tables = vec![Table::AllTypes];
    generate(&client(), &options).unwrap();
    let db = &options.database;
    let out = dir.path().join("out");
    for format in ["parquet", "arrow"] {
        for (dir, wide) in [
            (format.to_string(), None),
            (format!("wide-{format}"), Some("--decimal256")),
        ] {
            let target = out.join(dir);
            let mut args = vec!["-q", "-f", format, "-o", target.to_str().unwrap()];
            args.extend(wide);
            let result = fbunload(db, &args);
            assert!(result.status.success(), "{args:?}: {}", stderr(&result));
        }
    }
    let script = r#"
import ctypes, os, sys, pathlib
from decimal import Decimal
import duckdb, pyarrow.feather as fe, pyarrow.parquet as pq
import firebird.embedded
from firebird.driver import connect, driver_config
runtime = pathlib.Path(firebird.embedded.__file__).parent / "runtime"
os.environ.setdefault("FIREBIRD", str(runtime))
for lib in ["libtommath.so.1", str(runtime / "libtomcrypt.so.1")]:
    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
driver_config.fb_client_library.value = str(next(runtime.glob("libfbclient.so*")))
db, out = sys.argv[1], pathlib.Path(sys.argv[2])
numbers = ["C_INT128", "C_NUMERIC_4_1", "C_NUMERIC_9_3", "C_NUMERIC_18_4", "C_NUMERIC_38_6",
           "C_DECIMAL_10_2"]
con = connect(db, user="SYSDBA", password="masterkey")
cur = con.cursor()
cur.execute(f"SELECT {', '.join(numbers)} FROM ALL_TYPES ORDER BY ID")
expected = [tuple(None if v is None else Decimal(v) for v in row) for row in cur.fetchall()]
con.close()
assert Decimal(10**38 - 1) in [r[0] for r in expected] and Decimal(1 - 10**38) in [r[0] for r in expected]
types = {"C_INT128": "decimal128(38, 0)", "C_NUMERIC_38_6": "decimal128(38, 6)",
         "C_NUMERIC_18_4": "decimal128(19, 4)"}
wide = dict(types, C_INT128="decimal256(39, 0)", C_NUMERIC_38_6="decimal256(39, 6)")
for prefix, want in [("", types), ("wide-", wide)]:
    for table in [pq.read_table(out / f"{prefix}parquet/ALL_TYPES.parquet"),
                  fe.read_table(out / f"{prefix}arrow/ALL_TYPES.arrow")]:
        table.validate(full=True)
        table = table.sort_by("ID")
        for name, type_ in want.items():
            assert str(table.schema.field(name).type) == type_, (name, table.schema.field(name))
        got = list(zip(*(table.column(n).to_pylist() for n in numbers)))
        assert got == expected, (got, expected)
rows = duckdb.sql(f"SELECT {', '.join(numbers)} FROM '{out}/parquet/ALL_TYPES.parquet' ORDER BY ID").fetchall()
assert rows == expected, (rows, expected)
print("ok")
"#;
    let run = Command::new("python3")
        .args(["-c", script, db.to_str().unwrap(), out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The run's memory budget (`--memory`) holds units waiting for their
/// turn and, for Parquet and Arrow, groups being encoded and waiting to be
/// appended: at 8 workers within 1 MB, workers wait and units spill, and
/// every format still writes what one worker writes.
#[test]
fn a_small_memory_budget_at_eight_workers_writes_what_one_worker_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("budget.fdb"));
    options.tables = vec![Table::Stock, Table::Customer, Table::Item];
    options.items = 30_000;
    options.page_size = 4096;
    generate(&client(), &options).unwrap();
    let db = &options.database;

    for format in [
        vec!["-f", "csv"],
        vec!["-f", "csv", "--compress", "zstd"],
        vec!["-f", "parquet", "--row-group-rows", "2000"],
        vec!["-f", "arrow"],
    ] {
        let mut outputs = Vec::new();
        for args in [
            vec!["-j", "1"],
            vec!["-j", "8", "--unit-pages", "2", "--memory", "1"],
        ] {
            let out = dir
                .path()
                .join(format!("{}-{}", format.join(""), outputs.len()));
            let mut full = format.clone();
            full.extend(args);
            full.extend(["-o", out.to_str().unwrap()]);
            let result = fbunload(db, &full);
            assert!(result.status.success(), "{format:?}: {}", stderr(&result));
            outputs.push(files(&out));
        }
        assert!(
            outputs[0] == outputs[1],
            "{format:?}: -j8 within 1 MB differs from -j1"
        );
    }
}

#[test]
fn parquet_and_arrow_are_byte_identical_for_any_parallel_and_unit_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("groups.fdb"));
    options.tables = vec![Table::Stock];
    // More rows than one Arrow batch (65,536), so batches span units too.
    options.items = 70_000;
    options.page_size = 4096;
    generate(&client(), &options).unwrap();
    let db = &options.database;

    for (name, format) in [
        (
            "small-groups",
            vec!["-f", "parquet", "--row-group-rows", "3000"],
        ),
        ("snappy", vec!["-f", "parquet", "--compression", "snappy"]),
        ("arrow", vec!["-f", "arrow"]),
    ] {
        let mut outputs = Vec::new();
        for (label, args) in [
            (
                "serial, whole table",
                vec!["-j", "1", "--unit-pages", "100000"],
            ),
            (
                "2 workers, a page per unit",
                vec!["-j", "2", "--unit-pages", "1"],
            ),
            (
                "3 workers, 7 pages, no memory",
                vec!["-j", "3", "--unit-pages", "7", "--memory", "0"],
            ),
        ] {
            let out = dir.path().join(format!("{name}-{}", outputs.len()));
            let mut full = format.clone();
            full.extend(args);
            full.extend(["-o", out.to_str().unwrap()]);
            let result = fbunload(db, &full);
            assert!(result.status.success(), "{label}: {}", stderr(&result));
            outputs.push((label, files(&out)));
        }
        let (first_label, first) = &outputs[0];
        for (label, files) in &outputs[1..] {
            assert!(
                files == first,
                "{format:?}: {label} differs from {first_label}"
            );
        }
    }

    // Row groups are cut by rows, not by units: 70,000 rows in 3,000s.
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let file = std::fs::File::open(dir.path().join("small-groups-0/STOCK.parquet")).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let groups: Vec<i64> = reader
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows())
        .collect();
    assert_eq!(groups.len(), 24, "{groups:?}");
    assert!(groups[..23].iter().all(|&n| n == 3000) && groups[23] == 1000);

    let refused = fbunload(db, &["-f", "csv", "--row-group-rows", "10", "-o", "x"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("--row-group-rows is for --format parquet"),
        "{}",
        stderr(&refused)
    );
}

/// An option of other formats is refused the same way for every one of
/// them, in one line that names it and the format, before attaching.
#[test]
fn options_of_other_formats_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    // No database there: the refusal must come first.
    let db = dir.path().join("absent.fdb");
    let out_dir = dir.path().join("out");
    let out_arg = out_dir.to_str().unwrap();
    for (args, expected) in [
        (
            vec!["-f", "parquet", "--header"],
            "--header is for --format csv or tsv, not parquet",
        ),
        (
            vec!["-f", "arrow", "--header"],
            "--header is for --format csv or tsv, not arrow",
        ),
        (
            vec!["-f", "jsonl", "--header"],
            "--header is for --format csv or tsv, not jsonl",
        ),
        (
            vec!["-f", "parquet", "--delimiter", ";"],
            "--delimiter is for --format csv, not parquet",
        ),
        (
            vec!["-f", "jsonl", "--null", "NULL"],
            "--null is for --format csv or tsv, not jsonl",
        ),
        (
            vec!["-f", "arrow", "--crlf"],
            "--crlf is for --format csv or tsv, not arrow",
        ),
        (vec!["--split"], "--split is for --format parquet, not csv"),
        (
            vec!["-f", "parquet", "--compress", "gzip"],
            "--compress is for --format csv, tsv or jsonl, not parquet",
        ),
        (
            vec!["-f", "jsonl", "--compression", "snappy"],
            "--compression is for --format parquet, not jsonl",
        ),
    ] {
        let mut full = args.clone();
        full.extend(["-o", out_arg]);
        assert_refused_in_one_line(&fbunload(&db, &full), expected);
        assert!(!out_dir.exists(), "{args:?}: nothing written");
    }
}
