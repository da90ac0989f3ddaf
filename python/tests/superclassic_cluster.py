"""Run by test_dask.py in a child Python whose FIREBIRD points at a copy of
the embedded runtime set to ServerMode = SuperClassic: there, unlike the
default SuperServer, several processes may open one database file, so a
LocalCluster of worker *processes* reads partitions through attachments of
their own, joining the snapshot this process holds. Prints one JSON line.

    python superclassic_cluster.py DATABASE_DIR
"""

import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import distributed  # noqa: E402
import pandas as pd  # noqa: E402

import fbunload  # noqa: E402
import fbunload.dask  # noqa: E402
from test_dask import AUTH, MoneyMover, books_read_late, in_order  # noqa: E402
import test_dask  # noqa: E402


def main(directory):
    bank = test_dask.bank.__wrapped__(pathlib.Path(directory))
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        with MoneyMover(bank) as mover, fbunload.Snapshot(
            bank, tables="ACCOUNTS|LEDGER", **AUTH
        ) as snap:
            _, one_by_one = books_read_late(snap, mover)
            reference = snap.read_pandas("ACCOUNTS", columns=["ID", "BALANCE"])
            pd.testing.assert_frame_equal(in_order(one_by_one), reference)
            workers = set(client.run(os.getpid).values())
    print(json.dumps({"client": os.getpid(), "workers": sorted(workers),
                      "rows": len(one_by_one)}))


if __name__ == "__main__":
    main(sys.argv[1])
