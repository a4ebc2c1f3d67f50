"""bxctl --json prints JSON as RFC 8259 has it, or nothing: a peer on the owner socket answering
NaN, Infinity or a number too large for a float (1e999), which Python's parser takes, is a bad
answer (exit 1, one line), never printed. And bxctl reindex says the session logs left out are
not known (null in --json) when memoryd did not answer for its index, never 0."""

import json

import pytest
from typer.testing import CliRunner

from bxctl import common, sessionindex
from bxctl.cli import app
from proto.messages import MemoryAdmin, MemoryAdminReply, Reindex, Reindexed
from tests.fakepeer import served_owner

runner = CliRunner()
BUSY = "this request was not read and nothing was done: ask again when one of them is answered"


class Refused(Exception):
    pass


class Peer:
    """A peer on the owner socket: every memory_admin is answered with `answer`, except the
    stats a program asks (reindex's, after it), answered with `state` (refused as busy `busy`
    times first; refused outright when state is None)."""

    def __init__(self):
        self.answer = "{}"
        self.state: dict | None = None
        self.busy = 0

    async def handle(self, message):
        if isinstance(message, Reindex):
            return Reindexed(logs=2, records=30, notes=1)
        if not isinstance(message, MemoryAdmin):
            raise Refused("unexpected")
        if message.command != "stats" or json.loads(message.arg).get("shown") is not False:
            return MemoryAdminReply(text=self.answer)
        if self.busy:
            self.busy -= 1
            raise Refused(f"memoryd owner socket is busy: 1 connection open, its cap; {BUSY}")
        if self.state is None:
            raise Refused("stats stopped")
        return MemoryAdminReply(text=json.dumps({"index": self.state}))


@pytest.fixture
def peer(tmp_path):
    path = tmp_path / "run" / "owner-memory" / "admin.sock"
    fake = Peer()
    with served_owner(path, fake.handle, (Refused,)):
        fake.home = tmp_path
        yield fake


def _run(peer: Peer, *argv: str):
    return runner.invoke(app, list(argv), env={"BOXMAKER_HOME": str(peer.home)})


NOT_JSON = [
    '{"total": NaN, "shown": 1, "edits": []}',
    '{"total": 1, "shown": Infinity, "edits": []}',
    '{"total": 1, "cut": -Infinity, "edits": []}',
    '{"total": 1e999, "edits": []}',
    '{"hits": [{"score": -1e400}]}',
]
COMMANDS = [
    ["memory", "log", "--json"],
    ["memory", "pending", "--json"],
    ["memory", "stats", "--json"],
    ["memory", "block", "--json"],
    ["memory", "show", "2026-09-24-0001", "--json"],
    ["memory", "search", "tea", "--json"],
]


@pytest.mark.parametrize("answer", NOT_JSON)
@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: argv[1])
def test_numbers_json_cannot_carry_are_a_bad_answer(peer, answer, argv):
    peer.answer = answer
    result = _run(peer, *argv)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr == "bxctl: bad answer from memoryd: not JSON\n"


def test_json_numbers_that_fit_are_printed_as_they_came(peer):
    peer.answer = '{"total": 1e308, "shown": -2.5e-3, "cut": 123456789012345678901234567890}'
    result = _run(peer, "memory", "log", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "total": 1e308,
        "shown": -2.5e-3,
        "cut": 123456789012345678901234567890,
    }


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_safe_json_never_writes_what_json_has_not(value):
    with pytest.raises(ValueError):
        common.safe_json({"n": value})


def test_reindex_says_not_known_when_the_index_state_is_not_answered(peer):
    peer.state = None
    said = _run(peer, "reindex")
    assert said.exit_code == 0, said.output
    assert said.stdout == (
        "reindexed: 2 logs, 30 records, 1 note; session logs left aside or not indexed: not "
        "known (memoryd did not answer for its index; bxctl memory stats names them)\n"
    )
    as_json = _run(peer, "reindex", "--json")
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == {
        "logs": 2,
        "records": 30,
        "notes": 1,
        "left_aside": None,
        "not_indexed": None,
    }


@pytest.mark.parametrize(
    "state",
    [
        {"left_aside_total": float("nan"), "not_indexed_total": 0},  # sent as NaN: not JSON
        {"left_aside_total": True, "not_indexed_total": 0},
        {"not_indexed_total": 0},
    ],
)
def test_a_count_the_state_does_not_give_is_not_known(peer, state):
    peer.state = state
    as_json = _run(peer, "reindex", "--json")
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["left_aside"] is None


def test_reindex_counts_the_state_gives_are_said(peer, monkeypatch):
    monkeypatch.setattr(sessionindex, "BUSY_WAIT", 0.01)
    peer.state = {"left_aside_total": 2, "not_indexed_total": 0}
    peer.busy = 2  # the reindex's own connection still held a moment: asked again
    said = _run(peer, "reindex")
    assert said.exit_code == 0, said.output
    assert said.stdout == (
        "reindexed: 2 logs, 30 records, 1 note; 2 session logs left aside, wholly or from a "
        "damaged record (bxctl memory stats names them and why)\n"
    )
    peer.busy = 2
    as_json = json.loads(_run(peer, "reindex", "--json").stdout)
    assert (as_json["left_aside"], as_json["not_indexed"]) == (2, 0)


def test_a_memoryd_busy_past_the_tries_leaves_the_counts_not_known(peer, monkeypatch):
    monkeypatch.setattr(sessionindex, "BUSY_WAIT", 0.01)
    peer.state = {"left_aside_total": 2, "not_indexed_total": 0}
    peer.busy = sessionindex.BUSY_TRIES
    said = _run(peer, "reindex")
    assert said.exit_code == 0, said.output
    assert said.stdout.endswith(sessionindex.NOT_KNOWN + "\n")
    assert peer.busy == 0  # asked BUSY_TRIES times, no more
