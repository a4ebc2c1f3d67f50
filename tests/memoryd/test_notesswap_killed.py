"""memoryd killed (SIGKILL) while it exchanges a rewrite of notes.md into place leaves a file under
its temporary name, which the next start's cleanup judges: a save of the owner's that the exchange
had moved out is kept beside notes.md (logged, naming it); the file read (the notes before forget
took text out) and the rewrite itself are removed, and so is a leftover whose name records
nothing, as before."""

import logging
import os
import shutil
import signal
from pathlib import Path

import pytest

from memoryd.data import notesswap
from memoryd.memory import memfiles
from memoryd.server import remove_stale_temp_files
from tests.memoryd.store_helpers import new_store

OLD = b"\xc2\xa7 noted 2026-12-01T10:00Z in session s-one \xc2\xb7 private\nSafe code 4471.\n"
NEW = OLD.replace(b"Safe code 4471.", b"[forgotten]")
SAVE = OLD + b"\xc2\xa7 noted 2026-12-01T11:00Z in session owner \xc2\xb7 private\nCall Ann.\n"
APPENDED = b"\xc2\xa7 noted 2026-12-01T11:05Z in session owner \xc2\xb7 private\nAppended.\n"


def _save(path: Path) -> None:
    """The owner's editor saves notes.md: a new file renamed over it."""
    tmp = path.with_name("notes.md.editor")
    tmp.write_bytes(SAVE)
    os.replace(tmp, path)


def _append(path: Path) -> None:
    with open(path, "ab") as f:
        f.write(APPENDED)


def _killed(path: Path, kill_before=0, kill_after=0, before=None, between=None) -> None:
    """A child process runs replace_read on path and is killed just before or just after the
    exchange numbered kill_before or kill_after (1: the rewrite into place, 2: back out); before
    and between are what the owner does to notes.md just before and just after exchange 1."""
    with open(path, "rb") as f:
        read = notesswap.opened(f)
    pid = os.fork()
    if pid == 0:
        try:
            real, calls = memfiles.exchange, []

            def exchange(folder, a, b):
                calls.append(b)
                if len(calls) == 1 and before:
                    before(path)
                if len(calls) == kill_before:
                    os.kill(os.getpid(), signal.SIGKILL)
                done = real(folder, a, b)
                if len(calls) == 1 and between:
                    between(path)
                if len(calls) == kill_after:
                    os.kill(os.getpid(), signal.SIGKILL)
                return done

            memfiles.exchange = exchange
            notesswap.replace_read(path, read, [NEW])
        finally:
            os._exit(3)  # never reached when the kill came
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


@pytest.fixture
def notes(tmp_path):
    store = new_store(tmp_path)
    path = store.home.memory_file("notes.md")
    path.write_bytes(OLD)
    yield store.home, path
    shutil.rmtree(store.home.root)


def _around(home) -> dict[str, bytes]:
    """The files beside notes.md that concern it, and their bytes."""
    return {p.name: p.read_bytes() for p in home.memory.iterdir() if "notes.md" in p.name}


def test_a_save_exchanged_out_when_the_kill_came_is_kept(notes, caplog):
    home, path = notes
    _killed(path, kill_after=1, before=_save)
    (left,) = [n for n in _around(home) if n.startswith(".notes.md.")]
    with caplog.at_level(logging.WARNING):
        remove_stale_temp_files(home)
    files = _around(home)
    (kept,) = [n for n in files if n.startswith("notes.md.hand-edit-")]
    assert files == {"notes.md": NEW, kept: SAVE}
    assert [r.getMessage() for r in caplog.records if kept in r.getMessage()] == [
        f"{home.memory / kept}: a save left under memoryd's temporary name {left} by a crash "
        "while memoryd rewrote notes.md is kept here for the owner to merge"
    ]


def test_the_file_read_left_by_the_kill_is_removed(notes):
    home, path = notes
    _killed(path, kill_after=1)
    assert OLD in _around(home).values()  # the notes before the rewrite, under the temporary name
    remove_stale_temp_files(home)
    assert _around(home) == {"notes.md": NEW}  # forget's rewrite stands; what it took out is gone


def test_the_rewrite_left_before_the_exchange_is_removed(notes):
    home, path = notes
    _killed(path, kill_before=1)
    assert NEW in [b for n, b in _around(home).items() if n.startswith(".notes.md.")]
    remove_stale_temp_files(home)
    assert _around(home) == {"notes.md": OLD}


def test_the_rewrite_exchanged_back_out_is_removed(notes):
    home, path = notes
    _killed(path, kill_after=2, before=_save)
    remove_stale_temp_files(home)
    assert _around(home) == {"notes.md": SAVE}


def test_an_append_to_the_rewrite_while_it_stood_is_kept(notes):
    home, path = notes
    _killed(path, kill_after=2, before=_save, between=_append)
    remove_stale_temp_files(home)
    files = _around(home)
    (kept,) = [n for n in files if n.startswith("notes.md.hand-edit-")]
    assert files == {"notes.md": SAVE, kept: NEW + APPENDED}


def test_a_leftover_whose_name_records_nothing_is_removed_as_before(notes):
    home, path = notes
    home.memory_file(".notes.md.0123456789ab.tmp").write_bytes(SAVE)
    remove_stale_temp_files(home)
    assert _around(home) == {"notes.md": OLD}
