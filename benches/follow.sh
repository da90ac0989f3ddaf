#!/usr/bin/env bash
# Keeping a PostgreSQL target in sync from Firebird's replication journal
# (docs/postgresql.md, "Live") against a sync by scan ("Kept in sync"),
# on a generated STOCK table (W x 100,000 rows) of which PCT percent of
# the rows are updated (and a tenth as many get a new key), in one
# transaction, as benches/postgres-sync.sh changes them:
#
#   scan     fbunload -o postgresql://... into a --keep-keys schema:
#            reads the changed rows at a new snapshot, applies them
#   journal  fbunload follow --until-idle 1 from a --keep-keys --journal
#            schema: reads the journal, applies the changes; its wall
#            time less the 1 s it waits idle before it exits
#
# Both schemas are loaded (not timed) from the same database before the
# change, so both apply the same change. Prints each one's wall seconds,
# the journal's row changes applied per second, and journal / scan.
#
#   benches/follow.sh                      # W=20 (2,000,000 rows), 1% changed, -j2
#   W=2 benches/follow.sh                  # smaller, quicker
#   BIN=target/debug W=2 benches/follow.sh # a debug build (slower than release)
#
# The database runs on a copy of the firebird-embedded runtime in
# SuperClassic mode with a replication.conf naming its journal
# directories (made here, under DATA). Starts a private cluster
# (scripts/pg-cluster.sh) unless FBUNLOAD_TEST_PG_URI names one. Needs
# /usr/bin/time, bc and psql.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${W:-20}
PCT=${PCT:-1}
J=${J:-2}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

use_pg_cluster
URI=$FBUNLOAD_TEST_PG_URI

BASE=$DATA/stock-sync-w$W.fdb
DB=$DATA/stock-follow-w$W.fdb
[ -f "$BASE" ] || $BIN/fbunload-gen --database "$BASE" --warehouses "$W" --tables STOCK >&2
rows=$((W * 100000))

RT=$DATA/follow-runtime
replication_runtime "$RT" "$DB" "$DATA/follow-journal" "$DATA/follow-archive"
cp "$BASE" "$DB"

# sql STATEMENT...: each in a transaction of its own, through firebird-driver.
sql() {
  PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 - "$DB" "$@" <<'PY'
import sys
import embedded_driver
embedded_driver.setup()
from firebird.driver import connect
con = connect(sys.argv[1], user="SYSDBA", password="masterkey")
for statement in sys.argv[2:]:
    con.cursor().execute(statement)
    con.commit()
con.close()
PY
}

sql "ALTER DATABASE ENABLE PUBLICATION" "ALTER DATABASE INCLUDE ALL TO PUBLICATION"
for schema in scan live; do
  PGOPTIONS='-c client_min_messages=warning' psql "$URI" -X -q \
    -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null
done
$BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$URI" --pg-schema scan --keep-keys
$BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$URI" --pg-schema live --keep-keys \
  --journal "$DATA/follow-archive"

every=$(python3 -c "print(max(1, round(100 / $PCT)))")
# The change: the two updates in one transaction.
PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 - "$DB" "$every" <<'PY'
import sys
import embedded_driver
embedded_driver.setup()
from firebird.driver import connect
db, every = sys.argv[1], int(sys.argv[2])
con = connect(db, user="SYSDBA", password="masterkey")
cur = con.cursor()
cur.execute(f"UPDATE STOCK SET S_QUANTITY = S_QUANTITY + 1 WHERE MOD(S_I_ID, {every}) = 1")
cur.execute(f"UPDATE STOCK SET S_I_ID = S_I_ID + 10000000 WHERE MOD(S_I_ID, {every * 10}) = 2")
con.commit()
con.close()
PY

/usr/bin/time -f '%e' -o "$DATA/time.txt" \
  $BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$URI" --pg-schema scan
SCAN=$(cat "$DATA/time.txt")
/usr/bin/time -f '%e' -o "$DATA/time.txt" \
  $BIN/fbunload follow -d "$DB" -u SYSDBA -p masterkey --journal "$DATA/follow-archive" \
  --journal-live "$DATA/follow-journal" -o "$URI" --pg-schema live --until-idle 1 2>"$DATA/follow.txt"
JOURNAL=$(echo "$(cat "$DATA/time.txt") - 1" | bc -l)
applied=$(grep -o '[0-9,]* row changes\?' "$DATA/follow.txt" | tr -d ',' | grep -o '^[0-9]*' || echo 0)

differ=$(psql "$URI" -X -At -c "SELECT count(*) FROM (SELECT * FROM scan.stock EXCEPT SELECT * FROM live.stock) d")
printf 'STOCK %s rows, %s%% changed (%s row changes: updates, a tenth of them key updates), -j %s, %s cores\n' \
  "$rows" "$PCT" "$applied" "$J" "$(nproc)"
printf '%-10s %8s %14s %10s\n' sync wall 'changes/s' 'x scan'
printf '%-10s %8.2f %14s %10.2f\n' scan "$SCAN" - 1
printf '%-10s %8.2f %14.0f %10.3f\n' journal "$JOURNAL" "$(echo "$applied / $JOURNAL" | bc -l)" \
  "$(echo "$JOURNAL / $SCAN" | bc -l)"
echo "rows that differ between the two schemas: $differ"
for schema in scan live; do
  PGOPTIONS='-c client_min_messages=warning' psql "$URI" -X -q \
    -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
done
rm -rf "$DB" "$RT" "$DATA/follow-journal" "$DATA/follow-archive"
