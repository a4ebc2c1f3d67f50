"""Replacing forgotten text with the marker in memoryd's JSON-lines files, a month at a time.

A month file is searched for the text as JSON writes it (one byte search in windows); only a
file that holds it is rewritten, streamed to a temporary file beside it, fsync'd and renamed over
it (the folder fsync'd), so a kill leaves the old file or the new one (and a temporary file that
the next start removes). A journal month is rewritten in two steps, so that the writer does not
wait for a long month: prepare() on a reader up to the month's end then, finish() on the writer
with the lines appended since. A line the byte search finds is parsed and judged by the caller's
change (matching.py says which values hold the text); a line it leaves as it was is written back
as it was read. An error names the file it was writing or reading.
"""

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memoryd.home import FILE_MODE, fsync_dir, open_read
from memoryd.journal.mapfile import FileView
from proto.jsonread import loads_or_none
from proto.trim import trim


def needle(text: str, ascii_only: bool = False) -> bytes:
    """The text as it appears inside a JSON string memoryd wrote (ensure_ascii as given),
    surrounding whitespace aside."""
    return json.dumps(trim(text), ensure_ascii=ascii_only)[1:-1].encode("utf-8")


def count(
    path: Path, text: str, holds: Callable[[dict, str], bool], find: bytes | None = None
) -> int:
    """How many lines of path hold text as holds judges a parsed line (0 for a missing file)."""
    find = find or needle(text)
    if next(_lines_with(path, find), None) is None:
        return 0
    n = 0
    with _named(path), open_read(path) as f:
        for raw in f:
            if find not in raw:
                continue
            value = loads_or_none(raw)
            n += isinstance(value, dict) and holds(value, text)
    return n


@contextlib.contextmanager
def _named(path: Path) -> Iterator[None]:
    """An OSError raised inside names path when it names no file itself (a failed write)."""
    try:
        yield
    except OSError as e:
        if e.filename is None:
            e.filename = str(path)
        raise


def _lines_with(path: Path, find: bytes) -> Iterator[int]:
    try:
        f = open_read(path)
    except FileNotFoundError:
        return
    with _named(path), f:
        if os.fstat(f.fileno()).st_size == 0:
            return
        with FileView(f) as data:
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
        value = loads_or_none(raw)
        new = change(value) if isinstance(value, dict) else None
        if new is not None and new == value:
            out.write(raw)  # holds the bytes but not the text, as matching.py judges
            continue
        changed += 1
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


def rewrite(
    path: Path, text: str, change: Callable[[dict], dict | None], dumps, find: bytes | None = None
) -> int:
    """Rewrite the lines of path holding text through change (None drops the line); how many
    lines changed. A file that does not hold it is not touched. find: the bytes a line holding
    text holds (needle(text) unless given)."""
    find = find or needle(text)
    if next(_lines_with(path, find), None) is None:
        return 0
    with _named(path):
        return _rewrite(path, find, change, dumps)


def _rewrite(path: Path, find: bytes, change, dumps) -> int:
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
    with _named(path):
        return _prepare(path, find, change, dumps)


def _prepare(path: Path, find: bytes, change, dumps) -> Prepared:
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
    with _named(prep.path):
        return _finish(prep, text, change, dumps)


def _finish(prep: Prepared, text: str, change, dumps) -> int:
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


def journal_dumps(value: dict) -> str:
    return json.dumps(value, ensure_ascii=False)


def compact_dumps(value: dict) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
