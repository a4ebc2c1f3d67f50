"""A folder (or a link, a FIFO) where a reindex must remove or replace the index file or one beside
it: `bxctl reindex` refuses in one line naming it, before any build, and leaves it as it is (memoryd
removes only files of its own, as a start refuses one there); once the owner moves it away, the
reindex rebuilds the index (index/dbfile.in_the_way)."""

import logging
import os
import shutil

import pytest

from memoryd.errors import AdminRefused
from memoryd.index.rebuild import Rebuilder
from memoryd.writer import WRITE
from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _folder(path) -> None:
    path.mkdir()
    (path / "owners-notes.txt").write_text("mine")


def _fifo(path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize("name", ["memory.sqlite3", "memory.sqlite3-wal", "memory.sqlite3.new"])
@pytest.mark.parametrize("make", [_folder, _fifo], ids=["folder", "fifo"])
def test_reindex_refuses_in_one_line_and_leaves_it(md, caplog, name, make):
    md.say("s-one", "alpha words said", "alpha reply")
    index_dir = md.index.path.parent
    for suffix in ("", "-wal", "-shm"):
        md.index.path.with_name(md.index.path.name + suffix).unlink(missing_ok=True)
    there = index_dir / name
    make(there)
    for reindex in (lambda: Rebuilder().build(md.index), md.index.reindex):
        with caplog.at_level(logging.WARNING), pytest.raises(AdminRefused) as refused:
            md.service._writer.submit(WRITE, reindex).result()
        said = str(refused.value)
        assert said.startswith(f"refused: {there} is ") and "\n" not in said
        assert said.endswith(
            "which memoryd did not make and does not remove: move it away, then run bxctl"
            " reindex again (the index is as it was)"
        )
        assert os.path.lexists(there)
    assert all(r.exc_info is None for r in caplog.records)
    if make is _folder:
        assert (there / "owners-notes.txt").read_text() == "mine"
        shutil.rmtree(there)
    else:
        there.unlink()
    md.service._writer.submit(WRITE, md.index.reindex).result()
    assert "alpha words said" in md.recall("alpha")


def test_a_folder_put_there_during_the_build_is_not_renamed_over(md):
    md.say("s-one", "alpha words said", "alpha reply")
    built = md.index.build_new()
    md.index.path.unlink()
    md.index.path.mkdir()
    with pytest.raises(AdminRefused):
        md.service._writer.submit(WRITE, md.index.finish_new, built).result()
    assert md.index.path.is_dir()
