"""A client's kept state and the recall log's months both removed (a cleaner empties
~/.local/state; the owner removes memory/recalls/YYYY-MM.jsonl, which has no size limit) do not
make a client that read untrusted text trusted again: memory-mcp also reads memoryd's edit
journal (journalled.py), which still holds the client's untrusted write, and a recall log with no
month at all although the journal names the client's sessions fails closed with one log line
(startstate.look)."""

import json
import shutil

import anyio

from memory_mcp import raised
from memory_mcp.session import client_key
from tests.memory_mcp.test_mcp_raised import NOTE_ANSWER, PLANTED, _add, _plant, _recall_then_add


def _kept(mcp_home, name: str = "desk"):
    return raised.file_for(mcp_home.state, mcp_home.home.absolute(), client_key(name))


def _remove_recall_months(mcp_home) -> None:
    for month in (mcp_home.home / "memory" / "recalls").glob("*.jsonl"):
        month.unlink()


def _lines(mcp_home, words: str) -> list[str]:
    return [line for line in mcp_home.stderr.read_text().splitlines() if words in line]


def test_the_journals_untrusted_write_keeps_the_client_untrusted(mcp_home):
    anyio.run(_plant, mcp_home)
    hit, add = anyio.run(_recall_then_add, mcp_home, "desk")
    assert add.content[0].text.startswith(NOTE_ANSWER)

    shutil.rmtree(mcp_home.state)
    _remove_recall_months(mcp_home)
    assert anyio.run(_add, mcp_home, "desk", PLANTED).startswith(NOTE_ANSWER)
    assert PLANTED not in mcp_home.memory_file("user.md")
    said = _lines(mcp_home, "memoryd's edit journal shows its session mcp-desk-")
    assert len(said) == 1 and "wrote as untrusted" in said[0], said
    assert json.loads(_kept(mcp_home).read_text())["untrusted"] is True


def test_a_recall_log_with_no_month_though_the_journal_names_the_client_fails_closed(mcp_home):
    assert anyio.run(_add, mcp_home, "desk", "Lives in Lisbon.").startswith("user.md updated")
    assert not list((mcp_home.home / "memory" / "recalls").glob("*.jsonl"))

    shutil.rmtree(mcp_home.state)
    assert anyio.run(_add, mcp_home, "desk", "Prefers UTC.").startswith(NOTE_ANSWER)
    said = _lines(mcp_home, "holds no month although its edit journal names its session mcp-desk-")
    assert len(said) == 1 and "memory-mcp trust-again --client desk" in said[0], said
    assert json.loads(_kept(mcp_home).read_text())["untrusted"] is True

    # a client the journal does not name (its first connection) starts as registered
    assert anyio.run(_add, mcp_home, "desk-top", "Prefers tea.").startswith("user.md updated")


def test_a_client_whose_trusted_writes_a_recall_log_month_stands_beside_stays_trusted(mcp_home):
    async def recall_and_add() -> str:
        async with mcp_home.connect("--trust", "trusted", name="desk") as client:
            await client.call_tool("recall", {"query": "Lisbon"})
            add = await client.call_tool(
                "memory", {"action": "add", "file": "user", "text": "Lives in Lisbon."}
            )
        return add.content[0].text

    assert anyio.run(recall_and_add).startswith("user.md updated")
    shutil.rmtree(mcp_home.state)
    assert anyio.run(_add, mcp_home, "desk", "Prefers UTC.").startswith("user.md updated")
    assert len(_lines(mcp_home, "nor its edit journal one writing as untrusted")) == 2


def test_the_untrusted_registrations_own_writes_do_not_count(mcp_home):
    async def untrusted_note() -> None:
        async with mcp_home.connect(name="desk") as client:  # desk registered untrusted too
            await client.call_tool("memory", {"action": "note", "text": "Read a web page."})

    anyio.run(untrusted_note)
    edits = "".join(p.read_text() for p in (mcp_home.home / "memory" / "edits").glob("*.jsonl"))
    assert '"call": "mcp-untrusted-call-1"' in edits, edits
    assert anyio.run(_add, mcp_home, "desk", "Prefers UTC.").startswith("user.md updated")
    shutil.rmtree(mcp_home.state)
    assert anyio.run(_add, mcp_home, "desk", "Lives in Lisbon.").startswith(NOTE_ANSWER)
