"""The holder of a Spark read's snapshot: a small process that one read
starts, that holds its :class:`fbunload.Snapshot` while the partitions are
read, and that ends by itself (see docs/spark.md).

    python -m fbunload._holder      # a JSON request on stdin

It answers one JSON line on stdout (the snapshot's ticket, its units, the
port and token partitions report to, or an error), then serves partitions
on that port: each sends ``start TOKEN I`` (answered ``ok``) when its read
begins, keeps the connection open while it reads, and sends ``done TOKEN I``
at the end. The holder closes the snapshot and exits when every partition
is done and none has started for ``linger`` seconds, when nothing happened
for ``idle_timeout`` seconds, when the process ``owner`` (the Spark
driver) is gone, or on SIGTERM.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Dict, Optional

# The longest a request may wait for the snapshot to be taken and planned.
START_TIMEOUT_S = 600


def start(request: Dict[str, Any]) -> Dict[str, Any]:
    """Starts a holder for ``request`` and returns its answer; raises the
    fbunload error it met (the snapshot could not be taken)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "fbunload._holder"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        # Its own session: Spark ends its Python workers, not this.
        start_new_session=True,
        close_fds=True,
    )
    process.stdin.write(json.dumps(request).encode() + b"\n")
    process.stdin.close()
    with selectors.DefaultSelector() as wait:
        wait.register(process.stdout, selectors.EVENT_READ)
        ready = wait.select(START_TIMEOUT_S)
    line = process.stdout.readline() if ready else b""
    process.stdout.close()
    if not line:
        process.kill()
        process.wait()
        from fbunload._fbunload import DatabaseError

        raise DatabaseError(
            "the process that holds the read's snapshot did not start "
            f"(no answer in {START_TIMEOUT_S} s, exit status {process.returncode})"
        )
    answer = json.loads(line)
    if "error" in answer:
        process.wait()
        import fbunload

        raise getattr(fbunload, answer["kind"], fbunload.DatabaseError)(answer["error"])
    answer["pid"] = process.pid
    return answer


def owner_pid() -> Optional[int]:
    """The Spark driver's JVM: the nearest ancestor of this process that is
    ``java``, read from /proc (None elsewhere)."""
    pid = os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)
            with open(f"/proc/{pid}/comm") as comm:
                name = comm.read().strip()
        except OSError:
            return None
        if name == "java":
            return pid
        pid = int(fields[1].split()[1])
    return None


def _alive(pid: Optional[int]) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def main() -> int:
    from fbunload._snapshot import Snapshot

    request = json.loads(sys.stdin.readline())
    try:
        snapshot = Snapshot(**request["snapshot"])
        name = snapshot.tables[0] if request["table"] is None else request["table"]
        units = snapshot.units(name, request["partitions"])
        server = socket.create_server((request["host"], 0))
    except Exception as e:  # every failure goes back to the read as its message
        print(json.dumps({"error": str(e), "kind": type(e).__name__}), flush=True)
        return 1
    token = secrets.token_hex(16)
    print(
        json.dumps(
            {
                "ticket": snapshot._held.ticket(),
                "number": snapshot.number,
                "units": units,
                "port": server.getsockname()[1],
                "token": token,
            }
        ),
        flush=True,
    )
    sys.stdout.close()
    try:
        _serve(server, token, len(units), request)
    finally:
        snapshot.close()
    return 0


def _serve(server: socket.socket, token: str, count: int, request: Dict[str, Any]) -> None:
    """Answers partitions until every one is done (and ``linger`` has
    passed), nothing happened for ``idle_timeout``, or the owner is gone."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    owner, linger, idle = request["owner"], request["linger"], request["idle_timeout"]
    done = set()
    reading: Dict[socket.socket, bytes] = {}
    # Connections of partitions that gave the token and are reading.
    started = set()
    last = time.monotonic()
    events = selectors.DefaultSelector()
    server.setblocking(False)
    events.register(server, selectors.EVENT_READ)
    while not stop and _alive(owner):
        for key, _ in events.select(1.0):
            if key.fileobj is server:
                try:
                    connection, _ = server.accept()
                except OSError:
                    continue
                connection.setblocking(False)
                reading[connection] = b""
                events.register(connection, selectors.EVENT_READ)
                continue
            connection = key.fileobj
            try:
                data = connection.recv(4096)
            except OSError:
                data = b""
            last = time.monotonic()
            if not data:
                # Ended, done or not: a partition not done is read again.
                events.unregister(connection)
                del reading[connection]
                started.discard(connection)
                connection.close()
                continue
            reading[connection] += data
            while b"\n" in reading[connection]:
                line, reading[connection] = reading[connection].split(b"\n", 1)
                words = line.decode(errors="replace").split()
                if words[:2] == ["start", token] and len(words) == 3:
                    started.add(connection)
                    connection.sendall(b"ok\n")
                elif words[:2] == ["done", token] and len(words) == 3 and words[2].isdigit():
                    done.add(int(words[2]))
        quiet = time.monotonic() - last
        if not started and len(done) >= count and quiet >= linger:
            return
        if not started and quiet >= idle:
            return


if __name__ == "__main__":
    sys.exit(main())
