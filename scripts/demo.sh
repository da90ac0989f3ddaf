#!/usr/bin/env bash
# One command from a fresh checkout to a parallel unload: sets up, builds,
# generates a sample TPC-C-like database on the embedded engine and unloads
# every table of it with 2 workers into demo/out.
#   WAREHOUSES=5 scripts/demo.sh   # a bigger database
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
CARGO_ENV="${CARGO_HOME:-$HOME/.cargo}/env"
[ -f "$CARGO_ENV" ] && . "$CARGO_ENV"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

say "building (release)"
cargo build --release --quiet --bins

mkdir -p demo
say "generating demo/sample.fdb (${WAREHOUSES:-1} warehouse(s))"
./target/release/fbunload-gen --database demo/sample.fdb --warehouses "${WAREHOUSES:-1}" --force

say "unloading every table with 2 workers into demo/out"
rm -rf demo/out
./target/release/fbunload -d demo/sample.fdb -u SYSDBA -p masterkey --parallel 2 -o demo/out

say "the files"
ls -l demo/out
say "first lines of demo/out/ALL_TYPES.csv"
head -n 4 demo/out/ALL_TYPES.csv
