#!/usr/bin/env bash
# Keeping a PostgreSQL target in sync (docs/postgresql.md, "Kept in sync")
# against loading it whole, on a generated STOCK table (W x 100,000 rows)
# of which PCT percent of the rows are updated (and a tenth as many
# deleted and inserted again under new keys, as benches/incremental.sh
# does) between the runs:
#
#   full    fbunload -o postgresql://... --overwrite (the table whole)
#   keep    the same with --keep-keys (a full load that starts a chain)
#   sync    the next run into the target keep made: only the changes,
#           applied in one transaction
#
# Each sync starts from a fresh keep run (not timed) and the same change,
# so every sync applies a link of the same size. The target is 0.3x a
# full load's time at W=20, PCT=1.
#
#   benches/postgres-sync.sh                    # W=20 (2,000,000 rows), 1% changed, -j2, RUNS=3
#   W=5 RUNS=1 benches/postgres-sync.sh         # smaller, quicker
#   BIN=/path/to/release benches/postgres-sync.sh
#
# Starts a private cluster (scripts/pg-cluster.sh) unless
# FBUNLOAD_TEST_PG_URI names one. The rows are changed through Python's
# firebird-driver (firebird-embedded installs it). Needs /usr/bin/time,
# bc and psql.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${W:-20}
PCT=${PCT:-1}
RUNS=${RUNS:-3}
J=${J:-2}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"

use_pg_cluster
URI=$FBUNLOAD_TEST_PG_URI

BASE=$DATA/stock-sync-w$W.fdb
DB=$DATA/stock-sync-w$W.work.fdb
[ -f "$BASE" ] || $BIN/fbunload-gen --database "$BASE" --warehouses "$W" --tables STOCK >&2
rows=$((W * 100000))

# change: updates PCT% of STOCK's rows, deletes a tenth as many and
# inserts them again under new keys, in one transaction.
change() { change_stock "$DB" "$PCT"; }

# load ARGS... : one run into schema bench; its wall seconds in SECS,
# fbunload's user + system seconds in CPU.
load() {
  /usr/bin/time -f '%e %U %S' -o "$DATA/time.txt" \
    $BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -o "$URI" --pg-schema bench "$@"
  read -r SECS user system < "$DATA/time.txt"
  CPU=$(echo "$user + $system" | bc)
}

full=() keep=() sync=() fullcpu=() keepcpu=() synccpu=()
for _ in $(seq "$RUNS"); do
  cp "$BASE" "$DB"
  load --overwrite; full+=("$SECS"); fullcpu+=("$CPU")
  load --overwrite --keep-keys; keep+=("$SECS"); keepcpu+=("$CPU")
  change
  load; sync+=("$SECS"); synccpu+=("$CPU")
done
rm -f "$DB"
m() { printf '%s\n' "$@" | median; }
F=$(m "${full[@]}") K=$(m "${keep[@]}") S=$(m "${sync[@]}")
printf 'STOCK %s rows, %s%% changed, -j %s, %s cores, median of %s (wall s; fbunload CPU s)\n' \
  "$rows" "$PCT" "$J" "$(nproc)" "$RUNS"
printf '%-22s %8s %8s %10s\n' run wall cpu 'x full'
printf '%-22s %8.2f %8.2f %10.2f\n' full "$F" "$(m "${fullcpu[@]}")" 1
printf '%-22s %8.2f %8.2f %10.2f\n' 'full, --keep-keys' "$K" "$(m "${keepcpu[@]}")" \
  "$(echo "$K / $F" | bc -l)"
printf '%-22s %8.2f %8.2f %10.2f\n' sync "$S" "$(m "${synccpu[@]}")" "$(echo "$S / $F" | bc -l)"
PGOPTIONS='-c client_min_messages=warning' psql "$URI" -X -q -c 'DROP SCHEMA IF EXISTS bench CASCADE' \
  >/dev/null 2>&1
