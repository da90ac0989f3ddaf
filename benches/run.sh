#!/usr/bin/env bash
# fbunload's benchmark: in one go, on generated TPC-C-like databases, it
# times the engine's limit (--fetch-only: same attachments, snapshot and
# units, rows fetched and dropped) and the CSV unload, with 1 and 2 workers,
# with units of one pointer page (the classic split) and with the automatic
# sub-pointer-page units, and prints one table.
#
#   benches/run.sh                          # about 8 minutes on 2 cores
#   RUNS=5 WORKERS="1 2 4 8" benches/run.sh # more runs, more workers
#   BIG_W=100 MIXED_W=20 benches/run.sh     # 10M-row STOCK, bigger mix
#   CASES="few" FORMATS= benches/run.sh     # only some cases, no format table
#
# Cases: "one" is STOCK alone (BIG_W x 100,000 rows: 59 pointer pages at
# BIG_W=20); "few" is STOCK alone with FEW_W x 100,000 rows in a database of
# 32 KiB pages (3 pointer pages at FEW_W=15: with one-pointer-page units one
# worker reads two of them while the other idles after one, the case of
# issue #6; the automatic units are 1,227 pages there); "mixed" is every table of a MIXED_W-warehouse database (STOCK,
# CUSTOMER, ORDER_LINE, ... and small ones). `fbunload --plan` shows the
# units of each. Databases are generated once into bench-data/ and reused.
# Needs /usr/bin/time (Debian package `time`) for peak memory, and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
BIG_W=${BIG_W:-20}
FEW_W=${FEW_W:-15}
MIXED_W=${MIXED_W:-4}
CASES=${CASES:-"one few mixed"}
FORMATS=${FORMATS-"csv jsonl parquet arrow"}
RUNS=${RUNS:-3}
WORKERS=${WORKERS:-"1 2"}
DATA=bench-data
BIN=./target/release

cargo build --release --quiet --bins
cargo build --release --quiet -p fbunload-client --example count
mkdir -p "$DATA"

BIG_DB=$DATA/stock-w$BIG_W.fdb
FEW_DB=$DATA/stock-w$FEW_W-32k.fdb
MIXED_DB=$DATA/tpcc-w$MIXED_W.fdb
[ -f "$BIG_DB" ] || $BIN/fbunload-gen --database "$BIG_DB" --warehouses "$BIG_W" --tables STOCK,ITEM >&2
[ -f "$FEW_DB" ] || $BIN/fbunload-gen --database "$FEW_DB" --warehouses "$FEW_W" --tables STOCK,ITEM --page-size 32768 >&2
[ -f "$MIXED_DB" ] || $BIN/fbunload-gen --database "$MIXED_DB" --warehouses "$MIXED_W" >&2

. benches/lib.sh
need_time_and_bc

rows_of() { $BIN/examples/count "$@" | awk '{s+=$2} END {print s}'; }

MIXED_TABLES=(WAREHOUSE DISTRICT CUSTOMER ITEM STOCK ORDERS ORDER_LINE ALL_TYPES EMPTY_TABLE)
printf '\nSELECT COUNT(*), for scale\n'
printf '%-22s %12s %9s\n' table rows seconds
$BIN/examples/count "$BIG_DB" STOCK | awk '{printf "%-22s %12d %9.2f\n", "one: "$1, $2, $3}'
$BIN/examples/count "$FEW_DB" STOCK | awk '{printf "%-22s %12d %9.2f\n", "few: "$1, $2, $3}'
$BIN/examples/count "$MIXED_DB" "${MIXED_TABLES[@]}" | awk '{printf "%-22s %12d %9.2f\n", "mixed: "$1, $2, $3}'
BIG_ROWS=$(rows_of "$BIG_DB" STOCK)
FEW_ROWS=$(rows_of "$FEW_DB" STOCK)
MIXED_ROWS=$(rows_of "$MIXED_DB" "${MIXED_TABLES[@]}")

# Units of exactly one pointer page, as gbak -parallel and FBCSVExport cut
# tables: 1632 data-page slots per pointer page at 8 KiB pages, 6544 at 32.

printf '\n%-6s %-5s %7s %-10s %10s %9s %11s %11s %8s %8s %9s\n' \
  case units workers mode rows "median s" "min-max s" rows/s MB/s "peak MB" "vs limit"
for case in $CASES; do
  case $case in
    one) db=$BIG_DB; rows=$BIG_ROWS; tables=(--tables STOCK); one_pp=1632 ;;
    few) db=$FEW_DB; rows=$FEW_ROWS; tables=(--tables STOCK); one_pp=6544 ;;
    mixed) db=$MIXED_DB; rows=$MIXED_ROWS; tables=(); one_pp=1632 ;;
    *) echo "unknown case $case (one, few, mixed)" >&2; exit 1 ;;
  esac
  for units in 1PP auto; do
    unit_args=(); [ "$units" = 1PP ] && unit_args=(--unit-pages $one_pp)
    for j in $WORKERS; do
      run "$db" "${tables[@]}" "${unit_args[@]}" -j "$j" --fetch-only
      limit=$SECS
      printf '%-6s %-5s %7s %-10s %10d %9.2f %11s %11.0f %8s %8s %9s\n' "$case" "$units" "$j" \
        fetch-only "$rows" "$SECS" "$SPREAD" "$(echo "$rows / $SECS" | bc -l)" - "$PEAK_MB" 1.00
      run "$db" "${tables[@]}" "${unit_args[@]}" -j "$j"
      printf '%-6s %-5s %7s %-10s %10d %9.2f %11s %11.0f %8.1f %8s %9.2f\n' "$case" "$units" "$j" \
        csv "$rows" "$SECS" "$SPREAD" "$(echo "$rows / $SECS" | bc -l)" "$(echo "$BYTES / 1000000 / $SECS" | bc -l)" \
        "$PEAK_MB" "$(echo "$limit / $SECS" | bc -l)"
    done
  done
done
printf '\n"vs limit" = fetch-only seconds / csv seconds (1.00: the CSV unload is as fast as reading).\n'

# Output formats on the one-table case, automatic units, the most workers.
[ -n "$FORMATS" ] || exit 0
j=${WORKERS##* }
printf '\nformats: STOCK, %s workers\n%-8s %9s %11s %10s\n' "$j" format "median s" "min-max s" "output MB"
for format in $FORMATS; do
  run "$BIG_DB" --tables STOCK -j "$j" -f "$format"
  printf '%-8s %9.2f %11s %10.1f\n' "$format" "$SECS" "$SPREAD" "$(echo "$BYTES / 1000000" | bc -l)"
done
