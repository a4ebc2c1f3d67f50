"""An import gives a note of notes.md a stricter label by rewriting notes.md, then journals it.
When the journal line fails, notes.md is put back as it was read; when that fails too (a disk
turned read-only refuses both), notes.md holds the stricter label with no journal line, and the
import's answer says so, never that notes.md is unchanged. What it says of later is what memoryd
does: the next start and write read the note with that label and journal no line of it."""

import errno
import json
import shutil
from pathlib import Path

import pytest

from memoryd.data import notesswap
from memoryd.errors import AdminRefused
from memoryd.journal.journal import Journal
from memoryd.memory import memfiles, notes
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock
from tests.memoryd.test_import_relabel_saved_meanwhile import B_SESSION, TEXT, _raised


@pytest.fixture
def homes(tmp_path):
    made = [Memoryd(tmp_path / "a", clock=Clock()), Memoryd(tmp_path / "b", clock=Clock())]
    yield made
    for m in made:
        m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _journal(m: Memoryd) -> list[dict]:
    return [
        json.loads(line)
        for p in m.store.journal.month_files()
        for line in p.read_text(encoding="utf-8").splitlines()
    ]


def _labels(path: Path) -> list[bool]:
    return [n.untrusted for n in notes.parse(path.read_bytes()) if n.text == TEXT]


def _failing(monkeypatch, put_back_fails: bool) -> None:
    """The journal's append fails; so does the rewrite that puts notes.md back, when asked."""
    real = notesswap.replace_read
    calls = []

    def append(self, when, edit):
        raise OSError(errno.EIO, "Input/output error")

    def replace_read(path, read, chunks):
        calls.append(path)
        if put_back_fails and len(calls) > 1:
            raise OSError(errno.EROFS, "Read-only file system")
        return real(path, read, chunks)

    monkeypatch.setattr(Journal, "append", append)
    monkeypatch.setattr(notesswap, "replace_read", replace_read)


def test_a_relabel_that_cannot_be_put_back_is_answered_as_held(homes, monkeypatch):
    a, b = homes
    name = _raised(a, b)
    path = a.home.memory_file("notes.md")
    journal = _journal(a)
    _failing(monkeypatch, put_back_fails=True)
    with pytest.raises(AdminRefused) as said:
        a.data("import", name=name)
    monkeypatch.undo()
    answer = str(said.value)
    assert "notes.md is unchanged" not in answer, answer
    assert (
        "(Input/output error), and could not take the change back: notes.md may hold it: note 0 "
        "made untrusted, private (it was trusted, private); memoryd follows the label notes.md "
        "gives, and journals no line of it, now or later" in answer
    ), answer
    # the import's own summary agrees: it does not say that nothing was imported
    assert "nothing was imported" not in answer, answer
    assert "that item may stand in its file without a journal line, as said; " in answer
    assert "nothing before it was imported; importing the file again brings the rest" in answer
    assert _labels(path) == [True]
    assert _journal(a) == journal
    assert not [p for p in a.home.memory.iterdir() if p.name.startswith(".notes.md.")]
    assert "memory-tainted" in a.recall("Heron")


def test_the_next_start_and_write_keep_the_label_and_journal_nothing_of_it(homes, monkeypatch):
    a, b = homes
    name = _raised(a, b)
    path = a.home.memory_file("notes.md")
    _failing(monkeypatch, put_back_fails=True)
    with pytest.raises(AdminRefused):
        a.data("import", name=name)
    monkeypatch.undo()
    journal = _journal(a)
    a.close()
    a = homes[0] = Memoryd(a.home.root, clock=Clock())
    a.call({"action": "note", "text": "The printer is on floor two."})
    (line,) = _journal(a)[len(journal) :]
    assert line["action"] == "note" and line["after"] == ["The printer is on floor two."]
    assert _labels(path) == [True]
    assert "memory-tainted" in a.recall("Heron")
    # Imported again, the item finds the stricter label there and adds nothing.
    said = a.data("import", name=name)
    assert said["applied"] == 0 and said["lines"][0].endswith("already in notes.md"), said
    assert len(_journal(a)) == len(journal) + 1


def test_a_relabel_put_back_is_answered_as_unchanged(homes, monkeypatch):
    a, b = homes
    name = _raised(a, b)
    path = a.home.memory_file("notes.md")
    before = path.read_bytes()
    _failing(monkeypatch, put_back_fails=False)
    with pytest.raises(AdminRefused, match=r"\(Input/output error\); notes.md is unchanged") as e:
        a.data("import", name=name)
    monkeypatch.undo()
    assert "; nothing was imported; importing the file again" in str(e.value)
    assert path.read_bytes() == before and _labels(path) == [False]


def test_a_swap_that_cannot_be_taken_back_is_answered_as_held(homes, monkeypatch):
    """notes.md exchanged for the rewrite, its folder's fsync failing, and the exchange back
    failing too: notesswap leaves the rewrite in place, and the answer says notes.md may hold
    it."""
    a, b = homes
    name = _raised(a, b)
    path = a.home.memory_file("notes.md")
    journal = _journal(a)
    real = memfiles.exchange
    calls = []

    def exchange(folder, x, y):
        calls.append(x)
        if len(calls) > 1:
            raise OSError(errno.EROFS, "Read-only file system")
        return real(folder, x, y)

    def fsync_dir(folder):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(memfiles, "exchange", exchange)
    monkeypatch.setattr(notesswap, "fsync_dir", fsync_dir)
    with pytest.raises(AdminRefused) as said:
        a.data("import", name=name)
    monkeypatch.undo()
    answer = str(said.value)
    assert "notes.md may hold it: note 0 made untrusted, private" in answer, answer
    assert len(calls) == 2 and _labels(path) == [True]
    assert _journal(a) == journal
    for left in a.home.memory.glob(".notes.md.*"):  # the file read, which the start removes
        left.unlink()


def test_a_swap_that_failed_before_it_stood_is_answered_as_unchanged(homes, monkeypatch):
    a, b = homes
    name = _raised(a, b)
    path = a.home.memory_file("notes.md")
    before = path.read_bytes()

    def exchange(folder, x, y):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(memfiles, "exchange", exchange)
    with pytest.raises(AdminRefused, match=r"\(Read-only file system\); notes.md is unchanged"):
        a.data("import", name=name)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert not [p for p in a.home.memory.iterdir() if p.name.startswith(".notes.md.")]


def test_a_new_note_that_cannot_be_taken_back_is_said_so_by_the_import(homes, monkeypatch):
    """The import of a note new to the home whose journal line fails, and whose cut-back of
    notes.md fails too: the import's answer says the note may stand in notes.md, not that
    nothing was imported; the next write journals it as not taken back."""
    from memoryd.journal import rollback

    a, b = homes
    b.call({"action": "note", "text": TEXT}, session=B_SESSION)
    path = b.data("export", format="jsonl")["path"]
    (a.home.root / "backups" / "b.jsonl").write_bytes(Path(path).read_bytes())
    journal = _journal(a)

    def append(self, when, edit):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(Journal, "append", append)
    monkeypatch.setattr(rollback, "take_back", lambda path, size: False)
    with pytest.raises(AdminRefused) as said:
        a.data("import", name="b.jsonl")
    monkeypatch.undo()
    answer = str(said.value)
    assert "could not take the change back: notes.md may hold it" in answer, answer
    assert "nothing was imported" not in answer, answer
    assert "that item may stand in its file without a journal line, as said; " in answer
    assert TEXT in a.home.memory_file("notes.md").read_text(encoding="utf-8")
    assert _journal(a) == journal
    a.call({"action": "note", "text": "The printer is on floor two."})
    actions = [line["action"] for line in _journal(a)[len(journal) :]]
    assert actions == ["not-taken-back", "note"], actions
