"""fbunload as an ADBC driver: DB-API connections for pandas, polars and any
tool that takes an ADBC connection (needs ``adbc-driver-manager``: ``pip
install adbc-driver-manager``, or ``pip install '.[adbc]'`` from a checkout).

::

    import fbunload.adbc
    import pandas, polars

    with fbunload.adbc.connect("shop.fdb", user="SYSDBA", password="...") as conn:
        orders = pandas.read_sql("SELECT * FROM ORDERS", conn)
        lines = polars.read_database("SELECT * FROM ORDER_LINE", conn)

Every statement runs at a read-only snapshot of its own. ``SELECT * FROM
T`` of a table reads it as :func:`fbunload.read_arrow` does, its units in
parallel; any other SELECT as :func:`fbunload.read_sql` does. A statement
that would change data is refused (``ProgrammingError``). One row of
parameters fills the ``?`` markers of a SELECT (``cursor.execute(sql, (7,
"x"))``), written into its text as exact SQL literals.

**Partitions.** ``cursor.adbc_execute_partitions("SELECT * FROM T")``
holds a snapshot and returns the table's partitions (bytes): any process
with fbunload installed reads one with ``cursor.adbc_read_partition(p)``
on a connection of its own to the same database, at that snapshot, until
the cursor that executed runs another statement or is closed. With the
embedded engine (a path) only one process can open the database, so
readers in other processes need a server (``host:path``).

**The driver.** The wheel ships one library, the Python extension
``fbunload._fbunload``, and it is the driver too: it exports ADBC's entry
points (``AdbcDriverFbunloadInit``), so :func:`driver_path` is what other
ADBC driver managers (R, Go, Java, DuckDB) load as well.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

try:
    import adbc_driver_manager.dbapi as _dbapi
except ImportError as missing:
    raise ImportError(
        f"fbunload.adbc needs the ADBC driver manager ({missing}): pip install adbc-driver-manager"
    ) from missing

from fbunload import _fbunload

__all__ = ["connect", "driver_path", "ENTRYPOINT"]

#: The driver's own entry point (``AdbcDriverInit`` works too).
ENTRYPOINT = "AdbcDriverFbunloadInit"


def driver_path() -> str:
    """The path of the driver's shared library (this package's extension)."""
    return os.path.abspath(_fbunload.__file__)


def connect(
    database: str,
    *,
    user: Optional[str] = None,
    password: Optional[str] = None,
    role: Optional[str] = None,
    charset: str = "UTF8",
    parallel: Optional[int] = None,
    client_lib: Optional[str] = None,
    decimal256: bool = False,
    autocommit: bool = True,
) -> "_dbapi.Connection":
    """An ``adbc_driver_manager.dbapi`` connection to ``database`` through
    the fbunload driver.

    ``database`` is a path (the embedded engine), ``host:path`` or
    ``inet://host:port/path``; ``user`` and ``password`` default to
    ``ISC_USER`` and ``ISC_PASSWORD``; ``parallel`` is the number of worker
    attachments of each table read (the number of cores by default);
    others as for :func:`fbunload.read_arrow`. The driver never writes, so
    ``autocommit`` changes nothing but DB-API's bookkeeping."""
    if parallel is not None and parallel < 1:
        raise _fbunload.UsageError("parallel must be at least 1")
    options: Dict[str, Any] = {"uri": database, "adbc.fbunload.charset": charset}
    if user is not None:
        options["username"] = user
    if password is not None:
        options["password"] = password
    if role is not None:
        options["adbc.fbunload.role"] = role
    if parallel is not None:
        options["adbc.fbunload.parallel"] = str(parallel)
    if client_lib is not None:
        options["adbc.fbunload.client_library"] = str(client_lib)
    if decimal256:
        options["adbc.fbunload.decimal256"] = "true"
    return _dbapi.connect(
        driver=driver_path(),
        entrypoint=ENTRYPOINT,
        db_kwargs=options,
        autocommit=autocommit,
    )
