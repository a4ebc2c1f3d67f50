"""bxctl memory export of a home whose notes.md is large: notes.md has no limit (spec 3; memoryd
appends to it for as long as the home lives, one import adds up to 64 MiB), so an export takes
it whatever its size and reads it a note at a time, writing the export as it goes: what it holds
is bounded by a chunk and a key per note, not by notes.md. The 1 MiB cap stays memory.md's and
user.md's, files far over anything memoryd writes."""

import datetime as dt
import errno
import json
import os
import tracemalloc

import pytest

from memoryd.data import exchange, notestream
from memoryd.errors import AdminRefused, MemorydError
from memoryd.journal.journal import Journal
from memoryd.memory import entries, notes
from tests.memoryd.owner_data_harness import Memoryd

WHEN = dt.datetime(2026, 10, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def append_notes(m: Memoryd, count: int, size: int) -> None:
    """count notes of about size bytes each appended to notes.md, as memoryd writes them."""
    filler = ("the router in the hall is reset after the backup " * (size // 50 + 1))[:size]
    with open(m.home.memory_file("notes.md"), "a", encoding="utf-8") as f:
        for n in range(count):
            f.write(notes.noted(f"seen {n}: {filler}", WHEN, f"mm-s{n % 90}", "private", False))


def exported(m: Memoryd, fmt: str = "jsonl") -> tuple[dict, str]:
    out = m.data("export", format=fmt)
    with open(out["path"], encoding="utf-8") as f:
        return out, f.read()


def test_an_export_takes_a_notes_md_over_the_cap_of_memory_md(md):
    md.call({"action": "add", "file": "memory", "text": "Owner prefers answers in UTC."})
    md.call({"action": "note", "text": "Written by memoryd, journalled."})
    append_notes(md, 2_500, 500)
    size = md.home.memory_file("notes.md").stat().st_size
    assert size > entries.MAX_BYTES
    out, text = exported(md)
    assert (out["entries"], out["notes"]) == (1, 2_501)
    items = [json.loads(line) for line in text.splitlines()[1:]]
    held = notes.parse(md.home.memory_file("notes.md").read_bytes())
    got = [(i["number"], i["text"]) for i in items if i["kind"] == "note"]
    assert got == [(n.number, n.text) for n in held]
    assert items[1]["provenance"]["edit"]  # the journalled note keeps its edit
    assert items[-1]["provenance"]["session"] == "mm-s69"  # 2499 % 90
    out, text = exported(md, "markdown")
    assert out["notes"] == 2_501 and "seen 2499: " in text


def test_a_memory_md_over_the_cap_is_still_refused_by_its_size(md):
    md.home.memory_file("memory.md").write_bytes(b"x" * (entries.MAX_BYTES + 1))
    with pytest.raises(MemorydError, match=r"memory\.md is 1,048,577 bytes, far over"):
        md.admin("export", {"format": "jsonl"})
    assert not list((md.home.root / "backups").glob("export-*"))


def test_an_export_holds_a_bounded_part_of_a_long_notes_md(md):
    append_notes(md, 2_000, 16_000)  # 32 MB
    size = md.home.memory_file("notes.md").stat().st_size
    now = dt.datetime.now(dt.UTC)
    tracemalloc.start()
    try:
        path, _, count = exchange.export(md.home, Journal(md.home), "jsonl", now)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 2_000
    # A chunk read, one note, a MiB of the export being written: about 5 MB whatever the size.
    assert peak < size / 4, f"peak {peak:,} bytes for a {size:,}-byte notes.md"
    with open(path, encoding="utf-8") as f:
        last = json.loads(f.read().splitlines()[-1])
    assert last["number"] == 1_999 and last["text"].startswith("seen 1999: ")


def test_notes_md_unreadable_while_the_export_is_written_leaves_none(md, monkeypatch):
    append_notes(md, 50, 100)
    real, calls = notestream.entries, []

    def failing(chunks):  # the second reading, the one the export is written from, fails
        calls.append(1)
        for n, note in enumerate(real(chunks)):
            if len(calls) == 2 and n == 10:
                raise OSError(errno.EIO, "Input/output error", "memory/notes.md")
            yield note

    monkeypatch.setattr(notestream, "entries", failing)
    with pytest.raises(AdminRefused) as refused:
        md.admin("export", {"format": "jsonl"})
    assert str(refused.value) == (
        "refused: the export failed (Input/output error: memory/notes.md); nothing was written"
    )
    assert os.listdir(md.home.root / "backups") == []
