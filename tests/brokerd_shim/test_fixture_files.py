"""The fixture folder's files are read as grant files are: a FIFO is never waited on (the call's
thread would never end, and brokerd-shim would no longer stop on SIGTERM), a link never followed
(to /dev/zero it would read without bound), a folder or a file over its bound refused, each failing
the call in one sentence with one line naming the file. The folder itself may be a link."""

import asyncio
import logging
import os
import re

import pytest

from brokerd_shim.errors import ToolFailed
from brokerd_shim.fixtures import FixtureRuntime
from brokerd_shim.ledger import SessionState
from brokerd_shim.runtime import RunSpec
from proto.labels import Label
from proto.messages import ToolRequest
from tests.proto.nowait import without_waiting

INDEX = '[[fixture]]\ntool = "t"\narguments = {}\nfile = "page.txt"\n'
STATE = SessionState("mm-s1", Label(klass="private", untrusted=False))
SPEC = RunSpec(ToolRequest(session="mm-s1", call_id="c1", tool="t", arguments="{}"), {}, STATE)
WHY = {
    "fifo": "a FIFO, not a regular file",
    "link": "a symbolic link, which is not followed",
    "folder": "not a file",
}


def lay(path, how, text):
    """Something that is not text at path, where a file holding text should be."""
    if how == "fifo":
        os.mkfifo(path)
    elif how == "link":
        outside = path.parent.parent / f"outside-{path.name}"
        outside.write_text(text)
        path.symlink_to(outside)
    elif how == "folder":
        path.mkdir()
    else:
        with open(path, "wb") as f:
            f.truncate(64 << 20)  # sparse


def answer(folder, path):
    runtime = FixtureRuntime(folder)
    if path.is_fifo():
        return without_waiting(lambda: runtime._answer(SPEC), path)
    return runtime._answer(SPEC)


@pytest.mark.parametrize("how", ["fifo", "link", "folder", "oversized"])
def test_an_index_that_is_no_file_fails_the_call_at_once_naming_it(tmp_path, caplog, how):
    folder = tmp_path / "fixtures"
    folder.mkdir()
    (folder / "page.txt").write_text("the page")
    index = folder / "index.toml"
    lay(index, how, INDEX)
    with caplog.at_level(logging.ERROR), pytest.raises(ToolFailed) as failed:
        answer(folder, index)
    assert str(failed.value) == "the fixture index index.toml cannot be read"
    why = WHY.get(how, r"larger than [0-9,]+ bytes")
    assert len(caplog.messages) == 1
    assert re.fullmatch(
        f"fixtures: {re.escape(str(index))} cannot be read: {why}", caplog.messages[0]
    )


@pytest.mark.parametrize("how", ["fifo", "link", "folder"])
def test_a_fixture_that_is_no_file_fails_the_call_at_once_naming_it(tmp_path, caplog, how):
    folder = tmp_path / "fixtures"
    folder.mkdir()
    (folder / "index.toml").write_text(INDEX)
    page = folder / "page.txt"
    lay(page, how, "the page")
    with caplog.at_level(logging.ERROR), pytest.raises(ToolFailed) as failed:
        answer(folder, page)
    assert str(failed.value) == "the fixture for t {} cannot be read"
    assert caplog.messages == [f"fixtures: {page} is listed but cannot be read: {WHY[how]}"]


def test_a_fixture_over_its_bound_is_refused_naming_it(tmp_path, caplog):
    (tmp_path / "index.toml").write_text(INDEX)
    lay(tmp_path / "page.txt", "oversized", "")
    with caplog.at_level(logging.ERROR), pytest.raises(ToolFailed, match=r"is over \d+ bytes"):
        answer(tmp_path, tmp_path / "page.txt")
    assert len(caplog.messages) == 1 and str(tmp_path / "page.txt") in caplog.messages[0]


def test_the_folder_may_be_a_link(tmp_path):
    real = tmp_path / "kept"
    real.mkdir()
    (real / "index.toml").write_text(INDEX)
    (real / "page.txt").write_text("the page")
    (tmp_path / "fixtures").symlink_to(real)
    runtime = FixtureRuntime(tmp_path / "fixtures")
    assert asyncio.run(runtime.run_labelled(SPEC)) == (True, "the page", None)
