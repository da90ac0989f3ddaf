"""Reads fbunload's Parquet and Arrow files with pyarrow, an independent
reader, and checks every value against the same table's JSON Lines output
(whose text rules are the CSV rules, pinned by golden files).

    python3 roundtrip.py OUT_DIR TABLE...

OUT_DIR holds jsonl/, parquet/ and arrow/ unloads of the same tables.
Exits non-zero with the first difference.
"""
import json
import math
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow.feather as feather
import pyarrow.parquet as pq


def text_of_time(t):
    return t.strftime("%H:%M:%S.") + f"{t.microsecond // 100:04d}"


def text_of_datetime(d):
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d} " + text_of_time(d)


def same(value, expected, field):
    """Whether a pyarrow value equals the JSON Lines value."""
    kind = (field.metadata or {}).get(b"fbunload.type", b"").decode()
    if value is None or expected is None:
        return value is None and expected is None
    if isinstance(value, list):  # an ARRAY column: one list per dimension
        item = field.type.value_field
        return (isinstance(expected, list) and len(value) == len(expected)
                and all(same(v, e, item) for v, e in zip(value, expected)))
    if isinstance(value, bool) or isinstance(value, int):
        return value == expected
    if isinstance(value, Decimal):
        return value == Decimal(expected) and str(value) == expected
    if isinstance(value, float):
        if isinstance(expected, str):  # NaN, Infinity, -Infinity
            return str(value).replace("inf", "Infinity") == expected or (
                math.isnan(value) and expected == "NaN")
        if kind == "FLOAT":
            import struct
            return struct.pack("f", value) == struct.pack("f", expected)
        return value == expected and math.copysign(1, value) == math.copysign(1, expected)
    if isinstance(value, bytes):
        return value.hex() == expected
    if hasattr(value, "hour") and hasattr(value, "year"):
        suffix = "+00:00" if value.tzinfo is not None else ""
        return text_of_datetime(value) + suffix == expected
    if hasattr(value, "hour"):
        suffix = "+00:00" if kind == "TIME WITH TIME ZONE" else ""
        return text_of_time(value) + suffix == expected
    if hasattr(value, "year"):
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}" == expected
    return value == expected


def main():
    out = Path(sys.argv[1])
    checked = 0
    for table in sys.argv[2:]:
        lines = (out / "jsonl" / f"{table}.jsonl").read_text(encoding="utf-8").splitlines()
        expected = [json.loads(line) for line in lines]
        for fmt, read in (("parquet", pq.read_table), ("arrow", feather.read_table),
                          ("parquet-split", pq.read_table)):
            path = out / fmt / f"{table}.{fmt.split('-')[0]}"
            if fmt == "parquet-split" and not path.exists():
                continue
            t = read(path)
            if fmt == "parquet":
                meta = pq.read_metadata(path).metadata
            elif fmt == "parquet-split":
                meta = pq.read_metadata(path / "part-00000.parquet").metadata
            else:
                meta = t.schema.metadata
            assert meta[b"fbunload.table"].decode() == table, (path, meta)
            assert int(meta[b"fbunload.snapshot_number"]) > 0, (path, meta)
            assert t.num_rows == len(expected), (path, t.num_rows, len(expected))
            rows = t.to_pylist()
            for i, (row, want) in enumerate(zip(rows, expected)):
                assert list(row) == list(want), (path, list(row), list(want))
                for name, value in row.items():
                    field = t.schema.field(name)
                    if not same(value, want[name], field):
                        sys.exit(f"{path} row {i} column {name}: {value!r} != {want[name]!r}")
                    checked += 1
    print(f"checked {checked} values")


main()
