"""A turn whose tool results together pass the frame limit: every call ran (a memory write was
applied), so the reply must still come, each large output cut to its share and saying so, while
the session log keeps every result whole. Never "the answer was too large to send"."""

import socket
import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopd_shim import replyroom, service
from loopd_shim.server import CONTROL_BUSY_SLOTS, CONTROL_CONNECTIONS
from proto.frames import MAX_FRAME, encode_frame
from proto.messages import AssistantMessage, AssistantResults, SessionStart, ToolCall
from tests.loopd_shim import conftest
from tests.loopd_shim.test_service import log_records

PAGE = "é" * 200_000 + "tail"  # 400,004 bytes in UTF-8: three pages pass one frame


@pytest.fixture
def big_pages(monkeypatch):
    answers = {**conftest.BROKER_ANSWERS, "http_fetch": (True, PAGE, "public", True)}
    monkeypatch.setattr(conftest, "BROKER_ANSWERS", answers)


def test_a_turn_over_the_frame_limit_is_answered_with_its_outputs_cut(stack, big_pages):
    stack.ask(SessionStart(session="s-big"))
    fetch = '{"name": "http_fetch", "arguments": {"url": "https://example.org/big"}}'
    calls = [ToolCall(id="c0", name="memory", arguments='{"action": "add"}')]
    calls += [ToolCall(id=f"c{n}", name="call_tool", arguments=fetch) for n in range(1, 4)]
    reply = stack.ask(AssistantMessage(session="s-big", content=None, tool_calls=calls))
    assert isinstance(reply, AssistantResults)
    assert [r.call_id for r in reply.results] == ["c0", "c1", "c2", "c3"]
    assert reply.results[0].output == "noted"  # small: whole
    for result in reply.results[1:]:
        assert result.output.endswith(
            "\n[cut here for the reply: 400,004 bytes in all; the session log holds the whole"
            " result]"
        )
        assert result.output.startswith("éé") and len(result.output.encode()) < MAX_FRAME // 3
    records = log_records(stack, "s-big")
    assert [r.output for r in records[1:]] == ["noted", PAGE, PAGE, PAGE]


def test_results_that_fit_are_not_touched():
    label = conftest.Label(klass="public", untrusted=False)
    small = [
        service.ToolResultOut(call_id=f"c{n}", name="x", ok=True, output="y" * 1000, label=label)
        for n in range(5)
    ]
    assert replyroom.fitted("s-one", small) == small


def test_a_turn_holds_what_its_reply_carries_not_every_result(stack, big_pages):
    # 120 pages of 400 KB (24 MB as Python strings), each logged whole as it arrives, while the
    # reply carries under 1 MiB of them: the turn must not keep them all until it ends.
    stack.ask(SessionStart(session="s-many"))
    fetch = '{"name": "http_fetch", "arguments": {"url": "https://example.org/big"}}'
    calls = [ToolCall(id=f"c{n}", name="call_tool", arguments=fetch) for n in range(120)]
    tracemalloc.start()
    try:
        reply = stack.ask(AssistantMessage(session="s-many", tool_calls=calls), timeout=120)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(reply, AssistantResults) and len(reply.results) == 120
    assert all(r.output.endswith("the session log holds the whole result]") for r in reply.results)
    assert peak < 10 * 1024 * 1024, f"the turn held {peak:,} bytes at its peak"
    records = log_records(stack, "s-many")
    assert len(records) == 121 and records[-1].output == PAGE


def _whole_then_fitted(results, room):
    """The reply as it was computed with every output kept whole to the end."""
    sizes = [len(r.output.encode()) for r in results]
    share = replyroom.share_of(sizes, room)
    if share is None:
        return [r.output for r in results]
    out = []
    for result, size in zip(results, sizes, strict=True):
        if size <= share:
            out.append(result.output)
            continue
        note = replyroom.CUT.format(size=size)
        keep = max(share - len(note.encode()), 0)
        out.append(result.output.encode()[:keep].decode(errors="ignore") + note)
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 400_000), st.sampled_from(["y", "é", "\U0001f600"])),
        min_size=1,
        max_size=60,
    )
)
def test_cutting_as_results_arrive_gives_the_reply_of_cutting_at_the_end(outputs):
    label = conftest.Label(klass="public", untrusted=False)
    results = [
        service.ToolResultOut(call_id=f"c{n}", name="x", ok=True, output=char * count, label=label)
        for n, (count, char) in enumerate(outputs)
    ]
    reply = replyroom.TurnReply("s-prop", len(results))
    for result in results:
        reply.add(result)
    assert [r.output for r in reply.results()] == _whole_then_fitted(results, reply.room)


def test_the_control_socket_holds_at_most_its_cap_of_connections(stack):
    # Peers that never read their replies each hold one (up to a frame) for the reply deadline:
    # the cap keeps what all of them hold under the shim's memory limit. The next few are
    # answered at once that it is busy (their request never read); past those, one more waits.
    held = []
    try:
        for _ in range(CONTROL_CONNECTIONS + CONTROL_BUSY_SLOTS):
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.connect(str(stack.config.control_socket))
            held.append(peer)
        time.sleep(0.3)  # all accepted: the server stops accepting at its cap and busy slots
        held[-1].settimeout(1.0)
        assert b"loopd-shim control is busy" in held[-1].recv(4096)
        late = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        held.append(late)
        late.connect(str(stack.config.control_socket))
        late.sendall(encode_frame("session_start", {"session": "s-late"}))
        late.settimeout(1.0)
        with pytest.raises(TimeoutError):
            late.recv(1)
        held.pop(0).close()  # a connection ends: the one waiting is accepted and answered
        late.settimeout(10.0)
        assert late.recv(4)
    finally:
        for peer in held:
            peer.close()
