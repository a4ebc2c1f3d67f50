"""stats after the owner forgets a moved note: notes.md keeps only the forget's marker in its place,
which is no memory (export and promote leave it out), so stats neither counts nor lists it as a
moved note, nor as one never recalled."""

import json

import pytest

from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _move(md: Memoryd, *texts: str) -> None:
    for text in texts:
        md.call({"action": "add", "file": "memory", "text": text})
    entries = [{"old": text, "move": True} for text in texts]
    md.call({"action": "consolidate", "file": "memory", "entries": entries})


def test_a_forgotten_moved_note_is_neither_counted_nor_listed(md):
    _move(md, "Old router retired.", "Printer lives in the study.")
    before = json.loads(md.admin("stats", {"json": True}))
    assert before["moved_total"] == 2
    md.data("forget", id="note:0")
    found = json.loads(md.admin("stats", {"json": True}))
    assert found["moved_total"] == 1
    assert [m["entry"] for m in found["moved"]] == ["Printer lives in the study."]
    shown = md.admin("stats", {})
    assert "forgotten by the owner" not in shown
    assert "moved notes (1):" in shown
    assert "never recalled (1):\n  note:1: Printer lives in the study." in shown


def test_stats_of_only_forgotten_moved_notes_lists_none(md):
    _move(md, "Old router retired.")
    md.data("forget", id="note:0")
    found = json.loads(md.admin("stats", {"json": True}))
    assert found["moved_total"] == 0
    assert all("forgotten by the owner" not in m["entry"] for m in found.get("moved", []))
    assert "forgotten by the owner" not in md.admin("stats", {})
