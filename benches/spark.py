"""Spark reading the sample's STOCK and ORDER_LINE (600,000 rows each by
default), local[2], in one Spark session, with a profile of where the time
goes; then, on the Firebird 3 server, Spark's JDBC source with Jaybird
against fbunload's, and how often each read under a writer misses the
table's total.

    mvn dependency:get -Dartifact=org.firebirdsql.jdbc:jaybird:6.0.2
    eval "$(bash scripts/fb3-server.sh)"   # FBUNLOAD_TEST_SERVER, _DIR, _PASSWORD
    python benches/spark.py [WAREHOUSES] [ITEMS]     # default 2 300000

Run it with the package installed from a release build (maturin build
--release). The embedded part runs in a copy of the runtime in
SuperClassic mode only so that this process's own read_arrow may open the
file while the Spark holder holds it (fbunload.spark itself needs no
such copy). Without the server's variables or Jaybird's jar the JDBC part
is left out. Prints tables of seconds, medians of BENCH_RUNS runs (3).
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
from concurrent.futures import ThreadPoolExecutor

if "FIREBIRD" not in os.environ:
    import firebird.embedded

    runtime = pathlib.Path(tempfile.mkdtemp()) / "runtime"
    shutil.copytree(pathlib.Path(firebird.embedded.__file__).parent / "runtime", runtime,
                    symlinks=True)
    with open(runtime / "firebird.conf", "a") as conf:
        conf.write("\nServerMode = SuperClassic\n")
    os.environ["FIREBIRD"] = str(runtime)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python" / "tests"))
from conftest import PASSWORD, USER, connection, make_database  # noqa: E402  (sets up the client)

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import fbunload  # noqa: E402
import fbunload.spark  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def median_seconds(action, runs=RUNS):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def arrow_file_source():
    """A Python data source that reads an Arrow IPC file in N partitions:
    Spark's cost of a Python source (workers, Arrow hand-over), without
    Firebird."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class ArrowFile(DataSource):
        @classmethod
        def name(cls):
            return "arrowfile"

        def schema(self):
            from pyspark.sql.pandas.types import from_arrow_schema

            with pa.memory_map(self.options["path"]) as source:
                return from_arrow_schema(pa.ipc.open_file(source).schema)

        def reader(self, schema):
            return ArrowFileReader(self.options)

    class ArrowFileReader(DataSourceReader):
        def __init__(self, options):
            self.path, self.parts = options["path"], int(options["partitions"])

        def partitions(self):
            return [InputPartition(i) for i in range(self.parts)]

        def read(self, partition):
            with pa.memory_map(self.path) as source:
                file = pa.ipc.open_file(source)
                for i in range(partition.value, file.num_record_batches, self.parts):
                    yield file.get_batch(i)

    return ArrowFile


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


def table(rows_of, title):
    print(f"\n| {title} | s |")
    print("|---|---|")
    for what, seconds in rows_of:
        print(f"| {what} | {seconds:.2f} |")
    sys.stdout.flush()


def main():
    warehouses = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    items = int(sys.argv[2]) if len(sys.argv) > 2 else 300_000
    work = pathlib.Path(tempfile.mkdtemp())
    db = str(work / "sample.fdb")
    start = time.perf_counter()
    fbunload.sample(db, warehouses=warehouses, items=items)
    print(f"sample of {warehouses} warehouses, {items} items: "
          f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    auth = dict(user=USER, password=PASSWORD)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    m2 = os.path.expanduser("~/.m2/repository")
    jars = glob.glob(f"{m2}/org/firebirdsql/jdbc/jaybird/6.*/jaybird-*.jar")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    start = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.jars", ",".join(jars))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    fbunload.spark.register(spark)
    spark.dataSource.register(arrow_file_source())
    print(f"Spark started: {time.perf_counter() - start:.1f} s", file=sys.stderr)

    def every_row(frame):
        frame.write.format("noop").mode("overwrite").save()

    def through_fbunload(dsn, name, **options):
        reader = spark.read.format("fbunload").option("database", dsn).option("table", name)
        for key, value in {**auth, **options}.items():
            reader = reader.option(key, str(value))
        return reader.load()

    # Warm up: Spark's first Python source of a session starts its Python
    # workers and the holder; no measurement pays for that.
    every_row(through_fbunload(db, "WAREHOUSE"))
    # BENCH_ONLY=server: the JDBC part alone.
    for name in [] if os.environ.get("BENCH_ONLY") == "server" else ["STOCK", "ORDER_LINE"]:
        arrow = fbunload.read_arrow(db, name, parallel=2, **auth)
        rows = arrow.num_rows
        ipc, parquet = str(work / f"{name}.arrow"), str(work / f"{name}.parquet")
        with pa.OSFile(ipc, "wb") as sink, pa.ipc.new_file(sink, arrow.schema) as writer:
            for batch in arrow.to_batches(max_chunksize=65_536):
                writer.write_batch(batch)
        pq.write_table(arrow, parquet)
        del arrow
        results = [
            ("fbunload.read_arrow, parallel=2", median_seconds(
                lambda: fbunload.read_arrow(db, name, parallel=2, **auth))),
        ]
        def without_spark(parts):
            """The source's planning and partitions read in 2 threads of
            this process, as Spark's tasks would, with Spark left out."""
            source = fbunload.spark.FirebirdDataSource(
                dict(database=db, table=name, partitions=str(parts), idle_timeout="5", **auth))
            reader = source.reader(source.schema())
            partitions = reader.partitions()
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(lambda p: sum(b.num_rows for b in reader.read(p)), partitions))

        results.append(("the fbunload source without Spark: holder, IPC, 2 threads, 4 partitions",
                        median_seconds(lambda: without_spark(4))))
        for parts in [None, 2, 4]:
            extra = {} if parts is None else {"partitions": parts}
            label = "default (one per core)" if parts is None else str(parts)
            results.append((f"Spark, fbunload source, partitions: {label}", median_seconds(
                lambda: every_row(through_fbunload(db, name, **extra)))))
        results.append(("Spark, the same DataFrame again (its snapshot held)", median_seconds(
            (lambda frame: lambda: every_row(frame))(through_fbunload(db, name)))))
        results.append(("Spark, Python source of an Arrow file (no Firebird), 2 partitions",
                        median_seconds(lambda: every_row(
                            spark.read.format("arrowfile").option("path", ipc)
                            .option("partitions", "2").load()))))
        results.append(("Spark, Parquet file", median_seconds(
            lambda: every_row(spark.read.parquet(parquet)))))
        table(results, f"{name}: {rows:,} rows, local[2]")
    table([] if os.environ.get("BENCH_ONLY") == "server" else [
          ("Spark, fbunload source, WAREHOUSE (a few rows): the cost of an action",
            median_seconds(lambda: every_row(through_fbunload(db, "WAREHOUSE"))))],
          "fixed cost")

    server = [os.environ.get(k) for k in
              ["FBUNLOAD_TEST_SERVER", "FBUNLOAD_TEST_SERVER_DIR", "FBUNLOAD_TEST_SERVER_PASSWORD"]]
    if None in server or not jars:
        print("\nno Firebird 3 server or no Jaybird jar: JDBC left out", file=sys.stderr)
        spark.stop()
        shutil.rmtree(work)
        return
    address, directory, password = server
    rows = warehouses * items
    path = f"{directory}/spark-bench-{os.getpid()}.fdb"
    dsn = f"{address}:{path}"
    host, _, port = address.partition("/")
    url = f"jdbc:firebird://{host}:{port or 3050}/{path}"
    make_database(dsn, [
        "CREATE TABLE STOCK (S_I_ID INTEGER NOT NULL PRIMARY KEY, S_W_ID INTEGER, "
        "S_QUANTITY INTEGER, S_DIST_01 CHAR(24), S_DIST_02 CHAR(24), S_YTD INTEGER, "
        "S_DATA VARCHAR(50))",
        f"EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {rows}) DO BEGIN "
        "INSERT INTO STOCK VALUES (:I, MOD(:I, 20), MOD(:I, 100), 'dist one ' || :I, "
        "'dist two ' || :I, 0, 'data ' || (:I * 7919)); I = I + 1; END END",
    ], password=password)
    total = sum(r % 100 for r in range(rows))
    server_auth = dict(user=USER, password=password)

    def fb3_fbunload(**options):
        # Firebird 3 shares no snapshot: each partition reads in its own.
        reader = (spark.read.format("fbunload").option("database", dsn).option("table", "STOCK")
                  .option("allow_inconsistent", "true"))
        for key, value in {**server_auth, **options}.items():
            reader = reader.option(key, str(value))
        return reader.load()

    def jdbc():
        return spark.read.jdbc(
            url, "STOCK", column="S_I_ID", lowerBound=0, upperBound=rows, numPartitions=2,
            properties={"user": USER, "password": password,
                        "driver": "org.firebirdsql.jdbc.FBDriver"},
        )

    table([
        ("fbunload.read_arrow, parallel=2", median_seconds(lambda: fbunload.read_arrow(
            dsn, "STOCK", parallel=2, **server_auth))),
        ("Spark, fbunload source, partitions: 2", median_seconds(
            lambda: every_row(fb3_fbunload(partitions=2)))),
        ("Spark, JDBC (Jaybird 6), numPartitions=2 on S_I_ID", median_seconds(
            lambda: every_row(jdbc()))),
    ], f"Firebird 3 server, STOCK of {rows:,} rows, local[2]")

    print(f"\nunder a writer, total S_QUANTITY always {total}:")
    for what, frame in [("JDBC (Jaybird), 2 partitions", jdbc),
                        ("fbunload source on Firebird 3 (allow_inconsistent), 2 partitions",
                         lambda: fb3_fbunload(partitions=2))]:
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
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
