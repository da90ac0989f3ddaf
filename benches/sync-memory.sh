#!/usr/bin/env bash
# The memory of a PostgreSQL sync over many tables (issue 53 item 4): a
# database of TABLES ERP-like tables (fbunload-gen --many-tables, MANY_ROWS
# rows in all) loaded with --keep-keys into a database of its own, one row
# in every 10th table updated, and the sync run twice: once under
# heaptrack (fbunload's own heap at its peak) and once plain (peak RSS).
# Each BIN (a directory of release binaries; default this checkout's)
# gets a fresh copy of the same generated database, so their figures
# compare. Needs heaptrack and heaptrack_print for the heap figure.
#
#   TABLES=5000 benches/sync-memory.sh
#   TABLES=5000 BINS="/path/to/main/release target/release" benches/sync-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TABLES=${TABLES:-5000}
MANY_ROWS=${MANY_ROWS:-$((TABLES * 100))}
DATA=${DATA:-$(mktemp -d "${TMPDIR:-/tmp}/fbunload-sync-memory.XXXXXX")}
source benches/lib.sh
need_time_and_bc
if [ -z "${BINS:-}" ]; then
  release_binaries
  BINS=$BIN
fi
command -v heaptrack >/dev/null || { echo "needs heaptrack (apt-get install heaptrack)" >&2; exit 1; }
use_pg_cluster
set -- $BINS
"$1/fbunload-gen" --database "$DATA/many.fdb" --many-tables "$TABLES" --many-rows "$MANY_ROWS" >&2
changes=()
for ((i = 1; i <= TABLES; i += 10)); do
  t=$(printf 'ERP_%05d' "$i")
  changes+=("UPDATE $t SET ID = ID WHERE ID = (SELECT MIN(ID) FROM $t)")
done
printf '%-40s %12s %14s %12s\n' binaries 'heap peak' 'sync peak RSS' 'sync wall s'
for bin in "$@"; do
  db=$DATA/run.fdb
  cp "$DATA/many.fdb" "$db"
  psql "$FBUNLOAD_TEST_PG_URI" -qc "DROP DATABASE IF EXISTS sync_memory" -c "CREATE DATABASE sync_memory"
  uri=${FBUNLOAD_TEST_PG_URI%/*}/sync_memory
  "$bin/fbunload" -d "$db" -j2 -q --keep-keys -o "$uri"
  fb_sql "$db" --one "${changes[@]}"
  rm -f "$DATA"/heap.*
  heaptrack -o "$DATA/heap" "$bin/fbunload" -d "$db" -j2 -q -o "$uri" >/dev/null
  heap=$(heaptrack_print "$DATA"/heap.* 2>/dev/null | sed -n 's/^peak heap memory consumption: //p')
  fb_sql "$db" --one "${changes[@]}"
  /usr/bin/time -f '%e %M' -o "$DATA/time.txt" "$bin/fbunload" -d "$db" -j2 -q -o "$uri"
  read -r secs kb < "$DATA/time.txt"
  printf '%-40s %12s %11.0f MB %12s\n' "$bin" "$heap" "$(echo "$kb / 1024" | bc -l)" "$secs"
  psql "$FBUNLOAD_TEST_PG_URI" -qc "DROP DATABASE sync_memory"
done
rm -rf "$DATA"
