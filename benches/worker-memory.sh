#!/usr/bin/env bash
# Peak RSS per format (CSV, Parquet, Arrow) at -j 1, 16 and 64 on a whole
# TPC-C database of W warehouses and, with STOCK_W, on a STOCK table of
# STOCK_W x 100,000 rows, and of a --fetch-only run: what the Firebird
# engine's attachments cost by themselves, which fbunload cannot bound.
# The goal: under 300 MB for every format at -j16 with the default
# --memory, on 16 cores.
#
#   benches/worker-memory.sh                             # W=5
#   W=10 STOCK_W=20 JOBS=16 benches/worker-memory.sh     # the 16-core check
#   ARENAS=16 W=10 STOCK_W=20 JOBS=16 benches/worker-memory.sh
#                                  # on fewer cores: 16 malloc arenas, as on 16 cores
#   W=3 FORMATS="parquet" JOBS="16" benches/worker-memory.sh
#   BIN=/path/to/bin benches/worker-memory.sh            # prebuilt binaries
#   COMPARE=/old/target/release benches/worker-memory.sh # also another build's fbunload
#                                                        # (rows marked "other"), same run
#
# Peak RSS (/usr/bin/time %M) is stable from run to run, unlike time on a
# shared machine, so one run per cell. Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${W:-5}
FORMATS=${FORMATS:-"csv parquet arrow"}
JOBS=${JOBS:-"1 16 64"}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"
# fbunload caps glibc's malloc arenas at the core count; ARENAS sets them,
# to see on 2 cores what 16 cores' arenas keep.
[ -n "${ARENAS:-}" ] && export MALLOC_ARENA_MAX=$ARENAS

# peak_mb FBUNLOAD ARGS... : peak RSS in MB of one unload of DB
peak_mb() {
  local fbunload=$1; shift
  rm -rf "$DATA/out"
  /usr/bin/time -f %M -o "$DATA/time.txt" "$fbunload" -d "$DB" -u SYSDBA -p masterkey -q \
    -o "$DATA/out" "$@"
  echo "$(cat "$DATA/time.txt") / 1024" | bc
}

table() {
  printf 'peak RSS, MB: %s, %s cores%s\n%-16s' "$1" "$(nproc)" "${ARENAS:+, $ARENAS arenas}" format
  for j in $JOBS; do printf ' %7s' "-j$j"; done
  printf '\n'
  row fetch-only "$BIN/fbunload" --fetch-only
  for format in $FORMATS; do
    row "$format" "$BIN/fbunload" -f "$format"
    if [ -n "${COMPARE:-}" ]; then
      row "other:$format" "$COMPARE/fbunload" -f "$format"
    fi
  done
}
row() {
  local label=$1 fbunload=$2; shift 2
  printf '%-16s' "$label"
  for j in $JOBS; do printf ' %7s' "$(peak_mb "$fbunload" -j "$j" "$@")"; done
  printf '\n'
}
DB=$DATA/tpcc-w$W.fdb
[ -f "$DB" ] || $BIN/fbunload-gen --database "$DB" --warehouses "$W" >&2
table "TPC-C, $W warehouses, every table"
if [ -n "${STOCK_W:-}" ]; then
  DB=$DATA/stock-w$STOCK_W.fdb
  [ -f "$DB" ] || $BIN/fbunload-gen --database "$DB" --warehouses "$STOCK_W" --tables STOCK >&2
  table "STOCK, $((STOCK_W * 100000)) rows"
fi
