"""What a killed command leaves in backups/ (a backup's or an export's temporary file, a copy a
stopped bxctl handed over) holds memory's text where no forget reaches: memoryd removes it at
start and before a forget scrubs the exports, but never a copy a running bxctl is handing over
(it holds a shared lock on backups/), nor anything of the owner's."""

import fcntl
import os
import time

import pytest

from memoryd.data import backup
from memoryd.home import Home
from memoryd.server import remove_stale_temp_files
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The locker code is 4711."
COPY = ".incoming-0123456789ab.jsonl"

# (name, what it is, removed when no bxctl holds backups/, removed while one does)
CASES = [
    (".export-20261203T101500Z.jsonl.0a1b2c3d4e5f.tmp", "an export's temporary file", True, True),
    (".export-20261203T101500Z-2.md.0a1b2c3d4e5f.tmp", "a markdown export's", True, True),
    (".memory-20261203T101500Z.tar.gz.4242.tmp", "an archive's temporary file", True, True),
    (COPY, "a copy bxctl handed over", True, False),
    (f".{COPY}.0a1b2c3d.tmp", "the temporary file of that copy", True, False),
    (".incoming-0123456789ab.tar.gz", "an archive handed over", True, False),
    ("export-20261203T101500Z.jsonl", "an export", False, False),
    ("memory-20261203T101500Z.tar.gz", "an archive", False, False),
    (".incoming-mine.jsonl", "the owner's (no random part)", False, False),
    (".export-notes.tmp", "the owner's (no time)", False, False),
    ("notes.tmp", "the owner's", False, False),
]


def backups_with(root, names) -> Home:
    home = Home(root)
    folder = root / "backups"
    folder.mkdir(parents=True, mode=0o700)
    for name in names:
        (folder / name).write_text(SECRET)
    return home


def left(home: Home) -> set[str]:
    return set(os.listdir(home.root / "backups"))


@pytest.mark.parametrize("held", [False, True], ids=["no-bxctl", "bxctl-handing-over"])
def test_the_leftovers_go_and_the_rest_stays(tmp_path, held):
    home = backups_with(tmp_path, [name for name, *_ in CASES])
    lock = os.open(home.root / "backups", os.O_RDONLY | os.O_DIRECTORY)
    try:
        if held:
            fcntl.flock(lock, fcntl.LOCK_SH)  # as bxctl holds it while it hands a copy over
        backup.remove_all_leftovers(home)
    finally:
        os.close(lock)
    kept = {name for name, _, free, busy in CASES if not (busy if held else free)}
    assert left(home) == kept


def test_a_copy_older_than_any_bxctl_waits_goes_while_another_is_handed_over(tmp_path):
    home = backups_with(tmp_path, [COPY, ".incoming-ba9876543210.jsonl"])
    old = time.time() - backup.HANDED_SECONDS - 60
    os.utime(home.root / "backups" / COPY, (old, old))
    lock = os.open(home.root / "backups", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(lock, fcntl.LOCK_SH)
        backup.remove_all_leftovers(home)
    finally:
        os.close(lock)
    assert left(home) == {".incoming-ba9876543210.jsonl"}


def test_a_name_of_a_leftover_that_is_no_regular_file_is_left_alone(tmp_path):
    home = backups_with(tmp_path, [])
    folder = home.root / "backups"
    (folder / COPY).mkdir()
    target = tmp_path / "elsewhere.tmp"
    target.write_text(SECRET)
    (folder / ".export-20261203T101500Z.jsonl.0a1b2c3d4e5f.tmp").symlink_to(target)
    backup.remove_all_leftovers(home)
    assert len(left(home)) == 2 and target.exists()


def test_no_backups_folder_is_nothing_to_do(tmp_path):
    backup.remove_all_leftovers(Home(tmp_path))
    assert not (tmp_path / "backups").exists()


def test_memoryd_start_removes_them(tmp_path):
    home = backups_with(tmp_path, [name for name, *_ in CASES])
    (tmp_path / "memory").mkdir(mode=0o700)
    remove_stale_temp_files(home)  # as server.prepare runs it, before anything is served
    assert left(home) == {name for name, _, free, _ in CASES if not free}


def test_a_forget_leaves_no_leftover_holding_the_text(tmp_path):
    md = Memoryd(tmp_path / "home")
    try:
        md.call({"action": "note", "text": SECRET})
        md.data("export", format="jsonl")  # an export the forget scrubs, so that backups/ is made
        folder = md.home.root / "backups"
        made = [".export-20261203T101500Z.jsonl.0a1b2c3d4e5f.tmp", COPY]
        for name in made:
            (folder / name).write_text(SECRET)
        md.data("forget", id="note:0")
        holding = [p.name for p in folder.iterdir() if SECRET.encode() in p.read_bytes()]
        assert holding == []
        assert not set(made) & left(md.home)
    finally:
        md.close()
