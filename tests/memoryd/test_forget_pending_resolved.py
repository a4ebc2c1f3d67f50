"""Review on: a forget of a text a staged write carries drops that write's line from pending.jsonl
(it can never be accepted once its text is forgotten). The forget's journal line names the write,
so it is resolved by the owner's forget: pending does not list it nor say it lost, accept and
reject say the forget took it (naming its edit), and no start warns that its line left the file;
so too after a restart and after a restore of an archive made after the forget. Never the advice
to take its line back from a backup, which would bring the forgotten text back."""

import json
import logging
import shutil

import pytest

from memoryd.data import layout
from memoryd.errors import AdminRefused
from memoryd.journal import forgetlines, forgotpending, scan
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The door code is 4711."


def _open(root) -> Memoryd:
    md = Memoryd(root)
    md.store.review_on = True
    return md


def _staged(md: Memoryd, text: str) -> str:
    said = md.call({"action": "add", "file": "memory", "text": text})
    return said.split("pending as ")[1].split(";")[0]


def _said_forgotten(md: Memoryd, pending_id: str, edit: str) -> None:
    assert md.admin("pending") == "no edits are waiting for review"
    for command in ("accept", "reject"):
        with pytest.raises(AdminRefused) as refused:
            md.admin(command, pending_id)
        said = str(refused.value)
        assert said.startswith(f"refused: {pending_id} was forgotten by the owner (edit {edit})")
        assert "backup" not in said and "left" not in said


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_staged_write_a_forget_took_is_said_forgotten_never_lost(tmp_path, caplog):
    root = tmp_path / "home"
    md = _open(root)
    try:
        md.call({"action": "note", "text": SECRET})
        taken = _staged(md, SECRET)
        kept = _staged(md, "Owner likes tea.")
        done = md.data("forget", id="note:0")
        assert "1 pending write" in done["message"]
        edit = done["edits"][-1]
        listed = md.admin("pending")
        assert listed.startswith(f"{kept}  ") and taken not in listed and "gone" not in listed
        line = scan.line_with_id(md.store.journal.month_files()[-1], edit)
        assert line is not None and line.forgot is not None
        assert line.forgot["pending"] == [taken]  # the id only, never the text
        said = f"note:0, with the staged write {taken} that carried it, in notes.md"
        assert said in md.admin("log", {"n": 1})
        assert f"forgot    {said}" in md.admin("show", {"id": edit})
        assert json.loads(md.admin("show", {"id": edit, "json": True}))["forgot"] == said
        for command in ("accept", "reject"):
            with pytest.raises(AdminRefused, match=f"was forgotten by the owner \\(edit {edit}\\)"):
                md.admin(command, taken)
        md.admin("accept", kept)
        _said_forgotten(md, taken, edit)
    finally:
        md.close()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        md = _open(root)  # a restart: the journal's index read again from its saved copy or rebuilt
    try:
        assert _warnings(caplog) == []
        _said_forgotten(md, taken, edit)
        (root / "index" / "journal-index.json").unlink(missing_ok=True)
        md.store.journal_index.discard()  # rebuilt from the journal alone
        _said_forgotten(md, taken, edit)
        archive = md.data("backup")["path"]
        later = _staged(md, "Owner likes rain.")  # after the archive: the restore takes it away
    finally:
        md.close()
    md = _open(root)
    try:
        md.data("restore", name=archive.rsplit("/", 1)[1], replace=True)
    finally:
        md.close()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        md = _open(root)
    try:
        # The write staged after the archive is said gone (the restore's -replaced archive
        # holds it); the one the forget took is not.
        [warned] = [w for w in _warnings(caplog) if "pending.jsonl" in w]
        assert f"1 staged write ({later})" in warned and taken not in warned
        with pytest.raises(AdminRefused, match=f"{taken} was forgotten by the owner"):
            md.admin("accept", taken)
        assert taken not in md.admin("pending")
    finally:
        md.close()
    new = _open(tmp_path / "new")  # the archive restored into another home
    try:
        layout.backups(new.home).mkdir(mode=0o700, exist_ok=True)
        shutil.copy(archive, layout.backups(new.home) / "a.tar.gz")
        new.data("restore", name="a.tar.gz")
        assert new.admin("pending") == "no edits are waiting for review"
        with pytest.raises(AdminRefused, match=f"{taken} was forgotten by the owner"):
            new.admin("reject", taken)
    finally:
        new.close()


def test_a_forget_that_drops_no_staged_write_names_none(tmp_path):
    """Its line says so with an empty list (never left without one, as an older memoryd's line
    is, which may have taken writes it does not name); every reader takes the list as no write."""
    md = _open(tmp_path / "home")
    try:
        md.call({"action": "note", "text": SECRET})
        kept = _staged(md, "Owner likes tea.")
        edit = md.data("forget", id="note:0")["edits"][-1]
        months = md.store.journal.month_files()
        line = scan.line_with_id(months[-1], edit)
        assert line is not None and line.forgot is not None and line.forgot["pending"] == []
        assert md.admin("pending").startswith(f"{kept}  ")
        raw = next(r for r in months[-1].read_bytes().splitlines() if edit.encode() in r)
        assert forgotpending.named(raw) == {} and forgotpending.ids_in(raw) == {}
        assert forgotpending.unnamed(months, edit[:7]) == []
        assert scan.pending_ids(months) == set()
        read = forgetlines.forget_line(raw)
        assert read is not None and read[0] == ["note:0"] and read[1] == edit
        assert "staged write" not in md.admin("show", {"id": edit})
        md.admin("accept", kept)
        assert md.admin("pending") == "no edits are waiting for review"
    finally:
        md.close()


def test_a_restore_of_an_archive_made_before_the_forget_resolves_the_write_it_leaves_out(
    tmp_path, caplog
):
    """The archive still holds the staged write; the restore leaves it out with the forgotten
    text, and its own forget line names it, so the restored home does not say it lost either."""
    root = tmp_path / "home"
    md = _open(root)
    try:
        md.call({"action": "note", "text": SECRET})
        taken = _staged(md, SECRET)
        archive = md.data("backup")["path"]
        md.data("forget", id="note:0")
        done = md.data("restore", name=archive.rsplit("/", 1)[1], replace=True)
        assert "left out" in done["message"]
    finally:
        md.close()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        md = _open(root)
    try:
        assert [w for w in _warnings(caplog) if "pending.jsonl" in w] == []
        assert SECRET not in md.home.memory_file("pending.jsonl").read_text()
        assert md.admin("pending") == "no edits are waiting for review"
        with pytest.raises(AdminRefused, match=f"{taken} was forgotten by the owner"):
            md.admin("accept", taken)
    finally:
        md.close()


def test_a_restore_of_an_archive_made_before_the_write_was_staged_carries_the_forget_over(
    tmp_path, caplog
):
    """The archive knows nothing of the staged write; the restored home's ids go on after the
    home's, so the write the home's forget took is named by the restore's carried-over line."""
    root = tmp_path / "home"
    md = _open(root)
    try:
        md.call({"action": "note", "text": "Owner likes tea."})
        archive = md.data("backup")["path"]
        md.call({"action": "note", "text": SECRET})
        taken = _staged(md, SECRET)
        md.data("forget", id="note:1")
        md.data("restore", name=archive.rsplit("/", 1)[1], replace=True)
    finally:
        md.close()
    caplog.clear()
    with caplog.at_level(logging.INFO):
        md = _open(root)
    try:
        assert [w for w in _warnings(caplog) if "pending.jsonl" in w] == []
        assert md.admin("pending") == "no edits are waiting for review"
        with pytest.raises(AdminRefused, match=f"{taken} was forgotten by the owner"):
            md.admin("reject", taken)
        assert _staged(md, "Owner likes rain.") > taken  # ids go on after it
    finally:
        md.close()
