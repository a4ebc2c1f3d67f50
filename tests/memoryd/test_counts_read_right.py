"""Counts read right in the import's summary and in memoryd's log: one is singular, and a large
count has its thousands separators, as in every other answer ("imported 1,200 of 1,200 items",
"imported 1 of 1 item", "caught up, 1 new record or note", "indexed 1 new record"). Real homes,
real files, real SQLite; the log lines from a real memoryd process."""

import json
import logging
import time
from pathlib import Path

import pytest

from proto.client import request
from proto.messages import Reindex, SessionUpdated
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd_process import MemorydProcess

HEAD = {"format": "boxmaker-memory-export", "version": 1}
RECORD = '{"type":"user","time":"2026-12-01T10:00:00Z","content":"%s"}\n'


def note(i: int) -> dict:
    provenance = {
        "file": "notes.md",
        "session": "mm-y73sxj3p",
        "edit": None,
        "time": "2026-09-24T21:02:11Z",
        "class": "private",
        "untrusted": False,
    }
    text = f"Imported note {i}."
    return {"kind": "note", "note": "noted", "number": i, "source": None, "text": text,
            "provenance": provenance}  # fmt: skip


@pytest.fixture
def home(tmp_path: Path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def imported(m: Memoryd, items: list[dict], name: str, dry_run: bool = False) -> str:
    (m.home.root / "backups" / name).write_text("".join(json.dumps(x) + "\n" for x in items))
    return m.data("import", name=name, dry_run=dry_run)["message"]


def test_the_import_summary_has_separators_and_a_singular(home):
    assert imported(home, [HEAD, note(0)], "one.jsonl", dry_run=True) == (
        "would import 1 of 1 item; 0 not (dry run: nothing was written)"
    )
    assert imported(home, [HEAD, note(0)], "one.jsonl") == "imported 1 of 1 item; 0 not"
    many = [HEAD] + [note(i) for i in range(1, 1201)]
    assert imported(home, many, "many.jsonl") == "imported 1,200 of 1,200 items; 0 not"
    assert imported(home, many, "many.jsonl") == "imported 0 of 1,200 items; 1,200 not"


def test_backups_log_lines_count_right(home, caplog):
    home.data("backup")
    with caplog.at_level(logging.INFO, logger="memoryd.data"):
        path = Path(home.data("backup", keep=1)["path"])
    said = [r.getMessage() for r in caplog.records]
    kept = [x for x in said if "removed (keeping" in x]
    assert kept and all(x.endswith("(keeping the newest 1 backup)") for x in kept), said
    size = path.stat().st_size
    assert size >= 1000  # a separator to write
    (written,) = [x for x in said if ": backup written (" in x]
    assert f"backup written ({size:,} bytes, " in written, written


def wait_for(log: Path, text: str) -> str:
    deadline = time.monotonic() + 20
    while text not in (said := log.read_text()):
        assert time.monotonic() < deadline, said
        time.sleep(0.05)
    return said


def test_memoryds_log_lines_count_in_the_singular(tmp_path):
    proc = MemorydProcess(tmp_path)
    log = proc.home / "sessions" / "alpha" / "0.jsonl"
    log.parent.mkdir(parents=True, mode=0o700)
    log.write_text(RECORD % "one")
    proc.start()
    try:
        said = wait_for(proc.log, ": caught up, ")
        assert ": caught up, 1 new record or note" in said, said
        with open(log, "a") as f:
            f.write(RECORD % "two")
        request(proc.loop_socket, SessionUpdated(session="alpha"))
        wait_for(proc.log, "session alpha: indexed 1 new record")
        request(proc.admin_socket, Reindex(), timeout=60)
        wait_for(proc.log, "rebuilt from 1 log, 2 records, 0 notes")
    finally:
        proc.stop()
