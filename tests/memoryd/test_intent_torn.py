"""A write intent (memory/.writing.json) torn by a kill while it was written: the write it was for
never reached the files, so the start and the next write remove it, in a log line naming it; an
intent that parses, whatever it holds, is never removed (memory/tornintent.py)."""

import json
import logging
import os

import pytest

from memoryd.errors import UntrustedSession
from memoryd.memory import writeintent
from tests.callargs import loose_call
from tests.memoryd.store_helpers import CLEAN, TAINTED, args, fill, new_store, snapshot


def whole_intent(store) -> bytes:
    """The intent memoryd writes for an add to memory.md, as bytes."""
    edit = {"session": CLEAN["session"], "action": "add", "to": "memory.md", "before": ["a"]}
    return json.dumps({"fields": {**edit, "after": ["a", "b é"]}}, ensure_ascii=False).encode()


@pytest.mark.parametrize("cut", [0, 1, 17, -3, -1])
def test_a_torn_intent_is_removed_at_start_and_said(tmp_path, caplog, cut):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    data = whole_intent(store)
    path = writeintent.intent_path(store.home)
    path.write_bytes(data[:cut] if cut >= 0 else data[: len(data) + cut])
    before = snapshot(store)
    caplog.set_level(logging.WARNING, logger="memoryd.memory.tornintent")
    restarted = new_store(tmp_path)
    assert not os.path.lexists(path)
    assert f"{path}: removed a write intent that does not parse" in caplog.text
    after = snapshot(restarted)
    assert {k: v for k, v in after.items() if k != ".writing.json"} == {
        k: v for k, v in before.items() if k != ".writing.json"
    }  # nothing else changed: no hand edit, no recovered write


def test_a_torn_intent_is_removed_before_the_next_write_even_a_refused_one(tmp_path, caplog):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    path = writeintent.intent_path(store.home)
    path.write_bytes(whole_intent(store)[:30])
    caplog.set_level(logging.WARNING, logger="memoryd.memory.tornintent")
    with pytest.raises(UntrustedSession):  # refused before any intent of its own is written
        store.call(*loose_call(args(action="remove", file="memory", old="a"), **TAINTED))
    assert not os.path.lexists(path)
    assert str(path) in caplog.text


@pytest.mark.parametrize(
    "data",
    [b"{}", b"[]", b"7", b'"text"', b'{"fields": {"to": "nowhere"}}', b'{"owner": "mine"}'],
)
def test_an_intent_that_parses_is_never_removed(tmp_path, data):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    path = writeintent.intent_path(store.home)
    path.write_bytes(data)
    new_store(tmp_path).detect_hand_edits()
    assert path.read_bytes() == data


def test_a_whole_intent_of_a_write_that_stood_is_still_acted_on(tmp_path):
    store = new_store(tmp_path)
    fill(store, "memory", ["a"])
    path = writeintent.intent_path(store.home)
    path.write_bytes(whole_intent(store))
    store.home.memory_file("memory.md").write_text("a\n§\nb é\n")
    restarted = new_store(tmp_path)
    last = restarted.journal.records()[-1]
    assert last.recovered is True and last.after == ["a", "b é"]
    assert not os.path.lexists(path)
