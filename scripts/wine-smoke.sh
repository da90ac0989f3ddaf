#!/usr/bin/env bash
# The Windows build, for real, under Wine: builds fbunload.exe for
# x86_64-pc-windows-gnu, fetches the Windows Firebird 5 embedded engine
# (the firebird-embedded wheel for win_amd64), generates a small database
# with the Linux fbunload-gen (the on-disk format is the same), then runs
# the Windows fbunload.exe on the Windows engine under Wine and checks:
#
#   - the unit tests of fbunload-client and fbunload-dest pass as Windows
#     programs (the search order, LockFileEx, Windows file names);
#   - the client library is found through FIREBIRD, and next to the .exe;
#   - every format (csv, tsv, jsonl, parquet, arrow), with --verify, holds
#     what the Linux build writes from the same database: CSV, TSV and JSON
#     Lines byte for byte; Parquet and Arrow value for value, schema and
#     row groups included (each run stores its own snapshot number in them);
#   - Ctrl-C (SIGINT, which Wine turns into CTRL_C_EVENT) stops the run
#     with status 130 and leaves only complete files, no staging directory;
#   - a run killed outright (SIGKILL) leaves only complete files and its
#     staging directory, which the next run into the directory removes.
#
# Three things Wine 8.0 lacks are worked around, in this script's copies
# only (never in what fbunload ships; Windows 10 and later need none):
#   - Rust's standard library imports ProcessPrng from bcryptprimitives.dll:
#     a stand-in (scripts/wine/bcryptprimitives.c) goes next to the .exe;
#   - the engine calls CreateBoundaryDescriptorA, which Wine 8.0 does not
#     implement (the process aborts). In a copy of the runtime that import
#     is pointed at GetModuleHandleA, which returns NULL for the name given,
#     so the engine takes its own "Error creating private namespace" path
#     and goes on without one, as it does on Windows when the call fails
#     (done whatever the Wine version: the engine works either way);
#   - Wine 8.0's GetMappedFileName answers "\??\C:\..." where Windows
#     answers "\Device\HarddiskVolumeN\...", and the engine then refuses
#     its lock files ("Wrong file for memory mapping"). Its lock directory
#     (FIREBIRD_LOCK) is put on a drive L: whose DOS device is defined as
#     "\??\L:" (scripts/wine/define-lock-drive.c), which makes the answers
#     agree.
#
# Needs: wine (64-bit), mingw-w64, the Rust target x86_64-pc-windows-gnu,
# python3 with pip and pyarrow (scripts/setup.sh), unzip. Everything it
# makes is under target/wine-smoke, with a private WINEPREFIX there.
#
#   scripts/wine-smoke.sh
#   LINUX_BIN=/path/to/release scripts/wine-smoke.sh   # prebuilt Linux tools
#   PROFILE=release scripts/wine-smoke.sh              # the Windows build's profile
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
root=$repo/target/wine-smoke
runtime=$root/runtime # the Windows engine, unpacked below
mkdir -p "$root"
export WINEDEBUG=-all WINEPREFIX=$root/prefix
export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
PROFILE=${PROFILE:-dev}
. scripts/windows-build.sh # windows_exe
TARGET=$WINDOWS_TARGET
LOCK_DRIVE=l:

passed=()
pass() { passed+=("$1"); echo "ok: $1"; }
fail() {
  echo "FAILED: $1" >&2
  [ -f "$runtime/firebird.log" ] && { echo "--- end of the engine's firebird.log:" >&2; tail -n 20 "$runtime/firebird.log" >&2; }
  exit 1
}
seconds() { echo $(($(date +%s) - $1)); }
# A Linux path as Wine's Z: drive sees it.
winpath() { local p; p=$(realpath -m "$1"); printf 'Z:%s' "${p//\//\\}"; }

for tool in wine wineserver x86_64-w64-mingw32-gcc unzip python3; do
  command -v $tool >/dev/null || fail "needs $tool (apt-get install wine64 mingw-w64 unzip)"
done
python3 -c 'import pyarrow' 2>/dev/null || fail "needs pyarrow (scripts/setup.sh)"
rustup target list --installed 2>/dev/null | grep -qx $TARGET ||
  fail "needs the Rust target: rustup target add $TARGET"

# --- builds ------------------------------------------------------------------
start=$(date +%s)
exe=$(windows_exe "$PROFILE") || fail "the Windows build"
if [ -z "${LINUX_BIN:-}" ]; then
  LINUX_BIN=$repo/target/release
  cargo build --quiet --release -p fbunload-cli -p fbunload-gen
fi
bin=$root/bin
mkdir -p "$bin"
ln -f "$exe" "$bin/fbunload.exe" 2>/dev/null || cp "$exe" "$bin/fbunload.exe"
x86_64-w64-mingw32-gcc -O2 -shared -o "$bin/bcryptprimitives.dll" \
  scripts/wine/bcryptprimitives.c scripts/wine/bcryptprimitives.def -lbcrypt
x86_64-w64-mingw32-gcc -O2 -o "$bin/define-lock-drive.exe" scripts/wine/define-lock-drive.c
echo "built in $(seconds "$start") s"

# --- the Windows engine --------------------------------------------------------
start=$(date +%s)
wheel=$(ls "$root"/wheel/firebird_embedded-*-win_amd64.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  python3 -m pip download --quiet firebird-embedded --platform win_amd64 \
    --only-binary=:all: --no-deps -d "$root/wheel"
  wheel=$(ls "$root"/wheel/firebird_embedded-*-win_amd64.whl | head -1)
fi
rm -rf "$runtime" "$root/unpacked"
unzip -q "$wheel" -d "$root/unpacked"
mv "$root/unpacked/firebird/embedded/runtime" "$runtime"
rm -rf "$root/unpacked"
python3 - "$runtime" <<'EOF'
# Points the engine's import of CreateBoundaryDescriptorA (absent in Wine
# 8.0) at GetModuleHandleA: same arguments in the x64 convention, and NULL
# for a namespace name, which is how the engine learns the call failed.
import pathlib, sys
old = b"CreateBoundaryDescriptorA\0"
new = b"GetModuleHandleA".ljust(len(old), b"\0")
for dll in pathlib.Path(sys.argv[1]).rglob("*.dll"):
    data = dll.read_bytes()
    if data.count(old) == 1:
        dll.write_bytes(data.replace(old, new))
EOF
echo "engine $(basename "$wheel") ready in $(seconds "$start") s"

# --- Wine, with the lock drive -------------------------------------------------
start=$(date +%s)
# A drive left from an earlier run would be claimed by Wine's mount manager
# at start-up, and could then not be defined.
rm -f "$WINEPREFIX/dosdevices/$LOCK_DRIVE"
wineserver -k 2>/dev/null || true
wine cmd /c exit >/dev/null 2>&1 || true
wineserver -w
wineserver -p
trap 'rm -f "$WINEPREFIX/dosdevices/$LOCK_DRIVE"; wineserver -k 2>/dev/null || true' EXIT
wine cmd /c exit >/dev/null 2>&1 || true
wine "$bin/define-lock-drive.exe" "${LOCK_DRIVE^^}" || fail "defining the lock drive"
mkdir -p "$root/lock/firebird"
ln -sfn "$root/lock" "$WINEPREFIX/dosdevices/$LOCK_DRIVE"
echo "Wine prefix ready in $(seconds "$start") s"

windows_env=(FIREBIRD="$(winpath "$runtime")" FIREBIRD_LOCK="${LOCK_DRIVE^^}\\firebird")
windows() { env "${windows_env[@]}" wine "$bin/fbunload.exe" "$@"; }
linux() { env -u FIREBIRD -u FIREBIRD_LOCK "$LINUX_BIN/fbunload" "$@"; }

wine "$bin/fbunload.exe" --version >/dev/null 2>&1 ||
  fail "fbunload.exe does not start under Wine: $(WINEDEBUG=err+module wine "$bin/fbunload.exe" --version 2>&1 | tail -3)"
pass "fbunload.exe starts under $(wine --version)"

# --- unit tests, as Windows programs -------------------------------------------------
# The client's search order and the output directory (LockFileEx, renames,
# Windows file names) run their own tests on Windows' rules.
start=$(date +%s)
deps=$repo/target/$TARGET/debug/deps
cargo test --quiet --no-run --target $TARGET -p fbunload-client -p fbunload-dest --lib 2>/dev/null
cp "$bin/bcryptprimitives.dll" "$deps/"
unit=$(CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine cargo test --quiet --target $TARGET \
  -p fbunload-client -p fbunload-dest --lib 2>&1) || fail "unit tests under Wine: $unit"
pass "unit tests of fbunload-client and fbunload-dest as Windows programs: $(awk '/^test result/ { n += $4 } END { print n }' <<<"$unit") passed ($(seconds "$start") s)"

# --- the database ----------------------------------------------------------------
db=$root/smoke.fdb
env -u FIREBIRD -u FIREBIRD_LOCK "$LINUX_BIN/fbunload-gen" --database "$db" --warehouses 1 \
  --items 2000 --force >/dev/null
pass "test database generated by the Linux fbunload-gen ($(du -h "$db" | cut -f1))"
login=(-u SYSDBA -p masterkey)
checks_started=$(date +%s)

# --- where the client library is found --------------------------------------------
plan=$(windows -d "$(winpath "$db")" "${login[@]}" --plan 2>&1) || fail "--plan: $plan"
grep -q 'fbclient.dll (from FIREBIRD)' <<<"$plan" || fail "FIREBIRD not used: $plan"
pass "fbclient.dll found through FIREBIRD; the Windows engine reads the Linux-made database"
ln -f "$bin/fbunload.exe" "$bin/bcryptprimitives.dll" "$runtime/"
plan=$(env -u FIREBIRD FIREBIRD_LOCK="${LOCK_DRIVE^^}\\firebird" \
  wine "$runtime/fbunload.exe" -d "$(winpath "$db")" "${login[@]}" --plan 2>&1) ||
  fail "--plan next to the engine: $plan"
grep -q 'fbclient.dll (next to the program)' <<<"$plan" || fail "not found next to the .exe: $plan"
rm -f "$runtime/fbunload.exe" "$runtime/bcryptprimitives.dll"
pass "fbclient.dll found next to fbunload.exe"

# --- every format, against the Linux build -------------------------------------------
# Windows escapes `"` in a file name (Mixed Case "Quoted" -> Mixed Case %22Quoted%22).
windows_name() { local n=$1; printf '%s' "${n//\"/%22}"; }
out=$root/out
rm -rf "$out"
for format in csv tsv jsonl parquet arrow; do
  # Each format's own options: a header for the text tables, decimal256
  # for the columnar ones (ALL_TYPES holds INT128's extremes).
  case $format in
    csv | tsv) options=(--header) ;;
    parquet | arrow) options=(--decimal256) ;;
    *) options=() ;;
  esac
  linux -d "$db" "${login[@]}" -q "${options[@]}" -f $format --verify -o "$out/linux-$format" ||
    fail "Linux build, $format"
  t=$(date +%s)
  windows -d "$(winpath "$db")" "${login[@]}" -q "${options[@]}" -f $format --verify \
    -o "$(winpath "$out/windows-$format")" || fail "Windows build, $format"
  took=$(seconds "$t")
  files=0
  for file in "$out/linux-$format"/*; do
    name=$(basename "$file")
    other="$out/windows-$format/$(windows_name "$name")"
    [ -f "$other" ] || fail "$format: the Windows run wrote no $(windows_name "$name")"
    case $name:$format in
      manifest.json:*) python3 scripts/wine/same-manifest.py $format "$file" "$other" ||
        fail "$format: manifest.json says something else" ;;
      *.parquet:parquet | *.arrow:arrow) python3 scripts/wine/same-data.py $format "$file" "$other" ||
        fail "$format: $name differs" ;;
      *) cmp -s "$file" "$other" || fail "$format: $name differs byte for byte" ;;
    esac
    files=$((files + 1))
  done
  extra=$(find "$out/windows-$format" -mindepth 1 -maxdepth 1 ! -name .fbunload.lock | wc -l)
  [ "$extra" -eq "$files" ] || fail "$format: the Windows run wrote $extra files, Linux $files"
  how="byte-identical"; [ $format = parquet ] || [ $format = arrow ] && how="same schema, row groups and values"
  pass "$format with --verify: $files tables $how to the Linux build's (${took} s under Wine)"
done

# --- stopping ---------------------------------------------------------------------------
# Starts an unload of every table as CSV and waits until a table is being
# written in the staging directory; sets $pid.
start_and_wait_for_writing() {
  local dir=$1
  # A simple command, not the function: $! is then Wine's process itself,
  # not a subshell, which would ignore SIGINT as a background job.
  env "${windows_env[@]}" wine "$bin/fbunload.exe" -d "$(winpath "$db")" "${login[@]}" -q \
    --header -j 2 --unit-pages 16 -f csv -o "$(winpath "$dir")" 2>"$dir.err" &
  pid=$!
  for _ in $(seq 600); do
    if find "$dir" -path '*/.fbunload-run-*/*' -type f -size +0 2>/dev/null | grep -q .; then
      return
    fi
    kill -0 $pid 2>/dev/null || fail "the run ended before it could be stopped: $(cat "$dir.err")"
    sleep 0.05
  done
  fail "the run never started writing"
}

# Only complete files may be in the directory: each one the same as the
# Linux build's.
only_complete_files_in() {
  local dir=$1 file name
  for file in "$dir"/*; do
    [ -e "$file" ] || continue
    name=$(basename "$file")
    cmp -s "$file" "$out/linux-csv/${name//%22/\"}" || fail "$name in $dir is not complete"
  done
}

interrupted=$root/interrupted
rm -rf "$interrupted" "$interrupted.err"; mkdir -p "$interrupted"
start_and_wait_for_writing "$interrupted"
kill -INT $pid
status=0; wait $pid || status=$?
[ $status -eq 130 ] || fail "after Ctrl-C the status is $status, not 130: $(cat "$interrupted.err")"
grep -q interrupted "$interrupted.err" || fail "no 'interrupted' message: $(cat "$interrupted.err")"
! ls -d "$interrupted"/.fbunload-run-* >/dev/null 2>&1 || fail "Ctrl-C left a staging directory"
only_complete_files_in "$interrupted"
pass "Ctrl-C: status 130, '$(tr -d '\r' <"$interrupted.err" | head -1)', $(find "$interrupted" -name '*.csv' | wc -l) complete tables kept, no staging directory left"

killed=$root/killed
rm -rf "$killed" "$killed.err"; mkdir -p "$killed"
start_and_wait_for_writing "$killed"
kill -KILL $pid
wait $pid 2>/dev/null || true
ls -d "$killed"/.fbunload-run-* >/dev/null 2>&1 || fail "SIGKILL left no staging directory (was the run over?)"
only_complete_files_in "$killed"
kept=$(find "$killed" -maxdepth 1 -name '*.csv' | wc -l)
windows -d "$(winpath "$db")" "${login[@]}" -q --header --tables WAREHOUSE -f csv \
  -o "$(winpath "$killed")" || fail "the run after the killed one"
! ls -d "$killed"/.fbunload-run-* >/dev/null 2>&1 || fail "the next run did not remove the staging directory"
pass "SIGKILL: $kept complete tables kept, the staging directory left, and removed by the next run"

echo
echo "wine-smoke: ${#passed[@]} passed, 0 failed; checks took $(seconds "$checks_started") s after the builds"
