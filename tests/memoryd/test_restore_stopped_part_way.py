"""restore --replace: a disk error after the plan is written (the point of no return) is met by
laying the files again at once, and the restore ends as one that never failed; when that fails too,
memoryd refuses every read and write of memory, through its own handlers, until a restart
finishes the restore. Real homes, a real backup, the service's handlers; the error is injected
into lay.py's renames and folder fsyncs."""

import asyncio
import errno
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from memoryd.data import lay, layout
from memoryd.errors import MemorydError
from proto.messages import (
    MemoryAdmin,
    MemoryBlock,
    MemoryCall,
    Reindex,
    SessionUpdated,
    ToolRequest,
)
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.restore_lines import without_restore_lines

REFUSED = "refused: a restore stopped part way (Input/output error); restart memoryd to finish it"


class Fault:
    """EIO from one of lay.py's steps after the plan: the rename of a staged file (the second
    one on, so the home is left part old, part new), or the fsync of memory/ (every time, or only
    once the plan is dropped). times failures (None: every time), then the step works again;
    during is called on the writer at the first failure."""

    def __init__(self, monkeypatch, home, step: str, times: int | None, during=None):
        self.failed, self.times, self.during = 0, times, during
        if step == "rename":
            real, staged = os.replace, []

            def replace(src, dst, *a, **k):
                if ".restore-" in str(src) and ".restore-" not in str(dst):
                    staged.append(src)
                    if len(staged) > 1:
                        self._fail()
                return real(src, dst, *a, **k)

            monkeypatch.setattr(lay.os, "replace", replace)
            return
        real_fsync = lay.fsync_dir

        def fsync_dir(folder):
            dropped = not lay.plan_path(home).exists()
            if Path(folder) == home.memory and (step == "fsync" or dropped):
                self._fail()
            real_fsync(folder)

        monkeypatch.setattr(lay, "fsync_dir", fsync_dir)

    def _fail(self) -> None:
        if self.times is not None and self.failed >= self.times:
            return
        self.failed += 1
        if self.failed == 1 and self.during is not None:
            self.during()
        raise OSError(errno.EIO, "Input/output error")


def _memory(m: Memoryd) -> dict[str, bytes]:
    return {name: p.read_bytes() for name, p in layout.memory_files(m.home)}


def _leftovers(m: Memoryd) -> list[str]:
    return sorted(p.name for p in m.home.memory.iterdir() if p.name.startswith(".restore"))


def _homes(tmp_path) -> tuple[Memoryd, dict[str, bytes]]:
    """A home holding memory of its own, handed a backup made in another; the backup's files."""
    a = Memoryd(tmp_path / "a")
    try:
        a.call({"action": "add", "file": "memory", "text": "Fact from the backup."})
        a.call({"action": "add", "file": "user", "text": "User fact from the backup."})
        a.call({"action": "note", "text": "Bluefinch note from the backup."})
        made = a.data("backup")
        restored = _memory(a)
    finally:
        a.close()
    b = Memoryd(tmp_path / "b")
    b.call({"action": "add", "file": "memory", "text": "Old precious fact."})
    b.call({"action": "add", "file": "user", "text": "Old user fact."})
    shutil.copy(made["path"], b.home.root / "backups" / "a.tar.gz")
    return b, restored


def _call(tool: str, args: dict) -> MemoryCall:
    req = ToolRequest(session="s-clean", call_id="c1", tool=tool, arguments=json.dumps(args))
    return MemoryCall(request=req, taint="private", untrusted=False)


RESTORE = MemoryAdmin(command="restore", arg=json.dumps({"name": "a.tar.gz", "replace": True}))
ADD = {"action": "add", "file": "memory", "text": "Written after the restore."}


@pytest.mark.parametrize("step", ["rename", "fsync once the plan is dropped"])
def test_a_failure_after_the_plan_is_met_by_laying_again_at_once(tmp_path, monkeypatch, step):
    b, restored = _homes(tmp_path)
    try:
        fault = Fault(monkeypatch, b.home, step, times=1)
        out = b.data("restore", name="a.tar.gz", replace=True)
        assert fault.failed == 1
        assert out["restored"] == "a.tar.gz" and out["before"]
        assert without_restore_lines(_memory(b)) == restored
        assert _leftovers(b) == [] and b.service.unfinished is None
        assert "Bluefinch note" in b.recall("bluefinch")  # notes.md indexed again from its start
        b.call(ADD)
        assert b"Written after the restore." in b.home.memory_file("memory.md").read_bytes()
        assert b"Old precious fact." not in b.home.memory_file("memory.md").read_bytes()
    finally:
        b.close()


async def _refused_everywhere(b: Memoryd) -> None:
    """Every handler that reads or writes memory answers the one refusal."""
    service = b.service
    for call in (_call("memory", ADD), _call("recall", {"query": "bluefinch"})):
        reply = await service.on_broker(call)
        assert (reply.ok, reply.output) == (False, REFUSED)
    for loop_message in (MemoryBlock(), SessionUpdated(session="s-clean")):
        with pytest.raises(MemorydError) as refused:
            await service.on_loop(loop_message)
        assert str(refused.value) == REFUSED
    for admin in (MemoryAdmin(command="log", arg=""), RESTORE, Reindex()):
        with pytest.raises(MemorydError) as refused:
            await service.on_admin(admin)
        assert str(refused.value) == REFUSED


@pytest.mark.parametrize("step", ["rename", "fsync"])
def test_when_laying_again_fails_too_memory_is_refused_until_a_restart(tmp_path, monkeypatch, step):
    b, restored = _homes(tmp_path)
    try:

        async def scenario():
            loop = asyncio.get_running_loop()
            queued = []

            def during():  # on the writer: a memory call arrives and waits behind the restore
                call = b.service.on_broker(_call("memory", ADD))
                queued.append(asyncio.run_coroutine_threadsafe(call, loop))
                until = time.monotonic() + 10
                while not b.service._writer.waiting() and time.monotonic() < until:
                    time.sleep(0.01)

            fault = Fault(monkeypatch, b.home, step, times=None, during=during)
            with pytest.raises(MemorydError) as refused:
                await b.service.on_admin(RESTORE)
            assert fault.failed == 2
            assert "stopped part way (Input/output error), and again" in str(refused.value)
            assert "restart" in str(refused.value) and "backed up in" in str(refused.value)
            assert lay.plan_path(b.home).exists()
            reply = await asyncio.wrap_future(queued[0])
            assert (reply.ok, reply.output) == (False, REFUSED)
            held = _memory(b)
            await _refused_everywhere(b)
            assert _memory(b) == held

        asyncio.run(scenario())
    finally:
        b.close()
    monkeypatch.undo()  # the disk is fixed; memoryd restarts
    again = Memoryd(tmp_path / "b")
    try:
        assert without_restore_lines(_memory(again)) == restored
        assert _leftovers(again) == [] and again.service.unfinished is None
        again.call(ADD)
        assert b"Written after the restore." in again.home.memory_file("memory.md").read_bytes()
        assert "Bluefinch note" in again.recall("bluefinch")
    finally:
        again.close()
