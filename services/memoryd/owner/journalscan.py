"""Reading a long journal without reading it whole: the owner's commands over 100,000 edits.

A month of edits/ can hold hundreds of megabytes (each identity edit carries its file's entries
before and after). These look at the month files through mmap and parse only the lines they need:
the line of one id, the last line that changed a file, the last N lines, N lines from an id. They
rely on what memoryd writes (json.dumps with its default separators: a line starts with
{"id": "...", and the key "to" reads "to": "memory.md"); a line written otherwise by hand is
skipped, as read_lines skips a damaged one.
"""

import json
import mmap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def mapped(path: Path) -> Iterator[bytes | mmap.mmap]:
    """The bytes of path, mapped (b"" for a missing or empty file)."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        yield b""
        return
    with f:
        try:
            view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # empty
            yield b""
            return
        try:
            yield view
        finally:
            view.close()


def _parse(raw: bytes) -> dict | None:
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _line_at(data, position: int) -> tuple[int, int]:
    start = data.rfind(b"\n", 0, position) + 1
    end = data.find(b"\n", position)
    return start, len(data) if end == -1 else end


def line_with_id(path: Path, edit_id: str) -> dict | None:
    """The journal line of edit_id in path (the last one, if a crash left two)."""
    needle = b'{"id": ' + json.dumps(edit_id).encode()
    with mapped(path) as data:
        position = len(data)
        while True:
            position = data.rfind(needle, 0, position)
            if position == -1:
                return None
            if position == 0 or data[position - 1 : position] == b"\n":
                start, end = _line_at(data, position)
                record = _parse(data[start:end])
                if record is not None and record.get("id") == edit_id:
                    return record


def last_with_to(paths: list[Path], file: str) -> dict | None:
    """The last journal line (over paths, oldest first) whose "to" is file."""
    needle = b'"to": ' + json.dumps(file).encode()
    for path in reversed(paths):
        with mapped(path) as data:
            position = len(data)
            while True:
                position = data.rfind(needle, 0, position)
                if position == -1:
                    break
                start, end = _line_at(data, position)
                record = _parse(data[start:end])
                if record is not None and record.get("to") == file:
                    return record
                position = start
    return None


def tail(paths: list[Path], n: int) -> list[dict]:
    """The last n parseable lines over paths (oldest first), oldest first."""
    out: list[dict] = []
    for path in reversed(paths):
        with mapped(path) as data:
            end = len(data)
            while end > 0 and len(out) < n:
                start = data.rfind(b"\n", 0, end - 1) + 1 if end > 1 else 0
                raw = data[start:end].strip()
                if raw:
                    record = _parse(raw)
                    if record is not None:
                        out.append(record)
                end = start
                if start == 0:
                    break
        if len(out) >= n:
            break
    out.reverse()
    return out[-n:] if n else []


def from_id(paths: list[Path], edit_id: str, n: int) -> list[dict] | None:
    """n parseable lines starting at edit_id's (None when no line has that id)."""
    needle = b'{"id": ' + json.dumps(edit_id).encode()
    out: list[dict] = []
    found = False
    for path in paths:
        with mapped(path) as data:
            position = 0
            if not found:
                position = data.find(needle)
                while position > 0 and data[position - 1 : position] != b"\n":
                    position = data.find(needle, position + 1)
                if position == -1:
                    continue
                found = True
            while position < len(data) and len(out) < n:
                end = data.find(b"\n", position)
                end = len(data) if end == -1 else end
                raw = data[position:end].strip()
                record = _parse(raw) if raw else None
                if record is not None:
                    out.append(record)
                position = end + 1
        if len(out) >= n:
            break
    return out if found else None
