# Helpers shared by the benchmark scripts; source it from the repo root
# after setting DATA (scratch directory), BIN (release binaries) and RUNS.

# Stops unless /usr/bin/time and bc, which every script here measures with,
# are installed.
need_time_and_bc() {
  for tool in /usr/bin/time bc; do
    command -v $tool >/dev/null || { echo "needs $tool (apt-get install time bc)" >&2; exit 1; }
  done
}

# BIN: the binaries given, else this checkout's release build, built now.
release_binaries() {
  if [ -z "${BIN:-}" ]; then
    BIN=./target/release
    cargo build --release --quiet --bins
  fi
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# run DB ARGS... : runs fbunload RUNS times (as SYSDBA, password FB_PASSWORD or masterkey; into
# RUN_OUTPUT, default DATA/out); sets SECS (median of RUNS), SPREAD (min-max), PEAK_MB (max),
# CPU (fbunload's user + system seconds, median), BYTES (output size)
run() {
  local db=$1; shift
  local times=() peaks=() cpus=()
  for _ in $(seq "$RUNS"); do
    rm -rf "$DATA/out"
    /usr/bin/time -f '%e %M %U %S' -o "$DATA/time.txt" \
      $BIN/fbunload -d "$db" -u SYSDBA -p "${FB_PASSWORD:-masterkey}" -q -o "${RUN_OUTPUT:-$DATA/out}" "$@"
    read -r secs kb user system < "$DATA/time.txt"
    times+=("$secs"); peaks+=("$kb"); cpus+=("$(echo "$user + $system" | bc)")
  done
  SECS=$(printf '%s\n' "${times[@]}" | median)
  CPU=$(printf '%s\n' "${cpus[@]}" | median)
  SPREAD=$(printf '%s\n' "${times[@]}" | sort -n | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.1f-%.1f", lo, hi}')
  PEAK_MB=$(printf '%s\n' "${peaks[@]}" | sort -n | tail -1 | awk '{printf "%.0f", $1/1024}')
  BYTES=0
  if [ -d "$DATA/out" ]; then BYTES=$(du -sb "$DATA/out" | cut -f1); fi
}

# args_of MODE: fbunload's arguments for a benchmark mode, one of
# fetch-only csv jsonl parquet arrow csv.zst.
args_of() {
  case $1 in
    fetch-only) echo --fetch-only ;;
    csv) echo -f csv ;;
    jsonl) echo -f jsonl ;;
    parquet) echo -f parquet ;;
    arrow) echo -f arrow ;;
    csv.zst) echo -f csv --compress zstd ;;
    *) echo "unknown mode $1 (fetch-only csv jsonl parquet arrow csv.zst)" >&2; exit 1 ;;
  esac
}

# use_pg_cluster: the PostgreSQL cluster FBUNLOAD_TEST_PG_URI names, or a
# private one (scripts/pg-cluster.sh) started now and stopped on exit.
use_pg_cluster() {
  stop_cluster=
  if [ -z "${FBUNLOAD_TEST_PG_URI:-}" ]; then
    eval "$(bash scripts/pg-cluster.sh start)"
    stop_cluster="bash scripts/pg-cluster.sh stop $FBUNLOAD_TEST_PG_DIR"
  fi
  trap 'eval "${stop_cluster:-true}"' EXIT
}

# pg_cpu: CPU seconds (user + system) the cluster in FBUNLOAD_TEST_PG_DIR
# has used so far (its postmaster, the backends it reaped, those alive),
# or 0 where that directory is not known here.
pg_cpu() {
  [ -r "${FBUNLOAD_TEST_PG_DIR:-}/data/postmaster.pid" ] || { echo 0; return; }
  python3 - "$FBUNLOAD_TEST_PG_DIR/data/postmaster.pid" <<'PY'
import os, sys
pm = open(sys.argv[1]).readline().strip()
def times(pid):
    s = open(f"/proc/{pid}/stat").read()
    f = s[s.rindex(")") + 2:].split()
    return f[1], sum(int(x) for x in f[11:15])  # ppid; utime stime cutime cstime
total = times(pm)[1]
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        ppid, t = times(pid)
    except OSError:
        continue
    total += t if ppid == pm else 0
print(total / os.sysconf("SC_CLK_TCK"))
PY
}

# replication_runtime RT DB JOURNAL ARCHIVE: a copy of the firebird-embedded
# runtime in RT, in SuperClassic mode, whose replication.conf sends DB's
# changes to JOURNAL, archived into ARCHIVE every second (both made empty
# here); the engine of this shell and of what it starts is that copy.
replication_runtime() {
  local rt=$1 db=$2 journal=$3 archive=$4
  rm -rf "$rt" "$journal" "$archive"
  mkdir -p "$journal" "$archive"
  cp -a "$(python3 -c 'import firebird.embedded, os; print(os.path.join(os.path.dirname(firebird.embedded.__file__), "runtime"))')" "$rt"
  printf '\nServerMode = SuperClassic\n' >> "$rt/firebird.conf"
  cat > "$rt/replication.conf" <<CONF
database = $db
{
  journal_directory = $journal
  journal_archive_directory = $archive
  journal_archive_timeout = 1
}
CONF
  export FIREBIRD=$rt LD_LIBRARY_PATH=$rt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# fb_sql DB [--one] STATEMENT...: runs the statements on DB (the embedded
# engine, as SYSDBA) through Python's firebird-driver, which
# firebird-embedded installs: each in a transaction of its own, or with
# --one all in one transaction.
fb_sql() {
  PYTHONPATH=benches${PYTHONPATH:+:$PYTHONPATH} python3 - "$@" <<'PY'
import sys
import embedded_driver
embedded_driver.setup()
from firebird.driver import connect
db, statements = sys.argv[1], sys.argv[2:]
one = statements[:1] == ["--one"]
con = connect(db, user="SYSDBA", password="masterkey")
for statement in statements[one:]:
    con.cursor().execute(statement)
    if not one:
        con.commit()
if one:
    con.commit()
con.close()
PY
}

# change_stock DB PCT: the sync benches' change to STOCK, in one
# transaction: PCT% of the rows updated, and a tenth as many given a new
# key (a delete and an insert to a sync).
change_stock() {
  local every
  every=$(python3 -c "print(max(1, round(100 / $2)))")
  fb_sql "$1" --one \
    "UPDATE STOCK SET S_QUANTITY = S_QUANTITY + 1 WHERE MOD(S_I_ID, $every) = 1" \
    "UPDATE STOCK SET S_I_ID = S_I_ID + 10000000 WHERE MOD(S_I_ID, $((every * 10))) = 2"
}
