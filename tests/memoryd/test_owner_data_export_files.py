"""The files export and forget write under backups/ and memory/: an export still there loses a
forgotten text too, exports at once each get their own file, and a full disk is one line naming
the file, with nothing half done. An export linked in under its name is made: a temporary file
that cannot be removed afterwards is a warning naming it, not a failure."""

import errno
import json
import logging
import os
import threading

import pytest

from memoryd.data import exportfiles, scrub
from memoryd.errors import AdminRefused
from memoryd.journal import forgottenmarker
from tests.memoryd.owner_data_harness import Memoryd

SECRET = "The safe code is 8812."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def memory_bytes(m: Memoryd) -> dict:
    return {p: p.read_bytes() for p in m.home.memory.rglob("*") if p.is_file()}


def full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize(
    "ref, write",
    [
        ("memory.md:1", {"action": "add", "file": "memory", "text": SECRET}),
        ("note:0", {"action": "note", "text": SECRET}),
    ],
)
def test_forget_takes_the_text_out_of_the_exports_in_backups(md, ref, write):
    md.call(write)
    md.call({"action": "add", "file": "user", "text": "The owner's name is Ada."})
    jsonl = md.data("export", format="jsonl")["path"]
    markdown = md.data("export", format="markdown")["path"]
    shown = md.data("forget", id=ref, dry_run=True)
    assert "2 exports in backups/" in shown["message"]
    done = md.data("forget", id=ref)
    assert "2 exports in backups/" in done["message"]
    for path in (jsonl, markdown):
        data = open(path, "rb").read()
        assert SECRET.encode() not in data and b"Ada." in data
    items = [json.loads(line) for line in open(jsonl, encoding="utf-8")][1:]
    texts = [item["text"] for item in items]
    if ref.startswith("note"):  # a note keeps its place, as in notes.md
        assert forgottenmarker.is_marker(texts[-1]) and len(texts) == 2
    else:  # an entry goes, as from its file
        assert texts == ["The owner's name is Ada."]


def test_a_full_disk_during_an_export_is_one_line_naming_the_file_and_leaves_none(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": "Alpha fact."})
    before = md.data("export")["path"]
    monkeypatch.setattr(exportfiles, "_write_all", full)
    with pytest.raises(AdminRefused, match=r"export failed writing .*export-.*No space left") as e:
        md.admin("export", {"format": "jsonl"})
    assert "\n" not in str(e.value)
    monkeypatch.undo()
    assert [p.name for p in (md.home.root / "backups").iterdir()] == [os.path.basename(before)]


def test_exports_at_once_each_get_their_own_file_and_all_succeed(md):
    md.call({"action": "add", "file": "memory", "text": "Alpha fact."})
    folder = md.home.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    for n in range(40):  # older exports, which every export removes at once
        (folder / f"export-20250101T0000{n:02d}Z.jsonl").write_text("{}\n")
    made, failed = [], []

    def export() -> None:
        done = 0
        while done < 5:
            try:
                made.append(md.data("export")["path"])
            except AdminRefused as error:  # only a few run at once: the owner runs it again
                if "data commands run at once" in str(error):
                    continue
                failed.append(error)
            except Exception as error:  # noqa: BLE001 - what the owner would see
                failed.append(error)
            done += 1

    threads = [threading.Thread(target=export) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    assert len(set(made)) == 30 and all(os.path.exists(p) for p in made)
    assert sorted(p.name for p in folder.iterdir()) == sorted(os.path.basename(p) for p in made)


def test_a_full_disk_before_forget_changes_anything_says_nothing_was_forgotten(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": SECRET})
    held = memory_bytes(md)
    monkeypatch.setattr(scrub, "_transform", full)
    with pytest.raises(AdminRefused) as e:
        md.admin("forget", {"id": "memory.md:1"})
    said = str(e.value)
    assert "could not start" in said and "nothing was forgotten" in said and "\n" not in said
    assert "No space left on device" in said and str(md.home.edits) in said
    assert memory_bytes(md) == held
    monkeypatch.undo()
    md.data("forget", id="memory.md:1")
    assert SECRET not in md.home.memory_file("memory.md").read_text()


def test_a_full_disk_part_way_through_forget_is_finished_by_the_text(md, monkeypatch):
    md.call({"action": "add", "file": "memory", "text": SECRET})
    md.data("export")
    monkeypatch.setattr(exportfiles, "atomic_write", full)  # markdown exports: none here
    monkeypatch.setattr(scrub, "_rewrite", full)  # the export's rewrite
    with pytest.raises(AdminRefused) as e:
        md.admin("forget", {"id": "memory.md:1"})
    said = str(e.value)
    assert "stopped part way" in said and "No space left on device" in said and "\n" not in said
    assert "export-" in said  # the file it was writing
    monkeypatch.undo()
    md.data("forget", id=SECRET)
    for path in (md.home.root / "backups").iterdir():
        assert SECRET.encode() not in path.read_bytes()


def _failing_unlink(monkeypatch, fails) -> None:
    real = os.unlink

    def unlink(path, *args, **kwargs):
        if fails(os.fspath(path)):
            raise OSError(errno.EIO, "Input/output error", path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)


def test_an_export_whose_temporary_file_is_not_removed_is_answered_as_made(md, monkeypatch, caplog):
    md.call({"action": "note", "text": "Zebra notes about kiwis."})
    folder = md.home.root / "backups"
    _failing_unlink(monkeypatch, lambda p: p.startswith(".export-") and p.endswith(".tmp"))
    with caplog.at_level(logging.WARNING, logger="memoryd.data.exportfiles"):
        out = md.data("export", format="markdown")
    monkeypatch.undo()
    path = out["path"]
    assert os.path.dirname(path) == str(folder)
    assert "Zebra notes about kiwis." in open(path, encoding="utf-8").read()
    (temp,) = [n for n in os.listdir(folder) if n.endswith(".tmp")]
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == [f"{folder / temp}: an export's temporary file not removed: Input/output error"]
    md.data("forget", id="note:0")  # a forget removes the leftover with the text
    assert os.listdir(folder) == [os.path.basename(path)]


def test_an_export_that_cannot_be_written_names_its_temporary_file_by_its_path(md, monkeypatch):
    md.call({"action": "note", "text": "Zebra notes about kiwis."})
    folder = md.home.root / "backups"

    monkeypatch.setattr(exportfiles, "_write_all", full)
    with pytest.raises(AdminRefused) as e:
        md.admin("export", {"format": "markdown"})
    assert str(e.value).startswith(f"refused: the export failed writing {folder}/.export-")
    assert str(e.value).endswith(f".tmp (No space left on device); no export was left in {folder}")
    assert os.listdir(folder) == []


def test_an_export_linked_but_neither_synced_nor_removable_is_said_to_be_left(md, monkeypatch):
    md.call({"action": "note", "text": "Zebra notes about kiwis."})
    folder = md.home.root / "backups"
    folder.mkdir(mode=0o700, exist_ok=True)
    real_fsync = os.fsync

    def fsync(fd):
        if os.path.samefile(f"/proc/self/fd/{fd}", folder):
            raise OSError(errno.EIO, "Input/output error")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    _failing_unlink(monkeypatch, lambda p: p.startswith("export-"))
    with pytest.raises(AdminRefused) as e:
        md.admin("export", {"format": "markdown"})
    monkeypatch.undo()
    (left,) = [n for n in os.listdir(folder) if not n.startswith(".")]
    assert str(e.value) == (
        f"refused: the export failed syncing {folder} (Input/output error); "
        f"{folder / left} is left, not synced"
    )
    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(AdminRefused, match=r"no export was left in "):
        md.admin("export", {"format": "markdown"})
    monkeypatch.undo()
    assert [n for n in os.listdir(folder) if not n.startswith(".")] == [left]
