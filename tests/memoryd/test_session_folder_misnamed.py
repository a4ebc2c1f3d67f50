"""A session log in a folder whose name is not a session id (a copy a file manager made: "mm-abc
(copy)", "mm-abc.bak") is never indexed, as before, but no longer silently: memoryd's log names it
once (not at every listing: every stats lists the sessions) and `bxctl memory stats` lists it
"left aside" with why, until the folder is renamed or removed (index/newindex.py,
owner/indexstate.py)."""

import asyncio
import logging
import shutil

import pytest

from memoryd.index import newindex
from memoryd.writer import WRITE
from tests.memoryd.owner_data_harness import Memoryd

COPIES = ["mm-abc123 (copy)", "mm-abc123.bak", "line\nbreak"]
LOG = b'{"type":"user","time":"2026-12-01T10:00:00Z","content":"the zanzibar invoice is due"}\n'


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _copy(md: Memoryd, name: str) -> None:
    folder = md.home.sessions / name
    folder.mkdir(parents=True, mode=0o700)
    (folder / "0.jsonl").write_bytes(LOG)


def _said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "not a session id" in r.getMessage()]


def test_a_misnamed_session_folder_is_named_once_in_the_log_and_in_stats(md, caplog):
    for name in COPIES:
        _copy(md, name)
    (md.home.sessions / "notes.txt").write_text("the owner's own file")  # holds no log: not named
    with caplog.at_level(logging.WARNING, logger="memoryd.index.newindex"):
        asyncio.run(asyncio.wait_for(md.service.catch_up(), 10))
        shown = md.admin("stats", "{}")
        md.admin("stats", "{}")
    said = _said(caplog)
    assert said == [
        f"session log {md.home.sessions / name / '0.jsonl'}: skipped: {newindex.MISNAMED}"
        for name in sorted(COPIES)
    ]
    assert "every session log indexed" not in shown
    assert "index: 3 session logs left aside" in shown
    for name in ("mm-abc123 (copy)", "mm-abc123.bak", "line\\x0abreak"):
        assert f"  sessions/{name}/0.jsonl: {newindex.MISNAMED}" in shown.splitlines()
    md.service._writer.submit(WRITE, md.index.reindex).result()
    assert "invoice is due" not in md.recall("zanzibar invoice")  # never indexed as it is
    # Renamed to a session id, it is indexed, and stats names it no more.
    for name in COPIES:
        shutil.rmtree(md.home.sessions / name)
    _copy(md, "mm-abc123")
    asyncio.run(asyncio.wait_for(md.service.catch_up(), 10))
    assert "index: every session log indexed" in md.admin("stats", "{}")
    assert "invoice is due" in md.recall("zanzibar invoice")


def test_many_misnamed_folders_are_named_a_few_then_counted(md, caplog):
    for n in range(8):
        _copy(md, f"mm-abc{n} (copy)")
    skipped: dict[str, str] = {}
    with caplog.at_level(logging.WARNING, logger="memoryd.index.newindex"):
        newindex.indexable_sessions(md.home, skipped)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == newindex.SKIPPED_SAID + 1 and len(skipped) == 8
    assert said[-1] == (
        f"{md.home.sessions}: 3 more session logs in folders not named by a session id skipped"
        " as well (bxctl memory stats names them)"
    )
