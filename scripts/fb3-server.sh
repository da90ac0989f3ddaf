#!/usr/bin/env bash
# Installs and starts Debian's Firebird 3.0 server on 127.0.0.1:3050 for the
# remote-path tests (wrong password, TCP, servers without shared snapshots),
# then prints the environment the tests read:
#   eval "$(scripts/fb3-server.sh)"
# FBUNLOAD_TEST_SERVER_STARTED_PID is the server's pid when this call
# started it, empty when one was already listening (someone else's: leave
# it be). `scripts/fb3-server.sh --stop PID` stops the one started.
set -euo pipefail

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

listening() { (exec 3<>/dev/tcp/127.0.0.1/3050) 2>/dev/null; }

# fbguard's pid file holds the server's pid; the guard ends with it.
pidfile=/run/firebird3.0/fbunload-test-server.pid

if [ "${1:-}" = --stop ]; then
  pid=${2:?usage: fb3-server.sh --stop PID}
  # Only the server this script started, and only while it is still that
  # process (pids are reused).
  if [ "$(cat "$pidfile" 2>/dev/null)" != "$pid" ] ||
     [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != firebird ]; then
    echo "==> the Firebird 3.0 server $pid is not running (or not ours): nothing to stop" >&2
    exit 0
  fi
  # Another run that found it listening may still be using it.
  clients=$(ss -Htn state established '( sport = :3050 )' 2>/dev/null | wc -l)
  if [ "$clients" -gt 0 ]; then
    echo "==> leaving the Firebird 3.0 server $pid running: $clients clients are connected" >&2
    exit 0
  fi
  echo "==> stopping the Firebird 3.0 server this run started ($pid)" >&2
  as_root kill -TERM "$pid"
  for _ in $(seq 50); do listening || break; sleep 0.2; done
  ! listening || { echo "the Firebird 3.0 server $pid did not stop" >&2; exit 1; }
  as_root rm -f "$pidfile"
  exit 0
fi

if ! [ -x /usr/sbin/fbguard ]; then
  echo "==> installing firebird3.0-server" >&2
  as_root apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq firebird3.0-server >/dev/null
fi

started=
if ! listening; then
  echo "==> starting the Firebird 3.0 server" >&2
  as_root install -d -o firebird -g firebird "$(dirname "$pidfile")"
  as_root rm -f "$pidfile"
  # No systemd in containers and CI: start the guardian the way the unit file does.
  as_root su -s /bin/sh firebird -c "/usr/sbin/fbguard -daemon -forever -pidfile $pidfile"
  for _ in $(seq 50); do listening && break; sleep 0.2; done
  listening || { echo "Firebird 3.0 did not start listening on 3050" >&2; exit 1; }
  started=$(cat "$pidfile")
fi

# A directory the server (user firebird) can create databases in.
dir=/tmp/fbunload-fb3
as_root install -d -o firebird -g firebird -m 1777 "$dir"
password=$(as_root sh -c '. /etc/firebird/3.0/SYSDBA.password && printf %s "$ISC_PASSWORD"')
printf 'export FBUNLOAD_TEST_SERVER=127.0.0.1/3050\n'
printf 'export FBUNLOAD_TEST_SERVER_DIR=%s\n' "$dir"
printf 'export FBUNLOAD_TEST_SERVER_PASSWORD=%q\n' "$password"
printf 'export FBUNLOAD_TEST_SERVER_STARTED_PID=%s\n' "$started"
