"""A restore killed after its point of no return leaves two hidden things in memory/: its plan
(.restore.json) and its staging folder (.restore-*). Either may be removed before the next start
(a cleaner, the owner tidying dot files). The start must then never take the plan for finished
nor the folder for one that changed nothing: a folder whose plan is gone is finished from the
copy of the plan it keeps; a plan whose folder is gone, with files not laid, is said in an ERROR
naming them and the way back, and nothing more is laid or removed."""

import json
import logging
import os
import shutil

import pytest

from memoryd.data import lay, restoreplan
from tests.memoryd.owner_data_harness import Memoryd

ARCHIVED = "Alpha entry from the archive."
AFTER = "User entry written after."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": ARCHIVED})
    yield m
    m.close()


def _said(caplog) -> list[logging.LogRecord]:
    """What the start's recovery logged at WARNING or above."""
    return [r for r in caplog.records if r.name == lay.__name__ and r.levelno >= logging.WARNING]


def _files(m: Memoryd) -> dict[str, bytes]:
    return {
        str(p.relative_to(m.home.memory)): p.read_bytes()
        for p in m.home.memory.rglob("*")
        if p.is_file() and not p.relative_to(m.home.memory).parts[0].startswith(".restore")
    }


def _killed_part_way(m: Memoryd, monkeypatch, laid: int) -> tuple[str, str]:
    """Back up, write after, then restore --replace killed as it lays file laid + 1 out of the
    staging folder. (the archive's name, the staging folder's name)"""
    archive = os.path.basename(m.data("backup")["path"])
    m.call({"action": "add", "file": "user", "text": AFTER})
    # no file the same as the archive's, so that what is laid can be told from what is not
    m.call({"action": "add", "file": "memory", "text": "Bravo entry written after."})
    m.call({"action": "note", "text": "A note written after."})
    m.home.memory_file("soul.md").write_text("You are terse.\n")
    m.say("s-1", "the kiwi is ripe", "noted")
    m.recall("kiwi")  # a recall log month the archive lacks: the plan removes it
    real, count = os.replace, [0]

    def killed(src, dst, *args, **kw):
        if "/.restore-" in os.fspath(src) and "/.restore-" not in os.fspath(dst):
            if count[0] == laid:
                raise SystemExit("killed")
            count[0] += 1
        return real(src, dst, *args, **kw)

    monkeypatch.setattr(lay.os, "replace", killed)
    with pytest.raises(SystemExit):
        m.admin("restore", {"name": archive, "replace": True})
    monkeypatch.setattr(lay.os, "replace", real)
    plan = json.loads(lay.plan_path(m.home).read_bytes())
    assert len(plan["remove"]) >= 1 and plan["sha256"].keys() == set(plan["lay"])
    return archive, plan["staging"]


def test_a_staging_folder_whose_plan_was_removed_is_finished_from_its_copy(md, monkeypatch, caplog):
    archive, staging = _killed_part_way(md, monkeypatch, laid=2)
    lay.plan_path(md.home).unlink()
    assert (md.home.memory / staging / restoreplan.COPY).is_file()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memoryd.data.lay"):
        lay.recover(md.home)
    (said,) = _said(caplog)
    assert "lost its plan" in said.getMessage() and "finished from the copy" in said.getMessage()
    assert AFTER.encode() not in md.home.memory_file("user.md").read_bytes()
    assert ARCHIVED.encode() in md.home.memory_file("memory.md").read_bytes()
    assert not list(md.home.recalls.glob("*.jsonl"))  # removed, as the plan said
    assert not [p for p in md.home.memory.iterdir() if p.name.startswith(".restore")]
    restores = [
        json.loads(x)
        for p in md.home.edits.glob("*.jsonl")
        for x in p.open()
        if json.loads(x)["action"] == "restore"
    ]
    assert [r["restored"]["archive"] for r in restores] == [archive]


def test_a_plan_whose_staging_folder_was_removed_lays_and_removes_nothing(md, monkeypatch, caplog):
    archive, staging = _killed_part_way(md, monkeypatch, laid=2)
    shutil.rmtree(md.home.memory / staging)
    before = _files(md)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memoryd.data.lay"):
        lay.recover(md.home)
    (said,) = _said(caplog)
    text = said.getMessage()
    assert said.levelno == logging.ERROR and "cannot be finished" in text
    assert f"{staging} is gone" in text and "user.md" in text and "were not laid" in text
    assert f"restore --replace {md.home.root / 'backups' / archive}" in text
    assert "-replaced.tar.gz" in text and "finished" not in text.replace("cannot be finished", "")
    assert _files(md) == before  # the recall log the plan would remove is kept
    assert AFTER.encode() in md.home.memory_file("user.md").read_bytes()
    assert lay.plan_path(md.home).exists()  # said again at each start until restored again
    # The way back the ERROR names: restoring the archive again lays it whole.
    md.data("restore", name=archive, replace=True)
    assert not lay.plan_path(md.home).exists()
    assert AFTER.encode() not in md.home.memory_file("user.md").read_bytes()


def test_a_plan_that_laid_nothing_before_its_folder_went_is_dropped(md, monkeypatch, caplog):
    _, staging = _killed_part_way(md, monkeypatch, laid=0)
    shutil.rmtree(md.home.memory / staging)
    before = _files(md)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memoryd.data.lay"):
        lay.recover(md.home)
    (said,) = _said(caplog)
    assert "laid none of its files" in said.getMessage()
    assert "home is as it was" in said.getMessage()
    assert _files(md) == before and not lay.plan_path(md.home).exists()


def test_a_whole_lay_whose_folder_outlived_its_plan_is_only_tidied(md, monkeypatch, caplog):
    archive = os.path.basename(md.data("backup")["path"])
    md.call({"action": "add", "file": "user", "text": AFTER})
    real_rmtree = shutil.rmtree

    def killed(path, *args, **kw):  # the kill between the plan's removal and the folder's
        if ".restore-" in os.fspath(path):
            raise SystemExit("killed")
        return real_rmtree(path, *args, **kw)

    monkeypatch.setattr(shutil, "rmtree", killed)
    with pytest.raises(SystemExit):
        md.admin("restore", {"name": archive, "replace": True})
    monkeypatch.setattr(shutil, "rmtree", real_rmtree)
    laid = _files(md)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memoryd.data.lay"):
        lay.recover(md.home)
    assert not _said(caplog)
    assert any("had laid every file" in r.getMessage() for r in caplog.records)
    assert _files(md) == laid
    assert AFTER.encode() not in laid["user.md"] and ARCHIVED.encode() in laid["memory.md"]
    assert not [p for p in md.home.memory.iterdir() if p.name.startswith(".restore")]


def test_an_older_plan_without_digests_and_its_folder_gone_is_not_carried_out(md, caplog):
    os.mkdir(md.home.memory / ".restore-0123456789ab", 0o700)
    kept = md.home.memory_file("user.md").read_bytes()
    lay.plan_path(md.home).write_text(
        json.dumps(
            {"staging": ".restore-0123456789ab", "lay": ["memory.md"], "remove": ["user.md"]}
        )
    )
    shutil.rmtree(md.home.memory / ".restore-0123456789ab")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memoryd.data.lay"):
        lay.recover(md.home)
    (said,) = _said(caplog)
    assert (
        said.levelno == logging.ERROR
        and "may hold some of the archive's files" in said.getMessage()
    )
    assert md.home.memory_file("user.md").read_bytes() == kept
