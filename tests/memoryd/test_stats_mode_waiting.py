"""While the recall mode's tables are not built (being built after a change of mode, a build that
found no room and is tried again, one that failed), `bxctl memory stats` and `scripts/stack status`
(which prints the index lines of stats' JSON) say so first, with why, and how recall answers
meanwhile (the spec's search with its note, or a refusal), never "every session log indexed"
alone; once built, nothing of it is said (owner/indexstate.py)."""

import asyncio
import json

from memoryd.config import load
from memoryd.errors import IndexDamaged, IndexUnwritable
from memoryd.index.index import DAMAGED, Index
from memoryd.owner import indexstate
from memoryd.server import prepare
from proto.messages import MemoryAdmin
from tests.memoryd.test_index_full_disk import FULL, _room, _service
from tests.memoryd.test_mode_prepare import CONTEXT, _build_fails_once, _spec_index
from tests.memoryd.test_scheduling import _call
from tests.memoryd.test_socket_cleanup import _config
from tests.recalling import recall_on

HEADS = {
    "waiting": "index: recall mode context's tables cannot be built now (memoryd tries again); ",
    "building": "index: recall mode context's tables are not built yet (being built); ",
    "failed": "index: recall mode context's tables could not be built; ",
}


def _expected(state: str, refused: str | None, answer: str | None) -> str:
    """The line stats gives, from what a recall did meanwhile: refused, or answered by the spec's
    search with a note (its last line) saying why."""
    if refused is not None:
        return HEADS[state] + f"every recall is refused meanwhile: {refused}"
    assert answer is not None
    note = answer.splitlines()[-1]
    return (
        HEADS[state] + "recall answers meanwhile by the spec's search over the rows indexed,"
        f" each answer noting: {note}"
    )


async def _stats(service) -> tuple[list[str], dict]:
    """stats' index lines as the owner reads them, and its JSON's index part (what status reads)."""
    text = (await service.on_admin(MemoryAdmin(command="stats", arg="{}"))).text
    said = await service.on_admin(MemoryAdmin(command="stats", arg='{"json": true}'))
    lines = [line for line in text.splitlines() if line.startswith("index")]
    return lines, json.loads(said.text)["index"]


def test_a_mode_build_with_no_room_is_said_with_why_until_it_is_built(tmp_path, monkeypatch):
    _spec_index(tmp_path)
    service = _service(tmp_path, monkeypatch, CONTEXT)
    _room(service.index._writer, room=False)  # before the catch-up: nothing runs on the writer

    async def scenario():
        task = asyncio.create_task(service.catch_up())
        for _ in range(500):
            if service.index.mode_waiting and service.index.catching_up is None:
                break
            await asyncio.sleep(0.01)
        refused = answer = None
        try:
            answer = (await service.on_broker(_call("recall", {"query": "launch window"}))).output
        except IndexUnwritable as error:
            refused = str(error)
        waiting = await _stats(service)
        await service._write(_room, service.index._writer, True)
        await asyncio.wait_for(task, 10)  # the catch-up ends once the mode is built
        return refused, answer, waiting, await _stats(service)

    try:
        refused, answer, (lines, state), (after, state_after) = asyncio.run(scenario())
    finally:
        service.close()
    said = _expected("waiting", refused, answer)
    assert FULL in said and "once there is room" in said  # why, and until when
    assert lines == [said, "index: every session log indexed"]
    assert state["mode"]["state"] == "waiting" and state["mode"]["recall"] == refused
    assert indexstate.lines(state) == lines  # scripts/stack status prints these
    assert after == ["index: every session log indexed"]
    assert "mode" not in state_after


def test_a_changed_mode_being_built_is_said_until_it_is_built(tmp_path):
    home = _spec_index(tmp_path)
    index = Index(home, mode="context")
    index.open(defer_mode=True)
    try:
        index.catching_up = None  # as once the start's catch-up has read every log
        lines = indexstate.lines(indexstate.state(index))
        refused = answer = None
        try:
            answer = recall_on(index, "launch window", session="mm-ask").text
        except IndexDamaged as error:
            refused = str(error)
        index.prepare_mode()
        after = indexstate.lines(indexstate.state(index))
    finally:
        index.close()
    said = _expected("building", refused, answer)
    assert "being prepared" in said
    assert lines == [said, "index: every session log indexed"]
    assert after == ["index: every session log indexed"]


def test_a_mode_that_failed_to_build_is_said_until_a_reindex(tmp_path, monkeypatch):
    _spec_index(tmp_path)
    _build_fails_once(monkeypatch)
    service = prepare(load(_config(tmp_path, CONTEXT)))

    async def scenario():
        await service.catch_up()
        return await _stats(service)

    try:
        lines, state = asyncio.run(scenario())
    finally:
        service.close()
    assert lines == [_expected("failed", DAMAGED, None), "index: every session log indexed"]
    assert state["mode"]["state"] == "failed" and state["mode"]["recall"] == DAMAGED
