"""fbunload.unload() takes what the command line takes, with the same
checks, in Python's words."""

import inspect
import subprocess
import sys
import pathlib

import pyarrow.parquet as pq
import pytest

import fbunload
from conftest import make_database

AUTH = {"user": "SYSDBA", "password": "masterkey"}


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    return fbunload.sample(str(tmp_path_factory.mktemp("unload") / "shop.fdb"), items=100)


def cli(*args):
    """The installed command line, beside this Python."""
    command = pathlib.Path(sys.executable).parent / "fbunload"
    return subprocess.run([str(command), *args], capture_output=True, text=True, timeout=300)


def test_the_signature_and_help_show_every_option():
    parameters = inspect.signature(fbunload.unload).parameters
    for name in ["tables", "exclude", "columns", "where", "views", "queries", "format",
                 "compression", "header", "delimiter", "null", "binary", "crlf", "split",
                 "row_group_rows", "decimal256", "max_rows", "max_bytes", "schema", "overwrite",
                 "verify", "user", "password", "role", "charset", "parallel", "unit_pages",
                 "memory_mb", "client_lib", "wire_crypt", "wire_compression",
                 "allow_inconsistent", "stall_timeout", "since", "keep_keys", "processes", "pg_schema"]:
        assert name in parameters, name
        assert name in fbunload.unload.__doc__, name
    assert not any(p.kind == p.VAR_KEYWORD for p in parameters.values())
    # The defaults are the library's, and the help says the same numbers.
    assert parameters["memory_mb"].default == fbunload._fbunload.DEFAULT_MEMORY_MB
    assert f"``memory_mb`` ({fbunload._fbunload.DEFAULT_MEMORY_MB})" in fbunload.unload.__doc__
    stall = fbunload._fbunload.DEFAULT_STALL_TIMEOUT_SECS
    assert f"the server; {stall} by\n      default" in fbunload.unload.__doc__
    assert f"(``memory_mb``, {fbunload._fbunload.DEFAULT_MEMORY_MB} by default)" in (
        fbunload.read_batches.__doc__)


def test_columns_where_and_csv_options_write_what_the_command_line_writes(shop, tmp_path):
    fbunload.unload(shop, tmp_path / "py", tables="STOCK", columns=["S_I_ID", "S_QUANTITY"],
                    where="S_QUANTITY < 20", delimiter=";", null="\\N", crlf=True, **AUTH)
    done = cli("-q", "-d", shop, "-u", "SYSDBA", "-p", "masterkey",
               "-t", "STOCK", "--columns", "S_I_ID,S_QUANTITY", "--where", "S_QUANTITY < 20",
               "--delimiter", ";", "--null", "\\N", "--crlf",
               "-o", str(tmp_path / "cli"))
    assert done.returncode == 0, done.stderr
    ours = (tmp_path / "py" / "STOCK.csv").read_bytes()
    assert ours == (tmp_path / "cli" / "STOCK.csv").read_bytes()
    # A header line by default, in both.
    assert ours.startswith(b"S_I_ID;S_QUANTITY\r\n") and ours.count(b"\r\n") > 1


def test_header_false_writes_what_no_header_writes(shop, tmp_path):
    fbunload.unload(shop, tmp_path / "py", tables="WAREHOUSE", format="tsv", header=False, **AUTH)
    done = cli("-q", "-d", shop, "-u", "SYSDBA", "-p", "masterkey", "-t", "WAREHOUSE",
               "-f", "tsv", "--no-header", "-o", str(tmp_path / "cli"))
    assert done.returncode == 0, done.stderr
    ours = (tmp_path / "py" / "WAREHOUSE.tsv").read_bytes()
    assert ours == (tmp_path / "cli" / "WAREHOUSE.tsv").read_bytes()
    assert not ours.startswith(b"W_ID") and ours.count(b"\n") == 1


def test_per_table_columns_and_where_and_parquet_options(shop, tmp_path):
    fbunload.unload(shop, tmp_path / "lake", tables="STOCK|ITEM", format="parquet",
                    columns={"ITEM": ["I_ID", "I_NAME"]}, where={"STOCK": "S_QUANTITY < 20"},
                    row_group_rows=10, compression="snappy", **AUTH)
    item = pq.ParquetFile(tmp_path / "lake" / "ITEM.parquet")
    assert item.schema_arrow.names == ["I_ID", "I_NAME"]
    assert item.metadata.num_row_groups == 10  # 100 items, 10 rows a group
    assert item.metadata.row_group(0).column(0).compression == "SNAPPY"
    stock = pq.read_table(tmp_path / "lake" / "STOCK.parquet")
    assert max(stock.column("S_QUANTITY").to_pylist()) < 20


@pytest.mark.parametrize("options, words", [
    ({"format": "parquet", "header": False}, "header=False is for format csv or tsv, not parquet"),
    ({"format": "tsv", "delimiter": ";"}, "delimiter is for format csv, not tsv"),
    ({"format": "jsonl", "null": "N"}, "null is for format csv or tsv, not jsonl"),
    ({"format": "csv", "row_group_rows": 5}, "row_group_rows is for format parquet, not csv"),
    ({"format": "csv", "split": True}, "split=True is for format parquet, not csv"),
    ({"format": "csv", "decimal256": True}, "decimal256=True is for format parquet or arrow"),
    ({"format": "arrow", "binary": "base64"}, "binary is for format csv, tsv or jsonl, not arrow"),
    ({"delimiter": ";;"}, "delimiter=';;': use one ASCII character"),
    ({"format": "parqet"}, "format parqet: use csv, tsv, jsonl, parquet or arrow"),
    # The command line's bound: a huge limit overflowed the stall watch.
    ({"stall_timeout": 1e30}, "stall_timeout: 1000000000000000000000000000000 seconds is longer than a year"),
    ({"stall_timeout": -1}, "stall_timeout: -1 is not a number of seconds; give 0 (no limit) to 31622400"),
])
def test_options_are_refused_as_the_command_line_refuses_them_in_python_words(
        shop, tmp_path, options, words):
    with pytest.raises(fbunload.UsageError) as caught:
        fbunload.unload(shop, tmp_path / "out", **options, **AUTH)
    message = str(caught.value)
    assert words in message, message
    assert "--" not in message and "parquet-split" not in message, message
    assert not (tmp_path / "out").exists()


def test_the_command_line_refuses_header_with_parquet_too(shop, tmp_path):
    done = cli("-d", shop, "-f", "parquet", "--header", "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    assert "--header is for --format csv or tsv, not parquet" in done.stderr


def test_a_misspelt_keyword_names_the_function_called(shop):
    for function in [fbunload.read_arrow, fbunload.read_pandas, fbunload.read_tables]:
        with pytest.raises(TypeError) as caught:
            function(shop, "STOCK", paralel=2, **AUTH)
        assert str(caught.value).startswith(f"{function.__name__}() "), caught.value
        assert "paralel" in str(caught.value)
    with pytest.raises(TypeError) as caught:
        fbunload.unload(shop, "x", paralel=2)
    assert "unload()" in str(caught.value)


def test_another_runs_directory_is_refused_without_command_line_words(shop, tmp_path):
    fbunload.unload(shop, tmp_path / "out", tables="ITEM", **AUTH)
    with pytest.raises(fbunload.Error) as caught:
        fbunload.unload(shop, tmp_path / "out", tables="ITEM", **AUTH)
    message = str(caught.value)
    assert "overwrite=True" in message and " -o" not in message, message


def test_sample_keeps_the_same_sample_and_refuses_another_file(shop, tmp_path):
    # The README's examples call sample() after the Quick start made the
    # file, and may run twice: the same sample is kept.
    assert fbunload.sample(shop, items=100) == shop
    with pytest.raises(fbunload.UsageError) as caught:
        fbunload.sample(shop, items=200)
    assert "is not the sample these options make" in str(caught.value)
    assert "pass force=True" in str(caught.value) and "--" not in str(caught.value)
    mine = tmp_path / "mine.fdb"
    mine.write_bytes(b"not a database")
    with pytest.raises(fbunload.UsageError):
        fbunload.sample(str(mine), items=100)
    assert mine.read_bytes() == b"not a database"


@pytest.fixture(scope="module")
def names_db(tmp_path_factory):
    """STOCK and a table created as "stock", so each spelling picks its own."""
    return make_database(tmp_path_factory.mktemp("names") / "names.fdb", [
        "CREATE TABLE STOCK (S_I_ID INTEGER, S_QTY INTEGER)",
        'CREATE TABLE "stock" ("s_i_id" INTEGER, "x" INTEGER)',
        'CREATE TABLE "Mixed Case" ("Col A" INTEGER)',
        "INSERT INTO STOCK VALUES (1, 10)",
        'INSERT INTO "stock" VALUES (101, 7)',
        'INSERT INTO "Mixed Case" VALUES (5)',
    ])


def test_names_follow_sql_unquoted_upper_cased_and_quoted_exact(names_db, tmp_path):
    """tables=, exclude=, columns= and where= take names as the command line
    does (issue #42): tables="stock" is STOCK, '"stock"' the quoted one."""
    assert list(fbunload.read_tables(names_db, "stock", **AUTH)) == ["STOCK"]
    assert list(fbunload.read_tables(names_db, '"stock"', **AUTH)) == ["stock"]
    assert sorted(fbunload.read_tables(names_db, "%", exclude='stock,"Mixed Case"', **AUTH)) == [
        "stock"]
    summary = fbunload.unload(names_db, tmp_path / "out", tables='stock,"stock"', format="parquet",
                              columns={"stock": ["s_qty"], '"stock"': ['"x"']},
                              where={"stock": "s_i_id = 1", '"stock"': '"x" = 7'}, **AUTH)
    assert sorted(t["name"] for t in summary["tables"]) == ["STOCK", "stock"]
    assert pq.read_table(tmp_path / "out" / "STOCK.parquet").to_pydict() == {"S_QTY": [10]}
    assert pq.read_table(tmp_path / "out" / "stock.parquet").to_pydict() == {"x": [7]}
    # A name that names nothing says how to write the one meant.
    with pytest.raises(fbunload.UsageError, match=r"""tables='"STOCk"': STOCk is not the name of """
                       r"""a table \(a quoted name is exact: did you mean STOCK\? tables='STOCK'\)"""):
        fbunload.plan(names_db, tables='"STOCk"', **AUTH)
    with pytest.raises(fbunload.UsageError, match=r"""did you mean "Mixed Case"\? """
                       r"""tables='"Mixed Case"'"""):
        fbunload.plan(names_db, tables="mixed case", **AUTH)
    with pytest.raises(fbunload.UsageError, match=r"""columns=: 'Col A' is not a plain name; """
                       r""".* write '"Col A"'"""):
        fbunload.unload(names_db, tmp_path / "x", tables='"Mixed Case"', columns=["Col A"], **AUTH)
    # A table read by its name as stored (read_arrow, Dask, Spark) is exact.
    assert fbunload.read_arrow(names_db, "stock", **AUTH).to_pydict() == {"s_i_id": [101], "x": [7]}
    with pytest.raises(fbunload.UsageError, match=r"""table 'Stock': Stock is not the name of a """
                       r"""table \(a table is named here as stored: did you mean 'STOCK'\?\)"""):
        fbunload.read_arrow(names_db, "Stock", **AUTH)
