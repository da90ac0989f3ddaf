#!/usr/bin/env bash
# A Firebird 5 server over TCP, for the tests and benchmarks of the path
# most users take, run from an installation that already exists: a
# Firebird 5.0 (or 4.0) server installed as Firebird documents it. No
# package registry here ships one, so where none is installed the tests
# that need it say they are skipped.
#
#   eval "$(scripts/fb5-server.sh start [HOME])"
#   scripts/fb5-server.sh stop [HOME]
#   eval "$(scripts/fb5-server.sh private DIR PORT [HOME])"
#
# HOME defaults to $FBUNLOAD_FB5_HOME, then /opt/fbunload-fb5. `start`
# runs the server from HOME on 127.0.0.1:3055 (FBUNLOAD_FB5_PORT), with a
# lock directory of its own (so it never meets the embedded engine's or
# Debian's Firebird 3.0), creates SYSDBA with a random password in its
# security database through the embedded engine of HOME, and prints the
# environment the server tests read (FBUNLOAD_TEST_FB5*; _STARTED is 1
# when this call started it, for the caller to stop). Tests that need
# this server are skipped, saying so, where FBUNLOAD_TEST_FB5 is not set.
#
# `private` starts another server from HOME, all its own, for a test to
# kill: its root DIR/root links to HOME's files (hard links where it can)
# but has its own firebird.conf (port PORT, plus the lines of
# $FB5_PRIVATE_CONF if set) and security database (SuperServer opens that
# exclusively), its own lock directory, databases in DIR/db. With
# FB5_PRIVATE_REPLICATION="JOURNAL ARCHIVE" (two directories, made if
# missing) its replication.conf sends every database that publishes
# (ALTER DATABASE ENABLE PUBLICATION) to the journal in JOURNAL, archived
# into ARCHIVE a second after a segment's last write at the latest: what
# `fbunload follow` reads (docs/postgresql.md, "Live"). It prints
# FB5_PRIVATE_ADDRESS, _DIR, _PASSWORD and _PID.
set -euo pipefail

fail() { echo "fb5-server.sh: $*" >&2; exit 1; }

# The security database of a build in $1: security5.fdb (Firebird 5), or
# security4.fdb of a Firebird 4 build, which this script runs the same way.
security_db() {
  local db
  for db in "$1"/security[0-9].fdb; do [ -f "$db" ] && { echo "${db##*/}"; return; }; done
  fail "no security database in $1"
}

command=${1:-}
case "$command" in
  private)
    dir=${2:?usage: fb5-server.sh private DIR PORT [HOME]}
    port=${3:?usage: fb5-server.sh private DIR PORT [HOME]}
    home=${4:-${FBUNLOAD_FB5_HOME:-/opt/fbunload-fb5}}
    [ -x "$home/bin/firebird" ] || fail "no Firebird 5 server in $home"
    root="$dir/root"
    mkdir -p "$root" "$dir/lock" "$dir/db"
    chmod 1777 "$dir/db"
    for entry in "$home"/*; do
      case "${entry##*/}" in
        firebird.conf|security[0-9].fdb) ;;
        # Hard links where they can be: Firebird 4 refuses a plugin or a
        # character set module loaded through a linked folder (its path
        # then differs from the module's own).
        *) cp -al "$entry" "$root/" 2>/dev/null || ln -sfn "$entry" "$root/${entry##*/}" ;;
      esac
    done
    grep -v -E '^(# fbunload test server|RemoteServicePort|RemoteBindAddress|WireCrypt|WireCompression|MaxParallelWorkers|TcpRemoteBufferSize)' \
      "$home/firebird.conf" >"$root/firebird.conf"
    # The caller's settings (a test's or a benchmark's, one per line)
    # replace these defaults: Firebird reads the first of a name twice set.
    printf 'RemoteServicePort = %s\nRemoteBindAddress = 127.0.0.1\nWireCrypt = Enabled\n' "$port" |
      while IFS= read -r line; do
        printf '%s\n' "${FB5_PRIVATE_CONF:-}" | grep -q "^${line%% *}[ =]" || printf '%s\n' "$line"
      done >>"$root/firebird.conf"
    [ -z "${FB5_PRIVATE_CONF:-}" ] || printf '%s\n' "$FB5_PRIVATE_CONF" >>"$root/firebird.conf"
    if [ -n "${FB5_PRIVATE_REPLICATION:-}" ]; then
      read -r journal archive rest <<<"$FB5_PRIVATE_REPLICATION"
      [ -n "${archive:-}" ] && [ -z "${rest:-}" ] ||
        fail "FB5_PRIVATE_REPLICATION: give two directories, \"JOURNAL ARCHIVE\""
      mkdir -p "$journal" "$archive"
      # The default section: every database of this server that publishes.
      # Removed first: the linked file is HOME's own.
      rm -f "$root/replication.conf"
      printf 'database\n{\n  journal_directory = %s\n  journal_archive_directory = %s\n  journal_archive_timeout = 1\n}\n' \
        "$(cd "$journal" && pwd)" "$(cd "$archive" && pwd)" >"$root/replication.conf"
    fi
    security=$(security_db "$home")
    cp "$home/$security" "$root/$security"
    export FIREBIRD="$root" FIREBIRD_LOCK="$dir/lock" FIREBIRD_TMP="$dir"
    password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    printf "CREATE OR ALTER USER SYSDBA PASSWORD '%s' USING PLUGIN Srp;\nCOMMIT;\n" "$password" |
      "$root/bin/isql" -q -user SYSDBA "$root/$security" >&2
    nohup "$root/bin/firebird" >"$dir/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      sleep 0.2
    done
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null ||
      fail "the private server did not start listening on $port ($dir/server.log)"
    printf 'export FB5_PRIVATE_ADDRESS=127.0.0.1/%s\n' "$port"
    printf 'export FB5_PRIVATE_DIR=%s\n' "$dir/db"
    printf 'export FB5_PRIVATE_PASSWORD=%s\n' "$password"
    printf 'export FB5_PRIVATE_PID=%s\n' "$pid"
    exit 0
    ;;
  start|stop) ;;
  *) fail "usage: fb5-server.sh start [HOME] | stop [HOME] | private DIR PORT [HOME]" ;;
esac

home=${2:-${FBUNLOAD_FB5_HOME:-/opt/fbunload-fb5}}
port=${FBUNLOAD_FB5_PORT:-3055}
run=/tmp/fbunload-fb5
[ -x "$home/bin/firebird" ] || fail "no Firebird 5 server in $home (install one there, or name its directory: FBUNLOAD_FB5_HOME; docs/server.md)"

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

if [ "$command" = stop ]; then
  pid=$(cat "$run/server.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = firebird ]; then
    kill -TERM "$pid"
    for _ in $(seq 50); do listening || break; sleep 0.2; done
  fi
  rm -f "$run/server.pid"
  exit 0
fi

mkdir -p "$run/lock" "$run/db"
chmod 1777 "$run/db"
export FIREBIRD="$home" FIREBIRD_LOCK="$run/lock" FIREBIRD_TMP="$run"
# The server's own settings, kept apart from the engine-wide defaults.
conf="$home/firebird.conf"
if ! grep -q '^# fbunload test server' "$conf"; then
  {
    echo '# fbunload test server'
    echo "RemoteServicePort = $port"
    echo 'RemoteBindAddress = 127.0.0.1'
    echo 'MaxParallelWorkers = 64'
    # Firebird 5 requires wire encryption by default; the tests and
    # benchmarks need both ways (and compression) to be allowed.
    echo 'WireCrypt = Enabled'
    echo 'WireCompression = true'
  } >>"$conf"
fi
started=
if ! listening; then
  started=1
  password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
  # SYSDBA in the security database, through the embedded engine (the
  # server is not running yet, so nothing else holds the file).
  printf "CREATE OR ALTER USER SYSDBA PASSWORD '%s' USING PLUGIN Srp;\nCOMMIT;\n" "$password" |
    "$home/bin/isql" -q -user SYSDBA "$home/$(security_db "$home")" >&2
  printf '%s' "$password" >"$run/password"
  chmod 600 "$run/password"
  echo "==> starting the Firebird 5 server on 127.0.0.1:$port" >&2
  nohup "$home/bin/firebird" >"$run/server.log" 2>&1 &
  echo $! >"$run/server.pid"
  for _ in $(seq 100); do listening && break; sleep 0.2; done
  listening || fail "the Firebird 5 server did not start listening on $port ($run/server.log)"
fi
printf 'export FBUNLOAD_TEST_FB5=127.0.0.1/%s\n' "$port"
printf 'export FBUNLOAD_TEST_FB5_DIR=%s\n' "$run/db"
printf 'export FBUNLOAD_TEST_FB5_PASSWORD=%q\n' "$(cat "$run/password")"
printf 'export FBUNLOAD_TEST_FB5_STARTED=%s\n' "$started"
