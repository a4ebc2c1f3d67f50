"""A forget leaves no copy of what it took in the index file's free pages, whatever default the
SQLite under Python was built with. Debian's has secure_delete on; a SQLite built without it
(simulated here: every connection opens with it off) would keep the old copies that a mode
switch's dropped tables and the embedder's moved cells leave in freed pages, which the forget's
own delete never reaches."""

import sqlite3

import pytest

from memoryd.data import purge
from memoryd.home import Home
from tests.memoryd.test_modes_context import CONVERSATION, opened, user
from tests.memoryd.test_reindex import append

SECRET = "Zorblaxquine"


@pytest.fixture
def built_without_secure_delete(monkeypatch):
    """Every sqlite3 connection opens with secure_delete off, as on a SQLite built so."""
    connect = sqlite3.connect

    def without(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.execute("PRAGMA secure_delete = OFF")
        return conn

    monkeypatch.setattr(sqlite3, "connect", without)


def _files_holding(folder, needle: bytes) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file() and needle in p.read_bytes())


def test_every_connection_that_writes_the_index_zeroes_freed_pages(
    tmp_path, built_without_secure_delete
):
    home = Home(tmp_path / "home")
    append(home, "mm-talk", CONVERSATION)
    index = opened(home, "context")
    try:
        assert index._write().execute("PRAGMA secure_delete").fetchone() == (1,)
        with index._embedding_connection() as conn:
            assert conn.execute("PRAGMA secure_delete").fetchone() == (1,)
    finally:
        index.close()


@pytest.mark.parametrize("then", ["spec", "context"])
def test_a_forget_after_a_mode_switch_leaves_no_word_of_it_in_the_file(
    tmp_path, built_without_secure_delete, then
):
    home = Home(tmp_path / "home")
    records = [user(f"2023-05-08T13:{i:02d}:00Z", f"turn {i} about the garden") for i in range(12)]
    records[6] = user("2023-05-08T13:06:00Z", f"my secret password is {SECRET} hunter")
    append(home, "mm-s1", records)
    index = opened(home, "context")
    index.catch_up_all()
    index.close()
    index = opened(home, then)  # a switch drops context's tables; the same mode keeps them
    try:
        index.catch_up_all()
        assert purge.purge(index, ["session:mm-s1:6"]) > 0
    finally:
        index.close()
    assert _files_holding(home.index_db.parent, SECRET.encode()) == []
