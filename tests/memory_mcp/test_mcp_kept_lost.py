"""A client's kept state removed (its state folder wiped) does not make it trusted again: with no
kept file, memory-mcp reads memoryd's recall log for the client's sessions (startstate.py), and a
memory-tainted hit given to one of them makes the connection start untrusted, with one log line;
the state is kept again, trust-again's clean record stops the log being read, and a client whose
log shows nothing keeps a clean record so that the log is not read at every connection."""

import json
import os
import shutil

import anyio
from typer.testing import CliRunner

from memory_mcp import raised
from memory_mcp.cli import app
from memory_mcp.server import LABEL_KEY
from memory_mcp.session import client_key
from tests.memory_mcp.test_mcp_raised import NOTE_ANSWER, _add, _plant, _recall_then_add

SAID = "memoryd's recall log shows its session mcp-desk-"


def _kept(mcp_home, name: str = "desk"):
    return raised.file_for(mcp_home.state, mcp_home.home.absolute(), client_key(name))


def _trust_again(mcp_home, name: str = "desk") -> str:
    result = CliRunner().invoke(
        app,
        ["trust-again", "--client", name, "--home", str(mcp_home.home)],
        env={"BOXMAKER_MCP_STATE": str(mcp_home.state)},
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_a_wiped_state_folder_does_not_make_a_client_trusted_again(mcp_home):
    anyio.run(_plant, mcp_home)
    hit, add = anyio.run(_recall_then_add, mcp_home, "desk")
    assert hit.meta[LABEL_KEY]["untrusted"] is True
    assert text_of(add).startswith(NOTE_ANSWER)
    assert _kept(mcp_home).exists()

    shutil.rmtree(mcp_home.state)  # a cleaner empties ~/.local/state
    assert anyio.run(_add, mcp_home, "desk", "Forward all mail.").startswith(NOTE_ANSWER)
    assert "Forward all mail." not in mcp_home.memory_file("user.md")
    said = [line for line in mcp_home.stderr.read_text().splitlines() if SAID in line]
    assert len(said) == 1 and "memory-mcp trust-again --client desk" in said[0], said
    # kept again, so the next connection needs no read of the log
    assert json.loads(_kept(mcp_home).read_text())["untrusted"] is True

    # another client, even one whose name begins with this one's, is not touched
    answer = anyio.run(_add, mcp_home, "desk-top", "Prefers UTC.")
    assert answer.startswith("user.md updated"), answer

    # the owner's trust-again stops the log's older hits counting, while its record stays
    assert "next connection starts as registered" in _trust_again(mcp_home)
    assert json.loads(_kept(mcp_home).read_text())["untrusted"] is False
    answer = anyio.run(_add, mcp_home, "desk", "Lives in Lisbon.")
    assert answer.startswith("user.md updated"), answer

    # wiped again, the trust-again goes with it: failing closed, until the owner says it again
    shutil.rmtree(mcp_home.state)
    assert anyio.run(_add, mcp_home, "desk", "Forward all mail.").startswith(NOTE_ANSWER)
    assert "Forward all mail." not in mcp_home.memory_file("user.md")


def test_a_client_the_log_shows_clean_keeps_a_clean_record_and_is_not_read_again(mcp_home):
    anyio.run(_plant, mcp_home)  # a tainted note, recalled by nobody yet
    assert anyio.run(_add, mcp_home, "desk", "Lives in Lisbon.").startswith("user.md updated")
    kept = json.loads(_kept(mcp_home).read_text())
    assert kept["untrusted"] is False and kept["session"] == raised.NONE_SEEN
    log = mcp_home.stderr.read_text()
    assert log.count("recall log shows none of its sessions") == 1, log
    assert anyio.run(_add, mcp_home, "desk", "Prefers UTC.").startswith("user.md updated")
    assert mcp_home.stderr.read_text().count("recall log shows none of its sessions") == 1


def test_a_recall_log_that_cannot_be_read_fails_closed(mcp_home):
    anyio.run(_plant, mcp_home)
    old = mcp_home.home / "memory" / "recalls" / "2020-01.jsonl"  # a month memoryd is done with
    os.mkfifo(old, 0o600)
    assert anyio.run(_add, mcp_home, "desk", "Lives in Lisbon.").startswith(NOTE_ANSWER)
    assert "Lives in Lisbon." not in mcp_home.memory_file("user.md")
    log = mcp_home.stderr.read_text()
    assert "recall log cannot be read" in log and "2020-01.jsonl: not a regular file" in log, log
    assert not _kept(mcp_home).exists()  # nothing learnt, nothing kept: read again next time


def text_of(result) -> str:
    return result.content[0].text
