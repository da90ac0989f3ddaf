"""Read Firebird tables in parallel from one consistent snapshot.

Every function opens its own attachments: a main one that holds a
read-only snapshot, and ``parallel`` workers that join that snapshot and
read the tables in pieces of DB_KEY ranges (pointer pages). Batches come
back in DB_KEY order, so the result is the same for any ``parallel``.

``database`` is a path (the embedded engine: ``pip install
firebird-embedded``), ``host:path`` or ``inet://host:port/path``. ``user``
and ``password`` default to ``ISC_USER`` and ``ISC_PASSWORD``. ``charset``
is the encoding of columns declared ``CHARACTER SET NONE``; every other
column is decoded from its own character set.

:class:`Snapshot` holds a snapshot open for reads that join it later, from
other threads and processes; :mod:`fbunload.dask` reads tables into Dask
DataFrames whose partitions all join one; :mod:`fbunload.adbc` connects
pandas, polars and other ADBC tools through fbunload's ADBC driver.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import pyarrow as pa

from fbunload._fbunload import (
    DatabaseError,
    Error,
    Interrupted,
    OutputError,
    SnapshotClosed,
    UsageError,
    VerifyError,
)
from fbunload import _fbunload
from fbunload._snapshot import Snapshot

#: The package's version, the command line's ``fbunload --version``.
__version__: str = _fbunload.__version__

__all__ = [
    "read_arrow",
    "read_batches",
    "read_pandas",
    "read_polars",
    "read_sql",
    "read_tables",
    "unload",
    "apply",
    "follow",
    "pg_end_sync",
    "plan",
    "sample",
    "Snapshot",
    "Error",
    "UsageError",
    "DatabaseError",
    "OutputError",
    "VerifyError",
    "Interrupted",
    "SnapshotClosed",
]


def _exact(name: str) -> str:
    """A ``tables`` pattern that matches exactly ``name``, as stored: the
    name double-quoted, which a pattern takes as written."""
    return '"' + name.replace('"', '""') + '"'


@contextlib.contextmanager
def _called(function: str):
    """Errors of the native call in the words of ``function``, the one the
    caller called: ``read_arrow() got an unexpected keyword argument``,
    not the native ``open()``'s."""
    try:
        yield
    except TypeError as e:
        message = str(e)
        for native in ("open()", "plan()", "unload()"):
            if message.startswith(native):
                raise TypeError(f"{function}(){message[len(native):]}") from None
        raise


def _open_table(function: str, database: str, table: str, **options: Any):
    # One table: its columns and rows are chosen in the queries themselves.
    columns = options.pop("columns", None)
    if columns is not None:
        options["select_columns"] = list(columns)
    condition = options.pop("where", None)
    if condition is not None:
        # The leading ':' says "no table name": a condition may itself
        # start with NAME: (see --where).
        options["condition"] = ":" + condition
    try:
        with _called(function):
            stream = _fbunload.open(database, tables=_exact(table), **options)
    except UsageError as e:
        # The caller gave a name and a condition, not the pattern and the
        # ':'-prefixed condition that stand for them here.
        message = str(e).replace(f"tables='{_exact(table)}'", f"table {table!r}", 1)
        raise UsageError(_as_stored(message).replace("where=':", "where='", 1)) from None
    names = stream.table_names()
    if names != [table]:
        stream.cancel()
        raise UsageError(f"table {table!r} not found in {database} (names are case-sensitive)")
    return stream


def read_batches(
    database: str,
    table: str,
    *,
    user: Optional[str] = None,
    password: Optional[str] = None,
    role: Optional[str] = None,
    charset: str = "UTF8",
    parallel: Optional[int] = None,
    columns: Optional[Sequence[str]] = None,
    where: Optional[str] = None,
    client_lib: Optional[str] = None,
    **options: Any,
) -> pa.RecordBatchReader:
    """Table ``table`` as a ``pyarrow.RecordBatchReader``: batches in DB_KEY
    order while ``parallel`` workers read ahead, in bounded memory
    (``memory_mb``, 128 by default), through the Arrow C stream interface.
    Closing or dropping the reader stops the run.

    ``columns`` (names as stored, in the order wanted) and ``where`` (an
    SQL condition, e.g. ``"S_W_ID = 7"``) are part of every worker's
    query: only those columns and rows are read, still in parallel, at one
    snapshot. From a server, ``processes`` ('auto', 0 or a number, as
    for :func:`unload`) puts the workers in reader processes."""
    stream = _open_table(
        "read_batches",
        database,
        table,
        user=user,
        password=password,
        role=role,
        charset=charset,
        parallel=parallel,
        columns=columns,
        where=where,
        client_lib=client_lib,
        **options,
    )
    return stream.take_reader(0)


def _tables(stream) -> Dict[str, pa.Table]:
    names = stream.table_names()
    batches: List[List[pa.RecordBatch]] = [[] for _ in names]
    while True:
        item = stream.next()
        if item is None:
            break
        table, batch = item
        batches[table].append(batch)
    return {
        name: pa.Table.from_batches(parts, schema=stream.schema(i))
        for i, (name, parts) in enumerate(zip(names, batches))
    }


def read_arrow(database: str, table: str, **options: Any) -> pa.Table:
    """Table ``table`` as a ``pyarrow.Table``; options as for
    :func:`read_batches`, and ``verify=True`` to compare the rows with
    ``COUNT(*)`` at the same snapshot."""
    return _read_arrow("read_arrow", database, table, **options)


def _read_arrow(function: str, database: str, table: str, **options: Any) -> pa.Table:
    options.setdefault("charset", "UTF8")
    stream = _open_table(function, database, table, **options)
    return _tables(stream)[table]


def read_tables(database: str, tables: Optional[str] = None, **options: Any) -> Dict[str, pa.Table]:
    """Every table matching ``tables`` (a SQL SIMILAR TO pattern such as
    ``'ORDER%'`` or ``'A|B'``, where a comma lists alternatives too and
    ``\\,`` is a comma in a name; all user tables if None), read at ONE
    snapshot, as a dict of ``pyarrow.Table`` by name. ``views`` (a
    pattern: ``'%'`` for every view) and ``queries`` (``{name: sql}`` or
    ``{name: (sql, split_by)}``, see :func:`read_sql`) join them at the same
    snapshot; with either and no ``tables``, no table is read."""
    if "columns" in options and options["columns"] is not None:
        options["columns"] = list(options["columns"])
    if "where" in options:
        # "TABLE:condition" for one of several tables, as --where takes it.
        options["condition"] = options.pop("where")
    options["queries"] = _queries(options.get("queries"))
    with _called("read_tables"):
        return _tables(_fbunload.open(database, tables=tables, **options))


#: A query as ``queries=`` takes it: its SQL, or its SQL and the table whose
#: DB_KEY ranges split it (see :func:`read_sql`).
Query = Union[str, Tuple[str, str]]


def _queries(queries: Optional[Mapping[str, Query]]) -> List[Tuple[str, str, Optional[str]]]:
    """``{name: sql or (sql, split_by)}`` as the native module takes it."""
    listed = []
    for name, query in (queries or {}).items():
        sql, split_by = (query, None) if isinstance(query, str) else query
        listed.append((name, sql, split_by))
    return listed


def read_sql(
    database: str, sql: str, *, split_by: Optional[str] = None, name: str = "QUERY", **options: Any
) -> pa.Table:
    """The result of a SELECT as a ``pyarrow.Table``, read at one snapshot.

    Without ``split_by`` the query is read as it is, in one piece. With
    ``split_by="ORDERS"``, where the query's FROM begins with ``ORDERS``,
    ``parallel`` workers each read it for their own DB_KEY ranges of
    ``ORDERS`` and the pieces come back in DB_KEY order, so the result is the
    same for any ``parallel``; a query that groups, aggregates, sorts,
    limits or combines outside its subqueries (``COALESCE(MAX(ID), 0)``
    too) cannot be split and is refused. The run's transaction is
    read-only; a query that would still move a sequence (``GEN_ID(S, 1)``,
    ``NEXT VALUE FOR S``) is refused.
    Column names are as the server describes them (at most 31 bytes in this
    client API: alias long ones). Other options as for :func:`read_arrow`."""
    if "columns" in options or "where" in options:
        raise UsageError("read_sql: choose columns and rows in the query itself")
    with _called("read_sql"):
        stream = _fbunload.open(database, queries=[(name, sql, split_by)], **options)
    return _tables(stream)[name]


def read_pandas(database: str, table: str, **options: Any):
    """Table ``table`` as a ``pandas.DataFrame`` (needs pandas)."""
    return _read_arrow("read_pandas", database, table, **options).to_pandas()


def read_polars(database: str, table: str, **options: Any):
    """Table ``table`` as a ``polars.DataFrame`` (needs polars).

    INT128 and NUMERIC/DECIMAL are polars decimals of at most 38 digits.
    polars has no wider decimal, so with ``decimal256=True`` (INT128
    values of 39 digits) those columns are converted exactly: scale 0 to ``Int128``,
    which holds every INT128; other scales to ``String``, the exact
    decimal text (``"-12.34"``). Every other column is as pyarrow has it."""
    import polars

    return _to_polars(_read_arrow("read_polars", database, table, **options))


def _to_polars(table: pa.Table):
    """``table`` as a polars DataFrame, its decimal256 columns converted
    exactly (see :func:`read_polars`): through their decimal text, which
    pyarrow writes exactly and polars parses into ``Int128`` exactly. An
    ARRAY column of INT128 (a list of decimal256, one list per dimension)
    gets the same, element by element."""
    import polars

    integers = []
    for i, field in enumerate(table.schema):
        text_type, decimal, depth = _decimal256_as_text(field.type)
        if decimal is None:
            continue
        text = table.column(i).cast(text_type)
        table = table.set_column(i, pa.field(field.name, text_type, field.nullable, field.metadata), text)
        if decimal.scale == 0:
            parse = polars.element() if depth else polars.col(field.name)
            parse = parse.str.to_integer(dtype=polars.Int128)
            for level in range(depth):
                outer = polars.element() if level < depth - 1 else polars.col(field.name)
                parse = outer.list.eval(parse)
            integers.append(parse)
    frame = polars.from_arrow(table)
    return frame.with_columns(integers) if integers else frame


def _decimal256_as_text(data_type):
    """``data_type`` with string for decimal256 (at any list depth), the
    decimal256 type it held (or None) and how many lists hold it."""
    if pa.types.is_decimal256(data_type):
        return pa.string(), data_type, 0
    if pa.types.is_list(data_type):
        inner, decimal, depth = _decimal256_as_text(data_type.value_type)
        if decimal is not None:
            return pa.list_(data_type.value_field.with_type(inner)), decimal, depth + 1
    return data_type, None, 0


def _as_stored(message: str) -> str:
    """A message about a table named as stored: its hint (written for a
    quoted name in a pattern) in those terms."""
    hint = re.search(r" \(a quoted name is exact: did you mean (.*)\? tables=.*\)$", message)
    if hint is None:
        return message
    meant = hint.group(1)
    if meant.startswith('"'):
        meant = meant[1:-1].replace('""', '"')
    return message[:hint.start()] + f" (a table is named here as stored: did you mean {meant!r}?)"


def _sql_name(name: str, keyword: str) -> str:
    """A name of ``columns=`` or ``where=``, as SQL takes it and as the
    command line's ``--columns`` and ``--where`` do: unquoted upper-cased
    (``"s_i_id"`` is S_I_ID), double-quoted exact (``'"Odd name"'``)."""
    quoted = len(name) >= 2 and name.startswith('"') and name.endswith('"')
    if not quoted and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_$]*", name):
        raise UsageError(f"{keyword}=: {name!r} is not a plain name; names follow SQL (unquoted "
                         f"is upper-cased, double-quoted exact): write {_quoted(name)!r}")
    return name


def _quoted(name: str) -> str:
    """``name`` as an SQL identifier taken exactly as written."""
    return '"' + name.replace('"', '""') + '"'


def _column_specs(columns) -> List[str]:
    """``columns=`` as the command line's ``--columns`` values: a list for
    the one table selected, or ``{table: [column, ...]}``; names as SQL
    takes them (see :func:`_sql_name`)."""
    if columns is None:
        return []
    if isinstance(columns, str):
        raise UsageError("unload(): columns= takes a list of names, or {table: [names]}, "
                         f"not the string {columns!r}")

    def names(listed) -> str:
        return ",".join(_sql_name(name, "columns") for name in listed)

    if isinstance(columns, Mapping):
        return [_sql_name(table, "columns") + ":" + names(listed)
                for table, listed in columns.items()]
    return [names(columns)]


def _conditions(where) -> List[str]:
    """``where=`` as the command line's ``--where`` values: a condition for
    the one table selected, or ``{table: condition}``."""
    if where is None:
        return []
    if isinstance(where, Mapping):
        return [_sql_name(table, "where") + ":" + condition for table, condition in where.items()]
    # The leading ':' says "no table name": a condition may itself start
    # with NAME: (see --where).
    return [":" + where]


def unload(
    database: str,
    output: str,
    *,
    tables: Optional[str] = None,
    exclude: Optional[str] = None,
    columns: Union[Sequence[str], Mapping[str, Sequence[str]], None] = None,
    where: Union[str, Mapping[str, str], None] = None,
    views: Optional[str] = None,
    queries: Optional[Mapping[str, Query]] = None,
    format: str = "csv",
    compression: Optional[str] = None,
    header: bool = True,
    delimiter: Optional[str] = None,
    null: Optional[str] = None,
    binary: Optional[str] = None,
    crlf: bool = False,
    split: bool = False,
    row_group_rows: Optional[int] = None,
    decimal256: bool = False,
    max_rows: Optional[int] = None,
    max_bytes: Optional[int] = None,
    schema: bool = True,
    overwrite: bool = False,
    verify: bool = False,
    user: Optional[str] = None,
    password: Optional[str] = None,
    role: Optional[str] = None,
    charset: str = "UTF8",
    parallel: Optional[int] = None,
    unit_pages: Optional[int] = None,
    memory_mb: int = _fbunload.DEFAULT_MEMORY_MB,
    client_lib: Optional[str] = None,
    wire_crypt: Optional[str] = None,
    wire_compression: bool = False,
    allow_inconsistent: bool = False,
    stall_timeout: Optional[float] = None,
    since: Optional[str] = None,
    keep_keys: bool = False,
    resumable: bool = False,
    resume: bool = False,
    processes: Union[str, int, None] = None,
    pg_schema: Optional[str] = None,
    pg_lock_wait: Optional[float] = None,
    pg_drop_others: bool = False,
    pg_grants: bool = False,
    pg_fillfactor: Optional[int] = None,
    journal: Optional[str] = None,
    pg_verify_only: bool = False,
) -> Dict[str, Any]:
    """What the command line does: every selected table to a file in
    directory ``output``, then ``schema.sql`` (the tables' DDL) and
    ``manifest.json`` (``fbunload check DIR`` compares the files with it).
    Returns the summary (rows, bytes, files, snapshot number). Each keyword
    is the command line's option of the same name, with the same checks.

    What is read:
      ``tables``, ``exclude``: SQL SIMILAR TO patterns (``'ORDER%'``,
      ``'A|B'``); all user tables if None. ``columns``: names in the order
      wanted, for the one table selected, or ``{table: [names]}``.
      ``where``: an SQL condition (``"S_W_ID = 7"``) for the one table
      selected, or ``{table: condition}``; part of every worker's query.
      Names follow SQL, as on the command line: unquoted is upper-cased
      (``tables="stock"`` is STOCK), double-quoted exact (``'"stock"'``).
      ``views``: a pattern of views to unload too; ``queries``:
      ``{name: sql}`` or ``{name: (sql, split_by_table)}``, as for
      :func:`read_tables`.

    How it is written:
      ``format``: csv (default), tsv, jsonl, parquet or arrow.
      ``compression``: gzip, zstd or none for csv, tsv and jsonl (the whole
      file); zstd (default), snappy, gzip or none for parquet (its columns).
      csv and tsv: ``header=False`` (no first line of column names, which
      is written by default),
      ``null`` (text for NULL, default empty), ``crlf=True``; csv:
      ``delimiter`` (one ASCII character, or 'tab'; default ',').
      csv, tsv, jsonl: ``binary`` ('hex', the default, or 'base64').
      parquet: ``split=True`` (a directory of part files per table),
      ``row_group_rows`` (rows per row group). parquet and arrow:
      ``decimal256=True`` (INT128 values of 39 digits, as decimal256(39, s)).
      An option of another format is refused (``UsageError``), as the
      command line refuses it. ``max_rows`` / ``max_bytes`` cut every
      table into numbered parts (``T.000001.csv``, ...); ``schema=False``
      skips ``schema.sql``. A directory that holds another run's files is
      refused unless ``overwrite=True``. ``verify=True`` counts every
      table again at the snapshot.

    Connection and run:
      ``user``, ``password`` (default ``ISC_USER``, ``ISC_PASSWORD``),
      ``role``, ``charset`` (of ``CHARACTER SET NONE`` columns),
      ``client_lib``, ``wire_crypt`` ('disabled', 'enabled', 'required'),
      ``wire_compression=True``; ``parallel`` (workers; default: the local
      cores), ``unit_pages``, ``memory_mb`` (128), ``allow_inconsistent``
      (Firebird 3: tables in parallel, each in its own snapshot),
      ``stall_timeout`` (seconds a read may wait for the server; 1800 by
      default, 0: no limit); ``processes`` ('auto', the default: threads
      up to 4 workers, then a reader process per 2 workers; 0: threads
      only; or a number): from a server, the workers' reader processes,
      each this interpreter running the package's ``_reader.py`` isolated; the
      embedded engine always reads with threads.

    Incremental runs (Firebird 4+):
      ``since=DIR``: of each table, the rows inserted or updated since the
      run in ``DIR`` (``T.upserts.<ext>``) and the keys of those deleted
      since (``T.deletes.<ext>``), as ``--since`` does; ``keep_keys=True``
      keeps a full run's keys so that a later run can start from it.
      With ``keep_keys=True``, ``journal=DIR`` (the database's
      ``journal_archive_directory``) hands the run over to :func:`follow`,
      checking first that the database publishes to that journal.

    Resumable runs (Firebird 4+, docs/reliability.md):
      ``resumable=True`` keeps each finished unit in
      ``output/.fbunload-resume`` until the run is published, so that a
      run that dies can be continued with ``resume=True`` (same options):
      units unchanged since are taken from what it kept, the others read at
      a new snapshot, and every file is that one snapshot's. Into
      PostgreSQL the units are journaled in the load's staging schema, and
      ``resume=True`` goes on from them the same way
      (docs/postgresql.md, Resumable loads).

    Into PostgreSQL (docs/postgresql.md):
      ``output='postgresql://USER[:PASSWORD]@HOST:PORT/DBNAME'`` loads every
      selected table into schema ``pg_schema`` (default 'public') with
      binary COPY, at one snapshot, then its keys, indices, foreign keys
      and sequences, and puts it in place in one transaction, as
      ``-o postgresql://...`` does. The password comes from the URI,
      ``PGPASSWORD`` or ``~/.pgpass``. ``overwrite=True`` replaces a schema
      that holds anything, but never what fbunload did not make (objects in
      it no fbunload run created, objects elsewhere that depend on it)
      unless ``pg_drop_others=True`` too; ``schema=False`` loads into
      existing tables. ``pg_lock_wait``: seconds the publish waits in all
      for other sessions' locks on the target's tables (300), naming them
      on standard error as it waits.
      ``keep_keys=True`` keeps the state in the target, and each later run
      into it applies only what changed since, in one transaction. The
      summary adds ``target``, ``pg_schema``, ``untranslated`` (what
      did not translate, with its Firebird source) and ``catalog`` (every
      object of Firebird's catalog by kind: how many made, how many
      reported). ``pg_grants=True`` also makes Firebird's roles and its
      grants on the loaded tables (``--pg-grants``). ``pg_fillfactor``:
      the fillfactor (10-100) of the tables the load makes
      (``--pg-fillfactor``; 90 with ``keep_keys=True``, so the updates a
      sync or follow makes stay on their page, else PostgreSQL's 100).
      ``verify=True`` also
      compares every value PostgreSQL holds with the rows read, range by
      range; ``pg_verify_only=True`` loads nothing and makes that
      comparison of what ``pg_schema`` holds (``--pg-verify-only``); a
      difference raises ``VerifyError`` naming table, key range and
      columns."""
    try:
        return _fbunload.unload(
            database, str(output), format=format, compression=compression, header=header,
            delimiter=delimiter, null=null, binary=binary, crlf=crlf, split=split,
            row_group_rows=row_group_rows, tables=tables, exclude=exclude,
            columns=_column_specs(columns), rows_where=_conditions(where), user=user,
            password=password, role=role, charset=charset, parallel=parallel,
            unit_pages=unit_pages, client_lib=None if client_lib is None else str(client_lib),
            decimal256=decimal256, verify=verify, memory_mb=memory_mb, overwrite=overwrite,
            views=views, queries=_queries(queries), max_rows=max_rows, max_bytes=max_bytes,
            schema=schema, allow_inconsistent=allow_inconsistent, stall_timeout=stall_timeout,
            wire_crypt=wire_crypt, wire_compression=wire_compression,
            since=None if since is None else str(since), keep_keys=keep_keys,
            resumable=resumable, resume=resume, processes=processes, pg_schema=pg_schema,
            pg_lock_wait=pg_lock_wait, pg_drop_others=pg_drop_others, pg_grants=pg_grants,
            journal=None if journal is None else str(journal),
            pg_verify_only=pg_verify_only, pg_fillfactor=pg_fillfactor)
    except UsageError as e:
        # A condition for the one table is passed as ':condition'.
        raise UsageError(str(e).replace("where=':", "where='")) from None


def pg_end_sync(uri: str, *, pg_schema: Optional[str] = None) -> Dict[str, int]:
    """The cut-over (``fbunload -o URI --pg-end-sync``): ends keeping schema
    ``pg_schema`` (default 'public') of the PostgreSQL database ``uri`` in
    sync, removing fbunload's own tables there (``_fbunload_state``,
    ``_fbunload_runs``, ``_fbunload_untranslated``) in one transaction;
    reads nothing from Firebird. A later load into the schema is then
    refused instead of applied over the application's writes. Returns
    ``{"runs": n, "untranslated": m}``: the runs it had recorded, and the
    objects still listed as not translated (docs/postgresql.md, Moving an
    application). A schema fbunload never loaded raises ``UsageError``."""
    return _fbunload.pg_end_sync(uri, pg_schema=pg_schema)


def apply(old: str, changes: str) -> Dict[str, pa.Table]:
    """The change set in directory ``changes`` (an unload with ``since=old``)
    applied to the run in ``old`` (or to the state an earlier apply made):
    every table as it was at the change set's snapshot, by name, each with
    its columns and their metadata even when it has no rows. Parquet and
    Arrow runs; every file is checked against its manifest first. ``old``
    is the chain's base (``keep_keys=True``) or a state ``fbunload apply``
    wrote, never a change set itself (it holds only what changed): that,
    or a ``changes`` taken since another run, raises ``UsageError``."""
    return {
        name: pa.Table.from_batches(batches, schema=schema)
        for name, schema, batches in _fbunload.apply(str(old), str(changes))
    }


def follow(
    database: str,
    *,
    journal: str,
    output: Optional[str] = None,
    journal_live: Optional[str] = None,
    pg_schema: Optional[str] = None,
    until_idle: Optional[float] = None,
    memory_mb: int = _fbunload.DEFAULT_MEMORY_MB,
    from_: Optional[str] = None,
    since: Optional[str] = None,
    every: Optional[float] = None,
    user: Optional[str] = None,
    password: Optional[str] = None,
    client_lib: Optional[str] = None,
) -> Union[Iterator[Dict[str, Any]], Dict[str, Any]]:
    """``fbunload follow``: the committed transactions of the database's
    replication journal (``journal``: its ``journal_archive_directory``;
    ``journal_live``: its ``journal_directory``, for a lower lag), in
    commit order (docs/postgresql.md, Live).

    ``output=None`` (or ``'-'``): the change stream, an iterator of events,
    each a dict with the fields of ``-o - --format jsonl`` (``op``,
    ``table``, ``key``, ``after``, ``transaction``, ``position``,
    ``resume``), from the journal's first segment or after the event whose
    ``resume`` is ``from_``. It waits for new changes, and ends once none
    came for ``until_idle`` seconds (never, without it); closing it
    (``close()``, or leaving a ``for`` loop early and dropping it) stops
    the follow. Store ``resume`` with what was done with an event to go on
    exactly once.

    ``output='postgresql://...'``: applies the journal to schema
    ``pg_schema`` (default 'public') that a ``keep_keys=True,
    journal=...`` unload made, each transaction with its position, until
    ``until_idle`` seconds passed without a change or Ctrl-C (a clean
    stop, then ``KeyboardInterrupt``); returns ``{"transactions",
    "changes", "position"}``. ``output=DIR, since=BASE, every=SECONDS``:
    change sets (``DIR/00000001``, ...) after the ``keep_keys=True,
    journal=...`` run in BASE, one every ``every`` seconds that saw a
    change, which :func:`apply` takes in order. ``memory_mb``: row images
    and blobs one transaction may hold in memory before they go on in
    temporary files (128)."""
    stream = output is None or output == "-"
    if stream:
        for keyword, value in (("pg_schema", pg_schema), ("since", since), ("every", every)):
            if value is not None:
                raise UsageError(f"{keyword} is for output='postgresql://...' or a directory, not the change stream")
    elif from_ is not None:
        raise UsageError("from_ is for the change stream (output=None): a target keeps its own position")
    result = _fbunload.follow(
        str(database),
        journal=str(journal),
        output="-" if stream else str(output),
        journal_live=None if journal_live is None else str(journal_live),
        pg_schema=pg_schema,
        until_idle=until_idle,
        memory_mb=memory_mb,
        from_=from_,
        since=None if since is None else str(since),
        every=every,
        user=user,
        password=password,
        client_lib=client_lib,
    )
    return _events(result) if stream else result


def _events(stream: Any) -> Iterator[Dict[str, Any]]:
    try:
        for line in stream:
            yield json.loads(line)
    finally:
        stream.close()


def sample(path: str, *, warehouses: int = 1, items: int = 10_000, force: bool = False, **options: Any) -> str:
    """Creates a sample database at ``path`` to try fbunload on (what
    ``fbunload sample PATH`` makes): TPC-C-like tables (WAREHOUSE, DISTRICT,
    CUSTOMER, ITEM, STOCK, ORDERS, ORDER_LINE) scaled by ``warehouses`` and
    ``items``, and ALL_TYPES, ``Mixed Case "Quoted"``, EMPTY_TABLE and
    ARRAY_TYPES with every Firebird column type and its edge values (ARRAY
    columns of each element type, one and two dimensions); about 370,000
    rows by default, in seconds. The TPC-C tables have foreign keys, a key
    trigger and its generator, a domain with a CHECK, a computed column, a
    view and a selectable procedure, for a load into PostgreSQL to
    translate (docs/postgresql.md walks through it). Needs
    the embedded engine (``pip install firebird-embedded``). A file that
    is already this sample (every table, with the rows these options make:
    the Quick start's ``fbunload sample shop.fdb``) is kept as it is, so
    examples run after it, and twice; any other existing file is refused
    unless ``force=True``, which makes it again. Returns the absolute path."""
    return str(_fbunload.sample(str(path), warehouses=warehouses, items=items, force=force, **options))


def plan(database: str, **options: Any) -> Dict[str, Any]:
    """The plan without reading a row: tables (with pointer pages, units,
    pyarrow schemas and ``estimate``: rows and bytes from a sample of at
    most 128 data pages, as ``--plan`` gives them) and units (DB_KEY
    ranges of data pages)."""
    with _called("plan"):
        return _fbunload.plan(database, **options)
