#!/usr/bin/env bash
# Sets up and runs every test: unit tests beside the code, integration tests
# against the real embedded Firebird 5 engine and against Debian's Firebird
# 3.0 server over TCP (installed and started here, and stopped at the end if
# this run started it), golden files; then the Python package's pytest suite
# on the embedded engine.
# FBUNLOAD_SKIP_SERVER_TESTS=1 skips the server part on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CARGO_ENV="${CARGO_HOME:-$HOME/.cargo}/env"
[ -f "$CARGO_ENV" ] && . "$CARGO_ENV"
if [ "${FBUNLOAD_SKIP_SERVER_TESTS:-}" != 1 ]; then
  eval "$(bash scripts/fb3-server.sh)"
  # Stop the server if this run started it, however the run ends; one that
  # was already running belongs to someone else and stays.
  if [ -n "$FBUNLOAD_TEST_SERVER_STARTED_PID" ]; then
    trap 'bash scripts/fb3-server.sh --stop "$FBUNLOAD_TEST_SERVER_STARTED_PID"' EXIT
  fi
fi
cargo test --workspace --all-targets "$@"

# The Python package: built as a wheel from the same code (the dev profile
# reuses the build above), installed into a virtual environment that sees
# the packages setup.sh installed, and tested there.
PYTHON=${PYTHON:-python3}
"$PYTHON" -m maturin build --quiet --profile dev -o target/python-wheel >/dev/null
"$PYTHON" -m venv --system-site-packages target/python-env
wheel=$(ls -t target/python-wheel/fbunload-*.whl | head -1)
target/python-env/bin/python -m pip install --quiet --force-reinstall --no-deps "$wheel"
(cd python/tests && ../../target/python-env/bin/python -m pytest -q -p no:cacheprovider)
