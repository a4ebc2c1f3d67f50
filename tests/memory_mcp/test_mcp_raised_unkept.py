"""A raised state that cannot be kept never lets the text that raised it through: the state is
kept before an untrusted answer goes out, and when the state folder cannot keep it (not a folder,
full, its lock held by another memory-mcp past --timeout) the answer is withheld with one line
saying why, the connection stays raised, a folder that cannot keep a state makes the client's
next connection start raised, and a held lock never stops memory-mcp answering anything else."""

import fcntl
import os
import shutil
import time

import anyio
import pytest

from memory_mcp.server import LABEL_KEY
from tests.memory_mcp.test_mcp_raised import NOTE_ANSWER, PLANTED, _plant, text_of

ADD = {"action": "add", "file": "user", "text": PLANTED}


def _withheld(result) -> None:
    said = text_of(result)
    assert result.is_error and PLANTED not in said, said
    assert said.startswith("memory-mcp withheld memoryd's answer") and "\n" not in said, said
    assert result.meta[LABEL_KEY]["untrusted"] is False


async def _recall_and_add(mcp_home, *args: str):
    async with mcp_home.connect("--trust", "trusted", *args, name="desk") as client:
        hit = await client.call_tool("recall", {"query": "invoice account"})
        add = await client.call_tool("memory", ADD)
    return hit, add


async def _add_again(mcp_home, *args: str):
    async with mcp_home.connect("--trust", "trusted", *args, name="desk") as client:
        return await client.call_tool("memory", ADD)


@pytest.mark.parametrize("broken", ["a file", "not writable"])
def test_a_state_folder_that_cannot_keep_withholds_the_untrusted_text(mcp_home, broken):
    anyio.run(_plant, mcp_home)
    if broken == "a file":
        shutil.rmtree(mcp_home.state, ignore_errors=True)
        mcp_home.state.write_text("not a folder")  # nothing can be read or kept under it
        args: tuple[str, ...] = ()
        said = "cannot read the client's kept state"
    else:
        # a folder that holds no kept file and where none can be made, even by root
        args = ("--state", "/proc/self")
        said = "cannot keep a client's raised state"
    hit, add = anyio.run(_recall_and_add, mcp_home, *args)
    _withheld(hit)
    assert not text_of(add).startswith("user.md updated"), text_of(add)
    # the client restarts, holding whatever it got: still not trusted, nothing reaches user.md
    again = anyio.run(_add_again, mcp_home, *args)
    assert not text_of(again).startswith("user.md updated"), text_of(again)
    assert PLANTED not in mcp_home.memory_file("user.md")
    assert said in mcp_home.stderr.read_text()


def test_a_held_lock_withholds_past_the_timeout_and_never_stops_other_requests(mcp_home):
    anyio.run(_plant, mcp_home)
    mcp_home.state.mkdir(mode=0o700, exist_ok=True)
    holder = os.open(mcp_home.state, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # as another memory-mcp stalled while keeping its state
    others: list[float] = []

    async def body():
        async with mcp_home.connect("--trust", "trusted", "--timeout", "2", name="desk") as client:
            results = {}

            async def recall():
                results["hit"] = await client.call_tool("recall", {"query": "invoice account"})

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(recall)
                await anyio.sleep(0.5)
                while "hit" not in results:
                    started = time.monotonic()
                    await client.list_tools()  # any other request
                    others.append(time.monotonic() - started)
                    await anyio.sleep(0.2)
            _withheld(results["hit"])
            assert "lock is held by another process" in text_of(results["hit"])
            fcntl.flock(holder, fcntl.LOCK_UN)  # the other memory-mcp is done: kept, delivered
            hit = await client.call_tool("recall", {"query": "invoice account"})
            assert PLANTED in text_of(hit) and hit.meta[LABEL_KEY]["untrusted"] is True
            return await client.call_tool("memory", ADD)

    try:
        add = anyio.run(body)
    finally:
        os.close(holder)
    assert others and max(others) < 1.0, others
    assert text_of(add).startswith(NOTE_ANSWER)
    assert text_of(anyio.run(_add_again, mcp_home)).startswith(NOTE_ANSWER)
    assert PLANTED not in mcp_home.memory_file("user.md")
