//! Peak memory at many workers (issue: memory at any -j): what fbunload
//! holds must not grow with `-j` past what the cores can use. Before glibc's
//! malloc arenas were capped at the core count, each worker thread kept the
//! batch memory it freed in an arena of its own, and Parquet at `-j 16` on
//! 3 warehouses peaked at 274 MB on 2 cores; with the cap, 231 MB
//! (`benches/worker-memory.sh` has every format at -j 1, 16 and 64).

#![cfg(all(target_os = "linux", target_env = "gnu"))]

mod common;

use common::*;
use fbunload_gen::{generate, GenOptions};

#[test]
fn parquet_at_sixteen_workers_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("w3.fdb"));
    options.warehouses = 3;
    generate(&client(), &options).unwrap();
    let out = dir.path().join("out");
    let args = ["-x", "ALL_TYPES", "-f", "parquet", "-j", "16"];
    let peak_mib = peak_kib(&options.database, &out, &args) / 1024;
    // This (debug) build on 2 cores: 301 MiB before the arena cap,
    // 240-248 after.
    assert!(peak_mib < 280, "parquet -j 16 peaked at {peak_mib} MiB");
    eprintln!("parquet -j 16: {peak_mib} MiB");
}
