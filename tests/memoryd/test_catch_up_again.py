"""What the catch-up cannot index now it tries again: memory/forgotten.jsonl that is a folder, a
FIFO or a link stops it with one log line naming the file and what is wrong (once, however often
it is tried), and once the owner removes it the session records said meanwhile are indexed
without a restart. notes.md is caught up on its own: a failure there does not keep the logs
out."""

import asyncio
import errno
import json
import logging
import os
import shutil
import sqlite3
import time

import pytest

from memoryd import catchup
from memoryd.errors import SessionNotIndexed
from memoryd.home import Home
from memoryd.index import indexer, newindex
from memoryd.index.sessionrows import LogState, Part, session_rows
from memoryd.index.settings import Settings
from proto.messages import SessionUpdated
from proto.records import UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T


@pytest.fixture
def md(tmp_path, monkeypatch):
    monkeypatch.setattr(catchup, "RETRY_FIRST", 0.05)
    monkeypatch.setattr(catchup, "RETRY_MOST", 0.1)
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def said_meanwhile(m: Memoryd, session: str, text: str) -> None:
    """A record in a session's log that the index has not read yet."""
    path = m.home.session_log(session)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    append_session_record(path, UserRecord(time=T, content=text))


def make(kind: str, path) -> None:
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    else:
        path.symlink_to(path.parent / "elsewhere.jsonl")


async def until(check, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def stopped_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "catch-up stopped" in r.getMessage()]


@pytest.mark.parametrize(
    "kind, what",
    [
        ("folder", "is not a file"),
        ("fifo", "is a FIFO, not a regular file"),
        ("link", "is a symbolic link, which is not followed"),
    ],
)
def test_the_catch_up_names_forgotten_jsonl_and_resumes_once_it_is_fixed(md, caplog, kind, what):
    said_meanwhile(md, "s-two", "The boat is moored at pier nine.")
    bad = md.home.memory / "forgotten.jsonl"
    make(kind, bad)

    async def scenario() -> int:
        task = asyncio.create_task(md.service.catch_up())
        assert await until(lambda: stopped_lines(caplog))
        await asyncio.sleep(0.4)  # tried again a few times meanwhile
        # Every log was tried: not "catching up" forever, but the log named as not indexed.
        assert not md.service.caught_up.is_set() and md.index.catching_up is None
        assert md.index.not_indexed == {"s-two": f"{bad} {what}"}
        bad.unlink() if kind != "folder" else bad.rmdir()  # the owner fixes it
        return await asyncio.wait_for(task, 10)

    with caplog.at_level(logging.INFO, logger="memoryd"):
        added = asyncio.run(scenario())
    lines = stopped_lines(caplog)
    assert len(lines) == 1, lines  # said once, not at every try
    assert f"session log {md.home.session_log('s-two')}: {bad} {what}" in lines[0]
    assert "NotRegular" not in lines[0] and "1 session log left" in lines[0]
    assert added == 1 and md.service.caught_up.is_set()
    assert md.index.catching_up is None and md.index.not_indexed == {}
    assert "pier nine" in md.recall("boat moored pier")


def test_a_session_updated_that_failed_is_caught_up_once_the_cause_is_gone(md, caplog):
    bad = md.home.memory / "forgotten.jsonl"
    bad.mkdir()
    said_meanwhile(md, "s-three", "The kettle is in the shed.")

    async def scenario() -> None:
        with pytest.raises(
            SessionNotIndexed, match=f"session s-three cannot be indexed now: {bad}"
        ):
            await md.service.on_loop(SessionUpdated(session="s-three"))
        await asyncio.sleep(0.2)
        bad.rmdir()
        assert await until(lambda: "kettle" in md.recall("kettle shed"))

    with caplog.at_level(logging.INFO, logger="memoryd"):
        asyncio.run(scenario())
    assert any(str(bad) in line for line in stopped_lines(caplog))


def test_notes_md_failing_does_not_keep_the_logs_out_and_is_tried_again(md, caplog, monkeypatch):
    said_meanwhile(md, "s-four", "The ladder leans on the barn.")
    real, tries = md.index.catch_up_notes, []

    def notes(*args) -> int:
        tries.append(1)
        if len(tries) == 1:
            raise OSError(errno.ENOSPC, "No space left on device", str(md.home.memory))
        return real(*args)

    monkeypatch.setattr(md.index, "catch_up_notes", notes)
    with caplog.at_level(logging.INFO, logger="memoryd"):
        asyncio.run(asyncio.wait_for(md.service.catch_up(), 10))
    assert len(tries) == 2 and md.service.caught_up.is_set()
    assert "ladder" in md.recall("ladder barn")
    (line,) = stopped_lines(caplog)
    assert f"memory/notes.md: {md.home.memory}: No space left on device" in line
    assert "0 session logs and notes.md left" in line


def test_a_log_memoryd_cannot_read_is_reported_not_caught_up_forever(md, monkeypatch):
    """A log memoryd may not read (say it was copied in as another user) stays out of the index
    until it can be read. Recall then says so, and so does stats with the log's name and why;
    recall never says "catching up" after every log was tried. When the owner gives the log back
    (chmod), a turn's end picks it up and the notes go."""
    md.say("s-fine", "The spare key is under the blue pot.")
    said_meanwhile(md, "s-locked", "The wifi password is on the fridge.")
    said_meanwhile(md, "s-fine2", "The bins go out on Tuesday.")
    real, locked = md.index.catch_up_session_part, [True]

    def part(session: str):
        if session == "s-locked" and locked[0]:
            path = md.home.session_log(session)
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(session)

    monkeypatch.setattr(md.index, "catch_up_session_part", part)
    md.index.catching_up = (0, 3)  # as a start sets it

    async def scenario() -> tuple[str, str, str, str]:
        task = asyncio.create_task(md.service.catch_up(["s-fine", "s-locked", "s-fine2"]))
        assert await until(lambda: md.index.not_indexed)
        assert md.index.catching_up is None and not task.done()
        answer, stats_text = md.recall("bins Tuesday"), md.admin("stats", "{}")
        stats_json = json.loads(md.admin("stats", '{"json": true}'))["index"]
        locked[0] = False
        md.service._catching.nudge()  # a turn ended
        await asyncio.wait_for(task, 10)
        return answer, stats_text, stats_json, md.recall("wifi password fridge")

    answer, stats_text, stats_json, after = asyncio.run(scenario())
    assert "bins go out" in answer and "catching up" not in answer
    assert answer.endswith(
        "\n(1 session log not in the index yet: memoryd tries again; bxctl memory stats says why)"
    )
    assert "  sessions/s-locked/0.jsonl: Permission denied" in stats_text
    assert "index: 1 session log not indexed" in stats_text
    assert stats_json == {
        "catching_up": None,
        "not_indexed_total": 1,
        "not_indexed": [{"log": "sessions/s-locked/0.jsonl", "problem": "Permission denied"}],
        "left_aside_total": 0,
        "left_aside": [],
    }
    assert "wifi password" in after and "not in the index" not in after
    assert md.index.not_indexed == {} and md.service.caught_up.is_set()
    assert "index: every session log indexed" in md.admin("stats", "{}")
    partial = [json.loads(line).get("partial") for line in _recall_log(md)]
    assert partial[-2:] == [True, None]


def _recall_log(md) -> list[str]:
    lines: list[str] = []
    for path in sorted((md.home.memory / "recalls").glob("*.jsonl")):
        lines += path.read_text().splitlines()
    return lines


def test_a_reindex_leaves_out_a_log_it_cannot_read_and_the_catch_up_takes_it_later(
    md, monkeypatch, caplog
):
    """bxctl reindex is the owner's way out of a damaged index: one log memoryd may not read
    must not fail it. The log is left out, said in one line naming it, named by stats as not
    indexed, and indexed once it can be read."""
    md.say("s-open", "The spare key is under the blue pot.")
    md.say("s-shut", "The wifi password is on the fridge.")
    real, shut = indexer.index_session_part, [True]

    def part(conn, home, session, *args, **kwargs):
        if session == "s-shut" and shut[0]:
            path = home.session_log(session)
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(conn, home, session, *args, **kwargs)

    monkeypatch.setattr(indexer, "index_session_part", part)
    # The build reads every log (here in process; memoryd runs it in a child): s-shut is out.
    built = md.index.build_new()
    assert (built.logs, built.records) == (1, 1)
    with sqlite3.connect(built.path) as conn:
        held = conn.execute("SELECT count(*) FROM sources WHERE session = 's-shut'").fetchone()
    conn.close()
    os.unlink(built.path)
    assert held == (0,)

    async def scenario() -> tuple[tuple[int, int, int], str]:
        done = await md.service._reindex()
        assert await until(lambda: "s-shut" in md.index.not_indexed)
        said = md.recall("wifi password")
        shut[0] = False
        md.service._catching.nudge()
        assert await until(lambda: not md.index.not_indexed)
        return done, said

    with caplog.at_level(logging.INFO, logger="memoryd"):
        (logs, records, _), said = asyncio.run(scenario())
    assert (logs, records) == (1, 1)
    assert "no matches" in said and "1 session log not in the index yet" in said
    log = md.home.session_log("s-shut")
    lines = [
        r.getMessage() for r in caplog.records if "left out of the new index" in r.getMessage()
    ]
    assert lines and all(
        line == f"session log {log}: left out of the new index: Permission denied" for line in lines
    )
    assert not [r for r in caplog.records if r.exc_info]  # no traceback
    assert "wifi password" in md.recall("wifi password")


def test_a_turn_whose_log_cannot_be_read_gets_one_line_and_is_caught_up_later(md, monkeypatch):
    """loopd's session_updated for a log memoryd may not read: one line saying so (never
    "internal error" with a traceback in memoryd's log), and the records are indexed once the
    log can be read."""
    said_meanwhile(md, "s-mine", "The gate code is 1234.")
    real, shut = md.index.catch_up_session_part, [True]

    def part(session: str):
        if shut[0]:
            raise PermissionError(errno.EACCES, "Permission denied", "0.jsonl")
        return real(session)

    monkeypatch.setattr(md.index, "catch_up_session_part", part)

    async def scenario() -> str:
        with pytest.raises(SessionNotIndexed) as refused:
            await md.service.on_loop(SessionUpdated(session="s-mine"))
        shut[0] = False
        assert await until(lambda: "gate code" in md.recall("gate code"))
        return str(refused.value)

    said = asyncio.run(scenario())
    assert said == (
        "the new records of session s-mine cannot be indexed now: sessions/s-mine/0.jsonl:"
        " Permission denied; they are indexed once that is mended (bxctl memory stats names"
        " the log)"
    )


def test_a_log_that_cannot_be_read_is_an_error_of_the_read_not_damage(tmp_path, caplog):
    """Reading rows from a log that cannot be opened raises, so that the catch-up keeps it for
    later; it is never taken as read to its end with a warning at every try."""
    folder = tmp_path / "0.jsonl"
    folder.mkdir()  # opening it fails as an unreadable file does
    part = Part()
    with pytest.raises(OSError), caplog.at_level(logging.WARNING):
        list(session_rows(folder, "s", LogState(), Settings(), lambda n: None, part))
    assert not part.done and "skipped" not in caplog.text


def _damaged(m, session: str) -> None:
    said_meanwhile(m, session, "The boiler was serviced in May.")
    with open(m.home.session_log(session), "ab") as f:
        f.write(b'{"type": "user", "content": 12}\n')  # not a record
    said_meanwhile(m, session, "The roof was fixed in June.")


@pytest.mark.parametrize(
    "make_odd, why",
    [
        (lambda m, s: make("fifo", m.home.session_log(s)), "a FIFO, not a regular file"),
        (lambda m, s: make("link", m.home.session_log(s)), "a symbolic link, which is not"),
        (_damaged, "damaged at record 1: "),
    ],
    ids=["fifo", "link", "damaged record"],
)
def test_stats_never_says_every_log_is_indexed_while_one_is_left_aside(md, make_odd, why):
    """A log memoryd will not read (a FIFO, a link) or stops reading at a damaged record is
    named by stats with why, until it changes; "every session log indexed" is said only when
    true."""
    md.say("s-fine", "The spare key is under the blue pot.")
    md.home.session_log("s-odd").parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    make_odd(md, "s-odd")
    asyncio.run(asyncio.wait_for(md.service.catch_up(), 10))
    shown = md.admin("stats", "{}")
    assert "every session log indexed" not in shown
    assert "index: 1 session log left aside" in shown
    [line] = [line for line in shown.splitlines() if line.startswith("  sessions/s-odd/0.jsonl: ")]
    assert why in line
    # The owner mends it (a regular log in its place): read again, and stats says so.
    md.home.session_log("s-odd").unlink()
    said_meanwhile(md, "s-odd", "The fence was painted in July.")
    asyncio.run(asyncio.wait_for(md.service.catch_up(), 10))
    assert "index: every session log indexed" in md.admin("stats", "{}")
    assert "fence" in md.recall("fence painted")


def test_many_skipped_logs_are_named_a_few_then_counted(tmp_path, caplog):
    """A listing names the first skipped logs one by one and the rest in one line: a home of
    many links does not fill memoryd's log at every start and reindex."""
    home = Home(tmp_path / "home")
    for n in range(8):
        home.session_log(f"s-{n}").parent.mkdir(parents=True, mode=0o700)
        make("link", home.session_log(f"s-{n}"))
    skipped: dict[str, str] = {}
    with caplog.at_level(logging.WARNING):
        assert newindex.indexable_sessions(home, skipped) == []
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == newindex.SKIPPED_SAID + 1 and len(skipped) == 8
    assert (
        said[-1]
        == f"{home.sessions}: 3 more session logs skipped as well (bxctl memory stats names them)"
    )


def test_stats_names_a_log_with_records_past_its_last_finished_turn_until_they_are_read(md):
    # The spec reads a log when its session's turn ends; a turn that ended in a tool call, or an
    # owner's message not answered yet, waits for the next one. stats says so meanwhile.
    md.say("talk", "The spare key is under the blue flowerpot.", "Noted.")
    assert "index: every session log indexed" in md.admin("stats", "{}")
    # a session just begun: its log is there, empty, and holds nothing unread
    md.home.session_log("fresh").parent.mkdir(mode=0o700)
    md.home.session_log("fresh").touch(mode=0o600)
    assert "index: every session log indexed" in md.admin("stats", "{}")
    append_session_record(md.home.session_log("talk"), UserRecord(time=T, content="And the shed?"))
    shown = md.admin("stats", "{}")
    assert "every session log indexed" not in shown
    assert (
        "index: 1 session log holds records written since their session's last finished turn"
    ) in shown
    assert "  sessions/talk/0.jsonl: not read yet" in shown
    assert json.loads(md.admin("stats", {"json": True}))["index"]["unread_total"] == 1
    md.service._writer.submit(0, md.index.catch_up_session, "talk").result()  # the turn ends
    assert "index: every session log indexed" in md.admin("stats", "{}")
