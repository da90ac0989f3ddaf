"""Reader processes started from Python: the run's workers in
``python -m fbunload._reader`` children, against the Firebird 5 server
scripts/fb5-server.sh starts (skipped where none runs)."""

import json
import os
import subprocess
import sys

import pytest

import fbunload
from conftest import connection, fb5_server, make_database


@pytest.fixture(scope="module")
def server_db():
    address, directory, password = fb5_server()
    dsn = f"{address}:{directory}/py-procs-{os.getpid()}.fdb"
    make_database(
        dsn,
        [
            "CREATE TABLE W (ID INTEGER, PAD VARCHAR(200), N NUMERIC(12,2), T TIMESTAMP)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 60000) DO BEGIN "
            "INSERT INTO W VALUES (:I, LPAD('', 150, 'x') || :I, :I * 0.25, "
            "DATEADD(:I SECOND TO TIMESTAMP '2020-01-01 00:00:00')); I = I + 1; END END",
        ],
        page_size=4096,
        password=password,
    )
    yield dsn, password
    try:
        connection(dsn, password).drop_database()
    except Exception:
        pass


def test_read_arrow_with_reader_processes_is_what_one_thread_reads(server_db):
    dsn, password = server_db
    options = dict(user="SYSDBA", password=password)
    one = fbunload.read_arrow(dsn, "W", parallel=1, processes=0, **options)
    spread = fbunload.read_arrow(dsn, "W", parallel=3, processes=2, **options)
    assert one.num_rows == 60000
    assert spread.equals(one)
    with pytest.raises(fbunload.UsageError):
        fbunload.read_arrow(dsn, "W", processes="many", **options)


def test_the_console_script_starts_python_reader_processes(server_db, tmp_path):
    dsn, password = server_db
    env = {**os.environ, "ISC_PASSWORD": password}

    def run(name, *args):
        out = tmp_path / name
        done = subprocess.run(
            [sys.executable, "-m", "fbunload", "-d", dsn, "-u", "SYSDBA", "-o", str(out), *args],
            env=env, capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return (out / "W.csv").read_bytes(), done.stderr

    one, _ = run("one", "-j", "1")
    spread, said = run("spread", "-j", "3", "--processes", "2", "--unit-pages", "16")
    assert "3 workers in 2 reader processes" in said
    assert spread == one


def test_unload_with_reader_processes_writes_what_one_thread_writes(server_db, tmp_path):
    dsn, password = server_db
    options = dict(user="SYSDBA", password=password, format="parquet", row_group_rows=5000,
                   verify=True, unit_pages=16)
    one = fbunload.unload(dsn, tmp_path / "one", parallel=1, processes=0, **options)
    spread = fbunload.unload(dsn, tmp_path / "spread", parallel=3, processes=2, **options)
    assert (tmp_path / "spread" / "W.parquet").read_bytes() == (
        tmp_path / "one" / "W.parquet").read_bytes()
    assert spread["rows"] == one["rows"] == 60000
    manifest = json.loads((tmp_path / "spread" / "manifest.json").read_text())
    assert (manifest["options"]["workers"], manifest["options"]["processes"]) == (3, 2)
    assert all(table["verified"] for table in manifest["tables"])
    with pytest.raises(fbunload.UsageError):
        fbunload.unload(dsn, tmp_path / "bad", processes="many", **options)
