#!/usr/bin/env bash
# Peak memory of `fbunload follow` over one transaction of big blobs
# (docs/postgresql.md, "Live", Memory): ROWS rows of a binary blob of MB
# MiB each inserted in one transaction, then the journal streamed as
# JSON lines (`-o - --format jsonl`, to /dev/null) with --memory 64 and
# with a budget above the transaction (everything held in memory, which
# is what a follow did with blobs before they spilled). Peak RSS is
# /usr/bin/time's %M, stable from run to run, so one run per row.
#
#   benches/follow-blob-memory.sh                  # ROWS=200 MB=1: 200 MiB of blobs
#   ROWS=50 benches/follow-blob-memory.sh
#   BIN=target/debug benches/follow-blob-memory.sh # a debug build
#
# The database runs on a copy of the firebird-embedded runtime in
# SuperClassic mode with a replication.conf (made here, under DATA), as
# benches/follow.sh does. Needs /usr/bin/time and bc.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-200}
MB=${MB:-1}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

DB=$DATA/follow-blobs.fdb
RT=$DATA/follow-blob-runtime
rm -rf "$DB"
replication_runtime "$RT" "$DB" "$DATA/blob-journal" "$DATA/blob-archive"

PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 - "$DB" "$ROWS" "$MB" <<'PY'
import os
import sys
import embedded_driver
embedded_driver.setup()
from firebird.driver import create_database
db, rows, mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
con = create_database(db, user="SYSDBA", password="masterkey")
cur = con.cursor()
cur.execute("CREATE TABLE B (ID INTEGER NOT NULL PRIMARY KEY, X BLOB SUB_TYPE BINARY)")
con.commit()
cur.execute("ALTER DATABASE ENABLE PUBLICATION")
cur.execute("ALTER DATABASE INCLUDE ALL TO PUBLICATION")
con.commit()
# One transaction: every blob waits for its commit in the follow.
for i in range(rows):
    cur.execute("INSERT INTO B VALUES (?, ?)", (i, os.urandom(mb << 20)))
con.commit()
con.close()
PY
# The last segment archived.
sleep 3

# peak_kb MEMORY_MB: peak RSS in KiB of streaming the journal with --memory.
peak_kb() {
  /usr/bin/time -f %M -o "$DATA/time.txt" $BIN/fbunload follow -d "$DB" -u SYSDBA -p masterkey \
    --journal "$DATA/blob-archive" -o - --format jsonl --memory "$1" --until-idle 1 \
    2>"$DATA/follow.txt" | wc -l >"$DATA/lines.txt"
  cat "$DATA/time.txt"
}
total=$((ROWS * MB))
printf 'one transaction of %d blobs of %d MiB (%d MiB), %s cores\n' "$ROWS" "$MB" "$total" "$(nproc)"
printf '%-24s %12s %8s\n' follow 'peak RSS MB' events
for memory in 64 $((total * 4)); do
  kb=$(peak_kb "$memory")
  printf '%-24s %12.0f %8s\n' "--memory $memory" "$(echo "$kb / 1024" | bc -l)" "$(cat "$DATA/lines.txt")"
done
rm -rf "$DB" "$RT" "$DATA/blob-journal" "$DATA/blob-archive"
