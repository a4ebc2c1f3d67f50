"""backup --keep prunes only the routine archives: the copy restore --replace makes of the memory it
replaces, and an archive with session logs, are kept until the owner removes them."""

import os
import shutil

import pytest

from memoryd.data import backup, backupkeep
from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def _restored_over(tmp_path, m: Memoryd) -> str:
    """restore --replace of an older backup; the path of the copy it made of what it replaced."""
    m.call({"action": "add", "file": "memory", "text": "The old router is in the attic."})
    old = tmp_path / "old.tar.gz"
    shutil.copy(m.data("backup")["path"], old)
    m.call({"action": "add", "file": "memory", "text": "The new router is in the hall."})
    shutil.copy(old, m.home.root / "backups" / "old.tar.gz")
    out = m.data("restore", name="old.tar.gz", replace=True)
    assert out["before"] and os.path.basename(out["before"]).endswith("-replaced.tar.gz")
    return out["before"]


@pytest.mark.parametrize("kind", ["replaced", "with sessions"])
def test_keep_leaves_a_restores_copy_and_an_archive_with_sessions(tmp_path, md, kind):
    if kind == "replaced":
        kept = _restored_over(tmp_path, md)
    else:
        md.say("s-one", "where is the router", "in the hall")
        kept = md.data("backup", with_sessions=True)["path"]
        assert os.path.basename(kept).endswith("-sessions.tar.gz")
    for _ in range(3):
        made = md.data("backup", keep=1)
        assert os.path.basename(kept) not in made["removed"]
        assert os.path.exists(kept)
    # The routine archives are pruned as before: only the newest stands.
    folder = md.home.root / "backups"
    routine = [n for n in os.listdir(folder) if backup.ARCHIVE_NAME.match(n)]
    assert routine == [os.path.basename(made["path"])]
    assert backupkeep.prune(md.home, 1).removed == [] and os.path.exists(kept)


@pytest.mark.parametrize(
    ("name", "pruned"),
    [
        ("memory-20261130T101010Z.tar.gz", True),
        ("memory-20261130T101010Z-2.tar.gz", True),
        ("memory-20261130T101010Z-replaced.tar.gz", False),
        ("memory-20261130T101010Z-replaced-2.tar.gz", False),
        ("memory-20261130T101010Z-sessions.tar.gz", False),
    ],
)
def test_which_names_prune_takes(md, name, pruned):
    folder = md.home.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    (folder / name).write_bytes(b"old")
    assert backupkeep.prune(md.home, 0).removed == ([name] if pruned else [])
    assert (folder / name).exists() is not pruned
