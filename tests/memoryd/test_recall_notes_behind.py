"""A session's recall that finds notes.md changed since the index last read it does not wait for
the writer to catch the index up: it answers from the index as it is, saying that notes.md is
being caught up, while the catch-up waits its turn on the writer (recall/notesbehind.py).

The writer is held at a hook (a forget's scrub of the journal and the exports, which comes after
it rewrote notes.md and before it deletes the note's rows; or a job of the test's own), so what
is asserted is that the recall was answered while the writer was still held, not how fast. And a
recall answered meanwhile never shows a note being forgotten, though the index still holds its
rows: the forget recorded their keys before it rewrote notes.md (data/unfinished.py)."""

import asyncio
import json
import sqlite3
import threading

import pytest

from memoryd.data import erasing
from memoryd.memory import notes
from memoryd.recall.recaller import NOTES_CHANGED
from memoryd.writer import WRITE
from proto.messages import MemoryBlock, MemoryBlockReply, MemoryCall, ToolRequest
from tests.memoryd.owner_data_harness import Memoryd

HELD = 30.0  # seconds the writer stays held at most: far past any answer that does not wait
FORGOTTEN = "The heron came back to the pond by the old mill."
KEPT = "A heron nests by the river bend."
PREFIX = "(the index is catching up with memory/notes.md: "


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": "Prefer metric units in answers."})
    for note in ["The dentist is on Friday.", FORGOTTEN, KEPT, "The plumber comes on Tuesday."]:
        m.call({"action": "note", "text": note})
    yield m
    m.close()


def _recall(query: str, n: int) -> MemoryCall:
    req = ToolRequest(
        session="mm-other",
        call_id=f"r{n}",
        tool="recall",
        arguments=json.dumps({"query": query, "k": 5}),
    )
    return MemoryCall(request=req, taint="private", untrusted=False)


def _rows_holding(m: Memoryd, word: str) -> list[str]:
    conn = sqlite3.connect(m.index.path)
    try:
        rows = conn.execute("SELECT text FROM hits WHERE hits MATCH ?", (word,)).fetchall()
    finally:
        conn.close()
    return [text for (text,) in rows]


def _answers_while_held(m: Memoryd, queries: list[str]) -> tuple[list[str], str]:
    """The recalls of queries and a memory block, asked on memoryd's event loop, each given HELD
    seconds: the caller releases the writer only after they are answered."""

    async def ask() -> tuple[list[str], str]:
        found = []
        for n, query in enumerate(queries):
            answer = await asyncio.wait_for(m.service.on_broker(_recall(query, n)), HELD)
            assert answer.ok, answer.output
            found.append(answer.output)
        block = await asyncio.wait_for(m.service.on_loop(MemoryBlock()), HELD)
        assert isinstance(block, MemoryBlockReply)
        return found, block.text

    return asyncio.run(ask())


def test_a_recall_during_a_note_forget_answers_from_the_index_without_the_note(md, monkeypatch):
    md.recall("heron")  # the index holds both notes
    assert any(FORGOTTEN in t for t in _rows_holding(md, "heron"))
    marked, release = threading.Event(), threading.Event()
    real = erasing.scrub_everywhere

    def scrub_everywhere(*args, **kwargs):
        marked.set()  # notes.md holds the marker now; the note's rows are still in the index
        release.wait(HELD)
        return real(*args, **kwargs)

    monkeypatch.setattr(erasing, "scrub_everywhere", scrub_everywhere)
    said: list[dict] = []
    parsed = notes.parse(md.home.memory_file("notes.md").read_bytes())
    ref = f"note:{next(n.number for n in parsed if n.text == FORGOTTEN)}"
    forget = threading.Thread(target=lambda: said.append(md.data("forget", id=ref)))
    forget.start()
    try:
        assert marked.wait(HELD)
        notes_md = md.home.memory_file("notes.md").read_text()
        assert FORGOTTEN not in notes_md and KEPT in notes_md
        assert any(FORGOTTEN in t for t in _rows_holding(md, "heron"))  # not deleted yet
        (meanwhile, plumber), block = _answers_while_held(md, ["heron", "plumber"])
        held_still = not release.is_set() and forget.is_alive()
    finally:
        release.set()
        forget.join(HELD)
    assert held_still  # answered while the forget held the writer
    assert "Prefer metric units in answers." in block
    assert KEPT in meanwhile
    assert FORGOTTEN not in meanwhile and "old mill" not in meanwhile
    assert meanwhile.endswith(NOTES_CHANGED) and NOTES_CHANGED.startswith(PREFIX)
    assert "The plumber comes on Tuesday." in plumber
    assert said and said[0]["message"].startswith(f"forgot {ref}")
    md.service._writer.submit(WRITE, lambda: None).result()  # the catch-up queued meanwhile
    (after,), _ = _answers_while_held(md, ["heron"])
    assert KEPT in after and FORGOTTEN not in after and PREFIX not in after
    assert not any(FORGOTTEN in t for t in _rows_holding(md, "heron"))


def test_a_recall_after_a_hand_edit_while_the_writer_is_busy_answers_at_once(md):
    notes_md = md.home.memory_file("notes.md")
    release, running = threading.Event(), threading.Event()

    def busy() -> None:
        running.set()
        release.wait(HELD)

    job = md.service._writer.submit(WRITE, busy)
    assert running.wait(HELD)
    try:
        with open(notes_md, "a") as f:  # the owner adds a note by hand
            f.write("§ noted 2026-11-20T10:00Z in session mm-owner · private\n")
            f.write("The kingfisher was seen at dawn.\n")
        (first, second), _ = _answers_while_held(md, ["kingfisher", "plumber"])
        held_still = not release.is_set() and not job.done()
    finally:
        release.set()
        job.result(HELD)
    assert held_still
    assert first == '(no matches for "kingfisher")\n' + NOTES_CHANGED
    assert "The plumber comes on Tuesday." in second and second.endswith(NOTES_CHANGED)
    md.service._writer.submit(WRITE, lambda: None).result()  # the one catch-up both submitted
    (found,), _ = _answers_while_held(md, ["kingfisher"])
    assert "The kingfisher was seen at dawn." in found and PREFIX not in found


def test_a_recall_after_a_hand_edit_with_the_writer_free_finds_it_caught_up(md):
    notes_md = md.home.memory_file("notes.md")
    with open(notes_md, "a") as f:
        f.write("§ noted 2026-11-20T10:00Z in session mm-owner · private\n")
        f.write("The kingfisher was seen at dawn.\n")
    (found,), _ = _answers_while_held(md, ["kingfisher"])
    assert "The kingfisher was seen at dawn." in found and PREFIX not in found
