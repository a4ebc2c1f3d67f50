"""An index of context or hybrid some formats behind, whose steps changed only context's table (a
table derived from the index's own rows), is kept at the upgrade: its rows and hybrid's vectors as
they are, its stamp raised, context's table built again from its rows as a change of mode builds
it, never from the session logs; recall answers by the spec's search meanwhile, saying why, and a
kill during that build leaves an index the next start finishes."""

import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.index.settings import FORMAT
from memoryd.modes import stale
from tests.memoryd.test_modes_unspaced import CHINESE, SAID
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on

REPO = Path(__file__).resolve().parents[2]


def _rows(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT rowid, text, near, date FROM context_hits ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def _read(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _as_older(path: Path, older: int) -> None:
    """Make the index as an older memoryd left it: its stamp, and context's table holding each
    run whole and a neighbour column with words no build of this format writes there."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE settings SET value = ? WHERE name = 'format'", (str(older),))
        conn.execute(
            "UPDATE context_hits SET text = (SELECT h.text FROM hits h"
            " WHERE h.rowid = context_hits.rowid), near = 'zorblax quixotic'"
        )
    conn.close()


@pytest.fixture
def built(tmp_path) -> tuple[Home, list[tuple]]:
    """A context home, with context_hits as this format builds it."""
    home = Home(tmp_path / "home")
    append(home, "mm-talk", SAID)
    index = Index(home, mode="context")
    index.open()
    index.catch_up_all()
    index.close()
    return home, _rows(home.index_db)


@pytest.mark.parametrize("older", [FORMAT - 1, FORMAT - 2])
def test_a_context_index_formats_behind_builds_its_table_from_its_rows(built, caplog, older):
    home, wanted = built
    _as_older(home.index_db, older)
    inode = home.index_db.stat().st_ino
    rows_before = _read(home.index_db, "SELECT rowid, text FROM hits ORDER BY rowid")
    with caplog.at_level(logging.INFO):
        index = Index(home, mode="context")
        index.open()
        try:
            added = index.catch_up_all()  # nothing read again: the offsets are the index's own
            hits = recall_on(index, "星期四", k=1, session="mm-q").hits
        finally:
            index.close()
    assert "rebuilding it" not in caplog.text and "creating it" not in caplog.text
    assert f"format {older} holds its rows as format {FORMAT} does: kept" in caplog.text
    assert "context_hits" in caplog.text and "built from" in caplog.text
    assert added == 0 and home.index_db.stat().st_ino == inode
    assert _read(home.index_db, "SELECT rowid, text FROM hits ORDER BY rowid") == rows_before
    assert _rows(home.index_db) == wanted
    assert _read(home.index_db, "SELECT value FROM settings WHERE name = 'format'") == [
        (str(FORMAT),)
    ]
    assert not _read(home.index_db, f"SELECT 1 FROM sqlite_master WHERE name = '{stale.TABLE}'")
    assert hits and hits[0].snippet == CHINESE


def test_meanwhile_recall_answers_by_the_spec_saying_why(built):
    home, wanted = built
    _as_older(home.index_db, FORMAT - 2)
    index = Index(home, mode="context")
    index.open(defer_mode=True)  # as memoryd opens it: the build once it listens
    try:
        assert index.mode_pending
        result = recall_on(index, "garden roses", k=3, session="mm-q")
        assert result.hits and "garden" in result.hits[0].snippet
        assert "built again from the index's rows" in result.text
        assert f"format {FORMAT} holds it otherwise than format {FORMAT - 2}" in result.text
        index.prepare_mode()
        assert not index.mode_pending
        after = recall_on(index, "星期四", k=1, session="mm-q")
    finally:
        index.close()
    assert "built again" not in after.text and after.hits[0].snippet == CHINESE
    assert _rows(home.index_db) == wanted


KILLED = """
import os
from pathlib import Path
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.modes import context

fill = context.rows_added

def killed(conn, sources, texts):
    fill(conn, sources, texts)  # written in the build's transaction, never committed
    os._exit(9)

context.rows_added = killed
index = Index(Home(Path({home!r})), mode="context")
index.open(defer_mode=True)
index.prepare_mode()
"""


def test_a_kill_during_the_build_leaves_an_index_the_next_start_finishes(built):
    home, wanted = built
    _as_older(home.index_db, FORMAT - 2)
    script = textwrap.dedent(KILLED.format(home=str(home.root)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=120, check=False)
    assert done.returncode == 9
    # Killed mid-build: the stamp raised and the mark kept, context's table as the old one left.
    assert _read(home.index_db, "SELECT value FROM settings WHERE name = 'format'") == [
        (str(FORMAT),)
    ]
    assert _read(home.index_db, f"SELECT name FROM {stale.TABLE}") == [("context_hits",)]
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        assert index.mode_pending
        index.prepare_mode()
        assert index.catch_up_all() == 0
    finally:
        index.close()
    assert _rows(home.index_db) == wanted
    assert not _read(home.index_db, f"SELECT 1 FROM sqlite_master WHERE name = '{stale.TABLE}'")


def test_a_change_of_mode_over_the_mark_builds_the_new_mode_whole(built):
    """The mark is the old mode's: a start in another mode builds that mode whole, and a start
    in spec leaves the spec's tables alone, the mark gone with the others."""
    home, _ = built
    _as_older(home.index_db, FORMAT - 1)
    index = Index(home)  # spec
    index.open()
    index.close()
    names = {name for (name,) in _read(home.index_db, "SELECT name FROM sqlite_master")}
    assert not names & {"context_hits", "recall_mode", stale.TABLE}
