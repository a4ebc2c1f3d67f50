"""After a forget, no word of the forgotten text is left in the index's files: FTS5 keeps a
deleted row's words in its term lists (and a delete marker naming them again) until a merge, so a
forget merges every FTS5 table (hits, and context_hits in modes context and hybrid) before it says
the text is gone from the index (data/purge.py). A forget without room for that merge is done all
the same and says the words wait for room, which the next forget that has it takes; words that
other rows hold stay found."""

import functools
import json
import os
import shutil
import sqlite3

import pytest

from memoryd.data import ftsmerge, purge
from memoryd.index.index import Index
from memoryd.journal import forgottenwrite
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


def test_a_forget_with_no_room_to_merge_is_done_and_says_the_words_wait(md):
    """The merge rewrites the full-text index: a disk without room for that must not keep the
    owner from forgetting. The rows go, the answer says the words wait for room, and the next
    forget that finds room merges them away too."""
    writer = md.index._write()
    md.service._writer.submit(WRITE, _no_room, writer).result()
    said = _forget(md, "session:s-secret:1")
    assert "and the index" in said
    assert "Its words stay in the index's search lists" in said and "bxctl reindex" in said
    assert md.recall(SECRET).startswith("(no matches")
    assert _held(md, SECRET) != []  # its words wait in the term lists
    md.service._writer.submit(WRITE, _room, writer, True).result()
    assert "search lists" not in _forget(md, "session:s-keep:0")
    assert _held(md, SECRET) == [] and _held(md, OTHER) == []


def test_rows_a_restored_forgotten_list_keeps_out_leave_no_word_either(md):
    # After a restore, the rows forgotten.jsonl lists are deleted as a forget deletes them.
    forgottenwrite.add(md.home, "session:s-secret:1", "2026-09-24T20:00Z", "2026-09-24-0001")
    deleted = md.service._writer.submit(WRITE, purge.purge_kept_out, md.index).result()
    assert deleted > 0
    assert _held(md, SECRET) == []
    assert "filler row 3 about the garden" in md.recall("filler 3 garden")


def test_a_merge_a_kill_cut_off_is_made_by_the_forget_run_again(md, monkeypatch):
    """Killed after its delete committed and before its merge: run again, the forget deletes
    nothing (its rows are gone) but the merge is still owed, and made before it says so."""

    def killed(index, on_writer=None):
        raise SystemExit("killed before the merge")

    monkeypatch.setattr(ftsmerge, "merge_owed", killed)
    with pytest.raises(SystemExit):
        _forget(md, "session:s-secret:1")
    monkeypatch.undo()
    assert ftsmerge.owed_path(md.index).exists()
    assert _held(md, SECRET) != []
    said = _forget(md, "session:s-secret:1")
    assert "and the index" in said and "search lists" not in said
    assert _held(md, SECRET) == []
    assert not ftsmerge.owed_path(md.index).exists()


def test_no_merge_is_tried_on_a_disk_with_less_room_than_the_index(md, monkeypatch):
    """The rewrite wants about the index's size free: with less, the forget is done without it
    (it would take the room the forget's other steps need) and says the words wait."""
    real = ftsmerge.os.statvfs

    def nearly_full(path):
        got = real(path)
        return os.statvfs_result((*got[:4], 1, *got[5:]))  # f_bavail: one block left

    monkeypatch.setattr(ftsmerge.os, "statvfs", nearly_full)
    said = _forget(md, "session:s-secret:1")
    assert "Its words stay in the index's search lists (the disk has 0 MiB free" in said
    assert md.recall(SECRET).startswith("(no matches")
    monkeypatch.undo()
    assert "search lists" not in _forget(md, "session:s-keep:0")  # room again: merged
    assert _held(md, SECRET) == [] and _held(md, OTHER) == []


def test_memory_writes_run_between_the_merges_steps(md, monkeypatch):
    """The merge rewrites every term list (13 to 19 s at a million records in context mode):
    it is made in steps, each a writer job of its own, so a memory write that comes meanwhile
    waits for one step, not for the rewrite. Steps of a page each here, so there are many."""
    monkeypatch.setattr(ftsmerge, "FIRST_PAGES", 1)
    monkeypatch.setattr(ftsmerge, "FEWEST_PAGES", 1)
    monkeypatch.setattr(ftsmerge, "MOST_PAGES", 1)
    steps: list[str] = []
    ran_after: list[int] = []
    real_step = ftsmerge._step

    def step(index, table, pages, *rest):
        steps.append(table)
        if len(steps) == 1:  # a write that comes during the first step
            md.service._writer.submit(WRITE, lambda: ran_after.append(len(steps)))
        return real_step(index, table, pages, *rest)

    monkeypatch.setattr(ftsmerge, "_step", step)
    said = _forget(md, "session:s-secret:1")
    assert "and the index" in said and "search lists" not in said
    assert len(steps) > 2
    assert ran_after == [1]  # run right after the step it came in, before the second
    assert _held(md, SECRET) == []
    assert not ftsmerge.owed_path(md.index).exists()
    assert "filler row 3 about the garden" in md.recall("filler 3 garden")
