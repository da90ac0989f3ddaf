"""The holder of a Spark application's snapshots (see docs/spark.md).

Spark plans a read in Python worker processes that it starts and ends as
it likes, and runs the tasks in others: no process of the read lives as
long as the read but Spark's own. So one small process per Spark driver
(and ``holder_host``), started by the first read that needs it, takes
every read's snapshot and holds it while the read's DataFrame is in use:

- one process for the whole application, so that its snapshots share one
  *pin* (docs/reliability.md): two reads at once never refuse each other;
- a read's snapshot is held until no partition has read it for the read's
  ``idle_timeout``, so every action on one DataFrame reads the same rows;
- for a database file (the embedded engine) it reads the rows itself and
  hands them to the tasks as Arrow IPC streams: the only process that
  opens the file, which the embedded engine's default mode (SuperServer)
  requires.

    python -m fbunload._holder      # {"host": ..., "owner": PID} on stdin

It answers one JSON line on stdout (its port and a random token), then
serves connections, each one request line ``VERB TOKEN JSON`` answered by
one JSON line (``{"error": ..., "kind": ...}`` for a failure):

- ``plan``: take a read's snapshot and cut its units; answers the read's
  id, units, ticket and snapshot number;
- ``start``: a task's direct read of units of read ``read`` begins; the
  connection stays open while it reads;
- ``rows``: ``units`` of read ``read`` (or, with ``join`` and no read, the
  columns of a table or query in a snapshot of its own), read by the
  holder; an Arrow IPC stream follows the answer, and a last JSON line
  (ok, or the error that cut the stream short);
- ``tables``: the names of the database's tables (for a did-you-mean);
- ``ping``: whether the holder is there.

It ends when its owner (the Spark driver's JVM) is gone, on SIGTERM, or
when it has held no snapshot for ``EXIT_AFTER_S``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import secrets
import signal
import socket
import socketserver
import stat
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, Optional, Tuple

# The longest a read may wait for the holder to start.
START_TIMEOUT_S = 60
# How long a holder that holds no snapshot waits for a next read.
EXIT_AFTER_S = 300
# How long a read's snapshot waits for its first partition at least.
FIRST_PARTITION_S = 60

Address = Tuple[str, int, str]


def runtime_dir() -> str:
    """A directory of this user's alone, where the holders' addresses and
    tokens are kept; refused if another user could read or replace them."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    path = os.path.join(base, f"fbunload-{os.getuid()}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        from fbunload._fbunload import UsageError

        raise UsageError(
            f"{path} is not a directory of this user's alone (mode 700), and it would hold "
            "the address and token of fbunload's Spark holder; remove it, or set "
            "XDG_RUNTIME_DIR to a private directory"
        )
    return path


def address(host: str, owner: int) -> Address:
    """The holder of the Spark application ``owner`` (its driver's pid) on
    ``host``: the running one, or one started now."""
    directory = runtime_dir()
    key = hashlib.sha256(f"{owner} {host}".encode()).hexdigest()[:20]
    known = os.path.join(directory, f"holder-{key}.json")
    lock = os.open(os.path.join(directory, f"holder-{key}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        # Two reads planned at once start one holder.
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(known) as file:
                port, token = json.load(file)
            if ask((host, port, token), "ping", {})[1]["ok"]:
                return host, port, token
        except (OSError, ValueError, KeyError, TypeError):
            pass
        port, token = _start(host, owner)
        written = os.open(known + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(written, "w") as file:
            json.dump([port, token], file)
        os.replace(known + ".new", known)
        return host, port, token
    finally:
        os.close(lock)


def _start(host: str, owner: int) -> Tuple[int, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "fbunload._holder"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        # Its own session: Spark ends its Python workers, not this.
        start_new_session=True,
        close_fds=True,
    )
    process.stdin.write(json.dumps({"host": host, "owner": owner}).encode() + b"\n")
    process.stdin.close()
    import selectors

    with selectors.DefaultSelector() as wait:
        wait.register(process.stdout, selectors.EVENT_READ)
        ready = wait.select(START_TIMEOUT_S)
    line = process.stdout.readline() if ready else b""
    process.stdout.close()
    answer = json.loads(line) if line else {}
    if "port" not in answer:
        process.kill()
        process.wait()
        from fbunload._fbunload import DatabaseError

        raise DatabaseError(
            "fbunload's Spark holder process did not start "
            f"({answer.get('error') or f'no answer in {START_TIMEOUT_S} s'})"
        )
    return answer["port"], answer["token"]


def ask(holder: Address, verb: str, body: Dict[str, Any], timeout: Optional[float] = 30):
    """Sends one request; returns the open connection's reader and the
    answer (``{"error": ...}`` when the holder cannot be reached)."""
    host, port, token = holder
    try:
        connection = socket.create_connection((host, port), timeout=30)
    except OSError as e:
        return None, {"error": f"the holder at {host}:{port} is gone ({e})", "gone": True}
    try:
        connection.sendall(f"{verb} {token} {json.dumps(body)}\n".encode())
        connection.settimeout(timeout)
        reader = connection.makefile("rb")
        line = reader.readline()
    except OSError as e:
        connection.close()
        return None, {"error": f"the holder at {host}:{port} did not answer ({e})", "gone": True}
    if not line:
        connection.close()
        return None, {"error": f"the holder at {host}:{port} ended", "gone": True}
    connection.settimeout(None)
    # The reader keeps the connection open; closing it closes both.
    reader._connection = connection  # type: ignore[attr-defined]
    return reader, json.loads(line)


def close(reader) -> None:
    if reader is not None:
        reader.close()
        reader._connection.close()


def owner_pid() -> int:
    """The Spark driver's JVM: the nearest ancestor of this process that is
    ``java``, read from /proc; else this process."""
    pid = os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as info:
                fields = info.read().rsplit(")", 1)
            with open(f"/proc/{pid}/comm") as comm:
                name = comm.read().strip()
        except OSError:
            break
        if name == "java":
            return pid
        pid = int(fields[1].split()[1])
    return os.getpid()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class _Read:
    """One planned read: its snapshot, held while the read is in use."""

    def __init__(self, snapshot, name: str, sql, units, idle_timeout: float) -> None:
        self.snapshot = snapshot
        self.name = name
        self.sql = sql
        self.units = units
        self.idle_timeout = idle_timeout
        self.reading = 0
        self.started = False
        self.last = time.monotonic()

    def idle(self, now: float) -> bool:
        """Whether to let its snapshot go: no partition reads it, and none
        did for idle_timeout; before the first one (Spark may start tasks
        long after it planned them), for FIRST_PARTITION_S at least."""
        least = self.idle_timeout if self.started else max(self.idle_timeout, FIRST_PARTITION_S)
        return self.reading == 0 and now - self.last >= least


class _Holder:
    def __init__(self, token: str) -> None:
        self.token = token
        self.reads: Dict[str, _Read] = {}
        self.lock = threading.Lock()
        self.last = time.monotonic()

    def begin(self, read_id: str) -> Optional[_Read]:
        with self.lock:
            read = self.reads.get(read_id)
            if read is not None:
                read.reading += 1
                read.started = True
                read.last = self.last = time.monotonic()
            return read

    def end(self, read: _Read) -> None:
        with self.lock:
            read.reading -= 1
            read.last = self.last = time.monotonic()

    def release_idle(self) -> None:
        now = time.monotonic()
        with self.lock:
            idle = [
                (key, read)
                for key, read in self.reads.items()
                if read.idle(now)
            ]
            for key, _ in idle:
                del self.reads[key]
        for _, read in idle:
            read.snapshot.close()

    def close_all(self) -> None:
        with self.lock:
            reads, self.reads = list(self.reads.values()), {}
        for read in reads:
            read.snapshot.close()


class _Handler(socketserver.StreamRequestHandler):
    holder: _Holder

    def handle(self) -> None:
        line = self.rfile.readline(1 << 20).decode(errors="replace")
        verb, _, rest = line.partition(" ")
        token, _, body = rest.partition(" ")
        if not secrets.compare_digest(token.encode(), self.holder.token.encode()):
            return
        self.holder.last = time.monotonic()
        try:
            request = json.loads(body)
            if verb == "ping":
                self._answer({"ok": True})
            elif verb == "plan":
                self._plan(request)
            elif verb == "tables":
                from fbunload._snapshot import Snapshot

                with Snapshot(**request) as everything:
                    self._answer({"ok": True, "tables": everything.tables})
            elif verb in ("start", "rows"):
                self._read(verb, request)
        except Exception as e:  # every failure goes back to the read as its message
            self._answer({"error": str(e), "kind": type(e).__name__})

    def _answer(self, answer: Dict[str, Any]) -> None:
        self.wfile.write(json.dumps(answer).encode() + b"\n")
        self.wfile.flush()

    def _plan(self, request: Dict[str, Any]) -> None:
        from fbunload._snapshot import Snapshot

        snapshot = Snapshot(**request["snapshot"])
        try:
            name = snapshot.tables[0] if request["table"] is None else request["table"]
            units = snapshot.units(name, request["shares"])
        except BaseException:
            snapshot.close()
            raise
        sql = request["sql"]
        read = _Read(snapshot, request["name"], None if sql is None else tuple(sql), units,
                     request["idle_timeout"])
        read_id = secrets.token_hex(8)
        with self.holder.lock:
            self.holder.reads[read_id] = read
        self._answer(
            {
                "ok": True,
                "read": read_id,
                "units": units,
                "ticket": snapshot._held.ticket(),
                "number": snapshot.number,
            }
        )

    def _read(self, verb: str, request: Dict[str, Any]) -> None:
        from fbunload._snapshot import read_units

        if verb == "rows" and "join" in request:
            # The columns of a read, asked before it is planned.
            sql = request["sql"]
            table = read_units(request["join"], request["name"], [], None,
                               None if sql is None else tuple(sql))
            self._answer({"ok": True})
            self._stream(table)
            return
        read = self.holder.begin(request["read"])
        if read is None:
            self._answer({"error": "released", "kind": "SnapshotClosed"})
            return
        try:
            if verb == "start":
                self._answer({"ok": True})
                # Open while the task reads: its end (done or not) ends it.
                while self.rfile.readline():
                    pass
                return
            units = [tuple(unit) for unit in request["units"]]
            if not all(unit in read.units for unit in units):
                self._answer({"error": "not a unit of this read", "kind": "UsageError"})
                return
            tables = prefetched(
                lambda unit: read_units(read.snapshot._join, read.name, [unit], None, read.sql),
                units,
            )
            first = next(tables)
            self._answer({"ok": True})
            self._stream(first, tables)
        finally:
            self.holder.end(read)

    def _stream(self, first, rest=()) -> None:
        """Tables of one schema as one Arrow IPC stream, each sent as soon
        as it is read, then a JSON line: ``ok``, or the error that ended
        the stream early."""
        import pyarrow as pa

        failed = None
        with pa.ipc.new_stream(self.wfile, first.schema) as writer:
            try:
                for table in _chain(first, rest):
                    for batch in table.to_batches():
                        writer.write_batch(batch)
                    self.wfile.flush()
            except Exception as e:  # after the stream's end, as its last line
                failed = e
        self._answer({"ok": True} if failed is None else
                     {"error": str(failed), "kind": type(failed).__name__})


def _chain(first, rest):
    yield first
    yield from rest


def prefetched(read_one, units):
    """``read_one(unit)`` of each unit in order, each read in a thread of
    its own while the one before is handed on (the reads release the
    GIL): a partition's reading overlaps Spark's work on its rows. At
    most two units wait; an early end stops the reads."""
    ready: "queue.Queue" = queue.Queue(maxsize=1)
    stop = threading.Event()

    def produce():
        try:
            for unit in units:
                item = ("rows", read_one(unit))
                while not stop.is_set():
                    try:
                        ready.put(item, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as e:  # handed to the reader
            ready.put(("error", e))
            return
        ready.put(("end", None))

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while True:
            kind, value = ready.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main() -> int:
    request = json.loads(sys.stdin.readline())
    holder = _Holder(secrets.token_hex(16))
    handler = type("Handler", (_Handler,), {"holder": holder})
    try:
        server = _Server((request["host"], 0), handler)
    except OSError as e:
        print(json.dumps({"error": f"cannot listen on {request['host']}: {e}"}), flush=True)
        return 1
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"port": server.server_address[1], "token": holder.token}), flush=True)
    sys.stdout.close()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    try:
        while not stop and _alive(request["owner"]):
            time.sleep(0.5)
            holder.release_idle()
            with holder.lock:
                empty = not holder.reads
            if empty and time.monotonic() - holder.last >= EXIT_AFTER_S:
                break
    finally:
        server.shutdown()
        holder.close_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
