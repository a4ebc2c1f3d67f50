"""A journal file's bytes without reading it whole, and without mapping it.

A month can be hundreds of megabytes, so its readers (scan.py, twice.py, forgotpending.py, the
restore's and the imports' searches) search it in place rather than read it whole. They did so
through mmap; but a month is the owner's file too, and an editor that saves in place (`: >`,
nano, vim with backupcopy=yes) cuts it short while memoryd may be searching it. Every page of
a mapping past the file's new end is then gone, and the next touch of one raises SIGBUS, which
Python cannot catch: memoryd died on the spot. So a month is read with os.pread instead, through
a view (FileView) with what the readers use of the mapping (find and rfind, a window at a time;
slices; len). A file cut short while read reads as shorter from there on: a search finds
nothing past its new end and a slice there is short or empty, as if it had been that size.

The view holds one window of the file (WINDOW bytes) besides what a slice asks for. Regular
expressions cannot run over it (re wants the bytes themselves): finditer runs one over a window
of whole lines at a time. A reader that takes a line whole takes it through line_bytes, which
reads a line longer than any memoryd writes (a run of NUL bytes a power cut left, a file copied
over a month) as its first bytes, as the start does (wholelines.py): taken whole, a 300 MiB run
took memoryd past 900 MB for one `bxctl memory log`.
"""

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, overload

from memoryd.home import open_read

# How much of the file a search reads at a time (and the view keeps, for the next look nearby):
# FIRST bytes, then twice as many each time up to WINDOW, so that a look at a line or two reads
# little and a search through the month reads it in large windows. A search within at most
# WINDOW bytes given both ends (a line, a scan's window) reads them at once. WINDOW is scan.py's,
# so that a scan's window of whole lines, read as a slice, is kept for the searches within it.
FIRST = 16 << 10
WINDOW = 4 << 20
# A line longer than this is searched by finditer only in its first LONG_LINE bytes, and read as
# its first HEAD bytes by line_bytes: memoryd writes none near it (an entry file is read up to
# 1 MiB, a line holds two of them, escaped).
LONG_LINE = 64 << 20
HEAD = 4096


class FileView:
    """The bytes of an open file as they were at its size when the view was made, read when
    asked. Slices give bytes; find and rfind take bytes.find's arguments."""

    def __init__(self, f: BinaryIO) -> None:
        self._fd = f.fileno()
        self._size = os.fstat(self._fd).st_size
        self._at, self._kept = 0, b""  # the window read last: its offset and bytes

    def __len__(self) -> int:
        return self._size

    def __enter__(self) -> "FileView":
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def close(self) -> None:
        self._kept = b""

    def _read(self, start: int, end: int) -> bytes:
        """The file's bytes from start to end, short when it ends before (cut short since the
        view was made: len then says its new end)."""
        parts, at = [], start
        while at < end:
            got = os.pread(self._fd, end - at, at)
            if not got:
                self._size = min(self._size, at)
                break
            parts.append(got)
            at += len(got)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _window(self, start: int, end: int, size: int = FIRST) -> tuple[int, bytes]:
        """A window holding start to end (as far as the file goes), and its offset: the window
        kept when it does, else one read (and kept) of at least size bytes on the side given by
        start and end's order (end < start: the window ends at start, for rfind)."""
        low, high = min(start, end), max(start, end)
        if self._at <= low and high <= self._at + len(self._kept):
            return self._at, self._kept
        if end < start:
            low = min(low, max(0, high - size))
        else:
            high = max(high, min(self._size, low + size))
        self._at, self._kept = low, b""
        self._kept = self._read(low, high)
        return self._at, self._kept

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> bytes: ...

    def __getitem__(self, index: int | slice) -> int | bytes:
        if isinstance(index, int):
            got = self[index : index + 1 or None] if -self._size <= index < self._size else b""
            if not got:
                raise IndexError("FileView index out of range")
            return got[0]
        start, stop, step = index.indices(self._size)
        if step != 1:
            raise ValueError("a FileView is sliced with step 1")
        if stop <= start:
            return b""
        if stop - start > 2 * WINDOW:  # a long slice is read for itself, not kept
            return self._read(start, stop)
        at, kept = self._window(start, stop)
        return kept[start - at : stop - at]

    def _bounds(self, start: int | None, end: int | None) -> tuple[int, int]:
        start, end, _ = slice(start, end).indices(self._size)
        return start, end

    def find(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        bounded = end is not None  # a search within a line or a window: read it at once
        start, end = self._bounds(start, end)
        size = end - start if bounded and end - start <= WINDOW else FIRST
        while end - start >= len(sub):
            at, kept = self._window(start, min(end, start + max(len(sub), 1)), size)
            size = min(2 * size, WINDOW)
            hit = kept.find(sub, start - at, end - at)
            if hit != -1:
                return at + hit
            reached = at + len(kept)
            if reached >= min(end, self._size):
                return -1  # searched to end (or to where the file now ends)
            start = reached - len(sub) + 1  # a sub across the window's end lies in the next
        return -1 if len(sub) else start if start <= end else -1

    def rfind(self, sub: bytes, start: int | None = None, end: int | None = None) -> int:
        bounded = bool(start)  # a search back to a window's start, not the file's
        start, end = self._bounds(start, end)
        end = min(end, self._size)
        size = end - start if bounded and end - start <= WINDOW else FIRST
        while end - start >= len(sub):
            at, kept = self._window(end, max(start, end - max(len(sub), 1)), size)
            size = min(2 * size, WINDOW)
            hit = kept.rfind(sub, max(start, at) - at, min(end, at + len(kept)) - at)
            if hit != -1:
                return at + hit
            if at <= start:
                return -1
            end = min(end, self._size, at + len(sub) - 1)  # a sub across at lies before it
        return -1 if len(sub) else min(end, self._size)


@contextmanager
def mapped(path: Path) -> Iterator[bytes | FileView]:
    """A view of path's bytes (b"" for a missing or empty file)."""
    try:
        f = open_read(path)  # no link followed, a regular file only
    except FileNotFoundError:
        yield b""
        return
    with f:
        view = FileView(f)
        if not len(view):
            yield b""
            return
        try:
            yield view
        finally:
            view.close()


def finditer(pattern: re.Pattern[bytes], data, start: int = 0, end: int | None = None):
    """pattern's matches in data[start:end] (bytes or a FileView whose lines start at start),
    for a pattern that matches within a line: searched a window of whole lines at a time, a
    match's positions being its window's. A line longer than LONG_LINE is searched in its
    first LONG_LINE bytes only."""
    end = len(data) if end is None else min(end, len(data))
    while start < end:
        stop = data.find(b"\n", min(start + WINDOW, end), min(end, start + LONG_LINE))
        if stop == -1:
            stop = min(end, start + LONG_LINE)
            if stop < end:  # the rest of a long line: passed over
                after = data.find(b"\n", stop, end)
                yield from pattern.finditer(data[start:stop])
                start = end if after == -1 else after + 1
                continue
        else:
            stop += 1
        yield from pattern.finditer(data[start:stop])
        start = stop


def line_bytes(data, start: int, end: int) -> tuple[bytes, bool]:
    """The line data[start:end] (of bytes or a FileView) and False; for a line longer than
    LONG_LINE, its first HEAD bytes and True: cut, it is a damaged line whatever they hold, and
    they say which (its id, its NUL bytes) without the rest being read."""
    if end - start > LONG_LINE:
        return bytes(data[start : start + min(HEAD, LONG_LINE)]), True
    return bytes(data[start:end]), False


def line_starting(data, needle: bytes) -> int:
    """Where the first line of data that starts with needle starts; -1 when none does (a
    needle found inside a line, a text quoting an id, is passed over)."""
    at = data.find(needle)
    while at > 0 and data[at - 1 : at] != b"\n":
        at = data.find(needle, at + 1)
    return at
