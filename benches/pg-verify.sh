#!/usr/bin/env bash
# What --verify costs a load into PostgreSQL (docs/postgresql.md,
# "Verified: content, not only counts"): the same load of STOCK (ROWS rows,
# default 2,000,000, from fbunload-gen) without --verify, with it (every
# value hashed as it is sent, each table read back and compared after the
# publish), and --pg-verify-only (Firebird read again, nothing loaded, the
# target read back and compared). Wall seconds (median of RUNS) and peak
# resident memory of fbunload (the largest of RUNS).
#
#   benches/pg-verify.sh                 # -j 2, RUNS=3
#   ROWS=500000 RUNS=1 benches/pg-verify.sh
#   BIN=/path/to/release benches/pg-verify.sh
#
# Starts a private cluster (scripts/pg-cluster.sh) unless
# FBUNLOAD_TEST_PG_URI names one. Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-2000000}
J=${J:-2}
RUNS=${RUNS:-3}
DATA=${DATA:-bench-data}
. benches/lib.sh
need_time_and_bc
release_binaries
mkdir -p "$DATA"
use_pg_cluster
URI=$FBUNLOAD_TEST_PG_URI
DB=$DATA/stock-$ROWS.fdb
[ -f "$DB" ] || $BIN/fbunload-gen --database "$DB" --tables STOCK --items "$ROWS" >&2

# one ARGS... : "seconds peak-MB" of one run of fbunload into $URI
one() {
  local t0 t1 kb
  t0=$(date +%s.%N)
  /usr/bin/time -f %M -o "$DATA/time.txt" "$BIN/fbunload" -d "$DB" -u SYSDBA \
    -p "${FB_PASSWORD:-masterkey}" -q -j "$J" -o "$URI" --pg-schema bench_verify "$@"
  t1=$(date +%s.%N)
  kb=$(tail -1 "$DATA/time.txt")
  echo "$(echo "$t1 - $t0" | bc) $((kb / 1024))"
}
# case NAME ARGS... : one table row, medians of RUNS
case_row() {
  local name=$1; shift
  local out secs peak
  out=$(for _ in $(seq "$RUNS"); do one "$@"; done)
  secs=$(echo "$out" | awk '{print $1}' | median)
  peak=$(echo "$out" | awk '{print $2}' | sort -n | tail -1)
  printf '%-28s %8.1f %8d\n' "$name" "$secs" "$peak"
}
echo "STOCK, $ROWS rows, into PostgreSQL, -j $J, median of $RUNS runs"
printf '%-28s %8s %8s\n' case seconds peak_MB
case_row "load" --overwrite
case_row "load --verify" --overwrite --verify
case_row "--pg-verify-only" --pg-verify-only
psql -q -X "$URI" -c "DROP SCHEMA bench_verify CASCADE"
