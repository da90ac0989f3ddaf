//! End to end: tables cut into numbered parts (`--max-rows`,
//! `--max-bytes`) against a real database on the embedded engine. The
//! parts join to the unsplit table, are the same for any `--parallel` and
//! unit size, each reads alone, end where the limits say, are listed in
//! manifest.json, and a rerun with --overwrite leaves none of the old ones.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

const ROWS: usize = 20_000;

/// ITEMS: 20,000 rows, some names with quotes and line breaks (a record
/// of several lines); EMPTY: no rows. 4 KiB pages: many units.
fn items_db(dir: &Path) -> PathBuf {
    let db = create_db(dir, "parts.fdb", 4096);
    execute(
        &db,
        &[
            "CREATE TABLE ITEMS (ID INTEGER NOT NULL, PRICE NUMERIC(9,2), NAME VARCHAR(40))",
            "CREATE TABLE EMPTY (ID INTEGER)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 20000) DO BEGIN \
               INSERT INTO ITEMS VALUES (:I, :I / 100.0, \
                 IIF(MOD(:I, 7) = 0, 'say \"hi\"' || ASCII_CHAR(10) || :I, 'item ' || :I)); \
               I = I + 1; END END",
        ],
    );
    db
}

fn unload(db: &Path, out: &Path, args: &[&str]) -> Output {
    let mut full = vec!["-q", "-o", out.to_str().unwrap()];
    full.extend_from_slice(args);
    let result = fbunload(db, &full);
    assert!(result.status.success(), "{args:?}: {}", stderr(&result));
    result
}

/// The files of table `stem` in `dir` (`ITEMS.000001.csv`, ...), sorted,
/// with their bytes.
fn parts_of(dir: &Path, stem: &str) -> Vec<(String, Vec<u8>)> {
    files(dir)
        .into_iter()
        .filter(|(name, _)| name.starts_with(&format!("{stem}.")))
        .collect()
}

/// The names manifest.json lists for `table`.
fn listed(dir: &Path, table: &str) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    let table = manifest["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == table)
        .unwrap();
    table["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_string())
        .collect()
}

/// Records of CSV text, parsed properly.
fn records(text: &[u8]) -> usize {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text)
        .records()
        .count()
}

#[test]
fn text_parts_join_to_the_table_and_are_the_same_for_any_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let db = items_db(dir.path());
    let header = b"ID,PRICE,NAME\n";
    for (label, extension, format) in [
        ("csv", "csv", vec!["--header"]),
        ("zstd", "csv.zst", vec!["--header", "--compress", "zstd"]),
        ("jsonl", "jsonl", vec!["-f", "jsonl"]),
    ] {
        let whole_dir = dir.path().join(format!("{label}-whole"));
        let mut args = format.clone();
        args.extend(["-j", "1"]);
        unload(&db, &whole_dir, &args);
        let decompress = |bytes: &[u8]| match label {
            "zstd" => zstd::decode_all(bytes).unwrap(),
            _ => bytes.to_vec(),
        };
        let whole =
            decompress(&std::fs::read(whole_dir.join(format!("ITEMS.{extension}"))).unwrap());

        let mut runs = Vec::new();
        for (run, workers) in [
            ("j1", vec!["-j", "1", "--unit-pages", "100000"]),
            ("j3", vec!["-j", "3", "--unit-pages", "1", "--memory", "0"]),
        ] {
            let out = dir.path().join(format!("{label}-{run}"));
            let mut args = format.clone();
            args.extend(workers);
            args.extend(["--max-rows", "3000"]);
            unload(&db, &out, &args);
            runs.push(out);
        }
        let parts = parts_of(&runs[0], "ITEMS");
        assert_eq!(
            parts,
            parts_of(&runs[1], "ITEMS"),
            "{label}: parts differ between -j1 and -j3"
        );
        let names: Vec<&str> = parts.iter().map(|(n, _)| n.as_str()).collect();
        let expected: Vec<String> = (1..=7)
            .map(|i| format!("ITEMS.{i:06}.{extension}"))
            .collect();
        assert_eq!(names, expected, "{label}");

        let mut joined = Vec::new();
        for (i, (name, bytes)) in parts.iter().enumerate() {
            let text = decompress(bytes);
            let data = if label == "jsonl" {
                &text[..]
            } else {
                text.strip_prefix(&header[..])
                    .unwrap_or_else(|| panic!("{name}: no header"))
            };
            let rows = if label == "jsonl" {
                data.iter().filter(|&&b| b == b'\n').count()
            } else {
                records(data)
            };
            assert_eq!(rows, if i < 6 { 3000 } else { ROWS - 18_000 }, "{name}");
            joined.extend_from_slice(data);
        }
        let whole_data = if label == "jsonl" {
            &whole[..]
        } else {
            whole.strip_prefix(&header[..]).unwrap()
        };
        assert!(
            joined == whole_data,
            "{label}: parts do not join to the table"
        );

        // Every part is in the manifest, and `check` reads them all.
        assert_eq!(listed(&runs[1], "ITEMS"), names, "{label}");
        let checked = fbunload_check(&runs[1]);
        assert!(checked.status.success(), "{label}: {}", stderr(&checked));
        // A part added by hand is one more for readers of ITEMS.*: check
        // names it (it said every file matched).
        if label == "csv" {
            let first = &names[0];
            let added = format!("ITEMS.{:06}.csv", names.len() + 3);
            std::fs::copy(runs[1].join(first), runs[1].join(&added)).unwrap();
            let checked = fbunload_check(&runs[1]);
            let said = String::from_utf8_lossy(&checked.stdout);
            assert_eq!(checked.status.code(), Some(1), "{said}");
            assert!(
                said.contains(&format!("{added}: not in the manifest")),
                "{said}"
            );
            std::fs::remove_file(runs[1].join(&added)).unwrap();
        }
        // An empty table is one part, with the header.
        let empty = parts_of(&runs[1], "EMPTY");
        assert_eq!(empty.len(), 1, "{label}");
        assert_eq!(empty[0].0, format!("EMPTY.000001.{extension}"));
        let expected = if label == "jsonl" {
            &b""[..]
        } else {
            &b"ID\n"[..]
        };
        assert_eq!(decompress(&empty[0].1), expected, "{label}");
    }
}

#[test]
fn text_parts_of_bytes_pass_the_limit_by_less_than_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = items_db(dir.path());
    let limit = 50_000;
    let mut runs = Vec::new();
    for workers in [["-j", "1"], ["-j", "3"]] {
        let out = dir.path().join(format!("bytes{}", runs.len()));
        let mut args = vec!["--header", "--unit-pages", "2", "--tables", "ITEMS"];
        args.extend(workers);
        // 50K: decimal, as the summary's kB and MB.
        args.extend(["--max-bytes", "50K"]);
        unload(&db, &out, &args);
        runs.push(parts_of(&out, "ITEMS"));
    }
    assert_eq!(runs[0], runs[1], "parts differ between -j1 and -j3");
    let parts = &runs[0];
    assert!(parts.len() > 5, "{} parts", parts.len());
    let mut rows = 0;
    for (i, (name, bytes)) in parts.iter().enumerate() {
        let size = bytes.len();
        let data = bytes.strip_prefix(&b"ID,PRICE,NAME\n"[..]).unwrap();
        rows += records(data);
        // Where the last record begins: a part ends at the first record
        // end at or past the limit.
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(&bytes[..]);
        let mut last_start = 0;
        for record in reader.records() {
            last_start = record.unwrap().position().unwrap().byte() as usize;
        }
        assert!(last_start < limit, "{name}: {size} bytes, ends late");
        if i + 1 < parts.len() {
            assert!(size >= limit, "{name}: {size} bytes, ends early");
        }
    }
    assert_eq!(rows, ROWS);
}

/// The rows of each row group of a Parquet file, read alone, and where its
/// last group's column chunks begin and end.
fn parquet_groups(path: &Path) -> (Vec<i64>, u64, u64) {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let file = std::fs::File::open(path).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let groups = reader.metadata().row_groups();
    let last = groups.last().unwrap();
    let chunk = |c: &parquet::file::metadata::ColumnChunkMetaData| {
        let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset()) as u64;
        (start, start + c.compressed_size() as u64)
    };
    let start = last.columns().iter().map(|c| chunk(c).0).min().unwrap();
    let end = last.columns().iter().map(|c| chunk(c).1).max().unwrap();
    (groups.iter().map(|g| g.num_rows()).collect(), start, end)
}

#[test]
fn parquet_and_arrow_parts_read_alone_and_are_the_same_for_any_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let db = items_db(dir.path());
    let mut outputs = Vec::new();
    for (run, workers) in [
        ("j1", ["-j", "1", "--unit-pages", "100000"]),
        ("j3", ["-j", "3", "--unit-pages", "1"]),
    ] {
        let mut by_format = Vec::new();
        for format in ["parquet", "arrow"] {
            let out = dir.path().join(format!("{format}-{run}"));
            let mut args = vec!["-f", format, "--max-rows", "7000"];
            if format == "parquet" {
                args.extend(["--row-group-rows", "3000"]);
            }
            args.extend(workers);
            unload(&db, &out, &args);
            by_format.push(out);
        }
        outputs.push(by_format);
    }
    for (j1, j3) in outputs[0].iter().zip(&outputs[1]) {
        assert!(
            files(j1) == files(j3),
            "{}: differs between -j1 and -j3",
            j1.display()
        );
        let checked = fbunload_check(j3);
        assert!(checked.status.success(), "{}", stderr(&checked));
    }
    // Groups restart at every part: no row group straddles two files.
    let parquet = &outputs[1][0];
    let parts = parts_of(parquet, "ITEMS");
    let groups: Vec<Vec<i64>> = parts
        .iter()
        .map(|(name, _)| parquet_groups(&parquet.join(name)).0)
        .collect();
    assert_eq!(
        groups,
        [
            vec![3000, 3000, 1000],
            vec![3000, 3000, 1000],
            vec![3000, 3000]
        ]
    );
    assert_eq!(listed(parquet, "ITEMS").len(), 3);

    // pyarrow reads every part alone; together they are the table.
    let script = r#"
import sys, glob, os
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.ipc as ipc
for d, read in [(sys.argv[1], pq.read_table),
                (sys.argv[2], lambda p: ipc.open_file(p).read_all())]:
    parts = sorted(glob.glob(os.path.join(d, "ITEMS.*")))
    tables = [read(p) for p in parts]
    whole = pa.concat_tables(tables)
    assert whole.num_rows == 20000, whole.num_rows
    assert whole.column("ID").to_pylist() == list(range(20000)), d
    assert [t.num_rows for t in tables] == [7000, 7000, 6000], [t.num_rows for t in tables]
    empty = glob.glob(os.path.join(d, "EMPTY.*"))
    assert [os.path.basename(p) for p in empty] == ["EMPTY.000001" + os.path.splitext(parts[0])[1]], empty
    assert read(empty[0]).num_rows == 0
print("ok")
"#;
    let result = Command::new("python3")
        .args(["-c", script])
        .arg(&outputs[1][0])
        .arg(&outputs[1][1])
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "pyarrow: {}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
}

#[test]
fn parquet_parts_of_bytes_end_at_the_first_row_group_past_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = items_db(dir.path());
    let limit = 40_000u64;
    let mut runs = Vec::new();
    for workers in [["-j", "1"], ["-j", "3"]] {
        let out = dir.path().join(format!("pq{}", runs.len()));
        let mut args = vec![
            "-f",
            "parquet",
            "--row-group-rows",
            "1000",
            "--unit-pages",
            "1",
        ];
        args.extend(workers);
        args.extend(["--max-bytes", "40000", "--tables", "ITEMS"]);
        unload(&db, &out, &args);
        runs.push(out);
    }
    assert!(
        parts_of(&runs[0], "ITEMS") == parts_of(&runs[1], "ITEMS"),
        "parts differ between -j1 and -j3"
    );
    let parts = parts_of(&runs[0], "ITEMS");
    assert!(parts.len() > 2, "{} parts", parts.len());
    let mut rows = 0;
    for (i, (name, _)) in parts.iter().enumerate() {
        let (groups, last_start, data_end) = parquet_groups(&runs[0].join(name));
        rows += groups.iter().sum::<i64>();
        // The bytes written when the last group was appended reached the
        // limit; before it, they had not.
        assert!(last_start < limit, "{name}: ends late");
        if i + 1 < parts.len() {
            assert!(data_end >= limit, "{name}: ends early");
        }
    }
    assert_eq!(rows, ROWS as i64);
}

#[test]
fn a_rerun_with_overwrite_and_fewer_parts_leaves_none_of_the_old_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = items_db(dir.path());
    let out = dir.path().join("out");
    unload(&db, &out, &["--max-rows", "2000"]);
    assert_eq!(parts_of(&out, "ITEMS").len(), 10);
    unload(&db, &out, &["--overwrite", "--max-rows", "5000"]);
    let names: Vec<String> = parts_of(&out, "ITEMS")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let expected: Vec<String> = (1..=4).map(|i| format!("ITEMS.{i:06}.csv")).collect();
    assert_eq!(names, expected);
    assert_eq!(listed(&out, "ITEMS"), expected);
    let checked = fbunload_check(&out);
    assert!(checked.status.success(), "{}", stderr(&checked));
    // And back to one file per table.
    unload(&db, &out, &["--overwrite"]);
    let names: Vec<String> = parts_of(&out, "ITEMS")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["ITEMS.csv"]);
}

#[test]
fn bad_limits_are_refused_in_one_line_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    // No database there: the refusal must come first.
    let db = dir.path().join("absent.fdb");
    let out_dir = dir.path().join("out");
    let out_arg = out_dir.to_str().unwrap();
    for (args, expected) in [
        (vec!["--max-rows", "0", "-o", out_arg], "--max-rows 0: "),
        (
            vec!["--max-rows", "many", "-o", out_arg],
            "--max-rows \"many\": ",
        ),
        (
            vec!["--max-bytes", "0", "-o", out_arg],
            "--max-bytes \"0\": ",
        ),
        (
            vec!["--max-bytes", "12X", "-o", out_arg],
            "--max-bytes \"12X\": not a size",
        ),
        (
            vec!["--max-rows", "10", "-o", "-"],
            "--max-rows and --max-bytes cut tables",
        ),
        (
            vec!["--max-bytes", "1G", "-o", "-"],
            "--max-rows and --max-bytes cut tables",
        ),
        (
            vec![
                "-f",
                "parquet",
                "--split",
                "--max-rows",
                "10",
                "-o",
                out_arg,
            ],
            "--split writes a directory",
        ),
    ] {
        assert_refused_in_one_line(&fbunload(&db, &args), expected);
        assert!(!out_dir.exists(), "{args:?}: nothing written");
    }
}

#[test]
fn a_table_that_fails_half_way_leaves_none_of_its_parts() {
    let dir = tempfile::tempdir().unwrap();
    let db = create_db(dir.path(), "bad.fdb", 4096);
    // 5,000 good rows, then a NUMERIC(38,0) of 39 digits, which Parquet's
    // decimal128 refuses: parts 1 to 5 are complete before part 6 fails.
    execute(
        &db,
        &[
            "CREATE TABLE BAD (N NUMERIC(38,0))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 5000) DO BEGIN \
               INSERT INTO BAD VALUES (:I); I = I + 1; END END",
            "INSERT INTO BAD VALUES (CAST('170141183460469231731687303715884105727' AS NUMERIC(38,0)))",
        ],
    );
    let out = dir.path().join("out");
    let args = [
        "-f",
        "parquet",
        "-j",
        "1",
        "--row-group-rows",
        "500",
        "--max-rows",
        "1000",
    ];
    let mut full = vec!["-q", "-o", out.to_str().unwrap()];
    full.extend(args);
    let failed = fbunload(&db, &full);
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    assert!(
        stderr(&failed).contains("--decimal256"),
        "{}",
        stderr(&failed)
    );
    // The run made the directory and published nothing: it went again.
    assert!(!out.exists(), "a failed table left {:?}", files(&out));
    // With room for the value, the same run writes all six parts.
    full.push("--decimal256");
    let result = fbunload(&db, &full);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(parts_of(&out, "BAD").len(), 6);
}
