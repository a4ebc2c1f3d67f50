"""One connection is one session, and a session keeps the block it started with: memory-mcp fixes
the block as the connection starts. Its block leaves out entries above --max-class as
memoryd's leaves out those above [index] max_class."""

import json
import shutil
from types import SimpleNamespace

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from memory_mcp.blockfiles import BlockFiles, cannot_build_text
from memory_mcp.cli import app
from memory_mcp.server import BLOCK_PROMPT, BLOCK_URI, MemoryMcp
from memoryd.home import Home
from memoryd.memory.store import MemoryStore
from tests.callargs import loose_call
from tests.memoryd.store_helpers import SOUL_STARTER, args

MODES = ["auto", "legacy"]
SECRET = {"session": "mm-secret001", "call_id": "call-9", "taint": "secret", "untrusted": False}
PIN = "Bank PIN is 4242."


def block_of(result) -> str:
    return result.contents[0].text


@pytest.mark.parametrize("mode", MODES)
def test_the_block_stays_the_same_for_the_whole_connection(mcp_home, mode):
    async def session():
        async with mcp_home.connect("--trust", "trusted", mode=mode) as client:
            first = block_of(await client.read_resource(BLOCK_URI))
            add = await client.call_tool(
                "memory", {"action": "add", "file": "user", "text": "Prefers answers in UTC."}
            )
            (mcp_home.home / "memory" / "memory.md").write_text("Written by hand meanwhile.\n")
            resource = block_of(await client.read_resource(BLOCK_URI))
            prompt = (await client.get_prompt(BLOCK_PROMPT)).messages[0].content.text
        return first, add.content[0].text, resource, prompt

    async def next_session():
        async with mcp_home.connect(mode=mode) as client:
            return (await client.get_prompt(BLOCK_PROMPT)).messages[0].content.text

    first, said, resource, prompt = anyio.run(session)
    assert said.endswith("it takes effect in the next session")
    assert resource == prompt == first
    assert "Prefers answers in UTC." not in first
    after = anyio.run(next_session)
    assert after == mcp_home.expected_block() != first
    assert "Prefers answers in UTC." in after and "Written by hand meanwhile." in after


@pytest.mark.parametrize("mode", MODES)
def test_a_write_before_the_first_read_is_not_in_the_block(mcp_home, mode):
    async def session():
        async with mcp_home.connect("--trust", "trusted", mode=mode) as client:
            add = await client.call_tool(
                "memory", {"action": "add", "file": "user", "text": "Prefers answers in UTC."}
            )
            (mcp_home.home / "memory" / "memory.md").write_text("Written by hand meanwhile.\n")
            resource = block_of(await client.read_resource(BLOCK_URI))
            prompt = (await client.get_prompt(BLOCK_PROMPT)).messages[0].content.text
        return add.content[0].text, resource, prompt

    started_with = mcp_home.expected_block()
    said, resource, prompt = anyio.run(session)
    assert said.endswith("it takes effect in the next session")
    assert resource == prompt == started_with
    assert "Prefers answers in UTC." in mcp_home.expected_block()


def test_no_block_is_served_once_a_call_went_without_one(down_home):
    """Unreadable at the start and at the call: a block read after the call would not be the
    session's first, so the reason it could not be read is the answer for the connection."""

    async def body(call: bool):
        async with down_home.connect() as client:
            if call:
                await client.call_tool("memory", {"action": "note", "text": "x"})
            down_home.write_memory(memory="Written after the call.\n")
            try:
                return block_of(await client.read_resource(BLOCK_URI))
            except MCPError as e:
                return e.error.message
            finally:
                shutil.rmtree(down_home.home / "memory")

    assert anyio.run(body, True) == cannot_build_text("soul.md is missing")
    # with no call sent, a later read may still be the session's first block
    assert "Written after the call." in anyio.run(body, False)


class Flaky:
    """A build that fails at its first call, then renders a block numbered by its call."""

    def __init__(self):
        self.calls = 0

    def __call__(self, home) -> str:
        self.calls += 1
        if self.calls == 1:
            raise OSError("the disk went away")
        return f"block {self.calls}"


def test_a_read_that_fails_fixes_nothing_and_the_first_good_one_stands(tmp_path):
    build = Flaky()
    handlers = MemoryMcp(None, BlockFiles(tmp_path, timeout=5, build=build), "trusted", "private")
    info = SimpleNamespace(client_info=SimpleNamespace(name="desk"))
    ctx = SimpleNamespace(session=SimpleNamespace(client_params=info))
    prompt = SimpleNamespace(name=BLOCK_PROMPT)
    resource = SimpleNamespace(uri=BLOCK_URI)

    async def reads():
        with pytest.raises(MCPError, match="the memory block cannot be built"):
            await handlers.get_prompt(ctx, prompt)
        second = await handlers.get_prompt(ctx, prompt)
        third = await handlers.read_resource(ctx, resource)
        return second.messages[0].content.text, third.contents[0].text

    assert anyio.run(reads) == ("block 2", "block 2")
    assert build.calls == 2


def secret_entry(home: Home) -> None:
    """What memoryd with max_class secret leaves: a secret session's entry in memory.md."""
    store = MemoryStore(home, soul_starter=SOUL_STARTER, max_class="secret")
    store.ensure()
    store.call(*loose_call(args(action="add", file="memory", text=PIN), **SECRET))


@pytest.mark.parametrize(("options", "shown"), [((), False), (("--max-class", "secret"), True)])
def test_the_block_leaves_out_entries_above_max_class(down_home, options, shown):
    secret_entry(Home(down_home.home))

    async def body():
        async with down_home.connect(*options) as client:
            return block_of(await client.read_resource(BLOCK_URI))

    assert (PIN in anyio.run(body)) is shown


@pytest.mark.parametrize(("options", "added"), [((), []), (("--max-class", "secret"), ["secret"])])
def test_config_snippet_carries_max_class_when_it_is_not_the_default(tmp_path, options, added):
    result = CliRunner().invoke(app, ["config-snippet", "--home", str(tmp_path), *options])
    assert result.exit_code == 0, result.output
    server = json.loads(result.output)["mcpServers"]["boxmaker-memory"]
    assert server["args"][6:] == (["--max-class", *added] if added else [])
