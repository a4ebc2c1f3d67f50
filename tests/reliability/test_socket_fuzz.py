"""Fuzzing every memoryd socket with hypothesis.

Raw bytes, frames of arbitrary MessagePack, and well-framed messages of every kind with fields of
every type go to the loopd, brokerd and owner sockets of a running memoryd. Each must be answered
with a frame of the right reply kind or an error naming what is wrong, or closed; never with
"internal error" (an unexpected exception), and memoryd must keep serving. Afterwards its log
holds no traceback, the journal parses and memory.md holds only entries that pass the check.
"""

import json
import socket
import struct

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.memory import check, entries
from proto.client import request
from proto.frames import MAX_FRAME
from proto.messages import MemoryBlock
from tests.rawsocket import exchange

INTERNAL = "internal error"
REPLIES = {
    "loop": {"memory_block_reply", "ok", "error"},
    "broker": {"tool_response", "error"},
    "admin": {"reindexed", "memory_admin_reply", "error"},
}
KINDS = [
    "memory_block",
    "session_updated",
    "memory_call",
    "reindex",
    "memory_admin",
    "ok",
    "error",
    "tool_request",
    "session_start",
]
FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


def sockets(process) -> dict[str, object]:
    return {
        "loop": process.loop_socket,
        "broker": process.broker_socket,
        "admin": process.admin_socket,
    }


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def frame(obj) -> bytes:
    payload = msgpack.packb(obj, use_bin_type=True)
    return struct.pack(">I", len(payload)) + payload


def assert_answered(process, name: str, reply) -> None:
    assert process.proc.poll() is None, "memoryd died"
    if reply is None:
        return
    kind, body = reply
    assert kind in REPLIES[name], reply
    if kind == "error":
        assert INTERNAL not in body["text"], reply


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=40)
    | st.binary(max_size=40)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=10) | st.integers(0, 9), inner, max_size=4)
    ),
    max_leaves=12,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=10,
)
texts = st.text(max_size=60) | st.sampled_from(["mm-fuzz0001", "..", "", "a" * 129, "recall"])
actions = st.sampled_from(["add", "replace", "remove", "note", "consolidate", "drop", ""])
memory_arguments = st.fixed_dictionaries(
    {"action": actions},
    optional={
        "file": st.sampled_from(["memory", "user", "soul", ""]) | texts,
        "text": texts,
        "old": texts,
        "entries": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "old": texts,
                    "keep": json_values,
                    "text": texts,
                    "move": json_values,
                    "drop": json_values,
                },
            ),
            max_size=4,
        ),
        "extra": json_values,
    },
)
arguments = (
    memory_arguments.map(json.dumps)
    | st.fixed_dictionaries({"query": texts}, optional={"k": json_values}).map(json.dumps)
    | st.text(max_size=80)
)
memory_calls = st.fixed_dictionaries(
    {
        "request": st.fixed_dictionaries(
            {
                "session": st.sampled_from(["mm-fuzz0001", "mm-fuzz0002"]) | texts,
                "call_id": st.text(min_size=1, max_size=10) | values,
                "tool": st.sampled_from(["memory", "recall", "shell"]) | values,
                "arguments": arguments | values,
            }
        )
        | values,
        "taint": st.sampled_from(["public", "private", "secret", "top"]) | values,
        "untrusted": st.booleans() | values,
    }
)
bodies = {
    "loop": st.sampled_from(["memory_block", "session_updated"]).flatmap(
        lambda kind: st.tuples(
            st.just(kind),
            st.just({}) | st.fixed_dictionaries({"session": texts | values}) | values,
        )
    ),
    "broker": st.tuples(st.just("memory_call"), memory_calls),
    "admin": st.one_of(
        st.tuples(st.just("reindex"), st.just({}) | values),
        st.tuples(
            st.just("memory_admin"),
            st.fixed_dictionaries(
                {
                    "command": st.sampled_from(["log", "undo", "pending", "accept", "reject", "x"]),
                    "arg": st.text(max_size=30)
                    | st.sampled_from(["", "3", "10001", "2026-01-01-0001", "p-2026-01-01-0001"])
                    | values,
                },
            ),
        ),
    ),
}


@pytest.mark.parametrize("name", ["loop", "broker", "admin"])
@FUZZ
@given(data=st.binary(max_size=80))
def test_raw_bytes(memoryd, name, data):
    assert_answered(memoryd, name, exchange(sockets(memoryd)[name], data))


@pytest.mark.parametrize("name", ["loop", "broker", "admin"])
@FUZZ
@given(kind=st.sampled_from(KINDS) | values, body=values, extra=st.booleans())
def test_arbitrary_messagepack(memoryd, name, kind, body, extra):
    message = {"kind": kind, "body": body}
    if extra:
        message["more"] = 1
    assert_answered(memoryd, name, exchange(sockets(memoryd)[name], frame(message)))


@pytest.mark.parametrize("name", ["loop", "broker", "admin"])
@settings(FUZZ, max_examples=250)
@given(data=st.data())
def test_messages_of_the_socket_kinds(memoryd, name, data):
    kind, body = data.draw(bodies[name])
    assert_answered(
        memoryd, name, exchange(sockets(memoryd)[name], frame({"kind": kind, "body": body}))
    )


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">I", 0),
        struct.pack(">I", MAX_FRAME + 1) + b"x" * 100,
        struct.pack(">I", 2**32 - 1),
        struct.pack(">I", 10) + b"\xc1" * 10,
        frame({"kind": "memory_block", "body": {"x": _nested(60)}}),
        struct.pack(">I", 6000) + b"\x91" * 6000,
    ],
    ids=["empty", "over max", "4 GiB", "reserved byte", "nested lists", "deep nesting"],
)
def test_bad_frames_get_an_error_or_a_close(memoryd, data):
    for name, path in sockets(memoryd).items():
        assert_answered(memoryd, name, exchange(path, data))


def test_deeply_nested_arguments(memoryd):
    # Deeper than json's recursion limit, within both tools' length limits (which refuse longer
    # arguments before they are parsed).
    deep = "[" * 4_000 + "]" * 4_000
    for tool in ("memory", "recall"):
        body = {
            "request": {"session": "mm-fuzz0001", "call_id": "c", "tool": tool, "arguments": deep},
            "taint": "private",
            "untrusted": False,
        }
        kind, reply = exchange(memoryd.broker_socket, frame({"kind": "memory_call", "body": body}))
        assert kind == "tool_response" and not reply["ok"], reply
        assert reply["output"] == f"{tool}: arguments are not valid JSON"


def test_idle_connections_do_not_block_others(memoryd):
    idle = []
    try:
        for _ in range(64):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(memoryd.loop_socket))
            s.sendall(struct.pack(">I", 100))  # a frame that never comes
            idle.append(s)
        assert request(memoryd.loop_socket, MemoryBlock(), timeout=5).text.startswith("# soul")
    finally:
        for s in idle:
            s.close()


def test_after_the_fuzzing_memoryd_is_whole(memoryd):
    """Runs last in this module: the log, the journal and memory.md after everything above."""
    assert request(memoryd.loop_socket, MemoryBlock(), timeout=5).text.startswith("# soul.md")
    log = memoryd.log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, log[log.find("Traceback") - 300 :][:3000]
    for path in (memoryd.home / "memory/edits").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            assert isinstance(json.loads(line), dict)
    for name in ("memory.md", "user.md"):
        text = (memoryd.home / "memory" / name).read_text(encoding="utf-8")
        for entry in entries.parse(text):
            assert check.problem(entry) is None and entries.entry_problem(entry) is None
