"""Whether the manifest.json of the Windows build's run says what the
Linux build's says.

Usage: same-manifest.py FORMAT LEFT RIGHT

The two differ where the runs do (times, the database path, the server's
platform, the snapshot number), so those are left out. The same tables
with the same kinds, rows, columns and verification must be there, with
the same files (names as Windows escapes them) of the same sizes, and for
text formats the same SHA-256: those files are byte-identical. Parquet and
Arrow files store their run's snapshot number, so only their names are
compared. Exits 0 when they agree, 1 with the difference otherwise.
"""
import json
import sys

RUN_SPECIFIC = {"started", "finished", "database", "server_version", "snapshot_number"}


def windows_name(name):
    # As wine-smoke.sh's windows_name: '"' is escaped on Windows.
    return name.replace('"', "%22")


def comparable(path, fmt, escape):
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    text = fmt in ("csv", "tsv", "jsonl")

    def files(listed):
        return [
            {"name": escape(f["name"]), **({"bytes": f["bytes"], "sha256": f["sha256"]} if text else {})}
            for f in listed
        ]

    for table in manifest["tables"]:
        table["files"] = files(table["files"])
        if not text:
            table.pop("bytes", None)
    manifest["files"] = files(manifest["files"])
    return {k: v for k, v in manifest.items() if k not in RUN_SPECIFIC}


def main():
    fmt, left, right = sys.argv[1:4]
    linux = comparable(left, fmt, windows_name)
    windows = comparable(right, fmt, lambda n: n)
    if linux == windows:
        return 0
    for key in sorted(set(linux) | set(windows)):
        if linux.get(key) != windows.get(key):
            print(f"manifest.json differs in {key}:\n  linux:   {linux.get(key)}\n  windows: {windows.get(key)}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
