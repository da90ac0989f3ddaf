#!/usr/bin/env bash
# fbunload against a Firebird 5 server over TCP, the path most users take:
# seconds (median of RUNS) for --fetch-only (the server's and the wire's
# limit: the same attachments, snapshot and units, rows fetched and
# dropped), CSV and Parquet at each worker count, with the wire encrypted
# (Firebird 5's default) and in clear (--wire-crypt disabled), on one
# generated STOCK table (W x 100,000 rows), with the workers as threads of
# fbunload (--processes 0) and in reader processes (PROCESSES: each a
# --processes value). Client and server share this machine's cores: the
# server's CPU time and fbunload's (reader processes included) are shown
# beside the wall time (with two cores, (server + client) / 2 is the
# floor), and fbunload's CPU per row, also against the first worker
# count's (where Firebird's client library contends, it grows with -j).
#
#   eval "$(scripts/fb5-server.sh start)"     # the server (docs/server.md)
#   benches/server.sh                         # 2 cores: W=5, 1 and 2 workers, threads and 2 processes
#   W=20 WORKERS="1 4 8 16" PROCESSES="0 auto" benches/server.sh       # 16 cores
#   W=20 WORKERS="4 16" PROCESSES="0 auto" WIRES=clear MODES="fetch-only csv" benches/server.sh
#                                             # client CPU per row at -j4 vs -j16
#   WIRES=encrypted MODES="fetch-only csv" benches/server.sh
#
# Compare figures within one run only. Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${FBUNLOAD_TEST_FB5:?start a server first: eval \"\$(scripts/fb5-server.sh start)\"}"
W=${W:-5}
RUNS=${RUNS:-3}
WORKERS=${WORKERS:-"1 2"}
PROCESSES=${PROCESSES:-"0 2"}
MODES=${MODES:-"fetch-only csv parquet"}
WIRES=${WIRES:-"encrypted clear"}
DATA=${DATA:-bench-data}
export FB_PASSWORD=$FBUNLOAD_TEST_FB5_PASSWORD
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"
# Made by the embedded engine in the server's directory (same machine), then
# read through the server.
FILE=$FBUNLOAD_TEST_FB5_DIR/stock-w$W.fdb
[ -f "$FILE" ] || $BIN/fbunload-gen --database "$FILE" --warehouses "$W" --tables STOCK,ITEM >&2
DSN=$FBUNLOAD_TEST_FB5:$FILE
SERVER_PID=$(cat /tmp/fbunload-fb5/server.pid 2>/dev/null || true)

server_cpu() { [ -n "$SERVER_PID" ] && awk '{print ($14 + $15) / 100}' "/proc/$SERVER_PID/stat" || echo 0; }

wire_of() {
  case $1 in
    encrypted) echo ;;
    clear) echo --wire-crypt disabled ;;
    compressed) echo --wire-compression ;;
    *) echo "unknown wire $1 (encrypted clear compressed)" >&2; exit 1 ;;
  esac
}

rows=$((W * 100000))
printf 'STOCK over TCP (%s), %d rows, %s cores shared by client and server\n' \
  "$FBUNLOAD_TEST_FB5" "$rows" "$(nproc)"
printf '%-10s %-8s %-6s %-10s %9s %11s %10s %12s %12s %11s %9s %9s %9s\n' \
  wire workers procs mode "median s" "min-max s" rows/s "server cpu s" "client cpu s" \
  "client us/row" "vs first" "vs fetch" "vs -j1"
for wire in $WIRES; do
  declare -A first=() first_cpu=()
  for j in $WORKERS; do
    for procs in $PROCESSES; do
      limit=
      for mode in $MODES; do
        before=$(server_cpu)
        # shellcheck disable=SC2046
        run "$DSN" --tables STOCK -j "$j" --processes "$procs" $(args_of "$mode") $(wire_of "$wire")
        cpu=$(echo "($(server_cpu) - $before) / $RUNS" | bc -l)
        per_row=$(echo "$CPU * 1000000 / $rows" | bc -l)
        [ "$mode" = fetch-only ] && limit=$SECS
        ratio=-
        [ -n "$limit" ] && ratio=$(printf '%.2f' "$(echo "$SECS / $limit" | bc -l)")
        [ -n "${first[$procs$mode]:-}" ] || { first[$procs$mode]=$SECS; first_cpu[$procs$mode]=$per_row; }
        speedup=$(printf '%.2fx' "$(echo "${first[$procs$mode]} / $SECS" | bc -l)")
        cpu_growth=$(printf '%.2fx' "$(echo "$per_row / ${first_cpu[$procs$mode]}" | bc -l)")
        printf '%-10s %-8s %-6s %-10s %9.2f %11s %10.0f %12.2f %12.2f %11.2f %9s %9s %9s\n' \
          "$wire" "$j" "$procs" "$mode" "$SECS" "$SPREAD" "$(echo "$rows / $SECS" | bc -l)" \
          "$cpu" "$CPU" "$per_row" "$cpu_growth" "$ratio" "$speedup"
      done
    done
  done
  unset first first_cpu
done
# "vs first": client CPU per row against the same procs and mode at the
# first worker count; "vs -j1": speed against it.
