#!/usr/bin/env bash
# A private PostgreSQL 15 cluster for the tests of the PostgreSQL
# destination (docs/postgresql.md): initdb into a temporary directory, its
# own port on 127.0.0.1, run as a non-root user (fbunload-pg, made here)
# where the caller is root, password authentication. Prints the
# environment the tests read:
#   eval "$(bash scripts/pg-cluster.sh start)"
# and `bash scripts/pg-cluster.sh stop DIR` stops the cluster in DIR (the
# FBUNLOAD_TEST_PG_DIR printed) and removes it. Needs Debian's
# postgresql-15 (scripts/setup.sh installs it).
set -euo pipefail

bin=${FBUNLOAD_PG_BIN:-/usr/lib/postgresql/15/bin}
user=fbunload-pg

as_user() {
  if [ "$(id -u)" -eq 0 ]; then
    # runuser keeps no terminal and asks for no password.
    runuser -u "$user" -- "$@"
  else
    "$@"
  fi
}

case "${1:-}" in
start)
  [ -x "$bin/initdb" ] || { echo "no PostgreSQL 15 in $bin (scripts/setup.sh installs postgresql-15)" >&2; exit 1; }
  if [ "$(id -u)" -eq 0 ] && ! id "$user" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  fi
  dir=$(mktemp -d /tmp/fbunload-pg.XXXXXX)
  chmod 755 "$dir"
  [ "$(id -u)" -eq 0 ] && chown "$user" "$dir"
  password=fbunload-test
  printf '%s\n' "$password" >"$dir/pwfile"
  [ "$(id -u)" -eq 0 ] && chown "$user" "$dir/pwfile"
  as_user "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" \
    --auth=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
  rm -f "$dir/pwfile"
  # A free port: the kernel's choice for a socket bound to port 0.
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # Small memory: the machine is shared; no fsync: test data is throwaway.
  as_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o \
    "-p $port -c listen_addresses=127.0.0.1 -k $dir -c shared_buffers=32MB -c fsync=off \
     -c synchronous_commit=off -c full_page_writes=off -c max_connections=60" >&2 ||
    { tail -20 "$dir/server.log" >&2; exit 1; }
  printf 'export FBUNLOAD_TEST_PG_DIR=%s\n' "$dir"
  printf 'export PGHOST=127.0.0.1 PGPORT=%s PGUSER=postgres PGPASSWORD=%s\n' "$port" "$password"
  printf 'export FBUNLOAD_TEST_PG_URI=postgresql://postgres:%s@127.0.0.1:%s/postgres\n' "$password" "$port"
  ;;
stop)
  dir=${2:?usage: pg-cluster.sh stop DIR}
  case "$dir" in /tmp/fbunload-pg.*) ;; *) echo "$dir: not a cluster of this script" >&2; exit 1 ;; esac
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_user "$bin/pg_ctl" -D "$dir/data" -w -t 60 -m fast stop >&2 || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: pg-cluster.sh start | stop DIR" >&2
  exit 2
  ;;
esac
