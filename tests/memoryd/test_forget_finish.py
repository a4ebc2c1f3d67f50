"""A forget whose index step fails (the index's disk full) after it listed its keys: recall and
search never return the rows it could not yet delete, and the same forget, run again as its
refusal says, deletes them rather than answering that the note is already forgotten. A forgotten
note cannot be promoted: its marker would become an entry every prompt holds."""

import sqlite3

import pytest

from memoryd.data import forget, places, purge
from memoryd.errors import AdminRefused
from memoryd.journal import forgotten, forgottenmarker
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The locker code is qz4711."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "note", "text": SECRET})
    m.say("s-one", SECRET, "Noted.")
    yield m
    m.close()


def _full(*_args, **_kwargs):
    raise sqlite3.OperationalError("database or disk is full")


def _rows(m: Memoryd, key: str) -> list[int]:
    with m.index.reader() as conn:
        return purge.rows_of(conn, key)


def test_rows_a_forget_could_not_delete_are_never_recalled_and_a_rerun_deletes_them(
    md, monkeypatch
):
    with monkeypatch.context() as patched:
        patched.setattr(forget, "purge", _full)
        with pytest.raises(AdminRefused, match="forget stopped part way"):
            md.admin("forget", {"id": "note:0"})
    gone = forgotten.keys(md.home)
    assert {"note:0", "session:s-one:0"} <= gone
    assert _rows(md, "note:0") and _rows(md, "session:s-one:0")  # still in the index
    for answer in (md.recall("locker code"), md.admin("search", {"query": "locker code"})):
        assert "qz4711" not in answer
    assert "Noted." in md.recall("noted")  # what was not forgotten is still found

    md.admin("forget", {"id": "note:0"})  # as the refusal says: the same id again
    assert _rows(md, "note:0") == []
    with pytest.raises(AdminRefused, match="already forgotten"):
        md.admin("forget", {"id": "note:0"})


@pytest.mark.parametrize("ref", ["note:0", "by its marker"])
def test_a_forgotten_note_cannot_be_promoted_into_identity(md, ref):
    md.admin("forget", {"id": "note:0"})
    memory_before = (md.home.memory / "memory.md").read_bytes()
    if ref == "by its marker":
        [marker] = [n.text for n in places.notes_of(md.home) if forgottenmarker.is_marker(n.text)]
        ref = marker
    with pytest.raises(
        AdminRefused, match="was forgotten by the owner; there is nothing to promote"
    ):
        md.admin("promote", {"ref": ref, "file": "memory"})
    assert (md.home.memory / "memory.md").read_bytes() == memory_before
