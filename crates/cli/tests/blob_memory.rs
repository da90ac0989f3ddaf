//! Peak memory for a big BLOB (issue #10): an unload may hold a value a
//! few times at once (the batch it is decoded into, its encoded form), but
//! not a copy for every stage it passes. Each case is the peak RSS of an
//! `fbunload` process unloading one row of fbunload-gen's BIG_BLOB, less
//! that of unloading its tiny row, over the blob's size.
//!
//! Measured with 48 MiB blobs (4 KiB pages), in copies of the blob: before
//! blobs were streamed into the batch, CSV quoted in place and Parquet's
//! blob statistics dropped, CSV text 3.08, Parquet text 4.09, Parquet
//! binary 5.09; after, 2.07, 2.07 and 3.07 (`benches/blob-memory.sh` has
//! every format).
//!
//! Also how a table of many blobs is cut: by its BLOB bytes, not its few
//! data pages, so that two workers share it, and the files are the same
//! bytes for any -j.

#![cfg(target_os = "linux")]

mod common;

use common::*;
use fbunload_gen::{generate, GenOptions, Table};

const BLOB_MB: u32 = 48;

#[test]
fn a_big_blob_is_held_a_bounded_number_of_times() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("blobs.fdb"));
    options.tables = vec![Table::BigBlob];
    options.blob_mb = BLOB_MB;
    // Small pages: the engine's page cache, filled by the blob's pages,
    // counts in the peak too.
    options.page_size = 4096;
    generate(&client(), &options).unwrap();
    let out = dir.path().join("out");
    let blob_kib = (BLOB_MB * 1024) as f64;

    // (format, row, most copies of the blob allowed)
    let cases = [
        ("csv", "ID = 1", 2.7),
        ("parquet", "ID = 1", 2.7),
        ("parquet", "ID = 2", 3.7),
    ];
    let mut report = Vec::new();
    let mut too_many = false;
    for (format, row, most) in cases {
        let args = ["--tables", "BIG_BLOB", "-f", format, "--where"];
        let base = peak_kib(&options.database, &out, &[&args[..], &["ID = 3"]].concat());
        let big = peak_kib(&options.database, &out, &[&args[..], &[row]].concat());
        let copies = (big - base) as f64 / blob_kib;
        too_many |= copies > most;
        report.push(format!(
            "{format} {row}: {base} KiB -> {big} KiB, {copies:.2} copies (at most {most})"
        ));
    }
    assert!(!too_many, "{}", report.join("\n"));
    eprintln!("{}", report.join("\n"));
}

/// Many medium blobs (issue 53 item 6): their batches reach the decoder's
/// 16 MB cap, and a worker with a writer thread (-j1 with a core to spare)
/// queued four of them beside the one being filled and the one being
/// written, about 100 MB that `--memory` does not count. The queue now
/// stops at 16 MB of batches: measured on 2 cores, a debug build, 84 MiB
/// of blobs in CSV, 4 KiB pages: 114 MiB above the one-row run before,
/// 63 after (`cargo test -p fbunload-cli --test blob_memory -- --nocapture`).
#[test]
fn batches_of_many_blobs_queue_a_bounded_number_of_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("heavy.fdb"));
    options.tables = vec![Table::BlobHeavy];
    options.blob_rows = 400;
    options.blob_total_mb = 84;
    options.page_size = 4096;
    generate(&client(), &options).unwrap();
    let out = dir.path().join("out");
    let args = ["--tables", "BLOB_HEAVY", "-f", "csv", "-j1", "--where"];
    let base = peak_kib(&options.database, &out, &[&args[..], &["ID = 1"]].concat());
    let all = peak_kib(&options.database, &out, &[&args[..], &["ID > 0"]].concat());
    let above_mib = (all - base) / 1024;
    eprintln!(
        "BLOB_HEAVY in CSV: {base} KiB for one row, {all} KiB for all, {above_mib} MiB above"
    );
    assert!(
        above_mib < 85,
        "{above_mib} MiB above the one-row run: batches queue unbounded"
    );
}

/// BLOB_HEAVY's rows fill a few data pages (each holds two blob ids and
/// headers; the bytes lie on blob pages), so its pages made it one unit
/// and -j2 read it on one worker. Its BLOB bytes (72 MiB, estimated
/// before the run) cut it into two units of up to 64 MiB now; the files
/// are the same bytes as -j1's, in CSV and Parquet.
#[test]
fn a_table_of_many_blobs_is_cut_by_its_blob_bytes_into_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("heavy.fdb"));
    options.tables = vec![Table::BlobHeavy];
    options.blob_rows = 300;
    options.blob_total_mb = 72;
    options.page_size = 4096;
    generate(&client(), &options).unwrap();
    let db = &options.database;
    let units = |jobs: &str| {
        let out = fbunload(db, &["--plan", "--tables", "BLOB_HEAVY", "-j", jobs]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let line = text
            .lines()
            .find(|l| l.starts_with("BLOB_HEAVY "))
            .unwrap_or_else(|| panic!("no BLOB_HEAVY in the plan:\n{text}"))
            .to_string();
        line.split_whitespace().nth(2).unwrap().to_string()
    };
    assert_eq!(units("1"), "1", "one worker: cut by pages");
    assert_eq!(units("2"), "2", "two workers: cut by its 72 MiB of blobs");
    for format in ["csv", "parquet"] {
        let written = |jobs: &str| {
            let out = dir.path().join(format!("out-{format}-{jobs}"));
            let run = fbunload(
                db,
                &[
                    "--tables",
                    "BLOB_HEAVY",
                    "-f",
                    format,
                    "-j",
                    jobs,
                    "-q",
                    "--verify",
                    "-o",
                ]
                .into_iter()
                .chain([out.to_str().unwrap()])
                .collect::<Vec<_>>(),
            );
            assert!(run.status.success(), "{}", stderr(&run));
            let file = out.join(format!("BLOB_HEAVY.{format}"));
            let bytes = std::fs::read(&file).unwrap();
            std::fs::remove_dir_all(&out).unwrap();
            bytes
        };
        let one = written("1");
        // The binary half (36 MiB) is incompressible.
        assert!(one.len() > 36 << 20, "{format}: {} bytes", one.len());
        assert!(
            one == written("2"),
            "{format}: -j2 wrote other bytes than -j1"
        );
    }
}
