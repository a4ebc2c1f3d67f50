"""Hostile recall queries and session ids, over memoryd's sockets.

Each query of the catalogue gets its answer: hits, the no-matches sentence, or a refusal of its
arguments; none reaches SQLite as syntax, the index is whole afterwards and every recall is in the
recall log. Session ids that try to leave sessions/ are refused before any path is made.
"""

import json

import pytest

from memoryd.search.defuse import defuse
from proto.client import RemoteError, request
from proto.messages import MemoryAdmin, Reindex, SessionUpdated
from tests.reliability.calls import memory, recall, tool_call
from tests.reliability.hostile_catalogue import HIT, NONE, QUERIES, SESSION_IDS

SEEDED = "The launch window moved to the harbour on Thursday."


@pytest.fixture(scope="module")
def seeded(memoryd):
    assert memory(memoryd, action="note", text=SEEDED).ok
    return memoryd


@pytest.mark.parametrize("case", QUERIES, ids=[q.name for q in QUERIES])
def test_hostile_query(seeded, case):
    answer = recall(seeded, case.query)
    if case.expected == HIT:
        assert answer.ok, answer.output
        first = answer.output.split("\n[2]")[0]
        assert first.startswith("[1] memory · note,") and case.word in first, answer.output
    elif case.expected == NONE:
        # The query is echoed defused: controls and invisibles shown, never raw.
        echoed = f'(no matches for "{defuse(case.query)}")'
        assert answer.ok and answer.output == echoed, answer.output
        assert "\x00" not in answer.output and "\u200b" not in answer.output
    else:
        assert not answer.ok and answer.output.startswith(case.expected), answer.output


@pytest.mark.parametrize("k", [0, 11, -1, "5", 5.5, True, None, 10**20])
def test_k_out_of_range_or_of_another_type_is_refused(seeded, k):
    answer = tool_call(seeded, "recall", {"query": "harbour", "k": k})
    assert not answer.ok and answer.output.startswith("recall: k:"), answer.output


@pytest.mark.parametrize(
    "arguments",
    ["", "null", "[]", '"harbour"', "{", '{"query": "harbour", "extra": 1}', '{"q": "x"}', "\x00"],
)
def test_arguments_that_are_not_a_recall_object_are_refused(seeded, arguments):
    answer = tool_call(seeded, "recall", arguments)
    assert not answer.ok and answer.output.startswith("recall:"), answer.output


def test_after_the_hostile_queries_the_index_is_whole_and_every_recall_is_logged(seeded):
    for case in QUERIES:
        recall(seeded, case.query)
    answer = recall(seeded, "harbour")
    assert answer.ok and "harbour" in answer.output
    reply = request(seeded.admin_socket, Reindex(), timeout=60)
    assert reply.notes >= 1
    lines = []
    for path in (seeded.home / "memory/recalls").glob("*.jsonl"):
        lines += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    logged = {line["query"] for line in lines}
    assert {q.query for q in QUERIES if q.expected in (HIT, NONE)} <= logged


@pytest.mark.parametrize("session", SESSION_IDS, ids=[repr(s)[:40] for s in SESSION_IDS])
def test_session_ids_that_leave_sessions_are_refused(seeded, session, tmp_path):
    sessions = seeded.home / "sessions"
    before = sorted(p.name for p in sessions.iterdir()) if sessions.exists() else []
    with pytest.raises(RemoteError, match="invalid session_updated body: session"):
        request(seeded.loop_socket, SessionUpdated.model_construct(session=session))
    with pytest.raises(RemoteError, match="invalid memory_call body: request.session"):
        tool_call(seeded, "recall", {"query": "harbour"}, session=session)
    after = sorted(p.name for p in sessions.iterdir()) if sessions.exists() else []
    assert after == before


def test_a_valid_session_with_no_log_is_refused_with_its_name(seeded):
    with pytest.raises(RemoteError, match="no session mm-nolog under sessions/"):
        request(seeded.loop_socket, SessionUpdated(session="mm-nolog"))


@pytest.mark.parametrize("arg", ["../../etc/passwd", "2026-01-01-0001/../x", "\x00", "a" * 200])
def test_admin_ids_are_refused(seeded, arg):
    for command in ("undo", "accept", "reject"):
        reply = None
        try:
            reply = request(seeded.admin_socket, MemoryAdmin(command=command, arg=arg))
        except RemoteError as e:
            reply = e
        assert "refused" in str(getattr(reply, "text", reply)), reply
