"""Run by test_follow.py in a child Python whose FIREBIRD is a copy of the
embedded runtime in SuperClassic mode with a ``replication.conf`` that
journals DATA/j.fdb (one engine a process reads its configuration once).
Checks ``fbunload.follow`` against the real journal; prints one JSON line.

    python follow_journal.py DATA [PG_URI]
"""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import fbunload  # noqa: E402
from conftest import PASSWORD, USER, connection, make_database  # noqa: E402

AUTH = {"user": USER, "password": PASSWORD}


def run(con, *statements, commit=True):
    for sql in statements:
        con.execute_immediate(sql)
    if commit:
        con.commit()
    else:
        con.rollback()


def rows(db):
    with connection(db) as con:
        cur = con.cursor()
        cur.execute("SELECT ID, V, B FROM T ORDER BY ID")
        return [[i, v, None if b is None else bytes(b).hex()] for i, v, b in cur.fetchall()]


def main(data, pg_uri=None):
    data = pathlib.Path(data)
    db = make_database(
        data / "j.fdb",
        [
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(20), "
            "B BLOB SUB_TYPE BINARY)",
            "ALTER DATABASE ENABLE PUBLICATION",
            "ALTER DATABASE INCLUDE ALL TO PUBLICATION",
        ],
    )
    journal = dict(journal=str(data / "archive"), journal_live=str(data / "journal"))
    con = connection(db)
    run(con, "INSERT INTO T VALUES (1, 'one', x'0102')", "INSERT INTO T VALUES (2, 'two', NULL)")
    run(con, "INSERT INTO T VALUES (3, 'never', NULL)", commit=False)
    run(con, "UPDATE T SET V = 'uno' WHERE ID = 1", "DELETE FROM T WHERE ID = 2")

    # The change stream: committed work only, in commit order.
    events = [e for e in fbunload.follow(db, until_idle=2, **journal, **AUTH)
              if e["op"] in ("insert", "update", "delete")]
    ops = [(e["op"], e["table"], e["key"]["ID"]) for e in events]
    assert ops == [("insert", "T", 1), ("insert", "T", 2), ("update", "T", 1),
                   ("delete", "T", 2)], ops
    assert events[0]["after"] == {"ID": 1, "V": "one", "B": "AQI="}, events[0]
    # Resumed after the first transaction's last event: the rest, once.
    again = [e for e in fbunload.follow(db, until_idle=2, from_=events[1]["resume"],
                                        **journal, **AUTH)
             if e["op"] in ("insert", "update", "delete")]
    assert again == events[2:], again
    # Closed early: the follow stops, nothing hangs.
    stream = fbunload.follow(db, **journal, **AUTH)
    first = next(stream)
    stream.close()
    assert first["transaction"] == events[0]["transaction"] or first["op"] == "sql", first
    try:
        fbunload.follow(db, since=str(data / "x"), **journal, **AUTH)
        raise AssertionError("since= with the change stream was taken")
    except fbunload.UsageError as e:
        assert "since" in str(e), e

    # Change sets after a keep_keys=True, journal= run, applied in order.
    fbunload.unload(db, data / "base", format="parquet", keep_keys=True,
                    journal=journal["journal"], **AUTH)
    run(con, "INSERT INTO T VALUES (4, 'four', x'ff')", "UPDATE T SET ID = 10 WHERE ID = 1")
    run(con, "DELETE FROM T WHERE ID = 4", "INSERT INTO T VALUES (5, 'five', NULL)")
    done = fbunload.follow(db, output=str(data / "chain"), since=str(data / "base"), every=30,
                           until_idle=2, **journal, **AUTH)
    assert done["transactions"] == 2, done
    links = sorted((data / "chain").iterdir())
    assert [p.name for p in links] == ["00000001"], links
    state = fbunload.apply(data / "base", links[0])["T"].sort_by("ID").to_pylist()
    assert [[r["ID"], r["V"], None if r["B"] is None else r["B"].hex()] for r in state] \
        == rows(db), state

    # Refused in Python's words: every=, not --every.
    try:
        fbunload.follow(db, output=str(data / "chain2"), since=str(data / "base"), until_idle=1,
                        **journal, **AUTH)
        raise AssertionError("change sets without every= were taken")
    except fbunload.UsageError as e:
        assert "give every" in str(e) and "--" not in str(e), e

    applied = None
    if pg_uri:
        fbunload.unload(db, pg_uri, pg_schema="live", keep_keys=True,
                        journal=journal["journal"], **AUTH)
        run(con, "UPDATE T SET V = 'ten', B = x'0a' WHERE ID = 10", "INSERT INTO T VALUES (6, "
            "'six', NULL)")
        applied = fbunload.follow(db, output=pg_uri, pg_schema="live", until_idle=2,
                                  **journal, **AUTH)
        assert applied["transactions"] == 1 and applied["changes"] == 2, applied
    con.close()
    print(json.dumps({"events": len(events), "postgres": applied, "expected": rows(db)}))


if __name__ == "__main__":
    main(*sys.argv[1:])
