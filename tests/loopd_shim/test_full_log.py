"""A session log at its size limit (a file size limit, a disk all but full): every call still
gets an answer true to what it did and a line in the log.

loopd-shim runs here under a real RLIMIT_FSIZE, lowered for the test's own process while a turn
runs and put back after (the log is filled first, so the limit stays far above anything else the
process writes). A turn the log cannot take a line for each call of is refused before anything
runs; a result the log cannot take reaches the turn saying so, and the log holds a line saying the
call ran, with its label; a call left no room is not run; a line that cannot be written even so is
written before the session's next record.
"""

import contextlib
import json
import resource

import pytest

from loopd_shim import logroom
from loopd_shim.replyroom import TurnReply
from proto.client import RemoteError
from proto.frames import MAX_FRAME
from proto.labels import Label
from proto.messages import AssistantMessage, OwnerMessage, SessionStart, ToolCall, ToolResultOut
from proto.records import AssistantRecord, now_rfc3339, read_records
from tests.loopd_shim.conftest import BROKER_ANSWERS, FakeBroker

PUBLIC = Label(klass="public", untrusted=False)
BASE = 512 * 1024  # what the log holds before the turn: the limit stays above this


@contextlib.contextmanager
def file_size_limit(limit: int):
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def fill(log, size: int) -> None:
    """Owner records up to exactly size bytes of log."""
    empty = len(json.dumps({"type": "user", "time": now_rfc3339(), "content": ""}) + "\n")
    with open(log, "a") as f:
        while f.tell() + 2 * empty + 4096 < size:
            f.write(
                json.dumps({"type": "user", "time": now_rfc3339(), "content": "x" * 4000}) + "\n"
            )
        f.write(
            json.dumps(
                {"type": "user", "time": now_rfc3339(), "content": "y" * (size - f.tell() - empty)}
            )
            + "\n"
        )
    assert log.stat().st_size == size


def assistant_bytes(calls) -> int:
    return logroom.line_bytes(AssistantRecord(time=now_rfc3339(), tool_calls=calls))


def started(stack, session):
    stack.ask(SessionStart(session=session))
    log = stack.config.sessions / session / "0.jsonl"
    fill(log, BASE)
    return log


def turn_records(log):
    return [line.record for line in read_records(log, BASE)]


def note(call_id="m1"):
    text = json.dumps({"action": "note", "text": "The boiler code is 7741."})
    return ToolCall(id=call_id, name="memory", arguments=text)


def fetch(call_id="f1"):
    return ToolCall(id=call_id, name="http_fetch", arguments='{"url": "https://example.org/big"}')


def test_a_turn_the_log_has_no_room_for_is_refused_before_any_call_runs(stack):
    log = started(stack, "s-full")
    calls = [note()]
    # Room for the assistant record, not for a line for its call's result.
    with file_size_limit(BASE + assistant_bytes(calls) + 40), pytest.raises(RemoteError) as refused:
        stack.ask(AssistantMessage(session="s-full", tool_calls=calls))
    said = str(refused.value)
    assert said.startswith(f"session s-full: {log} has no room for this turn (")
    assert (
        "bytes left under the file size limit); the turn was not recorded, and no call of it ran"
        in said
    )
    assert stack.broker.requests == []
    assert log.stat().st_size == BASE


def test_an_applied_write_whose_result_the_log_cannot_take_is_answered_as_run(stack, monkeypatch):
    log = started(stack, "s-write")
    monkeypatch.setitem(BROKER_ANSWERS, "memory", (True, "noted " + "n" * 10_000, "private", False))
    monkeypatch.setitem(BROKER_ANSWERS, "http_fetch", (True, "<p>" + "p" * 10_000, "public", True))
    calls = [note(), fetch()]
    room = assistant_bytes(calls) + logroom.reserve(calls[0]) + logroom.reserve(calls[1]) + 100
    with file_size_limit(BASE + room):
        reply = stack.ask(AssistantMessage(session="s-write", tool_calls=calls))
    said = "): the call ran and this is its answer; the log holds a line saying it ran]\n"
    wrote_out, fetched_out = (r.output for r in reply.results)
    assert [r.ok for r in reply.results] == [True, True]
    # The note's whole result would leave no room for a line for the fetch after it.
    assert wrote_out.startswith("[the session log could not record this result (")
    assert wrote_out.endswith(
        " bytes left under the file size limit, too few for it and a line for each call after"
        f" it{said}noted " + "n" * 10_000
    )
    assert fetched_out == (
        f"[the session log could not record this result (File too large{said}<p>" + "p" * 10_000
    )
    assert [r.tool for r in stack.broker.requests] == ["memory", "http_fetch"]
    assistant, wrote, fetched = turn_records(log)
    assert [c.id for c in assistant.tool_calls] == ["m1", "f1"]
    assert (wrote.call_id, wrote.klass, wrote.untrusted) == ("m1", "private", False)
    assert wrote.output.startswith(
        "[the call ran (ok, 10,006 bytes of output), but the session log could not take its"
        " result: "
    )
    # The fetched page's label stays in the log, so the session's taint is worked out as before.
    assert (fetched.call_id, fetched.klass, fetched.untrusted) == ("f1", "public", True)
    assert fetched.output == (
        "[the call ran (ok, 10,003 bytes of output), but the session log could not take its"
        " result: File too large]"
    )


def test_a_result_that_would_take_the_room_of_the_calls_after_it_is_logged_as_a_line(
    stack, monkeypatch
):
    log = started(stack, "s-tight")
    calls = [ToolCall(id="r1", name="recall", arguments='{"query": "launch"}'), note()]
    share = logroom.reserve(calls[1])
    monkeypatch.setitem(BROKER_ANSWERS, "recall", (True, "r" * (2 * share), "private", False))
    with file_size_limit(BASE + assistant_bytes(calls) + 3 * share):
        reply = stack.ask(AssistantMessage(session="s-tight", tool_calls=calls))
    assert [r.tool for r in stack.broker.requests] == ["recall", "memory"]
    recalled, noted = reply.results
    assert recalled.ok and recalled.output.endswith("]\n" + "r" * (2 * share))
    assert recalled.output.startswith("[the session log could not record this result (")
    assert (
        " bytes left under the file size limit, too few for it and a line for each call after it)"
    ) in recalled.output
    assert (noted.ok, noted.output) == (True, "noted")
    assistant, first, second = turn_records(log)
    assert first.call_id == "r1" and first.output.startswith("[the call ran (ok, ")
    assert (second.call_id, second.output) == ("m1", "noted")


@pytest.fixture
def squeezing(monkeypatch):
    """The fake broker, asked for squeeze, first lowers the file size limit to what the named
    log holds: the disk filled by another while the call ran. Patched before the fakes serve."""
    held = {}
    handle = FakeBroker.handle

    async def squeezed(self, message):
        if message.request.tool == "squeeze":
            hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
            limit = held["log"].stat().st_size + held.get("extra", 0)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
        return await handle(self, message)

    monkeypatch.setattr(FakeBroker, "handle", squeezed)
    monkeypatch.setitem(BROKER_ANSWERS, "squeeze", (True, "squeezed", "public", True))
    return held


def test_a_line_the_log_cannot_take_is_written_before_the_next_record(squeezing, stack):
    log = started(stack, "s-owed")
    squeezing["log"] = log
    calls = [ToolCall(id="q1", name="squeeze", arguments="{}"), note()]
    with file_size_limit(BASE + 1024 * 1024):
        reply = stack.ask(AssistantMessage(session="s-owed", tool_calls=calls))
    squeezed, noted = reply.results
    assert squeezed.ok and squeezed.output == (
        "[the session log could not record this result (File too large): the call ran and this"
        " is its answer; the log holds nothing of it yet (a line saying it ran is written before"
        " the session's next record)]\nsqueezed"
    )
    assert not noted.ok and noted.output.startswith(
        "not run: the session log has no room left for its result (it could not take an earlier"
        " result of this turn)"
    )
    assert [r.tool for r in stack.broker.requests] == ["squeeze"]
    assert [r.type for r in turn_records(log)] == ["assistant"]
    # Room again: the owed lines go first, in order, then the owner's message.
    stack.ask(OwnerMessage(session="s-owed", content="and now?"))
    assistant, first, second, owner = turn_records(log)
    assert (first.call_id, first.klass, first.untrusted) == ("q1", "public", True)
    assert first.output.startswith("[the call ran (ok, 8 bytes of output)")
    assert (second.call_id, second.output) == ("m1", noted.output)
    assert owner.content == "and now?"


def test_a_call_the_log_has_no_room_left_for_is_not_run(squeezing, stack):
    log = started(stack, "s-squeezed")
    # Room for the squeeze's own result, not for a line for the call after it.
    squeezing["log"], squeezing["extra"] = log, 300
    calls = [ToolCall(id="q1", name="squeeze", arguments="{}"), note()]
    with file_size_limit(BASE + 1024 * 1024):
        reply = stack.ask(AssistantMessage(session="s-squeezed", tool_calls=calls))
    stack.ask(OwnerMessage(session="s-squeezed", content="next"))
    squeezed, noted = reply.results
    assert squeezed.ok and squeezed.output == "squeezed"
    assert not noted.ok
    assert noted.output.startswith("not run: the session log has no room left for its result (")
    assert noted.output.endswith(
        " bytes left under the file size limit); nothing was done (free some room, or go on in a"
        " new session)"
    )
    assert [r.tool for r in stack.broker.requests] == ["squeeze"]
    assistant, first, second, owner = turn_records(log)
    assert (first.call_id, first.output, first.untrusted) == ("q1", "squeezed", True)
    assert (second.call_id, second.output, second.untrusted) == ("m1", noted.output, False)
    assert owner.content == "next"


def test_a_turn_whose_record_cannot_be_appended_says_no_call_ran(stack, tmp_path):
    stack.ask(SessionStart(session="s-link"))
    log = stack.config.sessions / "s-link" / "0.jsonl"
    log.unlink()
    log.symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(RemoteError) as refused:
        stack.ask(AssistantMessage(session="s-link", tool_calls=[note()]))
    assert str(refused.value) == (
        f"session s-link: cannot append to {log}: a symbolic link, which is not followed;"
        " the turn was not recorded, and no call of it ran"
    )
    assert stack.broker.requests == []


def test_a_reply_cut_to_fit_says_the_rest_of_an_unlogged_result_is_kept_nowhere():
    reply = TurnReply("s-cut", 2)
    big = "z" * (MAX_FRAME // 2)
    reply.add(ToolResultOut(call_id="a", name="http_fetch", ok=True, output=big, label=PUBLIC))
    reply.add(
        ToolResultOut(call_id="b", name="http_fetch", ok=True, output=big, label=PUBLIC),
        logged=False,
    )
    logged, unlogged = reply.results()
    assert logged.output.endswith("bytes in all; the session log holds the whole result]")
    assert unlogged.output.endswith(f"{len(big):,} bytes in all; the rest is kept nowhere]")
