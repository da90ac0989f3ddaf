#!/usr/bin/env bash
# Change sets from the journal against change sets from a scan
# (docs/postgresql.md, "Live", change sets as files), on a generated
# STOCK table (W x 100,000 rows) of which PCT percent of the rows are
# updated (and a tenth as many get a new key) in one transaction, as
# benches/follow.sh changes them:
#
#   scan     fbunload --since base -o inc: reads the changed rows and the
#            counts at a new snapshot, writes the change set
#   journal  fbunload follow --since base -o chain --until-idle 1: reads
#            the journal, writes the same change as a link; its wall time
#            less the 1 s it waits idle before it exits
#
# Both start from one `-f parquet --keep-keys --journal` base run (not
# timed). Prints each one's wall seconds, the journal's row changes per
# second and journal / scan, and checks with pyarrow that the base with
# either change set applied (fbunload apply) is the same table.
#
#   benches/follow-files.sh                      # W=20 (2,000,000 rows), 1% changed, -j2
#   W=2 benches/follow-files.sh                  # smaller, quicker
#   BIN=target/debug W=2 benches/follow-files.sh # a debug build
#
# The database runs on a copy of the firebird-embedded runtime in
# SuperClassic mode with a replication.conf (made here, under DATA), as
# benches/follow.sh does. Needs /usr/bin/time, bc and pyarrow.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${W:-20}
PCT=${PCT:-1}
J=${J:-2}
DATA=${DATA:-bench-data}
. benches/lib.sh
release_binaries
need_time_and_bc
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

BASE=$DATA/stock-sync-w$W.fdb
DB=$DATA/stock-files-w$W.fdb
[ -f "$BASE" ] || $BIN/fbunload-gen --database "$BASE" --warehouses "$W" --tables STOCK >&2
rows=$((W * 100000))

RT=$DATA/files-runtime
OUT=$DATA/files-out
rm -rf "$OUT"
mkdir -p "$OUT"
replication_runtime "$RT" "$DB" "$DATA/files-journal" "$DATA/files-archive"
cp "$BASE" "$DB"

fb_sql "$DB" "ALTER DATABASE ENABLE PUBLICATION" "ALTER DATABASE INCLUDE ALL TO PUBLICATION"
$BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -f parquet --keep-keys \
  --journal "$DATA/files-archive" -o "$OUT/base"
change_stock "$DB" "$PCT"
sleep 2

/usr/bin/time -f '%e' -o "$DATA/time.txt" \
  $BIN/fbunload -d "$DB" -u SYSDBA -p masterkey -q -j "$J" -f parquet --since "$OUT/base" -o "$OUT/inc"
SCAN=$(cat "$DATA/time.txt")
/usr/bin/time -f '%e' -o "$DATA/time.txt" \
  $BIN/fbunload follow -d "$DB" -u SYSDBA -p masterkey --journal "$DATA/files-archive" \
  --journal-live "$DATA/files-journal" --since "$OUT/base" -o "$OUT/chain" --every 3600 \
  --until-idle 1 2>"$DATA/follow.txt"
JOURNAL=$(echo "$(cat "$DATA/time.txt") - 1" | bc -l)
applied=$(grep -o '[0-9,]* row changes\?' "$DATA/follow.txt" | tr -d ',' | grep -o '^[0-9]*' || echo 0)

$BIN/fbunload apply "$OUT/base" "$OUT/inc" -o "$OUT/by-scan" >/dev/null
$BIN/fbunload apply "$OUT/base" "$OUT/chain/00000001" -o "$OUT/by-journal" >/dev/null
same=$(python3 - "$OUT" <<'PY'
import sys
import pyarrow.parquet as pq
out = sys.argv[1]
a, b = (pq.read_table(f"{out}/{d}/STOCK.parquet").sort_by([("S_W_ID", "ascending"), ("S_I_ID", "ascending")])
        for d in ("by-scan", "by-journal"))
print("yes" if a.equals(b) else "NO")
PY
)
printf 'STOCK %s rows, %s%% changed (%s row changes: updates, a tenth of them key updates), -j %s, %s cores\n' \
  "$rows" "$PCT" "$applied" "$J" "$(nproc)"
printf '%-10s %8s %14s %10s\n' 'change set' wall 'changes/s' 'x scan'
printf '%-10s %8.2f %14s %10.2f\n' scan "$SCAN" - 1
printf '%-10s %8.2f %14.0f %10.3f\n' journal "$JOURNAL" "$(echo "$applied / $JOURNAL" | bc -l)" \
  "$(echo "$JOURNAL / $SCAN" | bc -l)"
echo "the base with either applied is the same STOCK: $same"
rm -rf "$DB" "$RT" "$OUT" "$DATA/files-journal" "$DATA/files-archive"
