"""fbunload's Python API on the real embedded engine."""

import datetime
import decimal
import os
import pathlib
import re
import subprocess
import sys
import threading

import pyarrow as pa
import pytest

import fbunload
from conftest import PASSWORD, USER, connection, make_database

AUTH = dict(user=USER, password=PASSWORD)


def driver_rows(database, sql):
    con = connection(database)
    cur = con.cursor()
    cur.execute(sql)
    rows = []
    for row in cur.fetchall():
        rows.append(
            tuple(v.read() if hasattr(v, "read") else v for v in row)
        )
    con.close()
    return rows


def same(ours, theirs):
    """Our Arrow value against firebird-driver's Python value."""
    if theirs is None:
        return ours is None
    if isinstance(theirs, datetime.datetime):
        # Firebird TIMESTAMP has no zone; the driver's is naive.
        return ours.replace(tzinfo=None) == theirs
    if isinstance(theirs, float):
        return ours == pytest.approx(theirs, rel=1e-6)
    if isinstance(theirs, decimal.Decimal):
        # DECFLOAT is text in Arrow (no Arrow type holds it exactly).
        return decimal.Decimal(ours) == theirs if isinstance(ours, str) else ours == theirs
    if isinstance(theirs, str) and isinstance(ours, str):
        return ours.rstrip() == theirs.rstrip()
    return ours == theirs


def test_every_type_equals_what_firebird_driver_returns(types_db):
    table = fbunload.read_arrow(types_db, "T", **AUTH)
    columns = table.column_names
    expected = driver_rows(types_db, f"SELECT {', '.join(columns)} FROM T ORDER BY ID")
    got = sorted(zip(*(table.column(c).to_pylist() for c in columns)), key=lambda r: r[0])
    assert len(got) == len(expected) == 3
    for ours, theirs in zip(got, expected):
        for name, o, t in zip(columns, ours, theirs):
            assert same(o, t), f"{name}: fbunload {o!r}, firebird-driver {t!r}"


def test_types_follow_the_readme_mapping(types_db):
    schema = fbunload.read_arrow(types_db, "T", **AUTH).schema
    # The storage decides the precision (docs/formats.md): BIGINT holds 19 digits.
    assert schema.field("N").type == pa.decimal128(19, 4)
    # INT128 is the decimal128(38, 0) every reader takes (decimal256=True: 39 digits).
    assert schema.field("I128").type == pa.decimal128(38, 0)
    assert schema.field("BL").type == pa.binary()
    assert schema.field("TS").type.unit == "us"
    assert schema.field("N9").metadata[b"fbunload.type"] == b"NUMERIC(9,3)"


def test_parallel_one_equals_parallel_n(big_db):
    one = fbunload.read_arrow(big_db, "WIDE", parallel=1, **AUTH)
    three = fbunload.read_arrow(big_db, "WIDE", parallel=3, **AUTH)
    assert one.num_rows == 200000
    assert one.equals(three)
    assert one.column("ID").to_pylist() == sorted(one.column("ID").to_pylist())


def test_batches_stream_in_order_and_columns_select(big_db):
    reader = fbunload.read_batches(big_db, "WIDE", parallel=2, columns=["N", "ID"], **AUTH)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.names == ["N", "ID"]
    ids = [i for batch in reader for i in batch.column(1).to_pylist()]
    assert ids == list(range(200000))


def test_pandas_and_polars(big_db):
    frame = fbunload.read_pandas(big_db, "SMALL", **AUTH)
    assert frame["ID"].tolist() == [42]
    polars = pytest.importorskip("polars")
    assert fbunload.read_polars(big_db, "SMALL", **AUTH).to_dict(as_series=False) == {"ID": [42]}


def test_plan_describes_tables_and_units(big_db):
    plan = fbunload.plan(big_db, parallel=4, **AUTH)
    names = [t["name"] for t in plan["tables"]]
    assert names == ["SMALL", "WIDE"] or set(names) == {"SMALL", "WIDE"}
    wide = next(t for t in plan["tables"] if t["name"] == "WIDE")
    assert wide["units"] > 1 and isinstance(wide["schema"], pa.Schema)
    assert sum(1 for u in plan["units"] if u["table"] == "WIDE") == wide["units"]
    # Estimates: WIDE's 200,000 rows sampled, SMALL counted.
    estimate = wide["estimate"]
    assert estimate["basis"] == "sampled", estimate
    assert 180_000 <= estimate["rows"] <= 220_000, estimate
    assert estimate["bytes"] == estimate["data_pages"] * estimate["page_size"]
    small = next(t for t in plan["tables"] if t["name"] == "SMALL")
    assert small["estimate"]["rows"] == 1 and small["estimate"]["basis"] == "counted"


def test_unload_writes_files_like_the_command_line(big_db, tmp_path):
    summary = fbunload.unload(big_db, tmp_path / "out", format="parquet", tables="SMALL", **AUTH)
    assert summary["rows"] == 1
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "out" / "SMALL.parquet")
    assert table.column("ID").to_pylist() == [42]
    assert pq.read_schema(tmp_path / "out" / "SMALL.parquet").metadata[b"fbunload.table"] == b"SMALL"


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda db: fbunload.read_arrow(db, "NO_SUCH", **AUTH), fbunload.UsageError, "table 'NO_SUCH': NO_SUCH is not the name of a table"),
        (lambda db: fbunload.read_arrow(db, "WIDE", columns=["X"], **AUTH), fbunload.UsageError, "no column"),
        (lambda db: fbunload.read_arrow(db, "WIDE", parallel=0, **AUTH), fbunload.UsageError, "at least 1"),
        (lambda db: fbunload.read_arrow(db, "WIDE", charset="KLINGON", **AUTH), fbunload.UsageError,
         "charset KLINGON: not a character set fbunload can decode"),
        (lambda db: fbunload.read_arrow(db + ".missing", "WIDE", **AUTH), fbunload.DatabaseError, "cannot attach"),
        (lambda db: fbunload.unload(db, "/proc/no/such", **AUTH), fbunload.OutputError, "/proc/no/such"),
        (lambda db: fbunload.unload(db, "/tmp/x", format="xls", **AUTH), fbunload.UsageError, "xls"),
    ],
)
def test_bad_inputs_raise_the_right_error(big_db, call, error, words):
    with pytest.raises(error) as caught:
        call(big_db)
    message = str(caught.value)
    assert words in message and PASSWORD not in message
    assert isinstance(caught.value, fbunload.Error)


def test_a_comma_lists_tables_and_a_name_with_one_is_read_exactly(tmp_path):
    db = make_database(
        tmp_path / "commas.fdb",
        [
            "CREATE TABLE A (V INTEGER)",
            "CREATE TABLE B (V INTEGER)",
            'CREATE TABLE "A,B" (V INTEGER)',
            'INSERT INTO "A,B" VALUES (7)',
        ],
    )
    assert sorted(fbunload.read_tables(db, "A, B", **AUTH)) == ["A", "B"]
    assert fbunload.read_arrow(db, "A,B", **AUTH).column("V").to_pylist() == [7]


ACCOUNTS = 200


def test_several_tables_at_one_snapshot_while_others_write(tmp_path):
    db = make_database(
        tmp_path / "bank.fdb",
        [
            "CREATE TABLE ACCOUNTS (ID INTEGER NOT NULL PRIMARY KEY, BALANCE BIGINT)",
            "CREATE TABLE LEDGER (FROM_ID INTEGER, TO_ID INTEGER, AMOUNT BIGINT, PAD VARCHAR(100))",
            f"EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {ACCOUNTS}) DO BEGIN "
            "INSERT INTO ACCOUNTS VALUES (:I, 1000); I = I + 1; END END",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 50000) DO BEGIN "
            "INSERT INTO LEDGER VALUES (0, 0, 0, RPAD('', 90, 'x')); I = I + 1; END END",
        ],
    )
    stop = threading.Event()
    committed = [0]

    def writer():
        con = connection(db)
        n = 0
        while not stop.is_set():
            n += 1
            a, b, amount = (n * 7919) % ACCOUNTS, (n * 104729) % ACCOUNTS, n % 97 + 1
            try:
                con.execute_immediate(
                    "EXECUTE BLOCK AS BEGIN "
                    f"UPDATE ACCOUNTS SET BALANCE = BALANCE - {amount} WHERE ID = {a}; "
                    f"UPDATE ACCOUNTS SET BALANCE = BALANCE + {amount} WHERE ID = {b}; "
                    f"INSERT INTO LEDGER VALUES ({a}, {b}, {amount}, 'transfer'); END"
                )
                con.commit()
                committed[0] += 1
            except Exception:
                con.rollback()
        con.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while committed[0] < 20:
            threading.Event().wait(0.01)
        for _ in range(2):
            before = committed[0]
            tables = fbunload.read_tables(db, "ACCOUNTS|LEDGER", parallel=3, verify=True, **AUTH)
            balance = [1000] * ACCOUNTS
            ledger = tables["LEDGER"].to_pydict()
            for a, b, amount in zip(ledger["FROM_ID"], ledger["TO_ID"], ledger["AMOUNT"]):
                balance[a] -= amount
                balance[b] += amount
            accounts = tables["ACCOUNTS"].to_pydict()
            assert len(accounts["ID"]) == ACCOUNTS
            for i, value in zip(accounts["ID"], accounts["BALANCE"]):
                assert value == balance[i], f"account {i}: tables from different moments"
            assert committed[0] > before, "the writer must have committed meanwhile"
    finally:
        stop.set()
        thread.join()


def test_memory_stays_bounded_while_iterating_two_million_rows(tmp_path):
    db = make_database(
        tmp_path / "stock.fdb",
        [
            "CREATE TABLE STOCK (S_I_ID INTEGER, S_W_ID INTEGER, S_QUANTITY SMALLINT, "
            "S_DIST_01 CHAR(24), S_DIST_02 CHAR(24), S_YTD INTEGER, S_DATA VARCHAR(50))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 2000000) DO BEGIN "
            "INSERT INTO STOCK VALUES (:I, MOD(:I, 20), MOD(:I, 100), 'dist one ' || :I, "
            "'dist two ' || :I, 0, 'data ' || (:I * 7919)); I = I + 1; END END",
        ],
    )
    # A fresh process, so that the peak is this read's alone. Its VmHWM,
    # not ru_maxrss: Linux carries ru_maxrss across exec, so a child forked
    # from a large pytest reports the parent's size.
    script = (
        "import sys, fbunload\n"
        "rows = 0\n"
        "for batch in fbunload.read_batches(sys.argv[1], 'STOCK', parallel=2, "
        "user='SYSDBA', password='masterkey'):\n"
        "    rows += batch.num_rows\n"
        "peak_kb = next(int(line.split()[1]) for line in open('/proc/self/status') "
        "if line.startswith('VmHWM:'))\n"
        "print(rows, peak_kb // 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, db], capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stderr
    rows, peak_mb = map(int, out.stdout.split())
    assert rows == 2000000
    print(f"peak RSS {peak_mb} MB")
    assert peak_mb < 300, f"peak RSS {peak_mb} MB"


INT128_MIN, INT128_MAX = -(2**127), 2**127 - 1


def test_int128_of_39_digits_is_refused_by_default_and_read_whole_with_decimal256(tmp_path):
    db = make_database(
        tmp_path / "i128.fdb",
        [
            "CREATE TABLE BIG (ID INTEGER, V INT128, N NUMERIC(38,2))",
            f"INSERT INTO BIG VALUES (1, {INT128_MIN}, -12.34)",
            f"INSERT INTO BIG VALUES (2, {INT128_MAX}, NULL)",
            "INSERT INTO BIG VALUES (3, NULL, CAST('1701411834604692317316873037158841057.27' AS NUMERIC(38,2)))",
            "INSERT INTO BIG VALUES (4, 99999999999999999999999999999999999999, 1)",
        ],
    )
    # An INT128 of 38 digits is read into the decimal128(38, 0) every reader takes.
    table = fbunload.read_arrow(db, "BIG", columns=["ID", "V"], where="ID = 4", **AUTH)
    assert table.schema.field("V").type == pa.decimal128(38, 0)
    assert table.column("V").to_pylist() == [decimal.Decimal("9" * 38)]
    # 39 digits (an INT128 extreme, or a NUMERIC(38,2) beyond its declared
    # precision) are refused in one line that names the Python keyword.
    for columns in [["ID", "V"], ["ID", "N"]]:
        with pytest.raises(fbunload.Error) as caught:
            fbunload.read_arrow(db, "BIG", columns=columns, **AUTH)
        message = str(caught.value)
        assert f"column {columns[1]}" in message and "decimal256=True" in message, message
        assert "--" not in message and "\n" not in message, message
    table = fbunload.read_arrow(db, "BIG", decimal256=True, **AUTH).sort_by("ID")
    assert table.schema.field("V").type == pa.decimal256(39, 0)
    assert table.column("V").to_pylist()[:2] == [decimal.Decimal(INT128_MIN), decimal.Decimal(INT128_MAX)]
    assert table.schema.field("N").type == pa.decimal256(39, 2)
    assert table.column("N").to_pylist()[2] == decimal.Decimal("1701411834604692317316873037158841057.27")


def test_read_polars_converts_decimal256_exactly(tmp_path):
    polars = pytest.importorskip("polars")
    db = make_database(
        tmp_path / "polars.fdb",
        [
            "CREATE TABLE BIG (ID INTEGER, V INT128, N NUMERIC(38,2), M NUMERIC(18,4))",
            f"INSERT INTO BIG VALUES (1, {INT128_MIN}, -12.34, 1.5)",
            f"INSERT INTO BIG VALUES (2, {INT128_MAX}, "
            "CAST('1701411834604692317316873037158841057.27' AS NUMERIC(38,2)), NULL)",
            "INSERT INTO BIG (ID) VALUES (3)",
        ],
    )
    # polars has no decimal256: INT128 (decimal256=True) becomes Int128, which holds it.
    frame = fbunload.read_polars(db, "BIG", columns=["ID", "V", "M"], decimal256=True, **AUTH).sort("ID")
    assert frame.schema["V"] == polars.Int128
    assert frame["V"].to_list() == [INT128_MIN, INT128_MAX, None]
    assert frame.schema["M"] == polars.Decimal(19, 4)
    # A scaled decimal256 (decimal256=True) becomes its exact decimal text.
    frame = fbunload.read_polars(db, "BIG", decimal256=True, **AUTH).sort("ID")
    assert frame.schema["N"] == polars.String
    assert frame["N"].to_list() == ["-12.34", "1701411834604692317316873037158841057.27", None]
    assert frame["V"].to_list() == [INT128_MIN, INT128_MAX, None]


def test_python_errors_name_python_keywords_not_flags(big_db):
    with pytest.raises(fbunload.UsageError) as caught:
        fbunload.read_tables(big_db, "WIDE", exclude="[", **AUTH)
    message = str(caught.value)
    assert "exclude='['" in message and "--" not in message, message


def test_ctrl_c_stops_a_read_at_once(big_db):
    import signal
    import time

    fired = []

    def interrupt():
        fired.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    # Python raises KeyboardInterrupt only where SIGINT has its default
    # handler: a test run started in the background (`cmd &` without job
    # control) inherits SIGINT ignored, and the reads then went on.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.2, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in range(100):  # each read takes longer than 0.2 s on its own
                fbunload.read_arrow(big_db, "WIDE", parallel=1, **AUTH)
    finally:
        signal.signal(signal.SIGINT, previous)
    late = time.monotonic() - fired[0]
    # Signals are looked at every 0.1 s; without that the reads went on for
    # 20 s and more. 10 s leaves room for a loaded machine.
    assert late < 10.0, f"KeyboardInterrupt came {late:.2f} s after Ctrl-C"
    # The engine is still usable afterwards.
    assert fbunload.read_arrow(big_db, "SMALL", **AUTH).num_rows == 1


def test_columns_and_where_are_read_in_the_queries(big_db):
    """Only the chosen columns and rows are read (a condition on a column
    not read), in DB_KEY order, the same at any parallel."""
    frames = [
        fbunload.read_arrow(
            big_db, "WIDE", columns=["N", "ID"], where="MOD(ID, 1000) = 7 AND A > ''",
            parallel=p, **AUTH,
        )
        for p in (1, 3)
    ]
    assert frames[0].equals(frames[1])
    table = frames[0]
    assert table.column_names == ["N", "ID"]
    assert table.column("ID").to_pylist() == list(range(7, 200000, 1000))
    with pytest.raises(fbunload.UsageError) as caught:
        fbunload.read_arrow(big_db, "WIDE", where="ID < 0) OR (1=1", **AUTH)
    assert "closes more than the condition opened" in str(caught.value)
    tables = fbunload.read_tables(big_db, "WIDE|SMALL", where="SMALL:ID > 100", **AUTH)
    assert tables["SMALL"].num_rows == 0 and tables["WIDE"].num_rows == 200000


def test_read_sql_equals_firebird_driver_and_splits_the_same_at_any_parallel(big_db):
    sql = "SELECT W.ID, W.N * 2 AS TWICE, S.ID AS SMALL_ID FROM WIDE W LEFT JOIN SMALL S ON S.ID = MOD(W.ID, 100) WHERE MOD(W.ID, 3) = 0"
    whole = fbunload.read_sql(big_db, sql, **AUTH)
    assert whole.column_names == ["ID", "TWICE", "SMALL_ID"]
    expected = driver_rows(big_db, sql)
    assert sorted(zip(*[whole.column(c).to_pylist() for c in whole.column_names])) == sorted(expected)
    split = [fbunload.read_sql(big_db, sql, split_by="WIDE", parallel=p, **AUTH) for p in (1, 3)]
    assert split[0].equals(split[1])
    # In DB_KEY order: the rows as inserted.
    assert split[0].column("ID").to_pylist() == list(range(0, 200000, 3))
    assert split[0].sort_by("ID").equals(whole.sort_by("ID"))


@pytest.mark.parametrize(
    "sql, split_by, words",
    [
        ("SELECT COUNT(*) AS N FROM WIDE", "WIDE", "split_by='WIDE': COUNT"),
        ("SELECT ID FROM SMALL", "WIDE", "WIDE"),
        ("SELECT NOPE FROM WIDE", None, "Firebird refuses it"),
        # Each unit would aggregate or number its own rows.
        ("SELECT COALESCE(MAX(ID), 0) AS M FROM WIDE", "WIDE", "MAX at the query's top level"),
        ("SELECT ID, (ROW_NUMBER() OVER (ORDER BY ID)) AS R FROM WIDE", "WIDE", "OVER at"),
    ],
)
def test_read_sql_refuses_what_it_cannot_read(big_db, sql, split_by, words):
    with pytest.raises(fbunload.UsageError) as caught:
        fbunload.read_sql(big_db, sql, split_by=split_by, **AUTH)
    assert words in str(caught.value)


def test_where_cannot_escape_and_read_sql_cannot_move_a_sequence(tmp_path):
    """Firebird ends a `--` comment at a CR too: this condition read every
    row once per unit. GEN_ID and NEXT VALUE FOR move a sequence even in a
    read-only transaction."""
    db = make_database(
        tmp_path / "seq.fdb",
        ["CREATE SEQUENCE S", "CREATE TABLE T (ID INTEGER)", "INSERT INTO T VALUES (1)"],
    )
    with pytest.raises(fbunload.UsageError) as caught:
        fbunload.read_arrow(db, "T", where="ID < 0 --\r) OR 1=1 OR (1=1", **AUTH)
    assert "closes more than the condition opened" in str(caught.value)
    assert "\r" not in str(caught.value), "one line"
    for sql, split_by in [
        ("SELECT GEN_ID(S, 1) AS G FROM T", None),
        ("SELECT ID, NEXT VALUE FOR S AS G FROM T", None),
        ("SELECT ID, GEN_ID(S, 1) AS G FROM T", "T"),
    ]:
        with pytest.raises(fbunload.UsageError) as caught:
            fbunload.read_sql(db, sql, split_by=split_by, **AUTH)
        assert "changes a sequence" in str(caught.value)
    assert driver_rows(db, "SELECT GEN_ID(S, 0) FROM RDB$DATABASE") == [(0,)]
    assert fbunload.read_sql(db, "SELECT GEN_ID(S, 0) AS G FROM T", **AUTH).column("G").to_pylist() == [0]


def test_non_ascii_literals_and_views_that_move_a_sequence(tmp_path):
    """Literals reached the engine in connection character set NONE:
    'café' found nothing in a WIN1252 column and W || 'é' gave caféÃ©. A
    view that calls GEN_ID moved the sequence once a row read."""
    db = make_database(
        tmp_path / "text.fdb",
        [
            "CREATE TABLE T (ID INTEGER, W VARCHAR(20) CHARACTER SET WIN1252)",
            "INSERT INTO T VALUES (1, 'café')",
            "INSERT INTO T VALUES (2, 'cafe')",
            "CREATE SEQUENCE S",
            "CREATE VIEW V AS SELECT ID, GEN_ID(S, 1) G FROM T",
        ],
    )
    assert fbunload.read_arrow(db, "T", where="W = 'café'", **AUTH).column("ID").to_pylist() == [1]
    sql = "SELECT W || 'é' AS WW FROM T WHERE W STARTING WITH 'caf' 'é'"
    assert fbunload.read_sql(db, sql, **AUTH).column("WW").to_pylist() == ["caféé"]
    assert driver_rows(db, "SELECT W || 'é' FROM T WHERE W = 'café'") == [("caféé",)]
    with pytest.raises(fbunload.UsageError) as caught:
        fbunload.read_sql(db, "SELECT * FROM V", **AUTH)
    assert "V changes sequence S" in str(caught.value)
    assert driver_rows(db, "SELECT GEN_ID(S, 0) FROM RDB$DATABASE") == [(0,)]


def test_views_queries_and_parts_through_unload_and_read_tables(tmp_path):
    db = make_database(
        tmp_path / "views.fdb",
        [
            "CREATE TABLE T (ID INTEGER, NAME VARCHAR(10))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 25) DO BEGIN "
            "INSERT INTO T VALUES (:I, 'n' || :I); I = I + 1; END END",
            "CREATE VIEW EVEN_T AS SELECT ID, NAME FROM T WHERE MOD(ID, 2) = 0",
        ],
    )
    queries = {"BIG": ("SELECT ID FROM T WHERE ID >= 20", "T"), "ONE": "SELECT 1 AS X FROM RDB$DATABASE"}
    tables = fbunload.read_tables(db, views="%", queries=queries, **AUTH)
    assert sorted(tables) == ["BIG", "EVEN_T", "ONE"]
    assert tables["BIG"].column("ID").to_pylist() == [20, 21, 22, 23, 24]
    assert tables["EVEN_T"].num_rows == 13 and tables["ONE"].num_rows == 1

    out = tmp_path / "out"
    summary = fbunload.unload(
        db, out, tables="T", views="EVEN_T", queries=queries, max_rows=10, schema=False, **AUTH
    )
    assert summary["rows"] == 25 + 13 + 5 + 1
    files = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert files == [
        "BIG.000001.csv", "EVEN_T.000001.csv", "EVEN_T.000002.csv", "ONE.000001.csv",
        "T.000001.csv", "T.000002.csv", "T.000003.csv", "manifest.json",
    ]
    lines = (out / "T.000003.csv").read_text().splitlines()
    assert lines == ["ID,NAME"] + [f"{i},n{i}" for i in range(20, 25)]
    with pytest.raises(fbunload.UsageError):
        fbunload.unload(db, tmp_path / "zero", max_bytes=0, **AUTH)


def test_a_sample_database_is_made_from_the_package_and_read(tmp_path):
    path = fbunload.sample(tmp_path / "sample.fdb", items=200)
    assert path == str(tmp_path / "sample.fdb")
    stock = fbunload.read_arrow(path, "STOCK")
    assert stock.num_rows == 200
    assert driver_rows(path, "SELECT COUNT(*) FROM CUSTOMER") == [(fbunload.read_arrow(path, "CUSTOMER").num_rows,)]
    with pytest.raises(fbunload.UsageError, match="force=True"):
        fbunload.sample(path)
    assert fbunload.sample(path, items=100, force=True) == path
    assert fbunload.read_arrow(path, "ITEM").num_rows == 100


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda db: fbunload.read_sql(db, "SELECT COUNT(*) AS N FROM WIDE", split_by="WIDE", **AUTH),
         "query QUERY: split_by='WIDE': COUNT at the query's top level"),
        (lambda db: fbunload.read_tables(db, "WIDE|NOPE", **AUTH), "tables='WIDE|NOPE': NOPE is not"),
        (lambda db: fbunload.read_tables(db, exclude="NOPE", **AUTH), "exclude='NOPE': NOPE is not"),
        (lambda db: fbunload.read_arrow(db, "WIDE", where="ID < (1", **AUTH), "where='ID < (1': a ( is not closed"),
        (lambda db: fbunload.read_arrow(db, "NO_SUCH", **AUTH), "table 'NO_SUCH': NO_SUCH is not"),
    ],
)
def test_errors_name_python_keywords_not_command_line_flags(big_db, call, words):
    with pytest.raises(fbunload.Error) as caught:
        call(big_db)
    message = str(caught.value)
    assert words in message, message
    assert "--" not in message, message


def test_array_columns_read_as_firebird_driver_reads_them(tmp_path):
    """ARRAY columns (issue #22) arrive as nested lists, one per dimension,
    each element as firebird-driver, the reference driver, reads it; polars
    and DuckDB take them too."""
    polars = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    db = make_database(
        tmp_path / "arrays.fdb",
        [
            "CREATE TABLE A (ID INTEGER, GRID INTEGER [0:1, 1:3], "
            "WORDS VARCHAR(10) [2], MONEY NUMERIC(9,2) [2], HUGE INT128 [2])",
        ],
    )
    rows = [
        (1, [[1, -2, 3], [4, 0, 2**31 - 1]], ["naïve", "日本"],
         [decimal.Decimal("1.25"), decimal.Decimal("-0.01")], [INT128_MIN, INT128_MAX]),
        (2, None, None, None, None),
    ]
    con = connection(db)
    cur = con.cursor()
    for row in rows:
        cur.execute("INSERT INTO A VALUES (?, ?, ?, ?, ?)", row)
    con.commit()
    cur.execute("SELECT ID, GRID, WORDS, MONEY, HUGE FROM A ORDER BY ID")
    expected = [list(r) for r in cur.fetchall()]
    con.close()
    assert expected[0][1] == rows[0][1], "firebird-driver wrote what it was given"

    # HUGE holds INT128's extremes, 39 digits: decimal256=True reads them.
    table = fbunload.read_arrow(db, "A", decimal256=True, **AUTH).sort_by("ID")
    assert table.schema.field("GRID").type == pa.list_(pa.field("item", pa.list_(
        pa.field("item", pa.int32(), nullable=False)), nullable=False))
    assert table.schema.field("GRID").metadata[b"fbunload.array_bounds"] == b"[0:1, 1:3]"
    got = [list(r.values()) for r in table.to_pylist()]
    assert got == expected

    frame = fbunload.read_polars(db, "A", decimal256=True, **AUTH).sort("ID")
    assert frame["GRID"].to_list() == [expected[0][1], None]
    assert frame["WORDS"].to_list() == [expected[0][2], None]
    assert frame["HUGE"].to_list() == [[INT128_MIN, INT128_MAX], None]

    # DuckDB reads the Arrow table by its name; it refuses decimal256 (docs/python.md).
    arrays = table.select(["ID", "GRID", "WORDS"])  # noqa: F841
    words = duckdb.sql("SELECT WORDS[2] AS W FROM arrays ORDER BY ID").fetchall()
    assert words == [("日本",), (None,)]


def test_the_version_is_the_command_lines():
    command = pathlib.Path(sys.executable).parent / "fbunload"
    done = subprocess.run([str(command), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", fbunload.__version__), fbunload.__version__
    assert done.stdout.split() == ["fbunload", fbunload.__version__]


def test_login_errors_name_the_keywords_not_the_flags():
    """Against a server (embedded logins take any password): a wrong or
    missing password is told in user=/password=, not -u/-p."""
    address, directory = (os.environ.get(n) for n in
                          ["FBUNLOAD_TEST_SERVER", "FBUNLOAD_TEST_SERVER_DIR"])
    if address is None or directory is None:
        pytest.skip('no test server: eval "$(scripts/fb3-server.sh)"')
    dsn = f"{address}:{directory}/no-such-{os.getpid()}.fdb"
    env_password = os.environ.pop("ISC_PASSWORD", None)
    try:
        for options, words in [
            (dict(user=USER, password="not-the-password"), "(check user=/password= or ISC_USER"),
            (dict(user=USER), "use password= or ISC_PASSWORD"),
        ]:
            with pytest.raises(fbunload.DatabaseError) as caught:
                fbunload.read_arrow(dsn, "T", **options)
            message = str(caught.value)
            assert words in message, message
            assert not re.search(r"(^|[\s(])-[a-z]\b|--", message), message
    finally:
        if env_password is not None:
            os.environ["ISC_PASSWORD"] = env_password
