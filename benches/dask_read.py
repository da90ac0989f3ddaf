"""fbunload.dask against read_pandas on the embedded engine, and what
opening a Snapshot costs, idle and while a writer commits.

    python benches/dask_read.py [ROWS]    # default 2,000,000 STOCK-like rows

Run it with the package installed from a release build (maturin build
--release); prints one table, medians of 3 runs (snapshots: of 10).
"""

import pathlib
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python" / "tests"))
from conftest import PASSWORD, USER, connection, make_database  # noqa: E402  (sets up the engine)

import distributed  # noqa: E402

import fbunload  # noqa: E402
import fbunload.dask  # noqa: E402

AUTH = dict(user=USER, password=PASSWORD)


def median_seconds(action, runs=3):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def stock(rows):
    db = pathlib.Path(tempfile.mkdtemp()) / "stock.fdb"
    return make_database(
        db,
        [
            "CREATE TABLE STOCK (S_I_ID INTEGER, S_W_ID INTEGER, S_QUANTITY SMALLINT, "
            "S_DIST_01 CHAR(24), S_DIST_02 CHAR(24), S_YTD INTEGER, S_DATA VARCHAR(50))",
            f"EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {rows}) DO BEGIN "
            "INSERT INTO STOCK VALUES (:I, MOD(:I, 20), MOD(:I, 100), 'dist one ' || :I, "
            "'dist two ' || :I, 0, 'data ' || (:I * 7919)); I = I + 1; END END",
            "CREATE TABLE COUNTER (N BIGINT)",
            "INSERT INTO COUNTER VALUES (0)",
        ],
    )


def writer(db, stop):
    con = connection(db)
    while not stop.is_set():
        con.execute_immediate("UPDATE COUNTER SET N = N + 1")
        con.commit()
    con.close()


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    db = stock(rows)
    results = []

    def row(what, seconds):
        results.append((what, seconds, rows / seconds))

    row("read_pandas, parallel=2", median_seconds(
        lambda: fbunload.read_pandas(db, "STOCK", parallel=2, **AUTH)))
    for n in [2, 8]:
        row(f"dask threads, npartitions={n}", median_seconds(
            lambda: fbunload.dask.read_table(db, "STOCK", npartitions=n, **AUTH).compute(
                scheduler="threads")))
    with distributed.LocalCluster(
        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster):
        row("dask LocalCluster(processes=False) 2x1, npartitions=8", median_seconds(
            lambda: fbunload.dask.read_table(db, "STOCK", npartitions=8, **AUTH).compute()))

    print(f"{rows:,} rows, {fbunload.plan(db, **AUTH)['server_version']}")
    print(f"{'read':<56} {'median s':>9} {'rows/s':>12}")
    for what, seconds, rate in results:
        print(f"{what:<56} {seconds:>9.2f} {rate:>12,.0f}")

    def open_close():
        fbunload.Snapshot(db, tables="STOCK", **AUTH).close()

    idle = median_seconds(open_close, runs=10)
    stop = threading.Event()
    thread = threading.Thread(target=writer, args=(db, stop))
    thread.start()
    time.sleep(0.5)
    busy = median_seconds(open_close, runs=10)
    stop.set()
    thread.join()
    print(f"{'Snapshot open + close, idle':<56} {idle * 1000:>7.1f} ms")
    print(f"{'Snapshot open + close, a writer committing in a loop':<56} {busy * 1000:>7.1f} ms")


if __name__ == "__main__":
    main()
