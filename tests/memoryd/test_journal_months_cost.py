"""A write, log and show cost what is new, not what the journal has gathered: before each write
memoryd looks at the journal's end for a line a power cut tore, and log, show and undo look for
the oldest line the journal holds; each read every month file there has ever been, so the bytes
read grew by up to a MiB per month of history. Counted in bytes read (/proc/self/io), not time.
A month changed since it was last looked at is still checked, even one changed by hand to the
same size with its mtime set back."""

import json
import logging
import os
from pathlib import Path

import pytest

from memoryd.errors import AdminRefused
from memoryd.journal import damaged, lostbefore
from memoryd.journal.journal import EditLine
from tests.memoryd.store_helpers import CLEAN, args, loose_call, new_store, owner

MONTHS = 12
LINES = 500  # about 1.1 MB a month: a busy one
TORN = "cut short, as a crash or power cut during its append leaves it"

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs /proc/self/io")


def _read_so_far() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar"))


def _past_months(edits: Path) -> list[Path]:
    """MONTHS month files before the store clock's (2026-09) of valid note lines."""
    edits.mkdir(parents=True, mode=0o700, exist_ok=True)
    paths = []
    year, month = 2026, 8
    for _ in range(MONTHS):
        lines = []
        for n in range(1, LINES + 1):
            day = f"{year:04d}-{month:02d}-{1 + (n - 1) * 28 // LINES:02d}"
            text = f"note {n} of {year}-{month:02d} " + "about the harbour and the boats " * 60
            record = {
                "id": f"{day}-{n:04d}",
                "time": f"{day}T10:00:00Z",
                "session": "mm-old000001",
                "call": f"c{n}",
                "taint": "private",
                "untrusted": False,
                "action": "note",
                "file": None,
                "to": "notes.md",
                "before": [],
                "after": [text],
                "notes": [{"kind": "noted", "text": text}],
            }
            lines.append(json.dumps(record))
        path = edits / f"{year:04d}-{month:02d}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        os.chmod(path, 0o600)
        paths.append(path)
        month -= 1
        if month == 0:
            year, month = year - 1, 12
    return paths


def _note(store, text: str) -> None:
    store.call(*loose_call(args(action="note", text=text), **CLEAN))


def _store_with_history(tmp_path):
    past = _past_months(tmp_path / "home" / "memory" / "edits")
    soul = tmp_path / "home" / "memory" / "soul.md"
    soul.write_text("You are careful.\n")
    os.chmod(soul, 0o600)
    assert sum(p.stat().st_size for p in past) > MONTHS << 20
    store = new_store(tmp_path)  # the start looks at every month's end
    _note(store, "first note of this month")
    return store, past


def test_a_write_reads_what_is_new_not_every_month(tmp_path):
    store, _ = _store_with_history(tmp_path)
    before = _read_so_far()
    for i in range(5):
        _note(store, f"today's note {i}")
    per_write = (_read_so_far() - before) / 5
    # Each past month's end was read at every write: a MiB of each, 12 MiB a write.
    assert per_write < 256 * 1024, f"a note write read {per_write:,.0f} bytes"


def test_log_and_show_read_what_is_new_not_every_month(tmp_path):
    store, _ = _store_with_history(tmp_path)
    owner(store, "log")  # the first look reads each month's head once
    _note(store, "another note")
    before = _read_so_far()
    listed = owner(store, "log", "3")
    shown = owner(store, "show", {"id": "2026-09-24-0002"})
    read = _read_so_far() - before
    # An id no month holds is looked for on a damaged line of its month and every later one
    # (a line torn there keeps its id): that reads those months, outside what is measured here.
    with pytest.raises(AdminRefused, match="holds no edit"):
        owner(store, "undo", "2025-01-02-0001")
    assert "2026-09-24-0002" in listed and "another note" in shown
    # The first 64 KiB of every month was read at each: 768 KiB a command at 12 months.
    assert read < 256 * 1024, f"log and show read {read:,} bytes"


def test_a_past_month_torn_by_hand_is_still_said_before_the_next_write(tmp_path, caplog):
    store, past = _store_with_history(tmp_path)
    _note(store, "a note")
    month = past[3]
    month.write_bytes(month.read_bytes()[:-40])
    with caplog.at_level(logging.WARNING):
        _note(store, "the next note")
    assert f"{month}: line {LINES:,} (edit " in caplog.text and TORN in caplog.text


def test_a_past_month_changed_to_the_same_size_and_time_is_still_checked(tmp_path, caplog):
    store, past = _store_with_history(tmp_path)
    month = past[5]
    st = month.stat()
    data = month.read_bytes()
    # The last line damaged in its middle, its size kept, its mtime set back (cp -p, rsync -t).
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    damaged = data[:start] + data[start:].replace(b'"time": "', b'"time":  ', 1)
    assert len(damaged) == len(data)
    month.write_bytes(damaged)
    os.utime(month, ns=(st.st_atime_ns, st.st_mtime_ns))
    with caplog.at_level(logging.WARNING):
        _note(store, "the next note")
    assert f"{month}: line {LINES:,} (edit " in caplog.text and "is damaged" in caplog.text


def test_the_oldest_held_follows_a_month_changed_by_hand(tmp_path):
    edits = tmp_path / "edits"
    past = _past_months(edits)
    months = sorted(past)
    oldest = months[0]
    assert lostbefore.oldest_held(months) == f"{oldest.name[:7]}-01-0001"
    st = oldest.stat()
    data = oldest.read_bytes()
    later = f"{oldest.name[:7]}-01-0002".encode()
    oldest.write_bytes(data.replace(f"{oldest.name[:7]}-01-0001".encode(), later, 1))
    os.utime(oldest, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert oldest.stat().st_size == st.st_size
    assert lostbefore.oldest_held(months) == later.decode()


def test_a_torn_last_line_longer_than_the_first_look_is_found(tmp_path):
    month = _past_months(tmp_path / "edits")[0]
    long_text = "a long entry " * 4000  # about 52 KB: read on past the first look's bytes
    month.write_bytes(
        month.read_bytes() + b'{"id": "2026-08-28-0501", "after": ["' + long_text.encode()
    )
    found = damaged.last_line(month, EditLine)
    assert found is not None and found.torn and found.number == LINES + 1
    assert found.id == "2026-08-28-0501"
