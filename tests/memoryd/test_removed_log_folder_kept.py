"""A session's log the owner removes while memoryd runs, its folder (and the baseline loopd-shim
leaves beside it) kept: sessions/ is as it was, yet memoryd's look (removedlook.py) drops the
session from the index within LOOK_SECONDS, without stats or a restart, and recall stops serving
it. In-process on a real home and a real index, the look on a real event loop."""

import asyncio
import json
import logging
import time

import pytest

from memoryd import removedlook
from memoryd.owner import indexstate
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.test_catch_up_again import said_meanwhile

PRIVATE = "my bank PIN hint is the quokka birthday"
OTHER = "the quokka enclosure opens at nine"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    said_meanwhile(m, "mm-sess0001", PRIVATE)
    said_meanwhile(m, "mm-sess0002", OTHER)
    for session in ("mm-sess0001", "mm-sess0002"):
        (m.home.session_log(session).parent / "0.baseline.json").write_text('{"system": "x"}')
    m.index.catch_up_all()
    yield m
    m.close()


def test_a_log_removed_from_a_folder_that_stays_leaves_the_index_at_the_look(
    md, monkeypatch, caplog
):
    monkeypatch.setattr(removedlook, "LOOK_SECONDS", 0.1)
    assert "quokka birthday" in md.recall("quokka")

    async def scenario() -> bool:
        md.index.catching_up = None  # the start's catch-up is done
        md.service._catching.look.start()
        await asyncio.sleep(0.3)  # a few looks at sessions/ as it is
        md.home.session_log("mm-sess0001").unlink()  # sessions/ itself does not change
        deadline = time.monotonic() + 5
        while "quokka birthday" in md.recall("quokka"):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    with caplog.at_level(logging.INFO, logger="memoryd"):
        assert asyncio.run(scenario()), "the removed log is still recalled"
    out = md.recall("quokka")
    assert "enclosure opens at nine" in out and "quokka birthday" not in out
    said = [r.getMessage() for r in caplog.records if "left the index" in r.getMessage()]
    assert said == [
        f"session log {md.home.session_log('mm-sess0001')}: gone; its records left the index"
    ]
    assert (md.home.sessions / "mm-sess0001" / "0.baseline.json").exists()  # left as it was
    stats = json.loads(md.admin("stats", '{"json": true}'))
    assert indexstate.lines(stats["index"]) == ["index: every session log indexed"]


def test_each_look_finds_a_log_removed_since_the_last(md):
    look = md.service._catching.look
    assert asyncio.run(look.once()) == 0
    assert asyncio.run(look.once()) == 0  # sessions/ as at the last look
    md.home.session_log("mm-sess0002").unlink()
    assert asyncio.run(look.once()) == 1
    assert asyncio.run(look.once()) == 0  # dropped once
    assert "enclosure opens at nine" not in md.recall("quokka")
    assert "quokka birthday" in md.recall("quokka")
