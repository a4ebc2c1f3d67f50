"""A restore reads an archive's labels.jsonl and forgotten.jsonl as the start does, never whole:
grown far past what memoryd writes (a truncate typed by mistake, a damaged disk: a sparse run of
NUL bytes), the lines the home adds to them are laid after the archive's bytes copied a block at a
time, and the restore ends with its answer rather than memoryd killed for its memory. A line too
long to read is laid as it is, and read as the start reads it: the sessions a long labels line
names take the strictest label, a long forgotten line is damaged and the journal's keys hold."""

import logging
import os
import tracemalloc

from memoryd.data import leftout
from memoryd.home import Home, ensure_dir
from memoryd.journal import forgotten
from memoryd.trust import risen
from memoryd.trust.risenlong import STRICTEST
from tests.memoryd.owner_data_harness import Memoryd

HUGE = 64 << 20  # sparse: no disk used (a copy of it is written, as a restore lays it)
HELD = 16 << 20  # what a restore may hold at its peak of these files


def a_home(tmp_path, name: str) -> Home:
    home = Home(tmp_path / name)
    ensure_dir(home.memory)
    return home


def grown(path, size: int = HUGE) -> None:
    """path's bytes, then NUL bytes up to size, with no newline (what truncate -s leaves)."""
    with open(path, "ab") as f:
        f.truncate(size)


def peak(run):
    """run()'s answer, and the most memory Python held while it ran."""
    tracemalloc.start()
    try:
        answer = run()
        return answer, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_staged_labels_file_gets_the_homes_lines_without_being_read_whole(tmp_path):
    home, staged = a_home(tmp_path, "home"), a_home(tmp_path, "staged")
    risen.rise(home, "t1", ("private", True))
    where = risen.path(staged)
    where.write_bytes(b'{"session": "a1", "class": "public", "untrusted": false, "x": "')
    grown(where)
    added, held = peak(lambda: risen.carry(home, staged))
    assert added == 1
    assert held < HELD, held
    assert os.path.getsize(where) > HUGE  # the archive's bytes kept, the home's line after them
    risen._homes.clear()  # as the restored memoryd reads it
    assert risen.label(staged, "t1") == ("private", True)
    assert risen.label(staged, "a1") == STRICTEST


def test_a_huge_staged_forgotten_file_gets_the_homes_keys_without_being_read_whole(tmp_path):
    staged = a_home(tmp_path, "staged")
    where = forgotten.path(staged)
    where.write_bytes(b'{"key": "session:s1:0"}\n')
    grown(where)
    (missing, _), held = peak(lambda: leftout.keep_forgotten(staged, ["session:s2:0"], "T"))
    assert missing == ["session:s2:0"]
    assert held < HELD, held
    assert forgotten.held(staged) >= {"session:s1:0", "session:s2:0"}


def test_a_restore_of_an_archive_with_huge_files_answers(tmp_path, caplog):
    m = Memoryd(tmp_path / "mhome")
    try:
        home = m.home
        m.call({"action": "add", "file": "memory", "text": "The router is in the hall."})
        risen.rise(home, "t1", ("private", True))
        with open(risen.path(home), "ab") as f:
            f.write(b'{"session": "a1", "class": "public", "untrusted": false, "x": "')
        grown(risen.path(home))
        forgotten.path(home).write_bytes(b'{"key": "session:s1:0"}\n' + b"\0" * (1 << 20) + b"\n")
        grown(forgotten.path(home))
        made = m.data("backup")
        # the home's own after the archive was made: a restore adds them to the archive's files
        risen.rise(home, "new1", ("secret", False))
        with open(forgotten.path(home), "ab") as f:
            f.write(b'\n{"key": "session:s9:0"}\n')
        with caplog.at_level(logging.WARNING):
            laid, held = peak(
                lambda: m.data("restore", name=os.path.basename(made["path"]), replace=True)
            )
        assert "error" not in laid, laid
        assert held < HELD, held
        risen._homes.clear()  # as the restored memoryd reads it
        assert risen.label(home, "new1") == ("secret", False)
        assert risen.label(home, "t1") == ("private", True)
        assert risen.label(home, "a1") == STRICTEST
        assert {"session:s1:0", "session:s9:0"} <= forgotten.held(home)
    finally:
        m.close()
