#!/usr/bin/env bash
# Apache Arrow ADBC's own validation suite (c/validation of
# apache/arrow-adbc, the C++ tests the PostgreSQL and SQLite drivers run)
# against fbunload's ADBC driver on the embedded engine, where someone has
# built the suite (docs/adbc.md says what it needs); ADBC's source and any
# recipe to build it stay out of this repository.
#
#   scripts/adbc-validation.sh run [DIR] [GTEST ARGS...]   # ~6 s, after the driver's build
#
# DIR (default $FBUNLOAD_ADBC_VALIDATION, then
# ~/.cache/fbunload-adbc-validation) holds the suite as build/adbc-validation.
# `run` builds the driver (cargo, dev profile; FBUNLOAD_ADBC_DRIVER names
# another) and a database of the suite's sample table
# (crates/adbc/validation/make_database.py), and runs every test.
# scripts/test.sh runs it where DIR has it, and says it is skipped where not.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "adbc-validation.sh: $*" >&2; exit 1; }

default_dir=${FBUNLOAD_ADBC_VALIDATION:-${XDG_CACHE_HOME:-$HOME/.cache}/fbunload-adbc-validation}

command=${1:-}
case "$command" in
  run)
    shift
    dir=$default_dir
    if [ $# -gt 0 ] && [[ "$1" != -* ]]; then dir=$1; shift; fi
    suite="$dir/build/adbc-validation"
    [ -x "$suite" ] || fail "no suite in $dir (docs/adbc.md says what it is)"
    CARGO_ENV="${CARGO_HOME:-$HOME/.cargo}/env"
    [ -f "$CARGO_ENV" ] && . "$CARGO_ENV"
    driver=${FBUNLOAD_ADBC_DRIVER:-}
    if [ -z "$driver" ]; then
      cargo build --quiet -p fbunload-adbc
      driver="$PWD/target/debug/libfbunload_adbc.so"
    fi
    work=$(mktemp -d /tmp/fbunload-adbc-validation.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    # A lock directory of the run's own, as scripts/test.sh explains.
    export FIREBIRD_LOCK=${FIREBIRD_LOCK:-$work/lock}
    mkdir -p "$FIREBIRD_LOCK"
    "${PYTHON:-python3}" crates/adbc/validation/make_database.py "$work/validation.fdb"
    FBUNLOAD_ADBC_DRIVER="$driver" FBUNLOAD_ADBC_DATABASE="$work/validation.fdb" \
      ISC_USER=SYSDBA ISC_PASSWORD=masterkey "$suite" "$@"
    ;;
  *) fail "usage: adbc-validation.sh run [DIR] [GTEST ARGS...]" ;;
esac
