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
