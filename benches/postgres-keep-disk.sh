#!/usr/bin/env bash
# The disk a PostgreSQL load that keeps its state (--keep-keys) needs
# beside the target: the peak size of its private directory under
# $TMPDIR (polled every 20 ms), against the table's size in PostgreSQL,
# on a generated STOCK table (W x 100,000 rows), -j 2.
#
#   benches/postgres-keep-disk.sh                   # W=3, this checkout's release build
#   BIN=target/debug W=3 benches/postgres-keep-disk.sh
#
# Needs FBUNLOAD_TEST_PG_URI (the private cluster of scripts/pg-cluster.sh:
# `. scripts/pg-cluster.sh start` prints it), psql and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${W:-3}
RUNS=${RUNS:-1}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
mkdir -p "$DATA"
: "${FBUNLOAD_TEST_PG_URI:?set it (eval \"\$(bash scripts/pg-cluster.sh start)\")}"
URI=${FBUNLOAD_TEST_PG_URI%/*}/fbunload_keep_disk
psql -q "$FBUNLOAD_TEST_PG_URI" -c "DROP DATABASE IF EXISTS fbunload_keep_disk" \
  -c "CREATE DATABASE fbunload_keep_disk" 2>/dev/null
DB=$DATA/stock-keep-w$W.fdb
[ -f "$DB" ] || $BIN/fbunload-gen --database "$DB" --warehouses "$W" --tables STOCK >&2
for _ in $(seq "$RUNS"); do
  tmp=$(mktemp -d "$DATA/keep-tmp.XXXXXX")
  echo 0 > "$tmp.peak"
  ( while :; do
      b=$(du -sb "$tmp" 2>/dev/null | cut -f1)
      [ "${b:-0}" -gt "$(cat "$tmp.peak")" ] && echo "$b" > "$tmp.peak"
      sleep 0.02
    done ) &
  poll=$!
  start=$(date +%s.%N)
  TMPDIR=$tmp $BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j 2 -o "$URI" \
    --pg-schema bench --overwrite --keep-keys
  end=$(date +%s.%N)
  kill $poll; wait $poll 2>/dev/null || true
  table=$(psql -Atq "$URI" -c "SELECT pg_table_size('bench.stock')")
  printf 'STOCK %d rows: wall %.2f s, private directory peak %d bytes, stock in PostgreSQL %d bytes\n' \
    $((W * 100000)) "$(echo "$end - $start" | bc)" "$(cat "$tmp.peak")" "$table"
  rm -rf "$tmp" "$tmp.peak"
done
