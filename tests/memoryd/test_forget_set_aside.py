"""A forget empties the tables a recall mode switch set aside before its merge ends: their rows
(the old mode's copy of every text) may hold what it took, and its answer says the index holds the
text no more. Without it, a forget made while a switch back to spec (or a build toward another
mode) was still emptying them a part at a time left the text in the file until those parts ran,
and after a kill until the next start."""

import pytest

from memoryd import modes
from memoryd.data import ftsmerge
from memoryd.home import Home
from memoryd.index.index import Index
from tests.memoryd.test_mode_build_drop import _aside
from tests.memoryd.test_reindex import append

SECRET = b"zebrasecretvault"


def _turns() -> list[dict]:
    turns = [
        {"type": "user", "time": "2026-05-01T10:00:00Z", "content": f"turn {n} " + "word " * 60}
        for n in range(120)
    ]
    turns[7]["content"] = "the vault word is " + SECRET.decode()
    return turns


@pytest.mark.parametrize("then", ["spec", "hybrid"])
def test_a_forget_empties_what_a_switch_set_aside(tmp_path, monkeypatch, then):
    if then == "hybrid":
        pytest.importorskip("onnxruntime")
        from memoryd.modes import hybrid

        monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)
    monkeypatch.setattr(modes, "DROP_BYTES", 6_000)
    monkeypatch.setattr(modes, "FILL_BATCH", 10)
    home = Home(tmp_path / "home")
    append(home, "mm-old", _turns())
    index = Index(home, mode="context")
    index.open()
    index.catch_up_all()
    index.close()
    index = Index(home, mode=then)
    index.open(defer_mode=True)
    try:
        index.catching_up = None
        for _ in range(2):  # set aside, and one part removed
            assert not index.prepare_mode_part()
        assert _aside(home.index_db)
        # a forget has deleted the record's row from the live tables, and owes the merge
        ftsmerge.owe(index)
        assert ftsmerge.merge_owed(index) is None
        assert _aside(home.index_db) == []  # the old mode's copy of the text is gone with them
        while not index.prepare_mode_part():  # and the switch goes on to its end from there
            pass
        assert not index.mode_clearing and not index.mode_pending
    finally:
        index.close()
    assert SECRET not in _set_aside_bytes(home)


def _set_aside_bytes(home: Home) -> bytes:
    """Every byte left in a table set aside (none once they are dropped)."""
    import sqlite3

    conn = sqlite3.connect(home.index_db)
    try:
        out = b""
        for name in _aside(home.index_db):
            for row in conn.execute(f'SELECT * FROM "{name}"'):  # noqa: S608
                out += b"".join(v if isinstance(v, bytes) else str(v).encode() for v in row)
        return out
    finally:
        conn.close()
