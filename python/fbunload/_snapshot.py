"""fbunload.Snapshot: one state of a database, held open for reads that
join it later, from any thread or process."""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from fbunload import _fbunload
from fbunload._fbunload import UsageError

Unit = Tuple[int, Optional[int]]


class Snapshot:
    """A consistent snapshot of a database, held open until :meth:`close`
    (or the end of a ``with`` block, or garbage collection), for reads that
    join it later: what :func:`fbunload.dask.read_table` reads at.

    A main attachment takes a read-only snapshot and plans ``tables`` (a
    SQL SIMILAR TO pattern; all user tables if None). Every read at the
    snapshot opens an attachment of its own that joins it by number
    (Firebird 4+), in this process or another, at any time while it is
    open: all see the same rows, whatever is committed meanwhile. Reads
    that start after :meth:`close` raise :class:`fbunload.SnapshotClosed`;
    so do reads in other processes once this process has ended.

    Firebird 3 cannot share a snapshot between attachments: there opening
    one raises :class:`fbunload.UsageError`, unless
    ``allow_inconsistent=True``, and then every read sees a snapshot of
    its own (a table split into partitions is then not consistent).

    Other arguments as for :func:`fbunload.read_arrow`; ``parallel`` sizes
    the plan's units (about 8 per worker). A snapshot keeps its user and
    password to give them to the reads that join it.

    ``query=(sql, split_by)`` plans one SELECT instead of tables, as
    :func:`fbunload.read_sql` reads it: its one table is ``QUERY``, cut into
    the units of ``split_by`` (one unit if None).

    ::

        with fbunload.Snapshot("shop.fdb", tables="ORDERS|LINES") as snap:
            orders = fbunload.dask.read_table(snap, "ORDERS")
            lines = snap.read_arrow("LINES")
            ...  # compute here, before the snapshot closes
    """

    def __init__(
        self,
        database: str,
        *,
        tables: Optional[str] = None,
        exclude: Optional[str] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
        role: Optional[str] = None,
        charset: str = "UTF8",
        parallel: Optional[int] = None,
        client_lib: Optional[str] = None,
        decimal256: bool = False,
        allow_inconsistent: bool = False,
        query: Optional[Tuple[str, Optional[str]]] = None,
    ) -> None:
        self.database = database
        if query is not None and tables is not None:
            raise UsageError("Snapshot: give tables or query, not both")
        self._query = None if query is None else (query[0], query[1])
        self._held = _fbunload.hold(
            database,
            tables=tables,
            exclude=exclude,
            user=user,
            password=password,
            role=role,
            charset=charset,
            parallel=parallel,
            client_lib=client_lib,
            decimal256=decimal256,
            allow_inconsistent=allow_inconsistent,
            query=None if query is None else ("QUERY", query[0], query[1]),
        )
        # Unset user and password stay unset: every process that joins
        # reads its own ISC_USER and ISC_PASSWORD.
        self._join = dict(
            database=database,
            user=user,
            password=password,
            role=role,
            charset=charset,
            client_lib=client_lib,
            decimal256=decimal256,
            ticket=self._held.ticket(),
        )
        # Distinct for every snapshot, where the server gives no number.
        self._token = uuid.uuid4().hex

    @property
    def number(self) -> Optional[int]:
        """The snapshot number; None on Firebird 3."""
        return self._held.number

    @property
    def tables(self) -> List[str]:
        """The tables planned in it."""
        return self._held.table_names()

    @property
    def server_version(self) -> str:
        return self._held.server_version

    @property
    def closed(self) -> bool:
        return self._held.closed

    def schema(self, table: str) -> pa.Schema:
        """The pyarrow schema of ``table``."""
        return self._held.schema(self._index(table))

    def units(self, table: str, shares: Optional[int] = None) -> List[Unit]:
        """``table`` cut into at most ``shares`` units (by default as many
        as the plan has) of about equal pages, over the pages its rows
        occupy, as ``(first_slot, end_slot)`` ranges of data pages in
        DB_KEY order. A table on one pointer page stays one unit."""
        if shares is not None and shares < 1:
            raise UsageError("shares must be at least 1")
        return self._held.units(self._index(table), shares)

    def read_units(
        self, table: str, units: Sequence[Unit], *, columns: Optional[Sequence[str]] = None
    ) -> pa.Table:
        """``units`` of ``table`` (from :meth:`units`) as one
        ``pyarrow.Table``, read in order by one new attachment that joins
        the snapshot."""
        self._index(table)
        self._held.check_open()
        return read_units(self._join, table, units, columns, self._query)

    def read_arrow(self, table: str, *, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """The whole of ``table`` at this snapshot, as a ``pyarrow.Table``
        read by one attachment."""
        return self.read_units(table, self.units(table), columns=columns)

    def read_pandas(self, table: str, *, columns: Optional[Sequence[str]] = None):
        """The whole of ``table`` at this snapshot, as a
        ``pandas.DataFrame`` (needs pandas)."""
        return self.read_arrow(table, columns=columns).to_pandas()

    def close(self) -> None:
        """Ends the snapshot; reads that start afterwards fail."""
        self._held.close()

    def __enter__(self) -> "Snapshot":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self):
        raise TypeError(
            "a fbunload.Snapshot stays in the process that opened it; tasks in other "
            "processes join it through fbunload.dask.read_table"
        )

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<fbunload.Snapshot {self.number} of {self.database} ({state})>"

    def _index(self, table: str) -> int:
        names = self.tables
        if table not in names:
            raise UsageError(
                f"table {table!r} is not in this snapshot; its tables are "
                f"{', '.join(names)} (names are case-sensitive)"
            )
        return names.index(table)


def read_units(
    join: Dict[str, Any],
    table: str,
    units: Sequence[Unit],
    columns: Optional[Sequence[str]],
    query: Optional[Tuple[str, Optional[str]]] = None,
) -> pa.Table:
    """``units`` of ``table`` read by a new attachment that joins the
    snapshot ``join`` describes (:attr:`Snapshot._join`); with ``query``
    (its SQL and the table that splits it), ``units`` of that query."""
    options = dict(join)
    database = options.pop("database")
    return _fbunload.read_units(
        database,
        table,
        [tuple(u) for u in units],
        columns=list(columns) if columns is not None else None,
        query=query,
        **options,
    )
