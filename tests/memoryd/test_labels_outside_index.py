"""The labels memoryd has seen of a session survive the index: deleted by the owner (the runbook's
way to rebuild it) or found not to be a database and started anew, a log whose untrusted (or
secret) tool result was cut out by hand stays as strict as memoryd saw it, though the session
never wrote to memory (the journal knows nothing of it). memory/labels.jsonl holds one line per
rise of a session's label, a session id and a label, no text; a backup holds it and a restore
lays the archive's lines with this home's own."""

import glob
import json
import os
import tarfile

import pytest

from memoryd.data import layout
from memoryd.home import Home, ensure_dir
from memoryd.index.index import Index
from memoryd.trust import risen
from memoryd.trust.witness import Witness
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.test_index_label_kept import (
    AFTER,
    BEFORE,
    fetched,
    labels,
    opened,
    rewritten,
    said,
    user,
)
from tests.memoryd.test_reindex import append
from tests.recalling import recall_on


def a_home(tmp_path) -> Home:
    home = Home(tmp_path / "home")
    ensure_dir(home.memory)  # memoryd's store makes it at start
    return home


def lines(home: Home) -> list[dict]:
    path = home.memory_file("labels.jsonl")
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines()]


def deleted(home: Home) -> None:
    """runbook/memory-index-damaged.md: delete {home}/index/memory.sqlite3*."""
    for name in glob.glob(os.fspath(home.index_db) + "*"):
        os.remove(name)


def damaged(home: Home) -> None:
    """Not a database any more: memoryd starts a new index and can read no label from the old."""
    with open(home.index_db, "r+b") as f:
        f.write(b"not a database at all, not even its header" * 4)
    for name in glob.glob(os.fspath(home.index_db) + "-*"):
        os.remove(name)


@pytest.mark.parametrize("index_gone", [deleted, damaged])
@pytest.mark.parametrize("klass", ["public", "secret"])
def test_a_redacted_log_stays_as_strict_when_the_index_is_gone(tmp_path, index_gone, klass):
    home = a_home(tmp_path)
    append(home, "t1", [user(BEFORE), *fetched(klass), said(AFTER)])
    index = opened(home)
    index.catch_up_all()
    index.close()
    seen = ("secret" if klass == "secret" else "private", True)
    assert lines(home) == [{"session": "t1", "class": seen[0], "untrusted": True}]
    rewritten(home, "t1")  # the owner cut the fetched page out of the log
    index_gone(home)
    index = opened(home)
    try:
        index.catch_up_all()
        if klass == "secret":  # above max_class: what followed the secret result is not indexed
            assert labels(home, "t1", AFTER) == set()
        else:
            assert labels(home, "t1", AFTER) == {("private", 1)}
            assert labels(home, "t1", BEFORE) == {("private", 1)}
            out = recall_on(index, "zebra release", 10, session="s-test").text
            assert "memory-tainted · session t1" in out and "] memory ·" not in out, out
    finally:
        index.close()
    # One line per rise, however often the log was read again.
    assert len(lines(home)) == 1


def test_the_witness_records_what_it_saw_before_the_index_read_the_log(tmp_path):
    home = a_home(tmp_path)
    append(home, "w1", [user(BEFORE), *fetched(), said(AFTER)])
    assert Witness(home).stricter("w1", "private", False) == ("private", True)
    assert lines(home) == [{"session": "w1", "class": "private", "untrusted": True}]
    rewritten(home, "w1")
    index = opened(home)  # a new index: it never read the log before its edit
    try:
        index.catch_up_all()
        assert labels(home, "w1", AFTER) == {("private", 1)}
    finally:
        index.close()


def test_an_index_from_before_the_file_gives_its_labels_to_it_at_open(tmp_path):
    home = a_home(tmp_path)
    append(home, "t1", [user(BEFORE), *fetched(), said(AFTER)])
    index = opened(home)
    index.catch_up_all()
    index.close()
    home.memory_file("labels.jsonl").unlink()  # as an older memoryd left the home
    opened(home).close()
    assert lines(home) == [{"session": "t1", "class": "private", "untrusted": True}]


def tainted_index(home: Home, sessions: list[str]) -> None:
    """An index that read each session's untrusted page, and no labels.jsonl (as an index written
    before the file was kept finds it at the upgrade's first start)."""
    for session in sessions:
        append(home, session, [user(BEFORE), *fetched(), said(AFTER)])
    index = opened(home)
    index.catch_up_all()
    index.close()
    home.memory_file("labels.jsonl").unlink()


def fsyncs_of(monkeypatch) -> list[str]:
    """The files fsync'd from now on, by path, each time (the real fsync still runs)."""
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


@pytest.mark.parametrize("rebuilt", [False, True])
def test_an_index_gives_all_its_labels_to_the_file_in_one_fsync(tmp_path, monkeypatch, rebuilt):
    # One fsync'd append a session held memoryd's start for minutes at tens of thousands of
    # sessions, before any socket was made; the copy must cost one append whatever their number.
    home = a_home(tmp_path)
    sessions = [f"t{n}" for n in range(60)]
    tainted_index(home, sessions)
    synced = fsyncs_of(monkeypatch)
    # rebuilt: another max_class, so the index is started anew (its labels kept before removal)
    index = Index(home, max_class="secret") if rebuilt else Index(home)
    index.open()
    index.close()
    assert synced.count(str(home.memory_file("labels.jsonl"))) == 1
    assert sorted(x["session"] for x in lines(home)) == sorted(sessions)
    assert {(x["class"], x["untrusted"]) for x in lines(home)} == {("private", True)}
    synced.clear()
    opened(home).close()  # all there: nothing more is written
    assert str(home.memory_file("labels.jsonl")) not in synced


def test_a_copy_cut_short_leaves_whole_lines_and_the_next_open_ends_it(tmp_path):
    home = a_home(tmp_path)
    sessions = [f"t{n}" for n in range(20)]
    tainted_index(home, sessions)
    opened(home).close()
    path = home.memory_file("labels.jsonl")
    whole = path.read_bytes()
    cut = whole.index(b"\n", len(whole) // 2) + 1 + 10  # a power cut ten bytes into a line
    path.write_bytes(whole[:cut])
    before = [json.loads(x) for x in whole[:cut].splitlines()[:-1]]
    opened(home).close()
    raw = path.read_bytes().splitlines()
    assert [json.loads(x) for x in raw[: len(before)]] == before  # the whole lines stand
    assert raw[len(before)] == whole[:cut].splitlines()[-1]  # the torn one, on its own line
    risen._homes.clear()  # as a new memoryd reads the file
    assert all(risen.label(home, s) == ("private", True) for s in sessions)


def test_a_clean_session_and_a_damaged_line_add_nothing(tmp_path):
    home = a_home(tmp_path)
    append(home, "c1", [user(BEFORE), said(AFTER)])
    home.memory_file("labels.jsonl").write_text('{"session": "x1", "class": ["no"]}\nnot json\n')
    index = opened(home)
    try:
        index.catch_up_all()
    finally:
        index.close()
    assert risen.label(home, "c1") is None and risen.label(home, "x1") is None
    assert len(home.memory_file("labels.jsonl").read_text().splitlines()) == 2


def test_a_backup_holds_the_file_and_a_restore_keeps_this_homes_lines(tmp_path):
    home = a_home(tmp_path)
    risen.rise(home, "t1", ("private", True))
    assert "memory/labels.jsonl" in [name for name, _ in layout.memory_files(home)]
    assert layout.MEMBER.fullmatch("memory/labels.jsonl")
    assert layout.held(home, None) is None  # carried over by a restore: nothing to lose
    staged = Home(tmp_path / "staged")
    ensure_dir(staged.memory)
    staged.memory_file("labels.jsonl").write_text(
        json.dumps({"session": "a1", "class": "secret", "untrusted": False}) + "\n"
    )
    assert risen.carry(home, staged) == 1
    assert risen.carry(home, staged) == 0  # already there
    assert risen.label(staged, "a1") == ("secret", False)
    assert risen.label(staged, "t1") == ("private", True)
    empty = Home(tmp_path / "empty")  # an archive made before the file was kept
    ensure_dir(empty.memory)
    assert risen.carry(home, empty) == 1 and risen.label(empty, "t1") == ("private", True)


def test_the_file_is_0600_and_holds_no_text(tmp_path):
    home = a_home(tmp_path)
    append(home, "t1", [user(BEFORE), *fetched(), said(AFTER)])
    index = opened(home)
    try:
        index.catch_up_all()
    finally:
        index.close()
    path = home.memory_file("labels.jsonl")
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert "zebra" not in path.read_text()


def test_a_backup_and_a_restore_replace_carry_the_labels(tmp_path):
    m = Memoryd(tmp_path / "mhome")
    try:
        m.call({"action": "add", "file": "memory", "text": "The router is in the hall."})
        risen.rise(m.home, "old1", ("private", True))
        made = m.data("backup")
        with tarfile.open(made["path"]) as tar:
            assert "memory/labels.jsonl" in tar.getnames()
        risen.rise(m.home, "new1", ("secret", False))  # seen after the archive was made
        m.data("restore", name=os.path.basename(made["path"]), replace=True)
        assert risen.label(m.home, "old1") == ("private", True)
        assert risen.label(m.home, "new1") == ("secret", False)
    finally:
        m.close()
