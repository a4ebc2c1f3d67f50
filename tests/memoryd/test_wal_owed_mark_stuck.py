"""A wal-owed mark that cannot be removed (made a folder by hand) once the WAL was emptied: the
WAL holds no old frame, so a forget's answer no longer says it does, and the mark is named in the
log once, not at every writer transaction and timer tick after (index/walowed.py)."""

import json
import logging
import shutil
import sqlite3

import pytest

from tests.memoryd.owner_data_harness import Memoryd

MARK = "memory.sqlite3.wal-owed"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.say("s1", "The gate code is xqvelmorph.", "ok")
    m.say("s2", "The shed code is zuvantrel.", "ok")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_mark_that_cannot_be_removed_is_said_once_and_the_wal_is_not_said_full(md, caplog):
    reader = sqlite3.connect(f"file:{md.index.path}?mode=ro", uri=True, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sources").fetchone()
        md.admin("forget", {"id": "session:s1:0"})
        assert md.index.wal_owed.owed
        mark = md.index.path.parent / MARK
        mark.unlink()
        mark.mkdir()  # the owner, or a tool, made it a folder
    finally:
        reader.execute("COMMIT")
        reader.close()
    caplog.set_level(logging.WARNING)
    for n in range(4):
        md.say(f"later{n}", f"later words {n}", "fine")
        md.index.wal_owed.try_owed(md.index._write())
    assert not md.index.wal_owed.owed
    assert md.index.wal_owed.said() is None
    message = json.loads(md.admin("forget", {"id": "session:s2:0"}))["message"]
    assert "Old copies" not in message
    said = [r for r in caplog.records if MARK in r.getMessage() and "cannot" in r.getMessage()]
    assert len(said) == 1
