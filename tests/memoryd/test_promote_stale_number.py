"""promote note:N after notes.md was edited by hand: the number search printed may name another
note now, which promote would put into every prompt; it is refused as forget refuses it
(data/targets.py check_shown), and taken again once a search prints the note's number anew."""

import json

import pytest

from memoryd.errors import AdminRefused
from proto.client import RemoteError

from .owner_data_harness import Memoryd
from .test_notes_hand_edit import (
    ALPACA,
    QUOKKA,
    WOMBAT,
    _recall,
    _replace,
    _search,
    _without,
    _write_notes,
)
from .test_service import memoryd  # noqa: F401  (the fixture)


def _promote(running, ref: str) -> str:
    return running.admin("promote", json.dumps({"ref": ref, "file": "memory"}))


@pytest.mark.parametrize("recalled_between", [False, True])
def test_promote_refuses_a_note_number_search_printed_before_a_hand_edit(memoryd, recalled_between):  # noqa: F811
    notes = _write_notes(memoryd, QUOKKA, WOMBAT, ALPACA)
    identity = memoryd.home / "memory" / "memory.md"
    assert "note:1" in _search(memoryd, "wombat")
    _replace(notes, _without(notes, "quokka"))  # the wombat note is note:0 now
    if recalled_between:  # the agent's recall catches the index up: note:1 is the alpaca's there
        assert ALPACA in _recall(memoryd, "alpaca")
    before = identity.read_bytes()
    with pytest.raises(RemoteError, match="since (the last|a) bxctl memory search") as refused:
        _promote(memoryd, "note:1")
    assert "nothing was promoted" in str(refused.value) and "\n" not in str(refused.value)
    assert identity.read_bytes() == before

    assert "note:0" in _search(memoryd, "wombat")  # the search caught the index up
    assert _promote(memoryd, "note:0").startswith("promoted note:0 into memory.md")
    held = identity.read_text()
    assert WOMBAT in held and ALPACA not in held


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    for text in (QUOKKA, WOMBAT, ALPACA):
        m.call({"action": "note", "text": text})
    yield m
    m.close()


def test_promote_refuses_a_note_the_index_holds_another_text_for(md):
    """An edit notes.md's stat did not show: the index's text under the number still differs."""
    notes = md.home.memory / "notes.md"
    _replace(notes, _without(notes, "quokka"))
    md.index.notes_seen.done(md.index.notes_seen.look())  # as if the stat had not changed
    before = md.home.memory_file("memory.md").read_bytes()
    with pytest.raises(AdminRefused, match="holds another note as note:1 than the index does"):
        md.admin("promote", {"ref": "note:1", "file": "memory"})
    assert md.home.memory_file("memory.md").read_bytes() == before


@pytest.mark.parametrize("ref", ["note:1", WOMBAT])
def test_promote_by_a_current_number_or_by_its_text_still_promotes(md, ref):
    if ref == WOMBAT:  # a note named by its text is that text, wherever a hand edit moved it
        notes = md.home.memory / "notes.md"
        _replace(notes, _without(notes, "quokka"))
    out = md.admin("promote", {"ref": ref, "file": "memory"})
    assert out.startswith("promoted note:")
    held = md.home.memory_file("memory.md").read_text()
    assert WOMBAT in held and QUOKKA not in held and ALPACA not in held
