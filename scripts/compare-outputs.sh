#!/usr/bin/env bash
# Compares the files two fbunload binaries write for the same database, in
# every format and at several --parallel: a refactoring must not change a
# byte. Usage: scripts/compare-outputs.sh OLD_BINARY NEW_BINARY DATABASE
set -euo pipefail
old=$1 new=$2 db=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for format in csv tsv jsonl parquet arrow "csv --compress gzip" "parquet --split"; do
  for parallel in 1 3; do
    tag="${format// /_}-$parallel"
    for side in old new; do
      bin=${!side}
      # shellcheck disable=SC2086
      "$bin" -d "$db" -u SYSDBA -p masterkey -q --unit-pages 8 \
        -j "$parallel" --format $format -o "$work/$side-$tag" --decimal256
    done
    # manifest.json records times: every other file must be the same.
    if diff -r -x manifest.json "$work/old-$tag" "$work/new-$tag" >/dev/null; then
      echo "same: $format, -j $parallel"
    else
      echo "DIFFERENT: $format, -j $parallel"; diff -rq -x manifest.json "$work/old-$tag" "$work/new-$tag" || true
      status=1
    fi
  done
done
exit $status
