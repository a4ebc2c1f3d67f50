"""A restore's plan edited by hand (memory/.restore.json, or the copy in a staging folder) is
refused with one ERROR naming it, and the start goes on: never a start that fails with an error
naming no file, never a folder removed outside memory/."""

import json
import logging

import pytest

from memoryd.data import lay, restoreplan
from memoryd.home import Home, ensure_dir

STAGING = ".restore-0123456789ab"


def _plan(staging: str = STAGING, lay_: list | None = None, remove: list | None = None) -> dict:
    files = ["memory.md"] if lay_ is None else lay_
    return {
        "staging": staging,
        "lay": files,
        "remove": remove or [],
        "sha256": {name: "0" * 64 for name in files},
    }


PLANS = {
    "staging climbs out": _plan(staging=".restore-aa/../../keep"),
    "staging not a name memoryd makes": _plan(staging=".restore-../keep"),
    "staging elsewhere by an absolute path": _plan(staging="/keep"),
    "a NUL in a file to lay": _plan(lay_=["notes\x00.md"]),
    "a NUL in a file to remove": _plan(remove=["recalls/2026-12\x00.jsonl"]),
    "a lone surrogate in a file to lay": _plan(lay_=["\ud800"]),
}


@pytest.mark.parametrize("plan", PLANS.values(), ids=PLANS.keys())
def test_a_hand_edited_plan_is_refused_and_the_start_goes_on(tmp_path, caplog, plan):
    home = Home(tmp_path / "home")
    ensure_dir(home.memory)
    home.memory_file("memory.md").write_text("Kept entry.\n")
    outside = home.root / "keep"
    ensure_dir(outside)
    (outside / "precious.txt").write_text("not memory's\n")
    ensure_dir(home.memory / ".restore-aa")  # a leftover the escaping name goes through
    ensure_dir(home.memory / STAGING / "memory")
    lay.plan_path(home).write_text(json.dumps(plan))
    with caplog.at_level(logging.INFO, logger=lay.__name__):
        lay.recover(home)  # returns: the start goes on
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and str(lay.plan_path(home)) in errors[0], errors
    assert (outside / "precious.txt").read_text() == "not memory's\n"
    assert home.memory_file("memory.md").read_text() == "Kept entry.\n"
    assert lay.plan_path(home).exists()  # left for the owner, as the ERROR says


@pytest.mark.parametrize("name", ["notes\x00.md", "\ud800", "../x", "/etc/passwd", "", 5])
def test_a_name_the_file_system_cannot_hold_is_not_inside(name):
    assert not restoreplan.well_formed(_plan(lay_=[name]))
    assert not restoreplan.well_formed(_plan(remove=[name]))


def test_a_plan_memoryd_writes_is_well_formed():
    assert restoreplan.well_formed(_plan(lay_=["memory.md", "edits/2026-12.jsonl"]))
