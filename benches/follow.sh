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
# change, each into a PostgreSQL database of its own that serves as the
# template of every timed run (CREATE DATABASE … TEMPLATE: each run
# starts from the same target, so builds and runs compare). Prints each
# run's wall seconds, the journal's row changes applied per second,
# journal / scan, and whether the two targets hold the same rows; with
# PHASES=1 also where each follow's time went (FBUNLOAD_FOLLOW_PHASES:
# one line per phase).
#
#   benches/follow.sh                      # W=20 (2,000,000 rows), 1% changed, -j2
#   W=2 benches/follow.sh                  # smaller, quicker
#   BIN=target/debug W=2 benches/follow.sh # a debug build (slower than release)
#   BINS="/tmp/a target/release" RUNS=3 benches/follow.sh
#                                          # builds in turn, A B B A …, same change
#   KEEP=1 benches/follow.sh               # leaves the databases to follow again by hand
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
if [ -z "${BINS:-}" ]; then release_binaries; BINS=$BIN; fi
RUNS=${RUNS:-1}
BIN=${BINS%% *}
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

fb_sql "$DB" "ALTER DATABASE ENABLE PUBLICATION" "ALTER DATABASE INCLUDE ALL TO PUBLICATION"
# uri_of NAME: the cluster's URI naming database NAME.
uri_of() { echo "${URI%/*}/$1"; }
pgdb() { PGOPTIONS='-c client_min_messages=warning' psql "$URI" -X -q -c "$1" >/dev/null; }
for name in fbunload_follow_scan fbunload_follow_live fbunload_follow_run; do
  pgdb "DROP DATABASE IF EXISTS $name"
done
pgdb "CREATE DATABASE fbunload_follow_scan"
pgdb "CREATE DATABASE fbunload_follow_live"
$BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$(uri_of fbunload_follow_scan)" \
  --pg-schema scan --keep-keys
$BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$(uri_of fbunload_follow_live)" \
  --pg-schema live --keep-keys --journal "$DATA/follow-archive"

# The change: the two updates in one transaction.
change_stock "$DB" "$PCT"

RUN=$(uri_of fbunload_follow_run)
# digest SCHEMA: the run database's STOCK as a count and a sum of each
# row's hash (no sort of 2M rows).
digest() {
  psql "$RUN" -X -At -c "SELECT count(*), sum(hashtextextended(t::text, 0)::numeric) FROM $1.stock t"
}
# scan BIN / journal BIN: one timed sync on a fresh copy of its template.
scan() {
  pgdb "CREATE DATABASE fbunload_follow_run TEMPLATE fbunload_follow_scan"
  /usr/bin/time -f '%e' -o "$DATA/time.txt" \
    "$1/fbunload" -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$RUN" --pg-schema scan
  SECS=$(cat "$DATA/time.txt")
  DIGEST=$(digest scan)
  pgdb "DROP DATABASE fbunload_follow_run"
}
journal() {
  pgdb "CREATE DATABASE fbunload_follow_run TEMPLATE fbunload_follow_live"
  /usr/bin/time -f '%e' -o "$DATA/time.txt" env ${PHASES:+FBUNLOAD_FOLLOW_PHASES=1} \
    "$1/fbunload" follow -d "$DB" -u SYSDBA -p masterkey --journal "$DATA/follow-archive" \
    --journal-live "$DATA/follow-journal" -o "$RUN" --pg-schema live --until-idle 1 \
    2>"$DATA/follow.txt"
  SECS=$(echo "$(cat "$DATA/time.txt") - 1" | bc -l)
  APPLIED=$(grep -o '[0-9,]* row changes\?' "$DATA/follow.txt" | tr -d ',' | grep -o '^[0-9]*' || echo 0)
  DIGEST=$(digest live)
  pgdb "DROP DATABASE fbunload_follow_run"
}

printf 'STOCK %s rows, %s%% changed (updates, a tenth of them key updates), -j %s, %s cores\n' \
  "$rows" "$PCT" "$J" "$(nproc)"
printf '%-4s %-36s %8s %8s %10s %8s  %s\n' run build scan journal 'changes/s' 'x scan' target
order=$BINS
for run in $(seq "$RUNS"); do
  for bin in $order; do
    scan "$bin"
    scan_secs=$SECS scan_digest=$DIGEST
    journal "$bin"
    same=$([ "$DIGEST" = "$scan_digest" ] && echo 'same rows' || echo DIFFER)
    printf '%-4s %-36s %8.2f %8.2f %10.0f %8.3f  %s\n' "$run" "$bin" "$scan_secs" "$SECS" \
      "$(echo "$APPLIED / $SECS" | bc -l)" "$(echo "$SECS / $scan_secs" | bc -l)" "$same"
    if [ -n "${PHASES:-}" ]; then
      grep 'phase:' "$DATA/follow.txt" | sed 's/^fbunload follow phase: /       /' || true
    fi
  done
  # A B, then B A: each build as often first as second.
  order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
done
# KEEP=1: the databases, runtime and journal stay, to follow again by hand.
[ -n "${KEEP:-}" ] && exit 0
for name in fbunload_follow_scan fbunload_follow_live; do
  pgdb "DROP DATABASE IF EXISTS $name"
done
rm -rf "$DB" "$RT" "$DATA/follow-journal" "$DATA/follow-archive"
