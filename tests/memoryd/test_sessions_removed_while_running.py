"""A session the owner removes while memoryd runs (its folder, or its log) sends no session_updated
again: memoryd's look (removedlook.py) drops it from the index within LOOK_SECONDS, at once when
stats finds it, and stats says the truth meanwhile rather than "every session log indexed".
sessions/ that is a file or a FIFO (at a start, or while memoryd runs) lists no log: memoryd says
so once in a WARNING and stats names it, counting the sessions the index holds, which stay as
they were. In-process on a real home and a real index, the look on a real event loop."""

import asyncio
import json
import logging
import os
import shutil
import time

import pytest

from memoryd import removedlook
from memoryd.home import Home
from memoryd.index.index import Index
from memoryd.owner import indexstate
from proto.records import UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T
from tests.memoryd.test_catch_up_again import said_meanwhile
from tests.recalling import recall_on

PRIVATE = "my divorce lawyer is purplefrog associates"
OTHER = "the weather is purplefrog grey"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    said_meanwhile(m, "mm-sess0001", PRIVATE)
    said_meanwhile(m, "mm-sess0002", OTHER)
    m.index.catch_up_all()
    yield m
    m.close()


def _index_lines(m: Memoryd) -> list[str]:
    stats = json.loads(m.admin("stats", '{"json": true}'))
    return indexstate.lines(stats["index"])


async def _until(check, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def _remove(m: Memoryd, removed: str) -> None:
    if removed == "folder":
        shutil.rmtree(m.home.sessions / "mm-sess0001")
    else:
        m.home.session_log("mm-sess0001").unlink()


def test_a_session_folder_removed_while_memoryd_runs_leaves_the_index_at_the_look(
    md, monkeypatch, caplog
):
    monkeypatch.setattr(removedlook, "LOOK_SECONDS", 0.1)
    assert "divorce lawyer" in md.recall("purplefrog")
    _remove(md, "folder")

    async def scenario() -> bool:
        md.index.catching_up = None  # the start's catch-up is done
        md.service._catching.look.start()
        return await _until(lambda: "divorce lawyer" not in md.recall("purplefrog"))

    with caplog.at_level(logging.INFO, logger="memoryd"):
        assert asyncio.run(scenario())
    out = md.recall("purplefrog")
    assert "weather is purplefrog grey" in out and "divorce lawyer" not in out
    gone_lines = [r.getMessage() for r in caplog.records if "left the index" in r.getMessage()]
    assert gone_lines == [
        f"session log {md.home.session_log('mm-sess0001')}: gone; its records left the index"
    ]
    assert _index_lines(md) == ["index: every session log indexed"]


@pytest.mark.parametrize("removed", ["folder", "log"])
def test_stats_says_a_removed_session_is_still_served_and_sets_off_the_look(
    md, monkeypatch, removed
):
    """With the next look far off, stats names the removed session (its folder, or its log
    alone, which leaves sessions/ as it was) rather than "every session log indexed", and has
    the look drop it at once."""
    monkeypatch.setattr(removedlook, "LOOK_SECONDS", 3600)
    _remove(md, removed)

    async def scenario() -> list[str]:
        md.index.catching_up = None
        md.service._catching.look.start()
        loop = asyncio.get_running_loop()
        said = await loop.run_in_executor(None, _index_lines, md)
        assert await _until(lambda: "divorce lawyer" not in md.recall("purplefrog"))
        return said

    said = asyncio.run(scenario())
    assert said == [
        "index: 1 session removed from sessions/ while memoryd ran is still in the index: recall"
        " and search serve its records until memoryd drops it (it looks every 30 s, and now):",
        "  sessions/mm-sess0001/0.jsonl: removed",
    ]
    assert _index_lines(md) == ["index: every session log indexed"]


def _make(kind: str, path) -> None:
    if kind == "file":
        path.write_text("not a folder\n")
    else:
        os.mkfifo(path, 0o600)


@pytest.mark.parametrize("kind, what", [("file", "a file"), ("fifo", "a FIFO")])
def test_sessions_not_a_folder_at_a_start_is_said_once_and_in_stats(tmp_path, caplog, kind, what):
    home = Home(tmp_path / "home")
    m = Memoryd(home.root)
    said_meanwhile(m, "mm-sess0001", "the purplefrog lawyer is Smith")
    m.index.catch_up_all()
    m.close()
    shutil.rmtree(home.sessions)
    _make(kind, home.sessions)
    with caplog.at_level(logging.WARNING):
        m = Memoryd(home.root)  # a start: the index opened again, sessions/ listed
        try:
            m.index.catch_up_all()
            lines = _index_lines(m)
            _index_lines(m)  # stats lists sessions/ again: not said again
            out = m.recall("purplefrog")
        finally:
            m.close()
    warned = [r.getMessage() for r in caplog.records if "so no session log" in r.getMessage()]
    assert warned == [
        f"{home.sessions} is {what}, not a folder, so no session log under it is indexed now;"
        " the sessions the index holds stay in it as they were (bxctl memory stats counts them),"
        " and memoryd catches its logs up once it can list it"
    ]
    assert lines == [
        f"index: sessions/ is {what}, not a folder: the 1 session the index holds cannot be"
        " read, and recall and search serve what was indexed of it until sessions/ is a folder"
        " memoryd can list again"
    ]
    assert "the purplefrog lawyer is Smith" in out  # kept, as said


def test_sessions_a_link_to_nothing_drops_no_session(tmp_path):
    """A link at sessions/ whose target is gone (a disk not mounted): its logs are not gone, and
    come back with it; the index keeps their rows meanwhile, said."""
    home = Home(tmp_path / "home")
    log = home.session_log("mm-sess0001")
    log.parent.mkdir(parents=True, mode=0o700)
    append_session_record(log, UserRecord(time=T, content=PRIVATE))
    index = Index(home)
    index.open()
    try:
        index.catch_up_all()
        home.sessions.rename(tmp_path / "elsewhere")
        home.sessions.symlink_to(tmp_path / "not-mounted")
        index.catch_up_all()  # as at a start: the removed sessions are looked for
        state = indexstate.state(index)
        out = recall_on(index, "purplefrog", 10, session="s-test").text
    finally:
        index.close()
    assert state["sessions_folder"] == "a symbolic link to nothing"
    assert state["sessions_held"] == 1 and "removed_total" not in state
    assert "divorce lawyer" in out
