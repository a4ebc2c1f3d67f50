"""`bxctl memory stats --json` gives a changed recall mode's build progress (rows built, of about
how many) as a field, "mode_build", not only in the text note; null once the build is done, and
when none was under way."""

import asyncio
import json

import pytest

from memoryd import modes
from memoryd.config import load
from memoryd.server import prepare
from proto.messages import MemoryAdmin
from tests.memoryd.test_mode_build_parts import PART, _held_part, _spec_home
from tests.memoryd.test_mode_prepare import CONTEXT
from tests.memoryd.test_socket_cleanup import _config


async def _stats(service) -> tuple[str, dict]:
    text = (await service.on_admin(MemoryAdmin(command="stats", arg="{}"))).text
    said = await service.on_admin(MemoryAdmin(command="stats", arg='{"json": true}'))
    return text, json.loads(said.text)


@pytest.fixture()
def parts(monkeypatch):
    monkeypatch.setattr(modes, "FILL_BATCH", PART)


def test_stats_json_says_how_far_a_mode_build_is(tmp_path, monkeypatch, parts):
    home = _spec_home(tmp_path, {"mm-1": 10, "mm-2": 8})
    _, started, release, _ = _held_part(monkeypatch, held_at=3)
    service = prepare(load(_config(tmp_path, CONTEXT)))

    async def scenario():
        task = asyncio.create_task(service.catch_up())
        await asyncio.wait_for(asyncio.to_thread(started.wait, 20), 30)
        during = await _stats(service)
        release.set()
        await asyncio.wait_for(task, 20)
        return during, await _stats(service)

    try:
        (text, during), (_, after) = asyncio.run(scenario())
    finally:
        release.set()
        service.close()
    build = during["mode_build"]
    assert build == {"built": PART, "of": 18}  # the first part made the tables, one fed rows
    assert f"{build['built']} of about {build['of']} rows built" in text
    assert after["mode_build"] is None
    assert home.index_db.exists()


def test_stats_json_says_null_when_no_build_is_under_way(tmp_path):
    _spec_home(tmp_path, {"mm-1": 4})
    service = prepare(load(_config(tmp_path)))
    try:
        _, stats = asyncio.run(_stats(service))
    finally:
        service.close()
    assert "mode_build" in stats and stats["mode_build"] is None
