"""Reading a long journal without reading it whole: the owner's commands over 100,000 edits.

A month of edits/ can hold hundreds of megabytes (each identity edit carries its file's entries
before and after). These search the month files in place (mapfile.py), parsing only the lines
they need: the line of one id, the last line that changed a file, the last N lines, N lines from
an id. They rely on what memoryd writes (json.dumps with its default separators: a line starts
with {"id": "...", and the key "to" reads "to": "memory.md"); a line written otherwise by hand is
skipped, as read_lines skips a damaged one.
"""

import json
import re
from collections.abc import Generator
from contextlib import closing
from pathlib import Path

from memoryd.journal import damaged, forgotpending
from memoryd.journal.idform import DAY_B, NUMBER_B
from memoryd.journal.journal import EditLine
from memoryd.journal.linefile import parse_line
from memoryd.journal.mapfile import LONG_LINE, finditer, line_bytes, line_starting, mapped

# How much of a month a scan over all of it reads at a time. A month can hold hundreds of
# megabytes; the view (mapfile.py) keeps one window, so memory stays at a window's size however
# long the month (the journal index's walk, byfile.py, passes over every month).
WINDOW = 4 << 20


def _rfind(data, needle: bytes, end: int) -> int:
    """data.rfind(needle, 0, end), a WINDOW at a time from end back."""
    while end > 0:
        low = max(0, end - max(WINDOW, 2 * len(needle)))
        position = data.rfind(needle, low, end)
        if position != -1 or low == 0:
            return position
        end = low + len(needle) - 1  # a needle across low lies in the next window
    return -1


def _parse(raw: bytes) -> EditLine | None:
    """The journal line raw, validated; None for a damaged line (skipped, as read_lines does)."""
    record = parse_line(raw, EditLine)
    return None if isinstance(record, str) else record


def _line(data, start: int, end: int) -> tuple[EditLine | None, bool]:
    """The journal line data[start:end] (None when it does not parse), and whether it holds
    anything (a blank line is passed over, a damaged one said). A line longer than any memoryd
    writes is damaged, and only its first bytes are read (mapfile.line_bytes)."""
    raw, cut = line_bytes(data, start, end)
    if cut:
        return None, True
    raw = raw.strip()
    return (_parse(raw) if raw else None), bool(raw)


def _line_at(data, position: int) -> tuple[int, int]:
    start = data.rfind(b"\n", 0, position) + 1
    end = data.find(b"\n", position)
    return start, len(data) if end == -1 else end


ID_AT_START = re.compile(rb'\{"id": "(' + DAY_B + rb")-(" + NUMBER_B + rb')"')


def _key(edit_id: bytes | str) -> tuple[str, int] | None:
    m = ID_AT_START.match(
        b'{"id": "' + (edit_id.encode() if isinstance(edit_id, str) else edit_id) + b'"'
    )
    return (m.group(1).decode(), int(m.group(2))) if m else None


def _bisect(data, needle: bytes, key: tuple[str, int]) -> int:
    """Where the line starting with needle is, if ids grow along the file: found by halving the
    file on the id of the line at the middle (a few lines parsed, not the file). -1 if not."""
    low, high = 0, len(data)
    while high - low > 65_536:
        middle = (low + high) // 2
        start = data.rfind(b"\n", 0, middle) + 1
        m = ID_AT_START.match(data[start : start + 64])
        if m is None:
            return -1
        here = (m.group(1).decode(), int(m.group(2)))
        if here == key:
            return start
        if here < key:
            low = middle + 1  # no line starts between start and middle
        else:
            high = start
    position = data.find(needle, max(0, low - 1), min(len(data), high + 65_536))
    while position > 0 and data[position - 1 : position] != b"\n":
        position = data.find(needle, position + 1, min(len(data), high + 65_536))
    return position


def _halved(data, needle: bytes, edit_id: str) -> EditLine | None:
    key = _key(edit_id)
    if key is None:
        return None
    position = _bisect(data, needle, key)
    if position == -1:
        return None
    start, end = _line_at(data, position)
    record, _ = _line(data, start, end)
    return record if record is not None and record.id == edit_id else None


def line_by_halving(path: Path, edit_id: str) -> EditLine | None:
    """The journal line of edit_id in path found by halving the file (a few lines read), None
    when halving does not find it: it is not there, or not where growing ids put it."""
    with mapped(path) as data:
        return _halved(data, b'{"id": ' + json.dumps(edit_id).encode(), edit_id)


def line_with_id(path: Path, edit_id: str) -> EditLine | None:
    """The journal line of edit_id in path: by halving the file first (ids grow along it), then,
    if that finds nothing (a clock that went back, a hand edit), by searching it from the end."""
    needle = b'{"id": ' + json.dumps(edit_id).encode()
    with mapped(path) as data:
        record = _halved(data, needle, edit_id)
        if record is not None:
            return record
        position = len(data)
        while True:
            position = data.rfind(needle, 0, position)
            if position == -1:
                return None
            if position == 0 or data[position - 1 : position] == b"\n":
                start, end = _line_at(data, position)
                record, _ = _line(data, start, end)
                if record is not None and record.id == edit_id:
                    return record


LINE_ID = re.compile(rb'(?m)^\{"id": "(' + DAY_B + rb"-" + NUMBER_B + rb')"')


def ids_at(path: Path, wanted: set[str], start: int = 0) -> tuple[dict[str, int], int]:
    """Where the lines of path starting with an id of wanted start (the first line of each),
    read from start (a line's start) to the file's end a WINDOW at a time, and how far whole
    lines were read (a line being written is read again from there next time). Only the ids at
    the lines' starts are matched, no line is parsed; a line longer than LONG_LINE is passed
    over past its first LONG_LINE bytes (it is damaged)."""
    found: dict[str, int] = {}
    with mapped(path) as data:
        size = len(data)
        while start < size:
            stop = data.find(b"\n", min(start + WINDOW, size - 1), min(size, start + LONG_LINE))
            whole = stop + 1 if stop != -1 else min(size, start + LONG_LINE)
            for m in LINE_ID.finditer(data[start:whole]):
                if m[1].decode() in wanted:
                    found.setdefault(m[1].decode(), start + m.start())
            if stop != -1:
                start = whole
            elif whole == size:  # the last line is not ended yet: read again next time
                start = data.rfind(b"\n", start, size) + 1 or start
                break
            else:  # the rest of a long line: passed over
                after = data.find(b"\n", whole)
                start = size if after == -1 else after + 1
    return found, start


def lines_to(paths: list[Path], file: str) -> Generator[tuple[Path, int, EditLine], None, None]:
    """Every journal line whose "to" is file, newest first (over paths, oldest first), with its
    month file and the offset where it starts; only those lines are parsed."""
    needle = b'"to": ' + json.dumps(file).encode()
    for path in reversed(paths):
        with mapped(path) as data:
            position = len(data)
            while True:
                position = _rfind(data, needle, position)
                if position == -1:
                    break
                start, end = _line_at(data, position)
                record, _ = _line(data, start, end)
                if record is not None and record.to == file:
                    yield path, start, record
                position = start


def last_with_to(paths: list[Path], file: str) -> EditLine | None:
    """The last journal line (over paths, oldest first) whose "to" is file."""
    with closing(lines_to(paths, file)) as found:
        for _, _, record in found:
            return record
    return None


def line_at(path: Path, offset: int) -> EditLine | None:
    """The journal line that starts at offset of path (None when there is none, or it is not
    whole or not an edit line)."""
    with mapped(path) as data:
        if offset < 0 or offset >= len(data) or (offset and data[offset - 1 : offset] != b"\n"):
            return None
        end = data.find(b"\n", offset)
        if end == -1:
            return None
        return _line(data, offset, end)[0]


def _skipped(skipped: list[damaged.Damaged] | None, path: Path, data, start: int, end: int) -> None:
    """A damaged line passed over (data[start:end]): its file, id (when its start still says),
    number and why, said in memoryd's log once (the owner's answer sends him there)."""
    if skipped is not None:
        found = damaged.found_at(path, data, start, end, EditLine)
        if found is not None:
            damaged.say(found)
            skipped.append(found)


def tail(paths: list[Path], n: int, skipped: list[damaged.Damaged] | None = None) -> list[EditLine]:
    """The last n parseable lines over paths (oldest first), oldest first; skipped gets the
    damaged lines passed over among them."""
    out: list[EditLine] = []
    for path in reversed(paths):
        with mapped(path) as data:
            end = len(data)
            while end > 0 and len(out) < n:
                start = data.rfind(b"\n", 0, end - 1) + 1 if end > 1 else 0
                record, held = _line(data, start, end)
                if record is not None:
                    out.append(record)
                elif held:
                    _skipped(skipped, path, data, start, end)
                end = start
                if start == 0:
                    break
        if len(out) >= n:
            break
    out.reverse()
    return out[-n:] if n else []


def from_id(
    paths: list[Path], edit_id: str, n: int, skipped: list[damaged.Damaged] | None = None
) -> list[EditLine] | None:
    """n parseable lines starting at edit_id's (None when no line has that id); skipped gets
    the damaged lines passed over among them."""
    needle = b'{"id": ' + json.dumps(edit_id).encode()
    out: list[EditLine] = []
    found = False
    for path in paths:
        with mapped(path) as data:
            position = 0
            if not found:
                position = line_starting(data, needle)
                if position == -1:
                    continue
                found = True
            while position < len(data) and len(out) < n:
                end = data.find(b"\n", position)
                end = len(data) if end == -1 else end
                record, held = _line(data, position, end)
                if record is not None:
                    out.append(record)
                elif held:
                    _skipped(skipped, path, data, position, end)
                position = end + 1
        if len(out) >= n:
            break
    return out if found else None


PENDING_KEY = re.compile(rb'"pending": "(p-' + DAY_B + b"-" + NUMBER_B + rb')"')


def pending_ids(paths: list[Path]) -> set[str]:
    """Every pending id the journal resolved (accept and reject lines carry "pending"; a forget's
    line lists the staged writes it dropped, forgotpending.py), found by one regular expression
    over each month instead of parsing every line. A quote inside an entry is escaped in JSON, so
    only the key itself can match."""
    found: set[str] = set()
    for path in paths:
        with mapped(path) as data:
            start = 0
            while start < len(data):  # a WINDOW at a time, each ending at a line's end
                end = data.find(b"\n", min(start + WINDOW, len(data)))
                end = len(data) if end == -1 else end + 1
                found.update(m[1].decode() for m in finditer(PENDING_KEY, data, start, end))
                found.update(forgotpending.ids_in(data, start, end))
                start = end
    return found
