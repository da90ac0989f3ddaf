"""fbunload.spark with a real local Spark (local[2]) on the real embedded
engine.

Spark runs the source's Python in worker processes of its own; for a
database file, one of them (the application's holder) opens it and reads
for the others. The cases run in two child pytests, each with one Spark
session (Spark takes long to start): one with the embedded runtime as
installed (SuperServer: one process may open a file), which reads files
only through Spark; one whose FIREBIRD is a copy of the runtime set to
SuperClassic, where the test itself may write to the database while Spark
reads it (a writer moving money). This module, collected in the parent,
only starts them.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

import fbunload
from conftest import PASSWORD, RUNTIME, USER, connection, make_database

pytest.importorskip("pyspark", reason="no PySpark (pip install 'pyspark>=4'; scripts/setup.sh)")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java runtime for Spark (scripts/setup.sh installs Debian's)", allow_module_level=True)

# "installed" or "superclassic" in a child; None in the parent.
CHILD = os.environ.get("FBUNLOAD_SPARK_CHILD")
AUTH = dict(user=USER, password=PASSWORD)


def test_filters_become_sql_only_as_far_as_firebird_agrees():
    """Which pushed filters Firebird takes alone (exact), which it only
    narrows for Spark (strings, whose collations may compare looser), and
    which stay with Spark: checked without a session."""
    import datetime
    import decimal

    from pyspark.sql import types as T

    import fbunload.spark as source

    ds = pytest.importorskip("pyspark.sql.datasource")
    if not hasattr(ds, "Filter"):
        pytest.skip("this PySpark pushes no filters (4.1 and later do)")
    types = {"ID": T.IntegerType(), "N": T.DecimalType(12, 2), "A": T.StringType(),
             "F": T.DoubleType(), "D": T.DateType(), "B": T.BooleanType()}
    cases = [
        (ds.GreaterThanOrEqual(("ID",), 10), ('"ID" >= 10', True)),
        (ds.LessThan(("N",), decimal.Decimal("1E+2")), ('"N" < 100', True)),
        (ds.In(("ID",), (1, 2)), ('"ID" IN (1, 2)', True)),
        (ds.Not(ds.EqualTo(("ID",), 3)), ('NOT ("ID" = 3)', True)),
        (ds.EqualNullSafe(("ID",), None), ('"ID" IS NULL', True)),
        (ds.IsNotNull(("F",)), ('"F" IS NOT NULL', True)),
        (ds.EqualTo(("D",), datetime.date(2024, 2, 29)), ("\"D\" = DATE '2024-02-29'", True)),
        (ds.EqualTo(("B",), True), ('"B" = TRUE', True)),
        (ds.EqualTo(("A",), "it's"), ("\"A\" = 'it''s'", False)),
        (ds.StringStartsWith(("A",), "ro"), ("\"A\" STARTING WITH 'ro'", False)),
        # Looser, so its NOT would be stricter; floats (NaN), values of
        # another type, nested fields and unknown columns stay with Spark.
        (ds.Not(ds.EqualTo(("A",), "x")), None),
        (ds.GreaterThan(("F",), 1.5), None),
        (ds.EqualTo(("ID",), True), None),
        (ds.EqualTo(("ID",), 1.5), None),
        (ds.EqualTo(("S", "X"), 1), None),
        (ds.EqualTo(("NOPE",), 1), None),
        (ds.StringEndsWith(("A",), "x"), None),
    ]
    for pushed, sql in cases:
        assert source._condition(pushed, types) == sql, pushed


def test_the_holders_address_is_kept_where_only_this_user_reads_it(tmp_path, monkeypatch):
    """The holder's port and token (which a read's password follows) are
    kept in a directory of this user's alone; one that others may write,
    or a link, is refused. A request without the token gets no answer."""
    from fbunload import _holder

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    mine = tmp_path / f"fbunload-{os.getuid()}"
    mine.mkdir(mode=0o777)
    os.chmod(mine, 0o777)
    with pytest.raises(fbunload.UsageError, match="not a directory of this user's alone"):
        _holder.runtime_dir()
    mine.rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    mine.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(fbunload.UsageError, match="not a directory of this user's alone"):
        _holder.runtime_dir()
    mine.unlink()
    host, port, token = _holder.address("127.0.0.1", os.getpid())
    assert oct(os.stat(mine).st_mode & 0o777) == "0o700"
    assert _holder.ask((host, port, token), "ping", {})[1] == {"ok": True}
    _, answer = _holder.ask((host, port, "0" * len(token)), "ping", {})
    assert answer.get("gone"), answer
    # The same application finds the same holder.
    assert _holder.address("127.0.0.1", os.getpid()) == (host, port, token)


if not CHILD:

    @pytest.mark.parametrize("mode", ["installed", "superclassic"])
    def test_spark_cases_in_a_child(tmp_path, mode):
        env = {**os.environ, "FBUNLOAD_SPARK_CHILD": mode}
        if mode == "superclassic":
            runtime = tmp_path / "runtime"
            shutil.copytree(RUNTIME, runtime, symlinks=True)
            with open(runtime / "firebird.conf", "a") as conf:
                conf.write("\nServerMode = SuperClassic\n")
            env["FIREBIRD"] = str(runtime)
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
             os.path.abspath(__file__)],
            cwd=os.path.dirname(os.path.abspath(__file__)),
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
        )
        print(result.stdout[-3000:])
        assert result.returncode == 0, result.stdout[-20000:] + result.stderr[-5000:]

else:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    import fbunload.spark
    from test_dask import ACCOUNTS, BANK, MoneyMover, user_attachments

    @pytest.fixture(scope="module")
    def spark():
        """One session for every case: Spark takes long to start. local[2,3]:
        two task threads, and a failed task tried up to 3 times."""
        os.environ["PYSPARK_PYTHON"] = sys.executable
        session = (
            SparkSession.builder.master("local[2,3]")
            .appName("fbunload-tests")
            .config("spark.driver.memory", "1g")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
        fbunload.spark.register(session)
        yield session
        session.stop()

    def load(spark, database, **options):
        reader = spark.read.format("fbunload").option("database", database)
        for key, value in {**AUTH, **options}.items():
            reader = reader.option(key, value)
        return reader.load()

    def same_rows(frame, expected: pa.Table):
        """The DataFrame's rows, in partition order, equal ``expected`` (as
        Spark's Arrow types hold them)."""
        got = frame.toArrow()
        assert got.schema.names == expected.schema.names
        assert got.to_pylist() == expected.cast(got.schema).to_pylist()

    def spark_filters(frame):
        """The Filter operators of the frame's physical plan: what Spark
        evaluates itself."""
        plan = frame._jdf.queryExecution().executedPlan().toString()
        return re.findall(r"(?<![A-Za-z])Filter \(.*", plan)

    NAMES = [
        "CREATE TABLE ITEM (ID INTEGER, NAME VARCHAR(10))",
        'CREATE TABLE "lower_t" (ID INTEGER, "v" INTEGER)',
        'CREATE TABLE "odd ""Name"" t" (ID INTEGER, "a b" INTEGER)',
        "INSERT INTO ITEM VALUES (1, 'one')",
        "INSERT INTO ITEM VALUES (2, 'two')",
        'INSERT INTO "lower_t" VALUES (1, 10)',
        'INSERT INTO "lower_t" VALUES (2, 20)',
        'INSERT INTO "odd ""Name"" t" VALUES (5, 50)',
        'INSERT INTO "odd ""Name"" t" VALUES (6, 60)',
    ]

    if CHILD == "installed":

        def test_names_follow_the_command_lines_rule(spark, tmp_path):
            """Unquoted upper-cased, double-quoted exact, as `-t` and
            `--columns`, with where, columns and pushed filters; a name that
            differs in case gets the command line's did-you-mean."""
            names = make_database(tmp_path / "names.fdb", NAMES)
            item = load(spark, names, table="item")
            assert item.toArrow().to_pylist() == [{"ID": 1, "NAME": "one"}, {"ID": 2, "NAME": "two"}]
            lower = load(spark, names, table='"lower_t"', where='"v" > 10', columns='ID,"v"')
            assert lower.toArrow().to_pylist() == [{"ID": 2, "v": 20}]
            odd = load(spark, names, table='"odd ""Name"" t"', columns='["\\"a b\\"", "id"]')
            pushed = odd.where(F.col("ID") == 6)
            assert spark_filters(pushed) == []
            assert pushed.toArrow().to_pylist() == [{"a b": 60, "ID": 6}]
            for table, words in [
                ('"Item"', "did you mean ITEM?"),
                ("lower_t", 'did you mean "lower_t"?'),
                ("NOPE", 'Tables: ITEM, "lower_t", "odd ""Name"" t"'),
            ]:
                with pytest.raises(Exception) as caught:
                    load(spark, names, table=table).count()
                message = str(caught.value)
                assert words in message and "org.apache" not in message, message

        def test_a_file_read_by_local_2_with_the_runtime_as_installed(spark, big_db):
            """One process (the holder) opens the file, whose mode
            (SuperServer) lets no other; a DataFrame counted twice; two read
            at once."""
            expected = fbunload.read_arrow(big_db, "WIDE", columns=["ID"], **AUTH)
            wide = load(spark, big_db, table="WIDE", columns="ID", partitions="4")
            assert wide.count() == expected.num_rows
            assert wide.count() == expected.num_rows
            same_rows(wide, expected)
            frames = [load(spark, big_db, table=t, partitions="3") for t in ["WIDE", "WIDE", "SMALL"]]
            counts = {}

            def count(i):
                counts[i] = frames[i].count()

            threads = [threading.Thread(target=count, args=(i,)) for i in range(len(frames))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert counts[0] == counts[1] == expected.num_rows and counts[2] > 0, counts

        def test_explain_names_the_pushed_filters_and_columns(spark, big_db, capsys):
            wide = load(spark, big_db, table="WIDE", columns="ID,N")
            picked = wide.where((F.col("ID") >= 1000) & (F.col("N").isNull()))
            capsys.readouterr()
            picked.explain("formatted")
            plan = capsys.readouterr().out
            assert "PushedFilters: [IsNotNull(ID), GreaterThanOrEqual(ID,1000), IsNull(N)]" in plan, plan
            assert "ReadSchema: struct<ID:int,N:decimal(" in plan, plan

    if CHILD == "superclassic":

        ZONES = [
            "CREATE TABLE Z (ID INTEGER, TZ TIMESTAMP WITH TIME ZONE, A INTEGER [3])",
            "INSERT INTO Z (ID, TZ) VALUES (1, TIMESTAMP '2024-03-31 02:30:00 Europe/Berlin')",
            "INSERT INTO Z (ID) VALUES (2)",
        ]

        def test_a_table_read_equals_read_arrow(spark, types_db, big_db, tmp_path):
            frame = load(spark, types_db, table="T")
            same_rows(frame, fbunload.read_arrow(types_db, "T", **AUTH))
            kinds = {f.name: f.dataType for f in frame.schema.fields}
            assert kinds["N"] == T.DecimalType(19, 4) and kinds["I128"] == T.DecimalType(38, 0)
            assert kinds["TS"] == T.TimestampNTZType() and kinds["BL"] == T.BinaryType()
            assert kinds["DF"] == T.StringType()
            zones = make_database(tmp_path / "zones.fdb", ZONES)
            frame = load(spark, zones, table="Z")
            assert frame.schema["TZ"].dataType == T.TimestampType()
            assert frame.schema["A"].dataType == T.ArrayType(T.IntegerType())
            same_rows(frame, fbunload.read_arrow(zones, "Z", **AUTH))
            wide = load(spark, big_db, table="WIDE", partitions="4")
            assert wide.rdd.getNumPartitions() == 4
            same_rows(wide, fbunload.read_arrow(big_db, "WIDE", **AUTH))

        @pytest.fixture
        def bank(tmp_path):
            return make_database(tmp_path / "bank.fdb", BANK, page_size=4096)

        def holder_gone(database, before, seconds=30):
            """Waits until the read's holder has let go of the database: its
            snapshot's attachment and the pin it holds are gone."""
            deadline = time.monotonic() + seconds
            while user_attachments(database) > before:
                assert time.monotonic() < deadline, "the holder kept its snapshot"
                time.sleep(0.2)

        def test_a_read_under_a_writer_is_one_state_in_every_action(spark, bank):
            before = user_attachments(bank)
            with MoneyMover(bank) as mover:
                accounts = load(spark, bank, table="ACCOUNTS", partitions="4", idle_timeout="10")
                assert accounts.rdd.getNumPartitions() == 4
                at_start = mover.committed
                total, count = accounts.agg(F.sum("BALANCE"), F.count("*")).first()
                assert mover.committed > at_start
                # The DataFrame again: its snapshot is held while it is used.
                mover.wait_for(20)
                again = accounts.toArrow()
                # Two DataFrames read at once: their snapshots, held by one
                # process, share its pin, and never refuse each other.
                frames = [load(spark, bank, table="ACCOUNTS", partitions="3", idle_timeout="5")
                          for _ in range(3)]
                sums = {}

                def read(i):
                    sums[i] = frames[i].agg(F.sum("BALANCE"), F.count("*")).first()

                threads = [threading.Thread(target=read, args=(i,)) for i in range(len(frames))]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            assert (total, count) == (ACCOUNTS * 1000, ACCOUNTS)
            assert pa.compute.sum(again.column("BALANCE")).as_py() == ACCOUNTS * 1000
            assert sorted(sums) == [0, 1, 2], "a read failed (its error is above)"
            assert {tuple(v) for v in sums.values()} == {(ACCOUNTS * 1000, ACCOUNTS)}
            # Released once no partition read them for idle_timeout.
            holder_gone(bank, before, seconds=60)

        def test_two_tables_joined_at_one_snapshot(spark, bank):
            with MoneyMover(bank) as mover:
                with fbunload.Snapshot(bank, tables="ACCOUNTS|LEDGER", **AUTH) as snap:
                    at = fbunload.spark.snapshot_options(snap, partitions=4)
                    assert PASSWORD not in at["snapshot"]
                    read = spark.read.format("fbunload").options(**at)
                    accounts = read.option("table", "ACCOUNTS").load()
                    ledger = read.option("table", "LEDGER").load()
                    mover.wait_for(20)
                    moves = ledger.select(F.col("FROM_ID").alias("ID"), (-F.col("AMOUNT")).alias("D"))
                    moves = moves.union(ledger.select(F.col("TO_ID").alias("ID"), F.col("AMOUNT").alias("D")))
                    net = moves.groupBy("ID").agg(F.sum("D").alias("NET"))
                    books = accounts.join(net, "ID", "left").select(
                        (F.col("BALANCE") == 1000 + F.coalesce(F.col("NET"), F.lit(0))).alias("OK")
                    )
                    assert books.where("OK").count() == ACCOUNTS
                    assert ledger.count() > 0
                    mover.wait_for(20)
                    same_rows(accounts, snap.read_arrow("ACCOUNTS"))
            with pytest.raises(Exception) as caught:
                accounts.count()
            message = str(caught.value)
            assert f"snapshot {snap.number} is closed" in message, message
            assert len(message.splitlines()) <= 10 and "org.apache" not in message, message

        def test_a_killed_python_worker_is_retried_to_the_same_rows(spark, bank, tmp_path):
            marks = str(tmp_path / "attempts")
            os.mkdir(marks)

            def kill_once(batches):
                from pyspark import TaskContext

                context = TaskContext.get()
                for batch in batches:
                    if context.partitionId() == 1:
                        mark = os.path.join(marks, f"attempt-{context.attemptNumber()}")
                        open(mark, "w").close()
                        if context.attemptNumber() == 0:
                            os.kill(os.getpid(), signal.SIGKILL)
                    yield batch

            before = user_attachments(bank)
            with MoneyMover(bank) as mover:
                # The retry joins the snapshot, held until idle_timeout.
                accounts = load(
                    spark, bank, table="ACCOUNTS", columns="ID,BALANCE", partitions="4",
                    idle_timeout="10",
                )
                rows = accounts.mapInArrow(kill_once, accounts.schema).toArrow()
                mover.wait_for(5)
            holder_gone(bank, before, seconds=60)
            assert sorted(os.listdir(marks)) == ["attempt-0", "attempt-1"]
            assert rows.column("ID").to_pylist() == list(range(ACCOUNTS))
            assert pa.compute.sum(rows.column("BALANCE")).as_py() == ACCOUNTS * 1000

        def test_filters_and_columns_are_pushed_down(spark, big_db):
            wide = load(spark, big_db, table="WIDE", columns='["ID", "N"]', partitions="3")
            assert wide.columns == ["ID", "N"]
            picked = wide.where((F.col("ID") >= 1000) & (F.col("ID") < 1500) & F.col("N").isNotNull())
            # Taken by Firebird: Spark keeps no Filter of its own.
            assert spark_filters(picked) == []
            expected = fbunload.read_arrow(
                big_db, "WIDE", columns=["ID", "N"], where="ID >= 1000 AND ID < 1500", **AUTH
            )
            same_rows(picked, expected)
            # A string is pushed, and Spark checks it again (collations).
            text = load(spark, big_db, table="WIDE", where="ID < 10").where(F.col("A") == "row 7919")
            (kept,) = spark_filters(text)
            assert "row 7919" in kept, kept
            assert text.toArrow().column("ID").to_pylist() == [1]

        def test_a_query_split_by_its_table(spark, big_db):
            query = "SELECT ID, N * 2 AS N2 FROM WIDE WHERE MOD(ID, 1000) = 0"
            frame = load(spark, big_db, query=query, split_by="WIDE", partitions="3")
            assert frame.rdd.getNumPartitions() == 3
            same_rows(frame, fbunload.read_sql(big_db, query, split_by="WIDE", **AUTH))

        @pytest.mark.parametrize(
            "options, words",
            [
                (dict(table="NOPE"), "NOPE"),
                (dict(table="WIDE", colums="ID"), "no option colums"),
                (dict(table="WIDE", columns="ID,X"), "no column"),
            ],
        )
        def test_errors_are_one_clear_message(spark, big_db, options, words):
            with pytest.raises(Exception) as caught:
                load(spark, big_db, **options).count()
            message = str(caught.value)
            assert words in message and "org.apache" not in message, message
            assert len(message.splitlines()) <= 10, message
            assert "Xyzzy-42" not in message

        def test_a_wrong_password_is_one_clear_message(spark):
            """The embedded engine takes any password: a server checks it."""
            from test_dask import fb3_server

            address, directory, _ = fb3_server()
            database = f"{address}:{directory}/spark-none.fdb"
            with pytest.raises(Exception) as caught:
                load(spark, database, table="T", password="Xyzzy-42").count()
            message = str(caught.value)
            assert "password" in message and "Xyzzy-42" not in message, message
            assert len(message.splitlines()) <= 10 and "org.apache" not in message, message

        def test_a_partition_after_its_snapshot_was_released_is_a_clear_error(spark, big_db):
            source = fbunload.spark.FirebirdDataSource(
                dict(database=big_db, table="SMALL", idle_timeout="1", **AUTH)
            )
            reader = source.reader(source.schema())
            (partition,) = reader.partitions()
            assert pa.Table.from_batches(list(reader.read(partition))).num_rows == 1
            time.sleep(3)
            with pytest.raises(fbunload.SnapshotClosed, match="the DataFrame again"):
                list(reader.read(partition))
