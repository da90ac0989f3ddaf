"""The ``fbunload`` command line as the wheel installs it: a console script
that runs the same program as the binary, in the Python process."""

import csv
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from conftest import PASSWORD, USER, connection

# The console script pip wrote next to this interpreter (not a cargo binary
# that may be on PATH).
SCRIPT = pathlib.Path(sys.executable).parent / "fbunload"


def fbunload(*args, **options):
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=300, **options
    )


def test_the_console_script_is_installed_and_explains_itself():
    assert SCRIPT.is_file(), f"pip installed no {SCRIPT}"
    assert SCRIPT.read_text().startswith("#!"), "a Python console script, not a binary"
    result = fbunload("--help")
    assert result.returncode == 0, result.stderr
    assert "Usage: fbunload" in result.stdout and "--tables <PATTERN>" in result.stdout
    result = fbunload("--no-such-option")
    assert result.returncode == 2
    assert "--no-such-option" in result.stderr


def test_the_console_script_unloads_a_database(big_db, tmp_path):
    out = tmp_path / "out"
    result = fbunload("-d", big_db, "-u", USER, "-p", PASSWORD, "-j", "2", "--verify", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["SMALL.csv", "WIDE.csv", "manifest.json", "schema.sql"]
    assert (out / "SMALL.csv").read_text() == "ID\n42\n"
    with open(out / "WIDE.csv", newline="") as f:
        header, *rows = list(csv.reader(f))
    assert header == ["ID", "A", "N"]
    con = connection(big_db)
    cur = con.cursor()
    cur.execute("SELECT ID, A, N FROM WIDE ORDER BY ID")
    expected = [[str(v) for v in row] for row in cur.fetchall()]
    con.close()
    assert len(rows) == len(expected) == 200_000
    assert sorted(rows, key=lambda r: int(r[0])) == expected
    assert "2 tables, 200001 rows" in result.stderr and "verified" in result.stderr

    # The messages and statuses are the binary's.
    result = fbunload("-d", big_db, "-u", USER, "-p", PASSWORD, "-f", "parquet", "--header", "-o", str(out))
    assert result.returncode == 1
    assert result.stderr == "fbunload: error: --header is for --format csv or tsv, not parquet\n"


def test_the_console_script_finds_the_engine_through_its_own_python(types_db, tmp_path):
    # No FIREBIRD and no python3 on PATH: the binary would have to start an
    # interpreter to find firebird-embedded and could not; the console
    # script asks the interpreter it runs in.
    env = {k: v for k, v in os.environ.items() if k not in ("FIREBIRD", "PATH")}
    env["PATH"] = str(tmp_path / "no-python-here")
    out = tmp_path / "out"
    result = fbunload("-d", types_db, "-u", USER, "-p", PASSWORD, "--tables", "T", "-o", str(out), env=env)
    assert result.returncode == 0, result.stderr
    assert (out / "T.csv").read_text().count("\n") == 1 + 3  # the header and three rows



@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_stop_the_console_script_and_remove_unfinished_files(big_db, tmp_path, stop):
    out = tmp_path / "out"
    run = subprocess.Popen(
        [str(SCRIPT), "-d", big_db, "-u", USER, "-p", PASSWORD, "-j", "1", "--unit-pages", "8", "-o", str(out)],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(out.glob(".fbunload-run-*/WIDE.csv")):
        assert run.poll() is None, "the unload ended before it could be stopped"
        assert time.monotonic() < deadline, "the unload never started writing"
        time.sleep(0.005)
    run.send_signal(stop)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err
    assert "interrupted" in err and PASSWORD not in err
    left = [p.name for p in out.iterdir()] if out.exists() else []
    assert set(left) <= {"SMALL.csv"}, f"only complete tables may remain: {left}"
