"""memoryd killed in a forget after it recorded what it takes and before it rewrote the memory
files: recall already hides the text, so the next start's line is all that tells the owner where it
still is. It names the file the forget's target is in (notes.md for a note, memory.md or user.md for
an entry, a memory file that holds a session record's text), with the journal, the recall log,
pending writes and the exports, and still says to run the forget again."""

import json
import logging

import pytest

from memoryd.data import forget, unfinished
from memoryd.journal import forgottenwrite
from tests.memoryd.owner_data_harness import Memoryd

ENTRY = "Backups run nightly at 02:30 to the NAS."
OWNER = "Call me Sam in answers."
NOTE = "The gate code is heronforget 99."


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


def _killed(*_args, **_kwargs):
    raise Killed


def _home(tmp_path) -> Memoryd:
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": ENTRY})
    m.call({"action": "add", "file": "user", "text": OWNER})
    m.call({"action": "note", "text": "The plumber comes on Tuesday."})
    m.call({"action": "note", "text": NOTE})
    m.say("one", ENTRY, "Noted.")
    json.loads(m.admin("search", {"query": "heronforget", "json": True}))
    return m


def _stopped(m: Memoryd, monkeypatch, ref: str) -> None:
    """The forget of ref killed once its record is written, before its first change."""
    try:
        with monkeypatch.context() as patch:
            patch.setattr(forget, "_first_changes", _killed)
            with pytest.raises(Killed):
                m.admin("forget", {"id": ref})
    finally:
        m.close()
    assert unfinished.path_of(m.home).exists()


def _start_line(m: Memoryd, caplog) -> str:
    caplog.clear()
    with caplog.at_level(logging.INFO):
        forgottenwrite.mend(m.home)  # as the start does, before the writer runs
    [line] = [r.getMessage() for r in caplog.records if "stopped part way" in r.getMessage()]
    return line


# (the id forgotten, its text, the memory file that still holds it, those that do not)
CASES = {
    "note": ("note:1", NOTE, "notes.md", ("memory.md", "user.md")),
    "memory.md entry": ("memory.md:1", ENTRY, "memory.md", ("notes.md", "user.md")),
    "user.md entry by its words": (OWNER, OWNER, "user.md", ("notes.md", "memory.md")),
    "session record": ("session:one:0", ENTRY, "memory.md", ("notes.md", "user.md")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_start_names_the_memory_file_that_still_holds_the_text(
    tmp_path, monkeypatch, caplog, case
):
    ref, text, held, not_held = CASES[case]
    m = _home(tmp_path)
    _stopped(m, monkeypatch, ref)
    assert text in m.home.memory_file(held).read_text()
    line = _start_line(m, caplog)
    places = line.split("its text may still be in ")[1].split(": run ")[0]
    assert held in places
    assert not any(name in places for name in not_held)
    assert "the journal" in places and "the recall log" in places and "an export" in places
    assert "pending write" in places
    assert text not in line and "\n" not in line
    again = ref if ref.startswith(("note:", "memory.md:", "session:")) else None
    if again is not None:
        assert line.endswith(f"run bxctl memory forget {again} again to finish it")
    else:
        assert line.endswith(
            "run the same bxctl memory forget (bxctl memory stats names it) again to finish it"
        )


def test_a_kept_hand_edit_is_named_while_one_is_beside_the_files(tmp_path, monkeypatch, caplog):
    m = _home(tmp_path)
    _stopped(m, monkeypatch, "memory.md:1")
    assert "kept hand edit" not in _start_line(m, caplog)
    kept = m.home.memory / "memory.md.hand-edit-2026-12-05T1000Z"
    kept.write_text(f"{ENTRY}\n")
    try:
        assert (
            "memory.md, the journal, the recall log, a pending write, a kept hand edit or an"
            " export" in _start_line(m, caplog)
        )
    finally:
        kept.unlink()
