"""A session log made shorter than what the index read (rewritten by hand, a copy put in its place)
while memoryd runs: stats does not say "every session log indexed" while recall serves records the
log no longer holds; it names the log, and says it no more once the log is read again. Real
files, real SQLite."""

import json
from pathlib import Path

import pytest

from memoryd.owner import indexstate
from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def md(tmp_path: Path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def index_lines(m: Memoryd) -> list[str]:
    """stats' index lines, with the logs they name (not the sizes' sessions/ line)."""
    said = m.admin("stats", "{}").splitlines()
    return [x for x in said if x.startswith("index") or ".jsonl:" in x]


def test_a_log_shorter_than_the_index_read_is_said_until_read_again(md):
    md.say("alpha", "talk of apple", "talk of banana", "talk of cherry")
    assert index_lines(md) == ["index: every session log indexed"]
    log = md.home.session_log("alpha")
    lines = log.read_bytes().splitlines(keepends=True)
    before = log.stat().st_size
    log.write_bytes(lines[0])  # the owner keeps only the first record
    assert "talk of cherry" in md.recall("cherry")  # what the index still serves
    said = index_lines(md)
    assert said == [
        "index: 1 session log is shorter than the index read (rewritten or replaced?): recall and"
        " search may serve records it no longer holds until read again, at the session's next"
        " turn, a restart or bxctl reindex:",
        f"  sessions/alpha/0.jsonl: {len(lines[0]):,} bytes now, the index read {before:,}",
    ]
    state = json.loads(md.admin("stats", {"json": True}))["index"]
    assert state["shorter_total"] == 1 and state["shorter"][0]["log"] == "sessions/alpha/0.jsonl"
    # The session's next turn reads it again: what it no longer holds is gone, and so is the line.
    md.index.catch_up_session("alpha")
    assert "talk of cherry" not in md.recall("cherry")
    assert index_lines(md) == ["index: every session log indexed"]


def test_two_shorter_logs_read_in_the_plural():
    found = {
        "catching_up": None,
        "not_indexed_total": 0,
        "left_aside_total": 0,
        "shorter_total": 2,
        "shorter": [{"log": "sessions/a/0.jsonl", "problem": "1 bytes now, the index read 9"}],
    }
    head = indexstate.lines(found)[0]
    assert head.startswith("index: 2 session logs are shorter than the index read")
    assert "records they no longer hold" in head
