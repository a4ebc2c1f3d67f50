"""Replacing forgotten text with the marker in memoryd's JSON-lines files, a month at a time.

A month file is searched for the text as JSON writes it (one byte search through mmap); only a
file that holds it is rewritten, streamed to a temporary file beside it, fsync'd and renamed over
it (the folder fsync'd), so a kill leaves the old file or the new one (and a temporary file that
the next start removes). A journal month is rewritten in two steps, so that the writer does not
wait for a long month: prepare() on a reader up to the month's end then, finish() on the writer
with the lines appended since. In a line that holds the
text, the journal's strings equal to it (entries before and after, notes) become the marker; in
the recall log, a query that contains it does. pending.jsonl loses the items whose arguments
hold it: a pending write of forgotten text can no longer be accepted.
"""

import json
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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


def _temp(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")


def _transform(lines, out, find: bytes, change: Callable[[dict], dict | None], dumps) -> int:
    """Write lines to out, each holding find through change (None drops it); how many changed."""
    changed = 0
    for raw in lines:
        if find not in raw:
            out.write(raw)
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        new = change(value) if isinstance(value, dict) else None
        changed += new != value
        if new is not None:
            out.write(dumps(new).encode("utf-8") + b"\n")
    return changed


def _upto(f, size: int):
    """The whole lines of f from where it is up to byte size; f is left after the last of them
    (a line still being appended is left for finish())."""
    left = size - f.tell()
    while left > 0:
        raw = f.readline(left)
        if not raw:
            return
        if not raw.endswith(b"\n"):
            f.seek(-len(raw), os.SEEK_CUR)
            return
        left -= len(raw)
        yield raw


def _swap(tmp: Path, path: Path) -> None:
    os.replace(tmp, path)
    fsync_dir(path.parent)


def rewrite(path: Path, text: str, change: Callable[[dict], dict | None], dumps) -> int:
    """Rewrite the lines of path holding text through change (None drops the line); how many
    lines changed. A file that does not hold it is not touched."""
    find = needle(text)
    if next(_lines_with(path, find), None) is None:
        return 0
    tmp = _temp(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as out, open_read(path) as f:
            changed = _transform(f, out, find, change, dumps)
            out.flush()
            os.fsync(out.fileno())
        _swap(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return changed


@dataclass
class Prepared:
    """A month rewritten up to size by prepare(), off the writer; finish() adds the rest."""

    path: Path
    tmp: Path
    inode: int
    size: int
    changed: int

    def drop(self) -> None:
        self.tmp.unlink(missing_ok=True)


def prepare(path: Path, text: str, change, dumps) -> Prepared | None:
    """On a reader: path's lines as they are now, through change, into a temporary file beside
    it (fsync'd); None when path does not hold text. The journal only grows between this and
    finish(), so the writer then has only the lines appended since to read."""
    find = needle(text)
    if next(_lines_with(path, find), None) is None:
        return None
    tmp = _temp(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as out, open_read(path) as f:
            st = os.fstat(f.fileno())
            size = st.st_size
            changed = _transform(_upto(f, size), out, find, change, dumps)
            size = f.tell()
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Prepared(path, tmp, st.st_ino, size, changed)


def finish(prep: Prepared, text: str, change, dumps) -> int:
    """On the writer: the lines appended since prepare(), through change, then the rename. A
    file replaced meanwhile (another rewrite) is rewritten whole instead."""
    try:
        st = os.stat(prep.path, follow_symlinks=False)
    except FileNotFoundError:
        prep.drop()
        return 0
    if st.st_ino != prep.inode or st.st_size < prep.size:
        prep.drop()
        return rewrite(prep.path, text, change, dumps)
    try:
        fd = os.open(prep.tmp, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        with os.fdopen(fd, "ab") as out, open_read(prep.path) as f:
            f.seek(prep.size)
            changed = _transform(f, out, needle(text), change, dumps)
            out.flush()
            os.fsync(out.fileno())
        _swap(prep.tmp, prep.path)
    except BaseException:
        prep.drop()
        raise
    return prep.changed + changed


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
