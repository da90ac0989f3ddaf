#!/usr/bin/env bash
# Times fbunload on a generated STOCK table (TPC-C-like, 100,000 rows per
# warehouse) with 1 and 2 workers, RUNS times each, and prints the medians.
#   benches/stock.sh                    # 20 warehouses = 2,000,000 rows
#   WAREHOUSES=50 RUNS=5 benches/stock.sh
# The database is generated once into bench-data/ and reused.
set -euo pipefail
cd "$(dirname "$0")/.."
WAREHOUSES=${WAREHOUSES:-20}
RUNS=${RUNS:-3}
WORKERS=${WORKERS:-"1 2"}
DATA=bench-data
DB=$DATA/stock-w$WAREHOUSES.fdb

cargo build --release --quiet --bins
mkdir -p "$DATA"
if [ ! -f "$DB" ]; then
  echo "generating $DB" >&2
  ./target/release/fbunload-gen --database "$DB" --warehouses "$WAREHOUSES" --tables STOCK,ITEM
fi

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-8s %10s %10s %12s %10s %10s\n' workers rows "median s" rows/s MB/s "peak MB"
for j in $WORKERS; do
  times=(); rss=()
  for _ in $(seq "$RUNS"); do
    rm -rf "$DATA/out"
    /usr/bin/time -f '%e %M' -o "$DATA/time.txt" \
      ./target/release/fbunload -d "$DB" -u SYSDBA -p masterkey --tables STOCK -j "$j" -q -o "$DATA/out"
    read -r secs kb < "$DATA/time.txt"
    times+=("$secs"); rss+=("$kb")
  done
  rows=$(($(wc -l < "$DATA/out/STOCK.csv")))
  bytes=$(stat -c %s "$DATA/out/STOCK.csv")
  secs=$(printf '%s\n' "${times[@]}" | median)
  peak=$(printf '%s\n' "${rss[@]}" | sort -n | tail -1)
  awk -v j="$j" -v r="$rows" -v s="$secs" -v b="$bytes" -v p="$peak" \
    'BEGIN { printf "%-8s %10d %10.2f %12.0f %10.1f %10.1f\n", j, r, s, r/s, b/1e6/s, p/1024 }'
done
