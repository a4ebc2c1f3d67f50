"""The owner saves notes.md (an editor's write and rename) or appends to it while forget rewrites
it: after forget read it and before its rewrite is in place, or in the instant between forget's
last check and its swap. The owner's notes.md stays as they left it, the forget is refused as
one whose notes.md changed while it ran, and the journal and forgotten.jsonl say only what was
done: nothing, or (when an entry of memory.md went first) a forget stopped part way, which a
second run finishes, keeping the owner's save. Without an exchange (a file system that cannot),
a save made before the rename is kept the same way."""

import json
import os
import shutil
from pathlib import Path

import pytest

from memoryd.data import erasing, notesswap, unfinished
from memoryd.errors import AdminRefused
from memoryd.journal import forgotten
from memoryd.memory import memfiles
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The safe code is 4471 zanzibar."
NOTES = ["The plumber comes on Tuesday.", SECRET, "The bins go out Monday."]
OWNER = "§ noted 2026-12-01T10:00Z in session s-old · private\nOwner's note: call the dentist.\n"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path / "home", ignore_errors=True)


def _saved(path: Path) -> bytes:
    """The owner's editor saves path with one more note: a new file renamed over it."""
    data = path.read_bytes() + OWNER.encode()
    tmp = path.with_name("notes.md.owner-save")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return data


def _appended(path: Path) -> bytes:
    """The owner appends a note to path in place (cat >> notes.md)."""
    with open(path, "ab") as f:
        f.write(OWNER.encode())
    return path.read_bytes()


def _state(m: Memoryd) -> dict[str, bytes | None]:
    """The journal, memory.md and forgotten.jsonl as they are."""
    listed = forgotten.path(m.home)
    return {
        "journal": b"".join(p.read_bytes() for p in m.store.journal.month_files()),
        "memory.md": m.home.memory_file("memory.md").read_bytes(),
        "forgotten": listed.read_bytes() if listed.exists() else None,
    }


def _leftovers(m: Memoryd) -> list[str]:
    return sorted(p.name for p in m.home.memory.iterdir() if p.name.startswith(".notes.md."))


def _after_the_read(monkeypatch, save, path: Path) -> list[bytes]:
    """save lands once forget has read notes.md to its end, before its rewrite is in place."""
    real, saved = erasing._marked, []

    def marked_then_saved(f, numbers, texts, marker, shifts):
        yield from real(f, numbers, texts, marker, shifts)
        if marker:  # the rewrite, not the check made before any write (check_notes)
            saved.append(save(path))

    monkeypatch.setattr(erasing, "_marked", marked_then_saved)
    return saved


def _before_the_swap(monkeypatch, save, path: Path) -> list[bytes]:
    """save lands after forget's last check of notes.md, just before its exchange."""
    real, saved = memfiles.exchange, []

    def saved_then_exchanged(folder, a, b):
        if b == path.name and not saved:
            saved.append(save(path))
        return real(folder, a, b)

    monkeypatch.setattr(memfiles, "exchange", saved_then_exchanged)
    return saved


def _noted(m: Memoryd) -> Path:
    for text in NOTES:
        m.call({"action": "note", "text": text})
    return m.home.memory_file("notes.md")


@pytest.mark.parametrize(
    "when, save",
    [
        (_after_the_read, _saved),
        (_after_the_read, _appended),
        (_before_the_swap, _saved),
    ],
    ids=["saved after the read", "appended after the read", "saved just before the swap"],
)
def test_a_save_during_the_rewrite_stays_and_the_forget_is_refused(md, monkeypatch, when, save):
    path = _noted(md)
    before = _state(md)
    saved = when(monkeypatch, save, path)
    with pytest.raises(AdminRefused, match="notes.md changed while forget ran"):
        md.admin("forget", {"id": SECRET})
    assert saved and path.read_bytes() == saved[0]  # the owner's notes.md, as they left it
    assert _state(md) == before  # no journal line, nothing listed as forgotten
    assert not unfinished.path_of(md.home).exists()
    assert _leftovers(md) == []
    monkeypatch.undo()
    said = json.loads(md.admin("forget", {"id": SECRET}))  # run again: it forgets
    assert "forgot" in said["message"]
    text = path.read_text()
    assert SECRET not in text and OWNER in text
    assert all(n in text for n in NOTES if n != SECRET)


def test_a_forget_stopped_by_a_save_after_its_first_write_is_finished_by_a_second_run(
    md, monkeypatch
):
    md.call({"action": "add", "file": "memory", "text": SECRET})
    path = _noted(md)
    before = _state(md)
    saved = _before_the_swap(monkeypatch, _saved, path)
    with pytest.raises(
        AdminRefused, match=r"stopped part way \(notes.md changed while forget ran\); run it again"
    ):
        md.admin("forget", {"id": SECRET})
    assert path.read_bytes() == saved[0]
    assert SECRET not in md.home.memory_file("memory.md").read_text()
    lines = [
        json.loads(x) for p in md.store.journal.month_files() for x in p.read_text().splitlines()
    ]
    assert [x["action"] for x in lines if x.get("forgot")] == ["forget"]  # memory.md's edit
    assert _state(md)["forgotten"] == before["forgotten"]  # listed once the forget finishes
    assert unfinished.path_of(md.home).exists()  # a second run takes what this one took
    monkeypatch.undo()
    said = json.loads(md.admin("forget", {"id": SECRET}))
    assert "forgot" in said["message"]
    text = path.read_text()
    assert SECRET not in text and OWNER in text
    assert not unfinished.path_of(md.home).exists()


def test_without_an_exchange_a_save_before_the_rename_stays(md, monkeypatch):
    path = _noted(md)
    before = _state(md)
    monkeypatch.setattr(memfiles, "exchange", lambda *_: False)
    real, saved = notesswap.open_file, []

    def saved_then_opened(p, flags):  # after the check, just before the rename
        saved.append(_saved(Path(p)))
        return real(p, flags)

    monkeypatch.setattr(notesswap, "open_file", saved_then_opened)
    with pytest.raises(AdminRefused, match="notes.md changed while forget ran"):
        md.admin("forget", {"id": SECRET})
    assert saved and path.read_bytes() == saved[0]
    assert _state(md) == before
    assert _leftovers(md) == []
    monkeypatch.setattr(notesswap, "open_file", real)
    said = json.loads(md.admin("forget", {"id": SECRET}))
    assert "forgot" in said["message"] and SECRET not in path.read_text()
    assert OWNER in path.read_text()
