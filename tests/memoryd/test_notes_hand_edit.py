"""notes.md edited by hand while memoryd runs: recall and the owner's search answer from notes.md
as it is (the writer catches the index up first, at the cost of one stat when nothing changed),
and forget never takes a note number that may name another note than search showed."""

import json
import os
import threading
from pathlib import Path

import pytest

from memoryd.errors import AdminRefused
from proto.client import RemoteError

from .owner_data_harness import Memoryd
from .test_service import memoryd  # noqa: F401  (the fixture)

QUOKKA = "The launch moved to Thursday quokka."
WOMBAT = "Buy flowers wombat for mum."
ALPACA = "Alpaca dentist on Monday."
ADDED = "§ noted 2026-09-20T14:02Z in session mm-byhand · private\nThe capybara spa is open late.\n"


def _write_notes(running, *texts: str) -> Path:
    assert running.service.caught_up.wait(30)  # the start's catch-up reads notes.md no more
    for n, text in enumerate(texts):
        assert running.call("memory", {"action": "note", "text": text}, call_id=f"n{n}").ok
    return running.home / "memory" / "notes.md"


def _without(notes: Path, word: str) -> str:
    """notes.md's text without the note holding word (its header and its line)."""
    lines = notes.read_text().splitlines(True)
    at = next(i for i, line in enumerate(lines) if word in line)
    return "".join(lines[: at - 1] + lines[at + 1 :])


def _replace(notes: Path, text: str) -> None:
    """As an editor saves: a new file renamed over the old one."""
    tmp = notes.with_name("notes.md.edit")
    tmp.write_text(text)
    os.replace(tmp, notes)


def _in_place(notes: Path, text: str) -> None:
    """As an editor that writes over the same file does."""
    with open(notes, "r+") as f:
        f.truncate(0)
        f.write(text)


def _search(running, query: str) -> str:
    return running.admin("search", json.dumps({"query": query, "k": 10}))


def _recall(running, query: str) -> str:
    return running.call("recall", {"query": query}).output


@pytest.mark.parametrize("save", [_replace, _in_place])
@pytest.mark.parametrize("answer", [_recall, _search])
def test_a_note_removed_or_added_by_hand_is_recalled_as_notes_md_holds_it(memoryd, save, answer):  # noqa: F811
    notes = _write_notes(memoryd, QUOKKA, WOMBAT, ALPACA)
    assert QUOKKA in answer(memoryd, "quokka")
    save(notes, _without(notes, "quokka") + ADDED)
    assert QUOKKA not in answer(memoryd, "quokka")
    assert "capybara spa is open late" in answer(memoryd, "capybara")
    assert WOMBAT in answer(memoryd, "wombat")


def test_an_unchanged_notes_md_costs_a_recall_no_writer_job(memoryd):  # noqa: F811
    notes = _write_notes(memoryd, QUOKKA, WOMBAT)
    index = memoryd.service.index
    caught_up = index.catch_up_notes
    threads: list[str] = []

    def counted() -> int:
        threads.append(threading.current_thread().name)
        return caught_up()

    index.catch_up_notes = counted
    try:
        for _ in range(5):
            assert WOMBAT in _recall(memoryd, "wombat")
        assert threads == []
        _replace(notes, _without(notes, "quokka"))
        for _ in range(3):
            assert QUOKKA not in _recall(memoryd, "quokka")
        assert threads == ["memoryd-writer"]  # once, and on the writer, never on a reader
    finally:
        del index.catch_up_notes


def _forget(running, ref: str) -> str:
    return running.admin("forget", json.dumps({"id": ref}))


@pytest.mark.parametrize("recalled_between", [False, True])
def test_forget_refuses_a_note_number_search_printed_before_a_hand_edit(memoryd, recalled_between):  # noqa: F811
    notes = _write_notes(memoryd, QUOKKA, WOMBAT, ALPACA)
    assert "note:1" in _search(memoryd, "wombat")
    _replace(notes, _without(notes, "quokka"))  # the wombat note is note:0 now
    if recalled_between:  # the agent's recall catches the index up: note:1 is the alpaca's there
        assert ALPACA in _recall(memoryd, "alpaca")
    before = notes.read_bytes()
    with pytest.raises(RemoteError, match="changed since the last bxctl memory search") as refused:
        _forget(memoryd, "note:1")
    assert "\n" not in str(refused.value)
    assert notes.read_bytes() == before  # nothing was forgotten

    assert "note:0" in _search(memoryd, "wombat")  # the search caught the index up
    assert "forgot note:0" in _forget(memoryd, "note:0")
    left = notes.read_text()
    assert WOMBAT not in left and ALPACA in left
    assert ALPACA in _recall(memoryd, "alpaca")


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    for text in (QUOKKA, WOMBAT, ALPACA):
        m.call({"action": "note", "text": text})
    yield m
    m.close()


def test_forget_refuses_a_note_the_index_holds_another_text_for(md):
    """An edit notes.md's stat did not show: the index's text under the number still differs."""
    notes = md.home.memory / "notes.md"
    _replace(notes, _without(notes, "quokka"))
    md.index.notes_seen.done(md.index.notes_seen.look())  # as if the stat had not changed
    before = notes.read_bytes()
    with pytest.raises(AdminRefused, match="holds another note as note:1 than the index does"):
        md.admin("forget", {"id": "note:1"})
    assert notes.read_bytes() == before


def test_forget_by_a_current_note_number_still_forgets_it(md):
    md.admin("forget", {"id": "note:1"})
    left = (md.home.memory / "notes.md").read_text()
    assert WOMBAT not in left and QUOKKA in left and ALPACA in left
