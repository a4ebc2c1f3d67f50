"""notesswap.replace_read puts a rewrite of notes.md in place only while notes.md is the file read:
a save that lands before the swap stays, and so does one that lands between the swap and its
taking back (kept beside notes.md); a folder that cannot be synced leaves the file read in place,
with or without an exchange; nothing of the rewrite is left behind."""

import errno
import os
from pathlib import Path

import pytest

from memoryd.data import notesswap
from memoryd.memory import memfiles

OLD = b"\xc2\xa7 noted 2026-12-01T10:00Z in session s-one \xc2\xb7 private\nOld note.\n"
NEW = OLD.replace(b"Old note.", b"[forgotten]")


def _notes(tmp_path: Path) -> tuple[Path, notesswap.Identity]:
    path = tmp_path / "notes.md"
    path.write_bytes(OLD)
    with open(path, "rb") as f:
        return path, notesswap.opened(f)


def _save(path: Path, data: bytes) -> None:
    tmp = path.with_name("notes.md.owner-save")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _others(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != "notes.md")


def test_the_rewrite_replaces_the_file_read(tmp_path):
    path, read = _notes(tmp_path)
    new = notesswap.replace_read(path, read, [NEW[:10], NEW[10:]])
    assert new is not None and path.read_bytes() == NEW
    assert _others(path) == []


def test_saves_on_both_sides_of_the_swap_both_stay(tmp_path, monkeypatch):
    path, read = _notes(tmp_path)
    real, calls = memfiles.exchange, []

    def saved_around(folder, a, b):
        calls.append(b)
        if len(calls) > 1:
            return real(folder, a, b)
        _save(path, OLD + b"first save\n")  # after the check, before the swap
        done = real(folder, a, b)
        _save(path, OLD + b"second save\n")  # over the rewrite, before it is taken back
        return done

    monkeypatch.setattr(memfiles, "exchange", saved_around)
    assert notesswap.replace_read(path, read, [NEW]) is None
    assert path.read_bytes() == OLD + b"first save\n"
    (kept,) = _others(path)
    assert kept.startswith("notes.md.hand-edit-")
    assert (tmp_path / kept).read_bytes() == OLD + b"second save\n"


@pytest.mark.parametrize("exchanges", [True, False], ids=["exchange", "rename"])
def test_a_folder_that_cannot_be_synced_leaves_the_file_read(tmp_path, monkeypatch, exchanges):
    path, read = _notes(tmp_path)
    if not exchanges:
        monkeypatch.setattr(memfiles, "exchange", lambda *_: False)
    real, calls = notesswap.fsync_dir, []

    def fails_once(folder):
        calls.append(folder)
        if len(calls) == 1:
            raise OSError(errno.EIO, "Input/output error")
        real(folder)

    monkeypatch.setattr(notesswap, "fsync_dir", fails_once)
    with pytest.raises(OSError, match="Input/output error"):
        notesswap.replace_read(path, read, [NEW])
    assert path.read_bytes() == OLD
    assert _others(path) == []


def test_an_error_while_the_rewrite_is_made_leaves_nothing(tmp_path):
    path, read = _notes(tmp_path)

    def chunks():
        yield NEW
        raise ValueError("refused while read")

    with pytest.raises(ValueError):
        notesswap.replace_read(path, read, chunks())
    assert path.read_bytes() == OLD and _others(path) == []
