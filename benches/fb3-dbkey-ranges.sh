#!/usr/bin/env bash
# Why fbunload does not split tables by DB_KEY ranges on Firebird 3.
#
# Starts Debian's Firebird 3.0 server (scripts/fb3-server.sh), fills a table
# with ROWS rows and shows, with isql's statistics:
#   - the DB_KEY bytes of consecutive rows (is byte order record order?);
#   - a full COUNT(*) against a narrow DB_KEY range: same plan, same reads?
# Rerun: benches/fb3-dbkey-ranges.sh            (ROWS=1000000 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/fb3-server.sh)"
ROWS=${ROWS:-1000000}
db="$FBUNLOAD_TEST_SERVER:$FBUNLOAD_TEST_SERVER_DIR/dbkey-ranges.fdb"
rm -f "$FBUNLOAD_TEST_SERVER_DIR/dbkey-ranges.fdb"
auth="USER 'SYSDBA' PASSWORD '$FBUNLOAD_TEST_SERVER_PASSWORD'"

isql-fb -q <<EOF >/dev/null
CREATE DATABASE '$db' $auth PAGE_SIZE 4096;
CREATE TABLE T (ID INTEGER, PAD VARCHAR(100));
COMMIT;
SET TERM ^;
EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < $ROWS) DO BEGIN
  INSERT INTO T VALUES (:I, 'x' || (:I * 7919) || RPAD('', 60, 'y')); I = I + 1; END END^
SET TERM ;^
COMMIT;
EOF

isql-fb -q <<EOF 2>&1 | grep -E 'PLAN|^ +[0-9]|DB_KEY|Elapsed|Reads|Fetches|^--'
CONNECT '$db' $auth;
SELECT '-- consecutive rows and their DB_KEYs' FROM RDB\$DATABASE;
SELECT ID, RDB\$DB_KEY FROM T WHERE ID IN (0, 1, 254, 255, 256);
SET STATS ON;
SET PLAN ON;
SELECT '-- the whole table' FROM RDB\$DATABASE;
SELECT COUNT(*) FROM T;
SELECT '-- a DB_KEY range that holds a few hundred rows' FROM RDB\$DATABASE;
SELECT COUNT(*) FROM T WHERE RDB\$DB_KEY >= x'8000000001000000' AND RDB\$DB_KEY < x'8000000001100000';
EOF
