"""A forget rewrites notes in place, before the index's offset in notes.md: the digest of the part
indexed, by which a restart reads on (index/notesprefix.py), is taken again then, whether the
offset moved or not, so a restart after the forget still reads on from the offset rather than
reading every note again."""

import sqlite3

import pytest

from memoryd.data import purge
from memoryd.home import Home
from memoryd.index import indexer, notesprefix
from memoryd.index.index import Index

COUNT = 1_500  # notes.md past a few 64 KiB blocks


def _note(i: int) -> str:
    return (
        f"§ noted 2026-11-{1 + i % 28:02d}T10:00Z in session s-old{i % 9} · private\n"
        f"an ordinary note number {i:05d} about the garden and the weekly shopping list\n"
    )


def _state(home: Home):
    conn = sqlite3.connect(home.index_db)
    try:
        return indexer.load_state(conn, indexer.NOTES_LOG)
    finally:
        conn.close()


@pytest.mark.parametrize("replacement", ["same length", "shorter"])
def test_a_forget_before_the_offset_keeps_the_digest_true(tmp_path, replacement):
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("".join(_note(i) for i in range(COUNT)))
    path.chmod(0o600)
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
        before = _state(home)
        assert notesprefix.holds(path, before.prefix, before.bytes)
        old = "number 00007 about the garden"
        new = "number XXXXX about the garden" if replacement == "same length" else "gone"
        data = path.read_bytes()
        at = data.index(old.encode())
        path.write_bytes(data.replace(old.encode(), new.encode(), 1))
        change = len(new) - len(old)
        purge.shift_notes(index, [(at + len(old), change)])
        after = _state(home)
    finally:
        index.close()
    assert after.bytes == before.bytes + change
    assert notesprefix.holds(path, after.prefix, after.bytes)
