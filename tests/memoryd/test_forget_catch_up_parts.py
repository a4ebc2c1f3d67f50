"""forget catches the index up with the session logs first, a part per writer job: a write that
comes meanwhile runs between two parts, never behind the whole backlog a start leaves, and the
record only the log held is still found and forgotten. Inside the forget (on the writer) only a
part's worth is caught up: more than that is refused before anything is forgotten."""

import json
import shutil

import pytest

from memoryd.data import forget
from memoryd.errors import AdminRefused
from memoryd.index import indexer
from memoryd.journal import forgotten
from memoryd.writer import WRITE
from proto.messages import ToolCall
from proto.records import AssistantRecord, UserRecord, append_session_record
from tests.callargs import loose_call
from tests.memoryd.owner_data_harness import Memoryd, T, _apply_call
from tests.memoryd.store_helpers import CLEAN

SECRET = "Locker code is 4711."
ADD = {"action": "add", "file": "memory", "text": SECRET}
OTHER = {"action": "add", "file": "memory", "text": "The bins go out on Tuesday."}
PART = 2  # records a part reads here, so a few records make a backlog of several parts


@pytest.fixture
def md(tmp_path, monkeypatch):
    monkeypatch.setattr(indexer, "PART_RECORDS", PART)
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path / "home", ignore_errors=True)


def logged(m: Memoryd, session: str, records: int, call: dict | None = None) -> None:
    """Records in a session's log that the index has not read yet (as after a start); the last
    one the memory call that wrote call, when given."""
    path = m.home.session_log(session)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    for n in range(records):
        append_session_record(path, UserRecord(time=T, content=f"Said {n} in {session}."))
    if call is not None:
        tool = ToolCall(id="c1", name="memory", arguments=json.dumps(call))
        append_session_record(path, AssistantRecord(time=T, tool_calls=[tool]))


def parts_seen(m: Memoryd, monkeypatch, on_first=None) -> list[str]:
    """Every part of a catch-up, in the order the writer ran it; on_first runs in the first."""
    events: list[str] = []
    real = m.index.catch_up_session_part

    def part(session: str):
        if not events and on_first is not None:
            on_first(events)
        done = real(session)
        events.append(f"part {session}")
        return done

    monkeypatch.setattr(m.index, "catch_up_session_part", part)
    return events


def test_a_write_that_comes_during_forgets_catch_up_runs_between_its_parts(md, monkeypatch):
    md.call(ADD)
    logged(md, "s-a", 4 * PART)
    logged(md, "s1", 3 * PART, call=ADD)  # the call's record, past three parts of its log
    logged(md, "s-b", 4 * PART)
    applied = []

    def memory_call(events: list[str]) -> None:
        def write() -> str:
            out = _apply_call(md.service, *loose_call(json.dumps(OTHER), **CLEAN))
            events.append("write")
            return out

        applied.append(md.service._writer.submit(WRITE, write))

    events = parts_seen(md, monkeypatch, memory_call)
    done = md.data("forget", id="memory.md:1")
    assert applied[0].result()
    assert events.index("write") == 1  # right after the part running when it came
    assert len(events) > 10 and events[-1].startswith("part")  # the catch-up went on after it
    assert "1 more session record" in done["message"]
    assert forgotten.session_key("s1", 3 * PART) in forgotten.keys(md.home)
    with md.index.reader() as conn:
        rows = [row for (row,) in conn.execute("SELECT text FROM hits")]
    assert not any(SECRET in row for row in rows)
    assert "Said 7 in s-b." in rows  # the rest of the backlog is in the index
    assert md.home.memory_file("memory.md").read_text() == OTHER["text"] + "\n"


@pytest.mark.parametrize(
    "sessions, seconds, parts, left",
    [
        ([4 * PART, 4 * PART], indexer.PART_SECONDS, 1, "2 sessions"),  # a backlog: one part
        ([0, 1, 1], 0.0, 1, "2 sessions"),  # many small logs: a part's worth of time
    ],
)
def test_a_forget_run_on_the_writer_with_a_backlog_left_is_refused_after_a_part(
    md, monkeypatch, sessions, seconds, parts, left
):
    md.call(ADD)
    for n, records in enumerate(sessions):
        logged(md, f"s{n}", records, call=ADD if n == 0 else None)
    held = md.home.memory_file("memory.md").read_bytes()
    events = parts_seen(md, monkeypatch)
    monkeypatch.setattr(indexer, "PART_SECONDS", seconds)
    job = md.service._writer.submit(WRITE, forget.run, md.service, "memory.md:1")
    with pytest.raises(AdminRefused) as e:
        job.result()
    said = str(e.value)
    assert said == (
        f"refused: the index is still catching up with {left}; nothing was forgotten: "
        "try again in a moment"
    )
    assert len(events) == parts
    assert md.home.memory_file("memory.md").read_bytes() == held
    assert forgotten.keys(md.home) == set()
    monkeypatch.setattr(indexer, "PART_SECONDS", 0.2)
    done = md.data("forget", id="memory.md:1")  # prepare catches the rest up, a part a job
    assert "1 more session record" in done["message"]
    assert SECRET not in md.home.memory_file("memory.md").read_text()
