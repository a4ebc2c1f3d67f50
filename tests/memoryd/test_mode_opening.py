"""A recall mode changed since memoryd last ran: once its tables are built, recall still answers
by the spec's search, saying the mode is being prepared, while the mode's Live starts (hybrid's
embedding child: about a second), never refused as an index that is not open; a Live that fails
to start leaves nothing pending."""

import threading

import pytest

from memoryd.errors import IndexDamaged
from memoryd.index.index import Index
from memoryd.modes import builtin
from tests.memoryd.test_mode_prepare import _spec_index
from tests.recalling import recall_on


def test_recall_answers_by_the_spec_while_the_live_starts(tmp_path, monkeypatch):
    home = _spec_index(tmp_path)
    started, release = threading.Event(), threading.Event()
    opened = builtin.Context.open

    def slow_open(mode, connect, name):
        started.set()
        release.wait(30)
        return opened(mode, connect, name)

    monkeypatch.setattr(builtin.Context, "open", slow_open)
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    preparing = threading.Thread(target=index.prepare_mode)
    try:
        preparing.start()
        assert started.wait(30)
        for _ in range(3):
            meanwhile = recall_on(index, "launch window", session="mm-ask").text
            assert meanwhile.startswith("[1] ") and "is being prepared" in meanwhile
        assert index.mode_pending
        release.set()
        preparing.join(30)
        assert not index.mode_pending
        assert recall_on(index, "launch window", session="mm-ask").text.startswith("[1] ")
    finally:
        release.set()
        preparing.join(30)
        index.close()


def test_a_live_that_fails_to_start_leaves_nothing_pending(tmp_path, monkeypatch):
    home = _spec_index(tmp_path)

    def failing_open(mode, connect, name):
        raise OSError("no embedding child")

    monkeypatch.setattr(builtin.Context, "open", failing_open)
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        with pytest.raises(OSError, match="no embedding child"):
            index.prepare_mode()
        assert not index.mode_pending
        with pytest.raises(IndexDamaged, match="not open"):
            recall_on(index, "launch window", session="mm-ask")
    finally:
        index.close()
