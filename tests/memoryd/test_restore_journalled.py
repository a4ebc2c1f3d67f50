"""Every restore that lays files adds its own line to the journal it lays: action restore, which
archive replaced the memory and which backup holds what it replaced. `bxctl memory log` lists it
and show shows it; it is laid with the files, so a kill after the point of no return leaves it
there once the next start has finished the restore."""

import json
import os
import shutil
import tarfile

import pytest

from memoryd.data import lay
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

AFTER = "Written after the backup."


def _lines(m: Memoryd) -> list[dict]:
    return [json.loads(x) for p in sorted(m.home.edits.glob("*.jsonl")) for x in p.open()]


def _restores(m: Memoryd) -> list[dict]:
    return [line for line in _lines(m) if line.get("action") == "restore"]


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    m.call({"action": "add", "file": "memory", "text": "The router is in the hall."})
    yield m
    m.close()


def test_a_restore_replace_is_journalled_with_its_archive_and_the_backup_of_what_it_replaced(md):
    made = md.data("backup")
    archive = os.path.basename(made["path"])
    md.call({"action": "add", "file": "memory", "text": AFTER})
    out = md.data("restore", name=archive, replace=True)
    (line,) = _restores(md)
    assert line["id"] == out["edit"] and line["session"] == "owner"
    assert line["file"] is None and line["to"] is None
    assert line["restored"]["archive"] == archive
    assert line["restored"]["replaced"] == os.path.basename(out["before"])
    assert line["restored"]["made"] and line["restored"]["by"]
    assert AFTER.encode() not in md.home.memory_file("memory.md").read_bytes()
    assert f"the journal says so as edit {out['edit']}" in out["message"]
    log = json.loads(md.admin("log", {"n": 50, "json": True}))["edits"]
    assert log[-1]["id"] == out["edit"] and log[-1]["action"] == "restore"
    assert "restore" in md.admin("log", {"n": 50})
    shown = md.admin("show", {"id": out["edit"]})
    assert f"edit {out['edit']}" in shown and "action    restore" in shown
    with pytest.raises(AdminRefused):  # it names no file: never undone as an edit
        md.admin("undo", out["edit"])
    # An edit after the restore goes on after it, and undo of the archive's own edit works.
    md.call({"action": "add", "file": "memory", "text": "After the restore."})
    assert _lines(md)[-1]["id"] > out["edit"]


def test_a_plain_restore_into_a_new_home_is_journalled_with_nothing_replaced(md, tmp_path):
    saved = md.data("backup")["path"]
    b = Memoryd(tmp_path / "b")
    try:
        shutil.copy(saved, b.home.root / "backups" / "from-a.tar.gz")
        out = b.data("restore", name="from-a.tar.gz")
        (line,) = _restores(b)
        assert line["id"] == out["edit"]
        assert line["restored"]["archive"] == "from-a.tar.gz"
        assert line["restored"]["replaced"] is None
        assert json.loads(b.admin("log", {"n": 5, "json": True}))["edits"][-1]["id"] == out["edit"]
    finally:
        b.close()


def test_a_copy_bxctl_handed_over_is_not_named(md):
    saved = md.data("backup")["path"]
    handed = ".incoming-0123456789ab.tar.gz"
    shutil.copy(saved, md.home.root / "backups" / handed)
    md.data("restore", name=handed, replace=True)
    assert _restores(md)[-1]["restored"]["archive"] is None


@pytest.mark.parametrize("stop_after", [1, 3])
def test_a_kill_after_the_plan_leaves_the_line_with_the_files(md, monkeypatch, stop_after):
    archive = os.path.basename(md.data("backup")["path"])
    md.call({"action": "add", "file": "memory", "text": AFTER})
    real, calls = os.replace, []

    def killed(src, dst, *args, **kw):
        if lay.plan_path(md.home).exists():
            if len(calls) >= stop_after:
                raise SystemExit("killed")
            calls.append(dst)
        return real(src, dst, *args, **kw)

    monkeypatch.setattr(lay.os, "replace", killed)
    with pytest.raises(SystemExit):
        md.admin("restore", {"name": archive, "replace": True})
    monkeypatch.setattr(lay.os, "replace", real)
    lay.recover(md.home)  # the next start finishes it
    assert AFTER.encode() not in md.home.memory_file("memory.md").read_bytes()
    (line,) = _restores(md)
    assert line["restored"]["archive"] == archive and line["restored"]["replaced"]


def test_log_show_and_undo_say_what_the_restore_line_is(md):
    archive = os.path.basename(md.data("backup")["path"])
    out = md.data("restore", name=archive, replace=True)
    replaced = os.path.basename(out["before"])
    log = md.admin("log", {"n": 5})
    assert f"memory replaced from backups/{archive}" in log and f"backups/{replaced}" in log
    assert f"backups/{replaced}" in md.admin("show", {"id": out["edit"]})
    with pytest.raises(AdminRefused, match=rf"is a restore.*backups/{replaced}.*--replace"):
        md.admin("undo", out["edit"])


def test_undo_of_a_restore_says_what_going_back_costs(md):
    archive = os.path.basename(md.data("backup")["path"])
    out = md.data("restore", name=archive, replace=True)
    md.call({"action": "add", "file": "user", "text": "Prefers tea over coffee."})
    with pytest.raises(AdminRefused) as refused:
        md.admin("undo", out["edit"])
    said = str(refused.value)
    assert "every entry and note written since the restore" in said
    assert said.endswith("(runbook: restore-from-a-backup)")
    # as said: the way back takes the entry written since out of user.md, into -replaced
    again = md.data("restore", name=os.path.basename(out["before"]), replace=True)
    assert b"Prefers tea" not in md.home.memory_file("user.md").read_bytes()
    with tarfile.open(again["before"]) as kept:
        member = kept.extractfile("memory/user.md")
        assert member is not None and b"Prefers tea" in member.read()
