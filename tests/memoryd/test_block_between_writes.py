"""A memory block is built from files that stand: never from a write that is then taken back (its
journal line could not be written), nor from a restore that has laid one file and not the other.
Each test builds a block on another thread at the worst moment, as loopd's memory_block would."""

import errno
import fcntl
import logging
import os
import shutil
import threading
import time

import pytest

from memoryd.data import lay
from memoryd.errors import WriteFailed
from memoryd.memory import filesgate
from memoryd.public import memory_block
from tests.callargs import loose_call
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import CLEAN, args, fill, new_store

# How long the writer waits at the worst moment: ample for a block built unhindered.
WINDOW = 0.3


class BlockMeanwhile:
    """Starts a block on its own thread and gives it WINDOW to be built."""

    def __init__(self, build):
        self.build = build
        self.text: str | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run)
        self.thread.start()
        time.sleep(WINDOW)

    def _run(self) -> None:
        self.text = self.build()

    def result(self) -> str:
        assert self.thread is not None
        self.thread.join(timeout=10)
        assert self.text is not None
        return self.text


@pytest.mark.parametrize("reader", ["memoryd", "memory-mcp"])
def test_a_write_taken_back_is_in_no_block(tmp_path, monkeypatch, reader):
    """memory-mcp builds the block in its own process (memoryd.public): the memory folder's
    flock keeps it out of the write as memoryd's own lock keeps memoryd's block out."""
    store = new_store(tmp_path)
    fill(store, "memory", ["Kept."])
    build = store.block if reader == "memoryd" else (lambda: memory_block(store.home.root))
    meanwhile = BlockMeanwhile(build)

    def full_disk(*_args, **_kwargs):
        meanwhile.start()  # memory.md holds the new entry now, until it is put back
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store.journal, "append", full_disk)
    with pytest.raises(WriteFailed, match="not applied"):
        store.call(*loose_call(args(action="add", file="memory", text="Never stood."), **CLEAN))
    block = meanwhile.result()
    assert "Kept." in block and "Never stood." not in block
    assert "Never stood." not in store.block()


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_a_restore_is_laid_whole_before_a_block_reads_it(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": "M-one."})
    md.call({"action": "add", "file": "user", "text": "U-one."})
    shutil.copy(md.data("backup")["path"], md.home.root / "backups" / "one.tar.gz")
    md.call({"action": "replace", "file": "memory", "old": "M-one.", "text": "M-two."})
    md.call({"action": "replace", "file": "user", "old": "U-one.", "text": "U-two."})
    meanwhile = BlockMeanwhile(md.service.store.block)
    replace = lay.os.replace
    laid: list[str] = []

    def replace_then_read(src, dest, **kwargs):
        replace(src, dest, **kwargs)
        if str(dest) in (str(md.home.memory_file(n)) for n in ("memory.md", "user.md")):
            laid.append(str(dest))
            if len(laid) == 1:
                meanwhile.start()  # one file laid, the other not yet

    monkeypatch.setattr(lay.os, "replace", replace_then_read)
    md.data("restore", name="one.tar.gz", replace=True)
    monkeypatch.undo()
    block = meanwhile.result()
    assert len(laid) == 2
    assert "M-one." in block and "U-one." in block
    assert "M-two." not in block and "U-two." not in block


def test_a_reader_that_holds_the_folder_lock_delays_a_write_by_a_second_at_most(tmp_path, caplog):
    """A memory-mcp stopped while it held the memory folder's shared lock cannot hang memoryd:
    the write waits FLOCK_PATIENCE, goes on, and says so in its log."""
    store = new_store(tmp_path)
    fill(store, "memory", ["Kept."])
    held = os.open(store.home.memory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_SH)
        started = time.monotonic()
        with caplog.at_level(logging.WARNING):
            store.call(
                *loose_call(args(action="add", file="memory", text="Still written."), **CLEAN)
            )
        took = time.monotonic() - started
    finally:
        os.close(held)
    assert filesgate.FLOCK_PATIENCE <= took < filesgate.FLOCK_PATIENCE + 3
    assert "Still written." in store.block()
    assert any("has held its lock" in r.getMessage() for r in caplog.records)
