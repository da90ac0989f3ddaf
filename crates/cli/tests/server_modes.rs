//! The shared snapshot on each of Firebird's three server modes. The
//! embedded engine runs as SuperServer unless its firebird.conf says
//! otherwise; a copy of the runtime with `ServerMode = SuperClassic` or
//! `Classic` behaves as those servers do, where every attachment has its
//! own view of the oldest interesting transaction (issue #10.12: workers
//! then failed to join the snapshot).

mod common;

use common::*;
use fbunload_gen::{generate, GenOptions, Table};

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
