"""Run by test_adbc.py in a child Python whose FIREBIRD points at a copy of
the embedded runtime set to ServerMode = SuperClassic, where several
processes may open one database file.

    python adbc_partitions.py hold DATABASE_DIR
        makes the bank, starts a writer moving money, executes partitions
        of ACCOUNTS through fbunload.adbc, has two reader processes read
        them (half each, joining late), checks the books and compares with
        its own read of the partitions at the end; prints one JSON line.

    python adbc_partitions.py hold-on-server DSN
        the same with the bank at DSN on a server (password in
        ISC_PASSWORD), where processes need no SuperClassic engine.

    python adbc_partitions.py read DATABASE OUT.arrow HEX...
        reads the partitions given (hex) on a connection of its own and
        writes them as one Arrow IPC file; prints its process id.
"""

import json
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pyarrow as pa  # noqa: E402

import fbunload.adbc  # noqa: E402

AUTH = dict(user="SYSDBA", password=os.environ.get("ISC_PASSWORD", "masterkey"))


def read_partitions(conn, partitions):
    pieces = []
    for partition in partitions:
        with conn.cursor() as cur:
            cur.adbc_read_partition(partition)
            pieces.append(cur.fetch_arrow_table())
    return pa.concat_tables(pieces)


def read(database, out, hex_partitions):
    with fbunload.adbc.connect(database, **AUTH) as conn:
        table = read_partitions(conn, [bytes.fromhex(h) for h in hex_partitions])
    with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    print(os.getpid())


def hold(directory, bank=None):
    import test_dask
    from test_dask import ACCOUNTS, MoneyMover

    if bank is None:
        bank = test_dask.bank.__wrapped__(pathlib.Path(directory))
    else:
        from conftest import make_database

        make_database(bank, test_dask.BANK, page_size=4096, password=AUTH["password"])
    with MoneyMover(bank, AUTH["password"]) as mover, fbunload.adbc.connect(bank, **AUTH) as conn:
        with conn.cursor() as cur:
            cur.adbc_statement.set_options(**{"adbc.fbunload.partitions": "4"})
            partitions, _schema = cur.adbc_execute_partitions("SELECT * FROM ACCOUNTS")
            assert len(partitions) == 4, len(partitions)
            at_snapshot = mover.committed
            readers, outputs = [], []
            for i, half in enumerate([partitions[:2], partitions[2:]]):
                # Each reader joins after more transfers have committed.
                mover.wait_for(10)
                out = os.path.join(directory, f"part{i}.arrow")
                outputs.append(out)
                readers.append(
                    subprocess.run(
                        [sys.executable, __file__, "read", bank, out] + [p.hex() for p in half],
                        capture_output=True,
                        text=True,
                        timeout=120,
                        check=True,
                    ).stdout.split()[-1]
                )
            pieces = pa.concat_tables([pa.ipc.open_file(o).read_all() for o in outputs])
            mover.wait_for(10)
            own = read_partitions(conn, partitions)
            meanwhile = mover.committed - at_snapshot
    balances = pieces.column("BALANCE").to_pylist()
    assert sum(balances) == ACCOUNTS * 1000, "partitions from different moments"
    assert pieces.equals(own), "the readers' partitions differ from the holder's read"
    print(
        json.dumps(
            {
                "holder": os.getpid(),
                "readers": [int(pid) for pid in readers],
                "rows": pieces.num_rows,
                "accounts": ACCOUNTS,
                "transfers_meanwhile": meanwhile,
            }
        )
    )


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(sys.argv[2])
    elif sys.argv[1] == "hold-on-server":
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            hold(scratch, bank=sys.argv[2])
    else:
        read(sys.argv[2], sys.argv[3], sys.argv[4:])
