"""memory/edits, the journal's folder, replaced by a file while memoryd runs: every owner command
answers in one line (a file or folder it needs that cannot be used: naming the path and what is
wrong, owner/dispatch.py), never "internal error" with a traceback; once the folder is back, they
answer as before."""

import json
import logging
import os
import shutil

import pytest

from memoryd.errors import MemorydError
from proto.errors import ProtoError
from tests.memoryd.owner_data_harness import Memoryd

COMMANDS = [
    ("log", {}),
    ("log", {"json": True}),
    ("log", {"n": 3, "from": "2026-09-20-0001"}),
    ("pending", {}),
    ("pending", {"json": True}),
    ("show", {"id": "2026-09-20-0001"}),
    ("undo", {"id": "2026-09-20-0001"}),
    ("accept", {"id": "p-2026-09-20-0001"}),
    ("reject", {"id": "p-2026-09-20-0001"}),
    ("promote", {"ref": "note:0", "file": "memory"}),
    ("stats", {}),
    ("block", {}),
]


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path, ignore_errors=True)


def _answer(md: Memoryd, command: str, arg: dict) -> str:
    """The answer the owner reads: the text, or the error's own text (what proto.answer sends
    for a MemorydError or a ProtoError; anything else would be "internal error")."""
    try:
        return md.admin(command, json.dumps(arg))
    except (MemorydError, ProtoError) as error:
        return f"error: {error}"


def _file(edits, aside) -> None:
    edits.write_text("x\n")


def _fifo(edits, aside) -> None:
    os.mkfifo(edits)


def _link(edits, aside) -> None:
    edits.symlink_to(aside)


@pytest.mark.parametrize("make", [_file, _fifo, _link], ids=["file", "fifo", "link"])
def test_every_owner_command_answers_in_one_line(md, tmp_path, caplog, make):
    md.call({"action": "add", "file": "memory", "text": "Launch is Thursday."})
    md.call({"action": "note", "text": "the spare key is under the blue pot"})
    edits = md.home.edits
    shutil.move(edits, tmp_path / "edits.aside")
    make(edits, tmp_path / "edits.aside")
    with caplog.at_level(logging.INFO):
        for command, arg in COMMANDS:
            said = _answer(md, command, arg)
            if said.startswith("error: "):
                assert "\n" not in said, (command, said)
        for command in ("log", "pending"):
            said = _answer(md, command, {})
            assert said.startswith("error: ") and str(edits) in said, (command, said)
    assert all(r.exc_info is None for r in caplog.records)
    if make is _file:
        assert _answer(md, "log", {}) == (
            f"error: memory log stopped: {edits}: Not a directory; mend that, then ask again"
        )
        assert _answer(md, "pending", {}) == (
            f"error: memory pending stopped: {edits}: Not a directory; mend that, then ask again"
        )
    edits.unlink()
    shutil.move(tmp_path / "edits.aside", edits)
    assert "add  memory.md" in _answer(md, "log", {})
    assert not _answer(md, "pending", {}).startswith("error: ")
