#!/usr/bin/env bash
# Loading into PostgreSQL (docs/postgresql.md) against what a user would do
# without it, on the same machine (Firebird embedded, PostgreSQL local):
#
#   pg      fbunload -o postgresql://... (binary COPY, keys, one publish)
#   csv     fbunload's own CSV unload of the same tables to files
#   pipe    the pipeline of today: that CSV unload, then psql \copy each
#           table in turn, then the same keys and indices (pg_dump's
#           post-data section of what `pg` made)
#   fetch   fbunload --fetch-only (reading and decoding alone)
#   keys    the keys and indices alone (the pipeline's last step)
#
# Two cases: STOCK of ROWS rows (default 2,000,000), and the TPC-C tables
# of the sample database (`fbunload sample`; its ALL_TYPES, "Mixed
# Case" and EMPTY_TABLE hold 15 rows and types psql's CSV input reads
# otherwise, so they are left out of all three).
#
#   benches/postgres.sh                 # -j 2, RUNS=3
#   J=4 RUNS=1 benches/postgres.sh
#   BIN=/path/to/release benches/postgres.sh
#
# Starts a private cluster (scripts/pg-cluster.sh) unless
# FBUNLOAD_TEST_PG_URI names one. Needs bc, psql and pg_dump.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-2000000}
J=${J:-2}
RUNS=${RUNS:-3}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
command -v bc >/dev/null || { echo "needs bc" >&2; exit 1; }
mkdir -p "$DATA"

stop_cluster=
if [ -z "${FBUNLOAD_TEST_PG_URI:-}" ]; then
  eval "$(bash scripts/pg-cluster.sh start)"
  stop_cluster="bash scripts/pg-cluster.sh stop $FBUNLOAD_TEST_PG_DIR"
fi
trap 'eval "${stop_cluster:-true}"' EXIT
URI=$FBUNLOAD_TEST_PG_URI
q() { PGOPTIONS='-c client_min_messages=warning' psql "$URI" -X -q -v ON_ERROR_STOP=1 "$@"; }

STOCK_DB=$DATA/stock-$ROWS.fdb
[ -f "$STOCK_DB" ] || $BIN/fbunload-gen --database "$STOCK_DB" --tables STOCK \
  --items "$ROWS" >&2
SAMPLE_DB=$DATA/sample.fdb
[ -f "$SAMPLE_DB" ] || $BIN/fbunload sample -q "$SAMPLE_DB"
TPCC='WAREHOUSE|DISTRICT|CUSTOMER|ITEM|STOCK|ORDERS|ORDER_LINE'

# secs CMD... : wall seconds of one run of CMD (a shell function too)
secs() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}

# median_of N CMD... : median wall seconds of N runs
median_of() {
  local n=$1; shift
  for _ in $(seq "$n"); do secs "$@"; done | median
}

pg_load() {
  $BIN/fbunload -d "$1" -u SYSDBA -p masterkey -q -j "$J" -t "$2" -o "$URI" \
    --pg-schema bench --overwrite
}

csv_unload() {
  rm -rf "$DATA/csv"
  $BIN/fbunload -d "$1" -u SYSDBA -p masterkey -q -j "$J" -t "$2" -o "$DATA/csv" \
    --header --no-schema
}

fetch_only() {
  $BIN/fbunload -d "$1" -u SYSDBA -p masterkey -q -j "$J" -t "$2" --fetch-only
}

# The pipeline's PostgreSQL part: empty tables, then \copy of each file
# in turn (copy_files), then the keys and indices (keys_only).
copy_files() {
  q -c 'DROP SCHEMA IF EXISTS pipe CASCADE' -c 'CREATE SCHEMA pipe'
  q -f "$DATA/pre.sql"
  for file in "$DATA"/csv/*.csv; do
    table=$(basename "$file" .csv | tr 'A-Z' 'a-z')
    q -c "\\copy pipe.$table FROM '$file' WITH (FORMAT csv, HEADER true)"
  done
}

keys_only() { q -f "$DATA/post.sql"; }

printf 'PostgreSQL 15 load vs files, -j %s, %s cores, median of %s runs (s)\n' "$J" "$(nproc)" "$RUNS"
printf '%-14s %8s %8s %8s %8s %8s %10s %10s\n' case fetch csv pg keys pipe pg/csv pipe/pg
for case in stock sample; do
  if [ $case = stock ]; then db=$STOCK_DB tables=STOCK; else db=$SAMPLE_DB tables=$TPCC; fi
  pg_load "$db" "$tables"
  # The pipeline's DDL: what the load made, tables first, keys after.
  pg_dump "$URI" -n bench --section=pre-data -O -x | sed 's/\bbench\./pipe./g' \
    | grep -v '^CREATE SCHEMA\|^ALTER SCHEMA' > "$DATA/pre.sql"
  pg_dump "$URI" -n bench --section=post-data -O -x | sed 's/\bbench\./pipe./g' \
    > "$DATA/post.sql"
  fetch=$(median_of "$RUNS" fetch_only "$db" "$tables")
  csv=$(median_of "$RUNS" csv_unload "$db" "$tables")
  pg=$(median_of "$RUNS" pg_load "$db" "$tables")
  copies=() keyed=()
  for _ in $(seq "$RUNS"); do
    copies+=("$(secs copy_files)")
    keyed+=("$(secs keys_only)")
  done
  copy=$(printf '%s\n' "${copies[@]}" | median)
  keys=$(printf '%s\n' "${keyed[@]}" | median)
  pipe=$(echo "$csv + $copy + $keys" | bc)
  printf '%-14s %8.1f %8.1f %8.1f %8.1f %8.1f %10.2f %10.2f\n' "$case" "$fetch" "$csv" "$pg" \
    "$keys" "$pipe" "$(echo "$pg / $csv" | bc -l)" "$(echo "$pipe / $pg" | bc -l)"
done
q -c 'DROP SCHEMA IF EXISTS pipe CASCADE' -c 'DROP SCHEMA IF EXISTS bench CASCADE' >/dev/null 2>&1
