"""Every archive a backup answers as written is one restore takes: a memory file hand-edited past
its limit (even past what memoryd reads of it) is archived and restored as it is; a backup past a
bound restore keeps (more session logs than an archive holds) is refused in one line, leaving no
archive and pruning none; how well a file compresses is no bound."""

import os
import shutil

import pytest

from memoryd.data import layout
from memoryd.errors import AdminRefused
from memoryd.memory import entries
from proto import backupformat
from proto.records import UserRecord, append_session_record
from tests.memoryd.owner_data_harness import Memoryd, T


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


@pytest.fixture
def other(tmp_path):
    m = Memoryd(tmp_path / "other")
    yield m
    m.close()


def restore_elsewhere(made: dict, into: Memoryd) -> dict:
    folder = into.home.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    shutil.copy(made["path"], folder / "handed.tar.gz")
    return into.data("restore", name="handed.tar.gz")


def write_logs(m: Memoryd, n: int) -> None:
    for i in range(n):
        log = m.home.session_log(f"mm-{i:04d}")
        log.parent.mkdir(parents=True, mode=0o700)
        append_session_record(log, UserRecord(time=T, content=f"said in session {i}"))


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("memory.md", 40_514),  # meeting notes pasted in: over 4 bytes a character of its limit
        ("user.md", 30_000),
        ("soul.md", 70_000),
        ("memory.md", entries.MAX_BYTES + 4096),  # past what memoryd reads of it at all
    ],
)
def test_a_file_edited_past_its_limit_is_backed_up_and_restored_as_it_is(md, other, name, size):
    md.call({"action": "add", "file": "memory", "text": "Entry one."})
    md.call({"action": "note", "text": "A note worth keeping."})
    path = md.home.memory_file(name)
    pasted = ("Pasted meeting notes line. " * (size // 27 + 1)).encode()[:size]
    path.write_bytes(path.read_bytes() + b"\n\xc2\xa7\n" + pasted)
    held = path.read_bytes()
    made = md.data("backup")
    out = restore_elsewhere(made, other)
    assert other.home.memory_file(name).read_bytes() == held
    assert other.home.memory_file("notes.md").read_bytes() == (
        md.home.memory_file("notes.md").read_bytes()
    )
    assert "no session can start until the restored memory is mended" in out["message"]
    assert name in out["message"]


def test_more_session_logs_than_an_archive_holds_refuse_the_backup(md, monkeypatch):
    monkeypatch.setattr(backupformat, "SESSION_MEMBERS_MAX", 5)
    write_logs(md, 6)
    folder = md.home.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    old = ["memory-20260101T000000Z.tar.gz", "memory-20260102T000000Z.tar.gz"]
    for name in old:
        (folder / name).write_bytes(b"an older archive")
    with pytest.raises(AdminRefused) as refused:
        md.admin("backup", {"with_sessions": True, "keep": 1})
    said = str(refused.value)
    assert said.startswith(
        "refused: sessions/ holds 6 session logs, more than one archive holds (5)"
    )
    assert "without --with-sessions" in said and "no older one removed" in said
    assert "\n" not in said
    assert sorted(p.name for p in folder.iterdir()) == old
    # the memory alone is still backed up
    assert md.data("backup")["files"] >= 4


def test_a_backup_at_the_session_bound_restores(md, other, monkeypatch):
    monkeypatch.setattr(backupformat, "SESSION_MEMBERS_MAX", 5)
    write_logs(md, 5)
    made = md.data("backup", with_sessions=True)
    out = restore_elsewhere(made, other)
    assert out["session_logs"] == 5


def test_a_file_gzip_shrinks_past_the_old_ratio_is_backed_up_and_restored(md, other, monkeypatch):
    """A memory file filled by hand with one byte over and over: gzip shrinks it past RATIO, and
    the archive declares its size, so restore takes it at that size."""
    monkeypatch.setattr(backupformat, "FLOOR", 1 << 20)
    held = b"\0" * (8 << 20)
    md.home.memory_file("memory.md").write_bytes(held)
    made = md.data("backup")
    assert 100 * os.path.getsize(made["path"]) < len(held)
    restore_elsewhere(made, other)
    assert other.home.memory_file("memory.md").read_bytes() == held


def test_the_memory_files_are_within_the_archives_bound():
    assert len(layout.ROOT_FILES) <= backupformat.MEMORY_FILES_MAX
