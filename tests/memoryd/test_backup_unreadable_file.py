"""A memory file memoryd cannot open (copied in by hand as another user, mode 000, or a link)
refuses a backup, an export and a restore --replace in one line naming the file and what to do,
with nothing written: it is the owner's to fix, never an "internal error"."""

import errno
import os
import shutil

import pytest

from memoryd.data import layout, snapshot
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd


def _deny(monkeypatch, m: Memoryd) -> None:
    """user.md unreadable to memoryd. The tests may run as root, whom mode 000 does not stop,
    so the open memoryd makes is what is refused, as the kernel refuses it to another user."""
    target = m.home.memory_file("user.md")
    real = snapshot.open_file

    def open_file(path, flags, *a):
        if os.fspath(path) == os.fspath(target):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, flags, *a)

    monkeypatch.setattr(snapshot, "open_file", open_file)


def _link(monkeypatch, m: Memoryd) -> None:
    """user.md replaced by a link to a copy of itself, which memoryd never follows."""
    target = m.home.memory_file("user.md")
    copy = m.home.root / "user-copy.md"
    shutil.copy(target, copy)
    target.unlink()
    target.symlink_to(copy)


CAUSES = [
    (
        _deny,
        r"memory/user\.md cannot be read \(Permission denied\); nothing was written; "
        r"give it back to memoryd's user",
    ),
    (_link, r"memory/user\.md is a symbolic link.*; nothing was written; put a regular file"),
]
COMMANDS = [
    ("backup", {}),
    ("export", {"format": "jsonl"}),
    ("restore", {"name": "earlier.tar.gz", "replace": True}),
]


def _files(m: Memoryd) -> dict:
    """Every file under the home but the index (which memoryd may touch on its own)."""
    root = m.home.root
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() and not p.is_symlink() else None
        for p in root.rglob("*")
        if "index" not in p.relative_to(root).parts
    }


@pytest.mark.parametrize("cause, said", CAUSES, ids=["permission", "link"])
@pytest.mark.parametrize("command, arg", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_an_unreadable_memory_file_is_refused_in_one_line(
    tmp_path, monkeypatch, cause, said, command, arg
):
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "add", "file": "memory", "text": "Owner prefers answers in UTC."})
        m.call({"action": "add", "file": "user", "text": "The owner's name is Ada."})
        made = m.data("backup")
        shutil.move(made["path"], layout.backups(m.home) / "earlier.tar.gz")
        cause(monkeypatch, m)
        before = _files(m)
        with pytest.raises(AdminRefused, match=said) as refused:
            m.admin(command, arg)
        assert "\n" not in str(refused.value)
        assert "runbook: memory-unavailable" in str(refused.value)
        assert _files(m) == before
    finally:
        m.close()
