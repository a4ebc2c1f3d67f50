"""memory-mcp when memoryd is down, hangs, or the client sends what brokerd would refuse.

The fake memoryd serves the loopd socket too: every test that uses it checks that only memory_call
reached it, and the block always comes from the files."""

import re
import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from memory_mcp.blockfiles import cannot_build_text
from memory_mcp.calls import GRANT_LABEL
from memory_mcp.link import MEMORYD_UNREACHABLE, MEMORYD_WRONG_REPLY, call_refused_text
from memory_mcp.server import BLOCK_PROMPT, BLOCK_URI, LABEL_KEY
from proto.errors import InvalidArguments
from proto.tools import parse_tool
from tests.memory_mcp.fake_memoryd import BLOCK, ERROR_TEXT, FakeMemoryd


def text_of(result) -> str:
    return result.content[0].text


def test_memoryd_down_is_one_sentence_naming_the_runbook_entry_at_once(down_home):
    async def body():
        async with down_home.connect() as client:
            started = time.monotonic()
            recall = await client.call_tool("recall", {"query": "anything"})
            add = await client.call_tool("memory", {"action": "note", "text": "x"})
            with pytest.raises(MCPError) as resource:
                await client.read_resource(BLOCK_URI)
            with pytest.raises(MCPError) as prompt:
                await client.get_prompt(BLOCK_PROMPT)
            return recall, add, resource.value, prompt.value, time.monotonic() - started

    recall, add, resource, prompt, elapsed = anyio.run(body)
    for result in (recall, add):
        assert result.is_error and text_of(result) == MEMORYD_UNREACHABLE
    assert "runbook: memoryd-unreachable" in MEMORYD_UNREACHABLE
    # a home memoryd never started has no memory/: the block is refused as loopd would refuse it
    assert resource.message == cannot_build_text("soul.md is missing") == prompt.message
    assert resource.message.endswith("(runbook: memory-unavailable)")
    assert elapsed < 10


def test_the_block_is_read_from_the_files_while_memoryd_is_down(down_home):
    down_home.write_memory(memory="Hand-written entry.\n", user="Prefers UTC.\n")

    async def body():
        async with down_home.connect() as client:
            recall = await client.call_tool("recall", {"query": "anything"})
            resource = await client.read_resource(BLOCK_URI)
            prompt = await client.get_prompt(BLOCK_PROMPT)
            return recall, resource.contents[0].text, prompt.messages[0].content.text

    recall, resource, prompt = anyio.run(body)
    assert recall.is_error and text_of(recall) == MEMORYD_UNREACHABLE
    assert resource == prompt == down_home.expected_block()
    assert "Hand-written entry." in resource and "Prefers UTC." in resource


def test_memoryd_going_away_and_coming_back_mid_connection(mcp_home):
    async def body():
        async with mcp_home.connect() as client:
            first = await client.call_tool("recall", {"query": "anything"})
            block = (await client.read_resource(BLOCK_URI)).contents[0].text
            mcp_home.memoryd.kill()
            down = await client.call_tool("recall", {"query": "anything"})
            block_down = (await client.read_resource(BLOCK_URI)).contents[0].text
            await anyio.to_thread.run_sync(mcp_home.memoryd.start)
            back = await client.call_tool("recall", {"query": "anything"})
            return first, block, down, block_down, back

    first, block, down, block_down, back = anyio.run(body)
    assert not first.is_error and text_of(first) == '(no matches for "anything")'
    assert down.is_error and text_of(down) == MEMORYD_UNREACHABLE
    assert block_down == block == mcp_home.expected_block()
    assert not back.is_error and text_of(back) == '(no matches for "anything")'


def test_a_memoryd_that_never_answers_costs_the_timeout_not_a_hang(down_home):
    down_home.write_memory(memory="An entry.\n")
    fake = FakeMemoryd(down_home.home, mode="hang")

    async def body():
        async with down_home.connect("--timeout", "1") as client:
            started = time.monotonic()
            result = await client.call_tool("recall", {"query": "anything"})
            called = time.monotonic() - started
            block = (await client.read_resource(BLOCK_URI)).contents[0].text
            return result, block, called, time.monotonic() - started - called

    try:
        result, block, called, read = anyio.run(body)
    finally:
        fake.close()
    assert result.is_error and text_of(result) == MEMORYD_UNREACHABLE
    assert 1 <= called < 10  # one 1-second timeout, far below the 30-second default
    assert block == down_home.expected_block() and read < 1  # the block never waits on memoryd
    assert [kind for kind, _ in fake.received] == ["memory_call"]


def _brokerd_sentence(tool: str, arguments) -> str:
    import json

    with pytest.raises(InvalidArguments) as refused:
        parse_tool(tool, json.dumps(arguments))
    return str(refused.value)


BAD_CALLS = [
    ("forget", {"query": "x"}),
    ("recall", {}),
    ("recall", {"query": ""}),
    ("recall", {"query": "x" * 501}),
    ("recall", {"query": "x", "k": 11}),
    ("recall", {"query": "x", "k": 0}),
    ("recall", {"query": "x", "k": "5"}),
    ("recall", {"query": "x", "limit": 3}),
    ("memory", {}),
    ("memory", {"action": "note", "text": "x" * 1001}),
    ("memory", {"action": "delete", "file": "memory", "old": "x"}),
    ("memory", {"action": "add", "file": "soul", "text": "x"}),
    ("memory", {"action": "add", "file": "memory", "text": ""}),
    ("memory", {"action": "consolidate", "file": "memory", "entries": []}),
    (
        "memory",
        {
            "action": "consolidate",
            "file": "memory",
            "entries": [{"old": "a", "keep": True, "drop": True}],
        },
    ),
]


def test_bad_calls_get_brokerds_sentences_and_never_reach_memoryd(down_home):
    fake = FakeMemoryd(down_home.home)

    async def body():
        async with down_home.connect() as client:
            results = [await client.call_tool(tool, args) for tool, args in BAD_CALLS]
            good = await client.call_tool("recall", {"query": "x", "k": 10})
            return results, good

    try:
        results, good = anyio.run(body)
    finally:
        fake.close()
    for (tool, args), result in zip(BAD_CALLS, results, strict=True):
        assert result.is_error, (tool, args)
        assert text_of(result) == _brokerd_sentence(tool, args), (tool, args)
        assert result.meta[LABEL_KEY] == GRANT_LABEL.to_wire()
    assert text_of(good) == "fake answer"
    assert len(fake.received) == 1
    kind, body = fake.received[0]
    assert kind == "memory_call"
    assert body["request"]["tool"] == "recall"
    assert body["untrusted"] is True and body["taint"] == "private"


def test_an_oversized_message_gets_the_sdks_error_reply_and_the_connection_goes_on(down_home):
    fake = FakeMemoryd(down_home.home)

    async def body():
        async with down_home.connect() as client:
            with pytest.raises(MCPError) as oversized:
                await client.call_tool(
                    "memory", {"action": "add", "file": "memory", "text": "x" * 1_100_000}
                )
            after = await client.call_tool("recall", {"query": "still here"})
            return oversized.value, after

    try:
        oversized, after = anyio.run(body)
    finally:
        fake.close()
    assert oversized.code == -32600
    assert re.fullmatch(
        r"message of [\d,]+ bytes is over the limit of 1,048,576 bytes; it was not read",
        oversized.message,
    )
    assert text_of(after) == "fake answer"
    assert [body["request"]["tool"] for _, body in fake.received] == ["recall"]


def test_unknown_resource_and_prompt_are_the_sdks_invalid_params(down_home):
    fake = FakeMemoryd(down_home.home)

    async def body():
        async with down_home.connect() as client:
            with pytest.raises(MCPError) as resource:
                await client.read_resource("memory://soul")
            with pytest.raises(MCPError) as prompt:
                await client.get_prompt("soul")
            return resource.value, prompt.value

    try:
        resource, prompt = anyio.run(body)
    finally:
        fake.close()
    assert resource.code == prompt.code == -32602
    assert resource.message == "no resource 'memory://soul': memory-mcp serves memory://block"
    assert prompt.message == "no prompt 'soul': memory-mcp serves memory_block"
    assert fake.received == []


@pytest.mark.parametrize("mode", ["error", "wrong"])
def test_a_memoryd_that_refuses_or_answers_wrong_is_said_so(down_home, mode):
    down_home.write_memory(user="Prefers UTC.\n")
    fake = FakeMemoryd(down_home.home, mode=mode)

    async def body():
        async with down_home.connect() as client:
            result = await client.call_tool("recall", {"query": "anything"})
            resource = await client.read_resource(BLOCK_URI)
            return result, resource.contents[0].text

    try:
        result, block = anyio.run(body)
    finally:
        fake.close()
    assert result.is_error
    if mode == "error":
        assert text_of(result) == call_refused_text(ERROR_TEXT)
    else:
        assert text_of(result) == MEMORYD_WRONG_REPLY
    assert block == down_home.expected_block() != BLOCK  # from the files, never asked of memoryd
    assert [kind for kind, _ in fake.received] == ["memory_call"]
