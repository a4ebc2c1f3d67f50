"""A forget's record (memory/.forgetting.json) stands from before its first write to its last
step, the merge of the index's term lists, which runs in steps while the forget still holds its
turn. Read while that forget runs, the record is no stop: bxctl memory stats (and scripts/stack
status, which prints its field) says nothing of it, and a preview or an import's dry run beside it
is never refused as "a forget stopped part way". A record no forget holds is a stop, and said as
one. The forget's steps are held at a hook, so the interleaving is forced, not timed."""

import json

import pytest

from memoryd.data import erasing, forget, unfinished
from memoryd.errors import AdminRefused
from memoryd.owner import datalock
from tests.memoryd.owner_data_harness import Memoryd

ENTRIES = ["The locker code is plover xanthic.", "Prefer metric units in answers."]
NOTES = ["The dentist is on Friday.", "The plumber comes on Tuesday."]


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    for entry in ENTRIES:
        m.call({"action": "add", "file": "memory", "text": entry})
    for note in NOTES:
        m.call({"action": "note", "text": note})
    m.say("aaa", "My locker code is plover xanthic 7731.", "ok")
    yield m
    m.close()


def _stats(m: Memoryd) -> dict:
    return json.loads(m.admin("stats", {"days": 30, "json": True}))


def _while_it_runs(monkeypatch, look):
    """look() run in the forget's last steps (settle's merge), the record standing and the
    forget holding its turn; its result kept."""
    seen: list = []
    real = forget.ftsmerge.merge_owed

    def merge_owed(index, on_writer):
        assert unfinished.read(index.home) is not None  # the record stands meanwhile
        seen.append(look())
        return real(index, on_writer)

    monkeypatch.setattr(forget.ftsmerge, "merge_owed", merge_owed)
    return seen


@pytest.mark.parametrize("ref", ["session:aaa:0", "memory.md:1", "note:1"])
def test_stats_says_no_stop_of_a_forget_that_runs(md, monkeypatch, ref):
    md.admin("stats", {"days": 30})  # memory.md:N names what stats printed
    seen = _while_it_runs(monkeypatch, lambda: (_stats(md), md.admin("stats", {"days": 30})))
    said = md.data("forget", id=ref)
    assert said["message"].startswith("forgot ")
    [(as_json, text)] = seen
    assert as_json["forget_stopped"] is None
    assert "stopped part way" not in text
    assert unfinished.read(md.home) is None


def test_a_preview_beside_a_forget_that_runs_is_not_refused_as_a_stop(md, monkeypatch):
    seen = _while_it_runs(monkeypatch, lambda: md.data("forget", id="note:0", dry_run=True))
    md.data("forget", id="session:aaa:0")
    [preview] = seen
    assert preview["texts"] == [NOTES[0]]
    assert "forget note:0" in preview["message"]


def test_an_import_dry_run_beside_a_forget_that_runs_is_not_refused_as_a_stop(md, monkeypatch):
    made = md.data("export")
    name = made["path"].rsplit("/", 1)[-1]
    seen = _while_it_runs(monkeypatch, lambda: md.data("import", name=name, dry_run=True))
    md.data("forget", id="session:aaa:0")
    [dry] = seen
    assert "stopped part way" not in dry["message"]


def test_a_record_no_forget_holds_is_said_as_a_stop_and_not_while_it_is_finished(md, monkeypatch):
    real = erasing.scrub_everywhere

    def killed(*_args, **_kwargs):
        raise Killed

    monkeypatch.setattr(erasing, "scrub_everywhere", killed)
    with pytest.raises(Killed):
        md.admin("forget", {"id": "note:1"})
    monkeypatch.setattr(erasing, "scrub_everywhere", real)
    stopped = _stats(md)["forget_stopped"]
    assert stopped.startswith("a forget of note:1 ") and "stopped part way" in stopped
    with pytest.raises(AdminRefused, match="a forget stopped part way is not finished"):
        md.admin("forget", {"id": "note:0", "dry_run": True})
    # Run again, it finishes: while it runs, its record is no stop.
    seen = _while_it_runs(monkeypatch, lambda: _stats(md)["forget_stopped"])
    md.data("forget", id="note:1")
    assert seen == [None]
    assert _stats(md)["forget_stopped"] is None


def test_no_forget_begins_while_its_record_is_looked_at():
    turns = datalock.DataTurns()
    began: list[str] = []

    def look() -> str:
        # the lock a turn is taken by is held: a forget cannot begin between the look at its
        # turn and the read of its record
        assert not turns._lock.acquire(blocking=False)
        return "stopped"

    assert turns.unless_running("forget", look) == "stopped"
    with turns.turn("forget"):
        began.append("forget")
        assert turns.unless_running("forget", look) is None
    assert began == ["forget"]
