"""A session folder holding a log but no baseline (a restore lays a session's log alone, or the
owner removed the baseline): every message to it says it cannot be continued and what to do,
never "start it first" (a start is refused: the folder stands)."""

import asyncio

import pytest

from loopd_shim.errors import SessionExists, SessionUnknown
from loopd_shim.service import LoopService
from loopd_shim.sessions import LOG, SessionStore
from proto.messages import OwnerMessage


@pytest.fixture
def restored(tmp_path):
    sessions = tmp_path / "sessions"
    (sessions / "old1").mkdir(parents=True, mode=0o700)
    (sessions / "old1" / LOG).write_text('{"type": "user", "content": "hi"}\n')
    return SessionStore(sessions)


def test_a_message_to_a_restored_session_says_it_cannot_be_continued(restored, tmp_path):
    service = LoopService(restored, tmp_path / "system.md", None, None)
    with pytest.raises(SessionUnknown) as said:
        asyncio.run(service.owner_message(OwnerMessage(session="old1", content="still there?")))
    text = str(said.value)
    assert "cannot be continued" in text and "start a new session" in text
    assert "start it first" not in text and "\n" not in text


def test_its_baseline_is_refused_the_same_way(restored):
    with pytest.raises(SessionUnknown, match="has a log but no baseline"):
        restored.baseline("old1")


def test_a_session_never_started_is_still_told_to_start(tmp_path):
    store = SessionStore(tmp_path / "sessions")
    with pytest.raises(SessionUnknown, match="start it first with: loopd-shim start"):
        store.require("new1")


def test_the_start_it_would_need_is_refused(restored):
    with pytest.raises(SessionExists):
        restored.create("old1", "system", [])
