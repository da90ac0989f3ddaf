#!/usr/bin/env bash
# Peak RSS per format at -j 1, 16 and 64 on a TPC-C database of W
# warehouses (ALL_TYPES left out), and of a --fetch-only run: what the
# Firebird engine's attachments cost by themselves, which fbunload cannot
# bound. The goal: under 300 MB for every format at every -j.
#
#   benches/worker-memory.sh                             # W=5
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
DB=$DATA/tpcc-w$W.fdb
[ -f "$DB" ] || $BIN/fbunload-gen --database "$DB" --warehouses "$W" >&2

# peak_mb FBUNLOAD ARGS... : peak RSS in MB of one unload of DB
peak_mb() {
  local fbunload=$1; shift
  rm -rf "$DATA/out"
  /usr/bin/time -f %M -o "$DATA/time.txt" "$fbunload" -d "$DB" -u SYSDBA -p masterkey -q \
    -o "$DATA/out" -x ALL_TYPES "$@"
  echo "$(cat "$DATA/time.txt") / 1024" | bc
}

printf 'peak RSS, MB: %d warehouses, %s cores\n%-16s' "$W" "$(nproc)" format
for j in $JOBS; do printf ' %7s' "-j$j"; done
printf '\n'
row() {
  local label=$1 fbunload=$2; shift 2
  printf '%-16s' "$label"
  for j in $JOBS; do printf ' %7s' "$(peak_mb "$fbunload" -j "$j" "$@")"; done
  printf '\n'
}
row fetch-only "$BIN/fbunload" --fetch-only
for format in $FORMATS; do
  row "$format" "$BIN/fbunload" -f "$format"
  if [ -n "${COMPARE:-}" ]; then
    row "other:$format" "$COMPARE/fbunload" -f "$format"
  fi
done
