#!/usr/bin/env bash
# --since's memory at two table sizes with the same unit size: a STOCK of
# ROWS rows (fbunload-gen) and one of FACTOR times as many (the same rows
# copied with new warehouse numbers, INSERT ... SELECT, doubling), each
# unloaded with --keep-keys, 0.1% of the rows updated in every unit, then
# a --since run of each at --unit-pages UNIT_PAGES: seconds, units and
# peak RSS. The big table has FACTOR times the units; what a run keeps a
# unit shows as the peaks' difference.
#
# The bigger table's peak must stay within MAX_GROWTH percent (15) of the
# smaller one's: the script fails (exit 1) if not. That is the assertion
# that --since's memory is flat as a table grows (issue 53), made here at
# sizes a small machine makes in minutes; it is not a timed test, as the
# machine's load moves the seconds. UNIT_PAGES is small so that 1,000,000
# rows are hundreds of units, as a 30,000,000-row table has at the default
# unit size.
#
#   benches/since-memory.sh                          # ROWS=1000000, FACTOR=4, UNIT_PAGES=200
#   ROWS=500000 benches/since-memory.sh              # quicker
#   BINS="/old/build/release target/release" benches/since-memory.sh   # builds side by side
#
# Databases are kept in DATA (bench-data) and made again only if missing
# (1,000,000 rows: 400 MB; 4,000,000: 1.6 GB); KEEP=0 removes them at the
# end. The rows are changed through Python's firebird-driver
# (firebird-embedded installs it). Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-1000000}
FACTOR=${FACTOR:-4}
UNIT_PAGES=${UNIT_PAGES:-200}
MAX_GROWTH=${MAX_GROWTH:-15}
J=${J:-2}
KEEP=${KEEP:-1}
RUNS=1
DATA=${DATA:-bench-data}
. benches/lib.sh
if [ -z "${BINS:-}" ]; then release_binaries; BINS=$BIN; fi
need_time_and_bc
mkdir -p "$DATA"
gen=$(echo "$BINS" | awk '{print $NF}')/fbunload-gen
[ -x "$gen" ] || gen=./target/release/fbunload-gen
w=$(( (ROWS + 99999) / 100000 ))
small=$DATA/since-memory-w$w.fdb
big=$DATA/since-memory-w$w-x$FACTOR.fdb
made=()
if [ ! -f "$small" ]; then
  "$gen" --database "$small" --warehouses "$w" --tables STOCK >&2
  made+=("$small")
fi
if [ ! -f "$big" ]; then
  cp "$small" "$big.tmp"
  columns="S_I_ID, S_W_ID + @W@, S_QUANTITY, S_DIST_01, S_DIST_02, S_DIST_03, S_DIST_04,
    S_DIST_05, S_DIST_06, S_DIST_07, S_DIST_08, S_DIST_09, S_DIST_10, S_YTD, S_ORDER_CNT,
    S_REMOTE_CNT, S_DATA"
  for ((have = 1; have < FACTOR; have *= 2)); do
    fb_sql "$big.tmp" "INSERT INTO STOCK SELECT ${columns//@W@/$((have * w))} FROM STOCK"
  done
  mv "$big.tmp" "$big"
  made+=("$big")
fi
change="UPDATE STOCK SET S_QUANTITY = S_QUANTITY + 1 WHERE MOD(S_I_ID, 1000) = 7"

printf '\n--since at --unit-pages %s, -j%s (%s cores, load average %s)\n' \
  "$UNIT_PAGES" "$J" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)"
printf '%-40s %10s %6s %9s %9s\n' build rows units seconds 'peak MB'
failed=0
for bin in $BINS; do
  first_kb=; first_rows=
  for db in "$small" "$big"; do
    rm -rf "$DATA/out-base" "$DATA/out-since"
    "$bin/fbunload" -d "$db" -u SYSDBA -p masterkey -q -j "$J" -f parquet --keep-keys \
      -o "$DATA/out-base"
    fb_sql "$db" --one "$change"
    /usr/bin/time -f '%e %M' -o "$DATA/time.txt" \
      "$bin/fbunload" -d "$db" -u SYSDBA -p masterkey -q -j "$J" -f parquet \
      --unit-pages "$UNIT_PAGES" --since "$DATA/out-base" -o "$DATA/out-since"
    read -r secs kb < "$DATA/time.txt"
    units=$("$bin/fbunload" -d "$db" -u SYSDBA -p masterkey --plan --unit-pages "$UNIT_PAGES" \
      | awk '$1 == "STOCK" {print $3}')
    rows=$(python3 -c "import json; print(sum(t['rows'] for t in json.load(open('$DATA/out-base/manifest.json'))['tables']))")
    printf '%-40s %10s %6s %9.2f %9d\n' "$bin" "$rows" "$units" "$secs" "$((kb / 1024))"
    if [ -z "$first_kb" ]; then
      first_kb=$kb; first_rows=$rows
    elif [ "$kb" -gt $(( first_kb * (100 + MAX_GROWTH) / 100 )) ]; then
      echo "FAIL: $bin: --since peaked at $((kb / 1024)) MB at $rows rows," \
        "$((first_kb / 1024)) MB at $first_rows (limit +$MAX_GROWTH%)"
      failed=1
    fi
  done
done
rm -rf "$DATA/out-base" "$DATA/out-since"
if [ "$KEEP" = 0 ]; then rm -f "$small" "$big"; fi
exit $failed
