"""A damaged progress row in the index (the digest of the bytes read that logprefix.py and
notesprefix.py keep beside a log's offset: a number thousands of digits long, a block count no
block gives) is no digest: the log goes on being indexed, its digest is taken again from its
start, and the row's damage is said once as the index's, never as the log's fault with Python's
int() advice."""

import logging
import sqlite3

import pytest

from memoryd.home import Home
from memoryd.index import indexer, logprefix, notesprefix
from memoryd.index.index import Index
from tests.memoryd.test_index_label_kept import user
from tests.memoryd.test_reindex import append

LOG = "sessions/s-1/0.jsonl"
SAID = "holds a damaged digest"


def _prefix(home: Home) -> str:
    conn = sqlite3.connect(home.index_db)
    try:
        (tail,) = conn.execute("SELECT tail FROM offsets WHERE log = ?", (LOG,)).fetchone()
    finally:
        conn.close()
    return tail.split(" ", 2)[2]


def _damage(home: Home, prefix: str) -> None:
    conn = sqlite3.connect(home.index_db)
    try:
        (tail,) = conn.execute("SELECT tail FROM offsets WHERE log = ?", (LOG,)).fetchone()
        digest, file, _ = tail.split(" ", 2)
        with conn:
            conn.execute(
                "UPDATE offsets SET tail = ? WHERE log = ?", (f"{digest} {file} {prefix}", LOG)
            )
    finally:
        conn.close()


def _found(home: Home, word: str) -> bool:
    conn = sqlite3.connect(home.index_db)
    try:
        return any(word in t for (t,) in conn.execute("SELECT text FROM hits"))
    finally:
        conn.close()


def _damaged_forms(prefix: str) -> list[str]:
    offset, whole, rest = prefix.split(":", 2)
    return [
        "9" * 5000 + f":{whole}:{rest}",  # past int()'s 4,300 digits
        f"{offset}:" + "9" * 30 + f":{rest}",  # past any offset
        f"{offset}:{int(whole) + 1}:{rest}",  # no whole number of blocks
        f"{offset}:{whole}:{rest[:-1]}",  # the hash after the blocks cut short
    ]


@pytest.mark.parametrize("form", range(4))
def test_a_damaged_digest_is_passed_over_and_the_log_indexed_on(tmp_path, caplog, form):
    home = Home(tmp_path / "home")
    append(home, "s-1", [user(f"The spade number {n} is in the loft.") for n in range(5)])
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
        good = _prefix(home)
        _damage(home, _damaged_forms(good)[form])
        append(home, "s-1", [user("The rake is by the door, zebrarake.")])
        with caplog.at_level(logging.WARNING):
            index.catch_up_all()
        assert not index.not_indexed
        assert _found(home, "zebrarake")
        path = home.session_log("s-1")
        state = indexer.load_state(sqlite3.connect(home.index_db), LOG)
        assert state is not None
        assert state.prefix == logprefix.extend(path, None, 0, state.bytes)  # taken again
        assert logprefix.holds(path, state.prefix, state.bytes)
    finally:
        index.close()
    said = [r.getMessage() for r in caplog.records if SAID in r.getMessage()]
    assert len(said) == 1 and str(path) in said[0]
    assert "int" not in " ".join(r.getMessage() for r in caplog.records)


def test_a_damaged_digest_says_once_and_holds_nothing(tmp_path, caplog):
    path = tmp_path / "0.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 10_000)
    size = path.stat().st_size
    good = logprefix.extend(path, None, 0, size)
    assert good is not None and logprefix.holds(path, good, size)
    with caplog.at_level(logging.WARNING):
        for damaged in _damaged_forms(good):
            assert not logprefix.holds(path, damaged, size)  # a move reads it again
            assert logprefix.extend(path, damaged, size, size) == good
        for damaged in _damaged_forms(good)[:3]:  # notes.md's row: the blocks' digest alone
            assert not notesprefix.holds(path, damaged.rpartition(":")[0], size)
    assert sum(SAID in r.getMessage() for r in caplog.records) == 1
    assert not logprefix.holds(path, None, size)  # none kept (an older index): not said
    assert sum(SAID in r.getMessage() for r in caplog.records) == 1
