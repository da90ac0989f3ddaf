#!/usr/bin/env bash
# Every output format at every worker count, in one go, on one generated
# STOCK table (W x 100,000 rows): seconds (median of RUNS) and peak memory
# (max RSS of the whole process) for --fetch-only (the engine's limit: the
# same attachments, snapshot and units, rows fetched and dropped), CSV,
# JSON Lines, Parquet (zstd), Arrow IPC and CSV compressed with zstd.
#
#   benches/formats.sh                               # 2 cores: W=10, 1 and 2 workers
#   W=30 WORKERS="1 2 4 8 16" DATA=/dev/shm/fb benches/formats.sh   # issue #12's table
#   BIN=/path/to/bin MODES="csv parquet" benches/formats.sh         # prebuilt binaries, some modes
#   COMPARE=/old/target/release benches/formats.sh   # also time another build's fbunload
#                                                    # (rows marked "other") in the same run
#
# The last column gives each format's time over fetch-only's: 1.00 means the
# format costs nothing over reading. Compare figures within one run only.
# Needs /usr/bin/time (Debian package `time`) and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${W:-10}
RUNS=${RUNS:-3}
WORKERS=${WORKERS:-"1 2"}
MODES=${MODES:-"fetch-only csv jsonl parquet arrow csv.zst"}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"
DB=$DATA/stock-w$W.fdb
[ -f "$DB" ] || $BIN/fbunload-gen --database "$DB" --warehouses "$W" --tables STOCK,ITEM >&2

rows=$((W * 100000))
printf 'STOCK, %d rows, %s\n' "$rows" "$(nproc) cores"
printf '%-8s %-10s %9s %11s %10s %8s %10s %9s\n' \
  workers mode "median s" "min-max s" rows/s "peak MB" "output MB" "vs fetch"
for j in $WORKERS; do
  limit=
  for mode in $MODES; do
    # shellcheck disable=SC2046
    run "$DB" --tables STOCK -j "$j" $(args_of "$mode")
    [ "$mode" = fetch-only ] && limit=$SECS
    ratio=-
    [ -n "$limit" ] && ratio=$(printf '%.2f' "$(echo "$SECS / $limit" | bc -l)")
    printf '%-8s %-10s %9.2f %11s %10.0f %8s %10.1f %9s\n' "$j" "$mode" "$SECS" "$SPREAD" \
      "$(echo "$rows / $SECS" | bc -l)" "$PEAK_MB" "$(echo "$BYTES / 1000000" | bc -l)" "$ratio"
    if [ -n "${COMPARE:-}" ] && [ "$mode" != fetch-only ]; then
      ours=$BIN; BIN=$COMPARE
      # shellcheck disable=SC2046
      run "$DB" --tables STOCK -j "$j" $(args_of "$mode")
      BIN=$ours
      printf '%-8s %-10s %9.2f %11s %10.0f %8s %10.1f %9s\n' "$j" "other:$mode" "$SECS" \
        "$SPREAD" "$(echo "$rows / $SECS" | bc -l)" "$PEAK_MB" "$(echo "$BYTES / 1000000" | bc -l)" \
        "$(printf '%.2f' "$(echo "$SECS / $limit" | bc -l)")"
    fi
  done
done
