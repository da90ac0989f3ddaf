#!/usr/bin/env python3
"""Where a run leaves the machine's cores idle.

Runs one command and samples /proc/stat every 50 ms while it runs, then
prints the share of all cores that was idle (idle + iowait) in each tenth
of a second, and the idle core-seconds in all. With client and server on
one machine, a run can be no faster than their CPU time divided by the
cores; the idle core-seconds, halved on 2 cores, are what a run loses to
waiting (start-up, round trips, the last unit, fsync, detach).

    python3 benches/cpu-idle.py target/release/fbunload -d DSN --tables STOCK \\
        -j 2 -f csv --wire-crypt disabled -q -o /tmp/out --overwrite

Linux only (reads /proc/stat). Run it alone: anything else running counts
as busy.
"""

import os
import subprocess
import sys
import time

SAMPLE_S = 0.05


def cpu_times():
    """(all jiffies, idle jiffies) summed over cores, from /proc/stat."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]


def main(command):
    if not command:
        sys.exit(__doc__)
    samples = []
    start = time.monotonic()
    last = cpu_times()
    child = subprocess.Popen(command)
    while child.poll() is None:
        time.sleep(SAMPLE_S)
        now = cpu_times()
        total, idle = now[0] - last[0], now[1] - last[1]
        samples.append((time.monotonic() - start, idle / total if total else 0.0))
        last = now
    wall = time.monotonic() - start
    tenths = {}
    for at, idle in samples:
        tenths.setdefault(int(at * 10), []).append(idle)
    print(f"wall {wall:.2f} s, exit {child.returncode}, {os.cpu_count()} cores")
    print("idle % per 0.1 s: " + " ".join(
        f"{k / 10:.1f}:{round(100 * sum(v) / len(v))}" for k, v in sorted(tenths.items())))
    idle_core_s = sum(idle for _, idle in samples) * SAMPLE_S * os.cpu_count()
    print(f"idle core-seconds: {idle_core_s:.2f}")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
