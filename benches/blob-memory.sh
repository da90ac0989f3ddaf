#!/usr/bin/env bash
# Peak memory per byte of the largest value: a table with one text blob
# and one binary blob of MB MiB each (fbunload-gen's BIG_BLOB), unloaded
# a row at a time in every format, against the same table's tiny row (the
# baseline). "x blob" is (peak - baseline) / blob size: how many copies of
# the value the run held at once.
#
#   benches/blob-memory.sh                             # MB=100
#   MB=48 FORMATS="csv parquet" benches/blob-memory.sh
#   BIN=/path/to/bin benches/blob-memory.sh            # prebuilt binaries
#   COMPARE=/old/target/release benches/blob-memory.sh # also another build's fbunload
#                                                      # (rows marked "other"), same run
#
# Peak RSS (/usr/bin/time %M) is stable from run to run, unlike time on a
# shared machine, so one run per cell. Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${MB:-100}
FORMATS=${FORMATS:-"csv jsonl parquet arrow"}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"
DB=$DATA/big-blob-$MB.fdb
[ -f "$DB" ] || $BIN/fbunload-gen --database "$DB" --tables BIG_BLOB --blob-mb "$MB" \
  --page-size 16384 >&2

# peak_kb FBUNLOAD ROW ARGS... : peak RSS in KiB of unloading BIG_BLOB's row ROW
peak_kb() {
  local fbunload=$1 row=$2; shift 2
  rm -rf "$DATA/out"
  /usr/bin/time -f %M -o "$DATA/time.txt" "$fbunload" -d "$DB" -u SYSDBA -p masterkey -q \
    -o "$DATA/out" --tables BIG_BLOB --where "ID = $row" "$@"
  cat "$DATA/time.txt"
}

blob_kb=$((MB * 1024))
printf 'BIG_BLOB, blobs of %d MiB, %s\n' "$MB" "$(nproc) cores"
printf '%-14s %8s %8s %12s %8s %12s\n' \
  format "base MB" "text MB" "text x blob" "bin MB" "bin x blob"
row() {
  local label=$1 fbunload=$2 format=$3
  local base text bin
  base=$(peak_kb "$fbunload" 3 -f "$format")
  text=$(peak_kb "$fbunload" 1 -f "$format")
  bin=$(peak_kb "$fbunload" 2 -f "$format")
  printf '%-14s %8.0f %8.0f %12.2f %8.0f %12.2f\n' "$label" \
    "$(echo "$base / 1024" | bc -l)" \
    "$(echo "$text / 1024" | bc -l)" "$(echo "($text - $base) / $blob_kb" | bc -l)" \
    "$(echo "$bin / 1024" | bc -l)" "$(echo "($bin - $base) / $blob_kb" | bc -l)"
}
for format in $FORMATS; do
  row "$format" "$BIN/fbunload" "$format"
  if [ -n "${COMPARE:-}" ]; then
    row "other:$format" "$COMPARE/fbunload" "$format"
  fi
done
