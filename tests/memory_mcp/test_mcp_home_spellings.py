"""One home spelled two ways on two registrations of one client (a symbolic link to it, a `..`)
is one home for the client's kept state: a memory-tainted hit answered through one makes the
other's writes notes, the owner's trust-again clears it whatever spelling is given, and a state
kept by an earlier version (under the path as it was typed) still counts after an upgrade."""

import hashlib
import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from typer.testing import CliRunner

from memory_mcp import raised
from memory_mcp.cli import app
from memory_mcp.keptfiles import kept_files
from memory_mcp.session import client_key
from tests.memory_mcp.conftest import CLIENT_TIMEOUT
from tests.memory_mcp.test_mcp_raised import NOTE_ANSWER, PLANTED, text_of

CLIENT = "claude-desktop"
ADD = {"action": "add", "file": "user", "text": PLANTED}


@asynccontextmanager
async def _connect(mcp_home, home: Path, trust: str):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_mcp", "--home", str(home), "--trust", trust],
        env={
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            "BOXMAKER_MCP_STATE": str(mcp_home.state),
        },
    )
    with open(mcp_home.stderr, "a") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog),
            client_info=types.Implementation(name=CLIENT, version="1.0"),
            read_timeout_seconds=CLIENT_TIMEOUT,
        ) as client:
            yield client


async def _add(mcp_home, home: Path, text: str = PLANTED) -> str:
    async with _connect(mcp_home, home, "trusted") as client:
        answer = await client.call_tool("memory", {"action": "add", "file": "user", "text": text})
    return text_of(answer)


async def _tainted_hit(mcp_home, home: Path) -> None:
    """The untrusted registration notes the planted sentence and recalls it: memory-tainted."""
    async with _connect(mcp_home, home, "untrusted") as client:
        await client.call_tool("memory", {"action": "note", "text": PLANTED})
        hit = await client.call_tool("recall", {"query": "invoice account"})
    assert hit.meta["boxmaker/label"]["untrusted"] is True


def _trust_again(mcp_home, home: Path) -> str:
    result = CliRunner().invoke(
        app,
        ["trust-again", "--client", CLIENT, "--home", str(home)],
        env={"BOXMAKER_MCP_STATE": str(mcp_home.state)},
    )
    assert result.exit_code == 0, result.output
    return result.output


def _link(mcp_home) -> Path:
    link = mcp_home.root / "linked-home"
    link.symlink_to(mcp_home.home)
    return link


def test_a_tainted_hit_through_a_symlinked_home_makes_the_real_homes_writes_notes(mcp_home):
    link = _link(mcp_home)
    assert anyio.run(_add, mcp_home, mcp_home.home, "Prefers UTC.").startswith("user.md updated")
    anyio.run(_tainted_hit, mcp_home, link)

    assert anyio.run(_add, mcp_home, mcp_home.home).startswith(NOTE_ANSWER)
    # a `..` in the path is the same home too
    dotted = mcp_home.home / "memory" / ".."
    assert anyio.run(_add, mcp_home, dotted).startswith(NOTE_ANSWER)
    assert PLANTED not in mcp_home.memory_file("user.md")

    # the owner's trust-again, given the other spelling, clears it for both
    assert "next connection starts as registered" in _trust_again(mcp_home, link)
    answer = anyio.run(_add, mcp_home, mcp_home.home, "Lives in Lisbon.")
    assert answer.startswith("user.md updated"), answer


def test_trust_again_given_another_spelling_clears_the_state(mcp_home):
    link = _link(mcp_home)
    anyio.run(_tainted_hit, mcp_home, mcp_home.home)
    assert anyio.run(_add, mcp_home, mcp_home.home).startswith(NOTE_ANSWER)

    assert "next connection starts as registered" in _trust_again(mcp_home, link)
    answer = anyio.run(_add, mcp_home, mcp_home.home, "Lives in Lisbon.")
    assert answer.startswith("user.md updated"), answer


def _legacy(mcp_home, spelling: Path) -> Path:
    """The file an earlier version kept the client's state in: named by the path as typed."""
    digest = hashlib.sha256(os.fsencode(str(spelling.absolute()))).hexdigest()[:16]
    return mcp_home.state / f"{client_key(CLIENT)}-{digest}.json"


def _write(path: Path, klass: str, untrusted: bool, session: str, since: str) -> None:
    path.parent.mkdir(mode=0o700, exist_ok=True)
    record = {"class": klass, "untrusted": untrusted, "session": session, "since": since}
    path.write_text(json.dumps(record))
    path.chmod(0o600)


def test_a_client_raised_before_an_upgrade_stays_raised_through_either_spelling(mcp_home):
    link = _link(mcp_home)
    old = _legacy(mcp_home, link)
    _write(old, "private", True, "mcp-claude-desktop-20261101T000000-000Z", "2026-11-01T00:00:00Z")

    # connected through the spelling the earlier version kept it under: raised, and carried over
    assert anyio.run(_add, mcp_home, link).startswith(NOTE_ANSWER)
    assert not old.exists()
    kept = kept_files(mcp_home.state, mcp_home.home, client_key(CLIENT))
    for path in kept.names:
        assert json.loads(path.read_text())["untrusted"] is True
    # so the real path's registration is raised too
    assert anyio.run(_add, mcp_home, mcp_home.home).startswith(NOTE_ANSWER)
    assert PLANTED not in mcp_home.memory_file("user.md")


def test_a_clean_record_of_an_earlier_version_sends_the_client_to_the_recall_log(mcp_home):
    """Before the upgrade the symlinked registration was given a memory-tainted hit (kept under
    its spelling, which the trusted registration never names); the real path's file held a clean
    record. That record could not see the other spelling, so the recall log is read."""
    link = _link(mcp_home)
    anyio.run(_tainted_hit, mcp_home, link)
    for path in mcp_home.state.iterdir():  # as the earlier version left the folder
        path.unlink()
    _write(
        _legacy(mcp_home, mcp_home.home), "public", False, raised.NONE_SEEN, "2026-11-01T00:00:00Z"
    )

    assert anyio.run(_add, mcp_home, mcp_home.home).startswith(NOTE_ANSWER)
    assert PLANTED not in mcp_home.memory_file("user.md")
    assert (
        "memoryd's recall log shows its session mcp-claude-desktop-" in mcp_home.stderr.read_text()
    )
