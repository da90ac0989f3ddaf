#!/usr/bin/env bash
# What the server's TcpRemoteBufferSize (its firebird.conf; 8192 bytes by
# default, at most 32767) does to fbunload over TCP. The server sends rows
# in packets of that size, and each packet is a send on its side and a
# poll and a receive on the client's, so larger packets are fewer system
# calls and wake-ups at both ends.
#
# Two private servers run from the same Firebird 5 installation
# (scripts/fb5-server.sh private), identical but for that one setting,
# each with its own copy of one generated STOCK table (W x 100,000 rows); runs alternate between them
# so the machine's drift falls on both alike. Prints the median of RUNS
# per server, mode and worker count, and the 32767 server's time relative
# to the 8192 one's.
#
#   benches/server-buffer.sh                    # W=5, RUNS=5, -j 2, CSV and fetch-only, clear wire
#   WORKERS="1 2" MODES="fetch-only csv parquet" benches/server-buffer.sh
#   WIRE=encrypted benches/server-buffer.sh     # Firebird 5's default wire
#
# Needs a server build (docs/server.md; FBUNLOAD_FB5_HOME
# or /opt/fbunload-fb5), /usr/bin/time and bc. Ports 3061 and 3062.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${W:-5}
RUNS=${RUNS:-5}
WORKERS=${WORKERS:-2}
MODES=${MODES:-"fetch-only csv"}
WIRE=${WIRE:-clear}
SIZES="8192 32767"
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"
WORK=$(mktemp -d "$PWD/$DATA/server-buffer.XXXXXX")

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# Generated once by the embedded engine, before any server opens a copy.
$BIN/fbunload-gen --database "$WORK/stock.fdb" --warehouses "$W" --tables STOCK >&2
declare -A dsn password
port=3061
for size in $SIZES; do
  mkdir -p "$WORK/$size/db"
  cp "$WORK/stock.fdb" "$WORK/$size/db/stock.fdb"
  eval "$(FB5_PRIVATE_CONF="TcpRemoteBufferSize = $size" \
    scripts/fb5-server.sh private "$WORK/$size" "$port")"
  pids+=("$FB5_PRIVATE_PID")
  dsn[$size]=$FB5_PRIVATE_ADDRESS:$FB5_PRIVATE_DIR/stock.fdb
  password[$size]=$FB5_PRIVATE_PASSWORD
  port=$((port + 1))
done
rm "$WORK/stock.fdb"

case $WIRE in
  clear) WIRE_ARGS="--wire-crypt disabled" ;;
  encrypted) WIRE_ARGS= ;;
  *) echo "unknown WIRE $WIRE (clear encrypted)" >&2; exit 1 ;;
esac

declare -A times
for _ in $(seq "$RUNS"); do
  for workers in $WORKERS; do
    for mode in $MODES; do
      for size in $SIZES; do
        # One run at a time, so that the two servers alternate.
        # shellcheck disable=SC2046,SC2086 # the mode's and wire's arguments are words
        RUNS=1 FB_PASSWORD=${password[$size]} DATA=$WORK run "${dsn[$size]}" \
          --tables STOCK -j "$workers" $(args_of "$mode") $WIRE_ARGS
        times[$workers $mode $size]+="$SECS "
      done
    done
  done
done

printf 'STOCK, %d rows, %s wire, %s cores shared by client and server; medians of %s\n' \
  "$((W * 100000))" "$WIRE" "$(nproc)" "$RUNS"
printf '%-8s %-11s %12s %12s %9s\n' workers mode "8192 B s" "32767 B s" "32767/8192"
for workers in $WORKERS; do
  for mode in $MODES; do
    small=$(printf '%s\n' ${times[$workers $mode 8192]} | median)
    large=$(printf '%s\n' ${times[$workers $mode 32767]} | median)
    printf '%-8s %-11s %12.2f %12.2f %9.2f\n' "$workers" "$mode" "$small" "$large" \
      "$(echo "$large / $small" | bc -l)"
  done
done
