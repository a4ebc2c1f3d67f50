"""A save of notes.md that memoryd kept beside it (notes.md.hand-edit-<time>-<hex>: one that landed
while memoryd swapped a rewrite in, or one a kill left under its temporary name) is in forget's
reach as the kept saves of memory.md and user.md are: a note that is the text forgotten keeps its
header and gets forget's marker, as in notes.md, the other notes stay, and the preview, the answer,
a stopped forget's start line and stats count or name it."""

import logging

import pytest

from memoryd.data import forget
from memoryd.journal import forgottenmarker, forgottenwrite
from memoryd.memory import notes
from tests.memoryd.owner_data_harness import Memoryd

NOTE = "The gate code is heronforget 99."
OTHER = "The plumber comes on Tuesday."
OWN_HEADER = "\u00a7 noted 2026-12-05T10:00Z in session owner \u00b7 private"
OWN = "The owner's own note."
KEPT = "notes.md.hand-edit-20261205T100000Z-ab12"


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


def _killed(*_args, **_kwargs):
    raise Killed


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "note", "text": OTHER})
    m.call({"action": "note", "text": NOTE})
    yield m
    m.close()


def _kept_save(md: Memoryd):
    """A save of notes.md kept beside it: notes.md's notes and one the owner added."""
    path = md.home.memory_file(KEPT)
    path.write_text(md.home.memory_file("notes.md").read_text() + f"{OWN_HEADER}\n{OWN}\n")
    return path


def _headers(data: bytes) -> list[str]:
    return [line for line in data.decode().splitlines() if line.startswith("\u00a7")]


def _memory_files(md: Memoryd) -> bytes:
    return b"".join(p.read_bytes() for p in md.home.memory.iterdir() if p.is_file())


def test_forget_marks_the_note_in_a_kept_save_of_notes_md(md):
    kept = _kept_save(md)
    before = kept.read_bytes()
    preview = md.data("forget", id=NOTE, dry_run=True)
    assert "1 kept hand edit" in preview["places"], preview["places"]
    out = md.data("forget", id=NOTE)
    assert "1 kept hand edit" in out["message"], out["message"]
    after = kept.read_bytes()
    assert _headers(after) == _headers(before)
    texts = [n.text for n in notes.parse(after)]
    assert texts[0] == OTHER and texts[2] == OWN, texts
    assert forgottenmarker.is_marker(texts[1]), texts
    assert NOTE.encode() not in _memory_files(md)
    assert NOTE not in md.recall("gate code heronforget")


def test_a_kept_save_without_the_text_is_left_as_it_was(md):
    kept = md.home.memory_file(KEPT)
    kept.write_text(f"{OWN_HEADER}\n{OWN}\n")
    before = kept.stat()
    out = md.data("forget", id=NOTE)
    assert "kept hand edit" not in out["message"], out["message"]
    assert kept.read_text() == f"{OWN_HEADER}\n{OWN}\n"
    assert kept.stat().st_ino == before.st_ino


def test_a_kept_name_that_is_a_link_is_left_and_logged(md, tmp_path, caplog):
    outside = tmp_path / "elsewhere.md"
    outside.write_bytes(md.home.memory_file("notes.md").read_bytes())
    md.home.memory_file(KEPT).symlink_to(outside)
    with caplog.at_level(logging.WARNING):
        md.data("forget", id=NOTE)
    assert NOTE in outside.read_text()
    said = [r.getMessage() for r in caplog.records if KEPT in r.getMessage()]
    assert said and "not searched for the text forgotten" in said[0], said


def test_a_stopped_forget_names_a_kept_save_of_notes_md(md, monkeypatch, caplog):
    md.admin("search", {"query": "heronforget", "json": True})
    kept = _kept_save(md)
    with monkeypatch.context() as patch:
        patch.setattr(forget, "_first_changes", _killed)
        with pytest.raises(Killed):
            md.admin("forget", {"id": "note:1"})
    md.close()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        forgottenwrite.mend(md.home)  # as the start does
    [line] = [r.getMessage() for r in caplog.records if "stopped part way" in r.getMessage()]
    assert "a kept hand edit" in line, line
    again = Memoryd(md.home.root, clock=md.clock)
    try:
        assert "a kept hand edit" in again.admin("stats", "{}")
        again.admin("search", {"query": "heronforget", "json": True})
        again.data("forget", id="note:1")
        assert NOTE not in kept.read_text() and OWN in kept.read_text()
        assert "stopped part way" not in again.admin("stats", "{}")
    finally:
        again.close()
