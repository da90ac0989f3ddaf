#!/usr/bin/env bash
# Sets up and runs every test: unit tests beside the code, integration tests
# against the real embedded Firebird 5 engine and against Debian's Firebird
# 3.0 server over TCP (installed and started here), golden files.
# FBUNLOAD_SKIP_SERVER_TESTS=1 skips the server part on purpose.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CARGO_ENV="${CARGO_HOME:-$HOME/.cargo}/env"
[ -f "$CARGO_ENV" ] && . "$CARGO_ENV"
if [ "${FBUNLOAD_SKIP_SERVER_TESTS:-}" != 1 ]; then
  eval "$(bash scripts/fb3-server.sh)"
fi
cargo test --workspace --all-targets "$@"
