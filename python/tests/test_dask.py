"""fbunload.dask on the real embedded engine (threads and an in-process
distributed cluster), and on the Firebird 3 server (worker processes)."""

import gc
import os
import pickle
import threading
import time

import pandas as pd
import pyarrow as pa
import pytest
from pandas.testing import assert_frame_equal

import fbunload
import fbunload.dask
from conftest import PASSWORD, USER, connection, fb5_server, make_database

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

AUTH = dict(user=USER, password=PASSWORD)


def in_order(frame):
    """A computed Dask DataFrame with read_pandas's index: partitions
    number their rows from 0 each."""
    return frame.reset_index(drop=True)


@pytest.fixture
def local_cluster():
    """Workers are threads of this process: the embedded engine opens a
    database in one process only."""
    with distributed.LocalCluster(
        processes=False, n_workers=2, threads_per_worker=2, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        yield client


def test_compute_equals_read_pandas_for_every_type(types_db):
    with fbunload.Snapshot(types_db, **AUTH) as snap:
        frame = fbunload.dask.read_table(snap, "T").compute(scheduler="threads")
        at_snapshot = snap.read_pandas("T")
    assert_frame_equal(in_order(frame), at_snapshot)
    assert_frame_equal(in_order(frame), fbunload.read_pandas(types_db, "T", **AUTH))


@pytest.mark.parametrize("npartitions", [1, 3, 7])
def test_npartitions_are_honoured_and_in_db_key_order(big_db, npartitions):
    ddf = fbunload.dask.read_table(big_db, "WIDE", npartitions=npartitions, **AUTH)
    assert ddf.npartitions == npartitions
    parts = [ddf.partitions[i]["ID"].compute(scheduler="threads") for i in range(npartitions)]
    for earlier, later in zip(parts, parts[1:]):
        assert len(earlier) and earlier.max() < later.min()
    frame = ddf.compute(scheduler="threads")
    expected = fbunload.read_pandas(big_db, "WIDE", **AUTH)
    assert_frame_equal(in_order(frame), expected)
    assert frame["ID"].tolist() == list(range(200000))


def test_by_default_a_partition_per_unit_of_the_plan(big_db):
    planned = fbunload.plan(big_db, parallel=2, **AUTH)
    units = next(t["units"] for t in planned["tables"] if t["name"] == "WIDE")
    with fbunload.Snapshot(big_db, parallel=2, **AUTH) as snap:
        ddf = fbunload.dask.read_table(snap, "WIDE")
        assert ddf.npartitions == units > 1
        # A table on one pointer page stays whole.
        assert fbunload.dask.read_table(snap, "SMALL", npartitions=4).npartitions == 1


def test_columns_are_read_and_selections_pushed_down(big_db):
    ddf = fbunload.dask.read_table(big_db, "WIDE", columns=["N", "ID"], npartitions=2, **AUTH)
    assert list(ddf.columns) == ["N", "ID"]
    expected = fbunload.read_pandas(big_db, "WIDE", columns=["N", "ID"], **AUTH)
    assert_frame_equal(in_order(ddf.compute(scheduler="threads")), expected)
    assert ddf["ID"].sum().compute(scheduler="threads") == sum(range(200000))


def test_an_in_process_distributed_cluster(big_db, local_cluster):
    with fbunload.Snapshot(big_db, **AUTH) as snap:
        ddf = fbunload.dask.read_table(snap, "WIDE", npartitions=4)
        frame = ddf.compute()
        assert_frame_equal(in_order(frame), snap.read_pandas("WIDE"))
        assert ddf["N"].count().compute() == 200000


ACCOUNTS = 12000


BANK = [
    "CREATE TABLE ACCOUNTS (ID INTEGER NOT NULL PRIMARY KEY, BALANCE BIGINT, PAD VARCHAR(800))",
    "CREATE TABLE LEDGER (FROM_ID INTEGER, TO_ID INTEGER, AMOUNT BIGINT)",
    f"EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {ACCOUNTS}) DO BEGIN "
    "INSERT INTO ACCOUNTS VALUES (:I, 1000, LPAD('', 800, 'abcdefghij' || :I)); "
    "I = I + 1; END END",
]


@pytest.fixture
def bank(tmp_path):
    """ACCOUNTS over several pointer pages (4 KiB pages, rows padded with
    text that does not compress), and a LEDGER of every transfer."""
    return make_database(tmp_path / "bank.fdb", BANK, page_size=4096)


class MoneyMover:
    """Moves money between accounts, one committed transfer at a time, on
    a connection of its own, until stopped."""

    def __init__(self, database, password=PASSWORD):
        self.database = database
        self.password = password
        self.committed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self):
        con = connection(self.database, self.password)
        n = 0
        while not self._stop.is_set():
            n += 1
            a, b, amount = (n * 7919) % ACCOUNTS, (n * 104729) % ACCOUNTS, n % 97 + 1
            con.execute_immediate(
                "EXECUTE BLOCK AS BEGIN "
                f"UPDATE ACCOUNTS SET BALANCE = BALANCE - {amount} WHERE ID = {a}; "
                f"UPDATE ACCOUNTS SET BALANCE = BALANCE + {amount} WHERE ID = {b}; "
                f"INSERT INTO LEDGER VALUES ({a}, {b}, {amount}); END"
            )
            con.commit()
            self.committed += 1
        con.close()

    def wait_for(self, transfers):
        """Returns once `transfers` more have committed."""
        target = self.committed + transfers
        while self.committed < target:
            time.sleep(0.005)

    def __enter__(self):
        self._thread.start()
        self.wait_for(20)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def check_books(accounts, ledger):
    """The total is what it was at the start, and every balance is what
    the ledger moved: partitions and tables from one moment."""
    assert len(accounts) == ACCOUNTS
    assert accounts["BALANCE"].sum() == ACCOUNTS * 1000, "partitions from different moments"
    balance = [1000] * ACCOUNTS
    for a, b, amount in zip(ledger["FROM_ID"], ledger["TO_ID"], ledger["AMOUNT"]):
        balance[a] -= amount
        balance[b] += amount
    assert accounts["BALANCE"].tolist() == [balance[i] for i in accounts["ID"]], (
        "ACCOUNTS and LEDGER from different moments"
    )


def books_read_late(snap, mover, **compute):
    """ACCOUNTS in 4 partitions, each joining the snapshot after more
    transfers, and LEDGER: checks that the books balance, and returns the
    ACCOUNTS DataFrame and its partitions' rows together."""
    accounts = fbunload.dask.read_table(snap, "ACCOUNTS", columns=["ID", "BALANCE"], npartitions=4)
    ledger = fbunload.dask.read_table(snap, "LEDGER")
    assert accounts.npartitions == 4
    at_snapshot = mover.committed
    parts = []
    for i in range(accounts.npartitions):
        mover.wait_for(5)
        parts.append(accounts.partitions[i].compute(**compute))
    one_by_one = pd.concat(parts)
    check_books(one_by_one, ledger.compute(**compute))
    assert mover.committed > at_snapshot + 20
    return accounts, one_by_one


def test_partitions_read_one_snapshot_while_a_writer_moves_money(bank, local_cluster):
    with MoneyMover(bank) as mover:
        for scheduler in ["threads", "distributed"]:
            compute = dict(scheduler="threads") if scheduler == "threads" else {}
            with fbunload.Snapshot(bank, tables="ACCOUNTS|LEDGER", **AUTH) as snap:
                accounts, one_by_one = books_read_late(snap, mover, **compute)
                # All at once, and the snapshot's own read: the same rows.
                together = accounts.compute(**compute)
                assert_frame_equal(in_order(together), in_order(one_by_one))
                assert_frame_equal(
                    in_order(together), snap.read_pandas("ACCOUNTS", columns=["ID", "BALANCE"])
                )


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda db, snap: fbunload.dask.read_table(db, "NOPE", **AUTH), "NOPE is not the name of a table"),
        (lambda db, snap: fbunload.dask.read_table(snap, "NOPE"), "not in this snapshot"),
        (lambda db, snap: fbunload.dask.read_table(snap, "WIDE", columns=["X"]), "no column 'X'"),
        (lambda db, snap: fbunload.dask.read_table(snap, "WIDE", npartitions=0), "at least 1"),
        (lambda db, snap: fbunload.dask.read_table(snap, "WIDE", **AUTH), "come from the Snapshot"),
    ],
)
def test_bad_inputs_raise_usage_errors(big_db, call, words):
    with fbunload.Snapshot(big_db, **AUTH) as snap:
        with pytest.raises(fbunload.UsageError) as caught:
            call(big_db, snap)
    assert words in str(caught.value) and PASSWORD not in str(caught.value)


def test_a_snapshot_of_a_split_query(big_db):
    """What fbunload.spark reads a query or a table's chosen columns and
    rows with: the query's units are its driving table's."""
    query = "SELECT ID, N FROM WIDE WHERE MOD(ID, 7) = 0"
    with fbunload.Snapshot(big_db, query=(query, "WIDE"), **AUTH) as snap:
        assert snap.tables == ["QUERY"]
        units = snap.units("QUERY", 3)
        assert len(units) == 3 and units[-1][1] is None
        parts = [snap.read_units("QUERY", [unit]) for unit in units]
        whole = snap.read_arrow("QUERY")
    expected = fbunload.read_sql(big_db, query, split_by="WIDE", **AUTH)
    assert whole.equals(expected)
    assert pa.concat_tables(parts).equals(expected)
    with pytest.raises(fbunload.UsageError, match="not both"):
        fbunload.Snapshot(big_db, tables="WIDE", query=(query, "WIDE"), **AUTH)


def test_a_closed_snapshot_cannot_be_computed(big_db):
    with fbunload.Snapshot(big_db, **AUTH) as snap:
        ddf = fbunload.dask.read_table(snap, "WIDE", npartitions=2)
        # As a graph sent to another process sees it: no Snapshot object.
        shipped = pickle.loads(pickle.dumps(ddf))
        assert len(shipped.compute(scheduler="threads")) == 200000
    for graph in [ddf, shipped]:
        with pytest.raises(fbunload.SnapshotClosed, match=f"snapshot {snap.number} is closed"):
            graph.compute(scheduler="threads")
    with pytest.raises(fbunload.SnapshotClosed):
        snap.read_arrow("SMALL")


def user_attachments(database):
    con = connection(database)
    cur = con.cursor()
    cur.execute(
        "SELECT COUNT(*) FROM MON$ATTACHMENTS "
        "WHERE MON$SYSTEM_FLAG = 0 AND MON$ATTACHMENT_ID <> CURRENT_CONNECTION"
    )
    (count,) = cur.fetchone()
    con.close()
    return count


def test_a_dataframe_holds_its_own_snapshot_until_it_is_gone(big_db):
    before = user_attachments(big_db)
    ddf = fbunload.dask.read_table(big_db, "SMALL", **AUTH)
    # Its own, and the pin this process holds on the database.
    assert user_attachments(big_db) == before + 2
    assert ddf.compute(scheduler="threads")["ID"].tolist() == [42]
    total = ddf["ID"].sum()
    del ddf
    gc.collect()
    # Something built from it still holds it.
    assert total.compute(scheduler="threads") == 42
    del total
    gc.collect()
    assert user_attachments(big_db) == before


def fb3_server():
    """The Firebird 3 server scripts/test.sh starts, as (address, dir,
    password)."""
    names = ["FBUNLOAD_TEST_SERVER", "FBUNLOAD_TEST_SERVER_DIR", "FBUNLOAD_TEST_SERVER_PASSWORD"]
    values = [os.environ.get(name) for name in names]
    if None in values:
        if os.environ.get("FBUNLOAD_SKIP_SERVER_TESTS") == "1":
            pytest.skip("FBUNLOAD_SKIP_SERVER_TESTS=1")
        pytest.fail('no test server: run `eval "$(scripts/fb3-server.sh)"` first')
    return values


@pytest.fixture
def fb3_database():
    from firebird.driver import create_database

    address, directory, password = fb3_server()
    dsn = f"{address}:{directory}/dask-{os.getpid()}.fdb"
    con = create_database(dsn, user=USER, password=password, charset="UTF8", overwrite=True)
    for sql in [
        "CREATE TABLE T (ID INTEGER, NAME VARCHAR(20))",
        "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 5000) DO BEGIN "
        "INSERT INTO T VALUES (:I, 'name ' || :I); I = I + 1; END END",
    ]:
        con.execute_immediate(sql)
        con.commit()
    con.close()
    yield dsn, password
    from firebird.driver import connect

    connect(dsn, user=USER, password=password).drop_database()


def test_firebird_3_needs_inconsistent_reads_allowed_and_runs_in_worker_processes(fb3_database):
    dsn, password = fb3_database
    auth = dict(user=USER, password=password)
    with pytest.raises(fbunload.UsageError) as caught:
        fbunload.dask.read_table(dsn, "T", **auth)
    message = str(caught.value)
    assert "cannot share a snapshot" in message and "\n" not in message
    ddf = fbunload.dask.read_table(dsn, "T", allow_inconsistent=True, **auth)
    assert ddf.npartitions == 1
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster):
        frame = ddf.compute()
    assert_frame_equal(in_order(frame), fbunload.read_pandas(dsn, "T", **auth))


def test_worker_processes_on_a_file_with_the_runtime_as_installed_say_what_to_do(big_db):
    """The installed engine (SuperServer) opens a file in one process:
    a worker process's read says how to compute instead."""
    ddf = fbunload.dask.read_table(big_db, "SMALL", **AUTH)
    with distributed.LocalCluster(
        processes=True, n_workers=1, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster):
        with pytest.raises(fbunload.DatabaseError) as caught:
            ddf.compute()
    message = str(caught.value)
    assert "table SMALL: a Dask worker process cannot open the database file" in message, message
    assert "processes=False" in message and "SuperClassic" in message and "\n" not in message


def test_worker_processes_join_one_snapshot_on_a_superclassic_engine(tmp_path):
    """The multi-process cluster the embedded engine allows: a copy of its
    runtime in SuperClassic mode, where processes share a database file.
    Partitions are computed in two worker processes while a writer moves
    money; the books balance and equal the snapshot's own read."""
    from conftest import run_superclassic

    report = run_superclassic(tmp_path, "superclassic_cluster.py")
    assert report["rows"] == ACCOUNTS
    assert len(report["workers"]) == 2 and report["client"] not in report["workers"]


@pytest.fixture
def fb5_bank():
    """The bank on the Firebird 5 server scripts/fb5-server.sh starts, as
    (dsn, password); skipped where none runs."""
    address, directory, password = fb5_server()
    dsn = f"{address}:{directory}/dask-bank-{os.getpid()}.fdb"
    make_database(dsn, BANK, page_size=4096, password=password)
    yield dsn, password
    connection(dsn, password).drop_database()


def test_worker_processes_join_one_snapshot_on_a_firebird_5_server(fb5_bank):
    """The cluster most users run: worker processes, each attaching to the
    server over TCP and joining the snapshot this process holds, partition
    by partition while a writer moves money (the pin keeps late joiners
    in). The books balance, and equal the snapshot's own read."""
    dsn, password = fb5_bank
    auth = dict(user=USER, password=password)
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        with MoneyMover(dsn, password) as mover, fbunload.Snapshot(
            dsn, tables="ACCOUNTS|LEDGER", **auth
        ) as snap:
            _, one_by_one = books_read_late(snap, mover)
            reference = snap.read_pandas("ACCOUNTS", columns=["ID", "BALANCE"])
            assert_frame_equal(in_order(one_by_one), reference)
            workers = set(client.run(os.getpid).values())
    assert len(workers) == 2 and os.getpid() not in workers
