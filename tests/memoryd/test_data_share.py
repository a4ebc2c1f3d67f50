"""The owner's data commands, previews and dry runs included, hold at most datalock.SHARE of
memoryd's readers at once: one more is refused at once in one line naming what runs, and
memory_block and recall always find a reader."""

import asyncio
import contextlib
import json
import threading

import pytest

from memoryd.data import backup, exchange, forget, importing
from memoryd.errors import AdminRefused
from memoryd.owner import datalock
from memoryd.owner.datalock import DataTurns
from proto.messages import MemoryAdmin, MemoryBlock, MemoryBlockReply
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The spare key is under the blue flowerpot."
HEAD = {"format": "boxmaker-memory-export", "version": 1}

# (running: command and whether it changes memory, then asked): what the refusal names, or None
CASES = [
    ([("import", False)], ("import", False), None),
    ([("import", True)], ("import", False), None),
    ([("import", True)], ("forget", False), None),
    ([("export", True)], ("backup", True), None),
    ([("import", False)], ("forget", True), None),
    ([("import", False), ("import", False)], ("import", False), "2 import dry runs are running"),
    (
        [("import", True), ("forget", False)],
        ("import", False),
        "an import and a forget preview are running",
    ),
    ([("export", True), ("export", True)], ("forget", False), "2 exports are running"),
    (
        [("backup", True), ("import", False)],
        ("export", True),
        "a backup and an import dry run are running",
    ),
]


@pytest.mark.parametrize(("running", "asked", "named"), CASES)
def test_at_most_share_commands_run_at_once_and_one_more_is_refused_naming_them(
    running, asked, named
):
    turns = DataTurns(share=2)
    with contextlib.ExitStack() as stack:
        for command, changes in running:
            stack.enter_context(turns.turn(command, changes))
        if named is None:
            with turns.turn(*asked):
                pass
        else:
            with pytest.raises(AdminRefused) as e:
                with turns.turn(*asked):
                    pass
            said = str(e.value)
            assert said.startswith(f"refused: {named}, and at most 2 ")
            assert "\n" not in said and "run it again" in said
    with turns.turn(*asked):  # once they ended, it starts
        pass


def test_the_share_leaves_readers_for_memory_block_and_recall():
    assert 0 < datalock.SHARE <= 4 - 2  # of service.py's 4 readers


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": SECRET})
    yield m
    m.close()


def _held(monkeypatch, module, name, go: threading.Event, reached: list):
    """module.name made to wait, each time it is called, until go is set."""
    real = getattr(module, name)

    def waiting(*args, **kwargs):
        reached.append(name)
        go.wait(20)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, waiting)


HOLD = {  # command: where it is held, its arg
    "import": (importing, "parse", {"name": "in.jsonl", "dry_run": True}),
    "forget": (forget, "preview", {"id": SECRET, "dry_run": True}),
    "export": (exchange, "items", {"format": "jsonl"}),
    "backup": (backup, "make", {}),
}


@pytest.mark.parametrize(
    ("held", "asked"),
    [
        (("import", "import"), ("import", "import")),
        (("forget", "export"), ("import", "backup")),
        (("backup", "import"), ("forget", "export")),
    ],
)
def test_memory_block_is_answered_while_the_owners_long_commands_run(md, monkeypatch, held, asked):
    (md.home.root / "backups").mkdir(mode=0o700, exist_ok=True)
    (md.home.root / "backups" / "in.jsonl").write_text(json.dumps(HEAD) + "\n")
    go, reached = threading.Event(), []
    for command in {*held, *asked}:
        module, name, _ = HOLD[command]
        _held(monkeypatch, module, name, go, reached)

    def admin(command: str):
        arg = json.dumps(HOLD[command][2])
        return md.service.on_admin(MemoryAdmin(command=command, arg=arg))

    async def scenario() -> None:
        running = [asyncio.create_task(admin(command)) for command in held]
        try:
            for _ in range(500):
                if len(reached) == len(held):
                    break
                await asyncio.sleep(0.01)
            assert len(reached) == len(held)
            for command in asked:
                with pytest.raises(AdminRefused, match="data commands run at once"):
                    await asyncio.wait_for(admin(command), 5)
            block = await asyncio.wait_for(md.service.on_loop(MemoryBlock()), 5)
            assert isinstance(block, MemoryBlockReply) and SECRET in block.text
            assert all(not task.done() for task in running)  # they still hold their readers
        finally:
            go.set()
            await asyncio.gather(*running, return_exceptions=True)
        for task in running:
            assert task.exception() is None

    try:
        asyncio.run(scenario())
    finally:
        go.set()
