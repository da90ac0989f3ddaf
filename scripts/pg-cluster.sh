#!/usr/bin/env bash
# A private PostgreSQL 15 cluster for the tests of the PostgreSQL
# destination (docs/postgresql.md): initdb into a temporary directory, its
# own port on 127.0.0.1, run as a non-root user (fbunload-pg, made here)
# where the caller is root, password authentication, TLS on (a CA of its
# own; FBUNLOAD_TEST_PG_TLS names its certificates). Prints the
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
  # TLS as a production server has it (docs/postgresql.md): a CA of the
  # run's own, a server certificate for "localhost" only (so verify-full
  # to 127.0.0.1 fails while verify-ca passes), a client certificate for
  # the role fbunload_cert (cert authentication), and the role
  # fbunload_tls that may log in over TLS only. EC keys: made in
  # milliseconds.
  tls=$dir/tls
  mkdir -p "$tls"
  (
    cd "$tls"
    key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
    key ca.key
    openssl req -x509 -new -key ca.key -days 30 -subj "/CN=fbunload test CA" -out ca.crt
    sign() { # NAME CN EXTENSIONS
      key "$1.key"
      openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
      printf '%s
' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
        -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    }
    sign server localhost $'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth'
    sign client fbunload_cert 'extendedKeyUsage=clientAuth'
    chmod 600 ./*.key
  ) || { echo "pg-cluster.sh: openssl could not make the test certificates" >&2; exit 1; }
  cp "$tls/server.crt" "$tls/server.key" "$tls/ca.crt" "$dir/data/"
  [ "$(id -u)" -eq 0 ] && chown "$user" "$dir/data/server.crt" "$dir/data/server.key" "$dir/data/ca.crt"
  hba=$dir/data/pg_hba.conf
  {
    printf 'hostssl all fbunload_cert 127.0.0.1/32 cert\n'
    printf 'hostssl all fbunload_tls 127.0.0.1/32 scram-sha-256\n'
    printf 'hostnossl all fbunload_tls 127.0.0.1/32 reject\n'
    cat "$hba"
  } >"$hba.new" && mv "$hba.new" "$hba"
  [ "$(id -u)" -eq 0 ] && chown "$user" "$hba"
  # A free port: the kernel's choice for a socket bound to port 0.
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # Small memory: the machine is shared; no fsync: test data is throwaway.
  # max_locks_per_transaction: a load publishes all its tables in one
  # transaction, several locks a table (docs/PERFORMANCE.md, "Many
  # tables"), and the lock table holds this many per connection slot; the
  # default 64 stops `PG=1 TABLES=5000 benches/scale.sh` ("out of shared
  # memory"). 1024 holds 5,000 tables, for 30 MB more shared memory
  # (`SHOW shared_memory_size`: 70 MB, 40 MB with 64).
  # FBUNLOAD_PG_SHARED_BUFFERS: a bench's knob (benches/follow.sh sets it
  # to what a server holding the table would have); the tests keep 32MB.
  as_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o \
    "-p $port -c listen_addresses=127.0.0.1 -k $dir \
     -c shared_buffers=${FBUNLOAD_PG_SHARED_BUFFERS:-32MB} -c fsync=off \
     -c synchronous_commit=off -c full_page_writes=off -c max_connections=60 \
     -c max_locks_per_transaction=1024 \
     -c ssl=on -c ssl_ca_file=ca.crt" >&2 ||
    { tail -20 "$dir/server.log" >&2; exit 1; }
  printf 'export FBUNLOAD_TEST_PG_DIR=%s\n' "$dir"
  printf 'export PGHOST=127.0.0.1 PGPORT=%s PGUSER=postgres PGPASSWORD=%s\n' "$port" "$password"
  printf 'export FBUNLOAD_TEST_PG_URI=postgresql://postgres:%s@127.0.0.1:%s/postgres\n' "$password" "$port"
  printf 'export FBUNLOAD_TEST_PG_TLS=%s\n' "$tls"
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
