"""What memory-mcp sends for a tools/call, decided before anything is sent."""

import json

from memory_mcp.calls import Refused, prepare
from proto.frames import MAX_FRAME
from proto.messages import MemoryCall
from proto.tools import ARGUMENTS_MAX


def call(tool, arguments, **state):
    state = {"taint": "private", "untrusted": True} | state
    return prepare(tool, arguments, "mcp-c-20261130T061316-482Z", "mcp-call-1", **state)


def test_a_valid_call_carries_the_arguments_as_json_text_and_the_declared_state():
    prepared = call(
        "memory", {"action": "add", "file": "user", "text": "Ünïcode ok"}, taint="secret"
    )
    assert isinstance(prepared, MemoryCall)
    assert json.loads(prepared.request.arguments) == {
        "action": "add",
        "file": "user",
        "text": "Ünïcode ok",
    }
    assert (prepared.taint, prepared.untrusted) == ("secret", True)
    assert prepared.request.session == "mcp-c-20261130T061316-482Z"


def test_no_arguments_are_an_empty_object():
    assert call("recall", None) == Refused("recall: query: Field required")


def test_unknown_tool_is_refused_with_protos_sentence():
    assert call("memory_admin", {}) == Refused("'memory_admin' is not a memory tool")


def test_arguments_longer_than_any_valid_call_are_refused_before_sending():
    text = "x" * MAX_FRAME
    refused = call("memory", {"action": "add", "file": "memory", "text": text})
    assert isinstance(refused, Refused)
    length = len(json.dumps({"action": "add", "file": "memory", "text": text}))
    assert refused.text.startswith(f"memory: arguments of {length:,} characters are over the limit")


def test_the_longest_arguments_allowed_fit_one_frame_in_any_characters():
    # Four bytes each in UTF-8: the argument limit keeps even these well under the frame.
    text = "\U0001f600" * (ARGUMENTS_MAX["memory"] - 100)
    prepared = call("memory", {"action": "add", "file": "memory", "text": text})
    assert isinstance(prepared, MemoryCall)
    assert len(prepared.request.arguments.encode()) < MAX_FRAME
