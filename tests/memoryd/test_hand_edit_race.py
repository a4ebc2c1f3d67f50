"""A hand edit saved while memoryd writes memory.md or user.md is never lost and never folded into
memoryd's journal line: it lands in the file and is journalled as a hand-edit line of its own,
whichever window it is saved in (after the check for hand edits but before the file is read, after
the read but before the rename, between the last check and the rename itself), and the journal's
chain holds (each line's before is the previous line's after)."""

import os
import threading
import time

import pytest

from memoryd.errors import EditRefused
from memoryd.journal import rollback
from memoryd.memory import memfiles, writeintent
from memoryd.memory.handedit import ChangedByHand
from memoryd.memory.store import PLAN_TRIES
from tests.callargs import loose_call

from .store_helpers import CLEAN, args, fill, memory_path, new_store


def save_by_hand(path, text: str) -> None:
    """Save as an editor does: a file of its own renamed over the old one."""
    tmp = path.with_name(path.name + ".swp")
    tmp.write_text(text)
    os.chmod(tmp, 0o600)
    os.rename(tmp, path)


def add(store, file: str, text: str) -> str:
    return store.call(*loose_call(args(action="add", file=file, text=text), **CLEAN))


def chain_of(store, name: str) -> list:
    lines = [r for r in store.journal.records() if r.to == name]
    for prev, line in zip(lines, lines[1:], strict=False):
        assert line.before == prev.after, f"{line.id} does not start where {prev.id} ended"
    return lines


def once(action):
    """A wrapper running action once, the first time the wrapped function is called."""
    done = []

    def wrap(real):
        def run(*a, **k):
            if not done:
                done.append(True)
                action()
            return real(*a, **k)

        return run

    return wrap


@pytest.mark.parametrize("file", ["memory", "user"])
@pytest.mark.parametrize("window", ["before-read", "before-rename", "in-the-rename"])
@pytest.mark.parametrize("exchange", [True, False])
def test_a_hand_edit_saved_during_a_write_is_kept_and_journalled(
    tmp_path, monkeypatch, file, window, exchange
):
    store = new_store(tmp_path)
    fill(store, file, ["a"])
    path = memory_path(store, f"{file}.md")
    if not exchange:
        monkeypatch.setattr(memfiles, "_renameat2", None)  # a file system without exchange
    hand = once(lambda: save_by_hand(path, "a\n§\nby hand\n"))
    if window == "before-read":
        # Saved after the store looked for hand edits, before it reads the file to plan.
        monkeypatch.setattr(store, "entries_for_edit", hand(store.entries_for_edit))
    elif window == "before-rename":
        # Saved after the plan was read, before the file is checked and renamed.
        monkeypatch.setattr(writeintent, "intend", hand(writeintent.intend))
    elif exchange:
        # Saved after the last check, as the exchange renames memoryd's file into place.
        monkeypatch.setattr(memfiles, "exchange", hand(memfiles.exchange))
    else:
        # Without an exchange: saved after the check, as the old bytes are kept for the rename.
        monkeypatch.setattr(rollback, "keep_old", hand(rollback.keep_old))
    add(store, file, "b")
    assert path.read_text() == "a\n§\nby hand\n§\nb\n"
    lines = chain_of(store, f"{file}.md")
    assert [(r.action, r.after) for r in lines[-2:]] == [
        ("hand-edit", ["a", "by hand"]),
        ("add", ["a", "by hand", "b"]),
    ]
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_save_in_every_try_is_refused_with_every_hand_edit_journalled(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    path = memory_path(store, "memory.md")
    saves = []
    real = writeintent.intend

    def intend(*a, **k):
        saves.append(f"hand {len(saves)}")
        save_by_hand(path, "a\n§\n" + saves[-1] + "\n")
        return real(*a, **k)

    monkeypatch.setattr(writeintent, "intend", intend)
    with pytest.raises(ChangedByHand) as refused:
        add(store, "memory", "b")
    assert str(refused.value).startswith("refused: memory.md was edited by hand")
    assert len(saves) == PLAN_TRIES
    assert path.read_text() == f"a\n§\nhand {PLAN_TRIES - 1}\n"
    hand_edits = [r.after for r in chain_of(store, "memory.md") if r.action == "hand-edit"]
    assert hand_edits == [["a", s] for s in saves]


def test_an_undo_never_replaces_a_hand_edit_saved_under_it(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    fill(store, "memory", ["a", "b"])
    latest = store.journal.records()[-1].id
    path = memory_path(store, "memory.md")
    monkeypatch.setattr(
        writeintent,
        "intend",
        once(lambda: save_by_hand(path, "a\n§\nb\n§\nby hand\n"))(writeintent.intend),
    )
    with pytest.raises(ChangedByHand):
        store.undo(latest)
    assert path.read_text() == "a\n§\nb\n§\nby hand\n"
    assert chain_of(store, "memory.md")[-1].action == "hand-edit"


def test_many_saves_beside_many_writes_lose_none(tmp_path):
    """An editor saving in a loop beside agent writes: every save is in the file or journal."""
    store = new_store(tmp_path)
    path = memory_path(store, "memory.md")
    stop = threading.Event()
    saved: list[str] = []

    def editor():
        i = 0
        while not stop.is_set():
            text = path.read_text()
            save_by_hand(path, (text.rstrip("\n") + "\n§\n" if text.strip() else "") + f"h{i}\n")
            saved.append(f"h{i}")
            i += 1
            time.sleep(0.001)

    thread = threading.Thread(target=editor)
    thread.start()
    try:
        for i in range(40):
            try:
                add(store, "memory", f"agent {i}")
            except EditRefused:  # edited by hand on every try, or full: still nothing lost
                pass
    finally:
        stop.set()
        thread.join()
    store.detect_hand_edits()  # journals the last save
    kept = set(path.read_text().split("\n§\n")) | {
        e for r in chain_of(store, "memory.md") for e in (*r.before, *r.after)
    }
    assert saved and [s for s in saved if s not in {k.strip() for k in kept}] == []


def test_a_save_after_the_rename_stays_when_the_journal_fails(tmp_path, monkeypatch):
    """The journal line cannot be appended, so the write is taken back: a save that already
    replaced it is the owner's, and is not overwritten by the old bytes."""
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    path = memory_path(store, "memory.md")

    def append(*_a, **_k):
        save_by_hand(path, "a\n§\nby hand\n")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.journal, "append", append)
    with pytest.raises(EditRefused, match="not applied"):
        add(store, "memory", "b")
    monkeypatch.undo()
    assert path.read_text() == "a\n§\nby hand\n"
    store.detect_hand_edits()
    assert chain_of(store, "memory.md")[-1].after == ["a", "by hand"]
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]
