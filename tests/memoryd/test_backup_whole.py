"""A backup holds every part an owner's backup holds (the memory files, the journal, the recall
log, and with --with-sessions the session logs), or it is refused in one line naming what is
wrong, with nothing written: a home whose memory/ was removed, or whose journal's folder was
replaced by a file, must not answer "backup written", nor let --keep remove the older archives
that hold what it lacks. restore --replace still mends such a home."""

import errno
import os
import shutil
import tarfile

import pytest

from memoryd.data import layout
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd


def _gone(rel: str):
    def breaks(m: Memoryd) -> None:
        path = m.home.memory.joinpath(*rel.split("/")) if rel else m.home.memory
        shutil.rmtree(path) if path.is_dir() else path.unlink()

    return breaks


def _a_file(rel: str):
    def breaks(m: Memoryd) -> None:
        path = m.home.memory / rel
        shutil.move(path, m.home.root / f"{rel}.aside")
        path.write_text("x\n")

    return breaks


def _a_link(rel: str):
    def breaks(m: Memoryd) -> None:
        path = m.home.memory / rel
        shutil.move(path, m.home.root / f"{rel}.aside")
        path.symlink_to(m.home.root / f"{rel}.aside")

    return breaks


def _unlistable(rel: str):
    """The folder memoryd may not list (mode 000 does not stop root, who may run the tests: the
    listing is what is refused, as the kernel refuses it to another user)."""

    def breaks(m: Memoryd, monkeypatch) -> None:
        target = os.fspath(m.home.memory / rel)
        real = layout.os.listdir

        def listdir(path="."):
            if os.fspath(path) == target:
                raise PermissionError(errno.EACCES, "Permission denied", target)
            return real(path)

        monkeypatch.setattr(layout.os, "listdir", listdir)

    return breaks


BREAKS = [
    ("memory gone", _gone(""), r"memory/ is missing"),
    ("memory.md gone", _gone("memory.md"), r"memory/memory\.md is missing"),
    ("user.md gone", _gone("user.md"), r"memory/user\.md is missing"),
    ("soul.md gone", _gone("soul.md"), r"memory/soul\.md is missing"),
    ("notes.md gone", _gone("notes.md"), r"memory/notes\.md is missing"),
    ("edits gone", _gone("edits"), r"memory/edits/ is missing"),
    ("recalls gone", _gone("recalls"), r"memory/recalls/ is missing"),
    ("edits a file", _a_file("edits"), r"memory/edits/ is not a folder"),
    ("recalls a file", _a_file("recalls"), r"memory/recalls/ is not a folder"),
    ("edits a link", _a_link("edits"), r"memory/edits/ is a symbolic link"),
    ("edits unlistable", _unlistable("edits"), r"memory/edits/ cannot be read \(Permission"),
    ("recalls unlistable", _unlistable("recalls"), r"memory/recalls/ cannot be read"),
]


def _filled(tmp_path) -> Memoryd:
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": "Launch is Thursday."})
    m.call({"action": "note", "text": "The router is in the hall."})
    m.recall("launch")
    return m


def _break(m: Memoryd, breaks, monkeypatch) -> None:
    if breaks.__code__.co_argcount == 2:
        breaks(m, monkeypatch)
    else:
        breaks(m)


@pytest.mark.parametrize("keep", [None, 1])
@pytest.mark.parametrize("why, breaks, said", BREAKS, ids=[b[0] for b in BREAKS])
def test_a_backup_of_a_home_not_whole_is_refused_and_removes_nothing(
    tmp_path, monkeypatch, why, breaks, said, keep
):
    m = _filled(tmp_path)
    try:
        older = m.data("backup")["path"]
        names = {n for n in tarfile.open(older).getnames()}
        assert {"memory/memory.md", "memory/notes.md"} <= names
        assert any(n.startswith("memory/edits/") for n in names)
        assert any(n.startswith("memory/recalls/") for n in names)
        _break(m, breaks, monkeypatch)
        arg = {} if keep is None else {"keep": keep}
        with pytest.raises(AdminRefused, match=f"^refused: {said}.*nothing was written") as no:
            m.admin("backup", arg)
        assert "\n" not in str(no.value)
        if "missing" in said:  # the way back is the file from a backup, never the whole restore
            assert "tar -xz" in str(no.value) and "restore a backup" not in str(no.value)
        assert sorted(os.listdir(layout.backups(m.home))) == [os.path.basename(older)]
    finally:
        m.close()


def test_a_backup_with_sessions_is_refused_when_sessions_is_not_a_folder(tmp_path):
    m = _filled(tmp_path)
    try:
        m.say("s-one", "what is the launch codename", "the codename is bluefinch")
        m.data("backup", with_sessions=True)
        before = sorted(os.listdir(layout.backups(m.home)))
        shutil.move(m.home.sessions, tmp_path / "sessions.aside")
        m.home.sessions.write_text("x\n")
        with pytest.raises(AdminRefused, match=r"sessions is not a folder") as no:
            m.admin("backup", {"with_sessions": True})
        assert "\n" not in str(no.value)
        assert sorted(os.listdir(layout.backups(m.home))) == before
    finally:
        m.close()


@pytest.mark.parametrize(
    "why, replace", [("memory gone", False), ("memory.md gone", True), ("edits gone", True)]
)
def test_restore_still_mends_a_home_missing_a_part(tmp_path, why, replace):
    """The refusal says to restore a backup: that works (with memory/ gone there is nothing to
    replace, and a restore without --replace takes it)."""
    m = _filled(tmp_path)
    try:
        shutil.move(m.data("backup")["path"], layout.backups(m.home) / "earlier.tar.gz")
        dict(BREAKS_BY_NAME)[why](m)
        m.data("restore", name="earlier.tar.gz", replace=replace)
        assert "Launch is Thursday." in m.home.memory_file("memory.md").read_text()
        assert m.data("backup")["counts"]["entries"] == 1
    finally:
        m.close()


BREAKS_BY_NAME = [(why, breaks) for why, breaks, _ in BREAKS]


def test_a_restore_of_a_new_homes_backup_leaves_a_home_whole(tmp_path):
    new = Memoryd(tmp_path / "new")
    try:
        made = new.data("backup")["path"]
        assert not any(n.startswith("memory/edits/") for n in tarfile.open(made).getnames())
    finally:
        new.close()
    m = _filled(tmp_path)
    try:
        shutil.copy(made, layout.backups(m.home) / "new.tar.gz")
        shutil.rmtree(m.home.memory)
        m.data("restore", name="new.tar.gz")
        assert m.data("backup", keep=1)["counts"]["entries"] == 0
    finally:
        m.close()
