"""One client may hold both registrations config-snippet prints (untrusted and trusted) under its
one name: a memory-tainted hit answered through either is in the same conversation, so it is kept
for the client by the registration that answered it, and the trusted one reads that again before
each write."""

import json

import anyio

from memory_mcp import raised
from memory_mcp.server import LABEL_KEY
from memory_mcp.session import client_key
from proto.labels import Label
from tests.memory_mcp.test_mcp_raised import NOTE_ANSWER, PLANTED, _add, text_of

CLIENT = "claude-desktop"
ADD = {"action": "add", "file": "user", "text": PLANTED}


async def _both_registrations(mcp_home) -> tuple:
    """The trusted connection open first (its start finds nothing raised), then the untrusted one
    notes and recalls the planted text, then the trusted one is asked to write it."""
    async with (
        mcp_home.connect("--trust", "trusted", name=CLIENT) as trusted,
        mcp_home.connect("--trust", "untrusted", name=CLIENT) as untrusted,
    ):
        first = await trusted.call_tool("recall", {"query": "weather"})
        await untrusted.call_tool("memory", {"action": "note", "text": PLANTED})
        hit = await untrusted.call_tool("recall", {"query": "invoice account"})
        add = await trusted.call_tool("memory", ADD)
    return first, hit, add


def test_a_tainted_hit_through_the_untrusted_registration_makes_the_trusted_ones_write_a_note(
    mcp_home,
):
    first, hit, add = anyio.run(_both_registrations, mcp_home)
    assert first.meta[LABEL_KEY]["untrusted"] is False
    assert hit.meta[LABEL_KEY]["untrusted"] is True and PLANTED in text_of(hit)
    assert text_of(add).startswith(NOTE_ANSWER), text_of(add)
    assert PLANTED not in mcp_home.memory_file("user.md")

    kept = raised.file_for(mcp_home.state, mcp_home.home.absolute(), client_key(CLIENT))
    assert json.loads(kept.read_text())["untrusted"] is True
    said = mcp_home.stderr.read_text()
    assert f"another connection of this client (session mcp-{CLIENT}-" in said
    # the client's trusted registration, started again, starts untrusted too
    assert anyio.run(_add, mcp_home, CLIENT, PLANTED).startswith(NOTE_ANSWER)
    assert PLANTED not in mcp_home.memory_file("user.md")


async def _untrusted_recall(mcp_home) -> None:
    async with mcp_home.connect("--trust", "untrusted", name=CLIENT) as client:
        await client.call_tool("memory", {"action": "note", "text": PLANTED})
        await client.call_tool("recall", {"query": "invoice account"})


def test_the_untrusted_registration_keeps_a_tainted_hit_over_a_clean_record(mcp_home):
    """A clean record (the trusted registration's first connection found nothing) is not read as
    'nothing since': the untrusted one's tainted hit raises it."""
    assert anyio.run(_add, mcp_home, CLIENT, "Prefers UTC.").startswith("user.md updated")
    kept = raised.file_for(mcp_home.state, mcp_home.home.absolute(), client_key(CLIENT))
    clean = raised.load(kept)
    assert clean is not None and clean.label == raised.CLEAN

    anyio.run(_untrusted_recall, mcp_home)
    found = raised.load(kept)
    assert found is not None and found.label.untrusted
    assert anyio.run(_add, mcp_home, CLIENT, PLANTED).startswith(NOTE_ANSWER)
    assert PLANTED not in mcp_home.memory_file("user.md")


async def _look(path, timeout: float = 5.0):
    return await raised.Keeper(timeout).look(path)


def test_a_look_again_reads_the_kept_state_and_fails_safe(tmp_path):
    kept = raised.file_for(tmp_path / "state", tmp_path / "home", client_key(CLIENT))
    assert anyio.run(_look, kept) is None  # nothing kept: nothing raised
    raised.raise_kept(kept, Label(klass="private", untrusted=True), "mcp-other")
    found = anyio.run(_look, kept)
    assert found is not None and found.label.untrusted and found.session == "mcp-other"
    kept.write_text("{not json")
    found = anyio.run(_look, kept)
    assert found is not None and found.label == raised.WORST
