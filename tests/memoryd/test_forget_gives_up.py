"""A forget whose memory.md or user.md edit gives up (the file saved by hand again and again while
it is planned: an autosave, a sync tool) tells the truth: when nothing was written yet, notes.md
still holds the text, no unfinished record stands and the answer says nothing was forgotten; when
an edit of another file already went in, the answer is a forget stopped part way, and run again
it finishes."""

import pytest

from memoryd.data import unfinished
from memoryd.errors import AdminRefused
from memoryd.memory import store as store_module
from memoryd.memory.memfiles import read_entries
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The vault code is 4711."


def _saved_by_hand_each_time(monkeypatch, file: str) -> None:
    """Each write of file finds a hand save landed since it was planned (the text kept in it)."""
    real = store_module.replace_unchanged
    saves = []

    def saved_first(path, data, planned_from):
        if path.name == file:
            saves.append(1)
            path.write_text(f"{SECRET}\n§\nsaved by hand {len(saves)}\n")
        return real(path, data, planned_from)

    monkeypatch.setattr(store_module, "replace_unchanged", saved_first)


def test_a_forget_that_cannot_get_its_edit_in_changes_no_file(tmp_path, monkeypatch):
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "add", "file": "memory", "text": SECRET})
        m.call({"action": "note", "text": SECRET})
        notes = m.home.memory_file("notes.md")
        _saved_by_hand_each_time(monkeypatch, "memory.md")
        with pytest.raises(AdminRefused, match="nothing was forgotten") as refused:
            m.admin("forget", {"id": SECRET})
        assert "memory.md was saved by hand" in str(refused.value)
        assert "not applied" not in str(refused.value)
        assert SECRET in notes.read_text()
        assert unfinished.read(m.home) is None

        monkeypatch.undo()
        assert "forgot" in m.admin("forget", {"id": SECRET})
        assert SECRET not in notes.read_text()
        assert SECRET not in read_entries(m.home, "memory.md")
    finally:
        m.close()


def test_a_forget_that_gives_up_after_an_edit_went_in_says_it_stopped_part_way(
    tmp_path, monkeypatch
):
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "add", "file": "memory", "text": SECRET})
        m.call({"action": "add", "file": "user", "text": SECRET})
        _saved_by_hand_each_time(monkeypatch, "user.md")
        with pytest.raises(AdminRefused, match="stopped part way"):
            m.admin("forget", {"id": SECRET})
        assert SECRET not in read_entries(m.home, "memory.md")
        assert unfinished.read(m.home) is not None

        monkeypatch.undo()
        assert "forgot" in m.admin("forget", {"id": SECRET})
        assert SECRET not in read_entries(m.home, "user.md")
        assert unfinished.read(m.home) is None
    finally:
        m.close()
