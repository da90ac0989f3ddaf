"""Databases for the tests, made on the real embedded engine with
firebird-driver, the reference Python driver the results are compared to."""

import ctypes
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import firebird.embedded  # noqa: F401  (the engine the tests run on)
from firebird.driver import connect, create_database, driver_config

RUNTIME = pathlib.Path(firebird.embedded.__file__).parent / "runtime"
os.environ.setdefault("FIREBIRD", str(RUNTIME))
# The engine plugin needs libtomcrypt from the runtime (and libtommath,
# its dependency): loaded globally, as fbunload's own client layer does.
for dependency in ["libtommath.so.1", str(RUNTIME / "libtomcrypt.so.1")]:
    ctypes.CDLL(dependency, mode=ctypes.RTLD_GLOBAL)
driver_config.fb_client_library.value = str(next(RUNTIME.glob("libfbclient.so*")))

USER, PASSWORD = "SYSDBA", "masterkey"


def make_database(path, statements, page_size=None, password=PASSWORD):
    """A new database at ``path`` (a file, or a server's ``host:path``)
    holding what ``statements`` make."""
    driver_config.db_defaults.page_size.value = page_size
    try:
        con = create_database(str(path), user=USER, password=password, charset="UTF8")
    finally:
        driver_config.db_defaults.page_size.value = None
    for sql in statements:
        con.execute_immediate(sql)
        con.commit()
    con.close()
    return str(path)


def fb5_server():
    """(address, directory, password) of the Firebird 5 server
    scripts/fb5-server.sh starts; the test is skipped where none runs."""
    names = ["FBUNLOAD_TEST_FB5", "FBUNLOAD_TEST_FB5_DIR", "FBUNLOAD_TEST_FB5_PASSWORD"]
    address, directory, password = [os.environ.get(name) for name in names]
    if password is None:
        pytest.skip("no Firebird 5 server (scripts/fb5-server.sh; docs/server.md)")
    return address, directory, password


def connection(database: str, password: str = PASSWORD):
    return connect(database, user=USER, password=password, charset="UTF8")


TYPES_TABLE = [
    "CREATE TABLE T (ID INTEGER NOT NULL, S SMALLINT, B BIGINT, N NUMERIC(18,4), "
    "N9 NUMERIC(9,3), D DOUBLE PRECISION, F FLOAT, V VARCHAR(40), C CHAR(5), "
    "DT DATE, TS TIMESTAMP, TM TIME, BO BOOLEAN, BL BLOB SUB_TYPE BINARY, "
    "TX BLOB SUB_TYPE TEXT, I128 INT128, DF DECFLOAT(16))",
    "INSERT INTO T VALUES (1, -7, 9223372036854775807, -12345678901234.5678, 123456.789, "
    "1.5e300, 0.25, 'naïve 日本', 'ab', DATE '2024-02-29', TIMESTAMP '1900-01-01 00:00:00.0001', "
    "TIME '23:59:59.9999', TRUE, x'00FF10', 'long text ' || 'é', "
    "-99999999999999999999999999999999999999, 1.5)",
    "INSERT INTO T (ID) VALUES (2)",
    "INSERT INTO T VALUES (3, 0, 0, 0, 0, 0, 0, '', '', DATE '0001-01-01', "
    "TIMESTAMP '9999-12-31 23:59:59.9999', TIME '00:00:00', FALSE, x'', '', 0, 0)",
]


@pytest.fixture(scope="session")
def types_db(tmp_path_factory):
    return make_database(tmp_path_factory.mktemp("types") / "types.fdb", TYPES_TABLE)


@pytest.fixture(scope="session")
def big_db(tmp_path_factory):
    """Several pointer pages, so that parallel reads really split."""
    return make_database(
        tmp_path_factory.mktemp("big") / "big.fdb",
        [
            "CREATE TABLE WIDE (ID INTEGER, A VARCHAR(100), N NUMERIC(12,2))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 0; BEGIN WHILE (I < 200000) DO BEGIN "
            "INSERT INTO WIDE VALUES (:I, 'row ' || (:I * 7919), :I / 7.0); I = I + 1; END END",
            "CREATE TABLE SMALL (ID INTEGER)",
            "INSERT INTO SMALL VALUES (42)",
        ],
    )


def run_superclassic(tmp_path, script, *args):
    """Runs ``script`` (beside this file) in a child Python whose FIREBIRD
    is a copy of the embedded runtime set to ServerMode = SuperClassic,
    where, unlike the default SuperServer, several processes may open one
    database file; ``args`` follow a new, empty data directory. Returns the
    JSON object the script prints last."""
    runtime = tmp_path / "runtime"
    shutil.copytree(RUNTIME, runtime, symlinks=True)
    with open(runtime / "firebird.conf", "a") as conf:
        conf.write("\nServerMode = SuperClassic\n")
    data = tmp_path / "data"
    data.mkdir()
    result = subprocess.run(
        [sys.executable, os.path.join(os.path.dirname(__file__), script), *args, str(data)],
        env={**os.environ, "FIREBIRD": str(runtime)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
