"""bxctl ended by SIGTERM (a service manager, a timeout) or SIGHUP (a closed terminal) as by Ctrl-C:
what it made is removed (the copy handed to memoryd in backups/, a temporary file beside the
owner's PATH), one line says what was left, the exit is 128 + the signal. While a copy is handed
over, bxctl holds a shared lock on backups/, so that memoryd leaves that copy alone. An interrupt
once the copy to the owner's PATH stands says the copy was made."""

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from proto.messages import MemoryAdminReply
from proto.server import serve_unix
from tests.bxctl.test_bxctl_reach import Held, interrupt

STOPS = [signal.SIGTERM, signal.SIGHUP]


class PruneHeld(Held):
    """Held, but only the prune bxctl asks for after its copy is held; the rest answered."""

    async def handle(self, message):
        if '"prune_only"' in message.arg:
            return await super().handle(message)
        self.seen.append(message)
        return MemoryAdminReply(text=self.texts[message.command])


@contextlib.contextmanager
def serving(fake: Held):
    (fake.home / "backups").mkdir(mode=0o700, parents=True)
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(
        serve_unix(fake.path, fake.handle, {"memory_admin", "reindex"}, name="fake")
    )
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        loop.call_soon_threadsafe(fake.release.set)
        asyncio.run_coroutine_threadsafe(closed(server), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


async def closed(server) -> None:
    server.close()
    await server.wait_closed()


def from_a_terminal() -> None:
    """In the child before bxctl starts: the stop signals as a terminal gives them. bxctl keeps
    an inherited ignored SIGHUP (nohup's), so tests run under nohup would otherwise send bxctl a
    signal it rightly ignores."""
    for sig in STOPS:
        signal.signal(sig, signal.SIG_DFL)


def start(fake: Held, argv: list[str], prelude: str = "") -> subprocess.Popen:
    code = prelude + "from bxctl.cli import main; main()"
    env = {**os.environ, "BOXMAKER_HOME": str(fake.home), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("BOXMAKER_MEMORY_SOCKET", None)
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=from_a_terminal,
    )


def stop(proc: subprocess.Popen, sig: int) -> tuple[int, str, str]:
    try:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def locked(folder: Path) -> bool:
    """Whether someone holds a lock on folder (memoryd's test before it removes a copy)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: s.name)
@pytest.mark.parametrize(("command", "name"), [("import", "old.jsonl"), ("restore", "a.tar.gz")])
def test_a_stop_while_memoryd_reads_the_copy_removes_it(tmp_path, sig, command, name):
    source = tmp_path / name
    source.write_text("the locker code is 4711\n")
    with serving(Held(tmp_path / "home")) as fake:
        proc = start(fake, ["memory", command, str(source)])
        try:
            assert fake.got.wait(30), "the request never came"
        finally:
            backups = fake.home / "backups"
            handed = [n for n in os.listdir(backups) if n.startswith(".incoming-")]
            held_lock = locked(backups)
            code, out, err = stop(proc, sig)
        assert len(handed) == 1 and held_lock  # the copy was there, under bxctl's lock
        assert os.listdir(backups) == [] and not locked(backups)
    assert code == 128 + sig and out == ""
    if command == "import":  # memoryd stops an import whose bxctl has gone between its batches
        assert err == (
            f"bxctl: stopped by {sig.name}; memoryd stops the import it was sent at the end of the "
            "batch it is applying, each item before it journalled: bxctl memory log shows what "
            "was applied, and importing the same file again brings the rest\n"
        )
    else:
        assert err == (
            f"bxctl: stopped by {sig.name}; memoryd may still finish the {command} it was sent: "
            "bxctl memory log shows what was applied\n"
        )


# bxctl's copy to the owner's PATH made to stop part way, as on a slow disk.
SLOW_COPY = """
import pathlib, shutil, sys, time
import bxctl.handover as handover
MARK = pathlib.Path(sys.argv[-1])
def copyfileobj(src, out, size):
    out.write(src.read(4))
    out.flush()
    MARK.touch()
    time.sleep(60)
handover.shutil = type("S", (), {"copyfileobj": staticmethod(copyfileobj)})
sys.argv = sys.argv[:-1]
"""


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: s.name)
def test_a_stop_part_way_through_the_copy_to_path_leaves_no_temporary_file(tmp_path, sig):
    with serving(Held(tmp_path / "home")) as fake:
        fake.hold = False
        made = fake.home / "backups" / "memory-20261203T000000Z.tar.gz"
        made.write_bytes(b"archive " * 100)
        fake.texts["backup"] = json.dumps({"message": "backup written", "path": str(made)})
        out = tmp_path / "out"
        out.mkdir()
        mark = tmp_path / "copy-started"
        proc = start(fake, ["memory", "backup", str(out / "copy.tar.gz"), str(mark)], SLOW_COPY)
        try:
            deadline = time.monotonic() + 30
            while not mark.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert mark.exists()  # the copy was under way, in a file with no name yet
        finally:
            code, _, err = stop(proc, sig)
    assert code == 128 + sig
    assert os.listdir(out) == []
    assert err.startswith(f"bxctl: stopped by {sig.name}; memoryd may still finish the backup ")


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (["memory", "backup", "{dest}", "--keep", "1"], "backup"),
        (["memory", "export", "--out", "{dest}"], "export"),
    ],
)
def test_ctrl_c_during_the_prune_says_the_copy_was_made(tmp_path, argv, what):
    fake = PruneHeld(tmp_path / "home")
    dest = tmp_path / "out.file"
    with serving(fake):
        made = fake.home / "backups" / f"{what}-20261203T000000Z.file"
        made.write_bytes(b"whole")
        fake.texts[what] = json.dumps({"message": f"{what} written", "path": str(made)})
        code, out, err = interrupt([a.format(dest=dest) for a in argv], fake)
    assert code == 130 and out == ""
    assert dest.read_bytes() == b"whole"
    assert err == (
        f"bxctl: interrupted; the {what} was written to {made} and copied whole to {dest}; "
        f"memoryd may or may not have removed the older {what}s it was asked to: ls "
        "$BOXMAKER_HOME/backups/ shows which are left\n"
    )
