"""Every file fbunload writes with its default options, read by the tools
people read them with: pyarrow, polars and DuckDB, each format, every
column of the sample database's ALL_TYPES (every Firebird type and its
edge values). The exact numbers (INT128 and NUMERIC/DECIMAL) are
compared with what firebird-driver reads from the database."""

import decimal
import pathlib
import subprocess
import sys

import pyarrow as pa
import pyarrow.csv
import pyarrow.feather
import pyarrow.json
import pyarrow.parquet
import pytest

import fbunload
from conftest import connection

duckdb = pytest.importorskip("duckdb")
polars = pytest.importorskip("polars")

EXACT = ["C_INT128", "C_NUMERIC_4_1", "C_NUMERIC_9_3", "C_NUMERIC_18_4", "C_NUMERIC_38_6",
         "C_DECIMAL_10_2"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("readers")
    db = fbunload.sample(str(root / "shop.fdb"), items=10)
    with connection(db) as con:
        cur = con.cursor()
        cur.execute("SELECT FIRST 0 * FROM ALL_TYPES")
        columns = [d[0] for d in cur.description]
        cur.execute(f"SELECT ID, {', '.join(EXACT)} FROM ALL_TYPES ORDER BY ID")
        exact = {row[0]: [None if v is None else decimal.Decimal(v) for v in row[1:]]
                 for row in cur.fetchall()}
    # The files as a user writes them: the command line, defaults, only
    # --header so that text readers get the column names.
    for fmt in ["csv", "tsv", "jsonl", "parquet", "arrow"]:
        header = ["--header"] if fmt in ("csv", "tsv") else []
        done = subprocess.run(
            [str(pathlib.Path(sys.executable).parent / "fbunload"), "-q",
             "-d", db, "-u", "SYSDBA", "-p", "masterkey", "-t", "ALL_TYPES", "-f", fmt,
             *header, "-o", str(root / fmt)],
            capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    return root, columns, exact


def numbers(rows):
    """{ID: [exact columns as Decimal]} of rows given as dicts."""
    def as_decimal(v):
        return None if v is None else decimal.Decimal(str(v))
    return {int(r["ID"]): [as_decimal(r[c]) for c in EXACT] for r in rows}


def text_exact(rows):
    """The same, from text a reader kept as text (CSV, JSON strings)."""
    return {int(r["ID"]): [None if r[c] in (None, "") else decimal.Decimal(r[c]) for c in EXACT]
            for r in rows}


def pyarrow_read(path, fmt, as_text):
    if fmt == "parquet":
        return pa.parquet.read_table(path)
    if fmt == "arrow":
        return pa.feather.read_table(path)
    if fmt == "jsonl":
        return pa.json.read_json(path)
    types = {c: pa.string() for c in EXACT} if as_text else {}
    return pa.csv.read_csv(
        path, parse_options=pa.csv.ParseOptions(delimiter="\t" if fmt == "tsv" else ","),
        convert_options=pa.csv.ConvertOptions(column_types=types))


def polars_read(path, fmt, as_text):
    text = {c: polars.String for c in EXACT} if as_text else None
    if fmt == "parquet":
        return polars.read_parquet(path)
    if fmt == "arrow":
        return polars.read_ipc(path)
    if fmt == "jsonl":
        return polars.read_ndjson(path)
    return polars.read_csv(path, separator="\t" if fmt == "tsv" else ",",
                           schema_overrides=text)


def duckdb_read(path, fmt, as_text):
    con = duckdb.connect()
    if fmt == "parquet":
        rel = con.sql(f"SELECT * FROM read_parquet('{path}')")
    elif fmt == "arrow":
        table = pa.feather.read_table(path)  # DuckDB scans Arrow data in place
        rel = con.from_arrow(table)
    elif fmt == "jsonl":
        rel = con.sql(f"SELECT * FROM read_json('{path}', format='newline_delimited')")
    else:
        delimiter = "\t" if fmt == "tsv" else ","
        types = ", ".join(f"'{c}': 'VARCHAR'" for c in EXACT)
        options = f", types={{{types}}}" if as_text else ""
        rel = con.sql(f"SELECT * FROM read_csv('{path}', delim='{delimiter}', header=true{options})")
    names = rel.columns
    return [dict(zip(names, row)) for row in rel.fetchall()]


EXTENSION = {"csv": "csv", "tsv": "tsv", "jsonl": "jsonl", "parquet": "parquet", "arrow": "arrow"}


@pytest.mark.parametrize("reader", ["pyarrow", "polars", "duckdb"])
@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "parquet", "arrow"])
def test_every_column_of_every_format_reads_exactly(sample, fmt, reader):
    root, columns, exact = sample
    path = str(root / fmt / f"ALL_TYPES.{EXTENSION[fmt]}")
    # Typed formats carry their types: the numbers must be the database's.
    # Text formats are read twice: as the reader infers (every column must
    # read), then with the exact columns kept as text (they must be exact).
    for as_text in ([False] if fmt in ("parquet", "arrow", "jsonl") else [False, True]):
        if reader == "pyarrow":
            table = pyarrow_read(path, fmt, as_text)
            rows, names = table.to_pylist(), table.column_names
        elif reader == "polars":
            frame = polars_read(path, fmt, as_text)
            rows, names = frame.to_dicts(), frame.columns
        else:
            rows = duckdb_read(path, fmt, as_text)
            names = list(rows[0])
        assert names == columns, (fmt, reader, names)
        assert len(rows) == len(exact), (fmt, reader, len(rows))
        if fmt == "jsonl" or as_text:
            # JSON Lines writes INT128 and NUMERIC as strings, exactly.
            got = text_exact(rows)
        elif fmt in ("csv", "tsv"):
            continue
        else:
            got = numbers(rows)
        assert got == exact, (fmt, reader)
