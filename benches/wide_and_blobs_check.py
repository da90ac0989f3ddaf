"""A digest of BLOB_HEAVY's or WIDE's values for benches/wide-and-blobs.sh,
from Firebird (through firebird-driver, at its own snapshot) or from an
unloaded CSV or Parquet file, so that the two can be compared as text.

    python3 benches/wide_and_blobs_check.py firebird DB TABLE
    python3 benches/wide_and_blobs_check.py file PATH TABLE

The digest is independent of row order (units finish in any order): row
count, sums, and the sum modulo 2^256 of a SHA-256 per value. WIDE is
checked on its first 19 and last 9 columns (every type twice, and the
end of the row); BLOB_HEAVY on every byte of both blobs."""

import csv
import datetime
import decimal
import hashlib
import math
import sys

MOD = 1 << 256


def wide_columns(count):
    names = ["ID"] + [f"C{c:04}" for c in range(2, count + 1)]
    return names[:19] + names[-9:]


def kind(column):
    """The column's type, as heavy.rs gives it: number c mod 9."""
    if column == "ID":
        return "int"
    return ["int", "int", "numeric", "double", "text", "text", "date", "timestamp", "bool"][
        int(column[1:]) % 9
    ]


def normal(k, v):
    """A value of kind k, from Firebird, pyarrow or CSV text, as one form."""
    if v is None or v == "":
        return None
    if k == "int":
        return int(v)
    if k == "numeric":
        return decimal.Decimal(v)
    if k == "double":
        return float(v)
    if k == "text":
        return v
    if k == "date":
        return v.isoformat() if isinstance(v, datetime.date) else v
    if k == "timestamp":
        if not isinstance(v, datetime.datetime):
            v = datetime.datetime.fromisoformat(v)
        return v.isoformat()
    if k == "bool":
        return v in (True, "true", "t", "1", "TRUE")
    raise ValueError(k)


class Wide:
    def __init__(self, columns):
        self.columns = columns
        self.kinds = [kind(c) for c in columns]
        self.rows = 0
        self.nulls = [0] * len(columns)
        self.sums = [0] * len(columns)
        self.doubles = [[] for _ in columns]

    def add(self, row):
        self.rows += 1
        for i, (k, v) in enumerate(zip(self.kinds, row)):
            v = normal(k, v)
            if v is None:
                self.nulls[i] += 1
            elif k == "double":
                self.doubles[i].append(v)
            elif k in ("int", "numeric", "bool"):
                self.sums[i] += v
            else:
                h = hashlib.sha256(v.encode()).digest()
                self.sums[i] = (self.sums[i] + int.from_bytes(h, "big")) % MOD

    def digest(self):
        out = [f"rows {self.rows}"]
        for i, c in enumerate(self.columns):
            s = math.fsum(self.doubles[i]) if self.kinds[i] == "double" else self.sums[i]
            out.append(f"{c} nulls {self.nulls[i]} sum {s!r}")
        return hashlib.sha256("\n".join(out).encode()).hexdigest()[:16] + f" ({self.rows} rows)"


class Blobs:
    def __init__(self):
        self.rows = 0
        self.bytes = 0
        self.sum = 0

    def add(self, row):
        ident, txt, binary = row
        txt = txt.encode() if isinstance(txt, str) else txt
        if isinstance(binary, str):
            binary = bytes.fromhex(binary)
        self.rows += 1
        self.bytes += len(txt) + len(binary)
        h = hashlib.sha256(f"{int(ident)}|".encode() + txt + b"|" + binary).digest()
        self.sum = (self.sum + int.from_bytes(h, "big")) % MOD

    def digest(self):
        return f"{self.sum:064x}"[:16] + f" ({self.rows} rows, {self.bytes} bytes)"


def from_firebird(db, table):
    sys.path.insert(0, "benches")
    import embedded_driver

    embedded_driver.setup()
    from firebird.driver import connect, driver_config

    # Every blob as a value, not as a stream to read.
    driver_config.stream_blob_threshold.value = 1 << 30
    con = connect(db, user="SYSDBA", password="masterkey")
    cur = con.cursor()
    if table == "WIDE":
        cur.execute(
            "SELECT COUNT(*) FROM RDB$RELATION_FIELDS WHERE RDB$RELATION_NAME = 'WIDE'"
        )
        columns = wide_columns(cur.fetchone()[0])
        digest = Wide(columns)
        cur.execute(f"SELECT {', '.join(columns)} FROM WIDE")
    else:
        digest = Blobs()
        cur.execute("SELECT ID, TXT, BIN FROM BLOB_HEAVY")
    for row in cur:
        digest.add(row)
    con.close()
    return digest.digest()


def from_file(path, table):
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
        columns = wide_columns(len(names)) if table == "WIDE" else ["ID", "TXT", "BIN"]
        digest = Wide(columns) if table == "WIDE" else Blobs()
        for batch in parquet.iter_batches(columns=columns, batch_size=1024):
            for row in zip(*(c.to_pylist() for c in batch.columns)):
                digest.add(row)
        return digest.digest()
    csv.field_size_limit((1 << 31) - 1)
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        columns = wide_columns(len(header)) if table == "WIDE" else ["ID", "TXT", "BIN"]
        at = [header.index(c) for c in columns]
        digest = Wide(columns) if table == "WIDE" else Blobs()
        for row in reader:
            digest.add([row[i] for i in at])
    return digest.digest()


if __name__ == "__main__":
    source, path, table = sys.argv[1:4]
    print(from_firebird(path, table) if source == "firebird" else from_file(path, table))
