#!/usr/bin/env bash
# Two fbunload builds loading the same tables into PostgreSQL, taking
# turns (A B, then B A, ...: a machine whose speed drifts favours neither),
# each run's wall seconds, fbunload's CPU seconds and PostgreSQL's (read
# from /proc: the cluster must run on this machine), then the medians.
#
#   benches/postgres-ab.sh OLD/fbunload NEW/fbunload DB TABLES
#   RUNS=5 J=2 benches/postgres-ab.sh ...
#
# Uses the cluster of FBUNLOAD_TEST_PG_URI and FBUNLOAD_TEST_PG_DIR
# (scripts/pg-cluster.sh start prints both); loads into schema bench_ab.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 4 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
a=$1 b=$2 db=$3 tables=$4
RUNS=${RUNS:-3} J=${J:-2}
: "${FBUNLOAD_TEST_PG_URI:?set it (scripts/pg-cluster.sh start)}"
: "${FBUNLOAD_TEST_PG_DIR:?set it (scripts/pg-cluster.sh start)}"
command -v bc >/dev/null && [ -x /usr/bin/time ] || { echo "needs bc and /usr/bin/time" >&2; exit 1; }
. benches/lib.sh
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT

# one BIN: appends "wall fbunload-CPU PostgreSQL-CPU" to $DATA/BIN's file
one() {
  local bin=$1 out=$2 p0 p1
  p0=$(pg_cpu)
  /usr/bin/time -f '%e %U %S' -o "$DATA/time" "$bin" -d "$db" -u SYSDBA \
    -p "${FB_PASSWORD:-masterkey}" -q -j "$J" -t "$tables" -o "$FBUNLOAD_TEST_PG_URI" \
    --pg-schema bench_ab --overwrite >/dev/null
  sleep 0.3  # the run's backends exit and are counted
  p1=$(pg_cpu)
  read -r wall user system < "$DATA/time"
  echo "$wall $(echo "$user + $system" | bc) $(echo "$p1 - $p0" | bc)" | tee -a "$out"
}

for run in $(seq "$RUNS"); do
  if [ $((run % 2)) = 1 ]; then order="a b"; else order="b a"; fi
  for which in $order; do
    if [ $which = a ]; then bin=$a; else bin=$b; fi
    printf 'run %s %s: ' "$run" "$which"
    one "$bin" "$DATA/$which"
  done
done
printf '%-4s %8s %8s %8s   (medians of %s runs, -j %s; load average %s)\n' '' wall fb_cpu pg_cpu \
  "$RUNS" "$J" "$(cut -d' ' -f1-3 /proc/loadavg)"
for which in a b; do
  printf '%-4s' "$which"
  for col in 1 2 3; do printf ' %8.2f' "$(awk -v c=$col '{print $c}' "$DATA/$which" | median)"; done
  echo
done
psql "$FBUNLOAD_TEST_PG_URI" -X -q -c 'DROP SCHEMA IF EXISTS bench_ab CASCADE' 2>/dev/null || true
