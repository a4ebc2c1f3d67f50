"""The runtimes: memoryd over memory_call, the stored fixtures, and the composite that routes."""

import asyncio
import json
import time

import pytest

from brokerd_shim.errors import ToolFailed
from brokerd_shim.fixtures import FixtureRuntime
from brokerd_shim.ledger import SessionState
from brokerd_shim.memory_runtime import MEMORYD_UNREACHABLE, WRITE_UNKNOWN, MemoryRuntime
from brokerd_shim.runtime import CompositeRuntime, RunSpec, Runtime
from proto.labels import Label
from proto.messages import MemoryCall, ToolRequest
from proto.server import serve_unix

from .conftest import EXAMPLE_FIXTURES, FakeMemoryd

TAINTED = SessionState("mm-s1", Label(klass="secret", untrusted=True))


def spec(tool, arguments, state=TAINTED):
    request = ToolRequest(session=state.session, call_id="c7", tool=tool, arguments=arguments)
    return RunSpec(request, json.loads(arguments), state)


def test_the_sentence():
    assert MEMORYD_UNREACHABLE == (
        "memoryd did not answer; memory calls fail until it is back (runbook: memoryd-unreachable)"
    )


def test_memory_call_carries_the_state_as_decided(home, loop_thread):
    memoryd = FakeMemoryd(label=Label(klass="private", untrusted=True))
    socket = home / "m.sock"
    loop_thread.run(serve_unix(socket, memoryd.handle, {"memory_call"}, name="fake"))
    runtime = MemoryRuntime(socket, timeout=2)
    ok, output, label = loop_thread.run(
        runtime.run_labelled(spec("memory", '{"action": "add", "file": "memory", "text": "x"}'))
    )
    (call,) = memoryd.calls
    assert isinstance(call, MemoryCall)
    assert (call.taint, call.untrusted) == ("secret", True)
    assert call.request.call_id == "c7" and call.request.tool == "memory"
    assert ok and output.startswith("saved as a note (untrusted)")
    assert label == Label(klass="private", untrusted=True)


def test_memoryd_silent_past_the_timeout(home, loop_thread):
    memoryd = FakeMemoryd(delay=3.0)
    socket = home / "m.sock"
    loop_thread.run(serve_unix(socket, memoryd.handle, {"memory_call"}, name="fake"))
    runtime = MemoryRuntime(socket, timeout=0.3)
    started = time.monotonic()
    result = loop_thread.run(runtime.run_labelled(spec("recall", '{"query": "q"}')))
    assert time.monotonic() - started < 2.0
    assert result == (False, MEMORYD_UNREACHABLE, None)


async def _hang_up(reader, writer):
    """memoryd taking the call and closing the connection without an answer (killed)."""
    await reader.read(64)
    writer.close()


@pytest.mark.parametrize("memoryd", ["silent", "closes"])
def test_a_write_sent_and_not_answered_may_have_been_applied(home, loop_thread, memoryd):
    """memoryd applies a write it began and answers once it is journalled: a write whose frame
    went out and got no answer is said to be perhaps applied, never to have failed; a recall in
    the same case changed nothing and fails."""
    socket = home / "m.sock"
    if memoryd == "silent":
        fake = FakeMemoryd(delay=3.0)
        loop_thread.run(serve_unix(socket, fake.handle, {"memory_call"}, name="fake"))
    else:
        loop_thread.run(asyncio.start_unix_server(_hang_up, path=str(socket)))
    runtime = MemoryRuntime(socket, timeout=0.3)
    write = spec("memory", '{"action": "note", "text": "The plumber comes on Tuesday."}')
    ok, output, label = loop_thread.run(runtime.run_labelled(write))
    assert (ok, output, label) == (False, WRITE_UNKNOWN, None)
    assert "may have been applied" in output and "bxctl memory log" in output
    assert "fail" not in output
    recall = loop_thread.run(runtime.run_labelled(spec("recall", '{"query": "q"}')))
    assert recall == (False, MEMORYD_UNREACHABLE, None)


def test_a_write_memoryd_never_got_is_said_unreachable(home, loop_thread):
    runtime = MemoryRuntime(home / "nothing.sock", timeout=1)
    write = spec("memory", '{"action": "note", "text": "x"}')
    assert loop_thread.run(runtime.run_labelled(write)) == (False, MEMORYD_UNREACHABLE, None)


def test_memoryd_absent(home, loop_thread):
    runtime = MemoryRuntime(home / "nothing.sock", timeout=1)
    result = loop_thread.run(runtime.run_labelled(spec("recall", '{"query": "q"}')))
    assert result == (False, MEMORYD_UNREACHABLE, None)


def test_memoryd_error_reply_is_passed_on(home, loop_thread):
    class Refused(Exception):
        pass

    async def refuse(message):
        raise Refused("memory.md is over its limit")

    socket = home / "m.sock"
    loop_thread.run(serve_unix(socket, refuse, {"memory_call"}, name="fake", answerable=(Refused,)))
    ok, output, label = loop_thread.run(
        MemoryRuntime(socket, timeout=1).run_labelled(spec("recall", '{"query": "q"}'))
    )
    assert (ok, label) == (False, None)
    assert output == "memoryd refused the call: memory.md is over its limit"


@pytest.mark.parametrize(
    "arguments, ok, says",
    [
        ('{"url": "https://example.org/notes"}', True, "The release moved to March."),
        ('{"url": "https://example.org/other"}', False, "no fixture for https://example.org/other"),
        ('{"url": "../../etc/passwd"}', False, "no fixture for ../../etc/passwd"),
        ('{"url": "https://example.org/notes", "x": 1}', False, "no fixture for"),
    ],
)
def test_fixture_runtime(arguments, ok, says):
    runtime = FixtureRuntime(EXAMPLE_FIXTURES)
    result = asyncio.run(runtime.run_labelled(spec("http_fetch", arguments)))
    assert result[0] is ok and says in result[1] and result[2] is None


def test_fixture_index_never_names_a_path_outside(tmp_path):
    (tmp_path / "secret.txt").write_text("outside")
    folder = tmp_path / "fixtures"
    folder.mkdir()
    (folder / "index.toml").write_text(
        '[[fixture]]\ntool = "t"\narguments = {}\nfile = "../secret.txt"\n'
        '[[fixture]]\ntool = "t"\narguments = {a = 1}\nfile = "page.txt"\n'
    )
    (folder / "page.txt").write_text("inside")
    runtime = FixtureRuntime(folder)
    assert asyncio.run(runtime.run_labelled(spec("t", "{}")))[:2] == (False, "no fixture for t {}")
    assert asyncio.run(runtime.run_labelled(spec("t", '{"a": 1}')))[:2] == (True, "inside")


def test_broken_fixture_index(tmp_path):
    (tmp_path / "index.toml").write_text("[[fixture]\n")
    with pytest.raises(ToolFailed, match="cannot be read"):
        asyncio.run(FixtureRuntime(tmp_path).run(spec("t", "{}")))


class Answers(Runtime):
    """A runtime that only writes run: its default run_labelled adds no label."""

    def __init__(self, name):
        self.name = name
        self.specs = []

    async def run(self, spec):
        self.specs.append(spec)
        return self.name


def test_composite_routes_memory_tools_to_memory_and_the_rest_elsewhere():
    memory, other = Answers("memory"), Answers("other")
    composite = CompositeRuntime(memory, other)
    for tool, arguments, expected in [
        ("recall", '{"query": "q"}', "memory"),
        ("memory", '{"action": "note", "text": "t"}', "memory"),
        ("http_fetch", '{"url": "u"}', "other"),
        ("shell", "{}", "other"),
    ]:
        assert asyncio.run(composite.run_labelled(spec(tool, arguments))) == (True, expected, None)
    assert [s.tool for s in memory.specs] == ["recall", "memory"]
    assert [s.tool for s in other.specs] == ["http_fetch", "shell"]
