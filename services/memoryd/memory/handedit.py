"""Hand edits: memory.md or user.md changed outside memoryd, journalled as `hand-edit`.

The journal's last `after` for a file is what memoryd left in it. When the file's entries differ
from it at start or before a write, someone edited the file by hand: the change is journalled as
an edit with action `hand-edit`, session `owner`, its before (the journal's last after) and after
(the file now), so `bxctl memory show` explains it and undo can revert it like any edit.

A crash between the rename of a memoryd write and its journal append leaves the same picture, and
must not be called a hand edit. So before each rename memoryd writes the journal fields it is about
to append to memory/.writing.json (one write, no fsync: it only has to survive a killed process,
not a power cut). If the file now holds exactly that intent's after, and the journal's last after
is its before, the write was memoryd's: its journal line is appended as it would have been, with
`"recovered": true`. A power cut in that window can still show up as a hand edit; that is the one
case left, and the record still holds the right before and after.

The journal's last after per file is kept by JournalTail, which reads only what was appended since
it last looked, so a write costs the same however long the journal is.
"""

import json
import logging
import os
from pathlib import Path

from memoryd.errors import FileDamaged
from memoryd.home import FILE_MODE, Home, open_read
from memoryd.journal import scan as journalscan
from memoryd.journal.journal import IDENTITY_FILES, EditLine, Journal
from memoryd.journal.linefile import parse_line
from memoryd.memory.memfiles import read_entries

log = logging.getLogger(__name__)

INTENT_NAME = ".writing.json"
OWNER_SESSION = "owner"
HAND_EDIT = "hand-edit"


def intent_path(home: Home) -> Path:
    return home.memory / INTENT_NAME


def intend(home: Home, fields: dict) -> None:
    """Note the journal fields of the write about to be renamed into place."""
    data = json.dumps({"fields": fields}, ensure_ascii=False).encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(intent_path(home), flags, FILE_MODE)
    try:
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


def forget(home: Home) -> None:
    """The write is journalled or taken back: its intent no longer stands."""
    try:
        os.unlink(intent_path(home))
    except OSError:
        pass


INTENT_MAX = 1_048_576


def read_intent(home: Home) -> dict | None:
    """The intent of the last write, or None (missing, a symlink, torn, not an object)."""
    try:
        fd = os.open(intent_path(home), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            value = json.loads(f.read(INTENT_MAX).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if isinstance(value, dict) and isinstance(value.get("fields"), dict):
        return value
    return None


def _entry_list(value: object) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(e, str) for e in value):
        return value
    return None


class JournalTail:
    """The last `after` the journal holds for memory.md and user.md, read incrementally: the
    first time from the journal's end (journalscan), then only what was appended since."""

    def __init__(self, journal: Journal):
        self.journal = journal
        self._path: Path | None = None  # the newest month file read, and how far
        self._offset = 0
        self._after: dict[str, list[str]] = {}

    def _reset(self) -> None:
        self._after = {}
        months = self.journal.month_files()
        for file in IDENTITY_FILES:
            record = journalscan.last_with_to(months, file)
            if record is not None:
                self._after[file] = record.after
        self._path = months[-1] if months else None
        self._offset = self._path.stat().st_size if self._path else 0

    def _read_from(self, path: Path, offset: int) -> int:
        with open_read(path) as f:  # no link followed, a regular file only
            f.seek(offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a last line without its newline is not whole yet
        for file, after in _identity_afters(data[:end]):
            self._after[file] = after
        return offset + end

    def last_after(self, file: str) -> list[str]:
        """What memoryd last left in file according to the journal ([] before any edit)."""
        months = self.journal.month_files()
        try:
            if self._path is None or self._path not in months:
                self._reset()
            else:
                later = months[months.index(self._path) + 1 :]
                if self._path.stat().st_size < self._offset:
                    self._reset()
                else:
                    self._offset = self._read_from(self._path, self._offset)
                    for path in later:
                        self._path, self._offset = path, self._read_from(path, 0)
        except FileNotFoundError:
            self._reset()
        return list(self._after.get(file, []))


class HandEdits:
    """Detects and journals hand edits; called by MemoryStore under its lock."""

    def __init__(self, home: Home, journal: Journal, now):
        self.home = home
        self.journal = journal
        self.now = now
        self.tail = JournalTail(journal)

    def detect(self) -> list[EditLine]:
        """Journal every identity file that differs from the journal's last after."""
        records = []
        for file in IDENTITY_FILES:
            record = self._detect(file)
            if record is not None:
                records.append(record)
        return records

    def _detect(self, file: str) -> EditLine | None:
        try:
            current = read_entries(self.home, file)
        except FileDamaged as e:
            log.warning("%s: not compared with the journal: %s", file, e)
            return None
        last = self.tail.last_after(file)
        if current == last:
            return None
        intent = read_intent(self.home)
        if intent is not None and _is_unjournalled_write(intent["fields"], file, last, current):
            record = self.journal.append(self.now(), {**intent["fields"], "recovered": True})
            log.info(
                "%s: memoryd's write was renamed into place but not journalled before a crash; "
                "journalled now as edit %s",
                file,
                record.id,
            )
            return record
        record = self.journal.append(
            self.now(),
            {
                "session": OWNER_SESSION,
                "call": None,
                "taint": None,
                "untrusted": False,
                "action": HAND_EDIT,
                "file": file,
                "to": file,
                "before": last,
                "after": current,
                "notes": [],
            },
        )
        log.info(
            "%s: edited outside memoryd (%d entries before, %d now); journalled as edit %s",
            file,
            len(last),
            len(current),
            record.id,
        )
        return record


_NAMES = tuple(name.encode() for name in IDENTITY_FILES)


def _identity_afters(data: bytes):
    """(file, after) of each journal line in data that changed memory.md or user.md, in order.
    Only lines naming one of the files are parsed, so the many notes cost a substring search."""
    for raw in data.split(b"\n"):
        if not any(name in raw for name in _NAMES):
            continue
        record = parse_line(raw, EditLine)
        if not isinstance(record, str) and record.to in IDENTITY_FILES:
            yield record.to, record.after


def _is_unjournalled_write(fields: dict, file: str, last: list[str], current: list[str]) -> bool:
    return (
        fields.get("to") == file
        and _entry_list(fields.get("before")) == last
        and _entry_list(fields.get("after")) == current
    )
