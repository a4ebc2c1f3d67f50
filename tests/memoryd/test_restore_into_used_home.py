"""A plain restore into a home that was used before it (a recall made, soul.md rewritten by the
owner) is refused, saying what the home holds and that restore --replace backs it up first: the
lay would replace the recall log and soul.md, and nothing else keeps them. A home holding only
what memoryd wrote at its start is restored into as before."""

import json
import shutil
import tarfile

import pytest

from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def saved(tmp_path):
    """An archive of home a, with an entry and a recall of its own."""
    a = Memoryd(tmp_path / "a")
    try:
        a.call({"action": "add", "file": "memory", "text": "The router is in the hall."})
        a.recall("router")
        return a.data("backup")["path"]
    finally:
        a.close()


@pytest.fixture
def b(tmp_path, saved):
    m = Memoryd(tmp_path / "b")
    shutil.copy(saved, m.home.root / "backups" / "a.tar.gz")
    yield m
    m.close()


def _tree(m: Memoryd) -> dict[str, bytes]:
    root = m.home.memory
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _archived(path: str, member: str) -> bytes:
    with tarfile.open(path, "r:gz") as tar:
        return tar.extractfile(member).read()


def _recalled(m: Memoryd) -> str:
    return "".join(p.read_text() for p in m.home.recalls.glob("*.jsonl"))


def test_a_home_that_only_recalled_is_not_restored_over_without_replace(b):
    b.recall("zanzibar ferry timetable")
    assert "zanzibar" in _recalled(b)
    held = _tree(b)
    with pytest.raises(AdminRefused, match=r"holds memory \(a recall log\).*--replace backs it up"):
        b.admin("restore", {"name": "a.tar.gz"})
    assert _tree(b) == held
    out = b.data("restore", name="a.tar.gz", replace=True)
    assert "zanzibar" not in _recalled(b)
    month = next(b.home.recalls.glob("*.jsonl")).name
    assert b"zanzibar" in _archived(out["before"], f"memory/recalls/{month}")


def test_the_owners_own_soul_md_is_not_restored_over_without_replace(b):
    mine = b"# My own soul, written on the new machine.\n"
    b.home.memory_file("soul.md").write_bytes(mine)
    with pytest.raises(AdminRefused, match=r"a soul\.md other than the starter.*--replace"):
        b.admin("restore", {"name": "a.tar.gz"})
    assert b.home.memory_file("soul.md").read_bytes() == mine
    out = b.data("restore", name="a.tar.gz", replace=True)
    assert _archived(out["before"], "memory/soul.md") == mine


def test_pending_and_notes_and_entries_are_each_named(b):
    b.home.memory_file("pending.jsonl").write_text(json.dumps({"id": "p-1"}) + "\n")
    b.home.memory_file("notes.md").write_text("a note\n")
    with pytest.raises(AdminRefused) as refused:
        b.admin("restore", {"name": "a.tar.gz"})
    assert "a non-empty notes.md, a non-empty pending.jsonl" in str(refused.value)


def test_a_home_holding_only_what_memoryd_wrote_at_its_start_is_restored_into(b, saved):
    out = b.data("restore", name="a.tar.gz")
    assert out["before"] is None
    assert "The router is in the hall." in b.home.memory_file("memory.md").read_text()
    assert b.home.memory_file("soul.md").read_bytes() == _archived(saved, "memory/soul.md")
    assert "router" in _recalled(b)
