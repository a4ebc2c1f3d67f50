"""A journal file's bytes without reading it whole: mapped, so that a scan over a month of
hundreds of megabytes holds only the pages it is reading (scan.py gives back those it passed).

A module of its own because the readers of the journal's lines (scan.py) and of the forget lines'
staged writes (forgotpending.py), which scan.py reads in turn, both map the month files.
"""

import mmap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memoryd.home import open_read


@contextmanager
def mapped(path: Path) -> Iterator[bytes | mmap.mmap]:
    """The bytes of path, mapped (b"" for a missing or empty file)."""
    try:
        f = open_read(path)  # no link followed, a regular file only
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


def line_starting(data: bytes | mmap.mmap, needle: bytes) -> int:
    """Where the first line of data that starts with needle starts; -1 when none does (a
    needle found inside a line, a text quoting an id, is passed over)."""
    at = data.find(needle)
    while at > 0 and data[at - 1 : at] != b"\n":
        at = data.find(needle, at + 1)
    return at
