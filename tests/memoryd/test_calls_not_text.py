"""memoryd as a process, sent memory and recall calls whose arguments hold half of a surrogate
pair (JSON spells it "\\udc00"; UTF-8 cannot write it): each is refused as a tool_response naming
the field, before anything is planned or written, with no traceback in the log."""

import json

import pytest

from proto.client import request
from proto.messages import MemoryCall, ToolRequest, ToolResponse
from tests.memoryd_process import MemorydProcess

NOT_TEXT = "holds half of a surrogate pair, which is not text"
CALLS = [
    ("memory", '{"action":"note","text":"x\\udc00y"}', f"memory: text: the string {NOT_TEXT}"),
    ("memory", '{"action":"note","text":"ok","\\udc00":1}', f"memory: a key {NOT_TEXT}"),
    (
        "memory",
        '{"action":"add","file":"memory","text":"half an emoji \\ud83d"}',
        f"memory: text: the string {NOT_TEXT}",
    ),
    (
        "memory",
        '{"action":"consolidate","file":"user","entries":[{"text":"\\udfff"}]}',
        f"memory: entries.0.text: the string {NOT_TEXT}",
    ),
    ("recall", '{"query":"\\ud800"}', f"recall: query: the string {NOT_TEXT}"),
]


def call(tool: str, arguments: str, untrusted: bool = False) -> MemoryCall:
    req = ToolRequest(session="s-half", call_id="c-half", tool=tool, arguments=arguments)
    return MemoryCall(request=req, taint="private", untrusted=untrusted)


def files(home) -> dict[str, bytes]:
    """The memory files, the journal and the recall log as they are now: a refused call writes
    none of them."""
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted((home / "memory").rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def memoryd(tmp_path_factory):
    proc = MemorydProcess(tmp_path_factory.mktemp("half")).start()
    yield proc
    proc.stop()


@pytest.mark.parametrize("untrusted", [False, True])
@pytest.mark.parametrize("tool, arguments, said", CALLS)
def test_half_a_pair_is_refused_naming_the_field(memoryd, tool, arguments, said, untrusted):
    before = files(memoryd.home)
    answer = request(memoryd.broker_socket, call(tool, arguments, untrusted), 30.0)
    assert isinstance(answer, ToolResponse)
    assert (answer.ok, answer.output, answer.call_id) == (False, said, "c-half")
    assert "Traceback" not in memoryd.log.read_text(errors="replace")
    assert files(memoryd.home) == before  # nothing planned, written or journalled


def test_a_note_that_is_text_is_still_taken(memoryd):
    text = "an emoji \U0001f600 whole"
    answer = request(
        memoryd.broker_socket, call("memory", json.dumps({"action": "note", "text": text})), 30.0
    )
    assert (answer.ok, answer.output) == (True, "noted")
