"""A recall of many common words runs in a lane of its own: a few of them at once, from as many
sessions, no longer hold every reader while another session's recall of a rare word waits behind
them (at a million records each costs seconds, and the light one waited past brokerd's timeout).
Both answers are what they were."""

import asyncio
import json
import threading
from functools import partial

import pytest

from memoryd.index.index import Index
from memoryd.recall import heaviness
from proto import peer
from proto.messages import MemoryCall, ToolRequest
from tests.memoryd import owner_data_harness
from tests.memoryd.owner_data_harness import Memoryd

COMMON = "common words everywhere"
HEAVY_QUERY = "common words everywhere alike"
LIGHT_QUERY = "zebra"


@pytest.fixture
def md(tmp_path, monkeypatch, request):
    mode = getattr(request, "param", "spec")
    monkeypatch.setattr(owner_data_harness, "Index", partial(Index, mode=mode))
    m = Memoryd(tmp_path / "home")
    # Every row holds the common words; two hold the rare one.
    texts = [f"{COMMON} item{n} alike" for n in range(2_000)]
    texts[7] = f"{COMMON} zebra seen"
    texts[1_500] = "a zebra again"
    m.say("s-rows", *texts)
    # The common words hold some 8,000 rows here, as millions do at a million records.
    monkeypatch.setattr(heaviness, "HEAVY_ROWS", 4_000)
    yield m
    m.close()


def _recall(session: str, query: str, k: int = 5) -> MemoryCall:
    req = ToolRequest(
        session=session, call_id="c", tool="recall", arguments=json.dumps({"query": query, "k": k})
    )
    return MemoryCall(request=req, taint="private", untrusted=False)


def test_common_words_are_heavy_and_a_rare_word_beside_them_is_not(md):
    with md.index.reader() as conn:
        conn.execute("BEGIN")
        try:
            heavy = heaviness.rows_ranked(conn, HEAVY_QUERY.split(), 5)
            light = heaviness.rows_ranked(conn, ["zebra"], 5)
            # The rare word reads its two rows: fewer than k, so the plain query ranks them all.
            beside = heaviness.rows_ranked(conn, ["zebra", "common"], 5)
            fast = heaviness.rows_ranked(conn, ["zebra", "common"], 2)
        finally:
            conn.execute("ROLLBACK")
    assert heavy > 4_000 and light == 2
    assert beside == 2_001 and fast == 2


# The recall modes go through the same lanes: context's answers stay what they were too.
@pytest.mark.parametrize("md", ["spec", "context"], indirect=True)
def test_a_light_recall_is_answered_while_heavy_ones_run(md, monkeypatch, caplog):
    caplog.set_level("INFO", logger="memoryd")
    before_heavy = md.service.recaller.recall(HEAVY_QUERY, 5, session="x").text
    before_light = md.service.recaller.recall(LIGHT_QUERY, 5, session="x").text
    release = threading.Event()
    real = md.service.recaller.recall
    ran: list[tuple[str, str]] = []

    def slow(query, *args, **kwargs):
        ran.append((query, threading.current_thread().name))
        if query == HEAVY_QUERY:  # seconds at a million records
            release.wait(30)
        return real(query, *args, **kwargs)

    monkeypatch.setattr(md.service.recaller, "recall", slow)

    async def scenario():
        heavy = [
            asyncio.create_task(md.service.on_broker(_recall(f"heavy{n}", HEAVY_QUERY)))
            for n in range(6)
        ]
        await asyncio.sleep(0.3)  # the first heavy one runs, the others queue behind it
        try:
            light = await asyncio.wait_for(md.service.on_broker(_recall("light", LIGHT_QUERY)), 5)
            still = sum(not task.done() for task in heavy)
        finally:
            release.set()
        return light, still, await asyncio.gather(*heavy)

    light, still, heavy = asyncio.run(scenario())
    assert still == 6
    assert light.ok and light.output == before_light
    assert all(answer.ok and answer.output == before_heavy for answer in heavy)
    lanes = {query: {name.rsplit("_", 1)[0] for q, name in ran if q == query} for query, _ in ran}
    assert lanes == {HEAVY_QUERY: {"memoryd-heavy"}, LIGHT_QUERY: {"memoryd-reader"}}
    said = [r.getMessage() for r in caplog.records if "heavy lane" in r.getMessage()]
    assert len(said) == 6 and "session heavy3: recall c: runs in the heavy lane" in "\n".join(said)


def test_the_owners_search_of_common_words_runs_in_the_heavy_lane(md, monkeypatch):
    arg = json.dumps({"query": HEAVY_QUERY, "k": 3})
    before = asyncio.run(md.service._admin("search", arg))
    real = md.service.recaller.recall
    threads: list[str] = []

    def seen(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(md.service.recaller, "recall", seen)
    assert asyncio.run(md.service._admin("search", arg)) == before
    assert asyncio.run(md.service._admin("search", json.dumps({"query": "zebra"})))
    assert [name.rsplit("_", 1)[0] for name in threads] == ["memoryd-heavy", "memoryd-reader"]


def test_a_heavy_recall_whose_caller_gave_up_while_it_queued_is_not_run(md, monkeypatch):
    ran: list[str] = []
    real = md.service.recaller.recall
    monkeypatch.setattr(
        md.service.recaller,
        "recall",
        lambda query, *a, **kw: ran.append(query) or real(query, *a, **kw),
    )
    asked = iter([False])  # waiting when weighed, gone by its turn in the heavy lane

    async def given_up_on():
        peer.hold(lambda: next(asked, True))
        return await md.service.on_broker(_recall("heavy", HEAVY_QUERY))

    answer = asyncio.run(given_up_on())
    assert not answer.ok and "stopped waiting" in answer.output
    assert ran == []
