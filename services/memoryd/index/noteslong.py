"""A stretch of notes.md with no header for longer than a part gathers: passed over, not held.

notes.md has no size limit, and a part reads whole entries: it gathers bytes until it holds a
header past the entry it reads. One huge pasted note, or a damaged tail (a gigabyte of NUL bytes
a damaged disk or a mistyped truncate left), holds no header for all that length; gathered whole,
it took memoryd past a gigabyte on the writer thread, every memory call waiting behind it. So a
part gathers at most gather_bound bytes (twice what a row of the index holds of a note, enough to
index what a row would hold of it). Past that, the stretch is searched in fixed blocks for the
next header (reach), the bytes of the stretch never held: the entry is indexed from what was
gathered (a row holds only its first max_record_bytes anyway) and the part goes on at that
header, or, at the file's end, after its last newline (a last line without its newline is still
being written, as for any entry). Each such stretch is said in memoryd's log in one line naming
the file, once per reading.
"""

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.memory import notelines, notes

log = logging.getLogger("memoryd.index.indexer")

GATHER_LEAST = 1 << 20  # a part gathers up to this at least, whatever max_record_bytes says
SCAN_BLOCK = 1 << 20  # bytes searched at a time past that
LINE_LOOK = 64 << 10  # how much of a line starting with "§" is read to see that it is a header
SECTION = 0xA7  # the last byte of "§" in UTF-8, and "§" itself in a one-byte encoding


def gather_bound(max_record_bytes: int) -> int:
    """How many bytes a part gathers while it holds fewer than two headers."""
    return max(GATHER_LEAST, 2 * max_record_bytes)


@dataclass
class Stretch:
    end: int  # where the stretch ends: at the next header, or after the file's last newline
    header: bool  # a header starts at end (else the file ends there, but for an unended line)
    lines: int  # the newlines between where the search began and end


@dataclass
class Scan:
    """How far the search for the end of the stretch at start has gone, from after: kept
    between parts (notessaid.Told), so that a part searches for at most a part's bounds and
    the writer is free between two; and once it reached the file's end, so that a catch-up with
    nothing new does not search it again."""

    start: int
    after: int
    file: str | None  # notes.md (indexer.file_of whole) when it was searched
    pos: int = 0  # searched up to here
    lines: int = 0
    last_newline: int = -1
    carry: bytes = b""  # the two bytes before pos (a line's end, half a "§")
    buf: bytes = b""  # what the part gathered from start, and the entries it holds
    entries: list = field(default_factory=list)
    said: bool = False  # an unended stretch at start said (unended)

    @classmethod
    def begin(cls, fd: int, start: int, after: int, file: str | None) -> "Scan":
        low = max(start, after - 2)
        carry = os.pread(fd, after - low, low) if after > low else b""  # a line's end at after
        return cls(start, after, file, pos=after, carry=carry)

    def rebased(self, start: int, file: str | None) -> "Scan":
        """The search as it stands for the stretch at start, the end of the last newline found:
        none after it, no header up to pos."""
        return Scan(start, start, file, self.pos, 0, -1, self.carry)


def reach(fd: int, scan: Scan, over: Callable[[int], bool]) -> Stretch | None:
    """Where the entry (or the text before the first header) at scan.start ends, searched in
    blocks from where scan stands; None when over (given the bytes searched by this call) says
    the part has done what it may before that is known (scan says how far it got)."""
    block = bytearray(SCAN_BLOCK)
    searched = 0
    while got := os.preadv(fd, [block], scan.pos):
        at = _header_in(fd, scan, block, got)
        if at is not None:
            scan.lines += block.count(b"\n", 0, max(0, at - scan.pos))
            return Stretch(at, True, scan.lines)
        scan.lines += block.count(b"\n", 0, got)
        newline = notelines.last_end(block, got) - 1  # a CR ends a line, as for notes.parse
        if newline != -1:
            scan.last_newline = scan.pos + newline
        scan.carry = (scan.carry + bytes(block[max(0, got - 2) : got]))[-2:]
        scan.pos += got
        searched += got
        if over(searched):
            return None
    end = scan.last_newline + 1 if scan.last_newline != -1 else scan.after
    return Stretch(end, False, scan.lines)


def _header_in(fd: int, scan: Scan, block: bytearray, got: int) -> int | None:
    """Where the first line of block's first got bytes (at byte scan.pos of the file, after
    scan.carry) that starts an entry starts; None when none does."""
    window = scan.carry + bytes(block[:2])  # a "§" across the blocks' edge, or a line's end
    i = block.find(SECTION, 0, got)
    while i != -1:
        at = len(scan.carry) + i  # in window
        before = window[max(0, at - 2) : at] if i < 2 else bytes(block[i - 2 : i])
        at = i - 1 if before[-1:] == b"\xc2" else i  # "§" in UTF-8: its first byte
        ends = before[-2:-1] if at < i else before[-1:]
        if ends and ends in b"\r\n" and scan.pos + at > scan.start:
            if _is_header(fd, scan.pos + at):
                return scan.pos + at
        i = block.find(SECTION, i + 1, got)
    return None


def _is_header(fd: int, at: int) -> bool:
    """Whether the line at byte at starts an entry, as notes.parse reads it (read in its first
    LINE_LOOK bytes)."""
    raw = os.pread(fd, LINE_LOOK, at)
    ends = [i for i in (raw.find(b"\n"), raw.find(b"\r")) if i != -1]
    line = raw[: min(ends) + 1] if ends else raw
    entries = notes.parse(line, at)
    return bool(entries) and entries[0].start == at


def whole(buf: bytes, at: int, entries: list[notes.NoteEntry]) -> list[notes.NoteEntry]:
    """entries (of buf, gathered from byte at) but one whose header is buf's last line when that
    line is cut by where the gathering stopped: it is no entry yet, and the search for the end
    of the stretch finds it at its start, where the next part reads it whole. A line cut at buf's
    start (a header longer than a part gathers) is the entry the stretch holds, and stands."""
    cut = max(buf.rfind(b"\n"), buf.rfind(b"\r")) + 1
    return [e for e in entries if e.start < at + cut] if cut else entries


def say(path: Path, start: int, stretch: Stretch, entries: list[notes.NoteEntry]) -> None:
    """One line naming the stretch passed over."""
    how = "up to the next header" if stretch.header else "up to the file's end"
    if entries:
        what = f"note:{entries[-1].number} runs {stretch.end - entries[-1].start:,} bytes"
        done = "indexed from its first bytes, the rest passed over unread"
    else:
        what = f"text before the first header runs {stretch.end - start:,} bytes"
        done = "it belongs to no note and is passed over unread"
    log.warning(
        "notes %s: %s (bytes %d to %d, %s) without a header, more than a part reads at once "
        "(a long paste, or a damaged stretch such as NUL bytes?): %s",
        path,
        what,
        start,
        stretch.end,
        how,
        done,
    )


def unended(path: Path, scan: Scan) -> None:
    """One line, once, naming a stretch at the file's end holding not one newline: more than
    a part gathers, more than any line memoryd writes."""
    if scan.said:
        return
    scan.said = True
    log.warning(
        "notes %s: bytes %d to %d hold no newline, longer than any line memoryd writes (a "
        "damaged stretch such as NUL bytes a truncate left?): passed over unread until a line "
        "ends it",
        path,
        scan.start,
        scan.pos,
    )
