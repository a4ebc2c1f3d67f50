"""A memory file far over anything memoryd writes (a wrong file saved over it, a runaway script)
is refused, named with its size, wherever it is read: never journalled as a hand edit, never
read whole; memoryd works again once the owner makes it small."""

import datetime as dt

import pytest

from memoryd.errors import BlockRefused, EditRefused
from memoryd.memory import block, memfiles
from memoryd.owner import stats
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, args, fill, memory_path, new_store

HUGE = 3 * 1_048_576  # far over anything memoryd writes


def _huge(path) -> None:
    line = b"entry abcdefghijklmnopqrstuvwxyz abcdefghijklmnopqrstuvwxyz\n"
    path.write_bytes(line * (HUGE // len(line) + 1))


@pytest.mark.parametrize("arg,name", [("memory", "memory.md"), ("user", "user.md")])
def test_a_huge_file_is_refused_by_size_and_never_journalled(tmp_path, arg, name):
    store = new_store(tmp_path)
    fill(store, arg, ["a"])
    lines = len(store.journal.records())
    _huge(memory_path(store, name))
    size = memory_path(store, name).stat().st_size
    said = f"{name} is {size:,} bytes"

    store.detect_hand_edits()
    with pytest.raises(EditRefused, match=said):
        store.call(*loose_call(args(action="add", file=arg, text="b"), **CLEAN))
    with pytest.raises(BlockRefused, match=said):
        block.build(store.home)
    shown = stats.collect(store.home, 30, dt.datetime(2026, 9, 25, tzinfo=dt.UTC))
    assert said in shown["files"][name]["problem"]
    assert len(store.journal.records()) == lines  # nothing of it journalled
    assert sum(p.stat().st_size for p in store.home.edits.iterdir()) < HUGE

    # The owner makes it small again: the hand edit is journalled and edits go in.
    memory_path(store, name).write_text("a\n§\nby hand\n")
    store.call(*loose_call(args(action="add", file=arg, text="b"), **CLEAN))
    assert memfiles.read_entries(store.home, name) == ["a", "by hand", "b"]
    assert [r.action for r in store.journal.records()][-2:] == ["hand-edit", "add"]


def test_a_huge_file_is_not_read_at_all(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    path = memory_path(store, "memory.md")
    _huge(path)

    def read(*_args):
        raise AssertionError("a huge memory file was read")

    monkeypatch.setattr(memfiles, "read_at_most", read)
    with pytest.raises(memfiles.TooLarge, match="memory.md is"):
        memfiles.read_text(path, "memory.md")
