"""A turn whose tool results together pass the frame limit: every call ran (a memory write was
applied), so the reply must still come, each large output cut to its share and saying so, while
the session log keeps every result whole. Never "the answer was too large to send"."""

import pytest

from loopd_shim import service
from proto.frames import MAX_FRAME
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
    assert service.fitted("s-one", small) == small
