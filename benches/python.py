"""Reading a table into a pyarrow.Table from Python: fbunload.read_arrow at
each parallel against firebird-driver (fetchall, then pyarrow) and the
engine's limit (`fbunload --fetch-only`, same workers), in one run.

    python benches/python.py [DATABASE [TABLE]]
    RUNS=5 PARALLEL="1 2 4 8" python benches/python.py bench-data/stock-w30.fdb STOCK

DATABASE defaults to bench-data/stock-w10.fdb (1,000,000 STOCK rows; make
it with `W=10 MODES=csv benches/formats.sh` or `fbunload-gen --warehouses
10 --tables STOCK,ITEM`). Run it with the package installed from a release
build (`pip install .`). Every read runs in a fresh child process (the
embedded engine opens a database in one process at a time), which reports
its own time and peak memory (VmHWM). fbfast is left out: it reads only
through a Firebird 5 server, and the embedded engine is none.
"""

import os
import shutil
import statistics
import subprocess
import sys

DATABASE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "bench-data/stock-w10.fdb")
TABLE = sys.argv[2] if len(sys.argv) > 2 else "STOCK"
RUNS = int(os.environ.get("RUNS", "3"))
PARALLEL = [int(p) for p in os.environ.get("PARALLEL", "1 2").split()]
AUTH = "user='SYSDBA', password='masterkey'"

CHILD = """
import time, sys
{setup}
start = time.perf_counter()
rows = ({read})
seconds = time.perf_counter() - start
peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))
print(seconds, rows, peak // 1024)
"""

FBUNLOAD = dict(
    setup="import fbunload",
    read="fbunload.read_arrow({db!r}, {table!r}, parallel={parallel}, " + AUTH + ").num_rows",
)

# firebird-driver with the embedded engine, as the test suite sets it up.
DRIVER = dict(
    setup="""
import ctypes, pathlib, pyarrow as pa
import firebird.embedded
from firebird.driver import connect, driver_config
runtime = pathlib.Path(firebird.embedded.__file__).parent / 'runtime'
for dep in ['libtommath.so.1', str(runtime / 'libtomcrypt.so.1')]:
    ctypes.CDLL(dep, mode=ctypes.RTLD_GLOBAL)
driver_config.fb_client_library.value = str(next(runtime.glob('libfbclient.so*')))
import os; os.environ.setdefault('FIREBIRD', str(runtime))
def read(db, table):
    con = connect(db, """ + AUTH + """, charset='UTF8')
    cur = con.cursor()
    cur.execute('SELECT * FROM "%s"' % table)
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    t = pa.table({n: pa.array(list(c)) for n, c in zip(names, zip(*rows))})
    con.close()
    return t.num_rows
""",
    read="read({db!r}, {table!r})",
)


def child(kind, **values):
    code = CHILD.format(setup=kind["setup"], read=kind["read"].format(**values))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stderr)
    seconds, rows, peak = out.stdout.split()
    return float(seconds), int(rows), int(peak)


def fetch_only(parallel):
    binary = shutil.which("fbunload") or "target/release/fbunload"
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%e %M", binary, "-d", DATABASE, "-u", "SYSDBA", "-p",
         "masterkey", "-q", "-t", TABLE, "-j", str(parallel), "--fetch-only"],
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        sys.exit(out.stderr)
    seconds, kb = out.stderr.split()[-2:]
    return float(seconds), None, int(kb) // 1024


def measure(label, action):
    results = [action() for _ in range(RUNS)]
    times = sorted(r[0] for r in results)
    rows = results[0][1]
    peak = max(r[2] for r in results)
    median = statistics.median(times)
    rate = f"{rows / median:>10.0f}" if rows else f"{'-':>10}"
    print(f"{label:<28} {median:>9.2f} {times[0]:>6.2f}-{times[-1]:<6.2f} {rate} {peak:>8}")
    return median


def main():
    if not os.path.exists(DATABASE):
        sys.exit(f"{DATABASE}: no such database; see this script's docstring")
    print(f"{TABLE} of {DATABASE}, medians of {RUNS}, {os.cpu_count()} cores")
    print(f"{'read':<28} {'median s':>9} {'min-max s':>13} {'rows/s':>10} {'peak MB':>8}")
    driver = measure("firebird-driver fetchall", lambda: child(DRIVER, db=DATABASE, table=TABLE))
    for parallel in PARALLEL:
        limit = measure(f"fbunload --fetch-only -j {parallel}", lambda: fetch_only(parallel))
        ours = measure(
            f"fbunload.read_arrow p={parallel}",
            lambda: child(FBUNLOAD, db=DATABASE, table=TABLE, parallel=parallel),
        )
        print(f"  p={parallel}: {driver / ours:.1f}x firebird-driver, "
              f"{ours / limit:.2f}x the fetch-only time")


if __name__ == "__main__":
    main()
