"""A file memoryd writes in place that is hard-linked to a file outside the home (a home copied
with cp -al, a link made by hand): the start gives it a copy of its own, in one line naming it
(refusing the start in one line only when it cannot), and a link made while memoryd runs is
refused at each write; no byte reaches the file at the other name. memoryd's own second links (a
crash's leftover temporary file, the old bytes an edit of memory.md keeps) do not trip it."""

import datetime as dt
import errno
import os
import subprocess

import pytest

from memoryd import owncopy
from memoryd.errors import WriteFailed
from memoryd.home import Home, unsafe_entry
from memoryd.memory.store import MemoryStore
from proto.files import NotRegular, append_bytes
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, SOUL_STARTER, args, journal_lines, new_store
from tests.memoryd.test_hostile_home import start_fails
from tests.memoryd_process import MemorydProcess


@pytest.fixture
def outside(tmp_path):
    return tmp_path / "outside.txt"  # beside the home, not under it


def link_out(path, outside) -> bytes:
    """path made a second name of outside (as cp -al leaves a home's copy): the bytes both hold."""
    if not path.exists():
        path.write_bytes(b"")
    os.link(path, outside)
    return outside.read_bytes()


def month(store: MemoryStore):
    return store.home.edits_month(store.now())


def linked_path(home: Home, name: str):
    now = dt.datetime.now(dt.UTC)
    return {"edits": home.edits_month(now), "recalls": home.recalls_month(now)}.get(
        name, home.memory / name
    )


@pytest.mark.parametrize("name", ["notes.md", "edits", "recalls", "labels.jsonl"])
def test_a_hard_linked_file_memoryd_appends_to_gets_a_copy_of_its_own_at_start(
    tmp_path, outside, name
):
    home = new_store(tmp_path).home
    path = linked_path(home, name)
    path.write_bytes(b"held\n" if path.name != "notes.md" else path.read_bytes())
    held = link_out(path, outside)
    memoryd = MemorydProcess(tmp_path).start()
    try:
        assert os.stat(path).st_nlink == 1
        assert path.read_bytes() == held
        said = [ln for ln in memoryd.log.read_text().splitlines() if "hard links" in ln]
        assert len(said) == 1
        assert f"{path}: had 2 hard links" in said[0]
        assert "it now has a copy of its own, and the other name keeps the bytes it had" in said[0]
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    finally:
        memoryd.stop()
    assert outside.read_bytes() == held
    assert os.stat(outside).st_nlink == 1


def test_a_hard_linked_file_that_cannot_be_copied_refuses_the_start(tmp_path, outside, monkeypatch):
    home = new_store(tmp_path).home
    path = home.memory_file("notes.md")
    held = link_out(path, outside)

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(owncopy, "atomic_write", full)
    owncopy.give_own_copies(home)
    refused = unsafe_entry(home)
    assert isinstance(refused, NotRegular)
    assert "is a file with 2 hard links" in str(refused)
    assert "cp it to a new name, then mv that over it" in str(refused)
    assert outside.read_bytes() == held
    assert os.stat(path).st_nlink == 2


def test_a_hard_link_through_a_linked_folder_is_not_copied_outside(tmp_path, outside):
    """The copy is made only once every folder is what it should be: memory/ a link elsewhere
    refuses the start, and nothing is written in the folder it points to."""
    home = new_store(tmp_path).home
    elsewhere = tmp_path / "elsewhere"
    home.memory.rename(elsewhere)
    home.memory.symlink_to(elsewhere)
    os.link(elsewhere / "notes.md", outside)
    listed = sorted(os.listdir(elsewhere))
    stamp = os.stat(elsewhere / "notes.md").st_ino
    line = start_fails(tmp_path)
    assert "memory" in line
    assert sorted(os.listdir(elsewhere)) == listed
    assert os.stat(elsewhere / "notes.md").st_ino == stamp


def test_memoryds_own_second_links_do_not_refuse_the_start(tmp_path, outside):
    home = new_store(tmp_path).home
    notes = home.memory_file("notes.md")
    # a crash between create_if_missing's link and its unlink of the temporary name
    os.link(notes, home.memory / ".notes.md.0123456789ab.tmp")
    # one between an edit's keeping of memory.md's old bytes and its rename (journal/rollback.py)
    os.link(home.memory_file("memory.md"), home.memory / ".memory.md.01234567.tmp")
    assert unsafe_entry(home) is None
    os.link(notes, outside)
    assert isinstance(unsafe_entry(home), NotRegular)


def test_a_note_to_a_hard_linked_notes_md_is_not_applied(tmp_path, outside):
    store = new_store(tmp_path)
    held = link_out(store.home.memory_file("notes.md"), outside)
    lines = journal_lines(store)
    with pytest.raises(WriteFailed, match=r"^not applied: .*notes.md is a file with 2 hard links"):
        store.call(*loose_call(args(action="note", text="a note"), **CLEAN))
    assert outside.read_bytes() == held
    assert journal_lines(store) == lines


def test_an_edit_whose_journal_month_is_hard_linked_is_not_applied(tmp_path, outside):
    store = new_store(tmp_path)
    store.call(*loose_call(args(action="add", file="memory", text="first"), **CLEAN))
    before = store.home.memory_file("memory.md").read_bytes()
    held = link_out(month(store), outside)
    with pytest.raises(WriteFailed, match=r"^not applied: .*\.jsonl is a file with 2 hard links"):
        store.call(*loose_call(args(action="add", file="memory", text="second"), **CLEAN))
    assert outside.read_bytes() == held
    assert store.home.memory_file("memory.md").read_bytes() == before


def test_a_staged_edit_to_a_hard_linked_pending_jsonl_is_not_applied(tmp_path, outside):
    store = MemoryStore(Home(tmp_path / "home"), soul_starter=SOUL_STARTER, review=True)
    store.ensure()
    held = link_out(store.home.memory_file("pending.jsonl"), outside)
    with pytest.raises(WriteFailed, match=r"pending.jsonl is a file with 2 hard links"):
        store.call(*loose_call(args(action="add", file="memory", text="staged"), **CLEAN))
    assert outside.read_bytes() == held


def test_other_roles_appends_are_as_before(tmp_path, outside):
    """own is memoryd's: loopd's and brokerd's appends are not changed by it."""
    path = tmp_path / "log.jsonl"
    held = link_out(path, outside)
    append_bytes(path, b"more\n")
    assert outside.read_bytes() == held + b"more\n"


def test_a_home_copied_with_cp_al_starts_beside_the_one_it_was_copied_from(tmp_path):
    """cp -al links the index's lock too: the copy's memoryd must not find it held by the
    original's and say another memoryd runs on the copy. The one started first after the copy
    gives each shared file, the lock among them, a copy of its own."""
    (tmp_path / "a").mkdir()
    first = MemorydProcess(tmp_path / "a").start()
    first.stop()
    (tmp_path / "b").mkdir()
    subprocess.run(["cp", "-al", first.home, tmp_path / "b" / "home"], check=True, timeout=30)
    lock = first.home / "index" / "memoryd.lock"
    assert os.stat(lock).st_nlink == 2
    first.start()
    second = MemorydProcess(tmp_path / "b")
    try:
        second.start()
        assert os.stat(lock).st_nlink == 1
        assert f"{lock}: had 2 hard links" in first.log.read_text()
    finally:
        second.stop()
        first.stop()
