"""A memory write memoryd got but did not answer in time, or the client closing stdin while memoryd
works on one: the answer never says the write failed, since memoryd may have applied it."""

import json
import os
import shutil
import subprocess
import sys
import time

import anyio
import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from memory_mcp.link import MEMORYD_UNREACHABLE, write_unknown_text
from tests.integration.stack import short_temp_home
from tests.memory_mcp.fake_memoryd import SLOW, FakeMemoryd

ADD = {"action": "add", "file": "user", "text": "Prefers answers in UTC."}


@pytest.mark.parametrize("mode", ["hang", "close"])
def test_a_write_sent_and_not_answered_may_have_been_applied(down_home, mode):
    fake = FakeMemoryd(down_home.home, mode=mode)

    async def body():
        async with down_home.connect("--timeout", "1") as client:
            write = await client.call_tool("memory", ADD)
            read = await client.call_tool("recall", {"query": "anything"})
            return write, read

    try:
        write, read = anyio.run(body)
    finally:
        fake.close()
    text = write.content[0].text
    assert text == write_unknown_text(1.0)
    assert "may have been applied" in text and "bxctl memory log" in text and "fail" not in text
    # not an error: a client that retries failed calls would make the write twice
    assert not write.is_error
    # a read that was not answered changed nothing: it is said as memoryd being away
    assert read.is_error and read.content[0].text == MEMORYD_UNREACHABLE


def _send(process: subprocess.Popen, message: dict) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps(message) + "\n").encode())
    process.stdin.flush()


def test_closing_stdin_while_memoryd_works_on_a_write_still_gets_its_answer():
    root = short_temp_home("mcp-close-")
    fake = FakeMemoryd(root, mode="slow")
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_mcp", "--home", str(root), "--trust", "trusted"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    try:
        _send(
            process,
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": LATEST_HANDSHAKE_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "closer", "version": "1"},
                },
            },
        )
        assert process.stdout is not None
        assert json.loads(process.stdout.readline())["id"] == 0
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "memory", "arguments": ADD}
        _send(process, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        started = time.monotonic()
        process.stdin.close()  # type: ignore[union-attr]
        out = process.stdout.read()
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        fake.close()
        shutil.rmtree(root, ignore_errors=True)
    [answer] = [json.loads(line) for line in out.splitlines()]
    assert answer["id"] == 1 and "error" not in answer, answer
    assert answer["result"]["content"][0]["text"] == "fake answer"
    assert not answer["result"]["isError"]
    assert time.monotonic() - started >= SLOW * 0.9  # it waited for memoryd's answer
    assert process.returncode == 0
