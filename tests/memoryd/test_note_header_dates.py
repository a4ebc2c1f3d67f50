"""A note header's time is one memoryd's own readers take back: memoryd writes it with a four-digit
year whatever the year (0999, 0001), and reads a header whose time is no time there is
(2026-02-30, a typo by hand) as a damaged header, said in one line, never as a time that a later
reader (restore, export, import) trips on. Text before notes.md's first header belongs to no note:
stats and the log say so, naming notes.md and the header to write above it."""

import datetime as dt
import json
import logging
import re

import pytest

from memoryd.memory import notes
from tests.memoryd.owner_data_harness import Memoryd
from tests.memoryd.store_helpers import TAINTED, Clock

TEXT = "The wire goes to account 4711."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home", clock=Clock())
    yield m
    m.close()


@pytest.mark.parametrize("year", [1, 99, 999, 1000, 2026, 9999])
def test_a_header_of_any_year_reads_back_as_written(year):
    when = dt.datetime(year, 9, 24, 21, 2, tzinfo=dt.UTC)
    data = notes.noted(TEXT, when, "mm-1", "private", False).encode()
    (entry,) = notes.parse(data)
    assert data.startswith(f"§ noted {year:04d}-09-24T21:02Z ".encode())
    assert (entry.damaged, entry.untrusted, entry.time) == (
        False,
        False,
        f"{year:04d}-09-24T21:02Z",
    )


@pytest.mark.parametrize(
    "time", ["2026-02-30T10:00Z", "2026-13-01T10:00Z", "2026-04-31T10:00Z", "2026-01-01T24:00Z"]
)
@pytest.mark.parametrize(
    "header",
    ["§ noted {} in session s-web · private", "§ moved {} from memory.md in session s-web"],
)
def test_a_header_whose_time_is_no_time_is_damaged_and_keeps_no_false_time(time, header):
    before = "§ noted 2026-01-05T09:00Z in session mm-1 · private\nFirst.\n"
    data = (before + header.format(time) + f"\n{TEXT}\n").encode()
    first, damaged = notes.parse(data)
    assert (damaged.damaged, damaged.untrusted, damaged.kind, damaged.text) == (
        True,
        True,
        "noted",
        TEXT,
    )
    assert damaged.time == first.time  # the note's before it: a real time every reader takes
    said = notes.damage_said(damaged, data)
    assert said.startswith("notes.md line 3: ") and f"its time {time} is no time there is" in said
    assert "\n" not in said


def test_an_import_dated_before_1000_is_laid_under_a_header_it_reads_back(md):
    item = {
        "kind": "note",
        "note": "noted",
        "number": 0,
        "source": None,
        "text": "The abbey chalice is zanzibarine.",
        "provenance": {
            "file": "notes.md",
            "session": "mm-dh45qg",
            "edit": "2026-09-24-0004",
            "time": "0999-09-24T21:02:40Z",
            "class": "private",
            "untrusted": False,
        },
    }
    head = {"format": "boxmaker-memory-export", "version": 1, "memoryd": "0.1.0"}
    head["exported"] = "2026-12-01T14:03:22Z"
    lines = [json.dumps(head), json.dumps(item)]
    (md.home.root / "backups" / "in.jsonl").write_text("\n".join(lines) + "\n")
    md.data("import", name="in.jsonl")
    data = md.home.memory_file("notes.md").read_bytes()
    assert data.startswith(
        b"\xc2\xa7 noted 0999-09-24T21:02Z in session mm-dh45qg \xc2\xb7 private\n"
    )
    (entry,) = notes.parse(data)
    assert (entry.damaged, entry.untrusted, entry.time) == (False, False, "0999-09-24T21:02Z")
    found = md.recall("zanzibarine chalice")
    assert "memory · note, 0999-09-24 21:02 UTC, session mm-dh45qg" in found, found
    assert "memory-tainted" not in found


def test_an_import_time_that_is_no_time_is_refused_naming_the_line_and_the_time(md):
    item = {
        "kind": "note",
        "note": "noted",
        "number": 0,
        "source": None,
        "text": TEXT,
        "provenance": {
            "file": "notes.md",
            "session": "s-web",
            "edit": None,
            "time": "2026-02-30T10:00Z",
            "class": "private",
            "untrusted": True,
        },
    }
    head = {"format": "boxmaker-memory-export", "version": 1, "memoryd": "0.1.0"}
    (md.home.root / "backups" / "in.jsonl").write_text(f"{json.dumps(head)}\n{json.dumps(item)}\n")
    with pytest.raises(
        Exception, match=r"line 2 has a provenance time '2026-02-30T10:00Z' that"
    ) as e:
        md.data("import", name="in.jsonl")
    assert "\n" not in str(e.value) and "Traceback" not in str(e.value)


def test_a_backup_holding_a_header_with_no_real_time_restores_and_names_it(md, tmp_path):
    """Restore lays the archive whole: the note is read as untrusted (the strictest way), and
    the answer names its header; its export then imports into another home."""
    md.call({"action": "note", "text": TEXT}, tainted=True)
    path = md.home.memory_file("notes.md")
    edited = re.sub(
        rf"^§ noted \S+ in session {TAINTED['session']} · private · untrusted$",
        f"§ noted 2026-02-30T10:00Z in session {TAINTED['session']} · private",
        path.read_text(),
        flags=re.M,
    )
    assert "2026-02-30" in edited
    path.write_text(edited)
    name = md.data("backup")["path"].rsplit("/", 1)[1]
    said = md.data("restore", name=name, replace=True)["message"]
    assert "notes.md line 1: '§ noted 2026-02-30T10:00Z" in said, said
    assert "its time 2026-02-30T10:00Z is no time there is" in said
    (entry,) = notes.parse(path.read_bytes())
    assert (entry.damaged, entry.untrusted, entry.text) == (True, True, TEXT)
    assert "memory-tainted" in md.recall("wire account 4711")

    export = md.data("export", format="jsonl")["path"]
    other = Memoryd(tmp_path / "other", clock=Clock())
    try:
        (other.home.root / "backups").mkdir(parents=True, exist_ok=True, mode=0o700)
        (other.home.root / "backups" / "e.jsonl").write_bytes(open(export, "rb").read())
        other.data("import", name="e.jsonl")
        (note,) = notes.parse(other.home.memory_file("notes.md").read_bytes())
        assert (note.text, note.untrusted) == (TEXT, True)
    finally:
        other.close()


def test_text_before_the_first_header_is_said_in_stats_and_the_log(tmp_path, caplog):
    root = tmp_path / "home"
    first = Memoryd(root, clock=Clock())
    first.close()
    moved = "The staging cluster lives in rack B7 near the pelican router."
    path = first.home.memory_file("notes.md")
    path.write_text(f"{moved}\n\n§ noted 2026-09-24T21:02Z in session mm-1 · private\n{TEXT}\n")
    with caplog.at_level(logging.WARNING):
        again = Memoryd(root, clock=Clock())
    try:
        logged = [
            r.getMessage() for r in caplog.records if "before the first header" in r.getMessage()
        ]
        assert len(logged) == 1, logged
        assert logged[0].startswith("notes.md lines 1 to 2: text before the first header")
        assert re.search(
            r"'§ moved \d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z from memory\.md in session owner'", logged[0]
        )
        assert "notes.md lines 1 to 2: text before the first header" in again.admin("stats", "{}")
        # The header the line gives, written above the text, makes it a note recall finds.
        header = re.search(r"'(§ moved [^']+)'", logged[0])[1]
        path.write_text(f"{header}\n{path.read_text()}")
    finally:
        again.close()
    third = Memoryd(root, clock=Clock())
    try:
        assert "pelican router" in third.recall("pelican router rack")
        assert "before the first header" not in third.admin("stats", "{}")
    finally:
        third.close()


def test_a_journal_time_that_is_no_time_leaves_the_export_one_import_takes(md, tmp_path, caplog):
    """A journal line's time edited by hand (in an archive restored here) is left out of the
    export, logged naming the edit: the note has its header's minute, the entry null, and the
    export imports whole into another home."""
    from tests.memoryd.test_restore_notes_claim_checked import edited_backup

    md.call({"action": "note", "text": TEXT}, tainted=True)
    md.call({"action": "add", "file": "memory", "text": "The shed key is under the pot."})

    def change(name: str, data: bytes) -> bytes:
        if not name.startswith("memory/edits/"):
            return data
        return re.sub(rb'"time": "[^"]*"', b'"time": "2026-02-30T10:00:00Z"', data)

    md.data("restore", name=edited_backup(md, change), replace=True)
    with caplog.at_level(logging.WARNING):
        export = md.data("export", format="jsonl")["path"]
    items = [json.loads(x) for x in open(export, encoding="utf-8").read().splitlines()[1:]]
    times = {item["text"]: item["provenance"]["time"] for item in items}
    (note,) = notes.parse(md.home.memory_file("notes.md").read_bytes())
    assert times == {TEXT: note.time, "The shed key is under the pot.": None}
    logged = [r.getMessage() for r in caplog.records if "which is no time" in r.getMessage()]
    assert logged and all("'2026-02-30T10:00:00Z'" in x for x in logged), logged
    other = Memoryd(tmp_path / "other", clock=Clock())
    try:
        (other.home.root / "backups").mkdir(parents=True, exist_ok=True, mode=0o700)
        (other.home.root / "backups" / "e.jsonl").write_bytes(open(export, "rb").read())
        other.data("import", name="e.jsonl")
        assert TEXT in other.home.memory_file("notes.md").read_text()
    finally:
        other.close()
