"""Incremental unloads from Python: ``unload(..., since=...)`` and
``apply``, against a full read of the database as it is now."""

import pyarrow as pa

import fbunload
from conftest import PASSWORD, USER, connection, make_database


def sorted_rows(table: pa.Table):
    return sorted(tuple(row.values()) for row in table.to_pylist())


def test_a_change_set_applied_is_the_table_as_it_is_now(tmp_path):
    db = make_database(
        tmp_path / "inc.fdb",
        [
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(20), N NUMERIC(9,2))",
            "CREATE TABLE L (X INTEGER)",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 1000) DO BEGIN "
            "INSERT INTO T VALUES (:I, 'v' || :I, :I / 4.0); INSERT INTO L VALUES (:I); "
            "I = I + 1; END END",
        ],
    )
    creds = dict(user=USER, password=PASSWORD, parallel=2, format="parquet")
    fbunload.unload(db, tmp_path / "base", keep_keys=True, **creds)
    con = connection(db)
    con.execute_immediate("UPDATE T SET V = 'changed' WHERE MOD(ID, 50) = 0")
    con.execute_immediate("UPDATE T SET ID = ID + 5000 WHERE MOD(ID, 77) = 0")
    con.execute_immediate("DELETE FROM T WHERE MOD(ID, 91) = 0")
    con.execute_immediate("INSERT INTO T VALUES (99999, 'new', 1.5)")
    con.execute_immediate("DELETE FROM L WHERE X < 10")
    con.commit()
    con.close()
    summary = fbunload.unload(db, tmp_path / "changes", since=tmp_path / "base", **creds)
    # The upserts: a superset of the changed rows (here, in a new
    # database, the oldest interesting transaction may still be older
    # than the rows' own; tests/incremental.rs checks they are few).
    rows = {t["name"]: t["rows"] for t in summary["tables"]}
    assert 0 < rows["T"] <= 1000, rows
    applied = fbunload.apply(tmp_path / "base", tmp_path / "changes")
    now = fbunload.read_tables(db, user=USER, password=PASSWORD)
    assert sorted(applied) == sorted(now) == ["L", "T"]
    for name in now:
        assert sorted_rows(applied[name]) == sorted_rows(now[name]), name
