"""fbunload.unload(db, "postgresql://...") loads into PostgreSQL as the
command line does: against the private cluster scripts/pg-cluster.sh
starts (scripts/test.sh sets FBUNLOAD_TEST_PG_URI); values compared with
what firebird-driver reads."""

import os
import subprocess

import pytest

import fbunload

from conftest import connection, make_database

AUTH = {"user": "SYSDBA", "password": "masterkey"}


@pytest.fixture()
def pg_uri():
    uri = os.environ.get("FBUNLOAD_TEST_PG_URI")
    if not uri:
        pytest.skip("no PostgreSQL cluster: eval \"$(bash scripts/pg-cluster.sh start)\"")
    for sql in ["DROP DATABASE IF EXISTS fbu_python WITH (FORCE)", "CREATE DATABASE fbu_python"]:
        psql(uri, sql)
    return uri.rsplit("/", 1)[0] + "/fbu_python"


def psql(uri, sql):
    out = subprocess.run(["psql", uri, "-v", "ON_ERROR_STOP=1", "-AtX", "-F", "\t", "-c", sql],
                         capture_output=True, text=True, check=True, timeout=60)
    return [line.split("\t") for line in out.stdout.splitlines()]


def test_unload_into_postgresql_gives_firebirds_values(types_db, pg_uri):
    summary = fbunload.unload(types_db, pg_uri, pg_schema="py", parallel=2, verify=True, **AUTH)
    assert summary["pg_schema"] == "py"
    assert "fbunload-test" not in summary["target"]
    assert [t["rows"] for t in summary["tables"]] == [3]
    with connection(types_db) as con:
        cur = con.cursor()
        cur.execute("SELECT ID, S, B, N, N9, V, C, DT, BO, BL, TX, I128 FROM T ORDER BY ID")
        expected = []
        for row in cur.fetchall():
            text = []
            for value in row:
                if value is None:
                    text.append("")
                elif isinstance(value, bool):
                    text.append("t" if value else "f")
                elif isinstance(value, bytes):
                    text.append(value.hex())
                elif hasattr(value, "isoformat"):
                    text.append(value.isoformat())
                else:
                    text.append(str(value).rstrip(" "))
            expected.append(text)
    actual = psql(pg_uri, "SELECT id, s, b, n, n9, v, c::text, dt, bo, encode(bl, 'hex'), tx, "
                          "i128 FROM py.t ORDER BY id")
    assert actual == expected
    assert psql(pg_uri, "SELECT count(*) FROM py._fbunload_runs") == [["1"]]


def test_refusals_are_the_command_lines(types_db, pg_uri):
    with pytest.raises(fbunload.UsageError, match="is for files"):
        fbunload.unload(types_db, pg_uri, compression="gzip", **AUTH)
    with pytest.raises(fbunload.UsageError, match="pg_schema is for a PostgreSQL output"):
        fbunload.unload(types_db, "out", pg_schema="x", **AUTH)
    wrong = pg_uri.replace(":fbunload-test@", ":not-it@")
    with pytest.raises(fbunload.Error, match="password authentication failed") as error:
        fbunload.unload(types_db, wrong, **AUTH)
    assert "not-it" not in str(error.value)
    fbunload.unload(types_db, pg_uri, **AUTH)
    with pytest.raises(fbunload.UsageError, match="already holds"):
        fbunload.unload(types_db, pg_uri, **AUTH)
    fbunload.unload(types_db, pg_uri, overwrite=True, **AUTH)
    assert psql(pg_uri, "SELECT count(*) FROM public.t") == [["3"]]


def test_keep_keys_then_a_sync_applies_only_the_changes(tmp_path, pg_uri):
    db = make_database(tmp_path / "sync.fdb", [
        "CREATE TABLE K (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(10))",
        "INSERT INTO K VALUES (1, 'one')",
        "INSERT INTO K VALUES (2, 'two')",
        "INSERT INTO K VALUES (3, 'three')",
    ])
    first = fbunload.unload(db, pg_uri, pg_schema="pgsync_py", keep_keys=True, **AUTH)
    assert [t["rows"] for t in first["tables"]] == [3]
    with connection(db) as con:
        con.cursor().execute("DELETE FROM K WHERE ID = 1")
        con.cursor().execute("UPDATE K SET V = 'TWO' WHERE ID = 2")
        con.commit()
    # The target holds the state: the next run is a sync of one upsert.
    link = fbunload.unload(db, pg_uri, pg_schema="pgsync_py", **AUTH)
    assert [t["rows"] for t in link["tables"]] == [1]
    assert psql(pg_uri, "SELECT id, v FROM pgsync_py.k ORDER BY id") == [["2", "TWO"], ["3", "three"]]
    assert psql(pg_uri, "SELECT options->>'kind' FROM pgsync_py._fbunload_runs "
                        "ORDER BY finished") == [["full"], ["sync"]]


def test_overwrite_drops_what_fbunload_did_not_make_only_when_told(types_db, pg_uri, capfd):
    fbunload.unload(types_db, pg_uri, pg_schema="py", **AUTH)
    psql(pg_uri, "CREATE TABLE py.mine (i int); CREATE VIEW public.v_mine AS SELECT id FROM py.t")
    with pytest.raises(fbunload.UsageError, match="table py.mine.*--pg-drop-others"):
        fbunload.unload(types_db, pg_uri, pg_schema="py", overwrite=True, **AUTH)
    assert psql(pg_uri, "SELECT count(*) FROM public.v_mine") == [["3"]]
    fbunload.unload(types_db, pg_uri, pg_schema="py", overwrite=True, pg_drop_others=True,
                    pg_lock_wait=5, **AUTH)
    assert "dropping table py.mine" in capfd.readouterr().err
    assert psql(pg_uri, "SELECT to_regclass('py.mine'), to_regclass('public.v_mine')") == [["", ""]]
    for keyword in [{"pg_drop_others": True}, {"pg_lock_wait": 3}]:
        with pytest.raises(fbunload.UsageError, match="is for a PostgreSQL output"):
            fbunload.unload(types_db, "out", **keyword, **AUTH)


def test_the_catalog_is_counted_and_pg_grants_makes_the_grants(tmp_path, pg_uri):
    db = make_database(tmp_path / "grants.fdb", [
        "CREATE TABLE ITEM (ID INTEGER NOT NULL PRIMARY KEY)",
        "CREATE ROLE PY_CLERK",
        "GRANT SELECT ON ITEM TO ROLE PY_CLERK",
        "CREATE EXCEPTION PY_GONE 'gone'",
    ])
    with pytest.raises(fbunload.UsageError, match="pg_grants is for a PostgreSQL output"):
        fbunload.unload(db, tmp_path / "out", pg_grants=True, **AUTH)
    summary = fbunload.unload(db, pg_uri, pg_schema="g", pg_grants=True, **AUTH)
    catalog = summary["catalog"]
    assert catalog["table"] == {"made": 1, "reported": 0}
    assert catalog["grant"] == {"made": 1, "reported": 0}
    assert catalog["exception"] == {"made": 0, "reported": 1}
    assert psql(pg_uri, "SELECT has_table_privilege('py_clerk', 'g.item', 'SELECT')") == [["t"]]
    psql(pg_uri, "DROP OWNED BY py_clerk; DROP ROLE py_clerk")


def test_pg_end_sync_ends_a_kept_load(tmp_path, pg_uri):
    db = make_database(tmp_path / "end.fdb", [
        "CREATE TABLE ITEM (ID INTEGER NOT NULL PRIMARY KEY)",
        "INSERT INTO ITEM VALUES (1)",
    ])
    fbunload.unload(db, pg_uri, pg_schema="e", keep_keys=True, **AUTH)
    assert fbunload.pg_end_sync(pg_uri, pg_schema="e") == {"runs": 1, "untranslated": 0}
    assert psql(pg_uri, "SELECT count(*) FROM pg_tables WHERE schemaname = 'e'") == [["1"]]
    with pytest.raises(fbunload.UsageError, match="holds no fbunload run"):
        fbunload.pg_end_sync(pg_uri, pg_schema="e")


def test_verify_compares_values_and_pg_verify_only_loads_nothing(types_db, pg_uri):
    fbunload.unload(types_db, pg_uri, pg_schema="py", verify=True, **AUTH)
    summary = fbunload.unload(types_db, pg_uri, pg_schema="py", pg_verify_only=True, **AUTH)
    assert [t["rows"] for t in summary["tables"]] == [3]
    psql(pg_uri, "UPDATE py.t SET v = v || ' ' WHERE id = 3")
    with pytest.raises(fbunload.VerifyError,
                       match=r"table T \(py\.t\) \(rows ordered by all their columns\).*column V differs"):
        fbunload.unload(types_db, pg_uri, pg_schema="py", pg_verify_only=True, **AUTH)
    with pytest.raises(fbunload.UsageError, match="pg_verify_only is for a PostgreSQL output"):
        fbunload.unload(types_db, "out", pg_verify_only=True, **AUTH)


def test_a_resumable_load_publishes_without_its_journal(tmp_path, pg_uri):
    """resumable=/resume= into PostgreSQL spell --resumable/--resume
    (crates/cli/tests/postgres_resume.rs kills loads and resumes them)."""
    db = make_database(
        tmp_path / "r.fdb",
        [
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(20))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 1000) DO BEGIN "
            "INSERT INTO T VALUES (:I, 'v' || :I); I = I + 1; END END",
        ],
    )
    summary = fbunload.unload(db, pg_uri, pg_schema="res", resumable=True, **AUTH)
    assert [t["rows"] for t in summary["tables"]] == [1000]
    assert psql(pg_uri, "SELECT count(*), sum(id) FROM res.t") == [["1000", "500500"]]
    # Published: the staging schema, with its journal, is gone.
    assert psql(pg_uri, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE "
                        "'\\_fbunload\\_staging\\_%'") == [["0"]]
    assert psql(pg_uri, "SELECT to_regclass('res._fbunload_resume') IS NULL") == [["t"]]
    with pytest.raises(fbunload.UsageError) as refused:
        fbunload.unload(db, pg_uri, pg_schema="other", resume=True, **AUTH)
    message = str(refused.value)
    assert "resume=True" in message and "--" not in message, message


def test_pg_fillfactor_sets_the_tables_a_load_makes(types_db, pg_uri, tmp_path):
    options = "SELECT coalesce(array_to_string(reloptions, ','), 'none') FROM pg_class " \
              "WHERE oid = '{}.t'::regclass"
    fbunload.unload(types_db, pg_uri, pg_schema="kept", keep_keys=True, **AUTH)
    assert psql(pg_uri, options.format("kept")) == [["fillfactor=90"]]
    fbunload.unload(types_db, pg_uri, pg_schema="own", pg_fillfactor=70, **AUTH)
    assert psql(pg_uri, options.format("own")) == [["fillfactor=70"]]
    with pytest.raises(fbunload.UsageError, match="pg_fillfactor=5: PostgreSQL takes 10 to 100"):
        fbunload.unload(types_db, pg_uri, pg_schema="x", pg_fillfactor=5, **AUTH)
    with pytest.raises(fbunload.UsageError, match="pg_fillfactor is for a PostgreSQL output"):
        fbunload.unload(types_db, tmp_path / "out", pg_fillfactor=90, **AUTH)
