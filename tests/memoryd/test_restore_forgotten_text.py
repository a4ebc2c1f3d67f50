"""restore --replace of a backup made before a forget brings none of what was forgotten back: the
entries and notes the home forgot after the archive was made are left out of the files laid (found
by the digests forgotten.jsonl lists), their older copies in the restored journal, recall log and
pending writes are scrubbed as a forget scrubs them, the answer says how many were left out, and
the restored journal holds a forget line for them (so `memory log` shows it and no hand edit is
seen). What the archive's own forgets took, or what it holds that the home never forgot, is laid
as it is."""

import json
import shutil

import pytest

from memoryd.data import layout, leftout
from memoryd.errors import AdminRefused
from memoryd.journal import forgotten
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.restore_lines import without_restore_lines

SECRET = "Bank card PIN is 4321."
KEPT = "Project Falcon ships in May."
NOTE = "The spare key is under the blue pot."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _backup(m: Memoryd, tmp_path, name: str = "before.tar.gz") -> str:
    saved = tmp_path / name
    shutil.copy(m.data("backup")["path"], saved)
    shutil.copy(saved, m.home.root / "backups" / name)
    return name


def _held(m: Memoryd) -> bytes:
    """Every byte of every file memoryd keeps (a restore's own copy in backups/ aside)."""
    return b"".join(p.read_bytes() for _, p in layout.memory_files(m.home))


def _fill(m: Memoryd, where: str) -> str:
    m.call({"action": "note", "text": NOTE})
    if where == "note":
        m.call({"action": "note", "text": SECRET})
        m.call({"action": "add", "file": "memory", "text": KEPT})
        return "note:1"
    file = "user" if where == "user.md" else "memory"
    m.call({"action": "add", "file": file, "text": KEPT})
    m.call({"action": "add", "file": file, "text": SECRET})
    return f"{where}:2"


@pytest.mark.parametrize("where", ["memory.md", "user.md", "note"])
def test_a_restore_of_an_older_backup_leaves_out_what_was_forgotten_since(md, tmp_path, where):
    ref = _fill(md, where)
    md.recall(SECRET)  # the recall log holds it as a query too
    archive = _backup(md, tmp_path)
    md.data("forget", id=ref)
    out = md.data("restore", name=archive, replace=True)
    one = "1 note" if where == "note" else "1 entry"
    assert (
        f"{one} the owner made memoryd forget after this backup was made was left out"
        in (out["message"])
    )
    assert SECRET.encode() not in _held(md)
    assert SECRET not in md.admin("block", {"json": True})
    assert md.recall("Bank card PIN").startswith("(no matches")
    assert KEPT in md.admin("block", {"json": True}) and NOTE in md.recall("spare key")
    if where == "note":  # the marker's key is on a line of the restored file itself
        assert forgotten.note_key(1) in forgotten.held(md.home)
    # The restored journal says so, and its last after is what the file holds: no hand edit.
    log = json.loads(md.admin("log", {"n": 50, "json": True}))["edits"]
    assert [e["action"] for e in log[-2:]] == ["forget", "restore"]  # the restore's own last
    before = len(md.store.journal.records())
    md.call({"action": "add", "file": "memory", "text": "Written after the restore."})
    actions = [r.action for r in md.store.journal.records()[before:]]
    assert "hand-edit" not in actions
    # The digest stays listed, with the forget's own time: a second restore leaves it out again.
    assert forgotten.digest(SECRET) in forgotten.path(md.home).read_text()
    again = md.data("restore", name=archive, replace=True)
    assert "left out" in again["message"] and SECRET.encode() not in _held(md)


def test_a_backup_made_after_the_forget_is_laid_as_it_is(md, tmp_path):
    """Its forgotten.jsonl lists the forget: nothing is left out, even a text added again."""
    _fill(md, "memory.md")
    md.data("forget", id="memory.md:2")
    md.call({"action": "add", "file": "memory", "text": SECRET})  # the owner wants it back
    archive = _backup(md, tmp_path)
    files = {name: p.read_bytes() for name, p in layout.memory_files(md.home)}
    out = md.data("restore", name=archive, replace=True)
    assert "left out" not in out["message"]
    laid = {name: p.read_bytes() for name, p in layout.memory_files(md.home)}
    assert without_restore_lines(laid) == files


def test_a_restore_into_another_home_lays_the_archive_whole(tmp_path):
    """A home that forgot nothing leaves nothing out."""
    a = Memoryd(tmp_path / "a")
    try:
        _fill(a, "memory.md")
        archive = tmp_path / "a.tar.gz"
        shutil.copy(a.data("backup")["path"], archive)
    finally:
        a.close()
    b = Memoryd(tmp_path / "b")
    try:
        shutil.copy(archive, b.home.root / "backups" / "a.tar.gz")
        out = b.data("restore", name="a.tar.gz")
        assert "left out" not in out["message"]
        assert SECRET in b.home.memory_file("memory.md").read_text()
    finally:
        b.close()


def test_a_full_disk_while_leaving_out_changes_nothing(md, tmp_path, monkeypatch):
    """The staged files are changed before the plan is written: a failure there leaves the home
    as it was, and no staging folder."""
    _fill(md, "memory.md")
    archive = _backup(md, tmp_path)
    md.data("forget", id="memory.md:2")
    held = {name: p.read_bytes() for name, p in layout.memory_files(md.home)}

    def full(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(leftout, "atomic_write", full)
    with pytest.raises(AdminRefused, match="No space left.*as it was"):
        md.admin("restore", {"name": archive, "replace": True})
    assert {name: p.read_bytes() for name, p in layout.memory_files(md.home)} == held
    assert not [p for p in md.home.memory.iterdir() if p.name.startswith(".restore")]


def test_a_text_removed_before_the_backup_is_left_out_of_its_notes_and_journal(md, tmp_path):
    """Removed from memory.md (so moved to notes.md, and held by the journal's lines) before the
    archive was made, forgotten by its words after: neither the note nor a journal line holds it
    once restored."""
    md.call({"action": "add", "file": "memory", "text": KEPT})
    md.call({"action": "add", "file": "memory", "text": SECRET})
    md.call({"action": "remove", "file": "memory", "old": SECRET})  # moved to notes.md
    md.data("forget", id=SECRET)  # then forgotten by its words, wherever memoryd holds it
    archive_home = Memoryd(tmp_path / "older")
    try:  # an older archive of the same memory, before the forget
        archive_home.call({"action": "add", "file": "memory", "text": KEPT})
        archive_home.call({"action": "add", "file": "memory", "text": SECRET})
        archive_home.call({"action": "remove", "file": "memory", "old": SECRET})
        shutil.copy(archive_home.data("backup")["path"], md.home.root / "backups" / "old.tar.gz")
    finally:
        archive_home.close()
    out = md.data("restore", name="old.tar.gz", replace=True)
    assert SECRET.encode() not in _held(md)
    assert "1 note the owner made memoryd forget after this backup was made" in out["message"]


def test_the_lines_a_restore_adds_take_ids_no_edit_of_this_home_had(md, tmp_path):
    """The forget lines a restore writes for what was forgotten since the archive go on after
    every id this home handed out, not after the archive's last: show of an id the owner was
    given never names another edit."""
    ref = _fill(md, "memory.md")
    archive = _backup(md, tmp_path)
    md.call({"action": "note", "text": "written after the backup"})
    md.data("forget", id=ref)
    given = {line.id for line in md.store.journal.records()}
    md.data("restore", name=archive, replace=True)
    added = [line for line in md.store.journal.records() if line.action == "forget"]
    assert added and all(line.id not in given for line in added), (given, added)
