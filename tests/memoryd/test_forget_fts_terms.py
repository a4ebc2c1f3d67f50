"""After a forget, no word of the forgotten text is left in the index's files: FTS5 keeps a
deleted row's words in its term lists (and a delete marker naming them again) until a merge, so a
forget merges every FTS5 table (hits, and context_hits in modes context and hybrid) before it says
the text is gone from the index (data/purge.py). A forget that cannot (no room) says it stopped
part way, and run again once there is room, finishes; words that other rows hold stay found."""

import functools
import json
import shutil
import sqlite3

import pytest

from memoryd.data import purge
from memoryd.errors import AdminRefused
from memoryd.index.index import Index
from memoryd.journal import forgotten
from memoryd.writer import WRITE
from tests.memoryd import owner_data_harness
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.test_index_full_disk import _room

SECRET = "tangerine4417"
# Rows of many words: each transaction's FTS5 segment spans pages, so a merge needs new ones.
FILLER = " ".join(f"w{i}" for i in range(400))
OTHER = "quokka8812"  # forgotten with the secret, and also said in a record that stays


@pytest.fixture(params=["spec", "context", "hybrid"])
def md(request, tmp_path, monkeypatch):
    mode = request.param
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
        from memoryd.modes import hybrid

        monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)  # words only: no vectors
    monkeypatch.setattr(owner_data_harness, "Index", functools.partial(Index, mode=mode))
    m = Memoryd(tmp_path / "home")
    # Rows in many transactions, so the term lists are in several FTS5 segments, the
    # forgotten record's among them, with turns around it (context's neighbour column).
    for n in range(12):
        m.say(f"s-fill{n}", f"filler row {n} about the garden", f"reply {n} {FILLER} {n}")
    m.say("s-secret", "the weather is mild", f"my bank vault code is {SECRET} and {OTHER}", "ok")
    m.say("s-keep", f"the zoo has a {OTHER} exhibit", "nice")
    for n in range(12, 16):
        m.say(f"s-fill{n}", f"filler row {n} about the garden", f"reply {n} {FILLER} {n}")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _held(m: Memoryd, word: str) -> list[str]:
    """The index's files (memory.sqlite3 and its -wal, -shm) holding word's bytes, after a
    checkpoint."""
    conn = sqlite3.connect(m.index.path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    folder = m.index.path.parent
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.name.startswith(m.index.path.name) and word.encode() in p.read_bytes()
    )


def _forget(m: Memoryd, ref: str) -> str:
    return json.loads(m.admin("forget", {"id": ref}))["message"]


def test_no_word_of_a_forgotten_record_is_left_in_the_index_file(md):
    assert _held(md, SECRET) == ["memory.sqlite3"]  # held before
    said = _forget(md, "session:s-secret:1")
    assert "and the index" in said
    assert _held(md, SECRET) == []
    assert md.recall(SECRET).startswith("(no matches")
    assert f"the zoo has a {OTHER} exhibit" in md.recall(OTHER)  # another row's word stays
    assert "filler row 3 about the garden" in md.recall("filler 3 garden")
    # A second forget, of a row the first merge left in the one segment, likewise.
    _forget(md, "session:s-keep:0")
    assert _held(md, OTHER) == []
    assert "filler row 14 about the garden" in md.recall("filler 14 garden")


def _no_room(conn: sqlite3.Connection) -> None:
    """No room for the index to grow, and no free page in it: a merge then fails as on a full
    disk."""
    conn.execute("VACUUM")
    _room(conn, room=False)


def test_a_forget_with_no_room_to_merge_stops_part_way_and_finishes_when_run_again(md):
    writer = md.index._write()
    md.service._writer.submit(WRITE, _no_room, writer).result()
    with pytest.raises(AdminRefused, match="forget stopped part way") as refused:
        _forget(md, "session:s-secret:1")
    assert "run it again" in str(refused.value)
    # Kept out meanwhile: its text is in no hit (context's neighbours may still match its words).
    meanwhile = md.recall(SECRET)
    assert meanwhile.startswith("(no matches") or SECRET not in meanwhile
    md.service._writer.submit(WRITE, _room, writer, True).result()
    assert "and the index" in _forget(md, "session:s-secret:1")
    assert _held(md, SECRET) == []


def test_rows_a_restored_forgotten_list_keeps_out_leave_no_word_either(md):
    # After a restore, the rows forgotten.jsonl lists are deleted as a forget deletes them.
    forgotten.add(md.home, "session:s-secret:1", "2026-09-24T20:00Z", "2026-09-24-0001")
    deleted = md.service._writer.submit(WRITE, purge.purge_kept_out, md.index).result()
    assert deleted > 0
    assert _held(md, SECRET) == []
    assert "filler row 3 about the garden" in md.recall("filler 3 garden")
