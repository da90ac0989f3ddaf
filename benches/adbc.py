"""A table into Python through the ADBC driver, against fbunload.read_arrow
and firebird-driver: polars `read_database` over `fbunload.adbc.connect`,
the driver manager's own DB-API (`fetch_arrow_table`), `read_arrow`,
`read_polars` (read_arrow, then polars' conversion of the pyarrow table,
which read_database makes too) and firebird-driver (fetchall into
pyarrow), each in a fresh child process.

    python benches/adbc.py [DATABASE [TABLE]]
    RUNS=3 DRIVER_RUNS=1 python benches/adbc.py bench-data/stock-w20.fdb STOCK

DATABASE defaults to bench-data/stock-w20.fdb (2,000,000 STOCK rows; make
it with `fbunload-gen --database bench-data/stock-w20.fdb --warehouses 20
--tables STOCK,ITEM`). Run it with the package installed from a release
build (`pip install '.[adbc]'`). Every read reports its own time and peak
memory (VmHWM); the last column is the median against read_arrow's.
"""

import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from python import DRIVER, child  # noqa: E402  (firebird-driver, as benches/python.py reads)

DATABASE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "bench-data/stock-w20.fdb")
TABLE = sys.argv[2] if len(sys.argv) > 2 else "STOCK"
RUNS = int(os.environ.get("RUNS", "3"))
# firebird-driver takes minutes for 2,000,000 rows: DRIVER_RUNS=1 to spare them.
DRIVER_RUNS = int(os.environ.get("DRIVER_RUNS", str(RUNS)))
PARALLEL = int(os.environ.get("PARALLEL", str(os.cpu_count())))
AUTH = "user='SYSDBA', password='masterkey'"

READ_ARROW = dict(
    setup="import fbunload",
    read="fbunload.read_arrow({db!r}, {table!r}, parallel={parallel}, " + AUTH + ").num_rows",
)

# read_arrow and then polars' own conversion of the pyarrow table: the
# fair mark for a polars frame through ADBC.
READ_POLARS = dict(
    setup="import fbunload",
    read="fbunload.read_polars({db!r}, {table!r}, parallel={parallel}, " + AUTH + ").height",
)

CONNECT = "conn = fbunload.adbc.connect({db!r}, parallel={parallel}, " + AUTH + ")"

POLARS = dict(
    setup="import fbunload.adbc, polars",
    read="polars.read_database('SELECT * FROM {table}', "
    + CONNECT.replace("conn = ", "")
    + ").height",
)

DBAPI = dict(
    setup="""
import fbunload.adbc
def read(db, table, parallel):
    with fbunload.adbc.connect(db, parallel=parallel, """ + AUTH + """) as conn:
        with conn.cursor() as cur:
            cur.execute('SELECT * FROM ' + table)
            return cur.fetch_arrow_table().num_rows
""",
    read="read({db!r}, {table!r}, {parallel})",
)


def measure(label, action, baseline=None, runs=RUNS):
    results = [action() for _ in range(runs)]
    times = sorted(r[0] for r in results)
    rows = results[0][1]
    peak = max(r[2] for r in results)
    median = statistics.median(times)
    ratio = f"{median / baseline:>6.2f}x" if baseline else f"{'1.00x':>7}"
    print(
        f"{label:<34} {median:>9.2f} {times[0]:>6.2f}-{times[-1]:<6.2f} "
        f"{rows / median:>10.0f} {peak:>8} {ratio}"
    )
    return median


def main():
    if not os.path.exists(DATABASE):
        sys.exit(f"{DATABASE}: no such database; see this script's docstring")
    values = dict(db=DATABASE, table=TABLE, parallel=PARALLEL)
    print(f"{TABLE} of {DATABASE}, medians of {RUNS}, parallel {PARALLEL}, {os.cpu_count()} cores")
    print(
        f"{'read':<34} {'median s':>9} {'min-max s':>13} {'rows/s':>10} {'peak MB':>8} "
        f"{'vs read_arrow':>7}"
    )
    base = measure("fbunload.read_arrow", lambda: child(READ_ARROW, **values))
    polars_base = measure("fbunload.read_polars", lambda: child(READ_POLARS, **values), base)
    through_adbc = measure("polars.read_database (ADBC)", lambda: child(POLARS, **values), base)
    print(f"  polars.read_database (ADBC): {through_adbc / polars_base:.2f}x read_polars")
    measure("ADBC DB-API fetch_arrow_table", lambda: child(DBAPI, **values), base)
    measure(
        f"firebird-driver fetchall ({DRIVER_RUNS} run)",
        lambda: child(DRIVER, db=DATABASE, table=TABLE),
        base,
        runs=DRIVER_RUNS,
    )


if __name__ == "__main__":
    main()
