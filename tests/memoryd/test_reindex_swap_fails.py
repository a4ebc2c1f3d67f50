"""A reindex whose swap fails part way: the connections are open again on whatever file stands at
the index's path, and the owner is answered in one line, never "internal error". The rename made
and the folder's fsync failing: the new file is the index, and the answer says it was rebuilt but
not synced. The rename failing: the index is as it was. The same holds when an index whose stamp
changed is moved aside to keep its vectors (carryfile.set_aside). In-process: prepare() and the
handlers, on a real home; the build runs in its child process, as memoryd runs it."""

import asyncio
import errno
import logging
import os
import sqlite3

import pytest

from memoryd.config import load
from memoryd.errors import MemorydError, NotSynced, RebuildFailed
from memoryd.index import carryfile
from memoryd.server import prepare
from proto.messages import Reindex
from tests.folderfsync import fail_folder_fsync
from tests.memoryd.test_scheduling import _call, _config, _log


def _reindex_then_recall(tmp_path, monkeypatch, breaking):
    home = tmp_path / "home"
    _log(home, "s-one", ["kestrel nests on the roof"])
    service = prepare(load(_config(tmp_path)))
    index_dir = home / "index"

    async def scenario():
        await service.catch_up()
        before = os.stat(index_dir / "memory.sqlite3").st_ino
        breaking(monkeypatch, index_dir)
        with pytest.raises(MemorydError) as answer:
            await service.on_admin(Reindex())
        monkeypatch.undo()
        after = os.stat(index_dir / "memory.sqlite3").st_ino
        found = await service.on_broker(_call("recall", {"query": "kestrel"}))
        note = await service.on_broker(_call("memory", {"action": "note", "text": "heron"}, "c2"))
        heron = await service.on_broker(_call("recall", {"query": "heron"}, "c3"))
        return answer.value, before != after, found, note, heron

    try:
        return asyncio.run(scenario())
    finally:
        service.close()


def test_a_folder_fsync_that_fails_after_the_rename_leaves_the_new_index_in_use(
    tmp_path, monkeypatch, caplog
):
    caplog.set_level(logging.INFO)
    failed: list[list[int]] = []

    def breaking(patch, index_dir):
        failed.append(fail_folder_fsync(patch, index_dir))

    answer, replaced, found, note, heron = _reindex_then_recall(tmp_path, monkeypatch, breaking)
    assert failed[0]  # the fsync of index/ is what failed
    assert isinstance(answer, NotSynced)
    said = str(answer)
    assert "\n" not in said
    assert said.startswith("the index was rebuilt (1 log, 1 record, 0 notes) and recall uses it")
    assert "could not be synced (Input/output error)" in said
    assert replaced  # the new file is the index
    assert found.ok and "kestrel nests on the roof" in found.output  # not refused: reopened
    assert note.ok and heron.ok and "heron" in heron.output  # the writer indexes into it
    assert "Traceback" not in caplog.text
    assert "internal error" not in caplog.text
    assert caplog.text.count("rebuilt and in use, but its folder") == 1


def test_a_rename_that_fails_leaves_the_old_index_in_use(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    real = os.replace

    def breaking(patch, index_dir):
        def replace(src, dst, *args, **kwargs):
            if str(dst).endswith("memory.sqlite3"):
                raise OSError(errno.EIO, "Input/output error", str(src))
            return real(src, dst, *args, **kwargs)

        patch.setattr("memoryd.index.swap.os.replace", replace)

    answer, replaced, found, note, heron = _reindex_then_recall(tmp_path, monkeypatch, breaking)
    assert isinstance(answer, RebuildFailed)
    said = str(answer)
    assert said.startswith("the reindex failed and the index is as it was: ")
    assert said.endswith("memory.sqlite3.new: Input/output error") and "\n" not in said
    assert not replaced
    assert not (tmp_path / "home/index/memory.sqlite3.new").exists()  # discarded
    assert found.ok and "kestrel nests on the roof" in found.output
    assert note.ok and heron.ok and "heron" in heron.output
    assert "Traceback" not in caplog.text


def test_a_catch_up_of_the_new_file_that_fails_in_sqlite_is_said_in_one_line(
    tmp_path, monkeypatch, caplog
):
    caplog.set_level(logging.INFO)

    def breaking(patch, index_dir):
        def full(*_args, **_kwargs):
            raise sqlite3.OperationalError("database or disk is full")

        patch.setattr("memoryd.index.newindex.catch_up", full)

    answer, replaced, found, _note, _heron = _reindex_then_recall(tmp_path, monkeypatch, breaking)
    assert isinstance(answer, RebuildFailed)
    assert str(answer).startswith("the reindex failed and the index is as it was: ")
    assert not replaced and found.ok
    assert "Traceback" not in caplog.text


def test_an_index_moved_aside_keeps_its_vectors_though_its_folder_fsync_fails(
    tmp_path, monkeypatch, caplog
):
    caplog.set_level(logging.INFO)
    path = tmp_path / "index" / "memory.sqlite3"
    path.parent.mkdir(mode=0o700)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, vector BLOB)")
    conn.execute("CREATE TABLE sources (rowid INTEGER PRIMARY KEY, session TEXT, record INTEGER)")
    conn.execute("INSERT INTO vectors VALUES (1, x'00')")
    conn.commit()
    conn.close()
    failed = fail_folder_fsync(monkeypatch, path.parent)
    kept = carryfile.set_aside(path)
    assert failed  # the fsync after the move is what failed
    assert kept is True  # the caller must not take the old file for still being at path
    assert not path.exists() and carryfile.carry_path(path).is_file()
    assert "cannot be kept" not in caplog.text
    assert caplog.text.count("its vectors kept in") == 1
    assert "its folder could not be synced" in caplog.text
