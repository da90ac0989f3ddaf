"""Every file fbunload writes of the sample database with its default
options (no flag but the format), read by the tools people read them
with, with theirs: pyarrow, polars, pandas and DuckDB, each format.
Every table must come back with its column names and its rows, the
empty one too; every column of ALL_TYPES (every Firebird type and its
edge values) must read, and the exact numbers (INT128 and
NUMERIC/DECIMAL) are compared with what firebird-driver reads from the
database; so are ARRAY_TYPES' arrays (one and two dimensions, each
element type) in Parquet and Arrow, with their bounds."""

import datetime
import decimal
import json
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
pandas = pytest.importorskip("pandas")

EXACT = ["C_INT128", "C_NUMERIC_4_1", "C_NUMERIC_9_3", "C_NUMERIC_18_4", "C_NUMERIC_38_6",
         "C_DECIMAL_10_2"]
FORMATS = ["csv", "tsv", "jsonl", "parquet", "arrow"]
READERS = ["pyarrow", "polars", "pandas", "duckdb"]


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("readers")
    db = fbunload.sample(str(root / "shop.fdb"), items=10)
    with connection(db) as con:
        cur = con.cursor()
        cur.execute("SELECT TRIM(RDB$RELATION_NAME) FROM RDB$RELATIONS "
                    "WHERE RDB$SYSTEM_FLAG = 0 AND RDB$VIEW_BLR IS NULL")
        names = [name for (name,) in cur.fetchall()]
        # Computed columns (the sample's CUSTOMER.C_NAME) are not unloaded.
        cur.execute("SELECT TRIM(rf.RDB$RELATION_NAME), TRIM(rf.RDB$FIELD_NAME) "
                    "FROM RDB$RELATION_FIELDS rf JOIN RDB$FIELDS f "
                    "ON f.RDB$FIELD_NAME = rf.RDB$FIELD_SOURCE WHERE f.RDB$COMPUTED_BLR IS NOT NULL "
                    "AND COALESCE(rf.RDB$SYSTEM_FLAG, 0) = 0")
        computed = set(cur.fetchall())
        assert ("CUSTOMER", "C_NAME") in computed, computed
        tables = {}
        for name in names:
            quoted = '"' + name.replace('"', '""') + '"'
            cur.execute(f"SELECT FIRST 0 * FROM {quoted}")
            columns = [d[0] for d in cur.description if (name, d[0]) not in computed]
            cur.execute(f"SELECT COUNT(*) FROM {quoted}")
            tables[name] = (columns, cur.fetchone()[0])
        cur.execute(f"SELECT ID, {', '.join(EXACT)} FROM ALL_TYPES ORDER BY ID")
        exact = {row[0]: [None if v is None else decimal.Decimal(v) for v in row[1:]]
                 for row in cur.fetchall()}
        arrays = driver_arrays(cur)
    assert 0 in [rows for _, rows in tables.values()], "the sample has an empty table"
    # The files as a user writes them: the command line with its defaults.
    files = {}
    for fmt in FORMATS:
        done = subprocess.run(
            [str(pathlib.Path(sys.executable).parent / "fbunload"), "-q",
             "-d", db, "-u", "SYSDBA", "-p", "masterkey", "-f", fmt, "-o", str(root / fmt)],
            capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        manifest = json.loads((root / fmt / "manifest.json").read_text())
        files[fmt] = {t["name"]: root / fmt / t["files"][0]["name"] for t in manifest["tables"]}
        assert sorted(files[fmt]) == sorted(tables), fmt
    return files, tables, exact, arrays


# firebird-driver cannot read these two: it asks the engine for arrays of
# CHAR in another character set and of OCTETS with too short an element.
# Their values are the ones the sample writes (crates/gen/src/arrays.rs).
WRITTEN = {
    "CODES": {1: ["é€", "a,b"], 2: ["abc", "a,b"], 3: None},
    "RAW": {1: [b"\x01\x7f", b""], 2: [b"ab", b""], 3: None},
}


def driver_arrays(cur):
    """{column: (bounds as fbunload writes them, {ID: value})} of
    ARRAY_TYPES, as firebird-driver reads it, bounds from the catalog."""
    cur.execute("SELECT TRIM(f.RDB$FIELD_NAME), d.RDB$LOWER_BOUND, d.RDB$UPPER_BOUND "
                "FROM RDB$RELATION_FIELDS f JOIN RDB$FIELD_DIMENSIONS d "
                "ON d.RDB$FIELD_NAME = f.RDB$FIELD_SOURCE "
                "WHERE f.RDB$RELATION_NAME = 'ARRAY_TYPES' ORDER BY f.RDB$FIELD_POSITION, d.RDB$DIMENSION")
    bounds = {}
    for name, lower, upper in cur.fetchall():
        bounds.setdefault(name, []).append(f"{lower}:{upper}")
    arrays = {}
    for name, dims in bounds.items():
        if name in WRITTEN:
            values = WRITTEN[name]
        else:
            cur.execute(f"SELECT ID, {name} FROM ARRAY_TYPES ORDER BY ID")
            values = dict(cur.fetchall())
        arrays[name] = ("[" + ", ".join(dims) + "]", values)
    return arrays


def comparable(value, decfloat):
    """An element as both sides can compare it: DECFLOAT (fbunload's text,
    firebird-driver's Decimal) as Decimal, TIME WITH TIME ZONE (both UTC)
    without its zone."""
    if isinstance(value, list):
        return [comparable(v, decfloat) for v in value]
    if decfloat and value is not None:
        return decimal.Decimal(value)
    if isinstance(value, datetime.time):
        return value.replace(tzinfo=None)
    return value


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_the_sample_arrays_read_back_as_firebird_driver_reads_them(sample, fmt):
    files, _, _, arrays = sample
    path = files[fmt]["ARRAY_TYPES"]
    table = pa.parquet.read_table(path) if fmt == "parquet" else pa.feather.read_table(path)
    rows = {row["ID"]: row for row in table.to_pylist()}
    assert sorted(rows) == [1, 2, 3]
    dimensions = set()
    for name, (bounds, values) in arrays.items():
        field = table.schema.field(name)
        assert field.metadata[b"fbunload.array_bounds"] == bounds.encode(), name
        depth, kind = 0, field.type
        while pa.types.is_list(kind):
            depth, kind = depth + 1, kind.value_type
        assert depth == bounds.count(":"), (name, field.type)
        dimensions.add(depth)
        decfloat = field.metadata[b"fbunload.type"].startswith(b"DECFLOAT")
        for id_, expected in values.items():
            got = rows[id_][name]
            assert comparable(got, decfloat) == comparable(expected, decfloat), (name, id_, got)
    assert dimensions == {1, 2}
    assert all(rows[3][name] is None for name in arrays), "row 3: every array NULL"


def read(path, fmt, reader, text=()):
    """(column names, rows as dicts) of the file, read with the reader's
    defaults: only the delimiter of a TSV file is said, and the columns in
    ``text`` are asked for as text."""
    path = str(path)
    tab = fmt == "tsv"
    if reader == "pyarrow":
        if fmt == "parquet":
            table = pa.parquet.read_table(path)
        elif fmt == "arrow":
            table = pa.feather.read_table(path)
        elif fmt == "jsonl":
            table = pa.json.read_json(path)
        else:
            table = pa.csv.read_csv(
                path, parse_options=pa.csv.ParseOptions(delimiter="\t" if tab else ","),
                convert_options=pa.csv.ConvertOptions(column_types={c: pa.string() for c in text}))
        return table.column_names, table.to_pylist()
    if reader == "polars":
        if fmt == "parquet":
            frame = polars.read_parquet(path)
        elif fmt == "arrow":
            frame = polars.read_ipc(path)
        elif fmt == "jsonl":
            frame = polars.read_ndjson(path)
        else:
            frame = polars.read_csv(path, separator="\t" if tab else ",",
                                    schema_overrides={c: polars.String for c in text} or None)
        return frame.columns, frame.to_dicts()
    if reader == "pandas":
        if fmt == "parquet":
            frame = pandas.read_parquet(path)
        elif fmt == "arrow":
            frame = pandas.read_feather(path)
        elif fmt == "jsonl":
            frame = pandas.read_json(path, lines=True, dtype={c: str for c in text} or True)
        else:
            frame = pandas.read_csv(path, sep="\t" if tab else ",",
                                    dtype={c: str for c in text} or None)
        frame = frame.astype(object).where(frame.notna(), None)
        return list(frame.columns), frame.to_dict("records")
    con = duckdb.connect()
    quoted = path.replace("'", "''")
    if fmt == "parquet":
        rel = con.sql(f"SELECT * FROM read_parquet('{quoted}')")
    elif fmt == "arrow":
        # DuckDB has no reader of Arrow IPC files: it scans pyarrow's table.
        rel = con.from_arrow(pa.feather.read_table(path))
    elif fmt == "jsonl":
        rel = con.sql(f"SELECT * FROM read_json('{quoted}')")
    else:
        types = ", ".join(f"'{c}': 'VARCHAR'" for c in text)
        options = f", types={{{types}}}" if text else ""
        rel = con.sql(f"SELECT * FROM read_csv('{quoted}'{options})")
    names = rel.columns
    return names, [dict(zip(names, row)) for row in rel.fetchall()]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_table_reads_with_its_names_and_rows(sample, fmt, reader):
    files, tables, *_ = sample
    for name, path in files[fmt].items():
        columns, count = tables[name]
        if fmt == "jsonl" and count == 0:
            # An empty table's JSON Lines file is empty: no line to carry
            # the names. pandas and DuckDB read no rows; pyarrow and polars
            # refuse an empty file (formats.md says so).
            assert path.stat().st_size == 0
            if reader in ("pandas", "duckdb"):
                assert read(path, fmt, reader)[1] == [], (reader, name)
            continue
        names, rows = read(path, fmt, reader)
        assert names == columns, (fmt, reader, name, names)
        assert len(rows) == count, (fmt, reader, name, len(rows))


def numbers(rows):
    """{ID: [exact columns as Decimal]} of rows given as dicts."""
    def as_decimal(v):
        return None if v is None else decimal.Decimal(str(v))
    return {int(r["ID"]): [as_decimal(r[c]) for c in EXACT] for r in rows}


def text_exact(rows):
    """The same, from text a reader kept as text (CSV, JSON strings)."""
    return {int(r["ID"]): [None if r[c] in (None, "") else decimal.Decimal(r[c]) for c in EXACT]
            for r in rows}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_column_of_every_format_reads_exactly(sample, fmt, reader):
    files, _, exact, _ = sample
    path = files[fmt]["ALL_TYPES"]
    # Typed formats carry their types: the numbers must be the database's.
    # Text formats are read twice: as the reader infers (every column must
    # read), then with the exact columns kept as text (they must be exact).
    for as_text in ([False] if fmt in ("parquet", "arrow", "jsonl") else [False, True]):
        # JSON Lines writes INT128 and NUMERIC as strings: pandas is told
        # to keep them so (it would make floats of them).
        text = EXACT if as_text or (fmt, reader) == ("jsonl", "pandas") else ()
        names, rows = read(path, fmt, reader, text)
        assert len(rows) == len(exact), (fmt, reader, len(rows))
        if fmt == "jsonl" or as_text:
            got = text_exact(rows)
        elif fmt in ("csv", "tsv"):
            continue
        else:
            got = numbers(rows)
        assert got == exact, (fmt, reader)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_the_sample_arrays_read_from_text_as_json_arrays(sample, fmt, reader):
    """Each reader takes an array of a text format with its defaults: CSV
    and TSV as the text of a JSON array, JSON Lines as a list; both are
    the Parquet file's values (GRID two dimensions of INTEGER, NAMES of
    VARCHAR with a comma, quotes and a line break)."""
    files, *_ = sample
    parquet = {row["ID"]: row for row in pa.parquet.read_table(files["parquet"]["ARRAY_TYPES"]).to_pylist()}
    _, rows = read(files[fmt]["ARRAY_TYPES"], fmt, reader)
    assert len(rows) == len(parquet)
    for row in rows:
        for name in ["GRID", "NAMES"]:
            value = row[name]
            if fmt != "jsonl":
                # A NULL array is an empty field, which pyarrow reads as ""
                # (a Firebird array is never empty: "" is no JSON array).
                assert value is None or isinstance(value, str), (name, value)
                value = json.loads(value) if value else None
            assert value == parquet[int(row["ID"])][name], (name, row["ID"], value)
