"""Resumable runs from Python: ``resumable=True`` and ``resume=True``
spell the command line's ``--resumable`` and ``--resume``
(crates/cli/tests/resume.rs kills runs and resumes them under writers)."""

import os

import pytest

import fbunload
from conftest import PASSWORD, USER, make_database


def test_a_resume_continues_what_a_stopped_run_kept(tmp_path):
    db = make_database(
        tmp_path / "r.fdb",
        [
            "CREATE TABLE T (ID INTEGER NOT NULL PRIMARY KEY, V VARCHAR(20))",
            "EXECUTE BLOCK AS DECLARE I INTEGER = 1; BEGIN WHILE (I <= 1000) DO BEGIN "
            "INSERT INTO T VALUES (:I, 'v' || :I); I = I + 1; END END",
        ],
    )
    creds = dict(user=USER, password=PASSWORD, format="parquet")
    out = tmp_path / "out"
    summary = fbunload.unload(db, out, resumable=True, **creds)
    # Published: nothing is left to resume.
    assert not os.path.exists(out / ".fbunload-resume")
    with pytest.raises(fbunload.UsageError) as refused:
        fbunload.unload(db, out, resume=True, **creds)
    message = str(refused.value)
    assert "resume=True" in message and "--" not in message, message
    with pytest.raises(fbunload.UsageError) as refused:
        fbunload.unload(db, tmp_path / "w", resumable=True, where="ID > 1", **creds)
    message = str(refused.value)
    assert "resumable=True" in message and "--" not in message, message
    assert summary["tables"][0]["rows"] == 1000
