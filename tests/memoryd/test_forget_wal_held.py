"""A forget while another program holds a read of the index (sqlite3 -readonly, any tool that
opens the file with SQLite): SQLite cannot truncate the WAL then, and its checkpoint answers busy
without raising, after the connection's busy timeout. The forget waits a quarter second at most
for it (not 30 s a checkpoint on the writer), the truncation is owed in a mark beside the index
(index/walowed.py), and the writer empties the WAL at its first transaction once the read has
ended, at the next tick of a timer when nothing writes (walretry.py), or at the next open of the
index; the old frames never keep the text past that."""

import asyncio
import json
import shutil
import sqlite3
import time

import pytest

from memoryd import walretry
from memoryd.index.index import Index
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "xqvelmorph"
MARK = "memory.sqlite3.wal-owed"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.say("s1", f"The alarm code is {SECRET} for the back door.", "ok")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _held(m: Memoryd) -> list[str]:
    """The index folder's files holding the secret's bytes, as they are (no checkpoint)."""
    folder = m.index.path.parent
    found = (p for p in folder.iterdir() if p.is_file() and SECRET.encode() in p.read_bytes())
    return sorted(p.name for p in found)


def _reader(m: Memoryd) -> sqlite3.Connection:
    """Another program's read-only read of the index, its snapshot held."""
    reader = sqlite3.connect(f"file:{m.index.path}?mode=ro", uri=True, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM sources").fetchone()
    return reader


def _forget(m: Memoryd, ref: str) -> str:
    return json.loads(m.admin("forget", {"id": ref}))["message"]


def test_a_held_read_owes_the_truncation_and_the_next_write_makes_it(md):
    reader = _reader(md)
    try:
        started = time.monotonic()
        _forget(md, "session:s1:0")
        took = time.monotonic() - started
        assert took < 5  # two checkpoints waited 30 s each on the writer
        assert (md.index.path.parent / MARK).exists()
        assert md.index.wal_owed.owed
        assert "memory.sqlite3-wal" in (md.index.wal_owed.said() or "")
        assert "memory.sqlite3-wal" in _held(md)  # as SQLite leaves it while the read holds
        md.say("s2", "something else entirely", "fine")  # a write while the read holds
        assert md.index.wal_owed.owed
    finally:
        reader.execute("COMMIT")
        reader.close()
    md.say("s3", "another turn", "sure")  # the first write after the read ended
    assert _held(md) == []
    assert not (md.index.path.parent / MARK).exists()
    assert md.index.wal_owed.said() is None
    assert md.recall(SECRET).startswith("(no matches")


def test_an_owed_truncation_is_made_at_the_next_open(md):
    reader = _reader(md)
    try:
        _forget(md, "session:s1:0")
        md.service.close()  # memoryd stops while the read holds: its close leaves the WAL
    finally:
        reader.execute("COMMIT")
        reader.close()
    folder = md.index.path.parent
    assert (folder / MARK).exists()
    assert "memory.sqlite3-wal" in _held(md)
    index = Index(md.home)
    index.open()  # a start: the mark says the truncation is owed
    try:
        assert _held(md) == []
        assert not (folder / MARK).exists()
        assert not index.wal_owed.owed
    finally:
        index.close()
    md.service.close = lambda: None  # closed already


def test_a_forget_without_a_held_read_owes_nothing(md):
    _forget(md, "session:s1:0")
    assert not (md.index.path.parent / MARK).exists()
    assert md.index.wal_owed.said() is None
    assert _held(md) == []


def test_the_timer_empties_the_wal_once_the_read_ends_while_nothing_writes(md, monkeypatch):
    monkeypatch.setattr(walretry, "RETRY_SECONDS", 0.05)
    reader = _reader(md)
    try:
        _forget(md, "session:s1:0")
    finally:
        reader.execute("COMMIT")
        reader.close()
    assert md.index.wal_owed.owed  # no write since the read ended

    async def ticking() -> None:
        timer = walretry.WalRetry(md.service)
        timer.start()
        try:
            for _ in range(100):
                if not md.index.wal_owed.owed:
                    return
                await asyncio.sleep(0.02)
        finally:
            timer.stop()

    asyncio.run(ticking())
    assert not md.index.wal_owed.owed
    assert _held(md) == []
    assert not (md.index.path.parent / MARK).exists()


def test_the_forget_says_the_wal_holds_old_copies_while_a_read_keeps_it(md):
    reader = _reader(md)
    try:
        said = _forget(md, "session:s1:0")
    finally:
        reader.execute("COMMIT")
        reader.close()
    assert f"stay in {md.index.path}-wal until the reads of the index open now end" in said
    md.say("s2", "another turn", "sure")
    assert "-wal" not in _forget(md, "session:s2:0")  # no read holds it: nothing owed
