"""The block read from {home}/memory/: memoryd's text, bounded in time, one worker thread."""

import threading
import time

import anyio
import pytest

from memory_mcp.blockfiles import BlockFiles, cannot_build_text, too_slow_reason
from memory_mcp.errors import BlockUnavailable
from memoryd.home import Home
from memoryd.memory.block import build


def write_memory(home, memory="", user="", soul="A soul.\n"):
    folder = home / "memory"
    folder.mkdir(mode=0o700)
    for name, text in (("soul.md", soul), ("memory.md", memory), ("user.md", user)):
        (folder / name).write_text(text)


def test_reads_the_block_as_memoryd_builds_it_and_follows_the_files(tmp_path):
    write_memory(tmp_path, memory="First.\n")
    files = BlockFiles(tmp_path, timeout=5)
    first = anyio.run(files.read, "s")
    (tmp_path / "memory" / "memory.md").write_text("First.\n§\nSecond.\n")
    second = anyio.run(files.read, "s")
    assert first != second
    assert second == build(Home(tmp_path))
    assert "Second." in second


def test_a_symlinked_memory_folder_is_not_followed(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    write_memory(real, memory="Planted.\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "memory").symlink_to(real / "memory")
    with pytest.raises(BlockUnavailable) as refused:
        anyio.run(BlockFiles(home, timeout=5).read, "s")
    assert str(refused.value) == cannot_build_text(
        "soul.md is a symbolic link, which is not followed"
    )


class Stalled:
    """A build that blocks until released, counting the threads it runs in."""

    def __init__(self):
        self.release = threading.Event()
        self.threads: set[int] = set()
        self.calls = 0

    def __call__(self, home: Home) -> str:
        self.calls += 1
        self.threads.add(threading.get_ident())
        self.release.wait(30)
        return "released"


def test_a_stalled_read_costs_the_timeout_and_one_thread_not_a_hang(tmp_path):
    stalled = Stalled()
    files = BlockFiles(tmp_path, timeout=0.3, build=stalled)
    threads_before = threading.active_count()

    async def three_reads():
        answers = []
        for _ in range(3):
            started = time.monotonic()
            with pytest.raises(BlockUnavailable) as refused:
                await files.read("s")
            answers.append((str(refused.value), time.monotonic() - started))
        return answers

    try:
        answers = anyio.run(three_reads)
        threads_after = threading.active_count()
    finally:
        stalled.release.set()
    expected = cannot_build_text(too_slow_reason(tmp_path / "memory", 0.3))
    for text, elapsed in answers:
        assert text == expected
        assert 0.3 <= elapsed < 2
    # the later reads queued behind the stalled one and were dropped, never run in more threads
    assert stalled.calls == 1 and len(stalled.threads) == 1
    assert threads_after == threads_before + 1
    time.sleep(0.1)
    assert anyio.run(files.read, "s") == "released"  # the worker goes on once the disk answers


def test_an_unexpected_failure_is_a_sentence_without_its_details(tmp_path):
    def broken(home: Home) -> str:
        raise RuntimeError("secret internals")

    with pytest.raises(BlockUnavailable) as refused:
        anyio.run(BlockFiles(tmp_path, timeout=5, build=broken).read, "s")
    assert "secret internals" not in str(refused.value)
    assert str(refused.value).endswith("(runbook: memory-unavailable)")
