"""Where a `--since` run's time and CPU go, phase by phase (issue 53).

Runs the fbunload command given after `--` with `--progress json` and,
as each event arrives on its stderr, reads the process's CPU seconds
(user + system, /proc/PID/stat; the embedded engine's work included).
An incremental run reads, per unit of a table, in one scan of its pages,
how many of its rows are unchanged and the DB_KEYs of those that changed,
then fetches the changed rows by key; then the unchanged keys of units
whose count fell short (rechecks, `more_units`); and last merges the keys
(the previous run's, those read) into the new keys file and the deletes.
The phases are cut at those events: the first `UNITS` unit events are the
units' reads.

A build from before the one scan (`--two-scans`, main before 2026-11-29's
issue 53 work) read each unit twice: first its changed rows (the record
version scan), then, once every unit was read, the count of its unchanged
rows (a second scan of the same pages); its `started` event's `units`
counts both. Prints one line per phase (wall seconds, CPU seconds) and
the run's totals and peak RSS, in the line format of benches/scale.sh.

    python3 benches/since_phases.py LABEL [--two-scans] -- fbunload ARGS...
"""

import json
import os
import resource
import subprocess
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # utime and stime are fields 14 and 15; fields[0] is field 3.
    return (int(fields[11]) + int(fields[12])) / TICKS


def main():
    label = sys.argv[1]
    two_scans = "--two-scans" in sys.argv[: sys.argv.index("--")]
    units = None
    command = sys.argv[sys.argv.index("--") + 1 :]
    start = time.monotonic()
    process = subprocess.Popen(
        command + ["--progress", "json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    marks = [("start", 0.0, 0.0)]
    unit_events = 0
    last = (0.0, 0.0)
    for line in process.stderr:
        try:
            event = json.loads(line)
        except ValueError:
            sys.stderr.write(line)
            continue
        cpu = cpu_seconds(process.pid)
        wall = time.monotonic() - start
        if cpu is None:
            continue
        last = (wall, cpu)
        kind = event.get("event")
        if kind == "started":
            units = event["units"] // 2 if two_scans else event["units"]
            marks.append(("plan, snapshot, previous run checked", wall, cpu))
        elif kind == "unit":
            unit_events += 1
            if unit_events == units and two_scans:
                marks.append(("changed rows (record version scan)", wall, cpu))
            elif unit_events == units:
                marks.append(("units: counted, changed rows by key (one scan)", wall, cpu))
            elif unit_events == 2 * units and two_scans:
                marks.append(("unchanged rows counted (second scan)", wall, cpu))
        elif kind == "more_units":
            marks.append(("rechecks asked", wall, cpu))
        elif kind == "error":
            sys.stderr.write(line)
    code = process.wait()
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    if units is not None and unit_events > (2 if two_scans else 1) * units:
        marks.append(("unchanged keys of rechecked units", *last))
    marks.append(("keys merged, keys file and deletes written, published", wall, cpu))
    for (_, w0, c0), (name, w1, c1) in zip(marks, marks[1:]):
        print(f"  {name:<56} {w1 - w0:7.2f} s {c1 - c0:7.2f} CPU s")
    print(f"{label:<28} {wall:9.2f} {cpu:9.2f} {usage.ru_maxrss // 1024:9d}")
    if code != 0:
        sys.exit(code)


if __name__ == "__main__":
    main()
