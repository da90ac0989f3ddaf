"""fbunload as an ADBC driver (fbunload.adbc), loaded by the ADBC driver
manager from the wheel's extension module, on the embedded engine: the
DB-API, pandas and polars read what fbunload.read_arrow and firebird-driver
read; statements that change data are refused; partitions read in two
other processes join the one snapshot their statement holds."""

import os
import subprocess
import sys

import pyarrow as pa
import pytest

import fbunload
import fbunload.adbc
from conftest import PASSWORD, USER, connection, fb5_server, make_database

adbc_errors = pytest.importorskip("adbc_driver_manager")
AUTH = dict(user=USER, password=PASSWORD)


@pytest.fixture
def conn(types_db):
    with fbunload.adbc.connect(types_db, **AUTH) as conn:
        yield conn


def fetch(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def test_the_driver_is_the_extension_module_and_loads_in_the_driver_manager(conn):
    assert fbunload.adbc.driver_path() == os.path.abspath(fbunload._fbunload.__file__)
    info = conn.adbc_get_info()
    assert info["vendor_name"] == "Firebird"
    assert info["driver_name"] == "ADBC fbunload driver"


def test_a_table_through_the_db_api_is_what_read_arrow_reads(conn, types_db):
    table = fetch(conn, "SELECT * FROM T")
    assert table.equals(fbunload.read_arrow(types_db, "T", **AUTH))
    # ...and what the reference driver reads, value for value.
    with connection(types_db) as con:
        cur = con.cursor()
        cur.execute("SELECT ID, S, B, N9, D, V, BO FROM T ORDER BY ID")
        reference = cur.fetchall()
    mine = fetch(conn, "SELECT ID, S, B, N9, D, V, BO FROM T ORDER BY ID").to_pylist()
    assert [tuple(row.values()) for row in mine] == [tuple(row) for row in reference]


def test_a_query_is_what_read_sql_reads(conn, types_db):
    sql = "SELECT ID, V || '!' AS SHOUT FROM T WHERE ID > 1"
    assert fetch(conn, sql).equals(fbunload.read_sql(types_db, sql, **AUTH))


def test_pandas_read_sql_and_polars_read_database(conn, types_db):
    import pandas as pd
    import polars as pl

    expected = fbunload.read_arrow(types_db, "T", **AUTH, columns=["ID", "V", "N9"])
    frame = pd.read_sql("SELECT ID, V, N9 FROM T", conn)
    pd.testing.assert_frame_equal(frame, expected.to_pandas())
    polars_frame = pl.read_database("SELECT ID, V, N9 FROM T", conn)
    assert polars_frame.equals(pl.from_arrow(expected))


@pytest.mark.parametrize(
    "sql", ["DELETE FROM T", "UPDATE T SET S = 1", "INSERT INTO T (ID) VALUES (9)", "DROP TABLE T"]
)
def test_statements_that_change_data_are_refused(conn, types_db, sql):
    with conn.cursor() as cur:
        with pytest.raises(adbc_errors.ProgrammingError, match="read-only: only a SELECT"):
            cur.execute(sql)
    assert fetch(conn, "SELECT COUNT(*) AS N FROM T").to_pylist() == [{"N": 3}]


def test_metadata(conn, types_db):
    assert conn.adbc_get_table_types() == ["TABLE", "VIEW"]
    assert conn.adbc_get_table_schema("T").equals(
        fbunload.read_arrow(types_db, "T", **AUTH).schema
    )
    objects = conn.adbc_get_objects(depth="all").read_all().to_pylist()
    tables = objects[0]["catalog_db_schemas"][0]["db_schema_tables"]
    assert [(t["table_name"], t["table_type"]) for t in tables] == [("T", "TABLE")]
    columns = tables[0]["table_columns"]
    assert [c["column_name"] for c in columns][:3] == ["ID", "S", "B"]
    assert columns[0]["xdbc_type_name"] == "INTEGER" and columns[0]["xdbc_is_nullable"] == "NO"
    with pytest.raises(adbc_errors.Error, match="no table or view"):
        conn.adbc_get_table_schema("NOPE")


def read_partitions(conn, partitions):
    """The partitions read one after another, as one table."""
    pieces = []
    for partition in partitions:
        with conn.cursor() as reader:
            reader.adbc_read_partition(partition)
            pieces.append(reader.fetch_arrow_table())
    return pa.concat_tables(pieces)


def test_partitions_read_in_this_process_are_the_table(big_db):
    with fbunload.adbc.connect(big_db, **AUTH) as conn, conn.cursor() as cur:
        cur.adbc_statement.set_options(**{"adbc.fbunload.partitions": "3"})
        partitions, schema = cur.adbc_execute_partitions("SELECT * FROM WIDE")
        assert len(partitions) == 3
        together = read_partitions(conn, partitions)
        assert together.schema.equals(schema)
        assert together.equals(fbunload.read_arrow(big_db, "WIDE", **AUTH))
        # Any SELECT: split by its driving table, else one partition.
        cur.adbc_statement.set_options(**{"adbc.fbunload.split_by": "WIDE"})
        partitions, _ = cur.adbc_execute_partitions("SELECT ID FROM WIDE WHERE ID < 100000")
        assert len(partitions) == 3
        assert read_partitions(conn, partitions)["ID"].to_pylist() == list(range(100000))
    with fbunload.adbc.connect(big_db, **AUTH) as conn, conn.cursor() as cur:
        partitions, _ = cur.adbc_execute_partitions("SELECT COUNT(*) AS N FROM WIDE")
        assert len(partitions) == 1
        with conn.cursor() as reader:
            reader.adbc_read_partition(partitions[0])
            assert reader.fetchall() == [(200000,)]


def test_duplicate_column_names_and_several_bound_rows(conn, types_db):
    """Arrow results keep two columns of one name (Firebird names both
    CONSTANT), from read_sql and through ADBC; several bound rows give one
    result each, in their order; trailing semicolons end a query."""
    sql = "SELECT 1, 'a' || 'b' FROM RDB$DATABASE;;"
    assert fbunload.read_sql(types_db, sql, **AUTH).column_names == ["CONSTANT", "CONCATENATION"]
    assert fetch(conn, "SELECT 1, 2 FROM RDB$DATABASE").column_names == ["CONSTANT", "CONSTANT"]
    with conn.cursor() as cur:
        cur.adbc_statement.set_sql_query("SELECT ID FROM T WHERE ID = ?")
        cur.adbc_statement.bind(pa.record_batch([pa.array([3, 1, 2])], names=["id"]))
        stream, _ = cur.adbc_statement.execute_query()
        table = pa.RecordBatchReader._import_from_c(stream.address).read_all()
        assert table["ID"].to_pylist() == [3, 1, 2]


def test_autocommit_off_is_the_db_apis_default_and_changes_nothing(types_db):
    """The DB-API turns autocommit off unless told otherwise: accepted,
    without its warning, and commit has nothing to do; with it on, ADBC's
    commit is INVALID_STATE (the DB-API then does not call it)."""
    import warnings

    import adbc_driver_manager.dbapi as dbapi

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with dbapi.connect(
            driver=fbunload.adbc.driver_path(),
            entrypoint=fbunload.adbc.ENTRYPOINT,
            db_kwargs={"uri": types_db, "username": USER, "password": PASSWORD},
        ) as conn:
            assert fetch(conn, "SELECT ID FROM T").num_rows == 3
            conn.commit()
            conn.rollback()
    with fbunload.adbc.connect(types_db, **AUTH) as conn:
        with pytest.raises(adbc_errors.ProgrammingError, match="autocommit is on"):
            conn.adbc_connection.commit()


def test_partitions_read_in_two_processes_join_one_snapshot(tmp_path):
    """Partitions of ACCOUNTS from one statement, read in two child
    processes while a writer moves money: together they balance and equal
    the statement's own read at the end, however many transfers came
    between. The embedded engine lets several processes open a database
    only in SuperClassic mode: the scenario runs in a child whose runtime
    is a copy set to it (as test_dask's worker-process test does)."""
    from conftest import run_superclassic

    report = run_superclassic(tmp_path, "adbc_partitions.py", "hold")
    assert report["rows"] == report["accounts"]
    assert report["transfers_meanwhile"] > 20
    assert len(set(report["readers"])) == 2 and report["holder"] not in report["readers"]


def test_partitions_read_in_two_processes_join_one_snapshot_on_a_firebird_5_server():
    """The same on the Firebird 5 server scripts/fb5-server.sh starts: the
    holder and both readers attach over TCP; skipped where none runs."""
    import json

    address, directory, password = fb5_server()
    dsn = f"{address}:{directory}/adbc-bank-{os.getpid()}.fdb"
    script = os.path.join(os.path.dirname(__file__), "adbc_partitions.py")
    try:
        done = subprocess.run(
            [sys.executable, script, "hold-on-server", dsn],
            env={**os.environ, "ISC_PASSWORD": password},
            capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        report = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        from conftest import connection

        try:
            connection(dsn, password).drop_database()
        except Exception:
            pass
    assert report["rows"] == report["accounts"]
    assert report["transfers_meanwhile"] > 20
    assert len(set(report["readers"])) == 2 and report["holder"] not in report["readers"]


def test_the_readme_example_runs_as_written(tmp_path):
    from test_readme import readme_block

    env = {k: v for k, v in os.environ.items() if k not in ("ISC_USER", "ISC_PASSWORD")}
    done = subprocess.run(
        [sys.executable, "-c", readme_block("adbc")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    stock, late, items, parts = map(int, done.stdout.split())
    assert stock == items == 10_000 and late > 0 and parts >= 1


def test_one_row_of_bound_parameters_fills_the_markers(conn, types_db):
    import datetime

    import polars as pl

    sql = "SELECT ID, V FROM T WHERE ID >= ? AND V <> ? AND B = ?"
    with conn.cursor() as cur:
        cur.execute(sql, (1, "it's not ?", 9223372036854775807))
        assert cur.fetchall() == [(1, "naïve 日本")]
    # pandas refuses params for ADBC connections; polars passes them on.
    frame = pl.read_database(
        "SELECT ID FROM T WHERE DT = ?",
        conn,
        execute_options={"parameters": [datetime.date(2024, 2, 29)]},
    )
    assert frame["ID"].to_list() == [1]
    with conn.cursor() as cur, pytest.raises(adbc_errors.ProgrammingError, match="parameter markers"):
        cur.execute("SELECT ID FROM T WHERE ID = ?", (1, 2))


def test_select_star_returns_computed_columns_as_the_engine_does(tmp_path):
    """A table read leaves out COMPUTED BY columns; SQL returns them, so
    SELECT * through ADBC (and pandas.read_sql) has them, as the engine's
    own answer does, while read_arrow keeps the stored ones."""
    import pandas as pd

    db = make_database(
        tmp_path / "computed.fdb",
        [
            "CREATE TABLE C (ID INTEGER, A INTEGER, TWICE COMPUTED BY (A * 2), V VARCHAR(10))",
            "INSERT INTO C (ID, A, V) VALUES (1, 21, 'x')",
        ],
    )
    with connection(db) as con:
        cur = con.cursor()
        cur.execute("SELECT * FROM C")
        engine = [d[0] for d in cur.description]
        assert cur.fetchall() == [(1, 21, 42, "x")]
    assert engine == ["ID", "A", "TWICE", "V"]
    with fbunload.adbc.connect(db, **AUTH) as conn:
        assert fetch(conn, "SELECT * FROM C").to_pylist() == [
            {"ID": 1, "A": 21, "TWICE": 42, "V": "x"}
        ]
        assert list(pd.read_sql("SELECT * FROM C", conn).columns) == engine
        assert conn.adbc_get_table_schema("C").names == engine
        # Its partitions are the same query's, split by C.
        with conn.cursor() as cur:
            partitions, _ = cur.adbc_execute_partitions("SELECT * FROM C")
            assert read_partitions(conn, partitions).to_pylist() == [
                {"ID": 1, "A": 21, "TWICE": 42, "V": "x"}
            ]
    assert fbunload.read_arrow(db, "C", **AUTH).column_names == ["ID", "A", "V"]


def test_bound_values_are_the_engines_or_refused(conn, types_db):
    """None binds as NULL; a float exactly (1e-310 was read as 0); a
    timestamp in Firebird's 100 us, finer digits refused; markers are
    those the engine sees after a CR-ended comment and in q'{it's}'."""
    import datetime

    with conn.cursor() as cur:
        cur.execute("SELECT COALESCE(?, 'none') AS V FROM T WHERE ID = 1", (None,))
        assert cur.fetchall() == [("none",)]
        cur.execute("SELECT ID FROM T WHERE D = ? OR F = ? ORDER BY ID", (1e-310, 0.25))
        assert cur.fetchall() == [(1,)]
        cur.execute("SELECT CAST(? AS DOUBLE PRECISION) AS X FROM T WHERE ID = 1", (1e-310,))
        assert cur.fetchall() == [(1e-310,)]
        at = datetime.datetime(1900, 1, 1, 0, 0, 0, 100)
        cur.execute("SELECT ID FROM T WHERE TS = ?", (at,))
        assert cur.fetchall() == [(1,)]
        cur.execute("SELECT ID FROM T WHERE TS = ?", (datetime.datetime(2024, 1, 1, 0, 0, 0, 123400),))
        assert cur.fetchall() == []
        with pytest.raises(adbc_errors.ProgrammingError, match="100 µs"):
            cur.execute("SELECT ID FROM T WHERE TS > ?", (datetime.datetime(2024, 1, 1, 0, 0, 0, 123456),))
        with pytest.raises(adbc_errors.ProgrammingError, match="no NaN or infinity"):
            cur.execute("SELECT ID FROM T WHERE D = ?", (float("nan"),))
        cur.execute("SELECT ID, q'{it's}' AS Q FROM T -- first\r WHERE ID = ?", (3,))
        assert cur.fetchall() == [(3, "it's")]


def test_a_partition_with_a_null_ticket_or_a_write_is_refused(big_db):
    import json

    with fbunload.adbc.connect(big_db, **AUTH) as conn, conn.cursor() as cur:
        table, _ = cur.adbc_execute_partitions("SELECT * FROM SMALL")
        with conn.cursor() as other:
            query, _ = other.adbc_execute_partitions("SELECT COUNT(*) AS N FROM SMALL")
            edits = [(table[0], "ticket", None), (query[0], "ticket", None)]
            # A query's partition holds one SELECT, checked before it runs.
            edits.append((query[0], "query", "DELETE FROM SMALL"))
            for partition, field, value in edits:
                edited = json.loads(partition)
                edited[field] = value
                with conn.cursor() as reader, pytest.raises(adbc_errors.ProgrammingError, match="not a partition"):
                    reader.adbc_read_partition(json.dumps(edited).encode())
                    reader.fetch_arrow_table()


def test_a_cursor_cancelled_while_reading_stops_its_read(tmp_path):
    """``cursor.adbc_cancel()`` (AdbcStatementCancel) stops the read in
    progress: the stream ends with an error instead of the table's rows
    (250 MB of them, more than the stream holds ahead of its reader)."""
    db = make_database(
        tmp_path / "cancel.fdb",
        [
            "CREATE TABLE BIG (ID INTEGER, PAD VARCHAR(1000))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 250000) DO BEGIN "
            "INSERT INTO BIG VALUES (:I, LPAD('', 1000, 'x' || :I)); I = I + 1; END END",
        ],
        page_size=8192,
    )
    with fbunload.adbc.connect(db, **AUTH) as conn:
        with conn.cursor() as cur:
            cur.execute("SELECT * FROM BIG")
            reader = cur.fetch_record_batch()
            first = reader.read_next_batch()
            assert first.num_rows > 0
            cur.adbc_cancel()
            read = first.num_rows
            with pytest.raises(Exception) as caught:
                for batch in reader:
                    read += batch.num_rows
            assert "the read was cancelled" in str(caught.value), caught.value
            assert read < 250000
