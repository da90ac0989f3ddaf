#!/usr/bin/env bash
# BLOB-heavy and wide tables at scale (issue 53 item 6): fbunload-gen's
# BLOB_HEAVY (ROWS rows whose text and binary blobs total BLOB_MB MiB) and
# WIDE (WIDE_ROWS rows of COLUMNS columns of nine types, NULLs sprinkled),
# each unloaded in every format of FORMATS at every -j of JOBS and every
# --memory of MEMORY: wall and CPU seconds (user + system, the embedded
# engine's work included), peak RSS, output size, and "bound": what
# PERFORMANCE.md says a run may hold, the table's tiny-row baseline (one
# row, --where "ID = 1") + the workers' batch cap (64 MB) + --memory
# + 3.3 copies of the largest value (Big BLOBs). A run over it is marked
# OVER and the script exits 1 at the end.
#
# Every run passes --verify (row counts at the same snapshot). With
# CHECK=1 (the default) the last run of each format and table is also
# checked value by value: a digest of the file's values against the same
# digest read from Firebird (benches/wide_and_blobs_check.py, through
# firebird-driver); CHECK=all checks every run, CHECK=0 none.
#
#   benches/wide-and-blobs.sh                        # 10,000 rows, 2 GiB; 500 x 100,000
#   ROWS=1000 BLOB_MB=200 WIDE_ROWS=10000 benches/wide-and-blobs.sh   # a quick run
#   TABLES=WIDE JOBS=2 benches/wide-and-blobs.sh     # one table, one -j
#   BIN=target/release benches/wide-and-blobs.sh     # prebuilt binaries
#
# Databases are kept in DATA (bench-data), made again only if missing;
# KEEP=0 removes them at the end (BLOB_HEAVY is about BLOB_MB, and a CSV of
# it 1.5 times that: binary goes out as hex). Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-10000}
BLOB_MB=${BLOB_MB:-2048}
COLUMNS=${COLUMNS:-500}
WIDE_ROWS=${WIDE_ROWS:-100000}
TABLES=${TABLES:-"BLOB_HEAVY WIDE"}
FORMATS=${FORMATS:-"csv parquet"}
JOBS=${JOBS:-"1 2"}
MEMORY=${MEMORY:-"128 64"}
CHECK=${CHECK:-1}
KEEP=${KEEP:-1}
RUNS=1
DATA=${DATA:-bench-data}
. benches/lib.sh
if [ -z "${BIN:-}" ]; then
  BIN=./target/release
  cargo build --release --quiet -p fbunload-cli -p fbunload-gen
fi
need_time_and_bc
mkdir -p "$DATA"
BATCH_CAP_MB=64
over=0

# database TABLE: the database holding TABLE, made now if missing.
database() {
  local db
  case $1 in
    BLOB_HEAVY)
      db=$DATA/blob-heavy-$ROWS-$BLOB_MB.fdb
      [ -f "$db" ] || $BIN/fbunload-gen --database "$db" --tables BLOB_HEAVY \
        --blob-rows "$ROWS" --blob-total-mb "$BLOB_MB" --page-size 16384 >&2 ;;
    WIDE)
      db=$DATA/wide-$COLUMNS-$WIDE_ROWS.fdb
      [ -f "$db" ] || $BIN/fbunload-gen --database "$db" --tables WIDE \
        --wide-columns "$COLUMNS" --wide-rows "$WIDE_ROWS" --page-size 16384 >&2 ;;
    *) echo "unknown table $1 (BLOB_HEAVY, WIDE)" >&2; exit 1 ;;
  esac
  echo "$db"
}

check() {
  PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 benches/wide_and_blobs_check.py "$@"
}

printf '%s cores, load %s\n' "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
for table in $TABLES; do
  db=$(database "$table")
  printf '\n%s: %s (%s MB)\n' "$table" "$db" "$(($(stat -c %s "$db") / 1048576))"
  # The largest value: a blob, or a WIDE row's worth at most (nothing big).
  largest_mb=0
  if [ "$table" = BLOB_HEAVY ]; then
    largest_mb=$(echo "$BLOB_MB / $ROWS / 2" | bc -l)
  fi
  expected=
  if [ "$CHECK" != 0 ]; then
    expected=$(check firebird "$db" "$table")
    printf 'Firebird: %s\n' "$expected"
  fi
  printf '%-8s %3s %7s %8s %8s %8s %9s %8s  %s\n' \
    format -j memory "wall s" "CPU s" "peak MB" "bound MB" "out MB" check
  for format in $FORMATS; do
    run "$db" --tables "$table" --where "ID = 1" $(args_of "$format")
    base=$PEAK_MB
    last_jobs=${JOBS##* } last_memory=${MEMORY##* }
    for jobs in $JOBS; do
      for memory in $MEMORY; do
        run "$db" --tables "$table" -j "$jobs" --memory "$memory" --verify $(args_of "$format")
        bound=$(printf '%.0f' "$(echo "$base + $BATCH_CAP_MB + $memory + 3.3 * $largest_mb" | bc -l)")
        verdict=
        if [ "$CHECK" = all ] || { [ "$CHECK" = 1 ] && [ "$jobs" = "$last_jobs" ] && [ "$memory" = "$last_memory" ]; }; then
          got=$(check file "$DATA/out/$table.$format" "$table")
          if [ "$got" = "$expected" ]; then verdict="values equal"; else verdict="VALUES DIFFER: $got"; over=1; fi
        fi
        if [ "$PEAK_MB" -gt "$bound" ]; then verdict="OVER $verdict"; over=1; fi
        printf '%-8s %3s %7s %8.1f %8.1f %8s %9s %8s  %s\n' "$format" "$jobs" "$memory" \
          "$SECS" "$CPU" "$PEAK_MB" "$bound" "$((BYTES / 1048576))" "$verdict"
      done
    done
    printf '%-8s (one row, ID = 1: %s MB)\n' "$format" "$base"
  done
  rm -rf "$DATA/out"
  [ "$KEEP" = 1 ] || rm -f "$db"
done
exit $over
