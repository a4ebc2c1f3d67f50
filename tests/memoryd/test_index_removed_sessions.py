"""The index follows sessions/: a session the owner removed (its folder, or its log) leaves the
index -- its rows, its recall modes' rows and its progress -- at the catch-up after a start and
when session_updated names it, in every mode. A log memoryd only skips (a link, a FIFO) is not
gone: its rows stay as they are."""

import asyncio
import logging
import os
import shutil
import sqlite3

import pytest

from memoryd.errors import SessionUnknown
from memoryd.home import Home
from memoryd.index.index import Index
from proto.messages import SessionUpdated
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.test_modes_context import user
from tests.memoryd.test_modes_deleted_rows import built_afresh, context_rows
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on

PRIVATE = "my divorce lawyer is purplefrog associates"
OTHER = "the weather is purplefrog grey"
LOGS = "SELECT log FROM {} WHERE log LIKE 'sessions/%' ORDER BY 1"


def _folder(home: Home, session: str) -> None:
    shutil.rmtree(home.sessions / session)


def _log(home: Home, session: str) -> None:
    home.session_log(session).unlink()


def _held(home: Home) -> tuple[list, list]:
    """The sessions of the rows, and the logs of the progress table."""
    conn = sqlite3.connect(home.index_db)
    try:
        rows = [r[0] for r in conn.execute("SELECT DISTINCT session FROM sources ORDER BY 1")]
        logs = [r[0] for r in conn.execute(LOGS.format("offsets"))]
        assert logs == [r[0] for r in conn.execute(LOGS.format("progress"))]
        return rows, logs
    finally:
        conn.close()


def _gone_lines(caplog) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if "its records left the index" in r.getMessage()
    ]


@pytest.mark.parametrize("removed", [_folder, _log])
@pytest.mark.parametrize("mode", ["spec", "context", "hybrid"])
def test_a_removed_session_leaves_the_index_when_it_opens_again(
    tmp_path, monkeypatch, caplog, removed, mode
):
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
        from memoryd.modes import hybrid

        monkeypatch.setattr(hybrid.Hybrid, "step", lambda self: 0)  # no vectors needed here
    home = Home(tmp_path / "home")
    append(home, "mm-private", [user("2026-12-01T10:00:00Z", PRIVATE)])
    append(home, "mm-other", [user("2026-12-01T10:01:00Z", OTHER)])
    append(home, "mm-gone-too", [user("2026-12-01T10:02:00Z", "purplefrog three")])
    index = Index(home, mode=mode)
    index.open()
    index.catch_up_all()
    index.close()
    removed(home, "mm-private")
    removed(home, "mm-gone-too")
    index = Index(home, mode=mode)  # a restart
    index.open()
    try:
        with caplog.at_level(logging.INFO, logger="memoryd"):
            index.catch_up_all()
        out = recall_on(index, "purplefrog", 10, session="s-test").text
        assert "divorce lawyer" not in out and "three" not in out and OTHER in out
        assert _held(home) == (["mm-other"], ["sessions/mm-other/0.jsonl"])
        assert len(_gone_lines(caplog)) == 2
        if mode != "spec":
            assert context_rows(home.index_db) == built_afresh(home.index_db, tmp_path)
        caplog.clear()
        index.catch_up_all()  # nothing more to drop
        assert _gone_lines(caplog) == []
    finally:
        index.close()


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.say("mm-private", PRIVATE)
    m.say("mm-other", OTHER)
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.parametrize("removed", [_folder, _log])
def test_the_catch_up_after_a_start_drops_a_removed_session(md, caplog, removed):
    assert "divorce lawyer" in md.recall("purplefrog")
    removed(md.home, "mm-private")
    with caplog.at_level(logging.INFO, logger="memoryd"):
        asyncio.run(asyncio.wait_for(md.service.catch_up(), 10))
    assert "divorce lawyer" not in md.recall("purplefrog") and OTHER in md.recall("purplefrog")
    assert _held(md.home)[0] == ["mm-other"]
    (line,) = _gone_lines(caplog)
    assert "mm-private" in line


@pytest.mark.parametrize("removed", [_folder, _log])
def test_session_updated_naming_a_removed_session_drops_it(md, removed):
    removed(md.home, "mm-private")
    with pytest.raises(SessionUnknown):
        asyncio.run(md.service.on_loop(SessionUpdated(session="mm-private")))
    assert "divorce lawyer" not in md.recall("purplefrog")
    assert _held(md.home) == (["mm-other"], ["sessions/mm-other/0.jsonl"])


def _linked_folder(home: Home, session: str) -> None:
    elsewhere = home.root.parent / "elsewhere"
    shutil.move(home.sessions / session, elsewhere)
    (home.sessions / session).symlink_to(elsewhere)


def _linked_log(home: Home, session: str) -> None:
    path = home.session_log(session)
    os.replace(path, path.with_name("kept.jsonl"))
    path.symlink_to(path.with_name("kept.jsonl"))


def _fifo(home: Home, session: str) -> None:
    path = home.session_log(session)
    path.unlink()
    os.mkfifo(path, 0o600)


@pytest.mark.parametrize("skipped", [_linked_folder, _linked_log, _fifo])
def test_a_log_memoryd_skips_is_not_gone_and_keeps_its_rows(md, skipped):
    skipped(md.home, "mm-private")
    asyncio.run(asyncio.wait_for(md.service.catch_up(), 10))
    with pytest.raises(SessionUnknown):
        asyncio.run(md.service.on_loop(SessionUpdated(session="mm-private")))
    assert "divorce lawyer" in md.recall("purplefrog")
    assert _held(md.home)[0] == ["mm-other", "mm-private"]
