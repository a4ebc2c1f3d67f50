"""No edit id or pending id is handed out twice in a home, whatever restores came before: the
restore's own lines (its restore line, the forget lines of what it leaves out or carries over) and
the next write staged go on after every id the owner may have been shown, those of the journal and
pending.jsonl an earlier restore laid (another home's, or its own lines) included. Otherwise an
undo, show or accept of an id the owner was shown would act on another edit."""

import json
import os
import shutil
from pathlib import Path

import pytest

from memoryd.data import lay
from tests.memoryd.owner_data_harness import Memoryd


class Shown:
    """Every edit and pending id the owner was shown so far, with what it named then."""

    def __init__(self) -> None:
        self.named: dict[str, str] = {}

    def look(self, md: Memoryd) -> dict[str, str]:
        """What log and pending show now; each id seen before still names what it named."""
        now = {**_log(md), **_pending(md)}
        changed = [i for i in now if i in self.named and self.named[i] != now[i]]
        assert not changed, f"ids now naming another edit: {changed}"
        self.named.update(now)
        return now

    def new(self, value: str) -> None:
        """value was just handed out: never shown before."""
        assert value not in self.named, f"{value} was handed out again"


def _log(md: Memoryd) -> dict[str, str]:
    edits = json.loads(md.admin("log", {"n": 200, "json": True}))["edits"]
    return {e.pop("id"): json.dumps(e, sort_keys=True) for e in edits}


def _pending(md: Memoryd) -> dict[str, str]:
    return {item.id: json.dumps(item.args, sort_keys=True) for item in md.store.review.items()}


def _copy_in(md: Memoryd, archive: Path) -> str:
    """archive's name in backups/, copied there when it is another home's."""
    there = md.home.root / "backups" / archive.name
    if not there.exists():
        shutil.copy(archive, there)
    return archive.name


def _restore(md: Memoryd, shown: Shown, archive: Path, replace: bool = True) -> str:
    edit = md.data("restore", name=_copy_in(md, archive), replace=replace)["edit"]
    shown.new(edit)
    shown.look(md)
    return edit


def _older_and_newest(tmp_path: Path) -> tuple[Path, Path]:
    """Another home's archives: the older holds a note and an entry, the newest the forgets of
    both (two more edits)."""
    md = Memoryd(tmp_path / "old-machine")
    try:
        md.call({"action": "note", "text": "Vault combination is 73-19-44."})
        md.call({"action": "add", "file": "user", "text": "Alarm code is 5566."})
        shutil.copy(md.data("backup")["path"], tmp_path / "older.tar.gz")
        md.admin("forget", {"id": "note:0"})
        md.admin("forget", {"id": "user.md:1"})
        shutil.copy(md.data("backup")["path"], tmp_path / "newest.tar.gz")
    finally:
        md.close()
    return tmp_path / "older.tar.gz", tmp_path / "newest.tar.gz"


def test_two_restores_in_a_row_are_journalled_as_two_edits(tmp_path):
    md = Memoryd(tmp_path / "home")
    shown = Shown()
    try:
        md.call({"action": "add", "file": "memory", "text": "Owner prefers UTC."})
        archive = Path(md.data("backup")["path"])
        shown.look(md)
        first = _restore(md, shown, archive)
        second = _restore(md, shown, archive)
        third = _restore(md, shown, archive)
        assert len({first, second, third}) == 3
        md.call({"action": "add", "file": "memory", "text": "Written after them."})
        shown.new(max(_log(md)))
    finally:
        md.close()


def test_a_new_machine_restoring_the_newest_then_older_archives_gives_no_id_again(tmp_path):
    older, newest = _older_and_newest(tmp_path)
    md = Memoryd(tmp_path / "new-machine")
    shown = Shown()
    try:
        _restore(md, shown, newest, replace=False)
        _restore(md, shown, older)  # leaves out the two texts, forgotten since
        _restore(md, shown, newest)
        _restore(md, shown, older)
        md.call({"action": "add", "file": "memory", "text": "Written after them."})
        shown.new(max(_log(md)))
        shown.look(md)
    finally:
        md.close()


def test_a_write_staged_after_an_older_archive_is_not_given_a_pending_id_shown(tmp_path):
    md = Memoryd(tmp_path / "review-old")
    md.store.review_on = True
    try:
        md.call({"action": "add", "file": "memory", "text": "Harmless pending one."})
        shutil.copy(md.data("backup")["path"], tmp_path / "p-older.tar.gz")
        md.call({"action": "add", "file": "memory", "text": "Second pending write."})
        shutil.copy(md.data("backup")["path"], tmp_path / "p-newest.tar.gz")
    finally:
        md.close()
    md = Memoryd(tmp_path / "review-new")
    md.store.review_on = True
    shown = Shown()
    try:
        _restore(md, shown, tmp_path / "p-newest.tar.gz", replace=False)
        assert len(_pending(md)) == 2
        _restore(md, shown, tmp_path / "p-older.tar.gz")
        said = md.call({"action": "add", "file": "memory", "text": "Wire money to acct 999."})
        staged = said.split("pending as ")[1].split(";")[0]
        shown.new(staged)
        shown.look(md)
        # The id the owner was shown for the second write names no write now: accept refuses it.
        second = next(i for i, args in shown.named.items() if "Second pending" in args)
        with pytest.raises(Exception, match="refused"):
            md.admin("accept", {"id": second})
        assert "Wire money" not in md.home.memory_file("memory.md").read_text()
    finally:
        md.close()


def test_a_restore_killed_after_its_plan_gives_its_ids_to_no_later_restore(tmp_path, monkeypatch):
    root = tmp_path / "home"
    md = Memoryd(root)
    shown = Shown()
    try:
        md.call({"action": "add", "file": "memory", "text": "Owner prefers UTC."})
        archive = Path(md.data("backup")["path"])
        real = os.replace

        def killed(src, dst, *args, **kw):
            if lay.plan_path(md.home).exists():
                raise SystemExit("killed")
            return real(src, dst, *args, **kw)

        monkeypatch.setattr(lay.os, "replace", killed)
        with pytest.raises(SystemExit):
            md.admin("restore", {"name": archive.name, "replace": True})
        monkeypatch.setattr(lay.os, "replace", real)
    finally:
        md.close()
    md = Memoryd(root)  # the start finishes the restore
    try:
        (killed_line,) = [i for i, e in _log(md).items() if '"restore"' in e]
        shown.look(md)
        later = _restore(md, shown, archive)
        assert later != killed_line
    finally:
        md.close()
