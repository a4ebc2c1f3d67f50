"""A part of a recall mode's build ends at FILL_TEXT characters of the rows' text as well as at
FILL_BATCH rows, at least one row a part: over long records (tool outputs up to
max_record_bytes) a part holds the writer a fraction of a second, not the tens of seconds 5,000
of them take, and the tables come out as a build in one go gives them."""

import sqlite3

import pytest

from memoryd import modes
from memoryd.index.index import Index
from tests.memoryd.test_mode_build_parts import _as_in_one_go, _filling, _spec_home
from tests.memoryd.test_reindex import append

WORDS = 300  # "word n " * 300: about 2,100 characters a row


def _long_home(tmp_path, count: int):
    """A spec home of count long turns in one session."""
    home = _spec_home(tmp_path, {})
    turns = [
        {
            "type": "user",
            "time": "2026-05-01T10:00:00Z",
            "content": f"long {n} " + " ".join(f"word{n}x{w}" for w in range(WORDS)),
        }
        for n in range(count)
    ]
    append(home, "mm-long", turns)
    index = Index(home)
    index.open()
    index.catch_up_all()
    index.close()
    return home


def _texts(path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [n for (n,) in conn.execute("SELECT length(text) FROM hits ORDER BY rowid")]
    finally:
        conn.close()


def _done_by_part(home) -> list[int]:
    """The rows each part of a context build fed, FILL_BATCH far above them: only the text
    ends a part."""
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    done, fed = 0, []
    try:
        index.catching_up = None
        while not index.prepare_mode_part():
            now = _filling(home.index_db)
            if now and now[0][1] > done:
                fed.append(now[0][1] - done)
                done = now[0][1]
    finally:
        index.close()
    assert not _filling(home.index_db)
    return fed


@pytest.mark.parametrize("rows_a_part", [1, 2, 3])
def test_a_part_of_long_rows_ends_at_its_text_budget(tmp_path, monkeypatch, rows_a_part):
    home = _long_home(tmp_path, 12)
    length = min(_texts(home.index_db))
    assert length > 2_000
    # A budget that the text of rows_a_part rows reaches, and no fewer.
    monkeypatch.setattr(modes, "FILL_TEXT", length * rows_a_part - length // 2)
    monkeypatch.setattr(modes, "FILL_BATCH", 5_000)
    fed = _done_by_part(home)
    assert fed and all(count == rows_a_part for count in fed)
    _as_in_one_go(home, tmp_path)


def test_a_row_longer_than_the_budget_is_a_part_of_its_own(tmp_path, monkeypatch):
    home = _long_home(tmp_path, 6)
    monkeypatch.setattr(modes, "FILL_TEXT", 100)
    monkeypatch.setattr(modes, "FILL_BATCH", 5_000)
    fed = _done_by_part(home)
    assert fed == [1] * 6
    _as_in_one_go(home, tmp_path)


def test_a_few_long_rows_are_not_one_part_because_they_are_few(tmp_path, monkeypatch):
    """An index of fewer rows than FILL_BATCH, but more text than a part, is built in parts."""
    home = _long_home(tmp_path, 4)
    monkeypatch.setattr(modes, "FILL_TEXT", 3_000)
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        index.catching_up = None
        assert index.prepare_mode_part() is False
        assert _filling(home.index_db)
        while not index.prepare_mode_part():
            pass
    finally:
        index.close()
    _as_in_one_go(home, tmp_path)
