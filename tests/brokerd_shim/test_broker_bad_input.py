"""Bad input over the real socket: each gets a clear answer, and the shim goes on answering."""

import json
import random
import struct

import msgpack
import pytest

from proto.frames import MAX_FRAME
from tests.rawsocket import exchange

GOOD_REQUEST = {
    "session": "mm-test1",
    "call_id": "c1",
    "tool": "http_fetch",
    "arguments": '{"url": "https://example.org/notes"}',
}


def frame(payload: object) -> bytes:
    data = msgpack.packb(payload, use_bin_type=True)
    return struct.pack(">I", len(data)) + data


def tool_request(**changes) -> bytes:
    return frame({"kind": "tool_request", "body": {"request": {**GOOD_REQUEST, **changes}}})


CASES = [
    (struct.pack(">I", MAX_FRAME + 1) + b"x" * 10, "error", "outside 1 to"),
    (struct.pack(">I", 0), "error", "outside 1 to"),
    (struct.pack(">I", 5) + b"\xc1\xc1\xc1\xc1\xc1", "error", "not valid MessagePack"),
    (frame([1, 2]), "error", "not a map"),
    (frame({"kind": "tool_request"}), "error", "exactly the keys"),
    (frame({"kind": "memory_call", "body": {}}), "error", "not served on this socket"),
    (frame({"kind": "no_such_kind", "body": {}}), "error", "not served on this socket"),
    (frame({"kind": "tool_request", "body": {}}), "error", "request"),
    (tool_request(session="../../etc"), "error", "request.session"),
    (tool_request(session=""), "error", "request.session"),
    (tool_request(session="a" * 129), "error", "request.session"),
    (tool_request(arguments=7), "error", "request.arguments"),
    (tool_request(call_id=""), "error", "request.call_id"),
    (tool_request(extra=1), "error", "extra"),
    (tool_request(tool="shell"), "tool_response", "no grant allows shell"),
    (tool_request(tool="x" * 200), "tool_response", "no grant allows " + "x" * 64),
    (tool_request(arguments="{"), "tool_response", "not valid JSON"),
    (tool_request(arguments="[1]"), "tool_response", "must be a JSON object"),
    (tool_request(tool="recall", arguments='{"query": ""}'), "tool_response", "recall: query"),
    (tool_request(tool="memory", arguments="[" * 100_000), "tool_response", "not valid JSON"),
    (tool_request(tool="recall", arguments="[" * 100_000), "tool_response", "over the limit"),
    (
        tool_request(tool="memory", arguments=json.dumps({"entries": [{"old": "x"}] * 60_000})),
        "tool_response",
        "memory: arguments of 840,013 characters are over the limit of 131,072",
    ),
    (tool_request(tool="memory", arguments='{"action": 1}'), "tool_response", "memory: "),
]


@pytest.mark.parametrize("raw, kind, says", CASES)
def test_each_bad_input_gets_a_clear_answer(stack, raw, kind, says):
    reply = exchange(stack.socket, raw)
    assert reply is not None
    assert reply[0] == kind
    text = reply[1]["text"] if kind == "error" else reply[1]["output"]
    assert says in text
    assert "Traceback" not in text
    if kind == "tool_response":
        assert reply[1]["ok"] is False and reply[1]["label"] is not None


def test_truncated_frames_are_answered_with_what_arrived(stack):
    assert exchange(stack.socket, struct.pack(">I", 100) + b"abc") == (
        "error",
        {"text": "frame cut short: 3 of its 100 bytes arrived"},
    )
    assert exchange(stack.socket, b"\x00\x00") == (
        "error",
        {"text": "frame cut short: 2 of the 4 bytes of its length arrived"},
    )
    assert exchange(stack.socket, b"") is None


def test_hundreds_of_malformed_frames_then_a_good_call(stack):
    rng = random.Random(6)
    kinds = {"error": 0, "tool_response": 0, None: 0}
    for _ in range(300):
        choice = rng.randrange(5)
        if choice == 0:
            raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        elif choice == 1:
            raw = struct.pack(">I", rng.randrange(MAX_FRAME + 1, 2**32))
        elif choice == 2:
            raw = rng.choice(CASES)[0]
        elif choice == 3:
            junk = "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(0, 40)))
            raw = tool_request(tool=rng.choice(["recall", "memory", "http_fetch"]), arguments=junk)
        else:
            body = {"request": {k: rng.choice([None, 1, [], {}, "x"]) for k in GOOD_REQUEST}}
            raw = frame({"kind": "tool_request", "body": body})
        reply = exchange(stack.socket, raw, timeout=15)
        kinds[reply and reply[0]] += 1
    assert sum(kinds.values()) == 300 and kinds["error"] > 50 and kinds["tool_response"] > 50
    good = exchange(stack.socket, tool_request())
    assert good[0] == "tool_response" and good[1]["ok"] is True
    assert "The release moved to March." in good[1]["output"]
    assert stack.memoryd.calls == [] or all(
        c.request.tool != "http_fetch" for c in stack.memoryd.calls
    )
    for line in stack.audit_lines():
        json.loads(line)
