"""The owner saves notes.md (a note above removed, as an editor saves: written anew and renamed)
while a forget runs, after it found the notes holding its text and before it rewrites notes.md:
the forget marks no note whose text is not the one it forgets. It is refused with nothing
forgotten, whether it named the note by number or by its exact text, and the note it named, the
others and the journal are as they were."""

import json
import os
from pathlib import Path

import pytest

from memoryd.data import taken
from memoryd.errors import AdminRefused
from memoryd.journal import forgottenmarker
from memoryd.writer import WRITE
from tests.memoryd.owner_data_harness import Memoryd

TEXTS = [
    "Alpha note about apricots.",
    "Beta note about bananas.",
    "Gamma note about guavas.",
    "Delta note about dates.",
]


def _save_without_first_note(path: Path) -> None:
    data = path.read_text()
    parts = data.split("§ noted ")
    tmp = path.with_name("notes.md.swp")
    tmp.write_text(parts[0] + "".join("§ noted " + p for p in parts[2:]))
    os.replace(tmp, path)


@pytest.mark.parametrize("ref", ["note:2", TEXTS[2]])
def test_a_note_moved_by_a_save_during_forget_is_not_marked(tmp_path, monkeypatch, ref):
    m = Memoryd(tmp_path / "home")
    try:
        for text in TEXTS:
            m.call({"action": "note", "text": text})
        m.service._writer.submit(WRITE, m.service.index.catch_up_notes).result()
        shown = json.loads(m.admin("search", {"query": "guavas", "json": True}))
        assert [h["ref"] for h in shown["hits"] if "Gamma" in h["snippet"]] == ["note:2"]
        notes = m.home.memory_file("notes.md")
        real, calls = taken.where_held, []

        def where_held_then_owner_saves(service, target, find=None):
            found = real(service, target, find)
            calls.append(target)
            if len(calls) == 2:  # in run, after its checks, before notes.md is rewritten
                _save_without_first_note(notes)
            return found

        monkeypatch.setattr(taken, "where_held", where_held_then_owner_saves)
        journal = b"".join(p.read_bytes() for p in m.store.journal.month_files())
        with pytest.raises(AdminRefused, match="nothing was forgotten"):
            m.admin("forget", {"id": ref})
        text = notes.read_text()
        assert all(t in text for t in TEXTS[1:])  # the named note and the one moved into its place
        assert forgottenmarker.MARKER_PREFIX not in text
        assert b"".join(p.read_bytes() for p in m.store.journal.month_files()) == journal
    finally:
        m.close()
