"""A rename or link made, then the fsync of its folder fails: the answer is the truth. A memory
write answered "not applied" has been taken back (memory.md as it was, nothing journalled, no
temporary file left), with an exchange or a plain rename, with hard links or without; a backup
or an export that says none was left has left none."""

import errno
import os

import pytest

from memoryd.errors import AdminRefused, WriteFailed
from memoryd.memory import memfiles
from tests.callargs import loose_call
from tests.folderfsync import fail_folder_fsync
from tests.memoryd.owner_data_harness import Memoryd

from .store_helpers import CLEAN, args, fill, new_store, snapshot

ANSWER = (
    "not applied: memoryd cannot write its memory files (Input/output error); "
    "memory.md is unchanged"
)


@pytest.mark.parametrize(
    "exchange, hard_links", [(True, True), (False, True), (False, False)], ids=str
)
@pytest.mark.parametrize(
    "write",
    [
        {"action": "add", "file": "memory", "text": "Robin likes coffee."},
        {"action": "remove", "file": "memory", "old": "leaving"},
    ],
    ids=["add", "remove"],
)
def test_a_write_whose_folder_fsync_fails_is_taken_back(
    tmp_path, monkeypatch, exchange, hard_links, write
):
    store = new_store(tmp_path)
    fill(store, "memory", ["keep", "leaving"])
    before = snapshot(store)
    if not exchange:
        monkeypatch.setattr(memfiles, "exchange", lambda *_a: False)
    if not hard_links:

        def no_link(*_a, **_k):
            raise OSError(errno.EPERM, "Operation not permitted")

        monkeypatch.setattr("memoryd.journal.rollback.os.link", no_link)
    failed = fail_folder_fsync(monkeypatch, store.home.memory)
    with pytest.raises(WriteFailed) as answer:
        store.call(*loose_call(args(**write), **CLEAN))
    assert str(answer.value) == ANSWER
    assert failed  # the fsync after the rename is what failed
    monkeypatch.undo()
    assert snapshot(store) == before
    assert [p.name for p in store.home.memory.iterdir() if ".tmp" in p.name] == []
    # The next write journals no "hand edit" for it: it was never in place.
    store.call(*loose_call(args(action="add", file="memory", text="Robin likes jam."), **CLEAN))
    journal = b"".join(p.read_bytes() for p in store.home.edits.glob("*.jsonl"))
    assert b"hand" not in journal and b"coffee" not in journal


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_a_backup_whose_folder_fsync_fails_leaves_no_archive(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": "Alpha fact."})
    md.data("backup")  # backups/ made
    folder = md.home.root / "backups"
    for p in folder.iterdir():
        p.unlink()
    fail_folder_fsync(monkeypatch, folder)
    with pytest.raises(AdminRefused) as refused:
        md.admin("backup", {})
    assert str(refused.value) == (
        f"refused: the backup failed (Input/output error); no archive was left in {folder}"
    )
    assert os.listdir(folder) == []


def test_an_export_whose_folder_fsync_fails_leaves_no_export(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": "Alpha fact."})
    md.data("backup")  # backups/ made
    folder = md.home.root / "backups"
    for p in folder.iterdir():
        p.unlink()
    fail_folder_fsync(monkeypatch, folder)
    with pytest.raises(AdminRefused, match=r"Input/output error\); no export was left in "):
        md.admin("export", {"format": "jsonl"})
    assert os.listdir(folder) == []


def test_a_restore_whose_plan_cannot_be_synced_is_past_its_point_and_finishes(
    tmp_path, monkeypatch
):
    """The plan is not taken back (a crash may yet keep it and lay it at the next start): the
    restore carries it out and is answered as done."""
    from memoryd.data import lay

    from .restore_lines import without_restore_lines
    from .test_restore_stopped_part_way import _homes, _memory

    b, restored = _homes(tmp_path)
    try:
        real_write, real_fsync, failed = lay.atomic_write, os.fsync, []

        def plan_write(path, data, **kw):
            failed.append(fail_folder_fsync(monkeypatch, path.parent))
            try:
                real_write(path, data, **kw)
            finally:
                monkeypatch.setattr(os, "fsync", real_fsync)

        monkeypatch.setattr(lay, "atomic_write", plan_write)
        out = b.data("restore", name="a.tar.gz", replace=True)
        assert [len(f) for f in failed] == [1]  # the plan's folder fsync failed, once
        assert out["restored"] == "a.tar.gz"
        assert without_restore_lines(_memory(b)) == restored
        assert not lay.plan_path(b.home).exists()
    finally:
        b.close()


def test_a_merge_mark_removed_whose_folder_cannot_be_synced_is_said_and_stands(
    tmp_path, monkeypatch, caplog
):
    """The merge is no longer owed once its mark is removed; a folder that cannot be synced
    after is logged, never raised into the forget that removed it as if nothing had changed."""
    from types import SimpleNamespace

    from memoryd.data import ftsmerge

    index = SimpleNamespace(path=str(tmp_path / "memory.sqlite3"))
    assert ftsmerge.owe(index) is False
    fail_folder_fsync(monkeypatch, tmp_path)
    ftsmerge.settled(index)
    assert not ftsmerge.owed_path(index).exists()
    assert "removed, but its folder cannot be synced: Input/output error" in caplog.text


def test_an_index_removed_but_not_synced_after_a_restore_is_said_so(tmp_path, monkeypatch):
    """The index could not be brought up to date and was removed, but its folder's fsync
    failed: memory stays refused (a crash may bring the file back), and the answer no longer
    says it was not removed."""
    from memoryd.data import purge

    from .restore_lines import without_restore_lines
    from .test_restore_after_lay import Broken, _homes, _line, _memory

    b, restored = _homes(tmp_path, _line("session:s-old:0") + b"\n")
    try:
        b.say("s-old", "Zanzibar secret words.")
        Broken(monkeypatch, b, "purge")
        real_remove = purge.remove_database

        def remove_database(path):
            real_remove(path)
            fail_folder_fsync(monkeypatch, path.parent)

        monkeypatch.setattr(purge, "remove_database", remove_database)
        out = b.data("restore", name="a.tar.gz", replace=True)
        assert without_restore_lines(_memory(b)) == restored
        assert not os.path.exists(b.index.path)
        assert "nor removed" not in out["message"]
        assert (
            "and its removal could not be synced (Input/output error), so memoryd refuses "
            f"memory: stop memoryd, check {b.index.path} is gone, then start it"
        ) in out["message"]
        assert "check" in b.service.unfinished
    finally:
        b.close()


def test_an_append_taken_back_by_removing_its_file_is_not_said_to_have_failed(
    tmp_path, monkeypatch, caplog
):
    """cut_back of a file the failed append created removes it; a folder that cannot be synced
    after is logged as such, not raised as "cannot be cut back"."""
    from memoryd.journal import rollback

    path = tmp_path / "2026-12.jsonl"
    path.write_bytes(b'{"id": "torn')
    fail_folder_fsync(monkeypatch, tmp_path)
    rollback.take_back(path, None)
    assert not path.exists()
    assert "removed, but its folder cannot be synced: Input/output error" in caplog.text
    assert "cannot be cut back" not in caplog.text
