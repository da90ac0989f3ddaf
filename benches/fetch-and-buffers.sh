#!/usr/bin/env bash
# The client-side choices behind fbunload's speed, measured on the
# benchmark's STOCK table (benches/run.sh generates it):
#   1. fetch API: rows as OO API messages (default) vs the legacy XSQLDA
#      (FBUNLOAD_FETCH_API=isc), for --fetch-only and CSV, 1 and 2 workers;
#      plus examples/fetch_api.rs, the two APIs alone on one cursor;
#   2. Arrow batch size (rows per batch: the unit of decoding, encoding and
#      of each write to the file), CSV, 1 and 2 workers;
#   3. formatting cost per value and type (examples/encode_cost.rs).
#
#   benches/fetch-and-buffers.sh            # about 8 minutes on 2 cores
#   RUNS=5 BIG_W=40 benches/fetch-and-buffers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIG_W=${BIG_W:-20}
RUNS=${RUNS:-3}
DATA=bench-data
BIN=./target/release

cargo build --release --quiet --bins
cargo build --release --quiet -p fbunload-client --example fetch_api
cargo build --release --quiet -p fbunload-format --example encode_cost
mkdir -p "$DATA"
DB=$DATA/stock-w$BIG_W.fdb
[ -f "$DB" ] || $BIN/fbunload-gen --database "$DB" --warehouses "$BIG_W" --tables STOCK,ITEM >&2
. benches/lib.sh

printf '\n1. fetch API (STOCK, medians of %s runs)\n' "$RUNS"
printf '%-8s %7s %-10s %9s %11s %8s\n' api workers mode "median s" "min-max s" "peak MB"
for j in 1 2; do
  for mode in fetch-only csv; do
    mode_args=(); [ "$mode" = fetch-only ] && mode_args=(--fetch-only)
    for api in isc message; do
      if [ "$api" = isc ]; then export FBUNLOAD_FETCH_API=isc; else unset FBUNLOAD_FETCH_API; fi
      run "$DB" --tables STOCK -j "$j" "${mode_args[@]}"
      printf '%-8s %7s %-10s %9.2f %11s %8s\n' "$api" "$j" "$mode" "$SECS" "$SPREAD" "$PEAK_MB"
    done
  done
done
unset FBUNLOAD_FETCH_API
printf '\none cursor over the whole table, no units, nothing decoded:\n'
$BIN/examples/fetch_api "$DB" STOCK "$RUNS"

printf '\n2. rows per Arrow batch (STOCK, CSV, medians of %s runs)\n' "$RUNS"
printf '%-7s %7s %9s %11s %8s\n' rows workers "median s" "min-max s" "peak MB"
for rows in 1024 8192 65536; do
  for j in 1 2; do
    run "$DB" --tables STOCK -j "$j" --batch-rows "$rows"
    printf '%-7s %7s %9.2f %11s %8s\n' "$rows" "$j" "$SECS" "$SPREAD" "$PEAK_MB"
  done
done

printf '\n3. formatting, one thread, no Firebird\n'
$BIN/examples/encode_cost 8
