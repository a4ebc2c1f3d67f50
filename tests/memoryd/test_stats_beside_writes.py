"""bxctl memory stats runs as a read beside memoryd's own writes. What it saves (index/shown.json,
the entries it printed) never brings back a text a forget erased between stats' read of the files
and that save; and what it says of the index file never takes a reindex's own swap for the file
"replaced while memoryd ran". Each interleaving is forced at a hook, not found by timing."""

import json
import threading

import pytest

from memoryd.errors import AdminRefused
from memoryd.index import swap
from memoryd.memory import shown
from memoryd.owner import indexstate
from memoryd.writer import WRITE
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The locker code is plover xanthic."
KEEP = "Prefer metric units in answers."


def _saved(m: Memoryd) -> str:
    path = m.home.index_dir / shown.NAME
    return path.read_text() if path.exists() else ""


def test_a_forget_between_stats_read_and_its_save_is_not_undone(tmp_path, monkeypatch):
    m = Memoryd(tmp_path / "home")
    try:
        for entry in (SECRET, KEEP):
            m.call({"action": "add", "file": "memory", "text": entry})
        m.admin("stats", {"days": 30})
        assert SECRET in _saved(m)
        real = shown.print_entries
        forgot: list[str] = []

        def print_entries(index, file, entries):
            if not forgot:  # stats read the files; the forget lands before its save
                forgot.append(m.data("forget", id=SECRET)["message"])
                assert SECRET not in _saved(m)
            real(index, file, entries)

        monkeypatch.setattr(shown, "print_entries", print_entries)
        printed = m.admin("stats", {"days": 30})
        assert f"memory.md:1: {SECRET}" in printed  # what stats read, before the forget
        assert forgot and forgot[0].startswith("forgot ")
        monkeypatch.setattr(shown, "print_entries", real)
        assert SECRET not in _saved(m)
        assert SECRET not in json.dumps(shown.printed(m.index, "memory.md"))
        # The number still names nothing the file holds: refused, nothing else taken.
        with pytest.raises(AdminRefused) as refused:
            m.admin("forget", {"id": "memory.md:1", "dry_run": True})
        assert "no longer holds the entry bxctl memory stats printed as memory.md:1" in str(
            refused.value
        )
        # An entry the files still hold is kept in the print, under its number.
        assert shown.printed(m.index, "memory.md")[1] == KEEP
    finally:
        m.close()


def test_stats_during_a_reindexs_swap_does_not_call_the_index_replaced(tmp_path, monkeypatch):
    m = Memoryd(tmp_path / "home")
    try:
        m.say("s-one", "alpha words said", "alpha reply")
        built = m.index.build_new()
        real = swap.reopen
        said: list[dict] = []
        lookers: list[threading.Thread] = []

        def reopen(index, replaced):
            # The new file stands at the path; the connections are not opened to it yet.
            looker = threading.Thread(target=lambda: said.append(indexstate.state(index, [])))
            looker.start()
            lookers.append(looker)
            looker.join(timeout=1.0)  # held by the swap, it cannot answer before the reopen
            real(index, replaced)

        monkeypatch.setattr(swap, "reopen", reopen)
        m.service._writer.submit(WRITE, m.index.finish_new, built).result()
        for looker in lookers:
            looker.join(timeout=30)
        assert len(said) == 1
        assert "gone" not in said[0], said[0]
        assert indexstate.lines(said[0]) == ["index: every session log indexed"]
        assert "alpha words said" in m.recall("alpha")
    finally:
        m.close()
