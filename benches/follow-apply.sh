#!/usr/bin/env bash
# Row changes per second that `fbunload follow` applies to PostgreSQL
# (docs/postgresql.md, "Live") for a mixed stream: a table ITEMS of ROWS
# rows is loaded with --keep-keys --journal, then T transactions each
# make 50 row changes (20 updates, 10 deletes, 10 key updates, 10
# inserts) on rows of their own; then `follow --until-idle 1` applies
# them all (its wall time less the 1 s it waits idle before it exits).
# Prints the row changes, the seconds, changes/s, PostgreSQL's share of
# the CPU, and whether the target equals Firebird.
#
#   benches/follow-apply.sh                          # ROWS=100000, T=2000 (100,000 changes)
#   BIN=target/debug benches/follow-apply.sh         # a debug build
#   BINS="/work/main/target/debug target/debug" benches/follow-apply.sh
#                                                    # several builds, same data, in turn
#   FOLLOW_WRAP="perf record -g -o /tmp/follow.perf" benches/follow-apply.sh
#                                                    # the follow under a profiler
#
# Same set-up as benches/follow.sh (a runtime copy with replication.conf,
# a private PostgreSQL cluster unless FBUNLOAD_TEST_PG_URI names one).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-100000}
T=${T:-2000}
DATA=${DATA:-bench-data}
. benches/lib.sh
if [ -z "${BINS:-}" ]; then release_binaries; BINS=$BIN; fi
need_time_and_bc
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)
use_pg_cluster
URI=$FBUNLOAD_TEST_PG_URI

DB=$DATA/apply.fdb
RT=$DATA/apply-runtime
replication_runtime "$RT" "$DB" "$DATA/apply-journal" "$DATA/apply-archive"

# write MODE: create (the table and its ROWS rows) or stream (T transactions).
write() {
  PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 - "$DB" "$1" "$ROWS" "$T" <<'PY'
import sys
import embedded_driver
embedded_driver.setup()
from firebird.driver import connect, create_database
db, mode, rows, t = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if mode == "create":
    con = create_database(db, user="SYSDBA", password="masterkey")
    for sql in ["ALTER DATABASE ENABLE PUBLICATION", "ALTER DATABASE INCLUDE ALL TO PUBLICATION",
                "CREATE TABLE ITEMS (ID INTEGER NOT NULL PRIMARY KEY, W INTEGER, "
                "NAME VARCHAR(40), QTY INTEGER, PRICE NUMERIC(12,2), UPDATED TIMESTAMP)",
                f"EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < {rows}) DO BEGIN "
                "INSERT INTO ITEMS VALUES (:I, MOD(:I, 10), 'item number ' || :I, :I, :I / 100.0, "
                "TIMESTAMP '2024-01-01 00:00:00'); I = I + 1; END END"]:
        con.cursor().execute(sql)
        con.commit()
    con.close()
    sys.exit()
con = connect(db, user="SYSDBA", password="masterkey")
cur = con.cursor()
for n in range(t):
    base = (n * 50) % rows
    cur.execute("UPDATE ITEMS SET QTY = QTY + 1, UPDATED = CURRENT_TIMESTAMP "
                f"WHERE ID >= {base} AND ID < {base + 20}")
    cur.execute(f"DELETE FROM ITEMS WHERE ID >= {base + 20} AND ID < {base + 30}")
    cur.execute(f"UPDATE ITEMS SET ID = ID + 20000000 WHERE ID >= {base + 30} AND ID < {base + 40}")
    cur.execute(f"EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 10) DO BEGIN "
                f"INSERT INTO ITEMS VALUES ({10000000 + n * 10} + :I, 1, 'new', 1, 1.5, "
                "CURRENT_TIMESTAMP); I = I + 1; END END")
    con.commit()
con.close()
PY
}

differs() {
  PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 - "$DB" "$URI" <<'PY'
import sys, hashlib, subprocess
import embedded_driver
embedded_driver.setup()
from firebird.driver import connect
con = connect(sys.argv[1], user="SYSDBA", password="masterkey")
cur = con.cursor()
cur.execute("SELECT ID || '|' || W || '|' || NAME || '|' || QTY || '|' || PRICE FROM ITEMS")
fb = sorted(r[0] for r in cur.fetchall())
pg = subprocess.run(["psql", sys.argv[2], "-X", "-At", "-c",
                     "SELECT id || '|' || w || '|' || name || '|' || qty || '|' || price FROM live.items"],
                    capture_output=True, text=True, check=True).stdout.split("\n")
pg = sorted(l for l in pg if l)
print("equal" if fb == pg else f"DIFFER ({len(fb)} vs {len(pg)} rows)")
PY
}

printf 'ITEMS %s rows; %s transactions of 50 row changes (20 updates, 10 deletes, 10 key updates, 10 inserts); %s cores\n' \
  "$ROWS" "$T" "$(nproc)"
printf '%-28s %9s %8s %11s %9s %8s  %s\n' build changes wall 'changes/s' 'own cpu' 'pg cpu' target
# Each build: the same database made again, loaded, the same stream
# written, then followed (timed).
for bin in $BINS; do
  rm -rf "$DB" "$DATA/apply-journal" "$DATA/apply-archive"
  mkdir -p "$DATA/apply-journal" "$DATA/apply-archive"
  write create
  PGOPTIONS='-c client_min_messages=warning' psql "$URI" -X -q -c "DROP SCHEMA IF EXISTS live CASCADE" >/dev/null
  "$bin/fbunload" -d "$DB" -u SYSDBA -p masterkey -q -o "$URI" --pg-schema live --keep-keys \
    --journal "$DATA/apply-archive"
  write stream
  cpu0=$(pg_cpu)
  /usr/bin/time -f '%e %U %S' -o "$DATA/time.txt" \
    ${FOLLOW_WRAP:-} "$bin/fbunload" follow -d "$DB" -u SYSDBA -p masterkey --journal "$DATA/apply-archive" \
    --journal-live "$DATA/apply-journal" -o "$URI" --pg-schema live --until-idle 1 2>"$DATA/follow.txt"
  cpu1=$(pg_cpu)
  read -r secs user system < "$DATA/time.txt"
  wall=$(echo "$secs - 1" | bc -l)
  applied=$(grep -o '[0-9,]* row changes\?' "$DATA/follow.txt" | tr -d ',' | grep -o '^[0-9]*' || echo 0)
  printf '%-28s %9s %8.2f %11.0f %9.2f %8.2f  %s\n' "$bin" "$applied" "$wall" \
    "$(echo "$applied / $wall" | bc -l)" "$(echo "$user + $system" | bc -l)" \
    "$(echo "$cpu1 - $cpu0" | bc -l)" "$(differs 2>/dev/null)"
done
PGOPTIONS='-c client_min_messages=warning' psql "$URI" -X -q -c "DROP SCHEMA IF EXISTS live CASCADE" >/dev/null 2>&1
rm -rf "$DB" "$RT" "$DATA/apply-journal" "$DATA/apply-archive"
