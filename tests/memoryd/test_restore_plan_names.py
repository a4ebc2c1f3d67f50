"""A restore's plan names only the files memoryd lays and removes (the root files, the months of
edits/ and recalls/), and a start carries it out only when what is at those places is what
memoryd keeps there. A hand-edited plan naming a file under a link the owner keeps in memory/
removed or wrote a file outside it; one naming a folder, a name under a file or a name too long
made every start fail with an error naming no plan. Each is now one ERROR naming the plan, and
the start goes on. A disk error while a start carries out a genuine plan refuses the start in one
line naming the plan: memory/ half laid is never served."""

import errno
import hashlib
import json
import logging
import os

import pytest

from memoryd.data import lay, restoreplan
from memoryd.errors import StartFailed
from memoryd.home import Home, ensure_dir
from tests.memoryd_process import MemorydProcess

STAGING = ".restore-0123456789ab"
RESTORED = b"Restored entry.\n"
KEPT = "the owner's, not memory's\n"


def _plan(lay_: list, remove: list) -> dict:
    return {
        "staging": STAGING,
        "lay": lay_,
        "remove": remove,
        "sha256": {name: hashlib.sha256(RESTORED).hexdigest() for name in lay_},
    }


def _staged(home: Home, names: list[str]) -> None:
    for name in names:
        path = home.memory / STAGING / "memory" / name
        ensure_dir(path.parent)
        path.write_bytes(RESTORED)


def _errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.fixture
def home(tmp_path) -> Home:
    home = Home(tmp_path / "home")
    ensure_dir(home.memory)
    home.memory_file("memory.md").write_text("Kept entry.\n")
    return home


@pytest.fixture
def outside(tmp_path, home):
    """A folder of the owner's outside memory/, linked from memory/attachments."""
    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "precious.txt").write_text(KEPT)
    os.symlink(folder, home.memory / "attachments")
    return folder


@pytest.mark.parametrize("where", ["remove", "lay"])
def test_a_plan_never_reaches_outside_memory_through_a_link(home, outside, caplog, where):
    name = "attachments/precious.txt"
    _staged(home, ["memory.md", name])
    plan = _plan(["memory.md", name], []) if where == "lay" else _plan(["memory.md"], [name])
    lay.plan_path(home).write_text(json.dumps(plan))
    with caplog.at_level(logging.INFO, logger=lay.__name__):
        lay.recover(home)  # returns: the start goes on
    errors = _errors(caplog)
    assert len(errors) == 1 and str(lay.plan_path(home)) in errors[0], errors
    assert "not a plan memoryd writes" in errors[0]
    assert (outside / "precious.txt").read_text() == KEPT
    assert home.memory_file("memory.md").read_text() == "Kept entry.\n"
    assert lay.plan_path(home).exists()  # left for the owner, as the ERROR says


NAMES = {
    "a folder": "edits",
    "a name under a file": "memory.md/x",
    "a name too long": "x" * 300,
    "a file memoryd never writes": "notes.md.bak",
    "a month file outside its folders": "2026-09.jsonl",
    "a session log": "sessions/s1/0.jsonl",
}


@pytest.mark.parametrize("name", NAMES.values(), ids=NAMES.keys())
def test_a_name_memoryd_never_lays_or_removes_is_refused(home, caplog, name):
    ensure_dir(home.edits)
    _staged(home, ["memory.md"])
    lay.plan_path(home).write_text(json.dumps(_plan(["memory.md"], [name])))
    with caplog.at_level(logging.INFO, logger=lay.__name__):
        lay.recover(home)
    errors = _errors(caplog)
    assert len(errors) == 1 and str(lay.plan_path(home)) in errors[0], errors
    assert home.edits.is_dir()
    assert home.memory_file("memory.md").read_text() == "Kept entry.\n"


@pytest.mark.parametrize(
    "name", ["soul.md", "labels.jsonl", "edits/2026-09.jsonl", "recalls/2026-12.jsonl"]
)
def test_every_name_memoryd_lays_or_removes_is_accepted(name):
    assert restoreplan.well_formed(_plan([name], [name]))


@pytest.mark.parametrize("name", ["edits/2026-9.jsonl", "edits/x/2026-09.jsonl", "recalls/"])
def test_a_month_file_memoryd_never_names_is_refused(name):
    assert not restoreplan.well_formed(_plan([], [name]))


def test_a_folder_where_a_plan_removes_a_file_is_refused_and_the_start_goes_on(home, caplog):
    ensure_dir(home.memory / "notes.md")  # where memoryd keeps a file
    _staged(home, ["memory.md"])
    lay.plan_path(home).write_text(json.dumps(_plan(["memory.md"], ["notes.md"])))
    with caplog.at_level(logging.INFO, logger=lay.__name__):
        lay.recover(home)
    errors = _errors(caplog)
    assert len(errors) == 1 and str(lay.plan_path(home)) in errors[0], errors
    assert str(home.memory / "notes.md") in errors[0]
    assert (home.memory / "notes.md").is_dir()
    assert home.memory_file("memory.md").read_text() == "Kept entry.\n"  # nothing laid
    assert lay.plan_path(home).exists()


def test_a_staging_folder_that_is_a_link_is_never_carried_out(tmp_path, home, caplog):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "memory").mkdir(parents=True)
    (elsewhere / "memory" / "memory.md").write_bytes(RESTORED)
    os.symlink(elsewhere, home.memory / STAGING)
    lay.plan_path(home).write_text(json.dumps(_plan(["memory.md"], [])))
    with caplog.at_level(logging.INFO, logger=lay.__name__):
        lay.recover(home)
    errors = _errors(caplog)
    assert len(errors) == 1 and str(lay.plan_path(home)) in errors[0], errors
    assert (elsewhere / "memory" / "memory.md").read_bytes() == RESTORED
    assert home.memory_file("memory.md").read_text() == "Kept entry.\n"


def test_a_folder_where_a_copy_removes_a_file_is_refused(home, caplog):
    """The same check for a plan found only as its copy in the staging folder."""
    ensure_dir(home.memory / "notes.md")
    _staged(home, ["user.md"])
    home.memory_file("memory.md").write_bytes(RESTORED)  # laid: the copy would be finished
    copy = home.memory / STAGING / restoreplan.COPY
    plan = _plan(["memory.md", "user.md"], ["notes.md"])
    copy.write_text(json.dumps({**plan, restoreplan.MARKED: True}))
    with caplog.at_level(logging.INFO, logger=lay.__name__):
        lay.recover(home)
    errors = _errors(caplog)
    assert len(errors) == 1 and str(copy) in errors[0], errors
    assert (home.memory / "notes.md").is_dir() and copy.exists()
    assert not home.memory_file("user.md").exists()  # nothing more laid


def test_a_disk_error_carrying_out_a_plan_refuses_the_start_in_one_line_naming_it(
    home, caplog, monkeypatch
):
    _staged(home, ["memory.md", "user.md"])
    lay.plan_path(home).write_text(json.dumps(_plan(["memory.md", "user.md"], [])))
    real = os.replace

    def replace(src, dst, *args, **kw):
        if os.path.basename(os.fspath(dst)) == "user.md":
            raise OSError(errno.EIO, "Input/output error", os.fspath(dst))
        return real(src, dst, *args, **kw)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(StartFailed) as refused:
        lay.recover(home)  # never served half laid: a write then would be laid over later
    said = str(refused.value)
    assert said.startswith(f"{lay.plan_path(home)}: a restore stopped after its point of no ")
    assert "Input/output error" in said and str(home.memory_file("user.md")) in said
    assert "\n" not in said
    assert lay.plan_path(home).exists()  # carried out again at the next start
    monkeypatch.setattr(os, "replace", real)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=lay.__name__):
        lay.recover(home)  # the disk mended: the next start finishes it
    assert not _errors(caplog)
    assert home.memory_file("user.md").read_bytes() == RESTORED
    assert not lay.plan_path(home).exists()
    assert not (home.memory / STAGING).exists()


def test_memoryd_starts_with_a_plan_removing_a_folder(tmp_path):
    m = MemorydProcess(tmp_path)
    try:
        m.start().stop()
        home = Home(m.home)
        _staged(home, ["memory.md"])
        lay.plan_path(home).write_text(json.dumps(_plan(["memory.md"], ["edits"])))
        m.start().stop()
        said = m.log.read_text()
        assert f"{lay.plan_path(home)}: a restore's plan cannot be read" in said
        assert "unexpected error" not in said
        assert home.edits.is_dir()
    finally:
        m.kill()
