#!/usr/bin/env bash
# What the keys' checksum adds to a sync into PostgreSQL (docs/postgresql.md,
# "Kept in sync"): a sync computes, for each table with a primary key, its
# rows and the sum of a 64-bit hash of each key, once before the link (to
# find rows deleted and added by hand) and once after (for the next sync).
# This times that query against the count(*) a sync ran already, on a
# STOCK-like table of W x 100,000 rows keyed by two integers.
#
#   benches/pg-key-checksum.sh            # W=20 (2,000,000 rows), RUNS=3
#   W=5 RUNS=1 benches/pg-key-checksum.sh
#
# Starts a private cluster (scripts/pg-cluster.sh) unless
# FBUNLOAD_TEST_PG_URI names one. Needs psql.
set -euo pipefail
cd "$(dirname "$0")/.."
W=${W:-20}
RUNS=${RUNS:-3}
if [ -z "${FBUNLOAD_TEST_PG_URI:-}" ]; then
  eval "$(bash scripts/pg-cluster.sh start)"
  trap 'bash scripts/pg-cluster.sh stop "$FBUNLOAD_TEST_PG_DIR"' EXIT
fi
uri=$FBUNLOAD_TEST_PG_URI
psql -q -X "$uri" -c "DROP TABLE IF EXISTS bench_key_checksum; CREATE TABLE bench_key_checksum
  (s_w_id int NOT NULL, s_i_id int NOT NULL, s_quantity int, s_data varchar(50),
  PRIMARY KEY (s_w_id, s_i_id)); INSERT INTO bench_key_checksum SELECT w, i, i % 100,
  repeat('x', 40) FROM generate_series(1, $W) w, generate_series(1, 100000) i" \
  -c "VACUUM ANALYZE bench_key_checksum"
# Milliseconds of one statement, as the server's clock says.
timed() {
  psql -q -X -t -A "$uri" -c "\\timing on" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
count="SELECT count(*) FROM bench_key_checksum"
checksum="SELECT count(*)::text || ':' || coalesce(sum(pg_catalog.hashtextextended(
  ROW(s_w_id, s_i_id)::text, 0)::numeric), 0)::text FROM bench_key_checksum"
c=$(for _ in $(seq "$RUNS"); do timed "$count"; done | median)
k=$(for _ in $(seq "$RUNS"); do timed "$checksum"; done | median)
psql -q -X "$uri" -c "DROP TABLE bench_key_checksum"
printf '| rows | count(*) | keys checksum | per sync (twice) |\n|---:|---:|---:|---:|\n'
printf '| %d | %.0f ms | %.0f ms | %.0f ms |\n' "$((W * 100000))" "$c" "$k" "$(echo "$k * 2" | bc)"
