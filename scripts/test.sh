#!/usr/bin/env bash
# Sets up and runs every test: unit tests beside the code, integration tests
# against the real embedded Firebird 5 engine, golden files.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo test --workspace --all-targets "$@"
