#!/usr/bin/env bash
# Apache Arrow ADBC's own validation suite (c/validation of
# apache/arrow-adbc, the C++ tests the PostgreSQL and SQLite drivers run)
# against fbunload's ADBC driver on the embedded engine. ADBC's source never
# enters this repository: it is built from a copy given here, with Debian's
# googletest, into DIR (default $FBUNLOAD_ADBC_VALIDATION, then
# ~/.cache/fbunload-adbc-validation):
#
#   scripts/adbc-validation.sh build SRC [DIR]   # SRC: apache/arrow-adbc at commit
#                  # 223664f (a checkout, or its git directory, e.g. from the
#                  # search tool's fetch); installs cmake, g++, libgtest-dev and
#                  # libgmock-dev; 54 s of CPU to compile
#   scripts/adbc-validation.sh run [DIR] [GTEST ARGS...]   # ~6 s, after the driver's build
#
# The quirks are compiled into the suite: build again after changing them.
# scripts/test.sh runs it where DIR has it, and says it is skipped where not
# (nothing downloads it: the source comes from a copy you fetched).
#
# The quirks (crates/adbc/validation/firebird_quirks.cc) say what a
# read-only driver cannot do, each skipped test with its reason. The suite
# writes `SELECT 42` without FROM, which Firebird's grammar does not have:
# `build` gives those SELECTs ` FROM RDB$DATABASE` in its copy (the ones
# the suite lets a driver rewrite, the quirks rewrite). `run` builds the
# driver (cargo, dev profile; FBUNLOAD_ADBC_DRIVER names another) and a
# database of the suite's sample table, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "adbc-validation.sh: $*" >&2; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# The commit the quirks and the patch below were written for.
ADBC_COMMIT=223664fee10b702591378f6b3316452e8ed22a3b
# What the suite, its helpers and the driver manager need of ADBC's c/.
ADBC_PATHS=(c/validation c/include c/driver/common c/driver_manager c/vendor/nanoarrow
  c/vendor/toml++)

default_dir=${FBUNLOAD_ADBC_VALIDATION:-${XDG_CACHE_HOME:-$HOME/.cache}/fbunload-adbc-validation}

command=${1:-}
case "$command" in
  build)
    src=${2:?usage: adbc-validation.sh build SRC [DIR]}
    dir=${3:-$default_dir}
    missing=()
    for pkg in cmake g++ libgtest-dev libgmock-dev; do
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      echo "==> installing ${missing[*]}" >&2
      as_root apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    rm -rf "$dir/src"
    mkdir -p "$dir/src"
    if git --git-dir="$src" rev-parse --verify -q "$ADBC_COMMIT^{commit}" >/dev/null 2>&1; then
      git --git-dir="$src" archive "$ADBC_COMMIT" "${ADBC_PATHS[@]}" | tar -x -C "$dir/src"
    elif git -C "$src" rev-parse --verify -q "$ADBC_COMMIT^{commit}" >/dev/null 2>&1; then
      git -C "$src" archive "$ADBC_COMMIT" "${ADBC_PATHS[@]}" | tar -x -C "$dir/src"
    elif [ -f "$src/c/validation/adbc_validation.h" ]; then
      echo "==> $src is not a git repository: using its files as they are (written for $ADBC_COMMIT)" >&2
      for path in "${ADBC_PATHS[@]}"; do
        mkdir -p "$dir/src/$(dirname "$path")"
        cp -a "$src/$path" "$dir/src/$path"
      done
    else
      fail "$src is not apache/arrow-adbc's source (no c/validation, no commit $ADBC_COMMIT)"
    fi
    # Firebird's FROM for the suite's FROM-less SELECTs: 12 literals, and
    # the two queries built as "SELECT " + ? + ", " + ?.
    statement="$dir/src/c/validation/adbc_validation_statement.cc"
    cp "$statement" "$statement.orig"
    sed -i \
      -e "s/\"SELECT \(42\|1\|'SaShiSuSeSo'\|'hi'\|current_date\)\(;*\)\"/\"SELECT \1 FROM RDB\$DATABASE\2\"/g" \
      -e 's/^\(  query += quirks()->BindParameter(1);\)$/\1 query += " FROM RDB$DATABASE";/' \
      "$statement"
    changed=$(diff "$statement.orig" "$statement" | grep -c '^>' || true)
    [ "$changed" = 14 ] ||
      fail "the FROM patch changed $changed lines of $statement, not 14: not the suite of $ADBC_COMMIT"
    echo "==> gave 14 FROM-less SELECTs of the suite ' FROM RDB\$DATABASE'" >&2
    cmake -S crates/adbc/validation -B "$dir/build" -DADBC_SOURCE="$dir/src" \
      -DCMAKE_BUILD_TYPE=Debug >&2
    cmake --build "$dir/build" -j"$(nproc)" >&2
    echo "==> built $dir/build/adbc-validation" >&2
    ;;
  run)
    shift
    dir=$default_dir
    if [ $# -gt 0 ] && [[ "$1" != -* ]]; then dir=$1; shift; fi
    suite="$dir/build/adbc-validation"
    [ -x "$suite" ] || fail "no suite in $dir: build it first (adbc-validation.sh build SRC)"
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
  *) fail "usage: adbc-validation.sh build SRC [DIR] | run [DIR] [GTEST ARGS...]" ;;
esac
