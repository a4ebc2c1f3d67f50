"""A write that fails part way and whose take-back fails too (ext4's errors=remount-ro turns the
disk read-only after the I/O error that failed the write): the answer says the file may hold the
change, never that it is unchanged, and the next write or start journals what the file holds as
not taken back, never as the write answered applied. (A single fault, taken back, keeps its
answer "… is unchanged": tests/memoryd/test_rollback.py.)"""

import errno
import os

import pytest

from memoryd.errors import WriteFailed
from memoryd.memory import writeintent
from tests.callargs import loose_call

from .store_helpers import CLEAN, args, fill, journal_lines, memory_path, new_store, owner

WRITING = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class Disk:
    """os's writes, failing as a disk that an I/O error turns read-only: the first write or
    fsync on a file whose path ends with `at` fails with EIO; from then on each of `sticky`
    fails with EROFS, until heal() (or, given times, that many times in all)."""

    def __init__(self, monkeypatch, at, first, sticky, times: int | None = None):
        self.monkeypatch, self.at, self.first, self.ro = monkeypatch, at, first, False
        self.sticky, self.times = set(sticky), times
        self.real = {name: getattr(os, name) for name in {first, *sticky}}
        for name in self.real:
            monkeypatch.setattr(os, name, self._wrap(name))

    def _wrap(self, name):
        real = self.real[name]

        def call(*a, **k):
            if name == self.first and not self.ro and _fd_path(a[0]).endswith(self.at):
                self.ro = True
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            if self.ro and name in self.sticky and (name != "open" or a[1] & WRITING):
                if self.times is not None:
                    if self.times == 0:
                        return real(*a, **k)
                    self.times -= 1
                raise OSError(errno.EROFS, os.strerror(errno.EROFS))
            return real(*a, **k)

        return call

    def heal(self) -> None:
        self.monkeypatch.undo()


def _fd_path(fd) -> str:
    if not isinstance(fd, int):
        return ""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


READ_ONLY = ("write", "fsync", "replace", "rename", "ftruncate", "unlink", "link", "open")


def _untaken(where: str, reason: str = "Input/output error") -> str:
    return (
        f"not applied: memoryd cannot write its memory files ({reason}), and could not take the "
        f"change back: {where} may hold it until memoryd can write again, when it journals it "
        "as not-taken-back or takes it back (runbook: journal-damaged)"
    )


def _call(store, **fields) -> str:
    try:
        return store.call(*loose_call(args(**fields), **CLEAN))
    except WriteFailed as e:
        return str(e)


def test_an_add_whose_put_back_fails_says_memory_md_may_hold_it(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    fill(store, "memory", ["Tea at four."])
    disk = Disk(monkeypatch, ".jsonl", "write", READ_ONLY)
    answer = _call(store, action="add", file="memory", text="The spare key is under the pot.")
    disk.heal()
    assert answer == _untaken("memory.md")
    assert "The spare key" in memory_path(store, "memory.md").read_text()
    assert [line["action"] for line in journal_lines(store)] == ["add"]
    # The disk writable again, the next write journals the change as not taken back.
    assert _call(store, action="note", text="The disk is back.") == "noted"
    *_, untaken, note = journal_lines(store)
    assert untaken["action"] == "not-taken-back"
    assert untaken["requested"] == "add"
    assert untaken["session"] == CLEAN["session"]
    assert untaken["after"] == ["Tea at four.", "The spare key is under the pot."]
    assert note["action"] == "note"
    assert not os.path.lexists(writeintent.intent_path(store.home))
    # The owner can take it back like any edit.
    assert owner(store, "undo", untaken["id"]).startswith(f"undid {untaken['id']}")
    assert "The spare key" not in memory_path(store, "memory.md").read_text()
    # A start after that finds nothing more to journal.
    lines = journal_lines(store)
    new_store(tmp_path)
    assert journal_lines(store) == lines


def test_a_note_whose_cut_back_fails_says_notes_md_may_hold_it(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    _call(store, action="note", text="The boiler was serviced in May.")
    disk = Disk(monkeypatch, "/notes.md", "fsync", READ_ONLY)
    answer = _call(store, action="note", text="The alarm code is 4711.")
    disk.heal()
    assert answer == _untaken("notes.md")
    assert "The alarm code is 4711." in memory_path(store, "notes.md").read_text()
    assert _call(store, action="note", text="The disk is back.") == "noted"
    actions = [(line["action"], line.get("requested")) for line in journal_lines(store)]
    assert actions == [("note", None), ("not-taken-back", "note"), ("note", None)]


def test_the_mark_on_disk_tells_a_fresh_start(tmp_path, monkeypatch):
    """Where the intent can still be written (only the put-back's rename fails), the mark is on
    disk, and a start of a new memoryd journals the change as not taken back."""
    store = new_store(tmp_path)
    disk = Disk(monkeypatch, ".jsonl", "write", ("replace",), times=1)
    answer = _call(store, action="add", file="user", text="Prefers tea.")
    disk.heal()
    assert answer == _untaken("user.md")
    assert "Prefers tea." in memory_path(store, "user.md").read_text()
    new_store(tmp_path)
    [line] = journal_lines(store)
    assert (line["action"], line["requested"], line["to"]) == ("not-taken-back", "add", "user.md")
    assert line["after"] == ["Prefers tea."]


def test_a_staged_write_whose_cut_back_fails_says_it_may_wait(tmp_path, monkeypatch):
    store = new_store(tmp_path, review=True)
    disk = Disk(monkeypatch, "/pending.jsonl", "fsync", READ_ONLY)
    answer = _call(store, action="add", file="memory", text="Staged.")
    disk.heal()
    assert answer == (
        "not applied: memoryd cannot write its memory files (Input/output error), and could not "
        "take the change back: pending.jsonl may hold it as a waiting edit, for the owner to "
        "reject (runbook: journal-damaged)"
    )


def test_a_single_fault_still_says_unchanged(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    fill(store, "memory", ["Tea at four."])
    before = memory_path(store, "memory.md").read_bytes()
    disk = Disk(monkeypatch, ".jsonl", "write", ())
    answer = _call(store, action="add", file="memory", text="Not kept.")
    disk.heal()
    assert answer == (
        "not applied: memoryd cannot write its memory files (Input/output error); memory.md is "
        "unchanged"
    )
    assert memory_path(store, "memory.md").read_bytes() == before
    assert _call(store, action="note", text="Next.") == "noted"
    assert [line["action"] for line in journal_lines(store)] == ["add", "note"]


@pytest.mark.parametrize("truncates", [True, False])
def test_an_append_says_when_its_part_cannot_be_cut_back(tmp_path, monkeypatch, truncates):
    from proto.files import NotTakenBack, append_bytes

    path = tmp_path / "log"
    path.write_bytes(b"kept\n")
    disk = Disk(monkeypatch, "/log", "fsync", () if truncates else ("ftruncate",))
    with pytest.raises(OSError) as failed:
        append_bytes(path, b"lost\n")
    disk.heal()
    assert str(failed.value) == "[Errno 5] Input/output error"
    assert isinstance(failed.value, NotTakenBack) is not truncates
    assert path.read_bytes() == (b"kept\n" if truncates else b"kept\nlost\n")
