"""Spark DataFrames of Firebird tables, every partition read at one
snapshot: a PySpark data source (needs ``pip install 'pyspark>=4'``, or
``pip install '.[spark]'`` from a checkout, and Java 17 or later).

::

    import fbunload.spark
    fbunload.spark.register(spark)
    stock = (spark.read.format("fbunload")
             .option("database", "db1:/data/shop.fdb")
             .option("table", "STOCK")
             .load())

A partition is a run of consecutive units of the table (ranges of its data
pages, DB_KEY order, as :mod:`fbunload.dask` and the ADBC driver cut
them), one partition per core by default. Each task
opens an attachment of its own that joins the read's snapshot: the rows
of all partitions are one state of the database, whatever is committed
meanwhile. Options, the snapshot's life (a holder process per read, or a
:class:`fbunload.Snapshot` of yours shared by several reads) and the types
are in docs/spark.md.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

try:
    import pyspark
    from pyspark.sql import types as T
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
except ImportError as missing:
    raise ImportError(
        f"fbunload.spark needs PySpark 4 ({missing}): pip install 'pyspark>=4'"
    ) from missing

from fbunload import _exact, _holder
from fbunload._fbunload import DatabaseError, SnapshotClosed, UsageError
from fbunload._fbunload import Error as FbunloadError
from fbunload._fbunload import is_plain_path, name_hint, sql_name, stored_name, stored_names
from fbunload._holder import prefetched
from fbunload._snapshot import Snapshot, read_units

__all__ = ["register", "snapshot_options", "FirebirdDataSource"]

#: The format name: ``spark.read.format("fbunload")``.
NAME = "fbunload"

_SNAPSHOT_PREFIX = "fbunload-snapshot:"

# Spark 4.1 and later push filters to Python data sources.
try:
    from pyspark.sql import datasource as _datasource

    _FILTERS = _datasource.Filter
except AttributeError:
    _datasource, _FILTERS = None, None


def register(spark) -> None:
    """Registers the ``fbunload`` format with ``spark`` (a SparkSession),
    and turns on filter pushdown to Python data sources
    (``spark.sql.python.filterPushdown.enabled``), which Spark 4.1 and
    later need to ask this source which filters it takes."""
    if _FILTERS is not None:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(FirebirdDataSource)


def snapshot_options(snapshot: Snapshot, partitions: Optional[int] = None) -> Dict[str, str]:
    """The options that read at ``snapshot``, an open
    :class:`fbunload.Snapshot` of this process: ``database``, ``snapshot``
    (its ticket and the units of its tables, cut into at most
    ``partitions`` each) and its connection options (user, password, ...).
    Add ``table`` (one of its tables), and the read joins the snapshot
    while it is open::

        with fbunload.Snapshot(DSN, tables="ORDERS|LINES") as snap:
            at = fbunload.spark.snapshot_options(snap)
            orders = spark.read.format("fbunload").options(**at).option("table", "ORDERS").load()
            lines = spark.read.format("fbunload").options(**at).option("table", "LINES").load()
            orders.join(lines, ...).write.parquet(...)   # before the block ends
    """
    if not isinstance(snapshot, Snapshot):
        raise UsageError("snapshot_options: give an open fbunload.Snapshot")
    snapshot._held.check_open()
    if snapshot._query is not None:
        raise UsageError(
            "snapshot_options: this Snapshot holds a query; open it with tables=, and give "
            "the query as the read's query option"
        )
    join = snapshot._join
    if join["decimal256"]:
        raise UsageError(
            "snapshot_options: Spark holds decimals of 38 digits at most; open the Snapshot "
            "without decimal256=True"
        )
    if partitions is not None and partitions < 1:
        raise UsageError("partitions must be at least 1")
    payload = {
        "number": snapshot.number,
        "ticket": join["ticket"],
        "units": {name: snapshot.units(name, partitions) for name in snapshot.tables},
    }
    options = {
        "database": snapshot.database,
        "snapshot": _SNAPSHOT_PREFIX
        + base64.urlsafe_b64encode(json.dumps(payload).encode()).decode(),
    }
    for key in ["user", "password", "role", "charset", "client_lib"]:
        if join[key] is not None:
            options[key] = str(join[key])
    return options


# Units a partition is cut into, read one after another: enough that
# reading one overlaps Spark's work on the one before.
UNITS_PER_PARTITION = 4

# Every option the source takes, and what it is.
_OPTIONS = {
    "database": "path, host:path or inet://host:port/path",
    "table": "the table to read: unquoted upper-cased, double-quoted exact (as -t)",
    "query": "a SELECT to read instead of a table",
    "split_by": "the table whose units split the query",
    "user": "user name (default ISC_USER)",
    "password": "password (default ISC_PASSWORD)",
    "role": "SQL role",
    "charset": "character set of CHARACTER SET NONE columns",
    "client_lib": "the Firebird client library",
    "columns": "the columns to read, comma-separated or a JSON list (names as table's)",
    "where": "an SQL condition on the table's rows",
    "partitions": "at most this many partitions (default: the planning machine's cores)",
    "parallel": "sizes the units (about 8 per worker)",
    "allow_inconsistent": "Firebird 3: each partition in a snapshot of its own",
    "snapshot": "from fbunload.spark.snapshot_options",
    "holder_host": "the address executors reach the snapshot holder at",
    "idle_timeout": "seconds without a partition reading before the read's snapshot is released",
}


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise UsageError(f"fbunload option {key}: true or false, not {value!r}")
    return value == "true"


def _number(options: Mapping[str, str], key: str, default, kind=int, least=1):
    if key not in options:
        return default
    try:
        value = kind(options[key])
    except ValueError:
        value = None
    if value is None or value < least:
        raise UsageError(f"fbunload option {key}: a number of at least {least}, not {options[key]!r}")
    return value


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class _Read:
    """The options of one read, checked: what it reads and how it joins."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        options = {str(k).lower(): str(v) for k, v in raw.items()}
        unknown = sorted(set(options) - set(_OPTIONS) - {"path"})
        if unknown:
            raise UsageError(
                f"fbunload: no option {', '.join(unknown)}; the options are {', '.join(_OPTIONS)}"
            )
        if "database" not in options:
            raise UsageError('fbunload: give the database: .option("database", "host:/path/db.fdb")')
        self.database = options["database"]
        # Names as the command line takes them (`-t item` is ITEM,
        # `-t '"item"'` is item): the rule of fbunload's Rust core.
        self.written_table = options.get("table")
        self.table = None
        if self.written_table is not None:
            self.table = stored_name(self.written_table, 'fbunload option "table"')
        self.query = options.get("query")
        self.split_by = options.get("split_by")
        if (self.table is None) == (self.query is None):
            raise UsageError("fbunload: give one of the options table and query")
        if self.split_by is not None and self.query is None:
            raise UsageError("fbunload: split_by goes with query")
        columns = options.get("columns")
        if columns is not None:
            option = 'fbunload option "columns"'
            if columns.lstrip().startswith("["):
                try:
                    listed = json.loads(columns)
                except ValueError:
                    raise UsageError(f"{option}: not a JSON list of names") from None
                if not listed or not all(isinstance(c, str) for c in listed):
                    raise UsageError(f"{option}: a JSON list of names, as in SQL")
                columns = [stored_name(c, option) for c in listed]
            else:
                columns = stored_names(columns, option)
        self.columns: Optional[List[str]] = columns
        self.where = options.get("where")
        if self.query is not None and (columns is not None or self.where is not None):
            raise UsageError("fbunload: with query, choose columns and rows in the query itself")
        self.connect = {
            "user": options.get("user"),
            "password": options.get("password"),
            "role": options.get("role"),
            "charset": options.get("charset", "UTF8"),
            "client_lib": options.get("client_lib"),
        }
        self.partitions = _number(options, "partitions", None)
        self.parallel = _number(options, "parallel", None)
        self.allow_inconsistent = _flag(options, "allow_inconsistent")
        self.holder_host = options.get("holder_host", "127.0.0.1")
        self.idle_timeout = _number(options, "idle_timeout", 600.0, float, 0)
        # A file: only the holder opens it (the embedded engine's default
        # mode lets one process open a database), and reads for the tasks.
        self.through_holder = is_plain_path(self.database)
        self.snapshot = None
        if "snapshot" in options:
            self.snapshot = self._decode(options["snapshot"])
            if self.partitions is not None or self.parallel is not None:
                raise UsageError(
                    "fbunload: a snapshot's units are cut by "
                    "snapshot_options(snap, partitions=N), not by these options"
                )

    @staticmethod
    def _decode(text: str) -> Dict[str, Any]:
        try:
            if not text.startswith(_SNAPSHOT_PREFIX):
                raise ValueError
            return json.loads(base64.urlsafe_b64decode(text[len(_SNAPSHOT_PREFIX):]))
        except ValueError:
            raise UsageError(
                "fbunload option snapshot: not one that fbunload.spark.snapshot_options made"
            ) from None

    def label(self) -> str:
        return f"table {sql_name(self.table)}" if self.table is not None else "the query"

    def join(self, ticket) -> Dict[str, Any]:
        """What :func:`read_units` joins the snapshot ``ticket`` with."""
        return dict(
            database=self.database,
            decimal256=False,
            ticket=None if ticket is None else tuple(ticket),
            **self.connect,
        )

    def sql(self, pushed: Sequence[str] = ()) -> Optional[Tuple[str, Optional[str]]]:
        """The SELECT this read runs (and the table that splits it); None
        for a whole table, read as a table."""
        if self.query is not None:
            return self.query, self.split_by
        conditions = ([f"({self.where})"] if self.where is not None else []) + list(pushed)
        if self.columns is None and not conditions:
            return None
        listed = ", ".join(map(_quoted, self.columns)) if self.columns is not None else "*"
        sql = f"SELECT {listed} FROM {_quoted(self.table)}"
        if conditions:
            sql += " WHERE " + " AND ".join(conditions)
        # The stored name written so that the rule gives it back.
        return sql, sql_name(self.table)

    def name(self, sql) -> str:
        """The name :func:`read_units` reads: the table, or its query's."""
        return self.table if sql is None else "QUERY"

    def arrow_schema(self) -> pa.Schema:
        """The columns, as a read of no unit describes them: at the
        snapshot given, or in a snapshot of its own."""
        join = self.join(None if self.snapshot is None else self.snapshot["ticket"])
        if self.columns is not None:
            there = self._probe(join, self.table, None).names
            for name in self.columns:
                if name not in there:
                    hint = name_hint(sql_name(name), there, "write {} in the columns option")
                    raise UsageError(
                        f"table {self.table}: no column {sql_name(name)}{hint}; its columns are "
                        f"{', '.join(map(sql_name, there))} (names as in SQL: unquoted "
                        "upper-cased, double-quoted exact)"
                    )
        sql = self.sql()
        return self._probe(join, self.name(sql), sql)

    def _probe(self, join, name, sql) -> pa.Schema:
        """The columns of a read of no unit: in this process, or, for a
        file, in the holder that opens it."""
        try:
            if not self.through_holder or self.snapshot is not None:
                return read_units(join, name, [], None, sql).schema
            holder = _holder.address(self.holder_host, _holder.owner_pid())
            reader, answer = _holder.ask(holder, "rows", dict(join=join, name=name, sql=sql), None)
            try:
                _raise(answer)
                return pa.ipc.open_stream(reader).schema
            finally:
                _holder.close(reader)
        except (UsageError, DatabaseError) as e:
            raise self._named(e) from None

    def _named(self, error: FbunloadError) -> FbunloadError:
        """A table that is not there, with the did-you-mean of the
        command line's rule (how to write the name that differs in case)."""
        if self.table is None or "no such table" not in str(error):
            return error
        everything = dict(database=self.database, **self.connect)
        try:
            if self.through_holder:
                holder = _holder.address(self.holder_host, _holder.owner_pid())
                reader, answer = _holder.ask(holder, "tables", everything, None)
                _holder.close(reader)
                _raise(answer)
                existing = answer["tables"]
            else:
                with Snapshot(**everything) as snapshot:
                    existing = snapshot.tables
        except FbunloadError:
            return error
        hint = name_hint(self.written_table, existing, ".option(\"table\", '{}')")
        if not hint:
            hint = f"; check the spelling. Tables: {', '.join(map(sql_name, existing[:20]))}"
        return UsageError(f"fbunload option table {self.written_table!r}: no such table{hint}")


def _streamed(reader) -> Iterator[pa.RecordBatch]:
    """The batches of a stream from the holder, then its last line."""
    yield from pa.ipc.open_stream(reader)
    line = reader.readline()
    _raise(json.loads(line) if line else {"error": "the holder ended mid-read"})


def _grouped(units: Sequence[Any], parts: int) -> List[List[Any]]:
    """``units`` (of about equal pages, in DB_KEY order) as ``parts``
    runs of consecutive units, of about equal counts: fewer, larger
    partitions (a task each costs Spark more than a unit costs Firebird),
    still read unit by unit (see :func:`prefetched`)."""
    parts = max(1, min(parts, len(units)))
    bounds = [round(i * len(units) / parts) for i in range(parts + 1)]
    return [list(units[a:b]) for a, b in zip(bounds, bounds[1:])]


def _raise(answer: Mapping[str, Any]) -> None:
    """The holder's error as the fbunload error it was."""
    if "error" in answer:
        import fbunload

        raise getattr(fbunload, answer.get("kind", ""), fbunload.DatabaseError)(answer["error"])


def _spark_type(field: pa.Field, where: str):
    """The Spark type of an Arrow column, or UsageError for one that Spark
    cannot hold exactly."""
    t = field.type
    simple = {
        pa.bool_(): T.BooleanType(),
        pa.int16(): T.ShortType(),
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.float32(): T.FloatType(),
        pa.float64(): T.DoubleType(),
        pa.string(): T.StringType(),
        pa.large_string(): T.StringType(),
        pa.binary(): T.BinaryType(),
        pa.large_binary(): T.BinaryType(),
        pa.date32(): T.DateType(),
    }
    if t in simple:
        return simple[t]
    if pa.types.is_decimal128(t):
        return T.DecimalType(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        # TIMESTAMP WITH TIME ZONE is already the instant in UTC.
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_time64(t) and hasattr(T, "TimeType"):
        return T.TimeType(6)
    if pa.types.is_list(t):
        return T.ArrayType(_spark_type(t.value_field, where), containsNull=True)
    if pa.types.is_time64(t):
        fix = f"Spark {pyspark.__version__} has no time of day (4.1 has)"
    elif pa.types.is_decimal256(t):
        fix = "Spark holds 38 digits at most"
    else:
        fix = f"Spark has no type for Arrow's {t}"
    raise UsageError(
        f"{where}: column {field.name} ({t}) cannot be read into Spark: {fix}; leave it out "
        "with the columns option, or cast it in a query"
    )


def _spark_schema(schema: pa.Schema, where: str):
    names = [f.name for f in schema]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"{where}: the column names {', '.join(twice)} repeat; alias them in a query")
    return T.StructType(
        [T.StructField(f.name, _spark_type(f, where), nullable=f.nullable) for f in schema]
    )


def _arrow_for_spark(schema) -> pa.Schema:
    """The Arrow schema Spark takes batches of ``schema`` in."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(schema, timezone="UTC")
    except TypeError:  # Spark 4.0
        return to_arrow_schema(schema)


def _one_line(method):
    """``method`` raising fbunload's errors without the frames below it:
    Spark shows the user the traceback it gets from its Python worker."""

    def plain(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except FbunloadError as e:
            raise e.with_traceback(None) from None

    plain.__name__, plain.__doc__ = method.__name__, method.__doc__
    return plain


class FirebirdDataSource(DataSource):
    """The ``fbunload`` format (module docs; options in docs/spark.md)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    @_one_line
    def schema(self):
        read = _Read(self.options)
        return _spark_schema(read.arrow_schema(), read.label())

    @_one_line
    def reader(self, schema) -> "FirebirdReader":
        return FirebirdReader(_Read(self.options), schema)


class FirebirdPartition(InputPartition):
    """Consecutive units of the read, and how to join its snapshot."""

    def __init__(self, index: int, units, join, name, sql, holder, number, read_id,
                 through_holder) -> None:
        super().__init__(index)
        self.index = index
        # Units of the plan, read one after another (each while Spark
        # works on the one before).
        self.units = [tuple(unit) for unit in units]
        self.join = join
        self.name = name
        self.sql = sql
        # (host, port, token) of the application's holder and the read's
        # id there; None for a Snapshot of the user's.
        self.holder = holder
        self.read_id = read_id
        self.number = number
        # A file: the holder reads the rows (the only process that opens it).
        self.through_holder = through_holder

    def __repr__(self) -> str:
        # Never the password: Spark may log partitions.
        return f"<fbunload partition {self.index}: {self.name} at snapshot {self.number}>"


class FirebirdReader(DataSourceReader):
    def __init__(self, read: _Read, schema) -> None:
        self._read = read
        self._schema = schema
        # SQL conditions of the filters Spark pushed.
        self._pushed: List[str] = []

    def pushFilters(self, filters):
        """Takes the filters that Firebird evaluates as Spark does
        (comparisons, IN, IS [NOT] NULL and NOT of integers, decimals,
        booleans and dates); pushes the string ones too (=, IN, STARTING
        WITH), which Spark still evaluates, since a Firebird collation may
        compare them differently. Not for a query (its SQL is the user's)."""
        if self._read.query is not None:
            return filters
        types = {f.name: f.dataType for f in self._schema.fields}
        left = []
        for f in filters:
            condition = _condition(f, types)
            if condition is None:
                left.append(f)
                continue
            sql, exact = condition
            self._pushed.append(sql)
            if not exact:
                left.append(f)
        return left

    @_one_line
    def partitions(self) -> List[FirebirdPartition]:
        read = self._read
        sql = read.sql(self._pushed)
        name = read.name(sql)
        if read.snapshot is not None:
            units = [[unit] for unit in self._snapshot_units(sql)]
            ticket, holder, number = read.snapshot["ticket"], None, read.snapshot["number"]
            read_id = None
        else:
            snapshot = dict(
                database=read.database,
                parallel=read.parallel,
                allow_inconsistent=read.allow_inconsistent,
                **read.connect,
            )
            if sql is None:
                snapshot["tables"] = _exact(read.table)
            else:
                snapshot["query"] = sql
            parts = read.partitions or os.cpu_count() or 1
            holder = _holder.address(read.holder_host, _holder.owner_pid())
            reader, answer = _holder.ask(
                holder,
                "plan",
                dict(
                    snapshot=snapshot,
                    table=read.table if sql is None else None,
                    name=name,
                    sql=sql,
                    shares=parts * UNITS_PER_PARTITION,
                    idle_timeout=read.idle_timeout,
                ),
                None,
            )
            _holder.close(reader)
            try:
                _raise(answer)
            except (UsageError, DatabaseError) as e:
                raise read._named(e) from None
            ticket, number, read_id = answer["ticket"], answer["number"], answer["read"]
            units = _grouped(answer["units"], parts)
        join = read.join(ticket)
        return [
            FirebirdPartition(i, group, join, name, sql, holder, number, read_id,
                              read.through_holder and holder is not None)
            for i, group in enumerate(units)
        ]

    def _snapshot_units(self, sql):
        read = self._read
        units = read.snapshot["units"]
        driving = read.table
        if read.query is not None:
            if read.split_by is None:
                return [(0, None)]
            driving = stored_name(read.split_by, 'fbunload option "split_by"')
        if driving not in units:
            hint = name_hint(sql_name(driving), list(units), "write {}")
            raise UsageError(
                f"table {sql_name(driving)} is not in this snapshot{hint}; its tables are "
                f"{', '.join(map(sql_name, units))} (names as in SQL: unquoted upper-cased, "
                "double-quoted exact)"
            )
        return units[driving]

    def read(self, partition: FirebirdPartition) -> Iterator[pa.RecordBatch]:
        try:
            yield from self._read_partition(partition)
        except FbunloadError as e:
            raise e.with_traceback(None) from None

    def _read_partition(self, partition: FirebirdPartition) -> Iterator[pa.RecordBatch]:
        expected = _arrow_for_spark(self._schema)
        reader = None
        try:
            if partition.holder is None:
                batches = self._direct(partition)
            else:
                verb = "rows" if partition.through_holder else "start"
                body = dict(read=partition.read_id, units=partition.units)
                reader, answer = _holder.ask(partition.holder, verb, body, None)
                if answer.get("kind") == "SnapshotClosed" or answer.get("gone"):
                    host, port, _ = partition.holder
                    raise SnapshotClosed(
                        f"{partition.name}: the snapshot of this read (number "
                        f"{partition.number}) is released: no partition read it for "
                        "idle_timeout seconds, or the holder process at "
                        f"{host}:{port} ended with the Spark application; load() the "
                        "DataFrame again to read at a new snapshot"
                    )
                _raise(answer)
                if partition.through_holder:
                    batches = _streamed(reader)
                else:
                    batches = self._direct(partition)
            for batch in batches:
                yield self._as_expected(batch, expected)
        finally:
            _holder.close(reader)

    @staticmethod
    def _direct(partition: FirebirdPartition):
        for part in prefetched(
            lambda unit: read_units(partition.join, partition.name, [unit], None, partition.sql),
            partition.units,
        ):
            yield from part.to_batches()

    def _as_expected(self, batch: pa.RecordBatch, expected: pa.Schema) -> pa.RecordBatch:
        if batch.schema.names != expected.names:
            raise DatabaseError(
                f"{self._read.label()}: its columns changed after the read was planned "
                f"(now {', '.join(batch.schema.names)}); read it again"
            )
        if batch.schema == expected:
            return batch
        try:
            return batch.cast(expected)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise DatabaseError(
                f"{self._read.label()}: its columns changed after the read was planned "
                f"({e}); read it again"
            ) from None


_COMPARISONS = {
    "EqualTo": "=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}


def _column(f, types) -> Optional[Tuple[str, Any]]:
    path = getattr(f, "attribute", None)
    if not isinstance(path, tuple) or len(path) != 1 or path[0] not in types:
        return None
    return _quoted(path[0]), types[path[0]]


def _literal(value, data_type) -> Optional[Tuple[str, bool]]:
    """``value`` as an SQL literal for a column of ``data_type``, and
    whether Firebird compares it exactly as Spark does; None if not pushed."""
    exact_numbers = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType)
    if isinstance(data_type, exact_numbers):
        if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
            return None
        if isinstance(value, decimal.Decimal) and not value.is_finite():
            return None
        return format(value, "f") if isinstance(value, decimal.Decimal) else str(value), True
    if isinstance(data_type, T.BooleanType) and isinstance(value, bool):
        return ("TRUE" if value else "FALSE"), True
    if isinstance(data_type, T.DateType) and type(value) is datetime.date:
        return f"DATE '{value.isoformat()}'", True
    if isinstance(data_type, T.StringType) and isinstance(value, str) and "\x00" not in value:
        return "'" + value.replace("'", "''") + "'", False
    return None


def _condition(f, types) -> Optional[Tuple[str, bool]]:
    """A pushed filter as an SQL condition, and whether it is exact."""
    kind = type(f).__name__
    if kind == "Not":
        inner = _condition(f.child, types)
        # NOT of a looser condition would be stricter: only exact ones.
        return None if inner is None or not inner[1] else (f"NOT ({inner[0]})", True)
    column = _column(f, types)
    if column is None:
        return None
    name, data_type = column
    if kind == "IsNull":
        return f"{name} IS NULL", True
    if kind == "IsNotNull":
        return f"{name} IS NOT NULL", True
    if kind in _COMPARISONS:
        literal = _literal(f.value, data_type)
        return None if literal is None else (f"{name} {_COMPARISONS[kind]} {literal[0]}", literal[1])
    if kind == "EqualNullSafe":
        if f.value is None:
            return f"{name} IS NULL", True
        literal = _literal(f.value, data_type)
        return None if literal is None else (f"{name} IS NOT DISTINCT FROM {literal[0]}", literal[1])
    if kind == "In":
        literals = [_literal(v, data_type) for v in f.value]
        if not literals or any(lit is None for lit in literals):
            return None
        exact = all(lit[1] for lit in literals)
        return f"{name} IN ({', '.join(lit[0] for lit in literals)})", exact
    if kind == "StringStartsWith" and isinstance(data_type, T.StringType):
        literal = _literal(f.value, data_type)
        return None if literal is None else (f"{name} STARTING WITH {literal[0]}", False)
    return None
