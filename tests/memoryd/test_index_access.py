"""An index memoryd cannot open or read while it runs (its folder made unreadable, the file
damaged): each call that meets it gets one clear line naming it, never "internal error", and
memoryd goes on; a start that meets it ends in one line and exit 2, no traceback."""

import asyncio
import ctypes
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.config import load
from memoryd.errors import IndexDamaged
from memoryd.home import Home
from memoryd.index import index as index_module
from memoryd.index.index import DAMAGED, GONE, UNOPENED, Index
from memoryd.server import prepare
from proto.messages import SessionUpdated
from tests.memoryd.test_index import write_log
from tests.memoryd.test_scheduling import _config
from tests.recalling import recall_on

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def _drop_dac() -> None:
    """In the child before exec: root without the override of file permissions, as memoryd runs
    in the image (a user of its own), so that a folder chmod 000 is closed to it too."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")


@pytest.fixture
def closed_folder(tmp_path):
    """(preexec_fn, close): close(folder) makes folder unreadable to a child started with
    preexec_fn; skipped where that cannot be had (root without the right to drop its own)."""
    preexec = _drop_dac if os.geteuid() == 0 else None
    closed: list[Path] = []

    def close(folder: Path) -> None:
        folder.chmod(0)
        closed.append(folder)

    probe = tmp_path / "probe"
    probe.mkdir()
    close(probe)
    try:
        seen = subprocess.run(
            [sys.executable, "-c", "import os, sys; os.listdir(sys.argv[1])", str(probe)],
            preexec_fn=preexec,
            capture_output=True,
        )
    except subprocess.SubprocessError:
        seen = None
    if seen is None or seen.returncode == 0:
        for folder in closed:
            folder.chmod(0o700)
        pytest.skip("no way here to start a process that a folder chmod 000 keeps out")
    yield preexec, close
    for folder in closed:
        folder.chmod(0o700)


def _index(tmp_path: Path) -> Index:
    home = Home(tmp_path / "home")
    write_log(home, "mm-1", ["the launch window moved to Thursday"])
    index = Index(home)
    index.open()
    index.catch_up_all()
    return index


def _remove(index: Index) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index.path}{suffix}").unlink(missing_ok=True)


def _replace(index: Index) -> None:
    copy = index.path.with_name("copy.sqlite3")
    copy.write_bytes(index.path.read_bytes())
    os.replace(copy, index.path)


@pytest.mark.parametrize("change", [_remove, _replace], ids=["removed", "replaced"])
def test_an_index_file_removed_or_replaced_while_open_is_one_answer(tmp_path, caplog, change):
    index = _index(tmp_path)
    try:
        assert recall_on(index, "launch window", session="mm-ask").text.startswith("[1] ")
        change(index)  # a pooled connection still reads the old file; a new one would not
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                with pytest.raises(IndexDamaged) as refused:
                    recall_on(index, "launch window", session="mm-ask")
                assert str(refused.value) == GONE
        assert [r.getMessage() for r in caplog.records] == [
            f"memory-index-damaged: {index.path}: deleted or replaced while memoryd runs; recall"
            " is refused until bxctl reindex or a restart rebuilds it"
        ]
        index.reindex()
        assert recall_on(index, "launch window", session="mm-ask").text.startswith("[1] ")
    finally:
        index.close()


def test_a_recall_that_cannot_open_the_index_is_told_so_in_one_line(tmp_path, caplog, monkeypatch):
    index = _index(tmp_path)  # no reader pooled yet: a recall opens one

    def refused(*args, **kwargs):  # what SQLite says when index/ is chmod 000
        raise sqlite3.OperationalError("unable to open database file")

    try:
        monkeypatch.setattr(index_module.sqlite3, "connect", refused)
        with caplog.at_level(logging.ERROR), pytest.raises(IndexDamaged) as answer:
            recall_on(index, "launch window", session="mm-ask")
        monkeypatch.undo()
        assert str(answer.value) == UNOPENED
        assert [r.getMessage() for r in caplog.records] == [
            f"index {index.path}: cannot open it to read: unable to open database file"
        ]
        assert recall_on(index, "launch window", session="mm-ask").text.startswith("[1] ")
    finally:
        index.close()


def test_a_session_updated_on_a_damaged_index_is_the_damaged_answer(tmp_path, caplog):
    home = tmp_path / "home"
    write_log(Home(home), "mm-a", ["kestrel nests on the roof"])
    service = prepare(load(_config(tmp_path)))

    async def scenario() -> IndexDamaged:
        await service.catch_up()
        service.index.reindex()  # the file whole on disk, not in its WAL
        service.index.path.write_bytes(b"garbage " * 1000)
        write_log(Home(home), "mm-a", ["and a second record"])
        with caplog.at_level(logging.ERROR), pytest.raises(IndexDamaged) as refused:
            await service.on_loop(SessionUpdated(session="mm-a"))
        return refused.value

    try:
        refused = asyncio.run(scenario())
    finally:
        service.close()
    assert str(refused) == DAMAGED
    # Errors only: the start's warning that this home of logs lacks its soul.md is not the index's.
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    logged = [r.getMessage() for r in errors]
    assert len(logged) == 1 and logged[0].startswith(f"index {home}/index/memory.sqlite3: ")
    assert "session mm-a" in logged[0] and all(r.exc_info is None for r in errors)


def test_a_start_with_the_index_folder_closed_is_one_line_and_exit_2(tmp_path, closed_folder):
    preexec, close = closed_folder
    config = _config(tmp_path)
    serve = [sys.executable, "-m", "memoryd", "serve", "--config", str(config)]
    Home(tmp_path / "home").index_dir.mkdir(parents=True)
    close(tmp_path / "home/index")
    started = subprocess.run(serve, preexec_fn=preexec, capture_output=True, text=True, timeout=60)
    lines = [line for line in started.stderr.splitlines() if " INFO " not in line]
    assert started.returncode == 2, started.stderr
    assert len(lines) == 1 and "Traceback" not in started.stderr
    assert f"{tmp_path}/home/index/memory.sqlite3: Permission denied" in lines[0]


def test_the_embedding_progress_of_a_closed_index_folder_names_the_file(tmp_path, closed_folder):
    preexec, close = closed_folder
    index_dir = tmp_path / "home/index"
    index_dir.mkdir(parents=True)
    (index_dir / "memory.sqlite3").write_bytes(b"")
    close(index_dir)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from memoryd.errors import IndexDamaged\n"
        "from memoryd.modes import progress\n"
        "try:\n"
        "    progress.embedding(Path(sys.argv[1]))\n"
        "except IndexDamaged as e:\n"
        "    print(e)\n"
    )
    seen = subprocess.run(
        [sys.executable, "-c", script, str(index_dir / "memory.sqlite3")],
        preexec_fn=preexec,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert seen.returncode == 0 and seen.stderr == ""
    assert seen.stdout == (
        f"cannot read the memory index {index_dir}/memory.sqlite3: Permission denied\n"
    )
