"""An import gives a note of notes.md a stricter label by rewriting notes.md; the owner saves
notes.md (an editor's write and rename) just before that rewrite is swapped in, or after it, while
its journal line fails to be written. Either way the owner's save stays as they left it: the item
is not imported ("changed meanwhile") with no journal line, or the import stops on the journal's
error and the relabel is not put back over the save."""

import errno
import json
import os
import shutil
from pathlib import Path

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal.journal import Journal
from memoryd.memory import memfiles, notes
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import Clock

TEXT = "Office wifi is called Heron."
B_SESSION = "mm-homeb0001"
OWNER = "§ noted 2026-12-01T10:00Z in session s-old · private\nOwner's note: call the dentist.\n"


@pytest.fixture
def homes(tmp_path):
    a = Memoryd(tmp_path / "a", clock=Clock())
    b = Memoryd(tmp_path / "b", clock=Clock())
    yield a, b
    a.close()
    b.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _raised(a: Memoryd, b: Memoryd) -> str:
    """A holds B's note, trusted; the name of an export of it marked untrusted, in A's backups/
    (its import relabels A's note: test_import_same_note.py)."""
    b.call({"action": "note", "text": TEXT}, session=B_SESSION)
    path = b.data("export", format="jsonl")["path"]
    (a.home.root / "backups" / "b.jsonl").write_bytes(Path(path).read_bytes())
    a.data("import", name="b.jsonl")
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    item = json.loads(lines[-1])
    item["provenance"]["untrusted"] = True
    (a.home.root / "backups" / "raised.jsonl").write_text(f"{lines[0]}\n{json.dumps(item)}\n")
    return "raised.jsonl"


def _save(path: Path) -> bytes:
    data = path.read_bytes() + OWNER.encode()
    tmp = path.with_name("notes.md.owner-save")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return data


def _journal(m: Memoryd) -> bytes:
    return b"".join(p.read_bytes() for p in m.store.journal.month_files())


def _labels(path: Path) -> list[bool]:
    return [n.untrusted for n in notes.parse(path.read_bytes()) if n.text == TEXT]


def test_a_save_just_before_the_relabel_is_swapped_in_stays(homes, monkeypatch):
    a, b = homes
    name = _raised(a, b)
    path = a.home.memory_file("notes.md")
    journal = _journal(a)
    real, saved = memfiles.exchange, []

    def saved_then_exchanged(folder, x, y):
        if y == path.name and not saved:
            saved.append(_save(path))
        return real(folder, x, y)

    monkeypatch.setattr(memfiles, "exchange", saved_then_exchanged)
    said = a.data("import", name=name)
    assert saved and path.read_bytes() == saved[0]
    assert _labels(path) == [False]  # not relabelled over the owner's save
    (line,) = said["lines"]
    assert "changed meanwhile" in line and said["applied"] == 0, said
    assert _journal(a) == journal
    assert not [p for p in a.home.memory.iterdir() if p.name.startswith(".notes.md.")]
    monkeypatch.undo()
    assert a.data("import", name=name)["applied"] == 1  # run again, it relabels
    assert _labels(path) == [True] and OWNER in path.read_text()


def test_a_save_after_the_relabel_stays_when_its_journal_line_fails(homes, monkeypatch):
    a, b = homes
    name = _raised(a, b)
    path = a.home.memory_file("notes.md")
    journal = _journal(a)
    saved = []

    def saved_then_full(self, when, edit):
        saved.append(_save(path))  # over the relabelled notes.md
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Journal, "append", saved_then_full)
    with pytest.raises(AdminRefused, match="No space left on device"):
        a.data("import", name=name)
    assert saved and path.read_bytes() == saved[0]  # not put back over the owner's save
    assert _journal(a) == journal
