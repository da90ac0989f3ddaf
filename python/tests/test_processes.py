"""Reader processes started from Python: the run's workers in
``python -I .../fbunload/_reader.py`` children, against the Firebird 5
server scripts/fb5-server.sh starts (skipped where none runs)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

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


PLANTED = """
import sys
with open({marker!r}, "a") as f:
    f.write(__name__ + " ran\\n")
    if __name__.endswith("_reader") or __name__ == "__main__":
        f.write(repr(sys.stdin.buffer.read(4096)))
"""


def test_the_reader_command_imports_nothing_from_the_working_directory(tmp_path):
    """The command a run starts its reader processes with, run in a
    directory holding ./fbunload and ./pyarrow: it imports neither (even
    before the run's own move to ``/``), and reaches the real reader, which
    refuses to be run by hand. No server needed."""
    from fbunload import _reader

    marker = tmp_path / "planted-code-ran"
    planted = tmp_path / "planted"
    for package, module in [("fbunload", "__init__"), ("fbunload", "_reader"),
                            ("pyarrow", "__init__")]:
        (planted / package).mkdir(parents=True, exist_ok=True)
        (planted / package / f"{module}.py").write_text(PLANTED.format(marker=str(marker)))
    done = subprocess.run([sys.executable, *_reader.command()], cwd=planted, input=b"",
                          capture_output=True, timeout=60)
    assert not marker.exists(), marker.read_text()
    assert b"it is not run by hand" in done.stderr, done.stderr
    assert done.returncode == 1


def test_a_reader_process_imports_nothing_from_the_working_directory(server_db, tmp_path):
    """A run started in a directory holding ./fbunload and ./pyarrow (another
    user's, say): its reader processes, which get the password, import
    neither (``python -m`` put the working directory first on sys.path)."""
    dsn, password = server_db
    marker = tmp_path / "planted-code-ran"
    planted = tmp_path / "planted"
    for package, module in [("fbunload", "__init__"), ("fbunload", "_reader"),
                            ("pyarrow", "__init__")]:
        (planted / package).mkdir(parents=True, exist_ok=True)
        (planted / package / f"{module}.py").write_text(PLANTED.format(marker=str(marker)))
    script = tmp_path / "scripts" / "read.py"
    script.parent.mkdir()
    script.write_text(textwrap.dedent(f"""
        import fbunload
        table = fbunload.read_arrow({dsn!r}, "W", parallel=3, processes=2,
                                    user="SYSDBA", password={password!r})
        print(table.num_rows)
    """))
    done = subprocess.run([sys.executable, str(script)], cwd=planted, capture_output=True,
                          text=True, timeout=300)
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["60000"]


def _stop_readers_at_birth(parent, count):
    """SIGSTOPs the reader processes of ``parent`` as soon as each runs,
    before it can attach; returns their pids."""
    stopped = []
    deadline = time.monotonic() + 60
    while len(stopped) < count:
        assert time.monotonic() < deadline, "no reader processes started"
        assert parent.poll() is None, parent.communicate()
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in stopped:
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
            except (OSError, ValueError, IndexError):
                continue
            if ppid == parent.pid and b"_reader" in cmdline:
                os.kill(int(entry), signal.SIGSTOP)
                stopped.append(int(entry))
        time.sleep(0.001)
    return stopped


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("how", ["read_arrow SIGINT", "console script SIGTERM"])
def test_a_signal_ends_a_run_whose_reader_processes_are_stopped(server_db, tmp_path, how):
    """Reader processes stopped at birth never attach: Ctrl-C (or SIGTERM
    to the console script) still ends the run at once, and no reader is
    left. It waited for them with the GIL held: signals were not seen,
    kill -9 was needed."""
    dsn, password = server_db
    if how.startswith("read_arrow"):
        script = tmp_path / "read.py"
        script.write_text(textwrap.dedent(f"""
            import fbunload
            fbunload.read_arrow({dsn!r}, "W", parallel=4, processes=2,
                                user="SYSDBA", password={password!r})
        """))
        argv, sent = [sys.executable, str(script)], signal.SIGINT
    else:
        argv = [sys.executable, "-m", "fbunload", "-d", dsn, "-u", "SYSDBA", "-p", password,
                "-j", "4", "--processes", "2", "--stall-timeout", "0",
                "-o", str(tmp_path / "out")]
        sent = signal.SIGTERM
    parent = subprocess.Popen(argv, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    readers = _stop_readers_at_birth(parent, 2)
    try:
        time.sleep(0.5)
        parent.send_signal(sent)
        since = time.monotonic()
        _, err = parent.communicate(timeout=30)
        waited = time.monotonic() - since
    finally:
        if parent.poll() is None:
            parent.kill()
        for pid in readers:
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
    assert parent.returncode != 0, err
    assert waited < 3, f"{waited:.1f} s: {err}"
    # Not after the 10 s grace, blaming the server.
    assert "did not end a wait" not in err and "no answer" not in err, err
    assert "Broken pipe" not in err, err
    deadline = time.monotonic() + 10
    while not all(_gone(pid) for pid in readers):
        assert time.monotonic() < deadline, "a reader process outlived the run"
        time.sleep(0.02)
