"""Which ways of fetching rows by DB_KEY return every row asked for
(issue 53: `--since` fetches its changed rows by key).

Makes a table of ROWS rows (5,000) in a new embedded database, reads each
row's DB_KEY, and fetches every row again by key in lists: with
`RDB$DB_KEY IN (x'..', ...)` (500 and 10 keys a statement), with
`MAKE_DBKEY(relation, record)` in the list, with `OR`ed equalities, and
as fbunload does, a recursive CTE counting out a string of hex keys
joined by `RDB$DB_KEY` (1,000 a statement). Prints, for each, the rows
returned, the distinct rows, whether they came in the order asked, and
the plan. Measured with the firebird-embedded package's engine.

    python3 benches/dbkey_in_list.py [DIR]
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embedded_driver  # noqa: E402

embedded_driver.setup()
from firebird.driver import create_database  # noqa: E402

ROWS = int(os.environ.get("ROWS", "5000"))
HEX = "HEX_ENCODE(CAST(RDB$DB_KEY AS VARCHAR(8) CHARACTER SET OCTETS))"


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    path = os.path.join(work, "dbkey-in-list.fdb")
    if os.path.exists(path):
        os.remove(path)
    con = create_database(path, user="SYSDBA", password="masterkey")
    cur = con.cursor()
    cur.execute("CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, S VARCHAR(200))")
    con.commit()
    cur.execute(
        "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < %d) DO BEGIN "
        "INSERT INTO T VALUES (:I, LPAD('', 150, 'x')); I = I + 1; END END" % ROWS
    )
    con.commit()
    cur.execute("SELECT RDB$GET_CONTEXT('SYSTEM', 'ENGINE_VERSION') FROM RDB$DATABASE")
    print("engine", cur.fetchone()[0], "rows", ROWS)
    cur.execute("SELECT RDB$RELATION_ID FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = 'T'")
    relation = cur.fetchone()[0]
    cur.execute(f"SELECT {HEX} FROM T")
    keys = [r[0] for r in cur.fetchall()]

    def record(key):
        # The record number a little-endian DB_KEY holds, plus one.
        b = bytes.fromhex(key)
        return (b[3] << 32 | int.from_bytes(b[4:8], "little")) - 1

    def fetched(name, per, sql_of):
        ids, plan = [], None
        for i in range(0, len(keys), per):
            cur.execute(sql_of(keys[i : i + per]))
            plan = plan or cur.statement.plan
            ids += [r[0] for r in cur.fetchall()]
        order = "in order" if ids == sorted(ids) else "out of order"
        print(f"{name:<44} {len(ids):6d} rows {len(set(ids)):6d} distinct  {order}  {plan[:40]}")

    literals = lambda ks: ", ".join(f"x'{k}'" for k in ks)  # noqa: E731
    fetched("IN (x'..'), 500 a statement", 500,
            lambda ks: f"SELECT ID FROM T WHERE RDB$DB_KEY IN ({literals(ks)})")
    fetched("IN (x'..'), 10 a statement", 10,
            lambda ks: f"SELECT ID FROM T WHERE RDB$DB_KEY IN ({literals(ks)})")
    fetched("IN (MAKE_DBKEY(..)), 500 a statement", 500,
            lambda ks: "SELECT ID FROM T WHERE RDB$DB_KEY IN (%s)"
            % ", ".join(f"MAKE_DBKEY({relation}, {record(k)})" for k in ks))
    fetched("OR of equalities, 100 a statement", 100,
            lambda ks: "SELECT ID FROM T WHERE "
            + " OR ".join(f"RDB$DB_KEY = x'{k}'" for k in ks))
    fetched("recursive CTE joined by DB_KEY, 1,000 (fbunload)", 1000,
            lambda ks: "WITH RECURSIVE K (I) AS (SELECT 0 FROM RDB$DATABASE UNION ALL "
            f"SELECT I + 1 FROM K WHERE I < {len(ks) - 1}) SELECT T.ID FROM K JOIN T ON "
            f"T.RDB$DB_KEY = HEX_DECODE(SUBSTRING('{''.join(ks)}' FROM K.I * 16 + 1 FOR 16))")
    con.close()
    os.remove(path)


if __name__ == "__main__":
    main()
