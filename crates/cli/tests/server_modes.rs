//! The shared snapshot on each of Firebird's three server modes. The
//! embedded engine runs as SuperServer unless its firebird.conf says
//! otherwise; a copy of the runtime with `ServerMode = SuperClassic` or
//! `Classic` behaves as those servers do, where every attachment has its
//! own view of the oldest interesting transaction (issue #10.12: workers
//! then failed to join the snapshot).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use fbunload_gen::{generate, GenOptions, Table};

/// The `firebird-embedded` runtime directory.
fn embedded_runtime() -> PathBuf {
    let out = Command::new("python3")
        .args([
            "-c",
            "import firebird.embedded, os; \
             print(os.path.join(os.path.dirname(firebird.embedded.__file__), 'runtime'))",
        ])
        .output()
        .expect("python3");
    assert!(out.status.success(), "firebird-embedded (scripts/setup.sh)");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// A copy of the runtime whose engine runs in `mode`.
fn runtime_in_mode(runtime: &Path, into: &Path, mode: &str) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(runtime)
        .arg(into)
        .status()
        .unwrap();
    assert!(status.success());
    let conf = into.join("firebird.conf");
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str(&format!("\nServerMode = {mode}\n"));
    std::fs::write(conf, text).unwrap();
}

#[test]
fn workers_share_one_snapshot_on_every_server_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = GenOptions::new(dir.path().join("modes.fdb"));
    options.tables = vec![Table::Stock, Table::Mixed];
    options.items = 20_000;
    options.page_size = 4096;
    generate(&client(), &options).unwrap();
    let runtime = embedded_runtime();

    let mut outputs = Vec::new();
    for mode in ["Super", "SuperClassic", "Classic"] {
        let root = dir.path().join(format!("runtime-{mode}"));
        runtime_in_mode(&runtime, &root, mode);
        let out = dir.path().join(format!("out-{mode}"));
        let result = fbunload_with_env(
            &options.database,
            &[
                "-j",
                "3",
                "--unit-pages",
                "8",
                "--verify",
                "-o",
                out.to_str().unwrap(),
            ],
            Some(("FIREBIRD", root.to_str().unwrap())),
        );
        let report = stderr(&result);
        assert!(result.status.success(), "{mode}: {report}");
        assert!(report.contains("3 workers, snapshot"), "{mode}: {report}");
        outputs.push((mode, files(&out)));
    }
    let (_, first) = &outputs[0];
    for (mode, files) in &outputs[1..] {
        assert!(files == first, "{mode} wrote other bytes than SuperServer");
    }
}
