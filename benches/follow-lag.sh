#!/usr/bin/env bash
# Commit-to-visible lag of `fbunload follow` (docs/postgresql.md, "Live")
# under a steady writer: a writer commits one row every INTERVAL seconds
# (N rows), each holding the writer's clock right before its commit; the
# target's copy of the table gets a column the follow does not write,
# `seen timestamptz DEFAULT clock_timestamp()`, so each row records when
# the follow inserted it (visible at that transaction's commit, within
# the same statement batch). Prints the median and the 90th percentile of
# seen - written, with --journal-live (the live segments read) and
# without it (archived segments only: journal_archive_timeout = 1 s).
#
#   benches/follow-lag.sh                       # N=200 rows, INTERVAL=0.05 s
#   BIN=target/debug benches/follow-lag.sh      # a debug build
#
# Same set-up as benches/follow.sh (a runtime copy with replication.conf,
# a private PostgreSQL cluster unless FBUNLOAD_TEST_PG_URI names one).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
INTERVAL=${INTERVAL:-0.05}
DATA=${DATA:-bench-data}
RUNS=1
. benches/lib.sh
release_binaries
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)
use_pg_cluster
URI=$FBUNLOAD_TEST_PG_URI

DB=$DATA/lag.fdb
RT=$DATA/lag-runtime
rm -rf "$DB"
replication_runtime "$RT" "$DB" "$DATA/lag-journal" "$DATA/lag-archive"

# write FIRST: N rows from id FIRST, one committed every INTERVAL seconds.
write() {
  PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 - "$DB" "$1" "$N" "$INTERVAL" <<'PY'
import sys, time
import embedded_driver
embedded_driver.setup()
from firebird.driver import connect, create_database
db, first, n, interval = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
if first == 0:
    con = create_database(db, user="SYSDBA", password="masterkey")
    for sql in ["ALTER DATABASE ENABLE PUBLICATION", "ALTER DATABASE INCLUDE ALL TO PUBLICATION",
                "CREATE TABLE LAGS (ID INTEGER NOT NULL PRIMARY KEY, WRITTEN_US BIGINT)"]:
        con.cursor().execute(sql)
        con.commit()
else:
    con = connect(db, user="SYSDBA", password="masterkey")
    for i in range(first, first + n):
        con.cursor().execute("INSERT INTO LAGS VALUES (?, ?)", (i, time.time_ns() // 1000))
        con.commit()
        time.sleep(interval)
con.close()
PY
}

psql_q() { PGOPTIONS='-c client_min_messages=warning' psql "$URI" -X -q -At "$@"; }

write 0
psql_q -c "DROP SCHEMA IF EXISTS lag CASCADE" >/dev/null
$BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -o "$URI" --pg-schema lag --keep-keys \
  --journal "$DATA/lag-archive"
psql_q -c "ALTER TABLE lag.lags ADD COLUMN seen timestamptz DEFAULT clock_timestamp()" >/dev/null

printf 'follow lag, %s rows, one committed every %s s, %s cores (ms)\n' "$N" "$INTERVAL" "$(nproc)"
printf '%-26s %8s %8s %8s   %s\n' reading median p90 max \
  '--progress json medians (ms): lag_seconds_at_least, lag_seconds_at_most'
first=1
for mode in live archive; do
  live=()
  [ $mode = live ] && live=(--journal-live "$DATA/lag-journal")
  $BIN/fbunload follow -d "$DB" -u SYSDBA -p masterkey --journal "$DATA/lag-archive" "${live[@]}" \
    -o "$URI" --pg-schema lag --progress json 2>"$DATA/lag-progress.txt" &
  follower=$!
  write $first
  sleep 3
  kill -TERM $follower; wait $follower || true
  psql_q -F ' ' -c "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY l), \
    percentile_cont(0.9) WITHIN GROUP (ORDER BY l), max(l) FROM \
    (SELECT (extract(epoch FROM seen) * 1e6 - written_us) / 1000 AS l FROM lag.lags \
     WHERE id >= $first) x" | {
    read -r median p90 max
    reported=$(python3 - "$DATA/lag-progress.txt" <<'PY'
import json, statistics, sys
events = [json.loads(l) for l in open(sys.argv[1]) if '"event":"applied"' in l]
events = [e for e in events if e["transactions"] > 0]
def med(key):
    v = [e[key] * 1000 for e in events if e.get(key) is not None]
    return f"{statistics.median(v):.0f} ({len(v)} of {len(events)})" if v else f"- (0 of {len(events)})"
print(med("lag_seconds_at_least"), med("lag_seconds_at_most"))
PY
)
    printf '%-26s %8.0f %8.0f %8.0f   %s\n' "$( [ $mode = live ] && echo '--journal-live' || echo 'archive only')" \
      "$median" "$p90" "$max" "$reported"
  }
  first=$((first + N))
done
psql_q -c "DROP SCHEMA IF EXISTS lag CASCADE" >/dev/null
rm -rf "$RT" "$DB" "$DATA/lag-journal" "$DATA/lag-archive" "$DATA/lag-progress.txt"
