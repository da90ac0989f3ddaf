"""What the one scan of a `--since` unit costs by how many ranges it
counts apart (issue 53, docs/PERFORMANCE.md "`--since` cost, one scan").

On a table of a database (STOCK of `fbunload-gen` by default), with the
units a run of one pointer page a unit plans, runs per unit, for 64, 16
and 1 ranges a unit: the count alone as main's count entry read it (a
`COUNT(*)` of the unchanged rows per range, a subquery each), and the
one scan that replaced it with the changed rows' scan (per range the
unchanged rows counted and the changed rows' DB_KEYs listed). Prints
the CPU seconds of this process (the embedded engine's work is its) for
all units, each statement prepared, run and its row read (a BLOB
read whole). BOUND: the oldest transaction whose rows count as changed
(default: after the last one, so none did; give a run's `oldest_unseen`
after changing rows to have some listed).

    python3 benches/since_scan_shapes.py DB [TABLE] [BOUND]
"""

import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embedded_driver  # noqa: E402

embedded_driver.setup()
from firebird.driver import connect  # noqa: E402

HEX = "HEX_ENCODE(CAST(RDB$DB_KEY AS VARCHAR(8) CHARACTER SET OCTETS))"


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    db = sys.argv[1]
    table = sys.argv[2] if len(sys.argv) > 2 else "STOCK"
    con = connect(db, user="SYSDBA", password="masterkey")
    cur = con.cursor()
    cur.execute(f"SELECT RDB$RELATION_ID FROM RDB$RELATIONS WHERE RDB$RELATION_NAME = '{table}'")
    relation = cur.fetchone()[0]
    cur.execute("SELECT MON$PAGE_SIZE, CURRENT_TRANSACTION FROM MON$DATABASE")
    page_size, now = cur.fetchone()
    bound = int(sys.argv[3]) if len(sys.argv) > 3 else now + 1
    cur.execute(
        f"SELECT COUNT(*) FROM RDB$PAGES WHERE RDB$RELATION_ID = {relation} AND RDB$PAGE_TYPE = 4"
    )
    pointer_pages = cur.fetchone()[0]
    # As crates/plan's data_pages_per_pointer_page.
    per_pp = (page_size - 32) * 8 // 40 & ~7

    def db_key(slot):
        return f"MAKE_DBKEY({relation}, 0, {slot % per_pp}, {slot // per_pp})"

    def ranges(unit, n):
        first, end = unit * per_pp, (unit + 1) * per_pp
        step = -(-per_pp // n)
        for i in range(n):
            lo = min(first + i * step, end)
            hi = min(lo + step, end)
            if lo < hi:
                yield f"RDB$DB_KEY >= {db_key(lo)} AND RDB$DB_KEY < {db_key(hi)}"

    changed = f"RDB$RECORD_VERSION >= {bound}"
    unchanged = f"RDB$RECORD_VERSION < {bound}"

    def count_alone(unit, n):
        parts = [
            f"(SELECT COUNT(*) FROM {table} WHERE ({unchanged}) AND {r})" for r in ranges(unit, n)
        ]
        return "SELECT " + ",\n".join(parts) + " FROM RDB$DATABASE"

    def one_scan(unit, n):
        parts = [
            f"(SELECT COUNT(IIF(({unchanged}), 1, NULL)) || COALESCE(' ' || "
            f"LIST(IIF(({changed}), {HEX}, NULL), ' '), '') FROM {table} WHERE {r})"
            for r in ranges(unit, n)
        ]
        return "SELECT " + ",\n".join(parts) + " FROM RDB$DATABASE"

    print(f"{table}: {pointer_pages} units of {per_pp} pages, bound {bound}")
    for shape, sql_of in [("count alone", count_alone), ("one scan", one_scan)]:
        for n in (64, 16, 1):
            c0 = cpu()
            for unit in range(pointer_pages):
                cur.execute(sql_of(unit, n))
                for v in cur.fetchone():
                    if hasattr(v, "read"):
                        v.read()
            print(f"  {shape:<12} {n:3d} ranges a unit {cpu() - c0:7.2f} CPU s")
    con.close()


if __name__ == "__main__":
    main()
