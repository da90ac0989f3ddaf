#!/usr/bin/env bash
# What --resumable costs a run, and what a --resume reads.
#
# For a STOCK of ROWS rows (fbunload-gen, ROWS / 100,000 warehouses), in
# CSV and Parquet: a plain run with main's binary (MAIN_BIN, if given), a
# plain run with this build, and a --resumable run with this build (RUNS
# each, medians): seconds, CPU seconds, peak RSS. Then a --resumable run
# killed (kill -9) once half its units are journaled, the size of what it
# kept, and its --resume with nothing changed since: seconds beside a
# plain run's.
#
#   benches/resume.sh                                            # ROWS=1000000, RUNS=3
#   MAIN_BIN=/work/main/target/release benches/resume.sh         # against main's build
#   BIN=target/debug ROWS=200000 RUNS=1 benches/resume.sh        # a build of your own
#   PG=1 benches/resume.sh                                       # into PostgreSQL instead
#
# PG=1 loads into PostgreSQL (PG_URI, default FBUNLOAD_TEST_PG_URI: eval "$(bash
# scripts/pg-cluster.sh start)"), schema public, --overwrite: a plain load, a --resumable
# one, then a --resumable load killed once half its units are journaled in its staging
# schema, and its --resume with nothing changed (half the units kept, half read). CPU s
# is fbunload's only (PostgreSQL's own is not counted). Needs psql.
#
# The database is kept in DATA (bench-data) and made again only if
# missing; KEEP=0 removes it at the end. Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-1000000}
RUNS=${RUNS:-3}
J=${J:-2}
KEEP=${KEEP:-1}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"

w=$(( (ROWS + 99999) / 100000 ))
db=$DATA/resume-stock-w$w.fdb
if [ ! -f "$db" ]; then
  "$BIN/fbunload-gen" --database "$db" --warehouses "$w" --tables STOCK >&2
fi

printf 'STOCK, %d rows, %d MB, -j%s, %s cores, load average %s, medians of %s\n' \
  "$((w * 100000))" "$(du -m "$db" | cut -f1)" "$J" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$RUNS"
printf '%-34s %9s %9s %9s %11s\n' run seconds 'CPU s' 'peak MB' 'vs plain'

line() {
  printf '%-34s %9.2f %9.2f %9d %10.3fx\n' "$1" "$SECS" "$CPU" "$PEAK_MB" "$(echo "$SECS / $2" | bc -l)"
}

if [ "${PG:-0}" = 1 ]; then
  uri=${PG_URI:-${FBUNLOAD_TEST_PG_URI:?PG=1 needs PG_URI or FBUNLOAD_TEST_PG_URI}}
  sql() { psql "$uri" -Atqc "$1" 2>/dev/null; }
  staging() { sql "SELECT nspname FROM pg_namespace WHERE nspname LIKE '\_fbunload\_staging\_public\_%'"; }
  RUN_OUTPUT=$uri run "$db" -j "$J" --overwrite
  plain=$SECS
  line "postgresql, plain (this build)" "$plain"
  if [ -n "${MAIN_BIN:-}" ]; then
    this=$BIN
    BIN=$MAIN_BIN RUN_OUTPUT=$uri run "$db" -j "$J" --overwrite
    line "postgresql, plain (main)" "$plain"
    BIN=$this
  fi
  RUN_OUTPUT=$uri run "$db" -j "$J" --overwrite --resumable
  line "postgresql, --resumable" "$plain"

  "$BIN/fbunload" -d "$db" -u SYSDBA -p masterkey -q -j "$J" --overwrite --resumable \
    -o "$uri" > /dev/null 2>&1 &
  pid=$!
  while :; do
    s=$(staging || true)
    counts=
    if [ -n "$s" ]; then
      counts=$(sql "SELECT (SELECT count(*) FROM \"$s\"._fbunload_resume_units), (SELECT start->>'units' FROM \"$s\"._fbunload_resume)" || true)
    fi
    done_units=${counts%%|*}; units=${counts##*|}
    if [ -n "$counts" ] && [ -n "$units" ] && [ $((done_units * 2)) -ge "$units" ]; then break; fi
    kill -0 "$pid" 2>/dev/null || { echo "the load ended before it could be killed" >&2; exit 1; }
    sleep 0.05
  done
  kill -9 "$pid"; wait "$pid" 2>/dev/null || true
  # PostgreSQL ends the killed load's sessions once it notices.
  sleep 1
  printf '%-34s %d of %d units, %s kept in %s\n' "postgresql, killed at" "$done_units" "$units" \
    "$(sql "SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '$s'")" "$s"
  /usr/bin/time -f '%e %M %U %S' -o "$DATA/time.txt" \
    "$BIN/fbunload" -d "$db" -u SYSDBA -p masterkey -j "$J" --overwrite --resume \
    -o "$uri" > /dev/null 2> "$DATA/resume.txt"
  read -r SECS kb user system < "$DATA/time.txt"
  CPU=$(echo "$user + $system" | bc)
  PEAK_MB=$(echo "$kb / 1024" | bc)
  line "postgresql, --resume (no change)" "$plain"
  grep '^resumed' "$DATA/resume.txt" | sed 's/^/  /'
  if [ "$KEEP" = 0 ]; then rm -f "$db"; fi
  exit 0
fi

for format in csv parquet; do
  this=$BIN
  run "$db" -j "$J" -f "$format"
  plain=$SECS
  line "$format, plain (this build)" "$plain"
  if [ -n "${MAIN_BIN:-}" ]; then
    BIN=$MAIN_BIN run "$db" -j "$J" -f "$format"
    line "$format, plain (main)" "$plain"
  fi
  BIN=$this
  run "$db" -j "$J" -f "$format" --resumable
  line "$format, --resumable" "$plain"

  # Killed at half its units, then resumed with nothing changed.
  rm -rf "$DATA/out"
  "$BIN/fbunload" -d "$db" -u SYSDBA -p masterkey -q -j "$J" -f "$format" --resumable \
    -o "$DATA/out" > /dev/null 2>&1 &
  pid=$!
  area=$DATA/out/.fbunload-resume
  while :; do
    units=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["units"])' \
      "$area/start.json" 2>/dev/null || echo 0)
    done_units=$(wc -l < "$area/journal.jsonl" 2>/dev/null || echo 0)
    if [ "$units" -gt 0 ] && [ $((done_units * 2)) -ge "$units" ]; then break; fi
    kill -0 "$pid" 2>/dev/null || { echo "the run ended before it could be killed" >&2; exit 1; }
    sleep 0.05
  done
  kill -9 "$pid"; wait "$pid" 2>/dev/null || true
  printf '%-34s %d of %d units, %d MB kept\n' "$format, killed at" "$done_units" "$units" \
    "$(du -sm "$area" | cut -f1)"
  /usr/bin/time -f '%e %M %U %S' -o "$DATA/time.txt" \
    "$BIN/fbunload" -d "$db" -u SYSDBA -p masterkey -q -j "$J" -f "$format" --resume \
    -o "$DATA/out" > /dev/null
  read -r SECS kb user system < "$DATA/time.txt"
  CPU=$(echo "$user + $system" | bc)
  PEAK_MB=$(echo "$kb / 1024" | bc)
  line "$format, --resume (no change)" "$plain"
  python3 -c 'import json,sys; print("  manifest resumed:", json.load(open(sys.argv[1]))["resumed"])' \
    "$DATA/out/manifest.json"
  rm -rf "$DATA/out"
done
if [ "$KEEP" = 0 ]; then rm -f "$db"; fi
