"""memory/ read-only (a file system remounted read-only after an error): every write the store
makes is answered with the one line "not applied: ... (Read-only file system)", never an internal
error; a take-back that cannot run is logged, not raised over the real cause, and a take-back with
nothing to take back opens nothing for writing. (The real remount needs root: here every open for
writing, link and rename under memory/ fails as it would.)"""

import errno
import logging
import os

import pytest

from memoryd.errors import WriteFailed
from tests.callargs import loose_call

from .store_helpers import CLEAN, args, fill, new_store, snapshot

READ_ONLY = "not applied: memoryd cannot write its memory files (Read-only file system)"
WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def read_only(monkeypatch, store) -> list[str]:
    """From now on memory/ refuses every change; the paths opened for writing."""
    memory = str(store.home.memory)
    tried: list[str] = []
    real_open, real_link, real_replace = os.open, os.link, os.replace

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def under(path, dir_fd=None) -> bool:
        if dir_fd is not None:
            return os.readlink(f"/proc/self/fd/{dir_fd}").startswith(memory)
        return os.path.abspath(os.fspath(path)).startswith(memory)

    def open_(path, flags, *a, dir_fd=None, **k):
        if flags & WRITING and under(path, dir_fd):
            tried.append(os.path.basename(os.fspath(path)))
            refuse(path)
        return real_open(path, flags, *a, dir_fd=dir_fd, **k)

    def link(src, dst, *a, **k):
        if under(dst, k.get("dst_dir_fd")):
            refuse(dst)
        return real_link(src, dst, *a, **k)

    def replace(src, dst, *a, **k):
        if under(dst, k.get("dst_dir_fd")):
            refuse(dst)
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(os, "link", link)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "unlink", lambda p, *a, **k: refuse(p) if under(p) else None)
    return tried


@pytest.mark.parametrize(
    "call",
    [
        {"action": "add", "file": "memory", "text": "Golf memory."},
        {"action": "add", "file": "user", "text": "Golf user."},
        {"action": "remove", "file": "memory", "old": "Launch is Thursday."},
        {"action": "note", "text": "A note."},
    ],
)
def test_a_write_to_read_only_memory_is_not_applied_in_one_line(
    tmp_path, monkeypatch, caplog, call
):
    store = new_store(tmp_path)
    fill(store, "memory", ["Launch is Thursday."])
    fill(store, "user", ["Owner likes tea."])
    before = snapshot(store)
    tried = read_only(monkeypatch, store)
    with caplog.at_level(logging.INFO), pytest.raises(WriteFailed) as failed:
        store.call(*loose_call(args(**call), **CLEAN))
    assert str(failed.value).startswith(READ_ONLY)
    assert snapshot(store) == before
    # notes.md was never appended to, so nothing opened it to be cut back
    if call["action"] not in ("note", "remove"):
        assert "notes.md" not in tried
    assert not [r for r in caplog.records if r.exc_info]


def test_an_undo_on_read_only_memory_is_not_applied_in_one_line(tmp_path, monkeypatch):
    store = new_store(tmp_path)
    fill(store, "memory", ["Launch is Thursday.", "Golf."])
    latest = store.journal.records()[-1].id
    before = snapshot(store)
    tried = read_only(monkeypatch, store)
    with pytest.raises(WriteFailed) as failed:
        store.undo(latest)
    assert str(failed.value).startswith(READ_ONLY)
    assert snapshot(store) == before and "notes.md" not in tried


def test_a_take_back_that_cannot_run_is_logged_not_raised(tmp_path, monkeypatch, caplog):
    """notes.md took the removed entry, then memory.md could not be replaced and notes.md
    cannot be cut back either: the answer names the first cause, the log the take-back."""
    store = new_store(tmp_path)
    fill(store, "memory", ["keep", "leaving"])
    notes = store.home.memory_file("notes.md")
    from memoryd.memory import store as store_module

    def replace_unchanged(path, *_a, **_k):
        read_only(monkeypatch, store)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(store_module, "replace_unchanged", replace_unchanged)
    with caplog.at_level(logging.INFO), pytest.raises(WriteFailed) as failed:
        store.call(*loose_call(args(action="remove", file="memory", old="leaving"), **CLEAN))
    assert "(No space left on device)" in str(failed.value)
    assert any(
        "cannot be cut back" in r.getMessage() and str(notes) in r.getMessage()
        for r in caplog.records
    )
    assert not [r for r in caplog.records if r.exc_info]
