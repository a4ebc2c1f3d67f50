"""An export is one consistent picture, as a backup is: what a memory call or a restore writes
while the export builds its items is not in it, and never half in it (an entry without the
session, edit and time of its journal line; the journal of one home with the files of another)."""

import json
import threading
from pathlib import Path

import pytest

from memoryd.data import exportitems, restore
from tests.memoryd.owner_data_harness import Memoryd

LATE = "The router was replaced in May."


def add_entry(m: Memoryd, backup: str) -> None:
    m.call({"action": "add", "file": "memory", "text": LATE})


def add_note(m: Memoryd, backup: str) -> None:
    m.call({"action": "note", "text": LATE})


def restore_backup(m: Memoryd, backup: str) -> None:
    restore.run(m.service, backup, True)  # the data step itself, whatever runs beside it


def exported(m: Memoryd) -> list[dict]:
    path = Path(m.data("export", format="jsonl")["path"])
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


@pytest.mark.parametrize("during", [add_entry, add_note, restore_backup])
def test_a_write_while_the_export_reads_is_not_in_it(tmp_path, monkeypatch, during):
    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "add", "file": "memory", "text": "Owner prefers answers in UTC."})
        backup = Path(m.data("backup")["path"]).name
        m.call({"action": "add", "file": "user", "text": "Owner lives in Lisbon."})
        m.call({"action": "note", "text": "Beta note about zeppelins."})
        before = exported(m)
        assert all(item["provenance"]["edit"] for item in before)

        held, go = threading.Event(), threading.Event()
        real = exportitems.read_entries

        def paused(*args, **kwargs):
            if not held.is_set():
                held.set()
                assert go.wait(10)
            return real(*args, **kwargs)

        monkeypatch.setattr(exportitems, "read_entries", paused)
        out: dict = {}
        reader = threading.Thread(target=lambda: out.setdefault("items", exported(m)))
        reader.start()
        try:
            assert held.wait(10)
            during(m, backup)  # lands after the export took its picture, before it reads it
        finally:
            go.set()
            reader.join(20)
        assert out["items"] == before
    finally:
        m.close()
