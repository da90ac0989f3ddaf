"""Whether two Parquet or Arrow IPC files fbunload wrote hold the same data.

Usage: same-data.py FORMAT LEFT RIGHT   (FORMAT: parquet or arrow)

Byte equality is too strict across two runs: each run stores its own
snapshot number in the file's metadata (fbunload.snapshot_number). Schemas,
every other metadata entry, row groups or record batches, and every value
must be the same. Exits 0 when they are, 1 with the difference otherwise.
"""
import sys

import pyarrow.ipc as ipc
import pyarrow.parquet as pq

SNAPSHOT_KEY = b"fbunload.snapshot_number"


def read(fmt, path):
    if fmt == "parquet":
        meta = pq.ParquetFile(path).metadata
        groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        return pq.read_table(path), groups
    with ipc.open_file(path) as reader:
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        table = reader.read_all()
    return table, [b.num_rows for b in batches]


def without_snapshot(schema):
    meta = dict(schema.metadata or {})
    meta.pop(SNAPSHOT_KEY, None)
    return schema.with_metadata(meta)


def main():
    fmt, left_path, right_path = sys.argv[1:]
    left, left_groups = read(fmt, left_path)
    right, right_groups = read(fmt, right_path)
    if not without_snapshot(left.schema).equals(without_snapshot(right.schema), check_metadata=True):
        sys.exit(f"schemas differ:\n{left.schema}\n---\n{right.schema}")
    if left_groups != right_groups:
        sys.exit(f"row groups or batches differ: {left_groups} vs {right_groups}")
    if not left.equals(right):
        sys.exit("values differ")


main()
