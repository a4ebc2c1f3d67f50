"""restore --replace of a home missing a core file (removed by hand: what a restore mends) keeps a
copy of the home that restore takes back: the file missing is held as memoryd's start would make
it (memory.md, user.md, notes.md empty, soul.md the starter), so that restoring the copy and
starting memoryd gives what starting the replaced home would have given. An archive memoryd did
not make that lacks a core file is still refused."""

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from memoryd.config import PACKAGED_SOUL
from memoryd.data import layout
from memoryd.errors import AdminRefused
from memoryd.journal.journal import IDENTITY_FILES
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import SOUL_STARTER

CORE = ("memory.md", "user.md", "notes.md", "soul.md")


def _filled(root: Path) -> Memoryd:
    m = Memoryd(root)
    m.call({"action": "add", "file": "memory", "text": "Launch is Thursday."})
    m.call({"action": "add", "file": "user", "text": "The owner drinks tea."})
    m.call({"action": "note", "text": "The router is in the hall."})
    m.home.memory_file("soul.md").write_text("# The owner's own soul.\n")
    return m


def _state(m: Memoryd) -> dict:
    """What the owner sees of a home: its core files, and what the journal says each identity
    file holds, with its latest hand edit."""
    files = {name: m.home.memory_file(name).read_bytes() for name in CORE}
    records = m.store.journal.records()
    hand = [(r.to, r.before, r.after) for r in records if r.action == "hand-edit"]
    last = {f: m.store.journal_index.last_after(f) for f in IDENTITY_FILES}
    return {"files": files, "last_after": last, "hand_edit": hand[-1:] if hand else []}


def _started(root: Path) -> dict:
    m = Memoryd(root)
    try:
        return _state(m)
    finally:
        m.close()


@pytest.mark.parametrize(
    "gone", [("memory.md",), ("user.md",), ("notes.md",), ("soul.md",), ("memory.md", "soul.md")]
)
def test_the_copy_of_a_home_missing_a_core_file_restores_as_its_start_would_make_it(tmp_path, gone):
    m = _filled(tmp_path / "home")
    try:
        shutil.move(m.data("backup")["path"], layout.backups(m.home) / "earlier.tar.gz")
        m.call({"action": "add", "file": "memory", "text": "Written after the backup."})
        for name in gone:
            m.home.memory_file(name).unlink()
        # what starting the home as it is would give: a copy of it started on its own
        shutil.copytree(m.home.memory, tmp_path / "as-it-was" / "memory", symlinks=True)
        expected = _started(tmp_path / "as-it-was")
        copy = m.data("restore", name="earlier.tar.gz", replace=True)["before"]
        with tarfile.open(copy, "r:gz") as tar:
            names = tar.getnames()
            for name in gone:
                held = tar.extractfile(f"memory/{name}").read()
                assert held == (SOUL_STARTER.read_bytes() if name == "soul.md" else b"")
        assert all(f"memory/{name}" in names for name in CORE)
        m.data("restore", name=os.path.basename(copy), replace=True)
    finally:
        m.close()
    assert _started(tmp_path / "home") == expected


def test_a_copy_of_a_whole_home_is_as_before(tmp_path):
    m = _filled(tmp_path / "home")
    try:
        shutil.move(m.data("backup")["path"], layout.backups(m.home) / "earlier.tar.gz")
        held = {n: m.home.memory_file(n).read_bytes() for n in CORE}
        copy = m.data("restore", name="earlier.tar.gz", replace=True)["before"]
        with tarfile.open(copy, "r:gz") as tar:
            assert {n: tar.extractfile(f"memory/{n}").read() for n in CORE} == held
    finally:
        m.close()


def _without(archive: str, member: str, out: Path) -> None:
    """archive rewritten without member, its manifest made to agree (a foreign archive)."""
    with tarfile.open(archive, "r:gz") as tar:
        members = [(i, tar.extractfile(i).read()) for i in tar.getmembers()]
    with tarfile.open(out, "w:gz") as tar:
        for info, data in members:
            if info.name == member:
                continue
            if info.name == "manifest.json":
                manifest = json.loads(data)
                manifest["files"] = [f for f in manifest["files"] if f["path"] != member]
                data = json.dumps(manifest).encode()
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("member", [f"memory/{n}" for n in CORE])
def test_an_archive_lacking_a_core_file_is_still_refused(tmp_path, member):
    m = _filled(tmp_path / "home")
    try:
        made = m.data("backup")["path"]
        _without(made, member, layout.backups(m.home) / "foreign.tar.gz")
        held = {n: m.home.memory_file(n).read_bytes() for n in CORE}
        with pytest.raises(AdminRefused, match=f"holds no {member.split('/')[1]}; it is not a"):
            m.admin("restore", {"name": "foreign.tar.gz", "replace": True})
        assert {n: m.home.memory_file(n).read_bytes() for n in CORE} == held
    finally:
        m.close()


def test_a_soul_md_missing_while_the_starter_cannot_be_read_is_held_as_the_shipped_one(tmp_path):
    m = _filled(tmp_path / "home")
    try:
        shutil.move(m.data("backup")["path"], layout.backups(m.home) / "earlier.tar.gz")
        m.home.memory_file("soul.md").unlink()
        m.store.soul_starter = tmp_path / "no-such-starter.md"
        copy = m.data("restore", name="earlier.tar.gz", replace=True)["before"]
        with tarfile.open(copy, "r:gz") as tar:
            assert tar.extractfile("memory/soul.md").read() == PACKAGED_SOUL.read_bytes()
        m.data("restore", name=os.path.basename(copy), replace=True)
    finally:
        m.close()
