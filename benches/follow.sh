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
# Each also in CPU seconds: fbunload's (the embedded Firebird engine's
# included) and the PostgreSQL cluster's (pg_cpu, all its processes)
# while it ran; on a machine others load too, a steadier measure than
# the wall time (the follow's idle second costs almost none).
#
# Both schemas are loaded (not timed) from the same database before the
# change, each into a PostgreSQL database of its own, vacuumed as
# autovacuum leaves a table soon after a load (hint bits set, visibility
# map, statistics), that serves as the template of every timed run
# (CREATE DATABASE … TEMPLATE: each run starts from the same target, so
# builds and runs compare). With FILLFACTORS="100 90" a pair of templates
# is loaded with each --pg-fillfactor (by the first build), and every
# build runs on each: A/B of the target's fillfactor in one run. Prints each
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
#   FILLFACTORS="100 90" benches/follow.sh # the target's fillfactor, A/B
#   PG_SHARED_BUFFERS=1GB benches/follow.sh
#                                          # a server's memory: the private cluster
#                                          # gets that shared_buffers, and each run's
#                                          # target is read into it first (pg_prewarm),
#                                          # as a table a server keeps updating is
#                                          # (the tests' cluster has 32MB)
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

[ -n "${PG_SHARED_BUFFERS:-}" ] && export FBUNLOAD_PG_SHARED_BUFFERS=$PG_SHARED_BUFFERS
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
# FILLFACTORS: each its templates fbunload_follow_{scan,live}_FF ("-": the
# build's default, no flag).
FILLFACTORS=${FILLFACTORS:--}
SIZES=
pgdb "DROP DATABASE IF EXISTS fbunload_follow_run"
for ff in $FILLFACTORS; do
  tag=${ff/-/default}
  flag=()
  [ "$ff" = - ] || flag=(--pg-fillfactor "$ff")
  for name in scan live; do
    pgdb "DROP DATABASE IF EXISTS fbunload_follow_${name}_$tag"
    pgdb "CREATE DATABASE fbunload_follow_${name}_$tag"
  done
  $BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$(uri_of "fbunload_follow_scan_$tag")" \
    --pg-schema scan --keep-keys "${flag[@]}"
  $BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$(uri_of "fbunload_follow_live_$tag")" \
    --pg-schema live --keep-keys --journal "$DATA/follow-archive" "${flag[@]}"
  for name in scan live; do
    psql "$(uri_of "fbunload_follow_${name}_$tag")" -X -q -c "VACUUM ANALYZE"
  done
  SIZES+="$tag: $(psql "$(uri_of "fbunload_follow_live_$tag")" -X -At -c \
    "SELECT pg_relation_size('live.stock') / 1048576 || ' MB'") "
done

# The change: the two updates in one transaction.
change_stock "$DB" "$PCT"

RUN=$(uri_of fbunload_follow_run)
# digest SCHEMA: the run database's STOCK as a count and a sum of each
# row's hash (no sort of 2M rows).
digest() {
  psql "$RUN" -X -At -c "SELECT count(*), sum(hashtextextended(t::text, 0)::numeric) FROM $1.stock t"
}
# copy TEMPLATE SCHEMA: the run database, a fresh copy of TEMPLATE; with
# PG_SHARED_BUFFERS, SCHEMA's tables and indexes read into shared_buffers.
copy() {
  pgdb "CREATE DATABASE fbunload_follow_run TEMPLATE $1"
  [ -n "${PG_SHARED_BUFFERS:-}" ] || return 0
  psql "$RUN" -X -q -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" -c "SELECT pg_prewarm(c.oid) \
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
    WHERE n.nspname = '$2' AND c.relkind IN ('r', 'i')" >/dev/null
}
# scan BIN FF / journal BIN FF: one timed sync on a fresh copy of its template.
# timed: SECS (wall) and CPU (fbunload's user + system and the cluster's)
# of the command last run under /usr/bin/time, from $DATA/time.txt and
# the cluster's CPU before (P0) and now.
timed() {
  local wall user system
  read -r wall user system < "$DATA/time.txt"
  SECS=$wall
  CPU=$(echo "$user + $system + $(pg_cpu) - $P0" | bc -l)
}
scan() {
  copy "fbunload_follow_scan_$2" scan
  P0=$(pg_cpu)
  /usr/bin/time -f '%e %U %S' -o "$DATA/time.txt" \
    "$1/fbunload" -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$RUN" --pg-schema scan
  timed
  DIGEST=$(digest scan)
  pgdb "DROP DATABASE fbunload_follow_run"
}
journal() {
  copy "fbunload_follow_live_$2" live
  P0=$(pg_cpu)
  /usr/bin/time -f '%e %U %S' -o "$DATA/time.txt" env ${PHASES:+FBUNLOAD_FOLLOW_PHASES=1} \
    "$1/fbunload" follow -d "$DB" -u SYSDBA -p masterkey --journal "$DATA/follow-archive" \
    --journal-live "$DATA/follow-journal" -o "$RUN" --pg-schema live --until-idle 1 \
    2>"$DATA/follow.txt"
  timed
  SECS=$(echo "$SECS - 1" | bc -l)
  APPLIED=$(grep -o '[0-9,]* row changes\?' "$DATA/follow.txt" | tr -d ',' | grep -o '^[0-9]*' || echo 0)
  DIGEST=$(digest live)
  pgdb "DROP DATABASE fbunload_follow_run"
}

printf 'STOCK %s rows, %s%% changed (updates, a tenth of them key updates), -j %s, %s cores\n' \
  "$rows" "$PCT" "$J" "$(nproc)"
printf 'STOCK in PostgreSQL, by fillfactor: %s\n' "$SIZES"
printf 'PostgreSQL shared_buffers %s%s\n' "$(psql "$URI" -X -At -c 'SHOW shared_buffers')" \
  "${PG_SHARED_BUFFERS:+, the target of each run read into it first}"
printf '%-4s %-24s %-5s %7s %8s %9s %7s %8s %8s %7s  %s\n' run build fill scan journal \
  'changes/s' 'x scan' 'scan cpu' 'jrnl cpu' 'x cpu' target
# Each build on each fillfactor's templates.
order=
for bin in $BINS; do
  for ff in $FILLFACTORS; do order+="$bin@${ff/-/default} "; done
done
for run in $(seq "$RUNS"); do
  for pair in $order; do
    bin=${pair%@*} ff=${pair#*@}
    scan "$bin" "$ff"
    scan_secs=$SECS scan_cpu=$CPU scan_digest=$DIGEST
    journal "$bin" "$ff"
    same=$([ "$DIGEST" = "$scan_digest" ] && echo 'same rows' || echo DIFFER)
    printf '%-4s %-24s %-5s %7.2f %8.2f %9.0f %7.3f %8.2f %8.2f %7.3f  %s\n' "$run" "$bin" "$ff" \
      "$scan_secs" "$SECS" "$(echo "$APPLIED / $SECS" | bc -l)" "$(echo "$SECS / $scan_secs" | bc -l)" \
      "$scan_cpu" "$CPU" "$(echo "$CPU / $scan_cpu" | bc -l)" "$same"
    if [ -n "${PHASES:-}" ]; then
      grep 'phase:' "$DATA/follow.txt" | sed 's/^fbunload follow phase: /       /' || true
    fi
  done
  # A B, then B A: each build as often first as second.
  order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
done
# KEEP=1: the databases, runtime and journal stay, to follow again by hand.
[ -n "${KEEP:-}" ] && exit 0
for ff in $FILLFACTORS; do
  for name in scan live; do
    pgdb "DROP DATABASE IF EXISTS fbunload_follow_${name}_${ff/-/default}"
  done
done
rm -rf "$DB" "$RT" "$DATA/follow-journal" "$DATA/follow-archive"
