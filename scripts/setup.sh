#!/usr/bin/env bash
# Installs what fbunload needs to build and to run on the embedded Firebird 5
# engine: Debian's libtommath1 and libicu72, the firebird-embedded Python
# package, pyarrow, pandas, Dask, PySpark (with Debian's Java) and the other
# packages the tests use, and Rust (rustup) if there is no cargo; and what
# tests the Windows build under Wine (scripts/wine-smoke.sh): Wine,
# MinGW-w64, unzip and Rust's x86_64-pc-windows-gnu target
# (FBUNLOAD_SKIP_WINE=1 leaves them out).
# Safe to run again: it only installs what is missing.
set -euo pipefail

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing_debs=()
# firebird3.0-examples: Firebird's own EMPLOYEE script, which the tests
# build a database from (crates/cli/tests/arrays.rs).
for pkg in libtommath1 libicu72 firebird3.0-examples; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing_debs+=("$pkg")
done
# postgresql-15: the private cluster the PostgreSQL destination's tests
# run against (scripts/pg-cluster.sh).
[ -x /usr/lib/postgresql/15/bin/initdb ] || missing_debs+=(postgresql-15)
# Java for the Spark tests (fbunload.spark): Debian's default runtime
# (17 on bookworm), which Spark 4 runs on.
command -v java >/dev/null 2>&1 || missing_debs+=(default-jre-headless)
# Rust links through the system's C compiler (and zstd's C code needs it).
command -v cc >/dev/null 2>&1 || missing_debs+=(gcc libc6-dev)
if [ "${FBUNLOAD_SKIP_WINE:-}" != 1 ]; then
  command -v wine >/dev/null 2>&1 || missing_debs+=(wine wine64)
  command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing_debs+=(mingw-w64)
  command -v unzip >/dev/null 2>&1 || missing_debs+=(unzip)
fi
if [ ${#missing_debs[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing_debs[*]}"
  as_root apt-get update -qq
  as_root apt-get install -y -qq "${missing_debs[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
# Debian's own python3 refuses system-wide pip installs (PEP 668); there
# the packages go to the user's site-packages, which python3 still reads.
pip_install() {
  if ! "$PYTHON" -m pip --version >/dev/null 2>&1; then
    as_root apt-get update -qq
    as_root apt-get install -y -qq python3-pip >/dev/null
  fi
  local log
  log=$(mktemp)
  if ! "$PYTHON" -m pip install --quiet "$@" 2>"$log"; then
    if grep -q externally-managed "$log"; then
      "$PYTHON" -m pip install --quiet --user --break-system-packages "$@"
    else
      cat "$log" >&2
      rm -f "$log"
      return 1
    fi
  fi
  rm -f "$log"
}

# The Python package is tested in a virtual environment over these packages.
if ! "$PYTHON" -c 'import ensurepip' 2>/dev/null; then
  as_root apt-get update -qq
  as_root apt-get install -y -qq python3-venv >/dev/null
fi

if ! "$PYTHON" -c 'import firebird.embedded' 2>/dev/null; then
  say "installing the embedded Firebird engine (pip: firebird-embedded)"
  pip_install firebird-embedded
fi

# Python packages the tests read fbunload's output with: pyarrow (Parquet
# and Arrow files, CSV as pyarrow reads it) and pandas (CSV as most users
# read it), DuckDB (Parquet as analytics engines read it); for the Python
# package: maturin (builds it), pytest, polars, firebird-driver (the
# reference driver its values are compared with), and Dask with distributed
# (fbunload.dask), the ADBC driver manager (fbunload.adbc), PySpark 4
# (fbunload.spark; pyspark.sql.datasource is new in 4.0) and MkDocs (the
# docs book, built by test_readme.py). Each module name maps to its pip
# package.
missing_py=()
for spec in pyarrow.parquet:pyarrow pandas:pandas duckdb:duckdb maturin:maturin \
    pytest:pytest polars:polars firebird.driver:firebird-driver \
    dask.dataframe:dask[dataframe] distributed:distributed \
    adbc_driver_manager:adbc-driver-manager 'pyspark.sql.datasource:pyspark>=4,<5' \
    mkdocs:mkdocs; do
  "$PYTHON" -c "import ${spec%%:*}" 2>/dev/null || missing_py+=("${spec##*:}")
done
if [ ${#missing_py[@]} -gt 0 ]; then
  say "installing Python packages for the tests: ${missing_py[*]}"
  pip_install "${missing_py[@]}"
fi

CARGO_ENV="${CARGO_HOME:-$HOME/.cargo}/env"
if ! command -v cargo >/dev/null 2>&1 && [ -f "$CARGO_ENV" ]; then
  . "$CARGO_ENV"
fi
if ! command -v cargo >/dev/null 2>&1; then
  # Rust's own installer, fetched directly (it is what https://rustup.rs
  # runs): the stable toolchain into ~/.cargo, nothing system-wide.
  say "installing Rust (rustup, stable toolchain, into ${CARGO_HOME:-~/.cargo})"
  if ! command -v curl >/dev/null 2>&1; then
    as_root apt-get update -qq
    as_root apt-get install -y -qq curl ca-certificates >/dev/null
  fi
  # The installer must be named rustup-init: it picks its role by name.
  rustup_dir=$(mktemp -d)
  curl --proto '=https' --tlsv1.2 -sSf -o "$rustup_dir/rustup-init" \
    "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"
  chmod +x "$rustup_dir/rustup-init"
  "$rustup_dir/rustup-init" -y --quiet --profile minimal --default-toolchain stable
  rm -rf "$rustup_dir"
  . "$CARGO_ENV"
fi
# scripts/test.sh checks formatting and lints first.
if command -v rustup >/dev/null 2>&1; then
  for component in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$component" ||
      { say "adding Rust's $component"; rustup component add "$component" >/dev/null; }
  done
fi
if [ "${FBUNLOAD_SKIP_WINE:-}" != 1 ] && command -v rustup >/dev/null 2>&1 &&
  ! rustup target list --installed | grep -qx x86_64-pc-windows-gnu; then
  say "adding Rust's Windows target (x86_64-pc-windows-gnu), for scripts/wine-smoke.sh"
  rustup target add x86_64-pc-windows-gnu >/dev/null
fi
say "toolchain: $(cargo --version)"
