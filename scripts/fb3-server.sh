#!/usr/bin/env bash
# Installs and starts Debian's Firebird 3.0 server on 127.0.0.1:3050 for the
# remote-path tests (wrong password, TCP, servers without shared snapshots),
# then prints the environment the tests read:
#   eval "$(scripts/fb3-server.sh)"
set -euo pipefail

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! [ -x /usr/sbin/fbguard ]; then
  echo "==> installing firebird3.0-server" >&2
  as_root apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq firebird3.0-server >/dev/null
fi

listening() { (exec 3<>/dev/tcp/127.0.0.1/3050) 2>/dev/null; }
if ! listening; then
  echo "==> starting the Firebird 3.0 server" >&2
  # No systemd in containers and CI: start the guardian the way the unit file does.
  as_root su -s /bin/sh firebird -c "/usr/sbin/fbguard -daemon -forever"
  for _ in $(seq 50); do listening && break; sleep 0.2; done
  listening || { echo "Firebird 3.0 did not start listening on 3050" >&2; exit 1; }
fi

# A directory the server (user firebird) can create databases in.
dir=/tmp/fbunload-fb3
as_root install -d -o firebird -g firebird -m 1777 "$dir"
password=$(as_root sh -c '. /etc/firebird/3.0/SYSDBA.password && printf %s "$ISC_PASSWORD"')
printf 'export FBUNLOAD_TEST_SERVER=127.0.0.1/3050\n'
printf 'export FBUNLOAD_TEST_SERVER_DIR=%s\n' "$dir"
printf 'export FBUNLOAD_TEST_SERVER_PASSWORD=%q\n' "$password"
