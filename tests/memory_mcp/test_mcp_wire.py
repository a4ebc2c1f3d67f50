"""Every line a client writes to memory-mcp gets its JSON-RPC 2.0 answer, and the connection goes
on: a real memory-mcp process over stdio (its memoryd down: the wire is what is checked), fed
hostile lines one by one, then random JSON shapes.

The expectation is JSON-RPC's, worked out here from the line alone: not JSON is one Parse error
(-32700, id null); a valid request is one answer with its id; a valid notification or response is
no answer; anything else (a batch, a scalar, an id that is an object, arguments nested too deep,
a malformed envelope) is one Invalid Request (-32600) carrying the id when it is a string or a whole
number and null otherwise. After each line a ping must still be answered.
"""

import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from memory_mcp.screen import BATCH, MAX_DEPTH, top_level_id
from tests.integration.stack import short_temp_home
from tests.memoryd_process import MemorydProcess

WAIT = 5.0  # what a line is given before it is called unanswered
# What memory-mcp is given to start and answer initialize: importing the SDK alone took over 5 s on
# a machine busy with other work, and every test of the module then failed at its fixture.
START_WAIT = 60.0


class McpWire:
    """memory-mcp as a subprocess, initialised, with its stdout read into a queue of messages."""

    def __init__(self, with_memoryd: bool = False) -> None:
        self.root = short_temp_home("mcp-wire-")
        self.memoryd = MemorydProcess(self.root) if with_memoryd else None
        home = self.memoryd.home if self.memoryd is not None else self.root
        if self.memoryd is not None:
            try:
                self.memoryd.start()
            except BaseException:
                self.memoryd.kill()
                shutil.rmtree(self.root, ignore_errors=True)
                raise
        self.errlog = open(self.root / "memory-mcp.log", "wb")  # noqa: SIM115 (closed in close)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memory_mcp", "--home", str(home), "--trust", "trusted"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errlog,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
        self.replies: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        try:
            self._initialize()
        except BaseException:
            self.close()
            raise

    def _initialize(self) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": LATEST_HANDSHAKE_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "wire test", "version": "1"},
                },
            }
        )
        reply = self.next_reply(timeout=START_WAIT)
        assert reply.get("id") == "init" and "result" in reply, reply
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.replies.put(json.loads(raw))

    def send_line(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_line(json.dumps(message).encode())

    def next_reply(self, timeout: float = WAIT) -> dict:
        return self.replies.get(timeout=timeout)

    def expect_id(self, ident: Any) -> dict:
        reply = self.next_reply()
        assert reply.get("id") == ident, reply
        return reply

    def answers_to(self, line: bytes, expected_ids: list) -> list[dict]:
        """Send line then a ping; every message that comes back before the ping's answer and the
        answers with expected_ids (in any order: requests are served concurrently)."""
        self.send_line(line)
        probe = f"probe-{uuid.uuid4()}"
        self.send({"jsonrpc": "2.0", "id": probe, "method": "ping"})
        got: list[dict] = []
        waiting = [probe, *expected_ids]
        deadline = time.monotonic() + WAIT
        while waiting:
            reply = self.replies.get(timeout=max(0.01, deadline - time.monotonic()))
            if reply.get("id") == probe:
                assert reply == {"jsonrpc": "2.0", "id": probe, "result": {}}
            else:
                got.append(reply)
            if reply.get("id") in waiting:
                waiting.remove(reply.get("id"))
        return got

    def close(self) -> None:
        try:
            if self.process.stdin is not None:
                with contextlib.suppress(BrokenPipeError):  # a server that died
                    self.process.stdin.close()
            self.process.wait(10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.reader.join(5)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.errlog.close()
            if self.memoryd is not None:
                self.memoryd.kill()
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def wire():
    connection = McpWire()
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def shared_wire():
    connection = McpWire()
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def served_wire():
    """memory-mcp with its memoryd up: tool calls reach memoryd and come back."""
    connection = McpWire(with_memoryd=True)
    yield connection
    connection.close()


def nested(depth: int, inner: str = "1") -> str:
    return '{"a":' * depth + inner + "}" * depth


def call(ident: Any, arguments: str) -> bytes:
    head = json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call"})[:-1]
    return f'{head}, "params": {{"name": "recall", "arguments": {arguments}}}}}'.encode()


INVALID = types.INVALID_REQUEST
# name: (line, the id the one answer carries, its code: None for a result)
HOSTILE = {
    "arguments nested 1,000 deep": (call(2, nested(1000)), 2, INVALID),
    "arguments nested 100,000 deep": (call("deep", nested(100_000)), "deep", INVALID),
    "arguments nested just too deep": (call(3, nested(MAX_DEPTH)), 3, INVALID),
    "params first, then the id, deep": (
        b'{"jsonrpc":"2.0","method":"tools/call","params":' + nested(5000).encode() + b',"id":9}',
        9,
        INVALID,
    ),
    "an id that is an object": (
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}',
        None,
        INVALID,
    ),
    "an id that is an array": (b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', None, INVALID),
    "an id that is true": (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', None, INVALID),
    "an id that is 1.5": (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None, INVALID),
    "an id that is null": (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', None, INVALID),
    "a batch": (
        b'[{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","id":4,"method":"ping"}]',
        None,
        INVALID,
    ),
    "a batch of notifications": (
        b'[{"jsonrpc":"2.0","method":"notifications/initialized"}]',
        None,
        INVALID,
    ),
    "an empty batch": (b"[]", None, INVALID),
    "a number": (b"5", None, INVALID),
    "a string": (b'"ping"', None, INVALID),
    "null": (b"null", None, INVALID),
    "not JSON": (b'{"jsonrpc": "2.0", "method"', None, types.PARSE_ERROR),
    "an id with half a surrogate pair": (
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        None,
        INVALID,
    ),
    "a method with half a surrogate pair": (
        b'{"jsonrpc":"2.0","id":13,"method":"\\udfff"}',
        13,
        INVALID,
    ),
    "a query with half a surrogate pair": (call(14, '{"query": "a\\ud83d"}'), 14, INVALID),
    "a query with a whole surrogate pair": (call(15, '{"query": "\\ud83d\\ude00"}'), 15, None),
    "NaN": (b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":NaN}}', None, -32700),
    "invalid UTF-8": (b'{"jsonrpc":"2.0","id":6,"method":"ping"\xff}', 6, -32700),
    "no jsonrpc member": (b'{"id":7,"method":"ping"}', 7, INVALID),
    "params not an object": (b'{"jsonrpc":"2.0","id":8,"method":"ping","params":5}', 8, INVALID),
    "a method that is a number": (b'{"jsonrpc":"2.0","id":"m","method":5}', "m", INVALID),
    "an unknown method": (b'{"jsonrpc":"2.0","id":10,"method":"nope"}', 10, -32601),
    "a tool call for no tool": (
        b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":5}}',
        11,
        types.INVALID_PARAMS,
    ),
    "arguments nested within the limit": (call(12, nested(MAX_DEPTH - 4)), 12, None),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_each_hostile_line_gets_one_answer_and_the_connection_goes_on(shared_wire, name):
    """One connection takes every hostile line in turn (module-scoped): it goes on after each."""
    wire = shared_wire
    line, ident, code = HOSTILE[name]
    started = time.monotonic()
    answers = wire.answers_to(line, [] if ident is None else [ident])
    assert len(answers) == 1, answers
    (answer,) = answers
    assert answer["jsonrpc"] == "2.0" and answer["id"] == ident
    if code is None:
        assert "result" in answer, answer
    else:
        assert answer["error"]["code"] == code, answer
    assert time.monotonic() - started < WAIT
    # and the next request is served as ever
    tools = wire.answers_to(
        json.dumps({"jsonrpc": "2.0", "id": "t", "method": "tools/list"}).encode(), ["t"]
    )
    assert [t["name"] for t in tools[0]["result"]["tools"]] == ["recall", "memory"]


def test_a_batch_is_refused_whole_and_nothing_in_it_is_carried_out(wire):
    note = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory", "arguments": {"action": "note", "text": "x"}},
    }
    answers = wire.answers_to(
        json.dumps([note, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]).encode(), []
    )
    assert answers == [{"jsonrpc": "2.0", "id": None, "error": {"code": INVALID, "message": BATCH}}]


def test_valid_notifications_and_responses_get_no_answer(wire):
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/unknown", "params": {"a": 1}},
        {"jsonrpc": "2.0", "id": 77, "result": {}},
        {"jsonrpc": "2.0", "id": 78, "error": {"code": 1, "message": "no"}},
    ):
        assert wire.answers_to(json.dumps(message).encode(), []) == []
    assert wire.answers_to(b"   ", []) == []  # a blank line carries no message


@pytest.mark.parametrize(
    ("text", "ident"),
    [
        ('{"id": 4, "params": ' + nested(5000) + "}", 4),
        ('{"params": ' + nested(5000, '"x\\"}"') + ', "id": "z"}', "z"),
        ('{"method": "id", "id": 3}', 3),
        ('{"\\u0069d": 8, "params": []}', 8),
        ('{"params": {"id": 5}}', None),
        ('{"id": {"id": 1}}', None),
        ('{"id": true}', None),
        ('{"id": "\\udc00", "params": ' + nested(5000) + "}", None),
        ("[1, 2]", None),
        ("", None),
    ],
)
def test_the_id_of_a_message_too_deep_to_parse(text, ident):
    assert top_level_id(text) == ident


# --- a property over random JSON shapes ---------------------------------------------------------
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),  # any code point, halves of surrogate pairs too (JSON escapes them)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
METHODS = st.one_of(
    st.sampled_from(
        [
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "prompts/list",
            "prompts/get",
            "resources/read",
            "notifications/initialized",
            "notifications/roots/list_changed",
            "logging/setLevel",
            "completion/complete",
        ]
    ),
    st.text(max_size=12),
    JSON_VALUES,
)
# Params the handlers take further: a tool call, a resource, a prompt, each with what may be wrong.
PARAMS = st.one_of(
    st.fixed_dictionaries(
        {
            "name": st.one_of(st.sampled_from(["recall", "memory"]), st.text(max_size=6)),
            "arguments": st.one_of(st.dictionaries(st.text(max_size=8), JSON_VALUES), JSON_VALUES),
        }
    ),
    st.fixed_dictionaries(
        {
            "arguments": st.fixed_dictionaries(
                {"query": st.text(max_size=20)}, optional={"k": JSON_VALUES}
            )
        }
    ).map(lambda p: {"name": "recall", **p}),
    st.fixed_dictionaries({"uri": st.one_of(st.just("memory://block"), st.text(max_size=12))}),
    st.fixed_dictionaries({"name": st.one_of(st.just("memory_block"), st.text(max_size=12))}),
)
IDS = st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=8), JSON_VALUES)


@st.composite
def messages(draw) -> dict:
    """Objects shaped more or less like JSON-RPC messages: each member there or not, of the right
    kind or not."""
    message: dict = {}
    for key, values in (
        ("jsonrpc", st.one_of(st.just("2.0"), JSON_VALUES)),
        ("id", IDS),
        ("method", METHODS),
        (
            "params",
            st.one_of(PARAMS, st.dictionaries(st.text(max_size=6), JSON_VALUES), JSON_VALUES),
        ),
        ("result", JSON_VALUES),
        ("error", JSON_VALUES),
    ):
        if draw(st.integers(0, 9)) < {"jsonrpc": 9, "id": 6, "method": 7}.get(key, 2):
            message[key] = draw(values)
    return message


def deep_line(depth: int) -> str:
    return '{"jsonrpc":"2.0","id":1,"method":"ping","params":' + nested(depth) + "}"


LINES = st.one_of(
    messages().map(json.dumps),
    JSON_VALUES.map(json.dumps),
    st.lists(messages(), max_size=3).map(json.dumps),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n"), max_size=30),
    st.integers(1, 3000).map(deep_line),
)


def expected_ids(line: str) -> tuple[str, list]:
    """What JSON-RPC says line gets: ("silence", []), ("answer", [id]) or ("error", [id])."""
    if not line.strip():
        return "silence", []
    try:
        value = json.loads(line)
    except RecursionError:
        return "error", [1]  # deep_line's id
    except ValueError:
        return "error", [None]
    if not isinstance(value, dict):
        return "error", [None]
    ident = value.get("id")
    ident = ident if isinstance(ident, int | str) and not isinstance(ident, bool) else None
    if "method" in value and "id" in value and ident is None:
        return "error", [None]  # a request's id is a string or a number in MCP, never null
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # half a surrogate pair somewhere: not text, and no answer holds it
        try:
            json.dumps(ident, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            ident = None
        return "error", [ident]
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        return "error", [ident]
    if isinstance(message, types.JSONRPCRequest):
        return "answer", [message.id]
    return "silence", []


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(LINES)
def test_every_line_gets_exactly_one_answer_or_a_notifications_silence(shared_wire, line):
    kind, ids = expected_ids(line)
    answers = shared_wire.answers_to(line.encode(), [] if kind == "silence" else ids)
    if kind == "silence":
        assert answers == [], (line, answers)
        return
    assert len(answers) == 1, (line, answers)
    (answer,) = answers
    assert answer["jsonrpc"] == "2.0" and answer["id"] == ids[0], (line, answer)
    if kind == "error":
        assert answer["error"]["code"] in (types.PARSE_ERROR, INVALID), (line, answer)
    else:
        assert ("result" in answer) != ("error" in answer), (line, answer)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(LINES)
def test_with_memoryd_up_every_line_gets_exactly_one_answer_too(served_wire, line):
    kind, ids = expected_ids(line)
    answers = served_wire.answers_to(line.encode(), [] if kind == "silence" else ids)
    assert len(answers) == (0 if kind == "silence" else 1), (line, answers)
    if answers:
        assert answers[0]["id"] == ids[0], (line, answers)


def test_with_memoryd_up_a_recall_is_answered_after_the_random_lines(served_wire):
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": "r",
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "anything at all"}},
        }
    )
    (answer,) = served_wire.answers_to(line.encode(), ["r"])
    assert answer["result"]["isError"] is False, answer
    with pytest.raises(queue.Empty):
        served_wire.next_reply(timeout=0.5)


def test_after_the_random_lines_a_normal_request_is_served_and_nothing_more_came(shared_wire):
    tools = shared_wire.answers_to(b'{"jsonrpc":"2.0","id":"last","method":"tools/list"}', ["last"])
    assert len(tools) == 1 and len(tools[0]["result"]["tools"]) == 2
    with pytest.raises(queue.Empty):
        shared_wire.next_reply(timeout=0.5)
