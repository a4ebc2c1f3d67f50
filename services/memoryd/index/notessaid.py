"""What a reading of notes.md says of it in memoryd's log, naming lines as a reading in one piece.

notes.md is read a part at a time (notesparts.py), and a part starts anywhere. A damaged header
(memory/notes.py) is logged once per reading, naming its line (notes.damage_said), and so are the
first line that is not UTF-8 of a reading from the start (notes.not_utf8) and text before the
first header, which no note holds (notes.leading_said). Told keeps the count of lines before the
offset reached, so that a later part names lines as a reading in one piece would.
"""

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from memoryd.home import open_read
from memoryd.index import noteslong
from memoryd.memory import notes

# Logged under the indexer's name, as before notes.md's reading had modules of its own.
log = logging.getLogger("memoryd.index.indexer")


@dataclass
class Told:
    """Where the present reading of notes.md stands in lines, and what was said of it."""

    at: int | None = None  # the byte offset whose count of lines before it is known
    lines: int = 0
    from_start: bool = False  # the present reading began at byte 0 in this process
    utf8_said: bool = False
    scan: noteslong.Scan | None = None  # the search through a long stretch, as far as it went


def say(told: Told, path: Path, chunk: bytes, offset: int, entries: list) -> None:
    """Log the damaged headers among entries and, once a reading from the start, the first line
    not in UTF-8, naming their lines; then count chunk's lines into told."""
    damaged = [e for e in entries if e.damaged]
    check_utf8 = told.from_start and not told.utf8_said
    if offset == 0 and (leading := notes.leading_said(chunk)) is not None:
        log.warning("%s", leading)  # the first part ends at a header: it holds all such text
    if damaged or check_utf8:
        lines = lines_before(told, path, offset)
        for e in damaged:
            at = e.start - offset
            said = notes.damage_said(replace(e, start=at), chunk, 0)
            log.warning("%s", _moved(said, chunk.count(b"\n", 0, at) + 1, lines))
        if check_utf8 and (encoding := notes.not_utf8(chunk, lines)) is not None:
            log.warning("%s", encoding)
            told.utf8_said = True
    if told.at == offset:
        told.at, told.lines = offset + len(chunk), told.lines + chunk.count(b"\n")


def _moved(said: str, line: int, before: int) -> str:
    """said, whose "line N" counts from the chunk's start, with N counted from the file's."""
    return said.replace(f"notes.md line {line}", f"notes.md line {line + before}", 1)


def lines_before(told: Told, path: Path, offset: int) -> int:
    """How many lines notes.md holds before offset (counted once, then kept in told)."""
    if told.at != offset:
        lines, left = 0, offset
        with open_read(path) as f:
            while left > 0 and (block := f.read(min(left, 1 << 20))):
                lines += block.count(b"\n")
                left -= len(block)
        told.at, told.lines = offset, lines
    return told.lines
