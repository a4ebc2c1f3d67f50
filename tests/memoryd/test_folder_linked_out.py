"""A folder of memoryd's moved out of {home} and linked back while memoryd runs (an owner freeing
space: mv memory/recalls /other && ln -s /other/recalls memory/recalls). The files keep their
device and inode, so a descriptor held open passed a one-stat check of its path; now nothing is
written through the link: recall lines and the index's reads and writes are refused in one line
naming the link, as a start refuses it, memoryd keeps running, and with the folder put back it
goes on as before (belowhome.py, recall/logfile.py, index/samefile.py)."""

import json
import logging
import os
import shutil
import stat

import pytest

from memoryd.belowhome import linked_folder, open_below, stat_below
from memoryd.errors import IndexDamaged
from memoryd.home import Home, NotRegular
from memoryd.index.index import Index
from memoryd.recall.recaller import Recaller
from tests.memoryd.owner_data_harness import Memoryd

from .test_recaller import write_log

LINK = "a symbolic link, which is not followed"


def _link_out(folder, away):
    """Move folder to away and put a link to it in its place."""
    shutil.move(folder, away)
    folder.symlink_to(away, target_is_directory=True)


def _put_back(folder, away):
    folder.unlink()
    shutil.move(away, folder)


def _sizes(folder) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def recalling(tmp_path):
    home = Home(tmp_path / "home")
    write_log(home, "mm-talk", ["the cat is called Miso", "Miso sleeps on the chair"])
    index = Index(home)
    index.open()
    index.catch_up_all()
    recaller = Recaller(index)
    yield home, recaller
    recaller.close()
    index.close()


@pytest.mark.parametrize("moved", ["memory/recalls", "memory"])
def test_no_recall_line_goes_through_a_folder_linked_back(recalling, tmp_path, moved):
    home, recaller = recalling
    recaller.recall("Miso", 2, session="mm-a")
    [month] = list(home.recalls.iterdir())
    folder, away = home.root / moved, tmp_path / "otherdisk"
    _link_out(folder, away)
    before = _sizes(away)
    with pytest.raises(NotRegular) as refused:
        recaller.recall("Miso", 2, session="mm-b")
    assert str(refused.value) == f"{folder} is {LINK}"
    assert _sizes(away) == before  # nothing appended outside {home}
    _put_back(folder, away)
    assert recaller.recall("Miso", 2, session="mm-c").text.startswith("[1] ")
    assert [json.loads(line)["session"] for line in month.read_bytes().splitlines()] == [
        "mm-a",
        "mm-c",
    ]


def test_a_month_file_opened_anew_is_not_opened_through_a_linked_memory_folder(recalling, tmp_path):
    home, recaller = recalling
    folder, away = home.memory, tmp_path / "otherdisk"
    folder.mkdir(mode=0o700, exist_ok=True)
    _link_out(folder, away)
    with pytest.raises(NotRegular) as refused:  # the first recall opens the month file
        recaller.recall("Miso", 2, session="mm-a")
    assert str(refused.value) == f"{folder} is {LINK}"
    assert not (away / "recalls").exists()  # no folder made, nothing chmodded outside {home}


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_the_index_is_not_read_nor_written_through_its_folder_linked_back(md, tmp_path, caplog):
    md.say("s-one", "alpha words said", "alpha reply")
    assert "alpha words said" in md.recall("alpha")
    folder, away = md.home.index_dir, tmp_path / "otherdisk"
    _link_out(folder, away)
    before = _sizes(away)
    cut = f"cut off from the home ({folder} is {LINK})"
    refusal = (
        f"the memory index index/memory.sqlite3 was {cut} while memoryd ran: put the folder back"
        " in its place, or remove the link and rebuild it with bxctl reindex (runbook:"
        " memory-index-damaged)"
    )
    with caplog.at_level(logging.WARNING, logger="memoryd.index.index"):
        for _ in range(2):
            with pytest.raises(IndexDamaged) as refused:
                md.recall("alpha")
            assert str(refused.value) == refusal
        with pytest.raises(IndexDamaged):
            md.say("s-one", "bravo words said", "bravo reply")
    said = [r.getMessage() for r in caplog.records if "memory-index-damaged" in r.getMessage()]
    assert said == [
        f"memory-index-damaged: {md.index.path}: {cut}; recall is refused until its folder is"
        " back in the home"
    ]
    assert _sizes(away) == before  # neither the file nor its -wal written outside {home}
    lines = [line for line in md.admin("stats", "{}").splitlines() if line.startswith("index")]
    assert lines == [
        f"index: index/memory.sqlite3 was {cut} while memoryd ran: nothing is indexed and recall"
        " and search are refused; put the folder back in its place, or remove the link, then"
        " rebuild it with bxctl reindex (runbook: memory-index-damaged)"
    ]
    _put_back(folder, away)
    assert "alpha words said" in md.recall("alpha")  # the same file, read on
    md.say("s-one", "charlie words said", "charlie reply")
    assert "charlie words said" in md.recall("charlie")


def test_open_below_refuses_a_link_at_any_folder_and_follows_the_home_link(tmp_path):
    real = tmp_path / "real"
    (real / "a" / "b").mkdir(parents=True)
    root = tmp_path / "home"
    root.symlink_to(real)  # {home} itself may be a link
    fd = open_below(root, root / "a" / "b" / "f.jsonl", os.O_WRONLY | os.O_CREAT)
    os.close(fd)
    assert stat.S_IMODE((real / "a" / "b" / "f.jsonl").stat().st_mode) == 0o600
    fd = open_below(root, root / "new" / "deeper" / "f.jsonl", os.O_WRONLY | os.O_CREAT)
    os.close(fd)
    assert stat.S_IMODE((real / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE((real / "new" / "deeper").stat().st_mode) == 0o700
    elsewhere = tmp_path / "elsewhere"
    _link_out(real / "a", elsewhere)
    path = root / "a" / "b" / "f.jsonl"
    assert str(linked_folder(root, path)) == f"{root / 'a'} is {LINK}"
    for look in (
        lambda: stat_below(root, path),
        lambda: open_below(root, path, os.O_WRONLY | os.O_APPEND),
        lambda: open_below(root, root / "a" / "b" / "g.jsonl", os.O_WRONLY | os.O_CREAT),
    ):
        with pytest.raises(NotRegular) as refused:
            look()
        assert str(refused.value) == f"{root / 'a'} is {LINK}"
    assert sorted(p.name for p in (elsewhere / "b").iterdir()) == ["f.jsonl"]
    (real / "c").write_bytes(b"")
    with pytest.raises(NotRegular) as refused:
        open_below(root, root / "c" / "f.jsonl", os.O_WRONLY | os.O_CREAT)
    assert str(refused.value) == f"{root / 'c'} is not a folder"
