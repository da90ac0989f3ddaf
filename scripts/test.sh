#!/usr/bin/env bash
# Sets up, checks formatting (cargo fmt) and lints (cargo clippy, warnings
# as errors), and runs every test: unit tests beside the code, integration tests
# against the real embedded Firebird 5 engine, against Debian's Firebird
# 3.0 server over TCP (installed and started here) and against a Firebird 5
# server where one is installed (scripts/fb5-server.sh), each stopped at the
# end if this run started it; golden files; Apache Arrow ADBC's validation
# suite against the ADBC driver, where one is built (scripts/adbc-validation.sh);
# then the Python package's pytest suite, and its wheel installed into a
# fresh virtual environment running the Quick start; then the Windows build under Wine
# (scripts/wine-smoke.sh), where Wine and Rust's Windows target are
# installed (setup.sh installs them).
# FBUNLOAD_SKIP_SERVER_TESTS=1 skips the server part on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CARGO_ENV="${CARGO_HOME:-$HOME/.cargo}/env"
[ -f "$CARGO_ENV" ] && . "$CARGO_ENV"
# Formatting and lints first: a change that fails them fails here, in
# seconds, before the long part.
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
stop_servers=
# Stop the servers this run started, however it ends; one that was already
# running belongs to someone else and stays.
# A failed run shows the Firebird 3.0 server's log first: a server that
# crashed or refused shows there, not in the test's output.
show_server_log() {
  [ "$1" = 0 ] && return 0
  echo "==> the run failed; the end of the Firebird 3.0 server's log:" >&2
  tail -n 40 /var/log/firebird/firebird3.0.log >&2 2>/dev/null || true
}
trap 'rc=$?; show_server_log $rc; eval "${stop_servers:-true}"' EXIT
if [ "${FBUNLOAD_SKIP_SERVER_TESTS:-}" != 1 ]; then
  eval "$(bash scripts/fb3-server.sh)"
  if [ -n "$FBUNLOAD_TEST_SERVER_STARTED_PID" ]; then
    stop_servers='bash scripts/fb3-server.sh --stop "$FBUNLOAD_TEST_SERVER_STARTED_PID"'
  fi
fi
# A Firebird 5 server, where one is installed (docs/server.md): its
# tests say they are skipped when none runs.
fb5_home=${FBUNLOAD_FB5_HOME:-/opt/fbunload-fb5}
if [ -x "$fb5_home/bin/firebird" ] && [ "${FBUNLOAD_SKIP_SERVER_TESTS:-}" != 1 ]; then
  eval "$(bash scripts/fb5-server.sh start "$fb5_home")"
  if [ -n "$FBUNLOAD_TEST_FB5_STARTED" ]; then
    stop_servers="${stop_servers:-true}; bash scripts/fb5-server.sh stop $fb5_home"
  fi
else
  echo "==> no Firebird 5 server installed in $fb5_home: its tests are skipped (docs/server.md)" >&2
fi
# A private PostgreSQL 15 cluster for the PostgreSQL destination's tests
# (scripts/pg-cluster.sh), stopped at the end; where it cannot start, they
# say they are skipped.
if [ -z "${FBUNLOAD_TEST_PG_URI:-}" ]; then
  if pg_env=$(bash scripts/pg-cluster.sh start); then
    eval "$pg_env"
    stop_servers="${stop_servers:-true}; bash scripts/pg-cluster.sh stop $FBUNLOAD_TEST_PG_DIR"
  else
    echo "==> the private PostgreSQL cluster did not start: its tests are skipped" >&2
  fi
fi
# The embedded engine's lock files go to a directory of this run's own:
# in the shared default (/tmp/firebird) a lock file another engine left
# for a deleted database can meet a new test database that got the same
# inode, and the engine then refuses it ("engine instance incompatible").
# Every process of the run (tests, the fbunload they start, pytest's
# firebird-driver) inherits it, so they still see each other's locks.
if [ -z "${FIREBIRD_LOCK:-}" ]; then
  FIREBIRD_LOCK=$(mktemp -d /tmp/fbunload-test-lock.XXXXXX)
  export FIREBIRD_LOCK
  stop_servers="${stop_servers:-true}; rm -rf $FIREBIRD_LOCK"
fi
cargo test --workspace --all-targets "$@"

# Apache Arrow ADBC's own validation suite against the ADBC driver, where
# someone built it (docs/adbc.md says what it needs).
adbc_suite=${FBUNLOAD_ADBC_VALIDATION:-${XDG_CACHE_HOME:-$HOME/.cache}/fbunload-adbc-validation}
if [ -x "$adbc_suite/build/adbc-validation" ]; then
  bash scripts/adbc-validation.sh run "$adbc_suite" --gtest_brief=1
else
  echo "==> no ADBC validation suite in $adbc_suite: its tests are skipped (docs/adbc.md)" >&2
fi

# The Python package: built as a wheel from the same code (the dev profile
# reuses the build above), installed into a virtual environment that sees
# the packages setup.sh installed, and tested there.
PYTHON=${PYTHON:-python3}
"$PYTHON" -m maturin build --quiet --profile dev -o target/python-wheel >/dev/null
"$PYTHON" -m venv --system-site-packages target/python-env
wheel=$(ls -t target/python-wheel/fbunload-*.whl | head -1)
target/python-env/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheel"
(cd python/tests && ../../target/python-env/bin/python -m pytest -q -p no:cacheprovider)

# The same wheel as a user installs one (README's Install): into a fresh
# virtual environment that sees none of this machine's Python packages,
# its dependencies and the engine from PyPI, then the Quick start from it.
# FIREBIRD is dropped so that the engine found is the environment's own.
fresh=$PWD/target/python-fresh
rm -rf "$fresh"
start=$(date +%s)
"$PYTHON" -m venv "$fresh"
"$fresh/bin/python" -m pip install --quiet "$wheel[embedded]"
installed=$(($(date +%s) - start))
(
  mkdir "$fresh/try" && cd "$fresh/try"
  fb() { env -u FIREBIRD "$fresh/bin/fbunload" "$@"; }
  said=$(fb sample shop.fdb 2>&1) || { echo "$said" >&2; exit 1; }
  fb -d shop.fdb -q -o out
  fb -d shop.fdb -q -f parquet --verify -o lake
  fb check lake >/dev/null
  plan=$(fb -d shop.fdb --plan)
  grep -q "python-fresh/.*(Python package firebird-embedded)" <<<"$plan" ||
    { echo "the fresh environment's fbunload did not load its own engine: $plan" >&2; exit 1; }
  env -u FIREBIRD "$fresh/bin/python" -c 'import fbunload; assert fbunload.read_arrow("shop.fdb", "STOCK").num_rows > 0'
)
echo "==> the wheel in a fresh virtual environment: installed in ${installed} s, Quick start in $(($(date +%s) - start - installed)) s"

# The Windows build, for real, under Wine: against the Linux tools built
# above (a release build of them would take minutes more).
if command -v wine >/dev/null 2>&1 &&
  rustup target list --installed 2>/dev/null | grep -qx x86_64-pc-windows-gnu; then
  LINUX_BIN=$PWD/target/debug bash scripts/wine-smoke.sh
else
  echo "==> no Wine or no Rust target x86_64-pc-windows-gnu: the Windows build is not tested (scripts/setup.sh installs them)" >&2
fi
