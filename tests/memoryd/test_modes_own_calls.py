"""What the agent did itself: in context and hybrid modes its own recall and memory calls come
after what was said; spec mode ranks them as the spec does."""

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from tests.memoryd.test_modes_context import said, user
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on


def called(time: str, name: str, arguments: str) -> dict:
    return {
        "type": "assistant",
        "time": time,
        "tool_calls": [{"id": f"c-{time}", "name": name, "arguments": arguments}],
    }


FIRST = [
    user("2026-03-01T10:00:00Z", "The launch window opens on 14 March and closes on the 18th"),
    said("2026-03-01T10:01:00Z", "Noted, I will plan the checklist around it"),
    user("2026-03-01T10:02:00Z", "Also the weather looks fine"),
]
SECOND = [
    user("2026-03-05T09:00:00Z", "When is the launch window again?"),
    called("2026-03-05T09:00:10Z", "recall", '{"query":"launch window"}'),
    called(
        "2026-03-05T09:00:20Z", "memory", '{"action":"add","text":"launch window 14 to 18 March"}'
    ),
    said("2026-03-05T09:00:30Z", "It opens on 14 March"),
]


@pytest.fixture
def home(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-first", FIRST)
    append(home, "mm-second", SECOND)
    return home


def answer(home: Home, mode: str) -> list[tuple[str, str | None]]:
    index = Index(home, mode=mode)
    index.open()
    try:
        index.catch_up_all()
        assert index.drain_embeddings(120)
        hits = recall_on(index, "launch window", k=10, session="mm-q").hits
    finally:
        index.close()
    return [(hit.session, hit.role) for hit in hits]


@pytest.mark.parametrize("mode", ["context", "hybrid"])
def test_the_agents_own_calls_never_outrank_what_was_said(home, mode):
    if mode == "hybrid":
        pytest.importorskip("onnxruntime")
    found = answer(home, mode)
    roles = [role for _, role in found]
    assert roles.count("call") == 2
    assert roles[-2:] == ["call", "call"]  # after every turn that matched
    assert ("mm-first", "user") in found


def test_spec_mode_ranks_them_as_the_spec_does(home):
    found = answer(home, "spec")
    assert found[0] == ("mm-second", "call")  # the recall call holds only the query's words
