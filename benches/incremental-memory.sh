#!/usr/bin/env bash
# Peak memory of incremental runs at any table size: a table K of ROWS
# rows (a BIGINT key and an INTEGER), a full run that keeps its keys
# (--keep-keys, the start of a chain), 0.1% of the rows updated, 0.1%
# deleted all over the table and as many inserted, then an incremental run
# (--since), both at --memory MEMORY: peak RSS (/usr/bin/time's maximum
# resident set) and seconds of each. A table's keys are held within a
# 32nd of --memory and spilled beyond it in sorted runs, so the peaks
# stay the same as ROWS grows (the target: under 300 MB at --memory 256
# for 20,000,000 rows).
#
#   benches/incremental-memory.sh                  # ROWS=20000000, --memory 256, -f parquet
#   ROWS=5000000 benches/incremental-memory.sh     # smaller, quicker
#   BIN=target/debug ROWS=1000000 benches/incremental-memory.sh   # a build of your own
#   BINS="/old/build/release target/release" benches/incremental-memory.sh   # builds side by side
#
# The table is made and changed through Python's firebird-driver
# (firebird-embedded installs it). Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-20000000}
MEMORY=${MEMORY:-256}
FORMAT=${FORMAT:-parquet}
J=${J:-2}
RUNS=1
DATA=${DATA:-bench-data}
. benches/lib.sh
if [ -z "${BINS:-}" ]; then release_binaries; BINS=$BIN; fi
need_time_and_bc
mkdir -p "$DATA"
DB=$DATA/keys-memory-$ROWS.fdb

# sql STATEMENT...: runs each statement on DB (made first if missing), in
# one transaction.
sql() {
  PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 - "$DB" "$@" <<'PY'
import os, sys
import embedded_driver
embedded_driver.setup()
from firebird.driver import connect, create_database
db = sys.argv[1]
if os.path.exists(db):
    con = connect(db, user="SYSDBA", password="masterkey")
else:
    con = create_database(db, user="SYSDBA", password="masterkey")
cur = con.cursor()
for statement in sys.argv[2:]:
    cur.execute(statement)
con.commit()
con.close()
PY
}

rm -f "$DB"
start=$(date +%s)
sql "CREATE TABLE K (ID BIGINT NOT NULL PRIMARY KEY, V INTEGER)"
sql "EXECUTE BLOCK AS DECLARE I BIGINT = 1; BEGIN WHILE (I <= $ROWS) DO BEGIN \
     INSERT INTO K VALUES (:I * 7, MOD(:I, 1000)); I = I + 1; END END"
echo "made K, $ROWS rows, in $(( $(date +%s) - start )) s" >&2

# measure LABEL ARGS...: one run of each build at --memory MEMORY; prints
# its seconds and peak RSS.
measure() {
  local label=$1; shift
  local n=0
  for bin in $BINS; do
    n=$((n + 1))
    measure_one "$bin" "$label" "$n" "$@"
  done
}

measure_one() {
  local bin=$1 label=$2 n=$3; shift 3
  local args=("$@")
  # A --since run starts from the keep-keys run of the same build.
  for i in "${!args[@]}"; do args[i]=${args[i]//@BUILD@/$n}; done
  rm -rf "$DATA/$label-$n"
  /usr/bin/time -f '%e %M' -o "$DATA/time.txt" \
    "$bin/fbunload" -d "$DB" -u SYSDBA -p masterkey -q -j "$J" --memory "$MEMORY" -f "$FORMAT" \
    -o "$DATA/$label-$n" "${args[@]}"
  read -r secs kb < "$DATA/time.txt"
  printf '%-12s %9.2f %12.0f  %s\n' "$label" "$secs" "$(echo "$kb / 1024" | bc -l)" "$bin"
}

printf 'K, %d rows, --memory %s, -f %s, -j%s, %s cores\n' "$ROWS" "$MEMORY" "$FORMAT" "$J" "$(nproc)"
printf '%-12s %9s %12s  %s\n' run seconds "peak RSS MB" build
measure full --tables K
measure keep-keys --tables K --keep-keys
sql "UPDATE K SET V = V + 1 WHERE MOD(ID, 7000) = 7" \
    "DELETE FROM K WHERE MOD(ID, 7000) = 14" \
    "INSERT INTO K SELECT ID + 1, V FROM K WHERE MOD(ID, 7000) = 21"
measure since --tables K --since "$DATA/keep-keys-@BUILD@"
python3 - "$DATA"/since-*/manifest.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    t = [t for t in json.load(open(path))["tables"] if t["name"] == "K"][0]
    c = t["change"]
    print(f"{path}: {c['keys']} keys, {c['deletes']} deletes, {c['rechecked_units']} units rechecked")
PY
