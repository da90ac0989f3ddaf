#!/usr/bin/env bash
# Incremental unloads (--since) against full ones, on a generated STOCK
# table (W x 100,000 rows) of which PCT percent of the rows are updated
# (and a tenth as many deleted and inserted again under new keys; with
# CHANGE=deletes, deleted: spread over every unit, the costly case) after
# a full run that kept its keys: seconds (median of RUNS) and output
# bytes of a full unload, of the full unload that keeps its keys
# (--keep-keys, the start of a chain), and of the incremental one, with
# the incremental run's time and bytes over the full run's. The targets
# are 0.3x the time and 3% of the bytes at W=20, PCT=1.
#
#   benches/incremental.sh                          # W=20 (2,000,000 rows), 1% changed, -j2, csv parquet
#   W=5 RUNS=1 benches/incremental.sh               # smaller, quicker
#   CHANGE=deletes MODES=csv benches/incremental.sh  # rows deleted all over the table
#   DSN=localhost/3055:/data/stock.fdb FB_PASSWORD=... benches/incremental.sh   # over TCP: a database
#                                                   # the server holds, made as below with fbunload-gen
#
# The rows are changed through Python's firebird-driver (firebird-embedded
# installs it), with FIREBIRD's client library or firebird-embedded's. Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${W:-20}
PCT=${PCT:-1}
RUNS=${RUNS:-3}
J=${J:-2}
MODES=${MODES:-"csv parquet"}
CHANGE=${CHANGE:-newkeys}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"
DB=${DSN:-$DATA/stock-inc-w$W.fdb}
if [ -z "${DSN:-}" ]; then
  rm -f "$DB"
  $BIN/fbunload-gen --database "$DB" --warehouses "$W" --tables STOCK >&2
fi
rows=$((W * 100000))

# change PERCENT: updates PERCENT% of STOCK's rows, deletes a tenth as many
# and inserts them again under new keys (CHANGE=deletes: only deletes
# them), in one transaction.
change() {
  PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 - "$DB" "$1" "$CHANGE" <<'EOF'
import os, sys
import embedded_driver
embedded_driver.setup()
from firebird.driver import connect
db, pct, kind = sys.argv[1], float(sys.argv[2]), sys.argv[3]
every = max(1, round(100 / pct))
con = connect(db, user="SYSDBA", password=os.environ.get("FB_PASSWORD", "masterkey"))
cur = con.cursor()
cur.execute(f"UPDATE STOCK SET S_QUANTITY = S_QUANTITY + 1 WHERE MOD(S_I_ID, {every}) = 1")
if kind == "deletes":
    cur.execute(f"DELETE FROM STOCK WHERE MOD(S_I_ID, {every * 10}) = 2")
else:
    cur.execute(f"UPDATE STOCK SET S_I_ID = S_I_ID + 10000000 WHERE MOD(S_I_ID, {every * 10}) = 2")
con.commit()
con.close()
EOF
}

printf 'STOCK, %d rows, %s%% changed (%s), -j%s, %s cores, %s\n' "$rows" "$PCT" "$CHANGE" "$J" "$(nproc)" \
  "${DSN:+over TCP, }${DSN:-embedded}"
printf '%-8s %-12s %9s %11s %10s %10s %10s\n' \
  format run "median s" "min-max s" "output MB" "time/full" "bytes/full"
for mode in $MODES; do
  # shellcheck disable=SC2046
  run "$DB" --tables STOCK -j "$J" $(args_of "$mode")
  full_secs=$SECS full_bytes=$BYTES
  printf '%-8s %-12s %9.2f %11s %10.1f %10s %10s\n' "$mode" full "$SECS" "$SPREAD" \
    "$(echo "$BYTES / 1000000" | bc -l)" 1.00 1.000
  # shellcheck disable=SC2046
  run "$DB" --tables STOCK -j "$J" --keep-keys $(args_of "$mode")
  printf '%-8s %-12s %9.2f %11s %10.1f %10.2f %10.3f\n' "$mode" full+keys "$SECS" "$SPREAD" \
    "$(echo "$BYTES / 1000000" | bc -l)" "$(echo "$SECS / $full_secs" | bc -l)" \
    "$(echo "$BYTES / $full_bytes" | bc -l)"
  rm -rf "$DATA/base"
  mv "$DATA/out" "$DATA/base"
  change "$PCT"
  # shellcheck disable=SC2046
  run "$DB" --tables STOCK -j "$J" --since "$DATA/base" $(args_of "$mode")
  printf '%-8s %-12s %9.2f %11s %10.1f %10.2f %10.3f\n' "$mode" incremental "$SECS" "$SPREAD" \
    "$(echo "$BYTES / 1000000" | bc -l)" "$(echo "$SECS / $full_secs" | bc -l)" \
    "$(echo "$BYTES / $full_bytes" | bc -l)"
done
