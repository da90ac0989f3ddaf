#!/usr/bin/env bash
# Two or more builds of fbunload on many tables against the same rows in
# a few (benches/scale.sh's part 2 databases), the builds in turn, ROUNDS
# times: --plan and a CSV unload of each database, as medians of wall,
# user and system CPU seconds and the highest peak RSS, then each build's
# many-over-few CPU ratio (the aim of issue 53: 2x at most).
#
# Every unload writes into a directory of its own and none is removed
# before the last run: ext4 scans the inodes freed in the last minutes
# when it makes a file, so thousands of files made right after thousands
# were removed cost far more system time (PERFORMANCE.md, "ext4, a bench
# artifact"). CPU seconds are the figures to compare on a busy machine.
#
#   BINS="/path/to/main/release target/release" TABLES=1000 benches/many-tables-ab.sh
#
# The databases are made (fbunload-gen of the first build) when missing,
# as scale.sh makes them: TABLES and FEW tables, MANY_ROWS rows in all.
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=${BINS:?"BINS: the builds' binary directories, space-separated"}
TABLES=${TABLES:-5000}
FEW=${FEW:-5}
MANY_ROWS=${MANY_ROWS:-1000000}
ROUNDS=${ROUNDS:-3}
J=${J:-2}
DATA=${DATA:-bench-data}
. benches/lib.sh
need_time_and_bc
mkdir -p "$DATA"
first=${BINS%% *}
for tables in "$TABLES" "$FEW"; do
  db=$DATA/scale-many-$tables.fdb
  [ "$tables" = "$FEW" ] && db=$DATA/scale-few-$tables.fdb
  [ -f "$db" ] ||
    "$first/fbunload-gen" --database "$db" --many-tables "$tables" --many-rows "$MANY_ROWS" >&2
done
out=$DATA/ab-out
rm -rf "$out"
mkdir -p "$out"
results=$DATA/ab-results.txt
: > "$results"
n=0
for _ in $(seq "$ROUNDS"); do
  for bin in $BINS; do
    for db in "scale-many-$TABLES" "scale-few-$FEW"; do
      for what in plan csv; do
        n=$((n + 1))
        if [ "$what" = plan ]; then args=(--plan); else args=(-f csv -o "$out/$n"); fi
        /usr/bin/time -f '%e %U %S %M' -o "$DATA/time.txt" "$bin/fbunload" -d "$DATA/$db.fdb" \
          -u SYSDBA -p masterkey -q -j "$J" "${args[@]}" > /dev/null
        echo "$bin $db $what $(cat "$DATA/time.txt")" >> "$results"
      done
    done
  done
done
rm -rf "$out"
echo "$ROUNDS rounds, -j$J, $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the end"
printf '%-28s %-22s %-5s %8s %8s %8s %8s\n' build database run wall user system 'peak MB'
for bin in $BINS; do
  for db in "scale-many-$TABLES" "scale-few-$FEW"; do
    for what in plan csv; do
      rows=$(awk -v b="$bin" -v d="$db" -v w="$what" '$1 == b && $2 == d && $3 == w' "$results")
      med() { cut -d' ' -f"$1" <<< "$rows" | median; }
      peak=$(cut -d' ' -f7 <<< "$rows" | sort -n | tail -1)
      printf '%-28s %-22s %-5s %8.2f %8.2f %8.2f %8d\n' "$bin" "$db" "$what" "$(med 4)" "$(med 5)" \
        "$(med 6)" "$((peak / 1024))"
    done
  done
  cpu() {
    awk -v b="$bin" -v d="$1" '$1 == b && $2 == d && $3 == "csv" {print $5 + $6}' "$results" | median
  }
  printf '%-28s csv CPU, %s over %s tables: %.2fx\n' "$bin" "$TABLES" "$FEW" \
    "$(echo "$(cpu "scale-many-$TABLES") / $(cpu "scale-few-$FEW")" | bc -l)"
done
