"""A note of megabytes, and what a forget looks for of it: the full-text phrase a forget finds the
rows holding a text by is the text's first words only (data/carriers.py), since FTS5's memory grew
with the phrase (a 2 MB note's forget took 2.9 GB, a 36 MB one's got memoryd killed); and an import
keeps no note past importing.NOTE_MAX bytes, answering the line with its length instead (the
export file still holds it)."""

import json
import os
from pathlib import Path

import pytest

from memoryd.data import carriers, importing
from tests.memoryd.owner_data_harness import Memoryd

HEAD = {"format": "boxmaker-memory-export", "version": 1}
PROV = {"file": "memory.md", "session": "monday", "edit": None, "time": "2026-12-01T10:00:00Z"}


def item(text: str) -> dict:
    prov = PROV | {"class": "private", "untrusted": False}
    return {"kind": "entry", "file": "memory.md", "text": text, "provenance": prov}


def hand(m: Memoryd, items: list[dict]) -> str:
    lines = [json.dumps(x) for x in [HEAD, *items]]
    (m.home.root / "backups" / "in.jsonl").write_text("\n".join(lines) + "\n")
    return "in.jsonl"


def words(n: int) -> str:
    return " ".join(f"zebracorn{i % 997} clause{i}" for i in range(n))


def peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) << 10
    return 0


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_an_entry_past_the_bound_is_not_made_a_note_and_its_line_says_why(md):
    text = "The big one. " + words(6000)
    assert len(text.encode()) > importing.NOTE_MAX
    out = md.data("import", name=hand(md, [item(text)]))
    said = out["lines"][0]
    assert out["applied"] == 0, out["lines"]
    assert said.startswith("line 2: ") and "not imported" in said, said
    assert f"{len(text.encode()):,} bytes" in said and f"{importing.NOTE_MAX:,}" in said
    assert "export file still holds it" in said
    assert "zebracorn" not in md.home.memory_file("notes.md").read_text()


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux's peak RSS reset")
def test_looking_for_a_long_text_takes_no_memory_in_its_length(md):
    text = "The long one. " + "abcdefghij " * 5000  # under the bound: kept as a note
    out = md.data("import", name=hand(md, [item(text)]))
    assert out["applied"] == 1, out["lines"]
    longer = text + "abcdefghij " * 50000  # 600 KB, of words the note's row holds
    Path("/proc/self/clear_refs").write_text("5")  # the peak RSS starts again from now
    before = peak_rss()
    found = carriers.find(md.index, [text, longer])
    grew = peak_rss() - before
    assert grew < 100 << 20, f"{grew:,} bytes"  # 800 MB when the phrase was the whole text
    assert list(found) == ["note:0"]
    answer = json.loads(md.admin("forget", {"id": "note:0"}))["message"]
    assert answer.startswith("forgot note:0"), answer
