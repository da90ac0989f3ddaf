//! Golden files for the CSV rendering of every Firebird type, end to end:
//! the generator's ALL_TYPES table (and the quoted-name and empty tables)
//! unloaded from the real engine, and their `schema.sql`.
//! `UPDATE_GOLDEN=1 cargo test` rewrites the files; review the diff before
//! committing it.

mod common;

use std::path::PathBuf;

use common::*;
use fbunload_gen::{generate, GenOptions, Table};

#[test]
fn every_type_renders_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("types.fdb"));
    options.tables = vec![Table::AllTypes, Table::Mixed, Table::EmptyTable];
    generate(&client(), &options).unwrap();

    let golden_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    for (label, args) in [
        // The defaults: a header line, as the golden files have.
        ("csv", vec![]),
        (
            "tsv-null-base64",
            vec!["--delimiter", "tab", "--null", "\\N", "--binary", "base64"],
        ),
        ("jsonl", vec!["--format", "jsonl"]),
    ] {
        check_against_golden(&options.database, &golden_dir, label, &args, None);
    }
    // Rows fetched through the XSQLDA instead of as OO API messages must
    // render the same bytes.
    check_against_golden(
        &options.database,
        &golden_dir,
        "csv",
        &[],
        Some(("FBUNLOAD_FETCH_API", "isc")),
    );
}

fn check_against_golden(
    db: &std::path::Path,
    golden_dir: &std::path::Path,
    label: &str,
    args: &[&str],
    env: Option<(&str, &str)>,
) {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join(label);
    let mut full = args.to_vec();
    full.extend(["-j", "2", "-o", out_dir.to_str().unwrap()]);
    let out = fbunload_with_env(db, &full, env);
    assert!(out.status.success(), "{label}: {}", stderr(&out));
    for (name, bytes) in files(&out_dir) {
        // The DDL is the same whatever the format: one golden file.
        let golden = match name.as_str() {
            "schema.sql" => golden_dir.join(&name),
            _ => golden_dir.join(format!("{label}.{name}")),
        };
        if std::env::var_os("UPDATE_GOLDEN").is_some() && env.is_none() {
            std::fs::write(&golden, &bytes).unwrap();
        }
        let expected = std::fs::read(&golden)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 creates it)", golden.display()));
        if label == "jsonl" && name.ends_with(".jsonl") {
            // Every line is valid JSON to an independent parser.
            for line in String::from_utf8(bytes.clone()).unwrap().lines() {
                let value: serde_json::Value =
                    serde_json::from_str(line).unwrap_or_else(|e| panic!("{name}: {e}: {line}"));
                assert!(value.is_object());
            }
        }
        assert!(
            bytes == expected,
            "{label} {name} differs from {}.\n--- got\n{}",
            golden.display(),
            String::from_utf8_lossy(&bytes)
        );
    }
}
