#!/usr/bin/env bash
# Builds what a user installs without a Rust toolchain, into one directory
# (dist/ unless given):
#
#   fbunload-VERSION-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
#       the Python module and the fbunload command, for any CPython 3.9+
#       on x86_64 Linux with glibc 2.17 or later: linked by zig against
#       that glibc's symbols, and checked by maturin's own auditwheel
#       (and by `auditwheel show`, where installed);
#   fbunload-VERSION-windows-x86_64.zip
#       fbunload.exe (64-bit Windows 10 and later) and LICENSE, built as
#       scripts/wine-smoke.sh builds it (scripts/windows-build.sh);
#   SHA256SUMS
#       the SHA-256 of each, as `sha256sum -c SHA256SUMS` checks them.
#
# Both are built with the `dist` profile (Cargo.toml: optimized, stripped,
# thin LTO). Needs what scripts/setup.sh installs (maturin, mingw-w64, the
# Rust target x86_64-pc-windows-gnu) and zig, from PyPI:
# `python3 -m pip install ziglang`. On 2 cores each build takes a while
# (docs/install.md has the times).
#
#   scripts/release.sh [OUT]
#   COMPATIBILITY=manylinux_2_28 scripts/release.sh   # another glibc floor
#   ZIG=0 scripts/release.sh   # no zig: the wheel needs this machine's glibc or newer
#   PROFILE=dev scripts/release.sh   # a quick trial of the script itself, not a release
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
PYTHON=${PYTHON:-python3}
ZIG=${ZIG:-1}
PROFILE=${PROFILE:-dist}
# Without zig maturin picks the tag this machine's glibc allows.
[ "$ZIG" = 1 ] && COMPATIBILITY=${COMPATIBILITY:-manylinux2014}
. scripts/windows-build.sh # windows_exe

fail() { echo "release: $1" >&2; exit 1; }
seconds() { echo $(($(date +%s) - $1)); }

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$version" ] || fail "no version in Cargo.toml's [workspace.package]"
"$PYTHON" -m maturin --version >/dev/null 2>&1 || fail "needs maturin: $PYTHON -m pip install maturin"
# maturin runs zig as `zig` or as `python3 -m ziglang` from PATH: the
# Python named here first.
PATH=$(dirname "$(command -v "$PYTHON")"):$PATH
if [ "$ZIG" = 1 ]; then
  "$PYTHON" -m ziglang version >/dev/null 2>&1 ||
    fail "needs zig to link against an old glibc: $PYTHON -m pip install ziglang (or ZIG=0 for this machine's glibc)"
fi
command -v x86_64-w64-mingw32-gcc >/dev/null || fail "needs mingw-w64 (apt-get install mingw-w64)"
rustup target list --installed 2>/dev/null | grep -qx $WINDOWS_TARGET ||
  fail "needs the Rust target: rustup target add $WINDOWS_TARGET"

mkdir -p "$out"
# Only this release's artifacts in the directory: an earlier version's
# would be summed with them.
rm -f "$out"/fbunload-*.whl "$out"/fbunload-*.zip "$out/SHA256SUMS"

# --- the Linux wheel ---------------------------------------------------------------
start=$(date +%s)
linux=()
[ -n "${COMPATIBILITY:-}" ] && linux+=(--compatibility "$COMPATIBILITY")
[ "$ZIG" = 1 ] && linux+=(--zig --target x86_64-unknown-linux-gnu)
# maturin's auditwheel check fails the build where the library needs a
# newer glibc symbol than the tag allows, or a library outside the
# manylinux policy (none is bundled).
"$PYTHON" -m maturin build --quiet --profile "$PROFILE" "${linux[@]}" --auditwheel check -o "$out" ||
  fail "the Linux wheel"
wheel=$(ls "$out"/fbunload-"$version"-*.whl)
echo "wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB, $(seconds "$start") s)"
if command -v auditwheel >/dev/null 2>&1; then
  auditwheel show "$wheel"
fi

# --- the Windows zip ---------------------------------------------------------------
start=$(date +%s)
exe=$(windows_exe "$PROFILE") || fail "the Windows build"
# What the .exe loads at start: Windows' own DLLs only (MinGW's runtime is
# linked in statically); a libgcc or winpthread DLL here would be missing
# on the user's machine.
dlls=$(x86_64-w64-mingw32-objdump -p "$exe" | sed -n 's/^\s*DLL Name: //p' | sort -uf | tr '\n' ' ')
if grep -qiE 'libgcc|libwinpthread|libstdc' <<<"$dlls"; then
  fail "fbunload.exe needs a MinGW DLL: $dlls"
fi
zip=$out/fbunload-$version-windows-x86_64.zip
"$PYTHON" - "$zip" "$exe" LICENSE <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for path in sys.argv[2:]:
        z.write(path, path.rsplit("/", 1)[-1])
EOF
echo "windows: $(basename "$zip") ($(du -k "$zip" | cut -f1) KiB, $(seconds "$start") s; imports $dlls)"

# --- sums ----------------------------------------------------------------------------
(cd "$out" && sha256sum "$(basename "$wheel")" "$(basename "$zip")" >SHA256SUMS && cat SHA256SUMS)
