"""A damaged journal line: why it does not parse, said once in memoryd's log with its file and line.

The owner's answers that pass over such a line (log) or refuse its id (show, undo) send him to
memoryd's log, so the log must hold the line's file, number and what is wrong with it: said when
the start looks at the journal's end, and when log, show or undo meet the line, once per line
while memoryd runs (not at every log). The one state a power cut leaves is a line cut short during
its append: JSON that ends before its object does (or in the zero bytes some file systems leave),
at the end of its month or, once the next append began on a line of its own, before that line.
It is named as such, not as a line that does not parse. The write
it journalled was made before its line was appended (and synced), so it stands in the files; the
line stays where it is (memoryd deletes nothing of the journal), the next line starts on a line of
its own, and the id at its start is never handed out again (journal.last_id).
"""

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from memoryd.home import open_read
from memoryd.journal import mapfile
from memoryd.journal.idform import DAY_B, NUMBER_B
from memoryd.journal.linefile import parse_line
from memoryd.journal.mapfile import FileView, line_bytes

log = logging.getLogger("memoryd.journal.journal")

TORN = "cut short, as a crash or power cut during its append leaves it"
ID_AT_START = re.compile(rb'\{"id": "(' + DAY_B + b"-" + NUMBER_B + rb')"')
# A torn line at the end is found in this much of a month's tail: a line is rarely longer, and
# a longer one is said when log, show or undo meet it.
TAIL_BYTES = 1 << 20
# The first look at a month's end reads this much, then twice as much until the last line's start
# is in it (up to TAIL_BYTES): only the last line can be the torn one, and it is rarely longer.
FIRST_TAIL = 8192
SAID_MOST = 256
# How much of a month line_number counts the newlines of at a time.
COUNT_STEP = 1 << 22


@dataclass(frozen=True)
class Damaged:
    """A journal line that does not parse: its month file, its id (when its start still says),
    its number from 1 and why."""

    path: Path
    id: str | None
    number: int
    why: str

    @property
    def torn(self) -> bool:
        return self.why == TORN


def id_at_start(raw: bytes) -> str | None:
    """The id a line starts with, as memoryd writes it, even when the rest is torn or damaged."""
    m = ID_AT_START.match(raw.lstrip())
    return m.group(1).decode() if m else None


def why(raw: bytes, model) -> str | None:
    """Why raw does not parse as model (None when it does)."""
    reason = parse_line(raw, model)
    if not isinstance(reason, str):
        return None
    return TORN if cut_short(raw) else reason.removeprefix("is ")


def cut_short(raw: bytes) -> bool:
    """Whether raw is JSON that ends before its value does (or in zero bytes): a torn append,
    not a line damaged in its middle (a lost quote, a hand edit)."""
    raw = raw.strip()
    if not raw or raw.rstrip(b"\0") != raw:
        return bool(raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.end < len(raw) - 3:
            return False
        text = raw[: e.start].decode("utf-8", "replace")  # cut inside a character
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        return e.msg.startswith("Unterminated string") or e.pos >= len(text.rstrip())
    except (ValueError, RecursionError):
        return False
    return False


# The entry that says how to mend the journal without touching memory: a restore would mend it
# only by taking memory.md, user.md, notes.md and soul.md back to the archive's time as well.
RUNBOOK = "(runbook: journal-damaged)"


def mend_from_backup(path: Path) -> str:
    """How to mend a line damaged in its middle: its whole copy is in a backup's journal, read
    out of the archive without restoring it (a restore would take the memory files back too)."""
    return (
        "mend that line or delete it; a backup made after that edit holds it whole: tar -xzOf"
        f" ARCHIVE memory/edits/{path.name} prints that month as the backup holds it and changes"
        " nothing"
    )


_said: set[tuple[Path, int, str | None]] = set()


def say(found: Damaged) -> None:
    """The line in memoryd's log, once per line while memoryd runs."""
    key = (found.path, found.number, found.id)
    if key in _said:
        return
    if len(_said) >= SAID_MOST:
        _said.clear()
    _said.add(key)
    edit = f" (edit {found.id})" if found.id else ""
    if found.torn:
        todo = (
            "the write it journalled stands in the files, but memoryd can neither show nor undo"
            f" it; delete that line, nothing else needs mending {RUNBOOK}"
        )
    else:
        todo = f"memoryd can neither show nor undo it; {mend_from_backup(found.path)} {RUNBOOK}"
    log.warning(
        "%s: line %s%s is damaged: %s; skipped: %s",
        found.path,
        f"{found.number:,}",
        edit,
        found.why if found.torn else f"it is {found.why}",
        todo,
    )


def line_number(data, start: int) -> int:
    """The number from 1 of the line that starts at start of data (bytes or a FileView), counted
    COUNT_STEP bytes at a time (a month can be hundreds of megabytes)."""
    step = COUNT_STEP
    return 1 + sum(data[i : min(i + step, start)].count(b"\n") for i in range(0, start, step))


def found_at(path: Path, data, start: int, end: int, model) -> Damaged | None:
    """The line of data from start to end (exclusive, its newline not in it) when damaged. A line
    longer than any memoryd writes is damaged, read as its first bytes (mapfile.line_bytes)."""
    raw, cut = line_bytes(data, start, end)
    if cut:
        reason: str | None = TORN if raw.rstrip().endswith(b"\0") else too_long()
    elif not raw.strip():
        return None
    else:
        reason = why(raw.strip(), model)
    if reason is None:
        return None
    return Damaged(path, id_at_start(raw), line_number(data, start), reason)


def too_long() -> str:
    """Why a line longer than any memoryd writes is damaged (a power cut's NUL bytes aside)."""
    return f"longer than {mapfile.LONG_LINE:,} bytes, more than any line memoryd writes"


def last_line(path: Path, model) -> Damaged | None:
    """The month file's last line when it is damaged (a torn append, say), read from its tail;
    said in memoryd's log (once). For the start: the line a power cut tears."""
    try:
        with open_read(path) as f:
            size = f.seek(0, 2)
            want = FIRST_TAIL
            while True:
                skipped = max(0, size - want)
                f.seek(skipped)
                data = f.read()
                body = data.rstrip(b"\n")
                start = body.rfind(b"\n") + 1
                if start or not skipped or want >= TAIL_BYTES:
                    break
                want = min(want * 2, TAIL_BYTES)
            if start == 0 and skipped:
                return None  # longer than the tail: said when the owner's commands meet it
            found = found_at(path, data, start, len(body), model)
            if found is not None and skipped:  # numbered in the whole file
                f.seek(0)
                before = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
                number = before - data.count(b"\n") + found.number
                found = Damaged(path, found.id, number, found.why)
    except OSError:
        return None
    if found is not None:
        say(found)
    return found


Stamp = tuple[int, int, int, int, int]  # device, inode, size, mtime, ctime


def file_stamp(path: Path) -> Stamp | None:
    """What tells a month file changed since it was last read (a hand edit that keeps the size
    and sets the mtime back still moves the ctime); None when it cannot be looked at."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Ends:
    """The month files' last lines as last checked, each kept with the file's identity, size and
    times when it was checked. Before every write memoryd looks at the journal's end; a month it
    no longer appends to does not change while it runs, so reading each month's tail at every
    write made a write cost more with every month of history. A month whose stamp is the one it
    was checked at is not read again; any other (the month being appended to, one replaced,
    restored or edited by hand) is checked again. Stamped before it is read: a change made
    during the read shows as a new stamp at the next look."""

    def __init__(self) -> None:
        self._checked: dict[Path, tuple[Stamp, Damaged | None]] = {}

    def check(self, paths: list[Path], model) -> list[Damaged]:
        """The damaged last lines of paths (each said in memoryd's log once, when checked)."""
        checked: dict[Path, tuple[Stamp, Damaged | None]] = {}
        out: list[Damaged] = []
        for path in paths:
            stamp = file_stamp(path)
            before = self._checked.get(path)
            if stamp is not None and before is not None and before[0] == stamp:
                found = before[1]
            else:
                found = last_line(path, model)
            if stamp is not None:
                checked[path] = (stamp, found)
            if found is not None:
                out.append(found)
        self._checked = checked  # months no longer listed are dropped
        return out


def find(path: Path, edit_id: str, model) -> Damaged | None:
    """The damaged line of path that starts with edit_id (a torn append keeps its start), said in
    memoryd's log (once); None when there is none. The file is mapped, not read whole."""
    needle = b'{"id": ' + json.dumps(edit_id).encode()
    try:
        f = open_read(path)  # no link followed, a regular file only
    except FileNotFoundError:
        return None
    with f:
        try:
            data = FileView(f)
        except ValueError:  # empty
            return None
        try:
            position = data.find(needle)
            while position != -1:
                start = data.rfind(b"\n", 0, position) + 1
                end = data.find(b"\n", position)
                end = len(data) if end == -1 else end
                before, cut = line_bytes(data, start, position)
                if not cut and not before.strip():
                    found = found_at(path, data, start, end, model)
                    if found is not None:
                        say(found)
                        return found
                position = data.find(needle, end)
        finally:
            data.close()
    return None
