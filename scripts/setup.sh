#!/usr/bin/env bash
# Installs what fbunload needs to build and to run on the embedded Firebird 5
# engine: Debian's libtommath1 and libicu72, the firebird-embedded Python
# package, and a Rust toolchain check. Safe to run again: it only installs
# what is missing.
set -euo pipefail

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing_debs=()
for pkg in libtommath1 libicu72; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing_debs+=("$pkg")
done
if [ ${#missing_debs[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing_debs[*]}"
  as_root apt-get update -qq
  as_root apt-get install -y -qq "${missing_debs[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import firebird.embedded' 2>/dev/null; then
  say "installing the embedded Firebird engine (pip: firebird-embedded)"
  "$PYTHON" -m pip install --quiet firebird-embedded
fi

# pyarrow: the independent reader the tests check Parquet and Arrow files with.
if ! "$PYTHON" -c 'import pyarrow.parquet' 2>/dev/null; then
  say "installing pyarrow (tests read Parquet and Arrow files back with it)"
  "$PYTHON" -m pip install --quiet pyarrow
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust (https://rustup.rs) and run this again" >&2
  exit 1
fi
say "toolchain: $(cargo --version)"
