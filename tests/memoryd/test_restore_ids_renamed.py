"""A restore of another home's archive keeps its journal's ids (other lines and the owner's notes
name them), so an id this home had shown for one of its own edits may name the archive's edit
afterwards: the restore's answer says which, and where this home's own edits went. An archive of
this home, older or made after a forget, gives the same ids to the same edits: nothing is said."""

import json
import shutil
from pathlib import Path

from memoryd.data import idsrenamed
from tests.memoryd.owner_data_harness import Memoryd


def _other_home(tmp_path: Path, writes: int) -> Path:
    md = Memoryd(tmp_path / "other")
    try:
        for n in range(writes):
            fact = {"action": "add", "file": "memory", "text": f"Other home's fact {n}."}
            md.call(fact, session="s-elsewhere")
        return Path(shutil.copy(md.data("backup")["path"], tmp_path / "other.tar.gz"))
    finally:
        md.close()


def _restore(md: Memoryd, archive: Path) -> dict:
    there = md.home.root / "backups" / archive.name
    if not there.exists():
        shutil.copy(archive, there)
    return md.data("restore", name=archive.name, replace=True)


def test_another_homes_archive_is_said_to_give_this_homes_ids_to_its_edits(tmp_path):
    archive = _other_home(tmp_path, 3)
    md = Memoryd(tmp_path / "home")
    try:
        md.call({"action": "add", "file": "memory", "text": "This home's own fact."})
        md.call({"action": "add", "file": "user", "text": "Owner prefers UTC."})
        own = [e["id"] for e in json.loads(md.admin("log", {"n": 20, "json": True}))["edits"]]
        answer = _restore(md, archive)
        said = str(answer)
        assert "2 edit ids this home had given its own edits" in said, said
        for edit_id in own:
            assert edit_id in said
        assert "now name the archive's edits" in said
        assert "-replaced.tar.gz" in said  # the backup of what it held, where its own edits are
    finally:
        md.close()


def test_this_homes_own_older_archive_says_nothing_of_ids(tmp_path):
    md = Memoryd(tmp_path / "home")
    try:
        md.call({"action": "add", "file": "memory", "text": "First fact."})
        older = Path(shutil.copy(md.data("backup")["path"], tmp_path / "older.tar.gz"))
        md.call({"action": "note", "text": "A note to forget later."})
        md.admin("forget", {"id": "note:0"})  # scrubs lines the archive holds as they were
        md.call({"action": "add", "file": "memory", "text": "Later fact."})
        said = str(_restore(md, older))
        assert "edit id" not in said, said
    finally:
        md.close()


def test_ids_are_named_one_by_one_up_to_a_few_then_as_a_range():
    few = [f"2026-12-06-{n:04d}" for n in range(1, 4)]
    assert "2026-12-06-0001, 2026-12-06-0002, 2026-12-06-0003" in idsrenamed.said(few)
    many = [f"2026-12-06-{n:04d}" for n in range(1, 41)]
    text = idsrenamed.said(many)
    assert text.startswith("40 edit ids") and "2026-12-06-0001 to 2026-12-06-0040) now name" in text
    assert "(2026-12-06-0001) now names" in idsrenamed.said(many[:1])
    assert idsrenamed.said([]) == ""
