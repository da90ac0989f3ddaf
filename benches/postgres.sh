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
# and then the CPU seconds of each, fbunload's and PostgreSQL's apart
# (PostgreSQL's read from /proc where the cluster runs here): where the
# load's time goes (fetch, encode, PostgreSQL's COPY, index builds).
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

use_pg_cluster
URI=$FBUNLOAD_TEST_PG_URI
q() { PGOPTIONS='-c client_min_messages=warning' psql "$URI" -X -q -v ON_ERROR_STOP=1 "$@"; }

STOCK_DB=$DATA/stock-$ROWS.fdb
[ -f "$STOCK_DB" ] || $BIN/fbunload-gen --database "$STOCK_DB" --tables STOCK \
  --items "$ROWS" >&2
SAMPLE_DB=$DATA/sample.fdb
[ -f "$SAMPLE_DB" ] || $BIN/fbunload sample -q "$SAMPLE_DB"
TPCC='WAREHOUSE|DISTRICT|CUSTOMER|ITEM|STOCK|ORDERS|ORDER_LINE'

# secs CMD... : "wall client-CPU PostgreSQL-CPU" seconds of one run of CMD
# (a shell function too; client CPU is what its processes used)
secs() {
  local t0 t1 c0 c1 p0 p1 me=$BASHPID tick
  tick=$(getconf CLK_TCK)
  p0=$(pg_cpu); c0=$(awk '{print $16 + $17}' /proc/$me/stat)
  t0=$(date +%s.%N)
  "$@" >/dev/null
  t1=$(date +%s.%N)
  sleep 0.3  # the backends that served CMD exit and are counted
  c1=$(awk '{print $16 + $17}' /proc/$me/stat); p1=$(pg_cpu)
  echo "$(echo "$t1 - $t0" | bc) $(echo "($c1 - $c0) / $tick" | bc -l) $(echo "$p1 - $p0" | bc)"
}

# medians: the median of each of the three columns of secs lines
medians() {
  local lines; lines=$(cat)
  for col in 1 2 3; do printf '%s\n' "$lines" | awk -v c=$col '{print $c}' | median; done | xargs
}

# median_of N CMD... : "wall client-CPU PostgreSQL-CPU", medians of N runs
median_of() {
  local n=$1; shift
  for _ in $(seq "$n"); do secs "$@"; done | medians
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
cpu_lines=()
for case in stock sample; do
  if [ $case = stock ]; then db=$STOCK_DB tables=STOCK; else db=$SAMPLE_DB tables=$TPCC; fi
  pg_load "$db" "$tables"
  # The pipeline's DDL: what the load made, tables first, keys after.
  pg_dump "$URI" -n bench --section=pre-data -O -x | sed 's/\bbench\./pipe./g' \
    | grep -v '^CREATE SCHEMA\|^ALTER SCHEMA' > "$DATA/pre.sql"
  pg_dump "$URI" -n bench --section=post-data -O -x | sed 's/\bbench\./pipe./g' \
    > "$DATA/post.sql"
  read -r fetch fetch_cpu _ <<< "$(median_of "$RUNS" fetch_only "$db" "$tables")"
  read -r csv csv_cpu _ <<< "$(median_of "$RUNS" csv_unload "$db" "$tables")"
  read -r pg pg_fb_cpu pg_pg_cpu <<< "$(median_of "$RUNS" pg_load "$db" "$tables")"
  copies=() keyed=()
  for _ in $(seq "$RUNS"); do
    copies+=("$(secs copy_files)")
    keyed+=("$(secs keys_only)")
  done
  read -r copy _ copy_pg_cpu <<< "$(printf '%s\n' "${copies[@]}" | medians)"
  read -r keys _ keys_pg_cpu <<< "$(printf '%s\n' "${keyed[@]}" | medians)"
  pipe=$(echo "$csv + $copy + $keys" | bc)
  printf '%-14s %8.1f %8.1f %8.1f %8.1f %8.1f %10.2f %10.2f\n' "$case" "$fetch" "$csv" "$pg" \
    "$keys" "$pipe" "$(echo "$pg / $csv" | bc -l)" "$(echo "$pipe / $pg" | bc -l)"
  cpu_lines+=("$(printf '%-14s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f' "$case" "$fetch_cpu" \
    "$csv_cpu" "$pg_fb_cpu" "$pg_pg_cpu" "$copy_pg_cpu" "$keys_pg_cpu")")
done
# Where the time goes: CPU seconds of fbunload (fb) and of PostgreSQL
# (pg) in each step (pg: 0 where the cluster's directory is not known).
printf '\nCPU seconds, medians: fbunload (fb), PostgreSQL (pg)\n'
printf '%-14s %8s %8s %8s %8s %8s %8s\n' case fetch:fb csv:fb load:fb load:pg copy:pg keys:pg
printf '%s\n' "${cpu_lines[@]}"
q -c 'DROP SCHEMA IF EXISTS pipe CASCADE' -c 'DROP SCHEMA IF EXISTS bench CASCADE' >/dev/null 2>&1
