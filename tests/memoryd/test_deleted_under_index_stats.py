"""The index file removed or replaced while memoryd runs: recall is refused, and so is indexing
(nothing goes into a file no reader opens again), and `bxctl memory stats` (and `scripts/stack
status`, which prints its index lines) says so and what to do, never "every session log indexed".
A reindex brings it all back (index/samefile.py, owner/indexstate.py)."""

import json
import os
import shutil

import pytest

from memoryd.errors import IndexDamaged
from memoryd.index.index import GONE
from memoryd.writer import WRITE
from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _remove(path) -> str:
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    return "removed"


def _replace(path) -> str:
    other = path.with_name("other.sqlite3")
    other.write_bytes(b"")
    os.replace(other, path)
    return "replaced by another file"


def _folder(path) -> str:
    _remove(path)
    path.mkdir()
    return "replaced by a folder"


def _index_lines(md: Memoryd) -> list[str]:
    return [line for line in md.admin("stats", "{}").splitlines() if line.startswith("index")]


@pytest.mark.parametrize("change", [_remove, _replace, _folder], ids=["removed", "replaced", "dir"])
def test_stats_says_the_index_is_gone_and_nothing_is_indexed_into_it(md, change):
    md.say("s-one", "alpha words said", "alpha reply")
    assert _index_lines(md) == ["index: every session log indexed"]
    path = md.index.path
    gone = change(path)
    with pytest.raises(IndexDamaged) as refused:
        md.say("s-one", "bravo words said", "bravo reply")
    assert str(refused.value) == GONE
    first = "move it away, then " if gone == "replaced by a folder" else ""
    assert _index_lines(md) == [
        f"index: index/memory.sqlite3 was {gone} while memoryd ran: nothing is indexed and"
        f" recall and search are refused; {first}rebuild it with bxctl reindex (runbook:"
        " memory-index-damaged)"
    ]
    assert json.loads(md.admin("stats", '{"json": true}'))["index"]["gone"] == gone
    with pytest.raises(IndexDamaged):
        md.recall("bravo")
    if gone == "replaced by a folder":
        path.rmdir()
    md.service._writer.submit(WRITE, md.index.reindex).result()
    assert _index_lines(md) == ["index: every session log indexed"]
    assert "bravo words said" in md.recall("bravo")
    assert "gone" not in json.loads(md.admin("stats", '{"json": true}'))["index"]


def test_notes_written_meanwhile_are_indexed_by_the_reindex(md):
    md.call({"action": "note", "text": "the spare key is under the blue pot"})
    _remove(md.index.path)
    md.call({"action": "note", "text": "the boiler code is 4417"})
    assert not md.index.path.exists()  # the write did not make an empty index there
    md.service._writer.submit(WRITE, md.index.reindex).result()
    assert "boiler code" in md.recall("boiler code")
