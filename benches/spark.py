"""Spark reading a STOCK table of 2,000,000 rows, local[2]: through
fbunload's data source, fbunload's own read_arrow, and Spark's JDBC source
with Jaybird partitioned on the key (numPartitions=2); then each Spark read
again while a writer moves quantity between two rows of the table, one
committed transfer at a time, to see which reads keep the total.

On a Firebird 5 server, with Jaybird's pure Java driver:

    . /work/fb5.env     # FBUNLOAD_TEST_FB5, _DIR, _PASSWORD (scripts/fb5-server.sh)
    mvn dependency:get -Dartifact=org.firebirdsql.jdbc:jaybird:6.0.2
    python benches/spark.py [ROWS] [JARS...]

Without FBUNLOAD_TEST_FB5, on the embedded engine (firebird-embedded) in
SuperClassic mode, so that Spark's processes share the database file, with
Jaybird 5's embedded driver through JNA:

    mvn dependency:get -Dartifact=org.firebirdsql.jdbc:jaybird:5.0.6.java11
    mvn dependency:get -Dartifact=net.java.dev.jna:jna:5.14.0
    python benches/spark.py [ROWS] [JARS...]

Run it with the package installed from a release build (maturin build
--release). Prints one table: seconds (median of BENCH_RUNS runs, 3 by
default) and rows/s, then
how many of 5 reads under the writer saw a total other than the one the
table always holds.
"""

import glob
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import threading
import time

SERVER = "FBUNLOAD_TEST_FB5" in os.environ
if not SERVER and "FIREBIRD" not in os.environ:
    # A copy of the embedded runtime in SuperClassic mode, for this process,
    # Spark's (the JVM's JDBC reads included) and the holder's.
    import firebird.embedded

    runtime = pathlib.Path(tempfile.mkdtemp()) / "runtime"
    shutil.copytree(pathlib.Path(firebird.embedded.__file__).parent / "runtime", runtime,
                    symlinks=True)
    with open(runtime / "firebird.conf", "a") as conf:
        conf.write("\nServerMode = SuperClassic\n")
    # The name JNA looks for (Jaybird), which would otherwise find another.
    (runtime / "libfbclient.so").symlink_to("libfbclient.so.2")
    os.environ["FIREBIRD"] = str(runtime)
    os.environ["LD_LIBRARY_PATH"] = f"{runtime}:{os.environ.get('LD_LIBRARY_PATH', '')}"

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python" / "tests"))
from conftest import PASSWORD, USER, connection, make_database  # noqa: E402  (sets up the client)

import fbunload  # noqa: E402
import fbunload.spark  # noqa: E402


def median_seconds(action, runs=int(os.environ.get("BENCH_RUNS", "3"))):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def stock(dsn, rows, password):
    """STOCK as benches/dask_read.py makes it, with S_I_ID its key: the
    column JDBC partitions on."""
    return make_database(
        dsn,
        [
            "CREATE TABLE STOCK (S_I_ID INTEGER NOT NULL PRIMARY KEY, S_W_ID INTEGER, "
            "S_QUANTITY INTEGER, S_DIST_01 CHAR(24), S_DIST_02 CHAR(24), S_YTD INTEGER, "
            "S_DATA VARCHAR(50))",
            f"EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {rows}) DO BEGIN "
            "INSERT INTO STOCK VALUES (:I, MOD(:I, 20), MOD(:I, 100), 'dist one ' || :I, "
            "'dist two ' || :I, 0, 'data ' || (:I * 7919)); I = I + 1; END END",
        ],
        password=password,
    )


class Mover:
    """Moves one unit of S_QUANTITY from a row in the first half of the
    keys to one in the second half, a committed transaction each, until
    stopped: the total never changes."""

    def __init__(self, dsn, password, rows):
        self.dsn, self.password, self.rows = dsn, password, rows
        self.committed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self):
        con = connection(self.dsn, self.password)
        half = self.rows // 2
        n = 0
        while not self._stop.is_set():
            n += 1
            a, b = (n * 7919) % half, half + (n * 104729) % half
            con.execute_immediate(
                "EXECUTE BLOCK AS BEGIN "
                f"UPDATE STOCK SET S_QUANTITY = S_QUANTITY - 1 WHERE S_I_ID = {a}; "
                f"UPDATE STOCK SET S_QUANTITY = S_QUANTITY + 1 WHERE S_I_ID = {b}; END"
            )
            con.commit()
            self.committed += 1
        con.close()

    def __enter__(self):
        self._thread.start()
        while self.committed < 20:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    m2 = os.path.expanduser("~/.m2/repository")
    if SERVER:
        address = os.environ["FBUNLOAD_TEST_FB5"]
        directory = os.environ["FBUNLOAD_TEST_FB5_DIR"]
        password = os.environ["FBUNLOAD_TEST_FB5_PASSWORD"]
        path = f"{directory}/spark-bench-{os.getpid()}.fdb"
        dsn = f"{address}:{path}"
        host, _, port = address.partition("/")
        url = f"jdbc:firebird://{host}:{port or 3050}/{path}"
        jars = sys.argv[2:] or glob.glob(f"{m2}/org/firebirdsql/jdbc/jaybird/6.*/jaybird-*.jar")
    else:
        address, password = "the embedded engine (SuperClassic)", PASSWORD
        path = dsn = str(pathlib.Path(tempfile.mkdtemp()) / "stock.fdb")
        url = f"jdbc:firebirdsql:embedded:{path}"
        jars = sys.argv[2:] or (
            glob.glob(f"{m2}/org/firebirdsql/jdbc/jaybird/5.*/jaybird-*.jar")
            + glob.glob(f"{m2}/net/java/dev/jna/jna/5.*/jna-*.jar")
        )
    auth = dict(user=USER, password=password)
    print(f"making STOCK of {rows} rows on {address} ...", file=sys.stderr)
    stock(dsn, rows, password)
    total = sum(r % 100 for r in range(rows))

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.jars", ",".join(jars))
        .config("spark.driver.extraJavaOptions", f"-Djna.library.path={os.environ.get('FIREBIRD', '')}")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    fbunload.spark.register(spark)

    def through_fbunload(**options):
        reader = spark.read.format("fbunload").option("database", dsn).option("table", "STOCK")
        for key, value in {**auth, **options}.items():
            reader = reader.option(key, str(value))
        return reader.load()

    def through_jdbc():
        return spark.read.jdbc(
            url, "STOCK", column="S_I_ID", lowerBound=0, upperBound=rows, numPartitions=2,
            properties={"user": USER, "password": password,
                        "driver": "org.firebirdsql.jdbc.FBDriver"},
        )

    def every_row(frame):
        frame.write.format("noop").mode("overwrite").save()

    results = []

    def row(what, seconds):
        results.append((what, seconds, rows / seconds))

    row("fbunload.read_arrow, parallel=2", median_seconds(
        lambda: fbunload.read_arrow(dsn, "STOCK", parallel=2, **auth)))
    row("Spark, fbunload source (partitions: the plan's units)", median_seconds(
        lambda: every_row(through_fbunload())))
    row("Spark, JDBC (Jaybird), numPartitions=2 on S_I_ID", median_seconds(
        lambda: every_row(through_jdbc())))
    print(f"| read of {rows:,} rows, local[2] | s | rows/s |")
    print("|---|---|---|")
    for what, seconds, rate in results:
        print(f"| {what} | {seconds:.2f} | {rate:,.0f} |")

    print(f"\nunder a writer, total S_QUANTITY always {total}:")
    # A DataFrame for every read: Spark may reuse a DataFrame's planned
    # partitions, and with them its holder, which ended after the first.
    for what, frame in [("fbunload source", lambda: through_fbunload(partitions=2)),
                        ("JDBC (Jaybird)", through_jdbc)]:
        wrong, seen = 0, []
        with Mover(dsn, password, rows) as mover:
            for _ in range(5):
                got, count = frame().agg(F.sum("S_QUANTITY"), F.count("*")).first()
                seen.append(got - total)
                wrong += got != total or count != rows
            moved = mover.committed
        print(f"- {what}: {wrong} of 5 reads off the total (off by {seen}); "
              f"{moved} transfers committed meanwhile")
    spark.stop()
    connection(dsn, password).drop_database()


if __name__ == "__main__":
    main()
