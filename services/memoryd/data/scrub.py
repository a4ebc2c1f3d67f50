"""Replacing forgotten text with the marker in memoryd's JSON-lines files, a month at a time.

A month file is searched for the text as JSON writes it (one byte search through mmap); only a
file that holds it is rewritten, streamed to a temporary file beside it, fsync'd and renamed over
it (the folder fsync'd), so a kill leaves the old file or the new one. In a line that holds the
text, the journal's strings equal to it (entries before and after, notes) become the marker; in
the recall log, a query that contains it does. pending.jsonl loses the items whose arguments
hold it: a pending write of forgotten text can no longer be accepted.
"""

import json
import mmap
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from memoryd.home import FILE_MODE, fsync_dir, open_read


def needle(text: str) -> bytes:
    """The text as it appears inside a JSON string memoryd wrote (ensure_ascii off)."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")


def holds(path: Path, text: str) -> int:
    """How many lines of path hold text (0 for a missing or empty file)."""
    return sum(1 for _ in _lines_with(path, needle(text)))


def _lines_with(path: Path, find: bytes) -> Iterator[int]:
    try:
        f = open_read(path)
    except FileNotFoundError:
        return
    with f:
        if os.fstat(f.fileno()).st_size == 0:
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            position = data.find(find)
            while position != -1:
                start = data.rfind(b"\n", 0, position) + 1
                yield start
                end = data.find(b"\n", position)
                if end == -1:
                    return
                position = data.find(find, end)


def rewrite(path: Path, text: str, change: Callable[[dict], dict | None], dumps) -> int:
    """Rewrite the lines of path holding text through change (None drops the line); how many
    lines changed. A file that does not hold it is not touched."""
    find = needle(text)
    if next(_lines_with(path, find), None) is None:
        return 0
    changed = 0
    tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as out, open_read(path) as f:
            for raw in f:
                if find in raw:
                    try:
                        value = json.loads(raw)
                    except ValueError:
                        value = None
                    new = change(value) if isinstance(value, dict) else None
                    changed += new != value
                    if new is not None:
                        out.write(dumps(new).encode("utf-8") + b"\n")
                    continue
                out.write(raw)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)
    return changed


def replace_equal(value, text: str, marker: str):
    """value with every string equal to text (at any depth) replaced by marker."""
    if isinstance(value, str):
        return marker if value == text else value
    if isinstance(value, list):
        return [replace_equal(v, text, marker) for v in value]
    if isinstance(value, dict):
        return {k: replace_equal(v, text, marker) for k, v in value.items()}
    return value


def contains(value, text: str) -> bool:
    if isinstance(value, str):
        return text in value
    if isinstance(value, list):
        return any(contains(v, text) for v in value)
    if isinstance(value, dict):
        return any(contains(v, text) for v in value.values())
    return False


def journal_dumps(value: dict) -> str:
    return json.dumps(value, ensure_ascii=False)


def compact_dumps(value: dict) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
