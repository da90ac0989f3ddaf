#!/usr/bin/env bash
# `--since` against another build's, in one run (issue 53: a --since
# run's cost should follow the changes). On a STOCK of ROWS rows
# (fbunload-gen; kept in DATA): a full CSV run of each build, then a
# --keep-keys base (Parquet, by NEW), and for each PCT in turn (each
# applied on top of the last: S_I_ID's MOD is 7, so 1% holds 0.1%'s rows)
# PCT% of the rows updated in every unit and a --since run of each build
# from that base, RUNS times in turn, through benches/since_phases.py
# (phase by phase: wall and CPU seconds); the change sets must be
# byte-identical (the script fails if not). OLD_FLAGS passes
# since_phases.py's --two-scans for a build from before the one-scan read
# (main before 2026-11-29).
#
#   OLD=/path/to/old/fbunload benches/since-ab.sh
#   OLD=... NEW=target/release/fbunload ROWS=2000000 PCTS="0.1 1" RUNS=2 benches/since-ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-2000000}
PCTS=${PCTS:-0.1 1}
RUNS=${RUNS:-2}
J=${J:-2}
DATA=${DATA:-bench-data}
OLD=${OLD:?OLD=the other build\'s fbunload}
OLD_FLAGS=${OLD_FLAGS---two-scans}
. benches/lib.sh
need_time_and_bc
if [ -z "${NEW:-}" ]; then
  release_binaries
  NEW=$BIN/fbunload
fi
GEN=${GEN:-$(dirname "$NEW")/fbunload-gen}
mkdir -p "$DATA"
w=$(( (ROWS + 99999) / 100000 ))
db=$DATA/since-ab-w$w.fdb
rm -f "$db"
"$GEN" --database "$db" --warehouses "$w" --tables STOCK >&2
auth=(-u SYSDBA -p masterkey -j "$J" -d "$db")
printf 'STOCK, %s rows, -j%s, %s cores, load average %s\n' "$((w * 100000))" "$J" "$(nproc)" \
  "$(cut -d' ' -f1 /proc/loadavg)"
for build in "$OLD" "$NEW"; do
  rm -rf "$DATA/ab-csv"
  /usr/bin/time -f "full CSV, $build: %e s, %U + %S CPU s, %M KB" \
    "$build" "${auth[@]}" -q -f csv -o "$DATA/ab-csv" > /dev/null
done
rm -rf "$DATA/ab-csv" "$DATA/ab-base"
"$NEW" "${auth[@]}" -q -f parquet --keep-keys -o "$DATA/ab-base" > /dev/null
for pct in $PCTS; do
  every=$(echo "scale=0; (100 / $pct + 0.5) / 1" | bc)
  fb_sql "$db" --one "UPDATE STOCK SET S_QUANTITY = S_QUANTITY + 1 WHERE MOD(S_I_ID, $every) = 7"
  for _ in $(seq "$RUNS"); do
    rm -rf "$DATA/ab-old" "$DATA/ab-new"
    # shellcheck disable=SC2086
    python3 benches/since_phases.py "old, $pct%" $OLD_FLAGS -- "$OLD" "${auth[@]}" -f parquet \
      --since "$DATA/ab-base" -o "$DATA/ab-old"
    python3 benches/since_phases.py "new, $pct%" -- "$NEW" "${auth[@]}" -f parquet \
      --since "$DATA/ab-base" -o "$DATA/ab-new"
  done
  for f in STOCK.upserts.parquet STOCK.deletes.parquet STOCK.keys.parquet; do
    cmp "$DATA/ab-old/$f" "$DATA/ab-new/$f"
  done
  echo "$pct%: the change sets are byte-identical"
done
rm -rf "$DATA/ab-base" "$DATA/ab-old" "$DATA/ab-new"
[ "${KEEP:-1}" = 1 ] || rm -f "$db"
echo "load average $(cut -d' ' -f1 /proc/loadavg)"
