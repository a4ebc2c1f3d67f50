"""A full disk (or another error of the disk or of access) is not a damaged index: opening leaves
the file as it is and refuses the start in one line; indexing, a recall mode's build and a note's
indexing are refused saying so, and done once there is room, without a restart or a reindex."""

import asyncio
import contextlib
import logging
import os
import resource
import signal
import sqlite3

import pytest

from memoryd import catchup
from memoryd.config import load
from memoryd.data import carriers
from memoryd.errors import AdminRefused, IndexDamaged, IndexUnwritable, StartFailed
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.server import prepare
from proto.messages import SessionUpdated
from tests.memoryd.test_index import write_log
from tests.memoryd.test_mode_prepare import CONTEXT, _spec_index
from tests.memoryd.test_scheduling import _call
from tests.memoryd.test_socket_cleanup import _config

FULL = "the disk is full"
TURN = [f"osprey{i} flew by the heron at the lake shore " * 8 for i in range(300)]


@pytest.fixture()
def home(tmp_path):
    home = Home(tmp_path / "home")
    write_log(home, "mm-1", ["the launch window moved", "to Thursday"])
    return home


def _room(conn: sqlite3.Connection, room: bool) -> None:
    """No room for the index to grow (as on a full disk: SQLite answers SQLITE_FULL), or room
    again."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages if not room else 1 << 30}")


@contextlib.contextmanager
def _no_growth():
    """Writes past 1 KiB fail (EFBIG), as on a full disk: SQLite cannot make the index's -shm."""
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, limit[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
        signal.signal(signal.SIGXFSZ, handler)


def _wal_is_a_folder(home: Home):
    os.mkdir(f"{home.index_db}-wal")
    return contextlib.nullcontext()


@pytest.mark.parametrize(
    ("block", "said"),
    [
        (lambda home: _no_growth(), "a disk I/O error; it is left as it is (nothing removed)"),
        (_wal_is_a_folder, "SQLite cannot open it or its -wal or -shm file; it is left as it is"),
    ],
    ids=["no-room-for-shm", "wal-is-a-folder"],
)
def test_an_index_that_cannot_be_opened_is_left_and_the_start_refused(home, caplog, block, said):
    index = Index(home)
    index.open()
    index.catch_up_all()
    index.close()
    before = home.index_db.read_bytes()
    inode = home.index_db.stat().st_ino
    again = Index(home)
    with caplog.at_level(logging.WARNING), block(home), pytest.raises(StartFailed) as refused:
        again.open()
    assert str(refused.value).startswith(f"cannot open the index {home.index_db}: {said}")
    assert "\n" not in str(refused.value)
    assert home.index_db.stat().st_ino == inode and home.index_db.read_bytes() == before
    assert not any("memory-index-damaged" in r.getMessage() for r in caplog.records)


def test_indexing_on_a_full_disk_is_refused_as_such_and_done_once_there_is_room(home, caplog):
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
        write_log(home, "mm-2", TURN)
        _room(index._writer, room=False)
        with caplog.at_level(logging.WARNING), pytest.raises(IndexUnwritable) as refused:
            index.catch_up_session("mm-2")
        assert str(refused.value) == (
            f"the memory index cannot take session mm-2 now: {FULL}; nothing is lost, and it is"
            " tried again once there is room"
        )
        assert not index._writer.in_transaction
        assert not any("rollback" in r.getMessage().lower() for r in caplog.records)
        _room(index._writer, room=True)
        assert index.catch_up_session("mm-2") == len(TURN)
    finally:
        index.close()


def test_a_forget_whose_catch_up_meets_a_full_disk_is_refused_with_nothing_forgotten(home):
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
        write_log(home, "mm-2", TURN)
        _room(index._writer, room=False)
        with pytest.raises(AdminRefused) as refused:
            carriers.catch_up_part(index, "mm-2")
    finally:
        index.close()
    assert str(refused.value) == (
        "refused: forget could not start: the index cannot take the new records of session mm-2"
        " first (database or disk is full); nothing was forgotten"
    )


def _service(tmp_path, monkeypatch, extra: str = ""):
    monkeypatch.setattr(catchup, "RETRY_FIRST", 0.05)
    return prepare(load(_config(tmp_path, extra)))


async def _found(service, query: str) -> bool:
    """Whether recall finds query within a few seconds (the catch-up's retry comes first)."""
    for _ in range(100):
        try:
            found = await service.on_broker(_call("recall", {"query": query}))
        except IndexUnwritable:
            found = None
        if found is not None and found.output.startswith("[1] "):
            return True
        await asyncio.sleep(0.05)
    return False


def test_a_turn_met_by_a_full_disk_is_indexed_by_the_catch_up_once_there_is_room(
    tmp_path, monkeypatch
):
    service = _service(tmp_path, monkeypatch)
    home = service.index.home

    async def scenario():
        await service.catch_up()
        write_log(home, "mm-2", TURN)
        await service._write(_room, service.index._writer, False)
        with pytest.raises(IndexUnwritable, match=FULL) as refused:
            await service.on_loop(SessionUpdated(session="mm-2"))
        await service._write(_room, service.index._writer, True)
        return refused.value, await _found(service, "osprey5")  # no turn, no write: the retry

    try:
        refused, found = asyncio.run(scenario())
    finally:
        service.close()
    assert not isinstance(refused, IndexDamaged) and found


def test_a_note_met_by_a_full_disk_is_recalled_once_there_is_room(tmp_path, monkeypatch, caplog):
    service = _service(tmp_path, monkeypatch)

    def unindexed() -> bool:
        said = "not indexed now, caught up later: IndexUnwritable: the memory index cannot take"
        return any(said in r.getMessage() and FULL in r.getMessage() for r in caplog.records)

    async def scenario():
        await service.catch_up()
        await service._write(_room, service.index._writer, False)
        for n in range(40):  # until one finds no room left in the index's pages
            text = " ".join(f"curlew{n}x{i}" for i in range(80))
            noted = await service.on_broker(_call("memory", {"action": "note", "text": text}))
            assert noted.ok  # applied and journalled: only the index is behind
            if unindexed():
                break
        await service._write(_room, service.index._writer, True)
        return unindexed(), await _found(service, f"curlew{n}x7")

    try:
        with caplog.at_level(logging.WARNING):
            full, found = asyncio.run(scenario())
    finally:
        service.close()
    assert full and found


def test_a_mode_build_met_by_a_full_disk_is_tried_again_once_there_is_room(
    tmp_path, monkeypatch, caplog
):
    home = _spec_index(tmp_path)
    service = _service(tmp_path, monkeypatch, CONTEXT)
    assert service.index.mode_pending
    _room(service.index._writer, room=False)  # before the catch-up: nothing runs on the writer

    async def scenario():
        task = asyncio.create_task(service.catch_up())
        for _ in range(500):
            if service.index.mode_waiting or not service.index.mode_pending:
                break
            await asyncio.sleep(0.01)
        meanwhile = await service.on_broker(_call("recall", {"query": "launch window"}))
        await service._write(_room, service.index._writer, True)
        found = await _found(service, "launch window")
        await asyncio.wait_for(task, 10)  # the catch-up ends once the mode is built
        return meanwhile, found

    try:
        with caplog.at_level(logging.ERROR):
            meanwhile, found = asyncio.run(scenario())
    finally:
        service.close()
    # the spec's search answers from the rows there, and says why the mode's does not
    assert meanwhile.ok and meanwhile.output.startswith("[1] ")
    # The catch-up's own line may follow, as its last log may still be being read.
    assert (
        f"(recall mode context cannot be prepared now: {FULL}; these hits are the spec's search"
        " meanwhile, and context answers once there is room)"
    ) in meanwhile.output.splitlines()[1:]
    assert found
    # Errors only: the start's warning that this home of logs lacks its soul.md is not the build's.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        f"index {home.index_db}: recall mode context: not built: {FULL}; tried again once there"
        " is room"
    ]
