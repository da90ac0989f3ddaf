"""``fbunload.follow``: the change stream as an iterator of events (with
``from_``), change sets into a directory, and the PostgreSQL follow with
``until_idle``, against a real replication journal of the embedded
engine (follow_journal.py, in a child Python whose runtime copy has a
``replication.conf``)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import RUNTIME
from test_postgres import psql


def test_follow_streams_events_writes_change_sets_and_applies_to_postgresql(tmp_path):
    uri = os.environ.get("FBUNLOAD_TEST_PG_URI")
    if uri:
        for sql in ["DROP DATABASE IF EXISTS fbu_follow WITH (FORCE)", "CREATE DATABASE fbu_follow"]:
            psql(uri, sql)
        uri = uri.rsplit("/", 1)[0] + "/fbu_follow"
    runtime = tmp_path / "runtime"
    import shutil

    shutil.copytree(RUNTIME, runtime, symlinks=True)
    with open(runtime / "firebird.conf", "a") as conf:
        conf.write("\nServerMode = SuperClassic\n")
    data = tmp_path / "data"
    for name in ["journal", "archive"]:
        (data / name).mkdir(parents=True)
    (runtime / "replication.conf").write_text(
        f"database = {data / 'j.fdb'}\n{{\n  journal_directory = {data / 'journal'}\n"
        f"  journal_archive_directory = {data / 'archive'}\n  journal_archive_timeout = 1\n}}\n"
    )
    script = os.path.join(os.path.dirname(__file__), "follow_journal.py")
    result = subprocess.run(
        [sys.executable, script, str(data), *([uri] if uri else [])],
        env={**os.environ, "FIREBIRD": str(runtime)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["events"] == 4
    if not uri:
        pytest.skip("PostgreSQL part skipped: no FBUNLOAD_TEST_PG_URI")
    got = psql(uri, "SELECT id, v, encode(b, 'hex') FROM live.t ORDER BY id")
    want = [[str(i), v, b or ""] for i, v, b in report["expected"]]
    assert got == want
