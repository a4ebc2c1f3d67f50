"""promote reads notes.md on the writer thread, which every memory write of every session waits
behind: a notes.md that is a FIFO, a folder or a link is refused in one line at once, and the
next write is served."""

import os

import pytest

from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd
from tests.proto.nowait import without_waiting


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


@pytest.mark.parametrize(
    "make, said",
    [
        (os.mkfifo, "a FIFO"),
        (os.mkdir, "not a file"),
        (lambda p: os.symlink("/etc/hostname", p), "a symbolic link"),
    ],
    ids=["fifo", "folder", "symlink"],
)
def test_a_notes_file_that_is_not_a_file_is_refused_and_writes_go_on(md, make, said):
    notes = md.home.memory_file("notes.md")
    notes.unlink(missing_ok=True)
    make(notes)
    with pytest.raises(AdminRefused) as refused:
        without_waiting(lambda: md.admin("promote", {"ref": "Some note.", "file": "memory"}), notes)
    [line] = str(refused.value).splitlines()
    assert line.startswith(f"refused: cannot read {notes}: {said}"), line
    assert line.endswith("nothing was promoted")
    out = md.call({"action": "add", "file": "memory", "text": "Launch is on Thursday."})
    assert "memory.md updated" in out
