"""A tool call brokerd-shim does not answer: a memory call that was sent may still have been
applied (memoryd stalled past every wait), so its result says so and how to tell; a call never
sent (no brokerd), or one that only reads, failed."""

import asyncio
import json
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from loopd_shim.broker import MAYBE_APPLIED, NO_ANSWER, BrokerClient
from proto.messages import ToolRequest


@pytest.fixture
def folder():
    path = Path(tempfile.mkdtemp(prefix="lsb-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _call(client: BrokerClient, tool: str, arguments: dict):
    request = ToolRequest(session="s-one", call_id="c1", tool=tool, arguments=json.dumps(arguments))
    return asyncio.run(client.call(request))


MEMORY = {"action": "add", "file": "user", "text": "Likes tea."}


def test_a_memory_call_sent_and_unanswered_may_have_been_applied(folder):
    path = folder / "broker.sock"
    with socket.socket(socket.AF_UNIX) as listener:  # takes the frame, never answers
        listener.bind(str(path))
        listener.listen(4)
        client = BrokerClient(path, timeout=0.3)
        memory = _call(client, "memory", MEMORY)
        recall = _call(client, "recall", {"query": "tea"})
    assert (memory.ok, memory.output) == (False, MAYBE_APPLIED)
    assert "bxctl memory log" in memory.output
    assert (recall.ok, recall.output) == (False, NO_ANSWER)


def test_a_memory_call_never_sent_failed(folder):
    client = BrokerClient(folder / "none.sock", timeout=0.3)
    memory = _call(client, "memory", MEMORY)
    assert (memory.ok, memory.output) == (False, NO_ANSWER)


def test_an_unanswered_call_names_its_runbook_entry(folder):
    """The owner (and the model) reading the result is sent to the page that says what to do."""
    client = BrokerClient(folder / "none.sock", timeout=0.3)
    page = Path(__file__).resolve().parents[2] / "runbook/brokerd-unreachable.md"
    assert page.is_file()
    for output in (_call(client, "recall", {"query": "tea"}).output, MAYBE_APPLIED):
        assert output.endswith("(runbook: brokerd-unreachable)"), output
    assert "scripts/stack restart brokerd-shim" in page.read_text()
