"""memoryd killed in a forget after its journal line and before forgotten.jsonl lists its keys and
digests: the next start says the forget stopped part way and to run it again, and writes its keys
back, never an ERROR that the file is missing or lost lines to a removal or hand edit (nobody
touched it). A file emptied with no forget under way is still said as lines lost."""

import json
import logging

import pytest

from memoryd.data import forget, unfinished
from memoryd.journal import forgetread, forgotten, forgottenwrite
from tests.memoryd.owner_data_harness import Memoryd

NOTES = ["The old door code is 4411.", "The plumber comes on Tuesday."]


class Killed(Exception):
    """memoryd killed: nothing after it runs."""


def _killed(*_args, **_kwargs):
    raise Killed


def _home_with_notes(tmp_path, monkeypatch, earlier: bool, kill_at: str) -> Memoryd:
    m = Memoryd(tmp_path / "home")
    try:
        for note in NOTES:
            m.call({"action": "note", "text": note})
        json.loads(m.admin("search", {"query": "door plumber", "json": True}))
        if earlier:
            m.admin("forget", {"id": "note:1"})
        with monkeypatch.context() as patch:
            if kill_at == "listing":
                patch.setattr(forgottenwrite, "add", _killed)
            else:
                patch.setattr(forget, "purge", _killed)  # its keys listed, the index not yet
            with pytest.raises(Killed):
                m.admin("forget", {"id": "note:0"})
    finally:
        m.close()
    return m


def _started(m: Memoryd, caplog) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.INFO):
        forgottenwrite.mend(m.home)  # as the start does, before the writer runs
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("earlier", [False, True], ids=["first forget", "later forget"])
def test_a_forget_killed_before_it_listed_its_keys_is_said_as_stopped(
    tmp_path, monkeypatch, caplog, earlier
):
    m = _home_with_notes(tmp_path, monkeypatch, earlier, "listing")
    assert unfinished.path_of(m.home).exists()
    [line] = _started(m, caplog)
    assert "is missing" not in line and "lines lost" not in line and "emptied" not in line
    assert line.startswith("a forget of note:0 (")
    assert "stopped part way; its journal line was written, 2 keys or digests of it" in line
    assert "written back to it" in line
    assert line.endswith("run bxctl memory forget note:0 again to finish it")
    assert "4411" not in line
    assert forgetread.forgets(m.home).last <= forgotten.held(m.home)
    # the next start: its keys listed now, the forget still to run again
    [again] = _started(m, caplog)
    assert again == line.split(";")[0] + "; its text may" + line.split("; its text may")[1]


def test_a_forget_stopped_with_its_keys_listed_is_said_at_start(tmp_path, monkeypatch, caplog):
    m = _home_with_notes(tmp_path, monkeypatch, False, "index")
    [line] = _started(m, caplog)
    assert line.startswith("a forget of note:0 (") and "stopped part way; its text may" in line
    assert line.endswith("run bxctl memory forget note:0 again to finish it")


def test_a_file_emptied_with_no_forget_under_way_is_still_said_as_lines_lost(tmp_path, caplog):
    m = Memoryd(tmp_path / "home")
    try:
        for note in NOTES:
            m.call({"action": "note", "text": note})
        json.loads(m.admin("search", {"query": "door plumber", "json": True}))
        m.admin("forget", {"id": "note:0"})
        m.admin("forget", {"id": "note:1"})
    finally:
        m.close()
    forgotten.path(m.home).write_bytes(b"")
    [line] = _started(m, caplog)
    assert "lines lost: the file emptied or edited" in line and "part way" not in line
