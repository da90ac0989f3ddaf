"""Dask DataFrames of Firebird tables, every partition read at one
snapshot (needs ``pip install 'dask[dataframe]' distributed``, or
``pip install '.[dask]'`` from a checkout).

A partition is a unit of the table: a range of its data pages (DB_KEY
range). Each task opens an attachment of its own that joins the
snapshot, so partitions computed at any time, on any worker, show the
same state of the database, and partition ``i`` holds the rows before
those of partition ``i + 1``: ``ddf.compute()`` is, row for row and
dtype for dtype, what :func:`fbunload.read_pandas` returns at that
snapshot, but for the index, which restarts at 0 in every partition.

**The snapshot's life.** It lives as long as its :class:`fbunload.Snapshot`
in the process that built the DataFrame. Given a database name,
:func:`read_table` opens one that the DataFrame's graph holds: it closes
when the DataFrame and everything built from it are garbage collected.
Given a ``Snapshot``, the snapshot is yours: keep it open (a ``with``
block) until every result is in, which is also how to read several tables
at one snapshot. A task that starts after the snapshot was closed raises
:class:`fbunload.SnapshotClosed`, never reads other data.

**Where tasks run.** The threaded scheduler and a
``distributed.LocalCluster(processes=False)`` run tasks in this process,
so they work with the embedded engine (a database path). Worker
processes, local or on other machines, need a Firebird server
(``host:path`` or ``inet://``): the embedded engine opens a database in
one process only (a worker process's read then says so, and what to do
instead), unless every process runs a copy of the runtime in SuperClassic
mode. Each worker needs the Firebird client library and a
route to the server; tasks carry the user and password given here
(unset, each worker reads ``ISC_USER`` and ``ISC_PASSWORD``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import pyarrow as pa

try:
    import dask
    import dask.dataframe as dd
except ImportError as missing:
    raise ImportError(
        f"fbunload.dask needs Dask ({missing}): pip install 'dask[dataframe]' distributed"
    ) from missing

from fbunload import _exact
from fbunload._fbunload import DatabaseError, UsageError, is_plain_path
from fbunload._snapshot import Snapshot, read_units

__all__ = ["read_table"]

# A worker process's attachment to a file the client's process holds open.
_FILE_IN_ANOTHER_PROCESS = (
    "table {table}: a Dask worker process cannot open the database file that the "
    "process which read it holds open (the embedded engine's default mode, SuperServer, "
    "lets one process open a file): compute in threads (the threaded scheduler, or "
    "distributed.LocalCluster(processes=False)), read through a Firebird server "
    "(database='localhost:/path/db.fdb'), or give every process a copy of the runtime "
    "in SuperClassic mode (ServerMode = SuperClassic in its firebird.conf, FIREBIRD "
    "pointing to it)"
)


def read_table(
    database: Union[str, Snapshot],
    table: str,
    *,
    user: Optional[str] = None,
    password: Optional[str] = None,
    role: Optional[str] = None,
    charset: str = "UTF8",
    columns: Optional[Sequence[str]] = None,
    npartitions: Optional[int] = None,
    client_lib: Optional[str] = None,
    decimal256: bool = False,
    allow_inconsistent: bool = False,
) -> dd.DataFrame:
    """Table ``table`` as a ``dask.dataframe.DataFrame`` whose partitions
    are read at one snapshot (module docs).

    ``database``: a path (the embedded engine), ``host:path`` or
    ``inet://host:port/path``, to read at a snapshot taken now and held by
    the DataFrame; or an open :class:`fbunload.Snapshot` to read at (then
    the connection arguments are the snapshot's, and are not given here).

    ``npartitions``: at most this many partitions of about equal pages; by
    default one per unit of the plan. A table on one pointer page (a few
    MB) is one partition. ``columns``: the columns to read (Dask also
    pushes column selections made later down to the reads).

    On Firebird 3, which cannot share a snapshot, this raises
    :class:`fbunload.UsageError` unless ``allow_inconsistent=True``; then
    each table is one partition read in a snapshot of its own.
    """
    if npartitions is not None and npartitions < 1:
        raise UsageError("npartitions must be at least 1")
    if isinstance(database, Snapshot):
        set_here = {
            "user": user is not None,
            "password": password is not None,
            "role": role is not None,
            "client_lib": client_lib is not None,
            "charset": charset != "UTF8",
            "decimal256": decimal256,
            "allow_inconsistent": allow_inconsistent,
        }
        extra = [name for name, is_set in set_here.items() if is_set]
        if extra:
            raise UsageError(
                f"read_table: {', '.join(extra)} come from the Snapshot given; "
                "set them when opening it"
            )
        snapshot = database
    else:
        snapshot = Snapshot(
            database,
            tables=_exact(table),
            user=user,
            password=password,
            role=role,
            charset=charset,
            client_lib=client_lib,
            decimal256=decimal256,
            allow_inconsistent=allow_inconsistent,
        )
    schema = snapshot.schema(table)
    if columns is not None:
        columns = list(columns)
        for name in columns:
            if name not in schema.names:
                raise UsageError(
                    f"table {table}: no column {name!r}; its columns are {', '.join(schema.names)}"
                )
    reader = _PartitionReader(snapshot, table, schema)
    units = snapshot.units(table, npartitions)
    meta = schema.empty_table().to_pandas()
    # Dask would turn every object column into strings, binary and
    # decimals included: partitions keep read_pandas's dtypes instead.
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(
            reader,
            units,
            meta=meta,
            label="fbunload-read-table",
            enforce_metadata=False,
            columns=columns,
        )


class _PartitionReader:
    """Reads one partition, a unit of a table, at a snapshot: what every
    task calls. Pickled for another process, it keeps what that process
    needs to join the snapshot (connection arguments and the snapshot's
    ticket) and leaves the Snapshot itself behind, which stays with the
    DataFrame in this process."""

    def __init__(self, snapshot: Snapshot, table: str, schema: pa.Schema) -> None:
        self._snapshot: Optional[Snapshot] = snapshot
        self._join = snapshot._join
        self._token = snapshot._token
        self._number = snapshot.number
        self._table = table
        self._schema = schema

    def __call__(self, unit, columns: Optional[Sequence[str]] = None):
        if self._snapshot is not None:
            self._snapshot._held.check_open()
        try:
            part = read_units(self._join, self._table, [unit], columns)
        except DatabaseError as e:
            if self._snapshot is None and is_plain_path(self._join["database"]) and "in use" in str(e):
                raise DatabaseError(_FILE_IN_ANOTHER_PROCESS.format(table=self._table)) from None
            raise
        expected = self._schema if columns is None else pa.schema(
            [self._schema.field(name) for name in columns]
        )
        if not part.schema.equals(expected):
            raise DatabaseError(
                f"table {self._table}: its columns changed after snapshot {self._number} "
                "was taken; read it again at a new snapshot"
            )
        return part.to_pandas()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_snapshot"] = None
        return state

    def __dask_tokenize__(self):
        return ("fbunload", self._token, self._table)

    def __repr__(self) -> str:
        # Never the password: this shows in task graphs and dashboards.
        return f"<fbunload partition reader: table {self._table} at snapshot {self._number}>"
