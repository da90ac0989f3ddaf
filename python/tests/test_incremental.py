"""Incremental unloads from Python: ``unload(..., since=...)`` and
``apply``, against a full read of the database as it is now."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

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


def test_apply_keeps_an_empty_tables_columns_and_refuses_a_change_set_as_old(tmp_path):
    """issue 41, 1 from Python: a table empty before and after keeps its
    columns (and their field metadata); a change set given as the old run
    is refused, not applied as if it held every row."""
    db = make_database(
        tmp_path / "a.fdb",
        [
            "CREATE TABLE E (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(10))",
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(10))",
            "INSERT INTO T VALUES (1, 'a')",
            "INSERT INTO T VALUES (2, 'b')",
        ],
    )
    creds = dict(user=USER, password=PASSWORD, format="parquet")
    fbunload.unload(db, tmp_path / "c0", keep_keys=True, **creds)
    con = connection(db)
    con.execute_immediate("UPDATE T SET V = 'B' WHERE ID = 2")
    con.commit()
    fbunload.unload(db, tmp_path / "c1", since=tmp_path / "c0", **creds)
    con.execute_immediate("UPDATE T SET V = 'A' WHERE ID = 1")
    con.commit()
    con.close()
    fbunload.unload(db, tmp_path / "c2", since=tmp_path / "c1", **creds)

    applied = fbunload.apply(tmp_path / "c0", tmp_path / "c1")
    base = pq.read_schema(tmp_path / "c0" / "E.parquet")
    assert applied["E"].schema.names == ["ID", "V"]
    for name in ["ID", "V"]:
        assert applied["E"].schema.field(name).metadata == base.field(name).metadata
    assert sorted_rows(applied["T"]) == [(1, "a"), (2, "B")]

    with pytest.raises(fbunload.UsageError, match="is a change set; apply it to its base's state first"):
        fbunload.apply(tmp_path / "c1", tmp_path / "c2")


def test_incremental_errors_speak_pythons_words(tmp_path):
    """issue 45, 15: a keyword's error names the keyword, not the flag."""
    db = make_database(
        tmp_path / "w.fdb", ["CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY)"]
    )
    creds = dict(user=USER, password=PASSWORD)
    fbunload.unload(db, tmp_path / "base", keep_keys=True, **creds)
    with pytest.raises(fbunload.UsageError) as refused:
        fbunload.unload(db, tmp_path / "x", since=tmp_path / "base", where="ID > 1", **creds)
    message = str(refused.value)
    assert "since" in message and "--" not in message, message
    with pytest.raises(fbunload.UsageError) as refused:
        fbunload.unload(db, tmp_path / "y", keep_keys=True, where="ID > 1", **creds)
    message = str(refused.value)
    assert "keep_keys=True" in message and "--" not in message, message
    with pytest.raises(fbunload.UsageError) as refused:
        fbunload.unload(db, tmp_path / "z", since=tmp_path / "nothing", **creds)
    message = str(refused.value)
    assert message.startswith("since=") and "--" not in message, message
