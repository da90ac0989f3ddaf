"""Creates the database ADBC's validation suite reads through fbunload's
driver (scripts/adbc-validation.sh): the driver never writes, so the
table the suite would ingest is made here, as its quirks describe it.

Usage: python3 make_database.py PATH (an existing file is replaced)."""

import ctypes
import os
import pathlib
import sys

import firebird.embedded
from firebird.driver import create_database, driver_config

RUNTIME = pathlib.Path(firebird.embedded.__file__).parent / "runtime"
os.environ.setdefault("FIREBIRD", str(RUNTIME))
# The engine plugin needs libtomcrypt (and libtommath) loaded globally.
for dependency in ["libtommath.so.1", str(RUNTIME / "libtomcrypt.so.1")]:
    ctypes.CDLL(dependency, mode=ctypes.RTLD_GLOBAL)
driver_config.fb_client_library.value = str(next(RUNTIME.glob("libfbclient.so*")))

# The suite's sample table (DriverQuirks::CreateSampleTable): quoted
# lower-case names, as the suite spells them.
STATEMENTS = [
    'CREATE TABLE "bulk_ingest" ("int64s" BIGINT, "strings" VARCHAR(100))',
    "INSERT INTO \"bulk_ingest\" VALUES (42, 'foo')",
    'INSERT INTO "bulk_ingest" VALUES (-42, NULL)',
    "INSERT INTO \"bulk_ingest\" VALUES (NULL, '')",
]

path = pathlib.Path(sys.argv[1])
path.unlink(missing_ok=True)
con = create_database(str(path), user="SYSDBA", password="masterkey", charset="UTF8")
for sql in STATEMENTS:
    con.execute_immediate(sql)
    con.commit()
con.close()
