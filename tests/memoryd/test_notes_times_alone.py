"""notes.md whose mode, owner or times change and not one byte (a backup or sync tool's chmod and
chmod back, a touch): the index reads on from where it stopped, once one read of the file shows
every byte it read unchanged, rather than dropping every note row and reading it all again. One
that cannot be read for a moment (chmod 000) leaves the rows and the progress as they were, in a
true line, and is read on once it can be. Real files and a real index, in-process; the moment of
chmod 000 in a child process without root's override of file permissions, as memoryd's own user
meets it."""

import json
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.home import Home
from memoryd.index.index import Index
from tests.memoryd.test_index_access import closed_folder  # noqa: F401 (a fixture)
from tests.memoryd.test_stats_note_hits_renumbered import _home as stats_home

COUNT = 1_500  # about 150 KB: past the tail window, so the digest of the whole blocks counts


def _note(i: int, text: str | None = None) -> str:
    text = text or f"an ordinary note number {i} about the garden and the weekly shopping list"
    return f"§ noted 2026-11-{1 + i % 28:02d}T10:00Z in session s-old{i % 9} · private\n{text}\n"


def _rows(index: Path) -> list[tuple]:
    conn = sqlite3.connect(index)
    try:
        return conn.execute(
            "SELECT s.rowid, s.record, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            " WHERE s.kind IN ('noted', 'moved', 'dropped') ORDER BY s.rowid"
        ).fetchall()
    finally:
        conn.close()


@pytest.fixture
def running(tmp_path):
    """A home whose notes.md the open index has read to its end: (home, index)."""
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("".join(_note(i) for i in range(COUNT)))
    path.chmod(0o600)
    index = Index(home)
    index.open()
    index.catch_up_all()
    yield home, index
    index.close()


def _catch_up(index: Index, own_from: str | None = None) -> int:
    added = index.catch_up_notes(own_from)
    while index.notes_behind is not None:
        added += index.catch_up_notes()
    return added


def _blip(path: Path) -> None:
    path.chmod(0o644)  # a sync tool's mode, put back: the ctime moved, not one byte
    path.chmod(0o600)


def _touch(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def _chown_same(path: Path) -> None:
    st = path.stat()
    os.chown(path, st.st_uid, st.st_gid)


@pytest.mark.parametrize("change", [_blip, _touch, _chown_same])
def test_a_change_of_notes_md_s_metadata_alone_costs_no_reading_again(running, caplog, change):
    home, index = running
    path = home.memory_file("notes.md")
    before = _rows(home.index_db)
    renumbered = index.notes_seen.renumbered
    change(path)
    assert index.notes_seen.changed()  # recall asks the writer to look: the stat moved
    with caplog.at_level(logging.INFO):
        assert _catch_up(index) == 0
    assert "indexing it again" not in caplog.text
    assert _rows(home.index_db) == before  # not one row deleted and added again
    assert index.notes_seen.renumbered == renumbered and not index.notes_seen.changed()


def test_a_mode_blip_then_memoryd_s_own_note_indexes_the_note_alone(running, caplog):
    """As it happens: the mode changed and put back, then a session's note appended, its catch-up
    told the stat memoryd's write began from (the blip's, not the one the index read)."""
    home, index = running
    path = home.memory_file("notes.md")
    before = _rows(home.index_db)
    _blip(path)
    own_from = index.notes_file()
    with open(path, "a") as f:
        f.write(_note(COUNT, "Zebra note about kiwis."))
    with caplog.at_level(logging.INFO):
        assert _catch_up(index, own_from) == 1
    assert "indexing it again" not in caplog.text
    rows = _rows(home.index_db)
    assert rows[:-1] == before and rows[-1][1:] == (COUNT, "Zebra note about kiwis.")


def test_bytes_written_over_in_place_with_only_the_times_to_show_are_read_again(running, caplog):
    """The same size and inode, the times moved: the digest, not the stat, says whether the
    bytes read are the same; a note far back edited with as many bytes is read again."""
    home, index = running
    path = home.memory_file("notes.md")
    text = path.read_text().replace("number 3 about the garden", "number 3 about the herons")
    with open(path, "r+") as f:
        f.write(text)
    with caplog.at_level(logging.INFO):
        _catch_up(index)
    assert "changed outside memoryd: indexing it again" in caplog.text
    texts = [t for _, _, t in _rows(home.index_db)]
    assert any("number 3 about the herons" in t for t in texts)
    assert not any("number 3 about the garden" in t for t in texts)


# In a child without root's override of file permissions: notes.md chmod 000 for a moment.
UNREADABLE = """
import logging, sqlite3, sys
from pathlib import Path
from memoryd.errors import NotesUnreadable
from memoryd.home import Home
from memoryd.index.index import Index

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
home = Home(Path(sys.argv[1]))
path = home.memory_file("notes.md")

def rows():
    conn = sqlite3.connect(home.index_db)
    try:
        return conn.execute(
            "SELECT s.rowid, h.text FROM sources s JOIN hits h ON h.rowid = s.rowid"
            " WHERE s.kind = 'noted' ORDER BY s.rowid"
        ).fetchall()
    finally:
        conn.close()

index = Index(home)
index.open()
try:
    index.catch_up_all()
    before = rows()
    path.chmod(0)
    try:
        index.catch_up_notes()
        print("read though unreadable")
    except NotesUnreadable as e:
        print("said:", e)
    print("kept:", rows() == before, len(before))
    path.chmod(0o600)
    added = index.catch_up_notes()
    while index.notes_behind is not None:
        added += index.catch_up_notes()
    print("after:", added, rows() == before)
finally:
    index.close()
"""


def test_notes_md_unreadable_for_a_moment_keeps_its_rows_and_is_read_on(tmp_path, closed_folder):  # noqa: F811
    preexec, _ = closed_folder
    home = Home(tmp_path / "home")
    path = home.memory_file("notes.md")
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text("".join(_note(i) for i in range(COUNT)))
    path.chmod(0o600)
    ran = subprocess.run(
        [sys.executable, "-c", UNREADABLE, str(home.root)],
        preexec_fn=preexec,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == [
        f"said: {path} cannot be read now (Permission denied); its notes stay indexed as they were",
        f"kept: True {COUNT}",
        "after: 0 True",
    ]
    assert "indexing it again" not in ran.stderr


def test_stats_with_notes_md_unreadable_says_so_and_no_hit_lost_to_a_hand_edit(tmp_path):
    """stats cannot read notes.md (here a folder stands there for a moment): it says so, and
    does not say the recall log's note hits name notes notes.md no longer holds."""
    md = stats_home(tmp_path)
    try:
        assert "Banana bread" in md.recall("banana")
        path = md.index.home.memory_file("notes.md")
        path.rename(path.with_name("notes.md.aside"))
        path.mkdir()
        unread = json.loads(md.admin("stats", '{"json": true}'))["unread"]
        path.rmdir()
        path.with_name("notes.md.aside").rename(path)
    finally:
        md.close()
    assert len(unread) == 1 and unread[0].startswith("memory/notes.md: ")
    assert unread[0].endswith("; its notes not shown")
