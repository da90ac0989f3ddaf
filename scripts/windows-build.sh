# Sourced by scripts/wine-smoke.sh and scripts/release.sh: the one way
# fbunload.exe is cross-built for 64-bit Windows on Linux (MinGW).
#
#   windows_exe PROFILE   builds it (run from the repository root); prints the
#                         .exe's path
#
# Needs mingw-w64 and the Rust target x86_64-pc-windows-gnu.
WINDOWS_TARGET=x86_64-pc-windows-gnu

windows_exe() {
  local profile=$1 dir
  cargo build --quiet --profile "$profile" --target $WINDOWS_TARGET -p fbunload-cli >&2 || return
  dir=$profile; [ "$profile" = dev ] && dir=debug
  printf '%s/%s/%s/fbunload.exe\n' "${CARGO_TARGET_DIR:-$PWD/target}" $WINDOWS_TARGET "$dir"
}
